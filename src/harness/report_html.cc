#include "harness/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// JSON that is safe inside <script>: "</" cannot close the element.
std::string script_json(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<double> sorted_values(const std::vector<RequestResult>& rs, const std::optional<double> RequestResult::*field) {
  std::vector<double> v;
  for (const auto& r : rs) {
    if (r.*field) v.push_back(*(r.*field));
  }
  std::sort(v.begin(), v.end());
  return v;
}

json chart_data(const std::vector<RunReport>& runs, const json& record) {
  json data;
  data["runs"] = json::array();
  for (const auto& rr : runs) {
    json run;
    run["label"] = rr.label;
    run["offered_rate"] = rr.offered_rate;
    run["goodput_rps"] = rr.summary.overall.goodput_rps;
    run["attainment"] = rr.summary.overall.goodput_fraction;
    run["ttft"] = sorted_values(rr.run.results, &RequestResult::ttft_ms);
    run["tpot"] = sorted_values(rr.run.results, &RequestResult::tpot_ms);
    std::vector<double> e2e;
    json sent = json::array(), ttft = json::array(), good = json::array();
    for (const auto& r : rr.run.results) {
      if (r.http_status == 200 && r.error.empty()) e2e.push_back(r.e2e_ms);
      if (r.ttft_ms) {
        sent.push_back(r.sent_s);
        ttft.push_back(*r.ttft_ms);
        good.push_back(is_good(r));
      }
    }
    std::sort(e2e.begin(), e2e.end());
    run["e2e"] = e2e;
    run["scatter"] = {{"sent_s", sent}, {"ttft_ms", ttft}, {"good", good}};
    json t = json::array(), inflight = json::array(), queue = json::array();
    for (const auto& s : rr.run.timeline) {
      t.push_back(s.t_s);
      inflight.push_back(s.in_flight);
      queue.push_back(s.server_queue ? json(*s.server_queue) : json(nullptr));
    }
    run["timeline"] = {{"t_s", t}, {"in_flight", inflight}, {"server_queue", queue}};
    run["queue_metric"] = rr.run.queue_metric;
    data["runs"].push_back(std::move(run));
  }
  data["target"] = record.value("/sweep/target"_json_pointer, 0.9);
  return data;
}

std::string cell(const std::string& text) { return "<td>" + html_escape(text) + "</td>"; }

std::string num(double v, const char* spec = "{:.1f}") { return fmt::format(fmt::runtime(spec), v); }

std::string html_opt_num(const std::optional<double>& v, const char* spec = "{:.3g}") {
  return v ? num(*v, spec) : std::string("&ndash;");
}

template <typename Row>
std::string html_group_rows(const RunSummary& s, Row row) {
  std::string h = row("overall", s.overall);
  for (const auto& [k, g] : s.by_tenant) h += row("tenant " + k, g);
  for (const auto& [k, g] : s.by_slice) h += row("slice " + k, g);
  return h;
}

std::string html_outcome_row(const std::string& name, const GroupSummary& g) {
  return fmt::format("<tr>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{:.1f}</td><td>{:.3f}</td></tr>\n",
                     cell(name), g.requests, g.verified, g.good, g.late, g.unverified, g.rejected_early, g.expired,
                     g.errors, 100.0 * g.goodput_fraction, g.goodput_rps);
}

std::string html_latency_row(const std::string& name, const GroupSummary& g) {
  std::string h = "<tr>" + cell(name);
  for (const auto& c : latency_columns(g)) h += "<td>" + html_opt_num(c.value, "{:.1f}") + "</td>";
  return h + "</tr>\n";
}

std::string quality_rows(const std::vector<QualityGroup>& groups) {
  std::string h;
  for (const auto& g : groups) {
    h += fmt::format("<tr>{}<td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{:.3f}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     cell(g.kind + " " + g.name), g.requests, g.compared, g.passed, 100.0 * g.pass_fraction(), g.exact,
                     g.by_token_ids, g.task_checked ? fmt::format("{}/{}", g.task_passed, g.task_checked) : "&ndash;",
                     g.mean_match, g.compared ? num(g.min_match, "{:.3f}") : "&ndash;",
                     g.earliest_divergence ? std::to_string(*g.earliest_divergence) : "&ndash;", html_opt_num(g.mean_kl),
                     html_opt_num(g.max_kl));
  }
  return h;
}

// Outcomes, latency, quality, speculative decoding, cost and failures of one run.
std::string run_tables(const RunReport& rr) {
  std::string h;
  h += "<table><tr><th>group</th><th>requests</th><th>verified</th><th>good</th><th>late</th><th>unverified</th>"
       "<th>rejected early</th><th>expired in queue</th><th>errors</th><th>good (%)</th><th>goodput (req/s)</th></tr>\n";
  h += html_group_rows(rr.summary, html_outcome_row) + "</table>\n";
  h += "<table><tr><th>group (latencies in ms)</th>";
  for (const auto& c : latency_columns(rr.summary.overall)) h += std::string("<th>") + c.long_name + "</th>";
  h += "</tr>\n";
  h += html_group_rows(rr.summary, html_latency_row) + "</table>\n";
  if (!rr.quality.empty()) {
    h += "<h3>Quality against the reference, worst first (KL in nats)</h3>\n<table class=\"quality\"><tr><th>group</th>"
         "<th>requests</th><th>compared</th><th>passed</th><th>passed (%)</th><th>exact</th><th>by token ids</th>"
         "<th>task check</th><th>mean match</th><th>min match</th><th>earliest divergence (token)</th>"
         "<th>mean KL</th><th>max KL</th></tr>\n";
    h += quality_rows(rr.quality.slices) + quality_rows(rr.quality.tenants) + "</table>\n";
    if (std::string note = html_escape(quality_note(rr.quality)); !note.empty()) {
      for (size_t at = note.find('\n'); at != std::string::npos; at = note.find('\n', at)) note.replace(at, 1, "<br>");
      h += "<p>" + note + "</p>\n";
    }
  }
  const SpeculativeSummary& sp = rr.summary.overall.speculative;
  if (sp.requests > 0) {
    h += fmt::format("<p>speculative decoding: {} requests, {} of {} draft tokens accepted (rate {}), {} tokens per "
                     "verify cycle</p>\n",
                     sp.requests, sp.accepted, sp.proposed, html_opt_num(sp.accepted_rate, "{:.3f}"),
                     html_opt_num(sp.tokens_per_cycle, "{:.3f}"));
  }
  h += "<p>" + html_escape(cost_line(rr.cost)) + "</p>\n";
  const auto failures = failure_groups(rr.run.results);
  if (!failures.empty()) {
    h += "<h3>Not served (errors first)</h3>\n<table class=\"failures\"><tr><th>outcome</th><th>requests</th>"
         "<th>HTTP status</th><th>code</th><th>message</th><th>first request</th><th>workload line</th></tr>\n";
    for (const auto& f : failures) {
      h += fmt::format("<tr>{}<td>{}</td><td>{}</td>{}{}<td>{}</td><td>{}</td></tr>\n", cell(f.outcome), f.count,
                       f.http_status, cell(f.code.empty() ? "-" : f.code), cell(f.message), f.first_index, f.first_line);
    }
    h += "</table>\n";
  }
  return h;
}

// What the numbers mean: the SLOs, the units and the verification.
std::string slo_section(const json& record) {
  std::string h = "<h2>SLOs, units and verification</h2>\n<table class=\"slos\"><tr><th>slice</th><th>SLOs</th></tr>\n";
  const json per_slice = record.value("/slos/per_slice"_json_pointer, json::object());
  for (const auto& [slice, slos] : per_slice.items()) {
    std::string text;
    for (const auto& s : slos) text += (text.empty() ? "" : " | ") + s.get<std::string>();
    h += "<tr>" + cell(slice) + cell(text) + "</tr>\n";
  }
  h += "</table>\n";
  h += "<p>Units: latencies (TTFT, TTFAT, TPOT, E2E, send lag) in milliseconds; rates in arrivals per second "
       "(requests or sessions); goodput in good requests per second; KL divergence in nats; CPU in core-seconds. "
       "Good = verified and within every SLO; late = verified but an SLO missed; rejected early = HTTP 429 at "
       "admission; expired = dropped from the server's queue at its deadline.</p>\n";
  h += "<p>Deadlines sent: " + html_escape(record.value("/slos/deadline_header"_json_pointer, std::string("?"))) +
       "</p>\n";
  const json v = record.value("/configuration/verification"_json_pointer, json::object());
  h += "<p>Verification: <b>" + html_escape(v.value("mode", std::string("none"))) + "</b>";
  if (v.contains("reference")) {
    h += " against " + html_escape(v["reference"].get<std::string>()) + " (reference fingerprint " +
         html_escape(v.value("reference_fingerprint_sha256", std::string())) + ")";
  }
  h += "; configuration fingerprint " +
       html_escape(record.value("/configuration/fingerprint_sha256"_json_pointer, std::string())) + "; " +
       html_escape(record.value("/configuration/server_config_note"_json_pointer, std::string())) + "</p>\n";
  return h;
}

// The drawing code: a small canvas plotter (axes with round ticks, lines,
// step CDFs, points), then the self-check.
constexpr const char* kScript = R"JS(
(function () {
  var errors = document.getElementById('errors');
  window.addEventListener('error', function (e) { errors.textContent += (e.message || 'error') + '\n'; });
  var data = JSON.parse(document.getElementById('data').textContent);
  var colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
  var pad = {l: 64, r: 56, t: 24, b: 44};

  function niceTicks(lo, hi, n) {
    if (!(hi > lo)) { hi = lo + 1; }
    var span = hi - lo, step = Math.pow(10, Math.floor(Math.log10(span / n)));
    var err = span / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var ticks = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Math.round(v / step) * step);
    return ticks;
  }
  function fmt(v) { return Math.abs(v) >= 1000 ? v.toFixed(0) : +v.toPrecision(3) + ''; }
  function extent(arrays, zero) {
    var lo = Infinity, hi = -Infinity;
    arrays.forEach(function (a) { a.forEach(function (v) { if (v !== null && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
    if (lo === Infinity) { lo = 0; hi = 1; }
    if (zero) lo = Math.min(0, lo);
    if (hi === lo) hi = lo + 1;
    return [lo, hi + 0.05 * (hi - lo)];  // headroom: marks at the maximum stay inside the frame
  }

  // spec: {x: [lo, hi], y: [lo, hi], y2: [lo, hi] | null, xlabel, ylabel, y2label, series: [...]}
  // series: {xs, ys, color, kind: 'line' | 'step' | 'points', axis: 1 | 2, label, fills: [colors per point]}
  function plot(canvas, spec) {
    var ctx = canvas.getContext('2d'), W = canvas.width, H = canvas.height;
    ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, W, H);
    var pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;
    function sx(v) { return pad.l + (v - spec.x[0]) / (spec.x[1] - spec.x[0]) * pw; }
    function sy(v, axis) {
      var r = axis === 2 ? spec.y2 : spec.y;
      return pad.t + ph - (v - r[0]) / (r[1] - r[0]) * ph;
    }
    ctx.font = '12px sans-serif'; ctx.strokeStyle = '#e6e6e6'; ctx.fillStyle = '#333'; ctx.lineWidth = 1;
    niceTicks(spec.x[0], spec.x[1], 6).forEach(function (v) {
      var x = sx(v); ctx.beginPath(); ctx.moveTo(x, pad.t); ctx.lineTo(x, pad.t + ph); ctx.stroke();
      ctx.textAlign = 'center'; ctx.fillText(fmt(v), x, pad.t + ph + 16);
    });
    niceTicks(spec.y[0], spec.y[1], 5).forEach(function (v) {
      var y = sy(v, 1); ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(pad.l + pw, y); ctx.stroke();
      ctx.textAlign = 'right'; ctx.fillText(fmt(v), pad.l - 6, y + 4);
    });
    if (spec.y2) {
      niceTicks(spec.y2[0], spec.y2[1], 5).forEach(function (v) {
        ctx.textAlign = 'left'; ctx.fillText(fmt(v), pad.l + pw + 6, sy(v, 2) + 4);
      });
    }
    ctx.strokeStyle = '#333'; ctx.strokeRect(pad.l, pad.t, pw, ph);
    ctx.textAlign = 'center'; ctx.fillText(spec.xlabel, pad.l + pw / 2, H - 8);
    ctx.save(); ctx.translate(14, pad.t + ph / 2); ctx.rotate(-Math.PI / 2); ctx.fillText(spec.ylabel, 0, 0); ctx.restore();
    if (spec.y2) { ctx.save(); ctx.translate(W - 10, pad.t + ph / 2); ctx.rotate(Math.PI / 2); ctx.fillText(spec.y2label, 0, 0); ctx.restore(); }
    ctx.save(); ctx.beginPath(); ctx.rect(pad.l, pad.t, pw, ph); ctx.clip();
    spec.series.forEach(function (s) {
      ctx.strokeStyle = s.color; ctx.fillStyle = s.color; ctx.lineWidth = 2;
      if (s.kind === 'points') {
        s.xs.forEach(function (x, i) {
          if (s.ys[i] === null) return;
          if (s.fills) ctx.fillStyle = s.fills[i];
          ctx.beginPath(); ctx.arc(sx(x), sy(s.ys[i], s.axis), s.radius || 3, 0, 2 * Math.PI); ctx.fill();
        });
        return;
      }
      ctx.beginPath();
      var started = false;
      s.xs.forEach(function (x, i) {
        var y = s.ys[i];
        if (y === null) { started = false; return; }
        if (!started) { ctx.moveTo(sx(x), sy(y, s.axis)); started = true; return; }
        if (s.kind === 'step') ctx.lineTo(sx(x), sy(s.ys[i - 1], s.axis));
        ctx.lineTo(sx(x), sy(y, s.axis));
      });
      ctx.stroke();
    });
    ctx.restore();
    // Legend in the top margin, so the plot area holds only data marks.
    var lx = pad.l;
    spec.series.forEach(function (s) {
      if (!s.label) return;
      ctx.fillStyle = s.color; ctx.fillRect(lx, 6, 10, 10);
      ctx.fillStyle = '#333'; ctx.textAlign = 'left'; ctx.fillText(s.label, lx + 14, 15);
      lx += 24 + ctx.measureText(s.label).width;
    });
    if (spec.series.every(function (s) { return s.xs.length === 0; })) {
      ctx.fillStyle = '#999'; ctx.textAlign = 'center'; ctx.fillText('no data', pad.l + pw / 2, pad.t + ph / 2);
    }
  }

  function cdf(id, key, xlabel) {
    var arrays = data.runs.map(function (r) { return r[key]; });
    var ex = extent(arrays, true);
    plot(document.getElementById(id), {
      x: ex, y: [0, 1.04], xlabel: xlabel, ylabel: 'fraction of requests',
      series: data.runs.map(function (r, i) {
        var v = r[key], n = v.length;
        var xs = [ex[0]].concat(v), ys = [0].concat(v.map(function (_, k) { return (k + 1) / n; }));
        return {xs: n ? xs : [], ys: n ? ys : [], color: colors[i % colors.length], kind: 'step', axis: 1, label: r.label};
      })
    });
  }
  cdf('cdf-ttft', 'ttft', 'TTFT (ms)');
  cdf('cdf-tpot', 'tpot', 'TPOT (ms)');
  cdf('cdf-e2e', 'e2e', 'E2E latency (ms)');

  var rates = data.runs.map(function (r) { return r.offered_rate; });
  var order = rates.map(function (_, i) { return i; }).sort(function (a, b) { return rates[a] - rates[b]; });
  var gx = order.map(function (i) { return rates[i]; });
  var gy = order.map(function (i) { return data.runs[i].goodput_rps; });
  var ga = order.map(function (i) { return 100 * data.runs[i].attainment; });
  var xr = extent([gx], true); xr[1] = xr[1] * 1.1 + 1e-9;
  plot(document.getElementById('goodput'), {
    x: xr, y: extent([gy, gx], true), y2: [0, 105], xlabel: 'offered rate (arrivals/s: requests or sessions)', ylabel: 'goodput (req/s)',
    y2label: 'SLO attainment (%)',
    series: [
      {xs: gx, ys: gy, color: colors[0], kind: 'line', axis: 1, label: 'goodput'},
      {xs: gx, ys: gy, color: colors[0], kind: 'points', axis: 1, radius: 5},
      {xs: gx, ys: ga, color: colors[1], kind: 'line', axis: 2, label: 'attainment %'},
      {xs: gx, ys: ga, color: colors[1], kind: 'points', axis: 2, radius: 5},
      {xs: xr, ys: [100 * data.target, 100 * data.target], color: colors[3], kind: 'line', axis: 2, label: 'target'}
    ]
  });

  data.runs.forEach(function (r, i) {
    var sc = r.scatter, tl = r.timeline;
    var queue = tl.server_queue.some(function (v) { return v !== null; });
    var y2 = extent([tl.in_flight, queue ? tl.server_queue : []], true);
    var series = [
      {xs: sc.sent_s, ys: sc.ttft_ms, color: colors[2], kind: 'points', axis: 1, label: 'TTFT (red: not good)',
       fills: sc.good.map(function (g) { return g ? colors[2] : colors[3]; })},
      {xs: tl.t_s, ys: tl.in_flight, color: colors[0], kind: 'step', axis: 2, label: 'in flight'}
    ];
    if (queue) series.push({xs: tl.t_s, ys: tl.server_queue, color: colors[1], kind: 'step', axis: 2, label: 'server queue'});
    plot(document.getElementById('timeline-' + i), {
      x: extent([sc.sent_s, tl.t_s], true), y: extent([sc.ttft_ms], true), y2: y2,
      xlabel: 'time since start (s)', ylabel: 'TTFT (ms)', y2label: 'requests', series: series
    });
  });

  // Self-check: coloured pixels inside each plot area (grid and axes are grey).
  var counts = {};
  Array.prototype.forEach.call(document.querySelectorAll('canvas'), function (c) {
    var img = c.getContext('2d').getImageData(pad.l + 1, pad.t + 1, c.width - pad.l - pad.r - 2, c.height - pad.t - pad.b - 2).data;
    var n = 0;
    for (var k = 0; k < img.length; k += 4) {
      var r = img[k], g = img[k + 1], b = img[k + 2];
      if (Math.max(r, g, b) - Math.min(r, g, b) > 40) n++;
    }
    counts[c.id] = n;
  });
  document.getElementById('selfcheck').textContent = JSON.stringify(counts);
  document.body.setAttribute('data-rendered', '1');
})();
)JS";

}  // namespace

std::string make_report_html(const json& record, const std::vector<RunReport>& runs) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ladder replay report</title>\n";
  h += "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}"
       "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
       "canvas{border:1px solid #ddd;margin:6px 6px 0 0}.grid{display:flex;flex-wrap:wrap}"
       "pre{background:#f6f6f6;padding:6px;white-space:pre-wrap}</style></head><body>\n";
  h += "<h1>ladder replay</h1>\n";
  h += fmt::format("<p>{} &middot; endpoint {} &middot; model {}</p>\n",
                   html_escape(record.value("timestamp", std::string())),
                   html_escape(record.value("/configuration/endpoint"_json_pointer, std::string())),
                   html_escape(record.value("/configuration/model"_json_pointer, std::string())));
  h += fmt::format("<p>workload {} ({}), sha256 {}</p>\n",
                   html_escape(record.value("/workload/source"_json_pointer, std::string())),
                   html_escape(record.value("/workload/format"_json_pointer, std::string())),
                   html_escape(record.value("/workload/digest_sha256"_json_pointer, std::string())));
  if (record.contains("/workload/scaling"_json_pointer) && !record["workload"]["scaling"].empty()) {
    h += "<p>applied to the workload:</p><ul>\n";
    for (const auto& n : record["workload"]["scaling"]) h += "<li>" + html_escape(n.get<std::string>()) + "</li>\n";
    h += "</ul>\n";
  }
  if (record.contains("/sweep/statement"_json_pointer)) {
    const json& s = record["sweep"];
    h += fmt::format("<p id=\"max-goodput\"><b>max goodput rate</b> (SLO attainment &ge; {:.0f}%): {}</p>\n",
                     100.0 * s.value("target", 0.9), html_escape(s["statement"].get<std::string>()));
  }
  h += slo_section(record);
  for (const auto& rr : runs) {
    h += fmt::format("<h2>{} &mdash; offered {:.3f} arrivals/s, window {:.2f} s, client CPU {:.2f} s, max send lag {:.1f} ms</h2>\n",
                     html_escape(rr.label), rr.offered_rate, rr.run.window_s, rr.run.client_cpu_s, rr.run.max_send_lag_ms);
    const json agree = ttft_agreement(rr.run.results);
    if (agree.contains("client_minus_server_ms")) {
      h += fmt::format("<p>client TTFT &minus; server TTFT ({} requests with server timings): p50 {:.2f} ms, p99 {:.2f} ms, "
                       "max {:.2f} ms</p>\n",
                       agree["requests_with_server_ttft"].get<size_t>(), agree["client_minus_server_ms"]["p50"].get<double>(),
                       agree["client_minus_server_ms"]["p99"].get<double>(), agree["client_minus_server_ms"]["max"].get<double>());
    }
    if (double cpt = measured_chars_per_token(rr.run.results); cpt > 0) {
      h += fmt::format("<p>prompt characters per server-counted token: {:.2f}</p>\n", cpt);
    }
    h += run_tables(rr);
  }
  h += "<h2>Latency CDFs</h2><div class=\"grid\">\n";
  for (const char* id : {"cdf-ttft", "cdf-tpot", "cdf-e2e"}) {
    h += fmt::format("<canvas id=\"{}\" width=\"460\" height=\"300\"></canvas>\n", id);
  }
  h += "</div>\n<h2>Goodput vs offered rate</h2>\n<canvas id=\"goodput\" width=\"700\" height=\"320\"></canvas>\n";
  h += "<h2>Timeline: TTFT at send time, requests in flight, server queue</h2>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    h += fmt::format("<h3>{}</h3><canvas id=\"timeline-{}\" width=\"940\" height=\"320\"></canvas>\n",
                     html_escape(runs[i].label), i);
  }
  h += "<h2>Machine and server</h2><pre>" + html_escape(record.value("machine", json::object()).dump(2)) + "</pre>\n";
  h += "<pre id=\"selfcheck\"></pre><pre id=\"errors\"></pre>\n";
  h += "<script type=\"application/json\" id=\"data\">" + script_json(chart_data(runs, record)) + "</script>\n";
  h += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace ladder::harness
