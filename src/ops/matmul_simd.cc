// Compiles matmul-inl.h, matmul_float-inl.h, matmul_packed-inl.h, the AMX kernels
// (matmul_amx-inl.h, matmul_amx_bf16-inl.h) and the AVX512-BF16 dot kernel
// (matmul_bf16_dot-inl.h) once per Highway target and
// exports the kernels for dynamic dispatch (called from
// matmul.cc).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/matmul-inl.h"
#include "ops/matmul_float-inl.h"
#include "ops/matmul_amx-inl.h"
#include "ops/matmul_amx_bf16-inl.h"
#include "ops/matmul_bf16_dot-inl.h"
#include "ops/matmul_packed-inl.h"

#if HWY_ONCE
#include "ops/matmul_simd.h"

namespace ladder::ops::detail {

HWY_EXPORT(MatmulFloatCols);
HWY_EXPORT(MatmulIntCols);
HWY_EXPORT(HasFloatPacked);
HWY_EXPORT(FloatPackedBytes);
HWY_EXPORT(PackFloatGroups);
HWY_EXPORT(FloatPackGroupCols);
HWY_EXPORT(MatmulFloatPackedCols);
HWY_EXPORT(HasIntKernels);
HWY_EXPORT(QuantizeActivations);
HWY_EXPORT(DispatchedTarget);
HWY_EXPORT(PackGroups);
HWY_EXPORT(MatmulPackedCols);
HWY_EXPORT(HasPacked);
HWY_EXPORT(HasAmxKernels);
HWY_EXPORT(MatmulAmxCols);
HWY_EXPORT(TileActivations);
HWY_EXPORT(HasAmxBf16Kernels);
HWY_EXPORT(PackBf16Groups);
HWY_EXPORT(SplitActivationsBf16);
HWY_EXPORT(MatmulAmxBf16Cols);
HWY_EXPORT(HasBf16DotKernels);
HWY_EXPORT(MatmulBf16DotCols);

void matmul_float_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulFloatCols)(t, o_begin, o_end);
}
bool has_float_packed() {
  return HWY_DYNAMIC_DISPATCH(HasFloatPacked)();
}
size_t float_packed_bytes(TensorType type, int64_t n_in, int64_t n_out) {
  return HWY_DYNAMIC_DISPATCH(FloatPackedBytes)(type, n_in, n_out);
}
void pack_float_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(PackFloatGroups)(t, g_begin, g_end, out);
}
int64_t float_pack_group_cols() {
  return HWY_DYNAMIC_DISPATCH(FloatPackGroupCols)();
}
void matmul_float_packed_cols(const MatmulTask& t, const uint8_t* packed, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulFloatPackedCols)(t, packed, o_begin, o_end);
}
void matmul_int_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulIntCols)(t, o_begin, o_end);
}
bool has_int_kernels() {
  return HWY_DYNAMIC_DISPATCH(HasIntKernels)();
}
void quantize_activations_simd(const float* x, int64_t rows, int64_t n_in, int8_t* xq, uint8_t* xu, float* xd,
                               float* xsum) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)(x, rows, n_in, xq, xu, xd, xsum);
}
int64_t dispatched_target() {
  return HWY_DYNAMIC_DISPATCH(DispatchedTarget)();
}
bool has_packed(TensorType type) {
  return HWY_DYNAMIC_DISPATCH(HasPacked)(type);
}
void pack_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(PackGroups)(t, g_begin, g_end, out);
}
void matmul_packed_cols(const MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                        int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulPackedCols)(t, packed, xq_sums, o_begin, o_end);
}

bool has_amx_kernels() {
  return HWY_DYNAMIC_DISPATCH(HasAmxKernels)();
}
void matmul_amx_cols(const MatmulTask& t, const uint8_t* packed, int64_t o_begin, int64_t o_end,
                     int64_t row_tiles) {
  HWY_DYNAMIC_DISPATCH(MatmulAmxCols)(t, packed, o_begin, o_end, row_tiles);
}

void tile_activations(const int8_t* xq, const float* xd, const float* xsum, int64_t n_in, int64_t rt_begin,
                      int64_t rt_end, const ActTiles& out) {
  HWY_DYNAMIC_DISPATCH(TileActivations)(xq, xd, xsum, n_in, rt_begin, rt_end, out);
}
bool has_amx_bf16_kernels() {
  return HWY_DYNAMIC_DISPATCH(HasAmxBf16Kernels)();
}
void pack_bf16_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(PackBf16Groups)(t, g_begin, g_end, out);
}
void split_activations_bf16(const float* x, int64_t rows, int64_t n_in, uint16_t* hi, uint16_t* lo) {
  HWY_DYNAMIC_DISPATCH(SplitActivationsBf16)(x, rows, n_in, hi, lo);
}
void matmul_amx_bf16_cols(const MatmulTask& t, const uint8_t* packed, const uint16_t* xh, const uint16_t* xl,
                          int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulAmxBf16Cols)(t, packed, xh, xl, o_begin, o_end);
}
bool has_bf16_dot_kernels() {
  return HWY_DYNAMIC_DISPATCH(HasBf16DotKernels)();
}
void matmul_bf16_dot_cols(const MatmulTask& t, const uint8_t* packed, const uint16_t* xh, const uint16_t* xl,
                          int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulBf16DotCols)(t, packed, xh, xl, o_begin, o_end);
}

}  // namespace ladder::ops::detail
#endif  // HWY_ONCE
