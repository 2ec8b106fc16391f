// `ladder inspect FILE.gguf [--json]`: a GGUF file's header, its
// architecture and whether Ladder serves it (and if not, why), metadata and
// tensor table. Long arrays and strings are summarised so that a 150k-token
// vocabulary or a chat template does not flood the terminal.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace ladder::cli {
namespace {

constexpr size_t kMaxArrayItemsShown = 8;
constexpr size_t kMaxStringBytesShown = 200;

struct InspectOptions {
  std::string path;
  bool json = false;
};

// Cuts s to at most max bytes without splitting a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] is a continuation byte
  return s.substr(0, n);
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out.push_back(ch);
        }
    }
  }
  return out + "\"";
}

std::string type_label(const gguf::Value& v) {
  if (const gguf::Array* a = v.as_array()) {
    if (a->elem_type == gguf::ValueType::kArray && !a->items.empty()) {
      return fmt::format("array[{}]", type_label(a->items.front()));
    }
    return fmt::format("array[{}]", gguf::value_type_name(a->elem_type));
  }
  return std::string(gguf::value_type_name(v.type()));
}

std::string scalar_text(const gguf::Value& v) {
  using gguf::ValueType;
  switch (v.type()) {
    // Shortest text that reads back to the same float32 / float64.
    case ValueType::kFloat32: return fmt::format("{}", static_cast<float>(*v.as_float()));
    case ValueType::kFloat64: return fmt::format("{}", *v.as_float());
    case ValueType::kBool: return *v.as_bool() ? "true" : "false";
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64: return fmt::format("{}", *v.as_int());
    default: return fmt::format("{}", *v.as_uint());
  }
}

std::string value_text(const gguf::Value& v) {
  if (auto s = v.as_string()) {
    if (s->size() <= kMaxStringBytesShown) return quoted(*s);
    return fmt::format("{}... (truncated, {} bytes)", quoted(utf8_prefix(*s, kMaxStringBytesShown)),
                       s->size());
  }
  if (const gguf::Array* a = v.as_array()) {
    std::string out = "[";
    const size_t shown = std::min(a->items.size(), kMaxArrayItemsShown);
    for (size_t i = 0; i < shown; ++i) {
      if (i > 0) out += ", ";
      out += value_text(a->items[i]);
    }
    if (shown < a->items.size()) out += ", ...";
    out += "]";
    if (shown < a->items.size()) out += fmt::format(" ({} items)", a->items.size());
    return out;
  }
  return scalar_text(v);
}

nlohmann::json value_json(const gguf::Value& v) {
  nlohmann::json j;
  j["type"] = type_label(v);
  if (auto s = v.as_string()) {
    if (s->size() <= kMaxStringBytesShown) {
      j["value"] = std::string(*s);
    } else {
      j["value"] = std::string(utf8_prefix(*s, kMaxStringBytesShown));
      j["truncated"] = true;
      j["length"] = s->size();
    }
  } else if (const gguf::Array* a = v.as_array()) {
    j["length"] = a->items.size();
    nlohmann::json items = nlohmann::json::array();
    const size_t shown = std::min(a->items.size(), kMaxArrayItemsShown);
    for (size_t i = 0; i < shown; ++i) {
      nlohmann::json item = value_json(a->items[i]);
      items.push_back(item.contains("value") && !item.contains("truncated") ? item["value"] : item);
    }
    j["value"] = std::move(items);
    if (shown < a->items.size()) j["truncated"] = true;
  } else {
    using gguf::ValueType;
    switch (v.type()) {
      case ValueType::kFloat32:
      case ValueType::kFloat64: j["value"] = *v.as_float(); break;
      case ValueType::kBool: j["value"] = *v.as_bool(); break;
      case ValueType::kInt8:
      case ValueType::kInt16:
      case ValueType::kInt32:
      case ValueType::kInt64: j["value"] = *v.as_int(); break;
      default: j["value"] = *v.as_uint(); break;
    }
  }
  return j;
}

std::string shape_text(const gguf::TensorInfo& t) {
  std::string out = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) out += fmt::format("{}{}", i > 0 ? ", " : "", t.shape[i]);
  return out + "]";
}

// general.architecture ("" when absent) and, when Ladder cannot run the
// file's model, why (one line).
struct ArchitectureFacts {
  std::string name;
  std::string refusal;
};

