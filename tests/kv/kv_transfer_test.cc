// KV block export/import and the transfer wire format: round trips, every
// corrupted or truncated byte refused, keys decide which blocks a sequence
// takes (never another tenant's), and no block is left referenced.
#include "kv/kv_transfer.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_test_support.h"
#include "kv/kv_wire.h"

namespace ladder::kv::transfer_test {
namespace {

constexpr int kBlockSize = 4;

KvShape small_shape(int32_t n_blocks, TensorType dtype = TensorType::kF32) {
  return KvShape{.n_layers = 2,
                 .n_kv_heads = 1,
                 .head_dim = 2,
                 .block_size = kBlockSize,
                 .n_blocks = n_blocks,
                 .dtype = dtype};
}

std::unique_ptr<KvCacheManager> manager(int32_t n_blocks, bool prefix_caching = true,
                                        TensorType dtype = TensorType::kF32) {
  return testing::arena_manager(small_shape(n_blocks, dtype), prefix_caching);
}

std::vector<int32_t> tokens(int n, int32_t first = 10) { return testing::token_run(n, first); }

// Bytes of one block whose every byte says which block and where: a block
// written in the wrong place or order shows.
std::vector<uint8_t> pattern(const KvCacheManager& m, int tag) {
  std::vector<uint8_t> b(m.storage().block_bytes());
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(tag * 31 + static_cast<int>(i) * 7 + 1);
  return b;
}

std::vector<uint8_t> bytes_of(const KvCacheManager& m, BlockId id) {
  std::vector<uint8_t> b(m.storage().block_bytes());
  read_block(m.storage(), id, b);
  return b;
}

const BlockKey kNsA = namespace_digest({"alpha", "model", "tok", "f32-b4-kt"});
const BlockKey kNsB = namespace_digest({"beta", "model", "tok", "f32-b4-kt"});

// A sender: sequence 1 holds `n_tokens` of "computed" KV (pattern bytes) and
// exports its full blocks but the one holding the last token.
struct Sender {
  std::unique_ptr<KvCacheManager> m = manager(16);
  std::vector<int32_t> t;
  explicit Sender(int n_tokens) : t(tokens(n_tokens)) {
    m->add(1, kNsA);
    LADDER_CHECK(m->allocate(1, n_tokens), "sender pool too small");
    const auto table = m->block_table(1);
    for (size_t i = 0; i < table.size(); ++i)
      write_block(m->storage(), table[i], pattern(*m, static_cast<int>(i)));
    m->publish(1, t, n_tokens);
  }
  KvBlockSet exported(int64_t first = 0) const {
    const int64_t n = (static_cast<int64_t>(t.size()) - 1) / kBlockSize - first;
    KvBlockSet s = export_blocks(m->storage(), m->block_table(1), kNsA, t, first, n);
    s.model_digest = "model";
    s.tokenizer_digest = "tok";
    return s;
  }
};

TEST(Crc32c, KnownVectorsAndIncremental) {
  // RFC 3720 appendix B.4 and the common check value.
  const std::string check = "123456789";
  EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(check.data()), check.size()}), 0xE3069283u);
  const std::vector<uint8_t> zeros(32, 0x00);
  const std::vector<uint8_t> ones(32, 0xFF);
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  std::vector<uint8_t> inc(32);
  std::iota(inc.begin(), inc.end(), 0);
  EXPECT_EQ(crc32c(inc), 0x46DD794Eu);
  const std::span<const uint8_t> all(inc);
  for (size_t cut = 0; cut <= inc.size(); ++cut) {
    EXPECT_EQ(crc32c(all.subspan(cut), crc32c(all.first(cut))), crc32c(all)) << cut;
  }
}

