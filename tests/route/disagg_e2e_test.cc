// Rung 2 end to end on loopback: `ladder route` in front of a prefill worker
// and a decode worker (three processes), against a rung-1 `ladder serve` of
// the same model. Greedy and seeded outputs equal rung 1's token for token;
// KV really moves (transfer and import counters); tenants never share blocks
// on any worker; a killed decode worker fails its requests with a clear
// error while the router serves on; no block stays held anywhere.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_test_client.h"
#include "ops/bf16_dot.h"
#include "ops/kernel_choice.h"
#include "route/prefill_policy.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

using nlohmann::json;
using Ms = std::chrono::milliseconds;
using route::PrefillPolicy;

std::string stories() {
  return shared_path("models/stories260K.gguf");
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string p = temp_dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

const char* kTenants = R"(
[[tenant]]
name = "alpha"
api_keys = ["key-alpha"]

[[tenant]]
name = "beta"
api_keys = ["key-beta"]
)";

std::string url(const ServerProcess& p) {
  return "http://127.0.0.1:" + std::to_string(p.port());
}

json health(int port) {
  HttpReply r = http_request(port, "GET", "/health");
  return json::parse(r.body, nullptr, false);
}

// A router in front of one prefill and `n_decode` decode workers.
struct Cluster {
  std::unique_ptr<ServerProcess> prefill;
  std::vector<std::unique_ptr<ServerProcess>> decode;
  std::unique_ptr<ServerProcess> router;

  // `common` goes to every process, `workers` to the two kinds of worker
  // only, `routing` to the router only (default: every prompt with blocks to
  // send goes to the prefill worker, so KV moves on every such request).
  Cluster(const std::string& model, const std::vector<std::string>& common, int n_decode = 1,
          const std::vector<std::string>& workers = {},
          const std::vector<std::string>& routing = {"--prefill-policy", "always"}) {
    std::vector<std::string> p = {"-m", model, "--role", "prefill", "--threads", "1"};
    p.insert(p.end(), common.begin(), common.end());
    p.insert(p.end(), workers.begin(), workers.end());
    prefill = std::make_unique<ServerProcess>(p);
    std::vector<std::string> r = {"-m", model, "--prefill", url(*prefill)};
    for (int i = 0; i < n_decode; ++i) {
      std::vector<std::string> d = {"-m", model,       "--role",    "decode",    "--threads",
                                    "1",  "--kv-host", "127.0.0.1", "--kv-port", "0"};
      d.insert(d.end(), common.begin(), common.end());
      d.insert(d.end(), workers.begin(), workers.end());
      decode.push_back(std::make_unique<ServerProcess>(d));
      r.push_back("--decode");
      r.push_back(url(*decode.back()));
    }
    r.insert(r.end(), common.begin(), common.end());
    r.insert(r.end(), routing.begin(), routing.end());
    router = std::make_unique<ServerProcess>(r, true, "route");
  }
  bool ok() const {
    bool all = prefill->ok() && router->ok();
    for (const auto& d : decode) all = all && d->ok();
    return all;
  }
};

json complete(int port, const json& body, const std::string& key = "") {
  std::map<std::string, std::string> h;
  if (!key.empty()) h["Authorization"] = "Bearer " + key;
  HttpReply r = http_request(port, "POST", "/v1/completions", body.dump(), h);
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body, nullptr, false);
}

// The router's count of prompts placed `where` for `reason` in a /metrics
// text (0 when the series is absent: none yet).
double prefill_decisions(const std::string& metrics_text, const char* where, const char* reason) {
  const std::string series =
      fmt::format("ladder_router_prefill_decisions_total{{where=\"{}\",reason=\"{}\"}}", where, reason);
  const double v = metric_value(metrics_text, series);
  return v > 0 ? v : 0;
}

std::string story(int sentences) {
  static const char* kSentences[] = {
      "Once upon a time, there was a little girl named Lily. ",
      "She loved to play outside in the park with her friends. ",
      "One day, she saw a big red ball under a tree. ",
      "Her brother Ben wanted to play with the ball too. ",
      "They shared the ball and laughed all day long. ",
  };
  std::string s;
  for (int i = 0; i < sentences; ++i) s += kSentences[i % 5];
  return s;
}

