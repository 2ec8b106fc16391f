#include "harness/replay_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/build_info.h"
#include "harness/record.h"
#include "harness/reference.h"
#include "harness/report_html.h"
#include "harness/summary_table.h"
#include "harness/sweep.h"

namespace ladder::harness {

using nlohmann::json;

namespace {

Result<double> parse_positive(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !(v > 0)) throw std::invalid_argument("bad");
    return v;
  } catch (const std::exception&) {
    return invalid_argument(what + " must be a positive number (got '" + s + "')");
  }
}

Status write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return io_error("cannot write " + path.string());
  out << text;
  if (!out) return io_error("write failed: " + path.string());
  return Status::ok();
}

json slo_to_json(const Slo& s) {
  json j = json::object();
  if (s.ttft_ms) j["ttft_ms"] = *s.ttft_ms;
  if (s.tpot_ms) j["tpot_ms"] = *s.tpot_ms;
  if (s.e2e_ms) j["e2e_ms"] = *s.e2e_ms;
  return j;
}

bool thresholds_given(const QualityThresholds& t) { return t.min_match || t.min_divergence || t.max_mean_kl || t.max_kl; }

// Options that cannot apply to this command line are errors, never silent
// no-ops (flags only; the workload's own checks come after loading it).
Status check_flags(const ReplayCommandOptions& o, const net::Endpoint& ep) {
  const bool auto_sweep = o.sweep == "auto";
  const bool redrawn = o.rate || !o.sweep.empty();
  auto given = [&](const char* name) { return o.given.count(name) > 0; };
  if (o.rate && !o.sweep.empty() && !auto_sweep) return invalid_argument("give --rate or a --sweep list, not both");
  for (const char* name : {"arrival", "seed"}) {
    if (given(name) && !redrawn) {
      return invalid_argument(fmt::format("--{} applies only when arrivals are re-drawn (--rate or --sweep)", name));
    }
  }
  if (given("time-scale") && redrawn) {
    return invalid_argument("--time-scale scales the workload's timestamps, which --rate/--sweep replace");
  }
  if (given("target") && o.sweep.empty()) return invalid_argument("--target applies only to --sweep");
  for (const char* name : {"sweep-steps", "sweep-max-rate"}) {
    if (given(name) && !auto_sweep) return invalid_argument(fmt::format("--{} applies only to --sweep auto", name));
  }
  if (!o.verify.empty() && o.reference.empty()) return invalid_argument("--verify needs --reference REF");
  const bool approx = !o.reference.empty() && o.verify == "approx";
  if ((!o.policy_path.empty() || thresholds_given(o.threshold_flags)) && !approx) {
    return invalid_argument("--policy and the threshold flags apply only to --verify approx");
  }
  if (!o.save_reference.empty() && !o.reference.empty()) {
    return invalid_argument("give --save-reference or --reference, not both");
  }
  if (!o.save_reference.empty() && !o.sweep.empty()) {
    return invalid_argument("--save-reference records one run; it cannot be combined with --sweep");
  }
  if ((o.insecure || !o.ca_cert.empty()) && !ep.tls) {
    return invalid_argument("--insecure and --ca-cert apply only to https:// endpoints");
  }
  if (o.insecure && !o.ca_cert.empty()) return invalid_argument("give --insecure or --ca-cert, not both");
  if (o.token_ids != "auto" && o.token_ids != "on" && o.token_ids != "off") {
    return invalid_argument("--token-ids is auto, on or off");
  }
  for (const auto& p : {o.price_in, o.price_out}) {
    if (p && !(*p >= 0)) return invalid_argument("--price-in/--price-out must be >= 0");
  }
  if (!(o.target > 0 && o.target <= 1)) return invalid_argument("--target must be in (0, 1]");
  if (!(o.length_scale > 0)) return invalid_argument("--length-scale must be > 0");
  if (o.concurrency < 0) return invalid_argument("--concurrency must be >= 0");
  return Status::ok();
}

