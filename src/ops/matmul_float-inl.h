// Per-target float matmul kernels (F32, F16 and BF16 weights against F32
// activations), on the stored layout and on the packed float layout,
// compiled once per Highway target through matmul_simd.cc. They share the
// tiling driver and its batch-invariance contract with the integer kernels
// (matmul-inl.h).

#if defined(LADDER_OPS_MATMUL_FLOAT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_FLOAT_INL_H_
#undef LADDER_OPS_MATMUL_FLOAT_INL_H_
#else
#define LADDER_OPS_MATMUL_FLOAT_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/half.h"
#include "common/sanitizers.h"
#include "common/tensor_type.h"
#include "hwy/highway.h"
#include "ops/matmul-inl.h"
#include "ops/matmul_internal.h"
#include "ops/target_features.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
// The same target features as matmul-inl.h, whose tiling driver inlines here.
LADDER_TARGET_FEATURES_PUSH("avx512vnni")
#endif
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------------------
// Float kernels: F32, F16 and BF16 weights against F32 activations.

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Storage element of a float weight type: float, or raw F16/BF16 bits.
template <TensorType kType>
using WeightElem = std::conditional_t<kType == TensorType::kF32, float, uint16_t>;

// Under ThreadSanitizer a weight load is a call that the sanitizer does not
// instrument: weights are written once, before any matmul reads them, so a
// race on them cannot happen, and checking every 64-byte load of them
// (__tsan_read_range) was about half of the range checks that took a quarter
// of the sanitized server suite's time (decode on stories260K about 10% faster
// without, in paired runs). Activations and outputs stay checked.
#if LADDER_TSAN
#define LADDER_WEIGHT_LOAD HWY_NOINLINE __attribute__((no_sanitize_thread))
#else
#define LADDER_WEIGHT_LOAD HWY_INLINE
#endif

template <TensorType kType>
LADDER_WEIGHT_LOAD VF load_weights(DF d, const WeightElem<kType>* p) {
  if constexpr (kType == TensorType::kF32) {
    return hn::LoadU(d, p);
  } else if constexpr (kType == TensorType::kF16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  } else {
    const hn::Rebind<hwy::bfloat16_t, DF> db;
    return hn::PromoteTo(d, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(p)));
  }
}

template <TensorType kType>
HWY_INLINE float weight_to_f32(WeightElem<kType> v) {
  if constexpr (kType == TensorType::kF32) {
    return v;
  } else if constexpr (kType == TensorType::kF16) {
    return f16_to_f32(v);
  } else {
    return bf16_to_f32(v);
  }
}

// Rows/columns per float tile: 4x4 accumulators with 32 vector registers
// (AVX-512), 4x2 with 16.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr int kFloatCols = 4;
#else
inline constexpr int kFloatCols = 2;
#endif
inline constexpr int kFloatRows = 4;

// Float weights packed for decode (PackFloatGroups): per group of kFloatCols
// output columns, per chunk of Lanes(float) elements of a row, the group's C
// chunks one after another (columns past n_out and elements past n_in are
// zeros). A tile then streams one contiguous run of memory instead of C rows
// at once, and does the same arithmetic in the same order as on the stored
// layout: the results are the same bits.
HWY_INLINE size_t float_chunk() { return hn::Lanes(DF()); }

// Exported: bytes of the packed layout of an n_out x n_in float matrix.
size_t FloatPackedBytes(TensorType type, int64_t n_in, int64_t n_out) {
  const size_t elem = type == TensorType::kF32 ? sizeof(float) : sizeof(uint16_t);
  const size_t chunk = float_chunk();
  const size_t chunks = (static_cast<size_t>(n_in) + chunk - 1) / chunk;
  const size_t cols = static_cast<size_t>((n_out + kFloatCols - 1) / kFloatCols * kFloatCols);
  return cols * chunks * chunk * elem;
}

