/* sched/core/cycle.c: one scheduling cycle (see cycle.h).
 *
 * Phases:
 *   1. Build the working state from the snapshot (free capacity per node, buckets).
 *   2. Walk the pending gangs in policy order: the queues' own orders merged by the policy's key
 *      (a heap over queue heads).
 *   3. For each gang: skip it when an equal shape already failed this cycle (same shape, same
 *      fate) or when a smaller unconstrained request already failed; else place it whole or not
 *      at all. A gang that waited past the policy's starvation limit and still does not fit
 *      holds a reservation: its nodes are taken out of this cycle's working state so that
 *      younger gangs cannot keep starving it. Under strict FIFO the first gang that cannot
 *      start ends the cycle.
 *   4. Return placements, reservations and verdicts, all in the caller's arena.
 */
#include "sched/core/cycle.h"

#include <stdio.h>
#include <string.h>

#include "queue/queue.h"
#include "sched/core/place.h"
#include "sched/core/policy.h"

struct merge {
    const struct sched_snapshot *snap;
    uint32_t *pos;  /* next index per queue */
    uint32_t *heap; /* queue indices with pending gangs left, best head first */
    uint32_t n_heap;
};

static const struct gang *head(const struct merge *m, uint32_t q)
{
    return m->snap->queues[q].pending[m->pos[q]];
}

static bool before(const struct merge *m, uint32_t a, uint32_t b)
{
    return queue_cmp(head(m, a), head(m, b), m->snap->policy->by_priority) < 0;
}

static void sift_down(struct merge *m, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < m->n_heap && before(m, m->heap[l], m->heap[best]))
            best = l;
        if (r < m->n_heap && before(m, m->heap[r], m->heap[best]))
            best = r;
        if (best == i)
            return;
        uint32_t t = m->heap[i];
        m->heap[i] = m->heap[best];
        m->heap[best] = t;
        i = best;
    }
}

static const struct gang *merge_next(struct merge *m)
{
    if (m->n_heap == 0)
        return NULL;
    uint32_t q = m->heap[0];
    const struct gang *g = head(m, q);
    if (++m->pos[q] >= m->snap->queues[q].n_pending)
        m->heap[0] = m->heap[--m->n_heap];
    sift_down(m, 0);
    return g;
}

/* Growable arrays in the arena. */
static void *grow(struct arena *a, void *old, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap)
        return old;
    uint32_t cap2 = *cap ? *cap * 2 : 16;
    void *p = arena_alloc(a, (size_t)cap2 * elem);
    if (!p)
        return NULL;
    if (old)
        memcpy(p, old, (size_t)n * elem);
    *cap = cap2;
    return p;
}

/* A gang with one pod set, no node constraints and no topology requirement. If such a gang
 * failed, a plain gang needing at least as much of every resource per pod and at least as many
 * pods fails too, unless the failed pods fit inside one NVLink island while the new ones may
 * span islands (then the new gang can use GPUs the failed one could not). */
static bool is_plain(const struct gang *g)
{
    return g->n_sets == 1 && g->sets[0].n_node_selector == 0 && g->sets[0].n_tolerations == 0 &&
           g->topo_required < 0 && g->sets[0].req.v[RES_GPU] > 0;
}

struct memo {
    uint64_t shape;
    uint32_t verdict; /* index into out->verdicts */
};

