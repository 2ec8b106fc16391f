// ApiServer: the OpenAI-compatible front of one engine. `ladder serve` is a
// thin wrapper around it. The pieces it wires (each in its own file):
//   HttpServer        HTTP/1.1 over Asio; delivery reported per response
//   RequestBuilder    JSON -> an immutable GenerationPlan (template, tokens)
//   Engine            admission, bounds, scheduling, the model (src/engine)
//   Exchange          one request from plan to last byte; cancels on hang-up
//   ResponseWriter    engine events -> SSE chunks or one JSON body
//   ServerMetrics     /metrics (Prometheus), per tenant only for admins
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
//                   prompt_tokens, cached_tokens, preemptions}, also in the
//                   final SSE chunk.
//   chat responses  reasoning_content: the text between the template's
//                   thinking markers (e.g. <think>...</think>).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "engine/draft.h"
#include "engine/engine.h"
#include "server/http_server.h"

namespace ladder::server {

// Rung 2: a worker that only computes prompts and ships their KV (prefill),
// one that takes shipped KV and generates (decode), or both in one server.
enum class ServeRole { kBoth, kPrefill, kDecode };
const char* serve_role_name(ServeRole role);

struct ServeConfig {
  std::string model_path;
  std::string served_model_name;  // default: the file name without .gguf
  std::string tenants_file;       // empty: one anonymous tenant (or --api-key's)
  std::string api_key;            // one tenant with this key (no tenants file)
  std::string admin_key;          // may read per-tenant /metrics
  // A chat template that does not render `tools` gets a tools preamble in
  // the system message (grammar::tool_preamble); false: tools reach the
  // model only through forced calls' grammar (tool_choice required/function).
  bool tool_preamble = true;
  HttpServerConfig http;
  // A second listener that serves only /metrics, with per-tenant figures
  // (for a private network). Unset: none.
  std::optional<uint16_t> metrics_port;
  std::string metrics_host = "127.0.0.1";
  // The engine: KV cache, scheduler, request bounds, admission. The server
  // fills in the model digests, tokenizer and tenants.
  engine::EngineConfig engine;
  // Speculative decoding (--spec): the draft is built at load(), beside the
  // model; engine.speculative carries k and whether it adapts.
  engine::DraftSpec draft;
  int prepare_threads = 2;            // templating and tokenizing, off the io threads
  size_t max_pending_prepare = 1024;  // requests waiting to be tokenized
  double drain_grace_s = 30;
  // Rung 2 (see ladder route): prefill workers answer POST /internal/prefill
  // and send KV to decode workers, which listen for it on kv_host:kv_port and
  // keep it up to kv_inbox_ttl for the request naming it.
  ServeRole role = ServeRole::kBoth;
  std::string kv_host = "0.0.0.0";
  uint16_t kv_port = 0;  // 0 = any free one (logged, and in /v1/models)
  size_t kv_inbox_bytes = size_t{1} << 30;
  std::chrono::milliseconds kv_inbox_ttl{30000};
  int kv_send_threads = 4;
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

  struct State;  // defined in api_server.cc

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ladder::server
