// A reference: what one configuration (normally rung 1) produced for every
// request of a workload at temperature 0, saved by `ladder replay
// --save-reference REF` and checked against by `--reference REF --verify
// exact|approx` (quality.h).
//
// File (JSON): {"kind": "ladder.reference", "schema_version": 1, "created",
//   "fingerprint_sha256", "server_fingerprint_sha256", "configuration": {..},
//   "workload": {"source", "digest_sha256"}, "top_k": 5,
//   "requests": [{"key", "index", "source_line", "tenant", "slice",
//                 "finish_reason", "token_ids": [..] | null, "text",
//                 "logprobs": [{"token", "logprob", "top": [[text, lp], ..]}],
//                 "prompt_sha256"}, ..],
//   "missing": [{"key", "index", "reason"}, ..]}   (requests that failed)
//
// Requests are matched by key, not by position or time: the sha256 of what
// identifies the request in the workload (tenant, session, turn, its own
// prompt, messages or synthesized length, max_tokens, seed, slice,
// expectation) -- never its arrival time, so a reference made at one rate
// checks a replay at any other. The k-th identical request gets "#k".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "harness/request_result.h"
#include "harness/workload.h"

namespace ladder::harness {

inline constexpr int kReferenceSchemaVersion = 1;

// One key per scheduled request, in order.
std::vector<std::string> request_keys(const std::vector<WorkloadRequest>& scheduled);

struct ReferenceEntry {
  std::string key;
  size_t index = 0;
  int source_line = 0;
  std::string tenant;
  std::string slice;
  std::string finish_reason;
  bool has_token_ids = false;
  std::vector<int64_t> token_ids;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::string prompt_sha256;
};

struct Reference {
  std::string created;
  std::string fingerprint_sha256;         // the producing run's configuration fingerprint
  std::string server_fingerprint_sha256;  // the server's part of it
  nlohmann::json configuration;           // the producing run's record "configuration"
  std::string workload_source;
  std::string workload_digest;
  int top_k = kReferenceTopK;
  std::map<std::string, ReferenceEntry> entries;  // by key
  std::vector<nlohmann::json> missing;            // requests that failed when it was made

  // Entries from a run's results: every served request (HTTP 200 with a
  // finish_reason); the others go to `missing` with their reason.
  void add_results(const std::vector<RequestResult>& results);
  size_t with_token_ids() const;
};

nlohmann::json reference_to_json(const Reference& ref);
Result<Reference> reference_from_json(const nlohmann::json& j, const std::string& source);
Status save_reference(const std::string& path, const Reference& ref);
Result<Reference> load_reference(const std::string& path);

}  // namespace ladder::harness
