/* tests/bench/scale.c: the scaling benchmarks run by `make bench` (issue 16).
 *
 * Owns: how the cost of a cycle is measured against the size of the cluster and of the backlog.
 *   7. scaling curve: the cluster07 ITP trace replayed (policy gangsched) on hgx:1,000, 5,000,
 *      20,000, 50,000 and 100,000; each size in a child process, so that its CPU time and peak
 *      RSS (getrusage of the child) are its own; the fastest of SCALE_REPEATS replays of the
 *      same input counts; ratio 50,000 : 5,000.
 *   8. deep backlog: a burst of 10,000 gangs of mixed shapes (1 to 64 pods of 1 to 8 GPUs, all
 *      submitted in the first 100 s, 1 to 24 hours each) on hgx:1,000, gangsched against fifo.
 *   9. steady cycle: 10,000 pending gangs of those shapes on a full hgx:1,000 and nothing changed
 *      since the last cycle: CPU time of one cycle.
 *  10. steady cycle with GPU shares: the same backlog on 1,000 nodes of 8 devices registered by
 *      HAMi, every device holding two running shares (16,000 share pods), against the same nodes
 *      without registers, full of whole-device pods, in the same process: the ratio of one
 *      cycle's CPU time (the shares are charged when a node changes, not at every cycle).
 * Every figure is CPU time of the process (or child) doing the work; the targets are ratios
 * against a baseline of the same run, except the steady cycle and the RSS (absolute).
 *
 * Usage: bench_scale [--markdown] [ITP_DATA_DIR]  (default sched/sim/data/itp)
 *        bench_scale --burst-csv N [SEED]      prints the burst trace (N gangs) as CSV
 *        bench_scale --steady                  only 9 and 10
 * --markdown prints the scaling curve as a Markdown table (tests/bench/scale_doc.py puts it in
 * docs/simulator.md).
 *
 * Must not touch: the core (it drives it as the simulator does), files other than its inputs.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "queue/queue.h"
#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/hami.h"
#include "sched/core/model.h"
#include "sched/core/place_base.h"
#include "sched/core/policy.h"
#include "sched/k8s/nodes.h"
#include "sched/sim/nodes.h"
#include "sched/sim/sim.h"
#include "sched/sim/trace.h"

#define DEFAULT_ITP_DIR  "sched/sim/data/itp"
#define BURST_GANGS      10000u
#define BURST_CLUSTER    "hgx:1000"
#define TARGET_SCALE_X   2.0    /* hgx:50,000 within 2x of hgx:5,000 */
#define TARGET_BACKLOG_X 5.0    /* gangsched within 5x of fifo */
#define TARGET_STEADY_MS 5.0    /* one cycle, 10,000 pending, nothing changed */
#define TARGET_RSS_MB    2048.0 /* hgx:100,000 */
#define TARGET_SHARE_X   1.5    /* steady cycle, HAMi cluster within 1.5x of a plain one */
#define SHARE_NODES      1000u
#define SHARES_PER_DEV   2u
#define SHARE_CYCLES     200u /* steady cycles per measure of 10 (each about 0.05 ms) */
#define SHARE_REPEATS    3    /* measures of each; the fastest counts */
#define STEADY_CYCLES    20u
#define SCALE_REPEATS    3 /* replays per size; the fastest counts (a shared machine) */
#define BURST_REPEATS    2 /* burst replays per policy; the fastest counts */

static const uint32_t scale_sizes[] = {1000, 5000, 20000, 50000, 100000};
#define N_SIZES (sizeof(scale_sizes) / sizeof(scale_sizes[0]))

static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

/* ---- the burst ----------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

/* The burst as CSV text (malloc'd): one gang every 10 ms; shapes weighted toward small gangs. */
static char *burst_csv(uint32_t n, uint64_t seed, size_t *len)
{
    static const uint32_t pods[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 16, 32, 64};
    static const uint32_t gpp[] = {1, 2, 4, 8, 8, 8};
    size_t cap = 64 + (size_t)n * 64;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t at =
        (size_t)snprintf(buf, cap, "job_id,submission_time,duration,num_gpu,gpus_per_pod\n");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t p = pods[rng_next(&s) % (sizeof(pods) / sizeof(pods[0]))];
        uint32_t g = p < 64 ? gpp[rng_next(&s) % (sizeof(gpp) / sizeof(gpp[0]))] : 8;
        uint32_t dur = 3600 + (uint32_t)(rng_next(&s) % (86400 - 3600 + 1));
        at += (size_t)snprintf(buf + at, cap - at, "burst-%05u,%u.%02u,%u,%u,%u\n", i, i / 100,
                               i % 100, dur, p * g, g);
    }
    *len = at;
    return buf;
}

