// matmul(): picks the kernel family for the weight type, quantizes
// activations where the integer kernels are used, and splits output columns
// over the thread pool (never the reduction, so results do not depend on the
// thread count or on the batch).
#include "ops/matmul.h"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "common/check.h"
#include "gguf/quant.h"
#include "ops/amx.h"
#include "ops/kernel_choice.h"
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
  std::vector<int32_t> xq_sums32;  // [rows][n_in / 32], only for packed Q4_0
  std::vector<int32_t> xq_sums16;  // [rows][n_in / 16], only for packed Q6_K
  std::vector<int8_t> xq_tiles;    // AMX-INT8 products: MatmulTask::xq_tiles,
  std::vector<float> xd_tiles;     // xd_tiles and xsum_tiles
  std::vector<float> xsum_tiles;
  // AMX-BF16 and BF16 dot products: x as bf16 hi and lo parts, [rows padded
  // to 16][n_in padded to 32].
  std::vector<uint16_t> xh, xl;
};

// sum(xq) of every run of `group` elements (n a multiple of it): the offset
// of the packed Q4_0 (group 32) and Q6_K (16) kernels.
void group_sums(const int8_t* xq, int64_t n, int64_t group, int32_t* out) {
  for (int64_t i = 0; i < n / group; ++i) {
    int32_t s = 0;
    for (int64_t j = 0; j < group; ++j) s += xq[i * group + j];
    out[i] = s;
  }
}

}  // namespace

void detail::dequantize_row_scalar(TensorType type, const void* src, float* dst, int64_t n) {
  // The gguf module's reference dequantizer: the one definition of what
  // every block format means, for the slow path and the tests alike.
  const Status st = gguf::dequantize_row(type, src, dst, static_cast<size_t>(n));
  LADDER_CHECK(st.is_ok(), st.to_string());
}

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

// How one product of a call runs.
enum class Path { kFloat, kFloatPacked, kInt, kPacked, kAmxBf16, kBf16Dot, kDequant };

struct Product {
  detail::MatmulTask t;
  Path path = Path::kFloat;
  const uint8_t* packed = nullptr;
  // Packed Q4_0 and Q6_K: sum(xq) per row and detail::packed_sum_group().
  const int32_t* xq_sums = nullptr;
  // Packed: whole tiles of 16 rows that AMX computes (the rest on vectors).
  int64_t amx_row_tiles = 0;
  // AMX-BF16 and the BF16 dot: the activations' bf16 parts (ActScratch::xh, xl).
  const uint16_t* xh = nullptr;
  const uint16_t* xl = nullptr;
  int64_t col0 = 0;  // first column in the call's combined column space
};

bool use_packed(const WeightMatrix& w, const PackedWeights* packed) {
  if (packed == nullptr || packed->empty()) return false;
  LADDER_CHECK(packed->type == w.type && packed->n_in == w.n_in && packed->n_out == w.n_out,
               "matmul: packed weights describe another matrix");
  if (detail::dispatched_target() != packed->target) return false;
  switch (packed->layout) {
    case PackedLayout::kAmxBf16: return detail::has_amx_bf16_kernels();
    case PackedLayout::kBf16Dot: return detail::has_bf16_dot_kernels();
    case PackedLayout::kFloatChunks: return detail::has_float_packed();
    case PackedLayout::kColumns16: break;
  }
  return detail::has_packed(w.type);
}

// Packed products: AMX tiles for the first 16 * amx_row_tiles rows, the
// vector kernel for the rest (bit-identical, so the split is free).
void run_packed_cols(const Product& p, int64_t o_begin, int64_t o_end) {
  const int64_t amx_rows = p.amx_row_tiles * detail::kAmxTileRows;
  if (amx_rows > 0) detail::matmul_amx_cols(p.t, p.packed, o_begin, o_end, p.amx_row_tiles);
  if (amx_rows == p.t.rows) return;
  detail::MatmulTask rest = p.t;
  const int64_t nb = rest.n_in / detail::kActBlock;
  rest.rows -= amx_rows;
  rest.xq += amx_rows * rest.n_in;
  rest.xu += amx_rows * rest.n_in;
  rest.xd += amx_rows * nb;
  rest.xsum += amx_rows * nb;
  rest.y += amx_rows * rest.y_stride;
  const int64_t group = detail::packed_sum_group(rest.type);
  const int32_t* sums = p.xq_sums == nullptr ? nullptr : p.xq_sums + amx_rows * (rest.n_in / group);
  detail::matmul_packed_cols(rest, p.packed, sums, o_begin, o_end);
}

