/* sched/core/hash.h: the one 64-bit FNV-1a hash of the project (equivalence memo, config
 * versions, change detection, input fingerprints). Not cryptographic: it tells changed bytes
 * from unchanged ones, nothing more. Owns no state. */
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

/* h folded with string s and its terminator (NULL folds a byte no string holds). */
static inline uint64_t sched_hash_str(uint64_t h, const char *s)
{
    return s ? sched_hash(h, s, strlen(s) + 1) : sched_hash(h, "\xff", 1);
}

#endif
