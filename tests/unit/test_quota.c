/* tests/unit/test_quota.c: quota arithmetic (borrowing, lending, nested cohorts), fair-share
 * decay, and admission through the cycle with quotas: reasons with numbers, non-borrowing
 * before borrowing, strict FIFO queues, fair-share order, flavors.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "queue/queue.h"
#include "queue/quota.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#define HDR "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"

static struct config *load(const char *yaml)
{
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("test.yaml", yaml, strlen(yaml), &c, &eb) != 0)
        fail_msg("config: %s", eb.msg);
    return c;
}

static struct res_vec gpus(int64_t n)
{
    struct res_vec v;
    memset(&v, 0, sizeof(v));
    v.v[RES_GPU] = n;
    return v;
}

/* k index of nvidia.com/gpu in the tree */
static uint32_t gpu_k(const struct quota_tree *t)
{
    for (uint32_t k = 0; k < t->n_tracked; k++)
        if (t->tracked[k] == RES_GPU)
            return k;
    fail_msg("nvidia.com/gpu not tracked");
    return 0;
}

/* Kueue's documented example (concepts/cluster_queue.md): A nominal 9 with borrowingLimit 1,
 * B nominal 12 idle, one cohort: A can use 9 + 1 = 10. */
static void test_kueue_borrowing_limit_example(void **unused)
{
    (void)unused;
    struct config *c = load(HDR "cohorts:\n  - name: co\nqueues:\n"
                                "  - name: a\n    cohort: co\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: {nominal: 9, borrowingLimit: 1}\n"
                                "  - name: b\n    cohort: co\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 12\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    uint32_t k = gpu_k(&t);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 0), 0, k), 10);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 1), 0, k), 21);
    assert_int_equal(quota_potential(&t, quota_queue_node(&t, 0), 0, k), 10);
    struct res_vec need = gpus(10);
    struct quota_short why;
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_BORROWS);
    need = gpus(9);
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_FITS);
    need = gpus(11);
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_NEVER);
    assert_int_equal(why.potential, 10);
    arena_fini(&a);
    config_free(c);
}

/* Same example with B's lendingLimit 1: B keeps 11 to itself, the cohort pools 9 + 1 = 10:
 * available(A) = 10, available(B) = 11 + 10 = 21. */
static void test_kueue_lending_limit_example(void **unused)
{
    (void)unused;
    struct config *c = load(HDR "cohorts:\n  - name: co\nqueues:\n"
                                "  - name: a\n    cohort: co\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 9\n"
                                "  - name: b\n    cohort: co\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: {nominal: 12, lendingLimit: 1}\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    uint32_t k = gpu_k(&t);
    assert_int_equal(t.subtree[k], 10); /* the cohort (node 0) sees 9 + 1 */
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 0), 0, k), 10);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 1), 0, k), 21);
    /* A borrows B's lendable 1; then B still has its private 11 plus nothing from the pool
     * beyond its own: 11 + (10 - 10) = 11 */
    struct res_vec ten = gpus(10);
    quota_charge(&t, 0, 0, &ten, +1);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 0), 0, k), 0);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 1), 0, k), 11);
    /* and giving it back restores every number */
    quota_charge(&t, 0, 0, &ten, -1);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 1), 0, k), 21);
    arena_fini(&a);
    config_free(c);
}