// Columns [o_begin, o_end) of one product, every row.
void run_cols(const Product& p, int64_t o_begin, int64_t o_end) {
  const detail::MatmulTask& t = p.t;
  switch (p.path) {
    case Path::kFloat: detail::matmul_float_cols(t, o_begin, o_end); return;
    case Path::kFloatPacked: detail::matmul_float_packed_cols(t, p.packed, o_begin, o_end); return;
    case Path::kInt: detail::matmul_int_cols(t, o_begin, o_end); return;
    case Path::kPacked: run_packed_cols(p, o_begin, o_end); return;
    case Path::kAmxBf16: detail::matmul_amx_bf16_cols(t, p.packed, p.xh, p.xl, o_begin, o_end); return;
    case Path::kBf16Dot: detail::matmul_bf16_dot_cols(t, p.packed, p.xh, p.xl, o_begin, o_end); return;
    case Path::kDequant: break;
  }
  // Types without a fast kernel: dequantize a few weight rows at a time into
  // F32 and run the float kernel on them. Each y[r][o] is still the float
  // kernel's dot product of row o and x[r], whatever the grouping.
  thread_local std::vector<float> scratch;
  for (int64_t o = o_begin; o < o_end; o += kDequantGroup) {
    const int64_t g = std::min(kDequantGroup, o_end - o);
    scratch.resize(static_cast<size_t>(g * t.n_in));
    for (int64_t i = 0; i < g; ++i) {
      detail::dequantize_row_scalar(t.type, t.w + (o + i) * t.w_row_bytes, scratch.data() + i * t.n_in, t.n_in);
    }
    detail::MatmulTask s = t;
    s.type = TensorType::kF32;
    s.w = reinterpret_cast<const uint8_t*>(scratch.data());
    s.w_row_bytes = static_cast<size_t>(t.n_in) * sizeof(float);
    s.y = t.y + o;
    detail::matmul_float_cols(s, 0, g);
  }
}

}  // namespace

