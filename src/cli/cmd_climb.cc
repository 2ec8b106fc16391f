// `ladder climb`: try the policy's configurations in order and promote one
// only when a paired replay shows that it pays in goodput beyond the noise
// and that no quality slice fell below its margin (src/ladder/climb.h).
// `ladder ledger show L`: the decisions a ledger holds.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "ladder/climb.h"
#include "ladder/ledger.h"

namespace ladder::cli {
namespace {

int run_climb_command(climb::ClimbOptions o) {
  o.model = resolve_model_path(o.model);
  if (o.model.empty()) return 2;
  Result<climb::ClimbResult> r = climb::run_climb(o);
  if (!r.is_ok()) {
    std::fprintf(stderr, "error: %s\n", r.status().message().c_str());
    return 1;
  }
  if (r->calibration) {
    std::printf("%s\nledger: %s\n", climb::calibration_line(*r->calibration).c_str(), r->ledger_path.c_str());
    return r->calibration->passed ? 0 : 3;
  }
  std::printf("%s\n", climb::verdict_line(*r).c_str());
  for (const auto& lc : r->loads) {
    const std::string at = r->policy.loads_named() ? "load " + climb::load_label(lc.load) + " " : "";
    for (const auto& g : lc.rungs) {
      std::printf("%srung %d '%s': %s\n", at.c_str(), g.rung, g.spec.name.c_str(), g.reason.c_str());
    }
  }
  std::printf("ledger: %s\nreport: %s\n", r->ledger_path.c_str(), r->report_path.c_str());
  return 0;
}

constexpr const char* kClimbHelp =
    "Promote a costlier serving configuration only when a paired replay shows it pays.\n"
    "Starts rung 1 (ladder serve with the policy's first [[rung]]) and saves its outputs as\n"
    "the reference; then, for each later rung in order, starts it and replays every\n"
    "[[workload]] against the configuration serving now and the candidate in blocks of\n"
    "A B B A and B A A B, with the same seeds, until a sequential gate decides (looks at\n"
    "min_repeats, doubling, up to max_repeats paired runs per workload). A candidate is\n"
    "promoted only when the run-level interval of its paired goodput change lies above\n"
    "min_gain (0: above zero) -- at most (1 - confidence) / 2 false promotions over every\n"
    "look -- and every slice's verified fraction is at least its margin; otherwise serving\n"
    "stays one rung lower. A reference rung 1 fails to give (more than max_reference_errors\n"
    "of its requests, or too few of a slice) stops the climb before any candidate.\n"
    "Every decision, with its reason in numbers, goes to the ledger (JSONL) and to OUT/climb.html. With `loads = [...]` in the policy (multipliers of the workloads'\n"
    "offered load) the rungs are climbed once per load, each from rung 1, and decided per load;\n"
    "`ladder serve --ledger L --load X` serves the decision made at the nearest measured load.\n"
    "A [[rung]] with topology = \"disagg\" is started as rung 2: a prefill worker, a decode\n"
    "worker and `ladder route` in front of them.\n"
    "--calibrate N checks the gate on this machine instead of climbing: N comparisons of rung 1\n"
    "with a second copy of itself, through the same blocks and looks; it reports how many were\n"
    "promoted (each was a false promotion) against the promised rate, the run-to-run spread and\n"
    "the smallest gain max_repeats can see, and records that in the ledger. A climb on a machine\n"
    "and model whose last calibration in the ledger failed is refused.\n"
    "The policy file is described in docs/CLIMB.md.\n"
    "Exit status: 0 climbed (whatever was decided) or calibrated and passed; 1 a bad policy,\n"
    "workloads without a real trace, a rung 1 that did not start or failed its reference, a\n"
    "failed calibration on record, or a replay that could not run; 2 no model; 3 a calibration\n"
    "that failed.";

CommandRegistrar register_climb{
    "climb", 42, [](CLI::App& app) -> CommandRun {
      auto* cmd = app.add_subcommand("climb", kClimbHelp);
      auto o = std::make_shared<climb::ClimbOptions>();
      o->out_dir = "climb-out";
      cmd->add_option("--policy", o->policy_path, "Climb policy (TOML): SLOs, margins, workloads, rungs")
          ->required();
      cmd->add_option("-m,--model", o->model,
                      "Rung 1's model file (default: $LADDER_MODEL or the shared stories260K)");
      cmd->add_option("--out", o->out_dir, "Folder for references, replays, server logs and climb.html")
          ->capture_default_str();
      cmd->add_option("--ledger", o->ledger_path,
                      "Ledger to append the decisions to (default: OUT/ledger.jsonl)");
      cmd->add_option("--ready-timeout", o->ready_timeout_s, "Seconds a server may take to load its model")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd->add_option("--calibrate", o->calibrate,
                      "Instead of climbing: compare rung 1 with a copy of itself N times and record how often "
                      "the gate was fooled (20 gives a useful check; each takes min_repeats to max_repeats "
                      "paired runs per workload)")
          ->check(CLI::Range(1, 10000));
      return [o] { return run_climb_command(*o); };
    }};

CommandRegistrar ledger_reg{
    "ledger", 43, [](CLI::App& app) -> CommandRun {
      auto* cmd =
          app.add_subcommand("ledger", "Read a climb ledger (JSONL, one line per tested configuration)");
      cmd->require_subcommand(1);
      auto path = std::make_shared<std::string>();
      auto* show = cmd->add_subcommand(
          "show",
          "List every tested configuration: climb, rung, decision, goodput change with its interval, the\n"
          "worst slice, cost per verified task, serve arguments and the reason; per climb what it left "
          "serving; every calibration (climb --calibrate) with its result; and every rollback `serve\n"
          "--shadow-rate` made, with its evidence");
      show->add_option("LEDGER", *path, "The ledger file")->required();
      return [cmd, show, path]() -> int {
        if (!cmd->got_subcommand(show)) return 1;
        Result<std::vector<climb::LedgerEntry>> entries = climb::load_ledger(*path);
        Result<std::vector<nlohmann::json>> calibrations = climb::load_calibrations(*path);
        Result<std::vector<climb::Rollback>> rollbacks = climb::load_rollbacks(*path);
        for (const Status& st : {entries.status(), calibrations.status(), rollbacks.status()}) {
          if (!st.is_ok()) {
            std::fprintf(stderr, "error: %s\n", st.message().c_str());
            return 1;
          }
        }
        if (!entries->empty() || calibrations->empty()) std::fputs(climb::format_ledger(*entries).c_str(), stdout);
        std::fputs(climb::format_calibrations(*calibrations).c_str(), stdout);
        std::fputs(climb::format_rollbacks(*rollbacks).c_str(), stdout);
        return 0;
      };
    }};

}  // namespace
}  // namespace ladder::cli
