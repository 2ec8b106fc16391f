#include "net/http_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

namespace ladder::net {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

Result<Endpoint> parse_endpoint(const std::string& url) {
  Endpoint ep;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    ep.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return invalid_argument("endpoint must start with http:// or https:// (got '" + url + "')");
  }
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  ep.base_path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  if (ep.base_path.size() >= 3 && ep.base_path.compare(ep.base_path.size() - 3, 3, "/v1") == 0) {
    ep.base_path.resize(ep.base_path.size() - 3);
  }
  if (hostport.empty()) return invalid_argument("endpoint has no host: '" + url + "'");
  size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    ep.host = hostport.substr(0, colon);
    ep.port = hostport.substr(colon + 1);
  } else {
    ep.host = hostport;
    ep.port = ep.tls ? "443" : "80";
  }
  if (ep.host.empty() || ep.port.empty() || ep.port.find_first_not_of("0123456789") != std::string::npos) {
    return invalid_argument("endpoint host/port malformed: '" + url + "'");
  }
  return ep;
}

namespace {

// Runs one asynchronous operation to completion on ioc, so that the
// stream's expiry (a timeout) applies to what reads as synchronous code.
template <typename Start>
boost::system::error_code run_op(net::io_context& ioc, Start&& start) {
  boost::system::error_code result = net::error::would_block;
  start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

Status net_error(const char* what, const Endpoint& ep, const boost::system::error_code& ec) {
  std::string detail = ec.message();
  if (ec.category() == net::error::get_ssl_category()) {
    // OpenSSL's own words name the cause (e.g. "certificate verify failed").
    char buf[256];
    ERR_error_string_n(static_cast<unsigned long>(ec.value()), buf, sizeof(buf));
    detail = buf;
  }
  return io_error(std::string(what) + " " + ep.host + ":" + ep.port + ": " + detail);
}

// One TLS context per trust setting, shared by every connection (loading
// the system CA store per request would cost milliseconds of CPU each).
Result<std::shared_ptr<ssl::context>> tls_context(const TlsOptions& o) {
  static std::mutex mu;
  static std::map<std::pair<bool, std::string>, std::shared_ptr<ssl::context>> contexts;
  std::lock_guard lock(mu);
  auto key = std::make_pair(o.insecure, o.ca_file);
  if (auto it = contexts.find(key); it != contexts.end()) return it->second;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  if (o.insecure) {
    ctx->set_verify_mode(ssl::verify_none);
  } else {
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (!ec) ctx->set_default_verify_paths(ec);
    if (ec) return io_error("cannot load the system CA store: " + ec.message());
    if (!o.ca_file.empty()) {
      ctx->load_verify_file(o.ca_file, ec);
      if (ec) return io_error("cannot load CA file " + o.ca_file + ": " + ec.message());
    }
  }
  contexts[key] = ctx;
  return ctx;
}

template <typename Stream>
beast::tcp_stream& tcp_layer(Stream& s) {
  if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
    return s;
  } else {
    return beast::get_lowest_layer(s);
  }
}

// Request -> response on a connected (and, for TLS, handshaken) stream.
template <typename Stream>
Status exchange(net::io_context& ioc, Stream& stream, const Endpoint& ep, const HttpRequestSpec& spec,
                std::chrono::milliseconds timeout, const std::function<void(int, std::string_view)>& on_head,
                const std::function<void(std::string_view)>& on_bytes) {
  http::request<http::string_body> req{spec.method == "POST" ? http::verb::post : http::verb::get,
                                       ep.base_path + spec.path, 11};
  req.set(http::field::host, ep.host + ":" + ep.port);
  req.set(http::field::user_agent, "ladder-replay");
  req.set(http::field::accept, spec.method == "POST" ? "text/event-stream, application/json" : "*/*");
  if (!spec.api_key.empty()) req.set(http::field::authorization, "Bearer " + spec.api_key);
  for (const auto& [name, value] : spec.headers) req.set(name, value);
  if (spec.method == "POST") {
    req.set(http::field::content_type, "application/json");
    req.body() = spec.body;
  }
  req.keep_alive(false);
  req.prepare_payload();
  tcp_layer(stream).expires_after(timeout);
  auto ec = run_op(ioc, [&](auto handler) {
    http::async_write(stream, req, [handler](boost::system::error_code e, size_t) mutable { handler(e); });
  });
  if (ec) return net_error("send to", ep, ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  // Not boost::none: Beast 1.74 compares a content length against the empty
  // optional and reports body_limit for every response that has one.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  tcp_layer(stream).expires_after(timeout);
  ec = run_op(ioc, [&](auto handler) {
    http::async_read_header(stream, buffer, parser, [handler](boost::system::error_code e, size_t) mutable { handler(e); });
  });
  if (ec) return net_error("read response from", ep, ec);
  on_head(parser.get().result_int(), parser.get()[http::field::content_type]);

  std::array<char, 16384> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    tcp_layer(stream).expires_after(timeout);
    ec = run_op(ioc, [&](auto handler) {
      http::async_read_some(stream, buffer, parser, [handler](boost::system::error_code e, size_t) mutable { handler(e); });
    });
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = chunk.size() - parser.get().body().size;
    if (got > 0) on_bytes(std::string_view(chunk.data(), got));
    if (spec.stop && spec.stop()) return Status(StatusCode::kCancelled, "the request was abandoned");
    // A body delimited by the connection's close (over TLS, a close without
    // close_notify reads as a truncated stream).
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == ssl::error::stream_truncated) break;
    if (ec) return net_error("read body from", ep, ec);
  }
  beast::error_code ignored;
  tcp_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  return Status::ok();
}

}  // namespace

