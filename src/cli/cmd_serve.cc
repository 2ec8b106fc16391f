// `ladder serve`: the OpenAI-compatible server (src/server/api_server.h).
// Prints `listening on http://HOST:PORT` on stdout once the model is loaded
// and requests are served, so scripts and tests using --port 0 can find it
// (the socket is bound earlier: /health says "loading" meanwhile). SIGTERM
// drains and exits 0.
//
// --ledger L serves the configuration a climb promoted (src/ladder/serving_choice.h):
// its serve arguments are applied over this command's when the model, tokenizer,
// revision and settings match the climb's rung 1; otherwise it says which field
// differed and serves this command as given (rung 1).
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <thread>

#include "cli/command.h"
#include "cli/kv_evict_options.h"
#include "cli/kv_host_options.h"
#include "cli/spec_options.h"
#include "common/build_info.h"
#include "gguf/gguf_file.h"
#include "kv/kv_format.h"
#include "ladder/ledger.h"
#include "ladder/policy.h"
#include "ladder/serving_choice.h"
#include "server/api_server.h"
#include "tokenizer/tokenizer.h"

namespace ladder::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string ledger;
  double ledger_load = 1.0;  // --load: which offered load's decisions to take from the ledger
  const CLI::App* cmd = nullptr;  // the parsed command line, for --ledger
  server::ServeConfig config;
  size_t max_body_bytes = size_t{1} << 20;
  double read_timeout_s = 30;
  int64_t max_connections = 20000;
  int io_threads = 2;
  int metrics_port = -1;
  int64_t context = 0;
  int rung = 0;  // 0: what --kv-dtype amounts to
  bool kv_dtype_given = false;
  double kv_memory_mib = 256;
  KvEvictCliOptions kv_evict;
  double kv_host_mib = 0;
  SpecCliOptions spec;
  std::string role = "both";
  int kv_port = 0;
  double kv_inbox_mb = 1024;
  double kv_inbox_ttl_s = 30;
  int test_load_delay_ms = 0;  // testing only: hold "loading" this long
  std::string tool_preamble = "on";
};

// Each connection is a file descriptor; the usual soft limit (1024) would cap
// the server far below --max-connections, so take what the hard limit allows.
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) spdlog::warn("could not raise the open-files limit");
  }
}

Status apply_ledger(ServeOptions& o, const ServeOptions& original, bool* shadow_from_ledger);

// The engine's and the draft's settings from the options (o.config.engine,
// o.config.draft). A rung that contradicts its settings is a
// failed_precondition, an unreadable setting an invalid_argument.
Status resolve_engine_settings(ServeOptions& o) {
  o.config.engine.scheduler.context_length = o.context;
  o.config.engine.kv_memory_bytes = static_cast<size_t>(o.kv_memory_mib * (1 << 20));
  // --rung 3 names the approximate-KV configuration: a quantized KV format
  // (q4 unless --kv-dtype says q8). The server reports the rung its settings
  // amount to (/v1/models ladder.config.rung), which the record's fingerprint covers.
  const bool approximate = kv::kv_format_is_approximate(o.config.engine.kv_dtype);
  if (o.rung == 3 && !approximate) {
    if (o.kv_dtype_given) {
      return failed_precondition("--rung 3 stores KV approximately: --kv-dtype must be q8 or q4");
    }
    o.config.engine.kv_dtype = TensorType::kQ4_0;
  }
  if (o.rung == 1 && approximate) {
    return failed_precondition("--rung 1 stores KV exactly: --kv-dtype must be f16 or f32");
  }
  LADDER_ASSIGN_OR_RETURN(o.config.engine.kv_eviction, kv_eviction_policy(o.kv_evict, o.config.engine.block_size));
  LADDER_ASSIGN_OR_RETURN(o.config.engine.kv_host_bytes, kv_host_bytes(o.kv_host_mib, o.config.engine.prefix_caching));
  if (o.rung == 1 && o.config.engine.kv_eviction.enabled()) {
    return failed_precondition("--rung 1 keeps every token's KV: --kv-evict must be none");
  }
  LADDER_ASSIGN_OR_RETURN(o.config.draft, engine::parse_draft_spec(o.spec.spec));
  o.config.engine.speculative.k = o.spec.k;
  o.config.engine.speculative.adaptive = !o.spec.fixed;
  return Status::ok();
}

// Rung 1 as the shadow reference runs it: `ec` with exact KV (f16 for a
// quantized format), no eviction, no host tier, no speculation.
engine::EngineConfig rung1_reference(engine::EngineConfig ec) {
  if (kv::kv_format_is_approximate(ec.kv_dtype)) ec.kv_dtype = TensorType::kF16;
  ec.kv_eviction = kv::EvictionPolicy{};
  ec.kv_host_bytes = 0;
  ec.speculative = engine::SpeculativeConfig{};
  return ec;
}

