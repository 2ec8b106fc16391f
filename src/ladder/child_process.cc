#include "ladder/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace ladder::climb {

namespace {

int decode_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv, const std::string& stdout_path,
                                         const std::string& stderr_path) {
  LADDER_CHECK(!argv.empty(), "spawn needs a program");
  const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return io_error("cannot create " + stdout_path);
  const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err < 0) {
    ::close(out);
    return io_error("cannot create " + stderr_path);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  ::close(out);
  ::close(err);
  if (pid < 0) return io_error("fork failed");
  ChildProcess c;
  c.pid_ = pid;
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (running()) terminate(10);
    pid_ = other.pid_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (running()) terminate(10);
}

std::optional<int> ChildProcess::poll() {
  if (pid_ <= 0 || exit_code_) return exit_code_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exit_code_ = decode_status(status);
  return exit_code_;
}

int ChildProcess::wait() {
  if (pid_ <= 0) return -1;
  if (!exit_code_) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit_code_ = decode_status(status);
  }
  return *exit_code_;
}

int ChildProcess::terminate(double timeout_s) {
  if (pid_ <= 0) return -1;
  if (poll()) return *exit_code_;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (poll()) return *exit_code_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  return wait();
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : p.string();
}

namespace {

std::string file_tail(const std::string& path, int max_lines) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

std::string last_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(file_tail(path, 8));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(line.size() > 160 ? line.substr(0, 160) + "..." : line);
  }
  if (lines.empty()) return "(its log is empty)";
  const size_t from = lines.size() > 2 ? lines.size() - 2 : 0;
  std::string out;
  for (size_t i = from; i < lines.size(); ++i) out += (i == from ? "" : " / ") + lines[i];
  return out;
}

Result<ServeProcess> ServeProcess::start(const std::string& binary, const std::vector<std::string>& args,
                                         const std::string& log_prefix, double ready_timeout_s) {
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), args.begin(), args.end());
  ServeProcess s;
  const std::string out_path = log_prefix + ".out";
  s.log_path_ = log_prefix + ".log";
  LADDER_ASSIGN_OR_RETURN(s.child_, ChildProcess::spawn(argv, out_path, s.log_path_));
  const std::string marker = "listening on ";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(ready_timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream out(out_path);
    std::string line;
    while (std::getline(out, line)) {
      if (line.rfind(marker, 0) == 0) {
        const std::string rest = line.substr(marker.size());
        s.url_ = rest.substr(0, rest.find(' '));
        return s;
      }
    }
    if (auto code = s.child_.poll()) {
      return invalid_argument(fmt::format("ladder serve exited with code {} before it was ready: {} (log {})",
                                          *code, last_lines(s.log_path_), s.log_path_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  s.child_.terminate(10);
  return invalid_argument(fmt::format("ladder serve was not ready within {:g} s: {} (log {})",
                                      ready_timeout_s, last_lines(s.log_path_), s.log_path_));
}

}  // namespace ladder::climb
