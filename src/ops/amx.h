// Intel AMX (Advanced Matrix Extensions): eight tile registers of up to 16
// rows x 64 bytes and instructions that multiply whole tiles (int8 with
// int32 accumulation, bf16 with F32 accumulation). Usable only when the CPU
// has them (CPUID), the OS saves tile state (XCR0), and, on Linux, the
// process has asked for the right to use the 8 KiB tile data state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)). amx_support() checks
// all three once per process and asks for the permission.
//
// The kernels use AMX-INT8 for weights packed at load (ops/packed_weights.h)
// at batches of several rows: the tiles give each output's exact integer
// block sums, and the float epilogue is the vector kernels' own, so results
// are bit-identical with or without AMX (batch invariance holds across the
// switch). See matmul_amx-inl.h. F16/BF16 weights can run on AMX-BF16 tiles
// at every batch size (matmul_amx_bf16-inl.h; opt-in, see amx_bf16_active).
#pragma once

#include <cstdint>
#include <string>

namespace ladder::ops {

struct AmxSupport {
  bool cpu_tile = false;        // CPUID.(7,0):EDX[24]
  bool cpu_int8 = false;        // EDX[25]
  bool cpu_bf16 = false;        // EDX[22]
  bool os_saves_tiles = false;  // XCR0 bits 17 and 18
  bool permitted = false;       // arch_prctl granted XTILEDATA (or not needed)
  std::string why_not;          // empty when usable

  bool usable() const { return cpu_tile && os_saves_tiles && permitted; }
  bool int8() const { return usable() && cpu_int8; }
  bool bf16() const { return usable() && cpu_bf16; }
};

// Detected once per process (the first call requests the permission).
const AmxSupport& amx_support();

// Whether the int8 kernels use AMX now: amx_support().int8(), the AVX3_DL
// kernels dispatched, and AMX not switched off by set_amx_enabled(false) or
// the environment (LADDER_AMX=0).
bool amx_int8_active();

// Whether F16/BF16 weights are packed for AMX-BF16 tiles at load: asked for
// with LADDER_AMX_BF16=1, amx_support().bf16(), the AVX3_DL kernels
// dispatched, and not switched off by LADDER_AMX=0. Off by default: on the
// Xeon measured (docs/BENCHMARKS.md) it doubles prefill but costs decode at
// batch 1 about 45%, and a row must take the same path at every batch size.
// Unlike int8, this path changes results (bf16x3 arithmetic,
// matmul_amx_bf16-inl.h), so it is decided once, at packing, and a packed
// matrix then runs on tiles at every batch size; it is part of
// kernel_fingerprint().
bool amx_bf16_active();

// Asks for (or declines) the AMX-BF16 path whatever LADDER_AMX_BF16 says,
// for matrices packed from now on (tests, benchmarks). Must not race with
// packing.
void set_amx_bf16_wanted(bool wanted);

// Benchmarks and tests: compare the same int8 kernels with and without
// tiles (set_amx_enabled does not touch matrices already packed for bf16).
// Results do not change (see above), only speed. Must not race with running
// kernels.
void set_amx_enabled(bool enabled);

// Peak-rate probes for ops/roofline (amx_support() must allow them): chains
// of independent tile products on the calling thread; *ops gets
// multiply-adds (int8) or FLOPs (bf16, 2 per multiply-add).
void amx_int8_peak_chains(int64_t seed, double* ops);
void amx_bf16_peak_chains(int64_t seed, double* ops);

}  // namespace ladder::ops
