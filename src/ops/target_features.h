// ISA extensions a Highway target's kernels use beyond what Highway 1.0.3's
// target flags enable (its AVX3_DL names AVX-VNNI but not AVX512-VNNI, and
// no AMX or AVX512-BF16). Placed right after HWY_BEFORE_NAMESPACE() inside a
// `#if HWY_TARGET == ...` block, and popped right before
// HWY_AFTER_NAMESPACE() in the same block:
//
//   HWY_BEFORE_NAMESPACE();
//   LADDER_TARGET_FEATURES_PUSH("avx512vnni")
//   ...
//   LADDER_TARGET_FEATURES_POP()
//   HWY_AFTER_NAMESPACE();
//
// GCC takes `#pragma GCC target` (undone by Highway's pop_options); Clang
// ignores that pragma and needs an attribute push/pop.
#pragma once

#include "hwy/base.h"  // HWY_PUSH_ATTRIBUTES, HWY_POP_ATTRIBUTES

#define LADDER_TARGET_FEATURES_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
// Clang applies one target attribute to a function: Highway's is replaced by
// its own feature string plus ours, and put back for HWY_AFTER_NAMESPACE.
#define LADDER_TARGET_FEATURES_CLANG_PUSH(str) \
  LADDER_TARGET_FEATURES_PRAGMA(clang attribute push(__attribute__((target(str))), apply_to = function))
#define LADDER_TARGET_FEATURES_PUSH(features) \
  HWY_POP_ATTRIBUTES LADDER_TARGET_FEATURES_CLANG_PUSH(HWY_TARGET_STR "," features)
#define LADDER_TARGET_FEATURES_POP() LADDER_TARGET_FEATURES_PRAGMA(clang attribute pop) HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR)
#else
#define LADDER_TARGET_FEATURES_PUSH(features) LADDER_TARGET_FEATURES_PRAGMA(GCC target(features))
#define LADDER_TARGET_FEATURES_POP()
#endif