int exit_code_of(const Status& st) { return st.code() == StatusCode::kFailedPrecondition ? 1 : 2; }

int run_serve(ServeOptions& o) {
  raise_fd_limit();
  o.config.model_path = resolve_model_path(o.model);
  if (o.config.model_path.empty()) return 2;
  // Rung 1 as this command gives it: the shadow's reference, and the last
  // configuration a rollback falls back to.
  const ServeOptions original = o;
  ServeOptions as_given = o;
  if (Status st = resolve_engine_settings(as_given); !st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return exit_code_of(st);
  }
  bool shadow_from_ledger = false;
  if (!o.ledger.empty()) {
    if (Status st = apply_ledger(o, original, &shadow_from_ledger); !st.is_ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    }
  }
  o.config.http.max_body_bytes = o.max_body_bytes;
  o.config.http.read_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.read_timeout_s * 1000));
  o.config.http.max_connections = o.max_connections;
  o.config.http.io_threads = o.io_threads;
  if (o.metrics_port >= 0) o.config.metrics_port = static_cast<uint16_t>(o.metrics_port);
  if (Status st = resolve_engine_settings(o); !st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return exit_code_of(st);
  }
  if (o.config.shadow.rate > 0) {
    o.config.shadow.reference = rung1_reference(as_given.config.engine);
    if (!shadow_from_ledger) {
      // No promoted configuration of a climb: judged by the default policy's
      // margins; a configuration above rung 1 falls back to rung 1.
      o.config.shadow.rules = climb::ShadowRules::from_policy(climb::ClimbPolicy{});
      const engine::EngineConfig& ec = o.config.engine;
      const bool above_rung1 = kv::kv_format_is_approximate(ec.kv_dtype) || ec.kv_eviction.enabled() ||
                               ec.kv_host_bytes > 0 || o.config.draft.kind != engine::DraftSpec::Kind::kNone;
      if (above_rung1) {
        o.config.shadow.rung = o.config.draft.kind != engine::DraftSpec::Kind::kNone ? 4 : 3;
        o.config.shadow.name = "as given";
        o.config.shadow.fallbacks = {
            {1, "rung 1", o.config.shadow.reference, engine::DraftSpec{}, o.config.shadow.rules}};
      } else {
        o.config.shadow.rung = 1;
        o.config.shadow.name = "as given";
      }
    }
  }
  o.config.role = o.role == "prefill"  ? server::ServeRole::kPrefill
                  : o.role == "decode" ? server::ServeRole::kDecode
                                       : server::ServeRole::kBoth;
  if (o.config.role != server::ServeRole::kBoth && o.config.shadow.rate > 0) {
    std::fprintf(stderr, "error: --shadow-rate works with --role both only (a rung-2 worker serves part of a "
                 "request)\n");
    return 2;
  }
  if (o.config.role != server::ServeRole::kBoth && kv::kv_format_is_approximate(o.config.engine.kv_dtype)) {
    // A q4 block's newest tokens live in a staging slot until the block
    // seals, and the transfer format carries sealed blocks only.
    std::fprintf(stderr, "error: --role %s moves KV blocks in f16 or f32 only; the approximate formats (q8, q4, "
                 "--rung 3) cannot be transferred yet\n", o.role.c_str());
    return 2;
  }
  if (o.config.role != server::ServeRole::kBoth && o.config.engine.kv_eviction.enabled()) {
    // A prefill worker hands over every block of the prompt, and a decode
    // worker takes them by their prefix keys, which a gapped table breaks.
    std::fprintf(stderr, "error: --role %s moves whole prompts' KV; --kv-evict works with --role both only\n",
                 o.role.c_str());
    return 2;
  }
  o.config.tool_preamble = o.tool_preamble == "on";
  o.config.kv_port = static_cast<uint16_t>(o.kv_port);
  o.config.kv_inbox_bytes = static_cast<size_t>(o.kv_inbox_mb * (1 << 20));
  o.config.kv_inbox_ttl = std::chrono::milliseconds(static_cast<int64_t>(o.kv_inbox_ttl_s * 1000));
  server::ApiServer srv(o.config);
  if (Status st = srv.start(); !st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  if (o.test_load_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.test_load_delay_ms));
  if (Status st = srv.load(); !st.is_ok()) {
    std::fprintf(stderr, "error: cannot load the model: %s\n", st.message().c_str());
    srv.drain();
    srv.wait();
    return 1;
  }
  std::printf("listening on http://%s:%u\n", o.config.http.host.c_str(), static_cast<unsigned>(srv.port()));
  if (o.config.role == server::ServeRole::kDecode) {
    std::printf("kv on %s:%u\n", o.config.kv_host.c_str(), static_cast<unsigned>(srv.kv_port()));
  }
  if (o.config.metrics_port) {
    std::printf("metrics on http://%s:%u/metrics\n", o.config.metrics_host.c_str(),
                static_cast<unsigned>(srv.metrics_port()));
  }
  std::fflush(stdout);
  spdlog::info("ready");
  srv.wait();
  return 0;
}

