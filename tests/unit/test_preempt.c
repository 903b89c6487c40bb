/* tests/unit/test_preempt.c: victims of preemption and reclaim, chosen whole, by lost work, with
 * bounds (nominal quota, minimum run time, benefit), holds, and no ping-pong between queues. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/core/preempt.h"
#include "sched/sim/nodes.h"

#include "preempt_fx.h"

static void test_reclaim_stops_at_borrower_nominal(void **unused)
{
    (void)unused;
    /* 16 GPUs; b borrows: it runs 12 (nominal 8) in three 4-GPU gangs. a (nominal 8) needs 8:
     * reclaim frees exactly one of b's gangs... a needs 8 and 4 are free: one victim suffices,
     * and b keeps 8 = its nominal. */
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *b1 = gang(w, 1, 1, 4, 0, 0), *b2 = gang(w, 1, 1, 4, 0, 0),
                *b3 = gang(w, 1, 1, 4, 0, 0);
    run(w, b1, n0, 0, 0);
    run(w, b2, n0, 0, 0);
    run(w, b3, n1, 0, 0);
    struct gang *a = gang(w, 0, 1, 8, 0, 100);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_int_equal(r->evictions[0].kind, SCHED_PREEMPT_RECLAIM);
    assert_ptr_equal(r->evictions[0].preemptor, a);
    /* the victim is the gang on node 1, whose eviction gives a whole node */
    assert_true(evicted(r, b3));
    /* a preemptor reservation holds the node for a */
    bool held = false;
    for (uint32_t k = 0; k < r->n_reservations; k++)
        held |= r->reservations[k].preemptor && r->reservations[k].gang == a;
    assert_true(held);
    world_free(w);
}

/* maxReservations (1) limits starvation reservations only: a preemptor's hold on its victims'
 * capacity, planned earlier in the same cycle, does not take the starving gang's slot (it did,
 * and borrowing multi-node gangs of the seven-tenant run went without one for hours). */
static void test_preemptor_hold_leaves_the_starvation_slot(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *b1 = gang(w, 1, 1, 4, 0, 0), *b2 = gang(w, 1, 1, 4, 0, 0),
                *b3 = gang(w, 1, 1, 4, 0, 0);
    run(w, b1, n0, 0, 0);
    run(w, b2, n0, 0, 0);
    run(w, b3, n1, 0, 0);
    struct gang *a = gang(w, 0, 1, 8, 0, 100); /* reclaims b3's node */
    struct gang *b4 = gang(w, 1, 1, 8, 0, 50); /* b over its nominal: waits for quota */
    const struct sched_result *r = cycle(w, "gangsched", 2000); /* b4 waited 1950 s > 10 min */
    assert_int_equal(w->cfg->max_reservations, 1);
    assert_true(evicted(r, b3));
    uint32_t pre = 0, starving = 0;
    for (uint32_t k = 0; k < r->n_reservations; k++) {
        pre += r->reservations[k].preemptor && r->reservations[k].gang == a;
        starving += !r->reservations[k].preemptor && r->reservations[k].gang == b4;
    }
    assert_int_equal(pre, 1);
    assert_int_equal(starving, 1);
    assert_int_equal(r->n_reservations, 2);
    world_free(w);
}

static void test_reclaim_never_below_victim_nominal(void **unused)
{
    (void)unused;
    /* b runs exactly its nominal 8 and a wants more than its own free share: no reclaim */
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n0[] = {0};
    struct gang *b1 = gang(w, 1, 1, 8, 0, 0);
    run(w, b1, n0, 0, 0);
    struct gang *a1 = gang(w, 0, 1, 8, 0, 0);
    uint32_t n1[] = {1};
    run(w, a1, n1, 0, 0);
    gang(w, 0, 1, 8, 0, 100); /* a would go above its nominal: borrowing, not reclaim */
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 0);
    world_free(w);
}

/* b (queue 1) runs two 6-GPU gangs, one per node: 12 of its nominal 8, each gang over it only in
 * part; a (queue 0) runs 2 + 2 GPUs beside them. The nodes are full. */
static struct world *straddled(const char *yaml, struct gang **b1, struct gang **b2)
{
    struct world *w = world("hgx:2", yaml);
    uint32_t n0[] = {0}, n1[] = {1};
    *b1 = gang(w, 1, 1, 6, 0, 0), *b2 = gang(w, 1, 1, 6, 0, 0);
    struct gang *a1 = gang(w, 0, 1, 2, 0, 0), *a2 = gang(w, 0, 1, 2, 0, 0);
    run(w, *b1, n0, 0, 0);
    run(w, *b2, n1, 0, 0);
    run(w, a1, n0, 0, 0);
    run(w, a2, n1, 0, 0);
    return w;
}

/* The cycle's verdict for g (one must be there). */
static const struct sched_verdict *verdict_of(const struct sched_result *r, const struct gang *g)
{
    const struct sched_verdict *v = NULL;
    for (uint32_t k = 0; k < r->n_verdicts; k++)
        if (r->verdicts[k].gang == g)
            v = &r->verdicts[k];
    assert_non_null(v);
    return v;
}

/* b borrows only through gangs that each took it over its nominal quota in part (6 + 6 GPUs,
 * nominal 8): each would leave b below its nominal, so reclaim's bound keeps them. a, within
 * its nominal quota, waits; once it has waited starvation.after (10 min), it may take one. */
static void test_reclaim_takes_a_straddling_gang_after_starvation(void **unused)
{
    (void)unused;
    struct gang *b1, *b2;
    struct world *w = straddled(TWO_QUEUES, &b1, &b2);
    struct gang *a = gang(w, 0, 1, 2, 0, 1000); /* a at 6 of 8 with it */
    w->plan_starts = true;
    const struct sched_result *r = cycle(w, "gangsched", 1100);
    assert_int_equal(r->n_evictions, 0);
    assert_true(r->wake_ms <= (1000 + 600) * 1000); /* it looks again then */
    /* its verdict says why and until when */
    const struct sched_verdict *v = verdict_of(r, a);
    assert_int_equal(v->why, SCHED_WHY_QUOTA);
    assert_int_equal(v->reclaim_after_ms, 600000);
    char text[512];
    sched_verdict_format(v, w->c, w->cfg, text, sizeof(text));
    assert_non_null(strstr(text, "reclaim takes one once this gang has waited 10m"));
    /* and its expected start is then, though no running gang's end is known */
    bool eta = false;
    for (uint32_t k = 0; k < r->n_etas; k++)
        if (r->etas[k].gang == a) {
            assert_int_equal(r->etas[k].kind, SCHED_ETA_AT);
            assert_int_equal(r->etas[k].start_ms, (1000 + 600) * 1000);
            eta = true;
        }
    assert_true(eta);
    r = cycle(w, "gangsched", 1600);
    assert_int_equal(r->n_evictions, 1);
    assert_int_equal(r->evictions[0].kind, SCHED_PREEMPT_RECLAIM);
    assert_ptr_equal(r->evictions[0].preemptor, a);
    assert_true(evicted(r, b1) || evicted(r, b2));
    /* the victim is told what happened */
    assert_true(r->evictions[0].below_nominal);
    sched_eviction_format(&r->evictions[0], "a", text, sizeof(text));
    assert_string_equal(text, "reclaimed by a, which waited starvation.after within its queue's "
                              "nominal quota (this gang took its own queue over its nominal "
                              "quota in part: the queue runs below it now)");
    world_free(w);
}

