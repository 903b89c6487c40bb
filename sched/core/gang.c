/* sched/core/gang.c: derived fields of a gang (pod count, GPU total, shape hash, share flag).
 *
 * Owns: gang_finalize(). The shape hash covers every field that decides where a gang can go, so
 * two gangs with equal shapes get equal placement verdicts within one cycle (the core's
 * equivalence memo; a gang with a required inter-pod affinity term only until the next
 * placement, which may bring the pod it asks for: cycle.c memo_until_placement). It must not
 * cover identity fields (name, queue, priority, submit time).
 */
#include <string.h>

#include "sched/core/hami.h"
#include "sched/core/hash.h"
#include "sched/core/model.h"
#include "sched/core/podaff.h"

static void share_ids(int *ids);

static uint64_t hash_term(uint64_t h, const struct sel_term *term)
{
    h = sched_hash(h, &term->n_reqs, sizeof(term->n_reqs));
    for (uint32_t k = 0; k < term->n_reqs; k++) {
        const struct sel_req *r = &term->reqs[k];
        h = sched_hash_str(h, r->key);
        uint32_t op = (uint32_t)r->op | (r->field ? 0x100u : 0); /* a field is not a label */
        h = sched_hash(h, &op, sizeof(op));
        for (uint32_t v = 0; v < r->n_values; v++)
            h = sched_hash_str(h, r->values[v]);
    }
    return h;
}

void gang_finalize(struct gang *g)
{
    uint64_t h = SCHED_HASH_INIT;
    int ids[3];
    share_ids(ids);
    g->n_pods = 0;
    g->gpus = 0;
    g->share = false;
    g->pref = 0;
    h = sched_hash(h, &g->n_sets, sizeof(g->n_sets));
    h = sched_hash(h, &g->topo_required, sizeof(g->topo_required));
    h = sched_hash(h, &g->topo_preferred, sizeof(g->topo_preferred));
    h = sched_hash(h, &g->max_runtime_ms,
                   sizeof(g->max_runtime_ms)); /* may backfill reservations */
    h = sched_hash(h, &g->tp_size, sizeof(g->tp_size));
    h = sched_hash(h, &g->slice_size, sizeof(g->slice_size));
    h = sched_hash(h, &g->slice_level, sizeof(g->slice_level));
    h = sched_hash(h, &g->spread, sizeof(g->spread));
    if (g->share_node_pol || g->share_gpu_pol) { /* hashed only when set: shapes unchanged */
        h = sched_hash(h, &g->share_node_pol, sizeof(g->share_node_pol));
        h = sched_hash(h, &g->share_gpu_pol, sizeof(g->share_gpu_pol));
    }
    if (g->weights) /* the profile's weights, by value (NULL: the built-in ones, from spread) */
        h = sched_hash(h, g->weights, sizeof(*g->weights) * SCORE_TERMS_MAX);
    for (uint32_t i = 0; i < g->n_sets && i < GANG_MAX_SETS; i++) {
        const struct podset *ps = &g->sets[i];
        g->n_pods += ps->count;
        g->gpus += (int64_t)ps->count * ps->req.v[RES_GPU];
        for (int k = 0; k < 3; k++)
            g->share |= ids[k] >= 0 && ps->req.v[ids[k]] > 0;
        h = sched_hash(h, &ps->count, sizeof(ps->count));
        h = sched_hash(h, ps->req.v, sizeof(ps->req.v[0]) * (size_t)res_count());
        for (uint32_t k = 0; k < ps->n_node_selector; k++) {
            h = sched_hash_str(h, ps->node_selector[k].key);
            h = sched_hash_str(h, ps->node_selector[k].value);
        }
        for (uint32_t t = 0; t < ps->n_affinity; t++)
            h = hash_term(h, &ps->affinity[t]);
        if (ps->n_pref) { /* hashed only when set: shapes unchanged */
            uint64_t p = g->pref ? g->pref : SCHED_HASH_INIT;
            p = sched_hash(p, &i, sizeof(i));
            p = sched_hash(p, &ps->n_pref, sizeof(ps->n_pref));
            for (uint32_t t = 0; t < ps->n_pref; t++) {
                p = sched_hash(p, &ps->pref[t].weight, sizeof(ps->pref[t].weight));
                p = hash_term(p, &ps->pref[t].term);
            }
            g->pref = (p & ~GANG_PREF_FREE) ? p & ~GANG_PREF_FREE : 1;
            h = sched_hash(h, &g->pref, sizeof(g->pref));
        }
        for (uint32_t k = 0; k < ps->n_tolerations; k++) {
            const struct toleration *t = &ps->tolerations[k];
            h = sched_hash_str(h, t->key);
            h = sched_hash_str(h, t->value);
            h = sched_hash(h, &t->op_exists, sizeof(t->op_exists));
            h = sched_hash(h, &t->effect, sizeof(t->effect));
        }
        /* a set's own pod rules, with its labels and namespace (its terms may select itself);
         * the labels of a set without rules count only against bound pods' anti-affinity, which
         * the cycle's memo adds to a failure they took part in (cycle.c labels_key) */
        if (podaff_constrains(ps->meta) || podaff_prefers(ps->meta))
            h = podaff_hash(h, ps->meta);
    }
    g->shape = h;
}

