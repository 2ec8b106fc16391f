// `ladder quantize IN OUT --dtype TYPE`: requantize a GGUF model's weight
// matrices (gguf/requantize.h), copying its metadata and tokenizer.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <tuple>

#include "cli/command.h"
#include "gguf/requantize.h"

namespace ladder::cli {
namespace {

struct QuantizeArgs {
  std::string in, out;
  std::string dtype;
  std::string output_dtype, embd_dtype;
  std::string fallback = "refuse";
  int threads = 0;
};

int fail(const Status& st) {
  std::fprintf(stderr, "error: %s\n", st.message().c_str());
  return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

int run_quantize(const QuantizeArgs& a) {
  gguf::RequantizeOptions o;
  auto dtype = gguf::parse_requantize_target(a.dtype);
  if (!dtype.is_ok()) return fail(dtype.status());
  o.dtype = *dtype;
  for (auto [flag, value, slot] : {std::tuple{"--output-dtype", &a.output_dtype, &o.output_dtype},
                                   std::tuple{"--embd-dtype", &a.embd_dtype, &o.embd_dtype}}) {
    if (value->empty()) continue;
    auto t = gguf::parse_requantize_target(*value);
    if (!t.is_ok()) return fail(invalid_argument(std::string(flag) + ": " + t.status().message()));
    *slot = *t;
  }
  auto fallback = gguf::parse_fallback(a.fallback);
  if (!fallback.is_ok()) return fail(fallback.status());
  o.fallback = *fallback;
  o.threads = a.threads;

  auto in = gguf::GgufFile::open(a.in);
  if (!in.is_ok()) return fail(in.status());
  auto plan = gguf::plan_requantize(*in, o);
  if (!plan.is_ok()) return fail(plan.status());
  // What the file will hold, by type, before the (possibly long) conversion.
  std::map<std::string, int> matrices;
  int requantized = 0;
  for (const auto& p : *plan) {
    if (!p.matrix) continue;
    ++matrices[std::string(tensor_type_name(p.to)) + (p.fell_back ? " (fallback)" : "")];
    requantized += p.from != p.to && traits_of(p.from).block_elems > 1 ? 1 : 0;
  }
  std::string summary;
  for (const auto& [type, n] : matrices)
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + type;
  std::fprintf(stderr, "quantize: %s -> %s: weight matrices: %s; other tensors copied\n", a.in.c_str(),
               a.out.c_str(), summary.c_str());
  if (requantized > 0) {
    std::fprintf(stderr, "quantize: warning: %d matrices are already quantized; their errors compound\n",
                 requantized);
  }

  // Progress only on a terminal: logs and pipes get the summary lines alone.
  const bool tty = isatty(fileno(stderr)) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto stats =
      gguf::requantize_file(*in, a.out, o, [tty](uint64_t done, uint64_t total, const std::string& name) {
        if (!tty) return;
        std::fprintf(stderr, "\rquantize: %5.1f%% %-40.40s",
                     100.0 * static_cast<double>(done) / static_cast<double>(total), name.c_str());
        std::fflush(stderr);
      });
  if (tty) std::fprintf(stderr, "\r%-60s\r", "");
  if (!stats.is_ok()) return fail(stats.status());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "wrote %s: %d tensors converted (%d by fallback), %d copied; tensor data %.2f MiB -> %.2f MiB "
      "in %.1f s\n",
      a.out.c_str(), stats->converted, stats->fell_back, stats->copied,
      static_cast<double>(stats->bytes_in) / (1 << 20), static_cast<double>(stats->bytes_out) / (1 << 20),
      secs);
  return 0;
}

CommandRegistrar register_quantize{
    "quantize", 52, [](CLI::App& app) -> CommandRun {
      auto a = std::make_shared<QuantizeArgs>();
      auto* cmd = app.add_subcommand(
          "quantize",
          "Convert a GGUF model's weight matrices to another type, copying its metadata and tokenizer");
      cmd->add_option("input", a->in, "The .gguf model to read")->required();
      cmd->add_option("output", a->out, "The .gguf file to write")->required();
      cmd->add_option("--dtype", a->dtype,
                      "Type of the weight matrices: q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k f16 bf16 f32")
          ->required();
      cmd->add_option(
          "--output-dtype", a->output_dtype,
          "Type of output.weight (token_embd.weight when tied); default, as llama.cpp: Q6_K for the "
          "4- to 6-bit types when its rows fit 256-element blocks, else Q8_0; --dtype for q8_0 and the "
          "float types");
      cmd->add_option("--embd-dtype", a->embd_dtype,
                      "Type of token_embd.weight when untied; default: --dtype");
      cmd->add_option(
             "--fallback", a->fallback,
             "For a matrix whose rows are not a multiple of the type's block size: refuse (an error), auto "
             "(llama.cpp's: Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, else F16) or a type")
          ->capture_default_str();
      cmd->add_option("-t,--threads", a->threads, "Threads (0 = all cores)")->capture_default_str();
      return [a] { return run_quantize(*a); };
    }};

}  // namespace
}  // namespace ladder::cli
