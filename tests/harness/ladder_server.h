// `ladder serve --port 0` started by a test on a model with extra flags, and
// stopped at scope exit; url() is empty when it did not come up. Also what
// the harness tests share around it: its process id (for /proc accounting),
// and helpers to write workloads and run `ladder replay` against it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/workload.h"
#include "http_test_client.h"
#include "test_support.h"

namespace ladder::harness::testing {

// A ServerProcess (one op thread) addressed by URL, as replay takes it.
class LadderServer {
 public:
  explicit LadderServer(std::vector<std::string> extra_flags = {},
                        std::string model = ladder::testing::shared_dir() + "/models/stories260K.gguf");

  const std::string& url() const { return url_; }
  pid_t pid() const { return server_->pid(); }
  // "127.0.0.1:PORT"
  std::string host_port() const;

 private:
  std::unique_ptr<ladder::testing::ServerProcess> server_;
  std::string url_;
};

// The process's user + system CPU seconds from /proc/PID/stat (fields 14 and 15).
double proc_cpu_seconds(pid_t pid);

std::vector<nlohmann::json> read_jsonl(const std::string& path);
nlohmann::json read_json(const std::string& path);
std::string write_workload(const std::string& name, const std::vector<WorkloadRequest>& reqs);
WorkloadRequest completion(double t, const std::string& tenant, const std::string& prompt, int max_tokens,
                           const std::string& slice);

// `ladder replay --endpoint URL --workload W --out OUT EXTRA...`
ladder::testing::CommandResult replay(const std::string& url, const std::string& workload, const std::string& out,
                                      std::vector<std::string> extra);

}  // namespace ladder::harness::testing
