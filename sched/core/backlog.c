/* sched/core/backlog.c: equivalence classes of the pending gangs (see backlog.h). */
#include "sched/core/backlog.h"

#include <string.h>

#include "sched/core/err.h"

static uint64_t class_key(uint64_t gkey, uint32_t q)
{
    uint64_t z = gkey ^ ((uint64_t)(q + 1) * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 32;
    return z ? z : 1; /* 0 marks an empty slot */
}

int backlog_init(struct backlog *bl, struct arena *a, bool on, uint32_t n_queues)
{
    memset(bl, 0, sizeof(*bl));
    bl->arena = a;
    bl->on = on;
    if (!on)
        return 0;
    bl->cap = 64;
    bl->slot = arena_calloc(a, bl->cap, sizeof(*bl->slot));
    bl->queues = arena_calloc(a, n_queues + 1, sizeof(*bl->queues));
    bl->n_queues = n_queues;
    return bl->slot && bl->queues ? 0 : SCHED_ENOMEM;
}

static struct backlog_class *find(const struct backlog *bl, uint64_t key)
{
    uint32_t m = bl->cap - 1;
    for (uint32_t i = (uint32_t)key & m;; i = (i + 1) & m)
        if (bl->slot[i].key == key || bl->slot[i].key == 0)
            return &bl->slot[i];
}

bool backlog_skip(const struct backlog *bl, uint64_t gkey, uint32_t q, uint64_t version,
                  int64_t *verdict)
{
    if (!bl->on)
        return false;
    const struct backlog_class *c = find(bl, class_key(gkey, q));
    if (c->key == 0 || !c->inert || c->pinned || c->version != version)
        return false;
    *verdict = c->verdict;
    return true;
}

static int grow(struct backlog *bl)
{
    uint32_t cap = bl->cap * 2;
    struct backlog_class *slot = arena_calloc(bl->arena, cap, sizeof(*slot));
    if (!slot)
        return SCHED_ENOMEM;
    struct backlog old = *bl;
    bl->slot = slot;
    bl->cap = cap;
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.slot[i].key)
            *find(bl, old.slot[i].key) = old.slot[i];
    return 0;
}

/* The class record of (gkey, q), added when new; NULL on out of memory. */
static struct backlog_class *slot_for(struct backlog *bl, uint64_t gkey, uint32_t q)
{
    if (2 * (bl->n + 1) > bl->cap && grow(bl) != 0)
        return NULL;
    uint64_t key = class_key(gkey, q);
    struct backlog_class *c = find(bl, key);
    if (c->key == 0) {
        c->key = key;
        c->last = -1;
        bl->n++;
    }
    return c;
}

int backlog_pin(struct backlog *bl, uint64_t gkey, uint32_t q)
{
    if (!bl->on)
        return 0;
    struct backlog_class *c = slot_for(bl, gkey, q);
    if (!c)
        return SCHED_ENOMEM;
    c->pinned = true;
    return 0;
}

int backlog_note(struct backlog *bl, uint64_t gkey, uint32_t q, uint64_t version, bool inert,
                 int64_t verdict)
{
    if (!bl->on)
        return 0;
    struct backlog_class *c = slot_for(bl, gkey, q);
    if (!c)
        return SCHED_ENOMEM;
    c->version = version;
    c->inert = inert;
    c->verdict = verdict;
    bl->notes++;
    return 0;
}

/* Finds the queue's classes and each one's last position, from the end of the queue. */
static int scan_queue(struct backlog *bl, uint32_t q, const uint64_t *keys, uint32_t n,
                      uint32_t n_classes)
{
    struct backlog_queue *bq = &bl->queues[q];
    bq->scanned = true;
    bq->keys = arena_alloc(bl->arena, (n_classes + 1) * sizeof(*bq->keys));
    if (!bq->keys)
        return SCHED_ENOMEM;
    for (uint32_t i = n; i-- > 0 && bq->n < n_classes;) {
        struct backlog_class *c = slot_for(bl, keys[i], q);
        if (!c)
            return SCHED_ENOMEM;
        if (c->last < 0) {
            c->last = i;
            bq->keys[bq->n++] = c->key;
        }
    }
    bq->at_notes = UINT64_MAX;
    return 0;
}

uint32_t backlog_rest(struct backlog *bl, uint32_t q, const uint64_t *keys, uint32_t n,
                      uint32_t n_classes, uint32_t pos, uint64_t version)
{
    if (!bl->on || !keys || n_classes == 0 || q >= bl->n_queues || pos >= n)
        return 0;
    struct backlog_queue *bq = &bl->queues[q];
    if (!bq->scanned && scan_queue(bl, q, keys, n, n_classes) != 0)
        return 0; /* out of memory: walk on, one gang at a time */
    if (bq->at_notes != bl->notes || bq->at_version != version) {
        bq->limit = -1;
        for (uint32_t k = 0; k < bq->n; k++) {
            const struct backlog_class *c = find(bl, bq->keys[k]);
            bool skip = c->inert && !c->pinned && c->version == version && c->verdict < 0;
            if (!skip && c->last > bq->limit)
                bq->limit = c->last;
        }
        if (bq->n < n_classes)
            bq->limit = (int64_t)n; /* not every class found: assume the worst */
        bq->at_notes = bl->notes;
        bq->at_version = version;
    }
    return (int64_t)pos > bq->limit ? n - pos : 0;
}
