// Times a llama.cpp library the way llama-bench and llama-batched-bench do,
// for scripts/bench_llamacpp.sh and scripts/bench_llamacpp_kv.sh when only
// llama.cpp's library and headers are at hand (a source tree without its
// tools). Built only when CMake is given that llama.cpp
// (LADDER_LLAMA_CPP_INCLUDE and LADDER_LLAMA_CPP_LIBS; never part of
// Ladder's own build); it uses llama.h only. Prompts are random token ids.
//
//   llamacpp_timing bench -m M [-t T] [-p 512] [-n 128] [-r 5]
//     llama-bench's pp and tg tests, printed as its CSV (n_prompt, n_gen,
//     avg_ts): a warm-up, then r timed runs each from an empty cache; pp
//     decodes p tokens at once, tg decodes n tokens one at a time.
//   llamacpp_timing batched -m M [-t T] [-c 2048] [-b 2048] [-ub 512]
//       [-npp 64] [-ntg 32] [-npl 16] [-fa on|off|auto] [-ctk T] [-ctv T]
//     llama-batched-bench without -pps: npl sequences each prefilled with
//     its own npp tokens (in chunks of b), then ntg steps decoding one token
//     of every sequence; printed as its table row (S_TG t/s the 8th cell).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "llama.h"
#include "llamacpp_types.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* option(int argc, char** argv, const char* name) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return nullptr;
}

int int_option(int argc, char** argv, const char* name, int fallback) {
  const char* v = option(argc, argv, name);
  return v != nullptr ? std::atoi(v) : fallback;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "error: %s\n", what);
  std::exit(1);
}

int cache_type(const char* name) {
  const auto t = ladder::bench::ggml_cache_type(name != nullptr ? name : "f16");
  if (!t) fail("unknown cache type (f32 f16 q8_0 q4_0 q4_1 q5_0 q5_1)");
  return *t;
}

struct Session {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  int n_vocab = 0;
  std::mt19937 rng{42};

  // Decodes n tokens of each of sequences [0, n_seq) at positions pos0...,
  // asking for logits at each sequence's last token.
  void decode(int n, int n_seq, int pos0) {
    llama_batch b = llama_batch_init(n * n_seq, 0, 1);
    for (int s = 0; s < n_seq; ++s) {
      for (int i = 0; i < n; ++i) {
        const int k = b.n_tokens++;
        b.token[k] = static_cast<llama_token>(rng() % static_cast<unsigned>(n_vocab));
        b.pos[k] = pos0 + i;
        b.n_seq_id[k] = 1;
        b.seq_id[k][0] = s;
        b.logits[k] = i == n - 1;
      }
    }
    if (llama_decode(ctx, b) != 0) fail("llama_decode failed");
    llama_synchronize(ctx);
    llama_batch_free(b);
  }
  void clear() { llama_memory_clear(llama_get_memory(ctx), true); }
};

Session open_session(int argc, char** argv, int n_ctx, int n_batch, int n_ubatch, int n_seq) {
  const char* path = option(argc, argv, "-m");
  if (path == nullptr) fail("-m MODEL is required");
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  Session s;
  s.model = llama_model_load_from_file(path, mp);
  if (s.model == nullptr) fail("cannot load the model");
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = static_cast<uint32_t>(n_batch);
  cp.n_ubatch = static_cast<uint32_t>(n_ubatch);
  cp.n_seq_max = static_cast<uint32_t>(n_seq);
  cp.n_threads = cp.n_threads_batch = int_option(argc, argv, "-t", 2);
  if (const char* fa = option(argc, argv, "-fa")) {
    cp.flash_attn_type = std::strcmp(fa, "on") == 0    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : std::strcmp(fa, "off") == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
  }
  cp.type_k = static_cast<decltype(cp.type_k)>(cache_type(option(argc, argv, "-ctk")));
  cp.type_v = static_cast<decltype(cp.type_v)>(cache_type(option(argc, argv, "-ctv")));
  s.ctx = llama_init_from_model(s.model, cp);
  if (s.ctx == nullptr) fail("llama.cpp refused the context");
  s.n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(s.model));
  return s;
}

int bench(int argc, char** argv) {
  const int p = int_option(argc, argv, "-p", 512), n = int_option(argc, argv, "-n", 128);
  const int r = std::max(1, int_option(argc, argv, "-r", 5));
  Session s = open_session(argc, argv, std::max(p, n) + 16, 2048, 512, 1);
  std::printf("n_prompt,n_gen,avg_ts\n");
  if (p > 0) {
    s.decode(p, 1, 0);
    double sum = 0;
    for (int i = 0; i < r; ++i) {
      s.clear();
      const double t0 = now_s();
      s.decode(p, 1, 0);
      sum += p / (now_s() - t0);
    }
    std::printf("%d,0,%.6f\n", p, sum / r);
  }
  if (n > 0) {
    s.clear();
    s.decode(1, 1, 0);
    double sum = 0;
    for (int i = 0; i < r; ++i) {
      s.clear();
      const double t0 = now_s();
      for (int g = 0; g < n; ++g) s.decode(1, 1, g);
      sum += n / (now_s() - t0);
    }
    std::printf("0,%d,%.6f\n", n, sum / r);
  }
  return 0;
}

int batched(int argc, char** argv) {
  const int npp = int_option(argc, argv, "-npp", 64), ntg = int_option(argc, argv, "-ntg", 32);
  const int npl = int_option(argc, argv, "-npl", 16), nb = int_option(argc, argv, "-b", 2048);
  Session s = open_session(argc, argv, int_option(argc, argv, "-c", 2048), nb,
                           int_option(argc, argv, "-ub", 512), npl);
  s.decode(16, 1, 0);  // warm-up
  s.clear();
  const double t0 = now_s();
  for (int seq = 0; seq < npl; ++seq) {
    for (int c0 = 0; c0 < npp; c0 += nb) {
      const int n = std::min(nb, npp - c0);
      llama_batch b = llama_batch_init(n, 0, 1);
      for (int i = 0; i < n; ++i) {
        b.token[i] = static_cast<llama_token>(s.rng() % static_cast<unsigned>(s.n_vocab));
        b.pos[i] = c0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = c0 + i == npp - 1;
      }
      b.n_tokens = n;
      if (llama_decode(s.ctx, b) != 0) fail("llama_decode failed (is -c at least npl x (npp + ntg)?)");
      llama_batch_free(b);
    }
  }
  llama_synchronize(s.ctx);
  const double t1 = now_s();
  for (int g = 0; g < ntg; ++g) s.decode(1, npl, npp + g);
  const double t_pp = t1 - t0, t_tg = now_s() - t1;
  std::printf(
      "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s "
      "|\n");
  std::printf(
      "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|"
      "\n");
  std::printf("| %5d | %6d | %4d | %6d | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n", npp, ntg, npl,
              npl * (npp + ntg), t_pp, npl * npp / t_pp, t_tg, npl * ntg / t_tg, t_pp + t_tg,
              npl * (npp + ntg) / (t_pp + t_tg));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "bench") == 0) return bench(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "batched") == 0) return batched(argc, argv);
  std::fprintf(stderr, "usage: %s bench|batched -m MODEL [options] (see bench/llamacpp_timing.cc)\n",
               argv[0]);
  return 2;
}
