#include "route/router.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "route/relay_backend.h"
#include "server/frontend.h"

namespace ladder::route {

using Clock = std::chrono::steady_clock;

namespace {

RouterConfig with_model_name(RouterConfig c) {
  c.served_model_name = server::served_name_or_stem(c.served_model_name, c.model_path);
  return c;
}

}  // namespace

struct Router::State {
  explicit State(RouterConfig c)
      : config(with_model_name(std::move(c))),
        frontend(server::frontend_config_of(config)),
        backend(config, frontend.tenants()) {}
  ~State() { frontend.stop_now(); }  // nothing reaches the backend while it goes
  RouterConfig config;
  server::Frontend frontend;
  RelayBackend backend;
};

Router::Router(RouterConfig config) : state_(std::make_unique<State>(std::move(config))) {}

Router::~Router() = default;

Status Router::start() {
  State& s = *state_;
  LADDER_RETURN_IF_ERROR(s.frontend.load_tenants());
  LADDER_RETURN_IF_ERROR(s.backend.open());
  LADDER_RETURN_IF_ERROR(s.frontend.start(&s.backend));
  spdlog::info("router accepting connections on http://{}:{}; waiting for {} prefill and {} decode workers",
               s.config.http.host, s.frontend.port(), s.config.prefill_urls.size(), s.config.decode_urls.size());
  return Status::ok();
}

uint16_t Router::port() const { return state_->frontend.port(); }

Status Router::wait_for_workers(double timeout_s) {
  State& s = *state_;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Status st = s.backend.workers_ready();
  while (!st.is_ok() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = s.backend.workers_ready();
  }
  if (!st.is_ok()) return st;
  LADDER_RETURN_IF_ERROR(s.backend.start_serving());
  s.frontend.set_ready();
  return Status::ok();
}

void Router::drain() { state_->frontend.drain(); }

void Router::wait() {
  state_->frontend.wait();
  spdlog::info("router stopped");
}

}  // namespace ladder::route
