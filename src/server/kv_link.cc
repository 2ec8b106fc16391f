#include "server/kv_link.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio.hpp>
#include <thread>
#include <vector>

namespace ladder::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ metrics

std::string KvLinkMetrics::render(int64_t imported_blocks, int64_t refused_blocks) const {
  std::string out;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  auto pair = [&](const char* name, const char* help, uint64_t sent, uint64_t received) {
    out += fmt::format(
        "# HELP {} {}\n# TYPE {} counter\n{}{{direction=\"sent\"}} {}\n{}{{direction=\"received\"}} {}\n",
        name, help, name, name, sent, name, received);
  };
  pair("ladder_kv_transfers_total", "KV transfers completed (sent and acknowledged, or received and stored)",
       sent_transfers.load(), received_transfers.load());
  pair("ladder_kv_transfer_bytes_total", "KV transfer wire bytes, frames included", sent_bytes.load(),
       received_bytes.load());
  pair("ladder_kv_transfer_failures_total", "KV transfers that failed (send) or were refused (receive)",
       sent_failures.load(), received_refused.load());
  counter("ladder_kv_transfer_sent_blocks_total", "KV blocks sent", sent_blocks.load());
  out += fmt::format(
      "# HELP ladder_kv_transfer_send_seconds_total Time from connect to acknowledgement, summed over "
      "transfers\n"
      "# TYPE ladder_kv_transfer_send_seconds_total counter\nladder_kv_transfer_send_seconds_total {:.6f}\n",
      static_cast<double>(sent_micros.load()) / 1e6);
  out +=
      "# HELP ladder_kv_inbox_total Received transfers by what became of them\n"
      "# TYPE ladder_kv_inbox_total counter\n";
  out += fmt::format("ladder_kv_inbox_total{{outcome=\"taken\"}} {}\n", inbox_taken.load());
  out += fmt::format("ladder_kv_inbox_total{{outcome=\"expired\"}} {}\n", inbox_expired.load());
  out += fmt::format("ladder_kv_inbox_total{{outcome=\"missing\"}} {}\n", inbox_missing.load());
  counter("ladder_kv_imported_blocks_total", "KV blocks taken from other workers' transfers",
          static_cast<uint64_t>(imported_blocks));
  counter("ladder_kv_refused_blocks_total",
          "Transferred KV blocks refused: key or format not the request's own",
          static_cast<uint64_t>(refused_blocks));
  return out;
}

// -------------------------------------------------------------------- inbox

KvInbox::KvInbox(size_t max_bytes, std::chrono::milliseconds ttl, KvLinkMetrics& metrics)
    : max_bytes_(max_bytes), ttl_(ttl), metrics_(metrics) {}

