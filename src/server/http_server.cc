#include "server/http_server.h"

#include <sys/socket.h>

#include <cerrno>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace ladder::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::string HttpRequest::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpRequest::path() const {
  size_t q = target.find('?');
  return q == std::string::npos ? target : target.substr(0, q);
}

std::string percent_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

// Header values from handlers must not break the framing.
std::string sanitize_header(const std::string& v) {
  std::string out;
  for (char c : v) out += (c == '\r' || c == '\n') ? ' ' : c;
  return out;
}

std::string head(int status, const std::string& content_type, const HeaderList& headers, bool keep_alive) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  h += "Server: ladder\r\n";
  if (!content_type.empty()) h += "Content-Type: " + sanitize_header(content_type) + "\r\n";
  for (const auto& [k, v] : headers) h += sanitize_header(k) + ": " + sanitize_header(v) + "\r\n";
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  return h;
}

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + data + "\r\n";
}

using RequestParser = http::request_parser<http::string_body>;

void configure(RequestParser& parser, const HttpServerConfig& config) {
  parser.body_limit(config.max_body_bytes);
  parser.header_limit(static_cast<uint32_t>(config.max_header_bytes));
}

HttpRequest to_request(http::request<http::string_body>& msg) {
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  for (const auto& field : msg) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    req.headers[name] = std::string(field.value());
  }
  req.body = std::move(msg.body());
  req.received = std::chrono::steady_clock::now();
  return req;
}

// The answer to a request that could not be parsed: (status, message).
std::pair<int, std::string> parse_error(beast::error_code ec, const HttpServerConfig& config) {
  if (ec == http::error::body_limit) {
    return {413, "request body is larger than the limit of " + std::to_string(config.max_body_bytes) + " bytes"};
  }
  if (ec == http::error::header_limit) {
    return {400, "request headers are larger than the limit of " + std::to_string(config.max_header_bytes) + " bytes"};
  }
  return {400, "malformed HTTP request: " + ec.message()};
}

}  // namespace

ParsedRequest parse_http_request(std::string_view bytes, const HttpServerConfig& limits) {
  ParsedRequest out;
  RequestParser parser;
  configure(parser, limits);
  parser.eager(true);
  beast::error_code ec;
  size_t used = 0;
  while (used < bytes.size() && !parser.is_done()) {
    const size_t n = parser.put(net::buffer(bytes.data() + used, bytes.size() - used), ec);
    if (ec == http::error::need_more) {
      ec = {};
      break;
    }
    if (ec) break;
    if (n == 0) break;
    used += n;
  }
  if (!ec && !parser.is_done() && used == bytes.size() && parser.need_eof()) parser.put_eof(ec);
  if (ec) {
    auto [status, message] = parse_error(ec, limits);
    out.error_status = status;
    out.error_message = std::move(message);
    return out;
  }
  if (parser.is_done()) out.request = to_request(parser.get());
  return out;
}

class Session;

struct HttpServer::Impl {
  HttpServerConfig config;
  HttpHandler handler;
  HttpErrorPage error_page;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  net::signal_set signals{ioc};
  std::vector<std::unique_ptr<net::steady_timer>> timers;
  std::atomic<int64_t> connections{0};
  std::atomic<bool> stopped{false};
  std::function<void(int)> signal_fn;
  std::mutex wait_mu;
  bool joined = false;
  uint16_t port = 0;

  void accept();
  void arm_signals();
  void arm_timer(net::steady_timer* timer, std::chrono::milliseconds period,
                 std::shared_ptr<std::function<void()>> fn);
};

