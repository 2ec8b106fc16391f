// StreamPump: one thread that moves engine events to their consumers, so that
// serving N streams costs no thread per stream. The engine's TokenStream is a
// pull channel; the pump polls the streams it holds (only admitted requests,
// at most the engine's running capacity plus its queue) whenever the engine
// reports a finished step (wake()), and every few ms regardless, since a
// cancellation can end a stream without a step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/token_stream.h"

namespace ladder::server {

class StreamPump {
 public:
  // Called on the pump thread for every event, in order; the stream is
  // dropped after its kFinished event.
  using Consumer = std::function<void(const engine::StreamEvent&)>;

  StreamPump();
  ~StreamPump();  // stop()
  StreamPump(const StreamPump&) = delete;
  StreamPump& operator=(const StreamPump&) = delete;

  void add(std::shared_ptr<engine::TokenStream> stream, Consumer consumer);
  // New events may be waiting (the engine finished a step): poll now.
  void wake();
  // Joins the thread; streams still held are dropped unread.
  void stop();
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<engine::TokenStream> stream;
    Consumer consumer;
  };
  void loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> incoming_;
  std::atomic<size_t> n_active_{0};
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;
};

}  // namespace ladder::server