TEST(Disagg, OutputsEqualRungOneTokenForToken) {
  ServerProcess rung1({"-m", stories(), "--threads", "1"});
  Cluster c(stories(), {});
  ASSERT_TRUE(rung1.ok());
  ASSERT_TRUE(c.ok());
  const int router = c.router->port();

  struct Case {
    std::string prompt;
    json extra;
  };
  const std::vector<Case> cases = {
      {"Once upon a time", {{"temperature", 0}}},  // no full block before the last token: decode alone
      {story(1), {{"temperature", 0}}},            // 17 tokens: one block moves
      {story(2), {{"temperature", 0}}},
      {story(4), {{"temperature", 0}}},                 // 75 tokens (the model's context is 128)
      {story(4), {{"temperature", 0.9}, {"seed", 7}}},  // sampling starts on the decode worker
      {story(3), {{"temperature", 0.7}, {"top_p", 0.9}, {"seed", 11}}},
  };
  for (const Case& k : cases) {
    json body = {{"prompt", k.prompt}, {"max_tokens", 48}, {"return_token_ids", true}};
    body.update(k.extra);
    const json want = complete(rung1.port(), body);
    const json got = complete(router, body);
    ASSERT_TRUE(want.contains("choices") && got.contains("choices")) << got.dump();
    EXPECT_EQ(got["choices"][0]["token_ids"], want["choices"][0]["token_ids"]) << k.prompt;
    EXPECT_EQ(got["choices"][0]["text"], want["choices"][0]["text"]);
    EXPECT_EQ(got["choices"][0]["finish_reason"], want["choices"][0]["finish_reason"]);
    EXPECT_EQ(got["usage"]["completion_tokens"], want["usage"]["completion_tokens"]);
  }
  // Chat, streamed: the same text as rung 1's stream.
  const json chat = {{"messages", {{{"role", "user"}, {"content", story(2)}}}},
                     {"max_tokens", 40},
                     {"temperature", 0},
                     {"stream", true}};
  auto text_of = [](const std::string& body) {
    std::string t;
    for (const std::string& p : sse_payloads(body)) {
      if (p == "[DONE]") continue;
      json j = json::parse(p);
      if (!j["choices"].empty() && j["choices"][0]["delta"].contains("content")) {
        t += j["choices"][0]["delta"]["content"].get<std::string>();
      }
    }
    return t;
  };
  HttpReply a = http_request(rung1.port(), "POST", "/v1/chat/completions", chat.dump());
  HttpReply b = http_request(router, "POST", "/v1/chat/completions", chat.dump());
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_NE(b.body.find("data: [DONE]"), std::string::npos);
  EXPECT_FALSE(text_of(a.body).empty());
  EXPECT_EQ(text_of(b.body), text_of(a.body));

  // KV moved: the router counted transfers, the decode worker imported
  // blocks and refused none, and the prefill worker sent what was imported.
  const std::string rm = metrics(router);
  const std::string dm = metrics(c.decode[0]->port());
  const std::string pm = metrics(c.prefill->port());
  // Prompts whose blocks the decode worker holds already (a repeat, a prefix
  // of an earlier one) send nothing; the others send what it lacks.
  EXPECT_GE(metric_value(rm, "ladder_router_transfers_total"), 3);
  EXPECT_EQ(metric_value(rm, "ladder_router_prefill_fallbacks_total"), 0);
  EXPECT_GT(metric_value(dm, "ladder_kv_imported_blocks_total"), 0);
  EXPECT_EQ(metric_value(dm, "ladder_kv_refused_blocks_total"), 0);
  EXPECT_EQ(metric_value(dm, "ladder_kv_inbox_total{outcome=\"missing\"}"), 0);
  // Blocks the decode worker already held (a prompt seen before) are taken
  // from its own cache rather than imported again.
  EXPECT_LE(metric_value(dm, "ladder_kv_imported_blocks_total"),
            metric_value(pm, "ladder_kv_transfer_sent_blocks_total"));
  EXPECT_GT(metric_value(pm, "ladder_kv_transfer_bytes_total{direction=\"sent\"}"), 0);
  // Every block is free again on both workers.
  EXPECT_EQ(health(c.prefill->port())["kv_blocks_used"], 0);
  EXPECT_EQ(health(c.decode[0]->port())["kv_blocks_used"], 0);
}

