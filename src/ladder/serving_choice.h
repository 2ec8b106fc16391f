// `ladder serve --ledger L`: which tested configuration to serve.
//
// The latest climb whose rung 1 is what this command runs decides: the same
// model digest, tokenizer digest and engine revision, and the same serve
// settings as that climb's rung 1 (only settings that differ from their
// defaults count, so `-t 2` and `--threads 2` are one setting). From it the
// highest configuration the gate left serving (the last one promoted, or
// rung 1) is served, with its serve arguments applied; a rung that serves
// another model file is taken only while that file still has the digest it
// was measured with. When no climb matches, every climb's first differing
// field is reported and rung 1 -- the command as given -- is served.
//
// Rollbacks (ledger.h): a configuration that `serve --shadow-rate` rolled
// back for a climb and load is not served again from that climb; what it
// rolled back to serves instead, until a new climb.
//
// Loads: a climb decides each offered load on its own (policy `loads`).
// The decisions made at the measured load nearest `load` are used (nearest
// by ratio, the higher of two equally near), and the notes say which.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "ladder/ledger.h"

namespace ladder::climb {

// Option name -> value(s), for the settings a serve command changes from
// their defaults ("--max-chunk-tokens" -> "16").
using ServeSettings = std::map<std::string, std::string>;
// Turns serve arguments into their settings (the caller owns the option set).
using SettingsOf = std::function<Result<ServeSettings>(const std::vector<std::string>& args)>;
// The sha256 of a model file's bytes.
using ModelDigestOf = std::function<Result<std::string>(const std::string& path)>;

struct ServingChoice {
  const LedgerEntry* entry = nullptr;  // the configuration to serve; null: the command as given (rung 1)
  // What a rollback serves next: the configurations `entry` was compared
  // with, nearest first, ending with the climb's rung 1 (its baseline: the
  // command as given). Empty when `entry` is null.
  std::vector<const LedgerEntry*> fallbacks;
  std::vector<std::string> notes;      // why climbs did not match, or what was chosen
  std::string summary;                 // one line for the log
};

// "model_digest differs: ledger 1a2b3c4d5e6f, this model 9f8e7d6c5b4a"; empty when equal.
std::string identity_difference(const ServedIdentity& ledger, const ServedIdentity& running);
// "--kv-dtype: rung 1 measured (default), this command f32"; empty when equal.
std::string settings_difference(const ServeSettings& measured, const ServeSettings& running);

// The measured load nearest `wanted` by ratio (|log(l / wanted)|), the higher
// of two equally near; `measured` is not empty.
double nearest_load(const std::vector<double>& measured, double wanted);

ServingChoice choose_serving(const std::vector<LedgerEntry>& entries, const ServedIdentity& running,
                             const ServeSettings& running_settings, const SettingsOf& settings_of,
                             const ModelDigestOf& model_digest_of, double load = 1.0,
                             const std::vector<Rollback>& rollbacks = {});

}  // namespace ladder::climb
