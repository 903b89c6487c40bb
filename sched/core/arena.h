/* sched/core/arena.h: per-cycle bump allocator.
 *
 * Owns: chunks of memory with one lifetime. Everything the pure core allocates during a cycle
 * (working state, candidate lists, reason strings, decisions) comes from an arena and is released
 * at once by arena_reset() or arena_fini(). Nothing allocated from an arena may be used after
 * the reset. Allocation failure returns NULL; callers report SCHED_ENOMEM.
 */
#ifndef SCHED_CORE_ARENA_H
#define SCHED_CORE_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct arena_chunk;

struct arena {
    /* private */
    struct arena_chunk *head; /* current chunk, newest first */
    size_t chunk_size;        /* default bytes per chunk */
    size_t used_total;        /* bytes handed out since the last reset */
};

void arena_init(struct arena *a, size_t chunk_size);
void arena_fini(struct arena *a);
/* Frees all but the largest chunk, which is kept for reuse. */
void arena_reset(struct arena *a);
/* 16-byte aligned; NULL on out of memory. */
void *arena_alloc(struct arena *a, size_t size);
void *arena_calloc(struct arena *a, size_t n, size_t size);
char *arena_strdup(struct arena *a, const char *s);
/* A growable array in the arena: returns `old` while n < *cap, else a copy of its n elements in
 * twice the room (16 at first), *cap updated; NULL when out of memory (old stays valid). */
void *arena_grow(struct arena *a, void *old, uint32_t n, uint32_t *cap, size_t elem);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
