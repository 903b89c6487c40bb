/* sched/kube/cache.c: the Kubernetes driver's cluster cache: its objects and their events (see
 * cache.h; the cycle's input made from them: cache_build.c). */
#include "sched/kube/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"
#include "sched/core/annot.h"
#include "sched/core/log.h"
#include "sched/core/policy.h"
#include "sched/k8s/nodes.h"
#include "sched/kube/cache_int.h"
#include "sched/kube/claims.h"
#include "sched/kube/computedomain.h"
#include "sched/kube/dra.h"
#include "sched/kube/native.h"

struct kcache *kcache_new(const char *scheduler)
{
    struct kcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->scheduler = strdup(scheduler);
    if (!c->scheduler) {
        free(c);
        return NULL;
    }
    struct strmap *maps[] = {&c->nodes,   &c->pods, &c->pgs, &c->assumed, &c->deletes, &c->refused,
                             &c->node_ix, &c->use,  &c->hot, &c->nss,     &c->counts};
    for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
        strmap_init(maps[i]);
    c->nodes_dirty = c->dirty = true;
    if (!(c->dra = kclaims_new())) {
        kcache_free(c);
        return NULL;
    }
    return c;
}

static void free_assume(struct kassume *a)
{
    if (a) {
        free(a->node);
        free(a);
    }
}

void kcache_free(struct kcache *c)
{
    if (!c)
        return;
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->nodes, &i, &k, &v);)
        nodes_rec_free(v);
    for (size_t i = 0; strmap_next(&c->pods, &i, &k, &v);)
        kobj_pod_free(v);
    for (size_t i = 0; strmap_next(&c->pgs, &i, &k, &v);)
        kobj_pg_free(v);
    for (size_t i = 0; strmap_next(&c->assumed, &i, &k, &v);)
        free_assume(v);
    for (size_t i = 0; strmap_next(&c->deletes, &i, &k, &v);)
        free(v);
    strmap_fini(&c->deletes);
    kcache_refused_free(c);
    kcache_users_free(c);
    kcache_ns_free(c);
    kcache_counts_free(c);
    struct strmap *maps[] = {&c->nodes, &c->pods, &c->pgs, &c->assumed, &c->node_ix};
    for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
        strmap_fini(maps[i]);
    kcache_base_free(c);
    kcache_use_free(c);
    cluster_free(c->cluster);
    kclaims_free(c->dra);
    free(c->scheduler);
    free(c);
}

/* ---- events ---------------------------------------------------------------------------------- */

int kcache_node_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    const char *name = kobj_str(obj, "metadata.name");
    if (!name || !*name) {
        LOG_WARN("kube", "node without metadata.name skipped");
        return 0;
    }
    struct nodes_rec *r = NULL;
    if (!deleted) {
        char src[300];
        snprintf(src, sizeof(src), "node %s", name);
        struct sched_errbuf eb;
        int rc = nodes_decode(obj, src, &r, &eb);
        if (rc == SCHED_ENOMEM)
            return rc;
        if (rc) /* a node the scheduler cannot read is treated as gone */
            LOG_WARN("kube", "node left out: error=%s", eb.msg);
    }
    void *old = NULL;
    if (!r)
        old = strmap_del(&c->nodes, name);
    else if (strmap_put(&c->nodes, name, r, &old) != 0) {
        nodes_rec_free(r);
        return SCHED_ENOMEM;
    }
    /* a status heartbeat that changes nothing the scheduler reads is not a change */
    if (old && r && nodes_rec_same(old, r)) {
        nodes_rec_free(old);
        return 0;
    }
    if (old || r)
        c->nodes_dirty = c->dirty = true;
    nodes_rec_free(old);
    return 0;
}

