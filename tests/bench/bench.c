/* tests/bench/bench.c: the speed and memory benchmarks run by `make bench`.
 *
 * Owns: the project's performance targets and how they are measured. Every number is CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) or resident memory (/proc/self/status VmRSS), and every speed is
 * also printed as a ratio against a baseline run in this same process (the "fifo" policy, or
 * parsing the input), so results compare across machines. A missed target prints MISS and the
 * program still exits 0; it exits 1 only on an internal error (out of memory, a core error).
 *
 * Benchmarks (the memory one runs first, while the heap is fresh):
 *   1. placement throughput of one-pod, one-GPU gangs on hgx:5000 at 50% random occupancy
 *   2. gang throughput of 8x8-GPU gangs on hgx:5000 with half the nodes whole and free
 *   3. latency of one topology-constrained gang (64x8 in one zone, 32x8 in one block)
 *   4. resident memory of a 5,000-node cluster, 100,000 pending pods and one cycle
 *   5. trace replay through the simulator (sched/sim/data/itp, optional: SKIP when absent)
 *   7. latency of one preemption plan on a full cluster, rigid against elastic victims, at
 *      hgx:500 and 10x that (how the plan's cost grows with the running gangs and members)
 *   8. (informational) one cycle of 1,000 gangs whose pods must not share a node, beside 10
 *      bound pods per node a tenth of which have an anti-affinity, against the same without
 *      pod rules, at hgx:5000 and 10x that
 *   9. (informational) one cycle of 1,000 gangs of 8 pods with preferred node affinity, one set
 *      of preferences for all and one per gang, against the same without, at hgx:5000 and 10x
 *  10. (informational) one cycle of 8,000 one-pod gangs with inter-pod preferences, against the
 *      same without, at hgx:5000 and 10x
 *  11. (informational) one cycle of 4,000 one-pod replicas required apart (hostname
 *      anti-affinity to their app), then spread by rack (DoNotSchedule), against the same
 *      without, at hgx:5000 and 10x (40,000 on hgx:50000)
 *   (8 to 11 are in bench_pods.c)
 *
 * Usage: bench [ITP_DATA_DIR]   (default sched/sim/data/itp, relative to the repository root)
 *
 * Must not touch: the core (it only drives it, like the simulator does), files other than the
 * trace inputs and /proc/self/status.
 */
#include "tests/bench/bench.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/model.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"
#include "sched/sim/sim.h"
#include "sched/sim/trace.h"
#include "store/store.h"

#define BIG_CLUSTER     "hgx:5000"
#define PODS_MANY       100000u
#define PODS_ALL_FIT    18000u
#define GANG_EXTRA      100u /* 8x8 gangs pending beyond what fits */
#define MEMORY_PODS     100000u
#define DEFAULT_ITP_DIR "sched/sim/data/itp"

/* Targets. */
#define TARGET_PODS_PER_S   100000.0
#define TARGET_GANGS_PER_S  5000.0
#define TARGET_TOPO_MS      5.0
#define TARGET_MEMORY_MB    300.0
#define TARGET_REPLAY_ONE_S 10.0
#define TARGET_REPLAY_ALL_S 60.0

/* How long to repeat a measurement: at least this many runs and this much CPU time. */
#define MIN_RUNS  3
#define MIN_CPU_S 0.3
#define MAX_RUNS  100000

static const char *const itp_files[] = {"cluster01.csv", "cluster02.csv", "cluster05.csv",
                                        "cluster07.csv", "cluster08.csv", "cluster09.csv",
                                        "cluster10.csv"};
#define N_ITP_FILES (sizeof(itp_files) / sizeof(itp_files[0]))

/* ---- results table ----------------------------------------------------------------------- */

/* A zeroed row with status "-"; NULL (and a message) on out of memory. */
struct row *row_add(struct table *t, const char *name)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        struct row *v = realloc(t->rows, (size_t)cap * sizeof(*v));
        if (!v) {
            fputs("bench: out of memory for the result rows\n", stderr);
            return NULL;
        }
        t->rows = v;
        t->cap = cap;
    }
    struct row *r = &t->rows[t->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->status, sizeof(r->status), "-");
    snprintf(r->target, sizeof(r->target), "-");
    snprintf(r->ratio, sizeof(r->ratio), "-");
    return r;
}

static void row_status(struct row *r, bool pass)
{
    snprintf(r->status, sizeof(r->status), "%s", pass ? "PASS" : "MISS");
}

static void table_print(const struct table *t, long cpus)
{
    printf("gangsched bench: %ld CPU(s) online; CPU time = CLOCK_PROCESS_CPUTIME_ID; ratios are "
           "against baselines run in this process\n",
           cpus);
    printf("%-56s %-24s %-10s %-6s %s\n", "measurement", "value", "target", "result", "ratio");
    for (int i = 0; i < t->n; i++) {
        const struct row *r = &t->rows[i];
        printf("%-56s %-24s %-10s %-6s %s\n", r->name, r->value, r->target, r->status, r->ratio);
    }
}

/* ---- measuring --------------------------------------------------------------------------- */

double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident set size in KiB, or -1 when /proc is not available. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

double ratio(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

/* ---- workloads --------------------------------------------------------------------------- */

struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->s = x;
    return x;
}

