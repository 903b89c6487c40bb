/* tests/unit/test_cycle_starts.c: the pure core on gangs that wait, scenario by scenario (issue
 * 19): the starvation guard engaging on a quota wait, a reservation on the earliest-free nodes and
 * backfill by estimated run time, quota waits that reserve nothing (borrowing) or hold their
 * queue, and the expected start of every waiting gang: estimates, estimates computed on demand
 * and bounded, and the start planner against a reference that walks every node from now for
 * each gang (200 seeded random clusters); a time budget cutting a cycle short, and the gangs
 * passed over after it. The cycle's other decisions: test_cycle.c.
 */
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
#include "sched/core/eta.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#include "tests/unit/cycle_fx.h"

/* ---- issue 19: the guard on quota waits, estimates, earliest-free reservations, starts ---- */

/* cycle_quota()'s extras: per-pod releases and estimates on demand (NULL: none). */
struct cycle_extra {
    const struct sched_release *rels;
    uint32_t n_rels;
    const struct sched_runtime_source *src;
    int64_t grace_s; /* the queue's checkpointGrace (s; 0: none) */
};

static const struct sched_result *cycle_quota_x(struct world *w, int64_t now_s, const int64_t *est,
                                                const struct cycle_extra *x,
                                                struct config **cfg_out);

/* A cycle with a one-queue config (nominal = the cluster's GPUs, as the simulator generates
 * for one trace), run-time estimates per gang id, and the start planner on. */
static const struct sched_result *cycle_quota(struct world *w, int64_t now_s, const int64_t *est,
                                              struct config **cfg_out)
{
    return cycle_quota_x(w, now_s, est, NULL, cfg_out);
}

static const struct sched_result *cycle_quota_x(struct world *w, int64_t now_s, const int64_t *est,
                                                const struct cycle_extra *x,
                                                struct config **cfg_out)
{
    char yaml[512];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
             "cohorts:\n  - name: all\nqueues:\n  - name: q\n    cohort: all\n"
             "    preemption: {checkpointGrace: %llds}\n"
             "    quota:\n      default:\n        nvidia.com/gpu: %lld\n",
             x ? (long long)x->grace_s : 0ll, (long long)w->c->total_gpus);
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    static int64_t usage[RES_MAX];
    memset(usage, 0, sizeof(usage));
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        usage[RES_GPU] += w->state[i].used.v[RES_GPU];
    struct queue_list l;
    const struct sched_policy *pol = sched_policy_find("gangsched");
    queue_list_init(&l, pol->by_priority);
    for (uint32_t i = 0; i < w->n_gangs; i++)
        assert_int_equal(queue_list_insert(&l, &w->gangs[i]), 0);
    memcpy(w->pending, l.items, l.n * sizeof(*l.items));
    w->view =
        (struct sched_queue_view){.queue = &w->queue, .pending = w->pending, .n_pending = l.n};
    queue_list_fini(&l);
    struct sched_snapshot snap = {.now_ms = now_s * 1000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = &w->view,
                                  .n_queues = 1,
                                  .policy = pol,
                                  .config = cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = est ? w->n_gangs : 0,
                                  .releases = x ? x->rels : NULL,
                                  .n_releases = x ? x->n_rels : 0,
                                  .runtime_src = x ? x->src : NULL,
                                  .plan_starts = true};
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    *cfg_out = cfg;
    return &w->res;
}

static const struct sched_eta *eta_of(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_etas; i++)
        if (r->etas[i].gang == g)
            return &r->etas[i];
    return NULL;
}

/* One queue owning the cluster: "no GPUs left" is a quota verdict, and the starvation guard
 * must still engage (it returned on the quota verdict before). */
static void test_guard_engages_on_quota_wait(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F);
    use_gpus(w, 1, 0x0F);
    for (uint32_t i = 0; i < 2; i++)
        w->state[i].release_ms = INT64_MAX;
    struct gang *big = add_gang(w, 2, 8, 0);   /* 16 GPUs: quota 8 of 16 left */
    struct gang *small = add_gang(w, 1, 4, 1); /* fits quota and either node */
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 60, NULL, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 0); /* not starving yet: the small one backfills */
    assert_non_null(placement_of(r, small));
    assert_int_equal(r->wake_ms, 600 * 1000); /* when it starves: a cycle is due then */
    config_free(cfg);
    r = cycle_quota(w, 3600, NULL, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].n_nodes, 2);
    assert_null(placement_of(r, small)); /* both nodes are held for the starving gang */
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* The reservation goes to the node expected to free earliest, not the one with most free now;
 * a gang estimated (not declared) to end before it may backfill it. */
