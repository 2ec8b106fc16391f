// Load on loopback (part of the default suite; ~10-20 s): 10,000 malformed
// requests over keep-alive connections, and 1,000 concurrent streaming
// connections held at once, most of them queued.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "http_test_client.h"
#include "test_support.h"
#include "serve_test_util.h"

namespace ladder::testing {
namespace {

using nlohmann::json;
using Ms = std::chrono::milliseconds;

void raise_fd_limit() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
}

// Peak resident memory of a process, in MiB (VmHWM).
double peak_rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return -1;
}

TEST(Load, TenThousandMalformedRequests) {
  ServerProcess srv({"-m", stories()});
  ASSERT_TRUE(srv.ok());
  const int port = srv.port();
  const std::vector<std::string> bodies = {
      "{", "[1,2", "null", R"({"prompt":1e999})", R"({"prompt":"a","max_tokens":123456789012345678901234567890})",
      R"({"prompt":"a","temperature":"warm"})", "{\"prompt\":\"\xed\xa0\x80\"}", "{\"prompt\":\"\xc0\xaf\"}",
      R"({"prompt":"a","top_p":-1})", R"({"prompt":{"nested":[[[[]]]]}})", R"({"prompt":"a","n":17})",
      R"({"messages":[{"role":"user","content":7}]})"};
  const int kThreads = 8;
  const int kPerThread = 1250;
  std::atomic<int> n400{0}, other{0};
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int fd = connect_loopback(port);
      for (int i = 0; i < kPerThread; ++i) {
        const std::string& b = bodies[static_cast<size_t>(i + t) % bodies.size()];
        const char* path = (i % 2) ? "/v1/chat/completions" : "/v1/completions";
        std::string req = std::string("POST ") + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
        HttpReply r;
        if (send_all(fd, req)) r = read_reply(fd, Ms(10000));
        if (r.status == 0) {  // reconnect (should not happen: 400s keep the connection)
          close(fd);
          fd = connect_loopback(port);
        }
        (r.status == 400 ? n400 : other)++;
      }
      close(fd);
    });
  }
  for (auto& th : threads) th.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(n400.load(), kThreads * kPerThread);
  EXPECT_EQ(other.load(), 0);
  std::printf("10,000 malformed requests: %.2f s (%.0f req/s), server peak RSS %.0f MiB\n", secs,
              kThreads * kPerThread / secs, peak_rss_mib(srv.pid()));
  EXPECT_EQ(http_request(port, "GET", "/health").status, 200);
  HttpReply ok = http_request(port, "POST", "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":4})");
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(Load, ThousandConcurrentStreams) {
  raise_fd_limit();
  const int kConns = 1000;
  ServerProcess srv({"-m", stories(), "--max-running", "32", "--max-queue", "900"});
  ASSERT_TRUE(srv.ok());
  const int port = srv.port();
  std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"stream", true}}.dump();
  std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> fds;
  for (int i = 0; i < kConns; ++i) {
    int fd = connect_loopback(port);
    ASSERT_GE(fd, 0) << "connection " << i;
    fds.push_back(fd);
  }
  // Every connection is open before any request is sent: all 1,000 are held.
  std::string m;
  for (int i = 0; i < 250; ++i) {
    m = http_request(port, "GET", "/metrics").body;
    if (metric_value(m, "ladder_open_connections") >= kConns) break;
    std::this_thread::sleep_for(Ms(20));
  }
  EXPECT_GE(metric_value(m, "ladder_open_connections"), kConns);
  for (int fd : fds) ASSERT_TRUE(send_all(fd, req));
  std::vector<std::string> bufs(kConns);
  std::vector<bool> done(kConns, false);
  int n_done = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (n_done < kConns && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> pfds;
    std::vector<int> idx;
    for (int i = 0; i < kConns; ++i) {
      if (!done[static_cast<size_t>(i)]) {
        pfds.push_back({fds[static_cast<size_t>(i)], POLLIN, 0});
        idx.push_back(i);
      }
    }
    if (poll(pfds.data(), pfds.size(), 1000) <= 0) continue;
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto i = static_cast<size_t>(idx[k]);
      char c[16384];
      ssize_t n = recv(fds[i], c, sizeof c, 0);
      if (n > 0) bufs[i].append(c, static_cast<size_t>(n));
      bool complete = bufs[i].find("data: [DONE]") != std::string::npos ||
                      (bufs[i].rfind("HTTP/1.1 429", 0) == 0 && bufs[i].find("\r\n\r\n{") != std::string::npos &&
                       bufs[i].back() == '}');
      if (n <= 0 || complete) {
        done[i] = true;
        ++n_done;
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int n200 = 0, n429 = 0, bad = 0;
  for (int i = 0; i < kConns; ++i) {
    const std::string& b = bufs[static_cast<size_t>(i)];
    if (b.rfind("HTTP/1.1 200", 0) == 0 && b.find("data: [DONE]") != std::string::npos) {
      ++n200;
    } else if (b.rfind("HTTP/1.1 429", 0) == 0 && b.find("Retry-After:") != std::string::npos) {
      ++n429;
    } else {
      ++bad;
      if (bad < 3) ADD_FAILURE() << "connection " << i << ": " << b.substr(0, 300);
    }
    close(fds[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(n200 + n429, kConns);
  EXPECT_GE(n200, 32 + 900);  // the running slots and the whole queue are served
  double rss = peak_rss_mib(srv.pid());
  EXPECT_LT(rss, 1024) << "server memory must stay bounded";
  std::printf("1,000 concurrent streams: %d completed, %d deliberate 429s, %.2f s, server peak RSS %.0f MiB\n", n200,
              n429, secs, rss);
  for (int i = 0; i < 250; ++i) {
    m = http_request(port, "GET", "/metrics").body;
    if (metric_value(m, "ladder_kv_blocks_used") == 0) break;
    std::this_thread::sleep_for(Ms(20));
  }
  EXPECT_EQ(metric_value(m, "ladder_kv_blocks_used"), 0) << m;
  EXPECT_EQ(metric_value(m, "ladder_queue_depth"), 0);
}

}  // namespace
}  // namespace ladder::testing
