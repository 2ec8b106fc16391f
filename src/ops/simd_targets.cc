#include "ops/simd_targets.h"

#include <spdlog/spdlog.h>

#include <mutex>

#include "hwy/highway.h"
#include "hwy/targets.h"

namespace ladder::ops {

std::string target_name(int64_t target) {
  return hwy::TargetName(target);
}

std::string active_target_name() {
  // The best compiled target that the (possibly test-restricted) CPU supports.
  const int64_t supported = hwy::SupportedTargets();
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (supported & t) return target_name(t);
  }
  return "unknown";
}

void log_chosen_target_once() {
  static std::once_flag once;
  std::call_once(once, [] { spdlog::info("ops: using {}", active_target_name()); });
}

std::vector<int64_t> available_targets() {
  return hwy::SupportedAndGeneratedTargets();
}

void force_target_for_test(int64_t target) {
  hwy::SetSupportedTargetsForTest(target);
}

}  // namespace ladder::ops
