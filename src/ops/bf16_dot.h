// AVX512-BF16's dot product (vdpbf16ps) for BF16 weights: on CPUs that have
// it (AMD Zen 4 and later, Intel Cooper Lake and Sapphire Rapids and later),
// BF16 weights are packed at load in the pair layout and every matmul on
// them, at every batch size, runs matmul_bf16_dot-inl.h: 32 multiply-adds
// per instruction against the FMA kernel's 16 on widened weights. It changes
// results (bf16x2 arithmetic: activations carried as two bf16 halves, 16
// significant bits), so like the AMX-BF16 tiles it is decided once, at
// packing, and is part of kernel_fingerprint(). F16 weights keep the FMA
// kernel with the F16C conversion: splitting each F16 weight in two bf16
// would take three dot products per pair, slower than two FMAs.
#pragma once

#include <optional>

namespace ladder::ops {

// Whether the CPU reports AVX512-BF16 (CPUID.(7,1):EAX[5]); detected once.
bool cpu_has_avx512_bf16();

// Whether BF16 weights are packed for the dot kernel from now on: the CPU
// has AVX512-BF16, the AVX3_DL kernels are dispatched, AMX-BF16 tiles are not
// taking BF16 weights (amx_bf16_active(), ops/amx.h, wins when asked for),
// and it is not switched off by the environment (LADDER_BF16_DOT=0) or
// set_bf16_dot_wanted(false). On by default where the CPU has it.
bool bf16_dot_active();

// Asks for (or declines) the dot kernel whatever LADDER_BF16_DOT says, or
// (nullopt) goes back to what it says, for matrices packed from now on
// (tests, benchmarks comparing it with the FMA kernel). Must not race with
// packing.
void set_bf16_dot_wanted(std::optional<bool> wanted);

}  // namespace ladder::ops
