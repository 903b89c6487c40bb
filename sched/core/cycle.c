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
 *      younger gangs cannot keep starving it. This holds whatever the wait is that capacity
 *      can end: free nodes, or quota that running gangs will give back (with one queue, or
 *      quota borrowed from the cohort, "no quota left" and "no GPUs left" are the same wait).
 *      The reservation holds the nodes expected to free earliest (tightest domain on ties),
 *      not the quota: holding both left capacity idle that the gang could not use. Only gangs
 *      expected to end before the reservation's expected start may use its nodes. Under strict
 *      FIFO the first gang that cannot start ends the cycle.
 *   4. Plan an expected start for every gang that waits (eta.c).
 *   5. Return placements, reservations, verdicts and expected starts, all in the caller's
 *      arena.
 */
#include "sched/core/cycle.h"

#include <stdlib.h>
#include <string.h>

#include "config/model.h"
#include "queue/queue.h"
#include "queue/quota.h"
#include "sched/core/backlog.h"
#include "sched/core/eta.h"
#include "sched/core/hash.h"
#include "sched/core/memo.h"
#include "sched/core/place.h"
#include "sched/core/podaff.h"
#include "sched/core/policy.h"
#include "sched/core/preempt.h"

/* ---- per-cycle context ------------------------------------------------------------------ */

struct queue_key {
    int32_t priority; /* queue priority, higher first */
    double score;     /* fair share after admitting the head, lower first */
};

struct cycle {
    const struct sched_snapshot *snap;
    const struct sched_policy *pol;
    const struct config *cfg; /* NULL: no quotas */
    struct arena *arena;
    struct sched_result *out;
    struct place_state st;
    struct quota_tree qt;
    /* merge of the queues: a heap of queue indices keyed by queue_key, then the head gang */
    uint32_t *pos, *heap, n_heap;
    struct queue_key *key;
    bool *blocked; /* strict-FIFO queue whose head could not start: skip the rest */
    bool *paused;  /* strict-FIFO queue whose head waits for pass 1 (borrowing): pass 0 only */
    /* pass 0 admits only within nominal; gangs that must borrow wait for pass 1 */
    const struct gang **deferred;
    uint32_t n_deferred;
    /* memo of failed placements and of preemption plans that found no victims (memo.h), and
     * the dominance rule for plain gangs */
    struct memo memo;
    bool any_memo_fail; /* a placement failure was remembered: later placements backfill */
    const struct res_vec *fail_req;
    uint32_t fail_pods;
    int32_t fail_verdict;
    uint32_t cap_p, cap_v, cap_r, cap_e;
    struct preempt_ctx pc;
    struct backlog bl; /* classes of pending gangs: skips that change nothing (backlog.h) */
    bool keys_ready;   /* cycle_init is done: a queue alone in the heap needs no key */
    uint32_t *held;
    int64_t starve_after_ms;
    uint32_t max_reservations;
    const struct gang *hold_gang; /* the starving gang of the earliest reservation so far */
    uint32_t hold_flavor;         /* the flavor of hold_gang's reservation */
    /* starvation reservations made this cycle: what max_reservations limits (a preemptor's
     * hold on its victims' capacity is also a reservation in the result, but not one of these:
     * counting it let every preemption plan take the starving gangs' only slot) */
    uint32_t n_starving;
    /* gangs examined and not placed, in order, with their reasons (for the start planner) */
    struct eta_item *waiting;
    uint32_t n_waiting;
    /* per queue: a starving gang of the queue that waits for quota (its queue shares a cohort)
     * and holds a reservation; the queue's younger gangs start only if expected to end before
     * qhold_until (else they would keep using the quota it waits for) */
    const struct gang **qhold;
    int64_t *qhold_until;
    bool *shares_cohort; /* some other queue is in the same quota tree */
    /* per queue: the cohort hold of its quota tree this cycle (pool_hold_take), NULL none, and
     * the flavor whose pool it holds */
    const struct gang **pool_hold;
    uint32_t *pool_flavor;
};

/* Backfill on probation: g, placed on flavor f while hold_gang holds the cycle's earliest
 * starvation reservation, is on probation for it only if that gang may ever evict it as an
 * overdue backfill (preempt.c, allowed() and overdue_for()): hold_gang has probationMinGpus,
 * g is of its queue, on the flavor and device kind of its reservation, and a preemption can
 * take g (not non-preemptible, not a GPU share, which frees nothing). NULL: not on probation. */
static const struct gang *probation_for(const struct cycle *cy, const struct gang *g, uint32_t f)
{
    const struct gang *h = cy->hold_gang;
    if (!h || cy->pc.probation_min_gpus == 0 || h->gpus < cy->pc.probation_min_gpus ||
        h->queue != g->queue || (cy->cfg && f != cy->hold_flavor))
        return NULL;
    if (g->non_preemptible || place_is_share(&cy->st, g) || gang_kind(g) != gang_kind(h))
        return NULL;
    return h;
}

/* Expected run time of g: its declared maximum, else the driver's estimate, 0 = unknown. */
static int64_t est_of(const struct cycle *cy, const struct gang *g)
{
    return eta_runtime(cy->snap, g);
}

static const struct gang *head(const struct cycle *cy, uint32_t q)
{
    return cy->snap->queues[q].pending[cy->pos[q]];
}

/* Queue priority, then fair share (dominant share after admitting the head, plus the decayed
 * history, over the weight), then the heads' own order. Without a config: the heads' order. */
static void compute_key(struct cycle *cy, uint32_t q)
{
    struct queue_key *k = &cy->key[q];
    k->priority = 0;
    k->score = 0;
    if (!cy->cfg || cy->pol->strict_fifo)
        return;
    const struct config_queue *cq = &cy->cfg->queues[q];
    struct res_vec need;
    gang_request(head(cy, q), &need);
    double hist = cy->snap->hist_share ? cy->snap->hist_share[q] : 0.0;
    k->priority = cq->priority;
    k->score = (quota_share(&cy->qt, q, QUOTA_FIRST_FLAVOR, &need) + hist) /
               (cq->weight > 0 ? cq->weight : 1.0);
}

static bool before(const struct cycle *cy, uint32_t a, uint32_t b)
{
    const struct queue_key *x = &cy->key[a], *y = &cy->key[b];
    if (x->priority != y->priority)
        return x->priority > y->priority;
    if (x->score != y->score)
        return x->score < y->score;
    return queue_cmp(head(cy, a), head(cy, b), cy->pol->by_priority) < 0;
}

static void sift_down(struct cycle *cy, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < cy->n_heap && before(cy, cy->heap[l], cy->heap[best]))
            best = l;
        if (r < cy->n_heap && before(cy, cy->heap[r], cy->heap[best]))
            best = r;
        if (best == i)
            return;
        uint32_t t = cy->heap[i];
        cy->heap[i] = cy->heap[best];
        cy->heap[best] = t;
        i = best;
    }
}

static void sift_up(struct cycle *cy, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!before(cy, cy->heap[i], cy->heap[p]))
            return;
        uint32_t t = cy->heap[i];
        cy->heap[i] = cy->heap[p];
        cy->heap[p] = t;
        i = p;
    }
}

/* Takes the best queue's head. The queue goes back into the heap by merge_return() once its
 * head was handled, so that its key reflects what was admitted. */
