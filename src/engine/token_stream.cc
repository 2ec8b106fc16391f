#include "engine/token_stream.h"

namespace ladder::engine {

void TokenStream::push(StreamEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

std::optional<StreamEvent> TokenStream::next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (final_taken_) return std::nullopt;
  cv_.wait(lock, [&] { return !events_.empty(); });
  StreamEvent e = std::move(events_.front());
  events_.pop_front();
  if (e.kind == StreamEvent::Kind::kFinished) final_taken_ = true;
  return e;
}

std::optional<StreamEvent> TokenStream::next_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (final_taken_) return std::nullopt;
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  StreamEvent e = std::move(events_.front());
  events_.pop_front();
  if (e.kind == StreamEvent::Kind::kFinished) final_taken_ = true;
  return e;
}

bool TokenStream::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return final_taken_;
}

}  // namespace ladder::engine
