// Per-target (AVX3_DL only) AMX-INT8 kernels for packed weights
// (matmul_packed-inl.h), compiled through matmul_simd.cc and used for whole
// tiles of 16 activation rows when amx_int8_active() (ops/amx.h).
//
// A tile product C[16 rows][16 columns] += A[16 rows][K bytes] x B[K/4][16
// columns x 4 bytes] gives, per row and column, the exact integer dot
// product of K activation bytes with K weights. B's layout, 4 consecutive
// elements of each of 16 columns per 64-byte row, is the packed layout's
// "dword k" vectors, once unpacked. K is one 32-element block (16 for Q6_K,
// one per scale), so C holds exactly the integer block sums of the vector
// kernels, and each row then runs the format's float epilogue over the
// blocks in order. Where the vector kernels need an offset (Q8_0 w + 128,
// Q4_0 q = w + 8, Q6_K q = w + 32, the unsigned side of vpdpbusd), the
// tiles multiply the signed weights (tdpbssd) and get the exact sum
// directly; the K-quants' q (0..31) are used as they are (tdpbsud). Same
// integers, same float operations (Fmt::finish_tile, shared with the vector
// kernels' Fmt::finish): the results are bit-identical to the vector
// kernels, so a row gets the same bits alone (vectors) or in a batch of 512
// (tiles).
//
// Per group of 16 columns the blocks are unpacked once into a per-thread
// scratch (PackedBlock: the B rows and the epilogue's factors), then every
// row tile of the call reads them from L1/L2, while the next group streams
// into L2.
//
// Cost, measured on a Xeon (family 6, model 207; docs/BENCHMARKS.md): a
// product with its tile store takes about as long as 16 rows of the float
// epilogue, and the two did not overlap in any order tried, so the tiles
// run 1.4-1.7x the vector kernels on a 512-row matmul, not the 8x their
// peak suggests; K = 32 per product (one scale per block) is what the bit
// identity costs.

#if defined(LADDER_OPS_MATMUL_AMX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_AMX_INL_H_
#undef LADDER_OPS_MATMUL_AMX_INL_H_
#else
#define LADDER_OPS_MATMUL_AMX_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "ops/target_features.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_packed-inl.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

#include "ops/amx_tiles.h"

HWY_BEFORE_NAMESPACE();
LADDER_TARGET_FEATURES_PUSH("avx512vnni,amx-tile,amx-int8,amx-bf16")
namespace ladder::ops::HWY_NAMESPACE {

inline constexpr int64_t kAmxRows = 16;

// Tiles: 0-3 integer sums C, 4-5 activations A, 6-7 weights B. Products
// go in runs of four (four blocks with K = 32, or two Q6_K blocks as
// 16-element halves, K = 16: one product per scale), stored together and
// read back by the epilogue while the next run multiplies.
template <class Fmt>
HWY_INLINE void amx_configure() {
  constexpr int kK = Fmt::kType == TensorType::kQ6_K ? 16 : 32;
  TileConfig cfg;
  for (int c = 0; c < 4; ++c) cfg.set(c, kAmxRows, 64);
  for (int a = 4; a < 6; ++a) cfg.set(a, kAmxRows, kK);
  for (int b = 6; b < 8; ++b) cfg.set(b, kK / 4, 64);
  _tile_loadconfig(&cfg);
}

// The unpacked blocks of one column group, reused by every row tile.
struct AmxScratch {
  hwy::AlignedFreeUniquePtr<PackedBlock[]> blocks;
  int64_t capacity = 0;