/* Nested cohorts: root{ research{a, b}, prod{c} }, research borrowing limited to 4 from root. */
static void test_nested_cohorts(void **unused)
{
    (void)unused;
    struct config *c = load(HDR "cohorts:\n"
                                "  - name: root\n"
                                "  - name: research\n    parent: root\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: {nominal: 0, borrowingLimit: 4}\n"
                                "  - name: prod\n    parent: root\n"
                                "queues:\n"
                                "  - name: a\n    cohort: research\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 8\n"
                                "  - name: b\n    cohort: research\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 8\n"
                                "  - name: c\n    cohort: prod\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 16\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    int64_t usage[3 * RES_MAX];
    memset(usage, 0, sizeof(usage));
    usage[0 * RES_MAX + RES_GPU] = 8; /* a uses its 8 */
    assert_int_equal(quota_build(&t, c, usage, &a), 0);
    uint32_t k = gpu_k(&t);
    /* research subtree 16, usage 8; it may take 4 from root on top of its own 16 */
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 1), 0, k), 8 + 4);
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 0), 0, k), 8 + 4);
    assert_int_equal(quota_potential(&t, quota_queue_node(&t, 0), 0, k), 20);
    /* c has 16 of its own and may borrow research's idle 8 */
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 2), 0, k), 24);
    struct res_vec need = gpus(12);
    assert_int_equal(quota_check(&t, 1, 0, &need, NULL), QUOTA_BORROWS);
    quota_charge(&t, 1, 0, &need, +1); /* b takes 8 own + 4 from prod */
    assert_int_equal(quota_available(&t, quota_queue_node(&t, 2), 0, k), 12);
    need = gpus(1);
    struct quota_short why;
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_WAIT);
    assert_int_equal(why.used, 8);
    assert_int_equal(why.nominal, 8);
    assert_int_equal(why.available, 0);
    assert_false(quota_violated(&t, 0));
    assert_false(quota_violated(&t, 1));
    /* the tree's use above nominal, kept at its root (node 0) by quota_charge: b's 4 */
    size_t root = (size_t)0 * t.n_flavors * t.n_tracked + k;
    assert_int_equal(t.borrowed[root], 4);
    need = gpus(6);
    quota_charge(&t, 2, 0, &need, +1); /* c within its 16: nothing more */
    assert_int_equal(t.borrowed[root], 4);
    need = gpus(3);
    quota_charge(&t, 1, 0, &need, -1); /* b gives 3 of its borrowed 4 back */
    assert_int_equal(t.borrowed[root], 1);
    need = gpus(8);
    quota_charge(&t, 1, 0, &need, -1); /* b at 1 of 8: borrows nothing */
    need = gpus(10);
    quota_charge(&t, 0, 0, &need, +1); /* a at 18 of 8 */
    assert_int_equal(t.borrowed[root], 10);
    /* built from the same usage, the sum is the same */
    struct quota_tree t2;
    usage[0 * RES_MAX + RES_GPU] = 18, usage[1 * RES_MAX + RES_GPU] = 1,
                        usage[2 * RES_MAX + RES_GPU] = 6;
    assert_int_equal(quota_build(&t2, c, usage, &a), 0);
    assert_int_equal(t2.borrowed[root], 10);
    arena_fini(&a);
    config_free(c);
}

static void test_queue_without_cohort_cannot_borrow(void **unused)
{
    (void)unused;
    struct config *c = load(HDR "queues:\n  - name: solo\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 4\n        cpu: 16\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    struct res_vec need = gpus(4);
    need.v[RES_CPU] = 17000; /* 17 cores: above the nominal 16 */
    struct quota_short why;
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_NEVER);
    assert_int_equal(why.res, RES_CPU);
    need.v[RES_CPU] = 16000;
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_FITS);
    need.v[RES_MEMORY] = 1ll << 40; /* memory has no quota anywhere: not limited */
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_FITS);
    quota_charge(&t, 0, 0, &need, +1);
    assert_false(quota_violated(&t, 0));
    quota_charge(&t, 0, 0, &need, +1);
    assert_true(quota_violated(&t, 0));
    arena_fini(&a);
    config_free(c);
}

