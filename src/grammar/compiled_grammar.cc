#include "grammar/compiled_grammar.h"

#include <algorithm>

#include "grammar/earley.h"

namespace ladder::grammar {

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(
    const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary) {
  LADDER_CHECK(vocabulary != nullptr, "CompiledGrammar needs a vocabulary");
  LADDER_ASSIGN_OR_RETURN(GrammarFsm fsm, GrammarFsm::compile(grammar));
  std::shared_ptr<CompiledGrammar> g(new CompiledGrammar(std::move(fsm), std::move(vocabulary)));
  for (size_t k = 0; k < g->fsm_.token_texts().size(); ++k) {
    const std::string& text = g->fsm_.token_texts()[k];
    int32_t id = g->vocabulary_->find_token(text);
    if (id < 0)
      return invalid_argument("grammar names the token <\"" + text +
                              "\">, which the vocabulary does not have");
    if (g->vocabulary_->is_end(id)) {
      return invalid_argument("grammar names the end-of-generation token <\"" + text +
                              "\">; it is allowed exactly where the grammar may end, never inside it");
    }
    g->named_tokens_.push_back(id);
    g->symbol_by_token_.emplace_back(id, static_cast<int32_t>(kFirstTokenSymbol + k));
  }
  std::sort(g->symbol_by_token_.begin(), g->symbol_by_token_.end());
  return std::shared_ptr<const CompiledGrammar>(std::move(g));
}

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::from_gbnf(
    std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocabulary) {
  LADDER_ASSIGN_OR_RETURN(Grammar grammar, parse_gbnf(gbnf));
  return compile(grammar, std::move(vocabulary));
}

CompiledGrammar::CompiledGrammar(GrammarFsm fsm, std::shared_ptr<const TokenVocabulary> vocabulary)
    : fsm_(std::move(fsm)), vocabulary_(std::move(vocabulary)) {
  cache_ = std::make_unique<std::atomic<const StateTokens*>[]>(static_cast<size_t>(fsm_.n_states()));
  for (int32_t s = 0; s < fsm_.n_states(); ++s) cache_[s].store(nullptr, std::memory_order_relaxed);
}

int32_t CompiledGrammar::token_symbol(int32_t token) const {
  auto it =
      std::lower_bound(symbol_by_token_.begin(), symbol_by_token_.end(), std::make_pair(token, INT32_MIN));
  if (it != symbol_by_token_.end() && it->first == token) return it->second;
  return -1;
}

const StateTokens& CompiledGrammar::state_tokens(int32_t state) const {
  const StateTokens* cached = cache_[state].load(std::memory_order_acquire);
  if (cached != nullptr) return *cached;
  auto computed = std::make_unique<const StateTokens>(classify(state));
  std::lock_guard<std::mutex> lock(mutex_);
  cached = cache_[state].load(std::memory_order_acquire);
  if (cached != nullptr) return *cached;  // another thread finished first
  cached = computed.get();
  owned_.push_back(std::move(computed));
  cache_[state].store(cached, std::memory_order_release);
  n_classified_.fetch_add(1, std::memory_order_relaxed);
  return *cached;
}

void CompiledGrammar::precompute() const {
  for (int32_t s = 0; s < fsm_.n_states(); ++s) {
    if (!fsm_.terminal_edges(s).empty() || !fsm_.rule_edges(s).empty()) state_tokens(s);
  }
}

// One preorder walk of the trie from `state` alone (see the header). pop[d]:
// the rule could have ended after one of the first d bytes of the current
// branch (ending before any byte is the business of the surrounding items).
StateTokens CompiledGrammar::classify(int32_t state) const {
  const std::vector<TrieNode>& trie = vocabulary_->trie();
  EarleyRecognizer rec(fsm_);
  const auto n_nodes = static_cast<int32_t>(trie.size());
  rec.set_budget(kClassifyWorkPerNode * (n_nodes + 64));
  rec.start(state);
  std::vector<uint8_t> pop(1, 0);
  std::vector<int32_t> accepted;
  StateTokens out;
  int32_t i = 1;
  while (i < n_nodes) {
    const TrieNode& node = trie[i];
    const size_t d = static_cast<size_t>(node.depth);
    rec.truncate(d);
    if (rec.advance(node.byte)) {
      if (pop.size() <= d) pop.resize(d + 1);
      pop[d] = static_cast<uint8_t>(pop[d - 1] | (rec.can_end() ? 1 : 0));
      for (int32_t id : vocabulary_->node_tokens(node)) accepted.push_back(id);
      ++i;
      continue;
    }
    if (rec.exhausted()) {  // over budget: every token is left to the context
      StateTokens all;
      for (int32_t j = 1; j < n_nodes; ++j) {
        if (trie[j].tokens_end > trie[j].tokens_begin) all.uncertain_nodes.push_back(j);
      }
      return all;
    }
    if (pop[d - 1]) {
      for (int32_t j = i; j < node.subtree_end; ++j) {
        if (trie[j].tokens_end > trie[j].tokens_begin) out.uncertain_nodes.push_back(j);
      }
    }
    i = node.subtree_end;
  }
  const size_t words = vocabulary_->mask_words();
  if (accepted.size() * 32 < static_cast<size_t>(vocabulary_->size())) {
    std::sort(accepted.begin(), accepted.end());
    out.accepted_ids = std::move(accepted);
  } else {
    out.accepted_bits.assign(words, 0);
    for (int32_t id : accepted) out.accepted_bits[id >> 6] |= uint64_t{1} << (id & 63);
  }
  return out;
}

}  // namespace ladder::grammar