// Every serve option but --ledger: the command line's, and the one a
// ledger's serve arguments are parsed with.
void add_serve_options(CLI::App* cmd, ServeOptions& opts) {
  ServeOptions* o = &opts;
  auto& c = o->config;
  auto& e = o->config.engine;
  cmd->add_option("-m,--model", o->model, "GGUF model file (default: $LADDER_MODEL or the shared stories260K)");
  cmd->add_option("--served-model-name", c.served_model_name, "Model id clients use (default: the file name)");
  cmd->add_option("--host", c.http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", c.http.port, "Port; 0 picks a free one")->capture_default_str();
  auto* tenants =
      cmd->add_option("--tenants", c.tenants_file, "Tenants TOML (API keys, reservations, SLOs; see README)");
  cmd->add_option("--api-key", c.api_key, "One tenant whose requests must send this key (instead of --tenants)")
      ->excludes(tenants);
  cmd->add_option("--admin-key", c.admin_key, "A key that may read per-tenant figures on /metrics");
  cmd->add_option("--metrics-port", o->metrics_port,
                  "Also serve /metrics, with per-tenant figures, on this port (0 = any free one)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--metrics-host", c.metrics_host, "Address of the metrics listener")->capture_default_str();
  cmd->add_option("-c,--ctx-size,--max-model-len", o->context, "Context length in tokens; 0 = the model's")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-input-tokens", e.max_input_tokens, "Prompt token bound; 0 = context - 1")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-output-tokens", e.max_output_tokens, "max_tokens bound; 0 = context")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-queue", e.max_queue, "Requests waiting for admission")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-running", e.scheduler.max_running, "Sequences running at once (admission capacity)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-batch-tokens", e.scheduler.max_batch_tokens, "Token budget of one engine step")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-chunk-tokens", e.scheduler.max_chunk_tokens,
                  "Prefill tokens of one sequence in one step; 0 = the step budget")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("!--no-prefix-cache", e.prefix_caching, "Turn the prefix cache off");
  cmd->add_option("--max-body-bytes", o->max_body_bytes, "Request body bound")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--read-timeout-s", o->read_timeout_s, "A request must arrive within this; also the idle limit")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-connections", o->max_connections, "Open connections bound")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--io-threads", o->io_threads, "HTTP io threads")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("-t,--threads", e.n_threads, "Op threads for the model; 0 = all cores")->capture_default_str();
  cmd->add_option("--kv-blocks", e.n_kv_blocks, "KV cache blocks; 0 = sized from memory")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  add_kv_dtype_option(cmd, &e.kv_dtype);
  add_kv_evict_options(cmd, &o->kv_evict);
  add_kv_host_option(cmd, &o->kv_host_mib);
  cmd->add_option("--kv-memory-mib", o->kv_memory_mib,
                  "KV cache memory when --kv-blocks is 0, counted in the format's bytes "
                  "(q4 fits the most blocks)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--rung", o->rung,
                  "Named configuration: 1 (exact KV) or 3 (approximate KV: --kv-dtype q4 unless q8 is given); "
                  "by default what --kv-dtype amounts to")
      ->check(CLI::IsMember({1, 3}));
  add_spec_options(cmd, &o->spec);
  cmd->add_option("--tool-preamble", o->tool_preamble,
                  "When the chat template does not render a request's tools: 'on' describes them in the system "
                  "message (README \"Tool calls\"); 'off' leaves them out (a forced call still follows their "
                  "schema)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--chat-template", c.chat_template,
                  "A Jinja chat template to use instead of the model's own (a file, or the template text): for a "
                  "model without one (the default then is ChatML) or with a broken one");
  cmd->add_option("--reasoning-parser", c.reasoning_parser,
                  "Where a chat model's thinking goes: 'auto' puts the text between the thinking markers the chat "
                  "template names (e.g. <think> ... </think>) into reasoning_content; 'deepseek_r1' and 'qwen3' use "
                  "<think> ... </think> whatever the template says; 'none' leaves all output in content")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none", "deepseek_r1", "qwen3"}));
  cmd->add_option("--shadow-rate", c.shadow.rate,
                  "Re-run this share of finished requests (0 to 1) on a rung-1 reference in this process and roll "
                  "back to the configuration below when a slice stops verifying (docs/SHADOW.md); 0 = off")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--shadow-budget", c.shadow.budget,
                  "The shadow reference's CPU at most, as a share of --threads (it runs one thread, resting "
                  "between steps)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--shadow-queue", c.shadow.max_pending,
                  "Finished requests waiting for the shadow reference; a sample beyond it is dropped (counted)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--drain-grace-s", c.drain_grace_s, "On SIGTERM, how long running requests may take")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--test-step-delay-ms", e.step_delay_ms,
                  "Testing only: every forward pass takes at least this long (it sleeps out the rest), so "
                  "that a test can make the server slower than any machine it runs on; 0 (the default) in "
                  "production")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->group("Testing");
  cmd->add_option("--test-row-delay-ms", e.row_delay_ms,
                  "Testing only: a forward pass of R batch tokens takes at least R x this; with "
                  "--test-step-delay-ms, a simulated roofline (memory-bound below their ratio in rows, "
                  "compute-bound above) on any CPU; 0 (the default) in production")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->group("Testing");
  cmd->add_option("--test-load-delay-ms", o->test_load_delay_ms,
                  "Testing only: answer \"loading\" this long before loading the model, so that a test sees "
                  "that state on a machine that loads in no time; 0 (the default) in production")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->group("Testing");
  cmd->add_option("--initial-service-ms", e.initial_service_ms,
                  "Admission's estimate of a request's run time before it has measured one")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--role", o->role,
                  "both: a whole server (rung 1); prefill or decode: a rung-2 worker behind `ladder route`")
      ->check(CLI::IsMember({"both", "prefill", "decode"}))->capture_default_str();
  cmd->add_option("--kv-host", c.kv_host, "Decode role: address of the KV transfer listener")->capture_default_str();
  cmd->add_option("--kv-port", o->kv_port, "Decode role: port of the KV transfer listener; 0 picks a free one")
      ->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--kv-inbox-mb", o->kv_inbox_mb, "Decode role: received KV held for its requests, at most")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--kv-inbox-ttl-s", o->kv_inbox_ttl_s,
                  "Decode role: how long received KV waits for its request before it is dropped")
      ->capture_default_str()->check(CLI::PositiveNumber);
}