ArchitectureFacts architecture_of(const gguf::GgufFile& f) {
  ArchitectureFacts a;
  if (const gguf::Value* v = f.find("general.architecture"); v != nullptr && v->as_string()) {
    a.name = std::string(*v->as_string());
  }
  if (auto config = model::ModelConfig::from_gguf(f); !config.is_ok()) a.refusal = config.status().message();
  return a;
}

int print_json(const gguf::GgufFile& f) {
  nlohmann::json j;
  j["file"] = f.path();
  const ArchitectureFacts arch = architecture_of(f);
  j["architecture"] = arch.name;
  j["supported"] = arch.refusal.empty();
  if (!arch.refusal.empty()) j["unsupported_reason"] = arch.refusal;
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["n_tensors"] = f.tensors().size();
  j["n_kv"] = f.metadata().size();
  j["data_offset"] = f.data_offset();
  j["file_size"] = f.file_size();
  // Metadata as an array of entries keeps the file order.
  nlohmann::json metadata = nlohmann::json::array();
  for (const auto& [key, value] : f.metadata()) {
    nlohmann::json entry = value_json(value);
    entry["key"] = key;
    metadata.push_back(std::move(entry));
  }
  j["metadata"] = std::move(metadata);
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", std::string(tensor_type_name(t.type))},
                       {"shape", t.shape},
                       {"n_elements", t.n_elements},
                       {"bytes", t.n_bytes},
                       {"offset", t.offset}});
  }
  j["tensors"] = std::move(tensors);
  // Keys and strings come from the file: invalid UTF-8 is replaced, not fatal.
  const std::string out = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::printf("%s\n", out.c_str());
  return 0;
}

int print_text(const gguf::GgufFile& f) {
  std::printf("%s\n", f.path().c_str());
  std::printf("  GGUF version  %u\n", f.version());
  std::printf("  alignment     %u\n", f.alignment());
  std::printf("  metadata      %zu keys\n", f.metadata().size());
  std::printf("  tensors       %zu\n", f.tensors().size());
  std::printf("  data offset   %llu\n", static_cast<unsigned long long>(f.data_offset()));
  std::printf("  file size     %llu bytes\n", static_cast<unsigned long long>(f.file_size()));
  const ArchitectureFacts arch = architecture_of(f);
  std::printf("  architecture  %s (%s)\n", arch.name.empty() ? "(none)" : arch.name.c_str(),
              arch.refusal.empty() ? "Ladder serves it" : ("Ladder does not serve it: " + arch.refusal).c_str());

  size_t key_width = 3;
  for (const auto& [key, value] : f.metadata()) key_width = std::max(key_width, key.size());
  std::printf("\nmetadata:\n");
  for (const auto& [key, value] : f.metadata()) {
    std::string line =
        fmt::format("  {:<{}}  {:<14} {}", key, key_width, type_label(value), value_text(value));
    std::printf("%s\n", line.c_str());
  }

  size_t name_width = 4;
  for (const auto& t : f.tensors()) name_width = std::max(name_width, t.name.size());
  std::printf("\ntensors:\n");
  std::string header = fmt::format("  {:<{}}  {:<5} {:<24} {:>12} {:>12}", "name", name_width, "type",
                                   "shape", "bytes", "offset");
  std::printf("%s\n", header.c_str());
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    std::string line = fmt::format("  {:<{}}  {:<5} {:<24} {:>12} {:>12}", t.name, name_width,
                                   tensor_type_name(t.type), shape_text(t), t.n_bytes, t.offset);
    std::printf("%s\n", line.c_str());
    total += t.n_bytes;
  }
  std::printf("  total tensor bytes: %llu\n", static_cast<unsigned long long>(total));
  return 0;
}

int run_inspect(const InspectOptions& opts) {
  auto file = gguf::GgufFile::open(opts.path);
  if (!file.is_ok()) {
    std::fprintf(stderr, "error: %s\n", file.status().to_string().c_str());
    return 1;
  }
  return opts.json ? print_json(*file) : print_text(*file);
}

CommandRegistrar register_inspect{"inspect", 20, [](CLI::App& app) -> CommandRun {
                       auto* cmd =
                           app.add_subcommand(
                               "inspect",
                               "Show a GGUF file's header, architecture (and whether Ladder serves it), metadata and "
                               "tensors");
                       auto opts = std::make_shared<InspectOptions>();
                       cmd->add_option("file", opts->path, "The .gguf file")->required();
                       cmd->add_flag("--json", opts->json, "Print JSON instead of text");
                       return [opts] { return run_inspect(*opts); };
                     }};

}  // namespace
}  // namespace ladder::cli
