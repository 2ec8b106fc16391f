#include "server/stream_pump.h"

#include <chrono>

namespace ladder::server {

StreamPump::StreamPump() : thread_([this] { loop(); }) {}

StreamPump::~StreamPump() { stop(); }

void StreamPump::add(std::shared_ptr<engine::TokenStream> stream, Consumer consumer) {
  {
    std::lock_guard lock(mu_);
    incoming_.push_back({std::move(stream), std::move(consumer)});
  }
  cv_.notify_one();
}

void StreamPump::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

void StreamPump::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

size_t StreamPump::size() const {
  std::lock_guard lock(mu_);
  return n_active_.load() + incoming_.size();
}

void StreamPump::loop() {
  std::vector<Entry> active;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (active.empty()) {
        cv_.wait(lock, [&] { return stopping_ || !incoming_.empty(); });
      }
      if (stopping_) return;
      for (auto& e : incoming_) active.push_back(std::move(e));
      incoming_.clear();
      n_active_ = active.size();
    }
    bool progressed = false;
    for (size_t i = 0; i < active.size();) {
      bool finished = false;
      while (auto ev = active[i].stream->next_for(std::chrono::milliseconds(0))) {
        progressed = true;
        finished = ev->kind == engine::StreamEvent::Kind::kFinished;
        active[i].consumer(*ev);
        if (finished) break;
      }
      if (finished) {
        active[i] = std::move(active.back());
        active.pop_back();
      } else {
        ++i;
      }
    }
    if (!progressed) {
      std::unique_lock lock(mu_);
      n_active_ = active.size();
      cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return stopping_ || woken_ || !incoming_.empty(); });
      woken_ = false;
    }
  }
}

}  // namespace ladder::server
