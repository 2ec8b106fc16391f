// `ladder info`: the build and the machine as Ladder sees them.
#include <cstdio>
#include <thread>

#include "cli/command.h"

namespace ladder::cli {
namespace {

CommandRegistrar reg{"info", 900, [](CLI::App& app) -> CommandRun {
                       app.add_subcommand("info", "Print the build configuration and what Ladder sees of this machine");
                       return [] {
                         std::printf("ladder 0.1.0\nhardware threads: %u\n", std::thread::hardware_concurrency());
                         return 0;
                       };
                     }};

}  // namespace
}  // namespace ladder::cli
