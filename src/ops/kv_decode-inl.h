// Per-target readers of the KV formats (ops/kv_codec.h) for the attention
// kernels: one block of one KV head at a time, read in place. A block's
// small per-block parts (f16 scales and mins, Q4 key nibbles spread one code
// per byte) are widened once into per-thread scratch; the bulk of the codes
// is widened to floats in registers as the score and weighted-sum loops
// consume it, so no decoded copy of the block is ever written. Every value a
// reader returns equals the scalar kv_decode_elem() bit for bit (a q *
// scale product is exact in float, so adding the min -- fused or not --
// rounds once either way).

#if defined(LADDER_OPS_KV_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_KV_DECODE_INL_H_
#undef LADDER_OPS_KV_DECODE_INL_H_
#else
#define LADDER_OPS_KV_DECODE_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "common/half.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/attention.h"
#include "ops/kv_codec.h"

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls fn(d) with the widest float tag whose lane count divides n (the
// choice depends on the layout alone, never on the batch).
template <class Fn>
HWY_INLINE void with_lanes_dividing(int64_t n, Fn&& fn) {
  const hn::ScalableTag<float> df;
  if (n % static_cast<int64_t>(hn::Lanes(df)) == 0) {
    fn(df);
  } else if (n % 8 == 0) {
    fn(hn::CappedTag<float, 8>());
  } else if (n % 4 == 0) {
    fn(hn::CappedTag<float, 4>());
  } else {
    fn(hn::CappedTag<float, 1>());
  }
}

template <class D>
HWY_INLINE hn::Vec<D> load_i8(D d, const int8_t* p) {
  const hn::Rebind<int32_t, D> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, D>(), p)));
}

// Lanes of 4-bit codes: the low (kHigh = false) or high nibbles of bytes p[0, N).
template <bool kHigh, class D>
HWY_INLINE hn::Vec<D> load_nibbles(D d, const uint8_t* p) {
  const hn::Rebind<int32_t, D> di;
  const auto bytes = hn::PromoteTo(di, hn::LoadU(hn::Rebind<uint8_t, D>(), p));
  if constexpr (kHigh) {
    return hn::ConvertTo(d, hn::ShiftRight<4>(bytes));
  } else {
    return hn::ConvertTo(d, hn::And(bytes, hn::Set(di, 0xF)));
  }
}

// Lanes of codes already spread one per byte (values 0..15).
template <class D>
HWY_INLINE hn::Vec<D> load_codes(D d, const uint8_t* p) {
  const hn::Rebind<int32_t, D> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(hn::Rebind<uint8_t, D>(), p)));
}

template <class D>
HWY_INLINE hn::Vec<D> load_f16(D d, const uint16_t* p) {
  return hn::PromoteTo(
      d, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), reinterpret_cast<const hwy::float16_t*>(p)));
}

// dst[0, n) = the f16 values src[0, n), in vectors where they fit.
HWY_INLINE void widen_f16(const uint16_t* src, int64_t n, float* dst) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 4> d4;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d)), N4 = static_cast<int64_t>(hn::Lanes(d4));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(load_f16(d, src + i), d, dst + i);
  for (; i + N4 <= n; i += N4) hn::StoreU(load_f16(d4, src + i), d4, dst + i);
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

HWY_INLINE const uint16_t* staging_of(const PagedKvLayer& l, int32_t block_id) {
  return reinterpret_cast<const uint16_t*>(l.staging + static_cast<size_t>(l.staging_slot[block_id]) *
                                                           l.staging_stride_bytes);
}

HWY_INLINE const uint8_t* block_of(const PagedKvLayer& l, int32_t block_id) {
  return l.base + static_cast<size_t>(block_id) * l.block_stride_bytes;
}

// Asks the caches for bytes [p, p + n), a line at a time.
HWY_INLINE void prefetch_bytes(const uint8_t* p, int64_t n) {
  for (int64_t o = 0; o < n; o += 64) hwy::Prefetch(p + o);
  hwy::Prefetch(p + n - 1);
}