static const struct gang *merge_take(struct cycle *cy, uint32_t *q_out)
{
    while (cy->n_heap > 0) {
        uint32_t q = cy->heap[0];
        cy->heap[0] = cy->heap[--cy->n_heap];
        sift_down(cy, 0);
        if (cy->blocked[q] || cy->paused[q])
            continue;
        *q_out = q;
        return cy->snap->queues[q].pending[cy->pos[q]++];
    }
    return NULL;
}

static void merge_return(struct cycle *cy, uint32_t q)
{
    if (cy->blocked[q] || cy->paused[q] || cy->pos[q] >= cy->snap->queues[q].n_pending)
        return;
    if (cy->n_heap > 0 || !cy->keys_ready) /* alone in the heap, its key is never compared */
        compute_key(cy, q);
    cy->heap[cy->n_heap] = q;
    sift_up(cy, cy->n_heap++);
}

/* A gang with one pod set, no node constraints and no topology requirement. If such a gang
 * failed, a plain gang needing at least as much of every resource per pod and at least as many
 * pods fails too, unless the failed pods fit inside one NVLink island while the new ones may
 * span islands (then the new gang can use GPUs the failed one could not). */
static bool is_plain(const struct gang *g)
{
    return g->n_sets == 1 && g->sets[0].n_node_selector == 0 && g->sets[0].n_tolerations == 0 &&
           g->sets[0].n_affinity == 0 && g->topo_required < 0 && g->tp_size == 0 &&
           g->slice_size == 0 && !g->spread && g->n_near == 0 && g->sets[0].req.v[RES_GPU] > 0;
}

static struct sched_verdict *add_verdict(struct cycle *cy, const struct sched_verdict *v)
{
    struct sched_result *out = cy->out;
    out->verdicts =
        arena_grow(cy->arena, out->verdicts, out->n_verdicts, &cy->cap_v, sizeof(*out->verdicts));
    if (!out->verdicts)
        return NULL;
    out->verdicts[out->n_verdicts] = *v;
    return &out->verdicts[out->n_verdicts++];
}

/* The gang as it must be placed on flavor f: pod sets restricted to the flavor's nodes. */
static const struct gang *on_flavor(struct cycle *cy, const struct gang *g, uint32_t f)
{
    if (!cy->cfg || cy->cfg->flavors[f].n_node_labels == 0)
        return g;
    const struct config_flavor *fl = &cy->cfg->flavors[f];
    struct gang *c = arena_alloc(cy->arena, sizeof(*c));
    if (!c)
        return NULL;
    *c = *g;
    c->sets = arena_alloc(cy->arena, (g->n_sets ? g->n_sets : 1) * sizeof(*c->sets));
    if (!c->sets)
        return NULL;
    for (uint32_t s = 0; s < c->n_sets; s++) {
        c->sets[s] = g->sets[s];
        uint32_t n = g->sets[s].n_node_selector + fl->n_node_labels;
        struct kv *sel = arena_alloc(cy->arena, n * sizeof(*sel));
        if (!sel)
            return NULL;
        if (g->sets[s].n_node_selector > 0) /* memcpy from NULL is undefined, even of 0 bytes */
            memcpy(sel, g->sets[s].node_selector, g->sets[s].n_node_selector * sizeof(*sel));
        memcpy(sel + g->sets[s].n_node_selector, fl->node_labels, fl->n_node_labels * sizeof(*sel));
        c->sets[s].node_selector = sel;
        c->sets[s].n_node_selector = n;
    }
    c->shape = g->shape ^ (0x9E3779B97F4A7C15ull * (f + 1));
    return c;
}

/* The memo's key of a failure the pod rules took part in (verdict.by_pod_rules) while earlier
 * pods carry rules (st.n_rules): its shape and the labels of its sets (a bound pod's
 * anti-affinity may select one gang and not another of the same shape; without such pods the
 * rules are the gang's own, in its shape). Any other failure is kept under the shape alone: every
 * rule only narrows the nodes of the gang it applies to, so a gang of that shape fails too,
 * whatever its labels. */
static uint64_t labels_key(const struct gang *g)
{
    uint64_t h = g->shape ^ 0x6c6162656c73ull;
    for (uint32_t s = 0; s < g->n_sets; s++)
        h = podaff_labels_hash(h, g->sets[s].meta);
    return h;
}

/* What decides the quota check and the working state's holds: changes with every placement,
 * preemption plan and reservation of this cycle. */
static uint64_t cycle_version(const struct cycle *cy)
{
    return (uint64_t)cy->out->n_placements + cy->out->n_reservations;
}

/* Does a placement of this cycle possibly let g start where it failed? Only through a required
 * pod affinity term (a placed pod may be the one it asks for); every other rule and resource
 * only narrows as gangs are placed. */
static bool memo_until_placement(const struct gang *g)
{
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (g->sets[s].meta && g->sets[s].meta->n_affinity)
            return true;
    return false;
}

/* The verdict of an earlier failure that g repeats (its shape's, or while pod rules exist, its
 * shape and labels'), or -1. */
static int64_t memo_seen(const struct cycle *cy, const struct gang *g)
{
    int64_t seen = memo_find(&cy->memo, g->shape, cycle_version(cy));
    return seen >= 0 || !cy->st.n_rules ? seen
                                        : memo_find(&cy->memo, labels_key(g), cycle_version(cy));
}

/* The gang whose hold keeps g off the nodes of pods (g's placement with the holds lifted): the
 * preemptor a node is held for (*preemptor true), else the starving gang whose reservation
 * lists a node, first in pod order. NULL when none is found (a hold of an earlier cycle's
 * reservation the driver offered back, which names no gang here). Cost: g's pods times the
 * cycle's reservations' nodes, once per verdict (maxReservations bounds the reservations). */
static const struct gang *holder_of(const struct cycle *cy, const struct gang *g,
                                    const struct sched_assign *pods, bool *preemptor)
{
    const struct sched_result *out = cy->out;
    *preemptor = false;
    for (uint32_t p = 0; p < g->n_pods; p++) {
        uint32_t i = pods[p].node;
        if (cy->st.held_for[i] && cy->st.held_for[i]->id != g->id) {
            *preemptor = true;
            return cy->st.held_for[i];
        }
        if (!cy->st.held[i])
            continue;
        for (uint32_t r = 0; r < out->n_reservations; r++)
            for (uint32_t k = 0;
                 !out->reservations[r].preemptor && k < out->reservations[r].n_nodes; k++)
                if (out->reservations[r].nodes[k] == i)
                    return out->reservations[r].gang;
    }
    return NULL;
}

enum attempt { ATTEMPT_PLACED, ATTEMPT_FAILED, ATTEMPT_DEFERRED, ATTEMPT_ERROR };

/* Did the pods running somewhere refuse nodes to g (pod rules, place_pods.c)? */
static bool pod_rules(const struct sched_verdict *v)
{
    return v->filtered[FILTER_POD_AFFINITY] + v->filtered[FILTER_POD_ANTI] +
               v->filtered[FILTER_HOST_PORT] + v->filtered[FILTER_SPREAD] >
           0;
}

/* Dominance applies to gf: one flavor, a plain gang (not GPU shares). */
static bool dominance_applies(const struct cycle *cy, const struct gang *gf)
{
    return (!cy->cfg || cy->cfg->n_flavors == 1) && is_plain(gf) && !place_is_share(&cy->st, gf);
}

