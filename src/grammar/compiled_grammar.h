// CompiledGrammar: a grammar compiled against one vocabulary. Immutable to
// its users and shared across requests (and threads); a GrammarMatcher holds
// the per-request state.
//
// The token mask rests on a per-state classification (XGrammar's "adaptive
// token mask cache"): for an automaton state s, walk the vocabulary trie with
// a recogniser that starts at s alone (predicting the rules s refers to) and
//   - accepts a token when its bytes can be read without leaving s's rule:
//     then it is allowed wherever s occurs, whatever surrounds the rule;
//   - calls it uncertain when the rule could end part-way through the token:
//     what follows depends on the rules around it, checked per request;
//   - rejects it otherwise.
// A state's classification is computed the first time a matcher meets the
// state (or all at once by precompute()) and kept for every later request.
// Because the walk from s covers the rules s predicts, a mask needs the
// classifications of the items that began before the current position only
// (grammar_matcher.h), and uncertain tokens are those near a rule's end.
//
// A state's walk may do kClassifyWorkPerNode units of the recogniser's work
// per trie node (unambiguous grammars take about one); a walk that runs past
// it (an ambiguous grammar, where every step predicts and completes much)
// stops, and the state calls every token uncertain, leaving each to the
// matcher's own budgeted check in its context.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_fsm.h"
#include "grammar/token_vocabulary.h"

namespace ladder::grammar {

struct StateTokens {
  // Allowed from this state in any context: a bitset over the vocabulary
  // ([mask_words]) when many, else the ids (accepted_bits empty).
  std::vector<uint64_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  // Trie nodes (ascending) whose tokens depend on the context.
  std::vector<int32_t> uncertain_nodes;
};

inline constexpr int64_t kClassifyWorkPerNode = 32;

class CompiledGrammar {
 public:
  // Errors: those of GrammarFsm::compile, and a <"text"> token the
  // vocabulary does not have.
  static Result<std::shared_ptr<const CompiledGrammar>> compile(
      const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary);
  // parse_gbnf + compile.
  static Result<std::shared_ptr<const CompiledGrammar>> from_gbnf(
      std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocabulary);

  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const GrammarFsm& fsm() const { return fsm_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }
  const std::shared_ptr<const TokenVocabulary>& vocabulary_ptr() const { return vocabulary_; }

  // The grammar symbol of a token named with <"text">, or -1.
  int32_t token_symbol(int32_t token) const;
  // Token ids of the named tokens: named_tokens()[k] reads symbol kFirstTokenSymbol + k.
  const std::vector<int32_t>& named_tokens() const { return named_tokens_; }

  // The classification of `state` (computed now if no one has yet). Thread-safe.
  const StateTokens& state_tokens(int32_t state) const;
  // Classifies every state that reads anything, so later masks cost only
  // their context-dependent part.
  void precompute() const;
  // States classified so far.
  size_t n_classified() const { return n_classified_.load(std::memory_order_relaxed); }

 private:
  CompiledGrammar(GrammarFsm fsm, std::shared_ptr<const TokenVocabulary> vocabulary);
  StateTokens classify(int32_t state) const;

  GrammarFsm fsm_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::vector<int32_t> named_tokens_;
  std::vector<std::pair<int32_t, int32_t>> symbol_by_token_;  // (token id, symbol), sorted
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<const StateTokens>> owned_;
  mutable std::unique_ptr<std::atomic<const StateTokens*>[]> cache_;  // [n_states]
  mutable std::atomic<size_t> n_classified_{0};
};

}  // namespace ladder::grammar
