// Status and Result<T>: how bad input is reported (STYLE.md "errors in two
// kinds"). A Status carries a code that the server maps to an HTTP status and
// a message that names what was wrong and, where it helps, what to do next.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/check.h"

namespace ladder {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // malformed input: a bad file, a bad request field
  kNotFound,            // a file, model or route that does not exist
  kOutOfRange,          // a bound exceeded: context length, body size
  kResourceExhausted,   // no capacity now: queue full, deadline infeasible
  kFailedPrecondition,  // the system is not in a state to do this (draining)
  kUnimplemented,       // a construct or type Ladder does not support
  kUnauthenticated,
  kCancelled,
  kInternal,
  kIo,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>"
  std::string to_string() const;

  // Optional detail for the layer that answers a client: a machine-readable
  // reason ("queue_full", "context_length_exceeded"), the request field at
  // fault, and when to retry (seconds; 0 = not said).
  const std::string& reason() const { return reason_; }
  const std::string& param() const { return param_; }
  int retry_after_s() const { return retry_after_s_; }
  Status with_reason(std::string reason) && {
    reason_ = std::move(reason);
    return std::move(*this);
  }
  Status with_param(std::string param) && {
    param_ = std::move(param);
    return std::move(*this);
  }
  Status with_retry_after(int seconds) && {
    retry_after_s_ = seconds;
    return std::move(*this);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string reason_;
  std::string param_;
  int retry_after_s_ = 0;
};

inline Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
inline Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status out_of_range(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
inline Status unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
inline Status resource_exhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
inline Status failed_precondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
inline Status io_error(std::string msg) { return {StatusCode::kIo, std::move(msg)}; }

// A value or the Status saying why there is none (std::expected-style).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    LADDER_CHECK(!std::get<Status>(v_).is_ok(), "Result built from an OK status carries no value");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & {
    LADDER_CHECK(is_ok(), "value() on an error Result: " + std::get<Status>(v_).to_string());
    return std::get<T>(v_);
  }
  const T& value() const& {
    LADDER_CHECK(is_ok(), "value() on an error Result: " + std::get<Status>(v_).to_string());
    return std::get<T>(v_);
  }
  T&& value() && {
    LADDER_CHECK(is_ok(), "value() on an error Result: " + std::get<Status>(v_).to_string());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ladder

// Propagate a non-OK Status / Result from the enclosing function.
#define LADDER_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::ladder::Status _st = (expr);                \
    if (!_st.is_ok()) return _st;                 \
  } while (0)

#define LADDER_CONCAT_INNER(a, b) a##b
#define LADDER_CONCAT(a, b) LADDER_CONCAT_INNER(a, b)
// LADDER_ASSIGN_OR_RETURN(auto x, make_x()); declares x or returns the error.
#define LADDER_ASSIGN_OR_RETURN(decl, expr)                                  \
  auto LADDER_CONCAT(_res_, __LINE__) = (expr);                              \
  if (!LADDER_CONCAT(_res_, __LINE__).is_ok())                               \
    return LADDER_CONCAT(_res_, __LINE__).status();                          \
  decl = std::move(LADDER_CONCAT(_res_, __LINE__)).value()
