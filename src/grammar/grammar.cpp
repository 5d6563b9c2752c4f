// The grammar's rules, its checks, and its automaton: a state is an interned set of stacks, a
// stack a chain of interned nodes (position in an alternative, parent node), so stacks share
// tails and a transition is computed once per (state, byte).
#include "grammar/grammar.h"

#include <algorithm>

#include "util/error.h"

namespace myriad::grammar {
namespace {
constexpr size_t kMaxElements = size_t{1} << 21;
constexpr size_t kMaxStates = size_t{1} << 17;
constexpr size_t kMaxStateNodes = 4096;
constexpr int kMaxClosureDepth = 100000;
constexpr size_t kMaxMaskBytes = size_t{16} << 20;  // per grammar
constexpr uint64_t kInf = ~uint64_t{0} / 4;
}  // namespace

RuleId GrammarBuilder::new_rule() {
    rules_.emplace_back();
    return static_cast<RuleId>(rules_.size() - 1);
}

void GrammarBuilder::add_alt(RuleId rule, std::vector<Element> seq) {
    elements_ += seq.size() + 1;
    if (elements_ > kMaxElements)
        bad_input(
            "the schema is too large: its grammar passes {} elements (a very large "
            "maxLength, maxItems or {{n,m}} repetition?)",
            kMaxElements);
    rules_[rule].push_back(std::move(seq));
}

Element GrammarBuilder::bytes(const ByteSet& set) {
    std::string key = set.to_string();
    auto [it, fresh] = set_index_.try_emplace(key, static_cast<uint32_t>(sets_.size()));
    if (fresh) sets_.push_back(set);
    return {Element::Kind::Bytes, it->second};
}

Element GrammarBuilder::byte(uint8_t b) {
    ByteSet s;
    s.set(b);
    return bytes(s);
}

std::vector<Element> GrammarBuilder::literal(std::string_view text) {
    std::vector<Element> seq;
    for (unsigned char c : text) seq.push_back(byte(c));
    return seq;
}

Element GrammarBuilder::group(std::vector<Element> seq) {
    if (seq.size() == 1) return seq[0];
    RuleId r = new_rule();
    add_alt(r, std::move(seq));
    return ref(r);
}

Element GrammarBuilder::choice(std::vector<std::vector<Element>> alts) {
    if (alts.size() == 1) return group(std::move(alts[0]));
    RuleId r = new_rule();
    for (auto& a : alts) add_alt(r, std::move(a));
    return ref(r);
}

Element GrammarBuilder::star(Element e) {
    RuleId r = new_rule();
    add_alt(r, {e, ref(r)});  // right recursion: the parser's tail call keeps stacks flat
    add_alt(r, {});
    return ref(r);
}

Element GrammarBuilder::optional(Element e) {
    RuleId r = new_rule();
    add_alt(r, {e});
    add_alt(r, {});
    return ref(r);
}

std::vector<Element> GrammarBuilder::repeat(Element e, int64_t min, int64_t max) {
    std::vector<Element> seq;
    for (int64_t i = 0; i < min; ++i) {
        seq.push_back(e);
        if (seq.size() > kMaxElements)
            bad_input("the schema is too large: a repetition of {} passes the grammar's limit",
                      min);
    }
    if (max < 0) {
        seq.push_back(star(e));
    } else if (max > min) {
        // e (e (e)?)?: nested optionals, one rule per extra repetition.
        RuleId tail = new_rule();
        add_alt(tail, {e});
        add_alt(tail, {});
        for (int64_t i = min + 1; i < max; ++i) {
            RuleId r = new_rule();
            add_alt(r, {e, ref(tail)});
            add_alt(r, {});
            tail = r;
        }
        seq.push_back(ref(tail));
    }
    return seq;
}

Grammar::Grammar(GrammarBuilder&& b, RuleId root, const std::string& what) {
    const size_t n = b.rules_.size();
    // Nullable rules and the fewest bytes each rule derives (kInf: none finite).
    std::vector<uint64_t> min_len(n, kInf);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            for (const auto& alt : b.rules_[r]) {
                uint64_t sum = 0;
                for (const Element& e : alt) {
                    sum += e.kind == Element::Kind::Bytes ? 1 : min_len[e.index];
                    if (sum >= kInf) break;
                }
                if (sum < min_len[r]) {
                    min_len[r] = sum;
                    changed = true;
                }
            }
        }
    }
    if (min_len[root] >= kInf)
        bad_input(
            "{} admits no JSON document (a false schema, an empty enum or type list, or a "
            "$ref cycle that never ends)",
            what);
    // Left recursion: a rule reaching itself through references after nullable prefixes.
    std::vector<int> mark(n, 0);
    std::vector<std::pair<size_t, size_t>> stack;
    auto firsts = [&](size_t r) {
        std::vector<size_t> out;
        for (const auto& alt : b.rules_[r])
            for (const Element& e : alt) {
                if (e.kind == Element::Kind::Bytes) break;
                out.push_back(e.index);
                if (min_len[e.index] != 0) break;
            }
        return out;
    };
    std::vector<std::vector<size_t>> first(n);
    for (size_t r = 0; r < n; ++r) first[r] = firsts(r);
    for (size_t s = 0; s < n; ++s) {
        if (mark[s]) continue;
        stack.push_back({s, 0});
        mark[s] = 1;
        while (!stack.empty()) {
            auto& [r, i] = stack.back();
            if (i < first[r].size()) {
                size_t c = first[r][i++];
                if (mark[c] == 1)
                    bad_input(
                        "{} recurses without consuming input (a $ref cycle through "
                        "anyOf/allOf, or a rule that refers to itself first)",
                        what);
                if (mark[c] == 0) {
                    mark[c] = 1;
                    stack.push_back({c, 0});
                }
            } else {
                mark[r] = 2;
                stack.pop_back();
            }
        }
    }
    // Flatten: every alternative is its elements then an End. Alternatives that derive no
    // finite string are dropped, so every live parser state can still reach a document's end.
    alts_.resize(n);
    for (size_t r = 0; r < n; ++r)
        for (const auto& alt : b.rules_[r]) {
            uint64_t sum = 0;
            for (const Element& e : alt)
                sum = std::min(kInf, sum + (e.kind == Element::Kind::Bytes ? 1 : min_len[e.index]));
            if (sum >= kInf) continue;
            alts_[r].push_back(static_cast<uint32_t>(elems_.size()));
            for (const Element& e : alt) elems_.push_back(e);
            elems_.push_back({Element::Kind::End, 0});
        }
    sets_ = std::move(b.sets_);
    suffix_min_.assign(elems_.size(), 0);
    for (size_t p = elems_.size(); p-- > 0;) {
        const Element& e = elems_[p];
        if (e.kind == Element::Kind::End) continue;
        uint64_t here = e.kind == Element::Kind::Bytes ? 1 : min_len[e.index];
        suffix_min_[p] = std::min(kInf, here + suffix_min_[p + 1]);
    }
    nodes_.push_back({0, kNoParent});  // the accept node
    cost_.push_back(0);
    states_.emplace_back();  // the dead state
    state_index_[""] = kDeadState;
    table_.assign(256, kDeadState);
    // The start: a root rule reference followed by End.
    uint32_t start = static_cast<uint32_t>(elems_.size());
    elems_.push_back(GrammarBuilder::ref(root));
    elems_.push_back({Element::Kind::End, 0});
    suffix_min_.push_back(min_len[root]);
    suffix_min_.push_back(0);
    std::vector<uint32_t> out;
    std::vector<uint64_t> seen;
    closure(start, kNoParent, out, seen, 0);
    initial_ = intern(out);
}

