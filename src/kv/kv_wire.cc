#include "kv/kv_wire.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <limits>

namespace ladder::kv {
namespace {

// Slice-by-8 tables of the reflected Castagnoli polynomial.
struct Crc32cTables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Crc32cTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};
constexpr Crc32cTables kCrc;

void put_u16(std::vector<uint8_t>& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}
void put_key(std::vector<uint8_t>& out, const BlockKey& k) {
  out.insert(out.end(), k.bytes.begin(), k.bytes.end());
}

uint32_t get_u32_at(std::span<const uint8_t> b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[at + static_cast<size_t>(i)]) << (8 * i);
  return v;
}

// Reads fields from a payload; any read past the end marks it bad.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  uint64_t u(int n) {
    if (!ok_ || b_.size() - at_ < static_cast<size_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(b_[at_ + static_cast<size_t>(i)]) << (8 * i);
    at_ += static_cast<size_t>(n);
    return v;
  }
  std::string str(size_t max_len) {
    const auto n = static_cast<size_t>(u(4));
    if (!ok_ || n > max_len || b_.size() - at_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return s;
  }
  BlockKey key() {
    BlockKey k;
    if (!ok_ || b_.size() - at_ < k.bytes.size()) {
      ok_ = false;
      return k;
    }
    std::memcpy(k.bytes.data(), b_.data() + at_, k.bytes.size());
    at_ += k.bytes.size();
    return k;
  }
  std::span<const uint8_t> rest() const { return b_.subspan(at_); }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && at_ == b_.size(); }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
  bool ok_ = true;
};

constexpr size_t kMaxString = 4096;
constexpr size_t kBlockPrefixBytes = 4 + 32;  // index + key

// A frame head for `payload`, whose checksum also covers `tail` (block data
// written after the payload's own bytes).
std::vector<uint8_t> frame(KvFrameType type, std::vector<uint8_t> payload,
                           std::span<const uint8_t> tail = {}) {
  std::vector<uint8_t> out;
  out.reserve(kKvFrameHeadBytes + payload.size());
  put_u32(out, kKvWireMagic);
  out.push_back(kKvWireVersion);
  out.push_back(static_cast<uint8_t>(type));
  put_u16(out, 0);
  put_u32(out, static_cast<uint32_t>(payload.size() + tail.size()));
  uint32_t crc = crc32c(out);
  crc = crc32c(payload, crc);
  crc = crc32c(tail, crc);
  put_u32(out, crc);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc) {
  uint32_t c = ~crc;
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  const auto& t = kCrc.t;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // the tables assume little-endian loads (x86, arm64)
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return ~c;
}

Result<KvFrameHead> parse_frame_head(std::span<const uint8_t> head, size_t max_payload) {
  if (head.size() != kKvFrameHeadBytes) {
    return invalid_argument(
        fmt::format("a KV frame head has {} bytes, not {}", kKvFrameHeadBytes, head.size()));
  }
  if (get_u32_at(head, 0) != kKvWireMagic) return invalid_argument("not a KV transfer frame (bad magic)");
  if (head[4] != kKvWireVersion) {
    return invalid_argument(
        fmt::format("KV wire version {} is not supported (this build speaks {})", head[4], kKvWireVersion));
  }
  const uint8_t type = head[5];
  if (type < static_cast<uint8_t>(KvFrameType::kHeader) || type > static_cast<uint8_t>(KvFrameType::kAck)) {
    return invalid_argument(fmt::format("unknown KV frame type {}", type));
  }
  if (head[6] != 0 || head[7] != 0) return invalid_argument("a KV frame head's pad bytes are not zero");
  KvFrameHead h;
  h.type = static_cast<KvFrameType>(type);
  h.payload_bytes = get_u32_at(head, 8);
  h.crc = get_u32_at(head, 12);
  const size_t limit = h.type == KvFrameType::kBlock ? max_payload : kKvMaxControlPayload;
  if (h.payload_bytes > limit) {
    return invalid_argument(
        fmt::format("a KV frame of {} payload bytes exceeds the limit of {}", h.payload_bytes, limit));
  }
  return h;
}

Status check_frame(std::span<const uint8_t> head, std::span<const uint8_t> payload) {
  if (head.size() != kKvFrameHeadBytes || get_u32_at(head, 8) != payload.size()) {
    return invalid_argument("a KV frame's payload length disagrees with its head");
  }
  const uint32_t crc = crc32c(payload, crc32c(head.first(12)));
  if (crc != get_u32_at(head, 12)) {
    return invalid_argument(
        fmt::format("KV frame checksum mismatch (computed {:08x}, sent {:08x})", crc, get_u32_at(head, 12)));
  }
  return Status::ok();
}

