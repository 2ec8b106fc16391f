// GrammarMatcher: one request's position in a CompiledGrammar, token by
// token. Per sampling step:
//
//   matcher.fill_mask(mask);          // allowed tokens, one bit each
//   apply_token_mask(mask, logits);   // others to -inf, then sample as usual
//   matcher.accept(token);            // the sampled token
//
// End-of-generation tokens are allowed exactly when the grammar may end here;
// once the grammar is complete (nothing can follow), they are the only
// tokens allowed, and after one is accepted is_terminated() holds and the
// mask stays end-only. rollback(n) undoes the last n accepted tokens
// (speculative decoding: accept the draft, roll back what the target refused).
//
// The mask: the accepted sets of the classifications (compiled_grammar.h) of
// the current items that began before this position, ORed together (an item
// predicted here is covered by the item that predicted it); then each
// uncertain token not yet allowed is checked by feeding its bytes to this
// matcher, walking the vocabulary trie so that a shared prefix is fed once and
// rolled back after. Not thread-safe; one per request.
//
// Each call (fill_mask, accept, accept_bytes, is_allowed) may do at most
// kMatcherStepWork units of the recogniser's work (earley.h). Unambiguous
// grammars, right-recursive ones included, need a tiny fraction of it (a JSON
// document nested 40 levels against a 32,000-token vocabulary: at most 160
// units per mask); an ambiguous grammar whose parse grows with the output
// (`x ::= x x | "a"`, whose work per byte grows with the square of the
// bytes so far) runs out after about 1,200 bytes and two seconds of one
// core in all, and then the matcher is
// exhausted(): it allows nothing more until reset(), and its owner ends the
// request with an error instead of stalling every request of the batch for
// minutes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"

namespace ladder::grammar {

// Some milliseconds of one core at most.
inline constexpr int64_t kMatcherStepWork = int64_t{1} << 21;

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Writes the allowed tokens into mask (vocabulary().mask_words() words; bit
  // id % 64 of word id / 64). Returns false when no token is allowed, which
  // happens only when the vocabulary cannot spell what the grammar needs
  // next (TokenVocabulary::covers_all_bytes() is false), or when the matcher
  // is exhausted().
  bool fill_mask(std::span<uint64_t> mask);
  // Whether `token` is allowed now (the same answer as its bit in fill_mask).
  bool is_allowed(int32_t token);

  // Advances by the token and returns true, or returns false and leaves the
  // state unchanged when the grammar does not allow it.
  bool accept(int32_t token);
  // Advances by raw bytes as one step (rollback(1) undoes it); for a forced
  // prefix the caller has already emitted, and for tests.
  bool accept_bytes(std::string_view bytes);

  // The text so far is a complete match.
  bool can_end() const { return !terminated_ && rec_.can_end(); }
  // An end-of-generation token was accepted.
  bool is_terminated() const { return terminated_; }
  // A call ran past kMatcherStepWork: every later call refuses (fill_mask
  // allows nothing) until reset().
  bool exhausted() const { return rec_.exhausted(); }
  // Steps accepted since the start (what rollback can undo).
  int32_t n_steps() const { return static_cast<int32_t>(history_.size()); }
  void rollback(int32_t n_steps);
  void reset();

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  // Sets the bits of the uncertain trie nodes (ascending, deduplicated) that
  // the current state accepts.
  void check_uncertain(std::span<const int32_t> nodes, std::span<uint64_t> mask);
  bool feed_piece(std::string_view bytes);

  std::shared_ptr<const CompiledGrammar> grammar_;
  EarleyRecognizer rec_;
  struct Step {
    uint32_t n_sets_before = 0;
    bool end = false;  // the step accepted an end-of-generation token
  };
  std::vector<Step> history_;
  bool terminated_ = false;
  // Scratch.
  std::vector<uint32_t> state_stamp_;  // [n_states]
  uint32_t stamp_ = 0;
  std::vector<const StateTokens*> kernel_;
  std::vector<int32_t> candidates_;
  std::vector<int32_t> path_;
  std::vector<int32_t> chain_;
};

// logits[i] = -inf for every token whose bit is clear in mask.
void apply_token_mask(std::span<const uint64_t> mask, std::span<float> logits);

}  // namespace ladder::grammar
