#include "gguf/requantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <mutex>
#include <thread>

#include "gguf/gguf_writer.h"
#include "gguf/quant.h"
#include "gguf/quantize.h"

namespace ladder::gguf {
namespace {

constexpr std::array kTargets = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16, TensorType::kQ8_0,
                                 TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1,
                                 TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K};

// Rows converted per progress report (and per parallel dispatch).
constexpr uint64_t kChunkElements = uint64_t{1} << 20;

std::string target_names() {
  std::string s;
  for (TensorType t : kTargets) {
    std::string name(tensor_type_name(t));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s += (s.empty() ? "" : ", ") + name;
  }
  return s;
}

bool fits(TensorType type, uint64_t row_length) {
  return row_length % traits_of(type).block_elems == 0;
}

bool is_quantized(TensorType type) {
  return traits_of(type).block_elems > 1;
}

// llama.cpp's general.file_type (enum llama_ftype) for a model mostly of `type`.
uint32_t llama_file_type(TensorType type) {
  switch (type) {
    case TensorType::kF32: return 0;
    case TensorType::kF16: return 1;
    case TensorType::kQ4_0: return 2;
    case TensorType::kQ4_1: return 3;
    case TensorType::kQ8_0: return 7;
    case TensorType::kQ5_0: return 8;
    case TensorType::kQ5_1: return 9;
    case TensorType::kQ4_K: return 14;  // Q4_K_S: Q4_K throughout
    case TensorType::kQ5_K: return 16;  // Q5_K_S
    case TensorType::kQ6_K: return 18;
    case TensorType::kBF16: return 32;
    default: break;
  }
  LADDER_CHECK(false, "llama_file_type: not a requantize target");
  return 0;
}

// A weight matrix in llama.cpp's sense: a 2-D "*.weight" that is neither a
// norm nor an expert router.
bool is_weight_matrix(const TensorInfo& t) {
  const std::string& n = t.name;
  const std::string suffix = ".weight";
  return t.shape.size() == 2 && n.size() > suffix.size() &&
         n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         n.find("_norm.weight") == std::string::npos && n.find("ffn_gate_inp.weight") == std::string::npos;
}

TensorType default_output_type(TensorType dtype, uint64_t row_length) {
  if (!is_quantized(dtype) || dtype == TensorType::kQ8_0) return dtype;
  return fits(TensorType::kQ6_K, row_length) ? TensorType::kQ6_K : TensorType::kQ8_0;
}

TensorType auto_fallback(TensorType want, uint64_t row_length) {
  TensorType t = TensorType::kF16;
  if (want == TensorType::kQ4_K) t = TensorType::kQ5_0;
  if (want == TensorType::kQ5_K) t = TensorType::kQ5_1;
  if (want == TensorType::kQ6_K) t = TensorType::kQ8_0;
  return fits(t, row_length) ? t : TensorType::kF16;
}

// Runs fn(r0, r1) over [0, n) in contiguous pieces on up to `threads` threads;
// the first error wins.
Status parallel_rows(uint64_t n, int threads, const std::function<Status(uint64_t, uint64_t)>& fn) {
  const uint64_t pieces = std::min<uint64_t>(n, static_cast<uint64_t>(std::max(1, threads)));
  if (pieces <= 1) return fn(0, n);
  std::mutex mu;
  Status first = Status::ok();
  std::vector<std::thread> workers;
  for (uint64_t p = 0; p < pieces; ++p) {
    workers.emplace_back([&, p] {
      Status st = fn(n * p / pieces, n * (p + 1) / pieces);
      std::lock_guard<std::mutex> lock(mu);
      if (!st.is_ok() && first.is_ok()) first = st;
    });
  }
  for (auto& w : workers) w.join();
  return first;
}

}  // namespace

bool is_requantize_target(TensorType type) {
  return std::find(kTargets.begin(), kTargets.end(), type) != kTargets.end();
}

Result<TensorType> parse_requantize_target(std::string_view name) {
  auto t = tensor_type_from_name(name);
  if (!t || !is_requantize_target(*t)) {
    return invalid_argument(fmt::format("unknown type '{}' (choose one of {})", name, target_names()));
  }
  return *t;
}

Result<Fallback> parse_fallback(std::string_view value) {
  if (value == "refuse") return Fallback{};
  if (value == "auto") return Fallback{Fallback::Kind::kAuto, TensorType::kF16};
  auto t = parse_requantize_target(value);
  if (!t.is_ok())
    return invalid_argument(
        fmt::format("--fallback '{}': refuse, auto or a type ({})", value, target_names()));
  return Fallback{Fallback::Kind::kType, *t};
}

