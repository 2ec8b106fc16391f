// Readers for public serving traces (../shared/traces/README.md), which carry
// arrival times and token lengths but no text:
//   mooncake  JSONL: timestamp (ms from start), input_length, output_length, hash_ids
//   azure     CSV:   TIMESTAMP (wall clock), ContextTokens, GeneratedTokens
//   burstgpt  CSV:   Timestamp (s), Model, Request tokens, Response tokens, Total tokens, Log Type
// Rows are turned into native requests with prompts synthesized from real
// text (text_synth.h), after the length scaling and caps the user asked for;
// every change is written into Workload::notes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "harness/text_synth.h"
#include "harness/workload.h"

namespace ladder::harness {

struct TraceRow {
  double t_s = 0.0;  // seconds from the first row
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::vector<int64_t> hash_ids;  // mooncake only
  std::string model;              // burstgpt only
  int line = 0;                   // 1-based line in the file
};

struct ParsedTrace {
  std::vector<TraceRow> rows;
  std::vector<LineError> skipped;
};

// Each parser reports a malformed line with its number and skips it, or, when
// strict, fails naming the first one.
Result<ParsedTrace> parse_mooncake(const std::string& text, bool strict);
Result<ParsedTrace> parse_azure_csv(const std::string& text, bool strict);
Result<ParsedTrace> parse_burstgpt_csv(const std::string& text, bool strict);

struct TraceConversion {
  double length_scale = 1.0;       // multiplies input and output lengths (and the hash block size)
  int64_t max_input_tokens = 0;    // 0: no cap
  int64_t max_output_tokens = 0;   // 0: no cap
  int64_t block_tokens = 512;      // tokens per hash_ids block before scaling (Mooncake: 512)
  std::string slice;               // default: the format name
};

// Rows -> requests (prompt text synthesized), appending notes on what changed.
std::vector<WorkloadRequest> trace_to_requests(const ParsedTrace& trace, const std::string& format,
                                               const TraceConversion& conv, const TextSynthesizer& synth,
                                               std::vector<std::string>& notes);

// Gives every request still described only by input_tokens (native files may
// use them too) its synthesized prompt.
void synthesize_prompts(std::vector<WorkloadRequest>& requests, int64_t block_tokens, const TextSynthesizer& synth);

// The format a workload's text is in, from its first bytes: azure,
// burstgpt, mooncake, or ladder (native JSONL) when it is none of those.
std::string detect_workload_format(std::string_view head);

// Loads any supported format. format "" or "auto" picks by content
// (detect_workload_format).
struct LoadOptions {
  std::string format = "auto";
  bool strict = false;
  TraceConversion conv;
};
Result<Workload> load_workload(const std::string& path, const LoadOptions& opts, const TextSynthesizer& synth);

}  // namespace ladder::harness
