// Request: what a caller submits to the engine. Sampling, stopping and
// scheduling are separate small types; the engine knows no text, no HTTP.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "engine/stop_criteria.h"
#include "engine/token_constraint.h"
#include "kv/kv_transfer.h"

namespace ladder::engine {

// Where a request stands in line: higher priority first, then the earliest
// deadline (EDF), then arrival order.
struct SchedulingClass {
  int32_t priority = 0;  // larger = more important
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Index of the tenant whose reservations (EngineConfig::tenants) apply.
  int32_t tenant = 0;
};

struct Request {
  std::vector<int32_t> prompt;  // token ids, BOS included when the model wants it
  SamplingParams sampling;
  StopCriteria stop;
  SchedulingClass scheduling;
  // Prefix-cache scope, set by the server from the API key (never by the
  // client). Requests share cached blocks only when their scopes are equal.
  std::string cache_scope;
  // Restricts the tokens sampled (structured output); null: any token. Owned
  // by this request alone.
  std::shared_ptr<TokenConstraint> constraint;
  // Special tokens whose text belongs to the output text (tool-call markers
  // the server parses); other special tokens write no text.
  std::vector<int32_t> shown_special_tokens;
  // Every special token writes its text (vLLM's skip_special_tokens: false).
  bool show_special_tokens = false;
  // Speculative decoding when the engine has a draft (EngineConfig::
  // speculative); false: plain decoding. The tokens are the same either way.
  bool speculative = true;
  // Rung 2 (prefill/decode split). export_kv: once the prompt is computed,
  // its first token event carries the KV of the prompt's full blocks before
  // its last token (StreamEvent::kv_export). kv_import: blocks another worker
  // computed for this prompt, taken where their keys match this request's
  // own (KvCacheManager::stage_import); the rest is computed here.
  bool export_kv = false;
  std::shared_ptr<const kv::KvBlockSet> kv_import;
};

}  // namespace ladder::engine