Result<std::vector<TensorPlan>> plan_requantize(const GgufFile& in, const RequantizeOptions& o) {
  for (auto t : {std::optional<TensorType>(o.dtype), o.output_dtype, o.embd_dtype}) {
    if (t && !is_requantize_target(*t)) {
      return invalid_argument(
          fmt::format("cannot requantize to {} (choose one of {})", tensor_type_name(*t), target_names()));
    }
  }
  if (o.fallback.kind == Fallback::Kind::kType && !is_requantize_target(o.fallback.type)) {
    return invalid_argument(fmt::format("cannot fall back to {}", tensor_type_name(o.fallback.type)));
  }
  const bool tied = in.find_tensor("output.weight") == nullptr;
  std::vector<TensorPlan> plan;
  for (const TensorInfo& t : in.tensors()) {
    TensorPlan p{t.name, t.type, t.type, t.shape, is_weight_matrix(t), false};
    if (!p.matrix) {
      plan.push_back(std::move(p));
      continue;
    }
    const uint64_t row = t.shape[0];
    const bool output_role = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
    TensorType want = o.dtype;
    if (output_role) {
      want = o.output_dtype ? *o.output_dtype : default_output_type(o.dtype, row);
    } else if (t.name == "token_embd.weight" && o.embd_dtype) {
      want = *o.embd_dtype;
    }
    if (!fits(want, row)) {
      const auto& wt = traits_of(want);
      switch (o.fallback.kind) {
        case Fallback::Kind::kRefuse:
          return invalid_argument(
              fmt::format("tensor '{}' has rows of {} elements, not a multiple of the {} block size {}; "
                          "pass --fallback auto (or a type) to store such tensors in a type that fits",
                          t.name, row, wt.name, wt.block_elems));
        case Fallback::Kind::kAuto: want = auto_fallback(want, row); break;
        case Fallback::Kind::kType:
          if (!fits(o.fallback.type, row)) {
            return invalid_argument(
                fmt::format("tensor '{}' has rows of {} elements, which fit neither {} nor the fallback {} "
                            "(block size {})",
                            t.name, row, wt.name, tensor_type_name(o.fallback.type),
                            traits_of(o.fallback.type).block_elems));
          }
          want = o.fallback.type;
          break;
      }
      p.fell_back = true;
    }
    if (want != t.type && !traits_of(t.type).dequantizable) {
      return unimplemented(fmt::format("tensor '{}' has type {}, which Ladder cannot read to convert", t.name,
                                       tensor_type_name(t.type)));
    }
    p.to = want;
    plan.push_back(std::move(p));
  }
  return plan;
}

Result<RequantizeStats> requantize_file(const GgufFile& in, const std::string& out_path,
                                        const RequantizeOptions& o, const RequantizeProgress& progress) {
  std::error_code ec;
  if (std::filesystem::exists(out_path, ec) && std::filesystem::equivalent(out_path, in.path(), ec)) {
    return invalid_argument(fmt::format("{}: the output would overwrite the input", out_path));
  }
  LADDER_ASSIGN_OR_RETURN(std::vector<TensorPlan> plan, plan_requantize(in, o));

  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) w.set(key, value);
  w.set("general.file_type", Value::make_uint(ValueType::kUint32, llama_file_type(o.dtype)));
  if (is_quantized(o.dtype)) w.set("general.quantization_version", Value::make_uint(ValueType::kUint32, 2));

  const int threads =
      o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t total = 0, done = 0;
  for (const TensorPlan& p : plan) total += in.find_tensor(p.name)->n_elements;
  RequantizeStats stats;
  for (const TensorPlan& p : plan) {
    const TensorInfo& t = *in.find_tensor(p.name);
    stats.bytes_in += t.n_bytes;
    if (p.to == p.from) {
      LADDER_RETURN_IF_ERROR(
          w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)));
      ++stats.copied;
      stats.bytes_out += t.n_bytes;
    } else {
      const uint64_t n_in = t.shape[0], rows = t.n_rows();
      const size_t rb_in = row_bytes(traits_of(p.from), n_in), rb_out = row_bytes(traits_of(p.to), n_in);
      std::vector<uint8_t> bytes(rb_out * rows);
      const uint64_t chunk_rows = std::max<uint64_t>(1, kChunkElements / n_in);
      for (uint64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
        const uint64_t r1 = std::min(rows, r0 + chunk_rows);
        auto convert = [&](uint64_t a, uint64_t b) -> Status {
          std::vector<float> f32(n_in);
          for (uint64_t r = r0 + a; r < r0 + b; ++r) {
            LADDER_RETURN_IF_ERROR(dequantize_row(p.from, t.data + r * rb_in, f32.data(), n_in));
            LADDER_RETURN_IF_ERROR(quantize_row_fitted(p.to, f32.data(), bytes.data() + r * rb_out, n_in));
          }
          return Status::ok();
        };
        LADDER_RETURN_IF_ERROR(parallel_rows(r1 - r0, threads, convert));
        done += (r1 - r0) * n_in;
        if (progress) progress(done, total, t.name);
      }
      stats.bytes_out += bytes.size();
      LADDER_RETURN_IF_ERROR(w.add_tensor(t.name, p.to, t.shape, std::move(bytes)));
      ++stats.converted;
      stats.fell_back += p.fell_back ? 1 : 0;
      continue;
    }
    done += t.n_elements;
    if (progress) progress(done, total, t.name);
  }
  const std::string tmp = out_path + ".tmp";
  Status st = w.write(tmp);
  if (st.is_ok()) {
    std::filesystem::rename(tmp, out_path, ec);
    if (ec) st = io_error(fmt::format("{}: cannot rename {} into place: {}", out_path, tmp, ec.message()));
  }
  if (!st.is_ok()) {
    std::filesystem::remove(tmp, ec);
    return st;
  }
  return stats;
}

}  // namespace ladder::gguf
