#include "harness/generators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

  // Text of about `tokens` tokens around a fixed suffix: the passage gets
  // what the suffix leaves.
  std::string text_around(int64_t tokens, const std::string& suffix) {
    const size_t total = synth_.chars_for_tokens(tokens);
    return synth_.passage(rng_(), total > suffix.size() ? total - suffix.size() : 1);
  }

  void long_context(int unit, int64_t tokens, std::vector<WorkloadRequest>& out) {
    WorkloadRequest r;
    r.t = next_arrival();
    r.tenant = tenant_for(unit);
    const std::string question = "\n\nIn one sentence, what happened in the passage above?";
    r.prompt = text_around(tokens, question) + question;
    r.slice = "long_context";
    finish(r);
    out.push_back(std::move(r));
  }

  void rare(int unit, int64_t tokens, std::vector<WorkloadRequest>& out) {
    WorkloadRequest r;
    r.t = next_arrival();
    r.tenant = tenant_for(unit);
    const std::string entity = rare_entity(rng_());
    const std::string intro = " The access code of the vault is " + entity + ". ";
    const std::string cue = "\n\nRemember: the access code of the vault is " + entity.substr(0, 2);
    // The filler is cut after stripping, so the prompt keeps its length.
    const size_t total = synth_.chars_for_tokens(tokens);
    const size_t filler_chars = total > intro.size() + cue.size() ? total - intro.size() - cue.size() : 1;
    std::string hay = strip_rare_characters(synth_.passage(rng_(), filler_chars + filler_chars / 8 + 64));
    hay.resize(std::min(hay.size(), filler_chars));
    size_t at = std::min(hay.size(), static_cast<size_t>(o_.depth * static_cast<double>(hay.size())));
    size_t space = hay.find(' ', at);
    at = space == std::string::npos ? hay.size() : space;
    r.prompt = hay.substr(0, at) + intro + hay.substr(at) + cue;
    r.expect = Expectation{Expectation::Kind::kSubstring, entity.substr(2)};
    r.slice = "rare";
    finish(r);
    out.push_back(std::move(r));
  }

  // Code edit / quote-and-answer: a passage, then a request to repeat it, so
  // that the output's long spans repeat the prompt (where a prompt-lookup
  // draft, --spec ngram, pays). Completions: the passage, a header and its
  // first words, continued by the rest; chat: an instruction to copy it. The
  // expectation is the passage's next words after what the prompt gave.
  void copy(int unit, std::vector<WorkloadRequest>& out) {
    WorkloadRequest r;
    r.t = next_arrival();
    r.tenant = tenant_for(unit);
    const std::string doc = text(o_.context_tokens);
    size_t given = 0;  // characters of the passage the prompt already repeats
    if (o_.completions) {
      const size_t space = doc.find(' ', doc.size() / 8);
      given = space == std::string::npos ? doc.size() / 2 : space;
      r.prompt = "Original text:\n" + doc + "\n\nThe same text, copied exactly:\n" + doc.substr(0, given);
    } else {
      r.messages.push_back({"system", "You copy documents exactly, word for word."});
      r.messages.push_back({"user", "Copy this text exactly:\n\n" + doc});
    }
    // Up to 32 characters, ending at a word break.
    std::string next = doc.substr(given, 32);
    if (const size_t end = next.find_last_of(' '); next.size() == 32 && end != std::string::npos && end > 0) {
      next.resize(end);
    }
    const size_t lead = next.find_first_not_of(' ');
    if (lead != std::string::npos && !next.empty()) r.expect = Expectation{Expectation::Kind::kSubstring, next.substr(lead)};
    r.slice = "copy";
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
  } else if (o.kind == "long-context" || o.kind == "rare") {
    LADDER_ASSIGN_OR_RETURN(int64_t tokens, long_prompt_tokens(o));
    while (remaining() > 0) {
      if (o.kind == "rare") {
        g.rare(unit++, tokens, out);
      } else {
        g.long_context(unit++, tokens, out);
      }
    }
  } else if (o.kind == "needle") {
    while (remaining() > 0) g.needle(unit++, out);
  } else if (o.kind == "copy") {
    while (remaining() > 0) g.copy(unit++, out);
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
        g.long_context(unit++, o.context_tokens, out);
        --long_left;
      }
    }
  } else {
    return invalid_argument("unknown workload kind '" + o.kind +
                            "' (chat, agent, long-context, needle, rare, copy, mixed)");
  }
  return out;
}

Result<int64_t> long_prompt_tokens(const GeneratorOptions& o) {
  if (o.fill == 0) return int64_t{o.context_tokens};
  if (!(o.fill > 0 && o.fill <= 1)) return invalid_argument("--fill must be in (0, 1]");
  if (o.context < 1) return invalid_argument("--fill needs the model's context length (--context or --endpoint)");
  const auto tokens = static_cast<int64_t>(std::floor(o.fill * static_cast<double>(o.context)));
  if (tokens < 16) return invalid_argument(fmt::format("--fill {} of a {}-token context is under 16 tokens", o.fill, o.context));
  if (tokens + o.max_tokens > o.context) {
    return invalid_argument(fmt::format("--fill {} of a {}-token context ({} tokens) leaves no room for --max-tokens {}",
                                        o.fill, o.context, tokens, o.max_tokens));
  }
  return tokens;
}

std::string rare_entity(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string digits = kRareDigits, symbols = kRareSymbols;
  std::shuffle(digits.begin(), digits.end(), rng);
  std::shuffle(symbols.begin(), symbols.end(), rng);
  std::string e;
  for (int i = 0; i < 4; ++i) {
    e += symbols[static_cast<size_t>(i)];
    e += digits[static_cast<size_t>(i)];
  }
  return e;
}

std::string strip_rare_characters(const std::string& text) {
  const std::string rare = std::string(kRareDigits) + kRareSymbols;
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (rare.find(c) != std::string::npos) continue;
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

}  // namespace ladder::harness
