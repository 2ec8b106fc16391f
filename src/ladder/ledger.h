// The ledger: one JSON line per configuration a climb tested, appended and
// never rewritten, so every decision keeps the evidence it was made on.
//
//   {"kind": "ladder.ledger", "schema_version": 1, "climb_id", "timestamp",
//    "rung": 2, "load": 1.0, "name": "chunked",   load: the offered-load multiplier it was decided at "decision": "baseline|promoted|rejected|failed",
//    "reason": "rejected: goodput +0.8% CI [-2.1%, +3.4%] at 95% includes 0",
//    "serving_after": {"rung", "name"},          what serves once this decision is made
//    "compared_with": {"rung", "name"},          the configuration it was paired with
//    "serve_args": [..], "model": "path", "model_override": bool,
//    "topology": "single|disagg", ("prefill_args", "decode_args", "route_args": disagg only),
//    "rung1_args": [..],                          the climb's rung 1, which serve --ledger must match
//    "identity": {"model_digest", "tokenizer_digest", "engine_revision"},   rung 1's, as served
//    "fingerprint": {"model_digest", "tokenizer_digest", "engine_revision", "kv_dtype",
//                    "server_config", "server_fingerprint_sha256", "record_fingerprints": [..]},
//    "goodput": {..}, "quality": [{slice, verify, compared, verified, fraction, margin, within}],
//    "cost": {..}, "latency_ms": {..}, "margin": {..}, "policy": {..},
//    "records": [{"workload", "repeat", "side", "path", ..}], "report": "path",
//    "machine": {"cpu_model", "cores", "memory_bytes", "hostname"}}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace ladder::climb {

// Version 2 added "load"; version 1 lines still read (as load 1).
inline constexpr int kLedgerSchemaVersion = 2;

struct ServedIdentity {
  std::string model_digest;
  std::string tokenizer_digest;
  std::string engine_revision;
};

// A digest as people read it: its first 12 characters.
inline std::string short_hash(const std::string& digest) { return digest.substr(0, 12); }

struct LedgerEntry {
  int line = 0;  // in the ledger file
  std::string climb_id;
  std::string timestamp;
  int rung = 0;
  double load = 1.0;  // the offered-load multiplier this decision was made at
  std::string name;
  std::string decision;  // baseline | promoted | rejected | failed
  std::string reason;
  std::vector<std::string> serve_args;
  std::string topology = "single";  // "single" | "disagg" (rung 2's workers and router)
  std::string model;  // the model file this configuration served
  bool model_override = false;
  std::vector<std::string> rung1_args;
  ServedIdentity identity;  // the climb's rung 1, as served
  ServedIdentity served;    // this configuration, as served
  nlohmann::json json;      // the whole line
};

nlohmann::json to_json(const ServedIdentity& id);
Result<ServedIdentity> identity_from_json(const nlohmann::json& j, const std::string& where);

// A calibration's line (calibration.h): {"kind": "ladder.calibration",
// "schema_version", "climb_id", "timestamp", "identity", "machine", "policy",
// "summary": {comparisons, promoted, p_value, passed, run_sd, ...},
// "comparisons": [goodput intervals], "line": "calibration passed: ..."}.
inline constexpr const char* kCalibrationKind = "ladder.calibration";

// A rollback's line, appended by `ladder serve --shadow-rate` when live
// shadow evidence put a slice of the serving configuration below its margin
// (shadow_evidence.h): {"kind": "ladder.rollback", "schema_version": 1,
// "timestamp", "climb_id", "load", "from": {"rung", "name"}, "to": {"rung",
// "name"}, "slice", "reason", "identity", "evidence": {the slice's standing:
// shadowed, verified, fraction, upper, alpha, margin, first_failures [..]},
// "slices": [every slice's standing]}. Never undone automatically: `serve
// --ledger` keeps serving "to" for that climb and load until a new climb.
inline constexpr const char* kRollbackKind = "ladder.rollback";
inline constexpr int kRollbackSchemaVersion = 1;

struct Rollback {
  int line = 0;
  std::string climb_id;
  std::string timestamp;
  double load = 1.0;
  int from_rung = 0;
  std::string from_name;
  int to_rung = 0;
  std::string to_name;
  std::string slice;
  std::string reason;
  nlohmann::json json;  // the whole line
};

// Every rollback line, in file order (load_ledger skips them). A line of an
// unknown schema version, without its fields, or whose "to" rung is not
// below its "from" rung is an error naming its line.
Result<std::vector<Rollback>> load_rollbacks(const std::string& path);
// One line per rollback, for `ladder ledger show`.
std::string format_rollbacks(const std::vector<Rollback>& rollbacks);

// Appends one entry (a line) and flushes it.
Status append_ledger_entry(const std::string& path, const nlohmann::json& entry);

// Every entry, in file order. A line that is not a ledger entry of a known
// schema version is an error naming its line.
Result<std::vector<LedgerEntry>> load_ledger(const std::string& path);

// Every calibration line, in file order (load_ledger skips them).
Result<std::vector<nlohmann::json>> load_calibrations(const std::string& path);
// One line per calibration, for `ladder ledger show`.
std::string format_calibrations(const std::vector<nlohmann::json>& calibrations);

// `ladder ledger show`: one row per entry, grouped by climb, and per climb
// the configuration it left serving.
std::string format_ledger(const std::vector<LedgerEntry>& entries);

}  // namespace ladder::climb
