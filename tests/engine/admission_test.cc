// AdmissionController against hand-computed numbers: reserved slots, the
// shared pool, fair sharing by virtual token counters, queue bounds and the
// deadline-feasibility estimate.
#include "engine/admission.h"

#include <gtest/gtest.h>

namespace ladder::engine {
namespace {

using std::chrono::milliseconds;
const AdmissionClock::time_point kT0{};

AdmissionController make(int32_t capacity, int32_t max_queue, std::vector<TenantBudget> tenants) {
  AdmissionConfig c;
  c.capacity = capacity;
  c.max_queue = max_queue;
  c.initial_service_ms = 1000;
  c.service_ewma_alpha = 0.5;
  return AdmissionController(c, std::move(tenants));
}

AdmissionRequest req(int tenant, int64_t cost = 100) { return {tenant, cost, std::nullopt}; }

TEST(Admission, ReservedAndSharedSlots) {
  // capacity 10: A holds floor(0.5 * 10) = 5, B floor(0.25 * 10) = 2, shared 3.
  auto a = make(10, 100, {{0.5, 0, 0, 0}, {0.25, 0, 0, 0}});
  EXPECT_EQ(a.reserved_slots(0), 5);
  EXPECT_EQ(a.reserved_slots(1), 2);
  EXPECT_EQ(a.shared_slots(), 3);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kAdmitted) << i;
  // A uses its 5 and all 3 shared: its 9th waits ...
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kQueued);
  // ... but B's reservation is untouched: 2 run at once, the 3rd waits.
  EXPECT_EQ(a.offer(req(1), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.offer(req(1), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.offer(req(1), kT0).outcome, AdmissionOutcome::kQueued);
  EXPECT_EQ(a.running(0), 8);
  EXPECT_EQ(a.running(1), 2);
  EXPECT_EQ(a.total_queued(), 2);
}

TEST(Admission, FreedSharedSlotGoesToSmallestVirtualCounter) {
  auto a = make(10, 100, {{0.5, 0, 0, 0}, {0.2, 0, 0, 0}});  // r = 5, 2; shared 3
  a.offer(req(1, 100), kT0);
  a.offer(req(1, 100), kT0);
  EXPECT_DOUBLE_EQ(a.virtual_counter(1), 200);
  // A arrives from idle: lifted to the smallest active counter (B's 200),
  // then charged 8 * 100.
  std::vector<uint64_t> a_tickets;
  for (int i = 0; i < 8; ++i) a_tickets.push_back(a.offer(req(0, 100), kT0).ticket);
  EXPECT_DOUBLE_EQ(a.virtual_counter(0), 1000);
  uint64_t queued_a = a.offer(req(0, 100), kT0).ticket;
  uint64_t queued_b = a.offer(req(1, 100), kT0).ticket;
  // One of A's requests ends having served 40 tokens: A's counter drops by
  // 60 to 940, still above B's 200, so B's waiting request takes the shared
  // slot although A's waited longer.
  auto admitted = a.finish(a_tickets[0], 40, kT0 + milliseconds(200));
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0], queued_b);
  EXPECT_DOUBLE_EQ(a.virtual_counter(0), 940);
  EXPECT_DOUBLE_EQ(a.virtual_counter(1), 300);
  // The EWMA (alpha 0.5) of 1000 ms and a 200 ms run.
  EXPECT_DOUBLE_EQ(a.service_ms(), 600);
  admitted = a.finish(a_tickets[1], 100, kT0 + milliseconds(200));
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0], queued_a);
}

TEST(Admission, WaitingTenantUnderReservationGoesFirst) {
  // max_concurrent keeps B below its reservation only by its own cap.
  auto a = make(4, 100, {{0.5, 0, 0, 0}, {0.5, 0, 0, 0}});  // r = 2, 2; shared 0
  uint64_t a1 = a.offer(req(0), kT0).ticket;
  a.offer(req(0), kT0);
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kQueued);  // no shared slots
  EXPECT_EQ(a.offer(req(1), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.offer(req(1), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.total_running(), 4);
  // A slot of A frees: A's waiting request takes it back (its reservation).
  auto admitted = a.finish(a1, 100, kT0);
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(a.running(0), 2);
}

TEST(Admission, QueueBoundsRejectWithReason) {
  auto a = make(1, 2, {{0, 0, 1, 0}, {0, 0, 0, 0}});
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kQueued);
  AdmissionDecision d = a.offer(req(0), kT0);  // tenant 0 may queue only 1
  EXPECT_EQ(d.outcome, AdmissionOutcome::kRejected);
  EXPECT_EQ(d.code, "tenant_queue_full");
  EXPECT_EQ(a.offer(req(1), kT0).outcome, AdmissionOutcome::kQueued);
  d = a.offer(req(1), kT0);  // the global queue holds 2
  EXPECT_EQ(d.outcome, AdmissionOutcome::kRejected);
  EXPECT_EQ(d.code, "queue_full");
  EXPECT_GE(d.retry_after_s, 1);
}

