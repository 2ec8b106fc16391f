// Helpers for code that issues AMX instructions (x86-64 only; internal to
// ops/): the 64-byte tile configuration and tile loads/stores that the
// compiler cannot reorder against ordinary memory accesses. (GCC's
// _tile_loadd/_tile_stored are inline assembly without a memory clobber, so
// on their own a store that fills a tile's source, or a load that reads what
// a tile stored, could be moved across them.)
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// Functions outside the Highway AVX3_DL sections that use tiles.
#define LADDER_AMX_FUNCTION __attribute__((target("amx-tile,amx-int8,amx-bf16")))

#define LADDER_TILE_LOAD(tile, ptr, stride) \
  do {                                      \
    asm volatile("" ::: "memory");          \
    _tile_loadd(tile, ptr, stride);         \
  } while (0)

#define LADDER_TILE_STORE(tile, ptr, stride) \
  do {                                       \
    _tile_stored(tile, ptr, stride);         \
    asm volatile("" ::: "memory");           \
  } while (0)

namespace ladder::ops {

// ldtilecfg's operand: palette 1, then per tile its bytes per row and rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  void set(int tile, int n_rows, int bytes_per_row) {
    rows[tile] = static_cast<uint8_t>(n_rows);
    colsb[tile] = static_cast<uint16_t>(bytes_per_row);
  }
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

}  // namespace ladder::ops

#endif  // __x86_64__
