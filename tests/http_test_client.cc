#include "http_test_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_support.h"

namespace ladder::testing {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

std::string HttpReply::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

ServerProcess::ServerProcess(const std::vector<std::string>& args, bool wait_ready, const std::string& command) {
  static int counter = 0;
  log_path_ = temp_dir() + "/serve-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".log";
  int out_pipe[2];
  if (pipe(out_pipe) != 0) {
    ADD_FAILURE() << "pipe failed";
    return;
  }
  std::vector<std::string> argv = {ladder_bin(), command, "--port", "0", "--admin-key", kTestAdminKey};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out_pipe[1], 1);
    int log_fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log_fd >= 0) dup2(log_fd, 2);
    close(out_pipe[0]);
    close(out_pipe[1]);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  auto deadline = SteadyClock::now() + Ms(30000);
  if (!wait_ready) {
    // The socket is bound before the model loads; the log says where.
    const std::string mark = "accepting connections on http://";
    while (SteadyClock::now() < deadline) {
      const std::string text = log();
      const size_t at = text.find(mark);
      const size_t colon = at == std::string::npos ? at : text.find(':', at + mark.size());
      if (colon != std::string::npos && text.find(' ', colon) != std::string::npos) {
        port_ = std::atoi(text.c_str() + colon + 1);
        stdout_fd_ = out_pipe[0];  // kept open: the server still writes its "listening" line
        return;
      }
      std::this_thread::sleep_for(Ms(5));
    }
    ADD_FAILURE() << "ladder serve did not bind its port; log: " << log();
    close(out_pipe[0]);
    return;
  }
  // Read stdout until the "listening on http://HOST:PORT" line (the model is loaded).
  std::string out;
  while (SteadyClock::now() < deadline && out.find('\n') == std::string::npos) {
    pollfd p{out_pipe[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  size_t colon = out.rfind(':', out.find('\n'));
  if (out.rfind("listening on http://", 0) != 0 || colon == std::string::npos) {
    ADD_FAILURE() << "ladder serve did not report its port; stdout: " << out << "\nlog: " << log();
    return;
  }
  port_ = std::atoi(out.c_str() + colon + 1);
  while (SteadyClock::now() < deadline) {
    HttpReply r = http_request(port_, "GET", "/health");
    if (r.status == 200) return;
    std::this_thread::sleep_for(Ms(20));
  }
  ADD_FAILURE() << "ladder serve never became ready; log: " << log();
  port_ = 0;
}

ServerProcess::~ServerProcess() {
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int ServerProcess::terminate(Ms timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(Ms(10));
  }
  return -1;
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int connect_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

namespace {

// Tries to parse a complete response from buf; true when complete (or when
// `closed` and everything available was used).
bool parse_reply(const std::string& buf, bool closed, HttpReply* r) {
  size_t head_end = buf.find("\r\n\r\n");
  if (head_end == std::string::npos) return false;
  std::istringstream head(buf.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  if (line.size() < 12) return false;
  r->status = std::atoi(line.c_str() + 9);
  r->headers.clear();
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t c = line.find(':');
    if (c == std::string::npos) continue;
    std::string name = line.substr(0, c);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    size_t v = line.find_first_not_of(' ', c + 1);
    r->headers[name] = v == std::string::npos ? "" : line.substr(v);
  }
  size_t body_start = head_end + 4;
  if (r->header("transfer-encoding") == "chunked") {
    r->body.clear();
    size_t pos = body_start;
    for (;;) {
      size_t eol = buf.find("\r\n", pos);
      if (eol == std::string::npos) return false;
      size_t size = std::strtoul(buf.c_str() + pos, nullptr, 16);
      if (size == 0) return buf.size() >= eol + 4;
      if (buf.size() < eol + 2 + size + 2) return false;
      r->body.append(buf, eol + 2, size);
      pos = eol + 2 + size + 2;
    }
  }
  std::string cl = r->header("content-length");
  if (!cl.empty()) {
    size_t len = std::strtoul(cl.c_str(), nullptr, 10);
    if (buf.size() < body_start + len) return false;
    r->body = buf.substr(body_start, len);
    return true;
  }
  r->body = buf.substr(body_start);
  return closed;
}

}  // namespace

HttpReply read_reply(int fd, Ms timeout) {
  HttpReply r;
  std::string buf;
  auto deadline = SteadyClock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))) <= 0) continue;
    char chunk[65536];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      HttpReply done;
      if (parse_reply(buf, true, &done)) return done;
      return HttpReply{};
    }
    buf.append(chunk, static_cast<size_t>(n));
    if (parse_reply(buf, false, &r)) return r;
  }
  return HttpReply{};
}

HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                       const std::map<std::string, std::string>& headers, std::chrono::milliseconds timeout) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& [k, v] : headers) {
    req += k + ": " + v + "\r\n";
    if (k == "Content-Type") has_type = true;
  }
  if (!body.empty() && !has_type) req += "Content-Type: application/json\r\n";
  if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  return http_raw(port, req, timeout);
}

HttpReply http_raw(int port, const std::string& bytes, Ms timeout) {
  int fd = connect_loopback(port);
  if (fd < 0) return {};
  HttpReply r;
  if (send_all(fd, bytes)) r = read_reply(fd, timeout);
  close(fd);
  return r;
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

double metric_value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ') {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return -1;
}

std::string metrics(int port) {
  return http_request(port, "GET", "/metrics", "", {{"Authorization", std::string("Bearer ") + kTestAdminKey}}).body;
}

std::string wait_metric(int port, const std::string& series, double value) {
  std::string text;
  for (int i = 0; i < 500; ++i) {
    text = metrics(port);
    if (metric_value(text, series) == value) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return text;
}

}  // namespace ladder::testing