/* Without a starvation guard (starvation.after 0) reclaim stays within its bound, and the
 * waiting gang's verdict says it waits for the borrower's gangs to end. */
static void test_reclaim_bound_without_guard(void **unused)
{
    (void)unused;
    struct gang *b1, *b2;
    struct world *w = straddled(TWO_QUEUES "starvation:\n  after: 0\n", &b1, &b2);
    (void)b1, (void)b2;
    struct gang *a = gang(w, 0, 1, 2, 0, 0);
    const struct sched_result *r = cycle(w, "gangsched", 100000); /* waited 28 h */
    assert_int_equal(r->n_evictions, 0);
    const struct sched_verdict *v = verdict_of(r, a);
    assert_int_equal(v->reclaim_after_ms, -1);
    char text[512];
    sched_verdict_format(v, w->c, w->cfg, text, sizeof(text));
    assert_non_null(strstr(text, "reclaim never takes them"));
    world_free(w);
}

/* A plan within the bound is preferred to a cheaper one that takes the borrower below its
 * nominal quota: b runs 1 + 6 + 6 (nominal 8); a wants 1 GPU, past starvation.after. The
 * 6-GPU gang checkpointed 10 s ago (60 GPU-seconds lost) is cheaper than the 1-GPU gang that
 * never did (1,600), but only the latter leaves b at its nominal quota or above. */
static void test_reclaim_prefers_the_bound(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *x = gang(w, 1, 1, 1, 0, 0), *y = gang(w, 1, 1, 6, 0, 0),
                *z = gang(w, 1, 1, 6, 0, 0);
    struct gang *a1 = gang(w, 0, 1, 1, 0, 0), *a2 = gang(w, 0, 1, 2, 0, 0);
    run(w, x, n0, 0, 0);
    run(w, y, n0, 0, 1590);
    run(w, a1, n0, 0, 0);
    run(w, z, n1, 0, 0);
    run(w, a2, n1, 0, 0);
    struct gang *a = gang(w, 0, 1, 1, 0, 0);
    const struct sched_result *r = cycle(w, "gangsched", 1600);
    assert_int_equal(r->n_evictions, 1);
    assert_ptr_equal(r->evictions[0].preemptor, a);
    assert_true(evicted(r, x));
    assert_false(r->evictions[0].below_nominal);
    char text[256];
    assert_string_equal(sched_eviction_format(&r->evictions[0], "a", text, sizeof(text)),
                        "reclaimed by a");
    world_free(w);
}

static void test_small_victim_before_big_gang(void **unused)
{
    (void)unused;
    /* queue a: a 4-node gang (priority 0) and a 1-GPU job (priority 0) fill 4 nodes but one GPU;
     * a priority-5 gang needing 1 GPU evicts the 1-GPU job, never the 4-node gang */
    struct world *w = world("hgx:4", HDR "queues:\n  - name: a\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 64\n  - name: b\n");
    uint32_t four[] = {0, 1, 2, 3}, last[] = {3};
    struct gang *big = gang(w, 0, 4, 7, 0, 0);
    struct gang *small = gang(w, 0, 1, 1, 0, 0);
    run(w, big, four, 0, 0);
    run(w, small, last, 0, 0);
    /* every node has 1 free GPU except node 3: fill those with 1-GPU jobs of the big gang's
     * queue so that nothing is free */
    uint32_t n0[] = {0}, n1[] = {1}, n2[] = {2};
    run(w, gang(w, 0, 1, 1, 0, 0), n0, 0, 0);
    run(w, gang(w, 0, 1, 1, 0, 0), n1, 0, 0);
    run(w, gang(w, 0, 1, 1, 0, 0), n2, 0, 0);
    struct gang *urgent = gang(w, 0, 1, 1, 5, 100);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_false(evicted(r, big));
    assert_ptr_equal(r->evictions[0].preemptor, urgent);
    world_free(w);
}

/* preemptionPolicy Never (Kubernetes): the same urgent gang that preempts above neither preempts
 * within its queue nor reclaims from a borrower; it waits. */
static void test_never_preempts(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:4", HDR "queues:\n  - name: a\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 64\n  - name: b\n");
    uint32_t n0[] = {0}, n1[] = {1}, n2[] = {2}, n3[] = {3};
    uint32_t *nodes[] = {n0, n1, n2, n3};
    for (int i = 0; i < 4; i++)
        run(w, gang(w, 0, 1, 8, 0, 0), nodes[i], 0, 0);
    struct gang *urgent = gang(w, 0, 1, 1, 5, 100);
    urgent->never_preempts = true;
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 0);
    assert_int_equal(r->n_placements, 0);
    world_free(w);
    /* reclaim: a (nominal 8) waits for 8 GPUs that borrower b holds */
    w = world("hgx:2", TWO_QUEUES);
    run(w, gang(w, 1, 1, 8, 0, 0), n0, 0, 0);
    run(w, gang(w, 1, 1, 8, 0, 0), n1, 0, 0);
    struct gang *a = gang(w, 0, 1, 8, 0, 100);
    a->never_preempts = true;
    r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 0);
    a->never_preempts = false; /* the same gang allowed to: it reclaims */
    r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    world_free(w);
}

/* An elastic gang (minMember below its pods) loses members before it is evicted whole: only as
 * many as the preemptor needs, never below its minMember; beyond that the whole gang goes. */
#define LENDER_AND_BORROWER                                                                        \
    HDR "cohorts:\n  - name: co\nqueues:\n"                                                        \
        "  - name: a\n    cohort: co\n    quota:\n      default:\n        nvidia.com/gpu: 32\n"    \
        "  - name: b\n    cohort: co\n"

static const struct sched_result *elastic_case(struct world **wp, uint32_t want_pods,
                                               struct gang **victim, bool spread)
{
    struct world *w = *wp = world("hgx:4", LENDER_AND_BORROWER);
    uint32_t four[] = {0, 1, 2, 3};
    struct gang *el = gang(w, 1, 4, 8, 0, 0); /* b borrows 32 GPUs, 4 pods of a node each */
    el->min_member = 2;
    el->spread = spread; /* an inference gang: losing a replica loses that replica's work only */
    run(w, el, four, 0, 0);
    gang(w, 0, want_pods, 8, 0, 100);
    *victim = el;
    return cycle(w, "gangsched", 200);
}

