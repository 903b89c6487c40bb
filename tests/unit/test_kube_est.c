/* tests/unit/test_kube_est.c: the daemon's run-time estimates for the start planner
 * (sched/kube/driver_est.c) on a cycle's input built by the cache from API objects: a full
 * cluster and a backlog of waiting gangs, run times learned from finished gangs. The estimates
 * are given on demand (sched_snapshot.runtime_src): the cycle asks for the gangs it plans, not
 * for the whole backlog, and the expected starts are the same as with every pending gang's
 * estimate computed before the cycle. The CPU time of both ways is printed (not asserted: speed
 * is checked by benchmarks). A gang of one keeps the run time its pod declares once bound. Run
 * times are learned per user (gangsched.io/user). */
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
#include <time.h>

#include "sched/core/bits.h"
#include "sched/kube/driver_int.h"

#include "tests/unit/kube_fx.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: q\n";

#define N_NODES 4
#define HOUR_MS 3600000
#define T0_MS   1767225600000 /* 2026-01-01T00:00:00Z */

/* Every node runs a gang; n_pending gangs wait; two hours learned for queue q. */
static void fixture(struct fx *f, uint32_t n_pending)
{
    memset(f, 0, sizeof(*f));
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &f->cfg, &eb), 0);
    f->d.cache = kcache_new("gangsched");
    assert_non_null(f->d.cache);
    arena_init(&f->d.arena, 1 << 16);
    char name[32], nn[32];
    for (int i = 0; i < N_NODES; i++) {
        snprintf(nn, sizeof(nn), "n%d", i);
        snprintf(name, sizeof(name), "run-%d", i);
        fx_node(f->d.cache, nn);
        fx_pod(f->d.cache, name, nn, true);
    }
    for (uint32_t k = 0; k < n_pending; k++) {
        snprintf(name, sizeof(name), "wait-%05u", k);
        fx_pod(f->d.cache, name, "", true);
    }
}

static void fixture_free(struct fx *f)
{
    kdrv_est_fini(&f->d);
    kcache_free(f->d.cache);
    arena_fini(&f->d.arena);
    config_free(f->cfg);
}

static void build(struct fx *f, int64_t now)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->d.arena);
    assert_int_equal(
        kcache_build(f->d.cache, f->cfg, sched_policy_default(), now, &f->d.arena, &f->kb, &eb), 0);
    f->kb.snap.plan_starts = true;
}

/* Runs of two hours, ended by themselves, as driver_record.c reports them. */
static void learn(struct fx *f, int n)
{
    build(f, T0_MS);
    assert_int_equal(kdrv_est_plan(&f->d, &f->kb, f->cfg, T0_MS), 0); /* the model's queues */
    for (int k = 0; k < n; k++) {
        struct store_job j = {.gang = "ml/old",
                              .queue = "q",
                              .gpus = 8,
                              .state = STORE_JOB_RUNNING,
                              .submit_ms = T0_MS - HOUR_MS / 2, /* the waiting gangs' batch */
                              .start_ms = T0_MS - 4 * HOUR_MS};
        kdrv_est_learn(&f->d, &j, T0_MS - 2 * HOUR_MS);
    }
}

static double cpu_s(void) /* the process's CPU time (user + system), in seconds */
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_eta(const void *a, const void *b)
{
    const struct sched_eta *x = a, *y = b;
    return (x->gang->id > y->gang->id) - (x->gang->id < y->gang->id);
}

/* One cycle at now: its expected starts, by gang id, into out[] (a copy: the arena is reset
 * after); eager: as before on-demand estimates, every pending gang's typical run time computed
 * before the cycle and given as an array. *cpu: the CPU time of the estimates and the cycle. */
