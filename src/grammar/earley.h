// EarleyRecognizer: Earley's algorithm over the rule automata of a
// GrammarFsm, one symbol (byte or token symbol) at a time. It accepts every
// context-free grammar, ambiguous ones included; nullable rules are handled
// as Aycock and Horspool do (predicting a nullable rule also steps over it),
// so completions never need to revisit the set they happen in.
//
// An item is (automaton state, origin): the state says which rule and how far
// into it; origin is the set where that rule began, or kRootOrigin for the
// outermost item (the start state given to start()). The chart keeps every
// set since start(), so truncate() rolls back any number of symbols in O(1).
// A set is never empty: advance() leaves the chart untouched when no item
// reads the symbol.
//
// Right recursion (`list ::= item list | item`) would otherwise cost a chain
// of completions as long as the input at every symbol: each set would hold an
// item per enclosing level, and the work would grow with the cube of the
// input. Leo's optimization (1991) keeps it linear: when exactly one item of
// a set waits on a rule, and reading that rule finishes the item's own rule
// with nothing left to read (a final state without edges), the completions
// through that set are deterministic, so the set remembers where the chain
// ends (its topmost item) and a completion adds that item alone. The items
// skipped are final states without edges, which add nothing to a set but
// their own completions.
//
// Ambiguous grammars (`x ::= x x | "a"`) still grow with the input; a budget
// of work (set_budget) stops such a parse instead of letting it run for
// minutes: advance() then fails and exhausted() says why.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "grammar/grammar_fsm.h"

namespace ladder::grammar {

inline constexpr int32_t kRootOrigin = -1;

struct EarleyItem {
  int32_t state = -1;
  int32_t origin = kRootOrigin;
};

class EarleyRecognizer {
 public:
  explicit EarleyRecognizer(const GrammarFsm& fsm) : fsm_(&fsm) {}

  // Forgets everything; set 0 is the closure of (state, kRootOrigin).
  void start(int32_t state);
  // Reads one symbol: true and a new current set, or false and no change.
  bool advance(uint32_t symbol);
  // Keeps sets [0, n_sets); n_sets >= 1.
  void truncate(size_t n_sets);

  // Lets advance() and start() do at most `work` more units (an item added or
  // an item visited by a completion) before they fail for good; exhausted()
  // then stays true until start() (which keeps the budget: set it first).
  // The default is no limit.
  void set_budget(int64_t work) { budget_ = work; }
  bool exhausted() const { return exhausted_; }
  // Items in the chart (every set), for tests of its growth.
  size_t n_items() const { return items_.size(); }

  size_t n_sets() const { return set_begin_.size(); }
  // The outermost item is complete in the current set (the input may end).
  bool can_end() const { return can_end_.back() != 0; }
  bool can_end_at(size_t set) const { return can_end_[set] != 0; }
  std::span<const EarleyItem> current() const {
    return {items_.data() + set_begin_.back(), items_.size() - set_begin_.back()};
  }

 private:
  // The end of the deterministic chain of completions of `rule` begun in
  // set `set` (Leo's topmost item), when the set has one.
  struct LeoItem {
    int32_t rule = -1;
    EarleyItem top;
  };
  const LeoItem* find_leo(int32_t set, int32_t rule) const;
  void add_leo_items();
  void add(EarleyItem item);
  void close();
  void grow_table();
  // A new current set (empty), and back to the one before it.
  void push_set(uint8_t can_end) {
    set_begin_.push_back(static_cast<uint32_t>(items_.size()));
    can_end_.push_back(can_end);
    leo_begin_.push_back(static_cast<uint32_t>(leo_.size()));
  }
  void pop_set() {
    items_.resize(set_begin_.back());
    leo_.resize(leo_begin_.back());
    set_begin_.pop_back();
    can_end_.pop_back();
    leo_begin_.pop_back();
  }

  const GrammarFsm* fsm_;
  std::vector<EarleyItem> items_;    // every set, one after another
  std::vector<uint32_t> set_begin_;  // [n_sets] first item of each set
  std::vector<uint8_t> can_end_;     // [n_sets]
  std::vector<LeoItem> leo_;         // every set's, by rule within a set
  std::vector<uint32_t> leo_begin_;  // [n_sets] first LeoItem of each set
  // add_leo_items' count of the items waiting on each rule, valid where
  // waiting_stamp_ == leo_stamp_.
  std::vector<uint32_t> waiting_count_;
  std::vector<uint32_t> waiting_stamp_;
  uint32_t leo_stamp_ = 0;
  int64_t budget_ = std::numeric_limits<int64_t>::max();
  bool exhausted_ = false;
  // Duplicates in the current set are found by a scan while it is small, then
  // by an open-addressing table of its items (cleared by bumping stamp_).
  static constexpr size_t kLinearItems = 16;
  bool hashed_ = false;
  std::vector<uint64_t> table_keys_;
  std::vector<uint32_t> table_stamps_;
  uint32_t stamp_ = 0;
};

}  // namespace ladder::grammar
