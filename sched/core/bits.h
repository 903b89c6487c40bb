/* sched/core/bits.h: bit counting and scanning for GPU masks and node bitmaps.
 *
 * Owns: popcount and find-first-set (and -last-set) compiled to a few instructions on every target.
 * GCC and clang turn __builtin_popcount into a call to libgcc's __popcountdi2 unless the target has
 * a popcount instruction (-mpopcnt); the SWAR form below is branch-free, about a dozen
 * instructions, and exact everywhere. Trailing-zero counts compile to one instruction (BSF or
 * TZCNT on x86, RBIT+CLZ on Arm) without any target flag; callers never pass 0.
 *
 * Must not touch: anything; pure functions only.
 */
#ifndef SCHED_CORE_BITS_H
#define SCHED_CORE_BITS_H

#include <stdint.h>

/* The mask of GPUs 0..n-1 of a node (all 32 bits from n = 32 on). */
static inline uint32_t bits_low32(uint32_t n)
{
    return n >= 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1u;
}

static inline uint32_t bits_popc32(uint32_t m)
{
#if defined(__POPCNT__)
    return (uint32_t)__builtin_popcount(m);
#else
    m = m - ((m >> 1) & 0x55555555u);
    m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
    m = (m + (m >> 4)) & 0x0F0F0F0Fu;
    return (m * 0x01010101u) >> 24;
#endif
}

/* Index of the lowest set bit; w != 0. */
static inline uint32_t bits_ctz64(uint64_t w)
{
    return (uint32_t)__builtin_ctzll(w);
}

/* Index of the highest set bit; w != 0. */
static inline uint32_t bits_top64(uint64_t w)
{
    return 63u - (uint32_t)__builtin_clzll(w);
}

#endif
