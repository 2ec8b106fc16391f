#include "engine/admission.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"

namespace ladder::engine {

AdmissionController::AdmissionController(const AdmissionConfig& config, std::vector<TenantBudget> tenants)
    : config_(config), budgets_(std::move(tenants)), service_ms_(config.initial_service_ms) {
  LADDER_CHECK(config_.capacity >= 1, "admission capacity must be >= 1");
  LADDER_CHECK(!budgets_.empty(), "admission needs at least one tenant");
  int32_t reserved_total = 0;
  for (const auto& b : budgets_) {
    auto r = static_cast<int32_t>(std::floor(b.reserved_share * config_.capacity + 1e-9));
    reserved_.push_back(r);
    reserved_total += r;
  }
  LADDER_CHECK(reserved_total <= config_.capacity, "reserved shares add up to more than the capacity");
  shared_slots_ = config_.capacity - reserved_total;
  running_.assign(budgets_.size(), 0);
  queues_.resize(budgets_.size());
  counters_.assign(budgets_.size(), 0.0);
}

int32_t AdmissionController::total_running() const {
  int32_t n = 0;
  for (int32_t r : running_) n += r;
  return n;
}

int32_t AdmissionController::total_queued() const {
  size_t n = 0;
  for (const auto& q : queues_) n += q.size();
  return static_cast<int32_t>(n);
}

int32_t AdmissionController::shared_used() const {
  int32_t used = 0;
  for (size_t t = 0; t < running_.size(); ++t) used += std::max(0, running_[t] - reserved_[t]);
  return used;
}

bool AdmissionController::can_run(int tenant) const {
  auto t = static_cast<size_t>(tenant);
  int32_t cap = budgets_[t].max_concurrent > 0 ? budgets_[t].max_concurrent : config_.capacity;
  if (running_[t] >= cap) return false;
  if (running_[t] < reserved_[t]) return true;
  return shared_used() < shared_slots_;
}

double AdmissionController::estimated_wait_ms(int tenant) const {
  auto t = static_cast<size_t>(tenant);
  // Its own waiting requests go first (FIFO); beyond its reservation it also
  // competes with every other tenant's waiting requests for shared slots.
  int32_t n_ahead = static_cast<int32_t>(queues_[t].size());
  if (running_[t] >= reserved_[t]) n_ahead = total_queued();
  int32_t slots = std::max(1, reserved_[t] + shared_slots_);
  if (budgets_[t].max_concurrent > 0) slots = std::min(slots, budgets_[t].max_concurrent);
  return (n_ahead + 1) * service_ms_ / slots;
}

void AdmissionController::lift_counter(int tenant) {
  auto t = static_cast<size_t>(tenant);
  if (running_[t] > 0 || !queues_[t].empty()) return;
  double min_active = std::numeric_limits<double>::infinity();
  for (size_t u = 0; u < budgets_.size(); ++u) {
    if (u != t && (running_[u] > 0 || !queues_[u].empty())) min_active = std::min(min_active, counters_[u]);
  }
  if (std::isfinite(min_active)) counters_[t] = std::max(counters_[t], min_active);
}

void AdmissionController::start(uint64_t id, AdmissionClock::time_point now) {
  Ticket& tk = tickets_.at(id);
  tk.admitted_at = now;
  running_[static_cast<size_t>(tk.tenant)] += 1;
  counters_[static_cast<size_t>(tk.tenant)] += static_cast<double>(tk.cost_tokens);
}

AdmissionDecision AdmissionController::offer(const AdmissionRequest& request, AdmissionClock::time_point now) {
  LADDER_CHECK(request.tenant >= 0 && static_cast<size_t>(request.tenant) < budgets_.size(), "unknown tenant");
  auto t = static_cast<size_t>(request.tenant);
  AdmissionDecision d;
  lift_counter(request.tenant);
  if (queues_[t].empty() && can_run(request.tenant)) {
    uint64_t id = next_ticket_++;
    tickets_[id] = Ticket{request.tenant, request.cost_tokens, request.deadline, std::nullopt};
    start(id, now);
    d.outcome = AdmissionOutcome::kAdmitted;
    d.ticket = id;
    return d;
  }
  double wait_ms = estimated_wait_ms(request.tenant);
  d.estimated_wait_ms = wait_ms;
  d.retry_after_s = std::max(1, static_cast<int>(std::ceil(wait_ms / 1000.0)));
  if (total_queued() >= config_.max_queue) {
    d.code = "queue_full";
    d.reason = "the server queue is full (" + std::to_string(config_.max_queue) + " requests waiting); retry later";
    return d;
  }
  if (budgets_[t].max_queued > 0 && static_cast<int32_t>(queues_[t].size()) >= budgets_[t].max_queued) {
    d.code = "tenant_queue_full";
    d.reason = "this tenant already has " + std::to_string(budgets_[t].max_queued) +
               " requests waiting (its max_queued); retry later";
    return d;
  }
  if (request.deadline) {
    auto start_at = now + std::chrono::duration_cast<AdmissionClock::duration>(
                              std::chrono::duration<double, std::milli>(wait_ms));
    if (start_at > *request.deadline) {
      double budget_ms = std::chrono::duration<double, std::milli>(*request.deadline - now).count();
      d.code = "deadline_infeasible";
      d.reason = "the deadline cannot be met: estimated queue wait " + std::to_string(std::lround(wait_ms)) +
                 " ms exceeds the " + std::to_string(std::lround(std::max(0.0, budget_ms))) + " ms left";
      return d;
    }
  }
  uint64_t id = next_ticket_++;
  tickets_[id] = Ticket{request.tenant, request.cost_tokens, request.deadline, std::nullopt};
  queues_[t].push_back(id);
  d.outcome = AdmissionOutcome::kQueued;
  d.ticket = id;
  d.retry_after_s = 0;
  return d;
}

std::vector<uint64_t> AdmissionController::drain_queue(AdmissionClock::time_point now) {
  std::vector<uint64_t> admitted;
  for (;;) {
    int best = -1;
    // Reserved capacity first: a waiting tenant under its reservation.
    for (size_t t = 0; t < queues_.size() && best < 0; ++t) {
      int32_t cap = budgets_[t].max_concurrent > 0 ? budgets_[t].max_concurrent : config_.capacity;
      if (!queues_[t].empty() && running_[t] < reserved_[t] && running_[t] < cap) best = static_cast<int>(t);
    }
    if (best < 0) {
      for (size_t t = 0; t < queues_.size(); ++t) {
        if (queues_[t].empty() || !can_run(static_cast<int>(t))) continue;
        if (best < 0) {
          best = static_cast<int>(t);
          continue;
        }
        auto b = static_cast<size_t>(best);
        if (budgets_[t].priority > budgets_[b].priority ||
            (budgets_[t].priority == budgets_[b].priority && counters_[t] < counters_[b])) {
          best = static_cast<int>(t);
        }
      }
    }
    if (best < 0) break;
    auto& q = queues_[static_cast<size_t>(best)];
    uint64_t id = q.front();
    q.pop_front();
    start(id, now);
    admitted.push_back(id);
  }
  return admitted;
}

std::vector<uint64_t> AdmissionController::finish(uint64_t ticket, int64_t tokens_served,
                                                  AdmissionClock::time_point now) {
  auto it = tickets_.find(ticket);
  LADDER_CHECK(it != tickets_.end() && it->second.admitted_at.has_value(), "finish() of a ticket that is not running");
  const Ticket& tk = it->second;
  auto t = static_cast<size_t>(tk.tenant);
  running_[t] -= 1;
  counters_[t] += static_cast<double>(tokens_served - tk.cost_tokens);
  double ran_ms = std::chrono::duration<double, std::milli>(now - *tk.admitted_at).count();
  service_ms_ = config_.service_ewma_alpha * ran_ms + (1.0 - config_.service_ewma_alpha) * service_ms_;
  tickets_.erase(it);
  return drain_queue(now);
}

bool AdmissionController::withdraw(uint64_t ticket) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end() || it->second.admitted_at.has_value()) return false;
  auto& q = queues_[static_cast<size_t>(it->second.tenant)];
  q.erase(std::find(q.begin(), q.end(), ticket));
  tickets_.erase(it);
  return true;
}

std::vector<uint64_t> AdmissionController::expire(AdmissionClock::time_point now) {
  std::vector<uint64_t> expired;
  for (auto& q : queues_) {
    for (auto it = q.begin(); it != q.end();) {
      const Ticket& tk = tickets_.at(*it);
      if (tk.deadline && *tk.deadline <= now) {
        expired.push_back(*it);
        tickets_.erase(*it);
        it = q.erase(it);
      } else {
        ++it;
      }
    }
  }
  return expired;
}

std::optional<AdmissionClock::time_point> AdmissionController::next_deadline() const {
  std::optional<AdmissionClock::time_point> next;
  for (const auto& q : queues_) {
    for (uint64_t id : q) {
      const Ticket& tk = tickets_.at(id);
      if (tk.deadline && (!next || *tk.deadline < *next)) next = tk.deadline;
    }
  }
  return next;
}

}  // namespace ladder::engine
