#include "engine/engine.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/token_constraint.h"
#include "engine_test_util.h"

namespace ladder::engine {
namespace {

using namespace ladder::engine::testing;  // NOLINT

// Holds the loop at the end of step `at` until release(): the test then acts
// at a known step boundary.
class StepGate {
 public:
  explicit StepGate(int64_t at) : at_(at) {}
  void on_step(const StepReport& r) {
    if (r.step != at_) return;
    std::unique_lock<std::mutex> lock(mu_);
    reached_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  void wait_reached() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return reached_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  int64_t at_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool reached_ = false;
  bool released_ = false;
};

TEST(Engine, GreedyMatchesTheGoldenIds) {
  auto engine = make_engine({});
  const Outcome o = run(*engine, greedy_request(kOnceUponATime, 64));
  EXPECT_EQ(o.tokens, kGolden64);
  EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
  EXPECT_TRUE(o.final_event.status.is_ok());
  EXPECT_EQ(o.final_event.usage.prompt_tokens, 5);
  EXPECT_EQ(o.final_event.usage.completion_tokens, 64);
  expect_pool_whole(*engine);
}

TEST(Engine, LogprobsMatchTheReferenceTop5) {
  std::ifstream in(ladder::testing::shared_path("models/stories260K.top5.json"));
  ASSERT_TRUE(in.good());
  const nlohmann::json ref = nlohmann::json::parse(in);
  const auto& steps = ref.at("greedy_steps");
  auto engine = make_engine({});
  Request r =
      greedy_request(ref.at("prompt_tokens").get<std::vector<int32_t>>(), static_cast<int64_t>(steps.size()));
  r.sampling.top_logprobs = 5;
  const Outcome o = run(*engine, r);
  ASSERT_EQ(o.details.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(o.details[i].token, steps[i].at("chosen").get<int32_t>()) << "step " << i;
    const auto& top = steps[i].at("top5_logprobs");
    ASSERT_EQ(o.details[i].top.size(), 5u);
    for (size_t j = 0; j < 5; ++j) {
      EXPECT_EQ(o.details[i].top[j].token, top[j][0].get<int32_t>()) << "step " << i << " rank " << j;
      EXPECT_NEAR(o.details[i].top[j].logprob, top[j][1].get<double>(),
                  2e-3 * std::max(1.0, std::abs(top[j][1].get<double>())))
          << "step " << i << " rank " << j;
    }
    EXPECT_NEAR(o.details[i].logprob, top[0][1].get<double>(), 1e-3);
  }
  expect_pool_whole(*engine);
}

TEST(Engine, StopsOnACallerStopIdAndReportsTimings) {
  auto engine = make_engine({});
  Request r = greedy_request(kOnceUponATime, 64);
  r.stop.stop_token_ids = {426, 9999};  // 426 first appears at index 10
  const Outcome o = run(*engine, r);
  EXPECT_EQ(o.tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 11));
  EXPECT_EQ(o.final_event.finish, FinishReason::kStop);
  const RequestTimings& t = o.final_event.timings;
  ASSERT_TRUE(t.prefill_start && t.first_token && t.finished);
  EXPECT_LE(t.arrival, *t.prefill_start);
  EXPECT_LE(*t.prefill_start, *t.first_token);
  EXPECT_EQ(t.token_times.size(), 11u);
  EXPECT_EQ(t.token_times.front(), *t.first_token);
  EXPECT_TRUE(std::is_sorted(t.token_times.begin(), t.token_times.end()));
  EXPECT_LE(t.token_times.back(), *t.finished);
  expect_pool_whole(*engine);
}

TEST(Engine, SeededSamplingIsReproducibleAloneOrInABatch) {
  auto engine = make_engine({});
  Request r = greedy_request(kOnceUponATime, 40);
  r.sampling.temperature = 0.9f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = 42;
  const Outcome alone = run(*engine, r);
  // Same request beside others (different seeds, lengths): the same tokens.
  std::vector<Submission> subs;
  for (uint64_t i = 0; i < 4; ++i) {
    Request other = greedy_request(synthetic_prompt(20 + 10 * i, i), 30);
    other.sampling.temperature = 1.0f;
    other.sampling.seed = 100 + i;
    subs.push_back(*engine->submit(other));
  }
  auto again = engine->submit(r);
  ASSERT_TRUE(again.is_ok());
  const Outcome batched = drain(*again->stream);
  for (auto& s : subs) drain(*s.stream);
  EXPECT_EQ(alone.tokens, batched.tokens);
  // A different seed gives a different sample path.
  r.sampling.seed = 43;
  EXPECT_NE(run(*engine, r).tokens, alone.tokens);
  expect_pool_whole(*engine);
}

TEST(Engine, RejectsBadRequestsUpFrontNamingTheField) {
  StepGate gate(1);
  EngineConfig cfg;
  cfg.n_kv_blocks = 4;  // 64 positions
  cfg.scheduler.max_running = 1;
  cfg.max_queue = 1;
  cfg.on_step = [&](const StepReport& r) { gate.on_step(r); };
  auto engine = make_engine(cfg);
  auto expect_refused = [&](Request r, StatusCode code, const std::string& param, const std::string& reason) {
    const Status st = engine->submit(std::move(r)).status();
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_EQ(st.param(), param) << st.to_string();
    EXPECT_EQ(st.reason(), reason) << st.to_string();
  };
  expect_refused(greedy_request({1, 512}, 4), StatusCode::kInvalidArgument, "prompt", "");
  expect_refused(greedy_request({1, -3}, 4), StatusCode::kInvalidArgument, "prompt", "");
  expect_refused(greedy_request({}, 4), StatusCode::kInvalidArgument, "prompt", "");
  // The engine's context is 128 (stories260K's): a 128-token prompt leaves no room.
  expect_refused(greedy_request(synthetic_prompt(128, 1), 4), StatusCode::kOutOfRange, "prompt",
                 "context_length_exceeded");
  expect_refused(greedy_request(synthetic_prompt(100, 1), 40), StatusCode::kOutOfRange, "max_tokens",
                 "context_length_exceeded");
  // 50 + 40 tokens need 6 blocks; the pool has 4.
  expect_refused(greedy_request(synthetic_prompt(50, 1), 40), StatusCode::kOutOfRange, "max_tokens", "");
  Request bad_sampling = greedy_request(kOnceUponATime, 4);
  bad_sampling.sampling.top_p = 2.0f;
  EXPECT_EQ(engine->submit(bad_sampling).status().code(), StatusCode::kInvalidArgument);
  Request no_tokenizer = greedy_request(kOnceUponATime, 4);
  no_tokenizer.stop.stop_strings = {"."};
  expect_refused(no_tokenizer, StatusCode::kInvalidArgument, "stop", "");
  // One running (the loop held after its first step), one queued: the third
  // is refused with the queue's reason and a retry-after.
  auto a = engine->submit(greedy_request(kOnceUponATime, 50));
  gate.wait_reached();
  auto b = engine->submit(greedy_request(kOnceUponATime, 50));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_FALSE(a->queued);
  EXPECT_TRUE(b->queued);
  const Status full = engine->submit(greedy_request(kOnceUponATime, 4)).status();
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(full.reason(), "queue_full");
  EXPECT_GE(full.retry_after_s(), 1);
  gate.release();
  drain(*a->stream);
  EXPECT_EQ(drain(*b->stream).tokens.size(), 50u);
  EXPECT_TRUE(engine->submit(greedy_request(kOnceUponATime, 4)).is_ok());
  engine->shutdown();
  EXPECT_EQ(engine->submit(greedy_request(kOnceUponATime, 4)).status().code(), StatusCode::kFailedPrecondition);
  expect_pool_whole(*engine);
}

TEST(Engine, MaxTokensDefaultsToWhatTheBoundsAllow) {
  EngineConfig cfg;
  cfg.max_output_tokens = 7;
  auto engine = make_engine(cfg);
  auto s = engine->submit(greedy_request(kOnceUponATime, 0));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->max_tokens, 7);
  EXPECT_EQ(drain(*s->stream).tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 7));
  EXPECT_EQ(engine->submit(greedy_request(kOnceUponATime, 8)).status().param(), "max_tokens");
  expect_pool_whole(*engine);
}