TEST(KvTransfer, ExportCopiesTheBlocksWithTheirChainKeys) {
  Sender s(14);  // blocks 0..2 full, block 3 holds the last two tokens
  const KvBlockSet set = s.exported();
  ASSERT_EQ(set.n_blocks(), 3u);  // (14 - 1) / 4
  EXPECT_EQ(set.kv_format, "f32-b4-kt");
  EXPECT_EQ(set.block_bytes, size_t{2 * 2 * kBlockSize * 2 * 4});  // layers x K,V x [4][1][2] f32
  BlockKey parent;
  for (size_t i = 0; i < 3; ++i) {
    const BlockKey k =
        chain_key(i == 0 ? nullptr : &parent, kNsA, std::span(s.t).subspan(i * kBlockSize, kBlockSize));
    EXPECT_EQ(set.keys[i], k) << i;
    parent = k;
    const auto expect = pattern(*s.m, static_cast<int>(i));
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), set.block(i).begin())) << i;
  }
  const KvBlockSet tail = s.exported(1);
  EXPECT_EQ(tail.first_block, 1);
  ASSERT_EQ(tail.n_blocks(), 2u);
  EXPECT_EQ(tail.keys[0], set.keys[1]);
}

TEST(KvWire, RoundTripKeepsEveryField) {
  Sender s(14);
  const KvBlockSet set = s.exported();
  const std::vector<uint8_t> wire = encode_kv_transfer("xfer-1", set).flatten();
  auto got = decode_kv_transfer(wire);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->first, "xfer-1");
  const KvBlockSet& g = got->second;
  EXPECT_EQ(g.ns_digest, set.ns_digest);
  EXPECT_EQ(g.kv_format, set.kv_format);
  EXPECT_EQ(g.shape.n_layers, 2);
  EXPECT_EQ(g.shape.head_dim, 2);
  EXPECT_EQ(g.shape.block_size, kBlockSize);
  EXPECT_EQ(g.shape.dtype, TensorType::kF32);
  EXPECT_EQ(g.first_block, 0);
  EXPECT_EQ(g.keys, set.keys);
  EXPECT_EQ(g.data, set.data);
  EXPECT_EQ(g.model_digest, "model");
  EXPECT_EQ(g.tokenizer_digest, "tok");
  // Frame count and size: head + (3 blocks) + end, each with a 16-byte head.
  const size_t block_frames = 3 * (16 + 4 + 32 + set.block_bytes);
  EXPECT_GT(wire.size(), block_frames + 2 * 16);
}