uint32_t Grammar::node(uint32_t pos, uint32_t parent) const {
    uint64_t key = (uint64_t{pos} << 32) | parent;
    auto [it, fresh] = node_index_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
    if (fresh) {
        nodes_.push_back({pos, parent});
        cost_.push_back(kUnknown);
    }
    return it->second;
}

// Expands the stack (pos, parent) until every stack's top is a byte set (or the stack is
// empty: accept). Tail positions are not kept, so right recursion does not grow stacks.
void Grammar::closure(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out,
                      std::vector<uint64_t>& seen, int depth) const {
    if (depth > kMaxClosureDepth) internal_error("grammar closure too deep");
    uint64_t key = (uint64_t{pos} << 32) | parent;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
    seen.push_back(key);
    const Element& e = elems_[pos];
    switch (e.kind) {
        case Element::Kind::End:
            if (parent == kNoParent)
                out.push_back(kAcceptNode);
            else
                closure(nodes_[parent].pos, nodes_[parent].parent, out, seen, depth + 1);
            return;
        case Element::Kind::Bytes:
            out.push_back(node(pos, parent));
            return;
        case Element::Kind::Rule: {
            uint32_t cont =
                elems_[pos + 1].kind == Element::Kind::End ? parent : node(pos + 1, parent);
            for (uint32_t start : alts_[e.index]) closure(start, cont, out, seen, depth + 1);
            return;
        }
    }
}

StateId Grammar::intern(std::vector<uint32_t>& v) const {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.size() > kMaxStateNodes)
        bad_input(
            "the grammar is too ambiguous here: a state holds more than {} parses (a "
            "pattern with nested repetitions?)",
            kMaxStateNodes);
    std::string key(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(uint32_t));
    auto [it, fresh] = state_index_.try_emplace(key, static_cast<StateId>(states_.size()));
    if (fresh) {
        if (states_.size() >= kMaxStates)
            bad_input(
                "the grammar's automaton passed {} states; the schema is too large to "
                "constrain",
                kMaxStates);
        states_.push_back(v);
        table_.resize(table_.size() + 256, kUnknown);
    }
    return it->second;
}

