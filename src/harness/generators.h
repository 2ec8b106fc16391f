// Synthetic workloads in the native format (`ladder workload KIND`), built
// from real prose so that tokenizers see natural text:
//   chat          multi-turn sessions (closed loop: each turn follows the reply + think time)
//   agent         sessions of many short calls sharing a long tool-spec system prompt,
//                 with tool time between calls
//   long-context  single long prompts (a passage, then a question), sized in
//                 tokens or as a fraction of the served model's context
//   needle        a fact buried at a chosen depth of a haystack, with an `expect`
//   rare          a long prompt that introduces an unusual entity early (at
//                 `depth`) and ends by starting to repeat it; the continuation
//                 must reproduce the rest (`expect`). See rare_entity below.
//   copy          a passage and a request to repeat it (code edit, quote and
//                 answer): outputs repeat long spans of the prompt
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
  int context_tokens = 320;    // long-context, rare, needle and copy prompt (passage) length
  // long-context and rare: when fill > 0 the prompt is fill x context tokens
  // instead (context: the served model's context length).
  double fill = 0;
  int64_t context = 0;
  double depth = 0.5;          // needle position in [0, 1] of the haystack
  int turns = 3;               // chat turns per session
  int agent_calls = 6;         // calls per agent session
  double think_s = 1.0;        // mean user think time between chat turns
  double tool_s = 0.2;         // mean tool time between agent calls
  Slo slo;                     // written on every request when set
  // Sessions and copy requests on /v1/completions instead of chat: turns
  // become "User: ...\nAssistant:" text, with no chat-template overhead (for
  // models with tiny contexts).
  bool completions = false;
  std::string chat_system = "You are a helpful assistant who tells short stories.";  // "" for none
};

Result<std::vector<WorkloadRequest>> generate_workload(const GeneratorOptions& opts, const TextSynthesizer& synth);

// The prompt length (tokens) of long-context and rare requests: fill x
// context, or context_tokens; an error when prompt + max_tokens cannot fit.
Result<int64_t> long_prompt_tokens(const GeneratorOptions& opts);

// The rare entity. Vocabulary-independent by construction: 8 distinct
// characters alternating digit and symbol (digits 0-9, symbols #$%&*+=@^~),
// so that no tokenizer merges two of them into one token (digit-grouping
// BPEs see single digits between symbols; SentencePiece splits digits; a
// byte vocabulary sees bytes), and none of them occurs anywhere else in the
// prompt: the filler has every digit and those symbols removed. A copy
// mechanism (an induction head) that looks up the last earlier occurrence of
// the current token therefore finds only the entity, and the correct
// continuation of the cue (the first two characters) is the other six.
inline constexpr const char* kRareDigits = "0123456789";
inline constexpr const char* kRareSymbols = "#$%&*+=@^~";
std::string rare_entity(uint64_t seed);
// Text with every digit and rare symbol removed (and the doubled spaces that leaves).
std::string strip_rare_characters(const std::string& text);

}  // namespace ladder::harness