/* The verdict index of a failure this cycle that gf shares without a search, or -1: a gang of
 * its shape failed (the memo), or a plain gang asking for no more of anything per pod and no
 * more pods did (dominance), unless its pods fit one NVLink island and gf's may not, or gf
 * never fits (its own verdict). */
static int64_t known_failure(struct cycle *cy, const struct gang *gf)
{
    int64_t seen = memo_seen(cy, gf);
    int short_res;
    if (seen < 0 && cy->fail_req && dominance_applies(cy, gf) && gf->n_pods >= cy->fail_pods &&
        res_fits(cy->fail_req, &gf->sets[0].req) &&
        !(cy->fail_req->v[RES_GPU] <= cy->st.island_limit &&
          gf->sets[0].req.v[RES_GPU] > cy->st.island_limit) &&
        !place_never_fits(&cy->st, gf, &short_res))
        seen = cy->fail_verdict;
    return seen;
}

/* Remembers g's failure v (verdict index vi; gf: g on its flavor) for the gangs after it: by
 * its shape (one that never fits too: 12,500 such gangs each cost a diagnosis over the nodes
 * per cycle), and as the dominance threshold when it is smaller in every way; false on out of
 * memory. */
static bool remember_failure(struct cycle *cy, const struct gang *g, const struct gang *gf,
                             const struct sched_verdict *v, int64_t vi)
{
    bool never = v->why == SCHED_WHY_NEVER;
    if (!memo_add(&cy->memo,
                  v->by_pod_rules && cy->st.n_rules && !never ? labels_key(gf) : gf->shape,
                  (uint32_t)vi, memo_until_placement(gf) ? cycle_version(cy) : MEMO_ANY))
        return false;
    if (never)
        return true; /* no dominance: a larger gang's verdict names its own need */
    cy->any_memo_fail = true;
    if (dominance_applies(cy, gf) && !v->by_pod_rules &&
        (!cy->fail_req ||
         (res_fits(&gf->sets[0].req, cy->fail_req) && gf->n_pods <= cy->fail_pods))) {
        cy->fail_req = &g->sets[0].req;
        cy->fail_pods = g->n_pods;
        cy->fail_verdict = (int32_t)vi;
    }
    return true;
}

/* Placement of g on flavor f (quota already checked). Returns SCHED_WHY_PLACED or why not, with
 * the verdict index in *vi (-1 when skipped by the memo without a new verdict). */
static enum sched_why place_on(struct cycle *cy, const struct gang *g, uint32_t f, bool borrowing,
                               int64_t *vi)
{
    *vi = -1;
    const struct gang *gf = on_flavor(cy, g, f);
    if (!gf)
        return SCHED_WHY_NEVER; /* out of memory: reported by the caller through n_verdicts */
    /* A gang expected to end (declared maximum run time, else estimate) before the
     * reservations start may use the held capacity: backfill that does not delay the starving
     * gang unless the estimate was wrong. */
    int64_t rt = est_of(cy, g);
    bool lift = rt > 0 && cy->out->n_reservations > 0 && cy->st.hold_until_ms != INT64_MAX &&
                cy->snap->now_ms + rt <= cy->st.hold_until_ms;
    /* a gang with capacity held for it is not like the others of its shape (nor is one that may
     * use the reservations: estimates differ between gangs of one shape) */
    bool own = cy->snap->n_holds > 0 && place_has_hold(&cy->st, gf);
    int64_t seen = own || lift ? -1 : known_failure(cy, gf);
    if (seen >= 0) {
        *vi = seen;
        return cy->out->verdicts[seen].why;
    }
    struct sched_verdict v = {.gang = g, .short_res = -1, .quota_res = -1, .near_level = -2};
    int short_res = -1;
    enum sched_why why;
    struct sched_assign *pods = NULL;
    int level = -1;
    uint32_t domain = 0;
    if (place_never_fits(&cy->st, gf, &short_res)) {
        why = SCHED_WHY_NEVER;
    } else {
        pods = arena_alloc(cy->arena, (g->n_pods + 1) * sizeof(*pods));
        if (!pods)
            return SCHED_WHY_NEVER;
        if (lift)
            place_lift_holds(&cy->st, true);
        cy->st.top.n = 0;
        why = place_gang(&cy->st, gf, pods, &level, &domain);
        if (lift)
            place_lift_holds(&cy->st, false);
    }
    if (why == SCHED_WHY_PLACED) {
        struct sched_result *out = cy->out;
        out->placements = arena_grow(cy->arena, out->placements, out->n_placements, &cy->cap_p,
                                     sizeof(*out->placements));
        if (!out->placements)
            return SCHED_WHY_NEVER;
        out->placements[out->n_placements++] = (struct sched_placement){
            .gang = g,
            .pods = pods,
            .level = level,
            .domain = domain,
            .flavor = f,
            .borrowing = borrowing,
            .backfilled = cy->any_memo_fail,
        };
        struct sched_placement *pl = &out->placements[out->n_placements - 1];
        pl->probation_for = probation_for(cy, g, f);
        pl->n_terms = cy->st.top.n;
        for (uint32_t k = 0; k < cy->st.top.n && k < 3; k++) {
            pl->terms[k] = cy->st.top.term[k];
            pl->term_values[k] = cy->st.top.value[k];
        }
        return why;
    }
    if (why != SCHED_WHY_NEVER && place_never_fits_any_node(&cy->st, gf, &short_res))
        why = SCHED_WHY_NEVER;
    v.why = why;
    if (pods) { /* the near miss of this gang's search (none when it never fits at all) */
        v.near_level = cy->st.near_level;
        v.near_domain = cy->st.near_domain;
        v.near_pods = cy->st.near_pods;
    }
    place_diagnose(&cy->st, gf, &v);
    v.by_pod_rules = place_pods_refused(&cy->st, gf);
    if (why == SCHED_WHY_NEVER) {
        v.short_res = short_res;
        v.need = short_res >= 0 ? g->sets[0].req.v[short_res] : 0;
        v.never_domain = short_res < 0 && place_required_never_fits(&cy->st, gf);
    } else if (v.filtered[FILTER_RESOURCES] == 0 && v.filtered[FILTER_RESERVED] == 0 &&
               cy->st.c->n_nodes > 0) {
        /* no node lacks room for one pod: either every node is filtered out, or the pods fit
         * one by one but not together the way the gang asks (domain, slices, groups); nodes
         * refused by the pods running there (pod rules) wait like capacity: they end, or a
         * preemption takes them */
        uint32_t filtered = 0;
        for (int x = 0; x < FILTER_N; x++)
            filtered += v.filtered[x];
        v.why = pod_rules(&v)           ? SCHED_WHY_RESOURCES
                : filtered >= v.n_nodes ? SCHED_WHY_NO_NODES
                                        : SCHED_WHY_TOPOLOGY;
    } else if (v.filtered[FILTER_RESERVED] > 0 && pods && place_fits_if_unheld(&cy->st, gf, pods)) {
        v.why = SCHED_WHY_RESERVED; /* it would start now but for the held capacity */
        v.blocked_by = holder_of(cy, g, pods, &v.held_for_preemptor);
        v.hold_start_unknown = cy->st.hold_until_ms == INT64_MAX;
    }
    if (!add_verdict(cy, &v))
        return SCHED_WHY_NEVER;
    *vi = cy->out->n_verdicts - 1;
    if (own || lift)
        return v.why; /* its failure says nothing about gangs without its holds or lift */
    return remember_failure(cy, g, gf, &v, *vi) ? v.why : SCHED_WHY_NEVER;
}

