// The independent read check of the roofline (measure_stream_read_gbps in
// ops/roofline.h): deliberately none of the probe's machinery. Its own
// std::threads, plain C++ loops over 64-bit integers (vectorized by the
// compiler, for this CPU's widest vectors), no software prefetch, and STREAM's
// timing rule: a first untimed pass touches and reads the buffer, then the
// best of the timed passes (5 by default), each timed from a common start to
// the last chunk's end.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/page_memory.h"
#include "ops/roofline.h"

namespace ladder::ops {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr size_t kChunkWords = kChunkBytes / sizeof(uint64_t);

// Sum of one chunk (kChunkWords, a multiple of 8) in eight chains, a plain
// loop that the compiler vectorizes. Like STREAM built with -march=native,
// it is compiled for the widest vectors this CPU has: on some CPUs a core's
// streaming bandwidth depends on how many loads its out-of-order window
// holds, so a baseline (SSE2) build would understate the machine.
#define LADDER_SUM_CHUNK_BODY                                              \
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0; \
  for (size_t i = 0; i < kChunkWords; i += 8) {                            \
    s0 += p[i];                                                            \
    s1 += p[i + 1];                                                        \
    s2 += p[i + 2];                                                        \
    s3 += p[i + 3];                                                        \
    s4 += p[i + 4];                                                        \
    s5 += p[i + 5];                                                        \
    s6 += p[i + 6];                                                        \
    s7 += p[i + 7];                                                        \
  }                                                                        \
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;

uint64_t sum_chunk_baseline(const uint64_t* p) {
  LADDER_SUM_CHUNK_BODY
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx2"))) uint64_t sum_chunk_avx2(const uint64_t* p) {
  LADDER_SUM_CHUNK_BODY
}
__attribute__((target("avx512f,prefer-vector-width=512"))) uint64_t sum_chunk_avx512(const uint64_t* p) {
  LADDER_SUM_CHUNK_BODY
}
#endif
#undef LADDER_SUM_CHUNK_BODY

using SumChunk = uint64_t (*)(const uint64_t*);

SumChunk widest_sum_chunk() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (__builtin_cpu_supports("avx512f")) return sum_chunk_avx512;
  if (__builtin_cpu_supports("avx2")) return sum_chunk_avx2;
#endif
  return sum_chunk_baseline;
}

}  // namespace

double measure_stream_read_gbps(int threads, size_t bytes, int passes) {
  threads = std::max(1, threads);
  if (bytes == 0) bytes = size_t{512} << 20;
  const int kTimed = std::max(1, passes);
  const size_t chunks = std::max<size_t>(1, bytes / kChunkBytes);
  const size_t words = chunks * kChunkWords;
  // The pages the probe and the packed weights get (common/page_memory.h).
  const PageMemory memory = PageMemory::map(words * sizeof(uint64_t), PageMemory::Pages::kHuge);
  LADDER_CHECK(!memory.empty(), "cannot map the read check's buffer");
  auto* const data = reinterpret_cast<uint64_t*>(memory.data());
  // Pass 0 is the untimed first touch and read; passes 1..kTimed are timed.
  // The calling thread reads too (as STREAM's OpenMP master does), and
  // threads take 1 MiB chunks in turn rather than fixed halves, so a reader
  // that a shared machine deschedules for a moment does not hold up a pass.
  std::atomic<int> ready{0}, go{-1};
  std::atomic<size_t> next_chunk[2] = {0, 0};  // per pass parity
  std::atomic<size_t> done{0};
  std::atomic<uint64_t> sink{0};
  const SumChunk sum_chunk = widest_sum_chunk();
  auto read_pass = [&](int pass) {
    std::atomic<size_t>& next = next_chunk[pass % 2];
    for (size_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      uint64_t* p = data + c * kChunkWords;
      if (pass == 0) std::fill(p, p + kChunkWords, static_cast<uint64_t>(c));
      sink.fetch_add(sum_chunk(p), std::memory_order_relaxed);
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) {
    helpers.emplace_back([&] {
      for (int pass = 0; pass <= kTimed; ++pass) {
        ready.fetch_add(1);
        while (go.load(std::memory_order_acquire) < pass) {
        }
        read_pass(pass);
      }
    });
  }
  double best = 0;
  for (int pass = 0; pass <= kTimed; ++pass) {
    while (ready.load() < (threads - 1) * (pass + 1)) std::this_thread::yield();
    next_chunk[(pass + 1) % 2].store(0);  // ready for the pass after this one
    const auto t0 = std::chrono::steady_clock::now();
    go.store(pass, std::memory_order_release);
    read_pass(pass);
    while (done.load(std::memory_order_acquire) < chunks * static_cast<size_t>(pass + 1)) {
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / secs / 1e9);
  }
  for (auto& th : helpers) th.join();
  return best;
}

}  // namespace ladder::ops
