#include "gguf/gguf_file.h"

#include "common/sha256.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gguf/gguf_parser.h"

namespace ladder::gguf {

// A read-only private mapping of the whole file; unmapped on destruction.
struct GgufFile::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  Mapping(void* a, size_t s) : addr(a), size(s) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr != nullptr) munmap(addr, size);
  }
};

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes) {
  GgufFile file;
  LADDER_RETURN_IF_ERROR(Parser::parse_into(bytes, file));
  return file;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = fmt::format("{}: cannot open: {}", path, std::strerror(err));
    return err == ENOENT ? not_found(std::move(msg)) : io_error(std::move(msg));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(fmt::format("{}: cannot stat: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(fmt::format("{}: not a regular file", path));
  }
  GgufFile file;
  file.path_ = path;
  const auto size = static_cast<size_t>(st.st_size);
  std::span<const uint8_t> bytes;
  if (size > 0) {  // mmap of length 0 fails; an empty file is reported by the parser
    void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return io_error(fmt::format("{}: cannot mmap {} bytes: {}", path, size, std::strerror(err)));
    }
    file.mapping_ = std::make_unique<Mapping>(addr, size);
    bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(addr), size);
  }
  ::close(fd);  // the mapping keeps the file alive
  Status st_parse = Parser::parse_into(bytes, file);
  if (!st_parse.is_ok()) return Status(st_parse.code(), path + ": " + st_parse.message());
  return file;
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

std::string type_label(const Value& v) {
  if (const Array* a = v.as_array()) return fmt::format("array of {}", value_type_name(a->elem_type));
  return std::string(value_type_name(v.type()));
}

Status wrong_type(std::string_view key, const Value& v, std::string_view expected) {
  return invalid_argument(
      fmt::format("gguf: key \"{}\" has type {}, expected {}", key, type_label(v), expected));
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64: return true;
    default: return false;
  }
}
bool is_float_type(ValueType t) {
  return t == ValueType::kFloat32 || t == ValueType::kFloat64;
}

}  // namespace

// Each getter: missing key -> kNotFound; present with an unusable type or a
// value that does not fit -> kInvalidArgument naming the key.
#define LADDER_GGUF_FIND_OR_NOT_FOUND(v, key) \
  const Value* v = find(key);                 \
  if (v == nullptr) return not_found(fmt::format("gguf: metadata key \"{}\" is missing", key))

Result<std::string> GgufFile::get_string(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  auto s = v->as_string();
  if (!s) return wrong_type(key, *v, "string");
  return std::string(*s);
}

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  if (!is_integer_type(v->type())) return wrong_type(key, *v, "an unsigned integer");
  auto u = v->as_uint();
  if (!u) {
    return invalid_argument(fmt::format(
        "gguf: key \"{}\" holds the negative value {}, expected an unsigned integer", key, *v->as_int()));
  }
  return *u;
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  if (!is_integer_type(v->type())) return wrong_type(key, *v, "an integer");
  auto i = v->as_int();
  if (!i) {
    return invalid_argument(fmt::format(
        "gguf: key \"{}\" holds {}, which does not fit a signed 64-bit integer", key, *v->as_uint()));
  }
  return *i;
}

Result<double> GgufFile::get_float(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  if (!is_float_type(v->type()) && !is_integer_type(v->type())) return wrong_type(key, *v, "a number");
  return *v->as_float();
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  auto b = v->as_bool();
  if (!b) return wrong_type(key, *v, "bool");
  return *b;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  const Array* a = v->as_array();
  if (a == nullptr || a->elem_type != ValueType::kString) return wrong_type(key, *v, "array of string");
  std::vector<std::string> out;
  out.reserve(a->items.size());
  for (const Value& item : a->items) out.emplace_back(*item.as_string());
  return out;
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  const Array* a = v->as_array();
  if (a == nullptr || (!is_float_type(a->elem_type) && !is_integer_type(a->elem_type))) {
    return wrong_type(key, *v, "array of numbers");
  }
  std::vector<float> out;
  out.reserve(a->items.size());
  for (const Value& item : a->items) out.push_back(static_cast<float>(*item.as_float()));
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  LADDER_GGUF_FIND_OR_NOT_FOUND(v, key);
  const Array* a = v->as_array();
  if (a == nullptr || !is_integer_type(a->elem_type)) return wrong_type(key, *v, "array of integers");
  std::vector<int64_t> out;
  out.reserve(a->items.size());
  for (size_t i = 0; i < a->items.size(); ++i) {
    auto x = a->items[i].as_int();
    if (!x) {
      return invalid_argument(
          fmt::format("gguf: key \"{}\" item {} holds {}, which does not fit a signed 64-bit integer", key, i,
                      *a->items[i].as_uint()));
    }
    out.push_back(*x);
  }
  return out;
}

#undef LADDER_GGUF_FIND_OR_NOT_FOUND

Result<uint64_t> GgufFile::get_uint_or(std::string_view key, uint64_t fallback) const {
  if (find(key) == nullptr) return fallback;
  return get_uint(key);
}

Result<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
  if (find(key) == nullptr) return fallback;
  return get_float(key);
}

Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  if (find(key) == nullptr) return fallback;
  return get_bool(key);
}

Result<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
  if (find(key) == nullptr) return fallback;
  return get_string(key);
}

const std::string& GgufFile::digest() const {
  LADDER_CHECK(digest_once_ != nullptr, "digest() on a moved-from GgufFile");
  std::call_once(*digest_once_, [this] {
    digest_ = sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes_.data()), bytes_.size()));
  });
  return digest_;
}

}  // namespace ladder::gguf