int sched_cycle(const struct sched_snapshot *snap, struct arena *arena, struct sched_result *out)
{
    const struct sched_policy *pol = snap->policy;
    memset(out, 0, sizeof(*out));
    struct place_state st;
    if (place_state_build(&st, snap, arena) != 0)
        return SCHED_ENOMEM;

    struct merge m = {.snap = snap};
    m.pos = arena_calloc(arena, snap->n_queues + 1, sizeof(*m.pos));
    m.heap = arena_alloc(arena, (snap->n_queues + 1) * sizeof(*m.heap));
    uint32_t *held = arena_alloc(arena, (snap->cluster->n_nodes + 1) * sizeof(*held));
    if (!m.pos || !m.heap || !held)
        return SCHED_ENOMEM;
    for (uint32_t q = 0; q < snap->n_queues; q++)
        if (snap->queues[q].n_pending > 0)
            m.heap[m.n_heap++] = q;
    for (uint32_t i = m.n_heap; i-- > 0;)
        sift_down(&m, i);

    uint32_t cap_p = 0, cap_v = 0, cap_r = 0, n_memo = 0, cap_memo = 0;
    struct memo *memo = NULL;
    /* plain gangs: smallest (gpus per pod, pods) that failed */
    const struct res_vec *fail_req = NULL;
    uint32_t fail_pods = UINT32_MAX;
    int32_t fail_verdict = -1;

    const struct gang *g;
    while ((g = merge_next(&m)) != NULL) {
        out->n_examined++;
        /* 1. Same shape already failed this cycle. */
        int32_t seen = -1;
        for (uint32_t k = 0; k < n_memo; k++)
            if (memo[k].shape == g->shape) {
                seen = (int32_t)memo[k].verdict;
                break;
            }
        if (seen < 0 && fail_req && is_plain(g) && g->n_pods >= fail_pods &&
            res_fits(fail_req, &g->sets[0].req) &&
            !(fail_req->v[RES_GPU] <= st.island_limit &&
              g->sets[0].req.v[RES_GPU] > st.island_limit))
            seen = fail_verdict;
        if (seen >= 0)
            continue; /* (strict FIFO never gets here: its first failure ends the cycle) */
        /* 2. Larger than the cluster: never fits, never blocks others. */
        struct sched_verdict v = {.gang = g, .short_res = -1};
        int short_res = -1;
        enum sched_why why;
        struct sched_assign *pods = NULL;
        int level = -1;
        uint32_t domain = 0;
        if (place_never_fits(&st, g, &short_res)) {
            why = SCHED_WHY_NEVER;
        } else {
            pods = arena_alloc(arena, (g->n_pods + 1) * sizeof(*pods));
            if (!pods)
                return SCHED_ENOMEM;
            why = place_gang(&st, g, pods, &level, &domain);
        }
        if (why == SCHED_WHY_PLACED) {
            out->placements =
                grow(arena, out->placements, out->n_placements, &cap_p, sizeof(*out->placements));
            if (!out->placements)
                return SCHED_ENOMEM;
            out->placements[out->n_placements++] = (struct sched_placement){
                .gang = g,
                .pods = pods,
                .level = level,
                .domain = domain,
                .backfilled = n_memo > 0,
            };
            continue;
        }
        if (why != SCHED_WHY_NEVER && place_never_fits_any_node(&st, g, &short_res))
            why = SCHED_WHY_NEVER;
        /* 3. Not placed: explain, remember, maybe reserve. */
        v.why = why;
        place_diagnose(&st, g, &v);
        if (why == SCHED_WHY_NEVER) {
            v.short_res = short_res;
            v.need = short_res >= 0 ? g->sets[0].req.v[short_res] : 0;
        } else if (v.filtered[FILTER_RESOURCES] == 0 && v.filtered[FILTER_RESERVED] == 0 &&
                   st.c->n_nodes > 0) {
            v.why = SCHED_WHY_NO_NODES;
        } else if (v.filtered[FILTER_RESOURCES] == 0 && v.filtered[FILTER_RESERVED] > 0) {
            v.why = SCHED_WHY_RESERVED;
        }
        out->verdicts = grow(arena, out->verdicts, out->n_verdicts, &cap_v, sizeof(*out->verdicts));
        if (!out->verdicts)
            return SCHED_ENOMEM;
        uint32_t vi = out->n_verdicts++;
        out->verdicts[vi] = v;
        if (why == SCHED_WHY_NEVER)
            continue; /* rejected, not waiting: it blocks nobody */
        memo = grow(arena, memo, n_memo, &cap_memo, sizeof(*memo));
        if (!memo)
            return SCHED_ENOMEM;
        memo[n_memo++] = (struct memo){.shape = g->shape, .verdict = vi};
        if (is_plain(g) &&
            (!fail_req || (res_fits(&g->sets[0].req, fail_req) && g->n_pods <= fail_pods))) {
            fail_req = &g->sets[0].req; /* smaller in every way: dominates more */
            fail_pods = g->n_pods;
            fail_verdict = (int32_t)vi;
        }
        if (pol->starve_after_ms > 0 && out->n_reservations < pol->max_reservations &&
            snap->now_ms - g->submit_ms >= pol->starve_after_ms) {
            uint32_t n_held = place_reserve(&st, g, held);
            if (n_held > 0) {
                out->reservations = grow(arena, out->reservations, out->n_reservations, &cap_r,
                                         sizeof(*out->reservations));
                uint32_t *nodes = arena_alloc(arena, n_held * sizeof(*nodes));
                if (!out->reservations || !nodes)
                    return SCHED_ENOMEM;
                memcpy(nodes, held, n_held * sizeof(*nodes));
                out->reservations[out->n_reservations++] =
                    (struct sched_reservation){.gang = g, .nodes = nodes, .n_nodes = n_held};
                /* what failed before the hold may still fail: memo stays valid */
            }
        }
        if (pol->strict_fifo)
            break;
    }
    return 0;
}

