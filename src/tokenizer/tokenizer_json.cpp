#include "tokenizer/tokenizer_json.h"

#include "format/json_file.h"
#include "util/error.h"

namespace myriad {

namespace {

using Json = nlohmann::ordered_json;

class Handler : public nlohmann::json_sax<Json> {
  public:
    explicit Handler(TokenizerJson& out) : out_(out) {}

    std::string error;  // set when a handler returns false

    bool null() override { return value(Json(nullptr)); }
    bool boolean(bool v) override { return value(Json(v)); }
    bool number_integer(number_integer_t v) override {
        if (mode_ == Mode::Vocab) return vocab_entry(v);
        return value(Json(v));
    }
    bool number_unsigned(number_unsigned_t v) override {
        if (mode_ == Mode::Vocab) {
            if (v > static_cast<number_unsigned_t>(INT32_MAX))
                return fail("model.vocab[\"" + printable(key_) + "\"]: id out of range");
            return vocab_entry(static_cast<int64_t>(v));
        }
        return value(Json(v));
    }
    bool number_float(number_float_t v, const string_t&) override {
        if (mode_ == Mode::Vocab) return fail("model.vocab: ids must be integers");
        return value(Json(v));
    }
    bool string(string_t& v) override {
        if (mode_ == Mode::Vocab) return fail("model.vocab: ids must be integers");
        if (mode_ == Mode::Merges) {
            size_t space = v.find(' ');
            if (space == string_t::npos || v.find(' ', space + 1) != string_t::npos)
                return fail(
                    fmt::format("model.merges[{}]: \"{}\" is not two tokens split by one "
                                "space",
                                out_.merges.size(), printable(v)));
            out_.merges.emplace_back(v.substr(0, space), v.substr(space + 1));
            return true;
        }
        if (mode_ == Mode::MergePair) {
            if (pair_.size() >= 2) return fail(pair_error());
            pair_.push_back(std::move(v));
            return true;
        }
        return value(Json(std::move(v)));
    }
    bool binary(binary_t&) override { return fail("binary values are not JSON"); }

    bool start_object(std::size_t) override {
        if (mode_ == Mode::Merges || mode_ == Mode::MergePair) return fail(pair_error());
        if (mode_ == Mode::Vocab) return fail("model.vocab: ids must be integers");
        if (pending_special_ == Mode::Vocab) {
            pending_special_ = Mode::None;
            mode_ = Mode::Vocab;
            return true;
        }
        if (pending_special_ == Mode::Merges) return fail("model.merges must be an array");
        return open(Json::object());
    }
    bool end_object() override {
        if (mode_ == Mode::Vocab) {
            mode_ = Mode::None;
            return true;
        }
        stack_.pop_back();
        return true;
    }
    bool start_array(std::size_t) override {
        if (mode_ == Mode::Vocab) return fail("model.vocab: ids must be integers");
        if (mode_ == Mode::MergePair) return fail(pair_error());
        if (mode_ == Mode::Merges) {
            mode_ = Mode::MergePair;
            pair_.clear();
            return true;
        }
        if (pending_special_ == Mode::Merges) {
            pending_special_ = Mode::None;
            mode_ = Mode::Merges;
            return true;
        }
        if (pending_special_ == Mode::Vocab) return fail("model.vocab must be an object");
        return open(Json::array());
    }
    bool end_array() override {
        if (mode_ == Mode::MergePair) {
            if (pair_.size() != 2) return fail(pair_error());
            out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
            mode_ = Mode::Merges;
            return true;
        }
        if (mode_ == Mode::Merges) {
            mode_ = Mode::None;
            return true;
        }
        stack_.pop_back();
        return true;
    }
    bool key(string_t& k) override {
        if (mode_ == Mode::Vocab) {
            key_ = std::move(k);
            return true;
        }
        key_ = std::move(k);
        // model.vocab and model.merges: the "model" object directly under the root.
        if (stack_.size() == 2 && in_model_ && (key_ == "vocab" || key_ == "merges"))
            pending_special_ = key_ == "vocab" ? Mode::Vocab : Mode::Merges;
        return true;
    }
    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& e) override {
        if (error.empty()) error = "not valid JSON: " + json_error_text(e);
        return false;
    }

  private:
    enum class Mode { None, Vocab, Merges, MergePair };

    bool fail(std::string message) {
        if (error.empty()) error = std::move(message);
        return false;
    }
    std::string pair_error() const {
        return fmt::format("model.merges[{}] must be \"a b\" or [\"a\", \"b\"]",
                           out_.merges.size());
    }
    bool vocab_entry(int64_t id) {
        if (id < 0 || id > INT32_MAX)
            return fail("model.vocab[\"" + printable(key_) + "\"]: id out of range");
        out_.vocab.emplace_back(std::move(key_), id);
        return true;
    }
    // Places a scalar or container into the tree being built.
    Json* place(Json&& v) {
        if (stack_.empty()) {
            out_.root = std::move(v);
            return &out_.root;
        }
        Json& parent = *stack_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(v));
            return &parent.back();
        }
        Json& slot = parent[key_];
        slot = std::move(v);
        return &slot;
    }
    bool value(Json&& v) {
        if (mode_ != Mode::None || pending_special_ != Mode::None) {
            if (pending_special_ == Mode::Vocab) return fail("model.vocab must be an object");
            if (pending_special_ == Mode::Merges) return fail("model.merges must be an array");
            return fail(pair_error());
        }
        place(std::move(v));
        return true;
    }
    bool open(Json&& container) {
        bool model = stack_.size() == 1 && key_ == "model" && container.is_object();
        Json* c = place(std::move(container));
        stack_.push_back(c);
        if (stack_.size() == 2) in_model_ = model;
        return true;
    }

    TokenizerJson& out_;
    std::vector<Json*> stack_;
    std::string key_;
    Mode mode_ = Mode::None;
    Mode pending_special_ = Mode::None;
    bool in_model_ = false;
    std::vector<std::string> pair_;
};

}  // namespace

TokenizerJson parse_tokenizer_json(std::string_view text, const std::string& source) {
    TokenizerJson out;
    Handler h(out);
    bool ok = false;
    try {
        ok = Json::sax_parse(text.begin(), text.end(), &h);
    } catch (const nlohmann::json::exception& e) {
        bad_input("{}: not valid JSON: {}", source, json_error_text(e));
    }
    if (!ok) bad_input("{}: {}", source, h.error.empty() ? "not valid JSON" : h.error);
    if (!out.root.is_object()) bad_input("{}: is not a JSON object", source);
    return out;
}

}  // namespace myriad
