#include "ladder/climb.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "net/http_client.h"
#include "harness/record.h"
#include "harness/server_probe.h"
#include "harness/trace_formats.h"
#include "ladder/child_process.h"
#include "ladder/climb_report.h"
#include "ladder/ledger.h"

namespace ladder::climb {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::set<std::string> kRealTraceFormats = {"mooncake", "azure", "burstgpt"};

bool gives_rate(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--rate" || a.rfind("--rate=", 0) == 0) return true;
  }
  return false;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return io_error("cannot write " + path);
  return Status::ok();
}

// The configuration a replay's record names: what the ledger calls the
// fingerprint of a served configuration.
json fingerprint_of(const std::vector<Measurement>& runs) {
  if (runs.empty()) return nullptr;
  const json c = runs.front().record.value("configuration", json::object());
  json records = json::array();
  std::set<std::string> seen;
  for (const auto& m : runs) {
    if (seen.insert(m.fingerprint()).second) records.push_back(m.fingerprint());
  }
  return {{"model_digest", c.value("model_digest", "unknown")},
          {"tokenizer_digest", c.value("tokenizer_digest", "unknown")},
          {"engine_revision", c.value("engine_revision", "unknown")},
          {"kv_dtype", c.value("kv_dtype", "unknown")},
          {"server_config", c.value("server_config", json(nullptr))},
          {"server_fingerprint_sha256", c.value("server_fingerprint_sha256", "")},
          {"record_fingerprints", records}};
}

// A ledger line's "identity": what rung 1 served, from its fingerprint.
json identity_of(const json& fingerprint) {
  return {{"model_digest", fingerprint.value("model_digest", "unknown")},
          {"tokenizer_digest", fingerprint.value("tokenizer_digest", "unknown")},
          {"engine_revision", fingerprint.value("engine_revision", "unknown")}};
}

// The processes serving one rung: one `ladder serve`, or a disagg rung's
// prefill worker, decode worker and the router in front (the endpoint).
// Stopped front first, so no request reaches a stopped worker.
class RungServer {
 public:
  RungServer() = default;
  RungServer(RungServer&&) noexcept = default;
  RungServer& operator=(RungServer&& other) noexcept {
    stop();
    procs_ = std::move(other.procs_);
    return *this;
  }
  ~RungServer() { stop(); }
  void add(ServeProcess p) { procs_.push_back(std::move(p)); }
  const std::string& url() const { return procs_.back().url(); }
  std::string pids() const {
    std::vector<std::string> out;
    for (const auto& p : procs_) out.push_back(std::to_string(p.pid()));
    return fmt::format("{}", fmt::join(out, ", "));
  }
  void stop() {
    for (auto it = procs_.rbegin(); it != procs_.rend(); ++it) it->stop();
    procs_.clear();
  }

 private:
  std::vector<ServeProcess> procs_;
};

class Climber {
 public:
  Climber(const ClimbOptions& o, ClimbPolicy policy) : o_(o) {
    result_.policy = std::move(policy);
    const harness::MachineInfo m = harness::probe_machine();
    result_.machine = {{"cpu_model", m.cpu_model},
                       {"cores", m.cores},
                       {"memory_bytes", m.memory_bytes},
                       {"hostname", m.hostname}};
    result_.climb_id = harness::iso8601_utc_now() + "-" + result_.policy.digest_sha256.substr(0, 8);
    result_.ledger_path =
        o.ledger_path.empty() ? (fs::path(o.out_dir) / "ledger.jsonl").string() : o.ledger_path;
    result_.report_path = (fs::path(o.out_dir) / "climb.html").string();
  }

  Result<ClimbResult> run();

