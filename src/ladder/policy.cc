#include "ladder/policy.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/file_io.h"
#include "common/sha256.h"

namespace ladder::climb {

namespace {

// Options the climb gives each replay or server itself.
const std::set<std::string> kReplayOwned = {
    "--endpoint",    "--workload", "--out",   "--reference", "--save-reference", "--verify",
    "--policy",      "--slo",      "--seed",  "--quiet",     "--min-match",      "--min-divergence",
    "--max-mean-kl", "--max-kl",   "--sweep", "--api-key",   "--tenant-key"};
// A disagg rung's workers: their roles and the decode worker's KV listener too.
const std::set<std::string> kWorkerOwned = {"--port", "--host",  "-m",      "--model", "--ledger",
                                            "--load", "--api-key", "--tenants", "--role", "--kv-host"};
const std::set<std::string> kRouteOwned = {"--port",   "--host",      "-m",        "--model",
                                           "--prefill", "--decode", "--api-key", "--tenants"};
const std::set<std::string> kServeOwned = {"--port",   "--host",    "-m",       "--model",
                                           "--ledger", "--load", "--api-key", "--tenants"};

std::string option_name(const std::string& arg) {
  const size_t eq = arg.find('=');
  return eq == std::string::npos ? arg : arg.substr(0, eq);
}

Result<double> read_double(const toml::node& node, const std::string& where) {
  if (auto i = node.value_exact<int64_t>()) return static_cast<double>(*i);
  if (auto f = node.value_exact<double>()) return *f;
  return invalid_argument(where + " must be a number");
}

Result<int64_t> read_int(const toml::node& node, const std::string& where, int64_t lo, int64_t hi) {
  auto i = node.value_exact<int64_t>();
  if (!i) return invalid_argument(where + " must be an integer");
  if (*i < lo || *i > hi)
    return invalid_argument(fmt::format("{} = {} is outside [{}, {}]", where, *i, lo, hi));
  return *i;
}

Result<std::string> read_string(const toml::node& node, const std::string& where) {
  auto s = node.value_exact<std::string>();
  if (!s) return invalid_argument(where + " must be a string");
  return *s;
}

Result<std::vector<std::string>> read_args(const toml::node& node, const std::string& where,
                                           const std::set<std::string>& owned, const std::string& owner) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr)
    return invalid_argument(where + " must be an array of strings, e.g. [\"--rate\", \"4\"]");
  std::vector<std::string> out;
  for (const auto& item : *arr) {
    auto s = item.value_exact<std::string>();
    if (!s) return invalid_argument(where + " must hold strings only (write numbers as \"4\")");
    if (owned.count(option_name(*s)) > 0) {
      return invalid_argument(
          fmt::format("{}: {} is set by the climb itself ({})", where, option_name(*s), owner));
    }
    out.push_back(*s);
  }
  return out;
}

Result<harness::VerifyMode> read_mode(const toml::node& node, const std::string& where) {
  LADDER_ASSIGN_OR_RETURN(std::string s, read_string(node, where));
  if (s == "exact") return harness::VerifyMode::kExact;
  if (s == "approx") return harness::VerifyMode::kApprox;
  return invalid_argument(where + " is \"exact\" or \"approx\" (got \"" + s + "\")");
}

Result<double> read_fraction(const toml::node& node, const std::string& where) {
  LADDER_ASSIGN_OR_RETURN(double v, read_double(node, where));
  if (!(v >= 0 && v <= 1)) return invalid_argument(fmt::format("{} = {} is outside [0, 1]", where, v));
  return v;
}

// Reads verify/margin out of a [quality] or [quality.slice.NAME] table into
// `m`, and copies every other key into `thresholds` for the harness reader.
Status split_slice_table(const toml::table& t, const std::string& where, SliceMargin& m,
                         toml::table& thresholds, bool is_quality_root) {
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key == "verify") {
      LADDER_ASSIGN_OR_RETURN(m.verify, read_mode(node, where + " 'verify'"));
    } else if (key == "margin") {
      LADDER_ASSIGN_OR_RETURN(m.margin, read_fraction(node, where + " 'margin'"));
    } else if (is_quality_root && (key == "default" || key == "slice")) {
      continue;  // handled by the caller
    } else if (is_quality_root) {
      return invalid_argument(
          fmt::format("{}: unknown key '{}' (verify, margin, [quality.default], "
                      "[quality.slice.NAME])",
                      where, key));
    } else {
      thresholds.insert(key, node);
    }
  }
  return Status::ok();
}