// Options that only say where and for whom to serve: not settings a
// measurement depends on.
bool operational(const std::string& name) {
  static const std::set<std::string> kNames = {
      "--host",         "--port",           "--model",          "--served-model-name", "--tenants",
      "--api-key",      "--admin-key",      "--metrics-port",   "--metrics-host",      "--drain-grace-s",
      "--read-timeout-s", "--max-body-bytes", "--max-connections", "--ledger", "--load",          "--help",
      "--shadow-rate",  "--shadow-budget",  "--shadow-queue",
      "--kv-host",      "--kv-port"};
  return kNames.count(name) > 0;
}

// The settings a parsed serve command line changes from their defaults.
climb::ServeSettings settings_of(const CLI::App& app) {
  climb::ServeSettings out;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    const std::string name = "--" + opt->get_lnames().front();
    if (operational(name)) continue;
    std::string value;
    for (const auto& r : opt->results()) value += (value.empty() ? "" : ",") + r;
    if (value == opt->get_default_str()) continue;
    out[name] = value;
  }
  return out;
}

// Parses serve arguments over `o` (only the options they give change).
Status parse_serve_args(const std::vector<std::string>& args, ServeOptions& o,
                        climb::ServeSettings* settings) {
  CLI::App app{"ledger serve arguments"};
  add_serve_options(&app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return invalid_argument(std::string("serve arguments from the ledger: ") + e.what());
  }
  if (settings != nullptr) *settings = settings_of(app);
  if (app.count("--kv-dtype") > 0) o.kv_dtype_given = true;
  return Status::ok();
}

Result<climb::ServedIdentity> identity_of(const std::string& model_path) {
  LADDER_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(model_path));
  LADDER_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok, tokenizer::Tokenizer::from_gguf(file));
  return climb::ServedIdentity{file.digest(), tok->digest(), git_revision()};
}

// The shadow's rules for a ledger entry: the margins it was decided under.
climb::ShadowRules rules_of(const climb::LedgerEntry& e) {
  auto rules = climb::ShadowRules::from_ledger_margin(e.json.value("margin", nlohmann::json()));
  if (rules.is_ok()) return *rules;
  spdlog::warn("ledger line {}: {}; the shadow judges rung {} '{}' by the default margins", e.line,
               rules.status().message(), e.rung, e.name);
  return climb::ShadowRules::from_policy(climb::ClimbPolicy{});
}

