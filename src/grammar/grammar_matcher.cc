#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <limits>

namespace ladder::grammar {
namespace {

void set_bit(std::span<uint64_t> mask, int32_t id) {
  mask[id >> 6] |= uint64_t{1} << (id & 63);
}
void clear_bit(std::span<uint64_t> mask, int32_t id) {
  mask[id >> 6] &= ~(uint64_t{1} << (id & 63));
}
bool test_bit(std::span<const uint64_t> mask, int32_t id) {
  return (mask[id >> 6] >> (id & 63)) & 1;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), rec_(grammar_->fsm()) {
  state_stamp_.assign(static_cast<size_t>(grammar_->fsm().n_states()), 0);
  reset();
}

void GrammarMatcher::reset() {
  rec_.set_budget(kMatcherStepWork);  // an exhausted budget would cut set 0 short
  rec_.start(grammar_->fsm().root_state());
  history_.clear();
  terminated_ = false;
}

bool GrammarMatcher::fill_mask(std::span<uint64_t> mask) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  LADDER_CHECK(mask.size() == vocab.mask_words(),
               "fill_mask: the mask must have vocabulary().mask_words() words");
  std::fill(mask.begin(), mask.end(), 0);
  rec_.set_budget(kMatcherStepWork);
  bool any = false;
  if (!terminated_) {
    // Context-independent part: OR the accepted sets of the distinct states
    // of the items that began before this position. Items predicted here
    // (origin == this set) need no look of their own: the classification of
    // the item that predicted them walked every path through them.
    const GrammarFsm& fsm = grammar_->fsm();
    const int32_t here = static_cast<int32_t>(rec_.n_sets()) - 1;
    ++stamp_;
    kernel_.clear();
    for (const EarleyItem& it : rec_.current()) {
      if (it.origin == here || state_stamp_[it.state] == stamp_) continue;
      state_stamp_[it.state] = stamp_;
      const StateTokens& st = grammar_->state_tokens(it.state);
      if (!st.accepted_bits.empty()) {
        for (size_t w = 0; w < mask.size(); ++w) mask[w] |= st.accepted_bits[w];
      } else {
        for (int32_t id : st.accepted_ids) set_bit(mask, id);
      }
      if (!st.uncertain_nodes.empty()) kernel_.push_back(&st);
    }
    // Context-dependent part: the uncertain tokens no state allowed already.
    const std::vector<TrieNode>& trie = vocab.trie();
    candidates_.clear();
    for (const StateTokens* st : kernel_) {
      for (int32_t node : st->uncertain_nodes) {
        if (!test_bit(mask, vocab.node_tokens(trie[node])[0])) candidates_.push_back(node);
      }
    }
    if (kernel_.size() > 1) {
      std::sort(candidates_.begin(), candidates_.end());
      candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
    }
    if (!candidates_.empty()) check_uncertain(candidates_, mask);
    // Named tokens match only as their symbol, never by their bytes.
    const std::vector<int32_t>& named = grammar_->named_tokens();
    for (size_t k = 0; k < named.size(); ++k) {
      clear_bit(mask, named[k]);
      const uint32_t symbol = kFirstTokenSymbol + static_cast<uint32_t>(k);
      for (const EarleyItem& it : rec_.current()) {
        if (fsm.next(it.state, symbol) >= 0) {
          set_bit(mask, named[k]);
          break;
        }
      }
    }
    for (uint64_t w : mask) any = any || w != 0;
  }
  if (rec_.exhausted()) {  // some checks were cut short: the mask is not known
    std::fill(mask.begin(), mask.end(), 0);
    return false;
  }
  if (terminated_ || rec_.can_end()) {
    for (int32_t id : vocab.end_ids()) set_bit(mask, id);
    any = any || !vocab.end_ids().empty();
  }
  return any;
}

void GrammarMatcher::check_uncertain(std::span<const int32_t> nodes, std::span<uint64_t> mask) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  const std::vector<TrieNode>& trie = vocab.trie();
  const size_t base = rec_.n_sets();
  path_.clear();
  int32_t skip_end = -1;  // nodes below this index lie in a subtree that failed
  for (int32_t node : nodes) {
    if (node < skip_end) continue;
    chain_.clear();
    for (int32_t n = node; n != 0; n = trie[n].parent) chain_.push_back(n);
    std::reverse(chain_.begin(), chain_.end());
    size_t common = 0;
    while (common < path_.size() && common < chain_.size() && path_[common] == chain_[common]) ++common;
    path_.resize(common);
    rec_.truncate(base + common);
    bool ok = true;
    for (size_t j = common; j < chain_.size(); ++j) {
      if (!rec_.advance(trie[chain_[j]].byte)) {
        skip_end = trie[chain_[j]].subtree_end;
        ok = false;
        break;
      }
      path_.push_back(chain_[j]);
    }
    if (ok) {
      for (int32_t id : vocab.node_tokens(trie[node])) set_bit(mask, id);
    }
  }
  rec_.truncate(base);
}

