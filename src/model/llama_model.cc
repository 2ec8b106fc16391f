#include "model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <utility>
#include <string>
#include <vector>

#include "gguf/quant.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/hadamard.h"
#include "ops/kv_codec.h"
#include "ops/matmul.h"
#include "ops/packed_weights.h"

namespace ladder::model {

namespace {

// A weight matrix as stored in the file, plus the repacked copy the fastest
// kernel streams when the active SIMD target has one for its type.
struct Matrix {
  ops::WeightMatrix w;
  ops::PackedWeights packed;

  uint64_t bytes() const {
    if (!packed.empty()) return packed.bytes;
    return static_cast<uint64_t>(row_bytes(traits_of(w.type), static_cast<size_t>(w.n_in))) *
           static_cast<uint64_t>(w.n_out);
  }
};

void mul(const Matrix& m, const float* x, int64_t rows, float* y, ops::ThreadPool& pool) {
  ops::matmul(m.w, m.packed, x, rows, y, pool);
}

// Products of one input in a single dispatch: {matrix, output} pairs.
void mul_shared(std::initializer_list<std::pair<const Matrix*, float*>> products, const float* x, int64_t rows,
                ops::ThreadPool& pool) {
  ops::MatmulOutput outs[4];
  LADDER_CHECK(products.size() <= 4, "mul_shared: at most 4 products");
  size_t n = 0;
  for (const auto& [m, y] : products) outs[n++] = ops::MatmulOutput{&m->w, &m->packed, y};
  ops::matmul_group({outs, n}, x, rows, pool);
}

}  // namespace

struct LlamaModel::Weights {
  struct Layer {
    std::vector<float> attn_norm;  // [dim]
    Matrix wq;          // [q_dim][dim]
    Matrix wk;          // [kv_dim][dim]
    Matrix wv;          // [kv_dim][dim]
    Matrix wo;          // [dim][q_dim]
    std::vector<float> bq, bk, bv;  // [q_dim], [kv_dim], [kv_dim] (qwen2 only)
    std::vector<float> q_norm, k_norm;  // [head_dim] each (qwen3, gemma3)
    std::vector<float> post_attn_norm;  // [dim] (gemma2/3: of the attention output)
    std::vector<float> ffn_norm;   // [dim]
    Matrix w_gate;      // [ffn_dim][dim]
    Matrix w_up;        // [ffn_dim][dim]
    Matrix w_down;      // [dim][ffn_dim]
    std::vector<float> post_ffn_norm;  // [dim] (gemma2/3: of the FFN output)
  };
  ops::WeightMatrix token_embd;    // [n_vocab][dim]
  std::vector<Layer> layers;
  std::vector<float> output_norm;  // [dim]
  Matrix output;                   // [n_vocab][dim] (token_embd when tied)
};

namespace {

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<const gguf::TensorInfo*> find_tensor(const gguf::GgufFile& file, const std::string& name,
                                            std::vector<uint64_t> want_shape) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return invalid_argument("model tensor '" + name + "' is missing from " + file.path());
  if (t->shape != want_shape) {
    return invalid_argument("model tensor '" + name + "' has shape " + shape_string(t->shape) + ", expected " +
                            shape_string(want_shape) + " (ggml order)");
  }
  return t;
}

// A matrix [n_out][n_in]: stored with ggml shape {n_in, n_out}.
Result<Matrix> bind_matrix(const gguf::GgufFile& file, const std::string& name, int64_t n_in, int64_t n_out,
                           ops::ThreadPool& pool) {
  LADDER_ASSIGN_OR_RETURN(const gguf::TensorInfo* t,
                          find_tensor(file, name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}));
  Status supported = ops::check_matmul_support(t->type, n_in);
  if (!supported.is_ok()) return invalid_argument("model tensor '" + name + "': " + supported.message());
  Matrix m;
  m.w = ops::WeightMatrix{t->type, t->data, n_in, n_out};
  m.packed = ops::pack_weights(m.w, pool);
  return m;
}

