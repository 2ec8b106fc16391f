// libFuzzer target for the GGUF reader. For every input: parse it; a
// failure must be a clean kInvalidArgument / kUnimplemented. A file that
// parses has every metadata value and tensor touched (typed getters, the
// first block of each tensor dequantized), and is re-written with
// GgufWriter and parsed again, which must give back the same content.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/quant.h"

namespace ladder::gguf {
namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_gguf: %s\n", what);
  std::abort();
}

bool same(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (const Array* x = a.as_array()) {
    const Array* y = b.as_array();
    if (x->elem_type != y->elem_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i) {
      if (!same(x->items[i], y->items[i])) return false;
    }
    return true;
  }
  if (a.as_string()) return *a.as_string() == *b.as_string();
  if (a.as_bool()) return *a.as_bool() == *b.as_bool();
  if (a.type() == ValueType::kFloat32 || a.type() == ValueType::kFloat64) {
    const double x = *a.as_float(), y = *b.as_float();
    return x == y || (x != x && y != y);  // NaN payloads may differ
  }
  if (a.as_uint() && b.as_uint()) return *a.as_uint() == *b.as_uint();
  return a.as_int() == b.as_int();
}

volatile double g_sink = 0;  // keeps the touched values observable

void touch(const GgufFile& f) {
  double acc = 0;
  for (const auto& [key, value] : f.metadata()) {
    if (f.find(key) != &value) fail("find() does not return the stored value");
    acc += f.get_uint(key).is_ok() + f.get_int(key).is_ok() + f.get_float(key).is_ok();
    acc += f.get_bool(key).is_ok() + f.get_string(key).is_ok() + f.get_string_array(key).is_ok();
    acc += f.get_float_array(key).is_ok() + f.get_int_array(key).is_ok();
    acc += f.get_uint_or(key, 0).is_ok() + f.get_string_or(key, "").is_ok();
  }
  for (const TensorInfo& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) fail("find_tensor() does not return the stored tensor");
    const TensorTypeTraits& traits = traits_of(t.type);
    if (!traits.dequantizable || t.n_bytes < traits.block_bytes) continue;
    std::vector<float> y(traits.block_elems);
    if (!dequantize_row(t.type, t.data, y.data(), y.size()).is_ok())
      fail("dequantize_row failed on a valid block");
    acc += y[0];
  }
  g_sink = g_sink + acc;
}

void round_trip(const GgufFile& f) {
  // A huge (valid) alignment would make the writer pad to it: skip, the
  // property is about content, not padding.
  if (f.alignment() > 4096) return;
  GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const TensorInfo& t : f.tensors()) {
    if (t.shape.empty()) return;  // a 0-dim tensor is readable but the writer only makes shaped ones
    if (!w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)).is_ok()) {
      fail("the writer rejected a tensor the reader accepted");
    }
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto g = GgufFile::parse(bytes);
  if (!g.is_ok()) fail("a re-written file does not parse");
  if (g->metadata().size() != f.metadata().size() || g->tensors().size() != f.tensors().size()) {
    fail("a re-written file has different counts");
  }
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    if (g->metadata()[i].first != f.metadata()[i].first ||
        !same(g->metadata()[i].second, f.metadata()[i].second)) {
      fail("a re-written file has a different metadata value");
    }
  }
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const TensorInfo& a = f.tensors()[i];
    const TensorInfo& b = g->tensors()[i];
    if (a.name != b.name || a.type != b.type || a.shape != b.shape || a.n_bytes != b.n_bytes ||
        !std::equal(a.data, a.data + a.n_bytes, b.data)) {
      fail("a re-written file has a different tensor");
    }
  }
}

}  // namespace
}  // namespace ladder::gguf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ladder::gguf;
  auto file = GgufFile::parse(std::span<const uint8_t>(data, size));
  if (!file.is_ok()) {
    const auto code = file.status().code();
    if (code != ladder::StatusCode::kInvalidArgument && code != ladder::StatusCode::kUnimplemented) {
      fail("a malformed file gave an unexpected status code");
    }
    return 0;
  }
  touch(*file);
  round_trip(*file);
  return 0;
}