/* A starvation reservation for g (flavor f) when it has waited long enough: the nodes
 * expected to free earliest, tightest domain on ties (place_reserve). */
/* When queue q's running gangs, ending by their nodes' expected releases, will have given back
 * `gpus` GPUs of quota: INT64_MAX when they never do (or an end is unknown); now when the
 * snapshot has no running gangs to tell (the nodes' expected start stands alone). */
static int64_t quota_back_at(struct cycle *cy, uint32_t q, int64_t gpus)
{
    const struct sched_snapshot *sn = cy->snap;
    if (gpus <= 0 || !sn->running)
        return sn->now_ms;
    int64_t *end = arena_alloc(cy->arena, (sn->n_running + 1) * sizeof(*end));
    int64_t *got = arena_alloc(cy->arena, (sn->n_running + 1) * sizeof(*got));
    uint32_t n = 0;
    if (!end || !got)
        return INT64_MAX;
    for (uint32_t k = 0; k < sn->n_running; k++) {
        const struct sched_running *r = &sn->running[k];
        if (r->gang->queue != q || r->evicting)
            continue;
        int64_t t = 0;
        for (uint32_t x = 0; x < r->gang->n_pods; x++)
            if (sn->state[r->pods[x].node].release_ms > t)
                t = sn->state[r->pods[x].node].release_ms;
        uint32_t at = n++; /* insertion by end: few gangs per queue wait at once */
        while (at > 0 && end[at - 1] > t) {
            end[at] = end[at - 1];
            got[at] = got[at - 1];
            at--;
        }
        end[at] = t;
        got[at] = r->gang->gpus;
    }
    for (uint32_t k = 0; k < n && end[k] != INT64_MAX; k++)
        if ((gpus -= got[k]) <= 0)
            return end[k];
    return INT64_MAX;
}

/* quota_wait: g waits for quota of which `deficit` GPUs must come back first (-1: unknown). */
static int maybe_reserve(struct cycle *cy, const struct gang *g, uint32_t f, bool quota_wait,
                         int64_t deficit)
{
    struct sched_result *out = cy->out;
    if (cy->starve_after_ms <= 0 || cy->n_starving >= cy->max_reservations)
        return 0;
    if (cy->snap->now_ms - g->submit_ms < cy->starve_after_ms) { /* it starves later */
        sched_wake_at(&out->wake_ms, cy->snap->now_ms, g->submit_ms + cy->starve_after_ms);
        return 0;
    }
    const struct gang *gf = on_flavor(cy, g, f);
    if (!gf)
        return SCHED_ENOMEM;
    const struct sched_hold *hint = NULL;
    for (uint32_t h = 0; h < cy->snap->n_reserve_hints && !hint; h++)
        if (cy->snap->reserve_hints[h].gang->id == g->id)
            hint = &cy->snap->reserve_hints[h];
    uint32_t n_held =
        place_reserve(&cy->st, gf, cy->held, hint ? hint->nodes : NULL, hint ? hint->n_nodes : 0);
    if (n_held == 0)
        return 0;
    out->reservations = arena_grow(cy->arena, out->reservations, out->n_reservations, &cy->cap_r,
                                   sizeof(*out->reservations));
    uint32_t *nodes = arena_alloc(cy->arena, n_held * sizeof(*nodes));
    if (!out->reservations || !nodes)
        return SCHED_ENOMEM;
    memcpy(nodes, cy->held, n_held * sizeof(*nodes));
    int64_t start = place_expected_start(&cy->st, nodes, n_held);
    if (quota_wait) { /* the nodes may be free before the quota is */
        int64_t quota_at = deficit >= 0 ? quota_back_at(cy, g->queue, deficit) : INT64_MAX;
        if (quota_at > start)
            start = quota_at;
    }
    out->reservations[out->n_reservations++] = (struct sched_reservation){
        .gang = g, .nodes = nodes, .n_nodes = n_held, .expected_start_ms = start};
    cy->n_starving++;
    if (start < cy->st.hold_until_ms) {
        cy->st.hold_until_ms = start;
        cy->hold_gang = g;
        cy->hold_flavor = f;
    }
    if (quota_wait && cy->qhold && cy->shares_cohort[g->queue] && !cy->qhold[g->queue]) {
        cy->qhold[g->queue] = g; /* its queue's quota is what it waits for: hold it too */
        cy->qhold_until[g->queue] = start;
    }
    return 0;
}

/* A younger gang of a queue whose starving gang holds the queue's quota (maybe_reserve) waits,
 * unless it is expected to end before that gang's reservation starts. true when it waits (its
 * verdict `blocked` added). */
static bool queue_holds(struct cycle *cy, uint32_t q, const struct gang *g)
{
    if (!cy->qhold || !cy->qhold[q] || cy->qhold[q] == g)
        return false;
    int64_t rt = est_of(cy, g), until = cy->qhold_until[q];
    return !(rt > 0 && until != INT64_MAX && cy->snap->now_ms + rt <= until); /* backfill */
}

static bool held_by_queue(struct cycle *cy, uint32_t q, const struct gang *g, bool *oom)
{
    *oom = false;
    if (!queue_holds(cy, q, g))
        return false;
    struct sched_verdict v = {.gang = g,
                              .why = SCHED_WHY_BLOCKED,
                              .short_res = -1,
                              .quota_res = -1,
                              .near_level = -2,
                              .blocked_by = cy->qhold[q]};
    *oom = !add_verdict(cy, &v);
    return true;
}

/* The cohort hold. A gang that must borrow gets no reservation for its quota wait (try_gang),
 * and while it waits the borrowers of its quota tree take every GPU the lenders leave idle, one
 * small gang at a time: a big borrower's share of the pool never adds up (on the seven ITP
 * tenants, cluster01's 64-GPU gangs, nominal 27, waited hours for the cohort to lend 37 GPUs
 * at once while other tenants' one-GPU gangs borrowed each GPU given back). So the first gang of
 * the cycle's order that has waited starvation.after for the tree's lendable quota
 * (quota_waits_for_pool, no preemption planned for it) holds that pool: in the borrowers' pass no
 * other gang of the tree borrows (verdict `blocked`, pool_hold). Lenders' gangs within their
 * nominal quota are not held (their guarantee comes first), nor are nodes: the pool grows as
 * borrowers' gangs end and no other borrower takes what they give back. One hold per tree and
 * cycle; none with maxReservations 0. */
static void pool_hold_take(struct cycle *cy, uint32_t q, const struct gang *g, uint32_t f,
                           const struct res_vec *need, struct sched_verdict *v)
{
    if (!cy->pool_hold || cy->pool_hold[q] || cy->max_reservations == 0 || !cy->shares_cohort[q] ||
        quota_within_nominal(&cy->qt, q, f, need, false) ||
        !quota_waits_for_pool(&cy->qt, q, f, need))
        return;
    if (cy->snap->now_ms - g->submit_ms < cy->starve_after_ms) { /* it holds later */
        sched_wake_at(&cy->out->wake_ms, cy->snap->now_ms, g->submit_ms + cy->starve_after_ms);
        return;
    }
    for (uint32_t b = 0; b < cy->snap->n_queues; b++)
        if (!cy->pool_hold[b] && quota_same_tree(&cy->qt, q, b))
            cy->pool_hold[b] = g, cy->pool_flavor[b] = f;
    v->pool_hold = true;
}

