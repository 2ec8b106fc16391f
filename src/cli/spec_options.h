// --spec, --spec-k and --spec-fixed: speculative decoding (rung 4) for the
// commands that run the engine (serve, generate, bench engine, bench spec).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "common/status.h"
#include "engine/engine.h"
#include "model/model_bundle.h"

namespace ladder::cli {

struct SpecCliOptions {
  std::string spec = "off";  // ngram | draft:FILE | self-q4 | early-exit:L | off
  int32_t k = 4;
  bool fixed = false;  // always k: no measurement-driven control
};

void add_spec_options(CLI::App* cmd, SpecCliOptions* o);

// The engine's speculative configuration for the loaded model: the draft
// built (none for "off"), k, and whether it adapts. Errors: a bad --spec
// value, a draft that cannot be built (e.g. another vocabulary).
Result<engine::SpeculativeConfig> speculative_config(const SpecCliOptions& o, const model::ModelBundle& bundle,
                                                     const engine::EngineConfig& engine);

}  // namespace ladder::cli