 private:
  const ClimbPolicy& policy() const { return result_.policy; }
  std::string rung_dir(int rung) const {
    return (fs::path(o_.out_dir) / fmt::format("rung{}-{}", rung, slug(policy().rungs[rung - 1].name)))
        .string();
  }
  // A load's folder under a rung's ("load2/"), empty for a climb at the workloads' own load.
  std::string load_dir(double load) const {
    return policy().loads_named() ? fmt::format("load{:g}/", load) : std::string();
  }
  // "at load 2x, " in progress lines of a climb over several loads.
  std::string load_prefix(double load) const {
    return policy().loads_named() ? "at load " + load_label(load) + ", " : std::string();
  }
  std::string reference_path(const WorkloadSpec& w) const {
    return (fs::path(o_.out_dir) / "reference" / (slug(w.name) + ".json")).string();
  }
  std::string model_of(const RungSpec& r) const { return r.model.empty() ? o_.model : r.model; }
  std::vector<std::string> serve_args(const RungSpec& r) const;
  // A disagg rung's worker ("prefill" | "decode") and router command lines.
  std::vector<std::string> worker_args(const RungSpec& r, const std::string& role) const;
  std::vector<std::string> route_args(const RungSpec& r, const std::string& prefill_url,
                                      const std::string& decode_url) const;
  Result<ServeProcess> start_process(const std::vector<std::string>& args, const std::string& log_prefix);
  Result<RungServer> start_rung(int rung, const std::string& log_dir);
  Status warm_up(const std::string& url) const;
  Result<Measurement> replay(const std::string& url, const WorkloadSpec& w, double load, const std::string& dir,
                             bool save_reference);
  Status make_references(const std::string& url, const std::string& rung1_name);
  // Refuses a policy whose workloads are all synthetic, before any server
  // starts: the format each replay will read (its --format, else detected
  // from the file's first bytes).
  Status check_real_trace() const;
  // A reference rung 1 did not give stops the climb: too many failed
  // requests, or a slice with too few answered ones.
  Status check_reference(const Measurement& m, const WorkloadSpec& w) const;
  // Pairs the candidate with the configuration serving now, block by block,
  // until the sequential gate decides or its looks run out (sequential.h).
  // Replays go to `prefix` + "<workload>-r<repeat>-<side>".
  Status compare(int current, RungOutcome& cand, const std::string& a_url, const std::string& b_url,
                 const std::string& prefix);
  // --calibrate N: rung 1 against a copy of itself, N times.
  Result<ClimbResult> calibrate();
  // Refuses a climb on a machine and model whose last calibration failed.
  Status check_calibration() const;
  // Replays one comparison makes at most: every workload, max_repeats, both sides.
  size_t max_compare_replays() const {
    return policy().workloads.size() * 2 * static_cast<size_t>(policy().max_repeats);
  }
  Status record(const LoadClimb& lc, const RungOutcome& r);
  // The rungs at one load, from rung 1 (started afresh) up.
  Result<LoadClimb> climb_at(double load);
  void progress(const std::string& line) const {
    std::fprintf(stderr, "climb: %s\n", line.c_str());
    std::fflush(stderr);
  }

  const ClimbOptions& o_;
  ClimbResult result_;
  size_t replays_done_ = 0;
  size_t replays_total_ = 0;
  std::string verify_policy_path_;
  std::vector<Measurement> reference_;  // rung 1's reference runs, one per workload
};

std::vector<std::string> Climber::serve_args(const RungSpec& r) const {
  std::vector<std::string> a{"--log-level", "warn", "serve", "--host", "127.0.0.1", "--port", "0", "--model",
                             model_of(r)};
  a.insert(a.end(), r.args.begin(), r.args.end());
  return a;
}

std::vector<std::string> Climber::worker_args(const RungSpec& r, const std::string& role) const {
  std::vector<std::string> a = serve_args(r);
  a.insert(a.end(), {"--role", role});
  if (role == "decode") a.insert(a.end(), {"--kv-host", "127.0.0.1"});
  const auto& own = role == "prefill" ? r.prefill_args : r.decode_args;
  a.insert(a.end(), own.begin(), own.end());
  return a;
}

std::vector<std::string> Climber::route_args(const RungSpec& r, const std::string& prefill_url,
                                             const std::string& decode_url) const {
  std::vector<std::string> a{"--log-level", "warn", "route",     "--host",    "127.0.0.1", "--port",
                             "0",           "--model", model_of(r), "--prefill", prefill_url, "--decode",
                             decode_url};
  a.insert(a.end(), r.route_args.begin(), r.route_args.end());
  // The router keeps decoding steps under the TPOT SLO the climb scores by,
  // unless the rung names its own objective.
  const std::optional<double>& tpot = policy().slo.tpot_ms;
  if (tpot && std::find(r.route_args.begin(), r.route_args.end(), "--tpot-ms") == r.route_args.end()) {
    a.insert(a.end(), {"--tpot-ms", fmt::format("{:g}", *tpot)});
  }
  return a;
}

Result<ServeProcess> Climber::start_process(const std::vector<std::string>& args, const std::string& log_prefix) {
  progress(fmt::format("  ladder {}", fmt::join(args, " ")));
  return ServeProcess::start(o_.binary, args, log_prefix, o_.ready_timeout_s);
}