static void test_reservation_earliest_and_estimated_backfill(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F); /* 4 free, busy until 5000 s */
    use_gpus(w, 1, 0x3F); /* 2 free, busy until 1000 s */
    w->state[0].release_ms = 5000 * 1000;
    w->state[1].release_ms = 1000 * 1000;
    struct gang *big = add_gang(w, 1, 8, 0);
    struct gang *quick = add_gang(w, 1, 2, 10); /* estimated 200 s: ends before 1000 s */
    struct gang *slow = add_gang(w, 1, 2, 20);  /* estimated 2 h */
    int64_t est[3] = {3600 * 1000, 200 * 1000, 7200 * 1000};
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 700, est, &cfg);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].nodes[0], 1);
    assert_int_equal(r->reservations[0].expected_start_ms, 1000 * 1000);
    const struct sched_placement *p = placement_of(r, quick);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 1); /* into the reserved node: it leaves in time */
    p = placement_of(r, slow);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0); /* not into the reservation */
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* Queues q0 and q1 of cohort "all", 8 GPUs of nominal quota each. */
static struct config *two_queue_config(void)
{
    const char *yaml = "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
                       "cohorts:\n  - name: all\nqueues:\n"
                       "  - name: q0\n    cohort: all\n    quota:\n      default:\n"
                       "        nvidia.com/gpu: 8\n"
                       "  - name: q1\n    cohort: all\n    quota:\n      default:\n"
                       "        nvidia.com/gpu: 8\n";
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    return cfg;
}

/* A running gang of queue q with id `id`: a nameless copy of `like` (free_names frees each
 * gang's name) holding `gpus` GPUs. */
static struct gang *running_copy(struct world *w, const struct gang *like, uint32_t id, uint32_t q,
                                 int64_t gpus)
{
    uint32_t k = w->n_gangs++;
    struct gang *r = &w->gangs[k];
    *r = *like;
    r->sets = w->gang_sets[k]; /* a set of its own, changed below */
    memcpy(r->sets, like->sets, like->n_sets * sizeof(*r->sets));
    r->name = NULL;
    r->id = id;
    r->queue = q;
    r->sets[0].req.v[RES_GPU] = gpus;
    gang_finalize(r);
    return r;
}

/* A cycle at now_s of the two queues of two_queue_config() (or snap->n_queues, when set) with
 * the running gangs given. */
static const struct sched_result *two_queue_cycle(struct world *w, struct sched_snapshot *snap,
                                                  int64_t now_s)
{
    snap->now_ms = now_s * 1000;
    snap->cluster = w->c;
    snap->state = w->state;
    snap->n_queues = snap->n_queues ? snap->n_queues : 2;
    snap->policy = sched_policy_find("gangsched");
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(snap, &w->arena, &w->res), 0);
    return &w->res;
}

/* Two queues of one cohort, 8 GPUs of nominal quota each, on 16 GPUs: a starving 16-GPU gang
 * of q0 must borrow q1's 8, which q1 uses within its nominal quota. It gets no reservation (its
 * expected start would be never: q1 may take its quota again whenever its gangs end), so q1's
 * next gang, within its guarantee, still starts. Before, both nodes were held for q0's gang
 * with no expected start, q1 was held below its nominal quota, and q0's gang waited longer. */
static void test_borrowing_quota_wait_reserves_nothing(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x3F); /* q1's running 6 GPUs */
    w->state[0].release_ms = 5000 * 1000;
    struct config *cfg = two_queue_config();
    int64_t usage[2 * RES_MAX] = {0};
    usage[1 * RES_MAX + RES_GPU] = 6;
    struct gang *big = add_gang(w, 2, 8, 0);   /* q0: 16 > its nominal 8; q1 lends only 2 */
    struct gang *small = add_gang(w, 1, 1, 0); /* q1: 6 + 1 <= 8 */
    small->queue = 1;
    int64_t est[2] = {3600 * 1000, 3600 * 1000};
    struct queue queues[2] = {{.name = "q0", .weight = 1}, {.name = "q1", .weight = 1}};
    const struct gang *pending0[1] = {big}, *pending1[1] = {small};
    struct sched_queue_view views[2] = {{.queue = &queues[0], .pending = pending0, .n_pending = 1},
                                        {.queue = &queues[1], .pending = pending1, .n_pending = 1}};
    struct sched_assign a1 = {.node = 0, .gpu_mask = 0x3F};
    struct sched_running running[1] = {
        {.gang = running_copy(w, small, 2, 1, 6), .pods = &a1, .non_preemptible = true}};
    struct sched_snapshot snap = {.running = running,
                                  .n_running = 1,
                                  .queues = views,
                                  .config = cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = 2};
    const struct sched_result *r = two_queue_cycle(w, &snap, 3600);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 0);
    assert_non_null(placement_of(r, small)); /* q1 keeps its guarantee */
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* Three queues of one cohort on hgx:2 (16 GPUs): q0 nominal 4 (borrowingLimit `bl`, "" for
 * none), q1 8, q2 4. */