Status http_stream(const Endpoint& ep, const HttpRequestSpec& spec,
                   const std::function<void(int, std::string_view)>& on_head,
                   const std::function<void(std::string_view)>& on_bytes) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_s * 1000.0));

  tcp::resolver::results_type endpoints;
  auto ec = run_op(ioc, [&](auto handler) {
    resolver.async_resolve(ep.host, ep.port, [&endpoints, handler](boost::system::error_code e, tcp::resolver::results_type r) mutable {
      endpoints = std::move(r);
      handler(e);
    });
  });
  if (ec) return net_error("resolve", ep, ec);
  auto connect = [&](beast::tcp_stream& tcp_stream) {
    tcp_stream.expires_after(timeout);
    auto e = run_op(ioc, [&](auto handler) {
      tcp_stream.async_connect(endpoints, [handler](boost::system::error_code err, const tcp::endpoint&) mutable { handler(err); });
    });
    if (!e) tcp_stream.socket().set_option(tcp::no_delay(true));
    return e;
  };

  if (!ep.tls) {
    beast::tcp_stream stream(ioc);
    if (ec = connect(stream); ec) return net_error("connect", ep, ec);
    return exchange(ioc, stream, ep, spec, timeout, on_head, on_bytes);
  }
  LADDER_ASSIGN_OR_RETURN(std::shared_ptr<ssl::context> ctx, tls_context(ep.tls_options));
  beast::ssl_stream<beast::tcp_stream> stream(ioc, *ctx);
  if (ec = connect(beast::get_lowest_layer(stream)); ec) return net_error("connect", ep, ec);
  boost::system::error_code addr_ec;
  net::ip::make_address(ep.host, addr_ec);
  // SNI names a host, never an address (RFC 6066).
  if (addr_ec && !SSL_set_tlsext_host_name(stream.native_handle(), ep.host.c_str())) {
    return io_error("TLS: cannot set the server name " + ep.host);
  }
  if (!ep.tls_options.insecure) stream.set_verify_callback(ssl::host_name_verification(ep.host));
  beast::get_lowest_layer(stream).expires_after(timeout);
  ec = run_op(ioc, [&](auto handler) {
    stream.async_handshake(ssl::stream_base::client, [handler](boost::system::error_code e) mutable { handler(e); });
  });
  if (ec) {
    return net_error(ep.tls_options.insecure ? "TLS handshake with"
                                             : "TLS handshake (certificate checked; --insecure skips the check) with",
                     ep, ec);
  }
  return exchange(ioc, stream, ep, spec, timeout, on_head, on_bytes);
}

Result<HttpResponse> http_fetch(const Endpoint& ep, const HttpRequestSpec& spec) {
  HttpResponse resp;
  LADDER_RETURN_IF_ERROR(http_stream(
      ep, spec,
      [&](int status, std::string_view ct) {
        resp.status = status;
        resp.content_type = std::string(ct);
      },
      [&](std::string_view bytes) { resp.body.append(bytes); }));
  return resp;
}

}  // namespace ladder::net