// Rows [row0, row0 + n_out) of a matrix of n_total rows (a fused projection,
// e.g. phi3's attn_qkv): rows are contiguous in every weight type.
Result<Matrix> bind_rows(const gguf::GgufFile& file, const std::string& name, int64_t n_in, int64_t n_total,
                         int64_t row0, int64_t n_out, ops::ThreadPool& pool) {
  LADDER_ASSIGN_OR_RETURN(const gguf::TensorInfo* t,
                          find_tensor(file, name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_total)}));
  Status supported = ops::check_matmul_support(t->type, n_in);
  if (!supported.is_ok()) return invalid_argument("model tensor '" + name + "': " + supported.message());
  const size_t rb = row_bytes(traits_of(t->type), static_cast<size_t>(n_in));
  Matrix m;
  m.w = ops::WeightMatrix{t->type, static_cast<const uint8_t*>(t->data) + static_cast<size_t>(row0) * rb, n_in, n_out};
  m.packed = ops::pack_weights(m.w, pool);
  return m;
}

// Small vectors (norms, biases) are converted to F32 once at load.
Result<std::vector<float>> load_vector(const gguf::GgufFile& file, const std::string& name, int64_t n) {
  LADDER_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, find_tensor(file, name, {static_cast<uint64_t>(n)}));
  std::vector<float> out(static_cast<size_t>(n));
  Status st = gguf::dequantize_row(t->type, t->data, out.data(), static_cast<size_t>(n));
  if (!st.is_ok()) return invalid_argument("model tensor '" + name + "': " + st.message());
  return out;
}

}  // namespace

