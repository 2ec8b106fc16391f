// Subcommand registry of the `ladder` binary. Each cmd_*.cc defines one
// subcommand and registers it with a file-scope CommandRegistrar, named
// after the file (the unity build compiles several cmd_*.cc as one unit):
//
//   namespace {
//   CommandRegistrar register_inspect{"inspect", 20, [](CLI::App& app) {
//     auto* cmd = app.add_subcommand("inspect", "Show a GGUF file's metadata and tensors");
//     auto opts = std::make_shared<InspectOptions>();
//     cmd->add_option(...);
//     return [opts] { return run_inspect(*opts); };   // the exit code
//   }};
//   }
//
// `order` sets the position in `ladder --help`. A name "parent/child" registers
// a subcommand under an earlier entry's command (e.g. "bench/model"); the
// setup then adds it with app.get_subcommand("bench")->add_subcommand(...).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor_type.h"
#include "model/model_bundle.h"

namespace ladder::cli {

// Runs the subcommand once its options are parsed; returns the exit code.
using CommandRun = std::function<int()>;
// Adds the subcommand (and its options) to the app; returns how to run it.
using CommandSetup = std::function<CommandRun(CLI::App&)>;

struct CommandEntry {
  std::string name;
  int order;
  CommandSetup setup;
};

std::vector<CommandEntry>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, int order, CommandSetup setup) {
    command_registry().push_back({std::move(name), order, std::move(setup)});
  }
};

// The model file a command should use: the -m value when given, else the
// default lookup ($LADDER_MODEL, then ../shared/models/stories260K.gguf, then
// a small synthetic model generated once into ~/.cache/ladder). Returns an
// empty string and prints what to do when none can be had.
std::string resolve_model_path(const std::string& given);

// resolve_model_path() and ModelBundle::load() for commands that run a model.
// On failure prints the reason and returns nothing with *exit_code set: 2 when
// no model can be had, 1 when the file cannot be loaded. *path gets the file.
std::optional<model::ModelBundle> load_model_or_report(const std::string& given, std::string* path,
                                                       int* exit_code);

// Adds `--kv-dtype f16|f32|q8|q4` (the KV cache's format) writing to *out.
void add_kv_dtype_option(CLI::App* cmd, TensorType* out);

}  // namespace ladder::cli