/* A deleted pod: its record, assumption and delete mark are dropped. */
static int pod_gone(struct kcache *c, const cJSON *obj)
{
    const char *ns = kobj_str(obj, "metadata.namespace"), *name = kobj_str(obj, "metadata.name");
    if (!name) {
        LOG_WARN("kube", "pod without metadata.name skipped");
        return 0;
    }
    char key[KOBJ_KEY_MAX];
    if (kobj_key(ns, name, key, sizeof(key)) != 0) {
        LOG_WARN("kube", "%s with an invalid name skipped", "pod");
        return 0;
    }
    c->dirty = true;
    kcache_pod_in(c, strmap_get(&c->pods, key), -1);
    kcache_hot_pod(c, key, NULL);
    kobj_pod_free(strmap_del(&c->pods, key));
    free_assume(strmap_del(&c->assumed, key));
    free(strmap_del(&c->deletes, key));
    return 0;
}

/* Is obj the version of a pod the cache holds (same uid and resourceVersion, both given)? The
 * watch event of this scheduler's own write after its answer was taken, or a relist's unchanged
 * pod: decoding it again would make the same object, so it is not (kube-apiserver gives every
 * write of an object a new resourceVersion). */
static bool pod_unchanged(const struct kcache *c, const cJSON *obj)
{
    const char *name = kobj_str(obj, "metadata.name"), *uid = kobj_str(obj, "metadata.uid"),
               *rv = kobj_str(obj, "metadata.resourceVersion");
    char key[KOBJ_KEY_MAX];
    if (!name || !uid || !rv || !rv[0] ||
        kobj_key(kobj_str(obj, "metadata.namespace"), name, key, sizeof(key)) != 0)
        return false;
    const struct kpod *had = strmap_get(&c->pods, key);
    return had && had->rv && had->uid && had->meta_own.ns_labels && strcmp(had->rv, rv) == 0 &&
           strcmp(had->uid, uid) == 0;
}

int kcache_pod_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    if (deleted)
        return pod_gone(c, obj);
    if (pod_unchanged(c, obj))
        return 0;
    struct kpod *p = NULL;
    struct sched_errbuf eb;
    int rc = kobj_pod_decode(obj, c->scheduler, &p, &eb);
    if (rc == SCHED_ENOMEM)
        return rc;
    if (rc != 0) {
        /* keep what we knew: a bad update must not free capacity it still holds */
        LOG_WARN("kube", "pod skipped: error=%s", eb.msg);
        return 0;
    }
    const char *key = p->key;
    p->meta_own.ns_labels = kcache_ns_labels(c, p->ns); /* NULL (out of memory): none known */
    const struct kpod *had = strmap_get(&c->pods, key);
    c->dirty |= !had || !p->digest || had->digest != p->digest || !kobj_same_str(p->uid, had->uid);
    if (had && kobj_rv_older(p->rv, had->rv) && kobj_same_str(p->uid, had->uid)) {
        /* an object read back from a write (kcache_pod_event with a response) is newer than
         * a watch event still on its way: keep the newer one */
        kobj_pod_free(p);
        return 0;
    }
    kcache_pod_in(c, had, -1); /* counted again below, as it is now */
    const char *del_uid = strmap_get(&c->deletes, key);
    if (del_uid && kobj_same_str(del_uid, p->uid ? p->uid : ""))
        p->deleting = true; /* a delete sent counts as deleting at once */
    else if (del_uid)
        free(strmap_del(&c->deletes, key)); /* another pod of that name: not ours to delete */
    if (p->node)                            /* the watch shows it bound: the assumption is over */
        free_assume(strmap_del(&c->assumed, key));
    if (p->phase == KPOD_SUCCEEDED || p->phase == KPOD_FAILED)
        free_assume(strmap_del(&c->assumed, key));
    void *old = NULL;
    if (strmap_put(&c->pods, key, p, &old) != 0) {
        kobj_pod_free(p);
        c->use_all = true;        /* had is uncounted and may have lost its assumption */
        kcache_pod_in(c, had, 1); /* its rules again (use_all: its usage is not counted) */
        return SCHED_ENOMEM;
    }
    kcache_pod_in(c, p, 1);
    kcache_hot_pod(c, key, p);
    kobj_pod_free(old);
    return 0;
}

