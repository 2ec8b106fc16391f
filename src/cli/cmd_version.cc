// `ladder info`: the build and the machine as Ladder sees them.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "cli/command.h"
#include "common/build_info.h"
#include "common/paths.h"
#include "ops/kernel_choice.h"
#include "ops/simd_targets.h"

namespace ladder::cli {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

int run_info() {
  std::printf("ladder %s, revision %s (C++20, %s build)\n", version(), git_revision(),
#ifdef NDEBUG
              "release"
#else
              "debug"
#endif
  );
  std::printf("cpu: %s, %u hardware threads\n", cpu_model().c_str(), std::thread::hardware_concurrency());
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  std::printf("memory: %.1f GiB\n", static_cast<double>(pages) * static_cast<double>(page) / (1024.0 * 1024 * 1024));
  std::printf("kernels: %s (compiled and supported here:", ops::active_target_name().c_str());
  for (int64_t t : ops::available_targets()) std::printf(" %s", ops::target_name(t).c_str());
  std::printf(")\n");
  // Which kernel paths run here and why: the decode streaming strategy and
  // layouts (measured once per CPU model, or read from the cache), AMX.
  const std::string paths = ops::describe_kernel_paths();
  for (size_t at = 0; at < paths.size();) {
    const size_t nl = paths.find('\n', at);
    std::printf("  %s\n", paths.substr(at, nl - at).c_str());
    at = nl == std::string::npos ? paths.size() : nl + 1;
  }
  std::printf("shared data: %s\n", shared_dir(LADDER_DEFAULT_SHARED_DIR).c_str());
  const std::string model = default_model_path(LADDER_DEFAULT_SHARED_DIR);
  std::printf("default model: %s\n", model.empty() ? "none (pass -m, set LADDER_MODEL, or run ladder synth)" : model.c_str());
  return 0;
}

CommandRegistrar register_version{"info", 900, [](CLI::App& app) -> CommandRun {
                       app.add_subcommand("info", "Print the build configuration and what Ladder sees of this machine");
                       return [] { return run_info(); };
                     }};

}  // namespace
}  // namespace ladder::cli
