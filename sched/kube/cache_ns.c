/* sched/kube/cache_ns.c: the labels of every namespace, for the inter-pod terms that select
 * namespaces by them (core/v1 PodAffinityTerm.namespaceSelector; sched/core/podaff.c).
 *
 * Owns: c->nss (namespace name -> struct kns*). A record is made when a namespace or a pod of it
 * is first seen and lives until kcache_free: every pod's meta points at its namespace's labels
 * (pod_meta.ns_labels), whichever event comes first, and a pod may outlive the Namespace object
 * for a while (its namespace is being deleted). A deleted namespace keeps its record with no
 * labels; one that comes back takes it again. Only the labels are kept.
 *
 * Must not touch: the pods (cache.c sets their meta's pointer), the network.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/kube/cache_int.h"

struct kns {
    struct ns_labels nl; /* into mem */
    struct arena mem;
};

const struct ns_labels *kcache_ns_labels(struct kcache *c, const char *name)
{
    if (!name)
        return NULL;
    struct kns *r = strmap_get(&c->nss, name);
    if (r)
        return &r->nl;
    if (!(r = calloc(1, sizeof(*r))))
        return NULL; /* out of memory: its labels are not known */
    arena_init(&r->mem, 256);
    if (strmap_put(&c->nss, name, r, NULL) != 0) {
        free(r);
        return NULL;
    }
    return &r->nl;
}

int kcache_ns_event(struct kcache *c, const cJSON *obj, bool deleted)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
    if (!cJSON_IsString(name) || !name->valuestring[0]) {
        LOG_WARN("kube", "namespace skipped: error=metadata.name missing");
        return 0;
    }
    if (!kcache_ns_labels(c, name->valuestring))
        return SCHED_ENOMEM;
    struct kns *r = strmap_get(&c->nss, name->valuestring);
    struct arena mem;
    arena_init(&mem, 256);
    struct ns_labels nl = {0};
    struct sched_errbuf eb;
    if (!deleted && kobj_kv_copy(cJSON_GetObjectItemCaseSensitive(meta, "labels"), NULL, &mem,
                                 &nl.labels, &nl.n_labels, &eb) != 0) {
        arena_fini(&mem);
        return SCHED_ENOMEM; /* values that are not strings are skipped, not refused */
    }
    arena_fini(&r->mem);
    r->mem = mem;
    r->nl = nl;
    c->dirty = true; /* a term may select other namespaces now */
    return 0;
}

void kcache_ns_free(struct kcache *c)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->nss, &i, &k, &v);) {
        struct kns *r = v;
        arena_fini(&r->mem);
        free(r);
    }
    strmap_fini(&c->nss);
}