// --shadow-rate with a promoted configuration: what serves, its margins and
// the configurations below it to fall back to, each with its settings.
Status shadow_from_choice(const climb::ServingChoice& choice, const ServeOptions& original, ServeOptions& o) {
  server::ShadowConfig& sc = o.config.shadow;
  const climb::LedgerEntry& e = *choice.entry;
  sc.ledger_path = o.ledger;
  sc.climb_id = e.climb_id;
  sc.load = e.load;
  sc.rung = e.rung;
  sc.name = e.name;
  sc.rules = rules_of(e);
  for (const climb::LedgerEntry* f : choice.fallbacks) {
    if (f->model_override) {
      spdlog::warn("shadow: rung {} '{}' serves another model file, which this process cannot switch to: a "
                   "rollback stops above it",
                   f->rung, f->name);
      break;
    }
    ServeOptions fo = original;
    if (f->decision != "baseline") LADDER_RETURN_IF_ERROR(parse_serve_args(f->serve_args, fo, nullptr));
    LADDER_RETURN_IF_ERROR(resolve_engine_settings(fo));
    sc.fallbacks.push_back({f->rung, f->name, fo.config.engine, fo.config.draft, rules_of(*f)});
  }
  return Status::ok();
}

// --ledger: picks the configuration to serve and applies it to `o`.
Status apply_ledger(ServeOptions& o, const ServeOptions& original, bool* shadow_from_ledger) {
  LADDER_ASSIGN_OR_RETURN(std::vector<climb::LedgerEntry> entries, climb::load_ledger(o.ledger));
  LADDER_ASSIGN_OR_RETURN(std::vector<climb::Rollback> rollbacks, climb::load_rollbacks(o.ledger));
  LADDER_ASSIGN_OR_RETURN(climb::ServedIdentity running, identity_of(o.config.model_path));
  auto settings_of_args = [](const std::vector<std::string>& args) -> Result<climb::ServeSettings> {
    ServeOptions scratch;
    climb::ServeSettings settings;
    LADDER_RETURN_IF_ERROR(parse_serve_args(args, scratch, &settings));
    return settings;
  };
  auto digest_of = [](const std::string& path) -> Result<std::string> {
    LADDER_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
    return file.digest();
  };
  const climb::ServingChoice choice = climb::choose_serving(entries, running, settings_of(*o.cmd), settings_of_args,
                                                            digest_of, o.ledger_load, rollbacks);
  for (const auto& note : choice.notes) spdlog::warn("ledger {}: {}", o.ledger, note);
  if (choice.entry == nullptr) {
    spdlog::warn("{}", choice.summary);
    return Status::ok();
  }
  spdlog::info("{}", choice.summary);
  LADDER_RETURN_IF_ERROR(parse_serve_args(choice.entry->serve_args, o, nullptr));
  if (choice.entry->model_override) o.config.model_path = choice.entry->model;
  std::string args;
  for (const auto& a : choice.entry->serve_args) args += " " + a;
  spdlog::info("ledger: applied{}{}", args.empty() ? " no serve arguments" : args,
               choice.entry->model_override ? " and model " + choice.entry->model : std::string());
  if (o.config.shadow.rate > 0) {
    LADDER_RETURN_IF_ERROR(shadow_from_choice(choice, original, o));
    *shadow_from_ledger = true;
  }
  return Status::ok();
}

CommandRegistrar register_serve{"serve", 10, [](CLI::App& app) -> CommandRun {
  auto* cmd = app.add_subcommand("serve", "Serve a GGUF model over an OpenAI-compatible HTTP API");
  auto o = std::make_shared<ServeOptions>();
  add_serve_options(cmd, *o);
  cmd->add_option("--ledger", o->ledger,
                  "Serve the configuration a `ladder climb` promoted in this ledger when its rung 1 matches "
                  "this model, tokenizer, revision and settings (else say why and serve as given)");
  cmd->add_option("--load", o->ledger_load,
                  "With --ledger: the offered load to serve, as a multiplier of the climb's workloads (default "
                  "1); the decisions made at the nearest load the climb measured are used")
      ->check(CLI::PositiveNumber)
      ->needs("--ledger");
  o->cmd = cmd;
  return [o, cmd] {
    o->kv_dtype_given = cmd->count("--kv-dtype") > 0;
    return run_serve(*o);
  };
}};

}  // namespace
}  // namespace ladder::cli
