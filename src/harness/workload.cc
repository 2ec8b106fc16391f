#include "harness/workload.h"

#include <cctype>


#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ladder::harness {

using nlohmann::json;

namespace {

Status expect_number(const json& j, const char* key) {
  if (j.contains(key) && !j[key].is_number()) return invalid_argument(std::string("'") + key + "' must be a number");
  return Status::ok();
}

Status expect_string(const json& j, const char* key) {
  if (j.contains(key) && !j[key].is_string()) return invalid_argument(std::string("'") + key + "' must be a string");
  return Status::ok();
}

Result<std::optional<double>> optional_positive(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<double>{};
  if (!j[key].is_number()) return invalid_argument(std::string("slo.") + key + " must be a number");
  double v = j[key].get<double>();
  if (!(v > 0)) return invalid_argument(std::string("slo.") + key + " must be > 0");
  return std::optional<double>{v};
}

}  // namespace

json request_to_json(const WorkloadRequest& r) {
  json j;
  j["t"] = r.t;
  j["tenant"] = r.tenant;
  if (!r.session.empty()) {
    j["session"] = r.session;
    j["turn"] = r.turn;
    if (r.think_s > 0) j["think_s"] = r.think_s;
  }
  if (!r.messages.empty()) {
    json msgs = json::array();
    for (const auto& m : r.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    j["messages"] = std::move(msgs);
  } else if (r.input_tokens >= 0) {
    j["input_tokens"] = r.input_tokens;
    if (!r.hash_ids.empty()) j["hash_ids"] = r.hash_ids;
  } else {
    j["prompt"] = r.prompt;
  }
  j["max_tokens"] = r.max_tokens;
  if (!r.slo.empty()) {
    json slo = json::object();
    if (r.slo.ttft_ms) slo["ttft_ms"] = *r.slo.ttft_ms;
    if (r.slo.tpot_ms) slo["tpot_ms"] = *r.slo.tpot_ms;
    if (r.slo.e2e_ms) slo["e2e_ms"] = *r.slo.e2e_ms;
    j["slo"] = std::move(slo);
  }
  j["slice"] = r.slice;
  if (r.seed) j["seed"] = *r.seed;
  if (r.expect) {
    j["expect"] = {{r.expect->kind == Expectation::Kind::kExact ? "exact" : "substring", r.expect->text}};
  }
  return j;
}

Result<WorkloadRequest> request_from_json(const json& j) {
  if (!j.is_object()) return invalid_argument("a request must be a JSON object");
  for (const char* k : {"t", "turn", "think_s", "max_tokens", "input_tokens"}) LADDER_RETURN_IF_ERROR(expect_number(j, k));
  for (const char* k : {"tenant", "session", "prompt", "slice"}) LADDER_RETURN_IF_ERROR(expect_string(j, k));
  WorkloadRequest r;
  r.t = j.value("t", 0.0);
  if (!(r.t >= 0)) return invalid_argument("'t' must be >= 0");
  r.tenant = j.value("tenant", std::string("default"));
  r.session = j.value("session", std::string());
  r.turn = j.value("turn", 0);
  r.think_s = j.value("think_s", 0.0);
  if (r.turn < 0 || r.think_s < 0) return invalid_argument("'turn' and 'think_s' must be >= 0");
  r.slice = j.value("slice", std::string("default"));
  r.max_tokens = j.value("max_tokens", 16);
  if (r.max_tokens < 1) return invalid_argument("'max_tokens' must be >= 1");

  int sources = int(j.contains("prompt")) + int(j.contains("messages")) + int(j.contains("input_tokens"));
  if (sources != 1) return invalid_argument("exactly one of 'prompt', 'messages', 'input_tokens' is required");
  if (j.contains("prompt")) r.prompt = j["prompt"].get<std::string>();
  if (j.contains("messages")) {
    const json& msgs = j["messages"];
    if (!msgs.is_array() || msgs.empty()) return invalid_argument("'messages' must be a non-empty array");
    for (const auto& m : msgs) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string()) {
        return invalid_argument("each message needs string 'role' and 'content'");
      }
      r.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
  }
  if (j.contains("input_tokens")) {
    r.input_tokens = j["input_tokens"].get<int64_t>();
    if (r.input_tokens < 1) return invalid_argument("'input_tokens' must be >= 1");
    if (j.contains("hash_ids")) {
      if (!j["hash_ids"].is_array()) return invalid_argument("'hash_ids' must be an array of integers");
      for (const auto& h : j["hash_ids"]) {
        if (!h.is_number_integer()) return invalid_argument("'hash_ids' must be an array of integers");
        r.hash_ids.push_back(h.get<int64_t>());
      }
    }
  }
  if (j.contains("slo")) {
    const json& s = j["slo"];
    if (!s.is_object()) return invalid_argument("'slo' must be an object");
    LADDER_ASSIGN_OR_RETURN(r.slo.ttft_ms, optional_positive(s, "ttft_ms"));
    LADDER_ASSIGN_OR_RETURN(r.slo.tpot_ms, optional_positive(s, "tpot_ms"));
    LADDER_ASSIGN_OR_RETURN(r.slo.e2e_ms, optional_positive(s, "e2e_ms"));
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned()) return invalid_argument("'seed' must be an integer >= 0");
    r.seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("expect")) {
    const json& e = j["expect"];
    Expectation ex;
    if (e.is_object() && e.size() == 1 && e.contains("exact") && e["exact"].is_string()) {
      ex.kind = Expectation::Kind::kExact;
      ex.text = e["exact"].get<std::string>();
    } else if (e.is_object() && e.size() == 1 && e.contains("substring") && e["substring"].is_string()) {
      ex.kind = Expectation::Kind::kSubstring;
      ex.text = e["substring"].get<std::string>();
    } else {
      return invalid_argument("'expect' must be {\"exact\": TEXT} or {\"substring\": TEXT}");
    }
    r.expect = std::move(ex);
  }
  return r;
}

Result<Workload> parse_native_workload(const std::string& text, bool strict) {
  Workload w;
  w.format = "ladder";
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    Status st;
    if (j.is_discarded()) {
      st = invalid_argument("not valid JSON");
    } else {
      auto r = request_from_json(j);
      if (r.is_ok()) {
        r->source_line = line_no;
        w.requests.push_back(std::move(r).value());
        continue;
      }
      st = r.status();
    }
    if (strict) return invalid_argument("line " + std::to_string(line_no) + ": " + st.message());
    w.skipped.push_back({line_no, st.message()});
  }
  return w;
}

std::string write_native_workload(const std::vector<WorkloadRequest>& requests) {
  std::string out;
  for (const auto& r : requests) {
    out += request_to_json(r).dump();
    out += '\n';
  }
  return out;
}


bool is_header_slice_name(std::string_view slice) {
  if (slice.empty() || slice.size() > 64) return false;
  for (char c : slice) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

}  // namespace ladder::harness
