#include "ops/packed_weights.h"

#include "common/check.h"
#include "ops/amx.h"
#include "ops/bf16_dot.h"
#include "ops/kernel_choice.h"
#include "ops/matmul_simd.h"

namespace ladder::ops {

namespace {

bool is_float(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16;
}

// The layout `type` packs to on the active target and CPU: F16 and BF16 for
// AMX-BF16 tiles where amx_bf16_active(), BF16 for the dot kernel where
// bf16_dot_active(), float chunks for the float types elsewhere, the
// 16-column layout for quantized types.
PackedLayout layout_for(TensorType type) {
  if ((type == TensorType::kF16 || type == TensorType::kBF16) && amx_bf16_active()) return PackedLayout::kAmxBf16;
  if (type == TensorType::kBF16 && bf16_dot_active()) return PackedLayout::kBf16Dot;
  return is_float(type) ? PackedLayout::kFloatChunks : PackedLayout::kColumns16;
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
  switch (layout_for(type)) {
    case PackedLayout::kAmxBf16:
    case PackedLayout::kBf16Dot: return true;
    case PackedLayout::kFloatChunks: return detail::has_float_packed();
    case PackedLayout::kColumns16: break;
  }
  return detail::has_packed(type);
}

size_t packed_weight_bytes(TensorType type, int64_t n_in, int64_t n_out) {
  switch (layout_for(type)) {
    case PackedLayout::kAmxBf16:
    case PackedLayout::kBf16Dot: return detail::bf16_packed_bytes(n_in, n_out);
    case PackedLayout::kFloatChunks: return detail::float_packed_bytes(type, n_in, n_out);
    case PackedLayout::kColumns16: break;
  }
  return detail::packed_bytes(type, n_in, n_out);
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
  p.layout = layout_for(w.type);
  const int64_t group_cols = p.layout == PackedLayout::kFloatChunks ? detail::float_pack_group_cols() : 16;
  const int64_t groups = (w.n_out + group_cols - 1) / group_cols;
  p.type = w.type;
  p.n_in = w.n_in;
  p.n_out = w.n_out;
  p.target = detail::dispatched_target();
  p.bytes = packed_weight_bytes(w.type, w.n_in, w.n_out);
  p.data = PageMemory::map(p.bytes, PageMemory::Pages::kHuge);
  LADDER_CHECK(!p.data.empty(), "cannot allocate packed weights");
  detail::MatmulTask t;
  t.type = w.type;
  t.w = static_cast<const uint8_t*>(w.data);
  t.w_row_bytes = row_bytes(traits_of(w.type), static_cast<size_t>(w.n_in));
  t.n_in = w.n_in;
  t.y_stride = w.n_out;
  uint8_t* out = p.data.data();
  pool.parallel_for(groups, 1, [&](int64_t b, int64_t e) {
    switch (p.layout) {
      case PackedLayout::kAmxBf16:
      case PackedLayout::kBf16Dot: detail::pack_bf16_groups(t, b, e, out); return;
      case PackedLayout::kFloatChunks: detail::pack_float_groups(t, b, e, out); return;
      case PackedLayout::kColumns16: detail::pack_groups(t, b, e, out); return;
    }
  });
  return p;
}

}  // namespace ladder::ops