static struct config *three_queue_config(const char *bl)
{
    char yaml[640];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
             "cohorts:\n  - name: all\nqueues:\n"
             "  - name: q0\n    cohort: all\n    quota:\n      default:\n"
             "        nvidia.com/gpu: {nominal: 4%s}\n"
             "  - name: q1\n    cohort: all\n    quota:\n      default:\n"
             "        nvidia.com/gpu: 8\n"
             "  - name: q2\n    cohort: all\n    quota:\n      default:\n"
             "        nvidia.com/gpu: 4\n",
             bl);
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    return cfg;
}

/* A cycle at now_s of three_queue_config(bl) where q0, q1, q2 use u[0..2] GPUs (nothing
 * preemptible runs), each with one pending gang: q0's 8-GPU `big`, q1's and q2's one-GPU `lend`
 * and `borr` (all submitted at 0, estimated 1 h). Every cycle of the test reuses the world. */
static const struct sched_result *hold_cycle(struct world *w, const char *bl, const int64_t u[3],
                                             int64_t now_s, struct config **cfg)
{
    static int64_t usage[3 * RES_MAX], est[3] = {3600 * 1000, 3600 * 1000, 3600 * 1000};
    static struct queue queues[3] = {
        {.name = "q0", .weight = 1}, {.name = "q1", .weight = 1}, {.name = "q2", .weight = 1}};
    static const struct gang *p[3];
    static struct sched_queue_view views[3];
    for (uint32_t q = 0; q < 3; q++) {
        usage[q * RES_MAX + RES_GPU] = u[q];
        p[q] = &w->gangs[q];
        views[q] = (struct sched_queue_view){.queue = &queues[q], .pending = &p[q], .n_pending = 1};
    }
    config_free(*cfg);
    *cfg = three_queue_config(bl);
    struct sched_snapshot snap = {.queues = views,
                                  .n_queues = 3,
                                  .config = *cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = 3};
    return two_queue_cycle(w, &snap, now_s);
}

/* The cohort hold: q0's 8-GPU gang must borrow (nominal 4); the cohort lends 5 once q1's gang
 * has started within q1's nominal quota (q1 uses 2 of 8, q2 8 of 4: it borrows 4). Once the gang
 * has waited starvation.after, q2's one-GPU gang, which would borrow, waits (`blocked`, naming
 * it) instead of taking what q0's gang waits for; q1's gang starts. Before starvation.after q2's
 * gang starts. Nothing is held when only lenders' use within their own nominal quota keeps it
 * waiting (q1 uses 6, q2 4: nobody borrows), nor when its own borrowingLimit does (q0 uses 2 and
 * may borrow 4: 2 + 8 > 4 + 4, while the cohort lends 8): others' borrowing is not its wait. */
