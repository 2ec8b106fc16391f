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
  double min_match = -1, max_mean_kl = -1, max_kl = -1;
  int64_t min_divergence = -1;
  double price_in = -1, price_out = -1;
  bool no_deadlines = false;
};

CommandRegistrar register_replay{"replay", 40, [](CLI::App& app) -> CommandRun {
  auto* cmd = app.add_subcommand(
      "replay",
      "Replay a workload against an OpenAI-compatible endpoint and report goodput.\n"
      "Exit status: 0 measured; 1 bad options or input, or the server unreachable; 2 measured, but a request "
      "errored (see --allow-errors) or none verified");
  auto f = std::make_shared<ReplayFlags>();
  auto& o = f->o;
  cmd->add_option("--endpoint", o.endpoint, "Server URL, http:// or https://, e.g. http://127.0.0.1:8080 (a trailing /v1 is fine)")
      ->required();
  cmd->add_option("--api-key", o.api_key, "API key sent as a Bearer token");
  cmd->add_option("--tenant-key", o.tenant_keys, "TENANT=KEY: the key to use for a workload tenant (repeatable)");
  cmd->add_flag("--insecure", o.insecure, "https: accept any certificate (self-signed endpoints)");
  cmd->add_option("--ca-cert", o.ca_cert, "https: trust the CAs in this PEM file besides the system store")
      ->check(CLI::ExistingFile);
  cmd->add_option("--workload", o.workload_path, "Workload file (native JSONL, Mooncake JSONL, Azure or BurstGPT CSV)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", o.format, "ladder | mooncake | azure | burstgpt (default: detected)")
      ->check(CLI::IsMember({"auto", "ladder", "mooncake", "azure", "burstgpt"}));
  cmd->add_flag("--strict", o.strict, "Reject the workload on a malformed line instead of skipping it");
  cmd->add_option("--time-scale", o.time_scale, "Multiply the workload's arrival times (0.5 = twice as fast)");
  cmd->add_option("--rate", f->rate, "Re-draw arrivals at R requests (or sessions) per second; the start rate of --sweep auto");
  cmd->add_option("--arrival", o.arrival, "Arrival process for --rate/--sweep: poisson | constant | gamma:CV");
  cmd->add_option("--seed", o.seed, "Seed for re-drawn arrivals");
  cmd->add_option("--sweep", o.sweep,
                  "Comma-separated rates, or 'auto' (double from --rate, default 1, until attainment falls below "
                  "--target, then bisect): find the max goodput rate");
  cmd->add_option("--target", o.target, "SLO attainment the sweep must keep (default 0.9)");
  cmd->add_option("--sweep-steps", o.sweep_steps, "--sweep auto: bisection steps after the first failing rate (default 3)");
  cmd->add_option("--sweep-max-rate", o.sweep_max_rate, "--sweep auto: stop doubling at this rate (default 1000)");
  auto* dur = cmd->add_option("--duration", f->duration_s, "Keep arrivals before S seconds");
  cmd->add_option("--requests", f->requests, "Keep the first N requests")->excludes(dur);
  cmd->add_option("--slo", o.slo, "ttft_ms=..,tpot_ms=..,e2e_ms=.. (replaces the workload's SLOs, field by field)");
  cmd->add_flag("--no-deadlines", f->no_deadlines,
                "Do not send x-ladder-deadline-ms (by default each request carries its TTFT SLO, else its E2E SLO)");
  cmd->add_option("--max-input-tokens", o.max_input_tokens, "Cap prompt lengths (approximate tokens; not for chat messages)");
  cmd->add_option("--max-output-tokens", o.max_output_tokens, "Cap max_tokens");
  cmd->add_option("--length-scale", o.length_scale, "Multiply trace input/output lengths");
  cmd->add_option("--chars-per-token", o.chars_per_token, "Characters per token for synthesized prompts (default 4)");
  cmd->add_option("--text", o.text_path, "Prose to synthesize prompts from (default: shared war-and-peace.txt)");
  cmd->add_option("--concurrency", o.concurrency, "Cap on requests in flight (0: none)");
  cmd->add_option("--model", o.model, "Model name to send (default: the first of /v1/models)");
  cmd->add_option("--timeout", o.timeout_s, "Seconds to wait on any network step of a request");
  cmd->add_option("--wait-ready", o.wait_ready_s, "Seconds to wait for the server's /health before starting (default 120; 0: do not check)");
  cmd->add_flag("--ignore-eos", o.ignore_eos, "Send ignore_eos so output lengths follow the workload (vLLM-style servers)");
  cmd->add_option("--save-reference", o.save_reference,
                  "Write a reference: per request the output token ids, text, finish reason and top-5 logprobs "
                  "(temperature 0), with the configuration's fingerprint");
  cmd->add_option("--reference", o.reference, "Check every request against this reference (see --verify)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--verify", o.verify,
                  "exact: identical token ids (text when the server sends no ids); approx: per-slice thresholds "
                  "on token match, first divergence and KL (default exact)")
      ->check(CLI::IsMember({"exact", "approx"}));
  cmd->add_option("--policy", o.policy_path, "TOML thresholds per slice for --verify approx ([default], [slice.NAME])")
      ->check(CLI::ExistingFile);
  cmd->add_option("--min-match", f->min_match, "--verify approx: least fraction of matching tokens (overrides [default])")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-divergence", f->min_divergence, "--verify approx: earliest allowed first divergence (token position)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-mean-kl", f->max_mean_kl, "--verify approx: largest mean KL(reference||candidate), nats")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-kl", f->max_kl, "--verify approx: largest KL at any position, nats")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--token-ids", o.token_ids,
                  "Ask for output token ids (return_token_ids): auto (when checking or saving a reference against "
                  "Ladder or vLLM) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_flag("--allow-errors", o.allow_errors, "Exit 0 even when requests errored");
  cmd->add_option("--price-in", f->price_in, "Price per million input tokens (hosted providers): cost per verified request")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--price-out", f->price_out, "Price per million output tokens")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", o.quiet, "No progress lines on stderr");
  cmd->add_option("--out", o.out_dir, "Directory for record.json, requests.jsonl, report.html")->required();
  return [f, cmd] {
    auto& opts = f->o;
    if (f->rate > 0) opts.rate = f->rate;
    if (f->duration_s > 0) opts.duration_s = f->duration_s;
    if (f->requests > 0) opts.max_requests = f->requests;
    if (f->min_match >= 0) opts.threshold_flags.min_match = f->min_match;
    if (f->min_divergence >= 0) opts.threshold_flags.min_divergence = f->min_divergence;
    if (f->max_mean_kl >= 0) opts.threshold_flags.max_mean_kl = f->max_mean_kl;
    if (f->max_kl >= 0) opts.threshold_flags.max_kl = f->max_kl;
    if (f->price_in >= 0) opts.price_in = f->price_in;
    if (f->price_out >= 0) opts.price_out = f->price_out;
    opts.send_deadlines = !f->no_deadlines;
    if (opts.text_path.empty()) opts.text_path = ladder::shared_dir(LADDER_DEFAULT_SHARED_DIR) + "/text/war-and-peace.txt";
    opts.command_line = "ladder replay";
    for (const auto& a : cmd->remaining_for_passthrough()) opts.command_line += " " + a;
    for (const auto* opt : cmd->get_options()) {
      if (opt->count() > 0 && !opt->get_lnames().empty()) {
        opts.given.insert(opt->get_lnames().front());
        opts.command_line += " --" + opt->get_lnames().front();
        if (opt->get_type_size() != 0) {  // flags carry no value worth repeating
          for (const auto& r : opt->results()) opts.command_line += " " + r;
        }
      }
    }
    auto code = harness::run_replay_command(opts);
    if (!code.is_ok()) {
      std::fprintf(stderr, "error: %s\n", code.status().message().c_str());
      return 1;
    }
    return *code;
  };
}};

}  // namespace
}  // namespace ladder::cli