static uint32_t cycle_etas(struct fx *f, int64_t now, bool eager, struct sched_eta *out,
                           uint32_t cap, double *cpu)
{
    build(f, now);
    double t0 = cpu_s();
    assert_int_equal(kdrv_est_plan(&f->d, &f->kb, f->cfg, now), 0);
    if (eager) {
        const struct sched_runtime_source *src = f->kb.snap.runtime_src;
        int64_t *typ = arena_calloc(&f->d.arena, f->kb.n_gangs, sizeof(*typ));
        assert_non_null(typ);
        for (uint32_t g = 0; g < f->kb.n_pending; g++)
            typ[g] = src->est(src->ctx, &f->kb.gangs[g].gang, true);
        f->kb.snap.runtime_src = NULL;
        f->kb.snap.runtime_typ_ms = typ;
        f->kb.snap.n_runtime_est = f->kb.n_gangs;
    } else {
        assert_int_equal(f->d.est_computed, 0); /* nothing computed before the cycle asks */
    }
    struct sched_result res;
    assert_int_equal(sched_cycle(&f->kb.snap, &f->d.arena, &res), 0);
    *cpu = cpu_s() - t0;
    assert_true(res.n_etas <= cap);
    memcpy(out, res.etas, res.n_etas * sizeof(*out));
    qsort(out, res.n_etas, sizeof(*out), cmp_eta);
    return res.n_etas;
}

static void on_demand_asks_few_and_plans_the_same(void **state)
{
    (void)state;
    enum { N = 10000, REPS = 3 };
    static struct fx f;
    static struct sched_eta lazy[N + N_NODES], eager[N + N_NODES];
    fixture(&f, N);
    learn(&f, EST_RING);
    int64_t now = T0_MS + HOUR_MS;
    double cpu_lazy = 1e9, cpu_eager = 1e9, cpu;
    uint32_t n_lazy = 0, n_eager = 0, asked = 0;
    for (int rep = 0; rep < REPS; rep++) { /* the least CPU of each way */
        n_lazy = cycle_etas(&f, now, false, lazy, N + N_NODES, &cpu);
        cpu_lazy = cpu < cpu_lazy ? cpu : cpu_lazy;
        asked = f.d.est_computed;
        n_eager = cycle_etas(&f, now, true, eager, N + N_NODES, &cpu);
        cpu_eager = cpu < cpu_eager ? cpu : cpu_eager;
    }
    assert_int_equal(f.kb.n_pending, N);
    assert_true(asked > 0);     /* the planner asked for the gangs it planned */
    assert_true(asked < N / 4); /* and not for the backlog */
    assert_true(n_lazy > 0);
    assert_int_equal(n_lazy, n_eager);
    for (uint32_t k = 0; k < n_lazy; k++) {
        assert_int_equal(lazy[k].gang->id, eager[k].gang->id);
        assert_int_equal(lazy[k].kind, eager[k].kind);
        assert_int_equal(lazy[k].start_ms, eager[k].start_ms);
    }

    /* the answers: the learned two hours for a pending gang, typical and safe (what decisions
     * read, as in the simulator); a running gang's end is in the releases and in its node's
     * release_ms */
    build(&f, now);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    const struct sched_runtime_source *src = f.kb.snap.runtime_src;
    assert_non_null(src);
    const struct gang *waiting = &f.kb.gangs[0].gang, *running = &f.kb.gangs[N].gang;
    assert_false(f.kb.gangs[0].running);
    assert_true(f.kb.gangs[N].running);
    assert_int_equal(src->est(src->ctx, waiting, true), 2 * HOUR_MS);
    assert_int_equal(src->est(src->ctx, waiting, true), 2 * HOUR_MS); /* kept */
    assert_int_equal(f.d.est_computed, 1);
    assert_int_equal(src->est(src->ctx, waiting, false), 2 * HOUR_MS);
    assert_int_equal(src->est(src->ctx, running, true), 0);
    assert_int_equal(f.kb.snap.n_releases, N_NODES);
    assert_int_equal(f.kb.snap.releases[0].t_ms, T0_MS + 2 * HOUR_MS);
    assert_int_equal(f.kb.state[f.kb.gangs[N].nodes[0]].release_ms, T0_MS + 2 * HOUR_MS);
    printf("# %u pending gangs, %u estimates asked; CPU of the estimates and the cycle (least of "
           "%d): on demand %.2f ms, all before the cycle %.2f ms\n",
           N, asked, REPS, cpu_lazy * 1e3, cpu_eager * 1e3);
    fixture_free(&f);
}

static const struct kgang *gang_by_key(const struct fx *f, const char *key)
{
    for (uint32_t g = 0; g < f->kb.n_gangs; g++)
        if (strcmp(f->kb.gangs[g].key, key) == 0)
            return &f->kb.gangs[g];
    fail_msg("no gang %s", key);
    return NULL;
}

