/* sched/core/place_share.c: GPU shares (HAMi's model) in the cycle's placement (see place.h).
 *
 * A share gang is one whose pods ask for nvidia.com/gpumem, nvidia.com/gpumem-percentage or
 * nvidia.com/gpucores: each pod takes nvidia.com/gpu devices (1 when it names none, as HAMi's
 * webhook defaults it), each holding one share of gpumem MiB (or the percentage of the device's
 * memory; neither = the whole memory) and gpucores percent. Devices and their capacity are the
 * node's HAMi register (hami.io/node-nvidia-register); a node's usage is charged from the
 * running share gangs of the snapshot (their pods' devices, sched_snapshot.shares) when the
 * sync of the placement base restores the node (place_base.h), kept with the base until the
 * node is next marked, and changed in place by this cycle's placements. So a cycle charges the
 * shares of the nodes that changed, not of every node holding one: the shares on a node change
 * only with its node_state, which the driver touches.
 *
 * Rules kept here:
 *  - a device holding any share is out of gpu_free (no whole-device pod takes it) and counts one
 *    GPU in free[RES_GPU] however many shares it holds (the drivers count nvidia.com/gpu per pod:
 *    the surplus is given back at build time);
 *  - a share pod never uses a device held whole by another pod (not in gpu_free, no share);
 *  - a gang is placed whole or not at all: every pod through gs_place_gang (node and device
 *    policy, gpushare.h) with its cpu and memory applied before the next pod is chosen, and on
 *    failure every pod undone (the share log below, the placement log of place.c);
 *  - the share resources themselves are never compared with node allocatable (no node
 *    advertises them): only the devices' capacity decides.
 * Not done here: preemption never frees shares (place_release skips share gangs), starvation
 * reservations are not taken for share gangs, and the per-pod device filters
 * (nvidia.com/use-gpuuuid, use-gputype) are not applied.
 *
 * Must not touch: the snapshot (read only), nodes without a register (they take no shares).
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/hami.h"
#include "sched/core/place.h"
#include "sched/core/place_internal.h"

enum { SH_MEM = 0, SH_MEM_PCT = 1, SH_CORES = 2 };

/* One pod of `ps` as a device request. */
static struct gs_req share_req(const struct place_state *st, const struct podset *ps)
{
    const int64_t *v = ps->req.v;
    int64_t devs = v[RES_GPU] > 0 ? v[RES_GPU] : 1;
    int64_t pct = st->share_res[SH_MEM_PCT] >= 0 ? v[st->share_res[SH_MEM_PCT]] : 0;
    int64_t cores = st->share_res[SH_CORES] >= 0 ? v[st->share_res[SH_CORES]] : 0;
    return (struct gs_req){
        .devs = devs > NODE_MAX_GPUS ? NODE_MAX_GPUS + 1 : (uint32_t)devs,
        .mem_mib = st->share_res[SH_MEM] >= 0 ? v[st->share_res[SH_MEM]] : 0,
        .mem_pct = pct > 100 ? 100 : (int32_t)pct,
        .cores = cores > GS_CORES_FULL ? GS_CORES_FULL : (int32_t)cores,
        .allowed = GS_ALL_DEVICES,
    };
}

/* The request of `ps` without the share resources and devices: what node allocatable holds. */
static void plain_req(const struct place_state *st, const struct podset *ps, struct res_vec *out)
{
    *out = ps->req;
    out->v[RES_GPU] = 0;
    for (int k = 0; k < 3; k++)
        if (st->share_res[k] >= 0)
            out->v[st->share_res[k]] = 0;
}

/* Devices of gs entry k that hold some share. */
static uint32_t shared_devs(const struct gs_node *n)
{
    uint32_t m = 0;
    for (uint8_t d = 0; d < n->n_devs; d++)
        if (n->dev[d].tasks > 0)
            m |= 1u << d;
    return m;
}

/* The registers of the cluster, parsed once per place_base (the cluster never changes under
 * it): capacity per registered node (usage zero), their node indices, each node's entry; the
 * usage kept between cycles (st->gs); per node, scratch flags of the nodes being charged. */
struct place_share_cache {
    uint32_t n_gs, max_devs;
    int64_t max_mem;
    int32_t *gs_of;
    uint32_t *gs_node;
    struct gs_node *cap, *use;
    uint8_t *fresh;
};

