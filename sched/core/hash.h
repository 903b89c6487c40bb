/* sched/core/hash.h: the one 64-bit FNV-1a hash of the project (equivalence memo, config
 * versions, change detection, input fingerprints) and the one mixer of 64-bit keys. Not
 * cryptographic: it tells changed bytes from unchanged ones, nothing more. Owns no state. */
#ifndef GANGSCHED_CORE_HASH_H
#define GANGSCHED_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SCHED_HASH_INIT 14695981039346656037ull /* FNV-1a 64-bit offset basis */

/* h folded with n bytes at p; start from SCHED_HASH_INIT. */
static inline uint64_t sched_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull; /* FNV-1a 64-bit prime */
    }
    return h;
}

/* splitmix64's finalizer: every bit of z mixed into every bit of the result (hash tables keyed
 * by values that differ in few bits, reproducible draws from a counter). */
static inline uint64_t sched_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* h folded with string s and its terminator (NULL folds a byte no string holds). */
static inline uint64_t sched_hash_str(uint64_t h, const char *s)
{
    return s ? sched_hash(h, s, strlen(s) + 1) : sched_hash(h, "\xff", 1);
}

#endif