/* May g not borrow on flavor f: another gang holds its tree's pool of f (the cohort hold)? */
static bool held_by_pool(const struct cycle *cy, const struct gang *g, uint32_t f)
{
    const struct gang *h = cy->pool_hold ? cy->pool_hold[g->queue] : NULL;
    return h && h != g && cy->pool_flavor[g->queue] == f;
}

/* g would borrow only on flavors whose pool another gang holds: verdict `blocked`, naming it. */
static enum attempt pool_blocked(struct cycle *cy, const struct gang *g, enum sched_why *why_out)
{
    struct sched_verdict v = {.gang = g,
                              .why = SCHED_WHY_BLOCKED,
                              .short_res = -1,
                              .quota_res = -1,
                              .near_level = -2,
                              .blocked_by = cy->pool_hold[g->queue],
                              .quota_flavor = cy->pool_flavor[g->queue],
                              .pool_hold = true};
    *why_out = SCHED_WHY_BLOCKED;
    return add_verdict(cy, &v) ? ATTEMPT_FAILED : ATTEMPT_ERROR;
}

/* Plans evictions for a gang that waits; 0 or SCHED_ENOMEM. A plan that pays only later sets
 * preempt_at_ms on g's verdict of this cycle (the last one added, when it is g's). */
static int try_preempt(struct cycle *cy, uint32_t q, const struct gang *g, uint32_t f,
                       bool *planned)
{
    *planned = false;
    if (!cy->pol->preempt || cy->snap->n_running == 0 || g->never_preempts)
        return 0;
    const struct gang *gf = on_flavor(cy, g, f);
    if (!gf)
        return SCHED_ENOMEM;
    /* a gang of its class found no victims since the last change: none for g either */
    uint64_t key = preempt_alike(&cy->pc, gf, q)
                       ? sched_mix64(labels_key(gf) ^ 0x7072656d707400ull ^
                                     ((uint64_t)q << 32 | (uint32_t)g->priority))
                       : 0;
    if (key && memo_find(&cy->memo, key, cycle_version(cy)) >= 0) {
        cy->pc.bound_waits = false; /* what that plan left: no bound passed, nothing pays */
        cy->pc.pays_at_ms = 0;
        return 0;
    }
    uint32_t nv = cy->out->n_verdicts;
    int rc = preempt_plan(&cy->pc, gf, q, f, cy->out, &cy->cap_e, &cy->cap_r, planned);
    if (rc == 0 && key && cy->pc.class_none && !memo_add(&cy->memo, key, 0, cycle_version(cy)))
        return SCHED_ENOMEM;
    if (rc == 0 && !*planned && cy->pc.pays_at_ms > 0 && nv > 0 &&
        cy->out->verdicts[nv - 1].gang == g)
        cy->out->verdicts[nv - 1].preempt_at_ms = cy->pc.pays_at_ms;
    return rc;
}

int64_t sched_ckpt_grace(const struct sched_snapshot *snap, const struct gang *g)
{
    const struct config *cfg = snap->config;
    return cfg && g->queue < cfg->n_queues ? cfg->queues[g->queue].preemption.checkpoint_grace_ms
                                           : 0;
}

/* Would new members g start now, were their job's checkpoint no reason to wait? Some flavor of
 * queue q has the quota and a trial placement succeeds (the state left as it was), and no
 * starving gang holds their queue; then their nodes are held for them for the rest of the
 * cycle, so that no gang after them takes the room the checkpoint is asked for. *defer: they
 * would start only by borrowing, which waits for the second pass (pass 1). */
static bool join_fits(struct cycle *cy, uint32_t q, const struct gang *g, int pass, bool *defer)
{
    uint32_t n_flavors = cy->cfg ? cy->cfg->n_flavors : 1;
    if (queue_holds(cy, q, g))
        return false;
    struct res_vec need;
    gang_request(g, &need);
    struct sched_assign *out = arena_alloc(cy->arena, (g->n_pods + 1) * sizeof(*out));
    uint32_t *nodes = arena_alloc(cy->arena, (g->n_pods + 1) * sizeof(*nodes));
    for (uint32_t f = 0; out && nodes && f < n_flavors; f++) {
        struct quota_short qs;
        enum quota_fit fit = QUOTA_FITS;
        if (cy->cfg)
            fit = cy->qt.queue_uses_flavor[q * cy->qt.n_flavors + f]
                      ? quota_check(&cy->qt, q, f, &need, &qs)
                      : QUOTA_NEVER;
        if (fit >= QUOTA_WAIT)
            continue;
        if (fit == QUOTA_BORROWS && pass == 0) { /* in the second pass, as any borrower */
            *defer = true;
            continue;
        }
        const struct gang *gf = on_flavor(cy, g, f);
        if (!gf || !place_trial(&cy->st, gf, -2, 0, out))
            continue;
        for (uint32_t k = 0; k < g->n_pods; k++)
            nodes[k] = out[k].node;
        place_hold_for(&cy->st, gf, nodes, g->n_pods);
        return true;
    }
    return false;
}

/* New members g: whether their job is asked for a checkpoint now (its queue answers within its
 * checkpointGrace, that costs less than waiting for its next window or joining at once
 * (gang_join_asks), and they would start now: join_fits). A request still open (made after the
 * job's last checkpoint) is not made again; once its grace has passed unanswered, none is made
 * until the job checkpoints by itself. *asked: such a request is open or made now (their room is
 * held). */
static bool join_ask(struct cycle *cy, uint32_t q, const struct gang *g, int64_t grace, int pass,
                     bool *asked, bool *defer)
{
    int64_t now = cy->snap->now_ms;
    bool open = g->join_asked_ms > gang_join_last(g, now);
    *defer = false;
    *asked = grace > 0 && (open ? now < g->join_asked_ms + grace : gang_join_asks(g, now, grace)) &&
             join_fits(cy, q, g, pass, defer);
    return *asked && !open;
}

/* New members g that would cost their job more than they bring now wait for its checkpoint at
 * join_at (verdict checkpoint; they hold no queue), asking for it when join_ask says so; inside
 * a window (join_at now) they wait only when they ask (else *go: they are tried as any gang). */
static enum attempt wait_for_join(struct cycle *cy, uint32_t q, const struct gang *g, int pass,
                                  int64_t join_at, int64_t grace, enum sched_why *why_out, bool *go)
{
    int64_t now = cy->snap->now_ms;
    struct sched_verdict cv = {.gang = g,
                               .why = SCHED_WHY_CHECKPOINT,
                               .short_res = -1,
                               .quota_res = -1,
                               .near_level = -2,
                               .join_at_ms = join_at,
                               .join_past_ms = now - gang_join_last(g, now)};
    bool defer;
    cv.ask_checkpoint = join_ask(cy, q, g, grace, pass, &cv.asked, &defer);
    *go = join_at == now && !cv.asked;
    if (*go || (!cv.asked && defer))
        return ATTEMPT_DEFERRED;
    if (cv.asked && !cv.ask_checkpoint) { /* open: its room is held until the grace ends */
        cv.join_waited_ms = now - g->join_asked_ms;
        sched_wake_at(&cy->out->wake_ms, now, g->join_asked_ms + grace);
    }
    *why_out = SCHED_WHY_CHECKPOINT;
    sched_wake_at(&cy->out->wake_ms, now, join_at);
    return add_verdict(cy, &cv) ? ATTEMPT_FAILED : ATTEMPT_ERROR;
}

