/* sched/kube/cache_counts.c: each group's members by phase (struct kcounts in cache.h), kept by
 * the pod events as they come (kcache_pod_in counts a pod out before its record changes and in
 * after), so that the driver writes a PodGroup's status.running, succeeded and failed without a
 * walk of the pods (driver_counts.c).
 *
 * Counted: this scheduler's pods with a group that is not a native one (scheduler-plugins',
 * Volcano's, Kueue's plain-pod groups), by kpod.phase. An entry that cannot be made (out of
 * memory) sets counts_lost: every entry is counted again from the pods, all dirty, before the
 * next kcache_counts_each.
 *
 * Must not touch: anything outside the cache.
 */
#include <stdlib.h>

#include "sched/kube/cache_int.h"

static bool counted(const struct kpod *p)
{
    return p && p->ours && p->group && !p->native && !p->pg_ref;
}

static void mark(struct kcache *c, struct kcounts *k)
{
    if (!k->dirty)
        c->n_counts_dirty++;
    k->dirty = true;
}

/* Drops group key's entry k (so that groups that come and go leave nothing behind, leader or
 * not: the entries are bounded by the groups with members or a PodGroup). */
static void forget(struct kcache *c, const char *key, struct kcounts *k)
{
    if (k->dirty)
        c->n_counts_dirty--;
    free(strmap_del(&c->counts, key));
}

void kcache_counts_pod(struct kcache *c, const struct kpod *p, int sign)
{
    if (!counted(p) || c->counts_lost)
        return;
    struct kcounts *k = strmap_get(&c->counts, p->group);
    if (!k) {
        if (sign < 0) /* not counted in (lost since): nothing to take out */
            return;
        if (!(k = calloc(1, sizeof(*k))) || strmap_put(&c->counts, p->group, k, NULL) != 0) {
            free(k);
            c->counts_lost = true;
            return;
        }
    }
    k->pods += (uint32_t)sign;
    if (p->phase >= KPOD_RUNNING && p->phase <= KPOD_FAILED)
        k->n[p->phase - 1] += sign;
    mark(c, k);
    if (k->pods == 0 && !strmap_get(&c->pgs, p->group))
        forget(c, p->group, k); /* no member and no PodGroup to write to */
}

void kcache_counts_seen(struct kcache *c, const char *key, bool deleted)
{
    struct kcounts *k = strmap_get(&c->counts, key);
    if (k && deleted && k->pods == 0)
        forget(c, key, k);
    else if (k)
        mark(c, k);
}

/* Every entry counted again from the pods (after an entry was lost): the old ones dropped, the
 * pods counted in, all dirty. Stays lost on out of memory. */
static void recount(struct kcache *c)
{
    kcache_counts_free(c);
    strmap_init(&c->counts);
    c->counts_lost = false;
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&c->pods, &i, &key, &v) && !c->counts_lost;)
        kcache_counts_pod(c, v, 1);
}

const struct kcounts *kcache_counts(struct kcache *c, const char *group)
{
    if (c->counts_lost)
        recount(c);
    return c->counts_lost ? NULL : strmap_get(&c->counts, group);
}

void kcache_counts_each(struct kcache *c,
                        bool (*fn)(void *ctx, const char *group, struct kcounts *k), void *ctx)
{
    if (c->counts_lost)
        recount(c);
    if (c->counts_lost || c->n_counts_dirty == 0)
        return;
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&c->counts, &i, &key, &v);) {
        struct kcounts *k = v;
        if (!k->dirty || !fn(ctx, key, k))
            continue;
        k->dirty = false;
        c->n_counts_dirty--;
        if (k->pods == 0) /* the entry just returned: strmap_del keeps the walk valid */
            free(strmap_del(&c->counts, key));
    }
}

void kcache_counts_free(struct kcache *c)
{
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&c->counts, &i, &key, &v);)
        free(v);
    strmap_fini(&c->counts);
    c->n_counts_dirty = 0;
}
