// `ladder serve` through real HTTP on a loopback port: golden output, the
// OpenAI shapes, every error status, admission, disconnects and the SIGTERM
// drain (tenants: tenant_serve_test.cc). Slow cases use a synthetic model (random weights, ~tens of
// ms per token) so that requests really overlap.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ops/bf16_dot.h"
#include "ops/kernel_choice.h"
#include "serve_test_util.h"

namespace ladder::testing {
namespace {

// Concatenated text of a completions SSE body; fills the parsed chunks.
std::string stream_text(const std::string& body, std::vector<json>* chunks) {
  std::string text;
  for (const auto& p : sse_payloads(body)) {
    if (p == "[DONE]") continue;
    json c = json::parse(p);
    if (!c["choices"].empty()) {
      const json& ch = c["choices"][0];
      if (ch.contains("text")) text += ch["text"].get<std::string>();
      if (ch.contains("delta") && ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    }
    chunks->push_back(std::move(c));
  }
  return text;
}


TEST(Serve, GoldenGreedyStream) {
  ServerProcess srv({"-m", stories()});
  ASSERT_TRUE(srv.ok());
  for (json prompt : {json("Once upon a time"), json::array({1, 403, 407, 261, 378})}) {
    json req = {{"model", "stories260K"}, {"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0},
                {"stream", true},        {"logprobs", 1},    {"stream_options", {{"include_usage", true}}}};
    HttpReply r = http_request(srv.port(), "POST", "/v1/completions", req.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("content-type"), "text/event-stream");
    std::vector<json> chunks;
    EXPECT_EQ(stream_text(r.body, &chunks), kGoldenText);
    auto payloads = sse_payloads(r.body);
    ASSERT_FALSE(payloads.empty());
    EXPECT_EQ(payloads.back(), "[DONE]");
    int n_logprob_tokens = 0;
    for (const auto& c : chunks) {
      if (!c["choices"].empty() && c["choices"][0]["logprobs"].is_object()) {
        n_logprob_tokens += static_cast<int>(c["choices"][0]["logprobs"]["tokens"].size());
      }
    }
    EXPECT_EQ(n_logprob_tokens, 64);
    // Second to last: the usage chunk; before it the final chunk with timings.
    ASSERT_GE(chunks.size(), 2u);
    const json& usage = chunks.back()["usage"];
    EXPECT_EQ(usage["prompt_tokens"], 5);
    EXPECT_EQ(usage["completion_tokens"], 64);
    const json& fin = chunks[chunks.size() - 2];
    EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
    EXPECT_GE(fin["ladder"]["ttft_ms"].get<double>(), 0.0);
    EXPECT_GE(fin["ladder"]["decode_ms"].get<double>(), 0.0);
    EXPECT_EQ(fin["ladder"]["prompt_tokens"], 5);
  }
}

TEST(Serve, NonStreamingChatModelsAndStops) {
  ServerProcess srv({"-m", stories()});
  ASSERT_TRUE(srv.ok());
  json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  // Ladder's identity of what it serves: digests, KV format, revision.
  const json& lad = models["data"][0]["ladder"];
  const auto sum = run_command({"sha256sum", stories()});
  ASSERT_EQ(sum.exit_code, 0);
  EXPECT_EQ(lad["model_digest"], sum.out.substr(0, 64));
  EXPECT_EQ(lad["tokenizer_digest"].get<std::string>().size(), 64u);
  EXPECT_EQ(lad["kv_dtype"], "F16");
  EXPECT_GT(lad["kv_blocks"].get<int>(), 0);
  EXPECT_FALSE(lad["revision"].get<std::string>().empty());
  // created: when the server started (not 0); within the last hour.
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(models["data"][0]["created"].get<int64_t>(), now_s);
  EXPECT_GT(models["data"][0]["created"].get<int64_t>(), now_s - 3600);
  // The kernels' arithmetic on this machine, as `ladder info` names it.
  EXPECT_EQ(lad["kernels"], ops::kernel_fingerprint());
  const std::string fingerprint = lad["system_fingerprint"].get<std::string>();
  EXPECT_EQ(fingerprint.rfind("fp_", 0), 0u) << fingerprint;
  EXPECT_EQ(fingerprint.size(), 19u);
  // GET /v1/models/{id}: the same entry; another id is an OpenAI 404.
  const HttpReply one = http_request(srv.port(), "GET", "/v1/models/stories260K");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(json::parse(one.body), models["data"][0]);
  const HttpReply missing = http_request(srv.port(), "GET", "/v1/models/gpt-4o");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(json::parse(missing.body)["error"]["code"], "model_not_found") << missing.body;
  EXPECT_EQ(http_request(srv.port(), "POST", "/v1/models/stories260K", "{}").status, 405);

  json r = post_json(srv.port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["system_fingerprint"], fingerprint);  // every response names the configuration
  EXPECT_EQ(r["choices"][0]["text"], kGoldenText);
  EXPECT_EQ(r["usage"]["completion_tokens"], 64);
  EXPECT_EQ(r["usage"]["total_tokens"], 69);
  EXPECT_TRUE(r["ladder"].contains("queued_ms"));

  // "girl" streams as " g" "ir" "l": the stop string spans three tokens and is cut.
  for (bool stream : {false, true}) {
    json req = {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}, {"stop", {"xyz", "irl named"}},
                {"stream", stream}};
    HttpReply h = http_request(srv.port(), "POST", "/v1/completions", req.dump());
    ASSERT_EQ(h.status, 200);
    std::string text;
    std::string finish;
    if (stream) {
      std::vector<json> chunks;
      text = stream_text(h.body, &chunks);
      finish = chunks.back()["choices"][0]["finish_reason"];
    } else {
      json doc = json::parse(h.body);
      text = doc["choices"][0]["text"];
      finish = doc["choices"][0]["finish_reason"];
      EXPECT_EQ(doc["usage"]["completion_tokens"], 9);  // ", there was a little g ir l named" = 9 tokens
    }
    EXPECT_EQ(text, ", there was a little g") << stream;
    EXPECT_EQ(finish, "stop");
  }

  json chat = post_json(srv.port(), "/v1/chat/completions",
                        {{"model", "stories260K"},
                         {"messages", {{{"role", "system"}, {"content", "Tell a story."}}, {{"role", "user"}, {"content", "Once upon a time"}}}},
                         {"max_completion_tokens", 12},
                         {"temperature", 0},
                         {"logprobs", true},
                         {"top_logprobs", 2}});
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(chat["usage"]["completion_tokens"], 12);
  EXPECT_EQ(chat["choices"][0]["logprobs"]["content"].size(), 12u);
  EXPECT_EQ(chat["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);

  HttpReply s = http_request(srv.port(), "POST", "/v1/chat/completions",
                             json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 5}, {"stream", true}}.dump());
  ASSERT_EQ(s.status, 200);
  std::vector<json> chunks;
  stream_text(s.body, &chunks);
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "length");
}


// system_fingerprint names the configuration, not the process: a restart
// with the same settings gives the same one, another setting another.
TEST(Serve, SystemFingerprintFollowsTheConfiguration) {
  auto fingerprint = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args{"-m", stories()};
    args.insert(args.end(), extra.begin(), extra.end());
    ServerProcess srv(args);
    EXPECT_TRUE(srv.ok());
    return json::parse(http_request(srv.port(), "GET", "/v1/models").body)["data"][0]["ladder"]["system_fingerprint"]
        .get<std::string>();
  };
  const std::string a = fingerprint({});
  EXPECT_EQ(fingerprint({}), a);
  EXPECT_NE(fingerprint({"--max-queue", "7"}), a);
  // Where BF16 weights would run on AVX512-BF16 dot products, a server told
  // to keep them on FMA (other bits) names another configuration, though no
  // flag differs. (The child inherits the variable; this process has read
  // its own setting already.)
  if (ops::bf16_dot_active()) {
    setenv("LADDER_BF16_DOT", "0", 1);
    const std::string fma = fingerprint({});
    unsetenv("LADDER_BF16_DOT");
    EXPECT_NE(fma, a);
  }
}

// A chat template that does not render tools (stories260K has none: the
// ChatML fallback) no longer drops them silently: they are described in the
// system message, which on this 128-token model makes the prompt too long
// (a clear 400 naming its length); tool_choice "none" leaves them out; and
// --tool-preamble off sends them unrendered, as before.
TEST(Serve, ToolsReachATemplateThatDoesNotRenderThem) {
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  json req = {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}}, {"max_tokens", 2}};
  ServerProcess srv({"-m", stories()});
  ASSERT_TRUE(srv.ok());
  const json plain = post_json(srv.port(), "/v1/chat/completions", req);
  const int64_t plain_tokens = plain["usage"]["prompt_tokens"].get<int64_t>();
  req["tools"] = tools;
  const HttpReply with_tools = http_request(srv.port(), "POST", "/v1/chat/completions", req.dump());
  EXPECT_EQ(with_tools.status, 400) << with_tools.body;
  EXPECT_EQ(json::parse(with_tools.body)["error"]["code"], "context_length_exceeded") << with_tools.body;
  req["tool_choice"] = "none";
  EXPECT_EQ(post_json(srv.port(), "/v1/chat/completions", req)["usage"]["prompt_tokens"], plain_tokens);
  EXPECT_NE(srv.log().find("the chat template does not render tools"), std::string::npos) << srv.log();

  ServerProcess off({"-m", stories(), "--tool-preamble", "off"});
  ASSERT_TRUE(off.ok());
  req.erase("tool_choice");
  EXPECT_EQ(post_json(off.port(), "/v1/chat/completions", req)["usage"]["prompt_tokens"], plain_tokens);
  EXPECT_NE(off.log().find("--tool-preamble is off"), std::string::npos) << off.log();
}

