#include "grammar/earley.h"

#include <algorithm>

#include "common/check.h"

namespace ladder::grammar {
namespace {

uint64_t item_key(EarleyItem it) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(it.state)) << 32) | static_cast<uint32_t>(it.origin);
}

size_t slot_of(uint64_t key, size_t mask) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

}  // namespace

void EarleyRecognizer::start(int32_t state) {
  items_.clear();
  set_begin_.clear();
  can_end_.clear();
  leo_.clear();
  leo_begin_.clear();
  exhausted_ = false;
  push_set(0);
  if (table_keys_.empty()) {
    table_keys_.assign(64, 0);
    table_stamps_.assign(64, 0);
  }
  hashed_ = false;
  add({state, kRootOrigin});
  close();
}

const EarleyRecognizer::LeoItem* EarleyRecognizer::find_leo(int32_t set, int32_t rule) const {
  const auto s = static_cast<size_t>(set);
  const auto begin = leo_.begin() + leo_begin_[s];
  const auto end = s + 1 < leo_begin_.size() ? leo_.begin() + leo_begin_[s + 1] : leo_.end();
  const auto it = std::lower_bound(begin, end, rule, [](const LeoItem& l, int32_t r) { return l.rule < r; });
  return it != end && it->rule == rule ? &*it : nullptr;
}

// The current set's Leo items: a rule exactly one of its items waits on,
// whose edge over that rule ends in a final state without edges.
void EarleyRecognizer::add_leo_items() {
  const auto cur = static_cast<int32_t>(set_begin_.size()) - 1;
  const auto ends_its_rule = [&](int32_t target) {
    const FsmState& t = fsm_->state(target);
    return t.final && t.terminal_begin == t.terminal_end && t.rule_begin == t.rule_end;
  };
  // Most sets have no edge into such a state: one pass says so.
  bool any = false;
  for (size_t k = set_begin_.back(); k < items_.size() && !any; ++k) {
    for (const RuleEdge& e : fsm_->rule_edges(items_[k].state)) any = any || ends_its_rule(e.target);
  }
  if (!any) return;
  // How many of the set's items wait on each rule.
  if (waiting_count_.size() != static_cast<size_t>(fsm_->n_rules())) {
    waiting_count_.assign(static_cast<size_t>(fsm_->n_rules()), 0);
    waiting_stamp_.assign(waiting_count_.size(), 0);
  }
  if (++leo_stamp_ == 0) {  // wrapped: old stamps could match again
    std::fill(waiting_stamp_.begin(), waiting_stamp_.end(), 0);
    leo_stamp_ = 1;
  }
  for (size_t k = set_begin_.back(); k < items_.size(); ++k) {
    for (const RuleEdge& e : fsm_->rule_edges(items_[k].state)) {
      const auto r = static_cast<size_t>(e.rule);
      if (waiting_stamp_[r] != leo_stamp_) {
        waiting_stamp_[r] = leo_stamp_;
        waiting_count_[r] = 0;
      }
      ++waiting_count_[r];
    }
  }
  const size_t first = leo_.size();
  for (size_t k = set_begin_.back(); k < items_.size(); ++k) {
    const EarleyItem parent = items_[k];
    for (const RuleEdge& e : fsm_->rule_edges(parent.state)) {
      if (waiting_count_[static_cast<size_t>(e.rule)] != 1 || !ends_its_rule(e.target)) continue;
      LeoItem leo{e.rule, {e.target, parent.origin}};
      // The chain goes on through the waiting item's own origin; not through
      // this set, whose Leo items are still being made (a chain inside one
      // set is as long as the grammar's, not the input's).
      if (parent.origin != kRootOrigin && parent.origin != cur) {
        if (const LeoItem* up = find_leo(parent.origin, fsm_->state(e.target).rule)) leo.top = up->top;
      }
      leo_.push_back(leo);
    }
  }
  std::sort(leo_.begin() + static_cast<std::ptrdiff_t>(first), leo_.end(),
            [](const LeoItem& a, const LeoItem& b) { return a.rule < b.rule; });
}

// Puts the current set's items into a table twice their number (or more).
void EarleyRecognizer::grow_table() {
  const size_t n = items_.size() - set_begin_.back();
  size_t size = table_keys_.size();
  while (size < 4 * (n + 1)) size *= 2;
  if (size != table_keys_.size()) {
    table_keys_.assign(size, 0);
    table_stamps_.assign(size, 0);
  }
  if (++stamp_ == 0) {  // wrapped: old stamps could match again
    std::fill(table_stamps_.begin(), table_stamps_.end(), 0);
    stamp_ = 1;
  }
  const size_t mask = size - 1;
  for (size_t k = set_begin_.back(); k < items_.size(); ++k) {
    uint64_t key = item_key(items_[k]);
    size_t slot = slot_of(key, mask);
    while (table_stamps_[slot] == stamp_) slot = (slot + 1) & mask;
    table_keys_[slot] = key;
    table_stamps_[slot] = stamp_;
  }
  hashed_ = true;
}

