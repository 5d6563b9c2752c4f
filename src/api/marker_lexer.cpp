#include "api/marker_lexer.h"

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad::api {

MarkerLexer::MarkerLexer(std::vector<std::string> markers) : markers_(std::move(markers)) {
    for (const std::string& m : markers_) {
        MYRIAD_CHECK(!m.empty(), "an output parser marker is empty");
        first_byte_[static_cast<unsigned char>(m[0])] = true;
    }
}

MarkerLexer::Match MarkerLexer::match_at(size_t i, int* marker) const {
    std::string_view rest = std::string_view(buffer_).substr(i);
    size_t best = 0;
    bool longer_possible = false;
    for (size_t k = 0; k < markers_.size(); ++k) {
        std::string_view m = markers_[k];
        if (rest.size() >= m.size()) {
            if (rest.compare(0, m.size(), m) == 0 && m.size() > best) {
                best = m.size();
                *marker = static_cast<int>(k);
            }
        } else if (m.compare(0, rest.size(), rest) == 0) {
            longer_possible = true;  // the buffer ends inside this marker
        }
    }
    // A longer marker that the next chunk may complete beats a shorter one that matched.
    if (longer_possible) return Match::Partial;
    return best > 0 ? Match::Full : Match::None;
}

void MarkerLexer::emit_text(size_t begin, size_t end, std::vector<Piece>& out) const {
    if (begin == end) return;
    std::string_view text = std::string_view(buffer_).substr(begin, end - begin);
    out.push_back({-1, utf8::is_valid(text) ? std::string(text) : utf8::replace_invalid(text)});
}

void MarkerLexer::feed(std::string_view chunk, std::vector<Piece>& out) {
    buffer_.append(chunk);
    size_t text_begin = 0, i = 0, hold = buffer_.size();
    while (i < buffer_.size()) {
        if (!first_byte_[static_cast<unsigned char>(buffer_[i])]) {
            ++i;
            continue;
        }
        int marker = -1;
        Match m = match_at(i, &marker);
        if (m == Match::Partial) {
            hold = i;
            break;
        }
        if (m == Match::None) {
            ++i;
            continue;
        }
        emit_text(text_begin, i, out);
        out.push_back({marker, markers_[marker]});
        i += markers_[marker].size();
        text_begin = i;
    }
    // Without a marker start to hold, still hold an unfinished UTF-8 character.
    if (hold == buffer_.size())
        hold = text_begin + utf8::complete_prefix(std::string_view(buffer_).substr(text_begin));
    emit_text(text_begin, hold, out);
    buffer_.erase(0, hold);
}

void MarkerLexer::finish(std::vector<Piece>& out) {
    emit_text(0, buffer_.size(), out);
    buffer_.clear();
}

}  // namespace myriad::api
