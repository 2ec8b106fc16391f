// Synthetic workloads in the native format (`ladder workload KIND`), built
// from real prose so that tokenizers see natural text:
//   chat          multi-turn sessions (closed loop: each turn follows the reply + think time)
//   agent         sessions of many short calls sharing a long tool-spec system prompt,
//                 with tool time between calls
//   long-context  single long prompts (a passage, then a question)
//   needle        a fact buried at a chosen depth of a haystack, with an `expect`
//   mixed         chat + agent + long-context interleaved
// Arrival units (requests or sessions) start by a Poisson process at `rate`;
// lengths are in approximate tokens (TextSynthesizer's ratio).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/text_synth.h"
#include "harness/workload.h"

namespace ladder::harness {

struct GeneratorOptions {
  std::string kind = "chat";
  int requests = 32;           // total requests (session turns count one each)
  uint64_t seed = 1;
  double rate = 1.0;           // arrival units per second
  int tenants = 2;             // requests are spread over tenant-0 .. tenant-(n-1)
  int max_tokens = 32;         // output bound of every request
  int user_tokens = 24;        // a chat user message / an agent tool result
  int system_tokens = 64;      // the agent tool-spec system prompt (shared per tenant)
  int context_tokens = 320;    // long-context and needle prompt length
  double depth = 0.5;          // needle position in [0, 1] of the haystack
  int turns = 3;               // chat turns per session
  int agent_calls = 6;         // calls per agent session
  double think_s = 1.0;        // mean user think time between chat turns
  double tool_s = 0.2;         // mean tool time between agent calls
  Slo slo;                     // written on every request when set
  // Sessions on /v1/completions instead of chat: turns become "User: ...\nAssistant:"
  // text, with no chat-template overhead (for models with tiny contexts).
  bool completions = false;
  std::string chat_system = "You are a helpful assistant who tells short stories.";  // "" for none
};

Result<std::vector<WorkloadRequest>> generate_workload(const GeneratorOptions& opts, const TextSynthesizer& synth);

}  // namespace ladder::harness
