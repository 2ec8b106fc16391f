// `ladder workload KIND -o FILE`: write a synthetic native-JSONL workload
// (src/harness/generators.h); long-context and rare prompts can be sized to
// a served model's context (src/harness/context_fill.h).
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>

#include "cli/command.h"
#include "common/paths.h"
#include "harness/context_fill.h"
#include "harness/generators.h"
#include "harness/replay_command.h"
#include "harness/server_probe.h"

namespace ladder::cli {
namespace {

struct WorkloadFlags {
  harness::GeneratorOptions g;
  std::string out;
  std::string slo;
  std::string text;
  double chars_per_token = 4.0;
  std::string api = "chat";
  std::string endpoint;
  std::string api_key;
  std::string model;
  bool insecure = false;
};

// An option that cannot apply to the kind is an error, not a silent no-op.
Status check_applicable(const CLI::App& cmd, const std::string& kind) {
  auto given = [&](const char* name) { return cmd.get_option(name)->count() > 0; };
  const bool long_kind = kind == "long-context" || kind == "rare";
  for (const char* name : {"--fill", "--context", "--endpoint"}) {
    if (given(name) && !long_kind) return invalid_argument(std::string(name) + " applies only to long-context and rare");
  }
  if (given("--depth") && kind != "needle" && kind != "rare") return invalid_argument("--depth applies only to needle and rare");
  if (given("--fill") && !given("--context") && !given("--endpoint")) {
    return invalid_argument("--fill needs the model's context: --endpoint URL (read from /v1/models) or --context N");
  }
  if (given("--fill") && given("--context-tokens")) return invalid_argument("give --fill or --context-tokens, not both");
  if (given("--context") && given("--endpoint")) return invalid_argument("give --context or --endpoint, not both");
  if (given("--chars-per-token") && given("--endpoint")) {
    return invalid_argument("--chars-per-token does not apply with --endpoint: the server counts the tokens");
  }
  for (const char* name : {"--api-key", "--model", "--insecure"}) {
    if (given(name) && !given("--endpoint")) return invalid_argument(std::string(name) + " applies only with --endpoint");
  }
  for (const char* name : {"--turns", "--think-s"}) {
    if (given(name) && kind != "chat" && kind != "mixed") return invalid_argument(std::string(name) + " applies only to chat and mixed");
  }
  for (const char* name : {"--calls", "--tool-s", "--system-tokens"}) {
    if (given(name) && kind != "agent" && kind != "mixed") return invalid_argument(std::string(name) + " applies only to agent and mixed");
  }
  return Status::ok();
}

CommandRegistrar register_workload{"workload", 41, [](CLI::App& app) -> CommandRun {
  auto* cmd = app.add_subcommand("workload", "Generate a synthetic workload (native JSONL) for `ladder replay`");
  auto f = std::make_shared<WorkloadFlags>();
  auto& g = f->g;
  cmd->add_option("kind", g.kind,
                  "chat | agent | long-context | needle | rare | copy (outputs repeat the prompt) | mixed")
      ->required()
      ->check(CLI::IsMember({"chat", "agent", "long-context", "needle", "rare", "copy", "mixed"}));
  cmd->add_option("-o,--out", f->out, "Output file")->required();
  cmd->add_option("--requests", g.requests, "Total requests (session turns count one each)");
  cmd->add_option("--seed", g.seed, "Random seed");
  cmd->add_option("--rate", g.rate, "Arrivals (requests or sessions) per second");
  cmd->add_option("--tenants", g.tenants, "Number of tenants");
  cmd->add_option("--max-tokens", g.max_tokens, "max_tokens of each request (agent calls use half)");
  cmd->add_option("--user-tokens", g.user_tokens, "Length of a chat message / agent tool result");
  cmd->add_option("--system-tokens", g.system_tokens, "Length of the agents' shared tool-spec prompt");
  cmd->add_option("--context-tokens", g.context_tokens,
                  "Length of long-context, rare and needle prompts, and of the passage a copy request repeats");
  cmd->add_option("--fill", g.fill, "long-context, rare: prompts fill this fraction of the model's context (0, 1]");
  cmd->add_option("--context", g.context, "The model's context length in tokens, for --fill");
  cmd->add_option("--endpoint", f->endpoint,
                  "long-context, rare: read the context length from this server's /v1/models and size prompts in "
                  "its own tokens (usage.prompt_tokens)");
  cmd->add_option("--api-key", f->api_key, "API key for --endpoint");
  cmd->add_option("--model", f->model, "Model for --endpoint (default: the first of /v1/models)");
  cmd->add_flag("--insecure", f->insecure, "https --endpoint: accept any certificate");
  cmd->add_option("--depth", g.depth, "Needle / rare entity position in [0, 1] of the prompt (rare: default 0.1)");
  cmd->add_option("--turns", g.turns, "Turns per chat session");
  cmd->add_option("--calls", g.agent_calls, "Calls per agent session");
  cmd->add_option("--think-s", g.think_s, "Mean think time between chat turns (s)");
  cmd->add_option("--tool-s", g.tool_s, "Mean tool time between agent calls (s)");
  cmd->add_option("--api", f->api, "Endpoint of chat and agent sessions and copy requests: chat | completions")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd->add_option("--chat-system", g.chat_system, "System message of chat sessions (\"\" for none)");
  cmd->add_option("--slo", f->slo, "ttft_ms=..,tpot_ms=..,e2e_ms=.. written on every request");
  cmd->add_option("--chars-per-token", f->chars_per_token,
                  "Characters per token for lengths (default 4; with --endpoint the server's count is used)");
  cmd->add_option("--text", f->text, "Prose to draw text from (default: shared war-and-peace.txt)");
  return [f, cmd] {
    auto fail = [](const Status& st) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    };
    if (Status st = check_applicable(*cmd, f->g.kind); !st.is_ok()) return fail(st);
    if (f->g.kind == "rare" && cmd->get_option("--depth")->count() == 0) f->g.depth = 0.1;
    auto slo = harness::parse_slo(f->slo);
    if (!slo.is_ok()) return fail(slo.status());
    f->g.slo = *slo;
    f->g.completions = f->api == "completions";
    std::string text = f->text.empty() ? ladder::shared_dir(LADDER_DEFAULT_SHARED_DIR) + "/text/war-and-peace.txt" : f->text;
    auto corpus = read_file(text);
    if (!corpus.is_ok()) return fail(corpus.status());
    if (!(f->chars_per_token > 0)) return fail(invalid_argument("--chars-per-token must be > 0"));

    Result<std::vector<harness::WorkloadRequest>> reqs = invalid_argument("unset");
    if (!f->endpoint.empty()) {
      auto ep = net::parse_endpoint(f->endpoint);
      if (!ep.is_ok()) return fail(ep.status());
      ep->tls_options.insecure = f->insecure;
      if (Status ready = harness::wait_until_ready(*ep, f->api_key, 120); !ready.is_ok()) return fail(ready);
      harness::ServerInfo info = harness::probe_server(*ep, f->api_key, 30);
      const std::string model = f->model.empty() ? info.model_id : f->model;
      auto context = harness::served_context_length(info, model);
      if (!context.is_ok()) return fail(context.status());
      f->g.context = *context;
      harness::ContextFit fit;
      auto count = [&](const std::string& prompt) { return harness::count_prompt_tokens(*ep, f->api_key, model, prompt); };
      reqs = harness::generate_fitted(f->g, *corpus, f->chars_per_token, count, &fit);
      if (reqs.is_ok()) {
        const double ctx = static_cast<double>(*context);
        std::fprintf(stderr,
                     "served context %lld tokens (%s): prompts of %lld..%lld tokens (mean %.0f = %.1f%% of the context; "
                     "target %lld) at %.3f characters per token, measured by the server; %d prompts counted\n",
                     static_cast<long long>(*context), model.c_str(), static_cast<long long>(fit.min_tokens),
                     static_cast<long long>(fit.max_tokens), fit.mean_tokens, 100.0 * fit.mean_tokens / ctx,
                     static_cast<long long>(fit.target_tokens), fit.chars_per_token, fit.counted);
      }
    } else {
      harness::TextSynthesizer synth(*corpus, f->chars_per_token);
      reqs = harness::generate_workload(f->g, synth);
    }
    if (!reqs.is_ok()) return fail(reqs.status());
    std::ofstream out(f->out, std::ios::binary);
    out << harness::write_native_workload(*reqs);
    if (!out) return fail(io_error("cannot write " + f->out));
    std::fprintf(stderr, "wrote %zu requests (%s) to %s\n", reqs->size(), f->g.kind.c_str(), f->out.c_str());
    return 0;
  };
}};

}  // namespace
}  // namespace ladder::cli