static void test_elastic_gang_loses_members_first(void **unused)
{
    (void)unused;
    struct world *w;
    struct gang *el;
    const struct sched_result *r = elastic_case(&w, 1, &el, false);
    assert_int_equal(r->n_evictions, 1);
    const struct sched_eviction *ev = &r->evictions[0];
    assert_ptr_equal(ev->victim->gang, el);
    assert_int_equal(ev->kind, SCHED_PREEMPT_RECLAIM);
    assert_non_null(ev->pods);
    assert_int_equal(ev->n_pods, 1); /* one node is all it needs */
    /* a training gang: every worker goes back to the last checkpoint, 32 GPUs x 200 s */
    assert_true(ev->lost_gpu_s > 32 * 200 - 1 && ev->lost_gpu_s < 32 * 200 + 1);
    /* the preemptor holds the node of the member evicted */
    uint32_t node = ev->victim->pods[ev->pods[0]].node;
    bool held = false;
    for (uint32_t k = 0; k < r->n_reservations; k++)
        held |= r->reservations[k].preemptor && r->reservations[k].n_nodes == 1 &&
                r->reservations[k].nodes[0] == node;
    assert_true(held);
    world_free(w);

    r = elastic_case(&w, 1, &el, true); /* an inference gang: that replica's work, 8 x 200 */
    assert_int_equal(r->n_evictions, 1);
    assert_int_equal(r->evictions[0].n_pods, 1);
    assert_true(r->evictions[0].lost_gpu_s > 8 * 200 - 1 &&
                r->evictions[0].lost_gpu_s < 8 * 200 + 1);
    world_free(w);

    r = elastic_case(&w, 2, &el, false); /* two members: down to its minMember, it runs on */
    assert_int_equal(r->n_evictions, 1);
    assert_non_null(r->evictions[0].pods);
    assert_int_equal(r->evictions[0].n_pods, 2);
    assert_true(r->evictions[0].pods[0] < r->evictions[0].pods[1]);
    world_free(w);

    r = elastic_case(&w, 3, &el, false); /* three: below its minMember, the whole gang goes */
    assert_int_equal(r->n_evictions, 1);
    assert_ptr_equal(r->evictions[0].victim->gang, el);
    assert_null(r->evictions[0].pods);
    assert_true(r->evictions[0].lost_gpu_s > 32 * 200 - 1);
    world_free(w);
}

/* A training gang's member costs the whole gang's unsaved work (every worker goes back to the
 * checkpoint): a rigid gang that loses less is taken instead; one that loses more is not. */
static bool member_of_elastic_taken(int64_t el_ckpt_s)
{
    struct world *w = world("hgx:3", LENDER_AND_BORROWER);
    uint32_t two[] = {0, 1}, last[] = {2};
    struct gang *el = gang(w, 1, 2, 8, 0, 0);
    el->min_member = 1;
    run(w, el, two, 0, el_ckpt_s);
    struct gang *rigid = gang(w, 1, 1, 8, 0, 0);
    run(w, rigid, last, 0, 0); /* 8 GPUs x 200 s unsaved */
    gang(w, 0, 1, 8, 0, 100);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    bool member = r->evictions[0].victim->gang == el;
    if (member)
        assert_int_equal(r->evictions[0].n_pods, 1);
    else
        assert_ptr_equal(r->evictions[0].victim->gang, rigid);
    world_free(w);
    return member;
}

static void test_training_member_costs_the_gang(void **unused)
{
    (void)unused;
    assert_false(member_of_elastic_taken(0));  /* 16 GPUs x 200 s against 8 x 200 */
    assert_true(member_of_elastic_taken(190)); /* 16 GPUs x 10 s against 8 x 200 */
}

/* The same gang with minMember equal to its pods is one victim, whole (as before elastic gangs
 * lost members). */
static void test_rigid_gang_goes_whole(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:4", LENDER_AND_BORROWER);
    uint32_t four[] = {0, 1, 2, 3};
    struct gang *rigid = gang(w, 1, 4, 8, 0, 0);
    rigid->min_member = 4;
    run(w, rigid, four, 0, 0);
    gang(w, 0, 1, 8, 0, 100);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_null(r->evictions[0].pods);
    world_free(w);
}

static void test_most_recent_checkpoint_chosen(void **unused)
{
    (void)unused;
    /* two equal victims (same size, priority, start); one checkpointed a minute ago, one an
     * hour ago: the checkpoint-aware policy evicts the fresh one; the blind one the other */
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 16\n");
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *old_ckpt = gang(w, 0, 1, 8, 0, 0);
    struct gang *fresh = gang(w, 0, 1, 8, 0, 0);
    run(w, old_ckpt, n0, 1000, 4000);
    run(w, fresh, n1, 100, 7540);
    gang(w, 0, 1, 8, 5, 7000);
    const struct sched_result *r = cycle(w, "gangsched", 7600);
    assert_int_equal(r->n_evictions, 1);
    assert_true(evicted(r, fresh));
    assert_true(r->evictions[0].lost_gpu_s < 8 * 61);
    r = cycle(w, "ckpt-blind", 7600);
    assert_int_equal(r->n_evictions, 1);
    assert_true(evicted(r, old_ckpt)); /* most recently started */
    world_free(w);
}

static void test_min_runtime_and_benefit(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:1", HDR "queues:\n  - name: a\n    preemption:\n"
                                         "      minRuntime: 10m\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 16\n");
    uint32_t n0[] = {0};
    struct gang *v = gang(w, 0, 1, 8, 0, 0);
    struct sched_running *rv = run(w, v, n0, 1000, 1000);
    rv->min_runtime_ms = 600000;
    gang(w, 0, 1, 8, 5, 1100);
    const struct sched_result *r = cycle(w, "gangsched", 1200); /* ran 200 s < 10 min */
    assert_int_equal(r->n_evictions, 0);
    /* when time alone changes that: the victim's 10 min end at 1600 s (before the preemptor
     * starves at 1700 s) */
    assert_int_equal(r->wake_ms, 1600 * 1000);
    r = cycle(w, "gangsched", 1700);
    assert_int_equal(r->n_evictions, 1);
    world_free(w);
    /* benefit: one GPU never restarts 8 GPUs with 5 hours of unsaved work */
    w = world("hgx:1", HDR "queues:\n  - name: a\n    quota:\n      default:\n"
                           "        nvidia.com/gpu: 16\n");
    struct gang *big = gang(w, 0, 1, 8, 0, 0);
    run(w, big, n0, 0, 0);
    gang(w, 0, 1, 1, 5, 18000);
    r = cycle(w, "gangsched", 18000);
    assert_int_equal(r->n_evictions, 0);
    r = cycle(w, "ckpt-blind", 18000); /* the blind baseline has no benefit rule */
    assert_int_equal(r->n_evictions, 1);
    world_free(w);
}

/* A priority preemption that does not pay yet says when it will: an 8-GPU gang of priority 10
 * (16 GPU-s of benefit per second waited, at least an hour's) behind one of priority 0 that has
 * run 4 h unsaved (its cost grows by 8 GPU-s per second) pays after 4 h more. A driver that runs
 * cycles only on events (the simulator) runs one then, as the daemon's re-check would, and the
 * gang's expected start is that time (eta_evictions). */