void world_fini(struct world *w)
{
    arena_fini(&w->arena);
    free(w->pending);
    free(w->gangs);
    free(w->sets);
    free(w->state);
    cluster_free(w->c);
    memset(w, 0, sizeof(*w));
}

/* Generates and finalizes `spec` with every node idle. 0, or an error printed on stderr. */
int world_init(struct world *w, const char *spec)
{
    struct sched_errbuf eb = {{0}};
    memset(w, 0, sizeof(*w));
    arena_init(&w->arena, 0);
    w->queue = (struct queue){.name = "bench", .priority = 0, .weight = 1.0};
    w->c = cluster_new();
    if (!w->c) {
        fputs("bench: out of memory\n", stderr);
        return SCHED_ENOMEM;
    }
    int rc = nodes_generate(w->c, spec, &eb);
    if (rc == 0)
        rc = cluster_finalize(w->c, NULL, NULL, 0, &eb);
    if (rc != 0) {
        fprintf(stderr, "bench: cluster %s: %s\n", spec, eb.msg);
        return rc;
    }
    w->state = calloc(w->c->n_nodes ? w->c->n_nodes : 1, sizeof(*w->state));
    if (!w->state) {
        fputs("bench: out of memory\n", stderr);
        return SCHED_ENOMEM;
    }
    return 0;
}

/* Marks the `gpus` lowest GPUs of node i busy, with cpu, memory and pods in proportion. */
static void node_use(struct world *w, uint32_t i, uint32_t gpus)
{
    const struct node *n = &w->c->nodes[i];
    struct node_state *s = &w->state[i];
    memset(s, 0, sizeof(*s));
    if (gpus > n->n_gpus)
        gpus = n->n_gpus;
    if (gpus == 0 || n->n_gpus == 0)
        return;
    s->gpu_used = gpus >= 32 ? UINT32_MAX : (1u << gpus) - 1u;
    s->used.v[RES_GPU] = gpus;
    s->used.v[RES_CPU] = n->alloc.v[RES_CPU] * gpus / n->n_gpus;
    s->used.v[RES_MEMORY] = n->alloc.v[RES_MEMORY] * gpus / n->n_gpus;
    s->used.v[RES_PODS] = gpus;
}

/* Each node independently gets 0..8 busy GPUs, uniformly (mean 4: half the GPUs). */
void occupy_random_gpus(struct world *w, uint64_t seed)
{
    struct rng r = {seed};
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        node_use(w, i, (uint32_t)(rng_next(&r) % 9));
}

/* Each node independently is wholly free or wholly busy, with probability 1/2. */
static void occupy_whole_nodes(struct world *w, uint64_t seed)
{
    struct rng r = {seed};
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        node_use(w, i, (rng_next(&r) >> 32) & 1 ? w->c->nodes[i].n_gpus : 0);
}

static void free_domain(struct world *w, int level, uint32_t d)
{
    const struct topo_level *lv = &w->c->topo.levels[level];
    for (uint32_t j = lv->domain_first[d]; j < lv->domain_first[d + 1]; j++)
        node_use(w, lv->node_index[j], 0);
}

static int64_t free_gpus(const struct world *w)
{
    int64_t n = 0;
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        n += w->c->nodes[i].n_gpus - __builtin_popcount(w->state[i].gpu_used);
    return n;
}

static uint32_t whole_free_nodes(const struct world *w)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        n += w->state[i].gpu_used == 0 && w->c->nodes[i].n_gpus > 0;
    return n;
}

/* Replaces the pending queue with n gangs of `pods` pods x `gpus` GPUs (cpu 1, 1Gi, 1 pod each),
 * submitted 1 ms apart. */
int world_gangs(struct world *w, uint32_t n, uint32_t pods, int64_t gpus, int8_t topo_required)
{
    free(w->gangs);
    free(w->sets);
    free(w->pending);
    w->n_gangs = 0;
    w->gangs = calloc(n ? n : 1, sizeof(*w->gangs));
    w->sets = calloc(n ? n : 1, sizeof(*w->sets));
    w->pending = calloc(n ? n : 1, sizeof(*w->pending));
    if (!w->gangs || !w->sets || !w->pending) {
        fputs("bench: out of memory\n", stderr);
        return SCHED_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct gang *g = &w->gangs[i];
        g->id = i;
        g->name = "bench";
        g->submit_ms = i;
        g->sets = &w->sets[i];
        g->n_sets = 1;
        g->sets[0].count = pods;
        g->sets[0].req.v[RES_CPU] = 1000;
        g->sets[0].req.v[RES_MEMORY] = INT64_C(1) << 30;
        g->sets[0].req.v[RES_PODS] = 1;
        g->sets[0].req.v[RES_GPU] = gpus;
        g->topo_required = topo_required;
        g->topo_preferred = -1;
        gang_finalize(g);
        g->min_member = g->n_pods;
        w->pending[i] = g;
    }
    w->n_gangs = n;
    return 0;
}

static int find_level(const struct cluster *c, const char *name)
{
    for (uint32_t l = 0; l < c->topo.n_levels; l++)
        if (strcmp(c->topo.levels[l].name, name) == 0)
            return (int)l;
    fprintf(stderr, "bench: internal error: no topology level named %s\n", name);
    return -1;
}

/* ---- cycles ------------------------------------------------------------------------------ */

