// `ladder workload KIND -o FILE`: write a synthetic native-JSONL workload
// (src/harness/generators.h).
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/command.h"
#include "common/paths.h"
#include "harness/generators.h"
#include "harness/replay_command.h"

namespace ladder::cli {
namespace {

struct WorkloadFlags {
  harness::GeneratorOptions g;
  std::string out;
  std::string slo;
  std::string text;
  double chars_per_token = 4.0;
  std::string api = "chat";
};

CommandRegistrar reg{"workload", 41, [](CLI::App& app) -> CommandRun {
  auto* cmd = app.add_subcommand("workload", "Generate a synthetic workload (native JSONL) for `ladder replay`");
  auto f = std::make_shared<WorkloadFlags>();
  auto& g = f->g;
  cmd->add_option("kind", g.kind, "chat | agent | long-context | needle | mixed")
      ->required()
      ->check(CLI::IsMember({"chat", "agent", "long-context", "needle", "mixed"}));
  cmd->add_option("-o,--out", f->out, "Output file")->required();
  cmd->add_option("--requests", g.requests, "Total requests (session turns count one each)");
  cmd->add_option("--seed", g.seed, "Random seed");
  cmd->add_option("--rate", g.rate, "Arrivals (requests or sessions) per second");
  cmd->add_option("--tenants", g.tenants, "Number of tenants");
  cmd->add_option("--max-tokens", g.max_tokens, "max_tokens of each request (agent calls use half)");
  cmd->add_option("--user-tokens", g.user_tokens, "Length of a chat message / agent tool result");
  cmd->add_option("--system-tokens", g.system_tokens, "Length of the agents' shared tool-spec prompt");
  cmd->add_option("--context-tokens", g.context_tokens, "Length of long-context and needle prompts");
  cmd->add_option("--depth", g.depth, "Needle depth in [0, 1]");
  cmd->add_option("--turns", g.turns, "Turns per chat session");
  cmd->add_option("--calls", g.agent_calls, "Calls per agent session");
  cmd->add_option("--think-s", g.think_s, "Mean think time between chat turns (s)");
  cmd->add_option("--tool-s", g.tool_s, "Mean tool time between agent calls (s)");
  cmd->add_option("--api", f->api, "Endpoint of chat and agent sessions: chat | completions")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd->add_option("--chat-system", g.chat_system, "System message of chat sessions (\"\" for none)");
  cmd->add_option("--slo", f->slo, "ttft_ms=..,tpot_ms=..,e2e_ms=.. written on every request");
  cmd->add_option("--chars-per-token", f->chars_per_token, "Characters per token for lengths (default 4)");
  cmd->add_option("--text", f->text, "Prose to draw text from (default: shared war-and-peace.txt)");
  return [f] {
    auto fail = [](const Status& st) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    };
    auto slo = harness::parse_slo(f->slo);
    if (!slo.is_ok()) return fail(slo.status());
    f->g.slo = *slo;
    f->g.completions = f->api == "completions";
    std::string text = f->text.empty() ? ladder::shared_dir(LADDER_DEFAULT_SHARED_DIR) + "/text/war-and-peace.txt" : f->text;
    auto synth = harness::TextSynthesizer::from_file(text, f->chars_per_token);
    if (!synth.is_ok()) return fail(synth.status());
    auto reqs = harness::generate_workload(f->g, *synth);
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
