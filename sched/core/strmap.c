/* sched/core/strmap.c: string-keyed hash map (see strmap.h). */
#include "sched/core/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/err.h"
#include "sched/core/hash.h"

static char strmap_tomb_byte;
#define STRMAP_TOMB (&strmap_tomb_byte)

void strmap_init(struct strmap *m)
{
    memset(m, 0, sizeof(*m));
}

void strmap_fini(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && m->slots[i].key != STRMAP_TOMB)
            free(m->slots[i].key);
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static uint64_t key_hash(const char *key)
{
    return sched_hash(SCHED_HASH_INIT, key, strlen(key));
}

/* Slot of key, or -1. */
static long find(const struct strmap *m, const char *key, uint64_t h)
{
    if (m->cap == 0)
        return -1;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct strmap_slot *s = &m->slots[i];
        if (!s->key)
            return -1;
        if (s->key != STRMAP_TOMB && s->hash == h && strcmp(s->key, key) == 0)
            return (long)i;
    }
}

static int grow(struct strmap *m)
{
    size_t cap = 16; /* sized by live keys: tombstones are dropped, never doubled for */
    while (cap < (m->n + 1) * 4)
        cap *= 2;
    struct strmap_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return SCHED_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        struct strmap_slot *s = &m->slots[i];
        if (!s->key || s->key == STRMAP_TOMB)
            continue;
        size_t j = s->hash & (cap - 1);
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    m->used = m->n;
    return 0;
}

void *strmap_get(const struct strmap *m, const char *key)
{
    if (m->n == 0) /* no key to hash */
        return NULL;
    long i = find(m, key, key_hash(key));
    return i < 0 ? NULL : m->slots[i].value;
}

int strmap_put(struct strmap *m, const char *key, void *value, void **old)
{
    uint64_t h = key_hash(key);
    long i = find(m, key, h);
    if (i >= 0) {
        if (old)
            *old = m->slots[i].value;
        m->slots[i].value = value;
        return 0;
    }
    if (old)
        *old = NULL;
    if ((m->used + 1) * 2 > m->cap && grow(m) != 0)
        return SCHED_ENOMEM;
    char *k = strdup(key);
    if (!k)
        return SCHED_ENOMEM;
    size_t j = h & (m->cap - 1);
    while (m->slots[j].key && m->slots[j].key != STRMAP_TOMB)
        j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].key)
        m->used++;
    m->slots[j] = (struct strmap_slot){.key = k, .value = value, .hash = h};
    m->n++;
    return 0;
}

void *strmap_del(struct strmap *m, const char *key)
{
    long i = find(m, key, key_hash(key));
    if (i < 0)
        return NULL;
    void *v = m->slots[i].value;
    free(m->slots[i].key);
    m->slots[i].key = STRMAP_TOMB;
    m->slots[i].value = NULL;
    m->n--;
    return v;
}

bool strmap_next(const struct strmap *m, size_t *i, const char **key, void **value)
{
    for (; *i < m->cap; (*i)++) {
        const struct strmap_slot *s = &m->slots[*i];
        if (s->key && s->key != STRMAP_TOMB) {
            if (key)
                *key = s->key;
            if (value)
                *value = s->value;
            (*i)++;
            return true;
        }
    }
    return false;
}
