#include "model/retrieval.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/synth_gguf.h"

namespace ladder::model {
namespace {

// The default shapes; every head is kHeadDim wide at any width.
constexpr int64_t kDim = 256, kHeads = 2, kKvHeads = 1, kHeadDim = 128, kFfn = 256;
constexpr int64_t kCode = 64;  // code length; codes are bits of one uint64_t
// Residual subspaces (retrieval.h).
constexpr int64_t kA = 0, kB = 64, kC = 128, kOne = 192;
constexpr double kRopeBase = 1e10;
constexpr int kPositionPairs = 20;           // rotary pairs 0..19 carry position (layer 0)
constexpr int64_t kContentDim0 = 64;         // head dims 64..127 (pairs 32..63) carry content (layer 1)
constexpr double kLeadShare = 0.45;          // pair 0's share of the positional score; the rest share alike
constexpr double kPrevTokenGap = 24.0;       // logits between offset 1 and any other offset
constexpr double kMatchLogit = 64.0;         // induction score of a matching code
constexpr double kOutputLogitPerUnit = 0.5;  // output logit per unit of code agreement
constexpr double kRmsEps = 1e-5;             // llama.attention.layer_norm_rms_epsilon, as written

// Pair i's inverse frequency exactly as a reader computes it (double, then
// rounded to float once).
double inv_freq(int i) {
  return static_cast<float>(std::pow(kRopeBase, -2.0 * i / static_cast<double>(kHeadDim)));
}

double position_share(int i) {
  return i == 0 ? kLeadShare : (1.0 - kLeadShare) / (kPositionPairs - 1);
}

// min over offsets d = 0..context-1, d != 1, of sum_i share_i (1 - cos(w_i (d - 1))):
// the previous-token score's gap as a fraction of its peak.
double min_gap_fraction(int64_t context_length) {
  double best = 2.0;
  for (int64_t d = 0; d < context_length; ++d) {
    if (d == 1) continue;
    double gap = 0;
    for (int i = 0; i < kPositionPairs; ++i) {
      gap += position_share(i) * (1.0 - std::cos(inv_freq(i) * static_cast<double>(d - 1)));
    }
    best = std::min(best, gap);
  }
  return best;
}

// RMS of a residual vector of `dim` with this sum of squares, as rms_norm
// divides by it.
double rms_of(double sum_sq, int64_t dim) {
  return std::sqrt(sum_sq / static_cast<double>(dim) + kRmsEps);
}

float code_value(uint64_t code, int64_t j) {
  return ((code >> j) & 1u) != 0 ? 1.0f : -1.0f;
}

// A dense [n_out][n_in] matrix being built.
struct Dense {
  int64_t n_in, n_out;
  std::vector<float> w;
  Dense(int64_t in, int64_t out) : n_in(in), n_out(out), w(static_cast<size_t>(in * out), 0.0f) {}
  float& at(int64_t out, int64_t in) { return w[static_cast<size_t>(out * n_in + in)]; }
  synth_gguf::RowFill rows() const {
    return [this](int64_t r, float* row) { std::copy_n(w.begin() + r * n_in, n_in, row); };
  }
};

// One block's attention; only query head 0 and KV head 0 are ever nonzero.
struct Layer {
  Dense wq, wk, wv, wo;
  explicit Layer(const SynthOptions& o)
      : wq(o.dim, o.dim), wk(o.dim, o.n_kv_heads * kHeadDim), wv(o.dim, o.n_kv_heads * kHeadDim), wo(o.dim, o.dim) {}
};

// Layer 0: the previous-token head (head 0). Its input is a token embedding:
// a code in A and 1 in kOne.
Layer previous_token_layer(const SynthOptions& o) {
  Layer L(o);
  const double rms = rms_of(kCode + 1, o.dim);
  const double peak = kPrevTokenGap / min_gap_fraction(kRetrievalMaxContext);
  for (int i = 0; i < kPositionPairs; ++i) {
    // q . k / sqrt(head_dim) = peak * share_i * cos(w_i (offset - 1)).
    const double amp = std::sqrt(peak * position_share(i) * std::sqrt(static_cast<double>(kHeadDim)));
    L.wq.at(2 * i, kOne) = static_cast<float>(amp * rms);
    L.wk.at(2 * i, kOne) = static_cast<float>(amp * std::cos(inv_freq(i)) * rms);
    L.wk.at(2 * i + 1, kOne) = static_cast<float>(amp * std::sin(inv_freq(i)) * rms);
  }
  for (int64_t j = 0; j < kCode; ++j) {
    L.wv.at(j, kA + j) = static_cast<float>(rms);  // v = the attended token's code
    L.wo.at(kB + j, j) = 1.0f;                     // into B
  }
  return L;
}

// Layer 1: the induction head (head 0). Its input holds codes in A and B.
Layer induction_layer(const SynthOptions& o) {
  Layer L(o);
  const double rms = rms_of(2 * kCode + 1, o.dim);
  // q . k / sqrt(head_dim) = lambda^2 (code . code) / sqrt(head_dim) = kMatchLogit on a match.
  const double lambda = std::sqrt(kMatchLogit / kCode * std::sqrt(static_cast<double>(kHeadDim)));
  for (int64_t j = 0; j < kCode; ++j) {
    L.wq.at(kContentDim0 + j, kA + j) = static_cast<float>(lambda * rms);
    L.wk.at(kContentDim0 + j, kB + j) = static_cast<float>(lambda * rms);
    L.wv.at(j, kA + j) = static_cast<float>(rms);
    L.wo.at(kC + j, j) = 1.0f;
  }
  return L;
}

Status check_options(const SynthOptions& o) {
  if (o.n_heads < 2 || o.dim != o.n_heads * kHeadDim || o.n_layers < 2 || o.n_kv_heads < 1 ||
      o.n_heads % o.n_kv_heads != 0 || o.ffn_dim < 1 || o.tied_output) {
    return invalid_argument(
        "the retrieval model needs heads of dim 128 (dim = 128 x heads, at least 2 heads), at least 2 layers, "
        "KV heads dividing the heads and a separate output head; its default is dim 256, 2 layers, 2 heads, "
        "1 KV head, FFN 256");
  }
  if (o.context_length < 16 || o.context_length > kRetrievalMaxContext) {
    return invalid_argument("the retrieval model's context must be 16.." +
                            std::to_string(kRetrievalMaxContext));
  }
  return Status::ok();
}

}  // namespace

SynthOptions retrieval_options() {
  SynthOptions o;
  o.weights = SynthWeights::kRetrieval;
  o.dim = kDim, o.n_layers = 2, o.n_heads = kHeads, o.n_kv_heads = kKvHeads, o.ffn_dim = kFfn;
  o.context_length = 4096;
  o.name = "ladder-synth-retrieval";
  return o;
}

double retrieval_previous_token_gap(int64_t context_length) {
  return kPrevTokenGap / min_gap_fraction(kRetrievalMaxContext) * min_gap_fraction(context_length);
}

Status write_retrieval_model(const SynthOptions& o, const std::string& path, const SynthProgress& progress) {
  LADDER_RETURN_IF_ERROR(check_options(o));
  gguf::GgufWriter w;
  LADDER_ASSIGN_OR_RETURN(const int64_t n_vocab, synth_gguf::add_vocabulary(w, o));
  synth_gguf::add_model_metadata(w, o, n_vocab, kRopeBase);
  w.set_string("ladder.synth.weights", "retrieval");
  w.set("ladder.synth.seed", gguf::Value::make_uint(gguf::ValueType::kUint64, o.seed));

  std::vector<uint64_t> codes(static_cast<size_t>(n_vocab));
  std::mt19937_64 rng(o.seed);
  for (uint64_t& c : codes) c = rng();
  const auto code = [&codes](int64_t t) { return codes[static_cast<size_t>(t)]; };

  const int total = 3 + 9 * static_cast<int>(o.n_layers);
  int done = 0;
  auto step = [&](const std::string& name, Status st) {
    if (st.is_ok() && progress) progress(++done, total, name);
    return st;
  };
  const int64_t dim = o.dim;
  const std::vector<float> ones(static_cast<size_t>(dim), 1.0f);
  auto embedding_row = [&](int64_t t, float* row) {  // the code in A, 1 in kOne
    std::fill_n(row, dim, 0.0f);
    for (int64_t j = 0; j < kCode; ++j) row[kA + j] = code_value(code(t), j);
    row[kOne] = 1.0f;
  };
  const double mu = kOutputLogitPerUnit * rms_of(3 * kCode + 1, dim);
  auto output_row = [&](int64_t t, float* row) {  // the code, read from C
    std::fill_n(row, dim, 0.0f);
    for (int64_t j = 0; j < kCode; ++j) row[kC + j] = static_cast<float>(mu * code_value(code(t), j));
  };
  LADDER_RETURN_IF_ERROR(step("token_embd.weight", synth_gguf::add_matrix(w, "token_embd.weight", o.dtype,
                                                                          dim, n_vocab, embedding_row)));
  // Blocks past the second, every FFN and every head but 0 are zero: inert
  // capacity that costs what a trained model of these shapes costs to run.
  const Dense zero_up(dim, o.ffn_dim), zero_down(o.ffn_dim, dim);
  const Layer layers[3] = {previous_token_layer(o), induction_layer(o), Layer(o)};
  for (int64_t l = 0; l < o.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const Layer& L = layers[std::min<int64_t>(l, 2)];
    auto matrix = [&](const std::string& name, const Dense& m) {
      return step(p + name, synth_gguf::add_matrix(w, p + name, o.dtype, m.n_in, m.n_out, m.rows()));
    };
    LADDER_RETURN_IF_ERROR(
        step(p + "attn_norm.weight", synth_gguf::add_vector(w, p + "attn_norm.weight", ones)));
    LADDER_RETURN_IF_ERROR(matrix("attn_q.weight", L.wq));
    LADDER_RETURN_IF_ERROR(matrix("attn_k.weight", L.wk));
    LADDER_RETURN_IF_ERROR(matrix("attn_v.weight", L.wv));
    LADDER_RETURN_IF_ERROR(matrix("attn_output.weight", L.wo));
    LADDER_RETURN_IF_ERROR(
        step(p + "ffn_norm.weight", synth_gguf::add_vector(w, p + "ffn_norm.weight", ones)));
    LADDER_RETURN_IF_ERROR(matrix("ffn_gate.weight", zero_up));
    LADDER_RETURN_IF_ERROR(matrix("ffn_up.weight", zero_up));
    LADDER_RETURN_IF_ERROR(matrix("ffn_down.weight", zero_down));
  }
  LADDER_RETURN_IF_ERROR(step("output_norm.weight", synth_gguf::add_vector(w, "output_norm.weight", ones)));
  LADDER_RETURN_IF_ERROR(
      step("output.weight", synth_gguf::add_matrix(w, "output.weight", o.dtype, dim, n_vocab, output_row)));
  return w.write(path);
}

}  // namespace ladder::model
