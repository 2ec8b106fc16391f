// Quality against a reference: top-k KL with its tail rule (against values
// worked by hand), the comparison of token sequences and its fallbacks, the
// thresholds, the policy file, request keys, the verifier and the per-slice
// summary (worst first).
#include "harness/quality.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "harness/quality_summary.h"
#include "harness/reference.h"
#include "harness/verifier.h"
#include "harness/verify_policy.h"

namespace ladder::harness {
namespace {

using nlohmann::json;

// A position whose top-k are the given (text, probability) pairs.
TokenLogprob position(std::vector<std::pair<std::string, double>> probs) {
  TokenLogprob t;
  t.token = probs.front().first;
  t.logprob = std::log(probs.front().second);
  for (const auto& [text, p] : probs) t.top.emplace_back(text, std::log(p));
  return t;
}

TEST(TopkKl, IdenticalReportsAreZero) {
  auto p = position({{"a", 0.5}, {"b", 0.3}, {"c", 0.1}});
  EXPECT_NEAR(*topk_kl(p, p), 0.0, 1e-12);
}

TEST(TopkKl, SameTokensOtherProbabilities) {
  // No tail on either side: the plain KL over {a, b}.
  auto kl = topk_kl(position({{"a", 0.7}, {"b", 0.3}}), position({{"b", 0.6}, {"a", 0.4}}));
  EXPECT_NEAR(*kl, 0.7 * std::log(0.7 / 0.4) + 0.3 * std::log(0.3 / 0.6), 1e-9);
}

TEST(TopkKl, AReferenceTokenMissingFromTheCandidate) {
  // P = {a .5, b .3}, other .2. Q = {a .6, c .3}, tail .1, smallest .3; b is
  // missing (m = 1): Q(b) = min(.3, .1 / 2) = .05, Q(other) = 1 - .6 - .05 = .35.
  auto kl = topk_kl(position({{"a", 0.5}, {"b", 0.3}}), position({{"a", 0.6}, {"c", 0.3}}));
  EXPECT_NEAR(*kl, 0.5 * std::log(0.5 / 0.6) + 0.3 * std::log(0.3 / 0.05) + 0.2 * std::log(0.2 / 0.35), 1e-9);
  // The candidate's k-th probability bounds a missing token: P = {a .9},
  // Q = {b .5, c .45}, tail .05: Q(a) = min(.45, .05 / 2) = .025, Q(other) = .975.
  kl = topk_kl(position({{"a", 0.9}}), position({{"b", 0.5}, {"c", 0.45}}));
  EXPECT_NEAR(*kl, 0.9 * std::log(0.9 / 0.025) + 0.1 * std::log(0.1 / 0.975), 1e-9);
  // Q(t) below the candidate's k-th token: P = {a .6}, Q = {b .7, c .01}, tail .29:
  // Q(a) = min(.01, .29 / 2) = .01.
  kl = topk_kl(position({{"a", 0.6}}), position({{"b", 0.7}, {"c", 0.01}}));
  EXPECT_NEAR(*kl, 0.6 * std::log(0.6 / 0.01) + 0.4 * std::log(0.4 / 0.99), 1e-9);
}

TEST(TopkKl, UnknownWithoutAlternatives) {
  TokenLogprob bare;
  bare.token = "a";
  EXPECT_FALSE(topk_kl(bare, position({{"a", 1.0}})).has_value());
  EXPECT_FALSE(topk_kl(position({{"a", 1.0}}), bare).has_value());
}

struct Side {
  std::string text;
  std::optional<std::vector<int64_t>> ids;
  std::vector<TokenLogprob> logprobs;
  OutputView view() const { return {&text, ids ? &*ids : nullptr, &logprobs}; }
};

TEST(Compare, TokenIdsFirstDivergenceAndMatch) {
  Side ref{"", std::vector<int64_t>{1, 2, 3, 4}, {}};
  Side cand{"", std::vector<int64_t>{1, 2, 9, 4, 5}, {}};
  QualityCheck q = compare_outputs(VerifyMode::kApprox, ref.view(), cand.view());
  EXPECT_EQ(q.compared_by, "token ids");
  EXPECT_FALSE(q.exact_match);
  EXPECT_EQ(q.first_divergence, 2);
  EXPECT_DOUBLE_EQ(q.match_fraction, 3.0 / 5.0);  // 1, 2 and 4 match; the longer has 5
  EXPECT_EQ(q.reference_units, 4);
  EXPECT_EQ(q.candidate_units, 5);
  // A prefix diverges where it ends.
  Side shorter{"", std::vector<int64_t>{1, 2}, {}};
  q = compare_outputs(VerifyMode::kExact, shorter.view(), Side{"", std::vector<int64_t>{1, 2, 3}, {}}.view());
  EXPECT_EQ(q.first_divergence, 2);
  EXPECT_DOUBLE_EQ(q.match_fraction, 2.0 / 3.0);
  q = compare_outputs(VerifyMode::kExact, ref.view(), ref.view());
  EXPECT_TRUE(q.exact_match);
  EXPECT_FALSE(q.first_divergence.has_value());
  EXPECT_DOUBLE_EQ(q.match_fraction, 1.0);
}

TEST(Compare, FallsBackToTokenTextsThenBytes) {
  Side a{"ab", std::nullopt, {position({{"a", 0.9}}), position({{"b", 0.8}})}};
  Side b{"ab", std::vector<int64_t>{7, 8}, {position({{"a", 0.9}}), position({{"c", 0.8}})}};
  QualityCheck q = compare_outputs(VerifyMode::kExact, a.view(), b.view());
  EXPECT_EQ(q.compared_by, "token texts");  // ids on one side only
  EXPECT_EQ(q.first_divergence, 1);
  Side t1{"abc", std::nullopt, {}}, t2{"abd", std::nullopt, {}};
  q = compare_outputs(VerifyMode::kExact, t1.view(), t2.view());
  EXPECT_EQ(q.compared_by, "text bytes");
  EXPECT_EQ(q.first_divergence, 2);
  EXPECT_DOUBLE_EQ(q.match_fraction, 2.0 / 3.0);
  EXPECT_FALSE(q.kl_mean.has_value());
  Side e1{"", std::nullopt, {}};
  q = compare_outputs(VerifyMode::kExact, e1.view(), e1.view());
  EXPECT_TRUE(q.exact_match);
  EXPECT_DOUBLE_EQ(q.match_fraction, 1.0);
}

TEST(Compare, KlStopsAtTheFirstDivergence) {
  // Position 0 identical (KL 0), position 1 differs (the divergence: same
  // prefix, compared), position 2 after it (different contexts: left out).
  const auto p1 = position({{"a", 0.7}, {"b", 0.3}});
  const auto q1 = position({{"b", 0.6}, {"a", 0.4}});
  const double kl1 = 0.7 * std::log(0.7 / 0.4) + 0.3 * std::log(0.3 / 0.6);
  Side ref{"", std::vector<int64_t>{5, 1, 2}, {position({{"x", 1.0}}), p1, position({{"y", 1.0}})}};
  Side cand{"", std::vector<int64_t>{5, 2, 3}, {position({{"x", 1.0}}), q1, position({{"z", 1.0}})}};
  QualityCheck q = compare_outputs(VerifyMode::kApprox, ref.view(), cand.view());
  EXPECT_EQ(q.kl_positions, 2);
  EXPECT_NEAR(*q.kl_mean, kl1 / 2, 1e-9);
  EXPECT_NEAR(*q.kl_max, kl1, 1e-9);
}

TEST(Judge, ExactModeNeedsIdenticalTokensAndTheTask) {
  QualityCheck q;
  q.mode = VerifyMode::kExact;
  q.compared_by = "token ids";
  q.exact_match = false;
  q.first_divergence = 3;
  judge(q, {});
  EXPECT_FALSE(q.pass);
  EXPECT_NE(q.reason.find("position 3"), std::string::npos) << q.reason;
  q.exact_match = true;
  q.first_divergence.reset();
  q.task_check = false;
  judge(q, {});
  EXPECT_FALSE(q.pass);
  EXPECT_NE(q.reason.find("task check"), std::string::npos);
  q.task_check = true;
  judge(q, {});
  EXPECT_TRUE(q.pass);
  EXPECT_EQ(q.reason.find("no token ids"), std::string::npos);
  q.compared_by = "text bytes";
  judge(q, {});
  EXPECT_TRUE(q.pass);
  EXPECT_NE(q.reason.find("compared by text bytes: no token ids"), std::string::npos) << q.reason;
}

TEST(Judge, ApproxModeAppliesEveryThreshold) {
  QualityCheck q;
  q.mode = VerifyMode::kApprox;
  q.compared_by = "token ids";
  q.match_fraction = 0.6;
  q.first_divergence = 2;
  QualityThresholds t;
  t.min_match = 0.5;
  judge(q, t);
  EXPECT_TRUE(q.pass) << q.reason;
  t.min_match = 0.7;
  judge(q, t);
  EXPECT_FALSE(q.pass);
  t.min_match.reset();
  t.min_divergence = 3;
  judge(q, t);
  EXPECT_FALSE(q.pass);
  EXPECT_NE(q.reason.find("first divergence at 2 < 3"), std::string::npos) << q.reason;
  t.min_divergence.reset();
  t.max_mean_kl = 0.1;
  judge(q, t);  // no position measured: cannot be shown to be met
  EXPECT_FALSE(q.pass);
  EXPECT_NE(q.reason.find("no position"), std::string::npos);
  q.kl_mean = 0.05;
  q.kl_max = 2.0;
  judge(q, t);
  EXPECT_TRUE(q.pass);
  t.max_kl = 1.0;
  judge(q, t);
  EXPECT_FALSE(q.pass);
  EXPECT_NE(q.reason.find("max KL 2 > 1"), std::string::npos) << q.reason;
}

TEST(VerifyPolicy, ParsesSlicesOverDefaults) {
  auto p = parse_verify_policy(
      "[default]\nmin_match = 0.8\nmax_kl = 3\n[slice.rare]\nmin_match = 1.0\nmin_divergence = 32\n", "p.toml");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_DOUBLE_EQ(*p->defaults.min_match, 0.8);
  EXPECT_DOUBLE_EQ(*p->defaults.max_mean_kl, 0.05);  // built-in default kept
  EXPECT_DOUBLE_EQ(*p->defaults.max_kl, 3);
  QualityThresholds rare = p->for_slice("rare");
  EXPECT_DOUBLE_EQ(*rare.min_match, 1.0);
  EXPECT_EQ(*rare.min_divergence, 32);
  EXPECT_DOUBLE_EQ(*rare.max_kl, 3);
  EXPECT_FALSE(p->for_slice("chat").min_divergence.has_value());
  EXPECT_EQ(p->to_json()["slices"]["rare"]["min_divergence"], 32);

  for (const char* bad : {"[default]\nmin_macth = 1\n", "[default]\nmin_match = 1.5\n", "[default]\nmax_kl = -1\n",
                          "[slice.a]\nmin_divergence = 2.5\n", "[other]\nx = 1\n", "[default\n"}) {
    auto r = parse_verify_policy(bad, "p.toml");
    EXPECT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().message().find("p.toml"), std::string::npos) << r.status().message();
  }
}

TEST(RequestKeys, IdentityWithoutTime) {
  WorkloadRequest a;
  a.prompt = "x";
  WorkloadRequest later = a;
  later.t = 5;
  WorkloadRequest other = a;
  other.max_tokens = 3;
  auto keys = request_keys({a, later, other});
  EXPECT_EQ(keys[0].substr(0, 64), keys[1].substr(0, 64));  // same request, another time
  EXPECT_EQ(keys[0].substr(64), "#0");
  EXPECT_EQ(keys[1].substr(64), "#1");  // its second occurrence
  EXPECT_NE(keys[0].substr(0, 64), keys[2].substr(0, 64));
  EXPECT_EQ(request_keys({later, a}), request_keys({a, later}));
}

RequestResult served(const std::string& key, const std::string& text, std::vector<int64_t> ids) {
  RequestResult r;
  r.key = key;
  r.http_status = 200;
  r.finish_reason = "length";
  r.text = text;
  r.has_token_ids = true;
  r.token_ids = std::move(ids);
  r.prompt_sha256 = "p";
  r.slice = "s";
  r.tenant = "t";
  return r;
}

TEST(Verifier, ChecksAgainstTheReference) {
  Reference ref;
  ref.add_results({served("k#0", "hello", {1, 2, 3})});
  RequestResult failed;
  failed.key = "k#1";
  failed.http_status = 500;
  failed.error = "boom";
  ref.add_results({failed});
  ASSERT_EQ(ref.entries.size(), 1u);
  ASSERT_EQ(ref.missing.size(), 1u);
  EXPECT_EQ(ref.missing[0]["reason"], "boom");
  // Through JSON and back.
  auto loaded = reference_from_json(reference_to_json(ref), "ref.json");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->entries.at("k#0").token_ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(reference_from_json(json{{"kind", "other"}}, "x").is_ok());

  Verifier v(VerifyMode::kExact, &*loaded, VerifyPolicy::built_in());
  WorkloadRequest w;
  w.expect = Expectation{Expectation::Kind::kSubstring, "hell"};
  RequestResult same = served("k#0", "hello", {1, 2, 3});
  v.verify(same, w);
  EXPECT_TRUE(same.verified) << same.verify_note;
  EXPECT_EQ(same.quality->task_check, true);
  RequestResult differs = served("k#0", "help", {1, 2, 4});
  v.verify(differs, w);
  EXPECT_FALSE(differs.verified);
  EXPECT_EQ(differs.quality->first_divergence, 2);
  RequestResult history = served("k#0", "hello", {1, 2, 3});
  history.prompt_sha256 = "other";
  v.verify(history, w);
  EXPECT_TRUE(history.quality->history_differs);
  RequestResult unknown = served("k#9", "hello", {1, 2, 3});
  v.verify(unknown, w);
  EXPECT_FALSE(unknown.verified);
  EXPECT_NE(unknown.verify_note.find("no entry"), std::string::npos);
  RequestResult error = served("k#0", "", {});
  error.http_status = 503;
  v.verify(error, w);
  EXPECT_FALSE(error.verified);
  EXPECT_FALSE(error.quality.has_value());  // not served: nothing to compare
}

TEST(QualitySummary, PerSliceAndTenantWorstFirst) {
  std::vector<RequestResult> rs;
  auto add = [&](const std::string& slice, const std::string& tenant, bool pass, double match) {
    RequestResult r;
    r.slice = slice;
    r.tenant = tenant;
    QualityCheck q;
    q.pass = pass;
    q.match_fraction = match;
    q.compared_by = "token ids";
    r.quality = q;
    rs.push_back(r);
  };
  add("chat", "a", true, 1.0);
  add("chat", "b", true, 1.0);
  add("rare", "a", false, 0.25);
  add("rare", "b", true, 0.75);
  add("long", "a", true, 0.5);
  QualityReport q = summarize_quality(rs, nullptr);
  ASSERT_EQ(q.slices.size(), 3u);
  EXPECT_EQ(q.slices[0].name, "rare");  // half passed
  EXPECT_DOUBLE_EQ(q.slices[0].mean_match, 0.5);
  EXPECT_DOUBLE_EQ(q.slices[0].min_match, 0.25);
  EXPECT_EQ(q.slices[1].name, "long");  // all passed, lower match than chat
  EXPECT_EQ(q.slices[2].name, "chat");
  ASSERT_EQ(q.tenants.size(), 2u);
  EXPECT_EQ(q.tenants[0].name, "a");  // 2 of 3 passed
  EXPECT_EQ(q.tenants[0].passed, 2u);
  EXPECT_EQ(quality_note(q), "");
  EXPECT_TRUE(summarize_quality({RequestResult{}}, nullptr).empty());
}

TEST(TokenLogprobs, BothWireForms) {
  std::vector<TokenLogprob> out;
  append_logprobs(json::parse(R"({"tokens": [" a", "b"], "token_logprobs": [-0.1, -0.2],
      "top_logprobs": [{" a": -0.1, " z": -3.0, " c": -2.0}, {"b": -0.2}], "text_offset": [0, 2]})"),
                  out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].token, " a");
  ASSERT_EQ(out[0].top.size(), 3u);
  EXPECT_EQ(out[0].top[1].first, " c");  // by probability, not by key order
  append_logprobs(json::parse(R"({"content": [{"token": "x", "logprob": -0.5, "bytes": [120],
      "top_logprobs": [{"token": "y", "logprob": -2.0}, {"token": "x", "logprob": -0.5}]}]})"),
                  out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].top.front().first, "x");
  EXPECT_EQ(logprobs_from_json(logprobs_to_json(out))[0].top, out[0].top);
  append_logprobs(json(nullptr), out);
  EXPECT_EQ(out.size(), 3u);
}

}  // namespace
}  // namespace ladder::harness
