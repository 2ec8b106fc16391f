// ApiServer: `ladder serve`: the Frontend (routes, tenants, planning, SLO
// judgement, metrics, drain) in front of a LocalBackend (the model and its
// engine in this process). See frontend.h and local_backend.h.
//
// Life cycle: start() listens at once (/health says "loading", generation
// gets 503), load() brings the model up ("ready"), drain() (SIGTERM) stops
// accepting new requests, reports "draining" (503 on /health), waits until
// every accepted response has been delivered -- or, after the grace period,
// cancels what still runs and waits for those error endings to go out -- and
// stops; wait() returns then.
//
// Ladder's additions to the OpenAI API:
//   request header  x-ladder-deadline-ms: N   the first token is due N ms
//                   after arrival (default: the tenant's slo.ttft_ms); a
//                   request that cannot make it is rejected at once with 429
//                   deadline_infeasible, or with deadline_exceeded if the
//                   deadline passes while it waits.
//   request field   ignore_eos (vLLM's): generate max_tokens regardless.
//   request fields  top_k, min_p, repetition_penalty (as vLLM takes them).
//   request field   return_token_ids (vLLM's): choices carry token_ids.
//   request field   chat_template_kwargs (vLLM's), add_generation_prompt.
//   response field  "ladder": {tenant, queued_ms, ttft_ms, decode_ms, e2e_ms,
//                   prompt_tokens, cached_tokens, completion_tokens,
//                   preemptions}, also in the final SSE chunk.
//   chat responses  reasoning_content: the text between the template's
//                   thinking markers (e.g. <think>...</think>).
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "server/local_backend.h"

namespace ladder::server {

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
  // The metrics listener's port (when configured).
  uint16_t metrics_port() const;
  // The decode role's KV listener port (after load()); 0 for other roles.
  uint16_t kv_port() const;
  // Loads the model (through ModelBundle, which checks the tokenizer against
  // the model), the chat template and the engine; then ready.
  Status load();
  // Begins the drain (idempotent); SIGTERM and SIGINT call it.
  void drain();
  // Blocks until the drain has finished and everything stopped.
  void wait();

 private:
  ServeConfig config_;
  Frontend frontend_;
  LocalBackend backend_;
};

}  // namespace ladder::server
