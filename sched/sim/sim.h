/* sched/sim/sim.h: the discrete-event simulator, a driver of the pure core.
 *
 * Owns: a virtual clock, a simulated cluster's usage, the job table built from traces, and the
 * KPIs of a run. Each policy runs on its own fresh copy of the usage and job states, so several
 * policies compare on exactly the same input in one process. The simulator does what a real
 * driver does: it turns arrivals and completions into snapshots, calls sched_cycle(), and
 * applies the decisions (starts and finishes), writing an event log anyone can replay.
 *
 * Must not touch: scheduling decisions (those are the core's), the trace and cluster it is
 * given (read-only).
 */
#ifndef SCHED_SIM_SIM_H
#define SCHED_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "sched/core/model.h"
#include "sched/core/policy.h"
#include "sched/sim/report.h"
#include "sched/sim/trace.h"

struct sim_job {
    struct gang gang;    /* id = index in sim_input.jobs; sets built from the trace row */
    const char *id;      /* trace job id */
    const char *user;    /* trace user, NULL when none (gang.user is its number) */
    int64_t duration_ms; /* work, as run time at full gang size */
    int64_t checkpoint_interval_ms; /* a checkpoint every this much work; 0 = never */
    int64_t restart_cost_ms;        /* time a restart costs before work resumes */
    uint32_t min_pods;              /* elastic (trace column min_pods): it runs on with at least
                                       this many pods, members above it may be preempted alone
                                       (sim/elastic.c); 0 = rigid (every pod) */
};

/* Workload knobs the traces do not carry (all seeded: same seed, same workload). */
struct sim_workload {
    uint64_t seed;
    double high_priority_fraction; /* jobs without a priority column get priority 10 with this
                                      probability */
    int64_t ckpt_min_duration_ms;  /* jobs at least this long without a checkpoint_interval
                                      column checkpoint every ckpt_interval_ms (+-20% jitter) */
    int64_t ckpt_interval_ms;      /* 0 = no default checkpointing */
    double elastic_fraction;       /* jobs of more than one pod without a min_pods column become
                                      elastic with this probability, min_pods = half their pods
                                      rounded up (a stream of draws of its own: the other knobs'
                                      choices do not move with it) */
};

struct sim_input {
    const struct cluster *cluster;
    struct sim_job *jobs; /* sorted by submission time */
    uint32_t n_jobs;
    struct queue *queues; /* = the config's queues, same indices */
    uint32_t n_queues;
    uint32_t n_users;            /* distinct trace users; jobs' gang.user is 1..n_users, or 0 */
    uint32_t n_elastic;          /* jobs with min_pods > 0 */
    const struct config *config; /* the operator's, or the generated default (owned) */
    struct config *owned_config;
    int64_t multinode_above; /* gangs with more GPUs are multi-node in the statistics; 0 = the
                                cluster's largest node (private.c: the shared cluster's) */
    void *tolerations;       /* owned by sched/sim/tolerate.c: the jobs' parsed tolerations */
    struct podset *sets;     /* [SIM_JOB_SETS * n_jobs]: job j's gang.sets from j * SIM_JOB_SETS */
};

#define SIM_JOB_SETS 2 /* pod sets of a trace row's gang: the even pods, and one larger or rest */

/* Builds jobs from a sorted trace: a job of G GPUs becomes pods of min(G, the largest node's
 * GPUs) GPUs each (or the trace's gpus_per_pod / pods), each pod asking 4 cpu and 32Gi of memory
 * per GPU. Queue names come from the trace and must be queues of `cfg`. Without a config
 * (cfg NULL) every trace queue becomes a queue of one cohort "all", weight 1, with a nominal
 * nvidia.com/gpu quota proportional to its GPU-hours (largest remainder, summing to the
 * cluster's GPUs) and unlimited borrowing. */
int sim_input_build(struct sim_input *in, const struct trace *t, const struct cluster *c,
                    const struct config *cfg, struct sched_errbuf *eb);
