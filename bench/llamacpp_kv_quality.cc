// llama.cpp's quantized KV cache judged by the comparison `ladder replay
// --verify approx` applies to Ladder's (harness::compare_outputs), for the
// side-by-side table of scripts/bench_llamacpp_kv_quality.sh. Built only when CMake
// is given a llama.cpp the user built (LADDER_LLAMA_CPP_INCLUDE and
// LADDER_LLAMA_CPP_LIBS; never part of Ladder's own build); it uses llama.h.
//
// For every request of a workload file (Ladder's JSONL: prompt, max_tokens,
// slice) it decodes greedily with an f16 KV cache (the reference) and with
// each quantized KV type, keeping every output token and its top-5
// log-probabilities (harness::kReferenceTopK), as a replay's reference does.
// Per KV type and slice it prints what bench/kv_quality.sh prints for
// Ladder: exact (the output tokens equal the reference's), mean_match and
// the mean (over requests) and max of the top-5 KL up to the first
// divergence.
//
// Usage: llamacpp_kv_quality MODEL.gguf WORKLOAD.jsonl CTX THREADS TYPE...
//   CTX: the context (0: the model's trained context). TYPE: q8_0 q4_0 q4_1 q5_0 q5_1 (K and V both of that
//   type; flash attention on for every run, the reference included, as llama.cpp needs it for a quantized V
//   cache).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/quality.h"
#include "harness/token_logprob.h"
#include "llama.h"
#include "llamacpp_types.h"

namespace {

using ladder::harness::kReferenceTopK;
namespace harness = ladder::harness;

struct Request {
  std::string slice;
  std::vector<llama_token> prompt;
  int max_tokens = 0;
};

struct Position {
  llama_token token = -1;
  std::vector<std::pair<llama_token, double>> top;  // log-probabilities, best first
};

using Output = std::vector<Position>;

Position top_of(const float* logits, int n_vocab) {
  double max = logits[0];
  for (int i = 1; i < n_vocab; ++i) max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(logits[i] - max);
  const double log_z = max + std::log(sum);
  std::vector<int> ids(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) ids[static_cast<size_t>(i)] = i;
  // Best first; ties to the lower id, as a greedy argmax scan takes the first.
  std::partial_sort(ids.begin(), ids.begin() + std::min(kReferenceTopK, n_vocab), ids.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  Position p;
  p.token = ids[0];
  for (int k = 0; k < std::min(kReferenceTopK, n_vocab); ++k)
    p.top.emplace_back(ids[static_cast<size_t>(k)], logits[ids[static_cast<size_t>(k)]] - log_z);
  return p;
}

Output generate(llama_context* ctx, const llama_vocab* vocab, const Request& r) {
  llama_memory_clear(llama_get_memory(ctx), true);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::vector<llama_token> prompt = r.prompt;
  Output out;
  llama_batch batch = llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()));
  for (int step = 0; step < r.max_tokens; ++step) {
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "error: llama_decode failed (context too small for the prompt?)\n");
      std::exit(1);
    }
    Position p = top_of(llama_get_logits_ith(ctx, -1), n_vocab);
    const bool end = llama_vocab_is_eog(vocab, p.token);
    out.push_back(std::move(p));
    if (end) break;
    batch = llama_batch_get_one(&out.back().token, 1);
  }
  return out;
}

struct SliceScore {
  int requests = 0, exact = 0, kl_requests = 0;
  double prompt_tokens = 0, match = 0, kl_sum = 0, kl_max = 0;
};

// Token ids stand in for the texts the API keys alternatives by: unique, so
// the comparison is the same.
std::vector<harness::TokenLogprob> logprobs_of(const Output& out) {
  std::vector<harness::TokenLogprob> v;
  for (const Position& p : out) {
    harness::TokenLogprob t;
    t.token = std::to_string(p.token);
    for (const auto& [id, lp] : p.top) t.top.emplace_back(std::to_string(id), lp);
    t.logprob = p.top.empty() ? 0 : p.top.front().second;
    v.push_back(std::move(t));
  }
  return v;
}

std::vector<int64_t> ids_of(const Output& out) {
  std::vector<int64_t> v;
  for (const Position& p : out) v.push_back(p.token);
  return v;
}

