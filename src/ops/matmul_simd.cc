// Compiles matmul-inl.h once per Highway target and exports the kernels for
// dynamic dispatch (called from matmul.cc).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "ops/matmul-inl.h"

#if HWY_ONCE
#include "ops/matmul_simd.h"

namespace ladder::ops::detail {

HWY_EXPORT(MatmulFloatCols);
HWY_EXPORT(MatmulIntCols);
HWY_EXPORT(HasIntKernels);

void matmul_float_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulFloatCols)(t, o_begin, o_end);
}
void matmul_int_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(MatmulIntCols)(t, o_begin, o_end);
}
bool has_int_kernels() { return HWY_DYNAMIC_DISPATCH(HasIntKernels)(); }

}  // namespace ladder::ops::detail
#endif  // HWY_ONCE
