#include "harness/replay_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/build_info.h"
#include "harness/record.h"
#include "harness/report_html.h"

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

Status run_replay_command(const ReplayCommandOptions& o) {
  if (o.out_dir.empty()) return invalid_argument("--out DIR is required");
  if (!(o.target > 0 && o.target <= 1)) return invalid_argument("--target must be in (0, 1]");
  if (!(o.length_scale > 0)) return invalid_argument("--length-scale must be > 0");
  if (o.concurrency < 0) return invalid_argument("--concurrency must be >= 0");
  if (o.rate && !o.sweep.empty()) return invalid_argument("give --rate or --sweep, not both");
  LADDER_ASSIGN_OR_RETURN(Endpoint endpoint, parse_endpoint(o.endpoint));
  LADDER_ASSIGN_OR_RETURN(Slo slo, parse_slo(o.slo));
  LADDER_ASSIGN_OR_RETURN(ArrivalProcess arrival, parse_arrival(o.arrival));
  std::vector<double> sweep_rates;
  if (!o.sweep.empty()) {
    LADDER_ASSIGN_OR_RETURN(sweep_rates, parse_rates(o.sweep));
  }
  std::map<std::string, std::string> tenant_keys;
  for (const auto& tk : o.tenant_keys) {
    size_t eq = tk.find('=');
    if (eq == std::string::npos || eq == 0) return invalid_argument("--tenant-key is TENANT=KEY (got '" + tk + "')");
    tenant_keys[tk.substr(0, eq)] = tk.substr(eq + 1);
  }

  LADDER_ASSIGN_OR_RETURN(TextSynthesizer synth, TextSynthesizer::from_file(o.text_path, o.chars_per_token));
  LoadOptions load;
  load.format = o.format;
  load.strict = o.strict;
  load.conv.length_scale = o.length_scale;
  load.conv.max_input_tokens = o.max_input_tokens;
  load.conv.max_output_tokens = o.max_output_tokens;
  LADDER_ASSIGN_OR_RETURN(Workload base, load_workload(o.workload_path, load, synth));
  for (const auto& e : base.skipped) {
    std::fprintf(stderr, "warning: %s line %d skipped: %s\n", o.workload_path.c_str(), e.line, e.message.c_str());
  }
  if (base.requests.empty()) return invalid_argument("no usable requests in " + o.workload_path);

  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return io_error("cannot create " + o.out_dir + ": " + ec.message());

  ReplayOptions ropts;
  ropts.endpoint = endpoint;
  ropts.api_key = o.api_key;
  ropts.tenant_keys = tenant_keys;
  ropts.model = o.model;
  ropts.concurrency = o.concurrency;
  ropts.timeout_s = o.timeout_s;
  ropts.slo_override = slo;
  ropts.ignore_eos = o.ignore_eos;
  ropts.progress = !o.quiet;

  if (o.wait_ready_s > 0) LADDER_RETURN_IF_ERROR(wait_until_ready(endpoint, o.api_key, o.wait_ready_s));
  const ServerInfo server_before = probe_server(endpoint, o.api_key, 10);
  if (ropts.model.empty()) ropts.model = server_before.model_id.empty() ? "default" : server_before.model_id;

  // One schedule per run: the workload's timestamps, one --rate, or each sweep rate.
  std::vector<std::optional<double>> run_rates;
  if (!sweep_rates.empty()) {
    for (double r : sweep_rates) run_rates.push_back(r);
  } else {
    run_rates.push_back(o.rate);
  }
  std::vector<RunReport> reports;
  std::vector<std::string> notes;
  size_t scheduled_requests = 0, units = 0;
  for (size_t i = 0; i < run_rates.size(); ++i) {
    Workload w = base;
    ScheduleOptions so;
    so.time_scale = o.time_scale;
    so.rate = run_rates[i];
    so.arrival = arrival;
    so.seed = o.seed;
    so.duration_s = o.duration_s;
    so.max_requests = o.max_requests;
    LADDER_RETURN_IF_ERROR(apply_schedule(w, so));
    if (w.requests.empty()) return invalid_argument("the window (--duration/--requests) left no requests");
    if (i == 0) {
      notes = w.notes;
      if (!sweep_rates.empty()) {
        for (auto& n : notes) {
          if (n.rfind("arrivals re-drawn", 0) == 0) {
            n = fmt::format("arrivals re-drawn: {} at each sweep rate ({}) per second (seed {}), trace timestamps ignored",
                            arrival.to_string(), o.sweep, o.seed);
          }
        }
      }
      scheduled_requests = w.requests.size();
      units = arrival_unit_count(w.requests);
    }
    RunReport rr;
    rr.nominal_rate = run_rates[i];
    rr.offered_rate = run_rates[i] ? *run_rates[i] : offered_rate_of(w.requests);
    rr.label = run_rates[i] ? fmt::format("rate {}", *run_rates[i]) : "trace timing";
    ropts.label = rr.label;
    LADDER_ASSIGN_OR_RETURN(rr.run, run_replay(w.requests, ropts));
    rr.summary = summarize_run(rr.run.results, rr.run.window_s);
    reports.push_back(std::move(rr));
  }
  const ServerInfo server_after = probe_server(endpoint, o.api_key, 10);

  // record.json
  MachineInfo m = probe_machine();
  json record;
  record["schema_version"] = kRecordSchemaVersion;
  record["kind"] = "ladder.replay";
  record["timestamp"] = iso8601_utc_now();
  record["command_line"] = o.command_line;
  json skipped = json::array();
  for (size_t i = 0; i < base.skipped.size() && i < 100; ++i) {
    skipped.push_back({{"line", base.skipped[i].line}, {"message", base.skipped[i].message}});
  }
  record["workload"] = {{"source", base.source},
                        {"format", base.format},
                        {"digest_sha256", base.digest_sha256},
                        {"requests", scheduled_requests},
                        {"arrival_units", units},
                        {"skipped_lines", base.skipped.size()},
                        {"skipped", skipped},
                        {"scaling", notes},
                        {"chars_per_token_stated", o.chars_per_token}};
  json config = {{"endpoint", endpoint.url()},
                 {"model", ropts.model},
                 {"concurrency_cap", o.concurrency},
                 {"slo_override", slo_to_json(slo)},
                 {"arrival", o.rate || !sweep_rates.empty() ? arrival.to_string() : "trace timestamps"},
                 {"seed", o.seed},
                 {"time_scale", o.time_scale},
                 {"length_scale", o.length_scale},
                 {"max_input_tokens", o.max_input_tokens},
                 {"max_output_tokens", o.max_output_tokens},
                 {"ignore_eos", o.ignore_eos},
                 {"timeout_s", o.timeout_s}};
  // The engine's identity as a Ladder server states it in /v1/models (model
  // and tokenizer digests, KV format, revision); "unknown" from other servers.
  json served = json::object();
  if (server_before.models.contains("data") && server_before.models["data"].is_array()) {
    for (const json& mdl : server_before.models["data"]) {
      if (mdl.is_object() && mdl.contains("ladder") && mdl["ladder"].is_object() &&
          (ropts.model.empty() || mdl.value("id", "") == ropts.model || served.empty())) {
        served = mdl["ladder"];
      }
    }
  }
  auto served_field = [&](const char* key) {
    return served.contains(key) && served[key].is_string() ? served[key].get<std::string>() : std::string("unknown");
  };
  config["model_digest"] = served_field("model_digest");
  config["tokenizer_digest"] = served_field("tokenizer_digest");
  config["kv_dtype"] = served_field("kv_dtype");
  config["engine_revision"] = served_field("revision");
  config["harness_revision"] = git_revision();
  // What this run was measured under, as far as an HTTP client can see it.
  config["fingerprint_sha256"] = sha256_hex(json{{"config", config}, {"server_models", server_before.models}}.dump());
  config["fingerprint_covers"] =
      "replay configuration, model and tokenizer digests, KV format, engine and harness revisions, and the "
      "server's whole /v1/models answer";
  record["configuration"] = config;
  record["server"] = {{"models", server_before.models},
                      {"metrics_available", server_before.metrics_available},
                      {"metrics_before", server_before.metrics},
                      {"metrics_after", server_after.metrics}};
  record["machine"] = {{"cpu_model", m.cpu_model}, {"cores", m.cores}, {"memory_bytes", m.memory_bytes},
                       {"hostname", m.hostname}};
  record["runs"] = json::array();
  for (const auto& rr : reports) record["runs"].push_back(run_to_json(rr));
  if (!sweep_rates.empty()) {
    std::vector<SweepPoint> points;
    json jp = json::array();
    for (const auto& rr : reports) {
      points.push_back({rr.offered_rate, rr.summary.overall.goodput_fraction, rr.summary.overall.goodput_rps});
      jp.push_back({{"offered_rate", rr.offered_rate},
                    {"attainment", rr.summary.overall.goodput_fraction},
                    {"goodput_rps", rr.summary.overall.goodput_rps}});
    }
    SweepVerdict v = find_max_goodput_rate(points, o.target);
    record["sweep"] = {{"target", o.target},
                       {"points", jp},
                       {"max_goodput_rate", v.max_rate ? json(*v.max_rate) : json(nullptr)},
                       {"interpolated_rate", v.interpolated_rate ? json(*v.interpolated_rate) : json(nullptr)}};
  }

  const std::filesystem::path dir(o.out_dir);
  LADDER_RETURN_IF_ERROR(write_file(dir / "record.json", record.dump(2) + "\n"));
  std::string lines;
  for (const auto& rr : reports) {
    for (const auto& r : rr.run.results) {
      json j = result_to_json(r);
      j["run"] = rr.label;
      lines += j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
  }
  LADDER_RETURN_IF_ERROR(write_file(dir / "requests.jsonl", lines));
  LADDER_RETURN_IF_ERROR(write_file(dir / "report.html", make_report_html(record, reports)));

  std::string table = format_summary_table(reports);
  std::fputs(table.c_str(), stdout);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  if (record.contains("sweep")) {
    std::printf("max goodput rate at %.0f%% attainment: %s arrivals/s (interpolated %s)\n", 100.0 * o.target,
                record["sweep"]["max_goodput_rate"].dump().c_str(), record["sweep"]["interpolated_rate"].dump().c_str());
  }
  std::printf("record: %s\nreport: %s\n", (dir / "record.json").string().c_str(), (dir / "report.html").string().c_str());
  std::fflush(stdout);
  return Status::ok();
}

}  // namespace ladder::harness
