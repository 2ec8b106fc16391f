#include "ops/packed_weights.h"

#include "common/check.h"
#include "ops/matmul_simd.h"

namespace ladder::ops {

PackedWeights pack_weights(const WeightMatrix& w, ThreadPool& pool) {
  PackedWeights p;
  if (!detail::has_packed(w.type) || !check_matmul_support(w.type, w.n_in).is_ok() || w.n_out <= 0) {
    return p;
  }
  const int64_t groups = (w.n_out + 15) / 16;
  p.type = w.type;
  p.n_in = w.n_in;
  p.n_out = w.n_out;
  p.target = detail::dispatched_target();
  p.bytes = detail::packed_bytes(w.type, w.n_in, w.n_out);
  p.data = hwy::AllocateAligned<uint8_t>(p.bytes);
  detail::MatmulTask t;
  t.type = w.type;
  t.w = static_cast<const uint8_t*>(w.data);
  t.w_row_bytes = row_bytes(traits_of(w.type), static_cast<size_t>(w.n_in));
  t.n_in = w.n_in;
  t.y_stride = w.n_out;
  uint8_t* out = p.data.get();
  pool.parallel_for(groups, 1, [&](int64_t b, int64_t e) { detail::pack_groups(t, b, e, out); });
  return p;
}

}  // namespace ladder::ops
