/* tests/unit/test_place_share.c: GPU shares (HAMi) in the placement state kept between cycles.
 *
 * The charge of the running shares (sched/core/place_share.c) is made when the sync restores a
 * node and kept with it until the node is marked again. What must hold:
 *  - a cycle on the kept base decides exactly what a cycle built from scratch decides, through a
 *    seeded random life on a HAMi cluster (share gangs, whole-device gangs and multi-node gangs
 *    placed and ended, nodes down and up): the same nodes, devices and verdicts;
 *  - a cycle with nothing changed marks no node and the next one restores none, however many
 *    nodes hold shares (before, every such node was marked in every cycle);
 *  - the share flag of a gang (gang_finalize) says what its pod sets ask for.
 * Own binary: the HAMi resources are added to the process-wide resource table.
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

#include "sched/core/cycle.h"
#include "sched/core/hami.h"
#include "sched/core/place.h"
#include "sched/core/place_base.h"
#include "sched/core/policy.h"
#include "sched/k8s/nodes.h"

#include "tests/unit/place_fx.h"

#define N_GANGS 40
#define N_REG   10 /* registered nodes h0..h9 (8 devices); then p0, p1 without a register */

static int id_mem, id_pct, id_cores;

static void share_ids(void)
{
    struct sched_errbuf eb = {{0}};
    assert_int_equal(res_intern(HAMI_RES_MEM, &id_mem, &eb), 0);
    assert_int_equal(res_intern(HAMI_RES_MEM_PCT, &id_pct, &eb), 0);
    assert_int_equal(res_intern(HAMI_RES_CORES, &id_cores, &eb), 0);
}

/* Ten nodes of 8 registered devices (32 GiB, split 4) in two racks and two plain 8-GPU nodes. */
static struct cluster *hami_cluster(void)
{
    static char yaml[64 * 1024];
    size_t at = (size_t)snprintf(yaml, sizeof(yaml), "kind: NodeList\nitems:\n");
    for (int i = 0; i < N_REG + 2; i++) {
        char reg[4096] = "";
        size_t r = 0;
        for (int d = 0; i < N_REG && d < 8; d++)
            r += (size_t)snprintf(reg + r, sizeof(reg) - r,
                                  "GPU-%d-%d,4,32768,100,NVIDIA-Tesla V100,0,true,%d,hami-core:", i,
                                  d, d);
        at += (size_t)snprintf(
            yaml + at, sizeof(yaml) - at,
            "- metadata: {name: %s%d, labels: {network.topology.gangsched.io/rack: r%d}%s%s%s}\n"
            "  status: {allocatable: {cpu: \"64\", memory: \"512Gi\", pods: \"110\", "
            "nvidia.com/gpu: \"%d\"}}\n",
            i < N_REG ? "h" : "p", i < N_REG ? i : i - N_REG, i < 5 ? 0 : 1,
            i < N_REG ? ", annotations: {" HAMI_NODE_REGISTER ": \"" : "", i < N_REG ? reg : "",
            i < N_REG ? "\"}" : "", i < N_REG ? 32 : 8);
    }
    struct sched_errbuf eb = {{0}};
    struct cluster *c = cluster_new();
    if (nodes_load_buffer(c, "hami.yaml", yaml, at, &eb) != 0)
        fail_msg("nodes: %s", eb.msg);
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(c->n_nodes, N_REG + 2);
    assert_int_equal(c->nodes[0].n_gpus, 8);
    return c;
}

struct life {
    struct pfx_world w;
    struct gang gangs[N_GANGS];
    struct podset gang_sets[N_GANGS]; /* gangs[i].sets: one each */
    struct sched_assign pods[N_GANGS][8];
    bool running[N_GANGS];
    struct sched_running runs[N_GANGS];
    uint32_t n_runs;
};

static uint64_t rnd(struct life *l)
{
    return pfx_rnd(&l->w.rng);
}

/* kind 0: a share gang (1 or 2 pods of 1 or 2 devices, gpumem or gpumem-percentage, gpucores);
 * 1: one pod of 1, 2, 4 or 8 whole devices; 2: two pods of 4 whole devices in one rack. */