/* A gang of one that declares gangsched.io/max-runtime on its pod only (no PodGroup) keeps it
 * once bound: the planner expects its GPUs back at its start + 30 minutes, not at the two hours
 * learned for its queue, as it planned its start with 30 minutes while it waited. */
static void pod_max_runtime_kept_once_bound(void **state)
{
    (void)state;
    static struct fx f;
    const char *ann = "\"gangsched.io/max-runtime\":\"30m\"";
    fixture(&f, 0);
    learn(&f, EST_RING);
    int64_t now = T0_MS + HOUR_MS / 4;
    fx_pod_ann(f.d.cache, "short", "", false, ann);
    build(&f, now);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    const struct kgang *kg = gang_by_key(&f, "ml/short");
    assert_false(kg->running);
    assert_int_equal(kg->gang.max_runtime_ms, HOUR_MS / 2);
    const struct sched_runtime_source *src = f.kb.snap.runtime_src;
    assert_int_equal(src->est(src->ctx, &kg->gang, true), HOUR_MS / 2);

    fx_node(f.d.cache, "n-short");
    fx_pod_ann(f.d.cache, "short", "n-short", true, ann); /* bound, started at T0 */
    build(&f, now);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    kg = gang_by_key(&f, "ml/short");
    assert_true(kg->running);
    assert_int_equal(kg->gang.max_runtime_ms, HOUR_MS / 2);
    int node = kcache_node_index(f.d.cache, "n-short");
    assert_true(node >= 0);
    uint32_t seen = 0;
    for (uint32_t r = 0; r < f.kb.snap.n_releases; r++) {
        const struct sched_release *rel = &f.kb.snap.releases[r];
        assert_int_equal(rel->t_ms,
                         rel->node == (uint32_t)node ? T0_MS + HOUR_MS / 2 : T0_MS + 2 * HOUR_MS);
        seen += rel->node == (uint32_t)node;
    }
    assert_int_equal(seen, 1);
    assert_int_equal(f.kb.snap.release_typ_ms[node], T0_MS + HOUR_MS / 2);

    /* a value that cannot be read is none (it was refused when the gang was admitted) */
    fx_pod_ann(f.d.cache, "short", "n-short", true, "\"gangsched.io/max-runtime\":\"90\"");
    build(&f, now);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    assert_int_equal(gang_by_key(&f, "ml/short")->gang.max_runtime_ms, 0);
    assert_int_equal(f.kb.snap.release_typ_ms[node], T0_MS + 2 * HOUR_MS);
    fixture_free(&f);
}