Status read_quality(const toml::table& q, const std::string& source, ClimbPolicy& p) {
  const std::string where = source + " [quality]";
  toml::table unused;
  LADDER_RETURN_IF_ERROR(split_slice_table(q, where, p.default_margin, unused, true));
  // The approx thresholds go through the harness's own reader.
  toml::table harness_doc;
  if (const toml::node* d = q.get("default")) {
    if (!d->is_table()) return invalid_argument(where + ": 'default' must be a table ([quality.default])");
    harness_doc.insert("default", *d);
  }
  std::set<std::string> slice_names;
  if (const toml::node* s = q.get("slice")) {
    if (!s->is_table()) return invalid_argument(where + ": 'slice' must hold [quality.slice.NAME] tables");
    toml::table slices;
    for (const auto& [name, sub] : *s->as_table()) {
      const std::string slice_where = fmt::format("{} [quality.slice.{}]", source, name.str());
      if (!sub.is_table()) return invalid_argument(slice_where + " must be a table");
      SliceMargin m = p.default_margin;
      toml::table thresholds;
      LADDER_RETURN_IF_ERROR(split_slice_table(*sub.as_table(), slice_where, m, thresholds, false));
      p.slice_margins[std::string(name.str())] = m;
      slices.insert(name, thresholds);
    }
    harness_doc.insert("slice", slices);
  }
  std::ostringstream text;
  text << harness_doc;
  LADDER_ASSIGN_OR_RETURN(p.thresholds, harness::parse_verify_policy(text.str(), where));
  p.thresholds.source = source + " [quality]";
  return Status::ok();
}

Status read_slo(const toml::table& t, const std::string& source, harness::Slo& slo) {
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    const std::string where = fmt::format("{} [slo] '{}'", source, key);
    std::optional<double>* field = key == "ttft_ms"   ? &slo.ttft_ms
                                   : key == "tpot_ms" ? &slo.tpot_ms
                                   : key == "e2e_ms"  ? &slo.e2e_ms
                                                      : nullptr;
    if (field == nullptr)
      return invalid_argument(
          fmt::format("{} [slo]: unknown key '{}' (ttft_ms, tpot_ms, e2e_ms)", source, key));
    LADDER_ASSIGN_OR_RETURN(double v, read_double(node, where));
    if (!(v > 0)) return invalid_argument(where + " must be > 0 (milliseconds)");
    *field = v;
  }
  return Status::ok();
}

std::string resolve(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

Result<WorkloadSpec> read_workload(const toml::table& t, const std::string& where,
                                   const std::string& base_dir) {
  WorkloadSpec w;
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key == "name") {
      LADDER_ASSIGN_OR_RETURN(w.name, read_string(node, where + " 'name'"));
    } else if (key == "path") {
      LADDER_ASSIGN_OR_RETURN(w.path, read_string(node, where + " 'path'"));
    } else if (key == "args") {
      LADDER_ASSIGN_OR_RETURN(w.args, read_args(node, where + " 'args'", kReplayOwned, "replay options"));
    } else {
      return invalid_argument(fmt::format("{}: unknown key '{}' (name, path, args)", where, key));
    }
  }
  if (w.path.empty()) return invalid_argument(where + ": 'path' is required (a workload or trace file)");
  w.path = resolve(w.path, base_dir);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(w.path, ec))
    return invalid_argument(where + " 'path': no such file " + w.path);
  if (w.name.empty()) w.name = std::filesystem::path(w.path).stem().string();
  return w;
}

