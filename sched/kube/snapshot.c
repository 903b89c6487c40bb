/* sched/kube/snapshot.c: the cluster the cache builds from its decoded nodes, and the placement
 * state kept from one cycle to the next (see cache.h, cache_int.h).
 *
 * The cluster is rebuilt only when a node or the configuration changed. The placement state
 * (sched/core/place_base.h) lives as long as one cluster: at each cycle the node_state the
 * cache built is compared with the one the base last saw, node by node, and every node that
 * differs (a pod started or ended on it, it went down or came back, a quarantine began or
 * ended) is touched, so that the core restores only those (plus the nodes its last cycle
 * changed). A new cluster gets a new base, synced whole at its first cycle.
 *
 * Must not touch: the network, the store, the configuration file.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/core/podaff.h"
#include "sched/k8s/nodes.h"
#include "sched/kube/cache_int.h"
#include "sched/kube/claims.h"
#include "sched/kube/computedomain.h"
#include "sched/kube/dra.h"
#include "sched/kube/mig.h"

const struct cluster *kcache_cluster(const struct kcache *c)
{
    return c->cluster;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Rebuilds the cluster from the decoded nodes, sorted by name (the same nodes always give the
 * same indices). */
int kcache_rebuild_cluster(struct kcache *c, const struct config *cfg, struct sched_errbuf *eb)
{
    size_t n = c->nodes.n;
    const char **names = calloc(n ? n : 1, sizeof(*names));
    struct cluster *cl = cluster_new();
    if (!names || !cl) {
        free(names);
        cluster_free(cl);
        return SCHED_ENOMEM;
    }
    size_t k = 0;
    const char *key;
    for (size_t i = 0; strmap_next(&c->nodes, &i, &key, NULL);)
        names[k++] = key;
    qsort(names, k, sizeof(*names), cmp_str);
    for (size_t i = 0; i < k; i++)
        if (nodes_rec_add(cl, strmap_get(&c->nodes, names[i])) != 0) {
            free(names);
            cluster_free(cl);
            return SCHED_ENOMEM;
        }
    free(names);
    kclaims_configure(c->dra, cfg);                   /* quotaMapping of the GPU DeviceClass */
    if (dra_inv_apply(kclaims_inv(c->dra), cl) < 0 || /* DRA-only nodes' GPUs (core/dra.h) */
        kcd_apply(kclaims_cd(c->dra), cl) < 0 ||      /* IMEX channels (computedomain.h) */
        kmig_apply(kclaims_mig(c->dra), cl) < 0) {    /* MIG devices (mig.h) */
        cluster_free(cl);
        return SCHED_ENOMEM;
    }
    int rc = cluster_finalize(cl, cfg && cfg->n_levels ? cfg->level_names : NULL,
                              cfg && cfg->n_levels ? cfg->level_labels : NULL,
                              cfg ? cfg->n_levels : 0, eb);
    if (rc != 0) {
        cluster_free(cl);
        return rc;
    }
    strmap_fini(&c->node_ix);
    strmap_init(&c->node_ix);
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (strmap_put(&c->node_ix, cl->nodes[i].name, (void *)(uintptr_t)(i + 1), NULL) != 0) {
            cluster_free(cl);
            return SCHED_ENOMEM;
        }
    cluster_free(c->cluster);
    c->cluster = cl;
    c->nodes_dirty = false;
    c->cluster_cfg = cfg ? cfg->version : 0;
    c->cluster_gen++;
    return 0;
}

int kcache_node_index(const struct kcache *c, const char *name)
{
    uintptr_t v = (uintptr_t)strmap_get(&c->node_ix, name);
    return v ? (int)(v - 1) : -1;
}

void kcache_base_free(struct kcache *c)
{
    place_base_free(c->base);
    free(c->kept);
    c->base = NULL;
    c->kept = NULL;
}

