// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast parsing over
// Asio) on a small pool of io threads; thousands of keep-alive connections
// cost a socket and a buffer each, never a thread. Beast stays inside
// http_server.cc so that only one translation unit pays its compile time.
//
// A request is parsed under bounds (header bytes, body bytes, read timeout)
// and handed to the handler with a ResponseChannel. The handler answers from
// any thread, at once or later, as one response or as a chunked stream (SSE).
// While a response is pending the connection is watched, so a client that
// goes away is reported (on_disconnect) even before anything is written.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ladder::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, as sent
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::chrono::steady_clock::time_point received;  // when the whole request was read

  // The header's value, or "" when absent. `name` must be lower case.
  std::string header(const std::string& name) const;
  // target without the query string
  std::string path() const;
};

// %XX escapes of a path segment decoded ("a%2Fb" -> "a/b"); a malformed
// escape is kept as written.
std::string percent_decode(std::string_view s);

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HeaderList headers;
};

// How a response ended.
enum class Delivery {
  kDelivered,   // its last byte was handed to the socket
  kClientGone,  // the client went away (or a write failed or timed out) first
};

// The way back to one client. Thread-safe; every call is queued onto the
// connection's strand. Calls after the client went away are dropped.
class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;
  // A complete response; ends this request.
  virtual void respond(HttpResponse response) = 0;
  // Starts a chunked response (status and headers now, body in send()).
  virtual void start_stream(int status, std::string content_type, HeaderList headers) = 0;
  virtual void send(std::string data) = 0;
  // Ends a stream started with start_stream.
  virtual void finish() = 0;
  // Called once, on an io thread, when the response has ended: delivered in
  // full, or cut short because the client went away (before or during the
  // response). A client that goes away while the request is being worked on
  // is seen at once (the connection is watched), so fn is also the signal to
  // cancel that work. Set it before the work begins; when the response has
  // already ended, fn runs at once.
  virtual void on_end(std::function<void(Delivery)> fn) = 0;
  virtual bool client_gone() const = 0;
};

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<ResponseChannel>)>;
// Builds the error response for a request that never reached the handler
// (413 body too large, 400 malformed HTTP, 503 too many connections).
using HttpErrorPage = std::function<HttpResponse(int status, const std::string& message)>;

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0 = any free port
  int io_threads = 2;
  size_t max_body_bytes = size_t{1} << 20;
  size_t max_header_bytes = 16 * 1024;
  // A request (headers and body) must arrive within this; also the keep-alive
  // idle limit. Slower senders are disconnected.
  std::chrono::milliseconds read_timeout{30000};
  // A client must accept each write within this, or it is treated as gone.
  std::chrono::milliseconds write_timeout{60000};
  // Bytes queued for one slow reader before it is treated as gone.
  size_t max_pending_write_bytes = size_t{16} << 20;
  int64_t max_connections = 20000;
};

// Parses one request from `bytes` as a connection does, under the same
// bounds (body and header limits): the request, or the status and message
// the server would answer with (413 or 400). For fuzzing and tests; the
// connections parse incrementally with the same parser settings.
struct ParsedRequest {
  std::optional<HttpRequest> request;
  int error_status = 0;  // when no request: 400, 413, or 0 (the bytes end before a whole request)
  std::string error_message;
};
ParsedRequest parse_http_request(std::string_view bytes, const HttpServerConfig& limits);

class HttpServer {
 public:
  HttpServer(HttpServerConfig config, HttpHandler handler, HttpErrorPage error_page);
  ~HttpServer();  // stop() and join
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens, then starts the io threads. Errors: an unresolvable
  // host, a port in use (kIo).
  Status start();
  uint16_t port() const;

  // Calls fn (on an io thread) when SIGTERM or SIGINT arrives.
  void on_shutdown_signal(std::function<void(int signal)> fn);
  // Calls fn on an io thread every period until stop().
  void every(std::chrono::milliseconds period, std::function<void()> fn);

  // Closes the listening socket; open connections are served on.
  void stop_accepting();
  // Stops the io threads (connections are dropped). Idempotent.
  void stop();
  // Blocks until stop() was called and the io threads ended.
  void wait();

  int64_t open_connections() const;

  struct Impl;  // defined in http_server.cc, where the connections use it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ladder::server