void score(const Output& ref, const Output& cand, SliceScore& s) {
  const auto ref_ids = ids_of(ref), cand_ids = ids_of(cand);
  const auto ref_lp = logprobs_of(ref), cand_lp = logprobs_of(cand);
  const harness::QualityCheck q = harness::compare_outputs(
      harness::VerifyMode::kApprox, {nullptr, &ref_ids, &ref_lp}, {nullptr, &cand_ids, &cand_lp});
  ++s.requests;
  s.exact += q.exact_match ? 1 : 0;
  s.match += q.match_fraction;
  if (q.kl_mean) {
    s.kl_sum += *q.kl_mean;
    ++s.kl_requests;
  }
  if (q.kl_max) s.kl_max = std::max(s.kl_max, *q.kl_max);
}

llama_context* open_context(llama_model* model, int n_ctx, int threads, int kv_type) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = static_cast<uint32_t>(n_ctx);
  cp.n_threads = cp.n_threads_batch = threads;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  cp.type_k = cp.type_v = static_cast<decltype(cp.type_k)>(kv_type);
  return llama_init_from_model(model, cp);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s MODEL.gguf WORKLOAD.jsonl CTX THREADS TYPE...\n", argv[0]);
    return 2;
  }
  const int ctx_arg = std::atoi(argv[3]), threads = std::atoi(argv[4]);
  std::vector<std::string> types(argv + 5, argv + argc);
  for (const auto& t : types) {
    if (!ladder::bench::ggml_cache_type(t) || t == "f16" || t == "f32") {
      std::fprintf(stderr, "error: unknown KV type '%s' (q8_0 q4_0 q4_1 q5_0 q5_1)\n", t.c_str());
      return 2;
    }
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) {
    std::fprintf(stderr, "error: cannot load %s\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_ctx = ctx_arg > 0 ? ctx_arg : llama_model_n_ctx_train(model);

  std::vector<Request> requests;
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s\n", argv[2]);
    return 1;
  }
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    Request r;
    r.slice = j.value("slice", std::string("all"));
    r.max_tokens = j.value("max_tokens", 16);
    const std::string text = j.at("prompt").get<std::string>();
    r.prompt.resize(text.size() + 8);
    const int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), r.prompt.data(),
                                 static_cast<int32_t>(r.prompt.size()), true, false);
    if (n < 0) {
      std::fprintf(stderr, "error: cannot tokenize a prompt of %s\n", argv[2]);
      return 1;
    }
    r.prompt.resize(static_cast<size_t>(n));
    if (n + r.max_tokens > n_ctx) {
      std::fprintf(stderr, "error: a prompt of %d tokens and %d more do not fit a context of %d\n", n,
                   r.max_tokens, n_ctx);
      return 1;
    }
    requests.push_back(std::move(r));
  }

  std::vector<Output> reference;
  {
    llama_context* ctx = open_context(model, n_ctx, threads, *ladder::bench::ggml_cache_type("f16"));
    if (ctx == nullptr) return 1;
    for (const Request& r : requests) reference.push_back(generate(ctx, vocab, r));
    llama_free(ctx);
  }
  std::printf(
      "| kv | slice | prompt tokens (mean) | exact | mean_match | mean / max KL "
      "|\n|---|---|---|---|---|---|\n");
  for (const std::string& type : types) {
    llama_context* ctx = open_context(model, n_ctx, threads, *ladder::bench::ggml_cache_type(type));
    if (ctx == nullptr) {
      std::fprintf(stderr, "error: llama.cpp refused a %s KV cache for this model\n", type.c_str());
      return 1;
    }
    std::map<std::string, SliceScore> slices;
    for (size_t i = 0; i < requests.size(); ++i) {
      SliceScore& slice = slices[requests[i].slice];
      slice.prompt_tokens += static_cast<double>(requests[i].prompt.size());
      score(reference[i], generate(ctx, vocab, requests[i]), slice);
    }
    for (const auto& [slice, s] : slices) {
      std::printf("| %s | %s | %.0f | %d/%d | %.3f | %.2g / %.2g |\n", type.c_str(), slice.c_str(),
                  s.prompt_tokens / s.requests, s.exact, s.requests, s.match / s.requests,
                  s.kl_requests ? s.kl_sum / s.kl_requests : 0.0, s.kl_max);
    }
    std::fflush(stdout);
    llama_free(ctx);
  }
  llama_model_free(model);
  return 0;
}
