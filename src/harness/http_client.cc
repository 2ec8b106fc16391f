#include "harness/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>

namespace ladder::harness {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

Result<Endpoint> parse_endpoint(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) return unimplemented("https endpoints are not supported; use http://");
  if (url.rfind(scheme, 0) != 0) return invalid_argument("endpoint must start with http:// (got '" + url + "')");
  std::string rest = url.substr(scheme.size());
  Endpoint ep;
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
    ep.port = "80";
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
  return io_error(std::string(what) + " " + ep.host + ":" + ep.port + ": " + ec.message());
}

}  // namespace

Status http_stream(const Endpoint& ep, const HttpRequestSpec& spec,
                   const std::function<void(int, std::string_view)>& on_head,
                   const std::function<void(std::string_view)>& on_bytes) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_s * 1000.0));

  tcp::resolver::results_type endpoints;
  auto ec = run_op(ioc, [&](auto handler) {
    resolver.async_resolve(ep.host, ep.port, [&endpoints, handler](boost::system::error_code e, tcp::resolver::results_type r) mutable {
      endpoints = std::move(r);
      handler(e);
    });
  });
  if (ec) return net_error("resolve", ep, ec);
  stream.expires_after(timeout);
  ec = run_op(ioc, [&](auto handler) {
    stream.async_connect(endpoints, [handler](boost::system::error_code e, const tcp::endpoint&) mutable { handler(e); });
  });
  if (ec) return net_error("connect", ep, ec);
  stream.socket().set_option(tcp::no_delay(true));

  http::request<http::string_body> req{spec.method == "POST" ? http::verb::post : http::verb::get,
                                       ep.base_path + spec.path, 11};
  req.set(http::field::host, ep.host + ":" + ep.port);
  req.set(http::field::user_agent, "ladder-replay");
  req.set(http::field::accept, spec.method == "POST" ? "text/event-stream, application/json" : "*/*");
  if (!spec.api_key.empty()) req.set(http::field::authorization, "Bearer " + spec.api_key);
  if (spec.method == "POST") {
    req.set(http::field::content_type, "application/json");
    req.body() = spec.body;
  }
  req.keep_alive(false);
  req.prepare_payload();
  stream.expires_after(timeout);
  ec = run_op(ioc, [&](auto handler) {
    http::async_write(stream, req, [handler](boost::system::error_code e, size_t) mutable { handler(e); });
  });
  if (ec) return net_error("send to", ep, ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  // Not boost::none: Beast 1.74 compares a content length against the empty
  // optional and reports body_limit for every response that has one.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  stream.expires_after(timeout);
  ec = run_op(ioc, [&](auto handler) {
    http::async_read_header(stream, buffer, parser, [handler](boost::system::error_code e, size_t) mutable { handler(e); });
  });
  if (ec) return net_error("read response from", ep, ec);
  on_head(parser.get().result_int(), parser.get()[http::field::content_type]);

  std::array<char, 16384> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    stream.expires_after(timeout);
    ec = run_op(ioc, [&](auto handler) {
      http::async_read_some(stream, buffer, parser, [handler](boost::system::error_code e, size_t) mutable { handler(e); });
    });
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = chunk.size() - parser.get().body().size;
    if (got > 0) on_bytes(std::string_view(chunk.data(), got));
    if (ec == http::error::end_of_stream || ec == net::error::eof) break;  // body delimited by close
    if (ec) return net_error("read body from", ep, ec);
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return Status::ok();
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

}  // namespace ladder::harness
