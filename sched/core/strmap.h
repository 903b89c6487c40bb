/* sched/core/strmap.h: a hash map from strings to pointers (open addressing, linear probing).
 *
 * Owns: its slot array and copies of its keys. Values are borrowed pointers; the map never
 * frees them. Used by drivers for caches keyed by "namespace/name". Not thread-safe.
 * Invariant: the load factor stays below 1/2, so a lookup ends at an empty slot.
 */
#ifndef SCHED_CORE_STRMAP_H
#define SCHED_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strmap_slot {
    char *key; /* NULL: empty; STRMAP_TOMB: deleted */
    void *value;
    uint64_t hash;
};

struct strmap {
    struct strmap_slot *slots;
    size_t cap;  /* power of two, or 0 */
    size_t n;    /* live keys */
    size_t used; /* live keys + tombstones */
};

void strmap_init(struct strmap *m);
/* Frees the keys and the slots (not the values). */
void strmap_fini(struct strmap *m);
void *strmap_get(const struct strmap *m, const char *key);
/* Inserts or replaces; *old (may be NULL) receives the replaced value or NULL. 0 or SCHED_ENOMEM.
 */
int strmap_put(struct strmap *m, const char *key, void *value, void **old);
/* Removes key; returns its value, or NULL when absent. */
void *strmap_del(struct strmap *m, const char *key);

/* Iteration: for (size_t i = 0; strmap_next(m, &i, &k, &v);) ...; the map must not change,
 * except by strmap_del of the key just returned (a deletion leaves a tombstone in place). */
bool strmap_next(const struct strmap *m, size_t *i, const char **key, void **value);

#endif
