#include "cli/kv_evict_options.h"

#include <fmt/format.h>

namespace ladder::cli {

void add_kv_evict_options(CLI::App* cmd, KvEvictCliOptions* o) {
  cmd->add_option("--kv-evict", o->policy,
                  "KV eviction once a sequence outgrows --kv-budget, in whole KV blocks: none; window (keep "
                  "the --kv-sinks first tokens and the most recent ones, StreamingLLM-style); snap (sinks, "
                  "the most recent half of the rest, and the older blocks that received the most attention, "
                  "H2O-style). Kept tokens keep their positions. Approximate: the third rung")
      ->type_name("none|window|snap")
      ->capture_default_str();
  cmd->add_option("--kv-budget", o->budget_tokens,
                  "KV eviction: tokens of KV one sequence keeps, rounded down to whole blocks")
      ->check(CLI::PositiveNumber)
      ->each([o](const std::string&) { o->budget_given = true; });
  cmd->add_option("--kv-sinks", o->sink_tokens,
                  "KV eviction: first tokens always kept (attention sinks), rounded up to whole blocks")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->each([o](const std::string&) { o->sinks_given = true; });
}

Result<kv::EvictionPolicy> kv_eviction_policy(const KvEvictCliOptions& o, int block_size) {
  const auto kind = kv::eviction_kind_from_name(o.policy);
  if (!kind)
    return invalid_argument(fmt::format("--kv-evict must be none, window or snap, got '{}'", o.policy));
  kv::EvictionPolicy p{.kind = *kind, .budget_tokens = o.budget_tokens, .sink_tokens = o.sink_tokens};
  if (!p.enabled()) {
    if (o.budget_given || o.sinks_given) {
      return invalid_argument("--kv-budget and --kv-sinks need --kv-evict window or snap");
    }
    return p;
  }
  if (!o.budget_given) {
    return invalid_argument(fmt::format("--kv-evict {} needs --kv-budget TOKENS", o.policy));
  }
  LADDER_RETURN_IF_ERROR(kv::check_eviction_policy(p, block_size));
  return p;
}

}  // namespace ladder::cli