static bool same_state(const struct node_state *a, const struct node_state *b)
{
    return a->gpu_used == b->gpu_used && a->release_ms == b->release_ms &&
           a->not_ready == b->not_ready && a->quarantined == b->quarantined &&
           memcmp(&a->used, &b->used, sizeof(a->used)) == 0;
}

int kcache_base(struct kcache *c, struct kcache_build *kb)
{
    const struct cluster *cl = kb->snap.cluster;
    kb->snap.base = NULL;
    if (!cl || cl != c->cluster)
        return 0;
    uint32_t n = cl->n_nodes;
    if (!c->base || c->base_gen != c->cluster_gen) {
        kcache_base_free(c);
        c->base = place_base_new(cl); /* every node synced at its first cycle */
        c->kept = malloc((n ? n : 1) * sizeof(*c->kept));
        if (!c->base || !c->kept) {
            kcache_base_free(c);
            return SCHED_ENOMEM;
        }
        if (n)
            memcpy(c->kept, kb->state, n * sizeof(*c->kept));
        c->base_gen = c->cluster_gen;
    } else {
        for (uint32_t i = 0; i < n; i++)
            if (!same_state(&c->kept[i], &kb->state[i])) {
                place_base_touch(c->base, i);
                c->kept[i] = kb->state[i];
            }
    }
    kb->snap.base = c->base;
    return 0;
}

/* ---- node usage kept by deltas -------------------------------------------------------------- */

/* A pod whose usage is counted at each build: its claims decide its requests and GPUs. */
bool kcache_claim_pod(const struct kpod *p)
{
    return p->n_claims || p->claim_wait || p->ext_claim;
}

bool kcache_foreign_pod(const struct kpod *p)
{
    return !p->ours && p->native && p->group;
}

/* The node p holds (bound, else assumed) and its GPU ids; NULL when none. */
static const char *held_node(const struct kcache *c, const struct kpod *p, uint32_t *mask,
                             bool *has_ids)
{
    if (p->phase == KPOD_SUCCEEDED || p->phase == KPOD_FAILED)
        return NULL;
    *mask = p->gpu_mask;
    *has_ids = p->has_gpu_ids;
    if (p->node)
        return p->node;
    const struct kassume *as = strmap_get(&c->assumed, p->key);
    if (!as)
        return NULL;
    *mask = as->gpu_mask;
    *has_ids = true;
    return as->node;
}

void kcache_use_pod(struct kcache *c, const struct kpod *p, int sign)
{
    uint32_t mask = 0;
    bool has_ids = false;
    const char *node = p && !kcache_claim_pod(p) ? held_node(c, p, &mask, &has_ids) : NULL;
    if (!node || c->use_all)
        return;
    struct knode_use *u = strmap_get(&c->use, node);
    if (!u && sign > 0) {
        u = calloc(1, sizeof(*u));
        if (!u || strmap_put(&c->use, node, u, NULL) != 0) {
            free(u);
            c->use_all = true; /* counted again from every pod at the next build */
            return;
        }
        c->use_new = true;
    }
    if (!u) { /* uncounting a pod never counted: the counts are off, count again */
        c->use_all = true;
        return;
    }
    if (sign > 0)
        res_add(&u->used, &p->req);
    else
        res_sub(&u->used, &p->req);
    if (has_ids) {
        for (uint32_t g = 0; g < 32; g++)
            if (mask & (1u << g))
                u->ids[g] += sign > 0 ? 1u : (uint32_t)-1;
    } else if (p->req.v[RES_GPU] > 0) {
        u->anon += sign > 0 ? p->req.v[RES_GPU] : -p->req.v[RES_GPU];
    }
}

static void use_clear(struct kcache *c)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->use, &i, &k, &v);)
        free(v);
    strmap_fini(&c->use);
    strmap_init(&c->use);
    free(c->use_ix);
    c->use_ix = NULL;
    c->use_ix_gen = 0;
}

void kcache_use_free(struct kcache *c)
{
    use_clear(c);
    strmap_fini(&c->use);
    strmap_fini(&c->hot);
}