Result<RungServer> Climber::start_rung(int rung, const std::string& log_dir) {
  const RungSpec& r = policy().rungs[rung - 1];
  fs::create_directories(log_dir);
  progress(fmt::format("starting rung {} '{}' ({})", rung, r.name, topology_name(r.topology)));
  RungServer s;
  if (r.topology == Topology::kSingle) {
    LADDER_ASSIGN_OR_RETURN(ServeProcess p, start_process(serve_args(r), log_dir + "/serve"));
    s.add(std::move(p));
  } else {
    LADDER_ASSIGN_OR_RETURN(ServeProcess prefill, start_process(worker_args(r, "prefill"), log_dir + "/prefill"));
    const std::string prefill_url = prefill.url();
    s.add(std::move(prefill));
    LADDER_ASSIGN_OR_RETURN(ServeProcess decode, start_process(worker_args(r, "decode"), log_dir + "/decode"));
    const std::string decode_url = decode.url();
    s.add(std::move(decode));
    LADDER_ASSIGN_OR_RETURN(ServeProcess router,
                            start_process(route_args(r, prefill_url, decode_url), log_dir + "/route"));
    s.add(std::move(router));
  }
  LADDER_RETURN_IF_ERROR(warm_up(s.url()));
  progress(fmt::format("rung {} '{}' is ready at {} (pid {}), warmed up with {} requests", rung, r.name, s.url(),
                       s.pids(), policy().warmup_requests));
  return s;
}