void sim_input_free(struct sim_input *in);
/* Applies the workload knobs to the jobs of a built input. */
void sim_input_workload(struct sim_input *in, const struct trace *t, const struct sim_workload *w);

/* sched/sim/tolerate.c. Gives every pod of each job the tolerations of its trace row's
 * tolerations column, else `defaults` (--tolerate; NULL = none). The syntax is kubectl taint's,
 * entries separated by ';': KEY=VALUE:EFFECT (Equal), KEY:EFFECT or KEY (Exists), an omitted
 * effect matches every effect, "*" tolerates every taint. Errors name the trace line and column,
 * or "--tolerate". Call once, after sim_input_build. */
int sim_input_tolerations(struct sim_input *in, const struct trace *t, const char *defaults,
                          struct sched_errbuf *eb);
/* Jobs that no node can ever hold: one of their pods fits no node by its GPUs, CPU and memory
 * and its tolerations of the nodes' NoSchedule and NoExecute taints (node selectors aside).
 * `taint` receives the untolerated taint found on most nodes ("nvidia.com/gpu=present:
 * NoSchedule", empty when capacity alone is the cause), `taint_nodes` how many nodes carry it. */
struct sim_unfit {
    uint32_t jobs;       /* jobs that fit no node */
    uint32_t by_taint;   /* of those, jobs that would fit if taints were ignored */
    const char *example; /* one such job's id */
    char taint[256];
    uint32_t taint_nodes;
};
void sim_input_unfit(const struct sim_input *in, struct sim_unfit *out);

struct sim_queue_stats {
    const char *name;
    uint32_t jobs;
    double mean_queue_s;
    double p95_queue_s;
    double gpu_hours;              /* GPU-hours of work run */
    double nominal_gpus;           /* nominal nvidia.com/gpu quota, all flavors */
    double max_usage_gpus;         /* most GPUs admitted at once */
    double borrowed_gpu_hours;     /* integral of GPUs used above nominal */
    double lent_gpu_hours;         /* integral of its idle nominal GPUs used by borrowers */
    double reclaim_wait_s;         /* time its head gang waited within its nominal quota while
                                      other queues borrowed */
    double multinode_mean_queue_s; /* mean queue time of its multi-node gangs (more GPUs than
                                      the cluster's largest node) */
    uint32_t multinode_jobs;
};