void matmul_group(std::span<const MatmulOutput> outs, const float* x, int64_t rows, ThreadPool& pool) {
  if (outs.empty() || rows <= 0) return;
  const int64_t n_in = outs[0].w->n_in;
  thread_local std::vector<Product> products;
  products.clear();
  const KernelChoice& choice = kernel_choice();
  const int64_t amx_row_tiles = amx_int8_active() ? rows / detail::kAmxTileRows : 0;
  bool quantize = false;
  bool split_bf16 = false;
  bool need_sums32 = false;
  bool need_sums16 = false;
  int64_t cols = 0;
  for (const MatmulOutput& out : outs) {
    const WeightMatrix& w = *out.w;
    const Status st = check_matmul_support(w.type, w.n_in);
    LADDER_CHECK(st.is_ok(), st.to_string());
    LADDER_CHECK(w.n_in == n_in, "matmul_group: every product must read rows of the same length");
    Product p;
    p.t.type = w.type;
    p.t.w = static_cast<const uint8_t*>(w.data);
    p.t.w_row_bytes = weight_row_bytes(w);
    p.t.n_in = w.n_in;
    p.t.rows = rows;
    p.t.x = x;
    p.t.y = out.y;
    p.t.y_stride = w.n_out;
    p.t.stream = stream_for(choice, w.type);
    // Q5_K has a packed kernel but no unpacked integer one: unpacked, or on
    // a target without the packed kernel, it dequantizes.
    const bool packed = use_packed(w, out.packed);
    const PackedLayout layout = packed ? out.packed->layout : PackedLayout::kColumns16;
    if (is_float_type(w.type) && packed &&
        (layout == PackedLayout::kAmxBf16 || layout == PackedLayout::kBf16Dot)) {
      // Packed for tiles or for the dot kernel: every batch size.
      p.path = layout == PackedLayout::kAmxBf16 ? Path::kAmxBf16 : Path::kBf16Dot;
      p.packed = out.packed->data.data();
      split_bf16 = true;
    } else if (is_float_type(w.type) && packed) {
      p.path = Path::kFloatPacked;
      p.packed = out.packed->data.data();
    } else if (is_float_type(w.type)) {
      p.path = Path::kFloat;
    } else if (packed || (has_int_kernel(w.type) && detail::has_int_kernels())) {
      p.path = packed ? Path::kPacked : Path::kInt;
      if (p.path == Path::kPacked) {
        p.packed = out.packed->data.data();
        p.amx_row_tiles = amx_row_tiles;
        need_sums32 |= detail::packed_sum_group(w.type) == 32;
        need_sums16 |= detail::packed_sum_group(w.type) == 16;
      }
      quantize = true;
    } else {
      p.path = Path::kDequant;
    }
    // Each product's columns start on a grain boundary of the combined space.
    p.col0 = cols;
    cols += (w.n_out + kColGrain - 1) / kColGrain * kColGrain;
    products.push_back(p);
  }
  thread_local ActScratch scratch;  // the caller's; workers see it through `s`
  ActScratch& s = scratch;
  if (quantize) {
    // Once for every product; each row is quantized on its own, so the split
    // cannot change results.
    const int64_t nb = n_in / detail::kActBlock;
    s.xq.resize(static_cast<size_t>(rows * n_in));
    s.xu.resize(static_cast<size_t>(rows * n_in));
    s.xd.resize(static_cast<size_t>(rows * nb));
    s.xsum.resize(static_cast<size_t>(rows * nb));
    if (need_sums32) s.xq_sums32.resize(static_cast<size_t>(rows * (n_in / 32)));
    if (need_sums16) s.xq_sums16.resize(static_cast<size_t>(rows * (n_in / 16)));
    pool.parallel_for(rows, 4, [&](int64_t b, int64_t e) {
      detail::quantize_activations_simd(x + b * n_in, e - b, n_in, s.xq.data() + b * n_in, s.xu.data() + b * n_in,
                                        s.xd.data() + b * nb, s.xsum.data() + b * nb);
      const int8_t* xq = s.xq.data() + b * n_in;
      if (need_sums32) group_sums(xq, (e - b) * n_in, 32, s.xq_sums32.data() + b * (n_in / 32));
      if (need_sums16) group_sums(xq, (e - b) * n_in, 16, s.xq_sums16.data() + b * (n_in / 16));
    });
    bool amx = false;
    for (const Product& p : products) amx |= p.amx_row_tiles > 0;
    if (amx) {
      const int64_t tiled_rows = amx_row_tiles * detail::kAmxTileRows;
      s.xq_tiles.resize(static_cast<size_t>(tiled_rows * n_in));
      s.xd_tiles.resize(static_cast<size_t>(tiled_rows * nb));
      s.xsum_tiles.resize(static_cast<size_t>(tiled_rows * nb));
      const detail::ActTiles tiles{s.xq_tiles.data(), s.xd_tiles.data(), s.xsum_tiles.data()};
      pool.parallel_for(amx_row_tiles, 1, [&](int64_t b, int64_t e) {
        detail::tile_activations(s.xq.data(), s.xd.data(), s.xsum.data(), n_in, b, e, tiles);
      });
    }
    for (Product& p : products) {
      p.t.xq_tiles = s.xq_tiles.data();
      p.t.xd_tiles = s.xd_tiles.data();
      p.t.xsum_tiles = s.xsum_tiles.data();
      p.t.xq = s.xq.data();
      p.t.xu = s.xu.data();
      p.t.xd = s.xd.data();
      p.t.xsum = s.xsum.data();
      if (p.path != Path::kPacked) continue;
      const int64_t group = detail::packed_sum_group(p.t.type);
      if (group == 32) p.xq_sums = s.xq_sums32.data();
      if (group == 16) p.xq_sums = s.xq_sums16.data();
    }
  }
  if (split_bf16) {
    const int64_t stride = detail::bf16_act_stride(n_in);
    const int64_t padded_rows = (rows + 15) / 16 * 16;
    s.xh.resize(static_cast<size_t>(padded_rows * stride));
    s.xl.resize(s.xh.size());
    pool.parallel_for(rows, 4, [&](int64_t b, int64_t e) {
      detail::split_activations_bf16(x + b * n_in, e - b, n_in, s.xh.data() + b * stride, s.xl.data() + b * stride);
    });
    // Zero padding rows of a last partial 16-row tile: their sums are
    // computed and dropped. (A batch of at most 16 rows uses tiles of its
    // own height.)
    if (rows > 16) {
      std::fill(s.xh.begin() + rows * stride, s.xh.end(), uint16_t{0});
      std::fill(s.xl.begin() + rows * stride, s.xl.end(), uint16_t{0});
    }
    for (Product& p : products) {
      if (p.path != Path::kAmxBf16 && p.path != Path::kBf16Dot) continue;
      p.xh = s.xh.data();
      p.xl = s.xl.data();
    }
  }
  // Workers reach the caller's thread_local list through this span.
  const std::span<const Product> all(products);
  pool.parallel_for(cols, kColGrain, [&](int64_t b, int64_t e) {
    for (const Product& p : all) {
      const int64_t lo = std::max(b, p.col0) - p.col0;
      const int64_t hi = std::min(e, p.col0 + p.t.y_stride) - p.col0;
      if (lo < hi) run_cols(p, lo, hi);
    }
  });
}

void matmul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool) {
  const MatmulOutput out{&w, nullptr, y};
  matmul_group({&out, 1}, x, rows, pool);
}

void matmul(const WeightMatrix& w, const PackedWeights& packed, const float* x, int64_t rows, float* y,
            ThreadPool& pool) {
  const MatmulOutput out{&w, &packed, y};
  matmul_group({&out, 1}, x, rows, pool);
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