bool GrammarMatcher::is_allowed(int32_t token) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (token < 0 || token >= vocab.size()) return false;
  if (vocab.is_end(token)) return !rec_.exhausted() && (terminated_ || rec_.can_end());
  if (!accept(token)) return false;
  rollback(1);
  return true;
}

bool GrammarMatcher::feed_piece(std::string_view bytes) {
  const size_t before = rec_.n_sets();
  for (char c : bytes) {
    if (!rec_.advance(static_cast<uint8_t>(c))) {
      rec_.truncate(before);
      return false;
    }
  }
  return true;
}

bool GrammarMatcher::accept(int32_t token) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (terminated_ || rec_.exhausted() || token < 0 || token >= vocab.size()) return false;
  rec_.set_budget(kMatcherStepWork);
  const uint32_t before = static_cast<uint32_t>(rec_.n_sets());
  if (vocab.is_end(token)) {
    if (!rec_.can_end()) return false;
    history_.push_back({before, true});
    terminated_ = true;
    return true;
  }
  const int32_t symbol = grammar_->token_symbol(token);
  if (symbol >= 0) {
    if (!rec_.advance(static_cast<uint32_t>(symbol))) return false;
  } else {
    if (vocab.node_of(token) < 0) return false;  // special, or writes nothing
    if (!feed_piece(vocab.piece(token))) return false;
  }
  history_.push_back({before, false});
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return false;
  rec_.set_budget(kMatcherStepWork);
  const uint32_t before = static_cast<uint32_t>(rec_.n_sets());
  if (!feed_piece(bytes)) return false;
  history_.push_back({before, false});
  return true;
}

void GrammarMatcher::rollback(int32_t n_steps) {
  LADDER_CHECK(n_steps >= 0 && n_steps <= static_cast<int32_t>(history_.size()),
               "GrammarMatcher::rollback: more steps than were accepted");
  if (n_steps == 0) return;
  const Step first = history_[history_.size() - static_cast<size_t>(n_steps)];
  for (int32_t i = 0; i < n_steps; ++i) {
    if (history_.back().end) terminated_ = false;
    history_.pop_back();
  }
  rec_.truncate(first.n_sets_before);
}

void apply_token_mask(std::span<const uint64_t> mask, std::span<float> logits) {
  LADDER_CHECK(mask.size() * 64 >= logits.size(), "apply_token_mask: mask shorter than the logits");
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w * 64 < logits.size(); ++w) {
    const uint64_t bits = mask[w];
    if (bits == ~uint64_t{0}) continue;
    const size_t begin = w * 64;
    const size_t end = std::min(begin + 64, logits.size());
    if (bits == 0) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin),
                logits.begin() + static_cast<std::ptrdiff_t>(end), kNegInf);
      continue;
    }
    for (size_t i = begin; i < end; ++i) {
      if (!((bits >> (i - begin)) & 1)) logits[i] = kNegInf;
    }
  }
}

}  // namespace ladder::grammar
