#include "ops/amx.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include "common/env_switch.h"
#include "ops/amx_tiles.h"
#include "ops/matmul_simd.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ladder::ops {
namespace {

std::atomic<bool> g_enabled{true};

AmxSupport detect() {
  AmxSupport s;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) {
    s.why_not = "CPUID leaf 7 is not available";
    return s;
  }
  s.cpu_bf16 = (d >> 22) & 1u;
  s.cpu_tile = (d >> 24) & 1u;
  s.cpu_int8 = (d >> 25) & 1u;
  if (!s.cpu_tile) {
    s.why_not = "the CPU has no AMX";
    return s;
  }
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __get_cpuid(1, &a1, &b1, &c1, &d1);
  if (((c1 >> 27) & 1u) == 0) {
    s.why_not = "the OS has not enabled XSAVE";
    return s;
  }
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  asm volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  s.os_saves_tiles = ((xcr0_lo >> 17) & 3u) == 3u;  // XTILECFG and XTILEDATA
  if (!s.os_saves_tiles) {
    s.why_not = "the OS does not save tile state (XCR0)";
    return s;
  }
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    s.why_not = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) refused: ") + std::strerror(errno);
    return s;
  }
#endif
  s.permitted = true;
#else
  s.why_not = "not an x86-64 build";
#endif
  return s;
}

}  // namespace

const AmxSupport& amx_support() {
  static const AmxSupport s = detect();
  return s;
}

bool amx_int8_active() {
  static const bool env_off = env_switched_off("LADDER_AMX");
  return g_enabled.load(std::memory_order_relaxed) && !env_off && amx_support().int8() &&
         detail::has_amx_kernels();
}

std::atomic<int> g_bf16_wanted{-1};  // -1: as LADDER_AMX_BF16 says

bool amx_bf16_active() {
  static const bool env_off = env_switched_off("LADDER_AMX");
  static const bool env_wanted = env_switched_on("LADDER_AMX_BF16");
  const int forced = g_bf16_wanted.load(std::memory_order_relaxed);
  const bool wanted = forced < 0 ? env_wanted : forced == 1;
  return wanted && !env_off && amx_support().bf16() && detail::has_amx_bf16_kernels();
}

void set_amx_bf16_wanted(bool wanted) {
  g_bf16_wanted.store(wanted ? 1 : 0, std::memory_order_relaxed);
}

void set_amx_enabled(bool enabled) {
  g_enabled.store(enabled, std::memory_order_relaxed);
}

#if defined(__x86_64__)
namespace {

// Four independent accumulator tiles (0-3) fed by two A tiles (4, 5) and two
// B tiles (6, 7), all 16 rows x 64 bytes.
LADDER_AMX_FUNCTION void load_peak_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.set(t, 16, 64);
  _tile_loadconfig(&cfg);
}

constexpr int64_t kPeakIters = 2'000'000;

// Four chains of tile products (int8: tdpbssd, 16 x 16 x 64 multiply-adds;
// bf16: tdpbf16ps, 16 x 16 x 32, 2 FLOPs each) on operands of ones-ish.
template <bool kBf16>
LADDER_AMX_FUNCTION void amx_peak_chains(int64_t seed, double* ops) {
  alignas(64) uint8_t a[16 * 64];
  for (int i = 0; i < 16 * 64; i += 2) {
    // bf16 lanes near 1.0 (0x3F80 + small), int8 lanes in [-3, 3].
    const uint16_t v = kBf16 ? static_cast<uint16_t>(0x3F80 + (i + seed) % 16)
                             : static_cast<uint16_t>((static_cast<uint8_t>((i + seed) % 7 - 3)) * 0x0101u);
    std::memcpy(a + i, &v, 2);
  }
  load_peak_config();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  LADDER_TILE_LOAD(4, a, 64);
  LADDER_TILE_LOAD(5, a, 64);
  LADDER_TILE_LOAD(6, a, 64);
  LADDER_TILE_LOAD(7, a, 64);
  for (int64_t i = 0; i < kPeakIters; ++i) {
    if constexpr (kBf16) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    } else {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  alignas(64) uint32_t c[16 * 16];
  LADDER_TILE_STORE(0, c, 64);
  _tile_release();
  const double macs = 4.0 * 16 * 16 * (kBf16 ? 32 : 64) * static_cast<double>(kPeakIters);
  *ops = (kBf16 ? 2.0 : 1.0) * macs + (c[0] == 1 ? 1e-9 : 0.0);  // the sums are used
}

}  // namespace

void amx_int8_peak_chains(int64_t seed, double* ops) {
  amx_peak_chains<false>(seed, ops);
}
void amx_bf16_peak_chains(int64_t seed, double* ops) {
  amx_peak_chains<true>(seed, ops);
}
#else
void amx_int8_peak_chains(int64_t, double* ops) {
  *ops = 0;
}
void amx_bf16_peak_chains(int64_t, double* ops) {
  *ops = 0;
}
#endif

}  // namespace ladder::ops
