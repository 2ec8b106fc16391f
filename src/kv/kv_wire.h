// The wire format of a KV transfer between workers: a stream of framed,
// checksummed messages, the same over TCP or any other byte stream.
//
// Every frame: a 16-byte head, then payload_bytes of payload.
//   u32 magic "LKVF" | u8 version (1) | u8 type | u16 zero |
//   u32 payload_bytes | u32 crc32c(head[0..12) ++ payload)
// All integers little-endian; str = u32 length + bytes; key = 32 bytes.
//
// One transfer, sender to receiver:
//   kHeader  str transfer_id | str model_digest | str tokenizer_digest |
//            str kv_format | u32 n_layers | u32 n_kv_heads | u32 head_dim |
//            u32 block_size | u32 dtype (ggml type id) | key ns_digest |
//            u64 first_block | u32 n_blocks | u64 block_bytes
//   kBlock   u32 index (0, 1, ... in order) | key | block_bytes of data
//            (n_blocks of them)
//   kEnd     u32 n_blocks
// then one frame back, receiver to sender:
//   kAck     u32 status code (0 = stored) | str message
//
// The checksum catches corruption in flight; the keys (checked again by the
// receiving KV cache manager against its own request) decide what a block is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kv/kv_transfer.h"

namespace ladder::kv {

inline constexpr uint32_t kKvWireMagic = 0x46564B4C;  // "LKVF" read as u32le
inline constexpr uint8_t kKvWireVersion = 1;
inline constexpr size_t kKvFrameHeadBytes = 16;
// The payload of a frame other than a block's (header, end, ack) is small.
inline constexpr size_t kKvMaxControlPayload = 64 * 1024;

enum class KvFrameType : uint8_t { kHeader = 1, kBlock = 2, kEnd = 3, kAck = 4 };

struct KvFrameHead {
  KvFrameType type = KvFrameType::kHeader;
  uint32_t payload_bytes = 0;
  uint32_t crc = 0;
};

// CRC-32C (Castagnoli), incremental: crc32c(b, crc32c(a)) == crc32c(a ++ b).
uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

// What a receiver accepts; a header declaring more is refused before any
// block is read.
struct KvWireLimits {
  size_t max_block_bytes = size_t{64} << 20;
  size_t max_blocks = 1 << 20;
  size_t max_total_bytes = size_t{4} << 30;
};

// Parses a frame head: magic, version, a known type, a zero pad and a
// payload no larger than what that type may carry (`max_payload` bounds
// block frames). kInvalidArgument naming what is wrong.
Result<KvFrameHead> parse_frame_head(std::span<const uint8_t> head, size_t max_payload);
// Checks the frame's checksum over its head and payload.
Status check_frame(std::span<const uint8_t> head, std::span<const uint8_t> payload);

// A transfer as the pieces to write, in order: frame heads and small
// payloads are owned here, block data is referenced in the set (which must
// outlive this). flatten() joins them (tests, small transfers).
struct KvWireMessage {
  std::vector<std::vector<uint8_t>> owned;
  std::vector<std::span<const uint8_t>> pieces;
  size_t size() const;
  std::vector<uint8_t> flatten() const;
};
KvWireMessage encode_kv_transfer(const std::string& transfer_id, const KvBlockSet& set);
std::vector<uint8_t> encode_kv_ack(const Status& status);

// The receiving side of one transfer, one frame at a time (as a reader gets
// them: head, then payload). Refuses frames out of order, blocks out of
// sequence, sizes that disagree with the header or the limits, and frames
// after the end.
class KvTransferDecoder {
 public:
  explicit KvTransferDecoder(KvWireLimits limits = {});

  // The payload size the next frame may have at most (for the reader's bound).
  size_t max_payload() const;
  // A whole frame (head already parsed and its checksum checked by the caller
  // or not: this checks it again).
  Status on_frame(std::span<const uint8_t> head, std::span<const uint8_t> payload);
  bool done() const { return done_; }
  // After done(): the transfer id and its blocks.
  const std::string& transfer_id() const { return transfer_id_; }
  KvBlockSet take() { return std::move(set_); }

 private:
  Status on_header(std::span<const uint8_t> payload);
  Status on_block(std::span<const uint8_t> payload);
  Status on_end(std::span<const uint8_t> payload);

  KvWireLimits limits_;
  bool have_header_ = false;
  bool done_ = false;
  size_t n_expected_ = 0;
  std::string transfer_id_;
  KvBlockSet set_;
};

// Decodes a whole transfer held in memory (the bytes must end exactly after
// its kEnd frame): its id and blocks, or why not (a truncated stream says so).
Result<std::pair<std::string, KvBlockSet>> decode_kv_transfer(std::span<const uint8_t> bytes,
                                                              const KvWireLimits& limits = {});
// Decodes an ack frame's payload into the status it reports.
Status decode_kv_ack(std::span<const uint8_t> payload);

}  // namespace ladder::kv
