// A GGUF metadata value: a scalar, a string, or an array (arrays may nest).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ladder::gguf {

// On-disk gguf_type ids; never renumber.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view value_type_name(ValueType t);

class Value;

struct Array {
  ValueType elem_type = ValueType::kUint8;
  std::vector<Value> items;
};

class Value {
 public:
  Value() = default;
  static Value make_uint(ValueType t, uint64_t v);   // t: one of the unsigned types
  static Value make_int(ValueType t, int64_t v);     // t: one of the signed types
  static Value make_float(ValueType t, double v);    // t: kFloat32 or kFloat64
  static Value make_bool(bool v);
  static Value make_string(std::string v);
  static Value make_array(ValueType elem_type, std::vector<Value> items);

  ValueType type() const { return type_; }
  bool is_array() const { return type_ == ValueType::kArray; }

  // Any integer type (and bool) as a signed / unsigned value; nullopt when the
  // type is not integral or the value does not fit.
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  // Float types, and integers converted.
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  std::optional<std::string_view> as_string() const;
  const Array* as_array() const;

 private:
  ValueType type_ = ValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> v_{uint64_t{0}};
};

}  // namespace ladder::gguf