/* ---- one replay ------------------------------------------------------------------------------ */

struct replay {
    struct cluster *c;
    struct trace tr;
    struct sim_input in;
};

static void replay_fini(struct replay *r)
{
    sim_input_free(&r->in);
    trace_free(&r->tr);
    cluster_free(r->c);
}

/* Builds the cluster and the input: a trace file, or the burst when path is NULL. */
static int replay_init(struct replay *r, const char *spec, const char *path)
{
    struct sched_errbuf eb = {{0}};
    memset(r, 0, sizeof(*r));
    trace_init(&r->tr);
    r->c = cluster_new();
    if (!r->c)
        return SCHED_ENOMEM;
    int rc = nodes_generate(r->c, spec, &eb);
    if (rc == 0)
        rc = cluster_finalize(r->c, NULL, NULL, 0, &eb);
    if (rc == 0 && path) {
        rc = trace_read(&r->tr, path, &eb);
    } else if (rc == 0) {
        size_t len = 0;
        char *csv = burst_csv(BURST_GANGS, 1, &len);
        rc = csv ? trace_parse(&r->tr, "burst.csv", csv, len, &eb) : SCHED_ENOMEM;
        free(csv);
    }
    if (rc == 0) {
        trace_sort(&r->tr);
        rc = sim_input_build(&r->in, &r->tr, r->c, NULL, &eb);
    }
    if (rc != 0)
        fprintf(stderr, "bench_scale: %s: %s\n", spec, eb.msg[0] ? eb.msg : sched_strerror(rc));
    return rc;
}

/* CPU seconds of sim_run under one policy. */
static int replay_run(const struct replay *r, const char *policy, double *cpu_s)
{
    struct sched_errbuf eb = {{0}};
    struct sim_options opt = {.progress = false};
    struct sim_stats st;
    double t0 = cpu_seconds();
    int rc = sim_run(&r->in, sched_policy_find(policy), &opt, &st, &eb);
    *cpu_s = cpu_seconds() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_scale: replay %s: %s\n", policy, eb.msg);
        return rc;
    }
    sim_stats_free(&st);
    return 0;
}

/* ---- 7. the scaling curve ------------------------------------------------------------------ */

struct point {
    uint32_t nodes;
    double replay_s; /* sim_run CPU */
    double total_s;  /* the child's CPU: generation, input and replay */
    double rss_mb;   /* the child's peak RSS */
    bool ok;
};

/* Runs one size in a child process: its replay CPU time comes back through a pipe, its total
 * CPU time and peak RSS from wait4(). */
static void scale_point(const char *path, struct point *p)
{
    int fd[2];
    p->replay_s = p->total_s = p->rss_mb = 0;
    p->ok = false;
    if (pipe(fd) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char spec[32];
        snprintf(spec, sizeof(spec), "hgx:%u", p->nodes);
        struct replay r;
        double s = -1.0;
        if (replay_init(&r, spec, path) == 0)
            for (int k = 0; k < SCALE_REPEATS; k++) { /* the fastest: the least disturbed */
                double one = 0;
                if (replay_run(&r, "gangsched", &one) != 0) {
                    s = -1.0;
                    break;
                }
                if (s < 0 || one < s)
                    s = one;
            }
        ssize_t w = write(fd[1], &s, sizeof(s));
        _exit(w == (ssize_t)sizeof(s) && s >= 0 ? 0 : 1);
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        return;
    }
    double s = -1.0;
    ssize_t got = read(fd[0], &s, sizeof(s));
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof(s))
        return;
    p->replay_s = s;
    p->total_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    p->rss_mb = (double)ru.ru_maxrss / 1024.0;
    p->ok = true;
}