LlamaModel::LlamaModel(ModelConfig config) : config_(std::move(config)), weights_(std::make_unique<Weights>()) {}
LlamaModel::~LlamaModel() = default;

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(const gguf::GgufFile& file, int64_t serving_context) {
  LADDER_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::from_gguf(file));
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) return invalid_argument("model tensor 'token_embd.weight' is missing from " + file.path());
  if (embd->shape.size() != 2) return invalid_argument("model tensor 'token_embd.weight' must be 2-D");
  const auto vocab_from_embd = static_cast<int64_t>(embd->shape[1]);
  if (config.n_vocab == 0) config.n_vocab = vocab_from_embd;
  if (config.n_vocab != vocab_from_embd) {
    return invalid_argument("token_embd.weight has " + std::to_string(vocab_from_embd) +
                            " rows but the vocabulary has " + std::to_string(config.n_vocab) + " tokens");
  }

  // Per-pair factors that divide the RoPE frequencies: llama3's
  // rope_freqs.weight, or phi3's LongRoPE pair, of which llama.cpp uses the
  // long factors when the served context exceeds the original one and the
  // short factors otherwise (rope_freqs first when a file has both).
  const int64_t context = serving_context > 0 ? serving_context : config.context_length;
  const int64_t original = config.rope_original_context > 0 ? config.rope_original_context : config.context_length;
  const char* factors_name = nullptr;
  if (file.find_tensor("rope_freqs.weight") != nullptr) {
    factors_name = "rope_freqs.weight";
  } else if (file.find_tensor("rope_factors_long.weight") != nullptr ||
             file.find_tensor("rope_factors_short.weight") != nullptr) {
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
      if (file.find_tensor(name) == nullptr) {
        return invalid_argument(std::string("LongRoPE needs both rope_factors_long.weight and "
                                            "rope_factors_short.weight; ") + name + " is missing");
      }
    }
    factors_name = context > original ? "rope_factors_long.weight" : "rope_factors_short.weight";
  }
  if (factors_name != nullptr) {
    LADDER_ASSIGN_OR_RETURN(std::vector<float> factors, load_vector(file, factors_name, config.rope_dims / 2));
    for (size_t i = 0; i < factors.size(); ++i) {
      if (!(factors[i] > 0.0f)) return invalid_argument(std::string(factors_name) + " holds a non-positive factor");
      config.rope_inv_freq[i] /= factors[i];
    }
    config.rope_factors = factors_name;
  }

  auto model = std::unique_ptr<LlamaModel>(new LlamaModel(config));
  model->serving_context_ = serving_context;
  ops::ThreadPool pool(0);  // for repacking weights at load
  Weights& w = *model->weights_;
  const ModelConfig& c = model->config_;
  auto embd_type_ok = ops::check_matmul_support(embd->type, c.dim);
  if (!traits_of(embd->type).dequantizable) {
    return unimplemented("token_embd.weight has type " + std::string(tensor_type_name(embd->type)) +
                         ", which Ladder cannot read");
  }
  if (embd->shape[0] != static_cast<uint64_t>(c.dim)) {
    return invalid_argument("model tensor 'token_embd.weight' has shape " + shape_string(embd->shape) +
                            ", expected rows of " + std::to_string(c.dim) + " (ggml order)");
  }
  w.token_embd = ops::WeightMatrix{embd->type, embd->data, c.dim, c.n_vocab};

  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    Weights::Layer& L = w.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    LADDER_ASSIGN_OR_RETURN(L.attn_norm, load_vector(file, p + "attn_norm.weight", c.dim));
    if (c.fused_projections) {
      const std::string qkv = p + "attn_qkv.weight";
      const int64_t rows = c.q_dim() + 2 * c.kv_dim();
      LADDER_ASSIGN_OR_RETURN(L.wq, bind_rows(file, qkv, c.dim, rows, 0, c.q_dim(), pool));
      LADDER_ASSIGN_OR_RETURN(L.wk, bind_rows(file, qkv, c.dim, rows, c.q_dim(), c.kv_dim(), pool));
      LADDER_ASSIGN_OR_RETURN(L.wv, bind_rows(file, qkv, c.dim, rows, c.q_dim() + c.kv_dim(), c.kv_dim(), pool));
    } else {
      LADDER_ASSIGN_OR_RETURN(L.wq, bind_matrix(file, p + "attn_q.weight", c.dim, c.q_dim(), pool));
      LADDER_ASSIGN_OR_RETURN(L.wk, bind_matrix(file, p + "attn_k.weight", c.dim, c.kv_dim(), pool));
      LADDER_ASSIGN_OR_RETURN(L.wv, bind_matrix(file, p + "attn_v.weight", c.dim, c.kv_dim(), pool));
    }
    LADDER_ASSIGN_OR_RETURN(L.wo, bind_matrix(file, p + "attn_output.weight", c.q_dim(), c.dim, pool));
    if (c.qkv_bias) {
      LADDER_ASSIGN_OR_RETURN(L.bq, load_vector(file, p + "attn_q.bias", c.q_dim()));
      LADDER_ASSIGN_OR_RETURN(L.bk, load_vector(file, p + "attn_k.bias", c.kv_dim()));
      LADDER_ASSIGN_OR_RETURN(L.bv, load_vector(file, p + "attn_v.bias", c.kv_dim()));
    }
    if (c.qk_norm) {
      LADDER_ASSIGN_OR_RETURN(L.q_norm, load_vector(file, p + "attn_q_norm.weight", c.head_dim));
      LADDER_ASSIGN_OR_RETURN(L.k_norm, load_vector(file, p + "attn_k_norm.weight", c.head_dim));
    }
    LADDER_ASSIGN_OR_RETURN(L.ffn_norm, load_vector(file, p + "ffn_norm.weight", c.dim));
    if (c.fused_projections) {
      const std::string up = p + "ffn_up.weight";
      LADDER_ASSIGN_OR_RETURN(L.w_gate, bind_rows(file, up, c.dim, 2 * c.ffn_dim, 0, c.ffn_dim, pool));
      LADDER_ASSIGN_OR_RETURN(L.w_up, bind_rows(file, up, c.dim, 2 * c.ffn_dim, c.ffn_dim, c.ffn_dim, pool));
    } else {
      LADDER_ASSIGN_OR_RETURN(L.w_gate, bind_matrix(file, p + "ffn_gate.weight", c.dim, c.ffn_dim, pool));
      LADDER_ASSIGN_OR_RETURN(L.w_up, bind_matrix(file, p + "ffn_up.weight", c.dim, c.ffn_dim, pool));
    }
    LADDER_ASSIGN_OR_RETURN(L.w_down, bind_matrix(file, p + "ffn_down.weight", c.ffn_dim, c.dim, pool));
    if (c.post_norms) {
      LADDER_ASSIGN_OR_RETURN(L.post_attn_norm, load_vector(file, p + "post_attention_norm.weight", c.dim));
      LADDER_ASSIGN_OR_RETURN(L.post_ffn_norm, load_vector(file, p + "post_ffw_norm.weight", c.dim));
    }
  }
  LADDER_ASSIGN_OR_RETURN(w.output_norm, load_vector(file, "output_norm.weight", c.dim));
  if (file.find_tensor("output.weight") != nullptr) {
    LADDER_ASSIGN_OR_RETURN(w.output, bind_matrix(file, "output.weight", c.dim, c.n_vocab, pool));
  } else {
    if (!embd_type_ok.is_ok()) {
      return invalid_argument("tied output head: token_embd.weight: " + embd_type_ok.message());
    }
    w.output.w = w.token_embd;
    w.output.packed = ops::pack_weights(w.output.w, pool);
    model->config_.tied_output = true;
  }
  return model;
}

