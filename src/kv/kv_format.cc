#include "kv/kv_format.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

namespace ladder::kv {
namespace {

// a * b, or nullopt on overflow.
std::optional<size_t> mul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a) return std::nullopt;
  return a * b;
}

}  // namespace

Status validate_kv_shape(const KvShape& s, bool need_blocks) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.block_size <= 0) {
    return invalid_argument(
        fmt::format("KV shape needs positive sizes (layers {}, kv heads {}, head dim {}, block size {})",
                    s.n_layers, s.n_kv_heads, s.head_dim, s.block_size));
  }
  if (need_blocks && s.n_blocks <= 0) return invalid_argument("KV storage needs at least one block");
  if (s.dtype != TensorType::kF32 && s.dtype != TensorType::kF16) {
    return unimplemented(fmt::format("KV dtype {} is not supported (F32 or F16)", tensor_type_name(s.dtype)));
  }
  return Status::ok();
}

Result<size_t> kv_layer_block_bytes(const KvShape& shape) {
  LADDER_RETURN_IF_ERROR(validate_kv_shape(shape, false));
  const size_t elem = shape.dtype == TensorType::kF32 ? 4 : 2;
  auto n = mul(static_cast<size_t>(shape.block_size), static_cast<size_t>(shape.n_kv_heads));
  if (n) n = mul(*n, static_cast<size_t>(shape.head_dim));
  if (n) n = mul(*n, elem);
  if (!n) return out_of_range("KV block size overflows");
  return *n;
}

Result<size_t> kv_block_bytes(const KvShape& shape) {
  LADDER_ASSIGN_OR_RETURN(size_t layer, kv_layer_block_bytes(shape));
  const auto all = mul(layer, 2 * static_cast<size_t>(shape.n_layers));
  if (!all) return out_of_range("KV block size overflows");
  return *all;
}

Result<int32_t> kv_blocks_that_fit(const KvShape& shape, size_t bytes) {
  LADDER_ASSIGN_OR_RETURN(size_t block, kv_block_bytes(shape));
  const size_t n = bytes / block;
  return static_cast<int32_t>(std::min<size_t>(n, std::numeric_limits<int32_t>::max()));
}

std::string kv_format_name(const KvShape& shape) {
  return fmt::format("{}-b{}-kt", shape.dtype == TensorType::kF32 ? "f32" : "f16", shape.block_size);
}

}  // namespace ladder::kv
