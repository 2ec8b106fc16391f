// `ladder generate`: run prompts through the engine and stream the text.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/kv_evict_options.h"
#include "cli/kv_host_options.h"
#include "cli/spec_options.h"
#include "common/sha256.h"
#include "model/dense_kv.h"
#include "model/model_bundle.h"
#include "engine/engine.h"
#include "ops/roofline.h"
#include "tokenizer/incremental_detokenizer.h"

namespace ladder::cli {
namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;
  int n = 64;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  uint64_t seed = 0;
  bool seed_given = false;
  bool json = false;
  bool stats = false;
  bool no_bos = false;
  int threads = 0;
  int parallel = 1;
  TensorType kv_dtype = TensorType::kF16;
  KvEvictCliOptions kv_evict;
  double kv_host_mib = 0;
  SpecCliOptions spec;
};

double ms_between(engine::Clock::time_point a, engine::Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string sha256_hex_of_floats(const std::vector<float>& v) {
  return to_hex(sha256(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float))), 8);
}

// sha256 prefix of the logits after the last of `tokens`, so numeric drift
// shows even when the sampled ids agree.
std::string last_logits_hash(const model::LlamaModel& m, const std::vector<int32_t>& tokens, ops::ThreadPool& pool) {
  model::DenseKv kv(m.config(), 1, static_cast<int64_t>(tokens.size()) + 1);
  model::BatchSequence seq;
  seq.tokens = tokens;
  seq.block_table = kv.block_table(0);
  std::vector<float> logits(static_cast<size_t>(m.config().n_vocab));
  Status st = m.forward({&seq, 1}, kv.buffers(), logits, pool);
  return st.is_ok() ? sha256_hex_of_floats(logits) : st.message();
}