void EarleyRecognizer::add(EarleyItem item) {
  --budget_;
  const size_t n = items_.size() - set_begin_.back();
  if (!hashed_) {
    // Most sets are small: a scan beats hashing.
    for (size_t k = set_begin_.back(); k < items_.size(); ++k) {
      if (items_[k].state == item.state && items_[k].origin == item.origin) return;
    }
    items_.push_back(item);
    if (n + 1 >= kLinearItems) grow_table();
    return;
  }
  if ((n + 1) * 2 > table_keys_.size()) grow_table();
  const uint64_t key = item_key(item);
  const size_t mask = table_keys_.size() - 1;
  size_t slot = slot_of(key, mask);
  while (table_stamps_[slot] == stamp_) {
    if (table_keys_[slot] == key) return;
    slot = (slot + 1) & mask;
  }
  table_keys_[slot] = key;
  table_stamps_[slot] = stamp_;
  items_.push_back(item);
}

void EarleyRecognizer::close() {
  const int32_t cur = static_cast<int32_t>(set_begin_.size()) - 1;
  bool can_end = false;
  for (size_t k = set_begin_.back(); k < items_.size(); ++k) {
    if (budget_ < 0) {
      exhausted_ = true;
      return;
    }
    const EarleyItem it = items_[k];
    const FsmState& st = fsm_->state(it.state);
    if (st.final) {
      if (it.origin == kRootOrigin) {
        can_end = true;
      } else if (const LeoItem* leo = it.origin != cur ? find_leo(it.origin, st.rule) : nullptr) {
        add(leo->top);  // the chain's end stands for every completion on it
      } else if (it.origin != cur) {
        // Complete: advance the items of the origin set that wait on this rule.
        const size_t begin = set_begin_[it.origin];
        const size_t end = set_begin_[it.origin + 1];
        budget_ -= static_cast<int64_t>(end - begin);
        for (size_t j = begin; j < end; ++j) {
          const EarleyItem parent = items_[j];
          for (const RuleEdge& e : fsm_->rule_edges(parent.state)) {
            if (e.rule == st.rule) add({e.target, parent.origin});
          }
        }
      }
    }
    for (const RuleEdge& e : fsm_->rule_edges(it.state)) {
      add({fsm_->rule_start(e.rule), cur});
      if (fsm_->rule_nullable(e.rule)) add({e.target, it.origin});
    }
  }
  can_end_.back() = can_end ? 1 : 0;
  add_leo_items();
}

bool EarleyRecognizer::advance(uint32_t symbol) {
  if (exhausted_) return false;
  const size_t begin = set_begin_.back();
  const size_t end = items_.size();
  if (end - begin == 1) {
    // One item moving inside its rule, with nothing to predict or complete:
    // the common case inside strings and literals, done without a closure.
    const EarleyItem it = items_[begin];
    const int32_t target = fsm_->next(it.state, symbol);
    if (target < 0) return false;
    const FsmState& st = fsm_->state(target);
    if (st.rule_begin == st.rule_end && (!st.final || it.origin == kRootOrigin)) {
      --budget_;
      push_set(st.final ? 1 : 0);  // no rule edges: no Leo items
      items_.push_back({target, it.origin});
      return true;
    }
  }
  push_set(0);
  hashed_ = false;
  for (size_t k = begin; k < end; ++k) {
    const EarleyItem it = items_[k];
    int32_t target = fsm_->next(it.state, symbol);
    if (target >= 0) add({target, it.origin});
  }
  if (items_.size() == end) {
    pop_set();
    return false;
  }
  close();
  if (exhausted_) {
    pop_set();
    return false;
  }
  return true;
}

void EarleyRecognizer::truncate(size_t n_sets) {
  LADDER_CHECK(n_sets >= 1 && n_sets <= set_begin_.size(), "EarleyRecognizer::truncate out of range");
  if (n_sets == set_begin_.size()) return;
  items_.resize(set_begin_[n_sets]);
  leo_.resize(leo_begin_[n_sets]);
  set_begin_.resize(n_sets);
  can_end_.resize(n_sets);
  leo_begin_.resize(n_sets);
}

}  // namespace ladder::grammar