bool kcache_delete_sent(struct kcache *c, const char *pod_key)
{
    struct kpod *p = strmap_get(&c->pods, pod_key);
    if (!p)
        return false;
    const char *uid = strmap_get(&c->deletes, pod_key);
    if (uid && kobj_same_str(uid, p->uid ? p->uid : ""))
        return false; /* sent already: a pod is deleted once */
    char *copy = strdup(p->uid ? p->uid : "");
    void *old = NULL;
    if (!copy || strmap_put(&c->deletes, pod_key, copy, &old) != 0) {
        free(copy);
        return true; /* out of memory: send it anyway, unmarked */
    }
    free(old);
    p->deleting = true;
    c->dirty = true;
    return true;
}

void kcache_delete_failed(struct kcache *c, const char *pod_key, const char *uid)
{
    const char *had = strmap_get(&c->deletes, pod_key);
    if (!had || !kobj_same_str(had, uid))
        return;
    free(strmap_del(&c->deletes, pod_key));
    struct kpod *p = strmap_get(&c->pods, pod_key);
    if (p && kobj_same_str(p->uid ? p->uid : "", uid))
        p->deleting = p->del_ts;
    c->dirty = true;
}

int kcache_pg_decode(const cJSON *obj, enum kpg_api api, struct kpg **out)
{
    struct sched_errbuf eb;
    *out = NULL;
    int rc = kobj_pg_decode(obj, api, out, &eb);
    if (rc == SCHED_ENOMEM)
        return rc;
    if (rc != 0)
        LOG_WARN("kube", "podgroup skipped: error=%s", eb.msg);
    return 0;
}

int kcache_pg_event(struct kcache *c, const cJSON *obj, enum kpg_api api, bool deleted)
{
    if (api == KPG_WORKLOAD_V1ALPHA1) {
        c->dirty = true;
        return knative_workload_event(&c->pgs, obj, deleted);
    }
    const char *ns = kobj_str(obj, "metadata.namespace"), *name = kobj_str(obj, "metadata.name");
    if (!name) {
        LOG_WARN("kube", "podgroup without metadata.name skipped");
        return 0;
    }
    char key[KOBJ_KEY_MAX];
    if ((api == KPG_CPG_V1ALPHA3 ? knative_cpg_key(ns, name, key, sizeof(key))
                                 : kobj_key(ns, name, key, sizeof(key))) != 0) {
        LOG_WARN("kube", "%s with an invalid name skipped", "podgroup");
        return 0;
    }
    /* two APIs' PodGroups of one namespace/name (scheduler-plugins' and Volcano's): the one
     * seen first owns the name while it exists, the other is refused (its record would flip at
     * each event) and takes the name when the owner is deleted (cache_refused.c); the same
     * object through two versions (one uid) is one group */
    const struct kpg *own = strmap_get(&c->pgs, key);
    const char *uid = kobj_str(obj, "metadata.uid");
    if (own && own->api != api && own->uid && uid && strcmp(own->uid, uid) != 0)
        return kcache_refuse(c, key, obj, api, deleted, own);
    kcache_counts_seen(c, key, deleted); /* its status counts as seen now (or none) */
    if (deleted) {
        c->dirty = true;
        kobj_pg_free(strmap_del(&c->pgs, key));
        kcache_adopt_refused(c, key);
        return 0;
    }
    struct kpg *g = NULL;
    int rc = kcache_pg_decode(obj, api, &g);
    if (own && g)
        g->api = kcache_pg_api(own->api, api);
    c->dirty |= !own || !g || !kobj_pg_same(own, g); /* not for the echo of a status write */
    if (rc != 0 || !g)
        return rc;
    void *old = NULL;
    if (strmap_put(&c->pgs, key, g, &old) != 0) {
        kobj_pg_free(g);
        return SCHED_ENOMEM;
    }
    kobj_pg_free(old);
    kcache_refused_drop(c, key, api, uid);
    return 0;
}

int kcache_slice_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    c->nodes_dirty = c->dirty = true;
    return kclaims_slice_event(c->dra, obj, deleted);
}

int kcache_class_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    c->dirty = true;
    return kclaims_class_event(c->dra, obj, deleted);
}

