// A helper for tests/python/test_grammar_oracle.py (not part of myriad): runs the grammar
// module on a schema file.
//   grammar_tool compile SCHEMA                    exit 0, or 2 with the error on stderr
//   grammar_tool sample SCHEMA SEED COUNT          COUNT documents, one a line: a random walk
//                                                  over the allowed bytes, completed by the
//                                                  shortest path after a byte budget
//   grammar_tool check SCHEMA < DOCS               per input line: 1 if the matcher accepts
//                                                  the whole line as a document, else 0
//   grammar_tool tokens SCHEMA TOKENIZER SEED COUNT  the same walk over tokens (fill_mask)
//   grammar_tool masks SCHEMA TOKENIZER SEED COUNT   per step of COUNT token walks, a JSON line:
//                                                  {"ids": the prefix, "allowed": [ids]} (or,
//                                                  past 4096 ids, their "count" and "sum")
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace myriad::grammar;

namespace {

std::string read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) myriad::bad_input("cannot read {}", path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::shared_ptr<const Grammar> load(const std::string& path) {
    std::string text = read(path);
    if (text.rfind("json_object", 0) == 0) return any_json_grammar(true);
    return compile_json_schema_text(text);
}

std::string sample(const std::shared_ptr<const Grammar>& g, std::mt19937_64& rng) {
    auto vocab =
        std::make_shared<const Vocabulary>(std::vector<std::string>{"x"}, std::vector<TokenId>{});
    Matcher m(g, vocab);
    std::string out;
    const size_t budget = 200;
    while (true) {
        ByteSet next = m.next_bytes();
        bool accepting = m.is_accepting();
        if (accepting && (next.none() || out.size() >= budget || rng() % 4 == 0)) return out;
        std::vector<int> choices;
        for (int b = 0; b < 256; ++b)
            if (next[b]) choices.push_back(b);
        if (choices.empty()) myriad::internal_error("dead end after \"{}\"", out);
        int pick;
        if (out.size() >= budget) {
            uint64_t best = ~uint64_t{0};
            std::vector<int> bests;
            for (int b : choices) {
                char c = static_cast<char>(b);
                m.accept_bytes(std::string_view(&c, 1));
                uint64_t cost = m.min_bytes_to_accept();
                m.rollback(1);
                if (cost < best) best = cost, bests.clear();
                if (cost == best) bests.push_back(b);
            }
            pick = bests[rng() % bests.size()];
        } else {
            pick = choices[rng() % choices.size()];
        }
        char c = static_cast<char>(pick);
        m.accept_bytes(std::string_view(&c, 1));
        out += c;
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        std::string cmd = argc > 2 ? argv[1] : "";
        if (cmd == "compile" && argc == 3) {
            load(argv[2]);
            return 0;
        }
        if (cmd == "sample" && argc == 5) {
            auto g = load(argv[2]);
            std::mt19937_64 rng(std::stoull(argv[3]));
            for (int i = 0, n = std::stoi(argv[4]); i < n; ++i) std::cout << sample(g, rng) << "\n";
            return 0;
        }
        if (cmd == "check" && argc == 3) {
            auto g = load(argv[2]);
            auto vocab = std::make_shared<const Vocabulary>(std::vector<std::string>{"x"},
                                                            std::vector<TokenId>{});
            std::string line;
            while (std::getline(std::cin, line)) {
                Matcher m(g, vocab);
                std::cout << (m.accept_bytes(line) && m.is_accepting() ? 1 : 0) << "\n";
            }
            return 0;
        }
        if ((cmd == "tokens" || cmd == "masks") && argc == 6) {
            auto g = load(argv[2]);
            auto tok = myriad::Tokenizer::load(argv[3]);
            auto vocab = Vocabulary::from_tokenizer(*tok);
            std::mt19937_64 rng(std::stoull(argv[4]));
            std::vector<uint32_t> mask(vocab->mask_words());
            for (int i = 0, n = std::stoi(argv[5]); i < n; ++i) {
                Matcher m(g, vocab);
                std::string out;
                std::vector<TokenId> ids;
                while (!m.is_terminated()) {
                    m.fill_mask(mask);
                    std::vector<TokenId> allowed;
                    for (size_t t = 0; t < vocab->size(); ++t)
                        if (mask[t >> 5] >> (t & 31) & 1)
                            allowed.push_back(static_cast<TokenId>(t));
                    if (cmd == "masks") {
                        nlohmann::json line{{"ids", ids}};
                        if (allowed.size() <= 4096) {
                            line["allowed"] = allowed;
                        } else {
                            uint64_t sum = 0;
                            for (TokenId t : allowed) sum += static_cast<uint64_t>(t);
                            line["count"] = allowed.size();
                            line["sum"] = sum;
                        }
                        std::cout << line.dump() << "\n";
                    }
                    if (allowed.empty())
                        myriad::internal_error("no token allowed after \"{}\"", out);
                    // Past a budget, only EOS or tokens that shorten the way to the end.
                    TokenId pick = allowed[rng() % allowed.size()];
                    if (out.size() > 200 || m.is_accepting()) {
                        if (m.is_accepting() && (out.size() > 200 || rng() % 4 == 0)) {
                            pick = vocab->eos_ids()[0];
                        } else if (out.size() > 200) {
                            uint64_t before = m.min_bytes_to_accept();
                            for (TokenId t : allowed) {
                                if (vocab->is_eos(t)) continue;
                                m.accept_token(t);
                                bool shorter = m.min_bytes_to_accept() < before;
                                m.rollback(1);
                                if (shorter) {
                                    pick = t;
                                    break;
                                }
                            }
                        }
                    }
                    if (!m.accept_token(pick))
                        myriad::internal_error(
                            "the mask allowed token {} but the matcher refused it", pick);
                    if (!vocab->is_eos(pick)) out += vocab->bytes(pick);
                    ids.push_back(pick);
                }
                if (cmd == "tokens") std::cout << out << "\n";
            }
            return 0;
        }
        std::cerr << "usage: grammar_tool compile|sample|check|tokens ...\n";
        return 2;
    } catch (const myriad::Error& e) {
        std::cerr << e.what() << "\n";
        return e.exit_status();
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
