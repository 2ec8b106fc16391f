#include "server/work_queue.h"

#include <algorithm>

namespace ladder::server {

WorkQueue::WorkQueue(int n_threads, size_t max_pending) : max_pending_(max_pending) {
  for (int i = 0; i < std::max(1, n_threads); ++i) threads_.emplace_back([this] { work(); });
}

WorkQueue::~WorkQueue() { stop(); }

bool WorkQueue::post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || tasks_.size() >= max_pending_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t WorkQueue::pending() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

void WorkQueue::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace ladder::server
