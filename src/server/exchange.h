// Exchange: one generation request from its plan to its last byte. Two
// events end it, in either order: the engine's final event (on the stream
// pump's thread) and the end of the response's delivery (on an io thread).
// Only when both have happened is the request recorded, so a response the
// client did not receive in full counts as an error (499), never as a
// success; and a client that goes away first cancels the engine request,
// which frees its KV blocks.
//
// The server's registry owns each exchange until it is settled; the engine
// stream and the connection refer to it weakly, so no cycle through the
// connection keeps one alive.
#pragma once

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
  engine::Engine* engine = nullptr;
  StreamPump* pump = nullptr;
  ServerMetrics* metrics = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const TenantRegistry* tenants = nullptr;
  // Called once per exchange when it is settled (recorded), with its record.
  // Whoever keeps the exchange alive (the server's registry) lets it go here.
  std::function<void(const Exchange*, const GenerationPlan&, const RequestRecord&)> on_settled;
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
  void on_event(const engine::StreamEvent& event);
  void on_delivery(Delivery how);
  void finish_engine(RequestRecord record);
  void settle_if_done();

  const GenerationPlan plan_;
  std::shared_ptr<ResponseChannel> channel_;
  const ExchangeServices& services_;
  ResponseWriter writer_;  // stream pump thread (or start() before the stream exists)

  std::mutex mu_;
  std::optional<engine::RequestId> engine_id_;
  bool client_gone_ = false;
  std::optional<Delivery> delivery_;
  std::optional<RequestRecord> record_;  // set when the engine's part ended
  bool settled_ = false;
};

}  // namespace ladder::server