static void test_benefit_says_when_it_pays(void **unused)
{
    (void)unused;
    struct world *w =
        world("hgx:1", HDR "starvation: {after: 0s}\nqueues:\n  - name: a\n"
                           "    quota:\n      default:\n        nvidia.com/gpu: 16\n");
    uint32_t n0[] = {0};
    struct gang *low = gang(w, 0, 1, 8, 0, 0);
    run(w, low, n0, 0, 0);
    struct gang *high = gang(w, 0, 1, 8, 10, 14400);
    w->plan_starts = true;
    w->state[0].release_ms = 50000 * 1000; /* `low` is expected to end at 50,000 s */
    const struct sched_result *r = cycle(w, "gangsched", 14400);
    assert_int_equal(r->n_evictions, 0);
    assert_int_equal(r->wake_ms, 28800 * 1000);
    /* and its expected start is then, not when `low` ends (the planner knows no eviction) */
    bool seen = false;
    for (uint32_t k = 0; k < r->n_etas; k++)
        if (r->etas[k].gang == high) {
            seen = true;
            assert_int_equal(r->etas[k].kind, SCHED_ETA_AT);
            assert_int_equal(r->etas[k].start_ms, 28800 * 1000);
        }
    assert_true(seen);
    r = cycle(w, "gangsched", 28799);
    assert_int_equal(r->n_evictions, 0);
    assert_int_equal(r->wake_ms, 28800 * 1000);
    r = cycle(w, "gangsched", 28800);
    assert_int_equal(r->n_evictions, 1);
    world_free(w);
    /* a victim whose cost grows as fast as the benefit never pays: no wake-up */
    w = world("hgx:1", HDR "starvation: {after: 0s}\nqueues:\n  - name: a\n"
                           "    quota:\n      default:\n        nvidia.com/gpu: 16\n");
    low = gang(w, 0, 1, 8, 0, 0);
    run(w, low, n0, 0, 0);
    gang(w, 0, 1, 1, 5, 18000); /* 1.5 GPU-s per second against 8 */
    r = cycle(w, "gangsched", 18000);
    assert_int_equal(r->n_evictions, 0);
    assert_true(r->wake_ms == INT64_MAX);
    world_free(w);
}

static void test_no_reclaim_ping_pong(void **unused)
{
    (void)unused;
    /* after a reclaims from b, a is within nominal and b no longer borrows: b's waiting gang
     * cannot reclaim back */
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *a1 = gang(w, 0, 1, 8, 0, 0);
    struct gang *b1 = gang(w, 1, 1, 8, 0, 0);
    run(w, a1, n0, 0, 0);
    run(w, b1, n1, 0, 0);
    gang(w, 1, 1, 8, 0, 10); /* b wants more: it would borrow, a is within nominal */
    const struct sched_result *r = cycle(w, "gangsched", 100);
    assert_int_equal(r->n_evictions, 0);
    world_free(w);
}

static void test_fair_share_preemption_one_way(void **unused)
{
    (void)unused;
    /* One cohort of 16: a (nominal 4) runs 4 and wants 4 more, b (nominal 2) runs 12 in three
     * gangs, c (nominal 10) is idle: both a and b borrow c's quota. With fairSharePreemption, a
     * may take one of b's gangs: a's share with it, 8/4 = 2, is below b's without it, 8/2 = 4.
     * Then b cannot take it back: 12/2 = 6 is not below (8-4)/4 = 1. */
    const char *yaml =
        HDR "cohorts:\n  - name: co\nqueues:\n"
            "  - name: a\n    cohort: co\n    preemption: {fairSharePreemption: true}\n"
            "    quota:\n      default:\n        nvidia.com/gpu: 4\n"
            "  - name: b\n    cohort: co\n    preemption: {fairSharePreemption: true}\n"
            "    quota:\n      default:\n        nvidia.com/gpu: 2\n"
            "  - name: c\n    cohort: co\n"
            "    quota:\n      default:\n        nvidia.com/gpu: 10\n";
    struct world *w = world("hgx:2", yaml);
    uint32_t n0[] = {0}, n1[] = {1};
    run(w, gang(w, 0, 1, 4, 0, 0), n0, 0, 0);
    run(w, gang(w, 1, 1, 4, 0, 0), n0, 0, 0);
    run(w, gang(w, 1, 1, 4, 0, 0), n1, 0, 0);
    run(w, gang(w, 1, 1, 4, 0, 0), n1, 0, 0);
    struct gang *a2 = gang(w, 0, 1, 4, 0, 100);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_int_equal(r->evictions[0].kind, SCHED_PREEMPT_FAIR_SHARE);
    assert_ptr_equal(r->evictions[0].preemptor, a2);
    assert_int_equal(r->evictions[0].victim->gang->queue, 1);
    world_free(w);
    /* the state after: a runs 8, b runs 8 and wants 4 more: no preemption back */
    w = world("hgx:2", yaml);
    run(w, gang(w, 0, 1, 4, 0, 0), n0, 0, 0);
    run(w, gang(w, 0, 1, 4, 0, 0), n0, 0, 0);
    run(w, gang(w, 1, 1, 4, 0, 0), n1, 0, 0);
    run(w, gang(w, 1, 1, 4, 0, 0), n1, 0, 0);
    gang(w, 1, 1, 4, 0, 300);
    r = cycle(w, "gangsched", 400);
    assert_int_equal(r->n_evictions, 0);
    world_free(w);
}

#define BIG                                                                                        \
    HDR "cohorts:\n  - name: co\nqueues:\n"                                                        \
        "  - name: a\n    cohort: co\n    quota:\n      default:\n        nvidia.com/gpu: 64\n"    \
        "  - name: b\n    cohort: co\n    quota:\n      default:\n        nvidia.com/gpu: 64\n"

/* Regressions found in review: several preemptors in one cycle see each other's plans. */
static void test_two_reclaims_in_one_cycle_stay_bounded(void **unused)
{
    (void)unused;
    /* b runs 16 of its nominal 8 in four 4-GPU gangs; a has two 8-GPU gangs waiting: the first
     * reclaims 8, the second may not take b below its nominal 8 */
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n0[] = {0}, n1[] = {1};
    for (int k = 0; k < 4; k++)
        run(w, gang(w, 1, 1, 4, 0, 0), k < 2 ? n0 : n1, 0, 0);
    struct gang *a1 = gang(w, 0, 1, 8, 0, 100);
    gang(w, 0, 1, 8, 0, 101);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 2);
    for (uint32_t e = 0; e < r->n_evictions; e++)
        assert_ptr_equal(r->evictions[e].preemptor, a1);
    world_free(w);
}