const char *sched_why_name(enum sched_why why)
{
    switch (why) {
    case SCHED_WHY_PLACED:
        return "placed";
    case SCHED_WHY_BLOCKED:
        return "blocked";
    case SCHED_WHY_RESOURCES:
        return "resources";
    case SCHED_WHY_TOPOLOGY:
        return "topology";
    case SCHED_WHY_RESERVED:
        return "reserved";
    case SCHED_WHY_NEVER:
        return "never-fits";
    case SCHED_WHY_NO_NODES:
        return "no-nodes";
    }
    return "unknown";
}

static const char *const filter_names[FILTER_N] = {
    [FILTER_NOT_READY] = "not ready",
    [FILTER_CORDONED] = "cordoned",
    [FILTER_SELECTOR] = "node selector",
    [FILTER_TAINT] = "untolerated taint",
    [FILTER_SHARED_GPU] = "shared/MIG GPUs",
    [FILTER_RESOURCES] = "insufficient",
    [FILTER_RESERVED] = "reserved for another gang",
};

int sched_verdict_format(const struct sched_verdict *v, const struct cluster *c, char *buf,
                         size_t n)
{
    const struct gang *g = v->gang;
    size_t at = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + at, at < n ? n - at : 0, __VA_ARGS__);                             \
        if (k_ > 0)                                                                                \
            at += (size_t)k_;                                                                      \
    } while (0)
    PUT("%s: %u pod(s), %lld GPU(s)", sched_why_name(v->why), g->n_pods, (long long)g->gpus);
    if (v->why == SCHED_WHY_NEVER) {
        PUT("; larger than the cluster can ever hold");
        if (v->short_res >= 0)
            PUT(" (%s)", res_name(v->short_res));
        return (int)at;
    }
    uint32_t fitting = v->n_nodes;
    for (int f = 0; f < FILTER_N; f++)
        fitting -= v->filtered[f] <= fitting ? v->filtered[f] : fitting;
    PUT("; %u/%u nodes fit one pod", fitting, c ? c->n_nodes : v->n_nodes);
    const char *sep = ": ";
    for (int f = 0; f < FILTER_N; f++) {
        if (!v->filtered[f])
            continue;
        if (f == FILTER_RESOURCES && v->short_res >= 0)
            PUT("%s%u insufficient %s (needs %lld, best node has %lld free)", sep, v->filtered[f],
                res_name(v->short_res), (long long)v->need, (long long)v->best_free);
        else
            PUT("%s%u %s", sep, v->filtered[f], filter_names[f]);
        sep = ", ";
    }
    if (v->why == SCHED_WHY_TOPOLOGY)
        PUT("; no single domain of the required level holds the whole gang");
#undef PUT
    return (int)at;
}