size_t KvWireMessage::size() const {
  size_t n = 0;
  for (const auto& p : pieces) n += p.size();
  return n;
}

std::vector<uint8_t> KvWireMessage::flatten() const {
  std::vector<uint8_t> out;
  out.reserve(size());
  for (const auto& p : pieces) out.insert(out.end(), p.begin(), p.end());
  return out;
}

KvWireMessage encode_kv_transfer(const std::string& transfer_id, const KvBlockSet& set) {
  LADDER_CHECK(set.data.size() == set.n_blocks() * set.block_bytes,
               "a block set's data disagrees with its count");
  KvWireMessage m;
  m.owned.reserve(set.n_blocks() + 2);
  std::vector<uint8_t> h;
  put_str(h, transfer_id);
  put_str(h, set.model_digest);
  put_str(h, set.tokenizer_digest);
  put_str(h, set.kv_format);
  put_u32(h, static_cast<uint32_t>(set.shape.n_layers));
  put_u32(h, static_cast<uint32_t>(set.shape.n_kv_heads));
  put_u32(h, static_cast<uint32_t>(set.shape.head_dim));
  put_u32(h, static_cast<uint32_t>(set.shape.block_size));
  put_u32(h, static_cast<uint32_t>(set.shape.dtype));
  put_key(h, set.ns_digest);
  put_u64(h, static_cast<uint64_t>(set.first_block));
  put_u32(h, static_cast<uint32_t>(set.n_blocks()));
  put_u64(h, set.block_bytes);
  m.owned.push_back(frame(KvFrameType::kHeader, std::move(h)));
  for (size_t i = 0; i < set.n_blocks(); ++i) {
    std::vector<uint8_t> b;
    put_u32(b, static_cast<uint32_t>(i));
    put_key(b, set.keys[i]);
    m.owned.push_back(frame(KvFrameType::kBlock, std::move(b), set.block(i)));
  }
  std::vector<uint8_t> e;
  put_u32(e, static_cast<uint32_t>(set.n_blocks()));
  m.owned.push_back(frame(KvFrameType::kEnd, std::move(e)));
  // Pieces once `owned` no longer moves.
  m.pieces.push_back(m.owned[0]);
  for (size_t i = 0; i < set.n_blocks(); ++i) {
    m.pieces.push_back(m.owned[1 + i]);
    m.pieces.push_back(set.block(i));
  }
  m.pieces.push_back(m.owned.back());
  return m;
}

std::vector<uint8_t> encode_kv_ack(const Status& status) {
  std::vector<uint8_t> p;
  put_u32(p, static_cast<uint32_t>(status.code()));
  std::string msg = status.message();
  if (msg.size() > kMaxString) msg.resize(kMaxString);
  put_str(p, msg);
  return frame(KvFrameType::kAck, std::move(p));
}

Status decode_kv_ack(std::span<const uint8_t> payload) {
  Reader r(payload);
  const auto code = static_cast<uint32_t>(r.u(4));
  std::string msg = r.str(kMaxString);
  if (!r.at_end() || code > static_cast<uint32_t>(StatusCode::kIo)) {
    return invalid_argument("a malformed KV transfer acknowledgement");
  }
  if (code == 0) return Status::ok();
  return Status(static_cast<StatusCode>(code), "the receiver refused the KV transfer: " + msg);
}

KvTransferDecoder::KvTransferDecoder(KvWireLimits limits) : limits_(limits) {}

size_t KvTransferDecoder::max_payload() const {
  return have_header_ ? kBlockPrefixBytes + set_.block_bytes : kKvMaxControlPayload;
}

Status KvTransferDecoder::on_frame(std::span<const uint8_t> head, std::span<const uint8_t> payload) {
  LADDER_ASSIGN_OR_RETURN(KvFrameHead h, parse_frame_head(head, max_payload()));
  LADDER_RETURN_IF_ERROR(check_frame(head, payload));
  if (done_) return invalid_argument("a KV frame after the transfer's end");
  switch (h.type) {
    case KvFrameType::kHeader: return on_header(payload);
    case KvFrameType::kBlock: return on_block(payload);
    case KvFrameType::kEnd: return on_end(payload);
    case KvFrameType::kAck: break;
  }
  return invalid_argument("an acknowledgement frame inside a KV transfer");
}