void KvInbox::expire_locked(Clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.expires <= now) {
      bytes_ -= it->second.blocks->data.size();
      metrics_.inbox_expired.fetch_add(1);
      spdlog::warn("KV transfer {} expired unclaimed", it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

Status KvInbox::put(const std::string& id, std::shared_ptr<const kv::KvBlockSet> blocks) {
  std::lock_guard lock(mu_);
  expire_locked(Clock::now());
  if (entries_.count(id) != 0) return invalid_argument(fmt::format("KV transfer '{}' is already here", id));
  const size_t n = blocks->data.size();
  if (bytes_ + n > max_bytes_) {
    return resource_exhausted(fmt::format("the KV inbox holds {} bytes; {} more would pass its bound of {}",
                                          bytes_, n, max_bytes_));
  }
  bytes_ += n;
  entries_.emplace(id, Entry{std::move(blocks), Clock::now() + ttl_});
  return Status::ok();
}

std::shared_ptr<const kv::KvBlockSet> KvInbox::take(const std::string& id) {
  std::lock_guard lock(mu_);
  expire_locked(Clock::now());
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    metrics_.inbox_missing.fetch_add(1);
    return nullptr;
  }
  auto blocks = std::move(it->second.blocks);
  bytes_ -= blocks->data.size();
  entries_.erase(it);
  metrics_.inbox_taken.fetch_add(1);
  return blocks;
}

size_t KvInbox::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

size_t KvInbox::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

// ----------------------------------------------------------------- receiver

struct KvReceiver::Impl {
  KvReceiverConfig config;
  KvInbox& inbox;
  KvLinkMetrics& metrics;
  // Before io: sessions destroyed with io's pending handlers count down here.
  std::atomic<int64_t> connections{0};
  net::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  bool started = false;

  Impl(KvReceiverConfig c, KvInbox& in, KvLinkMetrics& m) : config(std::move(c)), inbox(in), metrics(m) {}

  // The receiver's verdict on a complete transfer.
  Status admit(const std::string& id, kv::KvBlockSet set) {
    if (set.model_digest != config.model_digest) {
      return invalid_argument(fmt::format("KV transfer {} was computed with model {}; this worker serves {}",
                                          id, set.model_digest, config.model_digest));
    }
    if (set.tokenizer_digest != config.tokenizer_digest) {
      return invalid_argument(
          fmt::format("KV transfer {} was tokenized with {}; this worker's tokenizer is {}", id,
                      set.tokenizer_digest, config.tokenizer_digest));
    }
    LADDER_RETURN_IF_ERROR(kv::check_block_set(set, config.shape));
    return inbox.put(id, std::make_shared<const kv::KvBlockSet>(std::move(set)));
  }

  void accept();
};

namespace {

class LinkSession : public std::enable_shared_from_this<LinkSession> {
 public:
  LinkSession(tcp::socket socket, KvReceiver::Impl& owner)
      : socket_(std::move(socket)),
        owner_(owner),
        timer_(socket_.get_executor()),
        decoder_(owner.config.limits) {}

  void start() {
    timer_.expires_after(owner_.config.read_timeout);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) {
        boost::system::error_code ignored;
        self->socket_.close(ignored);  // the pending read fails and ends the session
      }
    });
    read_head();
  }
  ~LinkSession() { owner_.connections.fetch_sub(1); }

 private:
  void read_head() {
    net::async_read(socket_, net::buffer(head_),
                    [self = shared_from_this()](boost::system::error_code ec, size_t) { self->on_head(ec); });
  }
  void on_head(boost::system::error_code ec) {
    if (ec) return fail_quietly(ec);
    owner_.metrics.received_bytes.fetch_add(head_.size());
    auto h = kv::parse_frame_head(head_, decoder_.max_payload());
    if (!h.is_ok()) return refuse(h.status());
    payload_.resize(h->payload_bytes);
    net::async_read(
        socket_, net::buffer(payload_),
        [self = shared_from_this()](boost::system::error_code e, size_t) { self->on_payload(e); });
  }
  void on_payload(boost::system::error_code ec) {
    if (ec) return fail_quietly(ec);
    owner_.metrics.received_bytes.fetch_add(payload_.size());
    if (Status st = decoder_.on_frame(head_, payload_); !st.is_ok()) return refuse(st);
    if (!decoder_.done()) return read_head();
    const std::string id = decoder_.transfer_id();
    const Status verdict = owner_.admit(id, decoder_.take());
    if (verdict.is_ok()) {
      owner_.metrics.received_transfers.fetch_add(1);
    } else {
      owner_.metrics.received_refused.fetch_add(1);
      spdlog::warn("KV transfer {} refused: {}", id, verdict.message());
    }
    reply(verdict);
  }
  void refuse(const Status& st) {
    owner_.metrics.received_refused.fetch_add(1);
    spdlog::warn("KV transfer stream refused: {}", st.message());
    reply(st);
  }
  void reply(const Status& st) {
    ack_ = kv::encode_kv_ack(st);
    net::async_write(socket_, net::buffer(ack_),
                     [self = shared_from_this()](boost::system::error_code, size_t) {
                       self->timer_.cancel();
                       boost::system::error_code ignored;
                       self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
                       self->socket_.close(ignored);
                     });
  }
  void fail_quietly(boost::system::error_code ec) {
    timer_.cancel();
    if (ec != net::error::eof || decoder_.transfer_id().empty()) {
      // A sender that connects and leaves (a probe) is not worth a warning.
      if (ec != net::error::eof) spdlog::warn("KV transfer connection lost: {}", ec.message());
    } else {
      spdlog::warn("KV transfer {} ended before its last frame", decoder_.transfer_id());
      owner_.metrics.received_refused.fetch_add(1);
    }
  }

  tcp::socket socket_;
  KvReceiver::Impl& owner_;
  net::steady_timer timer_;
  kv::KvTransferDecoder decoder_;
  std::array<uint8_t, kv::kKvFrameHeadBytes> head_{};
  std::vector<uint8_t> payload_;
  std::vector<uint8_t> ack_;
};

}  // namespace

