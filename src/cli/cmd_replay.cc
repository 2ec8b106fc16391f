// `ladder replay`: measure goodput of any OpenAI-compatible endpoint by
// replaying a timestamped workload (src/harness/replay_command.h).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "common/paths.h"
#include "harness/replay_command.h"

namespace ladder::cli {
namespace {

struct ReplayFlags {
  harness::ReplayCommandOptions o;
  double rate = 0;
  double duration_s = 0;
  int64_t requests = 0;
};

CommandRegistrar reg{"replay", 40, [](CLI::App& app) -> CommandRun {
  auto* cmd = app.add_subcommand("replay", "Replay a workload against an OpenAI-compatible endpoint and report goodput");
  auto f = std::make_shared<ReplayFlags>();
  auto& o = f->o;
  cmd->add_option("--endpoint", o.endpoint, "Server URL, e.g. http://127.0.0.1:8080 (a trailing /v1 is fine)")->required();
  cmd->add_option("--api-key", o.api_key, "API key sent as a Bearer token");
  cmd->add_option("--tenant-key", o.tenant_keys, "TENANT=KEY: the key to use for a workload tenant (repeatable)");
  cmd->add_option("--workload", o.workload_path, "Workload file (native JSONL, Mooncake JSONL, Azure or BurstGPT CSV)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", o.format, "ladder | mooncake | azure | burstgpt (default: detected)")
      ->check(CLI::IsMember({"auto", "ladder", "mooncake", "azure", "burstgpt"}));
  cmd->add_flag("--strict", o.strict, "Reject the workload on a malformed line instead of skipping it");
  cmd->add_option("--time-scale", o.time_scale, "Multiply the workload's arrival times (0.5 = twice as fast)");
  cmd->add_option("--rate", f->rate, "Re-draw arrivals at R requests (or sessions) per second");
  cmd->add_option("--arrival", o.arrival, "Arrival process for --rate/--sweep: poisson | constant | gamma:CV");
  cmd->add_option("--seed", o.seed, "Seed for re-drawn arrivals");
  cmd->add_option("--sweep", o.sweep, "Comma-separated rates: replay at each, find the max goodput rate");
  cmd->add_option("--target", o.target, "SLO attainment the sweep must keep (default 0.9)");
  auto* dur = cmd->add_option("--duration", f->duration_s, "Keep arrivals before S seconds");
  cmd->add_option("--requests", f->requests, "Keep the first N requests")->excludes(dur);
  cmd->add_option("--slo", o.slo, "ttft_ms=..,tpot_ms=..,e2e_ms=.. (replaces the workload's SLOs, field by field)");
  cmd->add_option("--max-input-tokens", o.max_input_tokens, "Cap prompt lengths (approximate tokens)");
  cmd->add_option("--max-output-tokens", o.max_output_tokens, "Cap max_tokens");
  cmd->add_option("--length-scale", o.length_scale, "Multiply trace input/output lengths");
  cmd->add_option("--chars-per-token", o.chars_per_token, "Characters per token for synthesized prompts (default 4)");
  cmd->add_option("--text", o.text_path, "Prose to synthesize prompts from (default: shared war-and-peace.txt)");
  cmd->add_option("--concurrency", o.concurrency, "Cap on requests in flight (0: none)");
  cmd->add_option("--model", o.model, "Model name to send (default: the first of /v1/models)");
  cmd->add_option("--timeout", o.timeout_s, "Seconds to wait on any network step of a request");
  cmd->add_option("--wait-ready", o.wait_ready_s, "Seconds to wait for the server's /health before starting (default 120; 0: do not check)");
  cmd->add_flag("--ignore-eos", o.ignore_eos, "Send ignore_eos so output lengths follow the workload (vLLM-style servers)");
  cmd->add_flag("--quiet", o.quiet, "No progress lines on stderr");
  cmd->add_option("--out", o.out_dir, "Directory for record.json, requests.jsonl, report.html")->required();
  return [f, cmd] {
    auto& opts = f->o;
    if (f->rate > 0) opts.rate = f->rate;
    if (f->duration_s > 0) opts.duration_s = f->duration_s;
    if (f->requests > 0) opts.max_requests = f->requests;
    if (opts.text_path.empty()) opts.text_path = ladder::shared_dir(LADDER_DEFAULT_SHARED_DIR) + "/text/war-and-peace.txt";
    opts.command_line = "ladder replay";
    for (const auto& a : cmd->remaining_for_passthrough()) opts.command_line += " " + a;
    for (const auto* opt : cmd->get_options()) {
      if (opt->count() > 0 && !opt->get_lnames().empty()) {
        opts.command_line += " --" + opt->get_lnames().front();
        if (opt->get_type_size() != 0) {  // flags carry no value worth repeating
          for (const auto& r : opt->results()) opts.command_line += " " + r;
        }
      }
    }
    Status st = harness::run_replay_command(opts);
    if (!st.is_ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    }
    return 0;
  };
}};

}  // namespace
}  // namespace ladder::cli
