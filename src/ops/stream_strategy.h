// How a kernel streams memory it reads once: plain loads (the hardware
// prefetchers alone) or a software prefetch of kind T0/T1/T2/NTA some bytes
// ahead. The best choice differs by CPU (a non-temporal prefetch halves the
// streaming read bandwidth of some Intel Xeons and helps on AMD Zen), so the
// roofline probes every strategy and the decode kernels take the one
// measured best here (ops/kernel_choice.h). Prefetching never changes a
// result, only speed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ladder::ops {

enum class Prefetch : uint8_t { kNone, kT0, kT1, kT2, kNta };

struct StreamStrategy {
  Prefetch prefetch = Prefetch::kNone;
  int64_t distance = 0;  // bytes ahead of the load; 0 with kNone

  bool operator==(const StreamStrategy&) const = default;
};

// One software prefetch of the cache line at p with `kind`'s locality (a
// no-op for kNone): for kernels that choose the hint at run time.
inline void prefetch_line(const void* p, Prefetch kind) {
  switch (kind) {
    case Prefetch::kT0: __builtin_prefetch(p, 0, 3); break;
    case Prefetch::kT1: __builtin_prefetch(p, 0, 2); break;
    case Prefetch::kT2: __builtin_prefetch(p, 0, 1); break;
    case Prefetch::kNta: __builtin_prefetch(p, 0, 0); break;
    case Prefetch::kNone: break;
  }
}

// "plain", or the hint and distance: "T0+4K", "NTA+1K", "T1+512".
std::string to_string(StreamStrategy s);

// Inverse of to_string(); invalid_argument for anything else.
Result<StreamStrategy> parse_stream_strategy(std::string_view text);

// The strategies the roofline probes and the decode calibration compares:
// plain loads, and each hint at 1, 4 and 16 KiB ahead (T2 at 4 KiB only: on
// the CPUs measured it behaves as T1).
std::vector<StreamStrategy> candidate_stream_strategies();

}  // namespace ladder::ops
