// GrammarConstraint: the engine's TokenConstraint for one request, backed by
// a grammar compiled against the model's vocabulary (response_format and
// forced tool calls). Each step it masks every token the grammar does not
// allow next; end-of-generation tokens are allowed exactly when the output
// is a complete match.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/token_constraint.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"

namespace ladder::server {

class GrammarConstraint final : public engine::TokenConstraint {
 public:
  explicit GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar);

  void mask(std::span<float> logits) override;
  void accept(int32_t token) override;
  void rollback(int32_t n) override;
  Status status() const override { return status_; }

 private:
  // The first failure sticks: status() then fails the request.
  void fail(Status status);

  grammar::GrammarMatcher matcher_;
  std::vector<uint64_t> words_;
  Status status_;
};

}  // namespace ladder::server