int kcache_cd_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    c->dirty = true;
    return kcd_event(kclaims_cd(c->dra), obj, deleted);
}

int kcache_claim_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    c->dirty = true;
    return kclaims_claim_event(c->dra, obj, deleted);
}

const struct kclaim *kcache_claim(const struct kcache *c, const char *key)
{
    return kclaims_get(c->dra, key);
}

const struct kdra_class *kcache_ext_class(const struct kcache *c, const struct kpod *p)
{
    return kclaims_ext_class(c->dra, p);
}

const struct kclaim *kcache_ext_of(const struct kcache *c, const char *uid)
{
    return kclaims_ext_of(c->dra, uid);
}

int kcache_claim_adopted(struct kcache *c, const char *key, const char *uid)
{
    return kclaims_adopted(c->dra, key, uid);
}

const char *kcache_cd_channel(const struct kcache *c, const char *node, const char **driver,
                              const char **pool)
{
    return kcd_channel(kclaims_cd(c->dra), node, driver, pool);
}

bool kcache_claim_subs(const struct kcache *c, const struct kclaim *x, const char *node,
                       uint8_t *sub)
{
    return kclaims_subs(c->dra, x, node, sub);
}

int kcache_mig_pick(const struct kcache *c, const char *key, const char *node, const char **dev,
                    const char **drv, const char **pool, uint32_t n_max, uint32_t *n, uint8_t *sub)
{
    return kclaims_mig_pick(c->dra, key, node, dev, drv, pool, n_max, n, sub);
}

void kcache_mig_release(const struct kcache *c, const char *key)
{
    kclaims_mig_release(c->dra, key);
}

const char *kcache_dra_device(const struct kcache *c, const char *node, uint32_t index,
                              const char **driver, const char **pool)
{
    return dra_inv_device(kclaims_inv(c->dra), node, index, driver, pool, NULL);
}

int kcache_assume(struct kcache *c, const char *pod_key, const char *node, uint32_t gpu_mask,
                  uint32_t flavor)
{
    struct kassume *a = calloc(1, sizeof(*a));
    if (!a || !(a->node = strdup(node))) {
        free(a);
        return SCHED_ENOMEM;
    }
    a->gpu_mask = gpu_mask;
    a->flavor = flavor;
    const struct kpod *p = strmap_get(&c->pods, pod_key);
    kcache_use_pod(c, p, -1);
    void *old = NULL;
    if (strmap_put(&c->assumed, pod_key, a, &old) != 0) {
        free_assume(a);
        kcache_use_pod(c, p, 1);
        return SCHED_ENOMEM;
    }
    free_assume(old);
    kcache_use_pod(c, p, 1);
    c->dirty = true;
    return 0;
}

void kcache_unassume(struct kcache *c, const char *pod_key)
{
    const struct kpod *p = strmap_get(&c->pods, pod_key);
    kcache_use_pod(c, p, -1);
    free_assume(strmap_del(&c->assumed, pod_key));
    kcache_use_pod(c, p, 1);
    c->dirty = true;
}

bool kcache_dirty(const struct kcache *c)
{
    return c->dirty;
}

uint32_t kcache_n_nodes(const struct kcache *c)
{
    return (uint32_t)c->nodes.n;
}

uint32_t kcache_n_pods(const struct kcache *c)
{
    return (uint32_t)c->pods.n;
}

const struct kpod *kcache_pod(const struct kcache *c, const char *key)
{
    return strmap_get(&c->pods, key);
}

void kcache_each_pod(const struct kcache *c, void (*fn)(void *ctx, const struct kpod *p), void *ctx)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->pods, &i, &k, &v);)
        fn(ctx, v);
}

const char *kcache_node_uid(const struct kcache *c, const char *name)
{
    const struct nodes_rec *r = strmap_get(&c->nodes, name);
    return r ? r->uid : NULL;
}

const struct kpg *kcache_pg(const struct kcache *c, const char *key)
{
    return strmap_get(&c->pgs, key);
}
