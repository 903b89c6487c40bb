/* sched/kube/driver_shared.c: the claims several members of one gang bind name (a claim pods
 * share, claims.h; a PodGroup's claim, KEP-5729): their consumers among the members, found once
 * per gang bind, and the reservedFor entries of their one write. kube-scheduler writes such a
 * claim's allocation once and its later consumers see IsReservedForPod; so does the binder: the
 * first consumer to reach its claims writes the claim for every consumer, and the others' binds
 * take that write's answer (driver_bind.c).
 *
 * Owns: struct kgang_shared in struct kgang_binds (its table, the answer of each claim's write).
 * Must not touch: the claim bodies and writes (driver_bind.c), the placement, the store.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

struct kdra_ref kdrv_claim_ref(const struct kpod *p, uint32_t i)
{
    const char *who = kdra_who(p, i);
    if (who == p->uid || !p->group)
        return (struct kdra_ref){.name = p->name, .uid = p->uid};
    const char *slash = strchr(p->group, '/');
    return (struct kdra_ref){.name = slash ? slash + 1 : p->group, .uid = who, .group = true};
}

struct use_key { /* one claim name of one member, while the table is built */
    const char *key;
    struct kshared_use use;
};

static int cmp_use_key(const void *a, const void *b)
{
    const struct use_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->use.pod != y->use.pod ? (x->use.pod < y->use.pod ? -1 : 1)
                                    : (x->use.idx < y->use.idx ? -1 : x->use.idx > y->use.idx);
}

/* Entries for the runs of t[0..n) (sorted by key) that more than one member names: each
 * member once (its first index of the claim), the holder the member first by pod key. */
static int shared_group(struct kgang_binds *gb, const struct use_key *t, uint32_t n)
{
    struct kgang_shared *g = &gb->shared;
    for (uint32_t a = 0, b; a < n; a = b) {
        uint32_t members = 1;
        for (b = a + 1; b < n && strcmp(t[b].key, t[a].key) == 0; b++)
            members += t[b].use.pod != t[b - 1].use.pod;
        if (members < 2)
            continue;
        struct kshared *s = &g->v[g->n];
        *s = (struct kshared){.key = strdup(t[a].key), .uses = g->uses + g->n_uses};
        if (!s->key)
            return -1;
        g->n++;
        for (uint32_t k = a; k < b; k++) {
            if (k > a && t[k].use.pod == t[k - 1].use.pod)
                continue;
            s->uses[s->n_uses++] = t[k].use;
            if (strcmp(gb->pods[t[k].use.pod].pod_key, gb->pods[s->uses[s->holder].pod].pod_key) <
                0)
                s->holder = s->n_uses - 1;
        }
        g->n_uses += s->n_uses;
    }
    return 0;
}

/* The table of gb's shared claims from the cache's pods (their claims are immutable). */
static int shared_build(struct kdrv *d, struct kgang_binds *gb)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < gb->n_pods; i++) {
        const struct kpod *q = kcache_pod(d->cache, gb->pods[i].pod_key);
        n += q ? q->n_claims : 0;
    }
    struct use_key *t = calloc(n ? n : 1, sizeof(*t));
    gb->shared.v = calloc(n ? n : 1, sizeof(*gb->shared.v));
    gb->shared.uses = calloc(n ? n : 1, sizeof(*gb->shared.uses));
    if (!t || !gb->shared.v || !gb->shared.uses) {
        free(t);
        return -1;
    }
    n = 0;
    for (uint32_t i = 0; i < gb->n_pods; i++) {
        const struct kpod *q = kcache_pod(d->cache, gb->pods[i].pod_key);
        for (uint32_t k = 0; q && k < q->n_claims; k++)
            t[n++] = (struct use_key){.key = q->claims[k], .use = {.pod = i, .idx = k}};
    }
    qsort(t, n, sizeof(*t), cmp_use_key);
    int rc = shared_group(gb, t, n);
    free(t);
    return rc;
}

static int cmp_shared_key(const void *key, const void *elem)
{
    return strcmp(key, ((const struct kshared *)elem)->key);
}

int kdrv_shared(struct kdrv *d, struct kgang_binds *gb, const char *key, struct kshared **s)
{
    *s = NULL;
    if (!gb->shared.built) {
        gb->shared.built = true;
        if (shared_build(d, gb) != 0) {
            kdrv_shared_free(gb);
            gb->shared.built = false;
            return -1;
        }
    }
    if (gb->shared.n > 0)
        *s = bsearch(key, gb->shared.v, gb->shared.n, sizeof(*gb->shared.v), cmp_shared_key);
    return 0;
}

uint32_t kdrv_shared_who(struct kdrv *d, const struct kgang_binds *gb, const struct kshared *s,
                         struct kdra_ref *who)
{
    uint32_t n = 0;
    for (uint32_t u = 0; u < s->n_uses; u++) {
        const struct kpod *q = kcache_pod(d->cache, gb->pods[s->uses[u].pod].pod_key);
        if (!q || s->uses[u].idx >= q->n_claims)
            continue;
        struct kdra_ref r = kdrv_claim_ref(q, s->uses[u].idx);
        bool seen = false;
        for (uint32_t k = 0; k < n && !seen; k++)
            seen = r.uid && who[k].uid && strcmp(who[k].uid, r.uid) == 0;
        if (!seen && n < KDRA_MAX_CONSUMERS)
            who[n++] = r;
    }
    return n;
}

void kdrv_shared_free(struct kgang_binds *gb)
{
    for (uint32_t i = 0; i < gb->shared.n; i++) {
        free(gb->shared.v[i].key);
        free(gb->shared.v[i].error);
        free(gb->shared.v[i].waiting);
    }
    free(gb->shared.v);
    free(gb->shared.uses);
    gb->shared = (struct kgang_shared){0};
}
