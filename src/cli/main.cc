// The `ladder` binary: goodput-first LLM serving. Subcommands register
// themselves (command.h); this file only parses and dispatches.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "common/paths.h"

namespace ladder::cli {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}

std::string resolve_model_path(const std::string& given) {
  if (!given.empty()) return given;
  std::string path = default_model_path(LADDER_DEFAULT_SHARED_DIR);
  if (path.empty()) {
    std::fprintf(stderr,
                 "error: no model given and none found by default.\n"
                 "  pass -m FILE.gguf, set LADDER_MODEL, or make one with:\n"
                 "  ladder synth --preset tiny -o tiny.gguf\n");
  }
  return path;
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
  app.set_version_flag("--version", "ladder 0.1.0");
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
