#include "kv/kv_storage.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

namespace ladder::kv {
namespace {

constexpr size_t kAlignment = 64;

Status validate(const KvShape& s, bool need_blocks) {
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

// a * b, or nullopt on overflow.
std::optional<size_t> mul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a) return std::nullopt;
  return a * b;
}

}  // namespace

void KvStorage::FreeDeleter::operator()(uint8_t* p) const {
  std::free(p);
}

Result<size_t> KvStorage::block_bytes(const KvShape& shape) {
  LADDER_RETURN_IF_ERROR(validate(shape, false));
  const size_t elem = shape.dtype == TensorType::kF32 ? 4 : 2;
  auto n = mul(static_cast<size_t>(shape.block_size), static_cast<size_t>(shape.n_kv_heads));
  if (n) n = mul(*n, static_cast<size_t>(shape.head_dim));
  if (n) n = mul(*n, elem);
  if (!n) return out_of_range("KV block size overflows");
  return *n;
}

Result<int32_t> KvStorage::blocks_that_fit(const KvShape& shape, size_t bytes) {
  LADDER_ASSIGN_OR_RETURN(size_t block, block_bytes(shape));
  const auto per_block = mul(block, 2 * static_cast<size_t>(shape.n_layers));
  if (!per_block) return out_of_range("KV block size overflows");
  const size_t n = bytes / *per_block;
  return static_cast<int32_t>(std::min<size_t>(n, std::numeric_limits<int32_t>::max()));
}

Result<std::unique_ptr<KvStorage>> KvStorage::create(const KvShape& shape, size_t max_bytes) {
  LADDER_RETURN_IF_ERROR(validate(shape, true));
  LADDER_ASSIGN_OR_RETURN(size_t block, block_bytes(shape));
  auto layer_bytes = mul(block, static_cast<size_t>(shape.n_blocks));
  auto total = layer_bytes ? mul(*layer_bytes, 2 * static_cast<size_t>(shape.n_layers)) : std::nullopt;
  if (!total || *total > max_bytes) {
    return out_of_range(fmt::format("KV storage of {} blocks x {} layers does not fit the limit of {} bytes",
                                    shape.n_blocks, shape.n_layers, max_bytes));
  }
  const size_t rounded = (*total + kAlignment - 1) / kAlignment * kAlignment;
  auto* raw = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
  if (raw == nullptr)
    return resource_exhausted(fmt::format("cannot allocate {} bytes of KV storage", rounded));
  // Zeroed so that reading an unwritten slot is deterministic (it never should be).
  std::memset(raw, 0, rounded);

  std::unique_ptr<KvStorage> s(new KvStorage());
  s->shape_ = shape;
  s->total_bytes_ = *total;
  s->memory_.reset(raw);
  for (int l = 0; l < shape.n_layers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      ops::PagedKvLayer layer;
      layer.base = raw + (static_cast<size_t>(l) * 2 + static_cast<size_t>(kv)) * *layer_bytes;
      layer.block_stride_bytes = block;
      layer.block_size = shape.block_size;
      layer.n_kv_heads = shape.n_kv_heads;
      layer.head_dim = shape.head_dim;
      layer.dtype = shape.dtype;
      layer.layout = kv == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
      (kv == 0 ? s->k_ : s->v_).push_back(layer);
    }
  }
  return s;
}

std::string KvStorage::format_name() const {
  // "kt": keys transposed within a block (ops::KvLayout::kDimMajor).
  return fmt::format("{}-b{}-kt", shape_.dtype == TensorType::kF32 ? "f32" : "f16", shape_.block_size);
}

}  // namespace ladder::kv
