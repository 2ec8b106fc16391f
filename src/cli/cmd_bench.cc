// `ladder bench`: measurements of this machine and of Ladder on it. For now
// `ladder bench roofline`: peak bandwidth and FMA throughput, and how close
// the matmul kernels get to them (ratios, measured in the same run).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "ops/roofline_report.h"
#include "ops/thread_pool.h"

namespace ladder::cli {
namespace {

struct RooflineCliOptions {
  int threads = 2;
  double seconds = 0.5;
};

int run_roofline(const RooflineCliOptions& o) {
  ops::ThreadPool pool(o.threads);
  ops::RooflineOptions opts;
  opts.seconds_per_case = o.seconds;
  const ops::RooflineReport report = ops::run_roofline(pool, opts);
  std::fputs(ops::format_roofline(report).c_str(), stdout);
  return 0;
}

CommandRegistrar reg{
    "bench", 70, [](CLI::App& app) -> CommandRun {
      auto* cmd = app.add_subcommand("bench", "Measure this machine and Ladder's kernels on it");
      cmd->require_subcommand(1);
      auto roof = std::make_shared<RooflineCliOptions>();
      auto* roofline = cmd->add_subcommand(
          "roofline", "Peak memory bandwidth and FMA throughput, and matmul as a fraction of them");
      roofline->add_option("-t,--threads", roof->threads, "Threads (the caller counts; 0 = all)")
          ->capture_default_str();
      roofline->add_option("--seconds", roof->seconds, "Seconds spent timing each matmul shape")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      return [cmd, roofline, roof]() -> int {
        if (cmd->got_subcommand(roofline)) return run_roofline(*roof);
        return 1;
      };
    }};

}  // namespace
}  // namespace ladder::cli