static void make_gang(struct life *l, struct gang *g, uint32_t id, int kind)
{
    memset(g, 0, sizeof(*g));
    g->id = id;
    g->name = "g";
    g->submit_ms = (int64_t)id * 1000;
    g->sets = memset(&l->gang_sets[id], 0, sizeof(l->gang_sets[id]));
    g->n_sets = 1;
    struct podset *ps = &g->sets[0];
    ps->count = kind == 2 ? 2 : 1;
    ps->req.v[RES_CPU] = 1000;
    ps->req.v[RES_MEMORY] = INT64_C(1) << 30;
    ps->req.v[RES_PODS] = 1;
    g->topo_required = kind == 2 ? 0 : -1;
    g->topo_preferred = -1;
    g->slice_level = -1;
    if (kind == 0) {
        ps->count = 1 + (uint32_t)(rnd(l) % 2);
        ps->req.v[RES_GPU] = 1 + (int64_t)(rnd(l) % 4 == 0);
        if (rnd(l) % 3 == 0)
            ps->req.v[id_pct] = 25 * (1 + (int64_t)(rnd(l) % 3));
        else
            ps->req.v[id_mem] = 4000 * (1 + (int64_t)(rnd(l) % 4));
        ps->req.v[id_cores] = 10 * (1 + (int64_t)(rnd(l) % 5));
    } else {
        static const int64_t whole[] = {1, 2, 4, 8};
        ps->req.v[RES_GPU] = kind == 2 ? 4 : whole[rnd(l) % 4];
    }
    gang_finalize(g);
    g->min_member = g->n_pods;
}

static void use(struct life *l, const struct gang *g, uint32_t k, const struct sched_assign *a,
                int sign)
{
    pfx_use(l->w.state, l->w.base, g, k, a, sign);
}

static void start(struct life *l, const struct sched_result *res)
{
    for (uint32_t p = 0; p < res->n_placements; p++) {
        const struct gang *g = res->placements[p].gang;
        l->running[g->id] = true;
        for (uint32_t k = 0; k < g->n_pods; k++) {
            l->pods[g->id][k] = res->placements[p].pods[k];
            use(l, g, k, &l->pods[g->id][k], +1);
        }
    }
}

static void end(struct life *l, uint32_t j)
{
    l->running[j] = false;
    for (uint32_t k = 0; k < l->gangs[j].n_pods; k++)
        use(l, &l->gangs[j], k, &l->pods[j][k], -1);
}

/* The running gangs as the snapshot's shares. */
static void list_runs(struct life *l)
{
    l->n_runs = 0;
    for (uint32_t j = 0; j < N_GANGS; j++)
        if (l->running[j])
            l->runs[l->n_runs++] = (struct sched_running){.gang = &l->gangs[j], .pods = l->pods[j]};
}

static struct life *life_new(uint64_t seed)
{
    struct life *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    share_ids();
    pfx_world_init(&l->w, hami_cluster(), seed);
    return l;
}

static void life_free(struct life *l)
{
    pfx_world_fini(&l->w);
    free(l);
}

/* One cycle over the given pending gangs on the kept base, and (scratch) the same snapshot
 * without a base, whose decisions must be the same. */
static void cycle(struct life *l, const struct gang **pending, uint32_t n, int64_t now,
                  struct sched_result *res, bool scratch)
{
    static struct queue qu = {.name = "q", .priority = 0, .weight = 1};
    list_runs(l);
    struct sched_queue_view view = {.queue = &qu, .pending = pending, .n_pending = n};
    struct sched_snapshot snap = {.now_ms = now,
                                  .cluster = l->w.c,
                                  .state = l->w.state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy = sched_policy_find("gangsched"),
                                  .shares = l->runs,
                                  .n_shares = l->n_runs,
                                  .verdict_every_gang = true,
                                  .base = l->w.base};
    arena_reset(&l->w.a);
    assert_int_equal(sched_cycle(&snap, &l->w.a, res), 0);
    if (!scratch)
        return;
    struct sched_result without;
    snap.base = NULL;
    arena_reset(&l->w.b);
    assert_int_equal(sched_cycle(&snap, &l->w.b, &without), 0);
    pfx_same_result(res, &without);
}

/* 80 cycles of a random life on a HAMi cluster, each decided on the kept base and from scratch. */
static void test_shares_kept_decide_as_scratch(void **unused)
{
    (void)unused;
    struct life *l = life_new(0x9E3779B97F4A7C15ull);
    for (uint32_t j = 0; j < N_GANGS; j++)
        make_gang(l, &l->gangs[j], j, j % 5 < 3 ? 0 : (j % 5 == 3 ? 1 : 2));
    uint32_t placed = 0, shares_held = 0;
    for (int cyc = 0; cyc < 80; cyc++) {
        const struct gang *pending[N_GANGS];
        uint32_t n = 0;
        for (uint32_t j = 0; j < N_GANGS; j++)
            if (!l->running[j])
                pending[n++] = &l->gangs[j];
        struct sched_result res;
        cycle(l, pending, n, INT64_C(60000) * (cyc + 1), &res, true);
        placed += res.n_placements;
        for (uint32_t i = 0; i < l->w.c->n_nodes; i++)
            shares_held += l->w.base->in_sh[i];
        start(l, &res);
        for (uint32_t j = 0; j < N_GANGS; j++) /* some end */
            if (l->running[j] && rnd(l) % 10 == 0)
                end(l, j);
        if (cyc % 7 == 3) { /* a node goes down or comes back */
            uint32_t i = (uint32_t)(rnd(l) % l->w.c->n_nodes);
            l->w.state[i].not_ready = !l->w.state[i].not_ready;
            place_base_touch(l->w.base, i);
        }
    }
    assert_true(placed > 150);     /* the life did place gangs */
    assert_true(shares_held > 40); /* and nodes kept their shares between cycles */
    life_free(l);
}

