/* sched/kube/driver_eng.c: the daemon's side of the engine (sched/engine/).
 *
 * Owns: the engine of the daemon and its name tables (gangs by "namespace/name", nodes by name,
 * interned to engine ids that are never reused), the cycle's id maps between engine ids and the
 * cycle's input (kb gang index, cluster node index), the callbacks the engine reads them through
 * (struct eng_ids), and the node effects (quarantine, release) carried out as logs and Events.
 *
 * Must not touch: the rules between cycles (they are the engine's), the store, the binder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

int kdrv_eng_init(struct kdrv *d)
{
    struct eng_limits lim;
    eng_limits_default(&lim);
    /* a workload controller recreates the pods of a torn-down gang with its own backoff (a Job's
     * pod failure backoff): the daemon queues them at once, as before the engine */
    lim.backoff_ms = 0;
    d->eng = eng_new(&lim);
    d->gang_ids = eng_names_new();
    d->node_ids = eng_names_new();
    return d->eng && d->gang_ids && d->node_ids ? 0 : SCHED_ENOMEM;
}

void kdrv_eng_fini(struct kdrv *d)
{
    eng_free(d->eng);
    eng_names_free(d->gang_ids);
    eng_names_free(d->node_ids);
    eng_effects_free(&d->fx);
    d->eng = NULL;
    d->gang_ids = d->node_ids = NULL;
}

uint32_t kdrv_gang_id(struct kdrv *d, const char *key)
{
    uint32_t id;
    return key && eng_names_id(d->gang_ids, key, &id) == 0 ? id : ENG_NONE;
}

uint32_t kdrv_node_id(struct kdrv *d, const char *name)
{
    uint32_t id;
    return name && eng_names_id(d->node_ids, name, &id) == 0 ? id : ENG_NONE;
}

/* ---- the cycle's id maps ------------------------------------------------------------------- */

static uint32_t ids_gang(void *ctx, const struct gang *g)
{
    const struct kids *k = ctx;
    return g->id < k->kb->n_gangs ? k->gang[g->id] : ENG_NONE;
}

static uint32_t ids_node(void *ctx, uint32_t core_node)
{
    const struct kids *k = ctx;
    return core_node < k->kb->snap.cluster->n_nodes ? k->node[core_node] : ENG_NONE;
}

static const struct gang *ids_core_gang(void *ctx, uint32_t g, bool *pending)
{
    const struct kids *k = ctx;
    uint32_t ix = g < k->n_core_gang ? k->core_gang[g] : ENG_NONE;
    *pending = ix < k->kb->n_pending;
    return ix < k->kb->n_gangs ? &k->kb->gangs[ix].gang : NULL;
}

static uint32_t ids_core_node(void *ctx, uint32_t n)
{
    const struct kids *k = ctx;
    return n < k->n_core_node ? k->core_node[n] : ENG_NONE;
}

/* An inverse map [n] filled with ENG_NONE. */
static uint32_t *none_map(struct arena *a, uint32_t n)
{
    uint32_t *m = arena_calloc(a, n + 1, sizeof(*m));
    for (uint32_t i = 0; m && i < n; i++)
        m[i] = ENG_NONE;
    return m;
}

int kdrv_ids_build(struct kdrv *d, const struct kcache_build *kb)
{
    const struct cluster *cl = kb->snap.cluster;
    struct kids *k = arena_calloc(&d->arena, 1, sizeof(*k));
    d->ids = NULL;
    if (!k)
        return SCHED_ENOMEM;
    *k = (struct kids){.d = d, .kb = kb};
    k->gang = arena_calloc(&d->arena, kb->n_gangs + 1, sizeof(*k->gang));
    k->node = arena_calloc(&d->arena, cl->n_nodes + 1, sizeof(*k->node));
    if (!k->gang || !k->node)
        return SCHED_ENOMEM;
    for (uint32_t g = 0; g < kb->n_gangs; g++)
        if ((k->gang[g] = kdrv_gang_id(d, kb->gangs[g].key)) == ENG_NONE)
            return SCHED_ENOMEM;
    for (uint32_t n = 0; n < cl->n_nodes; n++)
        if ((k->node[n] = kdrv_node_id(d, cl->nodes[n].name)) == ENG_NONE)
            return SCHED_ENOMEM;
    k->n_core_gang = eng_names_count(d->gang_ids);
    k->n_core_node = eng_names_count(d->node_ids);
    k->core_gang = none_map(&d->arena, k->n_core_gang);
    k->core_node = none_map(&d->arena, k->n_core_node);
    if (!k->core_gang || !k->core_node)
        return SCHED_ENOMEM;
    /* an elastic gang is in kb twice under one key, its pending part first: the engine's gang
     * is that pending part (its reservations, holds and the promises made to it are the
     * waiting gang's), so the running part never overwrites it */
    for (uint32_t g = kb->n_gangs; g-- > 0;)
        k->core_gang[k->gang[g]] = g;
    for (uint32_t n = 0; n < cl->n_nodes; n++)
        k->core_node[k->node[n]] = n;
    k->ids = (struct eng_ids){.ctx = k,
                              .gang = ids_gang,
                              .node = ids_node,
                              .core_gang = ids_core_gang,
                              .core_node = ids_core_node};
    d->ids = k;
    return 0;
}

/* ---- node effects ---------------------------------------------------------------------------- */

void kdrv_node_effects(struct kdrv *d)
{
    const struct eng_limits *lim = eng_limits(d->eng);
    for (uint32_t i = 0; i < d->fx.n; i++) {
        const struct eng_effect *ef = &d->fx.v[i];
        const char *node = eng_names_name(d->node_ids, ef->node);
        if (!node)
            continue;
        if (ef->kind == ENG_FX_RELEASE) {
            LOG_INFO(KDRV_MOD, "node quarantine over: node=%s", node);
            continue;
        }
        if (ef->kind != ENG_FX_QUARANTINE)
            continue;
        char note[300];
        snprintf(note, sizeof(note),
                 "%u failed gang starts within %lld minutes: no new pods for %lld minutes",
                 lim->strikes, (long long)(lim->strike_window_ms / 60000),
                 (long long)(lim->quarantine_ms / 60000));
        LOG_WARN(KDRV_MOD, "node quarantined: node=%s why=%s", node, note);
        kdrv_post_event(d, "v1", "Node", NULL, node, kcache_node_uid(d->cache, node), "Warning",
                        "Quarantined", "Scheduling", note, NULL);
    }
    eng_effects_clear(&d->fx);
}
