// --kv-host-mib: the host KV tier (kv/host_tier.h) for `ladder serve` and
// `ladder generate`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>

#include "common/status.h"

namespace ladder::cli {

void add_kv_host_option(CLI::App* cmd, double* mib);

// The tier's bytes (0: none). kInvalidArgument: a tier without the prefix
// cache (--no-prefix-cache), whose published blocks are all it holds.
Result<size_t> kv_host_bytes(double mib, bool prefix_caching);

}  // namespace ladder::cli