/* A running gang of one (pod ml/name of `gpus` GPUs in `queue`) on node, started at start_ms. */
static void run_pod_in(struct kcache *c, const char *name, const char *node, int64_t start_ms,
                       const char *ann, const char *queue, int gpus)
{
    char t[40], buf[1200];
    time_t sec = (time_t)(start_ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(
        buf, sizeof(buf),
        "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
        "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{%s},\"labels\":{"
        "\"gangsched.io/queue\":\"%s\"}},\"spec\":{\"schedulerName\":\"gangsched\","
        "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
        "\"nvidia.com/gpu\":\"%d\"}}}]},\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}",
        name, name, ann, queue, node, gpus, t);
    fx_add(c, 1, buf);
}

/* A running gang of one (pod ml/name, 8 GPUs, queue q) on node, started at start_ms. */
static void run_pod(struct kcache *c, const char *name, const char *node, int64_t start_ms,
                    const char *ann)
{
    run_pod_in(c, name, node, start_ms, ann, "q", 8);
}

/* One run of d_min minutes, submitted at T0 (the running gangs' batch), ended at end_ms. */
static void learn_run(struct kdrv *d, int64_t d_min, int64_t end_ms)
{
    struct store_job j = {.gang = "ml/done",
                          .queue = "q",
                          .gpus = 8,
                          .state = STORE_JOB_RUNNING,
                          .submit_ms = T0_MS,
                          .start_ms = end_ms - d_min * 60000};
    kdrv_est_learn(d, &j, end_ms);
}

/* A run of d_min minutes of user's (NULL: not known), ended at end_ms. */
static void learn_user_run(struct kdrv *d, const char *user, int64_t d_min, int64_t end_ms)
{
    struct store_job j = {.gang = "ml/done",
                          .queue = "q",
                          .gpus = 8,
                          .state = STORE_JOB_RUNNING,
                          .submit_ms = T0_MS - 10 * HOUR_MS,
                          .start_ms = end_ms - d_min * 60000,
                          .user = user};
    kdrv_est_learn(d, &j, end_ms);
}

/* Run times per user (gangsched.io/user, cache_users.c): ana's runs take 10 minutes, ben's 5
 * hours. A running gang of ana's (the annotation on its pod) is expected to end 10 minutes after
 * its start, ben's 5 hours after, in the planner's releases and in the safe release_ms of their
 * nodes; a gang without a user by its queue's runs. A user that changes on the pod changes the
 * kept end. */
static void runs_learned_per_user(void **state)
{
    (void)state;
    static struct fx f;
    fixture(&f, 0);
    build(&f, T0_MS);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, T0_MS), 0); /* the model's queues */
    for (int k = 0; k < 4; k++) {
        learn_user_run(&f.d, "ana", 10, T0_MS - HOUR_MS);
        learn_user_run(&f.d, "ben", 300, T0_MS - HOUR_MS);
    }
    const char *names[3] = {"a-run", "b-run", "x-run"};
    const char *anns[3] = {"\"gangsched.io/user\":\"ana\"", "\"gangsched.io/user\":\"ben\"", ""};
    int node[3];
    char nn[16];
    for (int i = 0; i < 3; i++) {
        snprintf(nn, sizeof(nn), "u%d", i);
        fx_node(f.d.cache, nn);
        run_pod(f.d.cache, names[i], nn, T0_MS, anns[i]);
    }
    int64_t now = T0_MS + 60000;
    build(&f, now);
    for (int i = 0; i < 3; i++) {
        snprintf(nn, sizeof(nn), "u%d", i);
        node[i] = kcache_node_index(f.d.cache, nn);
        assert_true(node[i] >= 0);
    }
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    assert_string_equal(kcache_user_name(f.d.cache, gang_by_key(&f, "ml/a-run")->gang.user), "ana");
    assert_string_equal(kcache_user_name(f.d.cache, gang_by_key(&f, "ml/b-run")->gang.user), "ben");
    assert_int_equal(gang_by_key(&f, "ml/x-run")->gang.user, 0);
    assert_int_equal(f.kb.snap.release_typ_ms[node[0]], T0_MS + 10 * 60000);
    assert_int_equal(f.kb.snap.release_typ_ms[node[1]], T0_MS + 300 * 60000);
    assert_int_equal(f.kb.state[node[0]].release_ms, T0_MS + 10 * 60000);
    assert_int_equal(f.kb.state[node[1]].release_ms, T0_MS + 300 * 60000);
    /* no user: its queue's eight runs, the safe 95th percentile is ben's 5 hours */
    assert_int_equal(f.kb.state[node[2]].release_ms, T0_MS + 300 * 60000);
    /* ana's pod now says ben: the kept end is computed again */
    run_pod(f.d.cache, "a-run", "u0", T0_MS, anns[1]);
    build(&f, now);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    assert_int_equal(f.kb.snap.release_typ_ms[node[0]], T0_MS + 300 * 60000);
    fixture_free(&f);
}

/* The running gangs' expected ends are kept from cycle to cycle (driver_est.c) and give the
 * releases computed anew: over six hours in steps of 7 minutes, as gangs run past learned run
 * times and past all of them, runs are learned, a gang declares its run time and a start
 * changes. At the same time again, or a second later while no gang ran past a learned run,
 * no end is computed. */
