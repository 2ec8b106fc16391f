#include "harness/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

namespace ladder::harness {

std::string ArrivalProcess::to_string() const {
  switch (kind) {
    case Kind::kPoisson:
      return "poisson";
    case Kind::kConstant:
      return "constant";
    case Kind::kGamma:
      return fmt::format("gamma:{}", cv);
  }
  return "?";
}

Result<ArrivalProcess> parse_arrival(const std::string& text) {
  ArrivalProcess p;
  if (text == "poisson") return p;
  if (text == "constant") {
    p.kind = ArrivalProcess::Kind::kConstant;
    return p;
  }
  if (text.rfind("gamma:", 0) == 0) {
    p.kind = ArrivalProcess::Kind::kGamma;
    try {
      size_t used = 0;
      p.cv = std::stod(text.substr(6), &used);
      if (used != text.size() - 6) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      return invalid_argument("gamma arrival needs a number: gamma:CV, e.g. gamma:2");
    }
    if (!(p.cv > 0)) return invalid_argument("gamma CV must be > 0");
    return p;
  }
  return invalid_argument("arrival must be poisson, constant or gamma:CV (got '" + text + "')");
}

std::vector<double> arrival_times(size_t n, double rate, const ArrivalProcess& process, uint64_t seed) {
  LADDER_CHECK(rate > 0, "arrival rate must be positive");
  std::vector<double> t(n);
  std::mt19937_64 rng(seed);
  double now = 0.0;
  for (size_t i = 0; i < n; ++i) {
    switch (process.kind) {
      case ArrivalProcess::Kind::kConstant:
        now = static_cast<double>(i) / rate;
        break;
      case ArrivalProcess::Kind::kPoisson:
        now += std::exponential_distribution<double>(rate)(rng);
        break;
      case ArrivalProcess::Kind::kGamma: {
        // Gap mean 1/rate, CV = 1/sqrt(shape): shape = 1/CV^2, scale = 1/(rate*shape).
        const double shape = 1.0 / (process.cv * process.cv);
        now += std::gamma_distribution<double>(shape, 1.0 / (rate * shape))(rng);
        break;
      }
    }
    t[i] = now;
  }
  return t;
}

namespace {

// Groups requests into arrival units: unit key -> indices (turn order).
struct ArrivalUnits {
  std::vector<std::vector<size_t>> members;  // [unit][turn order] request index
};

ArrivalUnits group_units(const std::vector<WorkloadRequest>& reqs) {
  ArrivalUnits u;
  std::map<std::pair<std::string, std::string>, size_t> by_session;  // (tenant, session) -> unit
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].session.empty()) {
      u.members.push_back({i});
      continue;
    }
    auto key = std::make_pair(reqs[i].tenant, reqs[i].session);
    auto it = by_session.find(key);
    if (it == by_session.end()) {
      by_session[key] = u.members.size();
      u.members.push_back({i});
    } else {
      u.members[it->second].push_back(i);
    }
  }
  for (auto& m : u.members) {
    std::stable_sort(m.begin(), m.end(), [&](size_t a, size_t b) {
      return reqs[a].turn != reqs[b].turn ? reqs[a].turn < reqs[b].turn : reqs[a].t < reqs[b].t;
    });
  }
  return u;
}

}  // namespace

Status apply_schedule(Workload& w, const ScheduleOptions& opts) {
  if (!(opts.time_scale > 0)) return invalid_argument("time scale must be > 0");
  if (opts.rate && !(*opts.rate > 0)) return invalid_argument("rate must be > 0");
  auto& reqs = w.requests;
  ArrivalUnits units = group_units(reqs);
  // Order units by their first turn's timestamp.
  std::stable_sort(units.members.begin(), units.members.end(),
                   [&](const auto& a, const auto& b) { return reqs[a.front()].t < reqs[b.front()].t; });
  if (opts.time_scale != 1.0) {
    for (auto& r : reqs) r.t *= opts.time_scale;
    w.notes.push_back(fmt::format("time scale {}: arrival times multiplied by {} (think/tool times unchanged)",
                                  opts.time_scale, opts.time_scale));
  }
  if (opts.rate) {
    auto times = arrival_times(units.members.size(), *opts.rate, opts.arrival, opts.seed);
    for (size_t u = 0; u < units.members.size(); ++u) {
      for (size_t i : units.members[u]) reqs[i].t = times[u];
    }
    w.notes.push_back(fmt::format("arrivals re-drawn: {} at {} per second (seed {}), trace timestamps ignored",
                                  opts.arrival.to_string(), *opts.rate, opts.seed));
  } else {
    // Later turns inherit the first turn's time; they are closed-loop anyway.
    for (const auto& m : units.members) {
      for (size_t i : m) reqs[i].t = reqs[m.front()].t;
    }
  }
  std::vector<WorkloadRequest> kept;
  size_t dropped_duration = 0, dropped_count = 0;
  for (const auto& m : units.members) {
    for (size_t i : m) {
      if (opts.duration_s && reqs[i].t >= *opts.duration_s) {
        ++dropped_duration;
      } else if (opts.max_requests && static_cast<int64_t>(kept.size()) >= *opts.max_requests) {
        ++dropped_count;
      } else {
        kept.push_back(reqs[i]);
      }
    }
  }
  if (dropped_duration > 0) {
    w.notes.push_back(fmt::format("window: {} requests arriving at or after {} s dropped", dropped_duration,
                                  *opts.duration_s));
  }
  if (dropped_count > 0) {
    w.notes.push_back(fmt::format("window: first {} requests kept, {} dropped", *opts.max_requests, dropped_count));
  }
  reqs = std::move(kept);
  return Status::ok();
}

double arrival_span_s(const std::vector<WorkloadRequest>& requests) {
  double span = 0.0;
  for (const auto& r : requests) span = std::max(span, r.t);
  return span;
}

size_t arrival_unit_count(const std::vector<WorkloadRequest>& requests) {
  return group_units(requests).members.size();
}

}  // namespace ladder::harness
