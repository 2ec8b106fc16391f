// TokenStream: the per-request channel from the engine loop (producer) to
// whoever serves the request (consumer). Thread-safe; unbounded, since the
// engine never blocks on a slow reader (output is bounded by max_tokens).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/finish_reason.h"
#include "engine/request_timings.h"
#include "engine/sampler.h"
#include "engine/spec_usage.h"
#include "kv/kv_transfer.h"

namespace ladder::engine {

// Token counts of a finished request (OpenAI `usage`).
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;     // includes a sampled stop token
  int64_t cached_prompt_tokens = 0;  // prefix-cache hits on first admission
  SpecUsage speculative;             // all zero without speculation
};

struct StreamEvent {
  enum class Kind { kToken, kFinished } kind = Kind::kToken;
  // kToken: the sampled token and its logprobs (see Sampler for which).
  SampledToken token;
  // The output text this event releases (valid UTF-8, stop strings cut;
  // empty when the engine has no tokenizer or holds text back). On kFinished,
  // whatever was held back.
  std::string text;
  // kFinished: the last event of every stream.
  FinishReason finish = FinishReason::kNone;
  Status status;  // non-OK with kError
  Usage usage;
  RequestTimings timings;
  int32_t n_preemptions = 0;
  // The first token event of a request with Request::export_kv: its prompt's
  // full blocks before the last token.
  std::shared_ptr<const kv::KvBlockSet> kv_export;
};

class TokenStream {
 public:
  void push(StreamEvent event);
  // Blocks until an event arrives; nullopt once the final event was taken.
  std::optional<StreamEvent> next();
  // Same, giving up after `timeout` (nullopt also when it times out; see done()).
  std::optional<StreamEvent> next_for(std::chrono::milliseconds timeout);
  // True once the final event has been read.
  bool done() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;
  bool final_taken_ = false;
};

}  // namespace ladder::engine