static void kept_ends_match_computed(void **state)
{
    (void)state;
    enum { N_RUN = 24 };
    static struct fx f;
    static struct kdrv fresh; /* the same cache and model, its kept ends dropped every step */
    fixture(&f, 0);
    fresh.cache = f.d.cache;
    arena_init(&fresh.arena, 1 << 16);
    char name[32], node[32];
    for (int i = 0; i < N_RUN; i++) { /* started 0 to 115 minutes before T0 */
        snprintf(name, sizeof(name), "r-%02d", i);
        snprintf(node, sizeof(node), "m%02d", i);
        fx_node(f.d.cache, node);
        run_pod(f.d.cache, name, node, T0_MS - i * 5 * 60000,
                i == 5 ? "\"gangsched.io/max-runtime\":\"3h\"" : "");
    }
    build(&f, T0_MS);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, T0_MS), 0);
    assert_int_equal(kdrv_est_plan(&fresh, &f.kb, f.cfg, T0_MS), 0);
    for (int k = 1; k <= 12; k++) { /* learned runs of 20 min to 4 h */
        learn_run(&f.d, 20 * k, T0_MS);
        learn_run(&fresh, 20 * k, T0_MS);
    }
    static struct sched_release kept[N_RUN + N_NODES + 1];
    static int64_t kept_release[N_RUN + N_NODES + 1];
    uint32_t n_running = 0, quiet_steps = 0;
    for (int step = 0; step <= 6 * 60 / 7; step++) {
        int64_t now = T0_MS + (int64_t)step * 7 * 60000 + 1000;
        if (step % 10 == 9) { /* a new run learned */
            learn_run(&f.d, 37 + step, now);
            learn_run(&fresh, 37 + step, now);
        }
        if (step == 20) /* a gang's start changes (its pod was replaced) */
            run_pod(f.d.cache, "r-03", "m03", now - 30 * 60000, "");
        build(&f, now);
        n_running = f.kb.n_gangs - f.kb.n_pending;
        assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
        uint32_t n = f.kb.snap.n_releases;
        assert_true(n <= N_RUN + N_NODES);
        memcpy(kept, f.kb.snap.releases, n * sizeof(*kept));
        assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0); /* the same time again */
        assert_int_equal(f.d.est_ended, 0);
        if (now < T0_MS + 2 * HOUR_MS) { /* a second later: no gang ran past a learned run
                                            (each ends on a whole minute) nor past all of them */
            assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now + 1000), 0);
            assert_int_equal(f.d.est_ended, 0);
            quiet_steps++;
        }
        build(&f, now);
        assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
        uint32_t nn = f.kb.snap.cluster->n_nodes;
        assert_true(nn <= N_RUN + N_NODES);
        for (uint32_t i = 0; i < nn; i++) /* the safe ends decisions read, kept */
            kept_release[i] = f.kb.state[i].release_ms;
        build(&f, now);
        kdrv_est_ends_clear(&fresh);
        assert_int_equal(kdrv_est_plan(&fresh, &f.kb, f.cfg, now), 0);
        for (uint32_t i = 0; i < nn; i++)
            assert_int_equal(kept_release[i], f.kb.state[i].release_ms);
        assert_int_equal(fresh.est_ended, n_running);
        assert_int_equal(f.kb.snap.n_releases, n);
        for (uint32_t r = 0; r < n; r++) {
            assert_int_equal(kept[r].node, f.kb.snap.releases[r].node);
            assert_int_equal(kept[r].gpus, f.kb.snap.releases[r].gpus);
            assert_int_equal(kept[r].t_ms, f.kb.snap.releases[r].t_ms);
        }
    }
    assert_int_equal(n_running, N_RUN + N_NODES);
    assert_true(quiet_steps > 10);
    kdrv_est_fini(&fresh);
    arena_fini(&fresh.arena);
    fixture_free(&f);
}

static uint32_t node_ix(const struct fx *f, const char *name)
{
    const struct cluster *cl = f->kb.snap.cluster;
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (strcmp(cl->nodes[i].name, name) == 0)
            return i;
    fail_msg("node %s not in the build", name);
    return 0;
}

/* A node's release: two shares of one GPU are one GPU of ours, so another scheduler's pod on a
 * second GPU makes the node's end unknown (counted per pod, 2 GPUs of ours covered both GPUs in
 * use); a node with only our shares ends when they do. */
