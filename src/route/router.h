// Router: `ladder route`, rung 2's only public endpoint. The same Frontend
// as `ladder serve` (the OpenAI API, tenants and keys, planning, SLO
// judgement, /metrics, drain; server/frontend.h) in front of a RelayBackend
// that places each request on a prefill and a decode worker and relays it
// (route/relay_backend.h).
#pragma once

#include <memory>

#include "common/status.h"
#include "route/relay_backend.h"

namespace ladder::route {

class Router {
 public:
  explicit Router(RouterConfig config);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Reads the tenants and the model's tokenizer, listens (/health says
  // "loading"), and starts probing the workers.
  Status start();
  uint16_t port() const;
  // Waits until every worker answered ready and all agree on the model (then
  // the router is ready), or until timeout_s (the reason).
  Status wait_for_workers(double timeout_s);
  // SIGTERM: stop taking requests, let the running ones finish.
  void drain();
  void wait();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ladder::route