/* One cycle; only sched_cycle() itself is timed (the arena reset is the driver's business). */
static int run_cycle(struct world *w, const struct sched_policy *pol, struct cycle_stats *cs)
{
    struct sched_queue_view view = {
        .queue = &w->queue, .pending = w->pending, .n_pending = w->n_gangs};
    struct sched_snapshot snap = {.now_ms = NOW_MS,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy = pol,
                                  .bound_pods = w->bound,
                                  .n_bound_pods = w->n_bound,
                                  .no_shortcuts = w->no_shortcuts};
    struct sched_result res;
    arena_reset(&w->arena);
    double t0 = cpu_seconds();
    int rc = sched_cycle(&snap, &w->arena, &res);
    double t1 = cpu_seconds();
    if (rc != 0) {
        fprintf(stderr, "bench: sched_cycle (%s): %s\n", pol->name, sched_strerror(rc));
        return rc;
    }
    cs->cpu_s += t1 - t0;
    cs->cycles++;
    cs->gangs += res.n_placements;
    cs->examined += res.n_examined;
    for (uint32_t i = 0; i < res.n_placements; i++)
        cs->pods += res.placements[i].gang->n_pods;
    return 0;
}

/* One untimed warm-up cycle, then cycles until MIN_RUNS and MIN_CPU_S are both reached. The core
 * keeps no state between cycles and never writes the snapshot, so every cycle starts from the
 * same fresh copy of the usage. */
int time_cycles(struct world *w, const char *policy, struct cycle_stats *cs)
{
    const struct sched_policy *pol = sched_policy_find(policy);
    if (!pol) {
        fprintf(stderr, "bench: internal error: unknown policy %s\n", policy);
        return SCHED_EINVAL;
    }
    struct cycle_stats warm = {0};
    int rc = run_cycle(w, pol, &warm);
    memset(cs, 0, sizeof(*cs));
    while (rc == 0 && cs->cycles < MAX_RUNS && (cs->cycles < MIN_RUNS || cs->cpu_s < MIN_CPU_S))
        rc = run_cycle(w, pol, cs);
    return rc;
}

double per_cycle(const struct cycle_stats *cs, uint64_t total)
{
    return cs->cycles ? (double)total / cs->cycles : 0.0;
}

/* ---- 1. placement throughput, one-GPU pods ----------------------------------------------- */

static int bench_pods_variant(struct table *t, struct world *w, uint32_t n_pods)
{
    if (world_gangs(w, n_pods, 1, 1, -1) != 0)
        return 1;
    struct cycle_stats ours, base;
    if (time_cycles(w, "gangsched", &ours) != 0 || time_cycles(w, "fifo", &base) != 0)
        return 1;
    double rate = ratio((double)ours.pods, ours.cpu_s);
    double base_rate = ratio((double)base.pods, base.cpu_s);
    char name[64];
    snprintf(name, sizeof(name), "1 pods/s, %u x 1 GPU pending, %.0f placed", n_pods,
             per_cycle(&ours, ours.pods));
    struct row *r = row_add(t, name);
    if (!r)
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f pods/CPU-s", rate);
    snprintf(r->target, sizeof(r->target), ">= %.0f", TARGET_PODS_PER_S);
    row_status(r, rate >= TARGET_PODS_PER_S);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx fifo", ratio(rate, base_rate));
    snprintf(name, sizeof(name), "  baseline fifo (first fit), %.0f placed",
             per_cycle(&base, base.pods));
    if (!(r = row_add(t, name)))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f pods/CPU-s", base_rate);
    return 0;
}

static int bench_pods(struct table *t)
{
    struct world w;
    int rc = world_init(&w, BIG_CLUSTER) != 0;
    if (rc == 0) {
        occupy_random_gpus(&w, RNG_SEED);
        fprintf(stderr, "bench: 1. placement, %s, %lld free GPUs\n", BIG_CLUSTER,
                (long long)free_gpus(&w));
        rc = bench_pods_variant(t, &w, PODS_MANY);
    }
    if (rc == 0)
        rc = bench_pods_variant(t, &w, PODS_ALL_FIT);
    world_fini(&w);
    return rc;
}

/* ---- 2. gang throughput, 8 pods x 8 GPUs ------------------------------------------------- */

static int bench_gangs(struct table *t)
{
    struct world w;
    int rc = world_init(&w, BIG_CLUSTER) != 0;
    struct cycle_stats ours = {0}, base = {0};
    uint32_t fit = 0;
    if (rc == 0) {
        occupy_whole_nodes(&w, RNG_SEED + 1);
        fit = whole_free_nodes(&w) / 8;
        fprintf(stderr, "bench: 2. gangs, %u whole free nodes, %u gangs fit\n",
                whole_free_nodes(&w), fit);
        rc = world_gangs(&w, fit + GANG_EXTRA, 8, 8, -1) != 0;
    }
    if (rc == 0)
        rc = time_cycles(&w, "gangsched", &ours) != 0 || time_cycles(&w, "fifo", &base) != 0;
    world_fini(&w);
    if (rc != 0)
        return 1;
    double rate = ratio((double)ours.gangs, ours.cpu_s);
    double base_rate = ratio((double)base.gangs, base.cpu_s);
    double tries = ratio((double)ours.examined, ours.cpu_s);
    double base_tries = ratio((double)base.examined, base.cpu_s);
    char name[64];
    snprintf(name, sizeof(name), "2 gangs/s, %u x (8x8 GPU) pending, %.0f placed", fit + GANG_EXTRA,
             per_cycle(&ours, ours.gangs));
    struct row *r = row_add(t, name);
    if (!r)
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f gangs/CPU-s", rate);
    snprintf(r->target, sizeof(r->target), ">= %.0f", TARGET_GANGS_PER_S);
    row_status(r, rate >= TARGET_GANGS_PER_S);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx fifo", ratio(rate, base_rate));
    if (!(r = row_add(t, "2 attempts/s (gangs examined, placed or not)")))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f gangs/CPU-s", tries);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx fifo", ratio(tries, base_tries));
    snprintf(name, sizeof(name), "  baseline fifo (first fit), %.0f placed, %.0f examined",
             per_cycle(&base, base.gangs), per_cycle(&base, base.examined));
    if (!(r = row_add(t, name)))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f gangs/CPU-s", base_rate);
    return 0;
}

