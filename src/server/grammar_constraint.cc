#include "server/grammar_constraint.h"

#include <limits>
#include <string>

#include "common/check.h"

namespace ladder::server {
namespace {

Status too_ambiguous() {
  return invalid_argument(
             "the grammar is too ambiguous to enforce: matching the output so far took more than " +
             std::to_string(grammar::kMatcherStepWork) +
             " parser steps for one token; write repetition (x*) or unambiguous recursion instead "
             "of rules such as `x ::= x x`")
      .with_reason("grammar_too_complex");
}

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar)
    : matcher_(std::move(grammar)) {
  words_.resize(matcher_.grammar().vocabulary().mask_words());
}

void GrammarConstraint::mask(std::span<float> logits) {
  const grammar::TokenVocabulary& vocab = matcher_.grammar().vocabulary();
  if (status_.is_ok() && !matcher_.fill_mask(words_)) {
    // No token may follow: the parse ran past its budget, or the vocabulary
    // cannot spell what the grammar needs next (the builder refuses grammars
    // for such vocabularies; this is the last resort). The request fails.
    fail(matcher_.exhausted()
             ? too_ambiguous()
             : invalid_argument("no token of the model's vocabulary can continue the output here: the "
                                "grammar needs text the vocabulary cannot write, or is complete and the "
                                "vocabulary has no end-of-generation token")
                   .with_reason("grammar_unsatisfiable"));
  }
  if (!status_.is_ok()) {
    // Failed: the engine drops whatever is drawn now; any token keeps the
    // sampler's input well formed.
    std::fill(words_.begin(), words_.end(), ~uint64_t{0});
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
  if (!ok && matcher_.exhausted()) {
    return fail(too_ambiguous());
  }
  LADDER_CHECK(ok, "a sampled token outside the grammar's mask");
}

void GrammarConstraint::fail(Status status) {
  if (status_.is_ok()) status_ = std::move(status);
}

void GrammarConstraint::rollback(int32_t n) { matcher_.rollback(n); }

}  // namespace ladder::server