// One connection. Every member is touched only on the connection's strand
// (handlers of its socket, and what ResponseChannel posts), except closed_.
//
// Write path: bytes queue in out_; one async_write at a time sends
// out_.front(), whose storage must stay alive until that write completes,
// even when the connection closes meanwhile. So close() never frees queued
// bytes under a write in flight: the completion handler does, and it is the
// only place that pops out_.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server) : stream_(std::move(socket)), server_(server) {
    server_.connections.fetch_add(1);
  }
  ~Session() { server_.connections.fetch_sub(1); }

  void start() {
    if (server_.connections.load() > server_.config.max_connections) {
      keep_alive_ = false;
      write_full(server_.error_page(503, "too many open connections; retry later"));
      return;
    }
    read_request();
  }

  // --- called on the strand (ResponseChannel posts here) ---
  void write_full(HttpResponse r) {
    if (closed_ || response_started_) return;
    response_started_ = true;
    r.headers.emplace_back("Content-Length", std::to_string(r.body.size()));
    std::string bytes = head(r.status, r.content_type, r.headers, keep_alive_) + "\r\n" + r.body;
    end_response(std::move(bytes));
  }
  void write_head(int status, const std::string& content_type, HeaderList headers) {
    if (closed_ || response_started_) return;
    response_started_ = true;
    headers.emplace_back("Transfer-Encoding", "chunked");
    headers.emplace_back("Cache-Control", "no-cache");
    enqueue(head(status, content_type, headers, keep_alive_) + "\r\n");
  }
  void write_chunk(const std::string& data) {
    if (closed_ || !response_started_ || response_done_ || data.empty()) return;
    enqueue(chunk(data));
  }
  void write_last() {
    if (closed_ || !response_started_ || response_done_) return;
    end_response("0\r\n\r\n");
  }
  void set_on_end(uint64_t seq, std::function<void(Delivery)> fn) {
    if (seq != request_seq_ || ended_) {
      // That request's response already ended (or the connection moved on).
      if (fn) fn(last_delivery_);
      return;
    }
    on_end_ = std::move(fn);
  }
  bool closed() const { return closed_.load(); }
  uint64_t request_seq() const { return request_seq_; }
  net::any_io_executor executor() { return stream_.get_executor(); }

 private:
  void read_request() {
    ++request_seq_;
    parser_.emplace();
    configure(*parser_, server_.config);
    response_started_ = false;
    response_done_ = false;
    ended_ = false;
    stream_.expires_after(server_.config.read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t /*bytes*/) {
    if (closed_) return;
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted) {
      return close();
    }
    if (ec == beast::error::timeout) {
      // tcp_stream has already closed the socket: a sender that stalls
      // mid-request (or an idle keep-alive client) is simply cut off.
      return close();
    }
    if (ec) {
      keep_alive_ = false;
      auto [status, message] = parse_error(ec, server_.config);
      write_full(server_.error_page(status, message));
      return;
    }
    stream_.expires_never();
    keep_alive_ = parser_->get().keep_alive();
    HttpRequest req = to_request(parser_->get());
    watch_disconnect();
    server_.handler(std::move(req), make_channel());
  }

  std::shared_ptr<ResponseChannel> make_channel();

  // While a response is pending, a readable socket with nothing to read
  // means the peer closed it: that is how a client gone mid-request is seen.
  void watch_disconnect() {
    if (closed_ || response_done_) return;
    // A wait left over from an earlier request may fire while the next one is
    // being read: the request number tells it apart.
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), seq = request_seq_](beast::error_code ec) {
      if (self->closed_ || self->response_done_ || seq != self->request_seq_) return;
      if (ec) return self->close();
      beast::error_code aec;
      size_t n = self->stream_.socket().available(aec);
      if (aec) return self->close();
      if (n == 0) {
        // The reactor may report a socket readable whose bytes the request
        // read already consumed; only a zero-byte peek proves the peer closed.
        char byte;
        const ssize_t r = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_disconnect();
        if (r <= 0) return self->close();
      }
      // Pipelined bytes of the next request: leave them for the next read.
    });
  }

  void enqueue(std::string bytes) {
    if (closed_) return;
    pending_bytes_ += bytes.size();
    // A reader too slow for the bound is treated as gone.
    if (pending_bytes_ > server_.config.max_pending_write_bytes) return close();
    out_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  void end_response(std::string bytes) {
    response_done_ = true;
    enqueue(std::move(bytes));
  }

  void write_next() {
    if (closed_) return;
    if (out_.empty()) {
      if (response_done_) {
        end(Delivery::kDelivered);
        if (!keep_alive_) return shutdown_send();
        read_request();
      }
      return;
    }
    writing_ = true;
    stream_.expires_after(server_.config.write_timeout);
    net::async_write(stream_, net::buffer(out_.front()),
                     [self = shared_from_this()](beast::error_code ec, size_t /*n*/) {
                       self->writing_ = false;
                       self->pending_bytes_ -= self->out_.front().size();
                       self->out_.pop_front();
                       if (self->closed_) {
                         self->out_.clear();
                         self->pending_bytes_ = 0;
                         return;
                       }
                       self->stream_.expires_never();
                       if (ec) return self->close();
                       self->write_next();
                     });
  }

  // The current request's response ended: tell whoever watches it, once.
  void end(Delivery how) {
    if (ended_) return;
    ended_ = true;
    last_delivery_ = how;
    if (auto fn = std::move(on_end_)) {
      on_end_ = nullptr;
      fn(how);
    }
  }

  void shutdown_send() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    close();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    stream_.socket().close(ec);
    // A write in flight still reads out_.front(): its handler frees the queue.
    if (!writing_) {
      out_.clear();
      pending_bytes_ = 0;
    }
    end(Delivery::kClientGone);
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  std::deque<std::string> out_;
  size_t pending_bytes_ = 0;
  bool writing_ = false;
  uint64_t request_seq_ = 0;
  bool keep_alive_ = true;
  bool response_started_ = false;
  bool response_done_ = false;  // the response's last bytes are queued
  bool ended_ = false;          // on_end_ has been called for request_seq_
  Delivery last_delivery_ = Delivery::kClientGone;
  std::atomic<bool> closed_{false};
  std::function<void(Delivery)> on_end_;
};

