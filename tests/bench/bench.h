/* tests/bench/bench.h: what the benchmark files share (bench.c owns the table, the worlds and
 * the timing; bench_pods.c the rows of inter-pod rules and preferences, bench_kube.c those of
 * the Kubernetes driver's cache).
 *
 * Must not touch: the core (it only drives it, like the simulator does).
 */
#ifndef TESTS_BENCH_BENCH_H
#define TESTS_BENCH_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "queue/queue.h"
#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/model.h"

#define RNG_SEED UINT64_C(0x9E3779B97F4A7C15)
#define NOW_MS   INT64_C(200000) /* after every submission, before any starvation limit */

/* ---- results table ----------------------------------------------------------------------- */

struct row {
    char name[64];
    char value[32];
    char target[16];
    char status[8]; /* PASS, MISS, SKIP, or "-" for baselines and informational rows */
    char ratio[48];
};

struct table {
    struct row *rows; /* [cap], grown by row_add */
    int n, cap;
};

/* A zeroed row with status "-"; NULL (and a message) on out of memory. */
struct row *row_add(struct table *t, const char *name);
/* a / b, 0 when b is not positive. */
double ratio(double a, double b);

/* ---- worlds and cycles ------------------------------------------------------------------- */

/* A cluster, its usage and one queue of pending gangs: what a driver hands the core. */
struct world {
    struct cluster *c;
    struct node_state *state; /* [c->n_nodes] */
    struct gang *gangs;
    struct podset *sets;         /* [n_gangs]: gangs[i].sets, one each */
    const struct gang **pending; /* queue order: submission time, then id */
    uint32_t n_gangs;
    struct queue queue;
    struct arena arena;
    const struct sched_pod *bound; /* pods for the pod rules (8.), or NULL */
    uint32_t n_bound;
    bool no_shortcuts; /* every domain search summed from scratch (8.) */
};

/* Generates and finalizes `spec` with every node idle. 0, or an error printed on stderr. */
int world_init(struct world *w, const char *spec);
void world_fini(struct world *w);
/* Each node independently gets 0..8 busy GPUs, uniformly (mean 4: half the GPUs). */
void occupy_random_gpus(struct world *w, uint64_t seed);
/* Replaces the pending queue with n gangs of `pods` pods x `gpus` GPUs (cpu 1, 1Gi, 1 pod each),
 * submitted 1 ms apart. */
int world_gangs(struct world *w, uint32_t n, uint32_t pods, int64_t gpus, int8_t topo_required);

/* Totals over the timed cycles. */
struct cycle_stats {
    double cpu_s;
    uint32_t cycles;
    uint64_t pods;     /* placed */
    uint64_t gangs;    /* placed */
    uint64_t examined; /* gangs looked at */
};

/* One untimed warm-up cycle under `policy`, then timed cycles until enough CPU time is spent. */
int time_cycles(struct world *w, const char *policy, struct cycle_stats *cs);
/* total / cycles. */
double per_cycle(const struct cycle_stats *cs, uint64_t total);
/* CPU seconds of this process. */
double cpu_seconds(void);

/* ---- rows of bench_pods.c ---------------------------------------------------------------- */

/* 8. pod rules; 9. preferred node affinity; 10. inter-pod preferences. 0, or 1 on an error. */
int bench_pod_rules(struct table *t);
int bench_prefs(struct table *t);
int bench_pod_prefs(struct table *t);
int bench_pod_apart(struct table *t);

/* ---- rows of bench_kube.c ---------------------------------------------------------------- */

/* 12. the Kubernetes driver's cycle input beside a backlog. 0, or 1 on an error. */
int bench_kube_build(struct table *t);
/* 12. the same for the pods of a PodGroup that all name one ResourceClaim (KEP-5729). */
int bench_kube_claim(struct table *t);
int bench_kube_mig(struct table *t);

#endif
