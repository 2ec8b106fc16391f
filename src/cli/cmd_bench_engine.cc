// `ladder bench engine`: offline throughput of continuous batching, N
// requests together against the same N one by one, in the same run.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/spec_options.h"
#include "perf/offline_throughput.h"
#include "model/model_bundle.h"

namespace ladder::cli {
namespace {

struct BenchEngineArgs {
  std::string model;
  perf::OfflineOptions options;
  SpecCliOptions spec;
};

int run_bench_engine(const BenchEngineArgs& a) {
  std::string path;
  int exit_code = 0;
  auto bundle = load_model_or_report(a.model, &path, &exit_code);
  if (!bundle) return exit_code;
  perf::OfflineOptions o = a.options;
  engine::EngineConfig draft_pool;  // the draft's KV follows the engine's memory default
  auto spec = speculative_config(a.spec, *bundle, draft_pool);
  if (!spec.is_ok()) {
    std::fprintf(stderr, "error: %s\n", spec.status().message().c_str());
    return 1;
  }
  o.speculative = *spec;
  std::fprintf(stderr, "bench: %lld requests (prompt %lld, output %lld tokens), one by one and then together...\n",
               static_cast<long long>(o.requests), static_cast<long long>(o.prompt_tokens),
               static_cast<long long>(o.output_tokens));
  auto r = perf::measure_offline_throughput(*bundle->model, o);
  if (!r.is_ok()) {
    std::fprintf(stderr, "error: %s\n", r.status().message().c_str());
    return 1;
  }
  std::printf("model %s, %lld requests x (prompt %lld, output %lld), %s\n", path.c_str(),
              static_cast<long long>(o.requests), static_cast<long long>(o.prompt_tokens),
              static_cast<long long>(o.output_tokens), o.sampled ? "temperature 0.8 / top-p 0.95" : "greedy");
  std::printf("one by one: %8.1f output tok/s (%.2f s)\n", r->one_by_one_tok_per_s, r->one_by_one_s);
  std::printf("together:   %8.1f output tok/s (%.2f s), %.1f tokens per step, %.0f%% forward, %.0f%% sampling\n",
              r->together_tok_per_s, r->together_s, r->tokens_per_step, 100 * r->forward_share,
              100 * r->sample_share);
  std::printf("speedup:    %.2fx; outputs %s\n", r->speedup,
              r->outputs_match ? "identical token for token" : "DIFFER (batch invariance broken)");
  return r->outputs_match ? 0 : 1;
}

CommandRegistrar register_bench_engine{"bench/engine", 72, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<BenchEngineArgs>();
  auto* cmd = app.get_subcommand("bench")->add_subcommand(
      "engine", "Offline throughput: N requests through the engine together against the same N one by one");
  cmd->add_option("-m,--model", a->model, "GGUF model (make one with: ladder synth --preset 110m --dtype q8_0 -o FILE)");
  cmd->add_option("--requests", a->options.requests, "Requests")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--prompt", a->options.prompt_tokens, "Prompt tokens per request")->capture_default_str();
  cmd->add_option("--output", a->options.output_tokens, "Output tokens per request")->capture_default_str();
  cmd->add_flag("--sampled", a->options.sampled, "Sample (temperature 0.8, top-p 0.95) instead of greedy");
  cmd->add_option("--max-batch-tokens", a->options.max_batch_tokens, "Token budget of one engine step")
      ->capture_default_str();
  add_kv_dtype_option(cmd, &a->options.kv_dtype);
  add_spec_options(cmd, &a->spec);
  cmd->add_option("-t,--threads", a->options.n_threads, "Threads (0 = all cores)")->capture_default_str();
  return [a] { return run_bench_engine(*a); };
}};

}  // namespace
}  // namespace ladder::cli
