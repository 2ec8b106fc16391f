// The `ladder` binary: goodput-first LLM serving. Subcommands register
// themselves (command.h); this file only parses and dispatches.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "ops/kv_codec.h"
#include "common/build_info.h"
#include "common/paths.h"
#include "model/synth.h"

namespace ladder::cli {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}

std::optional<model::ModelBundle> load_model_or_report(const std::string& given, std::string* path,
                                                       int* exit_code) {
  *path = resolve_model_path(given);
  if (path->empty()) {
    *exit_code = 2;
    return std::nullopt;
  }
  auto bundle = model::ModelBundle::load(*path);
  if (!bundle.is_ok()) {
    std::fprintf(stderr, "error: %s\n", bundle.status().message().c_str());
    *exit_code = 1;
    return std::nullopt;
  }
  return std::move(*bundle);
}

void add_kv_dtype_option(CLI::App* cmd, TensorType* out) {
  cmd->add_option_function<std::string>(
         "--kv-dtype",
         [out](const std::string& v) { *out = *ops::kv_dtype_from_short_name(v); },
         "KV cache format: f16 (half the memory and bandwidth of f32), f32, q8 (int8 of the heads "
         "Hadamard-rotated, a scale per token, head and 32 channels: about half of f16) or q4 "
         "(KIVI-style 4-bit, keys per channel and values per token, recent tokens in f16 until their "
         "block fills: about a third of f16)")
      ->check(CLI::IsMember({"f16", "f32", "q8", "q4"}, CLI::ignore_case))
      ->type_name("f16|f32|q8|q4")
      ->default_str(ops::kv_dtype_short_name(*out));
}

std::string resolve_model_path(const std::string& given) {
  if (!given.empty()) return given;
  std::string path = default_model_path(LADDER_DEFAULT_SHARED_DIR);
  if (!path.empty()) return path;
  // Nothing found: generate a small synthetic model once, so every command
  // runs anywhere (its text is meaningless; pass -m for a real model).
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::filesystem::path dir = cache != nullptr && *cache != '\0' ? std::filesystem::path(cache) / "ladder"
                                    : home != nullptr && *home != '\0'   ? std::filesystem::path(home) / ".cache/ladder"
                                                                         : std::filesystem::temp_directory_path() / "ladder";
  const std::string synth = (dir / "synth-tiny.gguf").string();
  std::error_code ec;
  if (std::filesystem::exists(synth, ec)) {
    spdlog::warn("no model given or found; using the synthetic model {} (pass -m FILE.gguf for a real one)", synth);
    return synth;
  }
  std::filesystem::create_directories(dir, ec);
  auto options = model::synth_preset("tiny");
  const std::string tmp = synth + ".tmp";
  Status st = options.is_ok() ? model::write_synthetic_model(*options, tmp) : options.status();
  if (st.is_ok()) std::filesystem::rename(tmp, synth, ec);
  if (!st.is_ok() || ec) {
    std::fprintf(stderr,
                 "error: no model given, none found ($LADDER_MODEL, %s/models/stories260K.gguf), and a synthetic one "
                 "could not be written to %s: %s\n  pass -m FILE.gguf\n",
                 shared_dir(LADDER_DEFAULT_SHARED_DIR).c_str(), synth.c_str(),
                 st.is_ok() ? ec.message().c_str() : st.message().c_str());
    return {};
  }
  spdlog::warn("no model given or found; generated the synthetic model {} (pass -m FILE.gguf for a real one)", synth);
  return synth;
}

}  // namespace ladder::cli

int main(int argc, char** argv) {
  using ladder::cli::command_registry;
  CLI::App app{
      "ladder: a goodput-first LLM serving engine for Llama-family GGUF models.\n"
      "Serves an OpenAI-compatible API, replays timestamped traffic to measure\n"
      "verified requests completed inside their deadline, and climbs to costlier\n"
      "serving techniques only when a paired measurement shows they pay.",
      "ladder"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ladder ") + ladder::version() + " (" + ladder::git_revision() + ")");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "Log verbosity: trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  auto& registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  // "parent/child" entries add a subcommand under an earlier entry's command.
  std::map<const CLI::App*, ladder::cli::CommandRun> runs;
  for (auto& entry : registry) {
    auto run = entry.setup(app);
    const CLI::App* cmd = &app;
    size_t begin = 0;
    while (begin <= entry.name.size()) {
      const size_t slash = entry.name.find('/', begin);
      const size_t end = slash == std::string::npos ? entry.name.size() : slash;
      cmd = cmd->get_subcommand(entry.name.substr(begin, end - begin));
      begin = end + 1;
    }
    runs[cmd] = std::move(run);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Logs go to stderr so that stdout carries only a command's output (JSON, text).
  spdlog::set_default_logger(spdlog::stderr_color_mt("ladder"));
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  // Run the deepest registered command that was given.
  const CLI::App* chosen = nullptr;
  for (const CLI::App* cmd = &app;;) {
    auto subs = cmd->get_subcommands();
    if (subs.empty()) break;
    cmd = subs.front();
    if (runs.count(cmd) != 0) chosen = cmd;
  }
  if (chosen == nullptr) return 1;
  return runs[chosen]();
}
