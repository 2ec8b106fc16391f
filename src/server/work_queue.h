// WorkQueue: a few worker threads taking tasks from a bounded queue, so that
// work too slow for an HTTP io thread (templating, tokenizing a large
// prompt) never stalls the connections those threads serve.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ladder::server {

class WorkQueue {
 public:
  WorkQueue(int n_threads, size_t max_pending);
  ~WorkQueue();  // stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues a task; false (and the task dropped) when the queue is full or stopped.
  bool post(std::function<void()> task);
  // Runs the tasks already queued, then joins the workers. Idempotent.
  void stop();
  size_t pending() const;

 private:
  void work();

  const size_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ladder::server
