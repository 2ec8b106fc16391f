// `ladder bench kv-offload`: a prefix-heavy workload on a KV pool smaller
// than its prefixes, without and with the host KV tier, paired in one run
// (src/perf/kv_offload_bench.h).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "model/model_bundle.h"
#include "perf/kv_offload_bench.h"

namespace ladder::cli {
namespace {

struct BenchKvOffloadArgs {
  std::string model;
  perf::KvOffloadOptions options;
  double host_mib = 256;
};

void print_run(const char* name, const perf::KvOffloadRun& r) {
  const double hit = r.prompt_tokens > 0 ? static_cast<double>(r.prefix_hit_tokens) / r.prompt_tokens : 0;
  std::printf("| %s | %.3f | %lld | %lld | %.2f |", name, hit, static_cast<long long>(r.prefix_hit_tokens),
              static_cast<long long>(r.computed_tokens), r.seconds);
  if (r.host.bytes_capacity == 0) {
    std::printf(" - | - | - | - |\n");
    return;
  }
  std::printf(" %lld | %lld | %lld | %lld |\n", static_cast<long long>(r.host.offloaded_blocks),
              static_cast<long long>(r.host.prefetched_blocks), static_cast<long long>(r.host.prefetched_late_blocks),
              static_cast<long long>(r.host.recomputed_blocks));
}

int run_bench_kv_offload(BenchKvOffloadArgs& a) {
  std::string path;
  int exit_code = 0;
  auto bundle = load_model_or_report(a.model, &path, &exit_code);
  if (!bundle) return exit_code;
  perf::KvOffloadOptions& o = a.options;
  o.host_bytes = static_cast<size_t>(a.host_mib * (1 << 20));
  auto r = perf::measure_kv_offload(*bundle->model, o);
  if (!r.is_ok()) {
    std::fprintf(stderr, "error: %s\n", r.status().message().c_str());
    return 1;
  }
  std::printf("model %s, %s KV, %lld families x %lld rounds (prefix %lld, suffix %lld, output %lld tokens), "
              "%lld in flight; pool %d blocks, prefixes %lld blocks, host tier %.0f MiB; best of %d\n",
              path.c_str(), std::string(tensor_type_name(o.kv_dtype)).c_str(), static_cast<long long>(o.families),
              static_cast<long long>(o.rounds), static_cast<long long>(o.prefix_tokens),
              static_cast<long long>(o.suffix_tokens), static_cast<long long>(o.output_tokens),
              static_cast<long long>(o.concurrency), r->kv_blocks, static_cast<long long>(r->prefix_blocks), a.host_mib,
              o.repeats);
  std::printf("| host tier | prefix hit ratio | hit tokens | tokens computed | seconds | offloaded | prefetched | "
              "prefetched late | recomputed |\n|---|---|---|---|---|---|---|---|---|\n");
  print_run("off", r->without);
  print_run("on", r->with);
  std::printf("time with / without: %.2fx; outputs %s\n", r->with.seconds / r->without.seconds,
              r->outputs_match ? "identical token for token" : "DIFFER");
  return r->outputs_match ? 0 : 1;
}

CommandRegistrar register_bench_kv_offload{"bench/kv-offload", 74, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<BenchKvOffloadArgs>();
  auto* cmd = app.get_subcommand("bench")->add_subcommand(
      "kv-offload", "A prefix-heavy workload on a small KV pool, without and with the host KV tier (--kv-host-mib)");
  auto& o = a->options;
  cmd->add_option("-m,--model", a->model, "GGUF model (e.g. ladder synth --preset 110m --dtype q8_0 -o FILE)");
  cmd->add_option("--families", o.families, "Prompt families (a shared prefix each)")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--rounds", o.rounds, "Rounds over the families")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--prefix", o.prefix_tokens, "Prefix tokens of a family")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--suffix", o.suffix_tokens, "Tokens after the prefix, new every round")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--output", o.output_tokens, "Output tokens per request")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--concurrency", o.concurrency, "Requests in flight")->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-blocks", o.kv_blocks, "KV pool blocks; 0 = twice what the requests in flight take")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-host-mib", a->host_mib, "The host tier's size in the run with it")->capture_default_str()
      ->check(CLI::PositiveNumber);
  add_kv_dtype_option(cmd, &o.kv_dtype);
  cmd->add_option("--repeats", o.repeats, "Runs of each configuration, alternating; the best time counts")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("-t,--threads", o.n_threads, "Threads (0 = all cores)")->capture_default_str();
  return [a] { return run_bench_kv_offload(*a); };
}};

}  // namespace
}  // namespace ladder::cli