static struct place_share_cache *cache_build(const struct cluster *c, uint32_t n_reg,
                                             struct arena *a)
{
    size_t bytes = sizeof(struct place_share_cache) + c->n_nodes * (sizeof(int32_t) + 1) +
                   n_reg * (sizeof(uint32_t) + 2 * sizeof(struct gs_node)) + 64;
    char *m = a ? arena_alloc(a, bytes) : malloc(bytes);
    if (!m)
        return NULL;
    struct place_share_cache *sc = (struct place_share_cache *)(void *)m;
    memset(sc, 0, sizeof(*sc));
    /* gs_node structs first after the header (8-byte aligned members), then the index arrays */
    size_t at = (sizeof(*sc) + 15) & ~(size_t)15;
    sc->cap = (struct gs_node *)(void *)(m + at);
    sc->use = sc->cap + n_reg;
    sc->gs_node = (uint32_t *)(void *)(sc->use + n_reg);
    sc->gs_of = (int32_t *)(void *)(sc->gs_node + n_reg);
    sc->fresh = (uint8_t *)(sc->gs_of + c->n_nodes);
    memset(sc->fresh, 0, c->n_nodes);
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        const struct node *nd = &c->nodes[i];
        const char *reg_s = node_annotation(nd, HAMI_NODE_REGISTER);
        sc->gs_of[i] = -1;
        struct hami_reg reg;
        struct sched_errbuf eb = {0};
        if (!reg_s || hami_parse_register(reg_s, &reg, &eb) != 0)
            continue; /* a bad register was reported when the node was read: no shares */
        struct gs_node *n = &sc->cap[sc->n_gs];
        hami_reg_node(&reg, n);
        if (n->n_devs > nd->n_gpus) /* devices past the ones the node offers are not used */
            n->n_devs = nd->n_gpus;
        sc->gs_node[sc->n_gs] = i;
        sc->gs_of[i] = (int32_t)sc->n_gs++;
        if (!nd->ready || nd->unschedulable)
            continue;
        for (uint8_t d = 0; d < n->n_devs; d++)
            if (n->dev[d].healthy && n->dev[d].mem_total > sc->max_mem)
                sc->max_mem = n->dev[d].mem_total;
        if (n->n_devs > sc->max_devs)
            sc->max_devs = n->n_devs;
    }
    return sc;
}

/* Node of the k-th entry of the nodes being charged: the list, or every node when NULL. */
static uint32_t charged_node(const uint32_t *nodes, uint32_t k)
{
    return nodes ? nodes[k] : k;
}

/* Charges the running share pods on the n nodes of `nodes` (NULL: every node), which the sync
 * has just restored from their node_state: their devices' usage, the share resources the driver
 * counted against the node given back (no node has them), each device holding a share one GPU
 * (the driver counted nvidia.com/gpu per pod) and out of gpu_free; nodes that may take pods
 * into their bucket's shared set. Nothing is marked: the charge stays until the node is. */
static void charge_running(struct place_state *st, const struct sched_snapshot *snap,
                           const uint32_t *nodes, uint32_t n)
{
    struct place_share_cache *sc = st->b->share_cache;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = charged_node(nodes, k);
        sc->fresh[i] = 1;
        if (st->gs_of[i] >= 0) /* usage rebuilt from what runs */
            st->gs[st->gs_of[i]] = sc->cap[st->gs_of[i]];
    }
    for (uint32_t r = 0; r < snap->n_shares; r++) {
        const struct sched_running *run = &snap->shares[r];
        const struct gang *g = run->gang;
        if (!place_is_share(st, g))
            continue;
        uint32_t k = 0;
        for (uint32_t s = 0; s < g->n_sets; s++) {
            struct gs_req q = {0}; /* the set's device request, made for its first charged pod */
            for (uint32_t p = 0; p < g->sets[s].count; p++, k++) {
                uint32_t i = run->pods[k].node;
                if (i >= st->c->n_nodes || !sc->fresh[i])
                    continue;
                if (q.devs == 0)
                    q = share_req(st, &g->sets[s]);
                for (int x = 0; x < 3; x++)
                    if (st->share_res[x] >= 0)
                        st->free[i].v[st->share_res[x]] += g->sets[s].req.v[st->share_res[x]];
                if (st->gs_of[i] < 0)
                    continue;
                struct gs_node *gn = &st->gs[st->gs_of[i]];
                gs_take(gn, &q, run->pods[k].gpu_mask & bits_low32(gn->n_devs), 1);
                st->free[i].v[RES_GPU] += g->sets[s].req.v[RES_GPU];
            }
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = charged_node(nodes, k);
        sc->fresh[i] = 0;
        uint32_t sh = st->gs_of[i] >= 0 ? shared_devs(&st->gs[st->gs_of[i]]) : 0;
        if (!sh)
            continue;
        st->free[i].v[RES_GPU] -= bits_popc32(sh);
        st->gpu_free[i] &= ~sh;
        if (st->ok[i])
            pb_link_shared(st->b, i);
    }
}

