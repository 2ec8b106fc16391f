#include "test_support.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/paths.h"
#include "common/sanitizers.h"

namespace ladder::testing {

std::string shared_dir() { return ladder::shared_dir(LADDER_DEFAULT_SHARED_DIR); }

std::string shared_path(const std::string& rel) {
  std::string p = shared_dir() + "/" + rel;
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << "missing shared test input " << p << " (set LADDER_SHARED_DIR)";
    return "";
  }
  return p;
}

std::string ladder_bin() {
  const char* env = std::getenv("LADDER_BIN");
  if (env == nullptr || *env == '\0') {
    ADD_FAILURE() << "LADDER_BIN is not set; run the tests through ctest";
    return "ladder";
  }
  return env;
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& stdin_data) {
  CommandResult result;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    ADD_FAILURE() << "pipe failed";
    return result;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Feed stdin, then read both outputs without deadlocking on full pipes.
  size_t written = 0;
  if (stdin_data.empty()) {
    close(in_pipe[1]);
    in_pipe[1] = -1;
  } else {
    fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  }
  std::string* sinks[2] = {&result.out, &result.err};
  int fds[2] = {out_pipe[0], err_pipe[0]};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    pollfd pfds[3];
    int n = 0;
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0) pfds[n++] = {fds[i], POLLIN, 0};
    }
    if (in_pipe[1] >= 0) pfds[n++] = {in_pipe[1], POLLOUT, 0};
    if (poll(pfds, n, -1) < 0) break;
    for (int k = 0; k < n; ++k) {
      if (pfds[k].revents == 0) continue;
      if (pfds[k].fd == in_pipe[1]) {
        ssize_t w = write(in_pipe[1], stdin_data.data() + written, stdin_data.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == stdin_data.size()) {
          close(in_pipe[1]);
          in_pipe[1] = -1;
        }
        continue;
      }
      for (int i = 0; i < 2; ++i) {
        if (pfds[k].fd != fds[i]) continue;
        ssize_t r = read(fds[i], buf, sizeof(buf));
        if (r > 0) {
          sinks[i]->append(buf, static_cast<size_t>(r));
        } else {
          close(fds[i]);
          fds[i] = -1;
          --open_count;
        }
      }
    }
  }
  if (in_pipe[1] >= 0) close(in_pipe[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string temp_dir() {
  static std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ladder-test-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    if (made == nullptr) return std::string("/tmp");
    std::string path = made;
    static struct Cleanup {
      std::string p;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(p, ec);
      }
    } cleanup{path};
    return path;
  }();
  return dir;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Under a sanitizer the `ladder` binary computes the model many times slower
// (decode of stories260K: ~9x under ASan/UBSan, ~40x under ThreadSanitizer),
// so there the model has a fraction of the Release one's weights (1/4, 1/8)
// and is still slower per token than it: what the tests rely on ("slow
// enough to act while a request streams") holds in every build, without
// the sanitized suites spending minutes computing it.
const std::string& slow_test_model() {
  static const std::string path = [] {
#if LADDER_TSAN
    const char *dim = "256", *layers = "3", *heads = "4", *ffn = "768";
#elif LADDER_ASAN
    const char *dim = "256", *layers = "6", *heads = "4", *ffn = "768";
#else
    const char *dim = "512", *layers = "6", *heads = "8", *ffn = "1536";
#endif
    std::string p = temp_dir() + "/slow.gguf";
    CommandResult r = run_command({ladder_bin(), "synth", "-o", p, "--dim", dim, "--layers", layers, "--heads", heads,
                                   "--ffn", ffn, "--ctx", "1024", "--vocab-from",
                                   shared_path("models/stories260K.gguf")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return path;
}

}  // namespace ladder::testing
