/* sched/kube/cache_refused.c: PodGroups of two APIs under one namespace/name (scheduler-plugins'
 * and Volcano's, each with its own uid). The one seen first owns the name while it exists; the
 * other is refused (its record would flip at each event) but kept here, decoded, so that it is
 * the gang as soon as the owner is deleted (not at its own next event), and so that the driver
 * can tell its owner why once (kcache_refused_announce: a Warning Event on it).
 *
 * Owns: c->refused ("ns/name" + '\x1f' + API number -> struct krefused*), the order of refusal
 * (the earliest refused takes the name first), the announced marks.
 *
 * Must not touch: the owner's record (cache.c's), the network (the driver posts the Event).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/kube/cache_int.h"
#include "sched/kube/native.h"

struct krefused {
    struct kpg *pg;
    uint64_t seq;   /* order of refusal: the lowest takes the name first */
    bool announced; /* the driver was told (kcache_refused_announce) */
};

/* The map key of key's PodGroup of api. One native PodGroup served as v1beta1 and v1alpha3
 * (1.37) is one object (one uid) seen through two watches: one entry, as cache.c keeps one
 * group (refused twice, it got two Events, and a delete seen through one version left the
 * other's copy to be adopted after the object was gone). */
static void refused_key(const char *key, enum kpg_api api, char *out, size_t n)
{
    if (api == KPG_NATIVE_V1ALPHA3)
        api = KPG_NATIVE_V1BETA1;
    snprintf(out, n, "%s\x1f%d", key, (int)api);
}

static void refused_free(struct krefused *r)
{
    if (r) {
        kobj_pg_free(r->pg);
        free(r);
    }
}

void kcache_refused_free(struct kcache *c)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->refused, &i, &k, &v);)
        refused_free(v);
    strmap_fini(&c->refused);
}

int kcache_refuse(struct kcache *c, const char *key, const cJSON *obj, enum kpg_api api,
                  bool deleted, const struct kpg *own)
{
    char rk[KOBJ_KEY_MAX + 16];
    refused_key(key, api, rk, sizeof(rk));
    if (deleted) {
        refused_free(strmap_del(&c->refused, rk));
        return 0;
    }
    struct kpg *g = NULL;
    int rc = kcache_pg_decode(obj, api, &g);
    if (rc != 0 || !g)
        return rc;
    struct krefused *r = strmap_get(&c->refused, rk);
    bool same = r && r->pg->uid && g->uid && strcmp(r->pg->uid, g->uid) == 0;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))) || strmap_put(&c->refused, rk, r, NULL) != 0) {
            free(r);
            kobj_pg_free(g);
            return SCHED_ENOMEM;
        }
    }
    if (!same) { /* a first refusal of this object (another uid: another object) */
        LOG_WARN("kube",
                 "podgroup refused: %s %s has the name of %s %s (uid %s), which gangsched "
                 "follows while it exists",
                 knative_api_version(api), key, knative_api_version(own->api), key, own->uid);
        r->seq = ++c->refused_seq;
        r->announced = false;
        c->dirty = true; /* a cycle tells its owner (kcache_refused_announce) */
    }
    if (same)
        g->api = kcache_pg_api(r->pg->api, api);
    kobj_pg_free(r->pg);
    r->pg = g;
    return 0;
}

void kcache_adopt_refused(struct kcache *c, const char *key)
{
    size_t n = strlen(key);
    const char *k, *best_k = NULL;
    void *v;
    struct krefused *best = NULL;
    for (size_t i = 0; strmap_next(&c->refused, &i, &k, &v);) {
        struct krefused *r = v;
        if (strncmp(k, key, n) == 0 && k[n] == '\x1f' && (!best || r->seq < best->seq)) {
            best = r;
            best_k = k;
        }
    }
    if (!best)
        return;
    if (strmap_put(&c->pgs, key, best->pg, NULL) != 0) {
        LOG_ERROR("kube", "out of memory adopting podgroup %s: followed at its next event", key);
        return;
    }
    LOG_INFO("kube", "podgroup adopted: %s %s (uid %s), the owner of its name was deleted",
             knative_api_version(best->pg->api), key, best->pg->uid ? best->pg->uid : "");
    best->pg = NULL; /* the cache's record now */
    refused_free(strmap_del(&c->refused, best_k));
    c->dirty = true;
}

void kcache_refused_drop(struct kcache *c, const char *key, enum kpg_api api, const char *uid)
{
    char rk[KOBJ_KEY_MAX + 16];
    refused_key(key, api, rk, sizeof(rk));
    struct krefused *r = c->refused.n ? strmap_get(&c->refused, rk) : NULL;
    if (r && r->pg && r->pg->uid && uid && strcmp(r->pg->uid, uid) == 0)
        refused_free(strmap_del(&c->refused, rk));
}

void kcache_refused_announce(struct kcache *c, kcache_refused_fn *fn, void *ctx)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->refused, &i, &k, &v);) {
        struct krefused *r = v;
        if (r->announced)
            continue;
        r->announced = true;
        fn(ctx, r->pg, strmap_get(&c->pgs, r->pg->key));
    }
}