int place_share_build(struct place_state *st, const struct sched_snapshot *snap)
{
    const struct cluster *c = st->c;
    st->share_res[SH_MEM] = res_lookup(HAMI_RES_MEM);
    st->share_res[SH_MEM_PCT] = res_lookup(HAMI_RES_MEM_PCT);
    st->share_res[SH_CORES] = res_lookup(HAMI_RES_CORES);
    st->n_gs = 0;
    if (st->share_res[0] < 0 && st->share_res[1] < 0 && st->share_res[2] < 0)
        return 0; /* nothing ever asked for a share: no cost for plain clusters */
    struct place_share_cache *sc = st->b->share_cache;
    bool first = !sc; /* no node was charged yet: every node is as the sync left it */
    if (first) {
        uint32_t n_reg = 0;
        for (uint32_t i = 0; i < c->n_nodes; i++)
            n_reg += node_annotation(&c->nodes[i], HAMI_NODE_REGISTER) != NULL;
        sc = cache_build(c, n_reg, st->b->owned ? NULL : st->arena);
        if (!sc)
            return SCHED_ENOMEM;
        st->b->share_cache = sc;
    }
    if (sc->n_gs == 0)
        return 0;
    st->gs = sc->use;
    st->n_gs = sc->n_gs;
    st->gs_of = sc->gs_of;
    st->gs_node = sc->gs_node;
    st->gs_max_mem = sc->max_mem;
    st->gs_max_devs = sc->max_devs;
    uint32_t n_synced;
    const uint32_t *synced = pb_synced(st->b, &n_synced);
    if (first)
        charge_running(st, snap, NULL, c->n_nodes);
    else if (n_synced > 0)
        charge_running(st, snap, synced, n_synced);
    return 0;
}

struct elig_ctx {
    struct place_state *st;
    uint32_t set;
    const struct res_vec *plain;
};

/* gs_eligible_fn: node filters, cpu and memory now, and the devices not held whole. */
static uint32_t share_eligible(void *ctx, uint32_t pod, uint32_t k)
{
    const struct elig_ctx *e = ctx;
    (void)pod;
    uint32_t i = e->st->gs_node[k];
    if (!place_eligible(e->st, e->set, i) || !res_fits(e->plain, &e->st->free[i]))
        return 0;
    return e->st->gpu_free[i] | shared_devs(&e->st->gs[k]);
}

static bool log_share(struct place_state *st, uint32_t k, uint32_t mask, const struct gs_req *q)
{
    struct place_gs_undo *log =
        arena_grow(st->arena, st->gs_log, st->n_gs_log, &st->cap_gs_log, sizeof(*log));
    if (!log)
        return false;
    st->gs_log = log;
    st->gs_log[st->n_gs_log++] = (struct place_gs_undo){.k = k, .mask = mask, .req = *q};
    return true;
}

/* One pod of set s onto the node and devices the policies prefer; false when none holds it. */
static bool place_share_pod(struct place_state *st, const struct gang *g, uint32_t s,
                            const struct res_vec *plain, const struct gs_req *q,
                            struct sched_assign *out)
{
    struct elig_ctx e = {.st = st, .set = s, .plain = plain};
    enum gs_policy np =
        g->share_node_pol ? (enum gs_policy)(g->share_node_pol - 1) : st->share_node_default;
    enum gs_policy gp =
        g->share_gpu_pol ? (enum gs_policy)(g->share_gpu_pol - 1) : st->share_gpu_default;
    struct gs_assign a;
    if (!gs_place_gang(st->gs, st->n_gs, q, 1, share_eligible, &e, np, gp, &a))
        return false;
    uint32_t i = st->gs_node[a.node];
    if (!log_share(st, (uint32_t)a.node, a.mask, q)) {
        gs_take(&st->gs[a.node], q, a.mask, -1);
        return false;
    }
    /* cpu and memory, and the devices newly taken from whole-device use (one GPU each) */
    uint32_t fresh = a.mask & st->gpu_free[i];
    struct res_vec *take = arena_alloc(st->arena, sizeof(*take));
    if (!take)
        return false;
    *take = *plain;
    take->v[RES_GPU] = bits_popc32(fresh);
    if (!place_apply(st, i, fresh, take))
        return false;
    *out = (struct sched_assign){.node = i, .gpu_mask = a.mask};
    return true;
}

