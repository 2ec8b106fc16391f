#include "ladder/serving_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ladder/policy.h"

namespace ladder::climb {


double nearest_load(const std::vector<double>& measured, double wanted) {
  double best = measured.front();
  for (double l : measured) {
    const double d = std::fabs(std::log(l / wanted)), bd = std::fabs(std::log(best / wanted));
    if (d < bd - 1e-12 || (std::fabs(d - bd) <= 1e-12 && l > best)) best = l;
  }
  return best;
}

std::string identity_difference(const ServedIdentity& ledger, const ServedIdentity& running) {
  if (ledger.model_digest != running.model_digest) {
    return fmt::format("model_digest differs: ledger {}, this model {}", short_hash(ledger.model_digest),
                       short_hash(running.model_digest));
  }
  if (ledger.tokenizer_digest != running.tokenizer_digest) {
    return fmt::format("tokenizer_digest differs: ledger {}, this model's {}",
                       short_hash(ledger.tokenizer_digest), short_hash(running.tokenizer_digest));
  }
  if (ledger.engine_revision != running.engine_revision) {
    return fmt::format("engine_revision differs: ledger {}, this ladder {}", ledger.engine_revision,
                       running.engine_revision);
  }
  return {};
}

std::string settings_difference(const ServeSettings& measured, const ServeSettings& running) {
  std::set<std::string> names;
  for (const auto& [k, v] : measured) names.insert(k);
  for (const auto& [k, v] : running) names.insert(k);
  std::vector<std::string> diffs;
  for (const auto& name : names) {
    auto m = measured.find(name);
    auto r = running.find(name);
    const std::string mv = m == measured.end() ? "(default)" : m->second;
    const std::string rv = r == running.end() ? "(default)" : r->second;
    if (mv != rv) diffs.push_back(fmt::format("{}: rung 1 measured {}, this command {}", name, mv, rv));
  }
  return fmt::format("{}", fmt::join(diffs, "; "));
}

namespace {

// The configuration of rung `rung` a climb left serving at `load`.
const LedgerEntry* serving_entry(const std::vector<LedgerEntry>& entries, const std::string& climb, double load,
                                 int rung) {
  for (const auto& e : entries) {
    if (e.climb_id == climb && e.load == load && e.rung == rung &&
        (e.decision == "baseline" || e.decision == "promoted")) {
      return &e;
    }
  }
  return nullptr;
}

// The one-process configuration `e` was compared with, when the climb left
// it serving; a split (rung 2) in between is passed over for what it was
// compared with, as serve --ledger passes over a promoted split.
const LedgerEntry* compared_with(const std::vector<LedgerEntry>& entries, const LedgerEntry& e) {
  const LedgerEntry* at = &e;
  while (true) {
    const nlohmann::json& c = at->json.value("compared_with", nlohmann::json());
    // Always a lower rung (a ledger that says otherwise ends the chain).
    if (!c.is_object() || !c.value("rung", nlohmann::json()).is_number_integer() || c["rung"].get<int>() >= at->rung) {
      return nullptr;
    }
    at = serving_entry(entries, e.climb_id, e.load, c["rung"].get<int>());
    if (at == nullptr || at->topology == "single") return at;
  }
}

}  // namespace

ServingChoice choose_serving(const std::vector<LedgerEntry>& entries, const ServedIdentity& running,
                             const ServeSettings& running_settings, const SettingsOf& settings_of,
                             const ModelDigestOf& model_digest_of, double load,
                             const std::vector<Rollback>& rollbacks) {
  ServingChoice choice;
  // Climbs in file order; the latest is tried first.
  std::vector<std::string> climbs;
  for (const auto& e : entries) {
    if (climbs.empty() || climbs.back() != e.climb_id) climbs.push_back(e.climb_id);
  }
  for (auto it = climbs.rbegin(); it != climbs.rend(); ++it) {
    const std::string& id = *it;
    const LedgerEntry* first = nullptr;
    std::set<double> load_set;
    for (const auto& e : entries) {
      if (e.climb_id != id) continue;
      if (first == nullptr) first = &e;
      load_set.insert(e.load);
    }
    if (std::string diff = identity_difference(first->identity, running); !diff.empty()) {
      choice.notes.push_back(fmt::format("climb {}: {}", id, diff));
      continue;
    }
    Result<ServeSettings> measured = settings_of(first->rung1_args);
    if (!measured.is_ok()) {
      choice.notes.push_back(fmt::format("climb {}: its rung 1 arguments do not parse here: {}", id,
                                         measured.status().message()));
      continue;
    }
    if (std::string diff = settings_difference(*measured, running_settings); !diff.empty()) {
      choice.notes.push_back(fmt::format("climb {}: a setting differs: {}", id, diff));
      continue;
    }
    // The decisions made at the measured load nearest the one asked for.
    const std::vector<double> loads(load_set.begin(), load_set.end());
    const double at = nearest_load(loads, load);
    // What the climb left serving at that load; a split topology (rung 2)
    // needs its workers and router started, which one `ladder serve` cannot
    // do, so the last one-process configuration promoted before it serves.
    const LedgerEntry* serving = nullptr;
    const LedgerEntry* split = nullptr;
    for (const auto& e : entries) {
      if (e.climb_id != id || e.load != at || (e.decision != "baseline" && e.decision != "promoted")) continue;
      if (e.topology == "disagg") {
        split = &e;
      } else {
        serving = &e;
        split = nullptr;
      }
    }
    if (split != nullptr) {
      choice.notes.push_back(fmt::format(
          "climb {}: rung {} '{}' is a prefill/decode split, which one `ladder serve` cannot start: run `ladder "
          "serve --role prefill`, `ladder serve --role decode --kv-host HOST` (each with {}) and `ladder route` "
          "in front; serving the configuration promoted before it",
          id, split->rung, split->name, split->serve_args.empty() ? "no further options" : fmt::format("{}", fmt::join(split->serve_args, " "))));
    }
    std::string at_load;
    if (loads.size() > 1 || at != load) {
      at_load = " at load " + load_label(at);
      std::vector<std::string> labels;
      for (double l : loads) labels.push_back(load_label(l));
      choice.notes.push_back(fmt::format("climb {} measured load{} {}; load {} takes the decisions made at {}",
                                         id, loads.size() > 1 ? "s" : "", fmt::join(labels, ", "),
                                         load_label(load), load_label(at)));
    }
    // Rollbacks stand until a new climb (each goes down a rung: load_rollbacks).
    bool rolled_back = false;
    while (serving != nullptr && serving->decision != "baseline") {
      const auto r = std::find_if(rollbacks.begin(), rollbacks.end(), [&](const Rollback& x) {
        return x.climb_id == id && x.load == at && x.from_rung == serving->rung;
      });
      if (r == rollbacks.end()) break;
      choice.notes.push_back(fmt::format("climb {}: rung {} '{}' was rolled back at {} ({}): serving rung {} '{}'", id,
                                         r->from_rung, r->from_name, r->timestamp, r->reason, r->to_rung, r->to_name));
      serving = serving_entry(entries, id, at, r->to_rung);
      rolled_back = true;
    }
    if (serving == nullptr || serving->decision == "baseline") {
      choice.summary = fmt::format("ledger: climb {} matches and {} above rung 1{}: serving rung 1", id,
                                   rolled_back ? "what it promoted was rolled back" : "promoted nothing", at_load);
      return choice;
    }
    if (serving->model_override) {
      Result<std::string> digest = model_digest_of(serving->model);
      if (!digest.is_ok() || *digest != serving->served.model_digest) {
        choice.notes.push_back(fmt::format(
            "climb {}: rung {} '{}' serves {}, whose model_digest {} (measured {})", id, serving->rung,
            serving->name, serving->model,
            digest.is_ok() ? "is now " + short_hash(*digest) : "cannot be read: " + digest.status().message(),
            short_hash(serving->served.model_digest)));
        choice.summary = "ledger: the promoted configuration's model file changed: serving rung 1";
        return choice;
      }
    }
    choice.entry = serving;
    for (const LedgerEntry* e = compared_with(entries, *serving); e != nullptr; e = compared_with(entries, *e)) {
      choice.fallbacks.push_back(e);
      if (e->decision == "baseline") break;
    }
    choice.summary = fmt::format("ledger: serving rung {} '{}' promoted by climb {}{} ({})", serving->rung,
                                 serving->name, id, at_load, serving->reason);
    return choice;
  }
  choice.summary =
      climbs.empty()
          ? "ledger: it holds no climb: serving rung 1"
          : "ledger: no climb matches this model, tokenizer, revision and settings: serving rung 1";
  return choice;
}

}  // namespace ladder::climb