TEST(Serve, ErrorStatuses) {
  ServerProcess srv({"-m", stories(), "--max-body-bytes", "4096", "--max-input-tokens", "64", "--max-output-tokens", "100"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  expect_error(http_request(p, "POST", "/v1/completions", "{\"prompt\": "), 400, "", "invalid_json");
  expect_error(http_request(p, "POST", "/v1/completions", R"({"prompt":"a","temperature":"x"})"), 400, "temperature", "");
  expect_error(http_request(p, "POST", "/v1/completions", R"({"prompt":"a","n":99})"), 400, "n", "");
  expect_error(http_request(p, "POST", "/v1/chat/completions", R"({"messages":"hi"})"), 400, "messages", "");
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "the cat sat on the mat ";
  expect_error(http_request(p, "POST", "/v1/completions", json{{"prompt", long_prompt}}.dump()), 400, "prompt",
               "context_length_exceeded");
  expect_error(http_request(p, "POST", "/v1/completions", R"({"prompt":"a","max_tokens":101})"), 400, "max_tokens", "");
  expect_error(http_request(p, "POST", "/v1/completions", R"({"prompt":"a","model":"gpt-9"})"), 404, "",
               "model_not_found");
  expect_error(http_request(p, "GET", "/v2/nothing"), 404, "", "");
  HttpReply r = http_request(p, "GET", "/v1/completions");
  expect_error(r, 405, "", "method_not_allowed");
  EXPECT_EQ(r.header("allow"), "POST");
  expect_error(http_request(p, "POST", "/v1/completions", json{{"prompt", std::string(5000, 'a')}}.dump()), 413, "",
               "payload_too_large");
  // Still healthy after all of it.
  EXPECT_EQ(http_request(p, "GET", "/health").status, 200);
  json m = json::parse(http_request(p, "GET", "/health").body);
  EXPECT_EQ(m["status"], "ready");
  std::string text = wait_metric(p, "ladder_requests_total{tenant=\"anonymous\",status=\"400\"}", 6);
  EXPECT_EQ(metric_value(text, "ladder_requests_total{tenant=\"anonymous\",status=\"400\"}"), 6) << text;
  EXPECT_EQ(metric_value(text, "ladder_requests_total{tenant=\"anonymous\",status=\"404\"}"), 1) << text;
}

// Opens a streaming completion and returns the socket once the first chunk
// of data arrived (the request is running).
int open_stream(int port, const std::string& body, const std::string& extra_headers = "") {
  int fd = connect_loopback(port);
  std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_TRUE(send_all(fd, req));
  return fd;
}

// Reads `fd` until `needle` arrives; what was read is left in `*read` when
// the caller wants it.
bool wait_for_bytes(int fd, const std::string& needle, Ms timeout, std::string* read = nullptr) {
  std::string local;
  std::string& buf = read ? *read : local;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    char c[4096];
    ssize_t n = recv(fd, c, sizeof c, MSG_DONTWAIT);
    if (n > 0) {
      buf.append(c, static_cast<size_t>(n));
      if (buf.find(needle) != std::string::npos) return true;
    } else if (n == 0) {
      return false;
    } else {
      std::this_thread::sleep_for(Ms(5));
    }
  }
  return false;
}

TEST(Serve, QueueFullAndInfeasibleDeadlineGet429) {
  // Every step takes at least 20 ms: the 400-token streams hold the slot and the queue
  // for at least 8 s on any machine.
  ServerProcess srv({"-m", slow_model(), "--max-running", "1", "--max-queue", "1", "--threads", "1",
                     "--test-step-delay-ms", "20"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  std::string long_req = json{{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"stream", true}, {"ignore_eos", true}}.dump();
  int fd = open_stream(p, long_req);
  ASSERT_TRUE(wait_for_bytes(fd, "data: ", Ms(20000)));
  // The only slot is busy; a request whose first token is due in 50 ms
  // cannot wait ~1 s for it.
  HttpReply r = http_request(p, "POST", "/v1/completions", R"({"prompt":"a","max_tokens":2})",
                             {{"x-ladder-deadline-ms", "50"}});
  expect_error(r, 429, "", "deadline_infeasible");
  EXPECT_FALSE(r.header("retry-after").empty());
  // One may wait (queue of 1) ...
  int fd2 = open_stream(p, long_req);
  wait_metric(p, "ladder_queue_depth", 1);
  // ... the next finds the queue full.
  r = http_request(p, "POST", "/v1/completions", R"({"prompt":"a","max_tokens":2})");
  expect_error(r, 429, "", "queue_full");
  EXPECT_GE(std::atoi(r.header("retry-after").c_str()), 1);
  std::string text = metrics(p);
  EXPECT_EQ(metric_value(text, "ladder_queue_depth"), 1) << text;
  EXPECT_EQ(metric_value(text, "ladder_running_sequences"), 1) << text;
  close(fd);
  close(fd2);
}

// Large prompts (8 MiB each, several at once) do not hold up /health: their
// JSON is parsed and their text checked on the prepare threads, off the io
// threads, and a prompt whose bytes alone exceed what the input bound can
// hold is refused before it is tokenized.
TEST(Serve, LargePromptsDoNotStallHealth) {
  ServerProcess srv({"-m", stories(), "--max-body-bytes", std::to_string(16 << 20), "--max-input-tokens", "64"});
  ASSERT_TRUE(srv.ok());
  const int p = srv.port();
  std::string words;
  while (words.size() < (8u << 20)) words += "the cat sat on the mat and looked at the dog ";
  const std::string text_body = json{{"prompt", words}, {"max_tokens", 1}}.dump();
  // The yardstick is this machine's own time to answer one such prompt: a
  // probe that waited behind one would take about that long, however fast or
  // busy the machine is.
  const auto alone0 = std::chrono::steady_clock::now();
  ASSERT_EQ(http_request(p, "POST", "/v1/completions", text_body).status, 400);
  const double alone_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - alone0).count();
  std::atomic<int> answered{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < 4; ++i) {
    senders.emplace_back([&] {
      HttpReply r = http_request(p, "POST", "/v1/completions", text_body);
      if (r.status == 400) ++answered;
    });
  }
  double worst_ms = 0;
  int probes = 0;
  while (answered.load() < 4 && probes < 400) {
    const auto t0 = std::chrono::steady_clock::now();
    HttpReply h = http_request(p, "GET", "/health");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(h.status, 200);
    worst_ms = std::max(worst_ms, ms);
    ++probes;
    std::this_thread::sleep_for(Ms(10));
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(answered.load(), 4);
  EXPECT_GT(probes, 0);
  EXPECT_LT(worst_ms, alone_ms / 2) << "a /health probe waited behind the large prompts";
  std::printf("/health during 4 x 8 MiB prompts: %d probes, worst %.1f ms (one prompt alone: %.1f ms)\n", probes,
              worst_ms, alone_ms);
}

TEST(Serve, LoadingAnswers503) {
  // The port is announced before the model loads; meanwhile health says
  // "loading" and work is refused with 503, never queued or dropped. The
  // server holds "loading" for 3 s before it starts (--test-load-delay-ms),
  // so the state is there to see on a machine that loads in no time.
  ServerProcess srv({"-m", slow_model(), "--test-load-delay-ms", "3000"}, /*wait_ready=*/false);
  ASSERT_TRUE(srv.ok());
  HttpReply gen = http_request(srv.port(), "POST", "/v1/completions", R"({"prompt":"a","max_tokens":1})");
  HttpReply health = http_request(srv.port(), "GET", "/health");
  expect_error(gen, 503, "", "model_loading");
  EXPECT_FALSE(gen.header("retry-after").empty());
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(json::parse(health.body)["status"], "loading");
  int status = 0;
  for (int i = 0; i < 500 && status != 200; ++i) {
    std::this_thread::sleep_for(Ms(20));
    status = http_request(srv.port(), "GET", "/health").status;
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(http_request(srv.port(), "POST", "/v1/completions", R"({"prompt":"a","max_tokens":1})").status, 200);
}

TEST(Serve, QueuedPastItsDeadlineGets429) {
  // Admission believes a request takes 100 ms, so a 1.5 s deadline looks
  // feasible and the request waits; the running one takes far longer, and the
  // waiting one is turned away when its deadline passes instead of being
  // served late.
  // Every step takes at least 20 ms, so the running 900-token stream
  // takes at least 18 s on any machine: far past the waiting one's deadline.
  ServerProcess srv({"-m", slow_model(), "--threads", "1", "--max-running", "1", "--initial-service-ms", "100",
                     "--test-step-delay-ms", "20"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  int fd = open_stream(p, json{{"prompt", "Once upon a time"}, {"max_tokens", 900}, {"stream", true}, {"ignore_eos", true}}.dump());
  ASSERT_TRUE(wait_for_bytes(fd, "data: ", Ms(20000)));
  auto t0 = std::chrono::steady_clock::now();
  HttpReply r = http_request(p, "POST", "/v1/completions", R"({"prompt":"a","max_tokens":2})",
                             {{"x-ladder-deadline-ms", "1500"}});
  double waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  expect_error(r, 429, "", "deadline_exceeded");
  EXPECT_GE(waited_ms, 1450);
  EXPECT_LT(waited_ms, 5000);
  EXPECT_EQ(metric_value(metrics(p), "ladder_queue_depth"), 0);
  close(fd);
}

TEST(Serve, DisconnectMidStreamFreesBlocks) {
  // Every step takes at least 20 ms: the 600-token stream lasts at least 12 s on any
  // machine, so the hang-up always comes mid-stream.
  ServerProcess srv({"-m", slow_model(), "--threads", "1", "--test-step-delay-ms", "20"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  int fd = open_stream(p, json{{"prompt", "Once upon a time"}, {"max_tokens", 600}, {"stream", true}, {"ignore_eos", true}}.dump());
  ASSERT_TRUE(wait_for_bytes(fd, "data: ", Ms(20000)));
  EXPECT_GT(metric_value(metrics(p), "ladder_kv_blocks_used"), 0);
  close(fd);
  double used = -1;
  std::string text;
  for (int i = 0; i < 200 && used != 0; ++i) {
    std::this_thread::sleep_for(Ms(25));
    text = metrics(p);
    used = metric_value(text, "ladder_kv_blocks_used");
  }
  EXPECT_EQ(used, 0) << text;
  EXPECT_EQ(metric_value(text, "ladder_running_sequences"), 0);
  // The request is recorded once both its engine part and its delivery
  // ended, which may trail the blocks' release by a moment.
  text = wait_metric(p, "ladder_requests_total{tenant=\"anonymous\",status=\"499\"}", 1);
  EXPECT_EQ(metric_value(text, "ladder_requests_total{tenant=\"anonymous\",status=\"499\"}"), 1) << text;
  // The generation stopped well before its 600 tokens.
  EXPECT_LT(metric_value(text, "ladder_completion_tokens_total{tenant=\"anonymous\"}"), 600) << text;
}

TEST(Serve, SigtermDrainsRunningRequestsAndExitsZero) {
  // Every step takes at least 100 ms: the 40-token stream runs at least 4 s on any
  // machine, so the server is still draining while the test looks at it.
  ServerProcess srv({"-m", slow_model(), "--threads", "1", "--drain-grace-s", "30", "--test-step-delay-ms", "100"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  // A keep-alive connection opened before the drain.
  int idle = connect_loopback(p);
  ASSERT_TRUE(send_all(idle, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(read_reply(idle).status, 200);
  int fd = open_stream(p, json{{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"stream", true}, {"ignore_eos", true}}.dump());
  ASSERT_TRUE(wait_for_bytes(fd, "data: ", Ms(20000)));
  kill(srv.pid(), SIGTERM);
  // Health turns "draining" on the connection that stays open.
  int health = 0;
  for (int i = 0; i < 250 && health != 503; ++i) {
    ASSERT_TRUE(send_all(idle, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    HttpReply h = read_reply(idle);
    health = h.status;
    if (health == 503) {
      EXPECT_EQ(json::parse(h.body)["status"], "draining");
    } else {
      std::this_thread::sleep_for(Ms(20));
    }
  }
  ASSERT_EQ(health, 503);
  // New work on an open connection is refused with 503 while draining ...
  std::string body = R"({"prompt":"a","max_tokens":2})";
  ASSERT_TRUE(send_all(idle, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body));
  expect_error(read_reply(idle), 503, "", "server_draining");
  // ... while the running stream still finishes.
  EXPECT_TRUE(wait_for_bytes(fd, "data: [DONE]", Ms(30000)));
  close(fd);
  close(idle);
  EXPECT_EQ(srv.terminate(Ms(20000)), 0) << srv.log();
}

TEST(Serve, ReservationHoldsUnderFlood) {
  // 4 running slots: alpha and beta hold 2 each. Alpha floods with 12
  // streams; beta's requests are admitted at once into its reserved slots and
  // answered while alpha's ten still wait. That holds on any machine: every
  // step takes at least 20 ms, so the flood's 1000-token streams
  // outlast the test by construction (>= 20 s) and alpha's queue cannot drain
  // first; were beta queued behind alpha, it would wait for that.
  ServerProcess srv({"-m", slow_model(), "--threads", "1", "--max-running", "4", "--max-queue", "64",
                     "--tenants", write_file("flood.toml", kTenants), "--test-step-delay-ms", "20"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  std::string flood = json{{"prompt", "Once upon a time"}, {"max_tokens", 1000}, {"stream", true}, {"ignore_eos", true}}.dump();
  std::vector<int> fds;
  for (int i = 0; i < 12; ++i) fds.push_back(open_stream(p, flood, "Authorization: Bearer key-alpha\r\n"));
  // Which two of the twelve run depends on the order they were tokenized in;
  // the flood is in place once ten wait.
  std::string text = wait_metric(p, "ladder_queue_depth", 10);
  EXPECT_EQ(metric_value(text, "ladder_queue_depth"), 10) << "alpha runs only its 2 reserved slots\n" << text;
  text = wait_metric(p, "ladder_running_sequences", 2);
  EXPECT_EQ(metric_value(text, "ladder_running_sequences"), 2) << text;
  std::vector<int> status(2, 0);
  std::vector<double> ttfts(2, -1);
  std::vector<std::thread> beta;
  for (int i = 0; i < 2; ++i) {
    beta.emplace_back([&, i] {
      HttpReply r = http_request(p, "POST", "/v1/completions",
                                 json{{"prompt", "Once upon a time"}, {"max_tokens", 8}}.dump(),
                                 {{"Authorization", "Bearer key-beta"}});
      status[static_cast<size_t>(i)] = r.status;
      if (r.status == 200) ttfts[static_cast<size_t>(i)] = json::parse(r.body)["ladder"]["ttft_ms"].get<double>();
    });
  }
  for (auto& t : beta) t.join();
  EXPECT_EQ(status, (std::vector<int>{200, 200})) << "beta is served under alpha's flood";
  // Alpha's ten still wait: beta did not take their place in the queue.
  EXPECT_EQ(metric_value(metrics(p), "ladder_queue_depth"), 10);
  // The counters are updated as each request's bookkeeping ends, which may
  // trail its response by a moment.
  text = wait_metric(p, "ladder_requests_total{tenant=\"beta\",status=\"200\"}", 2);
  EXPECT_EQ(metric_value(text, "ladder_requests_total{tenant=\"beta\",status=\"200\"}"), 2) << text;
  std::printf("beta TTFT under flood: %.1f ms, %.1f ms; alpha queued: 10\n", ttfts[0], ttfts[1]);
  for (int fd : fds) close(fd);
}

TEST(Serve, MalformedBarrageLeavesServerHealthy) {
  ServerProcess srv({"-m", stories(), "--read-timeout-s", "2"});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  const std::vector<std::string> bodies = {
      "{", "[]", "null", R"({"prompt":1e999})", R"({"prompt":"a","max_tokens":1e308})",
      R"({"prompt":"a","max_tokens":-1})", R"({"prompt":"a","temperature":[1]})", "{\"prompt\":\"\xc3\x28\"}",
      "\xff\xfe\xfd", R"({"prompt":"a","stop":{"x":1}})", R"({"prompt":[999999999]})",
      R"({"messages":[{"role":"user"}]})", std::string(3000, '['), R"({"prompt":"a","seed":1.5})",
      // Well-formed and 400 KB, nested 200,000 levels: copied or printed
      // recursively (a schema is copied) it would overflow a thread's stack.
      R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
      R"("json_schema":{"name":"d","schema":{"type":"object","default":)" +
          std::string(200000, '[') + std::string(200000, ']') + "}}}}",
      // A regular expression and a grammar whose groups nest 200,000 and
      // 30,000 deep (a grammar has 64 KiB): each parser recursed per group.
      R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
      R"("json_schema":{"name":"d","schema":{"type":"string","pattern":")" +
          std::string(200000, '(') + "a" + std::string(200000, ')') + "\"}}}}",
      R"({"messages":[{"role":"user","content":"x"}],"grammar":"root ::= )" + std::string(30000, '(') +
          "\\\"a\\\"" + std::string(30000, ')') + "\"}"};
  int n = 0;
  for (int round = 0; round < 8; ++round) {
    for (const auto& b : bodies) {
      for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
        HttpReply r = http_request(p, "POST", path, b);
        EXPECT_EQ(r.status, 400) << path << " " << b << " -> " << r.body;
        ++n;
      }
    }
  }
  // Broken HTTP framing and truncated bodies.
  for (const std::string& raw : {std::string("GARBAGE\r\n\r\n"), std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: zz\r\n\r\n"),
                                std::string("POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n")}) {
    HttpReply r = http_raw(p, raw, Ms(5000));
    EXPECT_EQ(r.status, 400) << raw;
  }
  {
    int fd = connect_loopback(p);
    send_all(fd, "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\":");
    shutdown(fd, SHUT_WR);  // the body never completes
    HttpReply r = read_reply(fd, Ms(5000));
    EXPECT_TRUE(r.status == 400 || r.status == 0) << r.status;
    close(fd);
  }
  // A sender that stalls past the read timeout (2 s) is cut off; one that
  // is slow but within it is served.
  std::thread stalled([p] {
    int fd = connect_loopback(p);
    send_all(fd, "POST /v1/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"pro");
    auto t0 = std::chrono::steady_clock::now();
    char c;
    ssize_t got = recv(fd, &c, 1, 0);  // blocks until the server closes
    double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(got, 0);
    EXPECT_GT(waited_s, 1.5);
    EXPECT_LT(waited_s, 6.0);
    close(fd);
  });
  std::thread slow([p] {
    std::string body = R"({"prompt":"Once upon a time","max_tokens":3})";
    std::string req = "POST /v1/completions HTTP/1.1\r\nConnection: close\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body;
    int fd = connect_loopback(p);
    for (size_t i = 0; i < req.size(); i += 8) {
      send_all(fd, req.substr(i, 8));
      std::this_thread::sleep_for(Ms(10));
    }
    EXPECT_EQ(read_reply(fd, Ms(10000)).status, 200);
    close(fd);
  });
  // Meanwhile everyone else is served.
  json r = post_json(p, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}});
  EXPECT_EQ(r["choices"][0]["text"], kGoldenText);
  stalled.join();
  slow.join();
  EXPECT_EQ(http_request(p, "GET", "/health").status, 200);
  EXPECT_GT(n, 200);
}

TEST(Serve, APrefillWorkerRefusesBadBodiesAndStaysUp) {
  ServerProcess srv({"-m", stories(), "--role", "prefill"});
  ASSERT_TRUE(srv.ok());
  const int p = srv.port();
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "must be a JSON object"},
      {"[1]", "must be a JSON object"},
      {R"({"prompt":[1,2,3],"transfer_id":)" + deep + "}", "more than 256 levels deep"},
      {R"({"prompt":)" + deep + "}", "more than 256 levels deep"},
      {R"({"prompt":[1,2,3]})", "transfer_id"},
  };
  for (const auto& [body, says] : cases) {
    const HttpReply r = http_request(p, "POST", "/internal/prefill", body);
    EXPECT_EQ(r.status, 400) << body.substr(0, 80);
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
  }
  const HttpReply h = http_request(p, "GET", "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(json::parse(h.body)["kv_blocks_used"], 0);
}

TEST(Serve, DrainDeliversOrEndsWithAnErrorAndCountsWhich) {
  // Six streams: three read at full speed, three slowly (but fast enough to
  // take delivery within the bounds). SIGTERM with a 10 s grace: streams that
  // finish in time arrive whole; the rest are cancelled and end with an error
  // event. Each stream is one or the other, and the server's final account
  // says how many of each.
  // Which streams finish holds on any machine by construction: every step
  // takes at least 50 ms (--test-step-delay-ms), so no CPU steps a
  // stream more than 20 times a second and a 900-token stream needs at least
  // 45 s, more than four times the grace; a 6-token one needs 6 steps, which even
  // a sanitizer build on a busy machine (~0.4 s a step for six streams) takes
  // in a fraction of it.
  ServerProcess srv(
      {"-m", slow_model(), "--threads", "1", "--drain-grace-s", "10", "--test-step-delay-ms", "50"});
  ASSERT_TRUE(srv.ok());
  const int p = srv.port();
  std::vector<int> fds;
  for (int i = 0; i < 6; ++i) {
    const int max_tokens = i % 2 == 0 ? 6 : 900;
    fds.push_back(open_stream(
        p, json{{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"stream", true}, {"ignore_eos", true}}.dump()));
  }
  // Every stream has begun (the server admitted it) before the signal: a
  // request still in flight at SIGTERM would be refused, not drained.
  std::vector<std::string> bodies(fds.size());
  for (size_t i = 0; i < fds.size(); ++i) ASSERT_TRUE(wait_for_bytes(fds[i], "data: ", Ms(30000), &bodies[i]));
  kill(srv.pid(), SIGTERM);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < fds.size(); ++i) {
    readers.emplace_back([&, i] {
      const bool slow = i >= 3;
      std::string got = std::move(bodies[i]);
      char buf[4096];
      for (;;) {
        const ssize_t n = recv(fds[i], buf, slow ? 512 : sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
        if (slow) std::this_thread::sleep_for(Ms(5));
      }
      bodies[i] = std::move(got);
    });
  }
  for (auto& t : readers) t.join();
  for (int fd : fds) close(fd);
  ASSERT_EQ(srv.terminate(Ms(30000)), 0) << srv.log();
  int whole = 0;
  int errored = 0;
  for (const std::string& b : bodies) {
    ASSERT_NE(b.find("data: [DONE]"), std::string::npos) << "every stream ends with [DONE]: " << b.substr(0, 300);
    const bool finished = b.find("\"finish_reason\":\"length\"") != std::string::npos;
    const bool error = b.find("\"server_draining\"") != std::string::npos;
    EXPECT_NE(finished, error) << "a stream either completes or ends with an error event";
    whole += finished ? 1 : 0;
    errored += error ? 1 : 0;
  }
  EXPECT_EQ(whole, 3);
  EXPECT_EQ(errored, 3);
  // The account: the three cut short are errors (503), never successes.
  const std::string log = srv.log();
  EXPECT_NE(log.find("stopped: requests 3 x 200, 3 x 503;"), std::string::npos) << log;
}

}  // namespace
}  // namespace ladder::testing