Status check_workload(const ReplayCommandOptions& o, const Workload& w, const std::map<std::string, std::string>& keys) {
  size_t chat = 0, synthesized = 0;
  std::set<std::string> tenants;
  for (const auto& r : w.requests) {
    chat += r.is_chat() ? 1 : 0;
    synthesized += r.input_tokens >= 0 ? 1 : 0;
    tenants.insert(r.tenant);
  }
  if (o.max_input_tokens > 0 && chat > 0) {
    return invalid_argument(fmt::format("--max-input-tokens cannot cut chat messages, and {} of the {} requests in {} "
                                        "are chat requests; remove the flag or cap the workload itself",
                                        chat, w.requests.size(), o.workload_path));
  }
  for (const char* name : {"chars-per-token", "text"}) {
    if (o.given.count(name) > 0 && synthesized == 0) {
      return invalid_argument(fmt::format("--{} applies only to prompts synthesized from token lengths, and {} has none",
                                          name, o.workload_path));
    }
  }
  for (const auto& [tenant, key] : keys) {
    if (tenants.count(tenant) == 0) {
      return invalid_argument("--tenant-key names tenant '" + tenant + "', which no request of the workload has");
    }
  }
  return Status::ok();
}

struct Verification {
  VerifyMode mode = VerifyMode::kNone;
  std::optional<Reference> reference;
  VerifyPolicy policy = VerifyPolicy::built_in();
};

Result<Verification> load_verification(const ReplayCommandOptions& o) {
  Verification v;
  if (o.reference.empty()) return v;
  LADDER_ASSIGN_OR_RETURN(v.mode, parse_verify_mode(o.verify.empty() ? "exact" : o.verify));
  LADDER_ASSIGN_OR_RETURN(v.reference, load_reference(o.reference));
  if (!o.policy_path.empty()) {
    LADDER_ASSIGN_OR_RETURN(v.policy, load_verify_policy(o.policy_path));
  }
  if (thresholds_given(o.threshold_flags)) {
    v.policy.defaults = overlay(v.policy.defaults, o.threshold_flags);
    v.policy.source += " + flags";
  }
  return v;
}

// What the run was measured under, and its fingerprints (DESIGN.md
// "Record"): the server's part is its whole /v1/models entry for the model
// -- identity and, from a Ladder server, its effective configuration
// (ladder.config) -- and the whole fingerprint adds the client settings
// that change what each request asks or how it is paced (not the endpoint
// address or the offered load, which the record states apart).
json configuration_of(const ReplayCommandOptions& o, const net::Endpoint& ep, const ReplayOptions& ropts, const Slo& slo,
                      const ServerInfo& server, const Verification& ver) {
  const json entry = server.model_entry(ropts.model);
  const json ladder = entry.is_object() ? entry.value("ladder", json(nullptr)) : json(nullptr);
  auto served_field = [&](const char* key) {
    return ladder.is_object() && ladder.contains(key) && ladder[key].is_string() ? ladder[key].get<std::string>()
                                                                                  : std::string("unknown");
  };
  json client = {{"model", ropts.model},
                 {"concurrency_cap", o.concurrency},
                 {"slo_override", slo_to_json(slo)},
                 {"deadlines_sent", o.send_deadlines},
                 {"length_scale", o.length_scale},
                 {"max_input_tokens", o.max_input_tokens},
                 {"max_output_tokens", o.max_output_tokens},
                 {"ignore_eos", o.ignore_eos},
                 {"token_ids_requested", ropts.token_ids},
                 {"top_logprobs_requested", ropts.top_logprobs}};
  json config = client;
  config["endpoint"] = ep.url();
  config["arrival"] = o.rate || !o.sweep.empty() ? json(o.arrival) : json("trace timestamps");
  config["seed"] = o.seed;
  config["time_scale"] = o.time_scale;
  config["timeout_s"] = o.timeout_s;
  config["model_digest"] = served_field("model_digest");
  config["tokenizer_digest"] = served_field("tokenizer_digest");
  config["kv_dtype"] = served_field("kv_dtype");
  config["engine_revision"] = served_field("revision");
  config["kernels"] = served_field("kernels");
  config["harness_revision"] = git_revision();
  config["server_config"] = ladder.is_object() && ladder.contains("config") ? ladder["config"] : json(nullptr);
  config["server_config_note"] = config["server_config"].is_null()
                                     ? "the server publishes no effective configuration (ladder.config in /v1/models)"
                                     : "the server's effective configuration, as published in /v1/models";
  // When the server started is not part of what it is.
  json stable = entry;
  if (stable.is_object()) stable.erase("created");
  config["server_fingerprint_sha256"] = sha256_hex(stable.dump());
  config["fingerprint_sha256"] = sha256_hex(json{{"server", stable}, {"client", client}}.dump());
  config["fingerprint_covers"] =
      "the server's /v1/models entry for the model (model and tokenizer digests, KV format, revision, kernel "
      "fingerprint and, when published, its effective configuration) and the client settings that change "
      "what is asked: model, concurrency cap, SLO override, deadlines, length scale and caps, ignore_eos, "
      "token ids and logprobs requested";
  json verification = {{"mode", verify_mode_name(ver.mode)}};
  if (ver.reference) {
    verification["reference"] = o.reference;
    verification["reference_fingerprint_sha256"] = ver.reference->fingerprint_sha256;
    verification["reference_server_fingerprint_sha256"] = ver.reference->server_fingerprint_sha256;
    verification["same_server_as_reference"] =
        ver.reference->server_fingerprint_sha256 == config["server_fingerprint_sha256"].get<std::string>();
    verification["reference_requests"] = ver.reference->entries.size();
    verification["reference_with_token_ids"] = ver.reference->with_token_ids();
    if (ver.mode == VerifyMode::kApprox) verification["policy"] = ver.policy.to_json();
  }
  if (!o.save_reference.empty()) verification["saved_reference"] = o.save_reference;
  config["verification"] = verification;
  return config;
}

}  // namespace