int run_generate(const GenerateArgs& a) {
  std::string path;
  int load_error = 0;
  auto loaded = load_model_or_report(a.model, &path, &load_error);
  if (!loaded) return load_error;
  const auto& tok = *loaded->tokenizer;
  const auto& model = *loaded->model;
  const bool add_bos = !a.no_bos && tok.add_bos_default();
  const std::vector<int32_t> prompt = tok.encode(a.prompt, add_bos, false);
  if (prompt.empty()) {
    std::fprintf(stderr, "error: the prompt is empty; pass -p TEXT\n");
    return 2;
  }

  engine::EngineConfig ec;
  ec.n_threads = a.threads;
  ec.kv_dtype = a.kv_dtype;
  auto eviction = kv_eviction_policy(a.kv_evict, ec.block_size);
  if (!eviction.is_ok()) {
    std::fprintf(stderr, "error: %s\n", eviction.status().message().c_str());
    return 2;
  }
  ec.kv_eviction = *eviction;
  auto host_bytes = kv_host_bytes(a.kv_host_mib, ec.prefix_caching);
  if (!host_bytes.is_ok()) {
    std::fprintf(stderr, "error: %s\n", host_bytes.status().message().c_str());
    return 2;
  }
  ec.kv_host_bytes = *host_bytes;
  ec.model_digest = loaded->file->digest();
  ec.tokenizer_digest = tok.digest();
  // Room for every parallel sequence's full context.
  ec.n_kv_blocks = static_cast<int32_t>((model.config().context_length / ec.block_size + 2) * a.parallel);
  auto spec = speculative_config(a.spec, *loaded, ec);
  if (!spec.is_ok()) {
    std::fprintf(stderr, "error: %s\n", spec.status().message().c_str());
    return 1;
  }
  ec.speculative = *spec;
  auto created = engine::Engine::create(model, ec);
  if (!created.is_ok()) {
    std::fprintf(stderr, "error: %s\n", created.status().message().c_str());
    return 1;
  }
  auto& eng = **created;

  std::vector<engine::Submission> subs;
  for (int i = 0; i < a.parallel; ++i) {
    engine::Request r;
    r.prompt = prompt;
    r.sampling.temperature = a.temp;
    r.sampling.top_k = a.top_k;
    r.sampling.top_p = a.top_p;
    r.sampling.min_p = a.min_p;
    r.sampling.repetition_penalty = a.repeat_penalty;
    if (a.seed_given || a.parallel > 1) r.sampling.seed = a.seed + static_cast<uint64_t>(i);
    r.stop.max_tokens = a.n;
    for (int32_t id : tok.end_of_generation_ids()) r.stop.stop_token_ids.insert(id);
    auto sub = eng.submit(std::move(r));
    if (!sub.is_ok()) {
      std::fprintf(stderr, "error: %s\n", sub.status().message().c_str());
      return 1;
    }
    subs.push_back(std::move(sub).value());
  }

  const bool stream_text = !a.json && a.parallel == 1;
  nlohmann::json results = nlohmann::json::array();
  int exit_code = 0;
  double total_decode_ms = 0, total_prefill_ms = 0;
  int64_t total_decoded = 0;
  engine::SpecUsage spec_total;  // summed over the sequences
  const auto wall0 = engine::Clock::now();
  for (int i = 0; i < a.parallel; ++i) {
    tokenizer::IncrementalDetokenizer detok(tok, /*skip_special=*/true, /*at_sequence_start=*/false);
    std::vector<int32_t> tokens;
    std::string text;
    if (stream_text) {
      std::fputs(a.prompt.c_str(), stdout);
      std::fflush(stdout);
    }
    while (auto ev = subs[static_cast<size_t>(i)].stream->next()) {
      if (ev->kind == engine::StreamEvent::Kind::kToken) {
        tokens.push_back(ev->token.token);
        if (tok.is_end_of_generation(ev->token.token)) continue;
        std::string piece = detok.push(ev->token.token);
        text += piece;
        if (stream_text) {
          std::fputs(piece.c_str(), stdout);
          std::fflush(stdout);
        }
        continue;
      }
      std::string rest = detok.flush();
      text += rest;
      if (stream_text) std::printf("%s\n", rest.c_str());
      if (ev->finish == engine::FinishReason::kError) {
        std::fprintf(stderr, "error: %s\n", ev->status.message().c_str());
        exit_code = 1;
      }
      const auto& t = ev->timings;
      if (t.prefill_start && t.first_token) total_prefill_ms += ms_between(*t.prefill_start, *t.first_token);
      if (t.first_token && t.finished && tokens.size() > 1) {
        total_decode_ms += ms_between(*t.first_token, *t.finished);
        total_decoded += static_cast<int64_t>(tokens.size()) - 1;
      }
      nlohmann::json r = {{"prompt_tokens", prompt}, {"tokens", tokens}, {"text", text},
                          {"finish_reason", std::string(engine::finish_reason_name(ev->finish))}};
      const engine::SpecUsage& su = ev->usage.speculative;
      if (su.eligible) {
        r["speculative"] = {{"proposed", su.proposed}, {"accepted", su.accepted}, {"cycles", su.cycles},
                            {"tokens_per_cycle", su.tokens_per_cycle()}};
        spec_total.proposed += su.proposed;
        spec_total.accepted += su.accepted;
        spec_total.cycles += su.cycles;
        spec_total.draft_us += su.draft_us;
      }
      results.push_back(std::move(r));
    }
  }
  const double wall_s = std::chrono::duration<double>(engine::Clock::now() - wall0).count();

  if (a.json) {
    std::printf("%s\n", (a.parallel == 1 ? results[0] : results).dump().c_str());
  } else if (a.parallel > 1) {
    for (size_t i = 0; i < results.size(); ++i) {
      std::printf("--- sequence %zu (%s)\n%s%s\n", i, results[i]["finish_reason"].get<std::string>().c_str(),
                  a.prompt.c_str(), results[i]["text"].get<std::string>().c_str());
    }
  }

  if (a.stats) {
    // Last logits hash: re-run the final sequence's tokens once, so drift in
    // the numbers shows even when the sampled ids agree.
    const auto& last = results.back();
    std::vector<int32_t> all = prompt;
    for (int32_t id : last["tokens"].get<std::vector<int32_t>>()) all.push_back(id);
    all.pop_back();
    ops::ThreadPool pool(a.threads);
    const std::string hash = last_logits_hash(model, all, pool);
    const double peak_gbps = ops::measure_peak_bandwidth_gbps(pool);
    const double prefill_tps = total_prefill_ms > 0 ? static_cast<double>(prompt.size()) * a.parallel /
                                                          (total_prefill_ms / 1e3)
                                                    : 0;
    const double decode_tps = total_decode_ms > 0 ? static_cast<double>(total_decoded) / (total_decode_ms / 1e3) : 0;
    const double gbps = decode_tps * static_cast<double>(model.weight_bytes()) / 1e9;
    std::fprintf(stderr,
                 "stats: prompt %zu tokens, prefill %.1f tok/s; decode %.1f tok/s per sequence over %lld tokens; "
                 "weight traffic %.2f GB/s = %.1f%% of measured %.2f GB/s; %d sequence(s) in %.2f s; "
                 "last logits sha256 %s\n",
                 prompt.size(), prefill_tps, decode_tps, static_cast<long long>(total_decoded), gbps,
                 peak_gbps > 0 ? 100.0 * gbps / peak_gbps : 0.0, peak_gbps, a.parallel, wall_s,
                 hash.c_str());
    if (ec.speculative.draft) {
      std::fprintf(stderr,
                   "stats: speculative %s: %lld of %lld draft tokens accepted (%.1f%%), %.2f tokens per cycle over "
                   "%lld cycles, %.1f ms drafting\n",
                   ec.speculative.draft->name().c_str(), static_cast<long long>(spec_total.accepted),
                   static_cast<long long>(spec_total.proposed),
                   spec_total.proposed > 0 ? 100.0 * static_cast<double>(spec_total.accepted) /
                                                 static_cast<double>(spec_total.proposed)
                                           : 0.0,
                   spec_total.tokens_per_cycle(), static_cast<long long>(spec_total.cycles),
                   static_cast<double>(spec_total.draft_us) / 1e3);
    }
  }
  return exit_code;
}

