// TokenConstraint: a per-request rule over which tokens may come next, e.g. a
// grammar that keeps the output valid JSON. The engine asks it before each
// sampling step and tells it the token chosen; it knows nothing of what the
// rule is (the server builds grammar constraints, src/server).
//
// One object per request, used by one thread at a time (the engine's sampling
// of that request's row).
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"

namespace ladder::engine {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Sets the logits of the tokens not allowed now to -inf. At least one
  // token stays allowed (an end-of-generation token when nothing else can
  // follow).
  virtual void mask(std::span<float> logits) = 0;
  // The token sampled under the last mask.
  virtual void accept(int32_t token) = 0;
  // Undoes the last n accepted tokens (draft tokens the target refused).
  virtual void rollback(int32_t n) = 0;
  // Not ok once the rule can no longer be enforced (a grammar whose parse
  // ran past its work budget): the engine then ends the request with this
  // error instead of emitting the token sampled under the last mask.
  virtual Status status() const { return Status::ok(); }
};

}  // namespace ladder::engine