static void test_starving_borrower_holds_the_cohort(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x3F); /* 6 GPUs of q1 and q2 */
    use_gpus(w, 1, 0x0F); /* 4 of q2 */
    w->state[0].release_ms = w->state[1].release_ms = 9000 * 1000;
    struct gang *big = add_gang(w, 1, 8, 0);  /* q0 */
    struct gang *lend = add_gang(w, 1, 1, 0); /* q1, within nominal */
    struct gang *borr = add_gang(w, 1, 1, 0); /* q2, borrows */
    lend->queue = 1, borr->queue = 2;
    struct config *cfg = NULL;
    const int64_t borrowing[3] = {0, 2, 8};
    const struct sched_result *r = hold_cycle(w, "", borrowing, 3600, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_true(verdict_of(r, big)->pool_hold);
    assert_null(placement_of(r, borr));
    assert_int_equal(verdict_of(r, borr)->why, SCHED_WHY_BLOCKED);
    assert_true(verdict_of(r, borr)->pool_hold);
    assert_ptr_equal(verdict_of(r, borr)->blocked_by, big);
    assert_non_null(placement_of(r, lend));
    char buf[512];
    sched_verdict_format(verdict_of(r, borr), w->c, cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "behind g0 of q0, which must borrow"));
    sched_verdict_format(verdict_of(r, big), w->c, cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "no other gang of its cohort borrows on default until it starts"));
    /* not starving yet */
    r = hold_cycle(w, "", borrowing, 60, &cfg);
    assert_false(verdict_of(r, big)->pool_hold);
    assert_non_null(placement_of(r, borr));
    /* only lenders' own use: the cohort lends 6 (5 once q1's gang starts), nobody borrows */
    const int64_t lending[3] = {0, 6, 4};
    r = hold_cycle(w, "", lending, 3600, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_false(verdict_of(r, big)->pool_hold);
    assert_non_null(placement_of(r, borr));
    /* its own borrowingLimit */
    const int64_t limited[3] = {2, 1, 4};
    r = hold_cycle(w, ", borrowingLimit: 4", limited, 3600, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_false(verdict_of(r, big)->pool_hold);
    assert_non_null(placement_of(r, borr));
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* Expected starts: a gang waits for the node's release, the next one for the first's end. */
/* Two queues of one cohort: a starving gang of q0 waits for quota (q1 uses all it could
 * borrow). Its reservation also holds q0's quota: a younger q0 gang that would run past the
 * reservation's start waits (`blocked`), one that ends before it starts. */
static void test_quota_wait_holds_the_queue(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:3");
    use_gpus(w, 0, 0x0F); /* q0's running 4 GPUs, until 5000 s */
    use_gpus(w, 1, 0xFF); /* q1's 8 GPUs, until 9000 s */
    w->state[0].release_ms = 5000 * 1000;
    w->state[1].release_ms = 9000 * 1000;
    struct config *cfg = two_queue_config();
    int64_t usage[2 * RES_MAX] = {0};
    usage[0 * RES_MAX + RES_GPU] = 4;
    usage[1 * RES_MAX + RES_GPU] = 8;
    struct gang *big = add_gang(w, 1, 8, 0);    /* q0: 4 + 8 > 8, nothing left to borrow */
    struct gang *slow = add_gang(w, 1, 2, 10);  /* q0, estimated 2 h */
    struct gang *quick = add_gang(w, 1, 2, 20); /* q0, estimated 100 s */
    int64_t est[3] = {3600 * 1000, 7200 * 1000, 100 * 1000};
    struct queue queues[2] = {{.name = "q0", .weight = 1}, {.name = "q1", .weight = 1}};
    const struct gang *pending[3] = {big, slow, quick};
    struct sched_queue_view views[2] = {{.queue = &queues[0], .pending = pending, .n_pending = 3},
                                        {.queue = &queues[1], .pending = NULL, .n_pending = 0}};
    /* what runs: q0's 4 GPUs on node 0, q1's 8 on node 1 (gangs of their own) */
    struct sched_assign a0 = {.node = 0, .gpu_mask = 0x0F}, a1 = {.node = 1, .gpu_mask = 0xFF};
    struct sched_running running[2] = {
        {.gang = running_copy(w, slow, 3, 0, 4), .pods = &a0, .non_preemptible = true},
        {.gang = running_copy(w, slow, 4, 1, 8), .pods = &a1, .non_preemptible = true}};
    struct sched_snapshot snap = {.running = running,
                                  .n_running = 2,
                                  .queues = views,
                                  .config = cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = 3};
    const struct sched_result *r = two_queue_cycle(w, &snap, 3600);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].expected_start_ms, 5000 * 1000);
    assert_null(placement_of(r, slow));
    assert_int_equal(verdict_of(r, slow)->why, SCHED_WHY_BLOCKED);
    assert_ptr_equal(verdict_of(r, slow)->blocked_by, big);
    char buf[256];
    sched_verdict_format(verdict_of(r, slow), w->c, cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "g0"));
    assert_non_null(placement_of(r, quick)); /* gone at 3700 s, before 5000 s */
    /* not starving yet: no hold, the slow one starts */
    r = two_queue_cycle(w, &snap, 60);
    assert_int_equal(r->n_reservations, 0);
    assert_non_null(placement_of(r, slow));
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* One full 8-GPU node whose GPUs come back at 1,000 s, and three 8-GPU gangs waiting for it. */
static struct world *three_waiting(struct gang **a, struct gang **b, struct gang **c)
{
    struct world *w = world_new("hgx:1");
    use_gpus(w, 0, 0xFF);
    w->state[0].release_ms = 1000 * 1000;
    *a = add_gang(w, 1, 8, 0);
    *b = add_gang(w, 1, 8, 1);
    *c = add_gang(w, 1, 8, 2);
    return w;
}

/* New members of a training gang are expected to start at the first window after one of its
 * checkpoints (gang_set_join) that opens with room for them: one 8-GPU node whose GPUs come back
 * at 1,000 s. */
static void test_start_estimate_of_members_waiting_for_a_checkpoint(void **unused)
{
    (void)unused;
    static const uint32_t near[] = {0};
    struct world *w = world_new("hgx:1");
    use_gpus(w, 0, 0xFF);
    w->state[0].release_ms = 1000 * 1000;
    struct gang *g = add_gang(w, 1, 8, 0);
    gang_set_near(g, near, 1);
    gang_set_join(g, 0, 1800 * 1000, 8); /* may join within 900 s of 0, 1,800 s, ... */
    int64_t est[1] = {600 * 1000};
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 100, est, &cfg);
    const struct sched_eta *e = eta_of(r, g);
    assert_non_null(e);
    assert_int_equal(e->kind, SCHED_ETA_AT);
    assert_int_equal(e->start_ms, 1800 * 1000); /* the GPUs at 1,000 s, the window at 1,800 s */
    config_free(cfg);
    gang_set_join(g, 500 * 1000, 1800 * 1000, 8); /* the window 500 s to 1,400 s holds 1,000 s */
    r = cycle_quota(w, 100, est, &cfg);
    assert_int_equal(eta_of(r, g)->start_ms, 1000 * 1000);
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* Members waiting for a checkpoint of their job, whose queue has a checkpointGrace shorter than
 * the wait, would start now: the job is asked (ask_checkpoint) and their start is expected within
 * the grace. Not when the next window comes first, nor when they would not fit, nor without a
 * grace. */
