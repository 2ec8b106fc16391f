#include "kv/kv_format.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

#include "ops/kv_codec.h"

namespace ladder::kv {
namespace {

// a * b, or nullopt on overflow.
std::optional<size_t> mul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a) return std::nullopt;
  return a * b;
}

// The layouts' byte counts come from ops; these bounds keep them from overflowing.
constexpr int64_t kMaxDim = 1 << 20;

Result<size_t> layer_bytes(const KvShape& shape, ops::KvLayout layout) {
  LADDER_RETURN_IF_ERROR(validate_kv_shape(shape, false));
  return ops::kv_layer_block_bytes(shape.dtype, layout, shape.block_size, shape.n_kv_heads, shape.head_dim);
}

}  // namespace

Status validate_kv_shape(const KvShape& s, bool need_blocks) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.block_size <= 0) {
    return invalid_argument(
        fmt::format("KV shape needs positive sizes (layers {}, kv heads {}, head dim {}, block size {})",
                    s.n_layers, s.n_kv_heads, s.head_dim, s.block_size));
  }
  if (s.n_layers > kMaxDim || s.n_kv_heads > kMaxDim || s.head_dim > kMaxDim || s.block_size > kMaxDim ||
      int64_t{s.n_kv_heads} * s.head_dim * s.block_size > kMaxDim * 64) {
    return out_of_range("KV shape is too large");
  }
  if (need_blocks && s.n_blocks <= 0) return invalid_argument("KV storage needs at least one block");
  if (!ops::kv_dtype_supported(s.dtype)) {
    // The dtype may come off the wire (a KV transfer header): only a known
    // type has a name.
    const auto raw = static_cast<uint32_t>(s.dtype);
    const std::string name =
        tensor_type_traits(raw) ? std::string(tensor_type_name(s.dtype)) : fmt::format("with type id {}", raw);
    return unimplemented(fmt::format("KV dtype {} is not supported (f32, f16, q8 or q4)", name));
  }
  if (const char* problem = ops::kv_shape_problem(s.dtype, s.block_size, s.head_dim)) {
    return invalid_argument(problem);
  }
  if (s.n_staging < 0) return invalid_argument("KV staging slots must be >= 0");
  if (need_blocks && ops::kv_dtype_staged(s.dtype) && s.n_staging < 1) {
    return invalid_argument(
        fmt::format("the {} KV format needs at least one staging slot", ops::kv_dtype_short_name(s.dtype)));
  }
  return Status::ok();
}

Result<size_t> kv_layer_block_bytes(const KvShape& shape) {
  return layer_bytes(shape, ops::KvLayout::kDimMajor);
}

Result<size_t> kv_layer_block_bytes_v(const KvShape& shape) {
  return layer_bytes(shape, ops::KvLayout::kTokenMajor);
}

Result<size_t> kv_block_bytes(const KvShape& shape) {
  LADDER_ASSIGN_OR_RETURN(size_t k, kv_layer_block_bytes(shape));
  LADDER_ASSIGN_OR_RETURN(size_t v, kv_layer_block_bytes_v(shape));
  const auto all = mul(k + v, static_cast<size_t>(shape.n_layers));
  if (!all) return out_of_range("KV block size overflows");
  return *all;
}

Result<size_t> kv_staging_bytes(const KvShape& shape) {
  LADDER_RETURN_IF_ERROR(validate_kv_shape(shape, false));
  const size_t one =
      ops::kv_layer_staging_bytes(shape.dtype, shape.block_size, shape.n_kv_heads, shape.head_dim);
  const auto all = mul(one, 2 * static_cast<size_t>(shape.n_layers));
  if (!all) return out_of_range("KV staging size overflows");
  return *all;
}

Result<size_t> kv_storage_bytes(const KvShape& shape) {
  LADDER_ASSIGN_OR_RETURN(size_t block, kv_block_bytes(shape));
  LADDER_ASSIGN_OR_RETURN(size_t slot, kv_staging_bytes(shape));
  const auto blocks = mul(block, static_cast<size_t>(std::max(shape.n_blocks, 0)));
  const auto slots = mul(slot, static_cast<size_t>(ops::kv_dtype_staged(shape.dtype) ? shape.n_staging : 0));
  if (!blocks || !slots || *blocks > std::numeric_limits<size_t>::max() - *slots) {
    return out_of_range(
        fmt::format("KV storage of {} blocks x {} layers overflows", shape.n_blocks, shape.n_layers));
  }
  return *blocks + *slots;
}

Result<int32_t> kv_blocks_that_fit(const KvShape& shape, size_t bytes) {
  LADDER_ASSIGN_OR_RETURN(size_t block, kv_block_bytes(shape));
  KvShape no_blocks = shape;
  no_blocks.n_blocks = 0;
  LADDER_ASSIGN_OR_RETURN(size_t staging, kv_storage_bytes(no_blocks));
  if (staging >= bytes) return 0;
  const size_t n = (bytes - staging) / block;
  return static_cast<int32_t>(std::min<size_t>(n, std::numeric_limits<int32_t>::max()));
}

bool kv_format_is_approximate(TensorType dtype) { return ops::kv_dtype_quantized(dtype); }

std::string kv_format_name(const KvShape& shape) {
  return fmt::format("{}-b{}-kt", ops::kv_dtype_short_name(shape.dtype), shape.block_size);
}

}  // namespace ladder::kv