/* g passed no flavor's quota (quota_blocked: some flavor's quota is short; else no flavor is
 * open to its queue): its verdict qv, then a reclaim, a starvation reservation or the cohort
 * hold for the wait. */
static enum attempt quota_wait(struct cycle *cy, uint32_t q, const struct gang *g,
                               struct sched_verdict *qv, bool quota_blocked,
                               const struct res_vec *need, enum sched_why *why_out)
{
    if (!quota_blocked)
        qv->why = SCHED_WHY_NO_NODES;
    *why_out = qv->why;
    if (!add_verdict(cy, qv))
        return ATTEMPT_ERROR;
    bool planned = false;
    uint32_t vi = cy->out->n_verdicts - 1;
    if (qv->why == SCHED_WHY_QUOTA && try_preempt(cy, q, g, qv->quota_flavor, &planned) != 0)
        return ATTEMPT_ERROR;
    if (!planned && qv->why == SCHED_WHY_QUOTA && cy->pc.bound_waits)
        cy->out->verdicts[vi].reclaim_after_ms =
            cy->pc.starve_after_ms > 0 ? cy->pc.starve_after_ms : -1;
    /* quota that running gangs will give back: the starvation guard engages as for nodes,
     * when the gang fits its queue's own nominal quota once the queue's running gangs have
     * given theirs back. A gang that must borrow gets no reservation for its quota wait:
     * the quota it lacks is other queues' guarantee, which their gangs may take again as
     * soon as they end (holding nodes for it would only keep their borrowers out and slow
     * the lenders down), as Slurm reserves nothing for a job held by its limits. */
    int64_t deficit = qv->quota_res == RES_GPU ? qv->quota_need - qv->quota_available : -1;
    if (!planned && qv->why == SCHED_WHY_QUOTA &&
        quota_within_nominal(&cy->qt, q, qv->quota_flavor, need, false) &&
        maybe_reserve(cy, g, qv->quota_flavor, true, deficit) != 0)
        return ATTEMPT_ERROR;
    if (!planned && qv->why == SCHED_WHY_QUOTA)
        pool_hold_take(cy, q, g, qv->quota_flavor, need, &cy->out->verdicts[vi]);
    return ATTEMPT_FAILED;
}

/* One gang: quota per flavor (in the queue's flavor order), then placement. In pass 0 a gang
 * that could only start by borrowing is deferred to pass 1. */
static enum attempt try_gang(struct cycle *cy, uint32_t q, const struct gang *g, int pass,
                             enum sched_why *why_out)
{
    uint32_t n_flavors = cy->cfg ? cy->cfg->n_flavors : 1;
    int64_t now = cy->snap->now_ms, join_at = gang_join_at(g, now);
    int64_t grace = g->join_every_ms > 0 ? sched_ckpt_grace(cy->snap, g) : 0;
    bool go = true;
    if (g->join_every_ms > 0 && (join_at > now || grace > 0)) {
        enum attempt a = wait_for_join(cy, q, g, pass, join_at, grace, why_out, &go);
        if (!go)
            return a;
    }
    bool oom;
    if (held_by_queue(cy, q, g, &oom)) {
        *why_out = SCHED_WHY_BLOCKED;
        return oom ? ATTEMPT_ERROR : ATTEMPT_FAILED;
    }
    struct res_vec need;
    gang_request(g, &need);
    struct sched_verdict qv = {.gang = g, .short_res = -1, .quota_res = -1, .near_level = -2};
    bool quota_blocked = false, pool_held = false;
    int64_t place_vi = -1;
    uint32_t first_flavor = UINT32_MAX;
    for (int want_borrow = 0; want_borrow <= 1; want_borrow++) {
        for (uint32_t f = 0; f < n_flavors; f++) {
            bool borrowing = false;
            if (cy->cfg) {
                if (!cy->qt.queue_uses_flavor[q * cy->qt.n_flavors + f])
                    continue;
                struct quota_short qs;
                enum quota_fit fit = quota_check(&cy->qt, q, f, &need, &qs);
                if (fit >= QUOTA_WAIT) {
                    if (!quota_blocked ||
                        fit < (qv.why == SCHED_WHY_QUOTA_NEVER ? QUOTA_NEVER : QUOTA_WAIT)) {
                        qv.why = fit == QUOTA_NEVER ? SCHED_WHY_QUOTA_NEVER : SCHED_WHY_QUOTA;
                        qv.quota_res = qs.res;
                        qv.quota_flavor = qs.flavor;
                        qv.quota_need = qs.need;
                        qv.quota_nominal = qs.nominal;
                        qv.quota_used = qs.used;
                        qv.quota_available = qs.available;
                        qv.quota_potential = qs.potential;
                    }
                    quota_blocked = true;
                    continue;
                }
                borrowing = fit == QUOTA_BORROWS;
                if (borrowing != (want_borrow == 1))
                    continue;
            } else if (want_borrow) {
                break;
            }
            if (first_flavor == UINT32_MAX)
                first_flavor = f;
            if (borrowing && pass == 0)
                return ATTEMPT_DEFERRED;
            if (borrowing && held_by_pool(cy, g, f)) {
                pool_held = true;
                continue;
            }
            int64_t vi;
            enum sched_why why = place_on(cy, g, f, borrowing, &vi);
            if (why == SCHED_WHY_PLACED) {
                if (cy->cfg)
                    quota_charge(&cy->qt, q, f, &need, +1);
                return ATTEMPT_PLACED;
            }
            if (vi < 0)
                return ATTEMPT_ERROR; /* out of memory */
            if (place_vi < 0 || cy->out->verdicts[vi].why != SCHED_WHY_NEVER)
                place_vi = vi;
        }
    }
    if (place_vi < 0 && pool_held) /* its flavors' pools are held for another gang */
        return pool_blocked(cy, g, why_out);
    if (place_vi < 0) /* no flavor passed its quota: the quota is the reason */
        return quota_wait(cy, q, g, &qv, quota_blocked, &need, why_out);
    const struct sched_verdict *pv = &cy->out->verdicts[place_vi];
    *why_out = pv->why;
    if (pv->gang != g && cy->snap->verdict_every_gang) {
        struct sched_verdict copy = *pv; /* skipped by the memo: same shape, same reason */
        copy.gang = g;
        if (!add_verdict(cy, &copy))
            return ATTEMPT_ERROR;
    }
    /* Preemption first (the victims' capacity is then held for it); else, when it has waited
     * long, a starvation reservation. */
    bool planned = false;
    if ((pv->why == SCHED_WHY_RESOURCES || pv->why == SCHED_WHY_TOPOLOGY ||
         pv->why == SCHED_WHY_RESERVED) &&
        try_preempt(cy, q, g, first_flavor == UINT32_MAX ? 0 : first_flavor, &planned) != 0)
        return ATTEMPT_ERROR;
    if (!planned && pv->why != SCHED_WHY_NEVER && pv->gang == g &&
        maybe_reserve(cy, g, first_flavor, false, 0) != 0)
        return ATTEMPT_ERROR;
    return ATTEMPT_FAILED;
}

