// ApiError: an OpenAI-style error — the HTTP status, and the body
// {"error":{"message","type","param","code"}} — plus Retry-After for 429s.
#pragma once

#include <string>

#include "common/status.h"

namespace ladder::server {

struct HttpResponse;

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type = "server_error";  // invalid_request_error, authentication_error, ...
  std::string param;                  // the offending field; empty = null
  std::string code;                   // machine-readable reason; empty = null
  int retry_after_s = 0;              // > 0: sent as Retry-After

  // The JSON body, one line.
  std::string body() const;
};

// 400 invalid_request_error naming `param`.
ApiError invalid_field(std::string param, std::string message);
// Maps a Status from a lower layer: kInvalidArgument -> 400, kOutOfRange ->
// 400 context_length_exceeded, kResourceExhausted -> 429, kFailedPrecondition
// -> 503, kNotFound -> 404, kUnauthenticated -> 401, anything else -> 500.
ApiError api_error_from_status(const Status& status, std::string param = "");

ApiError not_found_error(std::string message, std::string code = "not_found");
ApiError method_not_allowed(std::string message);
ApiError unauthenticated(std::string message);
ApiError payload_too_large(std::string message);
ApiError rate_limited(std::string message, std::string code, int retry_after_s);
ApiError unavailable(std::string message, std::string code);

// The HTTP response carrying an error: its status, body and Retry-After.
HttpResponse error_response(const ApiError& e);
// The HttpServer's page for requests that never reach a handler (413, 400,
// 408, 503 with Retry-After: 1).
HttpResponse http_error_page(int status, const std::string& message);
// The key of an "Authorization: Bearer KEY" header; empty when there is none.
struct HttpRequest;
std::string bearer_key(const HttpRequest& request);

}  // namespace ladder::server
