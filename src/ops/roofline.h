// This machine's roofline, measured: the best read bandwidth any method gets
// (plain loads and each software-prefetch strategy, at every thread count up
// to the pool's), and the best arithmetic throughput (FMA, int8 dot products,
// AMX tiles where present). Benchmarks and `ladder generate --stats` divide
// achieved figures by these bests, never by what one kernel's habits reach,
// so a ratio means "of what this machine can do".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ops/stream_strategy.h"
#include "ops/thread_pool.h"

namespace ladder::ops {

struct ReadProbe {
  StreamStrategy strategy;
  int threads = 0;
  double gbps = 0;  // 1e9 bytes per second
};

struct BandwidthResult {
  std::vector<ReadProbe> reads;  // every candidate strategy at 1..pool.size() threads
  ReadProbe best;                // the roofline: the fastest of them
  double read_gbps = 0;          // best.gbps
  // An independent STREAM-style read of the same size: plain C++ loops on
  // threads of its own, no Highway, no prefetch (a check on the probe: the
  // best strategy should land within about 10% of it). Run at every thread
  // count before and after the strategies, best of all its passes, so it
  // samples the same moments of a shared machine as the probe does.
  double stream_read_gbps = 0;
  double triad_gbps = 0;  // a[i] = b[i] + s * c[i], counting 3 arrays (STREAM)
  size_t bytes = 0;       // size of the read buffer
};

// Reads buffers far larger than the last-level cache (`bytes`; 0 picks
// 512 MiB) under every strategy of candidate_stream_strategies() at each
// thread count, best of a few repetitions each; then the STREAM-style check
// and a triad.
BandwidthResult measure_memory_bandwidth(ThreadPool& pool, size_t bytes = 0);

// The best read bandwidth over every strategy and thread count (what
// measure_memory_bandwidth() calls read_gbps), GB/s, without the check and
// the triad: the per-round probe of `ladder bench model`.
double measure_peak_bandwidth_gbps(ThreadPool& pool, size_t bytes = 0);

// One strategy with all the pool's threads, best of `repetitions`, GB/s.
double measure_read_gbps(ThreadPool& pool, StreamStrategy strategy, size_t bytes, int repetitions = 3);

// The independent check alone: `threads` std::threads each summing its own
// slice of a `bytes` buffer (0: 512 MiB) as 64-bit integers in plain loops,
// timed as STREAM times (best of `passes` after a first untimed one), GB/s.
double measure_stream_read_gbps(int threads, size_t bytes = 0, int passes = 5);

struct ComputePeaks {
  double fma_gflops = 0;       // F32 FMA chains, widest vectors (2 FLOPs each)
  double int8_gmacs = 0;       // int8 dot-product chains (VNNI, else maddubs); 0 if none
  std::string int8_method;     // "AVX512-VNNI", "maddubs", or "none"
  double amx_int8_gmacs = 0;   // AMX tdpbssd; 0 where AMX-INT8 is not usable
  double amx_bf16_gflops = 0;  // AMX tdpbf16ps (2 FLOPs per MAC); 0 where not usable

  // The roofline of int8 arithmetic: the faster of vectors and tiles. (F32
  // arithmetic has one method, FMA; bf16 tiles round F32 operands.)
  double best_int8_gmacs() const { return amx_int8_gmacs > int8_gmacs ? amx_int8_gmacs : int8_gmacs; }
};

// Every arithmetic peak on every thread of the pool.
ComputePeaks measure_compute_peaks(ThreadPool& pool);

// Register-resident independent FMA chains on every thread of the pool,
// widest vectors of the active target; GFLOP/s counting an FMA as 2.
double measure_peak_gflops(ThreadPool& pool);

}  // namespace ladder::ops
