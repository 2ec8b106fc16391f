#include "ops/bf16_dot.h"

#include <atomic>

#include "common/env_switch.h"
#include "ops/amx.h"
#include "ops/matmul_simd.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ladder::ops {
namespace {

std::atomic<int> g_wanted{-1};  // -1: as LADDER_BF16_DOT says

}  // namespace

bool cpu_has_avx512_bf16() {
  static const bool has = [] {
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || a < 1) return false;  // no subleaf 1
    if (((b >> 16) & 1u) == 0) return false;                                  // AVX512F
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) == 0) return false;
    return ((a >> 5) & 1u) != 0;
#else
    return false;
#endif
  }();
  return has;
}

bool bf16_dot_active() {
  static const bool env_off = env_switched_off("LADDER_BF16_DOT");
  const int forced = g_wanted.load(std::memory_order_relaxed);
  const bool wanted = forced < 0 ? !env_off : forced == 1;
  return wanted && cpu_has_avx512_bf16() && detail::has_bf16_dot_kernels() && !amx_bf16_active();
}

void set_bf16_dot_wanted(std::optional<bool> wanted) {
  g_wanted.store(wanted ? (*wanted ? 1 : 0) : -1, std::memory_order_relaxed);
}

}  // namespace ladder::ops
