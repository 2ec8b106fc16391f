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
  std::vector<std::string> args = {"-m", model, "--threads", "1"};
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  server_ = std::make_unique<ladder::testing::ServerProcess>(args);
  if (server_->ok()) url_ = "http://127.0.0.1:" + std::to_string(server_->port());
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

json read_json(const std::string& path) { return json::parse(ladder::testing::read_file(path)); }

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

}  // namespace ladder::harness::testing
