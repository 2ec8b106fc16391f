#include "gguf/gguf_value.h"

#include <cmath>
#include <limits>

#include "common/check.h"

namespace ladder::gguf {
namespace {

bool is_unsigned_type(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 ||
         t == ValueType::kUint64;
}
bool is_signed_type(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 || t == ValueType::kInt64;
}

// Largest value an unsigned type holds; the writer stores exactly that width.
uint64_t unsigned_max(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return std::numeric_limits<uint8_t>::max();
    case ValueType::kUint16: return std::numeric_limits<uint16_t>::max();
    case ValueType::kUint32: return std::numeric_limits<uint32_t>::max();
    default: return std::numeric_limits<uint64_t>::max();
  }
}
std::pair<int64_t, int64_t> signed_range(ValueType t) {
  switch (t) {
    case ValueType::kInt8: return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
    case ValueType::kInt16: return {std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max()};
    case ValueType::kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

}  // namespace

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

Value Value::make_uint(ValueType t, uint64_t v) {
  LADDER_CHECK(is_unsigned_type(t), "make_uint needs an unsigned value type");
  LADDER_CHECK(v <= unsigned_max(t), "make_uint: value does not fit the type's width");
  Value out;
  out.type_ = t;
  out.v_ = v;
  return out;
}

Value Value::make_int(ValueType t, int64_t v) {
  LADDER_CHECK(is_signed_type(t), "make_int needs a signed value type");
  const auto [lo, hi] = signed_range(t);
  LADDER_CHECK(v >= lo && v <= hi, "make_int: value does not fit the type's width");
  Value out;
  out.type_ = t;
  out.v_ = v;
  return out;
}

Value Value::make_float(ValueType t, double v) {
  LADDER_CHECK(t == ValueType::kFloat32 || t == ValueType::kFloat64, "make_float needs float32 or float64");
  Value out;
  out.type_ = t;
  // A float32 value holds exactly what the file holds, so a round trip is exact.
  out.v_ = t == ValueType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
  return out;
}

Value Value::make_bool(bool v) {
  Value out;
  out.type_ = ValueType::kBool;
  out.v_ = v;
  return out;
}

Value Value::make_string(std::string v) {
  Value out;
  out.type_ = ValueType::kString;
  out.v_ = std::move(v);
  return out;
}

Value Value::make_array(ValueType elem_type, std::vector<Value> items) {
  for (const Value& item : items) {
    LADDER_CHECK(item.type() == elem_type, "make_array: an item's type differs from the element type");
  }
  Value out;
  out.type_ = ValueType::kArray;
  out.v_ = Array{elem_type, std::move(items)};
  return out;
}

std::optional<int64_t> Value::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&v_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<uint64_t> Value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&v_)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v_)) {
    if (*i < 0) return std::nullopt;
    return static_cast<uint64_t>(*i);
  }
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1u : 0u;
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v_)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

std::optional<std::string_view> Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return std::string_view(*s);
  return std::nullopt;
}

const Array* Value::as_array() const {
  return std::get_if<Array>(&v_);
}

}  // namespace ladder::gguf