Result<RungSpec> read_rung(const toml::table& t, const std::string& where, const std::string& base_dir) {
  RungSpec r;
  bool split_keys = false;  // prefill_args, decode_args or route_args given
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key == "name") {
      LADDER_ASSIGN_OR_RETURN(r.name, read_string(node, where + " 'name'"));
    } else if (key == "args") {
      LADDER_ASSIGN_OR_RETURN(r.args, read_args(node, where + " 'args'", kServeOwned,
                                                "serve options; a rung's model file is its 'model' key"));
    } else if (key == "model") {
      LADDER_ASSIGN_OR_RETURN(r.model, read_string(node, where + " 'model'"));
      r.model = resolve(r.model, base_dir);
    } else if (key == "topology") {
      LADDER_ASSIGN_OR_RETURN(std::string topo, read_string(node, where + " 'topology'"));
      if (topo == "single") {
        r.topology = Topology::kSingle;
      } else if (topo == "disagg") {
        r.topology = Topology::kDisagg;
      } else {
        return invalid_argument(where + " 'topology' is \"single\" or \"disagg\" (got \"" + topo + "\")");
      }
    } else if (key == "prefill_args" || key == "decode_args") {
      split_keys = true;
      LADDER_ASSIGN_OR_RETURN(key == "prefill_args" ? r.prefill_args : r.decode_args,
                              read_args(node, where + " '" + key + "'", kWorkerOwned, "a worker's options"));
    } else if (key == "route_args") {
      split_keys = true;
      LADDER_ASSIGN_OR_RETURN(r.route_args, read_args(node, where + " 'route_args'", kRouteOwned,
                                                      "`ladder route` options"));
    } else {
      return invalid_argument(fmt::format(
          "{}: unknown key '{}' (name, args, model, topology, prefill_args, decode_args, route_args)", where,
          key));
    }
  }
  if (r.name.empty()) return invalid_argument(where + ": 'name' is required");
  if (r.topology == Topology::kSingle && split_keys) {
    return invalid_argument(where + ": prefill_args, decode_args and route_args need topology = \"disagg\"");
  }
  if (r.topology == Topology::kDisagg) {
    for (const auto& a : r.args) {
      if (kWorkerOwned.count(option_name(a)) > 0) {
        return invalid_argument(
            fmt::format("{} 'args': {} is set by the climb itself (a worker's options)", where, option_name(a)));
      }
    }
  }
  return r;
}

Result<std::vector<double>> read_loads(const toml::node& node, const std::string& where) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr || arr->empty()) {
    return invalid_argument(where + " must be a non-empty array of load multipliers, e.g. [0.5, 1, 2]");
  }
  std::vector<double> loads;
  for (const auto& item : *arr) {
    LADDER_ASSIGN_OR_RETURN(double v, read_double(item, where + " (each load)"));
    if (!(v > 0 && v <= 1e6)) {
      return invalid_argument(fmt::format("{}: load {} is outside (0, 1e6] (a multiplier of the offered load)",
                                          where, v));
    }
    loads.push_back(v);
  }
  std::sort(loads.begin(), loads.end());
  if (std::adjacent_find(loads.begin(), loads.end()) != loads.end()) {
    return invalid_argument(where + " lists a load twice");
  }
  return loads;
}

template <typename T, typename Read>
Status read_array_of_tables(const toml::node& node, const std::string& source, const std::string& key,
                            const std::string& base_dir, std::vector<T>& out, Read read) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr || !arr->is_array_of_tables()) {
    return invalid_argument(fmt::format("{}: '{}' must be [[{}]] tables", source, key, key));
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    const std::string where = fmt::format("{} [[{}]] #{}", source, key, i + 1);
    LADDER_ASSIGN_OR_RETURN(T item, read(*arr->get(i)->as_table(), where, base_dir));
    out.push_back(std::move(item));
  }
  return Status::ok();
}

}  // namespace

const char* topology_name(Topology t) {
  return t == Topology::kDisagg ? "disagg" : "single";
}

SliceMargin ClimbPolicy::margin_for(const std::string& slice) const {
  auto it = slice_margins.find(slice);
  return it == slice_margins.end() ? default_margin : it->second;
}

harness::VerifyMode ClimbPolicy::replay_mode() const {
  if (default_margin.verify == harness::VerifyMode::kApprox) return harness::VerifyMode::kApprox;
  for (const auto& [name, m] : slice_margins) {
    if (m.verify == harness::VerifyMode::kApprox) return harness::VerifyMode::kApprox;
  }
  return harness::VerifyMode::kExact;
}

