// WorkerPool: the prefill and decode workers behind `ladder route`, what
// their /health says (model, tokenizer and KV format they serve, capacity,
// where their KV listener is), whether they answer, and which prompt blocks
// each is likely to hold.
//
// Placement. A prefill worker is chosen by the longest leading run of the
// request's block keys it was last sent (its prefix cache probably still
// holds them: those blocks are not computed again), then by fewest requests
// in flight from this router. A decode worker by fewest in flight, then by
// the same affinity (blocks it already holds are taken from its own cache).
// Keys carry the tenant's cache scope, so affinity never crosses tenants.
// The index is the router's belief, bounded and LRU; a wrong belief costs
// only time, never correctness.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "net/http_client.h"
#include "kv/block_key.h"

namespace ladder::route {

enum class WorkerRole { kPrefill, kDecode };
const char* worker_role_name(WorkerRole role);

// A bounded set of block keys, least recently inserted or hit dropped first.
class PrefixIndex {
 public:
  explicit PrefixIndex(size_t capacity) : capacity_(capacity) {}
  // How many of keys, from the first, are in the set.
  size_t leading_hits(std::span<const kv::BlockKey> keys) const;
  void insert(std::span<const kv::BlockKey> keys);
  size_t size() const { return map_.size(); }

 private:
  size_t capacity_;
  std::list<kv::BlockKey> lru_;  // most recent at the front
  std::unordered_map<kv::BlockKey, std::list<kv::BlockKey>::iterator, kv::BlockKeyHash> map_;
};

// What a worker's /health reported when last asked.
struct WorkerInfo {
  std::string url;
  WorkerRole role = WorkerRole::kDecode;
  bool healthy = false;
  bool ever_ready = false;
  std::string status;  // its /health status, or why it could not be asked
  std::string model_digest;
  std::string tokenizer_digest;
  std::string kv_format;
  int block_size = 0;
  int max_running = 0;
  int64_t prefill_chunk_tokens = 0;  // 0: not said
  int64_t max_input_tokens = 0;
  int64_t context_length = 0;
  bool tool_preamble = true;  // describes tools in the system message
  std::string chat_template_digest;  // sha256 of the chat template it renders with
  std::string kernels;               // its kernel fingerprint (ops/kernel_choice.h)
  uint16_t kv_port = 0;
  int64_t in_flight = 0;
  int64_t kv_blocks_used = 0;
};

struct Placement {
  size_t index = 0;
  WorkerRole role = WorkerRole::kDecode;
  size_t affinity_blocks = 0;  // leading keys the index believed it holds
  int64_t others_in_flight = 0;  // this router's other requests on the worker when placed
  int64_t prefill_chunk_tokens = 0;  // the worker's per-step prompt tokens (0: not said)
  net::Endpoint endpoint;
  std::string kv_address;  // decode: HOST:PORT of its KV listener
};

class WorkerPool {
 public:
  // Errors: a URL that does not parse, no decode worker.
  static Result<std::unique_ptr<WorkerPool>> create(const std::vector<std::string>& prefill_urls,
                                                    const std::vector<std::string>& decode_urls,
                                                    size_t index_capacity = 1 << 16);

  // Asks every worker's /health (timeout_s each) and records what it says.
  void probe(double timeout_s);
  // Every worker answered ready at least once, and all serve the same model,
  // tokenizer, KV format and block size (kFailedPrecondition naming the odd
  // one out otherwise; kUnavailable-like kFailedPrecondition while waiting).
  Status check_ready() const;

  // A healthy worker of `role` for a request with these block keys; its
  // in-flight count goes up until release(). nullopt when none is healthy.
  std::optional<Placement> place(WorkerRole role, std::span<const kv::BlockKey> keys);
  void release(const Placement& p);
  // Whether a prefill worker is healthy, the fewest of this router's
  // requests in flight at a healthy one (0: a prompt sent now starts at
  // once), and the most leading `keys` a healthy one is believed to hold.
  struct PrefillAvailability {
    bool any = false;
    int64_t least_in_flight = 0;
    size_t most_held_blocks = 0;
  };
  PrefillAvailability prefill_availability(std::span<const kv::BlockKey> keys) const;
  // The worker now holds these blocks (it computed or received them).
  void record_blocks(const Placement& p, std::span<const kv::BlockKey> keys);
  // The worker failed a call: unhealthy until a probe finds it ready again.
  void mark_failed(const Placement& p, const std::string& why);

  std::vector<WorkerInfo> snapshot() const;
  // Served model facts (after check_ready()).
  std::string model_digest() const;
  std::string tokenizer_digest() const;
  std::string kv_format() const;
  int block_size() const;
  // The smallest prompt bound and context length of the decode workers.
  int64_t max_input_tokens() const;
  int64_t context_length() const;
  // Whether the decode workers describe tools in the system message (the
  // router plans requests as they do).
  bool tool_preamble() const;
  // The decode workers' chat template digest; "" when they differ.
  std::string chat_template_digest() const;
  // Every worker's kernel fingerprint when they all report the same one,
  // else nullopt.
  std::optional<std::string> kernels() const;
  // Running slots of all decode workers together.
  int total_decode_slots() const;

 private:
  struct Worker {
    WorkerInfo info;
    net::Endpoint endpoint;
    PrefixIndex index;
  };
  WorkerPool() = default;
  // The smallest value of `field` among the decode workers.
  int64_t smallest_decode(int64_t WorkerInfo::*field) const;
  std::vector<Worker>& of(WorkerRole role) { return role == WorkerRole::kPrefill ? prefill_ : decode_; }

  mutable std::mutex mu_;
  std::vector<Worker> prefill_;
  std::vector<Worker> decode_;
};

}  // namespace ladder::route
