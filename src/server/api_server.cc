#include "server/api_server.h"

#include <spdlog/spdlog.h>

namespace ladder::server {

namespace {

ServeConfig with_model_name(ServeConfig config) {
  config.served_model_name = served_name_or_stem(config.served_model_name, config.model_path);
  return config;
}

}  // namespace

ApiServer::ApiServer(ServeConfig config)
    : config_(with_model_name(std::move(config))),
      frontend_(frontend_config_of(config_)),
      backend_(config_, frontend_.tenants()) {}

// The listeners stop first: nothing reaches the backend while it goes.
ApiServer::~ApiServer() { frontend_.stop_now(); }

Status ApiServer::start() {
  LADDER_RETURN_IF_ERROR(frontend_.load_tenants());
  LADDER_RETURN_IF_ERROR(frontend_.start(&backend_));
  spdlog::info("accepting connections on http://{}:{} while the model loads", config_.http.host, frontend_.port());
  return Status::ok();
}

Status ApiServer::load() {
  LADDER_RETURN_IF_ERROR(backend_.load());
  frontend_.set_ready();
  return Status::ok();
}

uint16_t ApiServer::port() const { return frontend_.port(); }
uint16_t ApiServer::metrics_port() const { return frontend_.metrics_port(); }
uint16_t ApiServer::kv_port() const { return backend_.kv_port(); }
void ApiServer::drain() { frontend_.drain(); }
void ApiServer::wait() { frontend_.wait(); }

}  // namespace ladder::server
