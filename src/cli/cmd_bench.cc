// `ladder bench`: measurements of this machine and of Ladder on it.
// `ladder bench roofline`: the honest roofline (the best read bandwidth of
// every streaming strategy and thread count, checked against an independent
// STREAM-style read; FMA, int8 and AMX peaks), and how close the matmul
// kernels get to it (ratios, measured in the same run).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "ops/thread_pool.h"
#include "perf/roofline_report.h"

namespace ladder::cli {
namespace {

struct RooflineCliOptions {
  int threads = 2;
  double seconds = 0.5;
  int probe_mib = 512;
};

int run_roofline(const RooflineCliOptions& o) {
  ops::ThreadPool pool(o.threads);
  perf::RooflineOptions opts;
  opts.seconds_per_case = o.seconds;
  opts.probe_bytes = static_cast<size_t>(o.probe_mib) << 20;
  const perf::RooflineReport report = perf::run_roofline(pool, opts);
  std::fputs(perf::format_roofline(report).c_str(), stdout);
  return 0;
}

CommandRegistrar register_bench{
    "bench", 70, [](CLI::App& app) -> CommandRun {
      auto* cmd = app.add_subcommand("bench", "Measure this machine and Ladder's kernels on it");
      cmd->require_subcommand(1);
      auto roof = std::make_shared<RooflineCliOptions>();
      auto* roofline = cmd->add_subcommand(
          "roofline",
          "The best read bandwidth and arithmetic peaks of this machine, and matmul as fractions of them");
      roofline->add_option("-t,--threads", roof->threads, "Threads (the caller counts; 0 = all)")
          ->capture_default_str();
      roofline->add_option("--seconds", roof->seconds, "Seconds spent timing each matmul shape")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      roofline
          ->add_option("--probe-mib", roof->probe_mib,
                       "MiB read by each bandwidth probe (keep it well above the last-level cache)")
          ->check(CLI::Range(16, 16384))
          ->capture_default_str();
      return [cmd, roofline, roof]() -> int {
        if (cmd->got_subcommand(roofline)) return run_roofline(*roof);
        return 1;
      };
    }};

}  // namespace
}  // namespace ladder::cli