void KvReceiver::Impl::accept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec != net::error::operation_aborted) accept();
      return;
    }
    if (connections.fetch_add(1) >= config.max_connections) {
      connections.fetch_sub(1);
      boost::system::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<LinkSession>(std::move(socket), *this)->start();
    }
    accept();
  });
}

KvReceiver::KvReceiver(KvReceiverConfig config, KvInbox& inbox, KvLinkMetrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(config), inbox, metrics)) {}

KvReceiver::~KvReceiver() {
  stop();
}

Status KvReceiver::start() {
  Impl& s = *impl_;
  boost::system::error_code ec;
  const auto address = net::ip::make_address(s.config.host, ec);
  if (ec) return invalid_argument(fmt::format("--kv-host '{}' is not an IP address", s.config.host));
  const tcp::endpoint ep(address, s.config.port);
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return io_error(fmt::format("cannot listen for KV transfers on {}:{}: {}", s.config.host, s.config.port,
                                ec.message()));
  s.accept();
  s.thread = std::thread([&s] { s.io.run(); });
  s.started = true;
  return Status::ok();
}

uint16_t KvReceiver::port() const {
  return impl_->acceptor.local_endpoint().port();
}

void KvReceiver::stop() {
  if (!impl_ || !impl_->started) return;
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->started = false;
}

// ------------------------------------------------------------------- sender

Result<KvSendResult> send_kv_transfer(const std::string& host, uint16_t port, const std::string& transfer_id,
                                      const kv::KvBlockSet& blocks, std::chrono::milliseconds timeout,
                                      KvLinkMetrics* metrics) {
  const auto t0 = Clock::now();
  const kv::KvWireMessage message = kv::encode_kv_transfer(transfer_id, blocks);
  net::io_context io;
  tcp::socket socket(io);
  tcp::resolver resolver(io);
  Status failure = Status::ok();
  std::array<uint8_t, kv::kKvFrameHeadBytes> head{};
  std::vector<uint8_t> payload;
  std::vector<net::const_buffer> buffers;
  for (const auto& p : message.pieces) buffers.emplace_back(p.data(), p.size());
  auto fail = [&](const std::string& what, boost::system::error_code ec) {
    if (failure.is_ok()) {
      failure =
          io_error(fmt::format("KV transfer to {}:{} failed while {}: {}", host, port, what, ec.message()));
    }
  };
  bool done = false;
  resolver.async_resolve(
      host, std::to_string(port), [&](boost::system::error_code ec, tcp::resolver::results_type r) {
        if (ec) return fail("resolving", ec);
        net::async_connect(socket, r, [&](boost::system::error_code ec2, const tcp::endpoint&) {
          if (ec2) return fail("connecting", ec2);
          net::async_write(socket, buffers, [&](boost::system::error_code ec3, size_t) {
            if (ec3) return fail("sending", ec3);
            net::async_read(socket, net::buffer(head), [&](boost::system::error_code ec4, size_t) {
              if (ec4) return fail("waiting for the acknowledgement", ec4);
              auto h = kv::parse_frame_head(head, 0);
              if (!h.is_ok() || h->type != kv::KvFrameType::kAck) {
                failure = io_error("the KV receiver answered with something other than an acknowledgement");
                return;
              }
              payload.resize(h->payload_bytes);
              net::async_read(socket, net::buffer(payload), [&](boost::system::error_code ec5, size_t) {
                if (ec5) return fail("reading the acknowledgement", ec5);
                if (Status st = kv::check_frame(head, payload); !st.is_ok()) {
                  failure = st;
                  return;
                }
                failure = kv::decode_kv_ack(payload);
                done = true;
              });
            });
          });
        });
      });
  io.run_for(timeout);
  if (!done && failure.is_ok()) {
    failure =
        io_error(fmt::format("KV transfer to {}:{} timed out after {} ms", host, port, timeout.count()));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!done || !failure.is_ok()) {
    if (metrics != nullptr) metrics->sent_failures.fetch_add(1);
    return failure;
  }
  KvSendResult r{message.size(), blocks.n_blocks(), seconds};
  if (metrics != nullptr) {
    metrics->sent_transfers.fetch_add(1);
    metrics->sent_blocks.fetch_add(r.blocks);
    metrics->sent_bytes.fetch_add(r.bytes);
    metrics->sent_micros.fetch_add(static_cast<uint64_t>(seconds * 1e6));
  }
  return r;
}

}  // namespace ladder::server
