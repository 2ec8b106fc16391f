// ApiServer: the OpenAI-compatible front of one engine. Owns the model, the
// engine, the tokenizer and chat template, tenants, admission and metrics,
// and the HTTP server; `ladder serve` is a thin wrapper around it.
//
// Life cycle: start() listens at once (/health says "loading", generation
// gets 503), load() brings the model up ("ready"), drain() (SIGTERM) stops
// accepting, lets admitted and queued requests finish within the grace
// period, cancels the rest, and stops; wait() returns then.
//
// Ladder's additions to the OpenAI API:
//   request header  x-ladder-deadline-ms: N   the first token is due N ms
//                   after arrival (default: the tenant's slo.ttft_ms); a
//                   request that cannot make it is rejected at once with 429
//                   deadline_infeasible, or with deadline_exceeded if the
//                   deadline passes while it waits.
//   request field   ignore_eos (vLLM's): generate max_tokens regardless.
//   request fields  top_k, min_p, repetition_penalty (as vLLM takes them).
//   response field  "ladder": {tenant, queued_ms, ttft_ms, decode_ms, e2e_ms,
//                   prompt_tokens, cached_tokens, preemptions}, also in the
//                   final SSE chunk.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/tensor_type.h"
#include "server/http_server.h"

namespace ladder::server {

struct ServeConfig {
  std::string model_path;
  std::string served_model_name;    // default: the file name without .gguf
  std::string tenants_file;         // empty: one anonymous tenant
  HttpServerConfig http;
  int64_t max_input_tokens = 0;     // 0: context - 1
  int64_t max_output_tokens = 0;    // 0: context
  int32_t max_queue = 256;          // requests waiting for admission
  int32_t max_running = 64;         // admission capacity = engine's running sequences
  int64_t max_batch_tokens = 512;   // engine step token budget
  int32_t kv_blocks = 0;            // 0: as many as the engine's KV memory allows
  TensorType kv_dtype = TensorType::kF16;
  int threads = 0;                  // op threads; 0 = all cores
  double drain_grace_s = 30;
  double initial_service_ms = 1000; // admission's run-time estimate before measurements
};

class ApiServer {
 public:
  explicit ApiServer(ServeConfig config);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Reads the tenants file and listens. Errors: a bad tenants file, a port
  // that cannot be bound.
  Status start();
  uint16_t port() const;
  // Loads the model, tokenizer, chat template and engine; then ready.
  Status load();
  // Begins the drain (idempotent); SIGTERM and SIGINT call it.
  void drain();
  // Blocks until the drain has finished and everything stopped.
  void wait();

  struct State;  // defined in api_server.cc

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ladder::server
