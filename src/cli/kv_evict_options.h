// --kv-evict, --kv-budget and --kv-sinks: KV eviction (kv/kv_eviction.h) for
// `ladder serve` and `ladder generate`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "kv/kv_eviction.h"

namespace ladder::cli {

struct KvEvictCliOptions {
  std::string policy = "none";
  int64_t budget_tokens = 0;
  int64_t sink_tokens = 4;
  bool budget_given = false;
  bool sinks_given = false;
};

void add_kv_evict_options(CLI::App* cmd, KvEvictCliOptions* o);

// The policy the options name, checked for the engine's block size.
// kInvalidArgument: a policy without --kv-budget, --kv-budget or --kv-sinks
// without a policy, a budget below the sinks plus a block.
Result<kv::EvictionPolicy> kv_eviction_policy(const KvEvictCliOptions& o, int block_size);

}  // namespace ladder::cli