static int scale_curve(const char *dir, struct point *pts)
{
    char path[4096];
    int k = snprintf(path, sizeof(path), "%s/cluster07.csv", dir);
    if (k <= 0 || (size_t)k >= sizeof(path) || access(path, R_OK) != 0) {
        fprintf(stderr, "bench_scale: %s/cluster07.csv not found\n", dir);
        return 1;
    }
    for (size_t i = 0; i < N_SIZES; i++) {
        pts[i].nodes = scale_sizes[i];
        fprintf(stderr, "bench_scale: 7. cluster07 on hgx:%u\n", scale_sizes[i]);
        scale_point(path, &pts[i]);
        if (!pts[i].ok) {
            fprintf(stderr, "bench_scale: hgx:%u failed\n", scale_sizes[i]);
            return 1;
        }
    }
    return 0;
}

static const struct point *point_at(const struct point *pts, uint32_t nodes)
{
    for (size_t i = 0; i < N_SIZES; i++)
        if (pts[i].nodes == nodes)
            return &pts[i];
    return NULL;
}

static void print_markdown(const struct point *pts)
{
    const struct point *base = point_at(pts, 5000);
    printf("| cluster | nodes | GPUs | replay CPU | x hgx:5,000 | process CPU | peak RSS |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < N_SIZES; i++)
        printf("| hgx:%u | %u | %u | %.3f s | %.2fx | %.2f s | %.0f MB |\n", pts[i].nodes,
               pts[i].nodes, pts[i].nodes * 8, pts[i].replay_s,
               ratio(pts[i].replay_s, base->replay_s), pts[i].total_s, pts[i].rss_mb);
}

static void print_row(const char *name, const char *value, const char *target, const char *status,
                      const char *r)
{
    printf("%-56s %-24s %-10s %-6s %s\n", name, value, target, status, r);
}

static void report_curve(const struct point *pts)
{
    char name[64], value[32], rt[64];
    const struct point *base = point_at(pts, 5000), *big = point_at(pts, 50000),
                       *huge = point_at(pts, 100000);
    for (size_t i = 0; i < N_SIZES; i++) {
        snprintf(name, sizeof(name), "7 replay cluster07 on hgx:%u, gangsched", pts[i].nodes);
        snprintf(value, sizeof(value), "%.3f s CPU, %.0f MB", pts[i].replay_s, pts[i].rss_mb);
        snprintf(rt, sizeof(rt), "%.2fx hgx:5000", ratio(pts[i].replay_s, base->replay_s));
        print_row(name, value, "-", "-", rt);
    }
    double x = ratio(big->replay_s, base->replay_s);
    snprintf(value, sizeof(value), "%.2fx", x);
    print_row("7 ratio hgx:50,000 : hgx:5,000", value, "<= 2x",
              x <= TARGET_SCALE_X ? "PASS" : "MISS", "same trace, same policy");
    snprintf(value, sizeof(value), "%.0f MB", huge->rss_mb);
    print_row("7 peak RSS, hgx:100,000", value, "< 2048 MB",
              huge->rss_mb < TARGET_RSS_MB ? "PASS" : "MISS", "whole process");
}

/* ---- 8. deep backlog ------------------------------------------------------------------------ */

static int deep_backlog(void)
{
    fprintf(stderr, "bench_scale: 8. burst of %u gangs on %s\n", BURST_GANGS, BURST_CLUSTER);
    struct replay r;
    double ours = 0, fifo = 0;
    int rc = replay_init(&r, BURST_CLUSTER, NULL);
    for (int k = 0; rc == 0 && k < BURST_REPEATS; k++) { /* the fastest of each counts */
        double a = 0, b = 0;
        rc = replay_run(&r, "gangsched", &a);
        if (rc == 0)
            rc = replay_run(&r, "fifo", &b);
        ours = k == 0 || a < ours ? a : ours;
        fifo = k == 0 || b < fifo ? b : fifo;
    }
    replay_fini(&r);
    if (rc != 0)
        return 1;
    char name[64], value[32], rt[64];
    double x = ratio(ours, fifo);
    snprintf(name, sizeof(name), "8 burst of %u gangs on %s, gangsched", BURST_GANGS,
             BURST_CLUSTER);
    snprintf(value, sizeof(value), "%.2f s CPU", ours);
    snprintf(rt, sizeof(rt), "%.2fx fifo (%.2f s)", x, fifo);
    print_row(name, value, "<= 5x", x <= TARGET_BACKLOG_X ? "PASS" : "MISS", rt);
    return 0;
}

/* ---- 9. steady cycle --------------------------------------------------------------------------
 */

/* CPU ms of one of `cycles` cycles over the burst's gangs pending (a queue as the simulator
 * keeps it) on a base kept between cycles, nothing changed since the first cycle (not counted);
 * the gangs examined in *examined. Fails when a cycle places a gang. */
static int steady_ms(struct replay *r, struct sched_snapshot *snap, uint32_t cycles, double *per_ms,
                     uint32_t *examined)
{
    struct queue_list pending;
    queue_list_init(&pending, false);
    struct place_base *base = place_base_new(snap->cluster);
    int rc = base ? 0 : SCHED_ENOMEM;
    for (uint32_t j = 0; rc == 0 && j < r->in.n_jobs; j++)
        rc = queue_list_insert(&pending, &r->in.jobs[j].gang);
    struct queue qu = {.name = "burst", .priority = 0, .weight = 1.0};
    struct sched_queue_view view = {.queue = &qu,
                                    .pending = pending.items,
                                    .n_pending = pending.n,
                                    .class_keys = pending.keys,
                                    .n_classes = pending.n_classes};
    snap->now_ms = 200000;
    snap->queues = &view;
    snap->n_queues = 1;
    snap->policy = sched_policy_find("gangsched");
    snap->base = base;
    snap->tried_verdicts_only = true;
    struct arena a;
    arena_init(&a, 0);
    double t = 0;
    for (uint32_t k = 0; rc == 0 && k <= cycles; k++) {
        struct sched_result res;
        arena_reset(&a);
        double t0 = cpu_seconds();
        rc = sched_cycle(snap, &a, &res);
        if (k > 0) /* the first cycle syncs every node: not steady */
            t += cpu_seconds() - t0;
        *examined = res.n_examined;
        if (rc == 0 && res.n_placements > 0) {
            fprintf(stderr, "bench_scale: the steady cycle placed a gang\n");
            rc = 1;
        }
    }
    arena_fini(&a);
    *per_ms = 1e3 * t / cycles;
    place_base_free(base);
    queue_list_fini(&pending);
    return rc;
}

/* Every node full, the burst's gangs pending, a base kept between cycles: the second and later
 * cycles see nothing new. */
static int steady_cycle(void)
{
    fprintf(stderr, "bench_scale: 9. steady cycle, %u pending on a full %s\n", BURST_GANGS,
            BURST_CLUSTER);
    struct replay r;
    int rc = replay_init(&r, BURST_CLUSTER, NULL);
    struct node_state *state = rc == 0 ? calloc(r.c->n_nodes, sizeof(*state)) : NULL;
    if (rc == 0 && !state)
        rc = SCHED_ENOMEM;
    double per_ms = 0;
    uint32_t examined = 0;
    if (rc == 0) {
        for (uint32_t i = 0; i < r.c->n_nodes; i++) {
            const struct node *n = &r.c->nodes[i];
            state[i].used = n->alloc;
            state[i].gpu_used = n->n_gpus >= 32 ? UINT32_MAX : (1u << n->n_gpus) - 1u;
            state[i].release_ms = INT64_MAX;
        }
        struct sched_snapshot snap = {.cluster = r.c, .state = state};
        rc = steady_ms(&r, &snap, STEADY_CYCLES, &per_ms, &examined);
    }
    free(state);
    replay_fini(&r);
    if (rc != 0)
        return 1;
    char name[64], value[32], rt[64];
    snprintf(name, sizeof(name), "9 steady cycle, %u pending, nothing changed", examined);
    snprintf(value, sizeof(value), "%.3f ms CPU", per_ms);
    snprintf(rt, sizeof(rt), "%.0f ns per pending gang", 1e6 * per_ms / (examined ? examined : 1));
    print_row(name, value, "< 5 ms", per_ms < TARGET_STEADY_MS ? "PASS" : "MISS", rt);
    return 0;
}

/* ---- 10. steady cycle with GPU shares ------------------------------------------------------ */

/* SHARE_NODES nodes of 8 GPUs in racks of 8, each with HAMi's register of its 8 devices (32 GiB,
 * split 10) when `registered`. */
static struct cluster *share_cluster(bool registered)
{
    size_t cap = (size_t)SHARE_NODES * 1024 + 64, at = 0;
    char *yaml = malloc(cap);
    struct cluster *c = cluster_new();
    struct sched_errbuf eb = {{0}};
    int rc = yaml && c ? 0 : SCHED_ENOMEM;
    if (rc == 0)
        at = (size_t)snprintf(yaml, cap, "kind: NodeList\nitems:\n");
    for (uint32_t i = 0; rc == 0 && i < SHARE_NODES; i++) {
        char reg[640] = "";
        size_t n = 0;
        for (uint32_t d = 0; registered && d < 8; d++)
            n += (size_t)snprintf(reg + n, sizeof(reg) - n,
                                  "GPU-%u-%u,10,32768,100,NVIDIA-H100,0,true,%u,hami-core:", i, d,
                                  d);
        at += (size_t)snprintf(
            yaml + at, cap - at,
            "- metadata: {name: n%u, labels: {network.topology.gangsched.io/rack: r%u}%s%s%s}\n"
            "  status: {allocatable: {cpu: \"96\", memory: \"1000Gi\", pods: \"110\", "
            "nvidia.com/gpu: \"8\"}}\n",
            i, i / 8, registered ? ", annotations: {" HAMI_NODE_REGISTER ": \"" : "", reg,
            registered ? "\"}" : "");
    }
    if (rc == 0)
        rc = nodes_load_buffer(c, "share-nodes.yaml", yaml, at, &eb);
    if (rc == 0)
        rc = cluster_finalize(c, NULL, NULL, 0, &eb);
    free(yaml);
    if (rc != 0) {
        fprintf(stderr, "bench_scale: share cluster: %s\n", eb.msg[0] ? eb.msg : "out of memory");
        cluster_free(c);
        return NULL;
    }
    return c;
}

/* The steady cycle of the burst's backlog on the share cluster: plain (every GPU held whole)
 * or registered (every device holding SHARES_PER_DEV running share pods of 16,000 MiB and 50%
 * of its cores, as the simulator counts them: the whole request per pod against the node). */
static int share_steady(struct replay *r, bool registered, double *per_ms, uint32_t *n_shares)
{
    struct cluster *c = share_cluster(registered);
    uint32_t n_run = registered ? SHARE_NODES * 8 * SHARES_PER_DEV : 0;
    struct node_state *state = c ? calloc(c->n_nodes, sizeof(*state)) : NULL;
    struct gang *gangs = calloc(n_run ? n_run : 1, sizeof(*gangs));
    struct podset *sets = calloc(n_run ? n_run : 1, sizeof(*sets));
    struct sched_assign *pods = calloc(n_run ? n_run : 1, sizeof(*pods));
    struct sched_running *runs = calloc(n_run ? n_run : 1, sizeof(*runs));
    int id_mem = res_lookup(HAMI_RES_MEM), id_cores = res_lookup(HAMI_RES_CORES);
    int rc =
        state && gangs && sets && pods && runs && id_mem >= 0 && id_cores >= 0 ? 0 : SCHED_ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < c->n_nodes; i++) {
        state[i].release_ms = INT64_MAX;
        state[i].gpu_used = 0xFF;
        if (!registered)
            state[i].used = c->nodes[i].alloc;
    }
    for (uint32_t k = 0; rc == 0 && k < n_run; k++) {
        struct gang *g = &gangs[k];
        g->id = r->in.n_jobs + k;
        g->name = "share";
        g->sets = &sets[k];
        g->n_sets = 1;
        g->sets[0].count = 1;
        struct res_vec *q = &g->sets[0].req;
        q->v[RES_GPU] = 1;
        q->v[RES_CPU] = 1000;
        q->v[RES_MEMORY] = INT64_C(1) << 30;
        q->v[RES_PODS] = 1;
        q->v[id_mem] = 16000;
        q->v[id_cores] = 50;
        g->topo_required = g->topo_preferred = g->slice_level = -1;
        gang_finalize(g);
        g->min_member = 1;
        uint32_t node = k / (8 * SHARES_PER_DEV), dev = k / SHARES_PER_DEV % 8;
        pods[k] = (struct sched_assign){.node = node, .gpu_mask = 1u << dev};
        runs[k] = (struct sched_running){.gang = g, .pods = &pods[k]};
        res_add(&state[node].used, q);
    }
    *n_shares = n_run;
    if (rc == 0) {
        struct sched_snapshot snap = {
            .cluster = c, .state = state, .shares = n_run ? runs : NULL, .n_shares = n_run};
        for (int k = 0; rc == 0 && k < SHARE_REPEATS; k++) { /* the fastest counts */
            double ms = 0;
            rc = steady_ms(r, &snap, SHARE_CYCLES, &ms, &(uint32_t){0});
            *per_ms = k == 0 || ms < *per_ms ? ms : *per_ms;
        }
    }
    free(runs);
    free(pods);
    free(gangs);
    free(sets);
    free(state);
    cluster_free(c);
    return rc;
}

