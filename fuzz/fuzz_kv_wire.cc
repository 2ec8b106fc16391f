// libFuzzer target for the KV transfer wire decoder (kv/kv_wire.h), the code
// a prefill worker's bytes reach first on a decode worker. For every input:
//  - decode it as a whole transfer, as it is and again with every frame's
//    CRC-32C recomputed (otherwise almost every mutation dies at the
//    checksum and the fuzzer never reaches the header and block checks);
//  - a refusal must be clean: kInvalidArgument, kOutOfRange (the receiver's
//    limits) or kUnimplemented (a KV type attention cannot read);
//  - a transfer that decodes must encode back to exactly the same bytes (the
//    format has one encoding per transfer, so anything the decoder accepts
//    and the encoder would write differently is a decoder bug);
//  - the same bytes fed frame by frame to KvTransferDecoder must reach the
//    same verdict;
//  - the input read as an acknowledgement payload decodes to a status or a
//    clean refusal.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_format.h"
#include "kv/kv_wire.h"

namespace ladder::kv {
namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_kv_wire: %s\n", what);
  std::abort();
}

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// Recomputes the checksum of every whole frame, as an honest sender would
// have written it: crc32c(head[0..12) ++ payload) at head[12..16).
void fix_checksums(std::vector<uint8_t>& bytes) {
  size_t at = 0;
  while (bytes.size() - at >= kKvFrameHeadBytes) {
    const size_t payload = read_u32(&bytes[at + 8]);
    if (bytes.size() - at - kKvFrameHeadBytes < payload) return;
    uint32_t crc = crc32c(std::span<const uint8_t>(&bytes[at], 12));
    crc = crc32c(std::span<const uint8_t>(&bytes[at + kKvFrameHeadBytes], payload), crc);
    for (int i = 0; i < 4; ++i) bytes[at + 12 + i] = static_cast<uint8_t>(crc >> (8 * i));
    at += kKvFrameHeadBytes + payload;
  }
}

// Small limits, so the fuzzer meets them instead of allocating gigabytes.
KvWireLimits fuzz_limits() {
  KvWireLimits l;
  l.max_block_bytes = 1 << 16;
  l.max_blocks = 64;
  l.max_total_bytes = 1 << 20;
  return l;
}

// The streaming decoder over the same bytes: done exactly when the whole
// decode succeeded (bytes after the end are the whole decode's refusal).
bool streams_to_the_end(std::span<const uint8_t> bytes) {
  KvTransferDecoder d(fuzz_limits());
  size_t at = 0;
  while (!d.done()) {
    if (bytes.size() - at < kKvFrameHeadBytes) return false;
    const auto head = bytes.subspan(at, kKvFrameHeadBytes);
    Result<KvFrameHead> h = parse_frame_head(head, d.max_payload());
    if (!h.is_ok()) return false;
    at += kKvFrameHeadBytes;
    if (bytes.size() - at < h->payload_bytes) return false;
    if (!d.on_frame(head, bytes.subspan(at, h->payload_bytes)).is_ok()) return false;
    at += h->payload_bytes;
  }
  return at == bytes.size();
}

void check_transfer(std::span<const uint8_t> bytes) {
  auto decoded = decode_kv_transfer(bytes, fuzz_limits());
  if (streams_to_the_end(bytes) != decoded.is_ok()) fail("the frame-by-frame decoder disagrees");
  if (!decoded.is_ok()) {
    const StatusCode c = decoded.status().code();
    if (c != StatusCode::kInvalidArgument && c != StatusCode::kOutOfRange && c != StatusCode::kUnimplemented) {
      fail("a refusal that is neither kInvalidArgument, kOutOfRange nor kUnimplemented");
    }
    return;
  }
  const auto& [id, set] = *decoded;
  if (set.data.size() != set.n_blocks() * set.block_bytes) fail("block data does not match the block count");
  const std::vector<uint8_t> again = encode_kv_transfer(id, set).flatten();
  if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) {
    fail("a decoded transfer does not encode back to the same bytes");
  }
}

// Seeds made by the encoder itself: transfers of 0, 1 and 3 blocks in the
// F32, F16 and Q8 formats (scripts/fuzz.sh asks for them by setting
// LADDER_FUZZ_SEED_DIR to the corpus folder).
void write_seeds(const std::string& dir) {
  const TensorType types[] = {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0};
  int n = 0;
  for (TensorType t : types) {
    for (size_t blocks : {size_t{0}, size_t{1}, size_t{3}}) {
      KvBlockSet set;
      set.shape.n_layers = 2;
      set.shape.n_kv_heads = 1;
      set.shape.head_dim = 32;
      set.shape.block_size = 2;
      set.shape.dtype = t;
      set.kv_format = kv_format_name(set.shape);
      set.block_bytes = *kv_block_bytes(set.shape);
      set.first_block = 3;
      set.model_digest = "model";
      set.tokenizer_digest = "tokenizer";
      for (size_t b = 0; b < blocks; ++b) {
        BlockKey key;
        for (size_t i = 0; i < key.bytes.size(); ++i) key.bytes[i] = static_cast<uint8_t>(b * 31 + i);
        set.keys.push_back(key);
        for (size_t i = 0; i < set.block_bytes; ++i) set.data.push_back(static_cast<uint8_t>((i * 7 + b) % 253));
      }
      const std::vector<uint8_t> bytes = encode_kv_transfer("seed", set).flatten();
      std::ofstream(dir + "/transfer-" + std::to_string(n++) + ".seed", std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
  }
  for (const Status& s : {Status::ok(), invalid_argument("refused")}) {
    const std::vector<uint8_t> ack = encode_kv_ack(s);
    std::ofstream(dir + "/ack-" + std::to_string(n++) + ".seed", std::ios::binary)
        .write(reinterpret_cast<const char*>(ack.data()), static_cast<std::streamsize>(ack.size()));
  }
}

}  // namespace
}  // namespace ladder::kv

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("LADDER_FUZZ_SEED_DIR")) ladder::kv::write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ladder::kv;
  const std::span<const uint8_t> raw(data, size);
  check_transfer(raw);
  std::vector<uint8_t> fixed(data, data + size);
  fix_checksums(fixed);
  check_transfer(fixed);
  // The acknowledgement a sender reads back: a whole frame, or its payload.
  if (size >= kKvFrameHeadBytes) {
    auto h = parse_frame_head(raw.first(kKvFrameHeadBytes), kKvMaxControlPayload);
    if (h.is_ok() && h->type == KvFrameType::kAck && size - kKvFrameHeadBytes >= h->payload_bytes) {
      (void)decode_kv_ack(raw.subspan(kKvFrameHeadBytes, h->payload_bytes)).message().size();
    }
  }
  (void)decode_kv_ack(raw).message().size();
  return 0;
}
