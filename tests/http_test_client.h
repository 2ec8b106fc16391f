// Test-side helpers for the server suites: a `ladder serve` child process on
// a free loopback port, and a raw-socket HTTP/1.1 client (so tests can also
// send what no well-behaved client would: bad framing, slow bytes, hang-ups).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ladder::testing {

struct HttpReply {
  int status = 0;  // 0: no (complete) response
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;  // de-chunked
  std::string header(const std::string& name) const;
};

// A started `ladder serve`; SIGKILLed by the destructor if still running.
// Every server a test starts takes this admin key (per-tenant /metrics).
inline constexpr const char* kTestAdminKey = "ladder-test-admin";

class ServerProcess {
 public:
  // Starts `ladder serve --port 0 --admin-key kTestAdminKey <args>` and waits
  // for its "listening on" line (the model is loaded) and /health 200; without
  // wait_ready, only until the socket is bound (the log says so).
  // `command` is the subcommand: "serve", or "route" for `ladder route`
  // (which prints the same line once its workers are ready).
  explicit ServerProcess(const std::vector<std::string>& args, bool wait_ready = true,
                         const std::string& command = "serve");
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool ok() const { return port_ > 0; }
  // Sends SIGTERM and waits up to `timeout` for the exit; returns the exit
  // code, or -1 when it did not exit (then it is killed).
  int terminate(std::chrono::milliseconds timeout = std::chrono::milliseconds(20000));
  // The server's stderr so far (its log).
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int stdout_fd_ = -1;
  std::string log_path_;
};

// Opens a loopback TCP connection; -1 on failure.
int connect_loopback(int port);
// Writes all bytes; false when the peer is gone.
bool send_all(int fd, const std::string& bytes);
// Reads one response from fd (Content-Length or chunked, or until close).
HttpReply read_reply(int fd, std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

// One request on a fresh connection (Connection: close).
HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body = "",
                       const std::map<std::string, std::string>& headers = {},
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
// Sends raw bytes on a fresh connection and reads whatever response comes.
HttpReply http_raw(int port, const std::string& bytes,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

// The JSON payloads of an SSE body's `data:` lines, in order ("[DONE]" kept).
std::vector<std::string> sse_payloads(const std::string& body);

// Value of a Prometheus sample line `name{labels} value` (exact name+labels
// text, e.g. `ladder_kv_blocks_used` or `x{tenant="a"}`); -1 when absent.
double metric_value(const std::string& metrics_text, const std::string& series);

// GET /metrics of the server at `port` with the admin key (every tenant).
std::string metrics(int port);

// Polls /metrics until `series` reads `value` (or 10 s pass); returns the
// last text. A server counts a request when it settles it, after the reply
// has gone out, so a client may read its reply before the count moves.
std::string wait_metric(int port, const std::string& series, double value);

}  // namespace ladder::testing