int open_stream(int port, const std::string& body, const std::string& key = "") {
  int fd = connect_loopback(port);
  const std::string auth = key.empty() ? "" : "Authorization: Bearer " + key + "\r\n";
  std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + auth +
                    "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + body;
  EXPECT_TRUE(send_all(fd, req));
  return fd;
}

// Reads until `needle` shows up (true) or the stream ends or times out.
bool read_until(int fd, const std::string& needle, std::string& buf, Ms timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (buf.find(needle) != std::string::npos) return true;
    char c[4096];
    const ssize_t n = recv(fd, c, sizeof c, MSG_DONTWAIT);
    if (n > 0) {
      buf.append(c, static_cast<size_t>(n));
    } else if (n == 0) {
      return buf.find(needle) != std::string::npos;
    } else {
      std::this_thread::sleep_for(Ms(5));
    }
  }
  return false;
}

// Conditional disaggregation (--prefill-policy measured, the default): the
// router explores both paths until it has measured each, then places each
// prompt by measured cost; every request is counted once under where its
// prompt was computed and why, and outputs equal rung 1's either way.
TEST(Disagg, MeasuredPrefillPolicyCountsEveryDecisionAndKeepsOutputs) {
  ServerProcess rung1({"-m", stories(), "--threads", "1"});
  Cluster c(stories(), {}, /*n_decode=*/1, /*workers=*/{}, /*routing=*/{});
  ASSERT_TRUE(rung1.ok());
  ASSERT_TRUE(c.ok());
  const int router = c.router->port();
  const int n = 12;
  for (int i = 0; i < n; ++i) {
    // A different first block each time: nothing the decode worker holds.
    const json body = {{"prompt", std::to_string(i) + " " + story(2)}, {"max_tokens", 8}, {"temperature", 0}};
    EXPECT_EQ(complete(router, body)["choices"][0]["text"], complete(rung1.port(), body)["choices"][0]["text"]) << i;
  }
  // A repeat: every block is held by the decode worker already.
  complete(router, {{"prompt", "0 " + story(2)}, {"max_tokens", 8}, {"temperature", 0}});

  const std::string rm = metrics(router);
  auto decisions = [&](const char* where, const char* reason) { return prefill_decisions(rm, where, reason); };
  double total = 0;
  for (const char* where : {"remote", "local"}) {
    for (const char* reason : {"cached", "no_prefill_worker", "prefill_busy", "exploring", "tpot_slo",
                               "cheaper_remote", "cheaper_local", "no_full_block"}) {
      total += decisions(where, reason);
    }
  }
  EXPECT_EQ(total, n + 1) << rm;
  EXPECT_EQ(decisions("local", "cached"), 1) << rm;
  // Both paths measured before the costs decide.
  EXPECT_GE(decisions("remote", "exploring"), PrefillPolicy::kMinSamples) << rm;
  EXPECT_GE(decisions("local", "exploring"), PrefillPolicy::kMinSamples) << rm;
  EXPECT_EQ(decisions("remote", "cheaper_remote") + decisions("local", "cheaper_local"),
            n - decisions("remote", "exploring") - decisions("local", "exploring"))
      << rm;
  EXPECT_NE(rm.find("ladder_router_prefill_threshold_tokens "), std::string::npos);
  EXPECT_EQ(metric_value(rm, "ladder_router_transfers_total"), decisions("remote", "exploring") +
                                                                   decisions("remote", "cheaper_remote"));
}

