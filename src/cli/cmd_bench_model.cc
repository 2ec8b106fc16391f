// `ladder bench model`: the forward pass on a real or synthetic model, as
// fractions of this machine's measured roofline in the same run: decode at
// batch 1 against memory bandwidth (weight bytes per token / peak GB/s),
// prefill against peak FMA FLOP/s, and aggregate decode across batch sizes.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "model/model_bundle.h"
#include "model/model_bench.h"
#include "ops/roofline.h"

namespace ladder::cli {
namespace {

struct BenchModelArgs {
  std::string model;
  std::string batches = "1,4,8,16,32";
  int64_t prompt = 512;
  int64_t context = 64;
  int steps = 16;
  int repeats = 3;
  TensorType kv_dtype = TensorType::kF16;
  int threads = 2;
};

int run_bench_model(const BenchModelArgs& a) {
  const std::string path = resolve_model_path(a.model);
  if (path.empty()) return 2;
  auto bundle = model::ModelBundle::load(path);
  if (!bundle.is_ok()) {
    std::fprintf(stderr, "error: %s\n", bundle.status().message().c_str());
    return 1;
  }
  const model::LlamaModel& m = *bundle->model;
  const auto& c = m.config();
  std::vector<int> batches;
  std::stringstream ss(a.batches);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      batches.push_back(std::stoi(item));
    } catch (const std::exception&) {
      std::fprintf(stderr, "error: --batch takes a comma-separated list of integers, got '%s'\n", a.batches.c_str());
      return 2;
    }
    if (batches.back() < 1 || batches.back() > 1024) {
      std::fprintf(stderr, "error: batch sizes must be in [1, 1024]\n");
      return 2;
    }
  }
  if (a.context + a.steps > c.context_length || a.prompt > c.context_length) {
    std::fprintf(stderr, "error: the model's context is %lld tokens; lower --context/--steps/--prompt\n",
                 static_cast<long long>(c.context_length));
    return 2;
  }

  ops::ThreadPool pool(a.threads);
  std::fprintf(stderr, "bench: measuring this machine's roofline (%d threads)...\n", pool.size());
  // Bandwidth is probed before and after the decode cases and the higher
  // figure counts: a shared machine's bandwidth drifts, and the ratio must not
  // flatter the model by catching the probe in a slow moment.
  const double gbps_before = ops::measure_peak_bandwidth_gbps(pool);
  const double peak_gflops = ops::measure_peak_gflops(pool);
  std::vector<model::ForwardMeasurement> decode;
  for (int b : batches) {
    std::fprintf(stderr, "bench: decode at batch %d...\n", b);
    decode.push_back(model::measure_decode(m, b, a.context, a.steps, a.repeats, a.kv_dtype, pool));
  }
  const double gbps_after = ops::measure_peak_bandwidth_gbps(pool);
  const double peak_gbps = std::max(gbps_before, gbps_after);
  std::printf("model %s: dim %lld, %lld layers, ffn %lld, vocab %lld, %.1f MiB of matmul weights\n", path.c_str(),
              static_cast<long long>(c.dim), static_cast<long long>(c.n_layers), static_cast<long long>(c.ffn_dim),
              static_cast<long long>(c.n_vocab), static_cast<double>(m.weight_bytes()) / (1 << 20));
  std::printf("machine: %.1f GB/s read bandwidth (probes before/after decode: %.1f, %.1f), %.0f GFLOP/s FMA peak, "
              "%d threads\n\n",
              peak_gbps, gbps_before, gbps_after, peak_gflops, pool.size());

  std::printf("%-28s %12s %14s %12s\n", "case", "tok/s", "ratio", "vs batch 1");
  double base = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const int b = batches[i];
    const model::ForwardMeasurement& r = decode[i];
    char label[64], ratio[64];
    std::snprintf(label, sizeof(label), "decode batch %d", b);
    if (b == 1) {
      std::snprintf(ratio, sizeof(ratio), "%.0f%% of BW", 100.0 * r.weight_gb_per_s / peak_gbps);
      base = r.tokens_per_s;
    } else {
      std::snprintf(ratio, sizeof(ratio), "%.2f GB/s", r.weight_gb_per_s);
    }
    std::printf("%-28s %12.1f %14s %11.2fx\n", label, r.tokens_per_s, ratio, base > 0 ? r.tokens_per_s / base : 0.0);
  }
  std::fprintf(stderr, "bench: prefill of %lld tokens...\n", static_cast<long long>(a.prompt));
  auto p = model::measure_prefill(m, a.prompt, a.repeats, a.kv_dtype, pool);
  char label[64], ratio[64];
  std::snprintf(label, sizeof(label), "prefill %lld tokens", static_cast<long long>(a.prompt));
  std::snprintf(ratio, sizeof(ratio), "%.0f%% of FLOP/s", 100.0 * p.gflop_per_s / peak_gflops);
  std::printf("%-28s %12.1f %14s %12s\n", label, p.tokens_per_s, ratio, "");
  std::printf("\nratios: decode = weight bytes per token x tok/s / measured bandwidth; prefill = matmul+attention "
              "FLOPs / measured FMA peak\n");
  return 0;
}

CommandRegistrar reg{"bench/model", 71, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<BenchModelArgs>();
  auto* cmd = app.get_subcommand("bench")->add_subcommand(
      "model", "Decode and prefill speed of a model as fractions of this machine's measured roofline");
  cmd->add_option("-m,--model", a->model, "GGUF model (make one with: ladder synth --preset 110m --dtype q8_0 -o FILE)");
  cmd->add_option("--batch", a->batches, "Decode batch sizes, comma-separated")->capture_default_str();
  cmd->add_option("--prompt", a->prompt, "Prefill prompt length")->capture_default_str();
  cmd->add_option("--context", a->context, "KV positions each decoding sequence already holds")->capture_default_str();
  cmd->add_option("--steps", a->steps, "Decode steps timed per batch size")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--repeats", a->repeats, "Timed runs per case; the fastest counts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_kv_dtype_option(cmd, &a->kv_dtype);
  cmd->add_option("-t,--threads", a->threads, "Threads (the caller counts; 0 = all)")->capture_default_str();
  return [a] { return run_bench_model(*a); };
}};

}  // namespace
}  // namespace ladder::cli