struct sim_stats {
    const char *policy;
    uint32_t jobs;      /* in the input */
    uint32_t completed; /* finished */
    uint32_t started;
    uint32_t rejected;      /* can never fit the cluster */
    uint32_t never_started; /* submitted, not rejected, and still waiting for a first start at
                               the end (no node can hold them, or the trace ended first) */
    double mean_queue_s, p50_queue_s, p95_queue_s, p99_queue_s;
    double mean_wait_s; /* all time without GPUs from submission on, re-waits after evictions
                           and failures included (see job_wait_s in sim.c) */
    double mean_jct_s, p95_jct_s;
    double gpu_utilization; /* busy GPU-seconds / (cluster GPUs x makespan) */
    double makespan_s;      /* last finish - first submission */
    uint64_t tp_splits;     /* pods whose GPUs span more than one NVLink island */
    double mean_racks_per_multinode_gang;
    uint64_t multinode_gangs;
    uint64_t preemptions;                /* evictions */
    uint64_t preempted_gangs;            /* distinct gangs evicted at least once */
    double gpu_hours_lost_to_preemption; /* work since the last checkpoint + restarts */
    uint64_t checkpoint_requests;        /* evictions that asked for a checkpoint first */
    /* elastic jobs (trace column min_pods, sim/elastic.c) */
    uint64_t member_preemptions; /* preemptions that took members alone, the job running on */
    uint64_t members_preempted;  /* members they took */
    uint64_t member_joins;       /* members waiting to join placed (each such placement once) */
    uint64_t join_checkpoint_requests; /* checkpoints asked of a running job for its waiting
                                          members to join (its queue's checkpointGrace) */
    uint64_t members_replaced;         /* members of elastic inference jobs lost with their node and
                                          replaced alone (the job ran on) */
    double gpu_hours_lost_at_shrink;   /* of gpu_hours_lost_to_preemption: training jobs whose
                                          workers restarted from a checkpoint as members left */
    double gpu_hours_lost_at_join;     /* ... and as members joined again */
    uint32_t elastic_jobs;             /* jobs of the trace with min_pods (the rows above shown) */
    /* failures (--node-mtbf, --outages, --pod-start-failure-rate) */
    uint64_t node_failures;    /* nodes that went down */
    uint64_t failure_restarts; /* gangs torn down by a failure and queued again */
    uint64_t failed_jobs;      /* retry budget exhausted */
    uint64_t quarantines;      /* nodes excluded after repeated failed starts */
    double gpu_hours_lost_to_failures;
    double mean_recovery_s;      /* failure to running again, mean over recoveries */
    double partial_gang_seconds; /* time gangs ran with a member gone, before their teardown */
    double recovery_sum_s;       /* (accumulators) */
    uint64_t recoveries;
    /* mean queue time (first start - submission) and mean wait per job priority */
    int32_t prio_values[8];
    uint32_t prio_jobs[8];
    double prio_mean_queue_s[8];
    double prio_mean_wait_s[8];
    uint32_t n_prio;
    uint64_t quota_violations;    /* instants some queue was above nominal + borrowing limit */
    double reclaim_wait_s;        /* sum over queues of reclaim_wait_s */
    double fragmentation;         /* mean share of GPUs stranded while a whole-node gang waits
                                     (see docs/metrics.md) */
    double whole_node_wait_share; /* share of the time some whole-node gang waits */
    uint64_t backfilled;          /* gangs started ahead of an older waiting gang */
    uint64_t reservations;        /* cycles in which a starving gang held capacity */
    uint64_t cycles;
    double multinode_mean_queue_s; /* mean queue time of gangs with more GPUs than the
                                      cluster's largest node */
    uint32_t multinode_jobs;
    /* start-time estimates: |first expected start - actual start| / actual queue time over the
     * gangs that waited more than 10 minutes and got an expected start (eta_covered of
     * eta_waited such gangs) */
    double eta_median_rel_error, eta_p90_rel_error;
    uint32_t eta_waited, eta_covered;
    struct sim_queue_stats *per_queue; /* [n_queues] */
    uint32_t n_queues;
    /* for the report */
    struct report_point *series;
    size_t n_series;
    double *queue_s; /* per started job */
    size_t n_queue_s;
    uint32_t *queue_of; /* per queue_s entry: the job's queue (index into per_queue) */
    double *queue_used; /* [n_series][n_queues]: nvidia.com/gpu admitted per queue at each
                           series point, all flavors */
    double *node_gpu_s; /* [cluster nodes]: GPU-seconds of the runs that ended on each node */
    /* samples and integrals kept so that runs of disjoint jobs can be merged (private.c) */
    double *jct_s;   /* completion time of each finished job, seconds, sorted */
    size_t n_jct_s;  /* = completed */
    double *eta_err; /* the eta_covered relative start-time errors, sorted */
    double frag_weighted_ms, frag_time_ms, frag_wait_ms; /* see sim_summarize() */
    int64_t t0_ms, t_end_ms; /* first submission and last finish, the trace's clock */
};

struct store;

/* sched/sim/summary.c: the results, from one table of rows (label, JSON key, format). */
/* The summary table on stdout: one column per policy, per-queue mean queue times. */
void sim_print_table(const struct sim_stats *s, int n, const char *cluster, int64_t gpus,
                     uint32_t nodes);
/* {"policies": [...]} on stdout. */
void sim_print_json(const struct sim_stats *s, int n);
/* The HTML report (sched/sim/report.h) of n policies' results on cluster c. */
int sim_write_report(const char *path, const char *title, const struct sim_stats *s, int n,
                     const struct cluster *c, struct sched_errbuf *eb);

/* A planned node outage (--outages FILE: CSV node,down,up in seconds). */
struct sim_outage {
    uint32_t node;
    int64_t down_ms, up_ms;
};

