/* sched/core/memo.h: the cycle's equivalence memo, a table from a 64-bit key (a gang's shape,
 * with its labels or its preemption class: cycle.c) to the index of a verdict.
 *
 * Owns: the table (open addressing in the cycle's arena, at most half full) and the rule of an
 * entry's life: for the rest of the cycle (MEMO_ANY), or while the cycle's version (its
 * placements and reservations so far) is the one it was made at. A new entry of a key replaces
 * the old one. Lookups and additions cost O(1) on average, whatever the number of keys.
 *
 * Must not touch: anything but its table; it does not know what a key or a verdict means.
 */
#ifndef SCHED_CORE_MEMO_H
#define SCHED_CORE_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/arena.h"

#define MEMO_ANY UINT64_MAX /* an entry valid at any version of the cycle */

struct memo_entry {
    bool used;
    uint32_t verdict; /* what the caller keeps: an index into its verdicts */
    uint64_t key;
    uint64_t version; /* valid only at this version; MEMO_ANY: always */
};

struct memo {
    struct arena *arena;
    struct memo_entry *tab; /* cap slots, cap a power of two (0: none yet) */
    uint32_t n, cap;        /* keys held, slots */
};

/* An empty memo allocating from arena a. */
void memo_init(struct memo *m, struct arena *a);
/* The verdict kept under key if its entry holds at `version`, else -1. */
int64_t memo_find(const struct memo *m, uint64_t key, uint64_t version);
/* Keeps verdict under key, valid at `version` only (MEMO_ANY: always). false: out of memory. */
bool memo_add(struct memo *m, uint64_t key, uint32_t verdict, uint64_t version);

#endif