void kcache_hot_pod(struct kcache *c, const char *key, struct kpod *p)
{
    const struct kpod *old = NULL; /* still alive: its object is freed after this */
    if (p && (p->ours || kcache_claim_pod(p) || (p->native && p->group))) {
        if (strmap_put(&c->hot, key, p, (void **)&old) != 0) {
            c->hot_all = true; /* old is NULL: key was not there */
        } else {
            c->hot_claims += kcache_claim_pod(p);
            c->hot_foreign += kcache_foreign_pod(p);
        }
    } else {
        old = strmap_del(&c->hot, key);
    }
    if (old) {
        c->hot_claims -= kcache_claim_pod(old);
        c->hot_foreign -= kcache_foreign_pod(old);
    }
}

void kcache_set_full(struct kcache *c, bool full)
{
    c->full = full;
}

const struct strmap *kcache_hot(struct kcache *c)
{
    if (c->full)
        return &c->pods;
    if (c->hot_all) {
        strmap_fini(&c->hot);
        strmap_init(&c->hot);
        c->hot_all = false;
        c->hot_claims = c->hot_foreign = 0;
        const char *key;
        void *v;
        for (size_t i = 0; strmap_next(&c->pods, &i, &key, &v);)
            kcache_hot_pod(c, key, v);
    }
    return &c->hot;
}

void kcache_each_gang_pod(struct kcache *c, const char *key,
                          void (*fn)(void *ctx, const struct kpod *p), void *ctx)
{
    const struct kpod *own = strmap_get(&c->pods, key);
    if (own && !own->group) { /* a gang of one */
        fn(ctx, own);
        return;
    }
    const struct strmap *hot = kcache_hot(c); /* a group's pods are ours: hot */
    const char *k;
    void *v;
    char tree[KOBJ_KEY_MAX];
    bool is_tree = strstr(key, "/cpg:") != NULL; /* a CompositePodGroup's (cache_cpg.c) */
    for (size_t i = 0; strmap_next(hot, &i, &k, &v);) {
        const struct kpod *p = v;
        const struct kpg *pg;
        const char *why;
        bool cpg;
        if (p->group &&
            strcmp(is_tree ? kcache_gang_of(c, p, tree, sizeof(tree), &pg, &cpg, &why) : p->group,
                   key) == 0)
            fn(ctx, p);
    }
}

/* use_ix for the current cluster; false on out of memory (use_ix NULL). */
static bool use_index(struct kcache *c)
{
    const struct cluster *cl = c->cluster;
    if (c->use_ix && c->use_ix_gen == c->cluster_gen && !c->use_new)
        return true;
    free(c->use_ix);
    c->use_ix = calloc(cl->n_nodes ? cl->n_nodes : 1, sizeof(*c->use_ix));
    if (!c->use_ix)
        return false;
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        c->use_ix[i] = strmap_get(&c->use, cl->nodes[i].name);
    c->use_ix_gen = c->cluster_gen;
    c->use_new = false;
    return true;
}

static int node_ix(const void *c, const char *name)
{
    return kcache_node_index(c, name);
}

/* Appends a pod to the list; false on out of memory. */
static bool bound_add(struct arena *a, struct sched_pod **out, uint32_t *n, uint32_t *cap,
                      struct sched_pod p)
{
    if (*n == *cap && !(*out = arena_grow(a, *out, *n, cap, sizeof(**out))))
        return false;
    (*out)[(*n)++] = p;
    return true;
}

