// Helpers shared by every test suite: where the shared data lives, where the
// built `ladder` binary is, and running a command to capture its output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ladder::testing {

// stories260K: "Once upon a time" with BOS, and the first 64 greedy ids after
// it from an independent reference (../shared/models/README.md).
inline const std::vector<int32_t> kStoriesPrompt = {1, 403, 407, 261, 378};
inline const std::vector<int32_t> kStoriesGolden64 = {
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
    265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267,
    337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

// $LADDER_SHARED_DIR or the repository's ../shared.
std::string shared_dir();
// shared_dir() + "/" + rel; fails the current test (and returns "") when the
// file does not exist, so a missing input is a failure, never a silent skip.
std::string shared_path(const std::string& rel);

// Path of the built `ladder` binary ($LADDER_BIN, set by CTest).
std::string ladder_bin();

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs argv[0] with the given arguments (no shell), capturing both streams.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& stdin_data = "");

// A model with random weights over stories260K's vocabulary (dim 512, 6
// layers, context 1024; smaller in the sanitizer builds, which compute it
// many times slower), written once per test binary: slow enough per token
// that a test can act while a request streams.
const std::string& slow_test_model();

// A fresh temporary directory, removed at process exit.
std::string temp_dir();

// Reads a whole file; fails the current test when it cannot.
std::string read_file(const std::string& path);

}  // namespace ladder::testing
