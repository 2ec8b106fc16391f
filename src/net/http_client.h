// A small HTTP/1.1 client (Boost.Beast) for any OpenAI-compatible server,
// over plain TCP or TLS (OpenSSL through Asio). Each call owns its
// connection and io_context, so calls on different threads are independent;
// every network wait has a timeout.
//
// TLS checks the server's certificate against the system CA store (plus an
// optional CA file) and its name against the endpoint's host (an IP address
// must be in the certificate's IP SANs); TlsOptions::insecure turns both
// checks off for self-signed endpoints.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ladder::net {

struct TlsOptions {
  bool insecure = false;  // accept any certificate (self-signed, wrong name)
  std::string ca_file;    // PEM CAs trusted besides the system store
};

struct Endpoint {
  bool tls = false;  // https
  std::string host;
  std::string port;
  std::string base_path;  // prefix before "/v1/...", usually empty
  TlsOptions tls_options;

  std::string url() const { return std::string(tls ? "https://" : "http://") + host + ":" + port + base_path; }
};

// "http[s]://HOST[:PORT][/prefix][/v1]" -> Endpoint (a trailing /v1 is
// dropped: paths are given with it). The default port is 80 or 443.
Result<Endpoint> parse_endpoint(const std::string& url);

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

struct HttpRequestSpec {
  std::string method = "GET";  // GET | POST
  std::string path;            // "/v1/models"
  std::string api_key;         // sent as "Authorization: Bearer KEY" when set
  std::string body;            // JSON body for POST
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
  double timeout_s = 60;       // per network wait (connect, handshake, write, each read)
  // Polled after each piece of the body; true closes the connection and ends
  // the call with kCancelled (a proxy whose own client went away).
  std::function<bool()> stop;
};

// Streams the response: on_head once the status line and headers arrived,
// on_bytes for each piece of the body as it arrives.
Status http_stream(const Endpoint& ep, const HttpRequestSpec& spec,
                   const std::function<void(int status, std::string_view content_type)>& on_head,
                   const std::function<void(std::string_view bytes)>& on_bytes);

// The whole response.
Result<HttpResponse> http_fetch(const Endpoint& ep, const HttpRequestSpec& spec);

}  // namespace ladder::net
