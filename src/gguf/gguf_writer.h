// GgufWriter: builds a GGUF v3 file (synthetic models, test fixtures) that
// GgufFile reads back unchanged.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "gguf/gguf_value.h"

namespace ladder::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  // Metadata, written in insertion order. Setting a key twice replaces it.
  void set(std::string key, Value value);
  void set_string(std::string key, std::string v) { set(std::move(key), Value::make_string(std::move(v))); }
  void set_u32(std::string key, uint32_t v) { set(std::move(key), Value::make_uint(ValueType::kUint32, v)); }
  void set_i32(std::string key, int32_t v) { set(std::move(key), Value::make_int(ValueType::kInt32, v)); }
  void set_f32(std::string key, float v) { set(std::move(key), Value::make_float(ValueType::kFloat32, v)); }
  void set_bool(std::string key, bool v) { set(std::move(key), Value::make_bool(v)); }

  // A tensor with ggml-order shape (shape[0] = row length) and its raw bytes,
  // which must be exactly the size the type and shape imply.
  Status add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                    std::vector<uint8_t> data);

  std::vector<uint8_t> to_bytes() const;
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
  };
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace ladder::gguf
