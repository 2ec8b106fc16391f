// A small HTTP/1.1 client (Boost.Beast) for any OpenAI-compatible server:
// plain http only. Each call owns its connection and io_context, so calls on
// different threads are independent; every network wait has a timeout.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ladder::harness {

struct Endpoint {
  std::string host;
  std::string port;
  std::string base_path;  // prefix before "/v1/...", usually empty

  std::string url() const { return "http://" + host + ":" + port + base_path; }
};

// "http://HOST[:PORT][/prefix][/v1]" -> Endpoint (a trailing /v1 is dropped:
// paths are given with it).
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
  double timeout_s = 60;       // per network wait (connect, write, each read)
};

// Streams the response: on_head once the status line and headers arrived,
// on_bytes for each piece of the body as it arrives.
Status http_stream(const Endpoint& ep, const HttpRequestSpec& spec,
                   const std::function<void(int status, std::string_view content_type)>& on_head,
                   const std::function<void(std::string_view bytes)>& on_bytes);

// The whole response.
Result<HttpResponse> http_fetch(const Endpoint& ep, const HttpRequestSpec& spec);

}  // namespace ladder::harness