static void test_share_and_decay(void **unused)
{
    (void)unused;
    struct config *c = load(HDR "cohorts:\n  - name: co\nqueues:\n"
                                "  - name: a\n    cohort: co\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 8\n"
                                "  - name: b\n    cohort: co\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    struct res_vec four = gpus(4);
    assert_true(fabs(quota_share(&t, 0, 0, &four) - 0.5) < 1e-9);
    /* b has no nominal quota: its share is measured against the cohort's 8 */
    assert_true(fabs(quota_share(&t, 1, 0, &four) - 0.5) < 1e-9);
    /* above its nominal: 1 plus the borrowed part over the cohort's pool (12 of 8: 1 + 4/8) */
    struct res_vec twelve = gpus(12);
    assert_true(fabs(quota_share(&t, 0, 0, &twelve) - 1.5) < 1e-9);
    /* decay: one half-life halves the weight of the past */
    double h = queue_decay(1.0, 0.0, 3600000, 3600000);
    assert_true(fabs(h - 0.5) < 1e-9);
    h = queue_decay(0.0, 1.0, 7200000, 3600000);
    assert_true(fabs(h - 0.75) < 1e-9);
    assert_true(queue_decay(0.7, 0.2, 1000, 0) == 0.0);
    assert_true(queue_decay(0.7, 0.2, 0, 1000) == 0.7);
    arena_fini(&a);
    config_free(c);
}

/* ---- admission through the cycle -------------------------------------------------------- */

struct world {
    struct cluster *c;
    struct node_state *state;
    struct config *cfg;
    struct gang gangs[16];
    struct podset gang_sets[16]; /* gangs[i].sets: one each */
    uint32_t n;
    struct queue queues[4];
    const struct gang *pending[4][16];
    struct sched_queue_view views[4];
    int64_t *usage;
    struct arena arena;
    struct sched_result res;
};

static struct world *world(const char *spec, const char *yaml)
{
    struct world *w = calloc(1, sizeof(*w));
    struct sched_errbuf eb = {{0}};
    w->c = cluster_new();
    assert_int_equal(nodes_generate(w->c, spec, &eb), 0);
    assert_int_equal(cluster_finalize(w->c, NULL, NULL, 0, &eb), 0);
    w->state = calloc(w->c->n_nodes, sizeof(*w->state));
    w->cfg = load(yaml);
    w->usage = calloc((size_t)w->cfg->n_queues * w->cfg->n_flavors * RES_MAX, sizeof(int64_t));
    arena_init(&w->arena, 0);
    return w;
}

static void world_free(struct world *w)
{
    arena_fini(&w->arena);
    free(w->usage);
    config_free(w->cfg);
    free(w->state);
    cluster_free(w->c);
    free(w);
}

static struct gang *add(struct world *w, uint32_t q, uint32_t pods, int64_t g, int64_t t)
{
    struct gang *x = &w->gangs[w->n];
    memset(x, 0, sizeof(*x));
    x->sets = &w->gang_sets[w->n];
    x->id = w->n++;
    x->name = "g";
    x->queue = q;
    x->submit_ms = t * 1000;
    x->n_sets = 1;
    x->sets[0].count = pods;
    x->sets[0].req = gpus(g);
    x->sets[0].req.v[RES_PODS] = 1;
    x->topo_required = -1;
    x->topo_preferred = -1;
    gang_finalize(x);
    return x;
}

static const struct sched_result *run(struct world *w, int64_t now_s)
{
    const struct sched_policy *pol = sched_policy_find("gangsched");
    for (uint32_t q = 0; q < w->cfg->n_queues; q++) {
        struct queue_list l;
        queue_list_init(&l, true);
        for (uint32_t i = 0; i < w->n; i++)
            if (w->gangs[i].queue == q)
                queue_list_insert(&l, &w->gangs[i]);
        if (l.n > 0) /* a queue with nothing pending has no items array */
            memcpy(w->pending[q], l.items, l.n * sizeof(*l.items));
        w->queues[q] = (struct queue){.name = w->cfg->queues[q].name, .weight = 1};
        w->views[q] = (struct sched_queue_view){
            .queue = &w->queues[q], .pending = w->pending[q], .n_pending = l.n};
        queue_list_fini(&l);
    }
    struct sched_snapshot snap = {.now_ms = now_s * 1000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = w->views,
                                  .n_queues = w->cfg->n_queues,
                                  .policy = pol,
                                  .config = w->cfg,
                                  .usage = w->usage};
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    return &w->res;
}

static bool placed(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_placements; i++)
        if (r->placements[i].gang == g)
            return true;
    return false;
}

static const struct sched_verdict *verdict(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].gang == g)
            return &r->verdicts[i];
    return NULL;
}

#define TWO_TEAMS                                                                                  \
    HDR "cohorts:\n  - name: co\nqueues:\n"                                                        \
        "  - name: team-a\n    cohort: co\n    quota:\n      default:\n"                           \
        "        nvidia.com/gpu: 8\n"                                                              \
        "  - name: team-b\n    cohort: co\n    quota:\n      default:\n"                           \
        "        nvidia.com/gpu: 8\n"