Status KvTransferDecoder::on_header(std::span<const uint8_t> payload) {
  if (have_header_) return invalid_argument("a second KV transfer header");
  Reader r(payload);
  transfer_id_ = r.str(kMaxString);
  set_.model_digest = r.str(kMaxString);
  set_.tokenizer_digest = r.str(kMaxString);
  set_.kv_format = r.str(kMaxString);
  KvShape& s = set_.shape;
  s.n_layers = static_cast<int>(r.u(4));
  s.n_kv_heads = static_cast<int>(r.u(4));
  s.head_dim = static_cast<int>(r.u(4));
  s.block_size = static_cast<int>(r.u(4));
  s.dtype = static_cast<TensorType>(r.u(4));
  set_.ns_digest = r.key();
  const uint64_t first = r.u(8);
  n_expected_ = static_cast<size_t>(r.u(4));
  set_.block_bytes = static_cast<size_t>(r.u(8));
  if (!r.at_end()) return invalid_argument("a malformed KV transfer header");
  if (transfer_id_.empty()) return invalid_argument("a KV transfer without an id");
  if (first > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument("a KV transfer starting past any context");
  }
  set_.first_block = static_cast<int64_t>(first);
  LADDER_RETURN_IF_ERROR(validate_kv_shape(s, false));
  LADDER_ASSIGN_OR_RETURN(size_t bytes, kv_block_bytes(s));
  if (bytes != set_.block_bytes) {
    return invalid_argument(fmt::format("a KV transfer header says {} bytes a block; its shape makes {}",
                                        set_.block_bytes, bytes));
  }
  if (set_.kv_format != kv_format_name(s)) {
    return invalid_argument(fmt::format("a KV transfer header names format '{}' for a shape of format '{}'",
                                        set_.kv_format, kv_format_name(s)));
  }
  if (set_.block_bytes > limits_.max_block_bytes || n_expected_ > limits_.max_blocks ||
      (n_expected_ > 0 && set_.block_bytes > limits_.max_total_bytes / n_expected_)) {
    return out_of_range(fmt::format("a KV transfer of {} blocks of {} bytes exceeds this receiver's limits",
                                    n_expected_, set_.block_bytes));
  }
  set_.keys.reserve(n_expected_);
  set_.data.reserve(n_expected_ * set_.block_bytes);
  have_header_ = true;
  return Status::ok();
}

Status KvTransferDecoder::on_block(std::span<const uint8_t> payload) {
  if (!have_header_) return invalid_argument("a KV block before the transfer header");
  Reader r(payload);
  const auto index = static_cast<size_t>(r.u(4));
  const BlockKey key = r.key();
  if (!r.ok() || r.rest().size() != set_.block_bytes) {
    return invalid_argument(
        fmt::format("a KV block frame carries {} data bytes, not {}", r.rest().size(), set_.block_bytes));
  }
  if (index != set_.keys.size()) {
    return invalid_argument(
        fmt::format("KV block {} arrived where block {} was due", index, set_.keys.size()));
  }
  if (index >= n_expected_) return invalid_argument("more KV blocks than the header announced");
  set_.keys.push_back(key);
  set_.data.insert(set_.data.end(), r.rest().begin(), r.rest().end());
  return Status::ok();
}

Status KvTransferDecoder::on_end(std::span<const uint8_t> payload) {
  if (!have_header_) return invalid_argument("a KV transfer end before its header");
  Reader r(payload);
  const auto n = static_cast<size_t>(r.u(4));
  if (!r.at_end()) return invalid_argument("a malformed KV transfer end");
  if (n != n_expected_ || set_.keys.size() != n_expected_) {
    return invalid_argument(
        fmt::format("a KV transfer ended after {} blocks; {} were announced and the end says {}",
                    set_.keys.size(), n_expected_, n));
  }
  done_ = true;
  return Status::ok();
}

Result<std::pair<std::string, KvBlockSet>> decode_kv_transfer(std::span<const uint8_t> bytes,
                                                              const KvWireLimits& limits) {
  KvTransferDecoder d(limits);
  size_t at = 0;
  while (!d.done()) {
    if (bytes.size() - at < kKvFrameHeadBytes) {
      return invalid_argument(
          fmt::format("the KV transfer stream is truncated at byte {} (inside a frame head)", bytes.size()));
    }
    const auto head = bytes.subspan(at, kKvFrameHeadBytes);
    LADDER_ASSIGN_OR_RETURN(KvFrameHead h, parse_frame_head(head, d.max_payload()));
    at += kKvFrameHeadBytes;
    if (bytes.size() - at < h.payload_bytes) {
      return invalid_argument(
          fmt::format("the KV transfer stream is truncated at byte {} (inside a frame of {} "
                      "payload bytes)",
                      bytes.size(), h.payload_bytes));
    }
    LADDER_RETURN_IF_ERROR(d.on_frame(head, bytes.subspan(at, h.payload_bytes)));
    at += h.payload_bytes;
  }
  if (at != bytes.size()) return invalid_argument("bytes after the end of a KV transfer");
  std::string id = d.transfer_id();
  return std::make_pair(std::move(id), d.take());
}

}  // namespace ladder::kv
