// This machine's roofline, measured: peak memory bandwidth and peak FMA
// throughput with the threads of a pool. Benchmarks and `ladder generate
// --stats` divide achieved figures by these (ratios survive a noisy machine).
#pragma once

#include <cstddef>

#include "ops/thread_pool.h"

namespace ladder::ops {

struct BandwidthResult {
  double read_gbps = 0;   // sum over a buffer (what weight streaming needs)
  double triad_gbps = 0;  // a[i] = b[i] + s * c[i], counting 3 arrays (STREAM)
  size_t bytes = 0;       // size of the read buffer
};

// STREAM-like read and triad over buffers far larger than the last-level
// cache (`bytes` for the read buffer; 0 picks 512 MiB), best of a few
// repetitions, all threads of the pool.
BandwidthResult measure_memory_bandwidth(ThreadPool& pool, size_t bytes = 0);

// The read bandwidth of measure_memory_bandwidth() alone: the roofline for
// weight-streaming kernels (GEMV), GB/s (1e9 bytes).
double measure_peak_bandwidth_gbps(ThreadPool& pool, size_t bytes = 0);

// Register-resident independent FMA chains on every thread of the pool,
// widest vectors of the active target; GFLOP/s counting an FMA as 2.
double measure_peak_gflops(ThreadPool& pool);

}  // namespace ladder::ops