static void test_quota_reason_has_numbers(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:4", HDR "queues:\n  - name: team-a\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 16\n");
    w->usage[RES_GPU] = 12; /* team-a already runs 12 GPUs */
    struct gang *g = add(w, 0, 1, 8, 0);
    const struct sched_result *r = run(w, 0);
    assert_false(placed(r, g));
    const struct sched_verdict *v = verdict(r, g);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_QUOTA);
    char buf[512];
    sched_verdict_format(v, w->c, w->cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "quota"));
    assert_non_null(strstr(buf, "team-a nvidia.com/gpu on default needs 8, nominal 16, used 12"));
    assert_non_null(strstr(buf, "may still take 4"));
    world_free(w);
}

static void test_borrowing_within_cohort_and_nominal_first(void **unused)
{
    (void)unused;
    /* 32 GPUs; team-a has 8 nominal, team-b 16: the cohort pools 24. team-a wants 24 (all of
     * the cohort) and 16 (8 own + 8 borrowed); team-b submits later a gang of 8, within its
     * nominal: b goes first (non-borrowing before borrowing) although a's gangs are older;
     * then a's 16 borrows b's idle 8, and a's 24 waits for quota. A 32 could never fit. */
    struct world *w = world("hgx:4", HDR "cohorts:\n  - name: co\nqueues:\n"
                                         "  - name: team-a\n    cohort: co\n    quota:\n"
                                         "      default:\n        nvidia.com/gpu: 8\n"
                                         "  - name: team-b\n    cohort: co\n    quota:\n"
                                         "      default:\n        nvidia.com/gpu: 16\n");
    struct gang *big = add(w, 0, 3, 8, 0);
    struct gang *mid = add(w, 0, 2, 8, 1);
    struct gang *huge = add(w, 0, 4, 8, 2);
    struct gang *b = add(w, 1, 1, 8, 10);
    const struct sched_result *r = run(w, 100);
    assert_true(placed(r, b));
    assert_true(placed(r, mid));
    assert_false(placed(r, big));
    const struct sched_verdict *v = verdict(r, big);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_QUOTA);
    assert_int_equal(v->quota_available, 16); /* when it was examined, before mid */
    v = verdict(r, huge);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_QUOTA_NEVER);
    assert_int_equal(v->quota_potential, 24);
    uint32_t ib = UINT32_MAX, im = UINT32_MAX;
    for (uint32_t i = 0; i < r->n_placements; i++) {
        if (r->placements[i].gang == b) {
            ib = i;
            assert_false(r->placements[i].borrowing);
        }
        if (r->placements[i].gang == mid) {
            im = i;
            assert_true(r->placements[i].borrowing);
        }
    }
    assert_true(ib < im); /* admitted in the non-borrowing pass, before mid */
    world_free(w);
}

static void test_strict_fifo_queue_blocks_its_own_gangs_only(void **unused)
{
    (void)unused;
    struct world *w = world("hgx:2", HDR "cohorts:\n  - name: co\nqueues:\n"
                                         "  - name: strict\n    cohort: co\n"
                                         "    ordering: StrictFIFO\n    quota:\n"
                                         "      default:\n        nvidia.com/gpu: 8\n"
                                         "  - name: other\n    cohort: co\n    quota:\n"
                                         "      default:\n        nvidia.com/gpu: 8\n");
    w->state[0].gpu_used = 0x0F; /* 4 + 8 free GPUs */
    w->state[0].used.v[RES_GPU] = 4;
    struct gang *head = add(w, 0, 2, 8, 0); /* cannot be placed: only one whole node */
    struct gang *behind = add(w, 0, 1, 2, 1);
    struct gang *o = add(w, 1, 1, 2, 2);
    const struct sched_result *r = run(w, 10);
    assert_false(placed(r, head));
    assert_false(placed(r, behind)); /* strict: waits behind its head */
    assert_true(placed(r, o));       /* another queue is not blocked */
    world_free(w);
}

static void test_fair_share_orders_queues(void **unused)
{
    (void)unused;
    /* team-a already uses 8 of its 8; team-b uses nothing. One free node: b's younger gang gets
     * it before a's older one. */
    struct world *w = world("hgx:2", TWO_TEAMS);
    w->state[0].gpu_used = 0xFF;
    w->state[0].used.v[RES_GPU] = 8;
    w->usage[0 * RES_MAX + RES_GPU] = 8;
    struct gang *ga = add(w, 0, 1, 8, 0);
    struct gang *gb = add(w, 1, 1, 8, 50);
    const struct sched_result *r = run(w, 100);
    assert_true(placed(r, gb));
    assert_false(placed(r, ga));
    world_free(w);
}

