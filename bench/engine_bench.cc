// Offline throughput of the engine: N greedy requests submitted together
// (continuous batching, one ragged forward per step) against the same N run
// one by one through the same engine, on the same model in the same process.
// The speedup ratio survives a noisy machine; the batched outputs are checked
// token for token against the one-by-one outputs (batch invariance).
//
// Reproduce:
//   build-*/bench/engine_bench                                  # stories260K
//   LADDER_BENCH_MODEL=/tmp/110m-q8_0.gguf build-*/bench/engine_bench
//   LADDER_BENCH_SYNTH=110m:q8_0 build-*/bench/engine_bench
//     (writes a random-weight model of that preset and weight type to
//      $TMPDIR or /tmp once, then uses it)
//   LADDER_BENCH_THREADS sets the op thread pool (default: all cores).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "perf/offline_throughput.h"
#include "engine/sampler.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "model/synth.h"

namespace ladder::engine {
namespace {

struct LoadedModel {
  std::string path;
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<model::LlamaModel> model;
  Status status;
};

// "preset:type" (e.g. "110m:q8_0") -> a synthetic model file, written once.
Status synthesize(const std::string& spec, std::string& path) {
  const size_t colon = spec.find(':');
  const std::string preset = spec.substr(0, colon);
  const std::string type_name = colon == std::string::npos ? "f32" : spec.substr(colon + 1);
  LADDER_ASSIGN_OR_RETURN(model::SynthOptions opts, model::synth_preset(preset));
  const auto type = tensor_type_from_name(type_name);
  if (!type) return invalid_argument("LADDER_BENCH_SYNTH: unknown weight type " + type_name);
  opts.dtype = *type;
  const char* tmp = std::getenv("TMPDIR");
  path = std::string(tmp != nullptr ? tmp : "/tmp") + "/ladder-bench-" + preset + "-" + type_name + ".gguf";
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
    return Status::ok();
  }
  return model::write_synthetic_model(opts, path);
}

const LoadedModel& bench_model() {
  static const LoadedModel* m = [] {
    auto* out = new LoadedModel;
    const char* env = std::getenv("LADDER_BENCH_MODEL");
    out->path = env != nullptr ? env : std::string(LADDER_DEFAULT_SHARED_DIR) + "/models/stories260K.gguf";
    if (const char* synth = std::getenv("LADDER_BENCH_SYNTH")) {
      out->status = synthesize(synth, out->path);
      if (!out->status.is_ok()) return out;
    }
    auto file = gguf::GgufFile::open(out->path);
    if (!file.is_ok()) {
      out->status = file.status();
      return out;
    }
    out->file = std::make_unique<gguf::GgufFile>(std::move(file).value());
    auto model = model::LlamaModel::load(*out->file);
    if (!model.is_ok()) {
      out->status = model.status();
      return out;
    }
    out->model = std::move(model).value();
    return out;
  }();
  return *m;
}

int env_threads() {
  const char* env = std::getenv("LADDER_BENCH_THREADS");
  return env != nullptr ? std::atoi(env) : 0;
}

// Args: requests, prompt tokens, output tokens, sampled (0: greedy; 1:
// temperature 0.8, top-p 0.95, seeded per request).
void BM_EngineOffline(benchmark::State& state) {
  const LoadedModel& lm = bench_model();
  if (!lm.status.is_ok()) {
    state.SkipWithError(lm.status.to_string().c_str());
    return;
  }
  perf::OfflineOptions o;
  o.requests = state.range(0);
  o.prompt_tokens = state.range(1);
  o.output_tokens = state.range(2);
  o.sampled = state.range(3) != 0;
  o.n_threads = env_threads();
  perf::OfflineThroughput r;
  for (auto _ : state) {
    auto measured = perf::measure_offline_throughput(*lm.model, o);
    if (!measured.is_ok()) {
      state.SkipWithError(measured.status().to_string().c_str());
      return;
    }
    r = *measured;
    if (!r.outputs_match) {
      state.SkipWithError("batched outputs differ from one-by-one outputs (batch invariance broken)");
      return;
    }
  }
  state.counters["seq_out_tok/s"] = r.one_by_one_tok_per_s;
  state.counters["batch_out_tok/s"] = r.together_tok_per_s;
  state.counters["speedup"] = r.speedup;
  state.counters["tokens/step"] = r.tokens_per_step;
  // Where the batched run's loop time went.
  state.counters["forward_share"] = r.forward_share;
  state.counters["sample_share"] = r.sample_share;
  state.SetLabel(lm.path.substr(lm.path.find_last_of('/') + 1));
}

BENCHMARK(BM_EngineOffline)
    ->ArgNames({"requests", "prompt", "output", "sampled"})
    ->Args({8, 32, 32, 0})
    ->Args({32, 32, 32, 0})
    ->Args({32, 64, 64, 0})
    ->Args({32, 64, 64, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One Sampler::sample() over a random row of n_vocab logits. Args: n_vocab,
// mode (0: greedy, 1: temperature 0.8 + top-p 0.95, 2: temperature 1 + top-k
// 40, 3: greedy with 5 top logprobs).
void BM_Sampler(benchmark::State& state) {
  const auto n_vocab = static_cast<size_t>(state.range(0));
  SamplingParams p;
  switch (state.range(1)) {
    case 0: p.temperature = 0.0f; break;
    case 1:
      p.temperature = 0.8f;
      p.top_p = 0.95f;
      break;
    case 2: p.top_k = 40; break;
    default: p.temperature = 0.0f; p.top_logprobs = 5;
  }
  std::vector<float> logits(n_vocab);
  uint64_t x = 12345;
  for (float& v : logits) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ULL << 24)) * 4.0f;
  }
  Sampler sampler(p, 1);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, {}, {}).token);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Sampler)->ArgNames({"vocab", "mode"})->ArgsProduct({{32000, 128256}, {0, 1, 2, 3}});

}  // namespace
}  // namespace ladder::engine

BENCHMARK_MAIN();