/* ---- 3. topology placement latency ------------------------------------------------------- */

/* Mean ms to place one gang of pods x 8 GPUs that must fit one domain of `level_name`. */
static int bench_topo_case(struct table *t, struct world *w, const char *level_name, uint32_t pods,
                           bool has_target)
{
    int level = find_level(w->c, level_name);
    if (level < 0 || world_gangs(w, 1, pods, 8, (int8_t)level) != 0)
        return 1;
    struct cycle_stats ours, base;
    if (time_cycles(w, "gangsched", &ours) != 0 || time_cycles(w, "fifo", &base) != 0)
        return 1;
    double ms = ours.cycles ? 1e3 * ours.cpu_s / ours.cycles : 0.0;
    double base_ms = base.cycles ? 1e3 * base.cpu_s / base.cycles : 0.0;
    bool placed = ours.gangs == ours.cycles;
    char name[64];
    snprintf(name, sizeof(name), "3 latency, %ux8 GPU in one %s (%u cycles)", pods, level_name,
             ours.cycles);
    struct row *r = row_add(t, name);
    if (!r)
        return 1;
    if (placed)
        snprintf(r->value, sizeof(r->value), "%.3f ms/placement", ms);
    else
        snprintf(r->value, sizeof(r->value), "NOT PLACED");
    if (has_target) {
        snprintf(r->target, sizeof(r->target), "< %.0f ms", TARGET_TOPO_MS);
        row_status(r, placed && ms < TARGET_TOPO_MS);
    }
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx fifo (%.3f ms, topology-blind)", ratio(ms, base_ms),
             base_ms);
    return 0;
}

static int bench_topo(struct table *t)
{
    struct world w;
    int rc = world_init(&w, BIG_CLUSTER) != 0;
    if (rc == 0) {
        occupy_whole_nodes(&w, RNG_SEED + 2);
        int block = find_level(w.c, "block");
        rc = block < 0;
        if (rc == 0) {
            free_domain(&w, block, 0); /* block 0 (and so its zone) can hold the gang */
            fprintf(stderr, "bench: 3. topology, %u whole free nodes\n", whole_free_nodes(&w));
        }
    }
    if (rc == 0)
        rc = bench_topo_case(t, &w, "zone", 64, true);
    if (rc == 0)
        rc = bench_topo_case(t, &w, "block", 32, false);
    world_fini(&w);
    return rc;
}

/* ---- 6. preemption plan latency ---------------------------------------------------------- */

/* Every node busy: running gangs of 8 pods x 8 GPUs (a node each), priority 0, unsaved for
 * 100 s; minMember 1 when elastic (each also gives 8 member candidates). One pending 8x8 gang of
 * priority 10 must evict: mean CPU ms of the cycle that plans it. */
/* One preemption plan on a full `spec` cluster of 8x8-GPU gangs, rigid or elastic, for one 8x8
 * gang of priority 10: its CPU ms, the running gangs and the work the plan loses (*lost,
 * GPU-seconds) against the least it could (*least). With `rising`, a gang's work since its
 * checkpoint falls with its index (the cheapest victims are at the end of the placement
 * order), else every gang's is the same. */
