#include "tokenizer/added_tokens.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace myriad {

bool is_word_char(uint32_t cp) {
    auto c = static_cast<UChar32>(cp);
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
        return true;
    int32_t gc = U_GET_GC_MASK(c);
    return (gc & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

bool is_white_space(uint32_t cp) {
    return u_isUWhiteSpace(static_cast<UChar32>(cp));
}

namespace {

// The code point that ends text[0, end) (which must not be empty); its start in *start.
uint32_t last_char(std::string_view text, size_t end, size_t* start) {
    size_t i = end - 1;
    while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80) --i;
    *start = i;
    size_t n;
    return utf8::decode(text, i, &n);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens,
                                     std::vector<std::string> patterns)
    : tokens_(std::move(tokens)) {
    std::fill(std::begin(root_), std::end(root_), -1);
    nodes_.emplace_back();  // the root's own node is unused; root_ holds its children
    for (size_t k = 0; k < tokens_.size(); ++k) {
        const std::string& p = patterns[k];
        if (p.empty()) continue;
        int32_t node = root_[static_cast<unsigned char>(p[0])];
        if (node < 0) {
            node = static_cast<int32_t>(nodes_.size());
            nodes_.emplace_back();
            root_[static_cast<unsigned char>(p[0])] = node;
        }
        for (size_t i = 1; i < p.size(); ++i) {
            auto byte = static_cast<uint8_t>(p[i]);
            int32_t child = -1;
            for (auto& [b, c] : nodes_[node].children)
                if (b == byte) child = c;
            if (child < 0) {
                child = static_cast<int32_t>(nodes_.size());
                nodes_[node].children.emplace_back(byte, child);
                nodes_.emplace_back();
            }
            node = child;
        }
        // The first token with a given pattern wins (HF keeps one id per content).
        if (nodes_[node].token < 0) nodes_[node].token = static_cast<int32_t>(k);
    }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t i, size_t* length) const {
    int32_t node = root_[static_cast<unsigned char>(text[i])];
    int32_t best = -1;
    for (size_t j = i + 1;; ++j) {
        if (node < 0) break;
        if (nodes_[node].token >= 0) {
            best = nodes_[node].token;
            *length = j - i;
        }
        if (j >= text.size()) break;
        auto byte = static_cast<uint8_t>(text[j]);
        int32_t next = -1;
        for (auto& [b, c] : nodes_[node].children)
            if (b == byte) {
                next = c;
                break;
            }
        node = next;
    }
    return best;
}

void AddedTokenMatcher::split(std::string_view text, size_t base, std::vector<Segment>& out) const {
    size_t done = 0;  // text before this is in `out`
    size_t i = 0;
    while (i < text.size()) {
        if (root_[static_cast<unsigned char>(text[i])] < 0) {
            ++i;
            continue;
        }
        size_t len = 0;
        int32_t k = longest_at(text, i, &len);
        if (k < 0) {
            ++i;
            continue;
        }
        const AddedToken& t = tokens_[k];
        size_t start = i, stop = i + len;
        i = stop;  // a match, even one rejected below, is not searched inside again
        if (t.single_word) {
            size_t s;
            bool word_before = start > 0 && is_word_char(last_char(text, start, &s));
            size_t n;
            bool word_after = stop < text.size() && is_word_char(utf8::decode(text, stop, &n));
            if (word_before || word_after) continue;
        }
        if (t.lstrip) {
            size_t s = start;
            while (s > 0) {
                size_t cs;
                if (!is_white_space(last_char(text, s, &cs))) break;
                s = cs;
            }
            start = std::max(s, done);
        }
        if (t.rstrip) {
            while (stop < text.size()) {
                size_t n;
                if (!is_white_space(utf8::decode(text, stop, &n))) break;
                stop += n;
            }
        }
        if (done < start) out.push_back({base + done, base + start, -1});
        out.push_back({base + start, base + stop, t.id});
        done = stop;
        i = std::max(i, stop);
    }
    if (done < text.size()) out.push_back({base + done, base + text.size(), -1});
}

}  // namespace myriad
