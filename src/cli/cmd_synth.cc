// `ladder synth`: write a GGUF of a real architecture with random weights, or
// with the retrieval model's constructed weights (model/retrieval.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "common/paths.h"
#include "model/retrieval.h"
#include "model/synth.h"

namespace ladder::cli {
namespace {

struct SynthArgs {
  std::string preset;
  std::string arch = "llama";
  std::string out;
  std::string dtype = "f32";
  std::string vocab_from;
  bool builtin_vocab = false;
  uint64_t seed = 0;
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, ctx = 0;
  bool tied = false;
  int64_t sliding_window = 0;
  int64_t long_rope = 0;
};

int run_synth(const SynthArgs& a) {
  model::SynthOptions o;
  if (!a.preset.empty()) {
    auto preset = model::synth_preset(a.preset);
    if (!preset.is_ok()) {
      std::fprintf(stderr, "error: %s\n", preset.status().message().c_str());
      return 2;
    }
    o = *preset;
  }
  if (a.dim) o.dim = a.dim;
  if (a.layers) o.n_layers = a.layers;
  if (a.heads) o.n_heads = a.heads;
  if (a.kv_heads) o.n_kv_heads = a.kv_heads;
  else if (a.heads) o.n_kv_heads = a.heads;
  if (a.ffn) o.ffn_dim = a.ffn;
  if (a.vocab) o.n_vocab = a.vocab;
  if (a.ctx) o.context_length = a.ctx;
  if (a.tied) o.tied_output = true;
  o.sliding_window = a.sliding_window;
  o.long_rope_original_context = a.long_rope;
  o.seed = a.seed;
  o.arch = a.arch;
  auto type = tensor_type_from_name(a.dtype);
  if (!type) {
    std::fprintf(stderr, "error: unknown --dtype '%s' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k)\n",
                 a.dtype.c_str());
    return 2;
  }
  o.dtype = *type;
  if (!a.builtin_vocab) {
    o.vocab_from = a.vocab_from;
    if (o.vocab_from.empty()) {
      // The retrieval model defaults to a small real vocabulary (stories260K's
      // 512 tokens); random models to the 32,000-token Llama-2 one.
      const bool retrieval = o.weights == model::SynthWeights::kRetrieval;
      std::string vocab = shared_dir(LADDER_DEFAULT_SHARED_DIR) +
                          (retrieval ? "/models/stories260K.gguf" : "/tokenizers/ggml-vocab-llama-spm.gguf");
      std::error_code ec;
      if (std::filesystem::exists(vocab, ec)) o.vocab_from = vocab;
    }
  }
  std::fprintf(stderr, "synth: dim %lld, %lld layers, %lld heads (%lld kv), ffn %lld, ctx %lld, %s weights, vocab %s\n",
               static_cast<long long>(o.dim), static_cast<long long>(o.n_layers), static_cast<long long>(o.n_heads),
               static_cast<long long>(o.n_kv_heads), static_cast<long long>(o.ffn_dim),
               static_cast<long long>(o.context_length), std::string(tensor_type_name(o.dtype)).c_str(),
               o.vocab_from.empty() ? "built-in" : o.vocab_from.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  // Progress only on a terminal: logs and pipes get the summary lines alone.
  const bool tty = isatty(fileno(stderr)) != 0;
  Status st = model::write_synthetic_model(o, a.out, [tty](int done, int total, const std::string& name) {
    if (!tty) return;
    std::fprintf(stderr, "\rsynth: %d/%d tensors (%s)          ", done, total, name.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  });
  if (!st.is_ok()) {
    std::fprintf(stderr, "%serror: %s\n", tty ? "\n" : "", st.message().c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::error_code ec;
  const auto size = std::filesystem::file_size(a.out, ec);
  std::printf("wrote %s (%.1f MiB) in %.1f s\n", a.out.c_str(), static_cast<double>(size) / (1 << 20), secs);
  if (o.weights == model::SynthWeights::kRetrieval) {
    std::printf("retrieval model: previous-token head peaks at offset 1 by >= %.1f logits over offsets 0..%lld\n",
                model::retrieval_previous_token_gap(o.context_length), static_cast<long long>(o.context_length - 1));
  }
  return 0;
}

CommandRegistrar register_synth{"synth", 50, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<SynthArgs>();
  auto* cmd = app.add_subcommand("synth",
                                 "Write a GGUF of a real Llama-family architecture: random weights (benchmarks) or, with "
                                 "--preset retrieval, weights set by construction that retrieve (KV checks)");
  cmd->add_option("-o,--output", a->out, "Output GGUF path")->required();
  cmd->add_option("--preset", a->preset,
                  "Shapes: tiny (dim 128), 110m (dim 768, 12 layers, FFN 2048, vocab 32000), 1b (Llama-3.2-1B-like), "
                  "retrieval (constructed induction model: the next token is the one that followed the current "
                  "token's earlier occurrences; dim 256, 2 layers, 2 heads, 1 KV head by default: --dim, --layers, "
                  "--heads (dim / heads = 128), --kv-heads and --ffn add inert capacity, so it copies at a trained "
                  "model's per-token cost; ctx 4096 by default, up to 16384; vocabulary of "
                  "../shared/models/stories260K.gguf by default)")
      ->check(CLI::IsMember({"tiny", "110m", "1b", "retrieval"}));
  cmd->add_option("--arch", a->arch,
                  "Architecture, with llama.cpp's metadata keys and tensor names: llama; mistral (llama's tensors "
                  "under the name mistral, which Ladder serves but llama.cpp does not load: its Mistral files say "
                  "llama); qwen2 (adds Q, K and V biases; NeoX-style RoPE); qwen3 (adds per-head Q and K "
                  "RMSNorm weights; NeoX-style RoPE); phi3 (Q, K and V in one attn_qkv matrix, gate and up in one "
                  "ffn_up; NeoX-style RoPE); gemma2 (adds norms of the attention and FFN outputs, GELU FFN, "
                  "embedding scaled by sqrt(dim), soft caps 50 on attention scores and 30 on logits; tied output, "
                  "NeoX-style RoPE); gemma3 (gemma2's tensors plus per-head Q and K norms, no soft caps)")
      ->capture_default_str()
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(model::kSynthArchitectures),
                                                     std::end(model::kSynthArchitectures))));
  cmd->add_option("--dim", a->dim, "Embedding width (overrides the preset)");
  cmd->add_option("--layers", a->layers, "Transformer blocks");
  cmd->add_option("--heads", a->heads, "Attention heads");
  cmd->add_option("--kv-heads", a->kv_heads, "KV heads (GQA); defaults to --heads when --heads is given");
  cmd->add_option("--ffn", a->ffn, "Feed-forward width");
  cmd->add_option("--vocab", a->vocab, "Vocabulary size of the built-in vocabulary (ignored with --vocab-from)");
  cmd->add_option("--ctx", a->ctx, "Context length");
  cmd->add_option("--dtype", a->dtype, "Weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Random seed (retrieval: of the token codes)")->capture_default_str();
  cmd->add_flag("--tied", a->tied, "Share the output head with the token embedding");
  cmd->add_option("--long-rope", a->long_rope,
                  "phi3: write LongRoPE as Phi-3 128k models have it (rope_factors_short/long tensors, "
                  "rope.scaling.original_context_length = this, rope.scaling.attn_factor from --ctx / this)")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 20));
  cmd->add_option("--sliding-window", a->sliding_window,
                  "Write ARCH.attention.sliding_window: the sliding layers' queries see this many positions")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--vocab-from", a->vocab_from,
                  "Copy the tokenizer from this GGUF (default when present: ../shared/models/stories260K.gguf for "
                  "--preset retrieval, ../shared/tokenizers/ggml-vocab-llama-spm.gguf otherwise)");
  cmd->add_flag("--builtin-vocab", a->builtin_vocab, "Use the built-in byte-level vocabulary instead");
  return [a] { return run_synth(*a); };
}};

}  // namespace
}  // namespace ladder::cli
