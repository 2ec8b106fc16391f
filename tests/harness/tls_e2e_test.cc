// Replay over HTTPS: a TLS endpoint made here (a self-signed certificate from
// the openssl CLI, and a TLS-terminating proxy in front of a real `ladder
// serve`) is refused while its certificate cannot be trusted, and measured
// with --insecure or with the certificate given as a CA; the host name is
// checked against the certificate.
#include <gtest/gtest.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness/workload.h"
#include "ladder_server.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using nlohmann::json;

// Decrypts on 127.0.0.1:port() and forwards the bytes to a plain backend.
class TlsProxy {
 public:
  TlsProxy(const std::string& cert, const std::string& key, uint16_t backend_port)
      : ctx_(ssl::context::tls_server), acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)),
        backend_(net::ip::make_address("127.0.0.1"), backend_port) {
    ctx_.use_certificate_chain_file(cert);
    ctx_.use_private_key_file(key, ssl::context::pem);
    accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~TlsProxy() {
    ioc_.stop();
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  struct Session : std::enable_shared_from_this<Session> {
    Session(tcp::socket s, ssl::context& ctx, tcp::endpoint backend)
        : client(std::move(s), ctx), upstream(client.get_executor()), backend_ep(backend) {}
    void start() {
      auto self = shared_from_this();
      client.async_handshake(ssl::stream_base::server, [self](boost::system::error_code ec) {
        if (ec) return self->close();
        self->upstream.async_connect(self->backend_ep, [self](boost::system::error_code e) {
          if (e) return self->close();
          self->from_client();
          self->from_backend();
        });
      });
    }
    void from_client() {
      auto self = shared_from_this();
      client.async_read_some(net::buffer(a), [self](boost::system::error_code ec, size_t n) {
        if (ec) return self->close();
        net::async_write(self->upstream, net::buffer(self->a, n), [self](boost::system::error_code e, size_t) {
          if (e) return self->close();
          self->from_client();
        });
      });
    }
    void from_backend() {
      auto self = shared_from_this();
      upstream.async_read_some(net::buffer(b), [self](boost::system::error_code ec, size_t n) {
        if (ec) return self->close();
        net::async_write(self->client, net::buffer(self->b, n), [self](boost::system::error_code e, size_t) {
          if (e) return self->close();
          self->from_backend();
        });
      });
    }
    void close() {
      boost::system::error_code ignored;
      upstream.close(ignored);
      client.lowest_layer().close(ignored);
    }
    ssl::stream<tcp::socket> client;
    tcp::socket upstream;
    tcp::endpoint backend_ep;
    std::array<char, 16384> a{}, b{};
  };

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (!ec) std::make_shared<Session>(std::move(s), ctx_, backend_)->start();
      accept();
    });
  }

  net::io_context ioc_;
  ssl::context ctx_;
  tcp::acceptor acceptor_;
  tcp::endpoint backend_;
  std::thread thread_;
};

TEST(TlsE2E, ReplaysAgainstALocalTlsEndpoint) {
  const std::string dir = ladder::testing::temp_dir();
  const std::string cert = dir + "/tls-cert.pem", key = dir + "/tls-key.pem";
  // Valid for the name "localhost" only (no IP address), so the host name check can be seen to work.
  auto made = ladder::testing::run_command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                                            "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext",
                                            "subjectAltName=DNS:localhost"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  testing::LadderServer server;
  ASSERT_FALSE(server.url().empty());
  const std::string hp = server.host_port();
  TlsProxy proxy(cert, key, static_cast<uint16_t>(std::stoi(hp.substr(hp.find(':') + 1))));
  const std::string by_name = "https://localhost:" + std::to_string(proxy.port());
  const std::string by_address = "https://127.0.0.1:" + std::to_string(proxy.port());

  std::vector<WorkloadRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    reqs.push_back(testing::completion(0.05 * i, "a", "Once upon a time", 12, "story"));
    reqs.back().expect = Expectation{Expectation::Kind::kSubstring, "Lily"};
  }
  const std::string wl = testing::write_workload("tls.jsonl", reqs);

  // Self-signed: refused by default, with the reason.
  auto res = testing::replay(by_name, wl, dir + "/tls-strict", {"--wait-ready", "1", "--quiet"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("certificate verify failed"), std::string::npos) << res.err;

  // --insecure: measured like any endpoint.
  res = testing::replay(by_address, wl, dir + "/tls-insecure", {"--insecure", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err << res.out;
  auto results = testing::read_jsonl(dir + "/tls-insecure/requests.jsonl");
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_EQ(r["http_status"], 200);
    EXPECT_TRUE(r["verified"].get<bool>()) << r.dump();
    EXPECT_EQ(r["prompt_tokens"], 5);
  }
  json record = json::parse(ladder::testing::read_file(dir + "/tls-insecure/record.json"));
  EXPECT_EQ(record["configuration"]["endpoint"], by_address);
  EXPECT_EQ(record["server"]["models"]["data"][0]["id"], "stories260K");

  // The certificate as a trusted CA: verified, for the name it was issued to.
  res = testing::replay(by_name, wl, dir + "/tls-ca", {"--ca-cert", cert, "--quiet"});
  EXPECT_EQ(res.exit_code, 0) << res.err;
  // The same certificate does not name 127.0.0.1: the host name check refuses it.
  res = testing::replay(by_address, wl, dir + "/tls-wrong-name", {"--ca-cert", cert, "--wait-ready", "1", "--quiet"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("certificate verify failed"), std::string::npos) << res.err;
  // TLS flags on a plain endpoint are an error, not ignored.
  res = testing::replay(server.url(), wl, dir + "/tls-plain", {"--insecure", "--quiet"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("only to https://"), std::string::npos) << res.err;
}

}  // namespace
}  // namespace ladder::harness
