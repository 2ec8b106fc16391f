// `ladder bench spec`: speculative decoding against plain decoding on the
// same requests at several batch sizes, paired in one run
// (engine/spec_bench.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/spec_options.h"
#include "engine/spec_bench.h"

namespace ladder::cli {
namespace {

struct BenchSpecArgs {
  std::string model;
  SpecCliOptions spec;
  std::vector<std::string> prompts;
  std::vector<int> batches = {1, 4, 16};
  int64_t output_tokens = 64;
  float temperature = 0.0f;
  int threads = 0;
  int repeats = 5;
  int64_t verify_context = 256;
};

// Story openers (the shared test model is trained on TinyStories); the
// second repeats itself, as extraction and editing prompts do.
const std::vector<std::string> kDefaultPrompts = {
    "Once upon a time",
    "Lily had a red ball. She liked to play with the red ball. One day, Lily had a red ball",
    "Tom and his mom went to the store. They wanted to buy",
    "The little dog was sad. The little dog was",
};

int run_bench_spec(const BenchSpecArgs& a) {
  if (a.spec.spec == "off") {
    std::fprintf(stderr, "error: pass --spec ngram|draft:FILE|self-q4|early-exit:L\n");
    return 2;
  }
  std::string path;
  int exit_code = 0;
  auto bundle = load_model_or_report(a.model, &path, &exit_code);
  if (!bundle) return exit_code;
  engine::EngineConfig ec;  // the draft's KV pool follows the default engine's
  auto spec = speculative_config(a.spec, *bundle, ec);
  if (!spec.is_ok()) {
    std::fprintf(stderr, "error: %s\n", spec.status().message().c_str());
    return 1;
  }
  engine::SpecBenchOptions o;
  o.batch_sizes = a.batches;
  o.output_tokens = a.output_tokens;
  o.temperature = a.temperature;
  o.k = a.spec.k;
  o.adaptive = !a.spec.fixed;
  o.n_threads = a.threads;
  o.repeats = a.repeats;
  for (const std::string& p : a.prompts.empty() ? kDefaultPrompts : a.prompts) {
    o.prompts.push_back(bundle->tokenizer->encode(p, bundle->tokenizer->add_bos_default(), false));
  }
  auto rows = engine::measure_speculation(*bundle->model, spec->draft, o);
  if (!rows.is_ok()) {
    std::fprintf(stderr, "error: %s\n", rows.status().message().c_str());
    return 1;
  }
  std::printf("model %s, --spec %s, k %d, %s, %s, %lld output tokens per request\n", path.c_str(),
              a.spec.spec.c_str(), a.spec.k, o.adaptive ? "adaptive (the engine may switch it off)" : "forced on",
              a.temperature > 0 ? "sampled" : "greedy", static_cast<long long>(a.output_tokens));
  // "tok/s" and "speedup": output tokens per second over the whole run,
  // prompts included; "decode": the same over the decode phase alone (from
  // the moment every request has its first token), what the engine's
  // "predicted" gain is about.
  std::printf("%5s %12s %12s %8s %13s %12s %8s %10s %11s %7s %8s %9s %9s %s\n", "batch", "plain tok/s", "spec tok/s",
              "speedup", "plain decode", "spec decode", "decode", "accepted", "tok/cycle", "draft", "enabled",
              "predicted", "measured", "outputs");
  int rc = 0;
  for (const auto& r : *rows) {
    // "predicted": the mean of the controller's recent predictions at this
    // batch size; "measured": the engine's own in-turn comparison of
    // speculative and plain decode steps at this batch size (adaptive runs;
    // "-" until it has both).
    const std::string measured = r.measured_gain > 0 ? fmt::format("{:.2f}x", r.measured_gain) : "-";
    const std::string predicted = r.predicted_gain > 0 ? fmt::format("{:.2f}x", r.predicted_gain) : "-";
    const std::string decode = r.decode_speedup > 0 ? fmt::format("{:.2f}x", r.decode_speedup) : "-";
    std::printf("%5d %12.1f %12.1f %7.2fx %13.1f %12.1f %8s %9.1f%% %11.2f %6.0f%% %8s %9s %9s %s\n", r.batch,
                r.plain_tok_per_s, r.spec_tok_per_s, r.speedup, r.plain_decode_tok_per_s, r.spec_decode_tok_per_s,
                decode.c_str(), 100 * r.acceptance, r.tokens_per_cycle, 100 * r.draft_share,
                r.enabled_at_end ? "yes" : "no", predicted.c_str(), measured.c_str(),
                r.outputs_match ? "identical" : "DIFFER");
    if (!r.outputs_match) rc = 1;
  }
  // What a verify pass costs the target, per k: the ceiling on the speed-up
  // is tokens per cycle / this ratio (drafting aside).
  const int64_t context = std::min<int64_t>(a.verify_context, bundle->model->config().context_length - 9);
  auto costs = engine::measure_verify_cost(*bundle->model, {1, 2, 4, 8}, context, a.repeats, a.threads, o.kv_dtype);
  if (!costs.is_ok()) {
    std::fprintf(stderr, "error: verify cost: %s\n", costs.status().message().c_str());
    return 1;
  }
  std::printf("verify cost of one sequence after %lld positions (k + 1 positions / 1 position):",
              static_cast<long long>(context));
  for (const auto& c : *costs) std::printf("  k=%d %.2fx", c.k, c.ratio);
  std::printf("  (1 position: %.0f us)\n", costs->front().step_us);
  return rc;
}

CommandRegistrar register_bench_spec{"bench/spec", 73, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<BenchSpecArgs>();
  auto* cmd = app.get_subcommand("bench")->add_subcommand(
      "spec", "Speculative decoding against plain decoding on the same requests, paired, at several batch sizes");
  cmd->add_option("-m,--model", a->model, "GGUF model (default: $LADDER_MODEL, then ../shared/models/stories260K.gguf)");
  add_spec_options(cmd, &a->spec);
  cmd->add_option("-p,--prompt", a->prompts, "Prompt text (repeatable; default: four story openers)");
  cmd->add_option("--batch", a->batches, "Batch sizes (requests submitted together)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--output", a->output_tokens, "Output tokens per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temp", a->temperature, "Temperature; 0 = greedy")->capture_default_str()->check(CLI::Range(0.0, 100.0));
  cmd->add_option("-t,--threads", a->threads, "Threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--repeats", a->repeats, "Runs of each pair; each side keeps its fastest")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--verify-context", a->verify_context,
                  "Positions of KV before the verify-cost passes (capped by the model's context)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  return [a] { return run_bench_spec(*a); };
}};

}  // namespace
}  // namespace ladder::cli