int kcache_bound_pods(struct kcache *c, struct kcache_build *b, struct arena *a)
{
    bool rules = c->n_rule_pods > 0;
    for (uint32_t i = 0; i < b->n_pending && !rules; i++)
        for (uint32_t s = 0; s < b->gangs[i].gang.n_sets; s++)
            rules |= podaff_constrains(b->gangs[i].gang.sets[s].meta) ||
                     podaff_prefers(b->gangs[i].gang.sets[s].meta);
    if (!rules)
        return 0;
    struct sched_pod *out = NULL;
    uint32_t n = 0, cap = 0, gen = ++c->list_gen;
    /* the running gangs' pods first, each with its pod set (a preemption plan that takes the
     * gang lifts its rules, place_pods.c) */
    for (uint32_t i = b->n_pending; i < b->n_gangs; i++) {
        const struct kgang *kg = &b->gangs[i];
        for (uint32_t s = 0, k = 0; s < kg->gang.n_sets; s++)
            for (uint32_t x = 0; x < kg->gang.sets[s].count; x++, k++) {
                struct kpod *p = kg->members[k];
                p->listed = gen;
                if (kg->nodes && kg->nodes[k] != UINT32_MAX &&
                    !bound_add(a, &out, &n, &cap,
                               (struct sched_pod){.node = kg->nodes[k],
                                                  .meta = p->meta,
                                                  .deleting = p->deleting,
                                                  .set = &kg->gang.sets[s]}))
                    return SCHED_ENOMEM;
            }
    }
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&c->pods, &i, &key, &v);) {
        const struct kpod *p = v;
        uint32_t mask;
        bool has_ids;
        const char *node = p->listed == gen ? NULL : held_node(c, p, &mask, &has_ids);
        int ix = node ? kcache_node_index(c, node) : -1;
        if (ix >= 0 &&
            !bound_add(
                a, &out, &n, &cap,
                (struct sched_pod){.node = (uint32_t)ix, .meta = p->meta, .deleting = p->deleting}))
            return SCHED_ENOMEM;
    }
    b->snap.bound_pods = out;
    b->snap.n_bound_pods = n;
    return 0;
}

void kcache_usage(struct kcache *c, struct node_state *state, int64_t *anon)
{
    const struct cluster *cl = c->cluster;
    const char *key;
    void *v;
    if (c->use_all || c->full) { /* every pod counted again */
        use_clear(c);
        c->use_all = false;
        for (size_t i = 0; strmap_next(&c->pods, &i, &key, &v);)
            kcache_use_pod(c, v, 1);
    }
    bool ix = use_index(c);
    for (uint32_t i = 0; i < cl->n_nodes; i++) {
        const struct knode_use *u = ix ? c->use_ix[i] : strmap_get(&c->use, cl->nodes[i].name);
        if (!u)
            continue;
        state[i].used = u->used;
        for (uint32_t g = 0; g < 32; g++)
            if (u->ids[g])
                state[i].gpu_used |= 1u << g;
        anon[i] = u->anon;
    }
    const struct strmap *hot = kcache_hot(c); /* its pods with claims, when it has some */
    for (size_t i = 0; (c->full || c->hot_claims) && strmap_next(hot, &i, &key, &v);) {
        const struct kpod *p = v;
        uint32_t mask = 0;
        bool has_ids = false;
        const char *node = kcache_claim_pod(p) ? held_node(c, p, &mask, &has_ids) : NULL;
        int n = node ? kcache_node_index(c, node) : -1;
        if (n < 0)
            continue;
        kclaims_note_counted(c->dra, p); /* its claims count through it, not again below */
        if (!has_ids && (p->n_claims || p->ext_claim)) /* another scheduler's: its claims' */
            has_ids = kclaims_mask(c->dra, p, node, &mask);
        res_add(&state[n].used, &p->req);
        if (has_ids)
            state[n].gpu_used |= mask;
        else if (p->req.v[RES_GPU] > 0)
            anon[n] += p->req.v[RES_GPU];
    }
    /* allocated claims no counted pod holds (idle, reserved for pods not seen or gone, being
     * deleted): their devices, before pods without ids take the lowest free GPUs */
    kclaims_held_use(c->dra, node_ix, c, state);
    for (uint32_t i = 0; i < cl->n_nodes; i++) /* pods without ids: the lowest free GPUs */
        for (uint32_t g = 0; g < cl->nodes[i].n_gpus && anon[i] > 0; g++)
            if (!(state[i].gpu_used & (1u << g))) {
                state[i].gpu_used |= 1u << g;
                anon[i]--;
            }
}