// A TPOT objective (here the tightest tenant's tpot_ms, far below any step)
// sends a fresh prompt to the prefill worker while a sequence is decoding on
// the decode worker: computed there, each of its steps would hold that
// sequence's next token past the objective.
TEST(Disagg, TpotObjectiveSendsAPromptThatWouldStallADecodingSequence) {
  const std::string tenants = write_file("tenants_tpot.toml", R"(
[[tenant]]
name = "alpha"
api_keys = ["key-alpha"]
[tenant.slo]
tpot_ms = 0.001

[[tenant]]
name = "beta"
api_keys = ["key-beta"]
[tenant.slo]
tpot_ms = 500
)");
  // Every step takes at least 20 ms: the stream below is still decoding
  // when the next prompt is placed, on any machine.
  Cluster c(stories(), {"--tenants", tenants}, /*n_decode=*/1,
            {"--test-step-delay-ms", "20", "--max-batch-tokens", "256"}, /*routing=*/{});
  ASSERT_TRUE(c.ok());
  const int router = c.router->port();
  EXPECT_EQ(health(c.decode[0]->port())["prefill_chunk_tokens"], 256);
  EXPECT_EQ(metric_value(metrics(router), "ladder_router_tpot_objective_ms"), 0.001);
  auto tpot_slo = [&] { return prefill_decisions(metrics(router), "remote", "tpot_slo"); };
  // Measure both paths first: the policy explores until it holds
  // kMinSamples of each. A sample can be skipped (a prefill worker still
  // counted busy by the router when the next prompt arrives, as under a
  // sanitizer), so send prompts until a decision is made on the measurements.
  auto measured = [&] {
    const std::string text = metrics(router);
    double n = 0;
    for (const char* where : {"remote", "local"}) {
      for (const char* reason : {"tpot_slo", "cheaper_remote", "cheaper_local"}) {
        n += prefill_decisions(text, where, reason);
      }
    }
    return n > 0;
  };
  for (int i = 0; !measured(); ++i) {
    ASSERT_LT(i, 10 * PrefillPolicy::kMinSamples) << metrics(router);
    complete(router, {{"prompt", std::to_string(i) + " " + story(2)}, {"max_tokens", 2}, {"temperature", 0}},
             "key-alpha");
  }
  const std::string long_req = json{{"prompt", "long " + story(2)},
                                    {"max_tokens", 60},
                                    {"stream", true},
                                    {"ignore_eos", true},
                                    {"temperature", 0}}
                                   .dump();
  const int fd = open_stream(router, long_req, "key-alpha");
  std::string buf;
  ASSERT_TRUE(read_until(fd, "data: ", buf, Ms(60000))) << buf;
  ASSERT_EQ(health(c.decode[0]->port())["running"], 1);
  const double before = tpot_slo();
  const json r = complete(router, {{"prompt", "fresh " + story(2)}, {"max_tokens", 2}, {"temperature", 0}},
                          "key-alpha");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(tpot_slo(), before + 1) << metrics(router);
  ASSERT_TRUE(read_until(fd, "data: [DONE]", buf, Ms(60000)));
  close(fd);
  EXPECT_EQ(health(c.decode[0]->port())["kv_blocks_used"], 0);
  EXPECT_EQ(health(c.prefill->port())["kv_blocks_used"], 0);
}

TEST(Disagg, TenantsNeverShareBlocksOnAnyWorker) {
  const std::string tenants = write_file("tenants.toml", kTenants);
  Cluster c(stories(), {"--tenants", tenants});
  ASSERT_TRUE(c.ok());
  auto body = [](int sentences) {
    return json{{"prompt", story(sentences)}, {"max_tokens", 4}, {"temperature", 0}};
  };
  const int prefill = c.prefill->port();
  const int decode = c.decode[0]->port();
  auto prefill_hits = [&] {
    return metric_value(metrics(prefill), "ladder_engine_prefix_cache_hit_tokens_total");
  };
  auto imported = [&] { return metric_value(metrics(decode), "ladder_kv_imported_blocks_total"); };

  // Alpha: a 56-token prompt (3 blocks move), then a 97-token one extending
  // it: the prefill worker hits its own cache for the shared blocks and only
  // the blocks the decode worker lacks move.
  complete(c.router->port(), body(3), "key-alpha");
  EXPECT_EQ(prefill_hits(), 0);
  EXPECT_EQ(imported(), 3);
  complete(c.router->port(), body(5), "key-alpha");
  const double hits1 = prefill_hits();
  const double imported1 = imported();
  EXPECT_GE(hits1, 16);
  EXPECT_GT(imported1, 3);
  EXPECT_LT(imported1, 3 + 6);
  // Beta, the same 97-token prompt: no hit on alpha's blocks on the prefill
  // worker, and the decode worker imports all 6 of beta's own blocks rather
  // than hitting alpha's.
  complete(c.router->port(), body(5), "key-beta");
  EXPECT_EQ(prefill_hits(), hits1);
  EXPECT_EQ(imported(), imported1 + 6);
  // Alpha again: the decode worker holds every block; nothing moves.
  const double sent = metric_value(metrics(prefill), "ladder_kv_transfer_sent_blocks_total");
  complete(c.router->port(), body(5), "key-alpha");
  EXPECT_EQ(imported(), imported1 + 6);
  EXPECT_EQ(metric_value(metrics(prefill), "ladder_kv_transfer_sent_blocks_total"), sent);
  EXPECT_EQ(metric_value(metrics(decode), "ladder_kv_refused_blocks_total"), 0);
  // Unauthenticated requests are refused at the router.
  HttpReply r = http_request(c.router->port(), "POST", "/v1/completions", body(1).dump());
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(health(prefill)["kv_blocks_used"], 0);
  EXPECT_EQ(health(decode)["kv_blocks_used"], 0);
}

