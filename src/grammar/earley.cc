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
  set_begin_.assign(1, 0);
  can_end_.assign(1, 0);
  if (table_keys_.empty()) {
    table_keys_.assign(64, 0);
    table_stamps_.assign(64, 0);
  }
  hashed_ = false;
  add({state, kRootOrigin});
  close();
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
    const EarleyItem it = items_[k];
    const FsmState& st = fsm_->state(it.state);
    if (st.final) {
      if (it.origin == kRootOrigin) {
        can_end = true;
      } else if (it.origin != cur) {
        // Complete: advance the items of the origin set that wait on this rule.
        const size_t begin = set_begin_[it.origin];
        const size_t end = set_begin_[it.origin + 1];
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
}

bool EarleyRecognizer::advance(uint32_t symbol) {
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
      set_begin_.push_back(static_cast<uint32_t>(end));
      can_end_.push_back(st.final ? 1 : 0);
      items_.push_back({target, it.origin});
      return true;
    }
  }
  set_begin_.push_back(static_cast<uint32_t>(end));
  can_end_.push_back(0);
  hashed_ = false;
  for (size_t k = begin; k < end; ++k) {
    const EarleyItem it = items_[k];
    int32_t target = fsm_->next(it.state, symbol);
    if (target >= 0) add({target, it.origin});
  }
  if (items_.size() == end) {
    set_begin_.pop_back();
    can_end_.pop_back();
    return false;
  }
  close();
  return true;
}

void EarleyRecognizer::truncate(size_t n_sets) {
  LADDER_CHECK(n_sets >= 1 && n_sets <= set_begin_.size(), "EarleyRecognizer::truncate out of range");
  if (n_sets == set_begin_.size()) return;
  items_.resize(set_begin_[n_sets]);
  set_begin_.resize(n_sets);
  can_end_.resize(n_sets);
}

}  // namespace ladder::grammar
