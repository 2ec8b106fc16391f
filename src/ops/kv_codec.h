// The byte layout of one paged KV block in each KV format, and the scalar
// code that writes (encodes) and reads back (decodes) it. The attention
// kernels read these layouts in place; kv/ sizes its storage from them and a
// block transfer copies them byte for byte.
//
// Formats (per layer, K or V, one block of bs tokens, kvh KV heads of hd
// dims; f16 = IEEE half):
//   F32 / F16   K [kvh][hd][bs], V [bs][kvh][hd] elements.
//   Q8 (TensorType::kQ8_0 as a KV tag; not ggml's q8_0 block): symmetric
//       int8 with one f16 scale per token, KV head and group of g =
//       kv_channel_group(hd) channels (32, or hd when hd is not a multiple
//       of 32), written token by token:
//       K int8 [kvh][hd][bs] then scales f16 [kvh][hd/g][bs];
//       V int8 [bs][kvh][hd] then scales f16 [bs][kvh][hd/g].
//       The vectors stored are the heads rotated (kv_dtype_rotated).
//       x = q * scale, |x - x'| <= scale / 2, scale >= max|x| / 127 over
//       the group. Groups of 32 rather than the whole head: a head's
//       channels differ in size (keys most: a few large channels), and one
//       scale per head gave the small ones a coarse grid.
//   Q4 (TensorType::kQ4_0 as a KV tag), KIVI-style asymmetric 4-bit: keys per
//       channel over the block's tokens, values per token in groups of
//       kv_channel_group(hd) channels; x = q * scale + min, |x - x'| <=
//       scale / 2, scale >= (max - min) / 15. A block is quantized only once
//       it is full ("sealed"); until then its tokens live in F16 in a staging
//       slot ([bs][kvh][hd] f16, the same for K and V), and a query reads a
//       block from staging exactly when the block holds positions past it
//       (so a query's result does not depend on how prefill was chunked).
//       K params f16 [kvh][hd][scale, min] then nibbles [kvh][hd][bs/2]
//         (byte t holds token t low, token t + bs/2 high);
//       V params f16 [bs][kvh][hd/g][scale, min] then nibbles [bs][kvh][hd/2]
//         (byte c holds channel c low, channel c + hd/2 high).
// Scales and mins are rounded outward to f16 (scale up, min down), so no
// value ever clamps and the error bounds above hold exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ops/attention.h"

namespace ladder::ops {

// F32, F16, Q8 (kQ8_0) and Q4 (kQ4_0).
bool kv_dtype_supported(TensorType dtype);
// Formats whose partly filled blocks live in a staging slot (Q4).
bool kv_dtype_staged(TensorType dtype);
// Formats that store KV with per-group scales (Q8, Q4): approximate, the
// third rung's; F32 and F16 are exact enough for rung 1.
bool kv_dtype_quantized(TensorType dtype);
// Formats whose heads are stored rotated (ops/hadamard.h): the model
// rotates each head's query, key and value before the cache and the
// attention output back after it, so the cache holds H k and H v. Q8: a
// head's few large channels would otherwise set their group's int8 grid
// (llama.cpp rotates its quantized caches the same way; docs/BENCHMARKS.md).
// Q4 is not rotated: its keys are scaled per channel (KIVI), which keeps
// large channels apart already and which a rotation would undo.
bool kv_dtype_rotated(TensorType dtype);
// Short name: "f32", "f16", "q8", "q4"; and back (case-insensitive).
const char* kv_dtype_short_name(TensorType dtype);
std::optional<TensorType> kv_dtype_from_short_name(std::string_view name);
// Channels per scale group of Q8 keys and values and Q4 values: 32 when hd
// is a multiple of 32, else hd.
int kv_channel_group(int head_dim);
// Why a shape cannot hold this format (Q8 and Q4 need an even block size,
// Q4 an even head dim), or nullptr when it can.
const char* kv_shape_problem(TensorType dtype, int block_size, int head_dim);

// Bytes of one block of one layer's K or V in `dtype` (sizes must be valid).
size_t kv_layer_block_bytes(TensorType dtype, KvLayout layout, int block_size, int n_kv_heads, int head_dim);
// Bytes of one staging slot of one layer's K or V (0 for unstaged formats).
size_t kv_layer_staging_bytes(TensorType dtype, int block_size, int n_kv_heads, int head_dim);

// Scalar reference reader: element i of KV head kvh at position pos, as a
// query that attends to n_keys positions sees it (a Q4 block still holding
// positions >= n_keys is read from its staging slot).
float kv_decode_elem(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos, int kvh, int i,
                     int64_t n_keys);

// Scalar writers, called by kv_store(): one token's [kvh][hd] floats.
void kv_encode_token_q8(const PagedKvLayer& layer, uint8_t* block, int64_t slot, const float* vec);
// Q4: into the block's staging slot (F16).
void kv_encode_token_staged(const PagedKvLayer& layer, int32_t block_id, int64_t slot, const float* vec);
// Q4: quantizes a full block from its staging slot into its own bytes.
void kv_seal_block_q4(const PagedKvLayer& layer, int32_t block_id);
// Q4: fills a block's staging slot back from its quantized bytes (a sealed
// block that becomes partly filled again after truncation; lossy).
void kv_unseal_block_q4(const PagedKvLayer& layer, int32_t block_id);

// Helpers of the layouts, shared with the kernels.
uint16_t f16_round_up(float x);    // smallest f16 >= x (x finite, saturating at 65504)
uint16_t f16_round_down(float x);  // largest f16 <= x (saturating at -65504)

}  // namespace ladder::ops
