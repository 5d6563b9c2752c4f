// Grammar: a context-free grammar over bytes (rules of alternatives, each a sequence of byte
// sets and rule references), and the lazily built automaton a Matcher walks: parser states are
// sets of persistent stacks, interned, with a byte-transition table filled on first use.
#pragma once

#include <bitset>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace myriad::grammar {

using ByteSet = std::bitset<256>;
using RuleId = uint32_t;
// A parser state: the id of an interned set of stacks. 0 is the dead (empty) state.
using StateId = uint32_t;
constexpr StateId kDeadState = 0;

struct Element {
    enum class Kind : uint8_t { Bytes, Rule, End };
    Kind kind = Kind::End;
    uint32_t index = 0;  // Bytes: index of the byte set; Rule: the rule
};

// Builds the rules; the JSON Schema compiler and the regex compiler write into one builder.
class GrammarBuilder {
  public:
    RuleId new_rule();
    void add_alt(RuleId rule, std::vector<Element> seq);
    Element bytes(const ByteSet& set);
    Element byte(uint8_t b);
    static Element ref(RuleId rule) { return {Element::Kind::Rule, rule}; }
    std::vector<Element> literal(std::string_view text);
    // A rule holding `seq`, as one element.
    Element group(std::vector<Element> seq);
    Element choice(std::vector<std::vector<Element>> alts);
    Element star(Element e);
    Element optional(Element e);
    // `e` between min and max times (max < 0: unbounded).
    std::vector<Element> repeat(Element e, int64_t min, int64_t max);
    size_t element_count() const { return elements_; }

  private:
    friend class Grammar;
    std::vector<std::vector<std::vector<Element>>> rules_;
    std::vector<ByteSet> sets_;
    std::unordered_map<std::string, uint32_t> set_index_;
    size_t elements_ = 0;
};

class Grammar {
  public:
    // Checks that the root derives some finite string and that no rule is left-recursive
    // (a $ref cycle consuming no input); `what` names the schema in those errors.
    Grammar(GrammarBuilder&& builder, RuleId root, const std::string& what);

    StateId initial_state() const { return initial_; }
    // The state after `byte`; kDeadState when the byte may not come next. Thread-safe.
    StateId next(StateId state, uint8_t byte) const;
    StateId next_locked(StateId state, uint8_t byte) const;
    bool is_accepting(StateId state) const;
    bool is_accepting_locked(StateId state) const;
    // The fewest bytes that complete a document from `state` (for samplers ending a walk, and
    // for masks that must leave room to finish within a token budget).
    uint64_t min_bytes_to_accept(StateId state) const;
    uint64_t min_bytes_to_accept_locked(StateId state) const;
    std::mutex& mutex() const { return mutex_; }
    size_t state_count() const;
    // Bytes held: rules, the automaton built so far and the cached masks (it grows with use).
    size_t memory_bytes() const;

    // Token masks computed for a state and a vocabulary, kept with the grammar (bounded in
    // bytes, cleared when full), with the most bytes any allowed token leaves to complete the
    // document (a mask under a budget at least that large is the same). Callers hold mutex().
    struct CachedMask {
        std::vector<uint32_t> words;
        uint64_t max_after = 0;
        // The distinct bytes the allowed tokens leave to complete the document, ascending: a
        // budget's mask is that of the largest of them within it, so budgets between two of
        // them share one cached mask (a sequence's budget falls by one every step).
        std::vector<uint64_t> needs;
    };
    const CachedMask* cached_mask(uint64_t vocab_uid, StateId state) const;
    void store_mask(uint64_t vocab_uid, StateId state, CachedMask mask) const;
    // The same for a state's mask under a budget below its max_after (near max_tokens, where
    // every sequence of a batch would otherwise walk the vocabulary each step), in a map of its
    // own, so that budgets never push the plain masks out. Callers hold mutex().
    const std::vector<uint32_t>* cached_budget_mask(uint64_t vocab_uid, StateId state,
                                                    uint64_t budget) const;
    void store_budget_mask(uint64_t vocab_uid, StateId state, uint64_t budget,
                           std::vector<uint32_t> words) const;
    size_t budget_masks_cached() const;

  private:
    struct Node {
        uint32_t pos;
        uint32_t parent;
    };
    static constexpr uint32_t kNoParent = 0xffffffffu;
    static constexpr uint32_t kAcceptNode = 0;  // node 0: the empty stack (document complete)
    static constexpr uint32_t kUnknown = 0xffffffffu;

    uint32_t node(uint32_t pos, uint32_t parent) const;
    void closure(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out,
                 std::vector<uint64_t>& seen, int depth) const;
    StateId intern(std::vector<uint32_t>& nodes) const;
    uint64_t node_cost(uint32_t node) const;

    std::vector<Element> elems_;
    std::vector<std::vector<uint32_t>> alts_;  // per rule: start positions in elems_
    std::vector<ByteSet> sets_;
    std::vector<uint64_t> suffix_min_;  // fewest bytes from a position to its alternative's end
    StateId initial_ = kDeadState;

    mutable std::mutex mutex_;
    mutable std::vector<Node> nodes_;
    mutable std::unordered_map<uint64_t, uint32_t> node_index_;
    mutable std::vector<std::vector<uint32_t>> states_;
    mutable std::unordered_map<std::string, StateId> state_index_;
    mutable std::vector<uint32_t> table_;       // states x 256 transitions, kUnknown until computed
    mutable std::vector<uint64_t> cost_;        // per node, kUnknown-filled lazily
    mutable std::vector<uint64_t> state_cost_;  // per state, kUnknown-filled lazily
    mutable std::unordered_map<uint64_t, CachedMask> masks_;
    mutable size_t mask_bytes_ = 0;
    mutable std::map<std::tuple<uint64_t, StateId, uint64_t>, std::vector<uint32_t>> budget_masks_;
    mutable size_t budget_mask_bytes_ = 0;
};

}  // namespace myriad::grammar