TEST(Engine, AQueuedRequestWhoseDeadlinePassesEndsWithDeadlineExceeded) {
  StepGate gate(1);
  EngineConfig cfg;
  cfg.scheduler.max_running = 1;
  cfg.initial_service_ms = 1;  // admission expects the slot to free at once
  cfg.on_step = [&](const StepReport& r) { gate.on_step(r); };
  auto engine = make_engine(cfg);
  auto running = engine->submit(greedy_request(kOnceUponATime, 20));
  ASSERT_TRUE(running.is_ok());
  gate.wait_reached();
  Request late = greedy_request(kOnceUponATime, 4);
  // A second away: still ahead when it is submitted, however busy the
  // machine (50 ms once passed before submit() looked at it).
  late.scheduling.deadline = Clock::now() + std::chrono::seconds(1);
  auto queued = engine->submit(late);
  ASSERT_TRUE(queued.is_ok()) << queued.status().to_string();
  EXPECT_TRUE(queued->queued);
  // The loop is held mid-step: the deadline passes while the request waits.
  std::this_thread::sleep_until(late.scheduling.deadline + std::chrono::milliseconds(50));
  gate.release();
  const Outcome q = drain(*queued->stream);
  EXPECT_TRUE(q.tokens.empty());
  EXPECT_EQ(q.final_event.finish, FinishReason::kError);
  EXPECT_EQ(q.final_event.status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(q.final_event.status.reason(), "deadline_exceeded");
  drain(*running->stream);
  EXPECT_EQ(engine->in_flight(), 0);
  expect_pool_whole(*engine);
}

TEST(Engine, CancelAllEndsQueuedAndRunningRequests) {
  StepGate gate(2);
  EngineConfig cfg;
  cfg.scheduler.max_running = 2;
  cfg.on_step = [&](const StepReport& r) { gate.on_step(r); };
  auto engine = make_engine(cfg);
  std::vector<Submission> subs;
  for (int i = 0; i < 5; ++i) subs.push_back(*engine->submit(greedy_request(synthetic_prompt(10, i), 100)));
  gate.wait_reached();
  engine->cancel_all();
  gate.release();
  for (auto& s : subs) EXPECT_EQ(drain(*s.stream).final_event.finish, FinishReason::kCancelled);
  EXPECT_EQ(engine->in_flight(), 0);
  expect_pool_whole(*engine);
}

TEST(Engine, CancelFreesBlocksRunningOrQueued) {
  StepGate gate(4);
  EngineConfig cfg;
  cfg.scheduler.max_running = 1;  // the second request waits in the queue
  cfg.on_step = [&](const StepReport& r) { gate.on_step(r); };
  auto engine = make_engine(cfg);
  auto running = engine->submit(greedy_request(kOnceUponATime, 120));
  auto queued = engine->submit(greedy_request(synthetic_prompt(50, 3), 10));
  ASSERT_TRUE(running.is_ok() && queued.is_ok());
  gate.wait_reached();
  EXPECT_GT(engine->metrics().kv_blocks_used, 0);
  engine->cancel(queued->id);
  engine->cancel(running->id);
  engine->cancel(987654);  // unknown: ignored
  gate.release();
  const Outcome q = drain(*queued->stream);
  EXPECT_EQ(q.final_event.finish, FinishReason::kCancelled);
  EXPECT_TRUE(q.tokens.empty());
  // Cancelled at the boundary after step 4: exactly four tokens, the golden ones.
  const Outcome r = drain(*running->stream);
  EXPECT_EQ(r.final_event.finish, FinishReason::kCancelled);
  EXPECT_EQ(r.tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 4));
  expect_pool_whole(*engine);
  // A cancel after the end is harmless.
  engine->cancel(running->id);
  EXPECT_EQ(run(*engine, greedy_request(kOnceUponATime, 8)).tokens,
            std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 8));
  expect_pool_whole(*engine);
}