uint64_t LlamaModel::weight_bytes() const {
  auto bytes = [](const Matrix& m) { return m.bytes(); };
  uint64_t total = bytes(weights_->output);
  for (const auto& L : weights_->layers) {
    total += bytes(L.wq) + bytes(L.wk) + bytes(L.wv) + bytes(L.wo) + bytes(L.w_gate) + bytes(L.w_up) +
             bytes(L.w_down);
  }
  return total;
}

int64_t LlamaModel::logit_rows(std::span<const BatchSequence> batch) {
  int64_t rows = 0;
  for (const auto& s : batch) {
    if (s.logits == BatchSequence::Logits::kLast && !s.tokens.empty()) rows += 1;
    if (s.logits == BatchSequence::Logits::kAll) rows += static_cast<int64_t>(s.tokens.size());
  }
  return rows;
}

Status LlamaModel::forward(std::span<const BatchSequence> batch, const KvBuffers& kv, std::span<float> logits,
                           ops::ThreadPool& pool, std::span<float> hidden) const {
  return forward_layers(batch, kv, logits, pool, config_.n_layers, hidden);
}

Status LlamaModel::forward_layers(std::span<const BatchSequence> batch, const KvBuffers& kv, std::span<float> logits,
                                  ops::ThreadPool& pool, int64_t n_layers, std::span<float> hidden) const {
  const ModelConfig& c = config_;
  const Weights& w = *weights_;
  if (n_layers < 1 || n_layers > c.n_layers) {
    return invalid_argument("the forward pass can stop after 1 to " + std::to_string(c.n_layers) + " layers, not " +
                            std::to_string(n_layers));
  }
  if (kv.k.size() != static_cast<size_t>(n_layers) || kv.v.size() != static_cast<size_t>(n_layers)) {
    return invalid_argument("KV buffers have " + std::to_string(kv.k.size()) + " layers, the pass runs " +
                            std::to_string(n_layers));
  }
  const int block_size = kv.k[0].block_size;

  // Flatten the ragged batch: row t of every activation belongs to one
  // sequence at one position.
  std::vector<int32_t> ids;       // [T]
  std::vector<int32_t> pos;       // [T]
  std::vector<int64_t> seq_row0;  // first row of each sequence
  for (const auto& s : batch) {
    seq_row0.push_back(static_cast<int64_t>(ids.size()));
    const int64_t end = s.start_pos + static_cast<int64_t>(s.tokens.size());
    if (s.start_pos < 0 || end > c.context_length) {
      return out_of_range("sequence reaches position " + std::to_string(end) + " but the model's context is " +
                          std::to_string(c.context_length) + " tokens");
    }
    if (static_cast<int64_t>(s.block_table.size()) * block_size < end) {
      return invalid_argument("block table covers " + std::to_string(s.block_table.size() * block_size) +
                              " positions, the batch needs " + std::to_string(end));
    }
    if (!s.key_mass.empty() && static_cast<int64_t>(s.key_mass.size()) * block_size < end) {
      return invalid_argument("key mass covers " + std::to_string(s.key_mass.size()) + " blocks, the batch needs " +
                              std::to_string((end + block_size - 1) / block_size));
    }
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      const int32_t tok = s.tokens[i];
      if (tok < 0 || tok >= c.n_vocab) {
        return invalid_argument("token id " + std::to_string(tok) + " is outside the vocabulary of " +
                                std::to_string(c.n_vocab));
      }
      ids.push_back(tok);
      pos.push_back(static_cast<int32_t>(s.start_pos + static_cast<int64_t>(i)));
    }
  }
  const int64_t T = static_cast<int64_t>(ids.size());
  const int64_t n_logit_rows = logit_rows(batch);
  if (static_cast<int64_t>(logits.size()) < n_logit_rows * c.n_vocab) {
    return invalid_argument("logits buffer too small for the batch");
  }
  if (T == 0) return Status::ok();

  const int64_t dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), ffn = c.ffn_dim;
  // Activations live in one per-thread arena that only grows, so a warm
  // forward pass allocates (and page-faults) nothing.
  thread_local std::vector<float> arena;
  const size_t arena_size = static_cast<size_t>(T * (3 * dim + 2 * qd + 2 * kvd + 2 * ffn));
  if (arena.size() < arena_size) arena.resize(arena_size);
  float* next = arena.data();
  auto carve = [&next](int64_t n) {
    float* p = next;
    next += n;
    return p;
  };
  float* const x = carve(T * dim);     // [T][dim] residual stream
  float* const xn = carve(T * dim);    // [T][dim] normed
  float* const q = carve(T * qd);      // [T][n_heads][head_dim]
  float* const k = carve(T * kvd);     // [T][n_kv_heads][head_dim]
  float* const v = carve(T * kvd);
  float* const att = carve(T * qd);    // [T][n_heads][head_dim]
  float* const proj = carve(T * dim);  // [T][dim]
  float* const gate = carve(T * ffn);  // [T][ffn]
  float* const up = carve(T * ffn);    // [T][ffn]

  std::vector<ops::AttentionSeq> att_seqs;  // every sequence's rows, for one attention dispatch per layer
  for (size_t s = 0; s < batch.size(); ++s) {
    att_seqs.push_back({seq_row0[s], static_cast<int64_t>(batch[s].tokens.size()), batch[s].block_table.data(),
                        batch[s].key_mass.empty() ? nullptr : batch[s].key_mass.data()});
  }

  ops::embedding_lookup(w.token_embd, ids.data(), T, x);
  if (c.embed_scale != 1.0f) {
    for (int64_t i = 0; i < T * dim; ++i) x[i] *= c.embed_scale;
  }
  std::vector<const int32_t*> row_table(static_cast<size_t>(T));  // block table of each row's sequence
  for (const ops::AttentionSeq& s : att_seqs) {
    std::fill_n(row_table.begin() + s.row0, s.n_rows, s.block_table);
  }
  // Row-wise work (norms, biases, RoPE, KV stores, residual adds, SiLU):
  // every row on its own, so splitting rows over threads cannot change a
  // result. Small batches stay on this thread (a dispatch would cost more).
  constexpr int64_t kParallelElems = 4096;
  auto for_rows = [&](int64_t row_elems, const std::function<void(int64_t, int64_t)>& fn) {
    if (T * row_elems < kParallelElems) {
      fn(0, T);
    } else {
      pool.parallel_for(T, 1, fn);
    }
  };
  auto add_row = [](float* y, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
  };

  for (int64_t l = 0; l < n_layers; ++l) {
    const Weights::Layer& L = w.layers[static_cast<size_t>(l)];
    const ops::PagedKvLayer& kl = kv.k[static_cast<size_t>(l)];
    const ops::PagedKvLayer& vl = kv.v[static_cast<size_t>(l)];
    const float* inv_freq = c.layer_rope_inv_freq(l).data();
    const bool rotate_qk = ops::kv_dtype_rotated(kl.dtype), rotate_v = ops::kv_dtype_rotated(vl.dtype);
    // The previous layer's FFN output joins the residual stream here.
    for_rows(dim, [&](int64_t t0, int64_t t1) {
      if (l > 0) add_row(x + t0 * dim, proj + t0 * dim, (t1 - t0) * dim);
      ops::rms_norm(x + t0 * dim, L.attn_norm.data(), t1 - t0, dim, c.rms_eps, xn + t0 * dim);
    });
    mul_shared({{&L.wq, q}, {&L.wk, k}, {&L.wv, v}}, xn, T, pool);
    for_rows(qd + 2 * kvd, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float* qr = q + t * qd;
        float* kr = k + t * kvd;
        float* vr = v + t * kvd;
        if (!L.bq.empty()) {
          add_row(qr, L.bq.data(), qd);
          add_row(kr, L.bk.data(), kvd);
          add_row(vr, L.bv.data(), kvd);
        }
        if (!L.q_norm.empty()) {  // each head on its own
          ops::rms_norm(qr, L.q_norm.data(), c.n_heads, c.head_dim, c.rms_eps, qr);
          ops::rms_norm(kr, L.k_norm.data(), c.n_kv_heads, c.head_dim, c.rms_eps, kr);
        }
        const int32_t p = pos[static_cast<size_t>(t)];
        ops::rope(qr, static_cast<int>(c.n_heads), static_cast<int>(c.head_dim), static_cast<int>(c.rope_dims), p,
                  inv_freq, c.rope_style, c.rope_attn_factor);
        ops::rope(kr, static_cast<int>(c.n_kv_heads), static_cast<int>(c.head_dim), static_cast<int>(c.rope_dims),
                  p, inv_freq, c.rope_style, c.rope_attn_factor);
        if (rotate_qk) {  // the scores are unchanged; the cache holds rotated keys
          ops::hadamard_rotate(qr, c.n_heads, c.head_dim);
          ops::hadamard_rotate(kr, c.n_kv_heads, c.head_dim);
        }
        if (rotate_v) ops::hadamard_rotate(vr, c.n_kv_heads, c.head_dim);
        ops::kv_store(kl, row_table[static_cast<size_t>(t)], p, kr);
        ops::kv_store(vl, row_table[static_cast<size_t>(t)], p, vr);
      }
    });
    // Blocks this step filled are sealed (quantized) once all their tokens
    // are stored, before any query reads them (a no-op in unstaged formats).
    for_rows(kvd, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        ops::kv_seal(kl, row_table[static_cast<size_t>(t)], pos[static_cast<size_t>(t)]);
        ops::kv_seal(vl, row_table[static_cast<size_t>(t)], pos[static_cast<size_t>(t)]);
      }
    });
    ops::attention_batch(q, pos.data(), att_seqs, static_cast<int>(c.n_heads), kl, vl, c.attn_scale, att, pool,
                         {c.layer_window(l), c.attn_softcap});
    if (rotate_v) {  // rotated values gave a rotated output; H is its own inverse
      for_rows(qd, [&](int64_t t0, int64_t t1) {
        ops::hadamard_rotate(att + t0 * qd, (t1 - t0) * c.n_heads, c.head_dim);
      });
    }
    mul(L.wo, att, T, proj, pool);
    for_rows(dim, [&](int64_t t0, int64_t t1) {
      if (!L.post_attn_norm.empty()) {
        ops::rms_norm(proj + t0 * dim, L.post_attn_norm.data(), t1 - t0, dim, c.rms_eps, proj + t0 * dim);
      }
      add_row(x + t0 * dim, proj + t0 * dim, (t1 - t0) * dim);
      ops::rms_norm(x + t0 * dim, L.ffn_norm.data(), t1 - t0, dim, c.rms_eps, xn + t0 * dim);
    });
    mul_shared({{&L.w_gate, gate}, {&L.w_up, up}}, xn, T, pool);
    // Row by row: an element's result must not depend on where the batch
    // puts it relative to vector-width boundaries (batch invariance).
    for_rows(ffn, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        ops::gated_activation(c.ffn_activation, gate + t * ffn, up + t * ffn, ffn, up + t * ffn);
      }
    });
    mul(L.w_down, up, T, proj, pool);
    if (!L.post_ffn_norm.empty()) {
      for_rows(dim, [&](int64_t t0, int64_t t1) {
        ops::rms_norm(proj + t0 * dim, L.post_ffn_norm.data(), t1 - t0, dim, c.rms_eps, proj + t0 * dim);
      });
    }
  }
  add_row(x, proj, T * dim);  // the last layer's FFN output

  // Hidden states, where asked for: the final norm of every token's row.
  int64_t n_hidden = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    if (batch[s].logits != BatchSequence::Logits::kHidden) continue;
    const auto n = static_cast<int64_t>(batch[s].tokens.size());
    if (static_cast<int64_t>(hidden.size()) < (n_hidden + n) * dim) {
      return invalid_argument("hidden-state buffer too small for the batch");
    }
    ops::rms_norm(x + seq_row0[s] * dim, w.output_norm.data(), n, dim, c.rms_eps, hidden.data() + n_hidden * dim);
    n_hidden += n;
  }

  // Only the rows that want logits go through the output head.
  std::vector<int64_t> rows;
  for (size_t s = 0; s < batch.size(); ++s) {
    const auto n = static_cast<int64_t>(batch[s].tokens.size());
    if (n == 0) continue;
    if (batch[s].logits == BatchSequence::Logits::kLast) rows.push_back(seq_row0[s] + n - 1);
    if (batch[s].logits == BatchSequence::Logits::kAll) {
      for (int64_t i = 0; i < n; ++i) rows.push_back(seq_row0[s] + i);
    }
  }
  if (rows.empty()) return Status::ok();
  const auto R = static_cast<int64_t>(rows.size());
  std::vector<float> selected(static_cast<size_t>(R * dim));
  for (int64_t r = 0; r < R; ++r) {
    std::copy_n(x + rows[static_cast<size_t>(r)] * dim, dim, selected.data() + r * dim);
  }
  std::vector<float> normed(selected.size());
  ops::rms_norm(selected.data(), w.output_norm.data(), R, dim, c.rms_eps, normed.data());
  mul(w.output, normed.data(), R, logits.data(), pool);
  if (c.final_softcap > 0.0f) {
    for (int64_t r = 0; r < R; ++r) ops::soft_cap(logits.data() + r * c.n_vocab, c.n_vocab, c.final_softcap);
  }
  return Status::ok();
}

}  // namespace ladder::model
