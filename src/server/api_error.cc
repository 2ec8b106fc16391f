#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "server/http_server.h"

namespace ladder::server {

std::string ApiError::body() const {
  nlohmann::json err = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) err["param"] = param;
  if (!code.empty()) err["code"] = code;
  nlohmann::json doc = {{"error", std::move(err)}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError invalid_field(std::string param, std::string message) {
  return {400, std::move(message), "invalid_request_error", std::move(param), "invalid_value", 0};
}

ApiError api_error_from_status(const Status& status, std::string param) {
  ApiError e = [&]() -> ApiError {
    switch (status.code()) {
      case StatusCode::kInvalidArgument:
        return {400, status.message(), "invalid_request_error", "", "invalid_value", 0};
      case StatusCode::kOutOfRange:
        return {400, status.message(), "invalid_request_error", "", "context_length_exceeded", 0};
      case StatusCode::kResourceExhausted:
        return rate_limited(status.message(), "resource_exhausted", status.retry_after_s());
      case StatusCode::kFailedPrecondition:
        return unavailable(status.message(), "unavailable");
      case StatusCode::kNotFound:
        return not_found_error(status.message());
      case StatusCode::kUnauthenticated:
        return unauthenticated(status.message());
      case StatusCode::kUnimplemented:
        return {400, status.message(), "invalid_request_error", "", "unsupported", 0};
      default:
        return {500, status.message(), "server_error", "", "internal_error", 0};
    }
  }();
  // The lower layer's own detail wins over the defaults.
  if (!status.reason().empty()) e.code = status.reason();
  e.param = !status.param().empty() ? status.param() : std::move(param);
  if (e.http_status == 400 || e.http_status == 404 || e.http_status == 401) e.retry_after_s = 0;
  if (status.retry_after_s() > 0) e.retry_after_s = status.retry_after_s();
  return e;
}

ApiError not_found_error(std::string message, std::string code) {
  return {404, std::move(message), "invalid_request_error", "", std::move(code), 0};
}
ApiError method_not_allowed(std::string message) {
  return {405, std::move(message), "invalid_request_error", "", "method_not_allowed", 0};
}
ApiError unauthenticated(std::string message) {
  return {401, std::move(message), "authentication_error", "", "invalid_api_key", 0};
}
ApiError payload_too_large(std::string message) {
  return {413, std::move(message), "invalid_request_error", "", "payload_too_large", 0};
}
ApiError rate_limited(std::string message, std::string code, int retry_after_s) {
  return {429, std::move(message), "rate_limit_error", "", std::move(code), retry_after_s < 1 ? 1 : retry_after_s};
}
ApiError unavailable(std::string message, std::string code) {
  return {503, std::move(message), "server_error", "", std::move(code), 1};
}

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.http_status;
  r.body = e.body();
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

HttpResponse http_error_page(int status, const std::string& message) {
  ApiError e{status, message, status >= 500 ? "server_error" : "invalid_request_error", "", "", 0};
  e.code = status == 413 ? "payload_too_large" : status == 408 ? "request_timeout" : "bad_request";
  if (status == 503) e.retry_after_s = 1;
  return error_response(e);
}

std::string bearer_key(const HttpRequest& request) {
  const std::string auth = request.header("authorization");
  const std::string bearer = "Bearer ";
  if (auth.size() <= bearer.size() || auth.compare(0, bearer.size(), bearer) != 0) return {};
  return auth.substr(bearer.size());
}

}  // namespace ladder::server