  PackedBlock* reserve(int64_t nb) {
    if (nb > capacity) {
      blocks = hwy::AllocateAligned<PackedBlock>(static_cast<size_t>(nb));
      capacity = nb;
    }
    return blocks.get();
  }
};

// One tile product: C (tile c) = A (tile ta: K bytes of 16 rows at a, row
// stride 32) x B (tile tb: K/4 rows of 64 bytes at w), signed weights
// (tdpbssd) or unsigned (tdpbsud) as the format keeps them in the scratch.
// Tile numbers must be literals (the instructions name them).
#define LADDER_AMX_PRODUCT(kSigned, c, ta, tb, a, w) \
  do {                                               \
    _tile_zero(c);                                   \
    LADDER_TILE_LOAD(ta, a, 32);                     \
    LADDER_TILE_LOAD(tb, w, 64);                     \
    if constexpr (kSigned) {                         \
      _tile_dpbssd(c, ta, tb);                       \
    } else {                                         \
      _tile_dpbsud(c, ta, tb);                       \
    }                                                \
  } while (0)

// kAmxRows rows starting at r0 against one group's unpacked blocks: the
// valid lanes of row r0 + i's 16 outputs go to y + (r0 + i) * y_stride.
// Each row still runs the format's float epilogue over the blocks in order.
// Software pipelined: the tile products of the next run of blocks are
// issued and stored (into the other half of `sums`) before this run's
// epilogue reads its own sums, so that the tiles could work while the
// vectors do (on the Xeon measured they do not overlap much; see above). The accumulators are locals whose
// address never escapes, so the tile instructions' memory barriers cannot
// force them out of registers.
template <class Fmt>
HWY_INLINE void amx_row_tile(const detail::MatmulTask& t, const PackedBlock* blocks, int64_t nb, int64_t r0,
                             float* y, __mmask16 valid) {
  __m512 acc[kAmxRows];
  constexpr bool kHalves = Fmt::kType == TensorType::kQ6_K;
  constexpr bool kSigned = Fmt::kAmxSigned;
  constexpr int kPer = kHalves ? 2 : 1;  // products per block
  constexpr int kK = 32 / kPer;
  constexpr int kRun = 4;  // products per run
  alignas(64) int32_t sums[2][kRun][kAmxRows * 16];
  const int8_t* a = t.xq_tiles + r0 * t.n_in;  // this row tile's blocks, 512 bytes each
  const float* xd_tile = t.xd_tiles + r0 * nb;  // [block][16 rows]
  const float* xsum_tile = t.xsum_tiles + r0 * nb;
  const int64_t products = nb * kPer;
  // Product p: block p / kPer, part p % kPer (K elements each).
  const auto a_at = [&](int64_t p) { return a + (p / kPer) * 512 + (p % kPer) * kK; };
  const auto w_at = [&](int64_t p) { return blocks[p / kPer].w + 4 * (p % kPer); };
  const auto run_size = [&](int64_t p0) { return static_cast<int>(std::min<int64_t>(kRun, products - p0)); };
  const auto multiply = [&](int64_t p0, int n) {
    LADDER_AMX_PRODUCT(kSigned, 0, 4, 6, a_at(p0), w_at(p0));
    if (n > 1) LADDER_AMX_PRODUCT(kSigned, 1, 5, 7, a_at(p0 + 1), w_at(p0 + 1));
    if (n > 2) LADDER_AMX_PRODUCT(kSigned, 2, 4, 6, a_at(p0 + 2), w_at(p0 + 2));
    if (n > 3) LADDER_AMX_PRODUCT(kSigned, 3, 5, 7, a_at(p0 + 3), w_at(p0 + 3));
  };
  const auto store = [&](int n, int32_t (*to)[kAmxRows * 16]) {
    LADDER_TILE_STORE(0, to[0], 64);
    if (n > 1) LADDER_TILE_STORE(1, to[1], 64);
    if (n > 2) LADDER_TILE_STORE(2, to[2], 64);
    if (n > 3) LADDER_TILE_STORE(3, to[3], 64);
  };
  for (int i = 0; i < kAmxRows; ++i) acc[i] = _mm512_setzero_ps();
  multiply(0, run_size(0));
  store(run_size(0), sums[0]);
  for (int64_t p0 = 0, run = 0; p0 < products; p0 += kRun, ++run) {
    const int n = run_size(p0);
    const int64_t p1 = p0 + kRun;
    const int n1 = p1 < products ? run_size(p1) : 0;
    if (n1 > 0) {
      multiply(p1, n1);
      store(n1, sums[(run + 1) % 2]);
    }
    int32_t(*const from)[kAmxRows * 16] = sums[run % 2];
    // Blocks in order for every row; the rows unrolled so that the
    // accumulators stay in registers.
    for (int k = 0; k < n; k += kPer) {
      const int64_t b = (p0 + k) / kPer;
      const PackedBlock& blk = blocks[b];
      const float* xd = xd_tile + b * kAmxRows;
      const float* xsum = xsum_tile + b * kAmxRows;
#pragma GCC unroll 16
      for (int i = 0; i < kAmxRows; ++i) {
        __m512i dot[2];
        dot[0] = _mm512_load_si512(from[k] + 16 * i);
        if constexpr (kHalves) dot[1] = _mm512_load_si512(from[k + 1] + 16 * i);
        acc[i] = Fmt::finish_tile(blk, xd[i], xsum[i], dot, acc[i]);
      }
    }
  }
  for (int i = 0; i < kAmxRows; ++i) _mm512_mask_storeu_ps(y + (r0 + i) * t.y_stride, valid, acc[i]);
}
#undef LADDER_AMX_PRODUCT

// Rows [0, row_tiles * 16) of columns [o_begin, o_end) (o_begin a multiple
// of 16) from packed weights; the caller runs the remaining rows on vectors.
template <class Fmt>
void amx_packed_cols(const detail::MatmulTask& t, const uint8_t* packed,
                     int64_t o_begin, int64_t o_end, int64_t row_tiles) {
  const int64_t nb = t.n_in / 32;
  const int64_t group_bytes = packed_group_bytes<Fmt>(nb);
  thread_local AmxScratch scratch;
  PackedBlock* blocks = scratch.reserve(nb);
  amx_configure<Fmt>();
  for (int64_t o = o_begin; o < o_end; o += 16) {
    const int64_t take = std::min<int64_t>(16, o_end - o);
    const __mmask16 valid = static_cast<__mmask16>((1u << take) - 1);
    const uint8_t* unit = packed + (o / 16) * group_bytes;
    for (int64_t b0 = 0; b0 < nb; b0 += Fmt::kBlocks, unit += Fmt::kUnitBytes) {
      for (int j = 0; j < Fmt::kBlocks && b0 + j < nb; ++j) {
        Fmt::load(unit, j, blocks[b0 + j]);
        if constexpr (Fmt::kAmxSigned) Fmt::to_signed(blocks[b0 + j]);
      }
    }
    // The next group streams into L2 a share per row tile (weights come
    // from memory: a model's matrices are read once per forward pass).
    const uint8_t* next = o + 16 < o_end ? unit : nullptr;
    const int64_t lines = group_bytes / 64;
    const int64_t per_tile = (lines + row_tiles - 1) / row_tiles;
    for (int64_t rt = 0; rt < row_tiles; ++rt) {
      if (next != nullptr) {
        for (int64_t l = rt * per_tile; l < std::min(lines, (rt + 1) * per_tile); ++l) {
          _mm_prefetch(reinterpret_cast<const char*>(next + 64 * l), _MM_HINT_T1);
        }
      }
      amx_row_tile<Fmt>(t, blocks, nb, rt * kAmxRows, t.y + o, valid);
    }
  }
  _tile_release();
}

// Exported: row tiles [rt_begin, rt_end) of xq ([rows][n_in]), xd and xsum
// ([rows][n_in / 32]) as MatmulTask::xq_tiles, xd_tiles and xsum_tiles want
// them.
void TileActivations(const int8_t* xq, const float* xd, const float* xsum, int64_t n_in, int64_t rt_begin,
                     int64_t rt_end, const detail::ActTiles& out) {
  const int64_t nb = n_in / 32;
  for (int64_t rt = rt_begin; rt < rt_end; ++rt) {
    for (int64_t i = 0; i < kAmxRows; ++i) {
      const int64_t r = rt * kAmxRows + i;
      const int8_t* row = xq + r * n_in;
      int8_t* dst = out.xq + rt * kAmxRows * n_in + i * 32;
      for (int64_t b = 0; b < nb; ++b) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + b * 512),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * 32)));
        out.xd[(rt * nb + b) * kAmxRows + i] = xd[r * nb + b];
        out.xsum[(rt * nb + b) * kAmxRows + i] = xsum[r * nb + b];
      }
    }
  }
}

// Exported: whether this target has the AMX kernels (it does; AMX must still
// be usable and switched on: ops/amx.h).
bool HasAmxKernels() {
  return true;
}

void MatmulAmxCols(const detail::MatmulTask& t, const uint8_t* packed,
                   int64_t o_begin, int64_t o_end, int64_t row_tiles) {
  with_packed_format(
      t.type, [&]<class Fmt>() { amx_packed_cols<Fmt>(t, packed, o_begin, o_end, row_tiles); });
}

}  // namespace ladder::ops::HWY_NAMESPACE
LADDER_TARGET_FEATURES_POP()
HWY_AFTER_NAMESPACE();

#else  // !AVX3_DL

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
bool HasAmxKernels() {
  return false;
}
void MatmulAmxCols(const detail::MatmulTask&, const uint8_t*, int64_t, int64_t, int64_t) {}
void TileActivations(const int8_t*, const float*, const float*, int64_t, int64_t, int64_t, const detail::ActTiles&) {}
}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // LADDER_OPS_MATMUL_AMX_INL_H_