static void test_flavors_restrict_nodes(void **unused)
{
    (void)unused;
    struct world *w =
        world("hgx:2,pcie:2", HDR "flavors:\n"
                                  "  - name: h100\n    nodeLabels: {nvidia.com/gpu.product: "
                                  "NVIDIA-H100-80GB-HBM3}\n"
                                  "  - name: l40s\n    nodeLabels: {nvidia.com/gpu.product: "
                                  "NVIDIA-L40S}\n"
                                  "queues:\n  - name: t\n    quota:\n"
                                  "      l40s:\n        nvidia.com/gpu: 16\n");
    struct gang *g = add(w, 0, 2, 8, 0);
    const struct sched_result *r = run(w, 0);
    assert_true(placed(r, g));
    const struct sched_placement *p = &r->placements[0];
    assert_int_equal(p->flavor, 1);
    for (uint32_t k = 0; k < 2; k++)
        assert_string_equal(node_label(&w->c->nodes[p->pods[k].node], "nvidia.com/gpu.product"),
                            "NVIDIA-L40S");
    world_free(w);
}

/* The cohort hold is per flavor (sched/core/cycle.c, pool_hold_take): a's 8-GPU gang, H100
 * only, must borrow 4 and the cohort lends 5 H100s (b runs 2, c 8 of its 4, d 1); once it has
 * waited starvation.after (10 min) it holds the H100 pool. c's one-GPU gang, which must borrow on
 * either flavor (c runs its 4 L40S too), borrows an L40S; d's, H100 only, waits behind it. */
static void test_cohort_hold_is_per_flavor(void **unused)
{
    (void)unused;
    struct world *w =
        world("hgx:2,pcie:2",
              HDR "flavors:\n"
                  "  - name: h100\n    nodeLabels: {nvidia.com/gpu.product: "
                  "NVIDIA-H100-80GB-HBM3}\n"
                  "  - name: l40s\n    nodeLabels: {nvidia.com/gpu.product: NVIDIA-L40S}\n"
                  "cohorts:\n  - name: co\nqueues:\n"
                  "  - {name: a, cohort: co, quota: {h100: {nvidia.com/gpu: 4}}}\n"
                  "  - {name: b, cohort: co, quota: {h100: {nvidia.com/gpu: 7}, "
                  "l40s: {nvidia.com/gpu: 12}}}\n"
                  "  - {name: c, cohort: co, quota: {h100: {nvidia.com/gpu: 4}, "
                  "l40s: {nvidia.com/gpu: 4}}}\n"
                  "  - {name: d, cohort: co, quota: {h100: {nvidia.com/gpu: 1}}}\n");
    /* usage[(q * 2 + flavor) * RES_MAX + r]: b 2 H100, c 8 H100 and 4 L40S, d 1 H100 */
    w->usage[(1 * 2 + 0) * RES_MAX + RES_GPU] = 2;
    w->usage[(2 * 2 + 0) * RES_MAX + RES_GPU] = 8;
    w->usage[(2 * 2 + 1) * RES_MAX + RES_GPU] = 4;
    w->usage[(3 * 2 + 0) * RES_MAX + RES_GPU] = 1;
    for (uint32_t i = 0; i < 2; i++) /* the 11 H100s in use; pcie-0 holds c's 4 L40S */
        w->state[i].gpu_used = i == 0 ? 0xFF : 0x07, w->state[i].used.v[RES_GPU] = i ? 3 : 8;
    w->state[2].gpu_used = 0x0F, w->state[2].used.v[RES_GPU] = 4;
    struct gang *big = add(w, 0, 1, 8, 0);
    struct gang *cg = add(w, 2, 1, 1, 0);
    struct gang *dg = add(w, 3, 1, 1, 0);
    const struct sched_result *r = run(w, 3600);
    assert_false(placed(r, big));
    assert_int_equal(verdict(r, big)->why, SCHED_WHY_QUOTA);
    assert_true(verdict(r, big)->pool_hold);
    assert_true(placed(r, cg));
    for (uint32_t i = 0; i < r->n_placements; i++)
        if (r->placements[i].gang == cg)
            assert_int_equal(r->placements[i].flavor, 1); /* an L40S */
    assert_false(placed(r, dg));
    assert_int_equal(verdict(r, dg)->why, SCHED_WHY_BLOCKED);
    assert_ptr_equal(verdict(r, dg)->blocked_by, big);
    char buf[512];
    sched_verdict_format(verdict(r, dg), w->c, w->cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "no other gang of its cohort borrows on h100 until it starts"));
    world_free(w);
}