std::string ClimbPolicy::thresholds_toml() const {
  auto fields = [](const harness::QualityThresholds& t) {
    std::string s;
    if (t.min_match) s += fmt::format("min_match = {}\n", *t.min_match);
    if (t.min_divergence) s += fmt::format("min_divergence = {}\n", *t.min_divergence);
    if (t.max_mean_kl) s += fmt::format("max_mean_kl = {}\n", *t.max_mean_kl);
    if (t.max_kl) s += fmt::format("max_kl = {}\n", *t.max_kl);
    return s;
  };
  std::string out =
      "# written by ladder climb from " + source + " [quality]\n[default]\n" + fields(thresholds.defaults);
  for (const auto& [name, t] : thresholds.slices) {
    out += "[slice." + nlohmann::json(name).dump() + "]\n" + fields(t);
  }
  return out;
}

nlohmann::json ClimbPolicy::to_json() const {
  using nlohmann::json;
  auto margin_json = [](const SliceMargin& m) {
    return json{{"verify", harness::verify_mode_name(m.verify)}, {"margin", m.margin}};
  };
  json j = {{"source", source},
            {"digest_sha256", digest_sha256},
            {"confidence", confidence},
            {"min_repeats", min_repeats},
            {"max_repeats", max_repeats},
            {"looks", plan().looks},
            {"max_compare_s", max_compare_s},
            {"max_reference_errors", max_reference_errors},
            {"min_slice_requests", min_slice_requests},
            {"seed", seed},
            {"warmup_requests", warmup_requests},
            {"min_gain", min_gain},
            {"slo", slo_argument(slo)},
            {"margin", {{"default", margin_json(default_margin)}}},
            {"thresholds", thresholds.to_json()}};
  for (const auto& [name, m] : slice_margins) j["margin"]["slices"][name] = margin_json(m);
  j["workloads"] = json::array();
  for (const auto& w : workloads)
    j["workloads"].push_back({{"name", w.name}, {"path", w.path}, {"args", w.args}});
  j["loads"] = loads;
  j["rungs"] = json::array();
  for (const auto& r : rungs) {
    json rj = {{"name", r.name}, {"args", r.args}, {"model", r.model}, {"topology", topology_name(r.topology)}};
    if (r.topology == Topology::kDisagg) {
      rj["prefill_args"] = r.prefill_args;
      rj["decode_args"] = r.decode_args;
      rj["route_args"] = r.route_args;
    }
    j["rungs"].push_back(std::move(rj));
  }
  return j;
}

namespace {

// The numeric value of option `name` at args[i] ("--rate 4" or "--rate=4"):
// where it is and what it reads.
struct OptionValue {
  size_t index = 0;      // the argument holding the value
  bool inline_eq = false;  // "--rate=4"
  double value = 0;
};

Result<std::optional<OptionValue>> find_numeric_option(const std::vector<std::string>& args,
                                                       const std::string& name) {
  std::optional<OptionValue> found;
  for (size_t i = 0; i < args.size(); ++i) {
    OptionValue v;
    std::string text;
    if (args[i] == name) {
      if (i + 1 == args.size()) return invalid_argument(name + " has no value");
      v.index = i + 1;
      text = args[i + 1];
    } else if (args[i].rfind(name + "=", 0) == 0) {
      v.index = i;
      v.inline_eq = true;
      text = args[i].substr(name.size() + 1);
    } else {
      continue;
    }
    char* end = nullptr;
    v.value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(v.value > 0) || !std::isfinite(v.value)) {
      return invalid_argument(fmt::format("{} {} is not a positive number", name, text));
    }
    found = v;  // the last occurrence wins, as on the command line
  }
  return found;
}

}  // namespace