/* Share gangs started on several nodes, then cycles with nothing changed: the first restores
 * the nodes the starts touched and charges their shares; after it no node is marked, and the
 * next cycle restores none and decides as a cycle from scratch. */
static void test_steady_cycle_marks_nothing(void **unused)
{
    (void)unused;
    struct life *l = life_new(12345);
    const struct gang *pending[N_GANGS];
    for (uint32_t j = 0; j < 12; j++) {
        make_gang(l, &l->gangs[j], j, 0);
        l->gangs[j].share_node_pol = 2; /* spread: one node each, as far as they go */
        pending[j] = &l->gangs[j];
    }
    struct sched_result res;
    cycle(l, pending, 12, 1000, &res, false);
    assert_int_equal(res.n_placements, 12);
    start(l, &res);
    assert_true(l->w.base->n_dirty >= N_REG); /* the driver touched the nodes of the starts */
    cycle(l, NULL, 0, 2000, &res, true);      /* restores and charges them */
    assert_true(l->w.base->n_synced >= N_REG);
    uint32_t held = 0;
    for (uint32_t i = 0; i < l->w.c->n_nodes; i++)
        held += l->w.base->in_sh[i];
    assert_int_equal(held, N_REG); /* every registered node holds a share, kept */
    assert_int_equal(l->w.base->n_dirty, 0);
    for (int k = 0; k < 3; k++) { /* nothing changed */
        cycle(l, NULL, 0, 3000 + k, &res, true);
        assert_int_equal(l->w.base->n_synced, 0);
        assert_int_equal(l->w.base->n_dirty, 0);
    }
    /* and the kept charges place as a scratch state does: a whole device goes where no share
     * is (the plain nodes first fill up), a share where the policy wants it */
    for (uint32_t j = 12; j < 20; j++) {
        make_gang(l, &l->gangs[j], j, j % 2 ? 0 : 1);
        pending[j - 12] = &l->gangs[j];
    }
    cycle(l, pending, 8, 5000, &res, true);
    assert_true(res.n_placements > 0);
    life_free(l);
}

/* The flag says whether some pod set asks for gpumem, gpumem-percentage or gpucores, whichever
 * set it is; place_is_share adds that some node has a register. */
static void test_share_flag_follows_sets(void **unused)
{
    (void)unused;
    share_ids();
    const int ids[] = {id_mem, id_pct, id_cores};
    struct place_state with = {.n_gs = 3}, without = {.n_gs = 0};
    uint64_t r = 99;
    for (int round = 0; round < 200; round++) {
        struct gang g;
        struct podset sets[GANG_MAX_SETS] = {{0}};
        memset(&g, 0, sizeof(g));
        g.sets = sets;
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        g.n_sets = 1 + (uint32_t)(r % GANG_MAX_SETS);
        bool want = false;
        for (uint32_t s = 0; s < g.n_sets; s++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            g.sets[s].count = 1;
            g.sets[s].req.v[RES_GPU] = (int64_t)(r % 3);
            g.sets[s].req.v[RES_CPU] = 500;
            if (r % 5 == 0) { /* one of the three, somewhere in the gang */
                g.sets[s].req.v[ids[(r >> 8) % 3]] = 1 + (int64_t)((r >> 16) % 100);
                want = true;
            }
        }
        gang_finalize(&g);
        assert_int_equal(g.share, want);
        assert_int_equal(place_is_share(&with, &g), want);
        assert_false(place_is_share(&without, &g));
        if (want) { /* the request taken away: no longer a share gang */
            for (uint32_t s = 0; s < g.n_sets; s++)
                for (int k = 0; k < 3; k++)
                    g.sets[s].req.v[ids[k]] = 0;
            gang_finalize(&g);
            assert_false(g.share);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shares_kept_decide_as_scratch),
        cmocka_unit_test(test_steady_cycle_marks_nothing),
        cmocka_unit_test(test_share_flag_follows_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
