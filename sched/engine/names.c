/* sched/engine/names.c: the interning table (see names.h): open addressing on FNV-1a with linear
 * probing, load at most 1/2, names copied once; a dropped name leaves its slot by backward shift
 * (no tombstones) and its id on a free list, taken again before a new id is given. */
#include "sched/engine/names.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/err.h"
#include "sched/core/hash.h"
#include "sched/engine/engine.h"

struct eng_names {
    char **names;   /* [n]: by id, NULL for a dropped id */
    uint32_t *slot; /* [cap_slot]: id + 1, 0 = empty */
    uint32_t n, cap_names, cap_slot;
    uint32_t *free_ids; /* [n_free]: dropped ids, the last one given first */
    uint32_t n_free, cap_free;
};

struct eng_names *eng_names_new(void)
{
    struct eng_names *t = eng_realloc(NULL, sizeof(*t));
    if (!t)
        return NULL;
    memset(t, 0, sizeof(*t));
    t->cap_slot = 64;
    t->slot = eng_realloc(NULL, t->cap_slot * sizeof(*t->slot));
    if (!t->slot) {
        free(t);
        return NULL;
    }
    memset(t->slot, 0, t->cap_slot * sizeof(*t->slot));
    return t;
}

void eng_names_free(struct eng_names *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slot);
    free(t->free_ids);
    free(t);
}

static uint64_t hash_of(const char *s)
{
    return sched_hash(SCHED_HASH_INIT, s, strlen(s));
}

/* The slot holding name, or the empty slot where it would go. */
static uint32_t probe(const struct eng_names *t, const char *name, uint64_t h)
{
    uint32_t mask = t->cap_slot - 1, s = (uint32_t)h & mask;
    while (t->slot[s] && strcmp(t->names[t->slot[s] - 1], name) != 0)
        s = (s + 1) & mask;
    return s;
}

static int rehash(struct eng_names *t)
{
    uint32_t cap = t->cap_slot * 2;
    uint32_t *slot = eng_realloc(NULL, cap * sizeof(*slot));
    if (!slot)
        return SCHED_ENOMEM;
    memset(slot, 0, cap * sizeof(*slot));
    for (uint32_t i = 0; i < t->n; i++) {
        if (!t->names[i])
            continue;
        uint32_t s = (uint32_t)hash_of(t->names[i]) & (cap - 1);
        while (slot[s])
            s = (s + 1) & (cap - 1);
        slot[s] = i + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->cap_slot = cap;
    return 0;
}

int eng_names_id(struct eng_names *t, const char *name, uint32_t *id)
{
    uint64_t h = hash_of(name);
    uint32_t s = probe(t, name, h);
    if (t->slot[s]) {
        *id = t->slot[s] - 1;
        return 0;
    }
    if (t->n_free == 0 && t->n == UINT32_MAX - 1)
        return SCHED_ERANGE;
    if ((t->n - t->n_free + 1) * 2 > t->cap_slot) {
        if (rehash(t) != 0)
            return SCHED_ENOMEM;
        s = probe(t, name, h);
    }
    if (t->n_free == 0 && t->n == t->cap_names) {
        uint32_t cap = t->cap_names ? t->cap_names * 2 : 32;
        char **v = eng_realloc(t->names, cap * sizeof(*v));
        if (!v)
            return SCHED_ENOMEM;
        t->names = v;
        t->cap_names = cap;
    }
    size_t len = strlen(name) + 1;
    char *copy = eng_realloc(NULL, len);
    if (!copy)
        return SCHED_ENOMEM;
    memcpy(copy, name, len);
    uint32_t i = t->n_free ? t->free_ids[--t->n_free] : t->n++;
    t->names[i] = copy;
    t->slot[s] = i + 1;
    *id = i;
    return 0;
}

int eng_names_drop(struct eng_names *t, uint32_t id)
{
    if (id >= t->n || !t->names[id])
        return 0;
    if (t->n_free == t->cap_free) {
        uint32_t cap = t->cap_free ? t->cap_free * 2 : 32;
        uint32_t *v = eng_realloc(t->free_ids, cap * sizeof(*v));
        if (!v)
            return SCHED_ENOMEM;
        t->free_ids = v;
        t->cap_free = cap;
    }
    uint32_t mask = t->cap_slot - 1, hole = probe(t, t->names[id], hash_of(t->names[id]));
    free(t->names[id]);
    t->names[id] = NULL;
    t->free_ids[t->n_free++] = id;
    t->slot[hole] = 0;
    /* backward shift: an entry after the hole moves into it unless its home slot lies
     * cyclically in (hole, its slot], so that every name stays reachable from its home */
    for (uint32_t j = (hole + 1) & mask; t->slot[j]; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)hash_of(t->names[t->slot[j] - 1]) & mask;
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays)
            continue;
        t->slot[hole] = t->slot[j];
        t->slot[j] = 0;
        hole = j;
    }
    return 0;
}

uint32_t eng_names_find(const struct eng_names *t, const char *name)
{
    uint32_t s = probe(t, name, hash_of(name));
    return t->slot[s] ? t->slot[s] - 1 : ENG_NONE;
}

const char *eng_names_name(const struct eng_names *t, uint32_t id)
{
    return id < t->n ? t->names[id] : NULL;
}

uint32_t eng_names_count(const struct eng_names *t)
{
    return t->n;
}

uint32_t eng_names_live(const struct eng_names *t)
{
    return t->n - t->n_free;
}
