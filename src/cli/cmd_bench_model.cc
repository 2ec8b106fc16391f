// `ladder bench model`: the forward pass on a real or synthetic model, as
// fractions of this machine's honest roofline measured in the same run:
// decode at batch 1 against the best read bandwidth (weight bytes per token /
// GB/s of the best streaming strategy), prefill against the best arithmetic
// of its kind (FMA for float weights; int8 vectors or AMX tiles for
// quantized ones), aggregate decode across batch sizes, and, on AMX
// machines, prefill with and without tiles (same logits, bit for bit).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include <cstring>

#include "model/model_bundle.h"
#include "ops/amx.h"
#include "ops/kv_codec.h"
#include "ops/roofline.h"
#include "perf/model_bench.h"

namespace ladder::cli {
namespace {

struct BenchModelArgs {
  std::string model;
  std::string batches = "1,4,8,16,32";
  int64_t prompt = 512;
  int64_t context = 64;
  int steps = 16;
  int repeats = 5;
  TensorType kv_dtype = TensorType::kF16;
  int threads = 2;
};

// Whether the model's matmul weights are float (F32/F16/BF16): their
// prefill runs on FMA, quantized ones on the int8 kernels.
bool is_float_weights(const gguf::GgufFile& file) {
  const gguf::TensorInfo* t = file.find_tensor("blk.0.ffn_up.weight");
  if (t == nullptr) return true;
  return t->type == TensorType::kF32 || t->type == TensorType::kF16 || t->type == TensorType::kBF16;
}

int run_bench_model(const BenchModelArgs& a) {
  std::string path;
  int exit_code = 0;
  auto bundle = load_model_or_report(a.model, &path, &exit_code);
  if (!bundle) return exit_code;
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
  // Paired rounds: each round probes the read bandwidth and then times every
  // batch size, so a ratio divides figures taken moments apart; the table
  // shows the median over rounds (a shared machine's bandwidth drifts by a
  // third between moments, which a single probe at the start would bake into
  // every ratio).
  const int rounds = a.repeats;
  std::fprintf(stderr, "bench: %d rounds of (bandwidth probe, decode at each batch size), %d threads\n", rounds,
               pool.size());
  const ops::ComputePeaks peaks = ops::measure_compute_peaks(pool);
  std::vector<double> probe(static_cast<size_t>(rounds));
  std::vector<std::vector<perf::ForwardMeasurement>> runs(batches.size());
  for (int r = 0; r < rounds; ++r) {
    std::fprintf(stderr, "bench: round %d/%d\n", r + 1, rounds);
    probe[static_cast<size_t>(r)] = ops::measure_peak_bandwidth_gbps(pool, size_t{256} << 20);
    for (size_t i = 0; i < batches.size(); ++i) {
      runs[i].push_back(perf::measure_decode(m, batches[i], a.context, a.steps, a.kv_dtype, pool));
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  std::printf("model %s: dim %lld, %lld layers, ffn %lld, vocab %lld, %.1f MiB of matmul weights, %s KV\n",
              path.c_str(), static_cast<long long>(c.dim), static_cast<long long>(c.n_layers),
              static_cast<long long>(c.ffn_dim), static_cast<long long>(c.n_vocab),
              static_cast<double>(m.weight_bytes()) / (1 << 20), ops::kv_dtype_short_name(a.kv_dtype));
  const auto [lo, hi] = std::minmax_element(probe.begin(), probe.end());
  std::printf("machine: best read bandwidth %.1f GB/s median of %d probes (%.1f-%.1f), %.0f GFLOP/s FMA, "
              "%.0f GMAC/s int8 (%s%s), %d threads\n\n",
              median(probe), rounds, *lo, *hi, peaks.fma_gflops, peaks.best_int8_gmacs(),
              peaks.amx_int8_gmacs > peaks.int8_gmacs ? "AMX" : peaks.int8_method.c_str(),
              peaks.amx_int8_gmacs > 0 && peaks.amx_int8_gmacs <= peaks.int8_gmacs ? ", AMX slower" : "",
              pool.size());

  std::printf("%-28s %12s %14s %12s\n", "case", "tok/s", "ratio", "vs batch 1");
  const auto one = std::find(batches.begin(), batches.end(), 1);
  const std::vector<perf::ForwardMeasurement>* base = one == batches.end() ? nullptr : &runs[one - batches.begin()];
  for (size_t i = 0; i < batches.size(); ++i) {
    std::vector<double> tps, bw_ratio, vs_one;
    for (int r = 0; r < rounds; ++r) {
      const perf::ForwardMeasurement& x = runs[i][static_cast<size_t>(r)];
      tps.push_back(x.tokens_per_s);
      bw_ratio.push_back(x.weight_gb_per_s / probe[static_cast<size_t>(r)]);
      if (base != nullptr) vs_one.push_back(x.tokens_per_s / (*base)[static_cast<size_t>(r)].tokens_per_s);
    }
    char label[64], ratio[64], rel[32] = "";
    std::snprintf(label, sizeof(label), "decode batch %d", batches[i]);
    if (batches[i] == 1) {
      std::snprintf(ratio, sizeof(ratio), "%.0f%% of BW", 100.0 * median(bw_ratio));
    } else {
      std::snprintf(ratio, sizeof(ratio), "%.2f GB/s", median(tps) * static_cast<double>(m.weight_bytes()) /
                                                           batches[i] / 1e9);
    }
    if (base != nullptr) std::snprintf(rel, sizeof(rel), "%.2fx", median(vs_one));
    std::printf("%-28s %12.1f %14s %12s\n", label, median(tps), ratio, rel);
  }
  // Prefill: float weights against the FMA peak, quantized ones (int8
  // kernels) against the best int8 peak, counting a multiply-add once.
  const bool float_weights = is_float_weights(*bundle->file);
  auto prefill_row = [&](const char* how, const perf::ForwardMeasurement& p) {
    char label[64], ratio[64];
    std::snprintf(label, sizeof(label), "prefill %lld tokens%s", static_cast<long long>(a.prompt), how);
    if (float_weights) {
      std::snprintf(ratio, sizeof(ratio), "%.0f%% of FMA", 100.0 * p.gflop_per_s / peaks.fma_gflops);
    } else {
      std::snprintf(ratio, sizeof(ratio), "%.0f%% of int8", 100.0 * p.gflop_per_s / 2 / peaks.best_int8_gmacs());
    }
    std::printf("%-28s %12.1f %14s %12s\n", label, p.tokens_per_s, ratio, "");
  };
  std::fprintf(stderr, "bench: prefill of %lld tokens...\n", static_cast<long long>(a.prompt));
  std::vector<float> logits_amx, logits_vec;
  // The int8 tiles serve quantized weights only (F16/BF16 tiles are decided at
  // load and cannot be switched off without changing results).
  const bool amx = ops::amx_int8_active() && !float_weights;
  if (!amx) {
    prefill_row("", perf::measure_prefill(m, a.prompt, a.repeats, a.kv_dtype, pool, nullptr));
  } else {
    // The same prefill on vectors only, in alternating rounds: the speedup
    // of the tiles (the median of the per-round ratios, so that a machine
    // whose speed drifts between rounds does not decide it), and a check
    // that they change no bit of the logits.
    perf::ForwardMeasurement p, v;  // the fastest round of each
    std::vector<double> ratios;
    for (int r = 0; r < a.repeats; ++r) {
      const auto pr = perf::measure_prefill(m, a.prompt, 1, a.kv_dtype, pool, &logits_amx);
      ops::set_amx_enabled(false);
      const auto vr = perf::measure_prefill(m, a.prompt, 1, a.kv_dtype, pool, &logits_vec);
      ops::set_amx_enabled(true);
      if (pr.tokens_per_s > p.tokens_per_s) p = pr;
      if (vr.tokens_per_s > v.tokens_per_s) v = vr;
      ratios.push_back(pr.tokens_per_s / vr.tokens_per_s);
    }
    prefill_row(" (AMX)", p);
    prefill_row(" (vectors)", v);
    const bool same = logits_amx.size() == logits_vec.size() &&
                      std::memcmp(logits_amx.data(), logits_vec.data(), logits_amx.size() * sizeof(float)) == 0;
    std::printf("%-28s %11.2fx %14s\n", "prefill AMX / vectors", median(ratios),
                same ? "same logits" : "LOGITS DIFFER");
  }
  std::printf("\nratios: decode = weight bytes per token x tok/s / best read bandwidth probed in the same round; vs "
              "batch 1 = paired with batch 1 in the same round; prefill = matmul+attention FLOPs / FMA peak (float "
              "weights) or multiply-adds / best int8 peak (quantized)\n");
  return 0;
}

CommandRegistrar register_bench_model{"bench/model", 71, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<BenchModelArgs>();
  auto* cmd = app.get_subcommand("bench")->add_subcommand(
      "model", "Decode and prefill speed of a model as fractions of this machine's measured roofline");
  cmd->add_option("-m,--model", a->model, "GGUF model (make one with: ladder synth --preset 110m --dtype q8_0 -o FILE)");
  cmd->add_option("--batch", a->batches, "Decode batch sizes, comma-separated")->capture_default_str();
  cmd->add_option("--prompt", a->prompt, "Prefill prompt length")->capture_default_str();
  cmd->add_option("--context", a->context, "KV positions each decoding sequence already holds")->capture_default_str();
  cmd->add_option("--steps", a->steps, "Decode steps timed per batch size")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--repeats", a->repeats, "Rounds: decode ratios and prefill AMX / vectors are medians over paired rounds; prefill tok/s takes the fastest")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_kv_dtype_option(cmd, &a->kv_dtype);
  cmd->add_option("-t,--threads", a->threads, "Threads (the caller counts; 0 = all)")->capture_default_str();
  return [a] { return run_bench_model(*a); };
}};

}  // namespace
}  // namespace ladder::cli
