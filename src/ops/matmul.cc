// matmul(): picks the kernel family for the weight type, quantizes
// activations where the integer kernels are used, and splits output columns
// over the thread pool (never the reduction, so results do not depend on the
// thread count or on the batch).
#include "ops/matmul.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/check.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_simd.h"
#include "ops/packed_weights.h"

namespace ladder::ops {
namespace {

// Output columns per parallel_for grain: a multiple of every tile width.
constexpr int64_t kColGrain = 16;
// Weight rows dequantized at once on the slow path.
constexpr int64_t kDequantGroup = 16;

bool is_float_type(TensorType t) {
  return t == TensorType::kF32 || t == TensorType::kF16 || t == TensorType::kBF16;
}

bool has_int_kernel(TensorType t) {
  return t == TensorType::kQ8_0 || t == TensorType::kQ4_0 || t == TensorType::kQ4_K || t == TensorType::kQ6_K;
}

size_t weight_row_bytes(const WeightMatrix& w) {
  return row_bytes(traits_of(w.type), static_cast<size_t>(w.n_in));
}

// Activation scratch of the calling thread (the engine thread in practice).
struct ActScratch {
  std::vector<int8_t> xq;
  std::vector<uint8_t> xu;
  std::vector<float> xd;
  std::vector<float> xsum;
};

}  // namespace

Status check_matmul_support(TensorType type, int64_t n_in) {
  if (n_in <= 0) return invalid_argument("matmul: n_in must be positive, got " + std::to_string(n_in));
  int64_t block = 0;
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16: block = 1; break;
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1: block = 32; break;
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kQ8_K: block = kQK_K; break;
    default:
      return unimplemented("matmul: weights of type " + std::string(tensor_type_name(type)) +
                           " are not supported");
  }
  if (n_in % block != 0) {
    return invalid_argument("matmul: rows of " + std::string(tensor_type_name(type)) +
                            " weights need a multiple of " + std::to_string(block) + " elements, got " +
                            std::to_string(n_in));
  }
  return Status::ok();
}

namespace {

void matmul_impl(const WeightMatrix& w, const PackedWeights* packed, const float* x, int64_t rows, float* y,
                 ThreadPool& pool) {
  const Status st = check_matmul_support(w.type, w.n_in);
  LADDER_CHECK(st.is_ok(), st.to_string());
  if (rows <= 0 || w.n_out <= 0) return;

  detail::MatmulTask t;
  t.type = w.type;
  t.w = static_cast<const uint8_t*>(w.data);
  t.w_row_bytes = weight_row_bytes(w);
  t.n_in = w.n_in;
  t.rows = rows;
  t.x = x;
  t.y = y;
  t.y_stride = w.n_out;

  if (is_float_type(w.type)) {
    pool.parallel_for(w.n_out, kColGrain, [&](int64_t b, int64_t e) { detail::matmul_float_cols(t, b, e); });
    return;
  }
  if (has_int_kernel(w.type) && detail::has_int_kernels()) {
    thread_local ActScratch s;
    const int64_t nb = w.n_in / detail::kActBlock;
    s.xq.resize(static_cast<size_t>(rows * w.n_in));
    s.xu.resize(static_cast<size_t>(rows * w.n_in));
    s.xd.resize(static_cast<size_t>(rows * nb));
    s.xsum.resize(static_cast<size_t>(rows * nb));
    int8_t* xq = s.xq.data();
    uint8_t* xu = s.xu.data();
    float* xd = s.xd.data();
    float* xsum = s.xsum.data();
    // Each row is quantized on its own, so the split cannot change results.
    pool.parallel_for(rows, 4, [&](int64_t b, int64_t e) {
      detail::quantize_activations_simd(x + b * w.n_in, e - b, w.n_in, xq + b * w.n_in, xu + b * w.n_in,
                                        xd + b * nb, xsum + b * nb);
    });
    t.xq = xq;
    t.xu = xu;
    t.xd = xd;
    t.xsum = xsum;
    if (packed != nullptr) {
      const uint8_t* pd = packed->data.get();
      pool.parallel_for(w.n_out, kColGrain,
                        [&](int64_t b, int64_t e) { detail::matmul_packed_q8_0_cols(t, pd, b, e); });
      return;
    }
    pool.parallel_for(w.n_out, kColGrain, [&](int64_t b, int64_t e) { detail::matmul_int_cols(t, b, e); });
    return;
  }
  // Types without a fast kernel: dequantize a few weight rows at a time into
  // F32 and run the float kernel on them. Each y[r][o] is still the float
  // kernel's dot product of row o and x[r], whatever the grouping.
  pool.parallel_for(w.n_out, kColGrain, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> scratch;
    for (int64_t o = b; o < e; o += kDequantGroup) {
      const int64_t g = std::min(kDequantGroup, e - o);
      scratch.resize(static_cast<size_t>(g * w.n_in));
      for (int64_t i = 0; i < g; ++i) {
        detail::dequantize_row_scalar(w.type, t.w + (o + i) * t.w_row_bytes, scratch.data() + i * w.n_in,
                                      w.n_in);
      }
      detail::MatmulTask s = t;
      s.type = TensorType::kF32;
      s.w = reinterpret_cast<const uint8_t*>(scratch.data());
      s.w_row_bytes = static_cast<size_t>(w.n_in) * sizeof(float);
      s.y = y + o;
      detail::matmul_float_cols(s, 0, g);
    }
  });
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool) {
  matmul_impl(w, nullptr, x, rows, y, pool);
}

void matmul(const WeightMatrix& w, const PackedWeights& packed, const float* x, int64_t rows, float* y,
            ThreadPool& pool) {
  bool use = false;
  if (!packed.empty()) {
    LADDER_CHECK(packed.type == w.type && packed.n_in == w.n_in && packed.n_out == w.n_out,
                 "matmul: packed weights describe another matrix");
    use = detail::dispatched_target() == packed.target && detail::has_packed_q8_0();
  }
  matmul_impl(w, use ? &packed : nullptr, x, rows, y, pool);
}

void embedding_lookup(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) {
  const Status st = check_matmul_support(table.type, table.n_in);
  LADDER_CHECK(st.is_ok(), st.to_string());
  const size_t rb = weight_row_bytes(table);
  const auto* base = static_cast<const uint8_t*>(table.data);
  for (int64_t i = 0; i < n; ++i) {
    LADDER_CHECK(ids[i] >= 0 && ids[i] < table.n_out, "embedding_lookup: token id out of range");
    detail::dequantize_row_scalar(table.type, base + static_cast<size_t>(ids[i]) * rb, out + i * table.n_in,
                                  table.n_in);
  }
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t rows, float* y) {
  const Status st = check_matmul_support(w.type, w.n_in);
  LADDER_CHECK(st.is_ok(), st.to_string());
  const size_t rb = weight_row_bytes(w);
  std::vector<float> wrow(static_cast<size_t>(w.n_in));
  for (int64_t o = 0; o < w.n_out; ++o) {
    detail::dequantize_row_scalar(w.type, static_cast<const uint8_t*>(w.data) + o * rb, wrow.data(), w.n_in);
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0.0;
      for (int64_t k = 0; k < w.n_in; ++k) acc += static_cast<double>(wrow[k]) * x[r * w.n_in + k];
      y[r * w.n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace ladder::ops