void gang_set_near(struct gang *g, const uint32_t *nodes, uint32_t n)
{
    g->near = n > 0 ? nodes : NULL;
    g->n_near = n > 0 ? n : 0;
    if (n > 0) /* where it may go differs: its verdicts are its own (the cycle's memo) */
        g->shape = sched_hash(g->shape ^ 0x6e656172u, nodes, n * sizeof(*nodes));
}

void gang_set_join(struct gang *g, int64_t last_ckpt_ms, int64_t every_ms, int64_t live_gpus)
{
    g->join_from_ms = g->join_every_ms = g->join_open_ms = g->join_live_gpus = 0;
    if (g->spread || every_ms <= 0 || live_gpus <= 0 || g->gpus <= 0)
        return;
    int64_t open = (int64_t)((double)every_ms * (double)g->gpus / (double)(live_gpus + g->gpus));
    if (open < GANG_JOIN_MIN_OPEN_MS)
        open = GANG_JOIN_MIN_OPEN_MS;
    if (open >= every_ms)
        return; /* always open */
    g->join_from_ms = last_ckpt_ms;
    g->join_every_ms = every_ms;
    g->join_open_ms = open;
    g->join_live_gpus = live_gpus;
}

int64_t gang_join_at(const struct gang *g, int64_t t)
{
    if (g->join_every_ms <= 0 || t <= g->join_from_ms)
        return t;
    int64_t phase = (t - g->join_from_ms) % g->join_every_ms;
    return phase < g->join_open_ms ? t : t + (g->join_every_ms - phase);
}

int64_t gang_join_last(const struct gang *g, int64_t t)
{
    if (g->join_every_ms <= 0)
        return t;
    if (t <= g->join_from_ms)
        return g->join_from_ms;
    return t - (t - g->join_from_ms) % g->join_every_ms;
}

bool gang_join_asks(const struct gang *g, int64_t t, int64_t grace_ms)
{
    if (grace_ms <= 0 || g->join_every_ms <= 0 || t < g->join_from_ms)
        return false;
    int64_t at = gang_join_at(g, t);
    if (at > t) /* waiting idles the members until the window: at - t against the grace */
        return at - t > grace_ms;
    /* in the window: joining now loses the job's progress since its checkpoint, at its live
     * GPUs; asking idles the members for the grace at most (GPU-ms each side) */
    double lost = (double)(t - gang_join_last(g, t)) * (double)g->join_live_gpus;
    return lost > (double)grace_ms * (double)g->gpus;
}

int64_t gang_join_asked(const struct gang *g, int64_t t, int64_t grace_ms)
{
    return gang_join_asks(g, t, grace_ms) ? t + grace_ms : gang_join_at(g, t);
}

/* HAMi's share resources (nvidia.com/gpumem MiB, gpumem-percentage and gpucores percent) are
 * asked per device: a pod of N devices holds N times its request (HAMi's ResourceQuota support
 * and Kueue's HAMi resource transformation count it so). Ids cached per thread while the
 * process's resource table keeps its size (it only grows). */
static void share_ids(int *ids)
{
    static _Thread_local int n_seen = -1, cache[3];
    if (n_seen != res_count()) {
        n_seen = res_count();
        cache[0] = res_lookup(HAMI_RES_MEM);
        cache[1] = res_lookup(HAMI_RES_MEM_PCT);
        cache[2] = res_lookup(HAMI_RES_CORES);
    }
    memcpy(ids, cache, sizeof(cache));
}

void gang_pod_charge(const struct res_vec *req, int64_t pods, struct res_vec *acc)
{
    int n_res = res_count(), ids[3];
    for (int r = 0; r < n_res; r++)
        acc->v[r] += pods * req->v[r];
    share_ids(ids);
    int64_t devs = req->v[RES_GPU];
    for (int k = 0; k < 3 && devs > 1; k++) /* one share per device */
        if (ids[k] >= 0)
            acc->v[ids[k]] += pods * (devs - 1) * req->v[ids[k]];
}

int gang_kind(const struct gang *g)
{
    int kind = 0;
    for (uint32_t s = 0; kind == 0 && s < g->n_sets && s < GANG_MAX_SETS; s++)
        kind = res_kind_of(&g->sets[s].req);
    return kind;
}

void gang_request(const struct gang *g, struct res_vec *need)
{
    gang_pods_request(g, 0, UINT32_MAX, need); /* every pod, finalized or not */
}

int64_t gang_pods_request(const struct gang *g, uint32_t from, uint32_t to, struct res_vec *acc)
{
    if (acc)
        memset(acc, 0, sizeof(*acc));
    int64_t gpus = 0;
    for (uint32_t s = 0, k = 0; s < g->n_sets && s < GANG_MAX_SETS; k += g->sets[s].count, s++) {
        uint32_t lo = from > k ? from : k, end = k + g->sets[s].count, hi = to < end ? to : end;
        if (hi <= lo)
            continue;
        if (acc)
            gang_pod_charge(&g->sets[s].req, hi - lo, acc);
        gpus += g->sets[s].req.v[RES_GPU] * (int64_t)(hi - lo);
    }
    return gpus;
}
