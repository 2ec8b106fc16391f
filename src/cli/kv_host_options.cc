#include "cli/kv_host_options.h"

namespace ladder::cli {

void add_kv_host_option(CLI::App* cmd, double* mib) {
  cmd->add_option("--kv-host-mib", *mib,
                  "Host KV tier: MiB of host memory that keep prefix-cache blocks the KV pool gives up, copied "
                  "back (prefetched for waiting requests) instead of recomputed; outputs are unchanged. "
                  "0 = none")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

Result<size_t> kv_host_bytes(double mib, bool prefix_caching) {
  if (mib > 0 && !prefix_caching) {
    return invalid_argument("--kv-host-mib keeps prefix-cache blocks; it cannot be combined with --no-prefix-cache");
  }
  return static_cast<size_t>(mib * (1 << 20));
}

}  // namespace ladder::cli
