#include "ladder/ledger.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "common/file_io.h"
#include "ladder/gate.h"
#include "ladder/policy.h"

namespace ladder::climb {

using nlohmann::json;

namespace {

Result<std::string> string_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string())
    return invalid_argument(fmt::format("{}: '{}' must be a string", where, key));
  return j[key].get<std::string>();
}

Result<std::vector<std::string>> args_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_array())
    return invalid_argument(fmt::format("{}: '{}' must be an array", where, key));
  std::vector<std::string> out;
  for (const auto& a : j[key]) {
    if (!a.is_string()) return invalid_argument(fmt::format("{}: '{}' must hold strings", where, key));
    out.push_back(a.get<std::string>());
  }
  return out;
}

std::string join_args(const std::vector<std::string>& args) {
  return args.empty() ? "(defaults)" : fmt::format("{}", fmt::join(args, " "));
}

// The lines of a JSONL file whose "kind" is `kind`, with their line numbers.
Result<std::vector<std::pair<int, json>>> lines_of_kind(const std::string& path, const char* kind) {
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::vector<std::pair<int, json>> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == kind) out.emplace_back(n, std::move(j));
  }
  return out;
}

}  // namespace

json to_json(const ServedIdentity& id) {
  return {{"model_digest", id.model_digest},
          {"tokenizer_digest", id.tokenizer_digest},
          {"engine_revision", id.engine_revision}};
}

Result<ServedIdentity> identity_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return invalid_argument(where + " must be an object");
  ServedIdentity id;
  LADDER_ASSIGN_OR_RETURN(id.model_digest, string_field(j, "model_digest", where));
  LADDER_ASSIGN_OR_RETURN(id.tokenizer_digest, string_field(j, "tokenizer_digest", where));
  LADDER_ASSIGN_OR_RETURN(id.engine_revision, string_field(j, "engine_revision", where));
  return id;
}

Status append_ledger_entry(const std::string& path, const json& entry) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (!out) return io_error("cannot open the ledger " + path + " for appending");
  out << entry.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  out.flush();
  if (!out) return io_error("cannot write the ledger " + path);
  return Status::ok();
}

Result<std::vector<LedgerEntry>> load_ledger(const std::string& path) {
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::vector<LedgerEntry> entries;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{} line {}", path, n);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument(where + ": not a JSON object");
    // load_calibrations and load_rollbacks read those.
    if (j.value("kind", "") == kCalibrationKind || j.value("kind", "") == kRollbackKind) continue;
    if (j.value("kind", "") != "ladder.ledger") {
      return invalid_argument(where + ": 'kind' is not \"ladder.ledger\", \"" + kCalibrationKind + "\" or \"" +
                              kRollbackKind + "\"");
    }
    if (!j.contains("schema_version") || !j["schema_version"].is_number_integer()) {
      return invalid_argument(where + ": 'schema_version' must be an integer");
    }
    const int version = j["schema_version"].get<int>();
    if (version < 1 || version > kLedgerSchemaVersion) {
      return invalid_argument(fmt::format("{}: schema_version {} is not one this ladder reads (1 to {})",
                                          where, version, kLedgerSchemaVersion));
    }
    LedgerEntry e;
    e.line = n;
    LADDER_ASSIGN_OR_RETURN(e.climb_id, string_field(j, "climb_id", where));
    LADDER_ASSIGN_OR_RETURN(e.timestamp, string_field(j, "timestamp", where));
    if (!j.contains("rung") || !j["rung"].is_number_integer())
      return invalid_argument(where + ": 'rung' must be an integer");
    e.rung = j["rung"].get<int>();
    LADDER_ASSIGN_OR_RETURN(e.name, string_field(j, "name", where));
    LADDER_ASSIGN_OR_RETURN(e.decision, string_field(j, "decision", where));
    if (e.decision != "baseline" && e.decision != "promoted" && e.decision != "rejected" &&
        e.decision != "failed") {
      return invalid_argument(where + ": 'decision' is baseline, promoted, rejected or failed (got '" +
                              e.decision + "')");
    }
    LADDER_ASSIGN_OR_RETURN(e.reason, string_field(j, "reason", where));
    LADDER_ASSIGN_OR_RETURN(e.serve_args, args_field(j, "serve_args", where));
    e.topology = j.value("topology", std::string("single"));
    if (e.topology != "single" && e.topology != "disagg") {
      return invalid_argument(where + ": 'topology' is single or disagg (got '" + e.topology + "')");
    }
    LADDER_ASSIGN_OR_RETURN(e.rung1_args, args_field(j, "rung1_args", where));
    LADDER_ASSIGN_OR_RETURN(e.model, string_field(j, "model", where));
    e.model_override = j.value("model_override", false);
    // Version 1 entries come from climbs of one load, the workloads as written.
    if (version >= 2) {
      if (!j.contains("load") || !j["load"].is_number() || !(j["load"].get<double>() > 0)) {
        return invalid_argument(where + ": 'load' must be a positive number");
      }
      e.load = j["load"].get<double>();
    }
    LADDER_ASSIGN_OR_RETURN(e.identity,
                            identity_from_json(j.value("identity", json()), where + " 'identity'"));
    if (e.decision != "failed") {
      LADDER_ASSIGN_OR_RETURN(e.served,
                              identity_from_json(j.value("fingerprint", json()), where + " 'fingerprint'"));
    }
    e.json = std::move(j);
    entries.push_back(std::move(e));
  }
  return entries;
}

