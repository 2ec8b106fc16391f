// A persistent pool of worker threads (created once, never per op). The
// calling thread takes part in every parallel_for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace ladder::ops {

class ThreadPool {
 public:
  // n_threads counts the caller; n_threads <= 0 means hardware concurrency.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;

  // Splits [0, n) into contiguous chunks and runs fn(begin, end) on them
  // across the pool; returns when all are done. Every chunk starts at a
  // multiple of `grain` and holds a multiple of `grain` items (the last one
  // may be shorter); chunks shrink as the range runs out. Which
  // thread runs a chunk must never change a result: kernels split work over
  // independent outputs only, never over a reduction.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ladder::ops