static int steady_shares(void)
{
    fprintf(stderr, "bench_scale: 10. steady cycle, %u pending, %u HAMi nodes full of shares\n",
            BURST_GANGS, SHARE_NODES);
    struct sched_errbuf eb = {{0}};
    int id; /* the share resources named before both measures: resource vectors of one length */
    if (res_intern(HAMI_RES_MEM, &id, &eb) != 0 || res_intern(HAMI_RES_CORES, &id, &eb) != 0)
        return 1;
    struct replay r;
    int rc = replay_init(&r, BURST_CLUSTER, NULL);
    double plain = 0, hami = 0;
    uint32_t n_shares = 0, none = 0;
    if (rc == 0)
        rc = share_steady(&r, false, &plain, &none);
    if (rc == 0)
        rc = share_steady(&r, true, &hami, &n_shares);
    replay_fini(&r);
    if (rc != 0)
        return 1;
    char name[64], value[32], rt[64];
    double x = ratio(hami, plain);
    snprintf(name, sizeof(name), "10 steady cycle, %u shares running", n_shares);
    snprintf(value, sizeof(value), "%.3f ms CPU", hami);
    snprintf(rt, sizeof(rt), "%.2fx plain (%.3f ms)", x, plain);
    print_row(name, value, "<= 1.5x", x <= TARGET_SHARE_X ? "PASS" : "MISS", rt);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--burst-csv") == 0) {
        size_t len = 0;
        char *end = NULL;
        unsigned long n = strtoul(argv[2], &end, 10);
        unsigned long seed = argc > 3 ? strtoul(argv[3], NULL, 10) : 1;
        if (!end || *end || n == 0 || n > 1000000) {
            fprintf(stderr, "bench_scale: --burst-csv N: N must be 1..1000000\n");
            return 2;
        }
        char *csv = burst_csv((uint32_t)n, seed, &len);
        if (!csv)
            return 1;
        int ok = fwrite(csv, 1, len, stdout) == len;
        free(csv);
        return ok ? 0 : 1;
    }
    if (argc > 1 && strcmp(argv[1], "--steady") == 0) {
        print_row("measurement", "value", "target", "result", "ratio");
        return steady_cycle() != 0 || steady_shares() != 0;
    }
    bool markdown = argc > 1 && strcmp(argv[1], "--markdown") == 0;
    const char *dir = argc > 1 + markdown ? argv[1 + markdown] : DEFAULT_ITP_DIR;
    struct point pts[N_SIZES];
    if (scale_curve(dir, pts) != 0)
        return 1;
    if (markdown) {
        print_markdown(pts);
        return 0;
    }
    printf("gangsched bench_scale: %ld CPU(s) online; CPU time of the process doing the work\n",
           sysconf(_SC_NPROCESSORS_ONLN));
    print_row("measurement", "value", "target", "result", "ratio");
    report_curve(pts);
    if (deep_backlog() != 0 || steady_cycle() != 0 || steady_shares() != 0)
        return 1;
    return 0;
}