enum sched_why place_share(struct place_state *st, const struct gang *g, struct sched_assign *out)
{
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++) {
        const struct podset *ps = &g->sets[s];
        struct res_vec plain;
        plain_req(st, ps, &plain);
        struct gs_req q = share_req(st, ps);
        for (uint32_t p = 0; p < ps->count; p++, k++)
            if (!place_share_pod(st, g, s, &plain, &q, &out[k]))
                return SCHED_WHY_RESOURCES; /* the caller rolls back every pod */
    }
    return SCHED_WHY_PLACED;
}

void place_share_rollback(struct place_state *st)
{
    while (st->n_gs_log > 0) {
        const struct place_gs_undo *u = &st->gs_log[--st->n_gs_log];
        gs_take(&st->gs[u->k], &u->req, u->mask, -1);
    }
}

bool place_share_never_fits(const struct place_state *st, const struct gang *g, int *short_res)
{
    for (uint32_t s = 0; s < g->n_sets; s++) {
        struct res_vec plain;
        plain_req(st, &g->sets[s], &plain);
        int r = res_first_short(&plain, &st->max_alloc);
        struct gs_req q = share_req(st, &g->sets[s]);
        if (r < 0 && q.devs > st->gs_max_devs)
            r = RES_GPU;
        if (r < 0 && q.mem_mib > st->gs_max_mem)
            r = st->share_res[SH_MEM];
        if (r >= 0) {
            *short_res = r;
            return true;
        }
    }
    return false;
}

bool place_share_never_fits_any_node(const struct place_state *st, const struct gang *g,
                                     int *short_res)
{
    for (uint32_t s = 0; s < g->n_sets; s++) {
        struct res_vec plain;
        plain_req(st, &g->sets[s], &plain);
        struct gs_req q = share_req(st, &g->sets[s]);
        bool any = false;
        for (uint32_t k = 0; k < st->n_gs && !any; k++) {
            const struct node *nd = &st->c->nodes[st->gs_node[k]];
            if (!nd->ready || nd->unschedulable || !res_fits(&plain, &nd->alloc))
                continue;
            struct gs_node empty = st->gs[k]; /* capacity only */
            for (uint8_t d = 0; d < empty.n_devs; d++) {
                empty.dev[d].mem_used = 0;
                empty.dev[d].cores_used = 0;
                empty.dev[d].tasks = 0;
            }
            any = gs_pick(&empty, &q, GS_SPREAD) != 0;
        }
        if (!any) {
            *short_res = st->share_res[SH_MEM] >= 0 ? st->share_res[SH_MEM] : RES_GPU;
            return true;
        }
    }
    return false;
}

void place_share_diagnose(const struct place_state *st, const struct gang *g,
                          struct sched_verdict *v)
{
    /* The wait names what most usable devices lack for one pod of the first set (memory, cores,
     * or a free task slot: nvidia.com/gpu), with the most of it free on one device now. */
    const struct podset *ps = &g->sets[0];
    struct gs_req q = share_req(st, ps);
    int ids[3] = {st->share_res[SH_MEM], st->share_res[SH_CORES], RES_GPU};
    uint32_t lack[3] = {0};
    int64_t most[3] = {0};
    for (uint32_t k = 0; k < st->n_gs; k++) {
        const struct gs_node *n = &st->gs[k];
        uint32_t i = st->gs_node[k];
        if (!st->ok[i])
            continue;
        uint32_t usable = (st->gpu_free[i] | shared_devs(n)) & bits_low32(n->n_devs);
        for (uint8_t d = 0; d < n->n_devs; d++) {
            const struct gs_dev *dv = &n->dev[d];
            if (!(usable & (1u << d)) || !dv->healthy)
                continue;
            int64_t f[3] = {dv->mem_total - dv->mem_used, dv->cores_total - dv->cores_used,
                            dv->split > 0 ? dv->split - dv->tasks : 1};
            int64_t need[3] = {gs_mem_need(dv, &q), q.cores, 1};
            for (int x = 0; x < 3; x++) {
                lack[x] += f[x] < need[x];
                most[x] = f[x] > most[x] ? f[x] : most[x];
            }
        }
    }
    int w = 0;
    for (int x = 1; x < 3; x++)
        if (lack[x] > lack[w] || ids[w] < 0)
            w = x;
    if (ids[w] < 0)
        w = 2;
    v->short_res = ids[w];
    v->need = w == 2 ? (int64_t)q.devs : ps->req.v[ids[w]];
    v->best_free = most[w];
}