/* Flavor weights (flavors[].resourceWeights, as Kueue's KEP-8902): a queue that borrows two
 * H100s (weight 8) takes more of the pool than one that borrows two A10s; without weights the
 * two shares are equal. The head's request counts on the flavor it is charged to. A weight
 * that names no quota-tracked resource, or is not > 0, is refused with its place. */
static void test_flavor_weights_in_share(void **unused)
{
    (void)unused;
    for (int weighted = 0; weighted < 2; weighted++) {
        char yaml[1024];
        snprintf(yaml, sizeof(yaml),
                 HDR "flavors:\n  - name: h100\n    nodeLabels: {gpu: h100}\n%s"
                     "  - name: a10\n    nodeLabels: {gpu: a10}\n"
                     "cohorts:\n  - name: co\nqueues:\n"
                     "  - name: a\n    cohort: co\n    quota: {h100: {nvidia.com/gpu: 4}, "
                     "a10: {nvidia.com/gpu: 4}}\n"
                     "  - name: b\n    cohort: co\n    quota: {h100: {nvidia.com/gpu: 4}, "
                     "a10: {nvidia.com/gpu: 4}}\n",
                 weighted ? "    resourceWeights: {nvidia.com/gpu: 8}\n" : "");
        struct config *c = load(yaml);
        struct arena a;
        arena_init(&a, 0);
        struct quota_tree t;
        assert_int_equal(quota_build(&t, c, NULL, &a), 0);
        struct res_vec six = gpus(6), two = gpus(2);
        quota_charge(&t, 0, 1, &six, +1); /* a: 6 A10s, 2 above its nominal 4 */
        quota_charge(&t, 1, 0, &six, +1); /* b: 6 H100s, 2 above its nominal 4 */
        double sa = quota_share(&t, 0, 0, NULL), sb = quota_share(&t, 1, 0, NULL);
        if (!weighted) {
            /* plain sums: 6 of a nominal 8 each */
            assert_true(fabs(sa - 0.75) < 1e-9);
            assert_true(fabs(sb - 0.75) < 1e-9);
        } else {
            /* nominal 4 x 8 + 4 = 36 each, pool 72: a uses 6 of 36; b uses 48, 12 above */
            assert_true(fabs(sa - 6.0 / 36.0) < 1e-9);
            assert_true(fabs(sb - (1.0 + 12.0 / 72.0)) < 1e-9);
            /* two more GPUs for a: on H100 they weigh 16, on A10 2 */
            assert_true(fabs(quota_share(&t, 0, 0, &two) - 22.0 / 36.0) < 1e-9);
            assert_true(fabs(quota_share(&t, 0, 1, &two) - 8.0 / 36.0) < 1e-9);
            /* QUOTA_FIRST_FLAVOR: a admits on h100 first */
            assert_true(fabs(quota_share(&t, 0, QUOTA_FIRST_FLAVOR, &two) - 22.0 / 36.0) < 1e-9);
        }
        arena_fini(&a);
        config_free(c);
    }
    static const struct {
        const char *weights, *msg;
    } bad[] = {
        {"{nvidia.com/gpus: 8}", "test.yaml:5:23: flavors[0].resourceWeights: \"nvidia.com/gpus\" "
                                 "is not a resource any quota of this file names"},
        {"{nvidia.com/gpu: 0}", "test.yaml:5:39: flavors[0].resourceWeights.nvidia.com/gpu: must "
                                "be > 0"},
        {"{memory: 2}", "\"memory\" is not a resource any quota of this file names"},
        {"[8]", "flavors[0].resourceWeights"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char yaml[512];
        snprintf(yaml, sizeof(yaml),
                 HDR "flavors:\n  - name: h100\n    resourceWeights: %s\n"
                     "queues:\n  - name: a\n    quota: {h100: {nvidia.com/gpu: 4}}\n",
                 bad[i].weights);
        struct config *c = NULL;
        struct sched_errbuf eb = {{0}};
        assert_int_not_equal(config_load_buffer("test.yaml", yaml, strlen(yaml), &c, &eb), 0);
        assert_null(c);
        if (!strstr(eb.msg, bad[i].msg))
            fail_msg("%s: got \"%s\"", bad[i].weights, eb.msg);
    }
}

/* Quotas at the documented limit of one value (2^62 base units, docs/config.md): two queues of
 * memory 4Ei in one cohort add up past int64. The sums saturate instead of wrapping to -8Ei, so
 * a gang that fits its queue's nominal quota fits (before: QUOTA_NEVER, "may still take -8Ei"),
 * the cohort's total prints as "more than" the int64 maximum, and a borrowing limit of 4Ei adds
 * to the cohort's pool without wrapping. */
static void test_sums_at_the_limit_saturate(void **unused)
{
    (void)unused;
    struct config *c =
        load(HDR "cohorts:\n  - name: root\nqueues:\n"
                 "  - name: a\n    cohort: root\n    quota: {default: "
                 "{nvidia.com/gpu: 8, memory: {nominal: 4Ei, borrowingLimit: 4Ei}}}\n"
                 "  - name: b\n    cohort: root\n    quota: {default: "
                 "{nvidia.com/gpu: 8, memory: 4Ei}}\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    uint32_t km = t.tracked[0] == RES_MEMORY ? 0 : 1;
    assert_int_equal(t.tracked[km], RES_MEMORY);
    assert_true(t.subtree[km] > ((int64_t)1 << 62)); /* the cohort (node 0): no wrap */
    for (uint32_t q = 0; q < 2; q++) {
        assert_true(quota_available(&t, quota_queue_node(&t, q), 0, km) >= ((int64_t)1 << 62));
        assert_true(quota_potential(&t, quota_queue_node(&t, q), 0, km) >= ((int64_t)1 << 62));
    }
    struct res_vec need = gpus(8);
    need.v[RES_MEMORY] = (int64_t)1 << 40; /* 1Ti */
    struct quota_short why;
    assert_int_equal(quota_check(&t, 1, 0, &need, &why), QUOTA_FITS);
    quota_charge(&t, 1, 0, &need, +1);
    need.v[RES_MEMORY] = (int64_t)1 << 62; /* all of a's nominal, b using 1Ti: fits */
    assert_int_equal(quota_check(&t, 0, 0, &need, &why), QUOTA_FITS);
    quota_charge(&t, 0, 0, &need, +1);
    need.v[RES_GPU] = 0;
    quota_charge(&t, 1, 0, &need, +1); /* both past full: the cohort's usage saturates too */
    assert_true(t.usage[km] > ((int64_t)1 << 62));
    assert_false(quota_violated(&t, 0));
    assert_true(quota_share(&t, 0, 0, &need) > 0.0);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(config_print_totals(c, NULL, NULL, out), 0);
    fclose(out);
    assert_non_null(strstr(text, "cohort root (2 queues): memory@default more than "));
    assert_null(strstr(text, "-8Ei"));
    free(text);
    arena_fini(&a);
    config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kueue_borrowing_limit_example),
        cmocka_unit_test(test_kueue_lending_limit_example),
        cmocka_unit_test(test_nested_cohorts),
        cmocka_unit_test(test_queue_without_cohort_cannot_borrow),
        cmocka_unit_test(test_share_and_decay),
        cmocka_unit_test(test_quota_reason_has_numbers),
        cmocka_unit_test(test_borrowing_within_cohort_and_nominal_first),
        cmocka_unit_test(test_strict_fifo_queue_blocks_its_own_gangs_only),
        cmocka_unit_test(test_fair_share_orders_queues),
        cmocka_unit_test(test_flavors_restrict_nodes),
        cmocka_unit_test(test_sums_at_the_limit_saturate),
        cmocka_unit_test(test_flavor_weights_in_share),
        cmocka_unit_test(test_cohort_hold_is_per_flavor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
