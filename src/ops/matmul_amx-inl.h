// Per-target (AVX3_DL only) AMX-INT8 kernels for packed weights
// (matmul_packed-inl.h), compiled through matmul_simd.cc and used for whole
// tiles of 16 activation rows when amx_int8_active() (ops/amx.h).
//
// A tile product C[16 rows][16 columns] += A[16 rows][K bytes] x B[K/4][16
// columns x 4 bytes] gives, per row and column, the exact integer dot
// product of K activation bytes with K weights. B's layout, 4 consecutive
// elements of each of 16 columns per 64-byte row, is the packed layout's
// "dword k" vectors as they are (Q8_0 signed: tdpbssd) or once unpacked from
// nibbles (the others, unsigned: tdpbsud). K is one 32-element block (16 for
// Q6_K, one per scale), so C holds exactly the integer sums that vpdpbusd
// forms in the vector kernels, and each row then runs the format's own float
// epilogue (Fmt::finish) over the blocks in order. Same integers, same float
// operations: the results are bit-identical to the vector kernels, so a row
// gets the same bits alone (vectors) or in a batch of 512 (tiles).
//
// Per group of 16 columns the blocks are unpacked once into a per-thread
// scratch (PackedBlock: the B rows and the epilogue's factors), then every
// row tile of the call reads them from L1/L2.

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
#include "ops/matmul_internal.h"
#include "ops/matmul_packed-inl.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

#include "ops/amx_tiles.h"

HWY_BEFORE_NAMESPACE();
#pragma GCC target("avx512vnni,amx-tile,amx-int8,amx-bf16")
namespace ladder::ops::HWY_NAMESPACE {

inline constexpr int64_t kAmxRows = 16;

// Tiles: 0 the integer sums C (1 the second half's for Q6_K), 2 (3) the
// activations A, 4 (5) the weights B. Q6_K multiplies 16-element halves
// (K = 16: A 16 bytes a row, B 4 rows); the others whole blocks (K = 32).
template <class Fmt>
HWY_INLINE void amx_configure() {
  constexpr bool kHalves = Fmt::kType == TensorType::kQ6_K;
  constexpr int kK = kHalves ? 16 : 32;
  TileConfig cfg;
  for (int c = 0; c < (kHalves ? 2 : 1); ++c) {
    cfg.set(0 + c, kAmxRows, 64);
    cfg.set(2 + c, kAmxRows, kK);
    cfg.set(4 + c, kK / 4, 64);
  }
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

// kAmxRows rows starting at r0 against one group's unpacked blocks; acc[i]
// gets row r0 + i's 16 outputs.
template <class Fmt>
HWY_INLINE void amx_row_tile(const detail::MatmulTask& t, const PackedBlock* blocks, int64_t nb,
                             const PackedRow* rows, int64_t r0, __m512* acc) {
  constexpr bool kHalves = Fmt::kType == TensorType::kQ6_K;
  constexpr bool kSigned = Fmt::kType == TensorType::kQ8_0;
  alignas(64) int32_t sums[2][kAmxRows * 16];
  const int8_t* a = t.xq + r0 * t.n_in;
  const long stride = static_cast<long>(t.n_in);
  for (int i = 0; i < kAmxRows; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const PackedBlock& blk = blocks[b];
    _tile_zero(0);
    LADDER_TILE_LOAD(2, a + b * 32, stride);
    LADDER_TILE_LOAD(4, blk.w, 64);
    if constexpr (kHalves) {
      _tile_zero(1);
      LADDER_TILE_LOAD(3, a + b * 32 + 16, stride);
      LADDER_TILE_LOAD(5, blk.w + 4, 64);
      _tile_dpbsud(0, 2, 4);
      _tile_dpbsud(1, 3, 5);
      LADDER_TILE_STORE(1, sums[1], 64);
    } else if constexpr (kSigned) {
      _tile_dpbssd(0, 2, 4);
    } else {
      _tile_dpbsud(0, 2, 4);
    }
    LADDER_TILE_STORE(0, sums[0], 64);
    for (int i = 0; i < kAmxRows; ++i) {
      __m512i dot[2];
      dot[0] = _mm512_load_si512(sums[0] + 16 * i);
      if constexpr (kHalves) dot[1] = _mm512_load_si512(sums[1] + 16 * i);
      acc[i] = Fmt::finish(blk, rows[i], b, dot, acc[i]);
    }
  }
}

// Rows [0, row_tiles * 16) of columns [o_begin, o_end) (o_begin a multiple
// of 16) from packed weights; the caller runs the remaining rows on vectors.
template <class Fmt>
void amx_packed_cols(const detail::MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                     int64_t o_end, int64_t row_tiles) {
  const int64_t nb = t.n_in / 32;
  const int64_t group_bytes = packed_group_bytes<Fmt>(nb);
  const int64_t sums_per_row = t.n_in / std::max(Fmt::kSumGroup, 1);
  thread_local AmxScratch scratch;
  PackedBlock* blocks = scratch.reserve(nb);
  amx_configure<Fmt>();
  for (int64_t o = o_begin; o < o_end; o += 16) {
    const int64_t take = std::min<int64_t>(16, o_end - o);
    const __mmask16 valid = static_cast<__mmask16>((1u << take) - 1);
    const uint8_t* unit = packed + (o / 16) * group_bytes;
    for (int64_t b0 = 0; b0 < nb; b0 += Fmt::kBlocks, unit += Fmt::kUnitBytes) {
      for (int j = 0; j < Fmt::kBlocks && b0 + j < nb; ++j) Fmt::load(unit, j, blocks[b0 + j]);
    }
    for (int64_t rt = 0; rt < row_tiles; ++rt) {
      const int64_t r0 = rt * kAmxRows;
      PackedRow rows[kAmxRows];
      for (int i = 0; i < kAmxRows; ++i) {
        const int64_t r = r0 + i;
        rows[i].x = nullptr;  // the tiles read t.xq
        rows[i].xd = t.xd + r * nb;
        rows[i].xs = Fmt::kSumGroup > 0 ? xq_sums + r * sums_per_row : nullptr;
        rows[i].xsum = t.xsum + r * nb;
      }
      __m512 acc[kAmxRows];
      amx_row_tile<Fmt>(t, blocks, nb, rows, r0, acc);
      for (int i = 0; i < kAmxRows; ++i) _mm512_mask_storeu_ps(t.y + (r0 + i) * t.y_stride + o, valid, acc[i]);
    }
  }
  _tile_release();
}

// Exported: whether this target has the AMX kernels (it does; AMX must still
// be usable and switched on: ops/amx.h).
bool HasAmxKernels() {
  return true;
}

void MatmulAmxCols(const detail::MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                   int64_t o_end, int64_t row_tiles) {
  with_packed_format(t.type, [&]<class Fmt>() { amx_packed_cols<Fmt>(t, packed, xq_sums, o_begin, o_end, row_tiles); });
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#else  // !AVX3_DL

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
bool HasAmxKernels() {
  return false;
}
void MatmulAmxCols(const detail::MatmulTask&, const uint8_t*, const int32_t*, int64_t, int64_t, int64_t) {}
}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // LADDER_OPS_MATMUL_AMX_INL_H_
