// KvLink: KV block transfers between workers over TCP (Asio), rung 2's wire.
// A prefill worker sends the blocks of a computed prompt straight to the
// decode worker the router chose; the decode worker keeps them in its inbox
// under the transfer id until the request that names that id arrives (header
// x-ladder-kv-transfer), then hands them to its engine, whose KV cache manager
// takes each block only where the key matches the request's own.
//
//   sender                       receiver (KvReceiver, --kv-port)
//   connect, frames (kv_wire.h) ->  check every frame, then the header
//                                   against this worker's model, tokenizer
//                                   and KV format; store in the inbox
//                               <-  one ack frame: stored, or why not
//
// Nothing here holds a pool block: the inbox holds host bytes only, expired
// after a time-to-live and bounded in total, so a lost sender or a request
// that never comes leaks nothing. The port must be on a private network:
// whoever can reach it can offer blocks (never to another tenant -- keys
// decide -- but with any bytes).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "kv/kv_format.h"
#include "kv/kv_transfer.h"
#include "kv/kv_wire.h"

namespace ladder::server {

// Counters for /metrics, shared by the sending and receiving sides.
struct KvLinkMetrics {
  std::atomic<uint64_t> sent_transfers{0};
  std::atomic<uint64_t> sent_failures{0};
  std::atomic<uint64_t> sent_blocks{0};
  std::atomic<uint64_t> sent_bytes{0};   // wire bytes, frames included
  std::atomic<uint64_t> sent_micros{0};  // connect to ack, summed
  std::atomic<uint64_t> received_transfers{0};
  std::atomic<uint64_t> received_refused{0};  // a bad frame, a mismatched header, a full inbox
  std::atomic<uint64_t> received_bytes{0};
  std::atomic<uint64_t> inbox_taken{0};
  std::atomic<uint64_t> inbox_expired{0};
  std::atomic<uint64_t> inbox_missing{0};  // a request named a transfer that is not there

  // Prometheus text: the ladder_kv_transfer_* and ladder_kv_inbox_* series,
  // and the engine's imported and refused block counts.
  std::string render(int64_t imported_blocks, int64_t refused_blocks) const;
};

// Transfers waiting for their request. Thread-safe.
class KvInbox {
 public:
  KvInbox(size_t max_bytes, std::chrono::milliseconds ttl, KvLinkMetrics& metrics);
  // Stores a transfer; kResourceExhausted when it would pass max_bytes even
  // after expired entries are dropped, kInvalidArgument for a duplicate id.
  Status put(const std::string& id, std::shared_ptr<const kv::KvBlockSet> blocks);
  // Removes and returns it; null when absent (never sent, or expired).
  std::shared_ptr<const kv::KvBlockSet> take(const std::string& id);
  size_t bytes() const;
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<const kv::KvBlockSet> blocks;
    std::chrono::steady_clock::time_point expires;
  };
  void expire_locked(std::chrono::steady_clock::time_point now);

  const size_t max_bytes_;
  const std::chrono::milliseconds ttl_;
  KvLinkMetrics& metrics_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  size_t bytes_ = 0;
};

// What a receiver accepts: blocks of this model, tokenizer and KV shape.
struct KvReceiverConfig {
  std::string host = "0.0.0.0";
  uint16_t port = 0;  // 0 = any free port
  std::string model_digest;
  std::string tokenizer_digest;
  kv::KvShape shape;  // n_blocks ignored
  kv::KvWireLimits limits;
  std::chrono::milliseconds read_timeout{30000};  // a whole transfer must arrive within this
  int64_t max_connections = 256;
};

class KvReceiver {
 public:
  KvReceiver(KvReceiverConfig config, KvInbox& inbox, KvLinkMetrics& metrics);
  ~KvReceiver();  // stop()
  KvReceiver(const KvReceiver&) = delete;
  KvReceiver& operator=(const KvReceiver&) = delete;

  // Binds, listens and starts its io thread. kIo when the port cannot be bound.
  Status start();
  uint16_t port() const;
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

struct KvSendResult {
  size_t bytes = 0;
  size_t blocks = 0;
  double seconds = 0;  // connect to ack
};

// Sends one transfer to host:port and waits for the receiver's ack. Errors:
// kIo (cannot connect, connection lost, timed out), or the status the
// receiver refused the transfer with.
Result<KvSendResult> send_kv_transfer(const std::string& host, uint16_t port, const std::string& transfer_id,
                                      const kv::KvBlockSet& blocks, std::chrono::milliseconds timeout,
                                      KvLinkMetrics* metrics);

}  // namespace ladder::server