Result<std::vector<std::string>> workload_args_at_load(const std::vector<std::string>& args, double load) {
  LADDER_ASSIGN_OR_RETURN(std::optional<OptionValue> rate, find_numeric_option(args, "--rate"));
  LADDER_ASSIGN_OR_RETURN(std::optional<OptionValue> scale, find_numeric_option(args, "--time-scale"));
  if (rate && scale) {
    return invalid_argument("--rate re-draws the arrivals that --time-scale would scale: give one of them");
  }
  if (load == 1.0) return args;
  std::vector<std::string> out = args;
  auto set = [&](const OptionValue& v, const std::string& name, double value) {
    const std::string text = fmt::format("{:.10g}", value);
    out[v.index] = v.inline_eq ? name + "=" + text : text;
  };
  if (rate) {
    set(*rate, "--rate", rate->value * load);
  } else if (scale) {
    set(*scale, "--time-scale", scale->value / load);
  } else {
    out.insert(out.end(), {"--time-scale", fmt::format("{:.10g}", 1.0 / load)});
  }
  return out;
}

std::string load_label(double load) { return fmt::format("{:g}x", load); }

std::string slo_argument(const harness::Slo& slo) {
  std::vector<std::string> parts;
  if (slo.ttft_ms) parts.push_back(fmt::format("ttft_ms={:g}", *slo.ttft_ms));
  if (slo.tpot_ms) parts.push_back(fmt::format("tpot_ms={:g}", *slo.tpot_ms));
  if (slo.e2e_ms) parts.push_back(fmt::format("e2e_ms={:g}", *slo.e2e_ms));
  return fmt::format("{}", fmt::join(parts, ","));
}

