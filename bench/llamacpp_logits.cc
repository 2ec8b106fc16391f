// llama.cpp's logits for a fixed prompt, the reference that
// tests/model/llamacpp_reference_test.cc holds Ladder to
// (scripts/llamacpp_logits.sh writes tests/data/llamacpp_logits/ with it).
// Built only when CMake is given a llama.cpp the user built
// (LADDER_LLAMA_CPP_INCLUDE and LADDER_LLAMA_CPP_LIBS; never part of
// Ladder's own build); it uses llama.h only.
//
// Usage: llamacpp_logits MODEL.gguf STEPS TOKEN_ID...
//   Decodes the prompt (the ids as given: no BOS is added), then STEPS
//   tokens greedily (the highest logit, the lowest id on a tie), one thread,
//   F32 KV cache, no flash attention,
//   and prints JSON: {"prompt": [...], "steps": [{"id": greedy id,
//   "top": [[id, logit], ...] (the 5 highest raw logits, best first)}, ...]};
//   step 0 holds the logits after the prompt.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "llama.h"
#include "llamacpp_types.h"

namespace {

constexpr int kTop = 5;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "error: %s\n", what);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf STEPS TOKEN_ID...\n", argv[0]);
    return 2;
  }
  const int steps = std::atoi(argv[2]);
  std::vector<llama_token> prompt;
  for (int i = 3; i < argc; ++i) prompt.push_back(static_cast<llama_token>(std::atoi(argv[i])));
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) fail("llama.cpp cannot load the model");
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(prompt.size() + static_cast<size_t>(steps) + 8);
  cp.n_batch = cp.n_ctx;
  cp.n_threads = cp.n_threads_batch = 1;
  // F32 KV and attention without flash attention (whose CPU path keeps F16
  // queries and sums for an F16 cache): the reference stays as close to the
  // model's arithmetic as llama.cpp goes.
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.type_k = cp.type_v = static_cast<decltype(cp.type_k)>(*ladder::bench::ggml_cache_type("f32"));
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) fail("llama.cpp refused the context");
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

  std::printf("{\"prompt\": [");
  for (size_t i = 0; i < prompt.size(); ++i) std::printf("%s%d", i ? ", " : "", prompt[i]);
  std::printf("], \"steps\": [");
  llama_batch batch = llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()));
  llama_token next = 0;
  std::vector<int> ids(static_cast<size_t>(n_vocab));
  for (int s = 0; s < steps; ++s) {
    if (llama_decode(ctx, batch) != 0) fail("llama_decode failed");
    const float* logits = llama_get_logits_ith(ctx, -1);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + kTop, ids.end(), [&](int a, int b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    next = ids[0];
    std::printf("%s\n  {\"id\": %d, \"top\": [", s ? "," : "", next);
    for (int k = 0; k < kTop; ++k) {
      std::printf("%s[%d, %.6g]", k ? ", " : "", ids[static_cast<size_t>(k)],
                  logits[ids[static_cast<size_t>(k)]]);
    }
    std::printf("]}");
    batch = llama_batch_get_one(&next, 1);
  }
  std::printf("\n]}\n");
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