Status Climber::warm_up(const std::string& url) const {
  if (policy().warmup_requests == 0) return Status::ok();
  LADDER_ASSIGN_OR_RETURN(net::Endpoint ep, net::parse_endpoint(url));
  const harness::ServerInfo info = harness::probe_server(ep, "", 10);
  net::HttpRequestSpec spec;
  spec.method = "POST";
  spec.path = "/v1/completions";
  spec.body =
      json{{"model", info.model_id}, {"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}}
          .dump();
  spec.timeout_s = 120;
  for (int i = 0; i < policy().warmup_requests; ++i) {
    Result<net::HttpResponse> r = net::http_fetch(ep, spec);
    if (!r.is_ok()) return invalid_argument("warm-up request failed: " + r.status().message());
    if (r->status != 200)
      return invalid_argument(fmt::format("warm-up request got HTTP {}: {}", r->status, r->body));
  }
  return Status::ok();
}

Result<Measurement> Climber::replay(const std::string& url, const WorkloadSpec& w, double load,
                                    const std::string& dir, bool save_reference) {
  fs::create_directories(dir);
  // The policy checked every workload's options at every load.
  LADDER_ASSIGN_OR_RETURN(const std::vector<std::string> args, workload_args_at_load(w.args, load));
  std::vector<std::string> argv{o_.binary,    "--log-level", "warn",  "replay", "--endpoint", url,
                                "--workload", w.path,        "--out", dir,      "--quiet"};
  if (const std::string slo = slo_argument(policy().slo); !slo.empty()) {
    argv.insert(argv.end(), {"--slo", slo});
  }
  if (gives_rate(args)) argv.insert(argv.end(), {"--seed", std::to_string(policy().seed)});
  if (save_reference) {
    argv.insert(argv.end(), {"--save-reference", reference_path(w)});
  } else {
    argv.insert(argv.end(), {"--reference", reference_path(w), "--verify",
                             harness::verify_mode_name(policy().replay_mode())});
    if (!verify_policy_path_.empty()) argv.insert(argv.end(), {"--policy", verify_policy_path_});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  LADDER_ASSIGN_OR_RETURN(ChildProcess child,
                          ChildProcess::spawn(argv, dir + "/summary.txt", dir + "/replay.log"));
  const int code = child.wait();
  if (code != 0 && code != 2) {
    return invalid_argument(
        fmt::format("ladder replay of workload '{}' exited with code {}: {} (log {}/replay.log)", w.name,
                    code, last_lines(dir + "/replay.log"), dir));
  }
  LADDER_ASSIGN_OR_RETURN(Measurement m, read_measurement(dir, policy()));
  m.exit_code = code;
  m.workload = w.name;
  return m;
}

Status Climber::check_reference(const Measurement& m, const WorkloadSpec& w) const {
  size_t failed = 0;
  const RequestOutcome* first = nullptr;
  std::map<std::string, std::pair<size_t, size_t>> slices;  // slice -> (sent, answered)
  for (const RequestOutcome& r : m.requests) {
    auto& [sent, answered] = slices[r.slice];
    ++sent;
    if (r.answered) {
      ++answered;
      continue;
    }
    ++failed;
    if (first == nullptr) first = &r;
  }
  const size_t n = m.requests.size();
  const std::string log = fmt::format("(records in {})", m.dir);
  if (n == 0) return invalid_argument(fmt::format("the reference of workload '{}' has no request {}", w.name, log));
  if (static_cast<double>(failed) > policy().max_reference_errors * static_cast<double>(n)) {
    return invalid_argument(fmt::format(
        "rung 1 '{}' failed {} of {} reference requests of workload '{}' (max_reference_errors {:g}); the "
        "first: request {}: {}. A climb cannot judge a candidate against a reference rung 1 does not "
        "give: fix rung 1's options (its context length, queue or bounds) or the workload {}",
        policy().rungs.front().name, failed, n, w.name, policy().max_reference_errors, first->key, first->error,
        log));
  }
  for (const auto& [slice, counts] : slices) {
    if (static_cast<int>(counts.second) < policy().min_slice_requests) {
      return invalid_argument(fmt::format(
          "rung 1 '{}' answered {} of the {} reference requests of workload '{}' slice '{}', fewer than "
          "min_slice_requests {}: the slice cannot be judged on so few; send more requests of it or lower "
          "min_slice_requests {}",
          policy().rungs.front().name, counts.second, counts.first, w.name, slice, policy().min_slice_requests,
          log));
    }
  }
  return Status::ok();
}

Status Climber::check_real_trace() const {
  std::set<std::string> formats;
  for (const WorkloadSpec& w : policy().workloads) {
    std::string format = "auto";
    for (size_t i = 0; i < w.args.size(); ++i) {
      if (w.args[i] == "--format" && i + 1 < w.args.size()) format = w.args[i + 1];
      if (w.args[i].starts_with("--format=")) format = w.args[i].substr(9);
    }
    if (format == "auto") {
      std::ifstream in(w.path, std::ios::binary);
      if (!in) return not_found(fmt::format("{}: workload '{}': cannot read {}", policy().source, w.name, w.path));
      std::string head(200, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<size_t>(in.gcount()));
      format = harness::detect_workload_format(head);
    }
    formats.insert(format);
  }
  for (const auto& f : formats) {
    if (kRealTraceFormats.count(f) > 0) return Status::ok();
  }
  return invalid_argument(fmt::format("{}: every workload is synthetic (formats: {}); a climb needs at least one "
                                      "real trace (mooncake, azure or burstgpt, e.g. ../shared/traces/)",
                                      policy().source, fmt::join(formats, ", ")));
}

Status Climber::make_references(const std::string& url, const std::string& rung1_name) {
  fs::create_directories(fs::path(o_.out_dir) / "reference");
  for (const auto& w : policy().workloads) {
    const std::string dir = (fs::path(o_.out_dir) / "reference" / slug(w.name)).string();
    LADDER_ASSIGN_OR_RETURN(Measurement m, replay(url, w, 1.0, dir, true));
    m.side = "reference";
    m.rung = 1;
    m.rung_name = rung1_name;
    const std::string format = m.record.value("workload", json::object()).value("format", "?");
    progress(fmt::format("[{}/{}] reference: rung 1 '{}' on {} ({} format): {} requests, {} served -> {}",
                         ++replays_done_, replays_total_, rung1_name, w.name, format, m.requests.size(),
                         m.verified(), reference_path(w)));
    LADDER_RETURN_IF_ERROR(check_reference(m, w));
    reference_.push_back(std::move(m));
  }
  return Status::ok();
}

Status Climber::compare(int current, RungOutcome& cand, const std::string& a_url, const std::string& b_url,
                        const std::string& prefix) {
  const RungSpec& a_spec = policy().rungs[current - 1];
  SequentialGate gate(policy().plan(), policy().min_gain);
  const auto started = std::chrono::steady_clock::now();
  size_t done_here = 0;
  int repeats = 0;
  for (int block = 0;; ++block) {
    const std::string order = block_order(block);
    for (const WorkloadSpec& w : policy().workloads) {
      // The block's four replays in order; the first A pairs with the first
      // B, the second with the second.
      Measurement runs[2][2];  // [side: 0 A, 1 B][which]
      int count[2] = {0, 0};
      bool a_first[2] = {};
      for (size_t pos = 0; pos < order.size(); ++pos) {
        const bool is_a = order[pos] == 'A';
        const int side = is_a ? 0 : 1;
        const int which = count[side]++;
        if (count[side] > count[1 - side]) a_first[which] = is_a;
        const int rep = repeats + which + 1;
        const std::string dir = fmt::format("{}{}-r{}-{}", prefix, slug(w.name), rep, is_a ? "A" : "B");
        Result<Measurement> measured = replay(is_a ? a_url : b_url, w, cand.load, dir, false);
        ++done_here;
        if (!measured.is_ok() && !is_a) {
          // The candidate could not be measured (its server died, say):
          // that is its decision; the configuration serving now goes on.
          const std::string msg = measured.status().message();
          cand.decision = "failed";
          cand.reason = "failed: " + msg.substr(0, msg.find('\n'));
          replays_total_ -= max_compare_replays() - done_here;
          return Status::ok();
        }
        if (!measured.is_ok()) return measured.status();
        Measurement& m = runs[side][which];
        m = std::move(*measured);
        m.repeat = rep;
        m.position = static_cast<int>(done_here);
        m.side = is_a ? "A" : "B";
        m.rung = is_a ? current : cand.rung;
        m.rung_name = is_a ? a_spec.name : cand.spec.name;
        progress(fmt::format(
            "[{}/{}] {}rung {} '{}' vs rung {} '{}', {} repeat {} (block {} {}), {} rung {}: good {}/{} "
            "(verified {}), {:.2f} good/s -> {}",
            ++replays_done_, replays_total_, load_prefix(cand.load), cand.rung, cand.spec.name, current,
            a_spec.name, w.name, rep, block + 1, order, m.side, m.rung, m.good(), m.requests.size(), m.verified(),
            m.window_s() > 0 ? static_cast<double>(m.good()) / m.window_s() : 0.0, dir));
      }
      for (int which = 0; which < 2; ++which) {
        gate.add(summarize_run(w.name, repeats + which + 1, a_first[which],
                               pair_by_key(runs[0][which], runs[1][which])));
        cand.paired.push_back(std::move(runs[0][which]));
        cand.own.push_back(std::move(runs[1][which]));
      }
    }
    repeats += 2;
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bool budget_spent = policy().max_compare_s > 0 && elapsed_s >= policy().max_compare_s;
    if (gate.after_block(repeats, budget_spent)) break;
  }
  replays_total_ -= max_compare_replays() - done_here;
  cand.goodput = gate.interval();
  for (const PairedRun& r : gate.runs()) cand.order += r.a_first ? "AB" : "BA";
  if (gate.verdict() == Verdict::kUndecided) {
    progress(fmt::format("{}rung {} '{}': undecided after {} repeats per workload ({} of {} looks)",
                         load_prefix(cand.load), cand.rung, cand.spec.name, repeats, gate.looks_taken(),
                         gate.plan().looks.size()));
  }
  std::vector<const Measurement*> own;
  for (const auto& m : cand.own) own.push_back(&m);
  cand.quality = slice_quality(own, policy());
  cand.figures = rung_figures(own, policy());
  cand.fingerprint = fingerprint_of(cand.own);
  const GateDecision d = decide(*cand.goodput, cand.quality, policy().min_gain);
  cand.decision = d.promote ? "promoted" : "rejected";
  cand.reason = d.reason;
  return Status::ok();
}

Status Climber::record(const LoadClimb& lc, const RungOutcome& r) {
  const RungOutcome& rung1 = lc.rungs.front();
  const json& id_src = rung1.fingerprint;
  json records = json::array();
  auto add = [&](const Measurement& m) {
    records.push_back({{"workload", m.workload},
                       {"repeat", m.repeat},
                       {"position", m.position},
                       {"side", m.side},
                       {"rung", m.rung},
                       {"path", (fs::path(m.dir) / "record.json").string()},
                       {"fingerprint_sha256", m.fingerprint()},
                       {"requests", m.requests.size()},
                       {"good", m.good()},
                       {"verified", m.verified()},
                       {"window_s", m.window_s()},
                       {"replay_exit_code", m.exit_code}});
  };
  for (const auto& m : r.paired) add(m);
  for (const auto& m : r.own) add(m);
  json quality = json::array();
  for (const auto& q : r.quality) quality.push_back(to_json(q));
  json margin = {{"default",
                  {{"verify", harness::verify_mode_name(policy().default_margin.verify)},
                   {"margin", policy().default_margin.margin}}}};
  for (const auto& [name, m] : policy().slice_margins) {
    margin["slices"][name] = {{"verify", harness::verify_mode_name(m.verify)}, {"margin", m.margin}};
  }
  margin["approx_thresholds"] = policy().thresholds.to_json();
  margin["min_gain"] = policy().min_gain;
  margin["confidence"] = policy().confidence;
  const RungSpec& serving = policy().rungs[r.serving_after - 1];
  json e = {
      {"kind", "ladder.ledger"},
      {"schema_version", kLedgerSchemaVersion},
      {"climb_id", result_.climb_id},
      {"timestamp", harness::iso8601_utc_now()},
      {"rung", r.rung},
      {"load", r.load},
      {"name", r.spec.name},
      {"decision", r.decision},
      {"reason", r.reason},
      {"serving_after", {{"rung", r.serving_after}, {"name", serving.name}}},
      {"compared_with", r.compared_with > 0 ? json{{"rung", r.compared_with},
                                                   {"name", policy().rungs[r.compared_with - 1].name}}
                                            : json(nullptr)},
      {"serve_args", r.spec.args},
      {"topology", topology_name(r.spec.topology)},
      {"model", fs::absolute(r.model).lexically_normal().string()},
      {"model_override", !r.spec.model.empty()},
      {"rung1_args", policy().rungs.front().args},
      {"identity", identity_of(id_src)},
      {"fingerprint", r.fingerprint},
      {"goodput", r.goodput ? to_json(*r.goodput) : json(nullptr)},
      {"order", r.order.empty() ? json(nullptr)
                                : json{{"pairs", r.order},
                                       {"scheme", "blocks of A B B A and B A A B in turn, per workload; "
                                                  "'pairs' names each paired run's first side"}}},
      {"figures", r.figures ? to_json(*r.figures) : json(nullptr)},
      {"quality", quality},
      {"cost",
       {{"core_s_per_verified_request",
         r.figures && r.figures->core_s_per_verified ? json(*r.figures->core_s_per_verified) : json(nullptr)},
        {"server_core_s",
         r.figures && r.figures->server_core_s ? json(*r.figures->server_core_s) : json(nullptr)}}},
      {"margin", margin},
      {"policy",
       {{"path", policy().source},
        {"digest_sha256", policy().digest_sha256},
        {"min_repeats", policy().min_repeats},
        {"max_repeats", policy().max_repeats},
        {"looks", policy().plan().looks},
        {"loads", policy().loads},
        {"slo", slo_argument(policy().slo)}}},
      {"records", records},
      {"report", result_.report_path},
      {"machine", result_.machine}};
  if (r.spec.topology == Topology::kDisagg) {
    e["prefill_args"] = r.spec.prefill_args;
    e["decode_args"] = r.spec.decode_args;
    e["route_args"] = r.spec.route_args;
  }
  if (r.decision == "failed") e["fingerprint"] = nullptr;
  return append_ledger_entry(result_.ledger_path, e);
}

Result<LoadClimb> Climber::climb_at(double load) {
  const ClimbPolicy& p = policy();
  LoadClimb lc;
  lc.load = load;
  RungOutcome rung1;
  rung1.rung = 1;
  rung1.load = load;
  rung1.spec = p.rungs.front();
  rung1.model = rung1.spec.model.empty() ? o_.model : rung1.spec.model;
  rung1.decision = "baseline";
  rung1.reason = "baseline: rung 1 is the floor and the reference";
  rung1.own = reference_;
  rung1.fingerprint = fingerprint_of(rung1.own);
  lc.rungs.push_back(std::move(rung1));
  if (policy().loads_named()) progress("load " + load_label(load) + ": climbing from rung 1");
  LADDER_ASSIGN_OR_RETURN(RungServer current_server, start_rung(1, rung_dir(1) + "/" + load_dir(load)));
  int current = 1;

  for (int k = 2; k <= static_cast<int>(p.rungs.size()); ++k) {
    RungOutcome cand;
    cand.rung = k;
    cand.load = load;
    cand.spec = p.rungs[k - 1];
    cand.model = cand.spec.model.empty() ? o_.model : cand.spec.model;
    cand.compared_with = current;
    Result<RungServer> server = start_rung(k, rung_dir(k) + "/" + load_dir(load));
    if (!server.is_ok()) {
      cand.decision = "failed";
      const std::string msg = server.status().message();
      cand.reason = "failed: the configuration did not start: " + msg.substr(0, msg.find('\n'));
      replays_total_ -= max_compare_replays();
    } else {
      LADDER_RETURN_IF_ERROR(
          compare(current, cand, current_server.url(), server->url(), rung_dir(k) + "/" + load_dir(load)));
      // Rung 1's own figures at this load: its side of the first comparison
      // (the reference runs measured it unverified).
      if (current == 1 && !cand.paired.empty() && !lc.rungs.front().figures) {
        RungOutcome& r1 = lc.rungs.front();
        std::vector<const Measurement*> a_runs;
        for (const auto& m : cand.paired) a_runs.push_back(&m);
        r1.quality = slice_quality(a_runs, p);
        r1.figures = rung_figures(a_runs, p);
      }
    }
    if (cand.decision == "promoted") {
      current_server.stop();
      current_server = std::move(*server);
      current = k;
    } else if (server.is_ok()) {
      server->stop();
    }
    cand.serving_after = current;
    progress(fmt::format("{}rung {} '{}': {}", load_prefix(load), k, cand.spec.name, cand.reason));
    if (lc.rungs.size() == 1) LADDER_RETURN_IF_ERROR(record(lc, lc.rungs.front()));
    LADDER_RETURN_IF_ERROR(record(lc, cand));
    lc.rungs.push_back(std::move(cand));
  }
  current_server.stop();
  lc.serving = current;
  return lc;
}

Status Climber::check_calibration() const {
  std::error_code ec;
  if (!fs::exists(result_.ledger_path, ec)) return Status::ok();
  LADDER_ASSIGN_OR_RETURN(std::vector<json> calibrations, load_calibrations(result_.ledger_path));
  const std::string digest = fingerprint_of(reference_).value("model_digest", "unknown");
  for (auto it = calibrations.rbegin(); it != calibrations.rend(); ++it) {
    const json& c = *it;
    if (c["machine"].value("cpu_model", "") != result_.machine.value("cpu_model", "") ||
        c["machine"].value("cores", 0) != result_.machine.value("cores", 0) ||
        c["identity"].value("model_digest", "") != digest) {
      continue;
    }
    if (c["summary"]["passed"].get<bool>()) return Status::ok();
    return failed_precondition(fmt::format(
        "the last calibration of this machine and model ({}, in {}) failed: {}. The gate is not to be trusted "
        "here until a calibration passes: quiet the machine or pin the servers to cores, lengthen the "
        "workloads or raise max_repeats (docs/CLIMB.md \"When the machine is noisy\"), then run `ladder "
        "climb --calibrate N` again",
        c.value("climb_id", "?"), result_.ledger_path, c.value("line", "?")));
  }
  return Status::ok();
}

Result<ClimbResult> Climber::calibrate() {
  const ClimbPolicy& p = policy();
  const int n = o_.calibrate;
  replays_total_ = p.workloads.size() + static_cast<size_t>(n) * max_compare_replays();
  progress(fmt::format("calibration {}: {} comparisons of rung 1 '{}' with a copy of itself, {} workloads, "
                       "{} to {} repeats per workload and side, at most {} replays; ledger {}",
                       result_.climb_id, n, p.rungs.front().name, p.workloads.size(), p.min_repeats,
                       p.max_repeats, replays_total_, result_.ledger_path));
  LADDER_RETURN_IF_ERROR(check_real_trace());
  {
    LADDER_ASSIGN_OR_RETURN(RungServer reference_server, start_rung(1, rung_dir(1) + "/reference"));
    LADDER_RETURN_IF_ERROR(make_references(reference_server.url(), p.rungs.front().name));
  }
  const std::string dir = (fs::path(o_.out_dir) / "calibration").string();
  // Two processes of one configuration: what differs between them is what
  // differs between any two servers on this machine.
  LADDER_ASSIGN_OR_RETURN(RungServer a, start_rung(1, dir + "/A"));
  LADDER_ASSIGN_OR_RETURN(RungServer b, start_rung(1, dir + "/B"));
  std::vector<GoodputInterval> intervals;
  json comparisons = json::array();
  for (int i = 1; i <= n; ++i) {
    RungOutcome self;
    self.rung = 1;
    self.spec = p.rungs.front();
    self.compared_with = 1;
    LADDER_RETURN_IF_ERROR(compare(1, self, a.url(), b.url(), fmt::format("{}/{}/", dir, i)));
    if (self.decision == "failed") return io_error("calibration comparison " + std::to_string(i) + ": " + self.reason);
    intervals.push_back(*self.goodput);
    comparisons.push_back(to_json(*self.goodput));
    progress(fmt::format("calibration {}/{}: {}", i, n, self.reason));
  }
  const CalibrationSummary summary = summarize_calibration(intervals, p.plan(), p.workloads.size());
  json e = {{"kind", kCalibrationKind},
            {"schema_version", kLedgerSchemaVersion},
            {"climb_id", result_.climb_id},
            {"timestamp", harness::iso8601_utc_now()},
            {"rung1", {{"name", p.rungs.front().name}, {"serve_args", p.rungs.front().args}}},
            {"identity", identity_of(fingerprint_of(reference_))},
            {"policy",
             {{"path", p.source},
              {"digest_sha256", p.digest_sha256},
              {"confidence", p.confidence},
              {"min_repeats", p.min_repeats},
              {"max_repeats", p.max_repeats},
              {"looks", p.plan().looks},
              {"min_gain", p.min_gain}}},
            {"summary", to_json(summary)},
            {"comparisons", comparisons},
            {"line", calibration_line(summary)},
            {"machine", result_.machine}};
  LADDER_RETURN_IF_ERROR(append_ledger_entry(result_.ledger_path, e));
  result_.calibration = summary;
  return result_;
}

Result<ClimbResult> Climber::run() {
  fs::create_directories(o_.out_dir);
  if (o_.calibrate > 0) return calibrate();
  const ClimbPolicy& p = policy();
  // At most: the sequential gate usually stops sooner, and the total shrinks as it does.
  replays_total_ = p.workloads.size() + p.loads.size() * max_compare_replays() * (p.rungs.size() - 1);
  if (p.replay_mode() == harness::VerifyMode::kApprox) {
    verify_policy_path_ = (fs::path(o_.out_dir) / "verify-policy.toml").string();
    LADDER_RETURN_IF_ERROR(write_text(verify_policy_path_, p.thresholds_toml()));
  }
  std::vector<std::string> loads;
  for (double l : p.loads) loads.push_back(load_label(l));
  progress(fmt::format("climb {}: {} rungs, {} workloads, {} repeats per workload and side, load{} {}, "
                       "at most {} replays; ledger {}",
                       result_.climb_id, p.rungs.size(), p.workloads.size(),
                       p.min_repeats == p.max_repeats ? std::to_string(p.max_repeats)
                                                      : fmt::format("{} to {}", p.min_repeats, p.max_repeats),
                       loads.size() > 1 ? "s" : "", fmt::join(loads, " "), replays_total_, result_.ledger_path));
  LADDER_RETURN_IF_ERROR(check_real_trace());
  {
    LADDER_ASSIGN_OR_RETURN(RungServer reference_server, start_rung(1, rung_dir(1) + "/reference"));
    LADDER_RETURN_IF_ERROR(make_references(reference_server.url(), p.rungs.front().name));
  }
  LADDER_RETURN_IF_ERROR(check_calibration());
  for (double load : p.loads) {
    LADDER_ASSIGN_OR_RETURN(LoadClimb lc, climb_at(load));
    result_.loads.push_back(std::move(lc));
  }
  LADDER_RETURN_IF_ERROR(write_text(result_.report_path, make_climb_report(result_)));
  progress("report: " + result_.report_path);
  return result_;
}

}  // namespace

std::string verdict_line(const ClimbResult& r) {
  std::vector<std::string> clauses;
  for (const LoadClimb& lc : r.loads) {
    const RungOutcome& s = lc.rungs[static_cast<size_t>(lc.serving - 1)];
    const std::string at = r.policy.loads_named() ? "at load " + load_label(lc.load) + " " : "";
    if (lc.serving == 1) {
      clauses.push_back(fmt::format("{}serving rung 1 '{}': no candidate was promoted ({} tested)", at,
                                    s.spec.name, lc.rungs.size() - 1));
    } else {
      clauses.push_back(fmt::format("{}serving rung {} '{}' ({})", at, s.rung, s.spec.name, s.reason));
    }
  }
  return fmt::format("verdict: {}", fmt::join(clauses, "; "));
}

Result<ClimbResult> run_climb(const ClimbOptions& opts) {
  LADDER_ASSIGN_OR_RETURN(ClimbPolicy policy, load_climb_policy(opts.policy_path));
  ClimbOptions o = opts;
  if (o.out_dir.empty()) o.out_dir = "climb-out";
  if (o.binary.empty()) o.binary = self_executable();
  if (o.model.empty()) return invalid_argument("--model is required: rung 1's model file");
  std::error_code ec;
  if (!fs::is_regular_file(o.model, ec)) return invalid_argument("--model: no such file " + o.model);
  for (const auto& r : policy.rungs) {
    if (!r.model.empty() && !fs::is_regular_file(r.model, ec)) {
      return invalid_argument(
          fmt::format("{} [[rung]] '{}' 'model': no such file {}", policy.source, r.name, r.model));
    }
  }
  Climber c(o, std::move(policy));
  return c.run();
}

}  // namespace ladder::climb