static void test_members_ask_for_a_checkpoint(void **unused)
{
    (void)unused;
    static const uint32_t near[] = {0};
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0xFF); /* the running members */
    struct gang *g = add_gang(w, 1, 8, 0);
    gang_set_near(g, near, 1);
    gang_set_join(g, 0, 1800 * 1000, 8);       /* windows of 900 s at 0, 1,800 s, ... */
    int64_t est[2] = {600 * 1000, 600 * 1000}; /* the members', then the later gang's */
    struct cycle_extra x = {.grace_s = 60};
    struct config *cfg;
    const struct sched_result *r = cycle_quota_x(w, 1000, est, &x, &cfg);
    const struct sched_verdict *v = verdict_of(r, g);
    assert_null(placement_of(r, g));
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_CHECKPOINT);
    assert_true(v->ask_checkpoint);
    assert_int_equal(eta_of(r, g)->start_ms, 1060 * 1000);
    char buf[600];
    sched_verdict_format(v, w->c, cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "its job is asked to checkpoint now"));
    config_free(cfg);
    /* inside a window: joining 400 s past the checkpoint would lose 400 s x 8 live GPUs, more
     * than the members idle for the grace (60 s x 8 GPUs): they ask rather than join; 50 s
     * past (400 GPU-s against 480) they join at once */
    r = cycle_quota_x(w, 400, est, &x, &cfg);
    assert_null(placement_of(r, g));
    assert_true(verdict_of(r, g)->ask_checkpoint);
    assert_int_equal(verdict_of(r, g)->join_past_ms, 400 * 1000);
    config_free(cfg);
    r = cycle_quota_x(w, 50, est, &x, &cfg);
    assert_non_null(placement_of(r, g));
    config_free(cfg);
    x.grace_s = 900; /* the window at 1,800 s comes first */
    r = cycle_quota_x(w, 1000, est, &x, &cfg);
    assert_false(verdict_of(r, g)->ask_checkpoint);
    assert_int_equal(eta_of(r, g)->start_ms, 1800 * 1000);
    config_free(cfg);
    r = cycle_quota(w, 1000, est, &cfg); /* no grace: never asked */
    assert_false(verdict_of(r, g)->ask_checkpoint);
    config_free(cfg);
    /* their room is held while they ask: a later gang of the queue does not take it */
    struct gang *other = add_gang(w, 1, 8, 5);
    x.grace_s = 60;
    r = cycle_quota_x(w, 1000, est, &x, &cfg);
    assert_true(verdict_of(r, g)->ask_checkpoint);
    assert_null(placement_of(r, other));
    config_free(cfg);
    free((char *)other->name); /* other leaves */
    w->n_gangs--;
    /* a request open (made after the last checkpoint, at 0 s) is not made again; its room is
     * still held, and the cycle wakes when its grace ends */
    g->join_asked_ms = 1000 * 1000;
    r = cycle_quota_x(w, 1010, est, &x, &cfg);
    v = verdict_of(r, g);
    assert_true(v->asked);
    assert_false(v->ask_checkpoint);
    assert_int_equal(v->join_waited_ms, 10 * 1000);
    assert_true(r->wake_ms <= 1060 * 1000);
    sched_verdict_format(v, w->c, cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "its job was asked to checkpoint 10s ago"));
    config_free(cfg);
    r = cycle_quota_x(w, 1070, est, &x, &cfg); /* unanswered past its grace: none again */
    assert_false(verdict_of(r, g)->asked);
    assert_false(verdict_of(r, g)->ask_checkpoint);
    config_free(cfg);
    r = cycle_quota_x(w, 2750, est, &x, &cfg); /* the job checkpointed at 1,800 s since */
    assert_int_equal(verdict_of(r, g)->why, SCHED_WHY_CHECKPOINT);
    assert_true(verdict_of(r, g)->ask_checkpoint);
    config_free(cfg);
    g->join_asked_ms = 0;
    use_gpus(w, 1, 0x01); /* no room for them now */
    r = cycle_quota_x(w, 1000, est, &x, &cfg);
    assert_int_equal(verdict_of(r, g)->why, SCHED_WHY_CHECKPOINT);
    assert_false(verdict_of(r, g)->ask_checkpoint);
    config_free(cfg);
    free_names(w);
    world_free(w);
}

