// An orthonormal Walsh-Hadamard rotation of attention heads, for the
// quantized KV formats. Rotating a head's query and key by the same
// orthonormal H leaves every score unchanged ((Hq).(Hk) = q.k), and
// rotating its values by H leaves the attention output rotated by H, so H
// applied once more (H is symmetric and its own inverse) gives it back. What
// changes is what the cache stores: a key or value whose few large
// channels would set a group's int8 or 4-bit grid is spread evenly over
// all channels of the block, so the small channels keep their precision
// (QuaRot-style; llama.cpp rotates its quantized KV cache the same way).
//
// The rotation acts on each head's vector in blocks of
// hadamard_block(head_dim) channels: the largest power of two dividing
// head_dim (128 for 128-dim heads, 32 for 96, 1 -- no rotation -- for an
// odd head_dim). It is deterministic per vector, so results stay
// bit-identical across batch sizes.
#pragma once

#include <cstdint>

namespace ladder::ops {

// The largest power of two that divides head_dim (head_dim > 0).
int64_t hadamard_block(int64_t head_dim);

// Rotates n_vectors contiguous vectors of head_dim floats in place: each
// block of hadamard_block(head_dim) channels becomes H x with
// H[i][j] = (-1)^popcount(i & j) / sqrt(block). Applying it twice gives x
// back (to rounding).
void hadamard_rotate(float* x, int64_t n_vectors, int64_t head_dim);

}  // namespace ladder::ops