static void test_preemptors_do_not_share_capacity(void **unused)
{
    (void)unused;
    /* one node, 4 GPUs free and two 2-GPU gangs running: two 6-GPU gangs of higher priority
     * cannot both fit: one eviction, not two */
    struct world *w = world("hgx:1", TWO_QUEUES);
    uint32_t n0[] = {0};
    run(w, gang(w, 0, 1, 2, 0, 0), n0, 0, 0);
    run(w, gang(w, 0, 1, 2, 0, 0), n0, 0, 0);
    gang(w, 0, 1, 6, 10, 100);
    gang(w, 0, 1, 6, 10, 101);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    world_free(w);
    /* and the capacity a preemptor counts on is not given to another gang in the same cycle;
     * that gang's reason names the preemptor the node is held for */
    w = world("hgx:1", BIG);
    run(w, gang(w, 0, 1, 4, 0, 0), n0, 0, 0);
    struct gang *pre = gang(w, 0, 1, 8, 10, 100);
    struct gang *small = gang(w, 0, 1, 4, 0, 150);
    pre->name = "team/big";
    r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_int_equal(r->n_placements, 0);
    const struct sched_verdict *v = NULL;
    for (uint32_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].gang == small)
            v = &r->verdicts[i];
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_RESERVED);
    assert_ptr_equal(v->blocked_by, pre);
    assert_true(v->held_for_preemptor);
    char msg[1024];
    sched_verdict_format(v, w->c, w->cfg, msg, sizeof(msg));
    if (!strstr(msg, "it would start now on nodes held for team/big until the gangs it preempts "
                     "there are gone"))
        fail_msg("reserved reason: %s", msg);
    world_free(w);
}

/* One cycle of w with p alone pending in queue 0 and p's hold on node 0 (replan as given). */
static void cycle_with_hold(struct world *w, struct gang *p, bool replan)
{
    uint32_t held[] = {0};
    struct sched_hold hold = {.gang = p, .nodes = held, .n_nodes = 1, .replan = replan};
    for (uint32_t q = 0; q < 2; q++) {
        w->queues[q] = (struct queue){.name = w->cfg->queues[q].name, .weight = 1};
        w->views[q] = (struct sched_queue_view){.queue = &w->queues[q], .pending = w->pending[q]};
    }
    w->pending[0][0] = p;
    w->views[0].n_pending = 1;
    struct sched_snapshot snap = {.now_ms = 200000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = w->views,
                                  .n_queues = 2,
                                  .policy = sched_policy_find("gangsched"),
                                  .config = w->cfg,
                                  .usage = w->usage,
                                  .running = w->running,
                                  .n_running = w->n_running,
                                  .holds = &hold,
                                  .n_holds = 1};
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
}

static void test_evicting_victims_are_waited_for(void **unused)
{
    (void)unused;
    /* P holds node 0 where its victim is still checkpointing: nobody else is evicted */
    struct world *w = world("hgx:2", BIG);
    uint32_t n0[] = {0}, n1[] = {1};
    struct sched_running *r1 = run(w, gang(w, 0, 1, 8, 0, 0), n0, 0, 0);
    run(w, gang(w, 0, 1, 8, 0, 0), n1, 0, 0);
    r1->evicting = true;
    cycle_with_hold(w, gang(w, 0, 1, 8, 10, 100), false);
    assert_int_equal(w->res.n_evictions, 0);
    world_free(w);
}

/* One of replan_cases: P's hold is on node 0, whose victim v0 (4 GPUs) is still leaving or
 * gone; a 4-GPU gang a stays there; nodes 1 and 2 run 8-GPU gangs. */
struct replan_case {
    bool replan, leaving;
    uint32_t evictions; /* expected */
};

static void test_replan_hold_plans_once_victims_gone(void **unused)
{
    (void)unused;
    /* a hold waits for its victims; one marked replan (restored by a new leader, without what
     * else its plan counted on) waits only while gangs on its nodes leave, then plans for what
     * is missing: a, whose 4 GPUs with the 4 held make room on node 0 */
    static const struct replan_case cases[] = {
        {false, true, 0}, {true, true, 0}, {false, false, 0}, {true, false, 1}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct world *w = world("hgx:3", BIG);
        uint32_t n0[] = {0}, n1[] = {1}, n2[] = {2};
        if (cases[c].leaving)
            run(w, gang(w, 0, 1, 4, 0, 0), n0, 0, 0)->evicting = true;
        struct gang *a = gang(w, 0, 1, 4, 0, 0);
        run(w, a, n0, 0, 0);
        run(w, gang(w, 0, 1, 8, 0, 0), n1, 0, 0);
        run(w, gang(w, 0, 1, 8, 0, 0), n2, 0, 0);
        cycle_with_hold(w, gang(w, 0, 1, 8, 10, 100), cases[c].replan);
        assert_int_equal(w->res.n_evictions, cases[c].evictions);
        if (cases[c].evictions)
            assert_true(evicted(&w->res, a));
        world_free(w);
    }
}

static void test_equal_priority_no_loop(void **unused)
{
    (void)unused;
    /* LowerOrNewerEqualPriority compares submission times: V (submitted 0) and P (submitted 50)
     * can never each be the newer one */
    const char *yaml = HDR "queues:\n  - name: a\n    preemption:\n"
                           "      withinQueue: LowerOrNewerEqualPriority\n    quota:\n"
                           "      default:\n        nvidia.com/gpu: 64\n";
    struct world *w = world("hgx:1", yaml);
    uint32_t n0[] = {0};
    run(w, gang(w, 0, 1, 8, 0, 0), n0, 100, 100);
    gang(w, 0, 1, 8, 0, 50);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 0); /* P is newer: it cannot evict V */
    world_free(w);
}

static void test_reclaim_stays_in_its_cohort_tree(void **unused)
{
    (void)unused;
    /* b (cohort y) borrows from c (cohort y); a in cohort x must not reclaim from b */
    const char *yaml = HDR "cohorts:\n  - name: x\n  - name: y\nqueues:\n"
                           "  - name: a\n    cohort: x\n    quota:\n      default:\n"
                           "        nvidia.com/gpu: 8\n"
                           "  - name: b\n    cohort: y\n    quota:\n      default:\n"
                           "        nvidia.com/gpu: 4\n"
                           "  - name: c\n    cohort: y\n    quota:\n      default:\n"
                           "        nvidia.com/gpu: 4\n";
    struct world *w = world("hgx:1", yaml);
    uint32_t n0[] = {0};
    run(w, gang(w, 1, 1, 4, 0, 0), n0, 0, 0);
    run(w, gang(w, 1, 1, 4, 0, 0), n0, 0, 0);
    gang(w, 0, 1, 4, 0, 50);
    const struct sched_result *r = cycle(w, "gangsched", 4000);
    assert_int_equal(r->n_evictions, 0);
    world_free(w);
}

static void test_quota_freed_outside_the_domain(void **unused)
{
    (void)unused;
    /* queue a (nominal 12, no cohort) runs a high-priority 4-GPU gang and a low-priority 4-GPU
     * gang on node 1; node 0 is free. A high-priority 8-GPU gang has room on node 0 but no
     * quota: the low-priority gang on node 1 is evicted to free the quota. */
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 12\n  - name: b\n");
    uint32_t n1[] = {1};
    run(w, gang(w, 0, 1, 4, 10, 0), n1, 0, 0);
    struct gang *low = gang(w, 0, 1, 4, 0, 0);
    run(w, low, n1, 0, 0);
    struct gang *p = gang(w, 0, 1, 8, 10, 100);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_true(evicted(r, low));
    assert_ptr_equal(r->evictions[0].preemptor, p);
    world_free(w);
}

