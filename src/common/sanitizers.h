// Which sanitizer a translation unit is compiled under, the same under GCC
// (which defines __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__) and Clang
// (which answers __has_feature): LADDER_ASAN and LADDER_TSAN are 1 or 0.
// Code that sizes its work to a sanitizer's slowdown, or keeps a sanitizer
// out of a hot loop, asks these rather than either compiler's own macro.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define LADDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LADDER_ASAN 1
#endif
#endif
#ifndef LADDER_ASAN
#define LADDER_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define LADDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LADDER_TSAN 1
#endif
#endif
#ifndef LADDER_TSAN
#define LADDER_TSAN 0
#endif
