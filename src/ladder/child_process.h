// The processes a climb runs: `ladder serve` for each configuration and
// `ladder replay` for each measurement, started from the running binary with
// their output in files, so that a climb's folder keeps every log.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ladder::climb {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with stdout and stderr written to the files.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv, const std::string& stdout_path,
                                    const std::string& stderr_path);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // terminates it when still running

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exit_code_; }
  // The exit code once it exited (128 + signal when killed); nullopt while running.
  std::optional<int> poll();
  int wait();
  // SIGTERM, then SIGKILL after timeout_s; the exit code.
  int terminate(double timeout_s);

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// The binary this process runs (/proc/self/exe), for starting its own commands.
std::string self_executable();

// The last two non-empty lines of a log, each cut at 160 characters, joined
// by " / " (a usage error is often followed by a hint line): for one-line
// reasons.
std::string last_lines(const std::string& path);

// `ladder serve` on 127.0.0.1 with a free port, ready once it printed its
// "listening on" line (the model is loaded).
class ServeProcess {
 public:
  // argv: the serve command line after the binary ("serve", ...); logs go to
  // log_prefix + ".out" / ".log".
  static Result<ServeProcess> start(const std::string& binary, const std::vector<std::string>& args,
                                    const std::string& log_prefix, double ready_timeout_s);
  const std::string& url() const { return url_; }
  pid_t pid() const { return child_.pid(); }
  const std::string& log_path() const { return log_path_; }
  bool running() { return !child_.poll(); }
  int stop(double timeout_s = 30) { return child_.terminate(timeout_s); }

 private:
  ChildProcess child_;
  std::string url_;
  std::string log_path_;
};

}  // namespace ladder::climb
