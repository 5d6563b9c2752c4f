// The trie is built by sorting the tokens' byte strings: in sorted order a preorder walk is a
// stack of common prefixes, and each node's subtree ends where the next non-descendant starts.
#include "grammar/vocabulary.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace myriad::grammar {
namespace {
std::atomic<uint64_t> g_next_uid{1};
}

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, std::vector<TokenId> eos_ids)
    : tokens_(std::move(token_bytes)), eos_(std::move(eos_ids)), uid_(g_next_uid++) {
    for (TokenId e : eos_)
        if (e < 0 || static_cast<size_t>(e) >= tokens_.size())
            bad_input("EOS id {} is outside the vocabulary of {} tokens", e, tokens_.size());
    if (tokens_.size() >= (size_t{1} << 31)) bad_input("vocabulary too large");
    std::vector<TokenId> order;
    for (size_t i = 0; i < tokens_.size(); ++i)
        if (!tokens_[i].empty() && !is_eos(static_cast<TokenId>(i)))
            order.push_back(static_cast<TokenId>(i));
    std::stable_sort(order.begin(), order.end(),
                     [&](TokenId a, TokenId b) { return tokens_[a] < tokens_[b]; });
    trie_.push_back({0, 0, 0, 0, 0});
    std::vector<uint32_t> path{0};  // node index per depth along the current token
    std::string prev;
    for (TokenId id : order) {
        const std::string& t = tokens_[id];
        size_t common = 0;
        while (common < prev.size() && common < t.size() && prev[common] == t[common]) ++common;
        // Close the nodes below the common prefix.
        for (size_t d = path.size() - 1; d > common; --d) trie_[path[d]].skip = trie_.size();
        path.resize(common + 1);
        for (size_t d = common; d < t.size(); ++d) {
            if (d + 1 > 65535) bad_input("a token of {} bytes is too long", t.size());
            uint32_t idx = static_cast<uint32_t>(trie_.size());
            trie_.push_back({static_cast<uint8_t>(t[d]), static_cast<uint16_t>(d + 1), 0, 0, 0});
            path.push_back(idx);
        }
        max_depth_ = std::max(max_depth_, t.size());
        prev = t;
    }
    for (size_t d = path.size() - 1; d > 0; --d) trie_[path[d]].skip = trie_.size();
    trie_[0].skip = trie_.size();
    // Tokens per node, in node order: walk the sorted tokens again.
    std::vector<std::vector<TokenId>> at(trie_.size());
    {
        // Re-walk: the node of a token is found by descending from the root by its bytes.
        // Nodes are in preorder, so a child search is a scan over siblings via skip.
        for (TokenId id : order) {
            const std::string& t = tokens_[id];
            uint32_t n = 0;
            for (size_t d = 0; d < t.size(); ++d) {
                uint32_t c = n + 1;
                while (trie_[c].byte != static_cast<uint8_t>(t[d])) c = trie_[c].skip;
                n = c;
            }
            at[n].push_back(id);
        }
    }
    for (size_t i = 0; i < trie_.size(); ++i) {
        trie_[i].first_token = static_cast<uint32_t>(by_node_.size());
        by_node_.insert(by_node_.end(), at[i].begin(), at[i].end());
        trie_[i].last_token = static_cast<uint32_t>(by_node_.size());
    }
}

bool Vocabulary::is_eos(TokenId id) const {
    return std::find(eos_.begin(), eos_.end(), id) != eos_.end();
}

std::string Vocabulary::special_token_bytes(TokenId id) {
    const auto u = static_cast<uint32_t>(id);
    return {'\xff', static_cast<char>(u >> 16 & 0xff), static_cast<char>(u >> 8 & 0xff),
            static_cast<char>(u & 0xff)};
}

std::shared_ptr<const Vocabulary> Vocabulary::from_tokenizer(const Tokenizer& tok,
                                                             std::vector<TokenId> extra_eos,
                                                             const std::vector<TokenId>& markers) {
    std::vector<std::string> bytes(static_cast<size_t>(tok.vocab_size()));
    for (size_t i = 0; i < bytes.size(); ++i) {
        TokenId id = static_cast<TokenId>(i);
        if (tok.is_special(id) || std::find(markers.begin(), markers.end(), id) != markers.end())
            bytes[i] = special_token_bytes(id);
        else if (std::string b = tok.token_bytes(id); b.find('\xff') == std::string::npos)
            bytes[i] = std::move(b);
    }
    std::vector<TokenId> eos = std::move(extra_eos);
    if (auto e = tok.eos_id()) eos.push_back(*e);
    std::sort(eos.begin(), eos.end());
    eos.erase(std::unique(eos.begin(), eos.end()), eos.end());
    return std::make_shared<const Vocabulary>(std::move(bytes), std::move(eos));
}

}  // namespace myriad::grammar