TEST(Disagg, KilledDecodeWorkerFailsItsRequestsAndTheRouterServesOn) {
  // Every step takes at least 150 ms: a 40-token stream lasts at least 6 s on any
  // machine, so both are running when the worker is killed (right after
  // both have streamed their first token); the survivor then runs to its end.
  // The delay, not the model, makes the stream long: stories260K computes a
  // token in well under a millisecond even under a sanitizer.
  Cluster c(stories(), {}, /*n_decode=*/2, {"--test-step-delay-ms", "150"});
  ASSERT_TRUE(c.ok());
  const int router = c.router->port();
  // Two long streams: the router spreads them over both decode workers.
  const std::string long_req = json{
      {"prompt", story(3)},
      {"max_tokens", 40},
      {"stream", true},
      {"ignore_eos", true},
      {"temperature", 0}}.dump();
  int fd1 = open_stream(router, long_req);
  std::string b1;
  ASSERT_TRUE(read_until(fd1, "data: ", b1, Ms(60000)));
  int fd2 = open_stream(router, long_req);
  std::string b2;
  ASSERT_TRUE(read_until(fd2, "data: ", b2, Ms(60000)));
  const json h = health(router);
  int busy = 0;
  for (const json& w : h["workers"]) {
    if (w["role"] == "decode" && w["in_flight"] == 1) ++busy;
  }
  ASSERT_EQ(busy, 2) << h.dump();

  // Kill the first decode worker mid-stream.
  ::kill(c.decode[0]->pid(), SIGKILL);
  ASSERT_TRUE(read_until(fd1, "0\r\n\r\n", b1, Ms(60000))) << b1;
  ASSERT_TRUE(read_until(fd2, "0\r\n\r\n", b2, Ms(120000))) << b2;
  close(fd1);
  close(fd2);
  // Exactly one stream ended with the router's error event, the other completed.
  const bool e1 = b1.find("\"worker_lost\"") != std::string::npos;
  const bool e2 = b2.find("\"worker_lost\"") != std::string::npos;
  EXPECT_NE(e1, e2) << b1.substr(0, 300) << "\n---\n" << b2.substr(0, 300);
  const std::string& failed = e1 ? b1 : b2;
  EXPECT_NE(failed.find("decode worker failed"), std::string::npos);
  EXPECT_NE(failed.find("data: [DONE]"), std::string::npos);

  // The router stays healthy and serves new requests on the surviving worker.
  EXPECT_EQ(http_request(router, "GET", "/health").status, 200);
  for (int i = 0; i < 3; ++i) {
    const json r = complete(router, {{"prompt", story(4)}, {"max_tokens", 8}, {"temperature", 0}});
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  }
  EXPECT_GE(metric_value(metrics(router), "ladder_router_worker_failures_total{role=\"decode\"}"), 1);
  EXPECT_EQ(metric_value(metrics(router), "ladder_router_workers{role=\"decode\",state=\"unhealthy\"}"), 1);
  // Nothing held on the workers that live.
  EXPECT_EQ(health(c.prefill->port())["kv_blocks_used"], 0);
  EXPECT_EQ(health(c.decode[1]->port())["kv_blocks_used"], 0);
  EXPECT_EQ(c.router->terminate(), 0) << c.router->log();
}