// A constraint that gives up (TokenConstraint::status) ends its own request
// with its error at that step, the token drawn under its last mask dropped
// and the request's blocks freed; a request beside it runs on to its golden
// ids.
TEST(Engine, AConstraintThatGivesUpEndsItsRequestWithItsError) {
  class GivesUp final : public TokenConstraint {
   public:
    explicit GivesUp(int masks_allowed) : masks_allowed_(masks_allowed) {}
    void mask(std::span<float>) override {
      if (++masks_ > masks_allowed_) status_ = invalid_argument("gave up").with_reason("gave_up");
    }
    void accept(int32_t) override { ++accepted_; }
    void rollback(int32_t) override {}
    Status status() const override { return status_; }
    int accepted() const { return accepted_; }

   private:
    int masks_allowed_;
    int masks_ = 0;
    int accepted_ = 0;
    Status status_;
  };
  auto engine = make_engine(EngineConfig{});
  auto constraint = std::make_shared<GivesUp>(5);
  Request r = greedy_request(kOnceUponATime, 20);
  r.constraint = constraint;
  auto failing = engine->submit(std::move(r));
  auto beside = engine->submit(greedy_request(kOnceUponATime, 12));
  ASSERT_TRUE(failing.is_ok() && beside.is_ok());
  const Outcome f = drain(*failing->stream);
  EXPECT_EQ(f.final_event.finish, FinishReason::kError);
  EXPECT_EQ(f.final_event.status.reason(), "gave_up") << f.final_event.status.to_string();
  // Five masks allowed every token (greedy: the golden ids); the sixth gave up.
  EXPECT_EQ(f.tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 5));
  EXPECT_EQ(f.final_event.usage.completion_tokens, 5);
  EXPECT_EQ(constraint->accepted(), 6);  // told of the sixth token before it was dropped
  EXPECT_EQ(drain(*beside->stream).tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 12));
  expect_pool_whole(*engine);
  // Giving up on the step that would have finished it (max_tokens): still
  // the constraint's error, and nothing freed twice.
  Request last = greedy_request(kOnceUponATime, 5);
  last.constraint = std::make_shared<GivesUp>(4);
  const Outcome l = run(*engine, std::move(last));
  EXPECT_EQ(l.final_event.finish, FinishReason::kError);
  EXPECT_EQ(l.tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 4));
  expect_pool_whole(*engine);
}