static void test_holds_keep_freed_capacity(void **unused)
{
    (void)unused;
    /* node 0 is held for preemptor p: another gang cannot take it, p can */
    struct world *w = world("hgx:2", TWO_QUEUES);
    uint32_t n1[] = {1};
    run(w, gang(w, 1, 1, 8, 0, 0), n1, 0, 0);
    struct gang *other = gang(w, 1, 1, 8, 0, 1);
    struct gang *p = gang(w, 0, 1, 8, 0, 5);
    uint32_t held_nodes[] = {0};
    struct sched_hold hold = {.gang = p, .nodes = held_nodes, .n_nodes = 1};
    const struct sched_policy *pol = sched_policy_find("gangsched");
    for (uint32_t q = 0; q < 2; q++) {
        w->queues[q] = (struct queue){.name = w->cfg->queues[q].name, .weight = 1};
        w->views[q] = (struct sched_queue_view){.queue = &w->queues[q], .pending = w->pending[q]};
    }
    w->pending[1][0] = other;
    w->views[1].n_pending = 1;
    struct sched_snapshot snap = {.now_ms = 100000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = w->views,
                                  .n_queues = 2,
                                  .policy = pol,
                                  .config = w->cfg,
                                  .usage = w->usage,
                                  .holds = &hold,
                                  .n_holds = 1};
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    assert_int_equal(w->res.n_placements, 0); /* other may not use the held node */
    w->pending[0][0] = p;
    w->views[0].n_pending = 1;
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    assert_int_equal(w->res.n_placements, 1);
    assert_ptr_equal(w->res.placements[0].gang, p);
    assert_int_equal(w->res.placements[0].pods[0].node, 0);
    world_free(w);
}

/* Two 8-GPU victims, one per node, whose checkpoints are a_s (node 0) and b_s (node 1) seconds
 * old at t = 10000: does the checkpoint-aware planner evict the one on node 0 for an 8-GPU
 * preemptor? */
/* Backfill on probation. One queue on four 8-GPU nodes: x runs on node 0, s on node 1 on
 * probation for big (24 GPUs, waiting since 0 and holding a reservation) until 1,000 s; nodes 2
 * and 3 are free. `until`, `for_big`, `hint`, `big_submit_s` and `now_s` vary one at a time. */
#define ONE_QUEUE(min) HDR "starvation: {probationMinGpus: " min "}\nqueues:\n  - name: a\n"
struct overdue_case {
    const char *yaml;
    int64_t until_s, big_submit_s, now_s;
    bool for_big, hint;
};

static const struct sched_result *overdue_world(struct world **wp, const struct overdue_case *oc,
                                                struct gang **big, struct gang **s)
{
    struct world *w = *wp = world("hgx:4", oc->yaml);
    uint32_t n0[] = {0}, n1[] = {1}, held[] = {1, 2, 3};
    struct gang *x = gang(w, 0, 1, 8, 0, 0);
    *big = gang(w, 0, 3, 8, 0, oc->big_submit_s);
    struct gang *other = gang(w, 0, 3, 8, 0, oc->big_submit_s + 1);
    *s = gang(w, 0, 1, 8, 0, 10);
    run(w, x, n0, 0, 0);
    struct sched_running *r = run(w, *s, n1, 100, 100);
    r->probation_until_ms = oc->until_s * 1000;
    r->probation_for = oc->for_big ? *big : other;
    static struct sched_hold hint;
    hint = (struct sched_hold){.gang = *big, .nodes = held, .n_nodes = 3};
    w->hints = oc->hint ? &hint : NULL;
    w->n_hints = oc->hint ? 1 : 0;
    return cycle(w, "gangsched", oc->now_s);
}

static void test_overdue_backfill_evicted_by_its_starving_gang(void **unused)
{
    (void)unused;
    struct world *w;
    struct gang *big, *s;
    struct overdue_case oc = {ONE_QUEUE("17"), 1000, 0, 2000, true, true};
    const struct sched_result *r = overdue_world(&w, &oc, &big, &s);
    assert_int_equal(r->n_evictions, 1);
    assert_ptr_equal(r->evictions[0].victim->gang, s);
    assert_ptr_equal(r->evictions[0].preemptor, big);
    assert_int_equal(r->evictions[0].kind, SCHED_PREEMPT_OVERDUE);
    assert_string_equal(sched_preempt_kind_name(r->evictions[0].kind), "overdue");
    world_free(w);
}

/* Each condition alone keeps the backfill running: its promise not yet due, a promise to
 * another gang, no reservation held, a preemptor that does not starve yet, one below
 * probationMinGpus, and the rule turned off. */
static void test_overdue_backfill_kept_otherwise(void **unused)
{
    (void)unused;
    static const struct overdue_case cases[] = {
        {ONE_QUEUE("17"), 2500, 0, 2000, true, true},    /* not due */
        {ONE_QUEUE("17"), 1000, 0, 2000, false, true},   /* promised to another */
        {ONE_QUEUE("17"), 1000, 0, 2000, true, false},   /* no reservation held */
        {ONE_QUEUE("17"), 1000, 1500, 2000, true, true}, /* waited 500 s < 10 min */
        {ONE_QUEUE("25"), 1000, 0, 2000, true, true},    /* 24 GPUs < 25 */
        {ONE_QUEUE("0"), 1000, 0, 2000, true, true},     /* off */
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct world *w;
        struct gang *big, *s;
        const struct sched_result *r = overdue_world(&w, &cases[k], &big, &s);
        for (uint32_t e = 0; e < r->n_evictions; e++)
            fail_msg("case %zu: %s evicted", k, sched_preempt_kind_name(r->evictions[e].kind));
        world_free(w);
    }
}

/* A gang placed while a starving gang of 17+ GPUs holds the cycle's earliest reservation, on
 * the estimate that it ends before that reservation's start, is placed on probation for it;
 * below probationMinGpus it is not (that gang could never evict it). */