// kHint >= 0: a one-row (decode) call prefetches each column's weights
// t.stream.distance bytes ahead with that locality (ops/kernel_choice.h).
// kPacked: reads `packed` (the layout above), else the stored layout (t.w).
// A compile-time choice: the packed chunk stride is then a constant, so the
// decode loop issues its prefetches unrolled (a runtime stride left a
// branchy prefetch loop in the loop body).
template <TensorType kType, int kHint, bool kPacked>
struct FloatTile {
  using WT = WeightElem<kType>;
  const detail::MatmulTask& t;
  const WT* packed = nullptr;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kFloatCols;
    const DF d;
    const size_t N = hn::Lanes(d);
    const size_t n = static_cast<size_t>(t.n_in);
    const float* xr[R];
    const WT* wc[C];
    // Elements between a column's consecutive chunks of N.
    const size_t stride = kPacked ? C * N : N;
    for (int i = 0; i < R; ++i) xr[i] = t.x + r_idx[i] * t.n_in;
    if constexpr (!kPacked) {
      for (int c = 0; c < C; ++c) wc[c] = reinterpret_cast<const WT*>(t.w + o_idx[c] * t.w_row_bytes);
    } else {
      const WT* group = packed + static_cast<size_t>(o_idx[0] / C) * C * ((n + N - 1) / N) * N;
      for (int c = 0; c < C; ++c) wc[c] = group + c * N;
    }
    VF acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = hn::Zero(d);
    size_t k = 0, kw = 0;  // kw: k's chunk, in elements of wc[c]
    const size_t ahead = static_cast<size_t>(t.stream.distance) / sizeof(WT);
    for (; k + N <= n; k += N, kw += stride) {
      VF wv[C];
      if constexpr (kHint >= 0) {
        if constexpr (!kPacked) {
          for (int c = 0; c < C; ++c) __builtin_prefetch(wc[c] + kw + ahead, 0, kHint);
        } else {  // the group's chunks are one run: each of its lines once
          const char* line = reinterpret_cast<const char*>(wc[0] + kw + ahead);
          constexpr size_t kRunBytes = C * hn::MaxLanes(DF()) * sizeof(WT);
          for (size_t b = 0; b < kRunBytes; b += 64) {
            __builtin_prefetch(line + b, 0, kHint);
          }
        }
      }
      for (int c = 0; c < C; ++c) wv[c] = load_weights<kType>(d, wc[c] + kw);
      for (int i = 0; i < R; ++i) {
        const VF xv = hn::LoadU(d, xr[i] + k);
        for (int c = 0; c < C; ++c) acc[i][c] = hn::MulAdd(xv, wv[c], acc[i][c]);
      }
    }
    if (k < n) {  // tail: zero-padded copies, then the same fused multiply-add
      HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
      VF wv[C];
      for (int c = 0; c < C; ++c) {
        std::fill(buf, buf + N, 0.0f);
        for (size_t j = k; j < n; ++j) buf[j - k] = weight_to_f32<kType>(wc[c][kw + j - k]);
        wv[c] = hn::Load(d, buf);
      }
      for (int i = 0; i < R; ++i) {
        std::fill(buf, buf + N, 0.0f);
        std::memcpy(buf, xr[i] + k, (n - k) * sizeof(float));
        const VF xv = hn::Load(d, buf);
        for (int c = 0; c < C; ++c) acc[i][c] = hn::MulAdd(xv, wv[c], acc[i][c]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int c = 0; c < C; ++c) *out[i * C + c] = hn::GetLane(hn::SumOfLanes(d, acc[i][c]));
  }
};

template <TensorType kType>
void float_cols(const detail::MatmulTask& t, int64_t o_begin, int64_t o_end,
                const WeightElem<kType>* packed = nullptr) {
  const int64_t block = col_block_for<kFloatCols>(t.w_row_bytes);
  const auto drive = [&]<int kHint>() {
    if (packed != nullptr) {
      FloatTile<kType, kHint, true> tile{t, packed};
      drive_tiles<kFloatRows, kFloatCols>(t, o_begin, o_end, block, tile);
    } else {
      FloatTile<kType, kHint, false> tile{t};
      drive_tiles<kFloatRows, kFloatCols>(t, o_begin, o_end, block, tile);
    }
  };
  // Decode streams the weights under the machine's strategy; prefetching
  // never changes a result.
  switch (t.rows == 1 ? t.stream.prefetch : Prefetch::kNone) {
    case Prefetch::kT0: drive.template operator()<3>(); return;
    case Prefetch::kT1: drive.template operator()<2>(); return;
    case Prefetch::kT2: drive.template operator()<1>(); return;
    case Prefetch::kNta: drive.template operator()<0>(); return;
    case Prefetch::kNone: break;
  }
  drive.template operator()<-1>();
}

// Exported: F32/F16/BF16 weights, columns [o_begin, o_end).
void MatmulFloatCols(const detail::MatmulTask& t, int64_t o_begin, int64_t o_end) {
  switch (t.type) {
    case TensorType::kF32: float_cols<TensorType::kF32>(t, o_begin, o_end); break;
    case TensorType::kF16: float_cols<TensorType::kF16>(t, o_begin, o_end); break;
    default:  // kBF16; matmul.cc routes nothing else here
      float_cols<TensorType::kBF16>(t, o_begin, o_end);
      break;
  }
}

// Exported: whether this target packs float weights (the x86 vector
// targets; the portable fallback reads the stored layout).
bool HasFloatPacked() {
  return HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL;
}

// Exported: columns per packed group (the float tile's width).
int64_t FloatPackGroupCols() { return kFloatCols; }

// Exported: packs column groups [g_begin, g_end) of kFloatCols columns of
// t.w (t.y_stride carries n_out) into `out`, the whole packed matrix.
void PackFloatGroups(const detail::MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  const size_t N = float_chunk();
  const size_t n = static_cast<size_t>(t.n_in);
  const size_t chunks = (n + N - 1) / N;
  const size_t elem = t.type == TensorType::kF32 ? sizeof(float) : sizeof(uint16_t);
  for (int64_t g = g_begin; g < g_end; ++g) {
    uint8_t* dst = out + static_cast<size_t>(g) * kFloatCols * chunks * N * elem;
    for (size_t kb = 0; kb < chunks; ++kb) {
      for (int c = 0; c < kFloatCols; ++c, dst += N * elem) {
        std::memset(dst, 0, N * elem);
        const int64_t o = g * kFloatCols + c;
        if (o >= t.y_stride) continue;
        const size_t take = std::min(N, n - kb * N);
        std::memcpy(dst, t.w + static_cast<size_t>(o) * t.w_row_bytes + kb * N * elem, take * elem);
      }
    }
  }
}

// Exported: MatmulFloatCols reading packed weights; o_begin is a multiple of
// kFloatCols (matmul.cc hands out columns in grains of 16).
void MatmulFloatPackedCols(const detail::MatmulTask& t, const uint8_t* packed, int64_t o_begin, int64_t o_end) {
  switch (t.type) {
    case TensorType::kF32:
      float_cols<TensorType::kF32>(t, o_begin, o_end, reinterpret_cast<const float*>(packed));
      break;
    case TensorType::kF16:
      float_cols<TensorType::kF16>(t, o_begin, o_end, reinterpret_cast<const uint16_t*>(packed));
      break;
    default:
      float_cols<TensorType::kBF16>(t, o_begin, o_end, reinterpret_cast<const uint16_t*>(packed));
      break;
  }
}

}  // namespace ladder::ops::HWY_NAMESPACE
#if HWY_TARGET == HWY_AVX3_DL
LADDER_TARGET_FEATURES_POP()
#endif
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_MATMUL_FLOAT_INL_H_
