// Per-target decoders of the quantized KV formats (ops/kv_codec.h): one
// block of one KV head at a time into a small float tile that the attention
// kernel reads next, so the cache itself is only ever read in its stored
// format. Every decoded value equals the scalar kv_decode_elem() bit for bit
// (a q * scale product is exact in float, so adding the min rounds once
// either way).

#if defined(LADDER_OPS_KV_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_KV_DECODE_INL_H_
#undef LADDER_OPS_KV_DECODE_INL_H_
#else
#define LADDER_OPS_KV_DECODE_INL_H_
#endif

#include <cstdint>
#include <numeric>

#include "common/half.h"
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

// Lanes of 4-bit codes: the low (high = false) or high nibbles of bytes p[0, N).
template <class D>
HWY_INLINE hn::Vec<D> load_nibbles(D d, const uint8_t* p, bool high) {
  const hn::Rebind<int32_t, D> di;
  const auto bytes = hn::PromoteTo(di, hn::LoadU(hn::Rebind<uint8_t, D>(), p));
  const auto codes = high ? hn::ShiftRight<4>(bytes) : hn::And(bytes, hn::Set(di, 0xF));
  return hn::ConvertTo(d, codes);
}

template <class D>
HWY_INLINE hn::Vec<D> load_f16(D d, const uint16_t* p) {
  return hn::PromoteTo(
      d, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), reinterpret_cast<const hwy::float16_t*>(p)));
}

HWY_INLINE const uint16_t* staging_of(const PagedKvLayer& l, int32_t block_id) {
  return reinterpret_cast<const uint16_t*>(l.staging + static_cast<size_t>(l.staging_slot[block_id]) *
                                                           l.staging_stride_bytes);
}

// Keys of KV head kvh of a block into dst [head_dim][block_size]. staged: from
// the block's staging slot (a Q4 block that holds positions past the query).
HWY_INLINE void decode_k_block(const PagedKvLayer& k, int32_t block_id, int kvh, bool staged, float* dst) {
  const int64_t bs = k.block_size, hd = k.head_dim, nkv = k.n_kv_heads;
  const uint8_t* p = k.base + static_cast<size_t>(block_id) * k.block_stride_bytes;
  if (staged) {
    const uint16_t* stg = staging_of(k, block_id) + kvh * hd;
    for (int64_t t = 0; t < bs; ++t) {
      for (int64_t i = 0; i < hd; ++i) dst[i * bs + t] = f16_to_f32(stg[t * nkv * hd + i]);
    }
    return;
  }
  if (k.dtype == TensorType::kQ8_0) {
    const auto* q = reinterpret_cast<const int8_t*>(p) + kvh * hd * bs;
    const auto* scales = reinterpret_cast<const uint16_t*>(p + bs * nkv * hd) + kvh * bs;
    with_lanes_dividing(bs, [&](auto d) {
      const int64_t N = static_cast<int64_t>(hn::Lanes(d));
      for (int64_t t = 0; t < bs; t += N) {
        const auto s = load_f16(d, scales + t);
        for (int64_t i = 0; i < hd; ++i)
          hn::StoreU(hn::Mul(load_i8(d, q + i * bs + t), s), d, dst + i * bs + t);
      }
    });
    return;
  }
  // Q4: per channel scale and min, nibbles [hd][bs/2] (token t low, t + bs/2 high).
  const auto* params = reinterpret_cast<const uint16_t*>(p) + kvh * hd * 2;
  const uint8_t* nib = p + nkv * hd * 4 + kvh * hd * (bs / 2);
  const int64_t half = bs / 2;
  with_lanes_dividing(half, [&](auto d) {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    for (int64_t i = 0; i < hd; ++i) {
      const auto s = hn::Set(d, f16_to_f32(params[i * 2]));
      const auto m = hn::Set(d, f16_to_f32(params[i * 2 + 1]));
      for (int64_t t = 0; t < bs; t += N) {
        const auto c = load_nibbles(d, nib + i * half + t % half, t >= half);
        hn::StoreU(hn::Add(hn::Mul(c, s), m), d, dst + i * bs + t);
      }
    }
  });
}

// Values of KV head kvh at a block's tokens [0, n) into dst [n][head_dim].
HWY_INLINE void decode_v_block(const PagedKvLayer& v, int32_t block_id, int kvh, int64_t n, bool staged,
                               float* dst) {
  const int64_t bs = v.block_size, hd = v.head_dim, nkv = v.n_kv_heads;
  const uint8_t* p = v.base + static_cast<size_t>(block_id) * v.block_stride_bytes;
  if (staged) {
    const uint16_t* stg = staging_of(v, block_id) + kvh * hd;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < hd; ++i) dst[t * hd + i] = f16_to_f32(stg[t * nkv * hd + i]);
    }
    return;
  }
  if (v.dtype == TensorType::kQ8_0) {
    const auto* q = reinterpret_cast<const int8_t*>(p);
    const auto* scales = reinterpret_cast<const uint16_t*>(p + bs * nkv * hd);
    const hn::ScalableTag<float> d;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    for (int64_t t = 0; t < n; ++t) {
      const int8_t* row = q + (t * nkv + kvh) * hd;
      const float s = f16_to_f32(scales[t * nkv + kvh]);
      int64_t i = 0;
      for (; i + N <= hd; i += N)
        hn::StoreU(hn::Mul(load_i8(d, row + i), hn::Set(d, s)), d, dst + t * hd + i);
      for (; i < hd; ++i) dst[t * hd + i] = static_cast<float>(row[i]) * s;
    }
    return;
  }
  // Q4: per token groups of g channels; nibbles [hd/2] (c low, c + hd/2 high).
  const int64_t g = kv_q4_value_group(static_cast<int>(hd)), ng = hd / g, half = hd / 2;
  const auto* params = reinterpret_cast<const uint16_t*>(p);
  const uint8_t* nib = p + bs * nkv * ng * 4;
  with_lanes_dividing(std::gcd(g, half), [&](auto d) {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    for (int64_t t = 0; t < n; ++t) {
      const uint16_t* pr = params + (t * nkv + kvh) * ng * 2;
      const uint8_t* row = nib + (t * nkv + kvh) * half;
      for (int64_t i = 0; i < hd; i += N) {
        const int64_t gi = i / g;
        const auto c = load_nibbles(d, row + i % half, i >= half);
        const auto x =
            hn::Add(hn::Mul(c, hn::Set(d, f16_to_f32(pr[gi * 2]))), hn::Set(d, f16_to_f32(pr[gi * 2 + 1])));
        hn::StoreU(x, d, dst + t * hd + i);
      }
    }
  });
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_KV_DECODE_INL_H_
