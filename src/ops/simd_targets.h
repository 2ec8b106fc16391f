// Which Highway target (instruction set) the ops kernels run on. Every SIMD
// kernel is compiled for AVX2, AVX3 (AVX-512), AVX3_DL (AVX-512 VNNI/BF16) and
// the portable fallback (EMU128, or SCALAR on GCC < 12.3), and picked at run time for this CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ladder::ops {

// Name of the target the kernels use now ("AVX3_DL", "AVX2", "EMU128", ...).
std::string active_target_name();

// Logs "ops: using <target>" once per process (spdlog info).
void log_chosen_target_once();

// Targets that are both compiled into ladder_ops and supported by this CPU,
// best first (Highway target bits).
std::vector<int64_t> available_targets();
std::string target_name(int64_t target);

// Tests only: restrict dispatch to `target` (0 restores the best one). Must
// not race with running kernels.
void force_target_for_test(int64_t target);

}  // namespace ladder::ops