Result<ClimbPolicy> parse_climb_policy(const std::string& text, const std::string& source,
                                       const std::string& base_dir) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << source << ": " << e.description() << " at line " << e.source().begin.line;
    return invalid_argument(msg.str());
  }
  ClimbPolicy p;
  p.source = source;
  p.digest_sha256 = sha256_hex(text);
  p.thresholds = harness::VerifyPolicy::built_in();
  std::optional<int> fixed_repeats;  // `repeats = N`: one look after N
  bool sequential_keys = false;
  for (const auto& [k, node] : doc) {
    const std::string key(k.str());
    const std::string where = fmt::format("{} '{}'", source, key);
    if (key == "confidence") {
      LADDER_ASSIGN_OR_RETURN(p.confidence, read_double(node, where));
      if (!(p.confidence >= 0.5 && p.confidence < 1)) {
        return invalid_argument(fmt::format("{} = {} is outside [0.5, 1)", where, p.confidence));
      }
    } else if (key == "repeats") {
      LADDER_ASSIGN_OR_RETURN(int64_t v, read_int(node, where, 2, 1000));
      fixed_repeats = static_cast<int>(v);
    } else if (key == "min_repeats") {
      LADDER_ASSIGN_OR_RETURN(int64_t v, read_int(node, where, 2, 1000));
      p.min_repeats = static_cast<int>(v);
      sequential_keys = true;
    } else if (key == "max_repeats") {
      LADDER_ASSIGN_OR_RETURN(int64_t v, read_int(node, where, 2, 1000));
      p.max_repeats = static_cast<int>(v);
      sequential_keys = true;
    } else if (key == "max_compare_s") {
      LADDER_ASSIGN_OR_RETURN(p.max_compare_s, read_double(node, where));
      if (!(p.max_compare_s >= 0)) return invalid_argument(where + " must be >= 0 (0: no time budget)");
    } else if (key == "max_reference_errors") {
      LADDER_ASSIGN_OR_RETURN(p.max_reference_errors, read_double(node, where));
      if (!(p.max_reference_errors >= 0 && p.max_reference_errors < 1))
        return invalid_argument(where + " must be in [0, 1) (a fraction of the reference's requests)");
    } else if (key == "min_slice_requests") {
      LADDER_ASSIGN_OR_RETURN(int64_t v, read_int(node, where, 1, 1000000));
      p.min_slice_requests = static_cast<int>(v);
    } else if (key == "bootstrap_samples") {
      return invalid_argument(where +
                              " is no longer read: the gate's interval is run-level, a paired t interval "
                              "over paired runs (docs/CLIMB.md); remove the key");
    } else if (key == "seed") {
      LADDER_ASSIGN_OR_RETURN(int64_t v, read_int(node, where, 0, INT64_MAX));
      p.seed = static_cast<uint64_t>(v);
    } else if (key == "warmup_requests") {
      LADDER_ASSIGN_OR_RETURN(int64_t v, read_int(node, where, 0, 1000));
      p.warmup_requests = static_cast<int>(v);
    } else if (key == "min_gain") {
      LADDER_ASSIGN_OR_RETURN(p.min_gain, read_double(node, where));
      if (!(p.min_gain >= 0 && p.min_gain < 10))
        return invalid_argument(where + " must be in [0, 10) (a relative gain)");
    } else if (key == "loads") {
      LADDER_ASSIGN_OR_RETURN(p.loads, read_loads(node, where));
    } else if (key == "slo") {
      if (!node.is_table()) return invalid_argument(source + ": 'slo' must be a table ([slo])");
      LADDER_RETURN_IF_ERROR(read_slo(*node.as_table(), source, p.slo));
    } else if (key == "quality") {
      if (!node.is_table()) return invalid_argument(source + ": 'quality' must be a table ([quality])");
      LADDER_RETURN_IF_ERROR(read_quality(*node.as_table(), source, p));
    } else if (key == "workload") {
      LADDER_RETURN_IF_ERROR(read_array_of_tables(node, source, key, base_dir, p.workloads, read_workload));
    } else if (key == "rung") {
      LADDER_RETURN_IF_ERROR(read_array_of_tables(node, source, key, base_dir, p.rungs, read_rung));
    } else {
      return invalid_argument(
          fmt::format("{}: unknown key '{}' (confidence, min_repeats, max_repeats, repeats, max_compare_s, "
                      "seed, warmup_requests, min_gain, max_reference_errors, min_slice_requests, loads, "
                      "[slo], [quality], [[workload]], [[rung]])",
                      source, key));
    }
  }
  if (fixed_repeats) {
    if (sequential_keys) {
      return invalid_argument(source +
                              ": 'repeats' (a fixed number, one look) and 'min_repeats'/'max_repeats' (a "
                              "sequential comparison) exclude each other");
    }
    p.min_repeats = p.max_repeats = *fixed_repeats;
  }
  if (Result<SequentialPlan> plan = SequentialPlan::make(p.min_repeats, p.max_repeats, p.confidence);
      !plan.is_ok()) {
    return invalid_argument(source + ": " + plan.status().message());
  }
  if (p.workloads.empty())
    return invalid_argument(source + ": no [[workload]]: the climb needs traffic to replay");
  if (p.rungs.size() < 2) {
    return invalid_argument(source +
                            ": [[rung]] needs rung 1 (the floor) and at least one candidate after it");
  }
  if (p.rungs.front().topology != Topology::kSingle) {
    return invalid_argument(source + " [[rung]] #1: rung 1 is the dense server: its topology is \"single\"");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < p.rungs.size(); ++i) {
    if (!names.insert(p.rungs[i].name).second) {
      return invalid_argument(
          fmt::format("{} [[rung]] #{}: name '{}' is used twice", source, i + 1, p.rungs[i].name));
    }
  }
  names.clear();
  for (size_t i = 0; i < p.workloads.size(); ++i) {
    if (!names.insert(p.workloads[i].name).second) {
      return invalid_argument(
          fmt::format("{} [[workload]] #{}: name '{}' is used twice", source, i + 1, p.workloads[i].name));
    }
    for (double load : p.loads) {
      if (Result<std::vector<std::string>> a = workload_args_at_load(p.workloads[i].args, load); !a.is_ok()) {
        return invalid_argument(
            fmt::format("{} [[workload]] '{}' 'args': {}", source, p.workloads[i].name, a.status().message()));
      }
    }
  }
  return p;
}

SequentialPlan ClimbPolicy::plan() const {
  Result<SequentialPlan> p = SequentialPlan::make(min_repeats, max_repeats, confidence);
  LADDER_CHECK(p.is_ok(), "the policy's repeats were checked when it was parsed");
  return *p;
}

Result<ClimbPolicy> load_climb_policy(const std::string& path) {
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_climb_policy(text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace ladder::climb