static void shares_of_one_gpu_count_once(void **state)
{
    (void)state;
    static struct fx f;
    fixture(&f, 0);
    const char *one_h = "\"gangsched.io/gpu-ids\":\"0\",\"gangsched.io/max-runtime\":\"1h\"";
    fx_node(f.d.cache, "h1");
    fx_node(f.d.cache, "h2");
    run_pod_in(f.d.cache, "s1", "h1", T0_MS, one_h, "q", 1);
    run_pod_in(f.d.cache, "s2", "h1", T0_MS, one_h, "q", 1);
    fx_add(f.d.cache, 1,
           "{\"metadata\":{\"namespace\":\"other\",\"name\":\"f1\",\"uid\":\"u-f1\"},\"spec\":{"
           "\"schedulerName\":\"default-scheduler\",\"nodeName\":\"h1\",\"containers\":[{\"name\":"
           "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":"
           "\"Running\",\"startTime\":\"2026-01-01T00:00:00Z\"}}");
    run_pod_in(f.d.cache, "s3", "h2", T0_MS, one_h, "q", 1);
    run_pod_in(f.d.cache, "s4", "h2", T0_MS, one_h, "q", 1);
    int64_t now = T0_MS + 60000;
    build(&f, now);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
    uint32_t h1 = node_ix(&f, "h1"), h2 = node_ix(&f, "h2");
    assert_int_equal(bits_popc32(f.kb.state[h1].gpu_used), 2);
    assert_true(f.kb.state[h1].release_ms == INT64_MAX); /* the foreign pod's end is unknown */
    assert_int_equal(f.kb.state[h2].release_ms, T0_MS + HOUR_MS);
    fixture_free(&f);
}

/* Busy rings: R_QUEUES queues x R_SHAPES shapes, k running gangs of each (one per node), every
 * ring with learned runs; a run is learned into one ring per cycle (a finish per cycle, as in a
 * busy cluster). Only the gangs whose estimates read that ring have their ends computed again,
 * and the kept ends give the releases computed anew. GANGSCHED_EST_GANGS=k (default 4) makes it
 * a measurement (docs/daemon.md: k = 625, 20,000 running gangs, valgrind --tool=callgrind
 * --toggle-collect='step_plan*'): 20 cycles a second apart, each after a run learned
 * (GANGSCHED_EST_QUIET set: none), the ends computed printed, not checked. */
enum { R_QUEUES = 8, R_SHAPES = 4 };

static void learn_ring(struct kdrv *d, int q, int gpus, int64_t d_min, int64_t end_ms)
{
    char queue[16];
    snprintf(queue, sizeof(queue), "q%d", q);
    struct store_job j = {.gang = "ml/done",
                          .queue = queue,
                          .gpus = gpus,
                          .state = STORE_JOB_RUNNING,
                          .submit_ms = T0_MS,
                          .start_ms = end_ms - d_min * 60000};
    kdrv_est_learn(d, &j, end_ms);
}

/* A cycle's plan, on its own for a measurement (valgrind --tool=callgrind
 * --toggle-collect=step_plan counts the plans of the steps only). */
__attribute__((noinline)) static int step_plan(struct fx *f, int64_t now)
{
    return kdrv_est_plan(&f->d, &f->kb, f->cfg, now);
}

