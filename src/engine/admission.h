// AdmissionController: which request runs now, which waits, and which is
// turned away at once. Pure logic: no threads, no clocks of its own (callers
// pass `now`), so tests can check exact numbers. The server serialises calls.
//
// Capacity is `capacity` running slots (the engine's max running sequences).
// Tenant t holds r_t = floor(reserved_share_t * capacity) of them; the rest,
// S = capacity - sum r_t, is shared. A request of t runs at once when t is
// below max_concurrent_t and either uses fewer than r_t slots or a shared
// slot is free (a tenant's usage beyond r_t occupies shared slots), and no
// older request of t is waiting (FIFO within a tenant). Otherwise it waits in
// a bounded queue. When a slot frees, waiting requests of tenants still under
// their reservation go first; shared slots go to the highest-priority tenant,
// then the one with the smallest virtual token counter (tokens it has been
// granted; a tenant returning from idle is lifted to the smallest active
// counter, so idling earns no credit), so spare capacity is shared fairly.
//
// Deadline feasibility: a waiting request starts after n_ahead + 1 slots it
// can use have freed; with slots_t = r_t + S usable slots each turning over
// every service_ms (an EWMA of measured run times), the estimated wait is
// (n_ahead + 1) * service_ms / slots_t. If now + wait passes its deadline the
// request is rejected at once (429) rather than served late.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ladder::engine {

using AdmissionClock = std::chrono::steady_clock;

struct AdmissionConfig {
  int32_t capacity = 64;              // running slots
  int32_t max_queue = 256;            // waiting requests, all tenants together
  double initial_service_ms = 1000;   // run-time estimate until one is measured
  double service_ewma_alpha = 0.2;    // weight of each new measurement
};

struct TenantBudget {
  double reserved_share = 0;   // [0, 1]
  int32_t max_concurrent = 0;  // 0 = capacity
  int32_t max_queued = 0;      // 0 = only the global bound
  int32_t priority = 0;
};

struct AdmissionRequest {
  int tenant = 0;
  int64_t cost_tokens = 1;  // prompt + max output tokens, charged to the virtual counter
  std::optional<AdmissionClock::time_point> deadline;  // first token must come by then
};

enum class AdmissionOutcome { kAdmitted, kQueued, kRejected };

struct AdmissionDecision {
  AdmissionOutcome outcome = AdmissionOutcome::kRejected;
  uint64_t ticket = 0;           // 0 when rejected
  std::string code;              // when rejected: queue_full, tenant_queue_full, deadline_infeasible
  std::string reason;            // when rejected: a sentence for the error body
  double estimated_wait_ms = 0;  // when queued or rejected for its deadline
  int retry_after_s = 0;         // when rejected
};

class AdmissionController {
 public:
  AdmissionController(const AdmissionConfig& config, std::vector<TenantBudget> tenants);

  AdmissionDecision offer(const AdmissionRequest& request, AdmissionClock::time_point now);

  // A running ticket is done (finished, failed or cancelled). Frees its slot,
  // corrects its tenant's counter to the tokens actually served, updates the
  // run-time estimate, and returns the waiting tickets admitted in its place.
  std::vector<uint64_t> finish(uint64_t ticket, int64_t tokens_served, AdmissionClock::time_point now);
  // A waiting ticket leaves the queue (client gone). False when not waiting.
  bool withdraw(uint64_t ticket);
  // Waiting tickets whose deadline is at or before `now`, removed in queue order.
  std::vector<uint64_t> expire(AdmissionClock::time_point now);

  int32_t reserved_slots(int tenant) const { return reserved_.at(static_cast<size_t>(tenant)); }
  int32_t shared_slots() const { return shared_slots_; }
  int32_t running(int tenant) const { return running_.at(static_cast<size_t>(tenant)); }
  int32_t queued(int tenant) const { return static_cast<int32_t>(queues_.at(static_cast<size_t>(tenant)).size()); }
  int32_t total_running() const;
  int32_t total_queued() const;
  double virtual_counter(int tenant) const { return counters_.at(static_cast<size_t>(tenant)); }
  double service_ms() const { return service_ms_; }
  // Estimated wait of a request of `tenant` joining the queue now.
  double estimated_wait_ms(int tenant) const;
  // The earliest deadline among waiting tickets (when expire() has work).
  std::optional<AdmissionClock::time_point> next_deadline() const;
  size_t n_tenants() const { return budgets_.size(); }

 private:
  struct Ticket {
    int tenant = 0;
    int64_t cost_tokens = 0;
    std::optional<AdmissionClock::time_point> deadline;
    std::optional<AdmissionClock::time_point> admitted_at;
  };

  bool can_run(int tenant) const;
  int32_t shared_used() const;
  void start(uint64_t id, AdmissionClock::time_point now);
  // Admits waiting tickets while a slot can take one.
  std::vector<uint64_t> drain_queue(AdmissionClock::time_point now);
  void lift_counter(int tenant);

  AdmissionConfig config_;
  std::vector<TenantBudget> budgets_;
  std::vector<int32_t> reserved_;  // [n_tenants] r_t
  int32_t shared_slots_ = 0;
  std::vector<int32_t> running_;               // [n_tenants]
  std::vector<std::deque<uint64_t>> queues_;   // [n_tenants] FIFO of waiting tickets
  std::vector<double> counters_;               // [n_tenants] virtual token counters
  std::map<uint64_t, Ticket> tickets_;
  uint64_t next_ticket_ = 1;
  double service_ms_;
};

}  // namespace ladder::engine