static int cycle_init(struct cycle *cy, const struct sched_snapshot *snap, struct arena *arena,
                      struct sched_result *out)
{
    memset(cy, 0, sizeof(*cy));
    cy->snap = snap;
    cy->pol = snap->policy;
    cy->cfg = snap->config;
    cy->arena = arena;
    memo_init(&cy->memo, arena);
    cy->out = out;
    cy->fail_verdict = -1;
    cy->fail_pods = UINT32_MAX;
    cy->starve_after_ms = cy->pol->starve_after_ms;
    cy->max_reservations = cy->pol->max_reservations;
    uint32_t probation_min_gpus = cy->pol->probation_min_gpus;
    if (cy->cfg && cy->pol->starve_after_ms > 0) { /* the operator's setting wins */
        cy->starve_after_ms = cy->cfg->starve_after_ms;
        cy->max_reservations = cy->cfg->max_reservations;
        if (probation_min_gpus > 0)
            probation_min_gpus = cy->cfg->probation_min_gpus;
    }
    if (place_state_build(&cy->st, snap, arena) != 0)
        return SCHED_ENOMEM;
    if (cy->cfg && quota_build(&cy->qt, cy->cfg, snap->usage, arena) != 0)
        return SCHED_ENOMEM;
    if (preempt_ctx_init(&cy->pc, snap, &cy->st, cy->cfg ? &cy->qt : NULL, arena) != 0)
        return SCHED_ENOMEM;
    cy->pc.starve_after_ms = cy->starve_after_ms;
    cy->pc.probation_min_gpus = cy->starve_after_ms > 0 ? probation_min_gpus : 0;
    cy->pc.wake_ms = &out->wake_ms;
    uint32_t nq = snap->n_queues + 1;
    cy->pos = arena_calloc(arena, nq, sizeof(*cy->pos));
    cy->heap = arena_alloc(arena, nq * sizeof(*cy->heap));
    cy->key = arena_calloc(arena, nq, sizeof(*cy->key));
    cy->blocked = arena_calloc(arena, nq, sizeof(*cy->blocked));
    cy->paused = arena_calloc(arena, nq, sizeof(*cy->paused));
    cy->held = arena_alloc(arena, (snap->cluster->n_nodes + 1) * sizeof(*cy->held));
    uint32_t total = 1;
    for (uint32_t q = 0; q < snap->n_queues; q++)
        total += snap->queues[q].n_pending;
    cy->deferred = arena_alloc(arena, total * sizeof(*cy->deferred));
    cy->waiting = snap->plan_starts ? arena_alloc(arena, total * sizeof(*cy->waiting)) : NULL;
    if (cy->cfg && cy->starve_after_ms > 0) {
        cy->qhold = arena_calloc(arena, nq, sizeof(*cy->qhold));
        cy->qhold_until = arena_calloc(arena, nq, sizeof(*cy->qhold_until));
        cy->shares_cohort = arena_calloc(arena, nq, sizeof(*cy->shares_cohort));
        cy->pool_hold = arena_calloc(arena, nq, sizeof(*cy->pool_hold));
        cy->pool_flavor = arena_calloc(arena, nq, sizeof(*cy->pool_flavor));
        if (!cy->qhold || !cy->qhold_until || !cy->shares_cohort || !cy->pool_hold ||
            !cy->pool_flavor)
            return SCHED_ENOMEM;
        for (uint32_t a = 0; a < snap->n_queues; a++)
            for (uint32_t b = 0; b < snap->n_queues && !cy->shares_cohort[a]; b++)
                cy->shares_cohort[a] = a != b && quota_same_tree(&cy->qt, a, b);
    }
    if (!cy->pos || !cy->heap || !cy->key || !cy->blocked || !cy->paused || !cy->held ||
        !cy->deferred || (snap->plan_starts && !cy->waiting))
        return SCHED_ENOMEM;
    for (uint32_t q = 0; q < snap->n_queues; q++)
        merge_return(cy, q);
    cy->keys_ready = true;
    if (backlog_init(&cy->bl, arena, !cy->cfg || cy->cfg->n_flavors == 1, snap->n_queues) != 0)
        return SCHED_ENOMEM;
    for (uint32_t h = 0; h < snap->n_holds; h++) { /* a gang with a hold is like no other */
        const struct gang *g = snap->holds[h].gang;
        if (backlog_pin(&cy->bl, backlog_gang_key(g), g->queue) != 0)
            return SCHED_ENOMEM;
    }
    return 0;
}

/* ---- backlog classes (sched/core/backlog.h) --------------------------------------------- */

/* The class key of the gang at position `at` of queue q: kept by the queue list, else computed. */
static uint64_t gang_key(const struct cycle *cy, uint32_t q, uint32_t at)
{
    const struct sched_queue_view *qv = &cy->snap->queues[q];
    return qv->class_keys ? qv->class_keys[at] : backlog_gang_key(qv->pending[at]);
}

/* Did the pod rules take part in g's failure (a verdict of it added since n_before says so)?
 * Then it says nothing of the other gangs of its class. */
static bool by_pod_rules(const struct cycle *cy, const struct gang *g, uint32_t n_before)
{
    for (uint32_t k = n_before; k < cy->out->n_verdicts; k++)
        if (cy->out->verdicts[k].gang == g && cy->out->verdicts[k].by_pod_rules)
            return true;
    return false;
}

/* Records how g ended in pass 0 (verdicts[n_before..] were added while handling it): a failure
 * the cycle would repeat, without effect, for every gang of its class makes the class
 * skippable, with the verdict such a gang would get. */
static int note_class(struct cycle *cy, const struct gang *g, uint32_t q, enum attempt a,
                      enum sched_why why, uint32_t n_before)
{
    bool quota = why == SCHED_WHY_QUOTA; /* quota-never rejects: always tried */
    bool memo =
        why == SCHED_WHY_RESOURCES || why == SCHED_WHY_TOPOLOGY || why == SCHED_WHY_RESERVED;
    bool inert = a == ATTEMPT_FAILED && (quota || memo) &&
                 !(cy->snap->n_holds > 0 && place_has_hold(&cy->st, g)) &&
                 !(memo && by_pod_rules(cy, g, n_before)) && preempt_none(&cy->pc, g, q);
    int64_t v = -1; /* quota: the same verdict again; memo: a copy only when every gang gets one */
    bool copy = cy->snap->verdict_every_gang || (quota && !cy->snap->tried_verdicts_only);
    if (inert && copy) {
        inert =
            cy->out->n_verdicts > n_before && cy->out->verdicts[cy->out->n_verdicts - 1].gang == g;
        v = (int64_t)cy->out->n_verdicts - 1;
    }
    return backlog_note(&cy->bl, gang_key(cy, q, cy->pos[q] - 1), q, cycle_version(cy), inert, v);
}

/* A gang that waits this cycle, for the start planner (in the cycle's order). */
static void note_waiting(struct cycle *cy, const struct gang *g, enum sched_why why)
{
    if (cy->waiting)
        cy->waiting[cy->n_waiting++] = (struct eta_item){.gang = g, .why = why};
}

