#include "ladder_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace ladder::harness::testing {

using nlohmann::json;

LadderServer::LadderServer(std::vector<std::string> extra_flags, std::string model) {
  int out[2];
  if (pipe(out) != 0) return;
  std::vector<std::string> argv = {ladder::testing::ladder_bin(), "--log-level", "warn", "serve", "-m", model,
                                   "--port", "0", "--threads", "1"};
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 500) <= 0) continue;
    char buf[512];
    ssize_t n = read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
    size_t at = seen.find("listening on http://");
    size_t eol = at == std::string::npos ? at : seen.find('\n', at);
    if (eol != std::string::npos) {
      url_ = seen.substr(at + 13, eol - at - 13);
      break;
    }
  }
  close(out[0]);
}

LadderServer::~LadderServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
}

std::string LadderServer::host_port() const { return url_.substr(url_.find("://") + 3); }

double proc_cpu_seconds(pid_t pid) {
  std::string stat = ladder::testing::read_file("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name (which may hold spaces) start after ')'.
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::vector<std::string> f;
  std::string x;
  while (in >> x) f.push_back(x);
  // f[0] is field 3 (state): utime is field 14, stime field 15.
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(f.at(11)) + std::stod(f.at(12))) / ticks;
}

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(ladder::testing::read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

std::string write_workload(const std::string& name, const std::vector<WorkloadRequest>& reqs) {
  std::string path = ladder::testing::temp_dir() + "/" + name;
  std::ofstream(path) << write_native_workload(reqs);
  return path;
}

WorkloadRequest completion(double t, const std::string& tenant, const std::string& prompt, int max_tokens,
                           const std::string& slice) {
  WorkloadRequest r;
  r.t = t;
  r.tenant = tenant;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.slice = slice;
  return r;
}

ladder::testing::CommandResult replay(const std::string& url, const std::string& workload, const std::string& out,
                                      std::vector<std::string> extra) {
  std::vector<std::string> argv = {ladder::testing::ladder_bin(), "replay", "--endpoint", url, "--workload",
                                   workload, "--out", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return ladder::testing::run_command(argv);
}

bool has_subcommand(const std::string& name) {
  auto help = ladder::testing::run_command({ladder::testing::ladder_bin(), "--help"});
  return help.out.find("\n  " + name + " ") != std::string::npos;
}

}  // namespace ladder::harness::testing
