#include "harness/generators.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace ladder::harness {

namespace {

// Stable across platforms (std::hash is not), so a seed reproduces a file.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

class Generator {
 public:
  Generator(const GeneratorOptions& opts, const TextSynthesizer& synth)
      : o_(opts), synth_(synth), rng_(opts.seed) {}

  // Next arrival-unit start time (Poisson at o_.rate).
  double next_arrival() {
    now_ += std::exponential_distribution<double>(o_.rate)(rng_);
    return now_;
  }

  std::string tenant_for(int unit) const { return fmt::format("tenant-{}", unit % std::max(1, o_.tenants)); }

  std::string text(int tokens) { return synth_.passage(rng_(), synth_.chars_for_tokens(tokens)); }

  double jitter(double mean) { return mean * std::uniform_real_distribution<double>(0.5, 1.5)(rng_); }

  void finish(WorkloadRequest& r) {
    r.max_tokens = o_.max_tokens;
    if (!o_.slo.empty()) r.slo = o_.slo;
  }

  // A chat session of up to `turns` turns.
  void chat(int unit, int turns, std::vector<WorkloadRequest>& out) {
    const double t = next_arrival();
    const std::string session = fmt::format("chat-{}", unit);
    for (int k = 0; k < turns; ++k) {
      WorkloadRequest r;
      r.t = t;
      r.tenant = tenant_for(unit);
      r.session = session;
      r.turn = k;
      r.think_s = k == 0 ? 0.0 : jitter(o_.think_s);
      const std::string user = text(o_.user_tokens);
      if (o_.completions) {
        r.prompt = (k == 0 && !o_.chat_system.empty() ? o_.chat_system + "\n" : std::string("\n")) + "User: " + user +
                   "\nAssistant:";
      } else {
        if (k == 0 && !o_.chat_system.empty()) r.messages.push_back({"system", o_.chat_system});
        r.messages.push_back({"user", user});
      }
      r.slice = "chat";
      finish(r);
      out.push_back(std::move(r));
    }
  }

  // An agent session: a shared per-tenant tool spec, then short calls.
  void agent(int unit, int calls, std::vector<WorkloadRequest>& out) {
    const double t = next_arrival();
    const std::string tenant = tenant_for(unit);
    const std::string session = fmt::format("agent-{}", unit);
    // Equal for every agent of the tenant: the prefix a cache should share.
    const std::string spec = "Tools: search, read, answer. " +
                             synth_.passage(fnv1a(tenant), synth_.chars_for_tokens(o_.system_tokens));
    for (int k = 0; k < calls; ++k) {
      WorkloadRequest r;
      r.t = t;
      r.tenant = tenant;
      r.session = session;
      r.turn = k;
      r.think_s = k == 0 ? 0.0 : jitter(o_.tool_s);
      const std::string user = k == 0 ? "Task: " + text(std::max(1, o_.user_tokens / 2)) : "Tool result: " + text(o_.user_tokens);
      if (o_.completions) {
        r.prompt = (k == 0 ? spec + "\n" : std::string("\n")) + user + "\nAgent:";
      } else {
        if (k == 0) r.messages.push_back({"system", spec});
        r.messages.push_back({"user", user});
      }
      r.slice = "agent";
      finish(r);
      r.max_tokens = std::max(1, o_.max_tokens / 2);  // agent calls are short
      out.push_back(std::move(r));
    }
  }

  void long_context(int unit, std::vector<WorkloadRequest>& out) {
    WorkloadRequest r;
    r.t = next_arrival();
    r.tenant = tenant_for(unit);
    r.prompt = text(o_.context_tokens) + "\n\nIn one sentence, what happened in the passage above?";
    r.slice = "long_context";
    finish(r);
    out.push_back(std::move(r));
  }

  void needle(int unit, std::vector<WorkloadRequest>& out) {
    WorkloadRequest r;
    r.t = next_arrival();
    r.tenant = tenant_for(unit);
    const std::string secret = fmt::format("{:06d}", std::uniform_int_distribution<int>(0, 999999)(rng_));
    const std::string fact = " The secret number of the vault is " + secret + ". ";
    const std::string hay = text(o_.context_tokens);
    size_t at = static_cast<size_t>(o_.depth * static_cast<double>(hay.size()));
    at = std::min(hay.size(), at);
    // Bury it between words, not inside one.
    size_t space = hay.find(' ', at);
    at = space == std::string::npos ? hay.size() : space;
    r.prompt = hay.substr(0, at) + fact + hay.substr(at) + "\n\nQuestion: what is the secret number of the vault?\nAnswer:";
    r.expect = Expectation{Expectation::Kind::kSubstring, secret};
    r.slice = "needle";
    finish(r);
    out.push_back(std::move(r));
  }

 private:
  const GeneratorOptions& o_;
  const TextSynthesizer& synth_;
  std::mt19937_64 rng_;
  double now_ = 0.0;
};

}  // namespace

Result<std::vector<WorkloadRequest>> generate_workload(const GeneratorOptions& o, const TextSynthesizer& synth) {
  if (o.requests < 1) return invalid_argument("--requests must be >= 1");
  if (!(o.rate > 0)) return invalid_argument("--rate must be > 0");
  if (o.tenants < 1) return invalid_argument("--tenants must be >= 1");
  if (o.max_tokens < 1 || o.user_tokens < 1 || o.context_tokens < 1 || o.system_tokens < 0) {
    return invalid_argument("token lengths must be >= 1");
  }
  if (o.depth < 0 || o.depth > 1) return invalid_argument("--depth must be in [0, 1]");
  if (o.turns < 1 || o.agent_calls < 1) return invalid_argument("--turns and --calls must be >= 1");
  if (o.think_s < 0 || o.tool_s < 0) return invalid_argument("think and tool times must be >= 0");

  Generator g(o, synth);
  std::vector<WorkloadRequest> out;
  int unit = 0;
  auto remaining = [&] { return o.requests - static_cast<int>(out.size()); };
  if (o.kind == "chat") {
    while (remaining() > 0) g.chat(unit++, std::min(o.turns, remaining()), out);
  } else if (o.kind == "agent") {
    while (remaining() > 0) g.agent(unit++, std::min(o.agent_calls, remaining()), out);
  } else if (o.kind == "long-context") {
    while (remaining() > 0) g.long_context(unit++, out);
  } else if (o.kind == "needle") {
    while (remaining() > 0) g.needle(unit++, out);
  } else if (o.kind == "mixed") {
    // Requests split ~40% chat, ~30% agent, ~30% long-context, units interleaved in that order.
    const int chat_n = std::max(1, o.requests * 4 / 10);
    const int agent_n = std::max(0, std::min(o.requests - chat_n, o.requests * 3 / 10));
    int chat_left = chat_n, agent_left = agent_n, long_left = o.requests - chat_n - agent_n;
    while (chat_left + agent_left + long_left > 0) {
      if (chat_left > 0) {
        int n = std::min(o.turns, chat_left);
        g.chat(unit++, n, out);
        chat_left -= n;
      }
      if (agent_left > 0) {
        int n = std::min(o.agent_calls, agent_left);
        g.agent(unit++, n, out);
        agent_left -= n;
      }
      if (long_left > 0) {
        g.long_context(unit++, out);
        --long_left;
      }
    }
  } else {
    return invalid_argument("unknown workload kind '" + o.kind + "' (chat, agent, long-context, needle, mixed)");
  }
  return out;
}

}  // namespace ladder::harness