TEST(Admission, MaxConcurrentCapsATenant) {
  auto a = make(8, 10, {{0, 2, 0, 0}});
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kAdmitted);
  EXPECT_EQ(a.offer(req(0), kT0).outcome, AdmissionOutcome::kQueued);
}

TEST(Admission, InfeasibleDeadlineRejectedAtOnce) {
  // capacity 2, no reservations: usable slots 2, service estimate 1000 ms.
  auto a = make(2, 100, {{0, 0, 0, 0}});
  a.offer(req(0), kT0);
  a.offer(req(0), kT0);
  // Waiting behind 0 others: (0 + 1) * 1000 / 2 = 500 ms.
  EXPECT_DOUBLE_EQ(a.estimated_wait_ms(0), 500);
  AdmissionRequest r = req(0);
  r.deadline = kT0 + milliseconds(499);
  AdmissionDecision d = a.offer(r, kT0);
  EXPECT_EQ(d.outcome, AdmissionOutcome::kRejected);
  EXPECT_EQ(d.code, "deadline_infeasible");
  EXPECT_DOUBLE_EQ(d.estimated_wait_ms, 500);
  EXPECT_EQ(d.retry_after_s, 1);
  EXPECT_NE(d.reason.find("500 ms"), std::string::npos) << d.reason;
  r.deadline = kT0 + milliseconds(500);
  EXPECT_EQ(a.offer(r, kT0).outcome, AdmissionOutcome::kQueued);
  // One ahead now: (1 + 1) * 1000 / 2 = 1000 ms; a 999 ms deadline fails.
  EXPECT_DOUBLE_EQ(a.estimated_wait_ms(0), 1000);
  r.deadline = kT0 + milliseconds(999);
  EXPECT_EQ(a.offer(r, kT0).outcome, AdmissionOutcome::kRejected);
}

TEST(Admission, ExpireAndWithdraw) {
  auto a = make(1, 10, {{0, 0, 0, 0}});
  uint64_t running = a.offer(req(0), kT0).ticket;
  AdmissionRequest r = req(0);
  r.deadline = kT0 + milliseconds(5000);
  uint64_t q1 = a.offer(r, kT0).ticket;
  uint64_t q2 = a.offer(req(0), kT0).ticket;
  EXPECT_TRUE(a.expire(kT0 + milliseconds(4999)).empty());
  auto expired = a.expire(kT0 + milliseconds(5000));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], q1);
  EXPECT_TRUE(a.withdraw(q2));
  EXPECT_FALSE(a.withdraw(q2));
  EXPECT_FALSE(a.withdraw(running));  // running, not waiting
  EXPECT_EQ(a.total_queued(), 0);
  EXPECT_TRUE(a.finish(running, 1, kT0).empty());
  EXPECT_EQ(a.total_running(), 0);
}

TEST(Admission, IdleTenantIsLiftedToActiveCounters) {
  auto a = make(1, 10, {{0, 0, 0, 0}, {0, 0, 0, 0}});
  uint64_t t = a.offer(req(0, 500), kT0).ticket;
  a.offer(req(0, 500), kT0);  // queued: tenant 0 stays active
  // Tenant 1 arrives from idle with counter 0: lifted to tenant 0's 500, so
  // it earns no credit for having been away.
  a.offer(req(1, 10), kT0);
  EXPECT_DOUBLE_EQ(a.virtual_counter(1), 500);
  auto admitted = a.finish(t, 500, kT0);
  ASSERT_EQ(admitted.size(), 1u);
  // Both counters are 500; ties go to the lower tenant index.
  EXPECT_EQ(a.running(0), 1);
}

}  // namespace
}  // namespace ladder::engine