TEST(Engine, MixOfFinishCancelAndPreemptionLeaksNoBlock) {
  std::vector<Request> requests;
  for (uint64_t i = 0; i < 24; ++i)
    requests.push_back(greedy_request(synthetic_prompt(10 + 4 * i, 500 + i), 24));
  std::vector<std::vector<int32_t>> solo;
  {
    auto engine = make_engine({});
    for (const Request& r : requests) solo.push_back(run(*engine, r).tokens);
  }

  // Every third request is cancelled from the loop thread at its own step
  // boundary, while a small pool keeps preempting the others.
  StepGate gate(1);
  std::mutex mu;
  Engine* target = nullptr;
  std::map<int64_t, std::vector<RequestId>> cancel_at;  // step -> ids
  EngineConfig cfg;
  cfg.n_kv_blocks = 10;
  cfg.scheduler.max_batch_tokens = 40;
  cfg.scheduler.max_chunk_tokens = 24;
  cfg.on_step = [&](const StepReport& r) {
    gate.on_step(r);
    std::lock_guard<std::mutex> lock(mu);
    auto it = cancel_at.find(r.step);
    if (it == cancel_at.end()) return;
    for (RequestId id : it->second) target->cancel(id);
  };
  auto engine = make_engine(cfg);
  // A first request opens step 1, where the loop waits until all are queued.
  auto opener = engine->submit(greedy_request(kOnceUponATime, 4));
  ASSERT_TRUE(opener.is_ok());
  gate.wait_reached();
  std::vector<Submission> subs;
  {
    std::lock_guard<std::mutex> lock(mu);
    target = engine.get();
    for (size_t i = 0; i < requests.size(); ++i) {
      subs.push_back(*engine->submit(requests[i]));
      if (i % 3 == 1) cancel_at[static_cast<int64_t>(3 + 2 * i)].push_back(subs.back().id);
    }
  }
  gate.release();
  int cancelled = 0;
  for (size_t i = 0; i < subs.size(); ++i) {
    const Outcome o = drain(*subs[i].stream);
    if (o.final_event.finish == FinishReason::kCancelled) {
      ++cancelled;
      EXPECT_EQ(i % 3, 1u) << "request " << i;
      ASSERT_LE(o.tokens.size(), solo[i].size());
      EXPECT_TRUE(std::equal(o.tokens.begin(), o.tokens.end(), solo[i].begin())) << "request " << i;
    } else {
      EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
      EXPECT_EQ(o.tokens, solo[i]) << "request " << i;
    }
  }
  drain(*opener->stream);
  EXPECT_GT(cancelled, 4);
  EXPECT_GT(engine->metrics().preemptions, 0);
  expect_pool_whole(*engine);
}