/* Failures injected into a run, all seeded: the same seed fails the same nodes and starts. */
struct sim_failures {
    uint64_t seed;
    double node_mtbf_h;            /* mean time between failures of each node, hours; 0 = none */
    double repair_h;               /* how long a failed node stays down, hours */
    double pod_start_failure_rate; /* probability that a gang's start fails (a member never
                                      becomes ready: image pull, device allocation, ...) */
    const struct sim_outage *outages;
    uint32_t n_outages;
    int64_t detect_ms;        /* a gang that lost a member runs partially this long before the
                                 scheduler tears it down (the NotReady grace) */
    int64_t start_timeout_ms; /* a gang not all running by then is torn down */
    int64_t backoff_ms;       /* first retry delay after a failed start (doubles each time) */
    uint32_t max_restarts;    /* retry budget for the job's own failures (failed starts) */
    uint32_t strikes;         /* failed starts on a node within strike_window_ms ... */
    int64_t strike_window_ms;
    int64_t quarantine_ms; /* ... exclude it for this long */
};

/* Reads an outage file (CSV with header node,down,up; times in seconds). Errors name the file,
 * the line and the column. *out is malloc'ed. */
int sim_outages_read(const char *path, const struct cluster *c, struct sim_outage **out,
                     uint32_t *n, struct sched_errbuf *eb);

struct sim_options {
    FILE *events;            /* JSON Lines event log, or NULL */
    bool progress;           /* progress on stderr */
    const char *explain_job; /* job id whose verdicts are printed to stderr, or NULL */
    /* persistence (--db): one store transaction per simulated instant holds everything needed
     * to resume exactly; NULL = in memory only */
    struct store *db;
    bool resume;               /* continue from the state in db */
    uint64_t stop_after;       /* --stop-after-events: _exit() abruptly after this many events
                                  (a crash: nothing beyond the last commit survives); 0 = never */
    FILE *jobs_out;            /* per-job results as CSV at the end, or NULL */
    const char *jobs_out_name; /* its name in messages (--jobs-out FILE), or NULL */
    uint32_t db_batch;         /* instants per store transaction; 0 = the default (4096) */
    const struct sim_failures *failures; /* NULL = nothing fails */
};

int sim_run(const struct sim_input *in, const struct sched_policy *pol,
            const struct sim_options *opt, struct sim_stats *out, struct sched_errbuf *eb);
void sim_stats_free(struct sim_stats *s);
/* Merging runs of disjoint jobs on disjoint nodes (stats.c, for private.c): sim_stats_merge()
 * adds `one`, run on `gpus` GPUs, into m->acc (zeroed, per_queue allocated; one's per_queue
 * entry q is copied; until sim_stats_merged() the means in acc hold sums); sim_stats_merged()
 * turns them into means, percentiles and shares. The makespan is from the first submission of any
 * run to the last finish of any; utilisation is the busy GPU-seconds over (all runs' GPUs x that
 * makespan); fragmentation and the whole-node wait share are over the
 * runs' time, every other figure over all jobs. 0 or SCHED_ENOMEM. */
struct sim_merge {
    struct sim_stats *acc;
    double gpus, busy_gpu_s; /* GPUs of all runs; their busy GPU-seconds */
    uint32_t runs;           /* merged so far */
};
int sim_stats_merge(struct sim_merge *m, const struct sim_stats *one, uint32_t q, double gpus);
int sim_stats_merged(struct sim_merge *m);

/* The private-cluster baseline (private.c): each queue alone, under `pol`, on a slice of the
 * cluster the size of its nominal GPU quota; the runs merged into *out (policy "private";
 * per_queue from each queue's own run; every other figure over all runs, see
 * sim_stats_merge()). --jobs-out gets each job's row from its queue's run; events and --db are
 * not written for it. */
int sim_run_private(const struct sim_input *in, const struct sched_policy *pol,
                    const struct sim_options *opt, struct sim_stats *out, struct sched_errbuf *eb);

#endif
