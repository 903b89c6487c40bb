/* queue/queue.c: pending-gang order and sorted lists (see queue.h). */
#include "queue/queue.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/backlog.h"

int queue_cmp(const struct gang *a, const struct gang *b, bool by_priority)
{
    if (by_priority && a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return 0;
}

void queue_list_init(struct queue_list *l, bool by_priority)
{
    memset(l, 0, sizeof(*l));
    l->by_priority = by_priority;
}

void queue_list_fini(struct queue_list *l)
{
    free(l->items);
    free(l->keys);
    free(l->classes);
    memset(l, 0, sizeof(*l));
}

/* First index whose item does not go before g. */
static uint32_t lower_bound(const struct queue_list *l, const struct gang *g)
{
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (queue_cmp(l->items[mid], g, l->by_priority) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The slot of class key k (its own, or the free one it would take). */
static struct queue_class_count *class_slot(const struct queue_list *l, uint64_t k)
{
    uint32_t m = l->class_cap - 1;
    for (uint32_t i = (uint32_t)(k ^ (k >> 32)) & m;; i = (i + 1) & m)
        if (l->classes[i].key == k || (l->classes[i].key == 0 && l->classes[i].count == 0))
            return &l->classes[i];
}

/* Makes room for one more class key: rebuilds the table (without the keys left at 0). */
static int class_room(struct queue_list *l)
{
    if (l->class_cap && 2 * (l->class_used + 1) <= l->class_cap)
        return 0;
    uint32_t cap = l->class_cap ? l->class_cap : 16;
    while (2 * (l->n_classes + 1) > cap)
        cap *= 2;
    struct queue_class_count *old = l->classes, *t = calloc(cap, sizeof(*t));
    if (!t)
        return SCHED_ENOMEM;
    uint32_t old_cap = l->class_cap;
    l->classes = t;
    l->class_cap = cap;
    l->class_used = 0;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].count > 0) {
            *class_slot(l, old[i].key) = old[i];
            l->class_used++;
        }
    free(old);
    return 0;
}

/* Key 0 is the free mark; a gang key of 0 (one chance in 2^64) counts as 1. */
static uint64_t class_of(uint64_t k)
{
    return k ? k : 1;
}

static void class_count(struct queue_list *l, uint64_t k, int delta)
{
    struct queue_class_count *c = class_slot(l, class_of(k));
    if (c->key == 0) {
        c->key = class_of(k);
        l->class_used++;
    }
    if (c->count == 0 && delta > 0)
        l->n_classes++;
    c->count = (uint32_t)((int64_t)c->count + delta);
    if (c->count == 0)
        l->n_classes--;
}

int queue_list_insert(struct queue_list *l, const struct gang *g)
{
    if (class_room(l) != 0)
        return SCHED_ENOMEM;
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        const struct gang **items = realloc(l->items, cap * sizeof(*items));
        if (!items)
            return SCHED_ENOMEM;
        l->items = items;
        uint64_t *keys = realloc(l->keys, cap * sizeof(*keys));
        if (!keys)
            return SCHED_ENOMEM;
        l->keys = keys;
        l->cap = cap;
    }
    uint32_t at = lower_bound(l, g);
    memmove(&l->items[at + 1], &l->items[at], (l->n - at) * sizeof(*l->items));
    memmove(&l->keys[at + 1], &l->keys[at], (l->n - at) * sizeof(*l->keys));
    l->items[at] = g;
    l->keys[at] = backlog_gang_key(g);
    class_count(l, l->keys[at], +1);
    l->n++;
    return 0;
}

bool queue_list_remove(struct queue_list *l, const struct gang *g)
{
    uint32_t at = lower_bound(l, g);
    if (at >= l->n || l->items[at] != g)
        return false;
    class_count(l, l->keys[at], -1);
    memmove(&l->items[at], &l->items[at + 1], (l->n - at - 1) * sizeof(*l->items));
    memmove(&l->keys[at], &l->keys[at + 1], (l->n - at - 1) * sizeof(*l->keys));
    l->n--;
    return true;
}

int64_t queue_list_position(const struct queue_list *l, const struct gang *g)
{
    uint32_t at = lower_bound(l, g);
    return (at < l->n && l->items[at] == g) ? (int64_t)at : -1;
}

double queue_decay(double hist, double share, int64_t dt_ms, int64_t half_life_ms)
{
    if (half_life_ms <= 0)
        return 0.0;
    if (dt_ms <= 0)
        return hist;
    double keep = exp2(-(double)dt_ms / (double)half_life_ms);
    return hist * keep + share * (1.0 - keep);
}
