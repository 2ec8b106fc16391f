#include "server/grammar_constraint.h"

#include <limits>
#include <string>

#include "common/check.h"

namespace ladder::server {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar)
    : matcher_(std::move(grammar)) {
  words_.resize(matcher_.grammar().vocabulary().mask_words());
}

void GrammarConstraint::mask(std::span<float> logits) {
  const grammar::TokenVocabulary& vocab = matcher_.grammar().vocabulary();
  if (!matcher_.fill_mask(words_)) {
    // The vocabulary cannot spell what the grammar needs next (the builder
    // refuses grammars for such vocabularies; this is the last resort), or
    // the parse ran past its budget (the engine then fails the request): end.
    if (matcher_.exhausted()) note_exhausted();
    std::fill(words_.begin(), words_.end(), 0);
    for (int32_t id : vocab.end_ids()) words_[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }
  // The model's rows may be wider than the tokenizer's vocabulary (padded
  // output heads): those extra ids are never allowed.
  const size_t n = std::min(logits.size(), static_cast<size_t>(vocab.size()));
  grammar::apply_token_mask(words_, logits.first(n));
  for (size_t i = n; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
}

void GrammarConstraint::accept(int32_t token) {
  if (matcher_.is_terminated()) return;  // only end tokens are allowed after the end
  if (!status_.is_ok()) return;          // failed: the engine drops this token
  // The token was sampled under this constraint's mask, so the grammar allows
  // it; an end token after a complete match terminates the matcher.
  const bool ok = matcher_.accept(token);
  // A token the mask allowed without trying it (its state's own tokens) can
  // still run the parse past its budget when it is read.
  if (!ok && matcher_.exhausted()) return note_exhausted();
  LADDER_CHECK(ok, "a sampled token outside the grammar's mask");
}

void GrammarConstraint::note_exhausted() {
  if (!status_.is_ok()) return;
  status_ =
      invalid_argument("the grammar is too ambiguous to enforce: matching the output so far took more than " +
                       std::to_string(grammar::kMatcherStepWork) +
                       " parser steps for one token; write repetition (x*) or unambiguous recursion "
                       "instead of rules such as `x ::= x x`")
          .with_reason("grammar_too_complex");
}

void GrammarConstraint::rollback(int32_t n) { matcher_.rollback(n); }

}  // namespace ladder::server
