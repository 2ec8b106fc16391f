// JsonFields: reading an OpenAI-style request body field by field. Each
// reader checks a field's type and range and returns the 400 naming it; the
// keys read are remembered, so whatever is left can be refused by name (a
// parameter is honoured or refused, never ignored).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace ladder::server {

#define LADDER_API_TRY(expr)             \
  do {                                   \
    if (auto _err = (expr)) return _err; \
  } while (0)

// Deepest nesting of arrays and objects a body may have. The JSON library
// copies and prints values recursively, as does the code that walks them
// (schemas, chat templates), so an unbounded body of 1 MiB of '[' (half a
// million levels) would overflow a thread's stack and take the server down
// with it. Requests nest a few dozen levels at most (a tool's parameter
// schema inside tools inside the body; schemas themselves stop at 64).
inline constexpr int kMaxJsonDepth = 256;

// Parses `text` as Json::parse does (throwing its parse_error on malformed
// text), but returns false, *doc left null, as soon as an array or object
// opens more than kMaxJsonDepth levels deep: the parser itself keeps its
// stack on the heap, so the refusal comes before any recursion could.
template <class Json>
bool parse_json_within_depth(std::string_view text, Json* doc) {
  struct TooDeep {};
  try {
    *doc = Json::parse(text.begin(), text.end(), [](int depth, typename Json::parse_event_t event, Json&) {
      const bool opens =
          event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
      if (opens && depth >= kMaxJsonDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    *doc = Json();
    return false;
  }
  return true;
}

// What a refusal by parse_json_within_depth says of the text refused.
inline std::string nests_too_deep() {
  return "nests arrays and objects more than " + std::to_string(kMaxJsonDepth) + " levels deep";
}

// Parses a body that must be one JSON object. ordered: a request's messages
// and tools reach the chat template with their keys in the order sent, as a
// Python dict keeps them (`tojson` prints them so).
inline std::optional<ApiError> parse_body(std::string_view body, nlohmann::ordered_json* doc) {
  try {
    if (!parse_json_within_depth(body, doc)) {
      return ApiError{400, "request body " + nests_too_deep(), "invalid_request_error", "", "invalid_json",
                      0};
    }
  } catch (const nlohmann::ordered_json::exception& e) {
    // e.what() quotes the parser's position; it never echoes raw bytes back.
    return ApiError{400, std::string("request body is not valid JSON: ") + e.what(), "invalid_request_error", "",
                    "invalid_json", 0};
  }
  if (!doc->is_object()) {
    return ApiError{400, "request body must be a JSON object", "invalid_request_error", "", "invalid_json", 0};
  }
  return std::nullopt;
}

// Reads the fields of one JSON object and remembers which keys were read, so
// that whatever is left can be refused by name. Absent or null fields leave
// *out unchanged.
class Fields {
 public:
  using json = nlohmann::ordered_json;
  explicit Fields(const json& doc) : doc_(doc) {}

  const json* find(const char* key) {
    read_.insert(key);
    auto it = doc_.find(key);
    return it == doc_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<ApiError> number(const char* key, double lo, double hi, float* out) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) return invalid_field(key, std::string("'") + key + "' must be a number");
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
      return invalid_field(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "], got " + v->dump());
    }
    *out = static_cast<float>(d);
    return std::nullopt;
  }

  std::optional<ApiError> integer(const char* key, int64_t lo, int64_t hi, int64_t* out) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) return invalid_field(key, std::string("'") + key + "' must be an integer");
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_field(key, std::string("'") + key + "' is out of range, got " + v->dump());
    }
    const int64_t i = v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
    if (i < lo || i > hi) {
      return invalid_field(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "], got " + std::to_string(i));
    }
    *out = i;
    return std::nullopt;
  }

  std::optional<ApiError> boolean(const char* key, bool* out) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) return invalid_field(key, std::string("'") + key + "' must be a boolean");
    *out = v->get<bool>();
    return std::nullopt;
  }

  // A boolean whose absence means something of its own.
  std::optional<ApiError> optional_boolean(const char* key, std::optional<bool>* out) {
    if (find(key) == nullptr) return std::nullopt;
    bool v = false;
    LADDER_API_TRY(boolean(key, &v));
    *out = v;
    return std::nullopt;
  }

  std::optional<ApiError> string(const char* key, std::string* out) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) return invalid_field(key, std::string("'") + key + "' must be a string");
    *out = v->get<std::string>();
    return std::nullopt;
  }

  // A key that is accepted only with its neutral value (false, null, a
  // listed string): anything else names what Ladder does not do.
  std::optional<ApiError> only_false(const char* key, const std::string& why) {
    bool v = false;
    LADDER_API_TRY(boolean(key, &v));
    if (v) return invalid_field(key, why);
    return std::nullopt;
  }
  std::optional<ApiError> refused(const char* key, const std::string& why) {
    if (find(key) != nullptr) return invalid_field(key, why);
    return std::nullopt;
  }

  // The first key of the object that nothing read.
  std::optional<ApiError> leftovers(const std::string& where) const {
    for (auto it = doc_.begin(); it != doc_.end(); ++it) {
      if (read_.count(it.key()) == 0) {
        const std::string name = where.empty() ? it.key() : where + "." + it.key();
        return ApiError{400, "unsupported parameter '" + name + "': Ladder does not honour it", "invalid_request_error",
                        name, "unsupported_parameter", 0};
      }
    }
    return std::nullopt;
  }

 private:
  const json& doc_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace ladder::server