static int time_preempt(const char *spec, bool elastic, bool rising, double *ms,
                        uint32_t *n_running, double *lost, double *least)
{
    struct world w;
    int rc = world_init(&w, spec) != 0 || world_gangs(&w, 1, 8, 8, -1) != 0;
    uint32_t n = rc ? 0 : w.c->n_nodes / 8;
    struct gang *gs = calloc(n + 1, sizeof(*gs));
    struct sched_running *run = calloc(n + 1, sizeof(*run));
    struct sched_assign *as = calloc((size_t)n * 8 + 1, sizeof(*as));
    if (rc == 0 && (!gs || !run || !as))
        rc = 1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        gs[i] = w.gangs[0];
        gs[i].id = i + 1;
        gang_finalize(&gs[i]);
        gs[i].min_member = elastic ? 1 : gs[i].n_pods;
        for (uint32_t k = 0; k < 8; k++) {
            node_use(&w, i * 8 + k, 8);
            as[i * 8 + k] = (struct sched_assign){.node = i * 8 + k, .gpu_mask = 0xFF};
        }
        int64_t since_ms = 100000 + (rising ? (int64_t)(n - 1 - i) * 1000 : 0);
        run[i] = (struct sched_running){.gang = &gs[i],
                                        .pods = &as[i * 8],
                                        .start_ms = 0,
                                        .last_checkpoint_ms = NOW_MS - since_ms};
    }
    *least = n ? (double)gs[n - 1].gpus * 100.0 : 0; /* the last gang's, whole (100 s lost) */
    w.gangs[0].priority = 10;
    struct sched_queue_view view = {.queue = &w.queue, .pending = w.pending, .n_pending = 1};
    struct sched_snapshot snap = {.now_ms = NOW_MS,
                                  .cluster = w.c,
                                  .state = w.state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy = sched_policy_find("gangsched"),
                                  .running = run,
                                  .n_running = n};
    double cpu = 0;
    uint32_t cycles = 0;
    while (rc == 0 && (cycles < MIN_RUNS || cpu < MIN_CPU_S) && cycles < MAX_RUNS) {
        struct sched_result res;
        arena_reset(&w.arena);
        double t0 = cpu_seconds();
        rc = sched_cycle(&snap, &w.arena, &res);
        cpu += cpu_seconds() - t0;
        cycles++;
        if (rc == 0 && res.n_evictions == 0) {
            fprintf(stderr, "bench: preemption on %s planned no eviction\n", spec);
            rc = 1;
        }
        *lost = 0;
        for (uint32_t e = 0; rc == 0 && e < res.n_evictions; e++)
            *lost += res.evictions[e].lost_gpu_s;
    }
    *ms = cycles ? cpu * 1000.0 / cycles : 0;
    *n_running = n;
    free(as);
    free(run);
    free(gs);
    world_fini(&w);
    return rc;
}

static int bench_preempt(struct table *t)
{
    static const char *const specs[] = {"hgx:500", "hgx:5000"};
    double ms[2][2], lost, least; /* [size][elastic] */
    uint32_t n = 0;
    for (int k = 0; k < 2; k++)
        for (int e = 0; e < 2; e++)
            if (time_preempt(specs[k], e, false, &ms[k][e], &n, &lost, &least) != 0)
                return 1;
    for (int k = 0; k < 2; k++)
        for (int e = 0; e < 2; e++) {
            char name[64];
            snprintf(name, sizeof(name), "7 preemption plan, %s full, %s victims", specs[k],
                     e ? "elastic" : "rigid");
            struct row *r = row_add(t, name);
            if (!r)
                return 1;
            snprintf(r->value, sizeof(r->value), "%.2f ms", ms[k][e]);
            if (e)
                snprintf(r->ratio, sizeof(r->ratio), "%.2fx rigid", ratio(ms[k][1], ms[k][0]));
            else if (k)
                snprintf(r->ratio, sizeof(r->ratio), "%.2fx hgx:500", ratio(ms[1][0], ms[0][0]));
        }
    /* the cheapest victims at the end of the placement order, past the domains a plan tries */
    static const char *const big[] = {"hgx:5000", "hgx:50000"};
    for (int k = 0; k < 2; k++) {
        double t_ms;
        if (time_preempt(big[k], false, true, &t_ms, &n, &lost, &least) != 0)
            return 1;
        char name[64];
        snprintf(name, sizeof(name), "7 plan, %s, cheapest victims last", big[k]);
        struct row *r = row_add(t, name);
        if (!r)
            return 1;
        snprintf(r->value, sizeof(r->value), "%.0f GPU-s, %.2f ms", lost, t_ms);
        snprintf(r->ratio, sizeof(r->ratio), "%.2fx least lost work", ratio(lost, least));
    }
    return 0;
}

/* ---- 4. memory --------------------------------------------------------------------------- */

static int bench_memory(struct table *t)
{
    fprintf(stderr, "bench: 4. memory, %s at 50%% occupancy and %u pending pods\n", BIG_CLUSTER,
            MEMORY_PODS);
    long k0 = rss_kib();
    struct world w;
    int rc = world_init(&w, BIG_CLUSTER) != 0;
    if (rc == 0)
        occupy_random_gpus(&w, RNG_SEED); /* writes every node_state: all of it is resident */
    long k1 = rss_kib();
    if (rc == 0)
        rc = world_gangs(&w, MEMORY_PODS, 1, 1, -1) != 0;
    long k2 = rss_kib();
    struct cycle_stats cs = {0};
    const struct sched_policy *pol = sched_policy_default();
    if (rc == 0)
        rc = run_cycle(&w, pol, &cs) != 0;
    long k3 = rss_kib();
    uint32_t n_nodes = w.c ? w.c->n_nodes : 0;
    world_fini(&w);
    if (rc != 0)
        return 1;
    struct row *r;
    if (k0 < 0 || k3 < 0 || n_nodes == 0) {
        if (!(r = row_add(t, "4 memory")))
            return 1;
        snprintf(r->value, sizeof(r->value), "SKIP (no VmRSS)");
        snprintf(r->status, sizeof(r->status), "SKIP");
        return 0;
    }
    double node_b = 1024.0 * (double)(k1 - k0) / n_nodes;
    double pod_b = 1024.0 * (double)(k2 - k1) / MEMORY_PODS;
    double cycle_b = 1024.0 * (double)(k3 - k2) / MEMORY_PODS;
    double total_mb = (double)(k3 - k0) / 1024.0;
    size_t node_raw = sizeof(struct node) + sizeof(struct node_state);
    size_t pod_raw = sizeof(struct gang) + sizeof(struct podset) + sizeof(struct gang *);
    if (!(r = row_add(t, "4 memory per node (cluster + node_state)")))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f B/node", node_b);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx raw structs (%zu B)",
             ratio(node_b, (double)node_raw), node_raw);
    if (!(r = row_add(t, "4 memory per pending pod (gang + pod set + queue slot)")))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f B/pod", pod_b);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx raw structs (%zu B)", ratio(pod_b, (double)pod_raw),
             pod_raw);
    char name[64];
    snprintf(name, sizeof(name), "4 memory per pod in one cycle (%llu placed)",
             (unsigned long long)cs.pods);
    if (!(r = row_add(t, name)))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f B/pod", cycle_b);
    if (!(r = row_add(t, "4 memory total (RSS growth)")))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.1f MB", total_mb);
    snprintf(r->target, sizeof(r->target), "< %.0f MB", TARGET_MEMORY_MB);
    row_status(r, total_mb < TARGET_MEMORY_MB);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx raw structs",
             ratio(total_mb * 1048576.0, (double)(node_raw * n_nodes + pod_raw * MEMORY_PODS)));
    return 0;
}