/* Skips g when its class allows it (backlog.h): true when skipped, *err on out of memory. */
static bool skip_class(struct cycle *cy, const struct gang *g, uint32_t q, bool *err)
{
    const struct sched_queue_view *qv = &cy->snap->queues[q];
    uint64_t version = cycle_version(cy);
    for (bool first = true;; first = false) {
        int64_t v;
        if (!qv->class_keys && cy->pos[q] + BACKLOG_AHEAD < qv->n_pending)
            backlog_prefetch(qv->pending[cy->pos[q] + BACKLOG_AHEAD]); /* gangs lie apart */
        if (!backlog_skip(&cy->bl, gang_key(cy, q, cy->pos[q] - 1), q, version, &v)) {
            if (first)
                return false;
            cy->pos[q]--; /* g goes back: the queue's head again, taken by merge_take */
            break;
        }
        if (!first)
            cy->out->n_examined++;
        if (v >= 0) {
            struct sched_verdict copy = cy->out->verdicts[v];
            copy.gang = g;
            if (!add_verdict(cy, &copy)) {
                *err = true;
                return true;
            }
        }
        /* it waits as its class did (without a verdict to copy: for capacity) */
        note_waiting(cy, g, v >= 0 ? cy->out->verdicts[v].why : SCHED_WHY_RESOURCES);
        /* Alone in the heap, the queue's next gang would be taken next: no heap round trip.
         * Nothing changes while gangs are passed over, so the version holds; when every class
         * left in the queue may be passed over, so may the rest of the queue at once. */
        if (cy->n_heap > 0 || cy->pos[q] >= qv->n_pending)
            break;
        /* asked every BACKLOG_REST_EVERY gangs: the answer is right whenever it is asked */
        uint32_t rest = cy->pos[q] % BACKLOG_REST_EVERY
                            ? 0
                            : backlog_rest(&cy->bl, q, qv->class_keys, qv->n_pending, qv->n_classes,
                                           cy->pos[q], version);
        if (rest > 0) {
            /* the planner plans at most ETA_MAX_PLANNED gangs: list no more than it could use */
            for (uint32_t k = 0; cy->waiting && k < rest && cy->n_waiting < ETA_MAX_PLANNED; k++)
                note_waiting(cy, qv->pending[cy->pos[q] + k], SCHED_WHY_RESOURCES);
            cy->out->n_examined += rest;
            cy->pos[q] += rest;
            break;
        }
        g = qv->pending[cy->pos[q]++];
    }
    merge_return(cy, q);
    return true;
}

static bool strict_queue(const struct cycle *cy, uint32_t q)
{
    return cy->cfg && cy->cfg->queues[q].ordering == CONFIG_STRICT_FIFO;
}

/* Whether the cycle's time budget is spent (snapshot.clock_ns), never before a gang was
 * examined: each cycle decides something, and the next goes on from there. */
static bool out_of_time(struct cycle *cy)
{
    const struct sched_snapshot *s = cy->snap;
    if (!s->clock_ns || cy->out->n_examined == 0 || s->clock_ns() < s->deadline_ns)
        return false;
    cy->out->cut_short = true;
    return true;
}

/* Whether g is passed over untried (snapshot.pass_over); it blocks its queue as a gang that
 * waits does, and *stop says a strict-FIFO cycle ends there. */
static bool passed_over(struct cycle *cy, const struct gang *g, bool *stop)
{
    const struct sched_snapshot *s = cy->snap;
    if (!s->pass_over || g->id >= s->n_pass_over || !s->pass_over[g->id])
        return false;
    *stop = cy->pol->strict_fifo;
    if (strict_queue(cy, g->queue))
        cy->blocked[g->queue] = true;
    return true;
}

/* Passes 0 and 1; 0 or SCHED_ENOMEM. */
static int cycle_run(struct cycle *cy)
{
    /* Pass 0: every queue in fair-share order, admitting within nominal quota only. */
    const struct gang *g;
    uint32_t q;
    while (!out_of_time(cy) && (g = merge_take(cy, &q)) != NULL) {
        bool stop = false;
        if (passed_over(cy, g, &stop)) {
            if (stop)
                return 0;
            merge_return(cy, q);
            continue;
        }
        cy->out->n_examined++;
        bool err = false;
        if (skip_class(cy, g, q, &err)) {
            if (err)
                return SCHED_ENOMEM;
            continue;
        }
        uint32_t n_before = cy->out->n_verdicts;
        enum sched_why why = SCHED_WHY_PLACED;
        enum attempt a = try_gang(cy, q, g, cy->cfg && !cy->pol->strict_fifo ? 0 : 1, &why);
        if (a == ATTEMPT_ERROR || note_class(cy, g, q, a, why, n_before) != 0)
            return SCHED_ENOMEM;
        if (a == ATTEMPT_DEFERRED) {
            cy->deferred[cy->n_deferred++] = g;
            if (strict_queue(cy, q))
                cy->paused[q] = true; /* nothing of this queue passes its head in pass 0 */
        }
        if (a == ATTEMPT_FAILED) {
            bool waits = why != SCHED_WHY_NEVER && why != SCHED_WHY_QUOTA_NEVER &&
                         why != SCHED_WHY_CHECKPOINT; /* by choice: holds no queue */
            note_waiting(cy, g, why);
            if (waits && cy->pol->strict_fifo)
                return 0; /* the baseline: the first gang that cannot start ends the cycle */
            if (waits && strict_queue(cy, q))
                cy->blocked[q] = true;
        }
        merge_return(cy, q);
    }
    /* Pass 1: the gangs that need to borrow, in the same order (none after a cut in pass 0:
     * the clock stays past the deadline). */
    for (uint32_t i = 0; i < cy->n_deferred && !out_of_time(cy); i++) {
        g = cy->deferred[i];
        q = g->queue;
        if (cy->blocked[q]) /* a gang passed over was never deferred */
            continue;
        enum sched_why why = SCHED_WHY_PLACED;
        enum attempt a = try_gang(cy, q, g, 1, &why);
        if (a == ATTEMPT_ERROR)
            return SCHED_ENOMEM;
        uint32_t nv = cy->out->n_verdicts;
        bool pooled =
            nv > 0 && cy->out->verdicts[nv - 1].gang == g && cy->out->verdicts[nv - 1].pool_hold;
        if (a == ATTEMPT_FAILED) /* to the planner, a gang held out of the pool waits for quota */
            note_waiting(cy, g, pooled ? SCHED_WHY_QUOTA : why);
        if (a == ATTEMPT_FAILED && why != SCHED_WHY_NEVER && why != SCHED_WHY_QUOTA_NEVER &&
            why != SCHED_WHY_CHECKPOINT && strict_queue(cy, q))
            cy->blocked[q] = true;
    }
    return 0;
}

static int cycle_all(struct cycle *cy, const struct sched_snapshot *snap, struct arena *arena,
                     struct sched_result *out)
{
    if (cycle_init(cy, snap, arena, out) != 0 || cycle_run(cy) != 0)
        return SCHED_ENOMEM;
    out->n_fit_cached = cy->st.fit_cached;
    if (!snap->plan_starts)
        return 0;
    struct eta_env env = {.snap = snap, .st = &cy->st, .out = out, .arena = arena};
    return eta_plan(&env, cy->waiting, cy->n_waiting);
}

int sched_cycle(const struct sched_snapshot *snap, struct arena *arena, struct sched_result *out)
{
    memset(out, 0, sizeof(*out));
    out->wake_ms = INT64_MAX;
    struct cycle cy;
    memset(&cy, 0, sizeof(cy));
    int rc = cycle_all(&cy, snap, arena, out);
    if (cy.st.b)
        cy.st.b->jr = NULL; /* the cache's journal is in the arena: the base outlives it */
    return rc;
}