TEST(KvWire, EveryFlippedBitIsRefused) {
  Sender s(9);  // two blocks
  const std::vector<uint8_t> wire = encode_kv_transfer("x", s.exported()).flatten();
  ASSERT_TRUE(decode_kv_transfer(wire).is_ok());
  for (size_t i = 0; i < wire.size(); ++i) {
    for (int bit : {0, 5}) {
      std::vector<uint8_t> bad = wire;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_FALSE(decode_kv_transfer(bad).is_ok()) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(KvWire, EveryTruncationIsRefusedAndSaysSo) {
  Sender s(9);
  const std::vector<uint8_t> wire = encode_kv_transfer("x", s.exported()).flatten();
  for (size_t n = 0; n < wire.size(); ++n) {
    auto r = decode_kv_transfer(std::span(wire).first(n));
    ASSERT_FALSE(r.is_ok()) << n;
    EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << n << ": " << r.status().message();
  }
  std::vector<uint8_t> longer = wire;
  longer.push_back(0);
  EXPECT_FALSE(decode_kv_transfer(longer).is_ok());
}

TEST(KvWire, RefusesFramesOutOfOrderAndInconsistentHeaders) {
  Sender s(13);  // three blocks
  const KvBlockSet set = s.exported();
  const KvWireMessage m = encode_kv_transfer("x", set);
  ASSERT_EQ(m.pieces.size(), 1 + 2 * 3 + 1u);
  auto join = [&](std::vector<size_t> order) {
    std::vector<uint8_t> out;
    for (size_t i : order) out.insert(out.end(), m.pieces[i].begin(), m.pieces[i].end());
    return out;
  };
  auto swapped = decode_kv_transfer(join({0, 3, 4, 1, 2, 5, 6, 7}));
  ASSERT_FALSE(swapped.is_ok());
  EXPECT_NE(swapped.status().message().find("arrived where block 0 was due"), std::string::npos);
  auto missing = decode_kv_transfer(join({0, 1, 2, 3, 4, 7}));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("ended after 2 blocks"), std::string::npos);
  EXPECT_FALSE(decode_kv_transfer(join({1, 2, 0, 3, 4, 5, 6, 7})).is_ok());  // block before header

  KvBlockSet lying = set;
  lying.kv_format = "f16-b4-kt";
  auto fmt = decode_kv_transfer(encode_kv_transfer("x", lying).flatten());
  ASSERT_FALSE(fmt.is_ok());
  EXPECT_NE(fmt.status().message().find("format"), std::string::npos);

  // A type id no GGUF type has (found by fuzz_kv_wire: naming it aborted
  // the receiving worker) is refused like any unsupported KV type.
  KvBlockSet unknown = set;
  unknown.shape.dtype = static_cast<TensorType>(0x603040);
  auto type = decode_kv_transfer(encode_kv_transfer("x", unknown).flatten());
  ASSERT_FALSE(type.is_ok());
  EXPECT_EQ(type.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(type.status().message().find("type id 6303808"), std::string::npos) << type.status().message();

  KvWireLimits tight;
  tight.max_blocks = 2;
  auto big = decode_kv_transfer(encode_kv_transfer("x", set).flatten(), tight);
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.status().code(), StatusCode::kOutOfRange);
}

TEST(KvWire, AckCarriesTheReceiversVerdict) {
  for (const Status& st : {Status::ok(), invalid_argument("model differs")}) {
    const std::vector<uint8_t> f = encode_kv_ack(st);
    auto h = parse_frame_head(std::span(f).first(kKvFrameHeadBytes), 0);
    ASSERT_TRUE(h.is_ok());
    EXPECT_EQ(h->type, KvFrameType::kAck);
    const auto payload = std::span(f).subspan(kKvFrameHeadBytes);
    ASSERT_TRUE(check_frame(std::span(f).first(kKvFrameHeadBytes), payload).is_ok());
    const Status back = decode_kv_ack(payload);
    EXPECT_EQ(back.code(), st.code());
    if (!st.is_ok()) {
      EXPECT_NE(back.message().find("model differs"), std::string::npos);
    }
  }
}

TEST(KvImport, StagedBlocksAreTakenPublishedAndFreed) {
  Sender s(14);
  auto wire = encode_kv_transfer("x", s.exported()).flatten();
  auto got = decode_kv_transfer(wire);
  ASSERT_TRUE(got.is_ok());
  auto staged = std::make_shared<const KvBlockSet>(std::move(got->second));

  auto m = manager(8);
  m->add(7, kNsA);
  m->stage_import(7, staged);
  EXPECT_EQ(m->acquire_prefix(7, s.t), 12);  // 3 blocks; the last token is computed here
  const auto table = m->block_table(7);
  ASSERT_EQ(table.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(bytes_of(*m, table[i]), pattern(*m, static_cast<int>(i))) << i;
  EXPECT_EQ(m->stats().imported_blocks, 3);
  EXPECT_EQ(m->stats().refused_blocks, 0);
  m->remove(7);
  EXPECT_EQ(m->n_free_blocks(), 8);
  EXPECT_EQ(m->stats().blocks_cached, 3);  // published: the next request of the tenant hits them
  m->add(8, kNsA);
  EXPECT_EQ(m->acquire_prefix(8, s.t), 12);
  EXPECT_EQ(m->stats().prefix_hit_blocks, 3);
  m->remove(8);
  EXPECT_EQ(m->n_free_blocks(), 8);
}

TEST(KvImport, ATailIsTakenAfterTheBlocksAlreadyHeld) {
  Sender s(14);
  const KvBlockSet all = s.exported();
  const KvBlockSet tail = drop_leading_blocks(all, 2);
  EXPECT_EQ(tail.first_block, 2);
  ASSERT_EQ(tail.n_blocks(), 1u);
  EXPECT_EQ(tail.keys[0], all.keys[2]);
  EXPECT_TRUE(std::equal(tail.data.begin(), tail.data.end(), all.block(2).begin()));
  EXPECT_EQ(drop_leading_blocks(all, 3).n_blocks(), 0u);

  auto m = manager(8);
  // A receiver without the head cannot use the tail: it computes everything.
  m->add(1, kNsA);
  m->stage_import(1, std::make_shared<const KvBlockSet>(tail));
  EXPECT_EQ(m->acquire_prefix(1, s.t), 0);
  m->remove(1);
  // With the head imported earlier (now in its prefix cache), the tail completes it.
  m->add(2, kNsA);
  m->stage_import(2, std::make_shared<const KvBlockSet>(drop_leading_blocks(all, 0)));
  std::vector<int32_t> head(s.t.begin(), s.t.begin() + 9);  // two blocks before its last token
  EXPECT_EQ(m->acquire_prefix(2, head), 8);
  m->remove(2);
  m->add(3, kNsA);
  m->stage_import(3, std::make_shared<const KvBlockSet>(tail));
  EXPECT_EQ(m->acquire_prefix(3, s.t), 12);
  EXPECT_EQ(bytes_of(*m, m->block_table(3)[2]), pattern(*m, 2));
  EXPECT_EQ(m->stats().imported_blocks, 3);
  m->remove(3);
  EXPECT_EQ(m->n_free_blocks(), 8);
}

TEST(KvImport, AnotherTenantsOrPromptsBlocksAreRefused) {
  Sender s(14);
  auto staged = std::make_shared<const KvBlockSet>(s.exported());
  auto m = manager(8);
  m->add(1, kNsB);  // same tokens, other tenant
  m->stage_import(1, staged);
  EXPECT_EQ(m->acquire_prefix(1, s.t), 0);
  EXPECT_EQ(m->stats().imported_blocks, 0);
  EXPECT_EQ(m->stats().refused_blocks, 3);
  m->remove(1);

  std::vector<int32_t> other = s.t;
  other[5] = 999;  // block 1 differs: block 0 is taken, the rest refused
  m->add(2, kNsA);
  m->stage_import(2, staged);
  EXPECT_EQ(m->acquire_prefix(2, other), 4);
  EXPECT_EQ(m->stats().imported_blocks, 1);
  EXPECT_EQ(m->stats().refused_blocks, 3 + 2);
  m->remove(2);
  EXPECT_EQ(m->n_free_blocks(), 8);
  EXPECT_EQ(m->stats().prefix_hit_blocks, 0);  // nothing crossed tenants
}

TEST(KvImport, ShortPoolsTakeWhatFitsAndFormatsMustMatch) {
  Sender s(14);
  auto staged = std::make_shared<const KvBlockSet>(s.exported());
  auto m = manager(4, /*prefix_caching=*/false);
  m->add(1, kNsA);
  ASSERT_TRUE(m->allocate(1, 8));  // 2 of 4 blocks taken
  m->add(2, kNsA);
  m->stage_import(2, staged);
  EXPECT_EQ(m->acquire_prefix(2, s.t), 8);  // two free blocks
  EXPECT_EQ(bytes_of(*m, m->block_table(2)[1]), pattern(*m, 1));
  m->remove(1);
  m->remove(2);
  EXPECT_EQ(m->n_free_blocks(), 4);

  auto f16 = manager(8, true, TensorType::kF16);
  f16->add(1, kNsA);
  f16->stage_import(1, staged);
  EXPECT_EQ(f16->acquire_prefix(1, s.t), 0);
  EXPECT_EQ(f16->stats().refused_blocks, 3);
  f16->remove(1);

  // A staged set is used once: release drops it.
  auto m2 = manager(8);
  m2->add(1, kNsA);
  m2->stage_import(1, staged);
  m2->release(1);
  EXPECT_EQ(m2->acquire_prefix(1, s.t), 0);
  m2->remove(1);
  EXPECT_EQ(m2->n_free_blocks(), 8);
}

}  // namespace
}  // namespace ladder::kv::transfer_test