/* ---- 5. replay --------------------------------------------------------------------------- */

static bool path_join(char *buf, size_t n, const char *dir, const char *file)
{
    int k = snprintf(buf, n, "%s/%s", dir, file);
    return k > 0 && (size_t)k < n;
}

static bool files_present(const char *dir, const char *const *files, size_t n_files)
{
    char path[4096];
    for (size_t i = 0; i < n_files; i++)
        if (!path_join(path, sizeof(path), dir, files[i]) || access(path, R_OK) != 0)
            return false;
    return true;
}

/* Reads every file (each one a queue) and sorts: what a replay starts with. */
static int read_traces(struct trace *tr, const char *dir, const char *const *files, size_t n_files)
{
    char path[4096];
    struct sched_errbuf eb = {{0}};
    trace_init(tr);
    for (size_t i = 0; i < n_files; i++) {
        if (!path_join(path, sizeof(path), dir, files[i])) {
            fprintf(stderr, "bench: path too long: %s/%s\n", dir, files[i]);
            return SCHED_EINVAL;
        }
        int rc = trace_read(tr, path, &eb);
        if (rc != 0) {
            fprintf(stderr, "bench: %s\n", eb.msg);
            return rc;
        }
    }
    trace_sort(tr);
    return 0;
}

/* The baseline: CPU seconds to parse and sort the files once (mean over repeats). */
static int time_parse(const char *dir, const char *const *files, size_t n_files, double *cpu_s)
{
    double total = 0.0;
    uint32_t runs = 0;
    while (runs < MIN_RUNS || total < MIN_CPU_S) {
        struct trace tr;
        double t0 = cpu_seconds();
        int rc = read_traces(&tr, dir, files, n_files);
        total += cpu_seconds() - t0;
        trace_free(&tr);
        if (rc != 0)
            return rc;
        runs++;
    }
    *cpu_s = total / runs;
    return 0;
}

/* CPU seconds of sim_run over both policies, on a fresh input built from the files. */
static int time_replay(const char *spec, const char *dir, const char *const *files, size_t n_files,
                       double *cpu_s, uint32_t *n_jobs)
{
    static const char *const policies[] = {"gangsched", "fifo"};
    struct world w;
    struct trace tr;
    struct sim_input in = {0};
    struct sched_errbuf eb = {{0}};
    int rc = world_init(&w, spec);
    trace_init(&tr);
    if (rc == 0)
        rc = read_traces(&tr, dir, files, n_files);
    if (rc == 0 && (rc = sim_input_build(&in, &tr, w.c, NULL, &eb)) != 0)
        fprintf(stderr, "bench: %s\n", eb.msg);
    struct sim_options opt = {.events = NULL, .progress = false, .explain_job = NULL};
    *cpu_s = 0.0;
    *n_jobs = in.n_jobs;
    for (size_t p = 0; rc == 0 && p < sizeof(policies) / sizeof(policies[0]); p++) {
        struct sim_stats st;
        double t0 = cpu_seconds();
        rc = sim_run(&in, sched_policy_find(policies[p]), &opt, &st, &eb);
        *cpu_s += cpu_seconds() - t0;
        if (rc != 0) {
            fprintf(stderr, "bench: replay %s: %s\n", policies[p], eb.msg);
            break;
        }
        sim_stats_free(&st);
    }
    sim_input_free(&in);
    trace_free(&tr);
    world_fini(&w);
    return rc;
}

static int bench_replay_case(struct table *t, const char *label, const char *spec, const char *dir,
                             const char *const *files, size_t n_files, double target_s)
{
    char name[64];
    snprintf(name, sizeof(name), "5 replay %s on %s, gangsched + fifo", label, spec);
    struct row *r = row_add(t, name);
    if (!r)
        return 1;
    snprintf(r->target, sizeof(r->target), "< %.0f s", target_s);
    if (!files_present(dir, files, n_files)) {
        snprintf(r->value, sizeof(r->value), "SKIP (data not found)");
        snprintf(r->status, sizeof(r->status), "SKIP");
        return 0;
    }
    fprintf(stderr, "bench: 5. replay %s on %s\n", label, spec);
    double parse_s = 0.0, replay_s = 0.0;
    uint32_t n_jobs = 0;
    if (time_parse(dir, files, n_files, &parse_s) != 0 ||
        time_replay(spec, dir, files, n_files, &replay_s, &n_jobs) != 0)
        return 1;
    snprintf(r->value, sizeof(r->value), "%.2f s CPU", replay_s);
    row_status(r, replay_s < target_s);
    snprintf(r->ratio, sizeof(r->ratio), "%.0fx parse (%.1f ms)", ratio(replay_s, parse_s),
             1e3 * parse_s);
    snprintf(name, sizeof(name), "  jobs replayed per CPU-s (%u jobs x 2 policies)", n_jobs);
    if (!(r = row_add(t, name)))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.0f jobs/CPU-s", ratio(2.0 * n_jobs, replay_s));
    return 0;
}

