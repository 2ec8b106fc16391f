// Exchange: one generation request from its plan to its last byte. Two
// events end it, in either order: the engine's final event (on the stream
// pump's thread) and the end of the response's delivery (on an io thread).
// Only when both have happened is the request recorded, so a response the
// client did not receive in full counts as an error (499), never as a
// success; and a client that goes away first cancels the engine request,
// which frees its KV blocks.
//
// A request for n choices is n engine requests: the first is submitted at
// once, the others when it has sampled its first token, so that they find
// the prompt's blocks in the prefix cache instead of computing them again.
// If one choice fails, the others are cancelled and the response is an
// error.
//
// The server's registry owns each exchange until it is settled; the engine
// stream and the connection refer to it weakly, so no cycle through the
// connection keeps one alive.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/engine.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_builder.h"
#include "server/response_writer.h"
#include "server/stream_pump.h"
#include "server/tenants.h"

namespace ladder::server {

class Exchange;

// What every exchange of one server uses; outlives them all.
struct ExchangeServices {
  // The engine new exchanges submit to; a shadow rollback switches it, and
  // each exchange keeps the one it started on (engines are never destroyed
  // while the server runs).
  std::atomic<engine::Engine*> engine{nullptr};
  StreamPump* pump = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const TenantRegistry* tenants = nullptr;
  // Called once per exchange when it is settled, with its record (the
  // frontend judges its SLO and records it). Whoever keeps the exchange alive
  // (the backend's registry) lets it go here.
  std::function<void(const Exchange*, RequestRecord)> on_settled;
  // A plan with `shadow` set that finished without error: its tokens (its
  // one choice's) and how it ended, for shadow verification.
  std::function<void(const GenerationPlan&, std::vector<int32_t> tokens, engine::FinishReason finish)> on_shadow;
};

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(GenerationPlan plan, std::shared_ptr<ResponseChannel> channel, const ExchangeServices& services);

  // Watches the delivery, submits to the engine and streams its events.
  // A refusal by the engine is answered at once.
  void start();
  // The server stops before this exchange settled (its response could not be
  // delivered within the drain's bounds): recorded as not delivered.
  void abandon();

 private:
  // One engine request for choice `index`; nullopt or the refusal.
  std::optional<ApiError> submit(int32_t index);
  // The choices after the first; false when one could not be submitted
  // (the exchange has failed then).
  bool submit_rest();
  void on_event(int32_t index, const engine::StreamEvent& event);
  void on_delivery(Delivery how);
  // The first failure ends the response with its error and cancels the
  // other choices.
  void fail(const ApiError& error);
  // Every submitted choice has ended: the response ends and the request's
  // engine part is recorded.
  void finish_choices();
  void finish_engine(RequestRecord record);
  void settle_if_done();

  const GenerationPlan plan_;
  std::shared_ptr<ResponseChannel> channel_;
  const ExchangeServices& services_;
  engine::Engine* const engine_;  // services_.engine when the exchange was made
  ResponseWriter writer_;  // stream pump thread (or start() before the stream exists)

  // Pump thread only.
  std::vector<std::optional<engine::StreamEvent>> ends_;  // [n] each choice's final event
  std::optional<ApiError> failure_;
  bool rest_submitted_ = false;
  std::vector<int32_t> shadow_tokens_;  // choice 0's tokens, when plan_.shadow

  std::mutex mu_;
  std::vector<engine::RequestId> engine_ids_;  // of the choices submitted, unfinished ones included
  bool client_gone_ = false;
  std::optional<Delivery> delivery_;
  std::optional<RequestRecord> record_;  // set when the engine's part ended
  bool settled_ = false;
};

}  // namespace ladder::server
