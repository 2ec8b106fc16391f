// `ladder route`: rung 2's public endpoint in front of `ladder serve --role
// prefill` and `--role decode` workers (src/route/router.h). Prints
// `listening on http://HOST:PORT` on stdout once every worker answered ready,
// so scripts and tests using --port 0 can find it. SIGTERM drains and exits 0.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "route/router.h"

namespace ladder::cli {
namespace {

struct RouteOptions {
  std::string model;
  route::RouterConfig config;
  size_t max_body_bytes = size_t{1} << 20;
  int io_threads = 2;
  double startup_timeout_s = 300;
  int metrics_port = -1;
  std::string prefill_policy = "measured";
};

int run_route(RouteOptions& o) {
  o.config.model_path = resolve_model_path(o.model);
  if (o.config.model_path.empty()) return 2;
  o.config.http.max_body_bytes = o.max_body_bytes;
  o.config.http.io_threads = o.io_threads;
  if (o.metrics_port >= 0) o.config.metrics_port = static_cast<uint16_t>(o.metrics_port);
  o.config.prefill_mode = o.prefill_policy == "always"  ? route::PrefillMode::kAlways
                          : o.prefill_policy == "never" ? route::PrefillMode::kNever
                                                        : route::PrefillMode::kMeasured;
  route::Router router(o.config);
  if (Status st = router.start(); !st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  if (Status st = router.wait_for_workers(o.startup_timeout_s); !st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    router.drain();
    router.wait();
    return 1;
  }
  std::printf("listening on http://%s:%u\n", o.config.http.host.c_str(),
              static_cast<unsigned>(router.port()));
  std::fflush(stdout);
  router.wait();
  return 0;
}

CommandRegistrar register_route{
    "route", 11, [](CLI::App& app) -> CommandRun {
      auto* cmd = app.add_subcommand("route",
                                     "Serve the OpenAI API in front of prefill and decode workers (rung 2: "
                                     "disaggregated prefill/decode)");
      auto o = std::make_shared<RouteOptions>();
      auto& c = o->config;
      cmd->add_option(
          "-m,--model", o->model,
          "The workers' GGUF model, for its tokenizer and chat template (default: as ladder serve)");
      cmd->add_option("--chat-template", c.chat_template,
                      "The Jinja chat template the workers were given with their --chat-template (a file, or the "
                      "template text); the router checks that they render with the one it renders with");
      cmd->add_option("--prefill", c.prefill_urls,
                      "A prefill worker's URL (ladder serve --role prefill); repeatable");
      cmd->add_option("--decode", c.decode_urls,
                      "A decode worker's URL (ladder serve --role decode); repeatable")
          ->required();
      cmd->add_option("--served-model-name", c.served_model_name,
                      "Model id clients use (default: the file name)");
      cmd->add_option("--host", c.http.host, "Address to listen on")->capture_default_str();
      cmd->add_option("--port", c.http.port, "Port; 0 picks a free one")->capture_default_str();
      auto* tenants =
          cmd->add_option("--tenants", c.tenants_file, "Tenants TOML, the same file the workers read");
      cmd->add_option("--api-key", c.api_key,
                      "One tenant whose requests must send this key (instead of --tenants)")
          ->excludes(tenants);
      cmd->add_option("--admin-key", c.admin_key, "A key that may read per-tenant figures on /metrics");
      cmd->add_option("--metrics-port", o->metrics_port,
                      "Also serve /metrics, with per-tenant figures and no key, on this port (0 = any free one); "
                      "the API port's /metrics follows the API key")
          ->check(CLI::Range(0, 65535));
      cmd->add_option("--metrics-host", c.metrics_host, "Address of the metrics listener")->capture_default_str();
      cmd->add_option("--prefill-policy", o->prefill_policy,
                      "Where prompts are computed: measured (a prefill worker when its measured cost beats the "
                      "decode worker's, counting the decode worker's running requests), always (a prefill worker "
                      "whenever there are blocks to send), never (the decode worker)")
          ->check(CLI::IsMember({"measured", "always", "never"}))
          ->capture_default_str();
      cmd->add_option("--tpot-ms", c.tpot_ms,
                      "TPOT objective for --prefill-policy measured: a prompt whose step on the decode "
                      "worker would keep the sequences decoding there (or likely to arrive during it) "
                      "longer than this between two tokens goes to a prefill worker; 0 = the tightest "
                      "tenant slo.tpot_ms in --tenants, none if no tenant sets one")
          ->check(CLI::Range(0.0, 1e9))
          ->capture_default_str();
      cmd->add_option("--max-queue", c.max_queue, "Requests waiting for admission")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
      cmd->add_option("--initial-service-ms", c.initial_service_ms,
                      "Admission's estimate of a request's run time before it has measured one")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--max-body-bytes", o->max_body_bytes, "Request body bound")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--io-threads", o->io_threads, "HTTP io threads")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--probe-period-s", c.probe_period_s, "How often every worker's /health is asked")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--worker-timeout-s", c.worker_timeout_s, "Bound on each network wait for a worker")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--startup-timeout-s", o->startup_timeout_s,
                      "How long to wait for every worker to be ready")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--drain-grace-s", c.drain_grace_s, "On SIGTERM, how long running requests may take")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
      return [o] { return run_route(*o); };
    }};

}  // namespace
}  // namespace ladder::cli