static int bench_replay(struct table *t, const char *dir)
{
    static const char *const one[] = {"cluster07.csv"};
    if (bench_replay_case(t, "cluster07", "hgx:64", dir, one, 1, TARGET_REPLAY_ONE_S) != 0)
        return 1;
    return bench_replay_case(t, "all 7 ITP files", "hgx:128", dir, itp_files, N_ITP_FILES,
                             TARGET_REPLAY_ALL_S);
}

/* ---- 6. persistence ------------------------------------------------------------------------ */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : 0;
}

/* A cycle with 10,000 decisions in one transaction (wall time: the commit writes a file), best
 * of three; the baseline is formatting those rows in memory. */
static int bench_store_cycle(struct table *t, const char *dir_tmp)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/bench-cycle.db", dir_tmp);
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    struct store_opts o;
    store_opts_default(&o);
    if (store_open(path, STORE_CREATE, &o, &st, &eb) != 0) {
        fprintf(stderr, "bench: %s\n", eb.msg);
        return 1;
    }
    enum { N = 10000 };
    static struct store_decision d[N];
    static char gangs[N][24], reasons[N][96];
    double fmt_t0 = wall_now();
    for (int i = 0; i < N; i++) {
        snprintf(gangs[i], sizeof(gangs[i]), "ns/job-%05d", i);
        snprintf(reasons[i], sizeof(reasons[i]),
                 "resources: 2 pod(s), 16 GPU(s); 0/5000 nodes fit one pod: %d insufficient", i);
        d[i] = (struct store_decision){0, 1, 1000, gangs[i], 2, reasons[i], false, 0, NULL};
    }
    double fmt_s = wall_now() - fmt_t0, best = 1e9;
    int rc = 0;
    for (int rep = 0; rep < 3 && rc == 0; rep++) {
        for (int i = 0; i < N; i++)
            d[i].cycle = rep + 1;
        double t0 = wall_now();
        rc = store_begin(st, &eb);
        if (rc == 0)
            rc = store_decision_add_many(st, d, N, &eb);
        if (rc == 0)
            rc = store_commit(st, &eb);
        double dt = wall_now() - t0;
        if (dt < best)
            best = dt;
    }
    store_close(st);
    unlink(path);
    if (rc != 0) {
        fprintf(stderr, "bench: store: %s\n", eb.msg);
        return 1;
    }
    struct row *r = row_add(t, "6 persist one cycle of 10,000 decisions (wall)");
    if (!r)
        return 1;
    snprintf(r->value, sizeof(r->value), "%.1f ms", best * 1e3);
    snprintf(r->target, sizeof(r->target), "< 50 ms");
    row_status(r, best < 0.050);
    snprintf(r->ratio, sizeof(r->ratio), "%.0fx formatting them", ratio(best, fmt_s));
    return 0;
}

/* cluster07 on hgx:64 with the default policy, with and without --db. */
static int bench_store_replay(struct table *t, const char *dir, const char *dir_tmp)
{
    struct row *r = row_add(t, "6 replay cluster07 on hgx:64 with --db (wall)");
    if (!r)
        return 1;
    snprintf(r->target, sizeof(r->target), "<= 2x");
    static const char *const one[] = {"cluster07.csv"};
    if (!files_present(dir, one, 1)) {
        snprintf(r->value, sizeof(r->value), "SKIP (data not found)");
        snprintf(r->status, sizeof(r->status), "SKIP");
        return 0;
    }
    struct world w;
    struct trace tr;
    struct sim_input in = {0};
    struct sched_errbuf eb = {{0}};
    int rc = world_init(&w, "hgx:64");
    trace_init(&tr);
    if (rc == 0)
        rc = read_traces(&tr, dir, one, 1);
    if (rc == 0 && (rc = sim_input_build(&in, &tr, w.c, NULL, &eb)) != 0)
        fprintf(stderr, "bench: %s\n", eb.msg);
    char path[512];
    snprintf(path, sizeof(path), "%s/bench-replay.db", dir_tmp);
    double plain = 1e9, with_db = 1e9;
    long bytes = 0;
    /* the best of three runs each, interleaved, so that the machine's load drifting during the
     * row weighs on both alike (one run each differed by up to 1.5x between two make bench) */
    for (int run = 0; rc == 0 && run < 6; run++) {
        int pass = run % 2;
        struct store *st = NULL;
        struct store_opts o;
        store_opts_default(&o);
        if (pass == 1 && (rc = store_open(path, STORE_CREATE, &o, &st, &eb)) != 0) {
            fprintf(stderr, "bench: %s\n", eb.msg);
            break;
        }
        struct sim_options opt = {.db = st};
        struct sim_stats sst;
        double t0 = wall_now();
        rc = sim_run(&in, sched_policy_find("gangsched"), &opt, &sst, &eb);
        double dt = wall_now() - t0;
        if (rc == 0)
            sim_stats_free(&sst);
        else
            fprintf(stderr, "bench: replay: %s\n", eb.msg);
        store_close(st);
        double *best = pass ? &with_db : &plain;
        *best = dt < *best ? dt : *best;
        if (pass == 1) {
            bytes = file_bytes(path);
            char wal[600];
            snprintf(wal, sizeof(wal), "%s-wal", path);
            bytes += file_bytes(wal);
            unlink(path);
            unlink(wal);
            snprintf(wal, sizeof(wal), "%s-shm", path);
            unlink(wal);
        }
    }
    sim_input_free(&in);
    trace_free(&tr);
    world_fini(&w);
    if (rc != 0)
        return 1;
    snprintf(r->value, sizeof(r->value), "%.2f s (%.2f s without)", with_db, plain);
    row_status(r, with_db <= 2.0 * plain);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx without --db", ratio(with_db, plain));
    if (!(r = row_add(t, "  database size after the 60-day replay")))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.1f MB", (double)bytes / 1e6);
    snprintf(r->ratio, sizeof(r->ratio), "bounded by retention (docs/store.md)");
    return 0;
}