TEST(Engine, ShutdownEndsInFlightStreamsWithAnError) {
  StepGate gate(2);
  EngineConfig cfg;
  cfg.on_step = [&](const StepReport& r) { gate.on_step(r); };
  auto engine = make_engine(cfg);
  auto s = engine->submit(greedy_request(kOnceUponATime, 120));
  ASSERT_TRUE(s.is_ok());
  gate.wait_reached();
  engine->request_stop();  // the loop stops before its next step
  gate.release();
  engine->shutdown();
  const Outcome o = drain(*s->stream);
  EXPECT_EQ(o.tokens.size(), 2u);
  EXPECT_EQ(o.final_event.finish, FinishReason::kError);
  EXPECT_EQ(o.final_event.status.code(), StatusCode::kFailedPrecondition);
  expect_pool_whole(*engine);
}

TEST(Engine, StopStringsEndTheSequenceInsideTheEngine) {
  auto tok = tokenizer::Tokenizer::from_gguf(stories().file);
  ASSERT_TRUE(tok.is_ok());
  EngineConfig cfg;
  cfg.tokenizer = tok->get();
  auto engine = make_engine(cfg);
  // Without a stop: the golden text (shared/models/README.md), streamed in pieces.
  const std::string golden = ", there was a little girl named Lily. She loved to play outside in the park.";
  Outcome plain;
  std::string text;
  {
    auto s = engine->submit(greedy_request(kOnceUponATime, 20));
    ASSERT_TRUE(s.is_ok());
    while (auto e = s->stream->next_for(std::chrono::seconds(60))) {
      text += e->text;
      if (e->kind == StreamEvent::Kind::kFinished) break;
    }
  }
  EXPECT_EQ(text.substr(0, 40), golden.substr(0, 40));
  // The token that completes " named" is the last one produced; the stop
  // string itself is not in the text.
  Request r = greedy_request(kOnceUponATime, 40);
  r.stop.stop_strings = {"xyz", " named"};
  auto s = engine->submit(r);
  ASSERT_TRUE(s.is_ok());
  std::string stopped_text;
  std::vector<int32_t> ids;
  StreamEvent last;
  while (auto e = s->stream->next_for(std::chrono::seconds(60))) {
    stopped_text += e->text;
    if (e->kind == StreamEvent::Kind::kFinished) {
      last = std::move(*e);
      break;
    }
    ids.push_back(e->token.token);
  }
  EXPECT_EQ(stopped_text, ", there was a little girl");
  EXPECT_EQ(last.finish, FinishReason::kStop);
  EXPECT_EQ(last.usage.completion_tokens, static_cast<int64_t>(ids.size()));
  ASSERT_LT(ids.size(), 40u);
  EXPECT_EQ(ids, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + static_cast<long>(ids.size())));
  // Decoding the ids independently: the stop string appears only with the last token.
  const std::string all = (*tok)->decode(ids, /*skip_special=*/true);
  const std::string but_last = (*tok)->decode(std::span(ids).first(ids.size() - 1), true);
  EXPECT_NE(all.find(" named"), std::string::npos);
  EXPECT_EQ(but_last.find(" named"), std::string::npos);
  expect_pool_whole(*engine);
}

}  // namespace
}  // namespace ladder::engine