static void test_start_estimates(void **unused)
{
    (void)unused;
    struct gang *a, *b, *c;
    struct world *w = three_waiting(&a, &b, &c);
    int64_t est[3] = {500 * 1000, 300 * 1000, 0}; /* c's run time is unknown */
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 100, est, &cfg);
    const struct sched_eta *ea = eta_of(r, a), *eb_ = eta_of(r, b), *ec = eta_of(r, c);
    assert_non_null(ea);
    assert_non_null(eb_);
    assert_non_null(ec);
    assert_int_equal(ea->kind, SCHED_ETA_AT);
    assert_int_equal(ea->start_ms, 1000 * 1000);
    assert_int_equal(eb_->kind, SCHED_ETA_AT);
    assert_int_equal(eb_->start_ms, 1500 * 1000);
    assert_int_equal(eb_->ahead, 1);
    assert_int_equal(ec->kind, SCHED_ETA_AT);
    assert_int_equal(ec->start_ms, 1800 * 1000);
    char buf[64];
    eta_format(ea, 100 * 1000, buf, sizeof(buf));
    assert_string_equal(buf, "in 15m");
    struct sched_eta q = {.kind = SCHED_ETA_BEHIND, .ahead = 300};
    eta_format(&q, 0, buf, sizeof(buf));
    assert_string_equal(buf, "no estimate: behind 300 gangs");
    config_free(cfg);
    /* nothing is known of what runs: no estimate */
    w->state[0].release_ms = INT64_MAX;
    r = cycle_quota(w, 100, est, &cfg);
    assert_int_equal(eta_of(r, a)->kind, SCHED_ETA_UNKNOWN);
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* sched_runtime_source of the tests: the run times of an array, calls counted. */
struct est_src {
    const int64_t *v;
    uint32_t n, calls;
};

static int64_t est_src_get(void *ctx, const struct gang *g, bool typical)
{
    (void)typical;
    struct est_src *e = ctx;
    e->calls++;
    return g->id < e->n ? e->v[g->id] : 0;
}

/* Estimates asked for on demand give the plan of the arrays; the planner's walks stop at
 * ETA_MAX_STEPS events per cycle, and the gangs from there on are "behind" the planned ones. */
static void test_start_estimates_on_demand_and_bounded(void **unused)
{
    (void)unused;
    struct gang *a, *b, *c;
    struct world *w = three_waiting(&a, &b, &c);
    int64_t est[3] = {500 * 1000, 300 * 1000, 0};
    struct est_src src = {.v = est, .n = 3};
    struct sched_runtime_source rs = {.est = est_src_get, .ctx = &src};
    struct cycle_extra x = {.src = &rs};
    struct config *cfg;
    const struct sched_result *r = cycle_quota_x(w, 100, NULL, &x, &cfg);
    assert_true(src.calls > 0);
    assert_int_equal(eta_of(r, a)->start_ms, 1000 * 1000); /* as test_start_estimates */
    assert_int_equal(eta_of(r, b)->start_ms, 1500 * 1000);
    assert_int_equal(eta_of(r, c)->start_ms, 1800 * 1000);
    config_free(cfg);
    /* per-pod releases: the node's 8 GPUs at 150 s, then many events that free nothing */
    uint32_t n = ETA_MAX_STEPS + 16;
    struct sched_release *rels = calloc(n, sizeof(*rels));
    assert_non_null(rels);
    rels[0] = (struct sched_release){.node = 0, .gpus = 8, .t_ms = 150 * 1000};
    for (uint32_t k = 1; k < n; k++)
        rels[k] = (struct sched_release){.node = 0, .gpus = 0, .t_ms = 200 * 1000 + k};
    x.rels = rels;
    x.n_rels = 100; /* a short walk: b starts when a ends, at 150 s + 500 s */
    r = cycle_quota_x(w, 100, NULL, &x, &cfg);
    assert_int_equal(eta_of(r, a)->kind, SCHED_ETA_AT);
    assert_int_equal(eta_of(r, a)->start_ms, 150 * 1000);
    assert_int_equal(eta_of(r, b)->kind, SCHED_ETA_AT);
    assert_int_equal(eta_of(r, b)->start_ms, 650 * 1000);
    config_free(cfg);
    x.n_rels = n; /* b's walk would pass more than ETA_MAX_STEPS events before 650 s */
    r = cycle_quota_x(w, 100, NULL, &x, &cfg);
    assert_int_equal(eta_of(r, a)->kind, SCHED_ETA_AT);
    assert_int_equal(eta_of(r, a)->start_ms, 150 * 1000);
    assert_int_equal(eta_of(r, b)->kind, SCHED_ETA_BEHIND);
    assert_int_equal(eta_of(r, b)->ahead, 1);
    assert_int_equal(eta_of(r, c)->kind, SCHED_ETA_BEHIND);
    assert_int_equal(eta_of(r, c)->ahead, 1);
    config_free(cfg);
    free(rels);
    free_names(w);
    world_free(w);
}

