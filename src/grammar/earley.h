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
#pragma once

#include <cstdint>
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

  size_t n_sets() const { return set_begin_.size(); }
  // The outermost item is complete in the current set (the input may end).
  bool can_end() const { return can_end_.back() != 0; }
  bool can_end_at(size_t set) const { return can_end_[set] != 0; }
  std::span<const EarleyItem> current() const {
    return {items_.data() + set_begin_.back(), items_.size() - set_begin_.back()};
  }

 private:
  void add(EarleyItem item);
  void close();
  void grow_table();

  const GrammarFsm* fsm_;
  std::vector<EarleyItem> items_;    // every set, one after another
  std::vector<uint32_t> set_begin_;  // [n_sets] first item of each set
  std::vector<uint8_t> can_end_;     // [n_sets]
  // Duplicates in the current set are found by a scan while it is small, then
  // by an open-addressing table of its items (cleared by bumping stamp_).
  static constexpr size_t kLinearItems = 16;
  bool hashed_ = false;
  std::vector<uint64_t> table_keys_;
  std::vector<uint32_t> table_stamps_;
  uint32_t stamp_ = 0;
};

}  // namespace ladder::grammar