TEST(Disagg, AClientThatGoesAwayCancelsItsRequestOnTheDecodeWorker) {
  // Every step takes at least 20 ms: the 600-token stream is still running when the
  // client goes away, on any machine.
  Cluster c(slow_test_model(), {}, /*n_decode=*/1, {"--test-step-delay-ms", "20"});
  ASSERT_TRUE(c.ok());
  const std::string long_req =
      json{{"prompt", story(3)}, {"max_tokens", 600}, {"stream", true}, {"ignore_eos", true}}.dump();
  int fd = open_stream(c.router->port(), long_req);
  std::string buf;
  ASSERT_TRUE(read_until(fd, "data: ", buf, Ms(60000)));
  ASSERT_EQ(health(c.decode[0]->port())["running"], 1);
  close(fd);
  // The router closes its connection to the decode worker at the next token,
  // which cancels the request there and frees its blocks.
  const auto deadline = std::chrono::steady_clock::now() + Ms(20000);
  json h;
  while (std::chrono::steady_clock::now() < deadline) {
    h = health(c.decode[0]->port());
    if (h["running"] == 0 && h["kv_blocks_used"] == 0) break;
    std::this_thread::sleep_for(Ms(20));
  }
  EXPECT_EQ(h["running"], 0) << h.dump();
  EXPECT_EQ(h["kv_blocks_used"], 0) << h.dump();
  EXPECT_EQ(
      metric_value(metrics(c.router->port()), "ladder_requests_total{tenant=\"anonymous\",status=\"499\"}"),
      1);
  EXPECT_EQ(http_request(c.router->port(), "GET", "/health").status, 200);
}

// --chat-template: the router renders prompts (placement, /tokenize) with
// the template its workers render them with, and will not start with
// another.
TEST(Disagg, TheRouterRendersWithTheWorkersChatTemplate) {
  const std::string tmpl = "{% for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor %}"
                           "{% if add_generation_prompt %}[assistant]{% endif %}";
  Cluster c(shared_path("models/stories260K.gguf"), {"--chat-template", tmpl});
  ASSERT_TRUE(c.ok());
  const int p = c.router->port();
  const json messages = {{{"role", "user"}, {"content", "Hi"}}};
  HttpReply t = http_request(p, "POST", "/tokenize", json{{"messages", messages}}.dump());
  ASSERT_EQ(t.status, 200) << t.body;
  HttpReply d = http_request(p, "POST", "/detokenize", json{{"tokens", json::parse(t.body)["tokens"]}}.dump());
  EXPECT_EQ(json::parse(d.body)["prompt"], "[user]Hi\n[assistant]");
  HttpReply r = http_request(p, "POST", "/v1/chat/completions",
                             json{{"messages", messages}, {"max_tokens", 4}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], json::parse(t.body)["count"]);

  // A router without the workers' template refuses to start, saying why.
  CommandResult other = run_command({ladder_bin(), "route", "--port", "0", "-m",
                                     shared_path("models/stories260K.gguf"), "--prefill", url(*c.prefill),
                                     "--decode", url(*c.decode[0]), "--startup-timeout-s", "30"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("--chat-template"), std::string::npos) << other.err;
}

// The router publishes the workers' common kernel fingerprint, and refuses
// workers whose kernels sum in different orders (here: a decode worker that
// keeps BF16 weights on FMA where the other runs them on AVX512-BF16 dot
// products), since the split would not decode what one worker does.
TEST(Disagg, WorkersWhoseKernelsDifferAreRefused) {
  Cluster c(shared_path("models/stories260K.gguf"), {});
  ASSERT_TRUE(c.ok());
  const json facts =
      json::parse(http_request(c.router->port(), "GET", "/v1/models").body)["data"][0]["ladder"];
  EXPECT_EQ(facts["kernels"], ops::kernel_fingerprint());
  if (!ops::bf16_dot_active()) {
    GTEST_SKIP() << "no AVX512-BF16 dot kernel here, so no second kernel fingerprint to start a worker with";
  }
  setenv("LADDER_BF16_DOT", "0", 1);  // the child inherits it; this process has read its own setting
  ServerProcess fma({"-m", shared_path("models/stories260K.gguf"), "--role", "decode", "--threads", "1",
                     "--kv-host", "127.0.0.1", "--kv-port", "0"});
  unsetenv("LADDER_BF16_DOT");
  ASSERT_TRUE(fma.ok());
  CommandResult mixed =
      run_command({ladder_bin(), "route", "--port", "0", "-m", shared_path("models/stories260K.gguf"),
                   "--prefill", url(*c.prefill), "--decode", url(fma), "--startup-timeout-s", "30"});
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_NE(mixed.err.find("kernels sum in different orders"), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("LADDER_BF16_DOT=0"), std::string::npos) << mixed.err;
}

}  // namespace
}  // namespace ladder::testing