/* ---- main -------------------------------------------------------------------------------- */

static const char *g_dir, *g_tmp; /* the ITP traces and the scratch directory, for the table */

static int run_replay(struct table *t)
{
    return bench_replay(t, g_dir);
}
static int run_store_cycle(struct table *t)
{
    return bench_store_cycle(t, g_tmp);
}
static int run_store_replay(struct table *t)
{
    return bench_store_replay(t, g_dir, g_tmp);
}

/* The groups in the order they are printed; memory runs first, while the heap is fresh, and is
 * printed after the topology rows. */
static const struct {
    const char *name;
    int (*fn)(struct table *t);
} groups[] = {{"pods", bench_pods},
              {"gangs", bench_gangs},
              {"topo", bench_topo},
              {"memory", bench_memory},
              {"preempt", bench_preempt},
              {"pod-rules", bench_pod_rules},
              {"prefs", bench_prefs},
              {"pod-prefs", bench_pod_prefs},
              {"pod-apart", bench_pod_apart},
              {"kube-build", bench_kube_build},
              {"kube-claim", bench_kube_claim},
              {"kube-mig", bench_kube_mig},
              {"replay", run_replay},
              {"store-cycle", run_store_cycle},
              {"store-replay", run_store_replay}};
#define N_GROUPS (sizeof(groups) / sizeof(groups[0]))

/* bench [--only GROUP[,GROUP...]] [ITP_DIR] */
int main(int argc, char **argv)
{
    const char *only = NULL;
    if (argc > 2 && strcmp(argv[1], "--only") == 0) {
        only = argv[2];
        argc -= 2, argv += 2;
    }
    bool help = argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    if (help || argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        if (!help)
            fprintf(stderr, "bench: unexpected argument '%s'\n",
                    argv[1][0] == '-' ? argv[1] : argv[2]);
        fputs("usage: bench [--only GROUP[,GROUP...]] [ITP_DIR]\n", help ? stdout : stderr);
        return help ? 0 : 2;
    }
    g_dir = argc > 1 ? argv[1] : DEFAULT_ITP_DIR;
    g_tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    bool on[N_GROUPS];
    for (size_t k = 0; k < N_GROUPS; k++)
        on[k] = !only;
    for (const char *p = only; p && *p;) {
        size_t len = strcspn(p, ","), k = 0;
        while (k < N_GROUPS && !(strlen(groups[k].name) == len && !strncmp(groups[k].name, p, len)))
            k++;
        if (k == N_GROUPS) {
            fprintf(stderr, "bench: --only: no group '%.*s' (groups:", (int)len, p);
            for (k = 0; k < N_GROUPS; k++)
                fprintf(stderr, " %s", groups[k].name);
            fputs(")\n", stderr);
            return 2;
        }
        on[k] = true;
        p += len + (p[len] == ',');
    }
    struct table *t = calloc(1, sizeof(*t)), *mem = calloc(1, sizeof(*mem));
    int rc = t && mem ? 0 : 1;
    for (size_t k = 0; rc == 0 && k < N_GROUPS; k++)
        if (on[k] && groups[k].fn == bench_memory)
            rc = bench_memory(mem);
    for (size_t k = 0; rc == 0 && k < N_GROUPS; k++) {
        if (!on[k])
            continue;
        if (groups[k].fn != bench_memory) {
            rc = groups[k].fn(t);
            continue;
        }
        for (int i = 0; rc == 0 && i < mem->n; i++) {
            struct row *r = row_add(t, "");
            if (!r)
                rc = 1;
            else
                *r = mem->rows[i];
        }
    }
    if (rc == 0)
        table_print(t, sysconf(_SC_NPROCESSORS_ONLN));
    else
        fputs("bench: internal error or out of memory, no results\n", stderr);
    if (mem)
        free(mem->rows);
    if (t)
        free(t->rows);
    free(mem);
    free(t);
    return rc == 0 ? 0 : 1;
}