static void a_run_learned_recomputes_its_ring_only(void **state)
{
    (void)state;
    const char *env = getenv("GANGSCHED_EST_GANGS");
    int k = env && atoi(env) > 0 ? atoi(env) : 4;
    bool measure = env != NULL, quiet = measure && getenv("GANGSCHED_EST_QUIET");
    static struct fx f;
    static struct kdrv fresh;
    memset(&f, 0, sizeof(f));
    memset(&fresh, 0, sizeof(fresh));
    char yaml[600] = "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n";
    for (int q = 0; q < R_QUEUES; q++)
        snprintf(yaml + strlen(yaml), sizeof(yaml) - strlen(yaml), "  - name: q%d\n", q);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &f.cfg, &eb), 0);
    f.d.cache = kcache_new("gangsched");
    assert_non_null(f.d.cache);
    arena_init(&f.d.arena, 1 << 16);
    fresh.cache = f.d.cache;
    arena_init(&fresh.arena, 1 << 16);
    char name[40], node[40], queue[16];
    uint32_t n_gangs = 0;
    for (int q = 0; q < R_QUEUES; q++)
        for (int sh = 0; sh < R_SHAPES; sh++)
            for (int i = 0; i < k; i++, n_gangs++) {
                snprintf(name, sizeof(name), "g-%d-%d-%05d", q, sh, i);
                snprintf(node, sizeof(node), "n%06u", n_gangs);
                snprintf(queue, sizeof(queue), "q%d", q);
                fx_node(f.d.cache, node);
                run_pod_in(f.d.cache, name, node, T0_MS - (int64_t)(n_gangs % 97) * 60000, "",
                           queue, 1 << sh);
            }
    build(&f, T0_MS);
    assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, T0_MS), 0);
    assert_int_equal(kdrv_est_plan(&fresh, &f.kb, f.cfg, T0_MS), 0);
    for (int q = 0; q < R_QUEUES; q++) /* every ring: runs of 1 to 8 hours */
        for (int sh = 0; sh < R_SHAPES; sh++)
            for (int r = 1; r <= 8; r++) {
                learn_ring(&f.d, q, 1 << sh, 60 * r + q + sh, T0_MS);
                learn_ring(&fresh, q, 1 << sh, 60 * r + q + sh, T0_MS);
            }
    uint64_t ended = 0;
    int steps = measure ? 20 : 2 * R_QUEUES * R_SHAPES;
    if (measure) { /* the ends of the model just learned, before the measured cycles */
        build(&f, T0_MS);
        assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, T0_MS), 0);
    }
    for (int step = 0; step < steps; step++) {
        int64_t now = T0_MS + (int64_t)step * 1000 + 500;
        int q = step % R_QUEUES, sh = (step / R_QUEUES) % R_SHAPES;
        if (measure) { /* a cycle a second, a gang finished since the last (none: quiet) */
            if (!quiet)
                learn_ring(&f.d, q, 1 << sh, 90 + step, now);
            build(&f, now);
            assert_int_equal(step_plan(&f, now), 0);
            ended += f.d.est_ended;
            continue;
        }
        build(&f, now);
        assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0); /* time's changes first */
        learn_ring(&f.d, q, 1 << sh, 90 + step, now); /* a gang of that ring finished */
        learn_ring(&fresh, q, 1 << sh, 90 + step, now);
        build(&f, now);
        assert_int_equal(kdrv_est_plan(&f.d, &f.kb, f.cfg, now), 0);
        assert_int_equal(f.d.est_ended, k); /* the ring's own gangs, not all of them */
        uint32_t n = f.kb.snap.n_releases, nn = f.kb.snap.cluster->n_nodes;
        static struct sched_release kept[R_QUEUES * R_SHAPES * 8];
        static int64_t kept_release[R_QUEUES * R_SHAPES * 8];
        assert_true(n <= R_QUEUES * R_SHAPES * 8 && nn <= R_QUEUES * R_SHAPES * 8);
        memcpy(kept, f.kb.snap.releases, n * sizeof(*kept));
        for (uint32_t i = 0; i < nn; i++)
            kept_release[i] = f.kb.state[i].release_ms;
        build(&f, now);
        kdrv_est_ends_clear(&fresh);
        assert_int_equal(kdrv_est_plan(&fresh, &f.kb, f.cfg, now), 0);
        assert_int_equal(fresh.est_ended, n_gangs);
        assert_int_equal(f.kb.snap.n_releases, n);
        for (uint32_t r = 0; r < n; r++)
            assert_int_equal(kept[r].t_ms, f.kb.snap.releases[r].t_ms);
        for (uint32_t i = 0; i < nn; i++)
            assert_int_equal(kept_release[i], f.kb.state[i].release_ms);
    }
    if (measure)
        printf("running gangs %u, %s: %.1f ends computed per cycle\n", n_gangs,
               quiet ? "nothing learned" : "a run learned per cycle", (double)ended / steps);
    kdrv_est_fini(&fresh);
    arena_fini(&fresh.arena);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(on_demand_asks_few_and_plans_the_same),
        cmocka_unit_test(pod_max_runtime_kept_once_bound),
        cmocka_unit_test(kept_ends_match_computed),
        cmocka_unit_test(a_run_learned_recomputes_its_ring_only),
        cmocka_unit_test(shares_of_one_gpu_count_once),
        cmocka_unit_test(runs_learned_per_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