static void test_backfill_placed_on_probation(void **unused)
{
    (void)unused;
    const char *mins[] = {"17", "25"};
    for (int k = 0; k < 2; k++) {
        char yaml[256];
        snprintf(yaml, sizeof(yaml), ONE_QUEUE("%s"), mins[k]);
        struct world *w = world("hgx:4", yaml);
        uint32_t n0[] = {0}, n1[] = {1};
        struct gang *x1 = gang(w, 0, 1, 8, 0, 0), *x2 = gang(w, 0, 1, 8, 0, 0);
        run(w, x1, n0, 0, 0);
        run(w, x2, n1, 0, 0);
        for (uint32_t i = 0; i < 4; i++)
            w->state[i].release_ms = i < 2 ? 3600 * 1000 : 0; /* x1, x2 declared to 1 h */
        struct gang *big = gang(w, 0, 3, 8, 0, 0);
        struct gang *s = gang(w, 0, 1, 8, 0, 1900);
        s->max_runtime_ms = 600 * 1000; /* ends at 2,500 s, before the reservation's start */
        const struct sched_result *r = cycle(w, "gangsched", 2000);
        assert_int_equal(r->n_reservations, 1);
        assert_ptr_equal(r->reservations[0].gang, big);
        assert_int_equal(r->reservations[0].expected_start_ms, 3600 * 1000);
        assert_int_equal(r->n_placements, 1);
        assert_ptr_equal(r->placements[0].gang, s);
        if (k == 0)
            assert_ptr_equal(r->placements[0].probation_for, big);
        else
            assert_null(r->placements[0].probation_for);
        world_free(w);
    }
}

/* The same with s in another queue (and x1, x2 in it, so that big's queue goes first): s is not
 * on probation, since big could never evict a gang of another queue. */
static void test_backfill_of_another_queue_not_on_probation(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:4", HDR "starvation: {probationMinGpus: 17}\nqueues:\n"
                                         "  - name: a\n  - name: b\n");
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *x1 = gang(w, 1, 1, 8, 0, 0), *x2 = gang(w, 1, 1, 8, 0, 0);
    run(w, x1, n0, 0, 0);
    run(w, x2, n1, 0, 0);
    for (uint32_t i = 0; i < 4; i++)
        w->state[i].release_ms = i < 2 ? 3600 * 1000 : 0;
    struct gang *big = gang(w, 0, 3, 8, 0, 0);
    struct gang *s = gang(w, 1, 1, 8, 0, 1900);
    s->max_runtime_ms = 600 * 1000;
    const struct sched_result *r = cycle(w, "gangsched", 2000);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->n_placements, 1);
    assert_ptr_equal(r->placements[0].gang, s);
    assert_null(r->placements[0].probation_for);
    world_free(w);
}

/* Probation only where big's overdue eviction could take the gang (preempt.c): as in
 * test_backfill_placed_on_probation, s is placed while big holds the reservation, but s is
 * non-preemptible (case 0), or lands on another flavor than big's reservation (case 1: the
 * three H100 nodes run x1..x3, s takes the L40S node). Case 2, s preemptible on big's flavor,
 * is on probation. */
static void test_no_probation_big_cannot_act_on(void **unused)
{
    (void)unused;
    static const char flavors[] =
        HDR "starvation: {probationMinGpus: 17}\nflavors:\n"
            "  - name: h100\n    nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
            "  - name: l40s\n    nodeLabels: {nvidia.com/gpu.product: NVIDIA-L40S}\n"
            "queues:\n  - name: a\n    quota:\n      h100: {nvidia.com/gpu: 64}\n"
            "      l40s: {nvidia.com/gpu: 64}\n";
    for (int k = 0; k < 3; k++) {
        bool flavored = k == 1;
        struct world *w =
            flavored ? world("hgx:3,pcie:1", flavors) : world("hgx:4", ONE_QUEUE("17"));
        uint32_t busy = flavored ? 3 : 2;
        for (uint32_t i = 0; i < busy; i++) {
            uint32_t node[] = {i};
            run(w, gang(w, 0, 1, 8, 0, 0), node, 0, 0);
        }
        for (uint32_t i = 0; i < 4; i++)
            w->state[i].release_ms = i < busy ? 3600 * 1000 : 0; /* declared to 1 h */
        struct gang *big = gang(w, 0, 3, 8, 0, 0);
        struct gang *s = gang(w, 0, 1, 8, 0, 1900);
        s->max_runtime_ms = 600 * 1000;
        s->non_preemptible = k == 0;
        const struct sched_result *r = cycle(w, "gangsched", 2000);
        assert_int_equal(r->n_reservations, 1);
        assert_ptr_equal(r->reservations[0].gang, big);
        assert_int_equal(r->n_placements, 1);
        assert_ptr_equal(r->placements[0].gang, s);
        if (flavored)
            assert_int_equal(r->placements[0].flavor, 1);
        if (k == 2)
            assert_ptr_equal(r->placements[0].probation_for, big);
        else if (r->placements[0].probation_for)
            fail_msg("case %d: placed on probation for a gang that can never evict it", k);
        world_free(w);
    }
}

/* A 64-GPU gang (one rack's worth) whose overdue backfill is spread over both racks, half of
 * each: no rack can be cleared, so the overdue gangs alone are evicted across the cluster. */
static void test_overdue_backfill_across_racks(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:16", ONE_QUEUE("17"));
    struct gang *big = gang(w, 0, 8, 8, 0, 0);
    static struct sched_hold hint;
    static uint32_t held[8];
    for (uint32_t i = 0; i < 16; i++) {
        uint32_t node[] = {i};
        bool overdue = (i % 8) >= 4; /* nodes 4-7 of rack 0 and 12-15 of rack 1 */
        struct sched_running *r = run(w, gang(w, 0, 1, 8, 0, 10), node, 100, 100);
        if (overdue) {
            r->probation_until_ms = 1000 * 1000;
            r->probation_for = big;
            held[i / 2 % 8] = i;
        }
    }
    hint = (struct sched_hold){.gang = big, .nodes = held, .n_nodes = 8};
    w->hints = &hint;
    w->n_hints = 1;
    const struct sched_result *r = cycle(w, "gangsched", 2000);
    assert_int_equal(r->n_evictions, 8);
    uint32_t racks[2] = {0, 0};
    for (uint32_t e = 0; e < r->n_evictions; e++) {
        assert_int_equal(r->evictions[e].kind, SCHED_PREEMPT_OVERDUE);
        assert_ptr_equal(r->evictions[e].preemptor, big);
        racks[r->evictions[e].victim->pods[0].node / 8]++;
    }
    assert_int_equal(racks[0], 4);
    assert_int_equal(racks[1], 4);
    world_free(w);
}

/* A gang without GPUs (scheduler_perf's gang preemption: pods of CPU only) preempts like any
 * other: its domain is one node only when the whole gang fits one (before, the domain was
 * sized by GPUs, so every gang of 0 GPUs looked for room on one node and found none). */
static void test_cpu_only_gang_preempts(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n");
    int64_t cpu = w->c->nodes[0].alloc.v[RES_CPU];
    for (int i = 0; i < 10; i++) { /* five 40m pods per node, priority 0 */
        struct gang *v = gang(w, 0, 1, 0, 0, 0);
        v->sets[0].req.v[RES_CPU] = 40;
        gang_finalize(v);
        uint32_t node = (uint32_t)(i % 2);
        run(w, v, &node, 10, 10);
        w->state[node].used.v[RES_CPU] += 40;
    }
    struct gang *g = gang(w, 0, 2, 0, 8888888, 100); /* a pod per node, each node all but 30m */
    g->sets[0].req.v[RES_CPU] = cpu - 30;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 10);
    assert_int_equal(r->n_placements, 0); /* placed once they are gone */
    world_free(w);
}