// Asks the caches for the sealed bytes of KV head kvh in a quantized block
// (the next block's, while one is being read: blocks lie apart in the pool,
// so the hardware prefetchers do not see them coming).
HWY_INLINE void prefetch_quant_block(const PagedKvLayer& l, int32_t block_id, int kvh) {
  const int64_t bs = l.block_size, hd = l.head_dim, nkv = l.n_kv_heads;
  const uint8_t* p = block_of(l, block_id);
  if (l.layout == KvLayout::kDimMajor) {
    if (l.dtype == TensorType::kQ8_0) {
      const int64_t ng = hd / kv_channel_group(static_cast<int>(hd));
      prefetch_bytes(p + kvh * hd * bs, hd * bs);
      prefetch_bytes(p + bs * nkv * hd + kvh * ng * bs * 2, ng * bs * 2);
    } else {
      prefetch_bytes(p + kvh * hd * 4, hd * 4);
      prefetch_bytes(p + nkv * hd * 4 + kvh * hd * (bs / 2), hd * (bs / 2));
    }
    return;
  }
  if (l.dtype == TensorType::kQ8_0) {
    const int64_t ng = hd / kv_channel_group(static_cast<int>(hd));
    for (int64_t t = 0; t < bs; ++t) prefetch_bytes(p + (t * nkv + kvh) * hd, hd);
    prefetch_bytes(p + bs * nkv * hd + kvh * ng * 2, ((bs - 1) * nkv * ng + ng) * 2);
    return;
  }
  const int64_t ng = hd / kv_channel_group(static_cast<int>(hd)), half = hd / 2;
  for (int64_t t = 0; t < bs; ++t) {
    prefetch_bytes(p + (t * nkv + kvh) * ng * 4, ng * 4);
    prefetch_bytes(p + bs * nkv * ng * 4 + (t * nkv + kvh) * half, half);
  }
}

// ---- Keys: key(d, i, l0) is dim i of the block's keys l0 .. l0 + Lanes(d).

// Keys already in a float block [head_dim][block_size].
struct FloatKeys {
  const float* p;
  int64_t bs;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i, int64_t l0) const {
    return hn::LoadU(d, p + i * bs + l0);
  }
};

// Q8 keys: int8 [head_dim][block_size] times each token's scale of the
// dim's group of g.
struct Q8Keys {
  const int8_t* q;
  const float* scales;  // [head_dim / g][block_size]
  int64_t bs, g;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i, int64_t l0) const {
    return hn::Mul(load_i8(d, q + i * bs + l0), hn::LoadU(d, scales + (i / g) * bs + l0));
  }
};

// Q4 keys: codes one per byte [head_dim][block_size], each dim's scale and min.
struct Q4Keys {
  const uint8_t* codes;
  const float* params;  // [head_dim][scale, min]
  int64_t bs;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i, int64_t l0) const {
    return hn::MulAdd(load_codes(d, codes + i * bs + l0), hn::Set(d, params[2 * i]), hn::Set(d, params[2 * i + 1]));
  }
};

// The F16 keys of a staging slot into dst [head_dim][block_size], through
// tmp (head_dim * block_size f16).
HWY_INLINE void widen_staged_keys(const PagedKvLayer& k, int32_t block_id, int kvh, uint16_t* tmp, float* dst) {
  const int64_t bs = k.block_size, hd = k.head_dim, nkv = k.n_kv_heads;
  const uint16_t* stg = staging_of(k, block_id) + kvh * hd;
  for (int64_t t = 0; t < bs; ++t) {
    for (int64_t i = 0; i < hd; ++i) tmp[i * bs + t] = stg[t * nkv * hd + i];
  }
  widen_f16(tmp, hd * bs, dst);
}

// Q8 keys of KV head kvh; scales: room for block_size * head_dim / g floats.
HWY_INLINE Q8Keys q8_keys(const PagedKvLayer& k, int32_t block_id, int kvh, float* scales) {
  const int64_t bs = k.block_size, hd = k.head_dim, nkv = k.n_kv_heads;
  const int64_t g = kv_channel_group(k.head_dim), ng = hd / g;
  const uint8_t* p = block_of(k, block_id);
  widen_f16(reinterpret_cast<const uint16_t*>(p + bs * nkv * hd) + kvh * ng * bs, ng * bs, scales);
  return {reinterpret_cast<const int8_t*>(p) + kvh * hd * bs, scales, bs, g};
}