/* The planner's expected starts as the planner's rules state them (eta.h), computed the plain
 * way: for each waiting gang in the cycle's order, every node's free GPUs at now and at every
 * later event time, the first time its pods fit, then its claim on the nodes with room in node
 * order. The planner keeps walk states between gangs (cursors); this is the reference it must
 * equal. Per-node releases (no per-pod list), no reservations. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

struct ref_ev {
    int64_t t;
    uint32_t node;
    int64_t gpus;
};

static int64_t ref_free(const int64_t *base, const struct ref_ev *ev, uint32_t n_ev, uint32_t i,
                        int64_t t, bool none)
{
    int64_t f = base[i];
    for (uint32_t e = 0; !none && e < n_ev; e++)
        if (ev[e].node == i && ev[e].t <= t)
            f += ev[e].gpus;
    return f;
}

static void ref_plan(struct world *w, const struct sched_result *r, const int64_t *est, int64_t now,
                     int64_t *want_t, int *want_kind)
{
    uint32_t nn = w->c->n_nodes, n_ev = 0;
    int64_t base[64], rel[64];
    struct ref_ev ev[64 + 4 * 32 * 8];
    for (uint32_t i = 0; i < nn; i++) {
        base[i] = w->c->nodes[i].n_gpus - __builtin_popcount(w->state[i].gpu_used);
        rel[i] = w->state[i].release_ms;
    }
    for (uint32_t k = 0; k < r->n_placements; k++) {
        const struct sched_placement *pl = &r->placements[k];
        for (uint32_t x = 0; x < pl->gang->n_pods; x++) {
            uint32_t i = pl->pods[x].node;
            base[i] -= __builtin_popcount(pl->pods[x].gpu_mask);
            if (now + est[pl->gang->id] > rel[i])
                rel[i] = now + est[pl->gang->id];
        }
    }
    for (uint32_t i = 0; i < nn; i++)
        if (w->c->nodes[i].n_gpus - base[i] > 0)
            ev[n_ev++] =
                (struct ref_ev){rel[i] > now ? rel[i] : now, i, w->c->nodes[i].n_gpus - base[i]};
    for (uint32_t e = 0; e < r->n_etas; e++) {
        const struct gang *g = r->etas[e].gang;
        int64_t k = g->sets[0].req.v[RES_GPU], t = INT64_MAX;
        want_kind[g->id] = SCHED_ETA_UNKNOWN;
        /* now before any event, then every event time in order */
        for (int64_t cand = now, none = 1;; none = 0) {
            uint64_t slots = 0;
            for (uint32_t i = 0; i < nn; i++) {
                int64_t f = ref_free(base, ev, n_ev, i, cand, none);
                slots += f > 0 ? (uint64_t)(f / k) : 0;
            }
            if (slots >= g->n_pods) {
                t = cand;
                break;
            }
            int64_t next = INT64_MAX;
            for (uint32_t x = 0; x < n_ev; x++)
                if ((ev[x].t > cand || (none && ev[x].t == cand)) && ev[x].t < next)
                    next = ev[x].t;
            if (next == INT64_MAX)
                break;
            cand = next;
        }
        if (t == INT64_MAX)
            continue;
        const struct sched_verdict *v = verdict_of(r, g);
        if (t == now && v && v->why == SCHED_WHY_QUOTA) {
            want_kind[g->id] = SCHED_ETA_QUOTA;
            continue;
        }
        want_kind[g->id] = SCHED_ETA_AT;
        want_t[g->id] = t;
        uint64_t left = g->n_pods;
        int64_t fr[64];
        for (uint32_t i = 0; i < nn; i++)
            fr[i] = ref_free(base, ev, n_ev, i, t, false);
        for (uint32_t i = 0; i < nn && left > 0; i++) {
            uint64_t take = fr[i] > 0 ? (uint64_t)(fr[i] / k) : 0;
            take = take < left ? take : left;
            if (take == 0)
                continue;
            left -= take;
            int64_t gpus = (int64_t)take * k;
            if (t == now)
                base[i] -= gpus;
            else
                ev[n_ev++] = (struct ref_ev){t, i, -gpus};
            ev[n_ev++] = (struct ref_ev){t + est[g->id], i, gpus};
        }
    }
}

static void test_start_estimates_match_reference(void **unused)
{
    (void)unused;
    uint64_t seed = 0x5eed;
    for (int round = 0; round < 200; round++) {
        struct world *w = world_new("hgx:6");
        for (uint32_t i = 0; i < w->c->n_nodes; i++) {
            use_gpus(w, i, (uint32_t)(rnd(&seed) & 0xFF));
            w->state[i].release_ms = (int64_t)(200 + rnd(&seed) % 4000) * 1000;
        }
        static const int64_t sizes[] = {1, 2, 4, 8};
        int64_t est[32];
        uint32_t n = 8 + (uint32_t)(rnd(&seed) % 22);
        for (uint32_t j = 0; j < n; j++) {
            add_gang(w, 1 + (uint32_t)(rnd(&seed) % 6), sizes[rnd(&seed) % 4], (int64_t)j);
            est[j] = (int64_t)(100 + rnd(&seed) % 3000) * 1000;
        }
        struct config *cfg;
        const struct sched_result *r = cycle_quota(w, 100, est, &cfg);
        int64_t want_t[32];
        int want_kind[32];
        for (uint32_t j = 0; j < n; j++)
            want_kind[j] = -1;
        ref_plan(w, r, est, 100 * 1000, want_t, want_kind);
        for (uint32_t e = 0; e < r->n_etas; e++) {
            const struct sched_eta *got = &r->etas[e];
            uint32_t id = got->gang->id;
            if (got->kind == SCHED_ETA_NEVER)
                continue; /* the cycle's verdict, not the walk's */
            assert_int_equal(got->kind, want_kind[id]);
            if (got->kind == SCHED_ETA_AT)
                assert_int_equal(got->start_ms, want_t[id]);
        }
        config_free(cfg);
        free_names(w);
        world_free(w);
    }
}

