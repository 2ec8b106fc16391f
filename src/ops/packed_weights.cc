#include "ops/packed_weights.h"

#include "common/check.h"
#include "ops/amx.h"
#include "ops/kernel_choice.h"
#include "ops/matmul_simd.h"

namespace ladder::ops {

namespace {

// F16 and BF16: packed for AMX-BF16 tiles where amx_bf16_active().
bool is_bf16_tile_type(TensorType type) {
  return type == TensorType::kF16 || type == TensorType::kBF16;
}

// Q8_0 and Q4_0 stay as stored where this machine's calibration found the
// stored layout faster at decode, unless AMX tiles (which read the packed
// layout) serve their batches. Either way the results are the same bits.
bool wants_packed(TensorType type) {
  if (type != TensorType::kQ8_0 && type != TensorType::kQ4_0) return true;
  return kernel_choice().repack_q32 || amx_int8_active();
}

}  // namespace

bool has_packed_layout(TensorType type) {
  return is_bf16_tile_type(type) ? amx_bf16_active() : detail::has_packed(type);
}

size_t packed_weight_bytes(TensorType type, int64_t n_in, int64_t n_out) {
  return is_bf16_tile_type(type) ? detail::bf16_packed_bytes(n_in, n_out)
                                 : detail::packed_bytes(type, n_in, n_out);
}

PackedWeights pack_weights(const WeightMatrix& w, ThreadPool& pool) {
  if (!has_packed_layout(w.type) || !wants_packed(w.type)) return {};
  return pack_weights_always(w, pool);
}

PackedWeights pack_weights_always(const WeightMatrix& w, ThreadPool& pool) {
  PackedWeights p;
  if (!has_packed_layout(w.type) || !check_matmul_support(w.type, w.n_in).is_ok() || w.n_out <= 0) {
    return p;
  }
  const int64_t groups = (w.n_out + 15) / 16;
  p.type = w.type;
  p.n_in = w.n_in;
  p.n_out = w.n_out;
  p.target = detail::dispatched_target();
  p.bytes = packed_weight_bytes(w.type, w.n_in, w.n_out);
  p.data = hwy::AllocateAligned<uint8_t>(p.bytes);
  detail::MatmulTask t;
  t.type = w.type;
  t.w = static_cast<const uint8_t*>(w.data);
  t.w_row_bytes = row_bytes(traits_of(w.type), static_cast<size_t>(w.n_in));
  t.n_in = w.n_in;
  t.y_stride = w.n_out;
  uint8_t* out = p.data.get();
  if (is_bf16_tile_type(w.type)) {
    pool.parallel_for(groups, 1, [&](int64_t b, int64_t e) { detail::pack_bf16_groups(t, b, e, out); });
  } else {
    pool.parallel_for(groups, 1, [&](int64_t b, int64_t e) { detail::pack_groups(t, b, e, out); });
  }
  return p;
}

}  // namespace ladder::ops