/* A host port held by lower-priority pods on every node: the preemptor evicts the holder of one
 * node (kube-scheduler's preemption removes victims before running NodePorts again); before, the
 * victims' port stayed in the trial and nothing was planned. */
static void test_victims_lift_their_host_ports(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n");
    static const uint32_t port[] = {6u << 16 | 8080};
    static const struct pod_meta holder = {.ns = "x", .ports = port, .n_ports = 1};
    struct sched_pod bound[2];
    for (uint32_t i = 0; i < 2; i++) {
        struct gang *v = gang(w, 0, 1, 1, 0, 0);
        v->sets[0].meta = &holder;
        gang_finalize(v);
        run(w, v, &i, 10, 10);
        bound[i] = (struct sched_pod){.node = i, .meta = &holder, .set = &v->sets[0]};
    }
    w->bound = bound;
    w->n_bound = 2;
    struct gang *g = gang(w, 0, 1, 1, 100, 100);
    g->sets[0].meta = &holder;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_placements, 0); /* 7 GPUs free on each node, but the port is not */
    assert_int_equal(r->n_evictions, 1);
    /* without the victims' pod sets named, their ports stay: nothing to plan */
    bound[0].set = bound[1].set = NULL;
    r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 0);
    world_free(w);
}

static const struct sel_req req_app_a = {
    .key = "app", .op = SEL_IN, .values = (const char *const[]){"a"}, .n_values = 1};
static const struct kv labels_a[] = {{"app", "a"}};
static const struct pod_term near_a = {
    .reqs = &req_app_a, .n_reqs = 1, .topology_key = "kubernetes.io/hostname"};

/* Runs v on node n as the next of the bound pods `bound`, with meta m (its pod set named, so a
 * plan may lift it). */
static void run_bound(struct world *w, struct gang *v, uint32_t n, const struct pod_meta *m,
                      int64_t ckpt_s, struct sched_pod *bound)
{
    v->sets[0].meta = m;
    gang_finalize(v);
    run(w, v, &n, 10, ckpt_s);
    bound[w->n_bound++] = (struct sched_pod){.node = n, .meta = m, .set = &v->sets[0]};
    w->bound = bound;
}

/* Preemptors whose required affinity no pod anywhere meets: evicting the lower-priority gangs
 * on every node cannot help, so none is planned (one trial with every candidate gone decides
 * it, and the gangs of the same class after the first are not planned again). */
static void test_hopeless_preemptors_evict_nothing(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n");
    static const struct pod_meta plain = {.ns = "x"};
    static const struct pod_meta wants_a = {.ns = "x", .affinity = &near_a, .n_affinity = 1};
    struct sched_pod bound[2];
    for (uint32_t i = 0; i < 2; i++)
        run_bound(w, gang(w, 0, 1, 8, 0, 0), i, &plain, 10, bound);
    struct gang *g[3];
    for (int k = 0; k < 3; k++) {
        g[k] = gang(w, 0, 1, 1, 100, 100 + k);
        g[k]->sets[0].meta = &wants_a;
        gang_finalize(g[k]);
    }
    assert_true(g[0]->shape == g[2]->shape);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 0);
    assert_int_equal(r->n_placements, 0);
    world_free(w);
}

/* A preemptor whose required affinity selects a lower-priority pod: freeing every candidate
 * would take that pod away, so the planner does not conclude from such a trial; it evicts the
 * other gang of the node and keeps the one it needs. */
static void test_affinity_to_a_victim_still_preempts(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n");
    static const struct pod_meta plain = {.ns = "x"};
    static const struct pod_meta is_a = {.ns = "x", .labels = labels_a, .n_labels = 1};
    static const struct pod_meta wants_a = {.ns = "x", .affinity = &near_a, .n_affinity = 1};
    struct sched_pod bound[3];
    struct gang *va = gang(w, 0, 1, 4, 0, 0);
    struct gang *vo = gang(w, 0, 1, 4, 0, 0);
    run_bound(w, va, 0, &is_a, 10, bound);
    run_bound(w, vo, 0, &plain, 150, bound); /* checkpointed last: cheaper, freed first */
    run_bound(w, gang(w, 0, 1, 8, 1000, 0), 1, &plain, 10, bound);
    struct gang *g = gang(w, 0, 1, 4, 100, 100);
    g->sets[0].meta = &wants_a;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 200);
    assert_int_equal(r->n_evictions, 1);
    assert_true(evicted(r, vo));
    assert_false(evicted(r, va));
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_only_gang_preempts),
        cmocka_unit_test(test_victims_lift_their_host_ports),
        cmocka_unit_test(test_hopeless_preemptors_evict_nothing),
        cmocka_unit_test(test_affinity_to_a_victim_still_preempts),
        cmocka_unit_test(test_reclaim_stops_at_borrower_nominal),
        cmocka_unit_test(test_reclaim_never_below_victim_nominal),
        cmocka_unit_test(test_small_victim_before_big_gang),
        cmocka_unit_test(test_never_preempts),
        cmocka_unit_test(test_most_recent_checkpoint_chosen),
        cmocka_unit_test(test_elastic_gang_loses_members_first),
        cmocka_unit_test(test_rigid_gang_goes_whole),
        cmocka_unit_test(test_training_member_costs_the_gang),
        cmocka_unit_test(test_min_runtime_and_benefit),
        cmocka_unit_test(test_benefit_says_when_it_pays),
        cmocka_unit_test(test_no_reclaim_ping_pong),
        cmocka_unit_test(test_fair_share_preemption_one_way),
        cmocka_unit_test(test_two_reclaims_in_one_cycle_stay_bounded),
        cmocka_unit_test(test_reclaim_takes_a_straddling_gang_after_starvation),
        cmocka_unit_test(test_reclaim_prefers_the_bound),
        cmocka_unit_test(test_reclaim_bound_without_guard),
        cmocka_unit_test(test_preemptors_do_not_share_capacity),
        cmocka_unit_test(test_preemptor_hold_leaves_the_starvation_slot),
        cmocka_unit_test(test_evicting_victims_are_waited_for),
        cmocka_unit_test(test_replan_hold_plans_once_victims_gone),
        cmocka_unit_test(test_equal_priority_no_loop),
        cmocka_unit_test(test_reclaim_stays_in_its_cohort_tree),
        cmocka_unit_test(test_quota_freed_outside_the_domain),
        cmocka_unit_test(test_holds_keep_freed_capacity),
        cmocka_unit_test(test_overdue_backfill_evicted_by_its_starving_gang),
        cmocka_unit_test(test_overdue_backfill_kept_otherwise),
        cmocka_unit_test(test_backfill_placed_on_probation),
        cmocka_unit_test(test_backfill_of_another_queue_not_on_probation),
        cmocka_unit_test(test_no_probation_big_cannot_act_on),
        cmocka_unit_test(test_overdue_backfill_across_racks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