// Q4 keys of KV head kvh: nibbles [head_dim][bs/2] (token t low, t + bs/2
// high) spread into codes [head_dim][bs]; params: room for 2 * head_dim floats.
HWY_INLINE Q4Keys q4_keys(const PagedKvLayer& k, int32_t block_id, int kvh, uint8_t* codes, float* params) {
  const int64_t bs = k.block_size, hd = k.head_dim, nkv = k.n_kv_heads, half = bs / 2;
  const uint8_t* p = block_of(k, block_id);
  widen_f16(reinterpret_cast<const uint16_t*>(p) + kvh * hd * 2, hd * 2, params);
  const uint8_t* nib = p + nkv * hd * 4 + kvh * hd * half;
  constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0Full;
  int64_t i0 = 0;
#if HWY_TARGET != HWY_SCALAR
  if (half == 8) {  // a dim's eight bytes are one u64 lane: its low codes, then its high ones
    const hn::ScalableTag<uint64_t> du;
    const int64_t N = static_cast<int64_t>(hn::Lanes(du));
    const auto low = hn::Set(du, kLow);
    for (; i0 + N <= hd; i0 += N) {
      const auto x = hn::LoadU(du, reinterpret_cast<const uint64_t*>(nib + i0 * 8));
      hn::StoreInterleaved2(hn::And(x, low), hn::And(hn::ShiftRight<4>(x), low), du,
                            reinterpret_cast<uint64_t*>(codes + i0 * 16));
    }
  }
#endif
  if (half % 8 == 0) {  // eight bytes at a time, both nibbles of each byte
    for (int64_t i = i0; i < hd; ++i) {
      for (int64_t t = 0; t < half; t += 8) {
        uint64_t x;
        std::memcpy(&x, nib + i * half + t, 8);
        const uint64_t lo = x & kLow, hi = (x >> 4) & kLow;
        std::memcpy(codes + i * bs + t, &lo, 8);
        std::memcpy(codes + i * bs + half + t, &hi, 8);
      }
    }
  } else {
    for (int64_t i = 0; i < hd; ++i) {
      for (int64_t t = 0; t < half; ++t) {
        const uint8_t x = nib[i * half + t];
        codes[i * bs + t] = x & 0xF;
        codes[i * bs + half + t] = static_cast<uint8_t>(x >> 4);
      }
    }
  }
  return {codes, params, bs};
}

// ---- Values: a reader covers the dims [begin, end) of rows r (the block's
// tokens); rows.col(i) names dim i once per pass, rows.load(d, r, col) reads
// dims i .. i + Lanes(d) of row r (a vector never crosses the reader's
// range), rows.elem(r, e) one dim.

// Values already in a float block [rows][head_dim].
struct FloatRows {
  const float* p;
  int64_t hd;
  int64_t col(int64_t i) const { return i; }
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, int64_t r, int64_t i) const {
    return hn::LoadU(d, p + r * hd + i);
  }
  float elem(int64_t r, int64_t e) const { return p[r * hd + e]; }
};

// F16 values of a staging slot, [bs][n_kv_heads][head_dim] (p at KV head kvh).
struct F16Rows {
  const uint16_t* p;
  int64_t stride;  // n_kv_heads * head_dim
  int64_t col(int64_t i) const { return i; }
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, int64_t r, int64_t i) const {
    return load_f16(d, p + r * stride + i);
  }
  float elem(int64_t r, int64_t e) const { return f16_to_f32(p[r * stride + e]); }
};

// Q8 values: int8 [bs][n_kv_heads][head_dim] (q at KV head kvh) times each
// token's scale of the dim's group of g. A vector never straddles two
// groups: g is a multiple of every target's lanes, or the whole head.
struct Q8Rows {
  const int8_t* q;
  const float* scales;  // [bs][n_kv_heads][head_dim / g] (at KV head kvh)
  int64_t stride, scale_stride, g;  // stride: n_kv_heads * head_dim; scale_stride: n_kv_heads * head_dim / g
  int64_t col(int64_t i) const { return i; }
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, int64_t r, int64_t i) const {
    return hn::Mul(load_i8(d, q + r * stride + i), hn::Set(d, scales[r * scale_stride + i / g]));
  }
  float elem(int64_t r, int64_t e) const {
    return static_cast<float>(q[r * stride + e]) * scales[r * scale_stride + e / g];
  }
};

