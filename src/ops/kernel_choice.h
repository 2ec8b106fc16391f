// The kernel strategy this machine runs, chosen once per process: how decode
// streams weights (plain loads or a software prefetch of some kind and
// distance), apart for Q8_0/Q4_0, K-quant, F32 and 16-bit float weights, and whether
// Q8_0/Q4_0 weights are repacked at load or read as stored. Both are
// measured here, not assumed from the vendor: a short calibration (a few
// seconds) times the real decode kernels under each candidate in paired
// rounds, a screen of every candidate then a confirmation of each leader
// against the fallback (ops/paired_choice.h), so the fallback is left only
// for a strategy that beats it by 5% in most rounds. Its result is cached
// per CPU model in
// $XDG_CACHE_HOME/ladder/ (~/.cache/ladder/), so later processes on the same
// CPU model read it back. LADDER_KERNEL_CALIBRATION=0 skips the measurement
// and takes the fallback (plain loads, repacked), which needs no timing and
// is what every CPU family runs well.
//
// None of these choices changes a result: prefetching never does, and packed
// Q8_0/Q4_0 are bit-identical to the stored layout. What does change results
// across machines (the SIMD target, the K-quant layout that comes with it) is
// named by kernel_fingerprint(), for configuration fingerprints.
#pragma once

#include <optional>
#include <string>

#include "common/tensor_type.h"
#include "ops/stream_strategy.h"

namespace ladder::ops {

struct KernelChoice {
  // Weights streamed by one-row (decode) matmuls: quantized ones (the
  // integer kernels, several operations per byte), F32 ones (one FMA per 64
  // bytes) and F16/BF16 ones (one conversion and FMA per 32 bytes). They
  // need not agree: on a Zen 5 at one thread F16 decode ran 30-50% faster on
  // plain loads than under the quantized streams' NTA+16K, which those gained
  // from, and F32 decode ran 15% faster on plain loads than under the NTA+4K
  // that F16 measured best (docs/BENCHMARKS.md).
  // The K-quants (Q4_K, Q5_K, Q6_K: super-blocks of scales and quants) are
  // timed apart from Q8_0/Q4_0: on that Zen 5 at 1B scale, plain loads
  // (Q8_0/Q4_0's choice) ran Q6_K decode at 0.42x and Q4_K at 0.55x of
  // T2+4K, which Q8_0/Q4_0 did not gain from (0.98x-1.04x).
  StreamStrategy decode_stream;  // Q8_0 and Q4_0
  StreamStrategy kquant_stream;  // Q4_K, Q5_K and Q6_K
  StreamStrategy f32_stream;
  StreamStrategy f16_stream;  // F16 and BF16
  bool repack_q32 = true;     // repack Q8_0/Q4_0 at load (when the target can)
  // Where the choice came from: "measured" (and "measured, cached in FILE"),
  // "cache FILE", "fallback (...)" or "set".
  std::string source;
  // The calibration's timings, for `ladder info` and the roofline report.
  std::string detail;
};

// The strategy `c` gives one-row matmuls over weights of `type`.
const StreamStrategy& stream_for(const KernelChoice& c, TensorType type);

// The choice of this process (calibrated or read from the cache on the first
// call; thread-safe).
const KernelChoice& kernel_choice();

// Replaces the choice (tests and benchmarks compare strategies). Must not
// race with running kernels.
void set_kernel_choice(const KernelChoice& choice);

// Times the decode kernels on this machine and returns the best choice,
// without caching it (ladder bench roofline shows it next to the probes).
KernelChoice calibrate_kernel_choice();

// The cache file of this CPU model and SIMD target:
// $XDG_CACHE_HOME/ladder/kernels-v<version>-<cpu>.txt (else ~/.cache/ladder/...);
// empty when neither variable is set.
std::string kernel_choice_cache_path();

// Reads a cache file: nullopt when it is missing or malformed (then the
// choice is measured again). Writes one atomically (rename), creating its
// directory; false when it cannot.
std::optional<KernelChoice> read_kernel_choice(const std::string& path);
bool write_kernel_choice(const std::string& path, const KernelChoice& choice);

// What fixes the kernels' reduction order on this machine, as a short
// string: the SIMD target (e.g. "AVX3_DL"), for targets with packed weights
// the K-quant layout (";kq=packed16"), and where F16/BF16 weights run on
// AMX-BF16 tiles, that arithmetic (";f16=amx-bf16x3"), and where BF16
// weights run on AVX512-BF16 dot products, that (";bf16=dpbf16x2"). Two processes with
// equal fingerprints produce bit-identical logits for the same model and
// inputs; AMX-INT8, prefetching and the Q8_0/Q4_0 layout never change
// results, so they are not part of it. Replicas of one deployment should
// match on it (a configuration fingerprint should include it).
std::string kernel_fingerprint();

// `ladder info`: the active paths, one per line (target, AMX, decode
// streaming, layouts, and where the choice came from).
std::string describe_kernel_paths();

}  // namespace ladder::ops