StateId Grammar::next_locked(StateId state, uint8_t byte) const {
    uint32_t& slot = table_[size_t{state} * 256 + byte];
    if (slot != kUnknown) return slot;
    std::vector<uint32_t> out;
    std::vector<uint64_t> seen;
    for (uint32_t n : states_[state]) {
        if (n == kAcceptNode) continue;
        const Node nd = nodes_[n];
        if (!sets_[elems_[nd.pos].index][byte]) continue;
        seen.clear();
        closure(nd.pos + 1, nd.parent, out, seen, 0);
    }
    StateId next = out.empty() ? kDeadState : intern(out);
    table_[size_t{state} * 256 + byte] = next;  // `slot` may dangle after intern's resize
    return next;
}

StateId Grammar::next(StateId state, uint8_t byte) const {
    std::lock_guard lock(mutex_);
    return next_locked(state, byte);
}

bool Grammar::is_accepting(StateId state) const {
    std::lock_guard lock(mutex_);
    return is_accepting_locked(state);
}

bool Grammar::is_accepting_locked(StateId state) const {
    const auto& v = states_[state];
    return !v.empty() && v[0] == kAcceptNode;
}

size_t Grammar::state_count() const {
    std::lock_guard lock(mutex_);
    return states_.size();
}

size_t Grammar::memory_bytes() const {
    std::lock_guard lock(mutex_);
    size_t n = elems_.size() * sizeof(Element) + sets_.size() * sizeof(ByteSet) +
               suffix_min_.size() * sizeof(uint64_t) + nodes_.size() * sizeof(Node) * 3 +
               table_.size() * sizeof(uint32_t) + cost_.size() * sizeof(uint64_t) +
               state_cost_.size() * sizeof(uint64_t) + mask_bytes_ + budget_mask_bytes_;
    for (const auto& a : alts_) n += a.size() * sizeof(uint32_t) + sizeof(a);
    for (const auto& st : states_) n += st.size() * sizeof(uint32_t) * 3 + sizeof(st);
    return n;
}

uint64_t Grammar::node_cost(uint32_t n) const {
    if (cost_[n] != kUnknown) return cost_[n];
    const Node nd = nodes_[n];
    uint64_t c = suffix_min_[nd.pos] + (nd.parent == kNoParent ? 0 : node_cost(nd.parent));
    cost_[n] = std::min(c, kInf);
    return cost_[n];
}

uint64_t Grammar::min_bytes_to_accept(StateId state) const {
    std::lock_guard lock(mutex_);
    return min_bytes_to_accept_locked(state);
}

uint64_t Grammar::min_bytes_to_accept_locked(StateId state) const {
    if (state_cost_.size() <= state) state_cost_.resize(states_.size(), kUnknown);
    uint64_t& c = state_cost_[state];
    if (c != kUnknown) return c;
    uint64_t best = kInf;
    for (uint32_t n : states_[state]) best = std::min(best, node_cost(n));
    return c = best;
}

const Grammar::CachedMask* Grammar::cached_mask(uint64_t vocab_uid, StateId state) const {
    auto it = masks_.find((vocab_uid << 32) ^ state);
    return it == masks_.end() ? nullptr : &it->second;
}

void Grammar::store_mask(uint64_t vocab_uid, StateId state, CachedMask mask) const {
    const size_t bytes = mask.words.size() * sizeof(uint32_t) + sizeof(CachedMask);
    mask_bytes_ += bytes;
    if (mask_bytes_ > kMaxMaskBytes) {
        masks_.clear();
        mask_bytes_ = bytes;
    }
    masks_[(vocab_uid << 32) ^ state] = std::move(mask);
}

const std::vector<uint32_t>* Grammar::cached_budget_mask(uint64_t vocab_uid, StateId state,
                                                         uint64_t budget) const {
    auto it = budget_masks_.find({vocab_uid, state, budget});
    return it == budget_masks_.end() ? nullptr : &it->second;
}

void Grammar::store_budget_mask(uint64_t vocab_uid, StateId state, uint64_t budget,
                                std::vector<uint32_t> words) const {
    const size_t bytes = words.size() * sizeof(uint32_t) + 64;
    budget_mask_bytes_ += bytes;
    if (budget_mask_bytes_ > kMaxMaskBytes) {
        budget_masks_.clear();
        budget_mask_bytes_ = bytes;
    }
    budget_masks_[{vocab_uid, state, budget}] = std::move(words);
}

size_t Grammar::budget_masks_cached() const {
    std::lock_guard lock(mutex_);
    return budget_masks_.size();
}

}  // namespace myriad::grammar