Result<std::vector<json>> load_calibrations(const std::string& path) {
  LADDER_ASSIGN_OR_RETURN(auto lines, lines_of_kind(path, kCalibrationKind));
  std::vector<json> out;
  for (auto& [n, j] : lines) {
    const std::string where = fmt::format("{} line {}", path, n);
    if (!j.contains("summary") || !j["summary"].is_object() || !j["summary"].value("passed", json()).is_boolean() ||
        !j.value("machine", json()).is_object() || !j.value("identity", json()).is_object()) {
      return invalid_argument(where + ": a calibration needs 'summary' (with 'passed'), 'machine' and 'identity'");
    }
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::vector<Rollback>> load_rollbacks(const std::string& path) {
  LADDER_ASSIGN_OR_RETURN(auto lines, lines_of_kind(path, kRollbackKind));
  std::vector<Rollback> out;
  for (auto& [n, j] : lines) {
    const std::string where = fmt::format("{} line {}", path, n);
    // `doc` is `j`, passed rather than captured: Clang before 16 cannot capture a structured binding.
    auto rung_of = [&where](const json& doc, const char* key, int& rung, std::string& name) -> Status {
      const json& r = doc.value(key, json());
      if (!r.is_object() || !r.value("rung", json()).is_number_integer() || !r.value("name", json()).is_string()) {
        return invalid_argument(fmt::format("{}: a rollback's '{}' needs 'rung' and 'name'", where, key));
      }
      rung = r["rung"].get<int>();
      name = r["name"].get<std::string>();
      return Status::ok();
    };
    Rollback r;
    r.line = n;
    LADDER_ASSIGN_OR_RETURN(r.climb_id, string_field(j, "climb_id", where));
    LADDER_ASSIGN_OR_RETURN(r.timestamp, string_field(j, "timestamp", where));
    LADDER_ASSIGN_OR_RETURN(r.slice, string_field(j, "slice", where));
    LADDER_ASSIGN_OR_RETURN(r.reason, string_field(j, "reason", where));
    if (!j.value("load", json()).is_number()) return invalid_argument(where + ": 'load' must be a number");
    r.load = j["load"].get<double>();
    if (j.value("schema_version", 0) < 1 || j.value("schema_version", 0) > kRollbackSchemaVersion) {
      return invalid_argument(fmt::format("{}: a rollback's 'schema_version' must be 1 to {}", where,
                                          kRollbackSchemaVersion));
    }
    LADDER_RETURN_IF_ERROR(rung_of(j, "from", r.from_rung, r.from_name));
    LADDER_RETURN_IF_ERROR(rung_of(j, "to", r.to_rung, r.to_name));
    if (r.to_rung >= r.from_rung) {
      return invalid_argument(fmt::format("{}: a rollback goes to a lower rung (from {} to {})", where, r.from_rung,
                                          r.to_rung));
    }
    r.json = std::move(j);
    out.push_back(std::move(r));
  }
  return out;
}

std::string format_rollbacks(const std::vector<Rollback>& rollbacks) {
  std::string out;
  for (const Rollback& r : rollbacks) {
    out += fmt::format("rollback {} (climb {}, load {}): rung {} '{}' -> rung {} '{}'; {}\n", r.timestamp, r.climb_id,
                       load_label(r.load), r.from_rung, r.from_name, r.to_rung, r.to_name, r.reason);
    const json& failures = r.json.value("evidence", json::object()).value("first_failures", json::array());
    for (const json& f : failures) {
      out += fmt::format("  differed: {} {}\n", f.value("request_id", std::string("?")),
                         f.value("detail", std::string()));
    }
  }
  return out;
}

std::string format_calibrations(const std::vector<json>& calibrations) {
  std::string out;
  for (const json& c : calibrations) {
    const json& m = c["machine"];
    out += fmt::format("calibration {} ({}; model {}; {} cores, {}): {}\n", c.value("climb_id", "?"),
                       c.value("timestamp", "?"), short_hash(c["identity"].value("model_digest", "?")),
                       m.value("cores", 0), m.value("cpu_model", std::string("?")), c.value("line", "?"));
  }
  return out;
}

std::string format_ledger(const std::vector<LedgerEntry>& entries) {
  if (entries.empty()) return "the ledger is empty\n";
  std::string out;
  std::string climb;
  // Per load of the climb being listed: the configuration it left serving.
  std::map<double, const LedgerEntry*> serving;
  auto close_climb = [&] {
    for (const auto& [load, e] : serving) {
      out += fmt::format("  serving after this climb{}: rung {} '{}' {}\n",
                         serving.size() > 1 ? " at load " + load_label(load) : std::string(), e->rung,
                         e->name, e->serve_args.empty() ? "(defaults)" : "(" + join_args(e->serve_args) + ")");
    }
  };
  for (const auto& e : entries) {
    if (e.climb_id != climb) {
      close_climb();
      climb = e.climb_id;
      serving.clear();
      const json& m = e.json.value("machine", json::object());
      out += fmt::format("climb {} ({}; model {}, tokenizer {}, revision {}; {} cores, {})\n", e.climb_id,
                         e.timestamp, short_hash(e.identity.model_digest),
                         short_hash(e.identity.tokenizer_digest), e.identity.engine_revision,
                         m.value("cores", 0), m.value("cpu_model", std::string("?")));
      out += fmt::format("  {:<4} {:<6} {:<14} {:<9} {:>9} {:>24} {:>12} {:>10}  {}\n", "rung", "load", "name",
                         "decision", "goodput", "CI", "worst slice", "core-s/vt", "args");
    }
    if (e.decision == "baseline" || e.decision == "promoted") serving[e.load] = &e;
    std::string gain = "-", ci = "-", worst = "-", cost = "-";
    const json& g = e.json.value("goodput", json());
    if (g.is_object() && g.contains("ci_low")) {
      // JSON has no infinity: an unbounded end (too few runs to bound it) is
      // written as null.
      auto end = [&](const char* key, double unbounded) {
        return g[key].is_number() ? g[key].get<double>() : unbounded;
      };
      gain = g["gain"].is_number() ? signed_percent(g["gain"].get<double>()) : "+inf%";
      if (g.value("relative", true)) {
        ci = fmt::format("[{}, {}]", signed_percent(end("ci_low", -kInf)), signed_percent(end("ci_high", kInf)));
      } else {
        ci = fmt::format("[{:+.3f}, {:+.3f}] abs", end("ci_low", -kInf), end("ci_high", kInf));
      }
    }
    const json& q = e.json.value("quality", json());
    if (q.is_array() && !q.empty()) {
      const json* w = &q[0];
      for (const auto& s : q) {
        if (s.value("fraction", 1.0) - s.value("margin", 0.0) <
            w->value("fraction", 1.0) - w->value("margin", 0.0))
          w = &s;
      }
      worst = fmt::format("{} {:.2f}", w->value("slice", std::string("?")), w->value("fraction", 0.0));
    }
    const json& c = e.json.value("cost", json());
    if (c.is_object() && c.value("core_s_per_verified_request", json()).is_number()) {
      cost = fmt::format("{:.4f}", c["core_s_per_verified_request"].get<double>());
    }
    std::string args = join_args(e.serve_args);
    if (e.topology == "disagg") args += " [prefill/decode split]";
    if (e.model_override) args += " [model " + e.model + "]";
    out += fmt::format("  {:<4} {:<6} {:<14} {:<9} {:>9} {:>24} {:>12} {:>10}  {}\n", e.rung,
                       load_label(e.load), e.name, e.decision, gain, ci, worst, cost, args);
    out += fmt::format("       {}\n", e.reason);
  }
  close_climb();
  return out;
}

}  // namespace ladder::climb