namespace {

class Channel : public ResponseChannel {
 public:
  explicit Channel(std::shared_ptr<Session> s) : s_(std::move(s)), seq_(s_->request_seq()) {}
  void respond(HttpResponse r) override {
    post([r = std::move(r)](Session& s) mutable { s.write_full(std::move(r)); });
  }
  void start_stream(int status, std::string content_type, HeaderList headers) override {
    post([status, ct = std::move(content_type), h = std::move(headers)](Session& s) mutable {
      s.write_head(status, ct, std::move(h));
    });
  }
  void send(std::string data) override {
    post([d = std::move(data)](Session& s) { s.write_chunk(d); });
  }
  void finish() override {
    post([](Session& s) { s.write_last(); });
  }
  void on_end(std::function<void(Delivery)> fn) override {
    net::post(s_->executor(), [s = s_, seq = seq_, fn = std::move(fn)]() mutable { s->set_on_end(seq, std::move(fn)); });
  }
  bool client_gone() const override { return s_->closed(); }

 private:
  // Runs op on the strand if the connection is still on this channel's
  // request (a keep-alive connection moves on once a response ended).
  template <typename Op>
  void post(Op op) {
    net::post(s_->executor(), [s = s_, seq = seq_, op = std::move(op)]() mutable {
      if (s->request_seq() == seq) op(*s);
    });
  }

  std::shared_ptr<Session> s_;
  uint64_t seq_;  // the request this channel answers
};

}  // namespace

std::shared_ptr<ResponseChannel> Session::make_channel() { return std::make_shared<Channel>(shared_from_this()); }

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      std::make_shared<Session>(std::move(socket), *this)->start();
    } else {
      spdlog::warn("accept failed: {}", ec.message());
    }
    accept();
  });
}

HttpServer::HttpServer(HttpServerConfig config, HttpHandler handler, HttpErrorPage error_page)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->handler = std::move(handler);
  impl_->error_page = std::move(error_page);
}

HttpServer::~HttpServer() {
  stop();
  wait();
}

Status HttpServer::start() {
  Impl& s = *impl_;
  beast::error_code ec;
  auto address = net::ip::make_address(s.config.host, ec);
  if (ec) return invalid_argument("cannot use host '" + s.config.host + "': " + ec.message());
  tcp::endpoint endpoint(address, s.config.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return io_error("cannot listen on " + s.config.host + ":" + std::to_string(s.config.port) + ": " + ec.message());
  }
  s.port = s.acceptor.local_endpoint().port();
  s.work.emplace(s.ioc.get_executor());
  s.accept();
  int n = std::max(1, s.config.io_threads);
  for (int i = 0; i < n; ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
  return Status::ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::on_shutdown_signal(std::function<void(int)> fn) {
  Impl& s = *impl_;
  s.signal_fn = std::move(fn);
  s.signals.add(SIGTERM);
  s.signals.add(SIGINT);
  s.arm_signals();
}

void HttpServer::Impl::arm_signals() {
  // Re-armed after each signal so that a second SIGTERM is seen too.
  signals.async_wait([this](beast::error_code ec, int sig) {
    if (ec) return;
    if (signal_fn) signal_fn(sig);
    arm_signals();
  });
}

void HttpServer::every(std::chrono::milliseconds period, std::function<void()> fn) {
  Impl& s = *impl_;
  s.timers.push_back(std::make_unique<net::steady_timer>(s.ioc));
  s.arm_timer(s.timers.back().get(), period, std::make_shared<std::function<void()>>(std::move(fn)));
}

void HttpServer::Impl::arm_timer(net::steady_timer* timer, std::chrono::milliseconds period,
                                 std::shared_ptr<std::function<void()>> fn) {
  timer->expires_after(period);
  timer->async_wait([this, timer, period, fn](beast::error_code ec) {
    if (ec || stopped.load()) return;
    (*fn)();
    arm_timer(timer, period, fn);
  });
}

void HttpServer::stop_accepting() {
  Impl& s = *impl_;
  net::post(s.ioc, [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
  });
}

void HttpServer::stop() {
  Impl& s = *impl_;
  if (s.stopped.exchange(true)) return;
  s.work.reset();
  s.ioc.stop();
}

void HttpServer::wait() {
  Impl& s = *impl_;
  std::lock_guard lock(s.wait_mu);
  if (s.joined) return;
  for (auto& t : s.threads) {
    if (t.joinable()) t.join();
  }
  s.joined = true;
  if (s.signal_fn) {
    // The process is on its way out. Releasing the signal set restores the
    // default action, under which a repeated SIGTERM would turn a clean exit
    // into death by signal; it has nothing left to ask for, so it is ignored.
    beast::error_code ec;
    s.signals.clear(ec);
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
  }
}

int64_t HttpServer::open_connections() const { return impl_->connections.load(); }

}  // namespace ladder::server