/* A cycle with a time budget (the daemon's, short of its Lease's renew deadline) stops trying
 * gangs once its clock passes the deadline, after one gang at least: what it decided is the
 * start of what the whole cycle decides, the gangs it did not reach get no verdict, and the
 * result says it was cut short. Each reading of this clock advances it by one. */
static uint64_t ticks;
static uint64_t tick_clock(void)
{
    return ++ticks;
}

static void test_time_budget_cuts_the_cycle_short(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    struct gang *g[5];
    for (int i = 0; i < 5; i++)
        g[i] = add_gang(w, 1, 2, i);
    const struct sched_result *r = cycle(w, "gangsched", 10);
    assert_false(r->cut_short);
    assert_int_equal(r->n_placements, 5);
    struct sched_placement whole[5];
    memcpy(whole, r->placements, sizeof(whole));
    w->clock_ns = tick_clock;
    w->deadline_ns = 3; /* read before the 2nd, 3rd and 4th gangs: the 4th is not tried */
    ticks = 0;
    r = cycle(w, "gangsched", 10);
    assert_true(r->cut_short);
    assert_int_equal(r->n_placements, 3);
    assert_int_equal(r->n_verdicts, 0);
    for (int i = 0; i < 3; i++) {
        assert_ptr_equal(r->placements[i].gang, whole[i].gang);
        assert_int_equal(r->placements[i].pods[0].node, whole[i].pods[0].node);
        assert_int_equal(r->placements[i].pods[0].gpu_mask, whole[i].pods[0].gpu_mask);
    }
    assert_null(placement_of(r, g[3]));
    assert_null(verdict_of(r, g[4]));
    w->deadline_ns = 0; /* spent before the cycle began: one gang still */
    r = cycle(w, "gangsched", 10);
    assert_true(r->cut_short);
    assert_int_equal(r->n_placements, 1);
    free_names(w);
    world_free(w);
}

/* The cycles after a cut-short one pass over the gangs it tried and could not place: untried,
 * without a verdict, so the gangs behind them are reached; one passed over still stops a
 * strict-FIFO cycle as a gang that waits does. */
static void test_passed_over_gangs_are_not_tried(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    struct gang *big = add_gang(w, 4, 8, 0); /* 32 GPUs of 16: it waits */
    struct gang *small[3];
    for (int i = 0; i < 3; i++)
        small[i] = add_gang(w, 1, 2, 1 + i);
    bool pass[4] = {false, true, false, false}; /* small[0], by id */
    w->pass_over = pass;
    const struct sched_result *r = cycle(w, "gangsched", 10);
    assert_false(r->cut_short);
    assert_null(placement_of(r, small[0]));
    assert_null(verdict_of(r, small[0]));
    assert_non_null(placement_of(r, small[1]));
    assert_non_null(placement_of(r, small[2]));
    assert_non_null(verdict_of(r, big)); /* tried: not passed over */
    assert_int_equal(r->n_examined, 3);
    pass[1] = false;
    pass[0] = true; /* the head of a strict-FIFO cycle, passed over: nothing passes it */
    r = cycle(w, "fifo", 10);
    assert_int_equal(r->n_placements, 0);
    assert_null(verdict_of(r, big));
    free_names(w);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_engages_on_quota_wait),
        cmocka_unit_test(test_reservation_earliest_and_estimated_backfill),
        cmocka_unit_test(test_start_estimates),
        cmocka_unit_test(test_time_budget_cuts_the_cycle_short),
        cmocka_unit_test(test_passed_over_gangs_are_not_tried),
        cmocka_unit_test(test_start_estimate_of_members_waiting_for_a_checkpoint),
        cmocka_unit_test(test_members_ask_for_a_checkpoint),
        cmocka_unit_test(test_start_estimates_on_demand_and_bounded),
        cmocka_unit_test(test_start_estimates_match_reference),
        cmocka_unit_test(test_quota_wait_holds_the_queue),
        cmocka_unit_test(test_borrowing_quota_wait_reserves_nothing),
        cmocka_unit_test(test_starving_borrower_holds_the_cohort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
