// report.html in headless Chromium (Debian's /usr/bin/chromium): no console
// errors, and the page's own count of coloured pixels in each chart's plot
// area shows the charts were drawn. Negative controls show both checks can fail.
#include "harness/report_html.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "harness/quality_summary.h"

#include "test_support.h"

namespace ladder::harness {
namespace {

using nlohmann::json;

RunReport make_run(const std::string& label, double rate, int n, double base_ttft) {
  RunReport rr;
  rr.label = label;
  rr.nominal_rate = rate;
  rr.offered_rate = rate;
  for (int i = 0; i < n; ++i) {
    RequestResult r;
    r.index = static_cast<size_t>(i);
    r.tenant = i % 2 ? "b" : "a";
    r.slice = i % 3 ? "chat" : "agent";
    r.http_status = 200;
    r.finish_reason = "length";
    r.sent_s = i / rate;
    r.ttft_ms = base_ttft + 3.0 * i;
    r.output_tokens = 8;
    r.e2e_ms = *r.ttft_ms + 70;
    r.tpot_ms = 10 + 0.5 * i;
    r.slo.ttft_ms = base_ttft + 40;
    verify_result(r, std::nullopt);
    rr.run.results.push_back(r);
  }
  for (int k = 0; k <= 20; ++k) {
    TimelineSample s;
    s.t_s = 0.25 * k;
    s.in_flight = k % 5;
    s.server_queue = static_cast<double>(k % 3);
    rr.run.timeline.push_back(s);
  }
  rr.run.window_s = n / rate + 0.1;
  rr.summary = summarize_run(rr.run.results, rr.run.window_s);
  return rr;
}

json make_record() {
  return {{"timestamp", "2026-01-01T00:00:00Z"},
          {"configuration", {{"endpoint", "http://127.0.0.1:1"}, {"model", "m"}}},
          {"workload", {{"source", "w.jsonl"}, {"format", "ladder"}, {"digest_sha256", "00"},
                        {"scaling", {"time scale 0.5 <b>&"}}}},
          {"sweep", {{"target", 0.9}, {"max_goodput_rate", 2.0}, {"interpolated_rate", 2.5}}},
          {"machine", {{"cpu_model", "test"}}}};
}

struct Rendered {
  std::string dom;     // the page after its scripts ran
  json counts;         // canvas id -> coloured pixels in its plot area
  std::string errors;  // what the page caught
  std::string console; // chromium's log lines about console errors / uncaught exceptions
};

Rendered render(const std::string& html, const std::string& name) {
  const std::string dir = ladder::testing::temp_dir() + "/" + name;
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/report.html";
  std::ofstream(page) << html;
  std::vector<std::string> argv = {"timeout", "120", "/usr/bin/chromium", "--headless", "--no-sandbox",
                                   "--disable-gpu", "--disable-background-networking",
                                   "--disable-component-update", "--disable-sync", "--no-first-run",
                                   "--user-data-dir=" + dir + "/profile", "--enable-logging=stderr", "--v=0",
                                   "--virtual-time-budget=5000", "--dump-dom", "file://" + page};
  auto res = ladder::testing::run_command(argv);
  EXPECT_EQ(res.exit_code, 0) << res.err;
  Rendered out;
  out.dom = res.out;
  auto grab = [&](const std::string& id) {
    const std::string open = "<pre id=\"" + id + "\">";
    size_t b = res.out.find(open);
    if (b == std::string::npos) return std::string();
    b += open.size();
    return res.out.substr(b, res.out.find("</pre>", b) - b);
  };
  std::string sc = grab("selfcheck");
  out.counts = json::parse(sc.empty() ? "{}" : sc, nullptr, false);
  out.errors = grab("errors");
  std::istringstream lines(res.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) {
      out.console += line + "\n";
    }
  }
  return out;
}

TEST(ReportHtml, RendersChartsWithoutErrors) {
  std::vector<RunReport> runs{make_run("rate 1", 1, 12, 20), make_run("rate 2", 2, 16, 35),
                              make_run("rate 4", 4, 20, 60)};
  std::string html = make_report_html(make_record(), runs);
  // Offline: nothing is fetched from anywhere.
  EXPECT_EQ(html.find("http://cdn"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<b>&"), std::string::npos);  // notes are escaped
  Rendered r = render(html, "full");
  EXPECT_EQ(r.errors, "");
  EXPECT_EQ(r.console, "");
  ASSERT_TRUE(r.counts.is_object()) << "no self-check written";
  for (const char* id : {"cdf-ttft", "cdf-tpot", "cdf-e2e", "goodput", "timeline-0", "timeline-1", "timeline-2"}) {
    ASSERT_TRUE(r.counts.contains(id)) << id;
    EXPECT_GT(r.counts[id].get<int>(), 300) << id << " looks empty";
  }
}

TEST(ReportHtml, ChecksCanFail) {
  // A run with no successful requests draws nothing in its latency CDFs.
  RunReport empty;
  empty.label = "all failed";
  empty.offered_rate = 1;
  RequestResult failed;
  failed.error = "connect refused";
  empty.run.results.push_back(failed);
  empty.run.window_s = 1;
  empty.summary = summarize_run(empty.run.results, 1);
  Rendered r = render(make_report_html(make_record(), {empty}), "empty");
  EXPECT_EQ(r.errors, "");
  EXPECT_EQ(r.counts.value("cdf-ttft", -1), 0);
  EXPECT_EQ(r.counts.value("cdf-e2e", -1), 0);

  // A script error is caught by the page and by Chromium's console log.
  std::string html = make_report_html(make_record(), {make_run("x", 1, 4, 10)});
  const std::string call = "cdf('cdf-tpot'";
  size_t at = html.find(call);
  ASSERT_NE(at, std::string::npos);
  html.replace(at, call.size(), "cdf_missing('cdf-tpot'");
  Rendered broken = render(html, "broken");
  EXPECT_NE(broken.errors.find("cdf_missing"), std::string::npos) << broken.errors;
  EXPECT_NE(broken.console, "");
}

// What the reader must see: failures with their HTTP status and message,
// the SLOs, the units, quality worst slice first, and a max goodput rate that
// says when the limit was not reached.
TEST(ReportHtml, ShowsFailuresSlosAndUnits) {
  RunReport rr = make_run("rate 2", 2, 6, 20);
  RequestResult err;
  err.index = 6;
  err.source_line = 7;
  err.slice = "chat";
  err.http_status = 500;
  err.error = "engine exploded <badly>";
  RequestResult rejected;
  rejected.index = 7;
  rejected.slice = "chat";
  rejected.http_status = 429;
  rejected.error = "the deadline cannot be met";
  rejected.error_code = "deadline_infeasible";
  for (auto* r : {&err, &rejected}) {
    r->slo.ttft_ms = 500;
    verify_result(*r, std::nullopt);
    rr.run.results.push_back(*r);
  }
  QualityCheck worse;
  worse.compared_by = "token ids";
  worse.match_fraction = 0.25;
  worse.first_divergence = 3;
  worse.kl_mean = 0.125;
  worse.kl_max = 0.5;
  rr.run.results[0].quality = worse;
  rr.run.results[0].slice = "rare";
  QualityCheck fine;
  fine.compared_by = "token ids";
  fine.pass = fine.exact_match = true;
  fine.match_fraction = 1.0;
  for (size_t i = 1; i < 6; ++i) rr.run.results[i].quality = fine;
  rr.summary = summarize_run(rr.run.results, rr.run.window_s);
  rr.quality = summarize_quality(rr.run.results, nullptr);
  json record = make_record();
  record["sweep"] = {{"target", 0.9},
                     {"statement", "not reached below 8 arrivals/s (the highest swept rate still met the target)"}};
  record["slos"] = {{"per_slice", slos_by_slice(rr.run.results)}, {"deadline_header", "x-ladder-deadline-ms = TTFT SLO"}};
  record["configuration"]["verification"] = {{"mode", "exact"}, {"reference", "ref.json"},
                                             {"reference_fingerprint_sha256", "abc123"}};
  Rendered r = render(make_report_html(record, {rr}), "failures");
  EXPECT_EQ(r.errors, "");
  EXPECT_EQ(r.console, "");
  const std::string& dom = r.dom;
  auto has = [&](const std::string& text) { EXPECT_NE(dom.find(text), std::string::npos) << text; };
  has("Not served (errors first)");
  has("<td>error</td><td>1</td><td>500</td>");
  has("engine exploded &lt;badly&gt;");  // escaped, not markup
  has("<td>rejected_early</td><td>1</td><td>429</td><td>deadline_infeasible</td>");
  has("SLOs, units and verification");
  has("<tr><td>chat</td><td>TTFT 60 ms | TTFT 500 ms</td></tr>");
  has("latencies (TTFT, TTFAT, TPOT, E2E, send lag) in milliseconds");
  has("group (latencies in ms)");
  has("verified E2E p99");
  has("rejected early");
  has("not reached below 8 arrivals/s");
  has("reference fingerprint abc123");
  // Quality: the slice that suffered comes first.
  const size_t quality = dom.find("Quality against the reference");
  ASSERT_NE(quality, std::string::npos);
  EXPECT_LT(dom.find("slice rare", quality), dom.find("slice chat", quality));
}

}  // namespace
}  // namespace ladder::harness