CommandRegistrar register_generate{"generate", 45, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt, streamed as it is produced");
  cmd->add_option("-m,--model", a->model, "GGUF model (default: $LADDER_MODEL, then ../shared/models/stories260K.gguf)");
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", a->n, "Tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temp", a->temp, "Temperature; 0 = greedy")->capture_default_str()->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", a->top_k, "Keep the k most likely tokens; 0 = all")->capture_default_str();
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling mass")->capture_default_str();
  cmd->add_option("--min-p", a->min_p, "Drop tokens below min-p times the top probability")->capture_default_str();
  cmd->add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty; 1 = off")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Sampling seed (sequence i of --parallel uses seed + i)")
      ->each([a](const std::string&) { a->seed_given = true; });
  cmd->add_flag("--json", a->json, "Print {\"prompt_tokens\":[...],\"tokens\":[...],\"text\":\"...\"} instead of streaming");
  cmd->add_flag("--stats", a->stats,
                "Print prefill and decode tok/s, achieved GB/s of weight traffic against this machine's measured "
                "bandwidth, and a hash of the last logits (stderr)");
  cmd->add_flag("--no-bos", a->no_bos, "Do not prepend BOS");
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all cores)");
  add_kv_dtype_option(cmd, &a->kv_dtype);
  add_kv_evict_options(cmd, &a->kv_evict);
  add_kv_host_option(cmd, &a->kv_host_mib);
  add_spec_options(cmd, &a->spec);
  cmd->add_option("--parallel", a->parallel, "Run N copies of the prompt through the engine at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  return [a] { return run_generate(*a); };
}};

}  // namespace
}  // namespace ladder::cli