Result<Slo> parse_slo(const std::string& text) {
  Slo slo;
  if (text.empty()) return slo;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) return invalid_argument("--slo items are NAME=MS (got '" + item + "')");
    std::string key = item.substr(0, eq);
    LADDER_ASSIGN_OR_RETURN(double v, parse_positive(item.substr(eq + 1), "--slo " + key));
    if (key == "ttft_ms" || key == "ttft") {
      slo.ttft_ms = v;
    } else if (key == "tpot_ms" || key == "tpot") {
      slo.tpot_ms = v;
    } else if (key == "e2e_ms" || key == "e2e") {
      slo.e2e_ms = v;
    } else {
      return invalid_argument("--slo knows ttft_ms, tpot_ms, e2e_ms (got '" + key + "')");
    }
  }
  return slo;
}

Result<std::vector<double>> parse_rates(const std::string& text) {
  std::vector<double> rates;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    LADDER_ASSIGN_OR_RETURN(double v, parse_positive(item, "--sweep rate"));
    rates.push_back(v);
  }
  if (rates.empty()) return invalid_argument("--sweep needs at least one rate");
  std::sort(rates.begin(), rates.end());
  return rates;
}

namespace {

// What the command line asks for, checked: where, how loaded, verified how,
// and the workload before any schedule is applied.
struct ReplayPlan {
  net::Endpoint endpoint;
  Slo slo;
  ArrivalProcess arrival;
  bool auto_sweep = false;
  std::vector<double> sweep_rates;
  std::map<std::string, std::string> tenant_keys;
  Verification ver;
  Workload base;
};

Result<ReplayPlan> plan_replay(const ReplayCommandOptions& o) {
  if (o.out_dir.empty()) return invalid_argument("--out DIR is required");
  ReplayPlan p;
  LADDER_ASSIGN_OR_RETURN(p.endpoint, net::parse_endpoint(o.endpoint));
  p.endpoint.tls_options = {o.insecure, o.ca_cert};
  LADDER_RETURN_IF_ERROR(check_flags(o, p.endpoint));
  LADDER_ASSIGN_OR_RETURN(p.slo, parse_slo(o.slo));
  LADDER_ASSIGN_OR_RETURN(p.arrival, parse_arrival(o.arrival));
  p.auto_sweep = o.sweep == "auto";
  if (!o.sweep.empty() && !p.auto_sweep) {
    LADDER_ASSIGN_OR_RETURN(p.sweep_rates, parse_rates(o.sweep));
  }
  for (const auto& tk : o.tenant_keys) {
    size_t eq = tk.find('=');
    if (eq == std::string::npos || eq == 0) return invalid_argument("--tenant-key is TENANT=KEY (got '" + tk + "')");
    p.tenant_keys[tk.substr(0, eq)] = tk.substr(eq + 1);
  }
  LADDER_ASSIGN_OR_RETURN(p.ver, load_verification(o));

  LADDER_ASSIGN_OR_RETURN(TextSynthesizer synth, TextSynthesizer::from_file(o.text_path, o.chars_per_token));
  LoadOptions load;
  load.format = o.format;
  load.strict = o.strict;
  load.conv.length_scale = o.length_scale;
  load.conv.max_input_tokens = o.max_input_tokens;
  load.conv.max_output_tokens = o.max_output_tokens;
  LADDER_ASSIGN_OR_RETURN(p.base, load_workload(o.workload_path, load, synth));
  for (const auto& e : p.base.skipped) {
    std::fprintf(stderr, "warning: %s line %d skipped: %s\n", o.workload_path.c_str(), e.line, e.message.c_str());
  }
  if (p.base.requests.empty()) return invalid_argument("no usable requests in " + o.workload_path);
  LADDER_RETURN_IF_ERROR(check_workload(o, p.base, p.tenant_keys));
  if (p.ver.reference) {
    size_t known = 0;
    for (const auto& k : request_keys(p.base.requests)) known += p.ver.reference->entries.count(k);
    if (known == 0) {
      return invalid_argument("the reference " + o.reference + " holds none of this workload's requests (made from " +
                              p.ver.reference->workload_source + ")");
    }
  }
  return p;
}

// The replay client's options, once the server has been asked what it serves.
ReplayOptions replay_options(const ReplayCommandOptions& o, const ReplayPlan& p, const ServerInfo& server) {
  ReplayOptions ropts;
  ropts.endpoint = p.endpoint;
  ropts.api_key = o.api_key;
  ropts.tenant_keys = p.tenant_keys;
  ropts.model = o.model;
  ropts.concurrency = o.concurrency;
  ropts.timeout_s = o.timeout_s;
  ropts.slo_override = p.slo;
  ropts.ignore_eos = o.ignore_eos;
  ropts.progress = !o.quiet;
  ropts.send_deadlines = o.send_deadlines;
  if (ropts.model.empty()) ropts.model = server.model_id.empty() ? "default" : server.model_id;
  const bool checking = !o.save_reference.empty() || p.ver.mode != VerifyMode::kNone;
  const json entry = server.model_entry(ropts.model);
  // Token ids are an extension: asked of servers known to serve them (Ladder,
  // vLLM) unless --token-ids says otherwise; a strict hosted API may reject
  // an unknown field.
  const bool known_ids = entry.is_object() && (entry.contains("ladder") || entry.value("owned_by", "") == "vllm");
  ropts.token_ids = o.token_ids == "on" || (o.token_ids == "auto" && checking && known_ids);
  ropts.top_logprobs = !o.save_reference.empty() || p.ver.mode == VerifyMode::kApprox ? kReferenceTopK : 0;
  return ropts;
}

// Every run the command asked for (one, a list of rates, or an auto sweep).
struct Measurements {
  std::vector<RunReport> reports;
  std::vector<std::string> notes;  // how the first run's schedule scaled the trace
  size_t scheduled_requests = 0;
  size_t units = 0;
};

Result<Measurements> measure(const ReplayCommandOptions& o, const ReplayPlan& p, ReplayOptions& ropts) {
  Measurements m;
  std::optional<AutoSweep> sweeper;
  if (p.auto_sweep) {
    LADDER_ASSIGN_OR_RETURN(sweeper, AutoSweep::create({o.rate.value_or(1.0), o.target, o.sweep_steps,
                                                        o.sweep_max_rate, 6}));
  }
  const Prices prices{o.price_in, o.price_out};
  auto run_at = [&](std::optional<double> rate) -> Status {
    Workload w = p.base;
    ScheduleOptions so;
    so.time_scale = o.time_scale;
    so.rate = rate;
    so.arrival = p.arrival;
    so.seed = o.seed;
    so.duration_s = o.duration_s;
    so.max_requests = o.max_requests;
    LADDER_RETURN_IF_ERROR(apply_schedule(w, so));
    if (w.requests.empty()) return invalid_argument("the window (--duration/--requests) left no requests");
    if (m.reports.empty()) {
      m.notes = w.notes;
      if (!o.sweep.empty()) {
        for (auto& n : m.notes) {
          if (n.rfind("arrivals re-drawn", 0) == 0) {
            n = fmt::format("arrivals re-drawn: {} at each sweep rate ({}) per second (seed {}), trace timestamps ignored",
                            p.arrival.to_string(), p.auto_sweep ? "auto" : o.sweep, o.seed);
          }
        }
      }
      m.scheduled_requests = w.requests.size();
      m.units = arrival_unit_count(w.requests);
    }
    RunReport rr;
    rr.nominal_rate = rate;
    rr.offered_rate = rate ? *rate : offered_rate_of(w.requests);
    rr.label = rate ? fmt::format("rate {:g}", *rate) : "trace timing";
    ropts.label = rr.label;
    LADDER_ASSIGN_OR_RETURN(rr.run, run_replay(w.requests, ropts));
    rr.summary = summarize_run(rr.run.results, rr.run.window_s);
    rr.quality = summarize_quality(rr.run.results, p.ver.mode == VerifyMode::kApprox ? &p.ver.policy : nullptr);
    rr.cost = summarize_cost(rr.run, rr.summary.overall, prices);
    m.reports.push_back(std::move(rr));
    return Status::ok();
  };
  if (sweeper) {
    while (auto rate = sweeper->next()) {
      LADDER_RETURN_IF_ERROR(run_at(*rate));
      sweeper->record(*rate, m.reports.back().summary.overall.goodput_fraction);
    }
  } else if (!p.sweep_rates.empty()) {
    for (double r : p.sweep_rates) LADDER_RETURN_IF_ERROR(run_at(r));
  } else {
    LADDER_RETURN_IF_ERROR(run_at(o.rate));
  }
  return m;
}

// record.json's body (schema in DESIGN.md), with the sweep's verdict when
// the command swept.
json build_record(const ReplayCommandOptions& o, const ReplayPlan& p, const ReplayOptions& ropts,
                  const Measurements& m, const ServerInfo& before, const ServerInfo& after,
                  std::optional<SweepVerdict>* verdict) {
  const MachineInfo machine = probe_machine();
  json record;
  record["schema_version"] = kRecordSchemaVersion;
  record["kind"] = "ladder.replay";
  record["timestamp"] = iso8601_utc_now();
  record["command_line"] = o.command_line;
  json skipped = json::array();
  for (size_t i = 0; i < p.base.skipped.size() && i < 100; ++i) {
    skipped.push_back({{"line", p.base.skipped[i].line}, {"message", p.base.skipped[i].message}});
  }
  record["workload"] = {{"source", p.base.source},
                        {"format", p.base.format},
                        {"digest_sha256", p.base.digest_sha256},
                        {"requests", m.scheduled_requests},
                        {"arrival_units", m.units},
                        {"skipped_lines", p.base.skipped.size()},
                        {"skipped", skipped},
                        {"scaling", m.notes},
                        {"chars_per_token_stated", o.chars_per_token}};
  record["configuration"] = configuration_of(o, p.endpoint, ropts, p.slo, before, p.ver);
  record["slos"] = {{"override", slo_to_json(p.slo)},
                    {"per_slice", slos_by_slice(m.reports.front().run.results)},
                    {"units", "ms"},
                    {"deadline_header", o.send_deadlines ? "x-ladder-deadline-ms = TTFT SLO, else E2E SLO" : "not sent"}};
  record["server"] = {{"models", before.models},
                      {"metrics_available", before.metrics_available},
                      {"metrics_before", before.metrics},
                      {"metrics_after", after.metrics}};
  record["machine"] = {{"cpu_model", machine.cpu_model}, {"cores", machine.cores},
                       {"memory_bytes", machine.memory_bytes}, {"hostname", machine.hostname}};
  record["runs"] = json::array();
  for (const auto& rr : m.reports) record["runs"].push_back(run_to_json(rr));
  if (!o.sweep.empty()) {
    std::vector<SweepPoint> points;
    json jp = json::array();
    for (const auto& rr : m.reports) {
      points.push_back({rr.offered_rate, rr.summary.overall.goodput_fraction, rr.summary.overall.goodput_rps});
      jp.push_back({{"offered_rate", rr.offered_rate},
                    {"attainment", rr.summary.overall.goodput_fraction},
                    {"goodput_rps", rr.summary.overall.goodput_rps}});
    }
    *verdict = find_max_goodput_rate(points, o.target);
    record["sweep"] = (*verdict)->to_json(o.target);
    record["sweep"]["mode"] = p.auto_sweep ? "auto (doubling, then bisection)" : "list";
    record["sweep"]["points"] = jp;
  }
  return record;
}

// --save-reference: the first run's outputs, named by the record's fingerprints.
Status save_reference_of(const ReplayCommandOptions& o, const ReplayPlan& p, const Measurements& m, json& record,
                         std::vector<std::string>& notes) {
  Reference ref;
  ref.created = record["timestamp"];
  ref.fingerprint_sha256 = record["configuration"]["fingerprint_sha256"];
  ref.server_fingerprint_sha256 = record["configuration"]["server_fingerprint_sha256"];
  ref.configuration = record["configuration"];
  ref.workload_source = p.base.source;
  ref.workload_digest = p.base.digest_sha256;
  ref.add_results(m.reports.front().run.results);
  LADDER_RETURN_IF_ERROR(save_reference(o.save_reference, ref));
  record["configuration"]["verification"]["saved_reference_requests"] = ref.entries.size();
  record["configuration"]["verification"]["saved_reference_with_token_ids"] = ref.with_token_ids();
  if (ref.with_token_ids() < ref.entries.size()) {
    notes.push_back(fmt::format("{} of {} reference entries have no token ids (the server sent none): exact checks "
                                "against them compare text",
                                ref.entries.size() - ref.with_token_ids(), ref.entries.size()));
  }
  return Status::ok();
}

Status write_outputs(const std::filesystem::path& dir, const json& record, const std::vector<RunReport>& reports) {
  LADDER_RETURN_IF_ERROR(write_file(dir / "record.json", record.dump(2, ' ', false, json::error_handler_t::replace) + "\n"));
  std::string lines;
  for (const auto& rr : reports) {
    for (const auto& r : rr.run.results) {
      json j = result_to_json(r);
      j["run"] = rr.label;
      lines += j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
  }
  LADDER_RETURN_IF_ERROR(write_file(dir / "requests.jsonl", lines));
  return write_file(dir / "report.html", make_report_html(record, reports));
}

// The summary on stdout; the exit code (failed requests, nothing verified).
int report(const ReplayCommandOptions& o, const ReplayPlan& p, const Measurements& m,
           const std::vector<std::string>& notes, const json& record, const std::optional<SweepVerdict>& verdict) {
  const std::filesystem::path dir(o.out_dir);
  std::string table = format_summary_table(m.reports);
  std::fputs(table.c_str(), stdout);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  std::printf("verification: %s%s\n", verify_mode_name(p.ver.mode),
              p.ver.reference ? (" against " + o.reference + " (fingerprint " +
                                 p.ver.reference->fingerprint_sha256.substr(0, 12) + ")").c_str()
                              : "");
  std::printf("configuration fingerprint: %s\n",
              record["configuration"]["fingerprint_sha256"].get<std::string>().c_str());
  if (verdict) std::printf("max goodput rate at %.0f%% attainment: %s\n", 100.0 * o.target, verdict->statement().c_str());
  if (!o.save_reference.empty()) std::printf("reference: %s\n", o.save_reference.c_str());
  std::printf("record: %s\nreport: %s\n", (dir / "record.json").string().c_str(), (dir / "report.html").string().c_str());
  std::fflush(stdout);

  size_t errors = 0, verified = 0;
  for (const auto& rr : m.reports) {
    errors += rr.summary.overall.errors;
    verified += rr.summary.overall.verified;
  }
  int code = kExitOk;
  if (errors > 0 && !o.allow_errors) {
    std::fprintf(stderr, "error: %zu requests failed (listed under 'not served' above and in the report); "
                 "--allow-errors accepts them\n", errors);
    code = kExitRunFailed;
  }
  if (verified == 0) {
    std::fprintf(stderr, "error: no request verified\n");
    code = kExitRunFailed;
  }
  return code;
}

}  // namespace

Result<int> run_replay_command(const ReplayCommandOptions& o) {
  LADDER_ASSIGN_OR_RETURN(ReplayPlan p, plan_replay(o));
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return io_error("cannot create " + o.out_dir + ": " + ec.message());

  if (o.wait_ready_s > 0) LADDER_RETURN_IF_ERROR(wait_until_ready(p.endpoint, o.api_key, o.wait_ready_s));
  const ServerInfo before = probe_server(p.endpoint, o.api_key, 10);
  ReplayOptions ropts = replay_options(o, p, before);
  Verifier verifier = p.ver.reference ? Verifier(p.ver.mode, &*p.ver.reference, p.ver.policy) : Verifier();
  ropts.verifier = &verifier;
  LADDER_ASSIGN_OR_RETURN(Measurements m, measure(o, p, ropts));
  const ServerInfo after = probe_server(p.endpoint, o.api_key, 10);

  std::optional<SweepVerdict> verdict;
  json record = build_record(o, p, ropts, m, before, after, &verdict);
  std::vector<std::string> notes = m.notes;
  if (!o.save_reference.empty()) LADDER_RETURN_IF_ERROR(save_reference_of(o, p, m, record, notes));
  LADDER_RETURN_IF_ERROR(write_outputs(o.out_dir, record, m.reports));
  return report(o, p, m, notes, record, verdict);
}

}  // namespace ladder::harness