// Q4 values, the low half of the dims (kHigh = false: [0, head_dim / 2), the
// low nibbles) or the high half: nibbles [bs][n_kv_heads][head_dim / 2]
// (nib at KV head kvh), each token's groups of g dims with a scale and min.
template <bool kHigh>
struct Q4Rows {
  struct Col {
    int64_t byte, param;  // byte of the dim within a row; its group's params within a token's
  };
  const uint8_t* nib;
  const float* params;  // [bs][groups][scale, min]
  int64_t stride, half, g, ng;
  Col col(int64_t i) const { return {kHigh ? i - half : i, 2 * (i / g)}; }
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, int64_t r, const Col& c) const {
    const float* pr = params + r * 2 * ng + c.param;
    return hn::MulAdd(load_nibbles<kHigh>(d, nib + r * stride + c.byte), hn::Set(d, pr[0]), hn::Set(d, pr[1]));
  }
  float elem(int64_t r, int64_t e) const {
    const uint8_t x = nib[r * stride + (kHigh ? e - half : e)];
    const float* pr = params + (r * ng + e / g) * 2;
    return static_cast<float>(kHigh ? x >> 4 : x & 0xF) * pr[0] + pr[1];
  }
};

// Runs fn(rows, begin, end) for readers covering dims [0, head_dim) of the
// values of KV head kvh at a block's tokens [0, n). staged: from the block's
// staging slot. params: room for the block's per-token scales and mins
// (block_size * max(n_kv_heads * head_dim / group, 2 * head_dim / group)
// floats); tmp: room
// for a decoded block (block_size * head_dim floats), used only by Q4 shapes
// whose groups or halves do not hold whole vectors (a vector must not
// straddle them), so that every shape keeps the vectors it has always had.
template <class Fn>
HWY_INLINE void with_value_rows(const PagedKvLayer& v, int32_t block_id, int kvh, int64_t n, bool staged,
                                float* params, float* tmp, Fn&& fn) {
  const int64_t bs = v.block_size, hd = v.head_dim, nkv = v.n_kv_heads;
  if (staged) {
    fn(F16Rows{staging_of(v, block_id) + kvh * hd, nkv * hd}, 0, hd);
    return;
  }
  const uint8_t* p = block_of(v, block_id);
  if (v.dtype == TensorType::kQ8_0) {
    const int64_t g = kv_channel_group(v.head_dim), ng = hd / g;
    widen_f16(reinterpret_cast<const uint16_t*>(p + bs * nkv * hd), n * nkv * ng, params);
    const auto* q = reinterpret_cast<const int8_t*>(p) + kvh * hd;
    fn(Q8Rows{q, params + kvh * ng, nkv * hd, nkv * ng, g}, 0, hd);
    return;
  }
  const int64_t g = kv_channel_group(static_cast<int>(hd)), ng = hd / g, half = hd / 2;
  const auto* pf16 = reinterpret_cast<const uint16_t*>(p);
  for (int64_t t = 0; t < n; ++t) widen_f16(pf16 + (t * nkv + kvh) * ng * 2, ng * 2, params + t * ng * 2);
  const uint8_t* nib = p + bs * nkv * ng * 4 + kvh * half;
  const int64_t N = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>()));
  if (hd < N || (half % N == 0 && g % N == 0)) {
    fn(Q4Rows<false>{nib, params, nkv * half, half, g, ng}, 0, half);
    fn(Q4Rows<true>{nib, params, nkv * half, half, g, ng}, half, hd);
    return;
  }
  const Q4Rows<false> lo{nib, params, nkv * half, half, g, ng};
  const Q4Rows<true> hi{nib, params, nkv * half, half, g, ng};
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t e = 0; e < hd; ++e) tmp[t * hd + e] = e < half ? lo.elem(t, e) : hi.elem(t, e);
  }
  fn(FloatRows{tmp, hd}, 0, hd);
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_KV_DECODE_INL_H_
