// Draft: what proposes speculative tokens for the target to verify (rung 4).
// One interface for every kind: n-gram lookup over the sequence itself
// (ngram_draft.h), and small models run autoregressively beside the target
// (model_draft.h: a separate GGUF sharing the target's vocabulary, the
// target requantized to Q4_0, or the target's first layers).
//
// Drafts here are deterministic: for a given sequence they propose one
// token per position, so the draft distribution q is one-hot. Rejection
// sampling (accept x with min(1, p(x)/q(x)), else draw from
// norm(max(0, p - q))) then reduces to: draw from the target's processed
// distribution p and accept while the draw equals the draft token; the
// first draw that differs is the correction. That keeps the output
// distribution exactly the target's, and even draws the request's RNG the
// same number of times in the same order as plain decoding.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "engine/request_id.h"
#include "ops/thread_pool.h"

namespace ladder::engine {

// One sequence's proposal slot for a step.
struct DraftInput {
  RequestId id = 0;
  // Prompt and output so far; the last token's KV is not yet written.
  std::span<const int32_t> tokens;
  int32_t k = 0;              // tokens wanted (>= 1)
  std::vector<int32_t> out;   // filled with at most k proposed tokens
  // Tokens the draft evaluated before its first proposal beyond the one a
  // cycle needs (a model draft catching up on a prompt or a long pause);
  // such calls do not measure the steady cost of drafting.
  int64_t n_caught_up = 0;
};

class Draft {
 public:
  virtual ~Draft() = default;
  // How the draft was asked for (`ngram`, `early-exit:3`, ...).
  virtual std::string name() const = 0;
  // Fills each input's `out` with up to k tokens (fewer, even none, when it
  // has nothing to propose). Runs on the engine's loop thread.
  virtual void propose(std::span<DraftInput> inputs, ops::ThreadPool& pool) = 0;
  // The sequence finished or was cancelled: drop whatever is kept for it.
  virtual void release(RequestId id) = 0;
};

// A parsed --spec value.
struct DraftSpec {
  enum class Kind { kNone, kNgram, kDraftModel, kSelfQ4, kEarlyExit } kind = Kind::kNone;
  std::string path;     // kDraftModel: the draft GGUF
  int64_t n_layers = 0;  // kEarlyExit: layers kept

  // The value as it was written (`ngram`, `draft:FILE`, `self-q4`, `early-exit:L`); "off" for none.
  std::string to_string() const;
};

// Parses `ngram`, `draft:FILE`, `self-q4`, `early-exit:L` (L >= 1) or `off`.
// kInvalidArgument naming the choices otherwise.
Result<DraftSpec> parse_draft_spec(std::string_view value);

}  // namespace ladder::engine
