/* sched/sim/sim.c: discrete-event simulation around sched_cycle() (see sim.h).
 *
 * Loop: the clock jumps to the next instant with an arrival or a completion; all completions of
 * that instant release their GPUs, all arrivals join their queue, then one scheduling cycle runs
 * and its placements start (a start at t finishes at t + duration). Time is integer
 * milliseconds, so runs are exact and repeatable.
 */
#include "sched/sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/plugins.h"
#include "queue/estimate.h"
#include "queue/queue.h"
#include "queue/quota.h"
#include "sched/core/bits.h"
#include "sched/core/cycle.h"
#include "sched/core/device.h"
#include "sched/core/eta.h"
#include "sched/core/hash.h"
#include "sched/core/log.h"
#include "sched/core/place_base.h"
#include "sched/engine/engine.h"
#include "sched/engine/life.h"
#include "store/store.h"

#define CPU_PER_GPU_MILLI 4000
#define MEM_PER_GPU_BYTES (32ll << 30)

/* ---- input ------------------------------------------------------------------------------- */

/* Index of a topology level by name: -1 for NULL, < -1 (with a message) when unknown. */
static int level_of(const struct cluster *c, const char *name, const struct trace *t,
                    const struct trace_job *tj, const char *column, struct sched_errbuf *eb)
{
    if (!name)
        return -1;
    for (uint32_t l = 0; l < c->topo.n_levels; l++)
        if (strcmp(c->topo.levels[l].name, name) == 0)
            return (int)l;
    char known[256] = "";
    size_t at = 0;
    for (uint32_t l = 0; l < c->topo.n_levels && at < sizeof(known); l++) {
        int k =
            snprintf(known + at, sizeof(known) - at, "%s%s", l ? ", " : "", c->topo.levels[l].name);
        if (k > 0)
            at += (size_t)k;
    }
    sched_fail(eb, SCHED_EINVAL, "%s:%u: column '%s': unknown topology level '%s' (levels: %s)",
               t->files[tj->file], tj->line, column, name, known);
    return -2;
}

/* Queue names of a trace, in order of first appearance. */
static int trace_queues(const struct trace *t, const char ***names, uint32_t *n)
{
    *names = NULL;
    *n = 0;
    uint32_t cap = 0;
    for (size_t i = 0; i < t->n_jobs; i++) {
        bool seen = false;
        for (uint32_t q = 0; q < *n && !seen; q++)
            seen = strcmp((*names)[q], t->jobs[i].queue) == 0;
        if (seen)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            const char **nn = realloc(*names, cap * sizeof(*nn));
            if (!nn)
                return SCHED_ENOMEM;
            *names = nn;
        }
        (*names)[(*n)++] = t->jobs[i].queue;
    }
    return 0;
}

static void yaml_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The default configuration when none is given (see sim.h). */
static int default_config(const struct trace *t, const struct cluster *c, struct config **out,
                          struct sched_errbuf *eb)
{
    const char **names;
    uint32_t n;
    if (trace_queues(t, &names, &n) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    double *gh = calloc(n + 1, sizeof(*gh)), total = 0;
    int64_t *nominal = calloc(n + 1, sizeof(*nominal));
    char *text = NULL;
    size_t len = 0;
    FILE *f = gh && nominal ? open_memstream(&text, &len) : NULL;
    int rc = SCHED_ENOMEM;
    if (!f) {
        sched_fail(eb, rc, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < t->n_jobs; i++)
        for (uint32_t q = 0; q < n; q++)
            if (strcmp(names[q], t->jobs[i].queue) == 0) {
                double h = (double)t->jobs[i].num_gpu * (double)t->jobs[i].duration_ms / 3.6e6;
                gh[q] += h;
                total += h;
                break;
            }
    /* largest remainder: nominal quotas sum to the cluster's GPUs */
    int64_t cap = c->total_gpus, given = 0;
    for (uint32_t q = 0; q < n; q++) {
        double share = total > 0 ? gh[q] / total : 1.0 / n;
        nominal[q] = (int64_t)((double)cap * share);
        given += nominal[q];
    }
    while (given < cap && n > 0) {
        uint32_t best = 0;
        double best_rem = -1;
        for (uint32_t q = 0; q < n; q++) {
            double share = total > 0 ? gh[q] / total : 1.0 / n;
            double rem = (double)cap * share - (double)nominal[q];
            if (rem > best_rem) {
                best_rem = rem;
                best = q;
            }
        }
        nominal[best]++;
        given++;
    }
    /* the cohort is "all", or "all-N" when a queue (a trace file) is already called that */
    char cohort[32] = "all";
    for (unsigned k = 1;; k++) {
        uint32_t q = 0;
        while (q < n && strcmp(names[q], cohort) != 0)
            q++;
        if (q == n)
            break;
        snprintf(cohort, sizeof(cohort), "all-%u", k);
    }
    fprintf(f,
            "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
            "cohorts:\n  - name: %s\nqueues:\n",
            cohort);
    for (uint32_t q = 0; q < n; q++) {
        fputs("  - name: ", f);
        yaml_quoted(f, names[q]);
        fprintf(f,
                "\n    cohort: %s\n    quota:\n      default:\n"
                "        nvidia.com/gpu: %lld\n",
                cohort, (long long)nominal[q]);
    }
    if (fclose(f) != 0) {
        f = NULL;
        sched_fail(eb, rc, "out of memory");
        goto out;
    }
    f = NULL;
    rc = config_load_buffer("<default config>", text, len, out, eb);
out:
    if (f)
        fclose(f);
    free(text);
    free(gh);
    free(nominal);
    free(names);
    return rc;
}

static void pod_request(struct res_vec *req, int64_t gpus)
{
    memset(req, 0, sizeof(*req));
    req->v[RES_GPU] = gpus;
    req->v[RES_CPU] = gpus > 0 ? gpus * CPU_PER_GPU_MILLI : 1000;
    req->v[RES_MEMORY] = gpus > 0 ? gpus * MEM_PER_GPU_BYTES : (4ll << 30);
    req->v[RES_PODS] = 1;
}

int sim_input_build(struct sim_input *in, const struct trace *t, const struct cluster *c,
                    const struct config *cfg, struct sched_errbuf *eb)
{
    memset(in, 0, sizeof(*in));
    in->cluster = c;
    if (!cfg) {
        int rc = default_config(t, c, &in->owned_config, eb);
        if (rc != 0)
            return rc;
        cfg = in->owned_config;
    }
    in->config = cfg;
    in->n_queues = cfg->n_queues;
    in->queues = calloc(cfg->n_queues + 1, sizeof(*in->queues));
    in->jobs = calloc(t->n_jobs ? t->n_jobs : 1, sizeof(*in->jobs));
    if (!in->jobs || !in->queues) {
        sim_input_free(in);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory for %zu jobs", t->n_jobs);
    }
    for (uint32_t q = 0; q < cfg->n_queues; q++)
        in->queues[q] = (struct queue){.name = cfg->queues[q].name,
                                       .priority = cfg->queues[q].priority,
                                       .weight = cfg->queues[q].weight};
    int64_t node_gpus = c->max_node_gpus > 0 ? c->max_node_gpus : 8;
    for (size_t i = 0; i < t->n_jobs; i++) {
        const struct trace_job *tj = &t->jobs[i];
        struct sim_job *j = &in->jobs[i];
        int q = config_queue_index(cfg, tj->queue);
        if (q < 0) {
            int rc =
                sched_fail(eb, SCHED_EINVAL, "%s:%u: queue '%s' of job %s is not a queue of %s",
                           t->files[tj->file], tj->line, tj->queue, tj->id, cfg->path);
            sim_input_free(in);
            return rc;
        }
        j->id = tj->id;
        j->duration_ms = tj->duration_ms;
        j->checkpoint_interval_ms = tj->checkpoint_interval_ms;
        /* the job's own restart cost, else its queue's default (preemption.restartCost) */
        j->restart_cost_ms =
            tj->has_restart_cost ? tj->restart_cost_ms : cfg->queues[q].preemption.restart_cost_ms;
        struct gang *g = &j->gang;
        g->id = (uint32_t)i;
        g->name = tj->id;
        g->queue = (uint32_t)q;
        g->priority = tj->priority;
        g->submit_ms = tj->submit_ms;
        g->max_runtime_ms = tj->max_runtime_ms;
        int req = level_of(c, tj->topology_required, t, tj, "topology-required", eb);
        int pref = level_of(c, tj->topology_preferred, t, tj, "topology-preferred", eb);
        int slice = level_of(c, tj->slice_topology, t, tj, "slice-topology", eb);
        if (req < -1 || pref < -1 || slice < -1) {
            sim_input_free(in);
            return SCHED_EINVAL;
        }
        g->topo_required = (int8_t)req;
        g->topo_preferred = (int8_t)pref;
        g->slice_level = (int8_t)slice;
        if (config_profile_apply(cfg, (uint32_t)q, tj->profile, g) != 0) {
            int rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'profile': unknown profile '%s'",
                                t->files[tj->file], tj->line, tj->profile);
            sim_input_free(in);
            return rc;
        }
        g->tp_size = tj->tp_size > 0 ? (uint32_t)tj->tp_size : 0;
        g->slice_size = tj->slice_size > 0 ? (uint32_t)tj->slice_size : 0;
        if ((g->slice_size > 0) != (g->slice_level >= 0)) {
            int rc = sched_fail(eb, SCHED_EINVAL,
                                "%s:%u: job %s: slice-size and slice-topology go together",
                                t->files[tj->file], tj->line, tj->id);
            sim_input_free(in);
            return rc;
        }
        int64_t gpus = tj->num_gpu;
        /* gpus_per_pod wins; else `pods` pods as even as possible (the first ones one GPU
         * larger); else whole nodes of the largest node size */
        int64_t gpp = tj->gpus_per_pod > 0 ? tj->gpus_per_pod
                      : tj->pods > 0       ? gpus / tj->pods
                                           : (gpus < node_gpus ? gpus : node_gpus);
        if (gpus == 0) {
            g->n_sets = 1;
            g->sets[0].count = tj->pods > 0 ? (uint32_t)tj->pods : 1;
            pod_request(&g->sets[0].req, 0);
        } else if (tj->pods > 0 && tj->gpus_per_pod <= 0 && gpus >= tj->pods) {
            int64_t big = gpus % tj->pods; /* pods with gpp + 1 GPUs */
            g->n_sets = 0;
            if (big > 0) {
                g->sets[g->n_sets].count = (uint32_t)big;
                pod_request(&g->sets[g->n_sets].req, gpp + 1);
                g->n_sets++;
            }
            g->sets[g->n_sets].count = (uint32_t)(tj->pods - big);
            pod_request(&g->sets[g->n_sets].req, gpp);
            g->n_sets++;
        } else {
            if (gpp <= 0)
                gpp = 1;
            int64_t full = gpus / gpp, rest = gpus % gpp;
            g->n_sets = 0;
            if (full > 0) {
                g->sets[g->n_sets].count = (uint32_t)full;
                pod_request(&g->sets[g->n_sets].req, gpp);
                g->n_sets++;
            }
            if (rest > 0) {
                g->sets[g->n_sets].count = 1;
                pod_request(&g->sets[g->n_sets].req, rest);
                g->n_sets++;
            }
        }
        /* A tensor-parallel group larger than a pod: its pods must share an NVLink domain. */
        int64_t pod_gpus = g->n_sets ? g->sets[0].req.v[RES_GPU] : 0;
        if (g->tp_size > 0 && pod_gpus > 0 && g->tp_size > pod_gpus && g->slice_size == 0) {
            g->slice_size = (uint32_t)((g->tp_size + pod_gpus - 1) / pod_gpus);
            g->slice_level = (int8_t)(c->topo.nvlink_level >= 0 ? c->topo.nvlink_level
                                                                : (int)c->topo.n_levels - 1);
        }
        g->min_member = 0;
        gang_finalize(g);
        g->min_member = g->n_pods;
    }
    in->n_jobs = (uint32_t)t->n_jobs;
    return 0;
}

void sim_input_free(struct sim_input *in)
{
    free(in->tolerations);
    config_free(in->owned_config);
    free(in->queues);
    free(in->jobs);
    memset(in, 0, sizeof(*in));
}

/* xorshift64*: the simulator's only randomness, always seeded */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

static double rng_unit(uint64_t *x)
{
    return (double)(rng_next(x) >> 11) / 9007199254740992.0;
}

void sim_input_workload(struct sim_input *in, const struct trace *t, const struct sim_workload *w)
{
    uint64_t x = w->seed ? w->seed : 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < in->n_jobs && i < t->n_jobs; i++) {
        struct sim_job *j = &in->jobs[i];
        const struct trace_job *tj = &t->jobs[i];
        double u_prio = rng_unit(&x), u_jitter = rng_unit(&x); /* two draws per job, always */
        if (w->high_priority_fraction > 0 && tj->priority == 0 &&
            u_prio < w->high_priority_fraction)
            j->gang.priority = 10;
        if (!tj->has_checkpoint_interval && w->ckpt_interval_ms > 0 &&
            j->duration_ms >= w->ckpt_min_duration_ms)
            j->checkpoint_interval_ms =
                (int64_t)((double)w->ckpt_interval_ms * (0.8 + 0.4 * u_jitter));
    }
}

/* ---- run state --------------------------------------------------------------------------- */

enum fin_kind {
    FIN_FINISH = 0, /* a run ends */
    FIN_EVICT,      /* eviction after an answered checkpoint request */
    FIN_EVICT_LATE, /* eviction at the end of the grace, unanswered */
    FIN_TEARDOWN,   /* a failed gang is torn down (job: the gang) */
    FIN_RESUBMIT,   /* a gang's retry backoff ends */
    FIN_NODE_DOWN,  /* job field: the node */
    FIN_NODE_UP,
    FIN_UNQUARANTINE,
    FIN_OUTAGE, /* a planned outage begins (its end is a FIN_NODE_UP) */
};

#define CKPT_WRITE_MS 30000 /* time a job takes to answer a checkpoint request */

/* A timed event of a running job; stale when its generation no longer matches the job's. */
struct fin {
    int64_t t_ms;
    uint32_t job;
    uint32_t gen;
    enum fin_kind kind;
};

struct run {
    const struct sim_input *in;
    const struct sched_policy *pol;
    const struct sim_options *opt;
    struct node_state *state;
    struct place_base *base; /* the core's placement state between cycles: touched per change */
    int64_t *start_ms, *end_ms;
    struct sched_assign **assign; /* per running job: its pods */
    struct queue_list *queues;
    struct fin *heap;
    uint32_t n_heap, cap_heap;
    bool oom; /* an allocation failed where no error could be returned */
    uint32_t n_pending;
    uint32_t n_pending_whole; /* pending gangs whose pods each need a whole node */
    int64_t busy_gpus;
    uint32_t max_island; /* GPUs in the largest NVLink island of the cluster */
    struct sim_stats *st;
    size_t cap_series;
    size_t cap_queue_used; /* points st->queue_used holds */
    /* --explain: the last line printed (without its time), repeated since and until when */
    char explain_prev[640];
    uint32_t explain_rep;
    int64_t explain_from, explain_until;
    /* quota accounting, per config queue */
    uint32_t n_flavors;
    int64_t *usage;       /* [n_queues][n_flavors][RES_MAX]: requests of running gangs */
    uint32_t *job_flavor; /* flavor charged, per running job */
    double *hist;         /* decayed share (queue_decay) */
    double *share;        /* share after the last cycle */
    bool *reclaim_wait;   /* head waits within nominal while others borrow (last cycle) */
    struct arena qarena;  /* quota trees built by the simulator for its own metrics */
    /* per node, for node_state.release_ms */
    uint32_t *pods_on;         /* pods running */
    uint32_t *unbounded;       /* pods without a declared maximum run time */
    int64_t *bounded_max;      /* latest declared end among the others */
    uint64_t last_reservation; /* hash of the last reservation logged */
    /* preemption */
    int64_t *remaining_ms;      /* work left per job */
    int64_t *run_start_ms;      /* start of the current run */
    int64_t *overhead_ms;       /* restart time of the current run */
    int64_t *busy_ms;           /* time held GPUs over all finished or evicted runs */
    uint32_t *gen;              /* bumped at every eviction: older timed events are stale */
    uint32_t *n_evicted;        /* evictions per job */
    uint8_t *evicting;          /* a checkpoint was requested, eviction scheduled */
    int64_t *evict_at;          /* when (valid while evicting) */
    uint8_t *evict_kind;        /* FIN_EVICT or FIN_EVICT_LATE */
    uint32_t *runlist, *runpos; /* running jobs (swap-remove set) */
    uint32_t n_run;
    struct sched_running *runv; /* snapshot view, rebuilt per cycle */
    struct eng *eng;            /* state between cycles (sched/engine): preemptor holds and hints */
    /* loop state (persisted with the jobs so that a run resumes exactly) */
    uint32_t next_sub;
    int64_t t0, t_end, prev_t;
    double frag_w, frag_t, frag_now, frag_wait; /* frag_wait: time a whole-node gang waited */
    int64_t stranded; /* free GPUs on partly used nodes, kept as pods start and end */
    bool whole_waiting;
    uint64_t events_done; /* submits, starts, finishes, evictions, rejects */
    uint32_t uncommitted; /* instants since the last store commit */
    /* what changed during the current instant, for the store */
    uint8_t *dirty;
    uint32_t *dirty_list, n_dirty;
    uint8_t *node_dirty;
    uint8_t *last_why;     /* last reason logged per job (why + 1; 0 = none) */
    uint32_t *last_reason; /* verdict_hash of that reason (0: unknown) */
    int64_t *last_eta;     /* expected start last logged per job, INT64_MIN = none */
    uint8_t *db_placed; /* per job: the store holds placements of it (it ran at its last write) */
    /* failures */
    const struct sim_failures *fail;
    /* a failure injected into a run is checked by the engine's lifecycle rules when the driver
     * would see it (start timeout, NotReady grace); strikes, quarantine, retry budget and
     * backoff are the engine's */
    uint8_t *broken;       /* per job: a failure happened, its check is scheduled */
    uint8_t *broken_start; /* per job: the failure is a start that never becomes ready */
    uint32_t *lost_node;   /* per job: else the node a member was lost with */
    uint32_t *attempts;    /* per job: starts so far (seeds the start-failure draw) */
    int64_t *fail_at;      /* per job: when it broke (for recovery time), 0 = not broken */
    int64_t *down_at;      /* per node: scratch NotReady-since of one check, 0 otherwise */
    struct arena life_arena;
    struct eng_effects fx;
    uint64_t fail_rng;
    uint32_t n_backoff; /* jobs in ENG_JOB_BACKOFF */
    /* run-time estimates (learned from finishes, in (instant, job id) order so that a resumed
     * run learns the same) and start-time estimates */
    struct est_model est;
    int64_t *rt_est;            /* per job: expected run time given to the core, 0 = unknown */
    int64_t *rt_typ;            /* per job: typical run time, for start estimates */
    int64_t *rel_typ;           /* per node: typical release, for start estimates */
    struct sched_release *rels; /* per running pod: typical release, for start estimates */
    uint32_t n_rels, cap_rels;
    uint32_t *fin_now; /* jobs finished in the current instant, not yet learned from */
    uint32_t n_fin_now;
    int64_t *eta_first; /* per job: first expected start planned, INT64_MIN = none yet */
};

/* Job j's state: the engine's job table (sched/engine/engine.h). */
static enum eng_state jst(const struct run *r, uint32_t j)
{
    return eng_job_state(r->eng, j);
}

/* Job j's state changed: its "j:<id>" row is written at the next store batch (with --db). */
static void mark_dirty(struct run *r, uint32_t j)
{
    if (!r->dirty || r->dirty[j])
        return;
    r->dirty[j] = 1;
    r->dirty_list[r->n_dirty++] = j;
}

static void touch(struct run *r, uint32_t j)
{
    r->events_done++;
    mark_dirty(r, j);
}

static void submit(struct run *r, uint32_t j, int64_t now);
static void break_gang(struct run *r, uint32_t j, int64_t at, bool start, uint32_t node,
                       int64_t now);

/* Free GPUs of node i when it is partly used (stranded: no whole-node gang can use them). */
static int64_t stranded_on(const struct run *r, uint32_t i)
{
    int64_t n = r->in->cluster->nodes[i].n_gpus;
    int64_t f = n - (int64_t)bits_popc32(r->state[i].gpu_used);
    return f > 0 && f < n ? f : 0;
}

/* node_state[i] changed: the core's placement state re-reads it at the next cycle. */
static void node_changed(struct run *r, uint32_t i)
{
    if (r->base)
        place_base_touch(r->base, i);
}

static void update_release(struct run *r, uint32_t i)
{
    struct node_state *ns = &r->state[i];
    if (r->node_dirty)
        r->node_dirty[i] = 1;
    if (r->pods_on[i] == 0)
        r->bounded_max[i] = 0; /* conservative while busy: ends only grow until it empties */
    ns->release_ms = r->unbounded[i] > 0 ? INT64_MAX : r->bounded_max[i];
}

/* A uniform 64-bit draw per (seed, job, attempt, salt): splitmix64, independent of everything
 * else the run does, so that a failure model never depends on the order of events. */
static uint64_t fail_draw(const struct run *r, uint32_t j, uint64_t salt)
{
    uint64_t z = (r->fail->seed + 1) * 0x9E3779B97F4A7C15ull + ((uint64_t)j << 32) +
                 (uint64_t)r->attempts[j] * 0xD1B54A32D192ED03ull + salt * 0x94D049BB133111EBull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Does this start fail? A draw per job and attempt. */
static bool start_fails(const struct run *r, uint32_t j)
{
    if (!r->fail || r->fail->pod_start_failure_rate <= 0)
        return false;
    return (double)(fail_draw(r, j, 0) >> 11) / 9007199254740992.0 <
           r->fail->pod_start_failure_rate;
}

/* The member (pod index) whose start failed, for the strike: uniform over the gang's pods. */
static uint32_t failed_member(const struct run *r, uint32_t j)
{
    uint32_t n = r->in->jobs[j].gang.n_pods;
    return n > 1 ? (uint32_t)(fail_draw(r, j, 1) % n) : 0;
}

static int64_t *usage_at(struct run *r, uint32_t q, uint32_t f)
{
    return r->usage + ((size_t)q * r->n_flavors + f) * RES_MAX;
}

static void charge(struct run *r, const struct gang *g, uint32_t f, int sign)
{
    int64_t *u = usage_at(r, g->queue, f);
    struct res_vec need;
    gang_request(g, &need);
    for (int k = 0; k < res_count(); k++)
        u[k] += sign * need.v[k];
}

/* Puts the pods of job j (placement a) on their nodes: usage, GPUs, release bookkeeping. */
static void occupy(struct run *r, uint32_t j, const struct sched_assign *a, int64_t now)
{
    const struct gang *g = &r->in->jobs[j].gang;
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t q = 0; q < g->sets[s].count; q++, k++) {
            struct node_state *ns = &r->state[a[k].node];
            node_changed(r, a[k].node);
            res_add(&ns->used, &g->sets[s].req);
            r->stranded -= stranded_on(r, a[k].node);
            ns->gpu_used |= a[k].gpu_mask;
            r->stranded += stranded_on(r, a[k].node);
            r->pods_on[a[k].node]++;
            if (g->max_runtime_ms <= 0)
                r->unbounded[a[k].node]++;
            else if (now >= 0 && now + g->max_runtime_ms > r->bounded_max[a[k].node])
                r->bounded_max[a[k].node] = now + g->max_runtime_ms;
            if (now >= 0)
                update_release(r, a[k].node);
        }
    r->busy_gpus += g->gpus;
    charge(r, g, r->job_flavor[j], +1);
}

static int64_t queue_gpus(struct run *r, uint32_t q)
{
    int64_t n = 0;
    for (uint32_t f = 0; f < r->n_flavors; f++)
        n += usage_at(r, q, f)[RES_GPU];
    return n;
}

static void heap_push(struct run *r, int64_t t, uint32_t job, enum fin_kind kind)
{
    if (r->n_heap == r->cap_heap) { /* stale entries of evicted runs can pile up */
        struct fin *h = realloc(r->heap, (size_t)r->cap_heap * 2 * sizeof(*h));
        if (!h) {
            r->oom = true;
            return;
        }
        r->heap = h;
        r->cap_heap *= 2;
    }
    uint32_t i = r->n_heap++;
    bool node_event = kind == FIN_NODE_DOWN || kind == FIN_NODE_UP || kind == FIN_UNQUARANTINE ||
                      kind == FIN_OUTAGE;
    r->heap[i] =
        (struct fin){.t_ms = t, .job = job, .gen = node_event ? 0 : r->gen[job], .kind = kind};
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (r->heap[p].t_ms < r->heap[i].t_ms ||
            (r->heap[p].t_ms == r->heap[i].t_ms && r->heap[p].job < r->heap[i].job))
            break;
        struct fin x = r->heap[p];
        r->heap[p] = r->heap[i];
        r->heap[i] = x;
        i = p;
    }
}

static struct fin heap_pop(struct run *r)
{
    struct fin top = r->heap[0];
    r->heap[0] = r->heap[--r->n_heap];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, rr = l + 1, m = i;
        if (l < r->n_heap &&
            (r->heap[l].t_ms < r->heap[m].t_ms ||
             (r->heap[l].t_ms == r->heap[m].t_ms && r->heap[l].job < r->heap[m].job)))
            m = l;
        if (rr < r->n_heap &&
            (r->heap[rr].t_ms < r->heap[m].t_ms ||
             (r->heap[rr].t_ms == r->heap[m].t_ms && r->heap[rr].job < r->heap[m].job)))
            m = rr;
        if (m == i)
            break;
        struct fin x = r->heap[m];
        r->heap[m] = r->heap[i];
        r->heap[i] = x;
        i = m;
    }
    return top;
}

/* ---- event log --------------------------------------------------------------------------- */

/* A JSON string; bytes that are not UTF-8 (the trace reader refuses them in ids; names from
 * elsewhere may hold them) become U+FFFD, so every line stays valid JSON. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    while (*s) {
        unsigned char ch = (unsigned char)*s;
        size_t n = trace_utf8_seq((const unsigned char *)s);
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else if (n == 0)
            fputs("\\ufffd", f);
        else
            fwrite(s, 1, n, f);
        s += n ? n : 1;
    }
    fputc('"', f);
}

static void ev_head(const struct run *r, int64_t t_ms, const char *type, uint32_t job)
{
    FILE *f = r->opt->events;
    fprintf(f, "{\"t\":%.3f,\"type\":\"%s\",\"policy\":", (double)t_ms / 1000.0, type);
    json_str(f, r->pol->name);
    fputs(",\"job\":", f);
    json_str(f, r->in->jobs[job].id);
    fputs(",\"queue\":", f);
    json_str(f, r->in->queues[r->in->jobs[job].gang.queue].name);
}

static void ev_cluster(const struct run *r)
{
    FILE *f = r->opt->events;
    const struct cluster *c = r->in->cluster;
    fputs("{\"t\":0,\"type\":\"cluster\",\"policy\":", f);
    json_str(f, r->pol->name);
    fputs(",\"nodes\":[", f);
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        fputs(i ? ",{\"node\":" : "{\"node\":", f);
        json_str(f, c->nodes[i].name);
        fprintf(f, ",\"gpus\":%u}", c->nodes[i].n_gpus);
    }
    fputs("]}\n", f);
}

/* ---- transitions ------------------------------------------------------------------------- */

static bool whole_node(const struct run *r, const struct gang *g)
{
    return g->n_sets > 0 && g->sets[0].req.v[RES_GPU] >= r->in->cluster->max_node_gpus;
}

static void submit(struct run *r, uint32_t j, int64_t now)
{
    const struct gang *g = &r->in->jobs[j].gang;
    touch(r, j);
    eng_job_submit(r->eng, j);
    if (queue_list_insert(&r->queues[g->queue], g) != 0)
        return; /* out of memory: sim_run detects it through n_pending mismatch */
    r->n_pending++;
    if (whole_node(r, g))
        r->n_pending_whole++;
    if (r->opt->events) {
        ev_head(r, now, "submit", j);
        fprintf(r->opt->events, ",\"gpus\":%lld,\"pods\":%u}\n", (long long)g->gpus, g->n_pods);
    }
}

static void unqueue(struct run *r, uint32_t j)
{
    const struct gang *g = &r->in->jobs[j].gang;
    queue_list_remove(&r->queues[g->queue], g);
    r->n_pending--;
    if (whole_node(r, g))
        r->n_pending_whole--;
}

static int start(struct run *r, const struct sched_placement *p, int64_t now)
{
    const struct gang *g = p->gang;
    uint32_t j = g->id;
    const struct cluster *c = r->in->cluster;
    unqueue(r, j);
    touch(r, j);
    eng_job_bound(r->eng, j, now); /* its preemptor holds end */
    bool restart = r->n_evicted[j] > 0 || (r->fail && r->attempts[j] > 0);
    if (!restart)
        r->start_ms[j] = now; /* queue time counts to the first start */
    r->run_start_ms[j] = now;
    r->overhead_ms[j] = restart ? r->in->jobs[j].restart_cost_ms : 0;
    r->runpos[j] = r->n_run;
    r->runlist[r->n_run++] = j;
    struct sched_assign *a = malloc((g->n_pods ? g->n_pods : 1) * sizeof(*a));
    if (!a)
        return SCHED_ENOMEM;
    memcpy(a, p->pods, g->n_pods * sizeof(*a));
    free(r->assign[j]); /* the previous run's placement */
    r->assign[j] = a;
    r->job_flavor[j] = p->flavor;
    occupy(r, j, a, now);
    bool doomed = false;
    if (r->fail) {
        if (r->fail_at[j] > 0) { /* it broke earlier: running again now */
            r->st->recovery_sum_s += (double)(now - r->fail_at[j]) / 1000.0;
            r->st->recoveries++;
            r->fail_at[j] = 0;
        }
        r->attempts[j]++;
        doomed = start_fails(r, j);
        if (doomed) /* it never becomes ready: no finish, a teardown at the start timeout */
            break_gang(r, j, now + r->fail->start_timeout_ms, true, UINT32_MAX, now);
    }
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t q = 0; q < g->sets[s].count; q++, k++) {
            /* default tensor-parallel group: the whole pod, or the largest island when the pod
             * is larger than every island of the cluster */
            int64_t gpp = g->sets[s].req.v[RES_GPU];
            uint32_t tp = gpp < r->max_island ? (uint32_t)gpp : r->max_island;
            if (g->tp_size > 0) /* the gang's own groups (a group larger than a pod: the pod) */
                tp = g->tp_size < gpp ? g->tp_size : (uint32_t)gpp;
            if (gpu_tp_split(&c->nodes[a[k].node], a[k].gpu_mask, tp))
                r->st->tp_splits++;
        }
    /* racks spanned by a multi-node gang */
    bool multi = false;
    for (uint32_t x = 1; x < g->n_pods && !multi; x++)
        if (a[x].node != a[0].node)
            multi = true;
    if (multi) {
        int lvl = c->topo.rack_level >= 0 ? c->topo.rack_level : (int)c->topo.n_levels - 1;
        uint32_t racks = 0;
        for (uint32_t x = 0; x < g->n_pods; x++) {
            uint32_t d = c->nodes[a[x].node].dom[lvl];
            bool seen = false;
            for (uint32_t y = 0; y < x && !seen; y++)
                seen = c->nodes[a[y].node].dom[lvl] == d;
            racks += !seen;
        }
        r->st->multinode_gangs++;
        r->st->mean_racks_per_multinode_gang += racks; /* divided at the end */
    }
    if (p->backfilled)
        r->st->backfilled++;
    if (!doomed)
        heap_push(r, now + r->overhead_ms[j] + r->remaining_ms[j], j, FIN_FINISH);
    if (r->opt->events) {
        FILE *f = r->opt->events;
        ev_head(r, now, "start", j);
        fputs(",\"pods\":[", f);
        for (uint32_t x = 0; x < g->n_pods; x++) {
            fputs(x ? ",{\"node\":" : "{\"node\":", f);
            json_str(f, c->nodes[a[x].node].name);
            fputs(",\"gpus\":[", f);
            bool first = true;
            for (uint32_t b = 0; b < 32; b++)
                if (a[x].gpu_mask & (1u << b)) {
                    fprintf(f, first ? "%u" : ",%u", b);
                    first = false;
                }
            fputs("]}", f);
        }
        fputs("]}\n", f);
    }
    return 0;
}

/* Frees what a running job holds (nodes, quota) and takes it off the running set. */
static void release_job(struct run *r, uint32_t j)
{
    const struct gang *g = &r->in->jobs[j].gang;
    const struct sched_assign *a = r->assign[j];
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t q = 0; q < g->sets[s].count; q++, k++) {
            struct node_state *ns = &r->state[a[k].node];
            node_changed(r, a[k].node);
            res_sub(&ns->used, &g->sets[s].req);
            r->stranded -= stranded_on(r, a[k].node);
            ns->gpu_used &= ~a[k].gpu_mask;
            r->stranded += stranded_on(r, a[k].node);
            r->pods_on[a[k].node]--;
            if (g->max_runtime_ms <= 0)
                r->unbounded[a[k].node]--;
            update_release(r, a[k].node);
        }
    r->busy_gpus -= g->gpus; /* r->assign[j] stays: the last placement, for the results */
    charge(r, g, r->job_flavor[j], -1);
    uint32_t last = r->runlist[--r->n_run], at = r->runpos[j];
    r->runlist[at] = last;
    r->runpos[last] = at;
    r->evicting[j] = 0;
    if (r->broken)
        r->broken[j] = 0; /* a check scheduled for this run no longer applies */
}

/* Ends the accounting of job j's current run at `now`: its busy time, and its GPU-seconds on
 * each node (for the report's heat map). */
static void account_run(struct run *r, uint32_t j, int64_t now)
{
    int64_t dt = now - r->run_start_ms[j];
    r->busy_ms[j] += dt;
    const struct gang *g = &r->in->jobs[j].gang;
    if (!r->st->node_gpu_s || !r->assign[j] || dt <= 0)
        return;
    for (uint32_t k = 0; k < g->n_pods; k++)
        if (r->assign[j][k].node < r->in->cluster->n_nodes)
            r->st->node_gpu_s[r->assign[j][k].node] +=
                (double)__builtin_popcount(r->assign[j][k].gpu_mask) * (double)dt / 1000.0;
}

static void finish(struct run *r, uint32_t j, int64_t now)
{
    touch(r, j);
    account_run(r, j, now);
    release_job(r, j);
    eng_job_finish(r->eng, j);
    r->end_ms[j] = now;
    r->fin_now[r->n_fin_now++] = j;
    if (r->opt->events) {
        ev_head(r, now, "finish", j);
        fputs("}\n", r->opt->events);
    }
}

/* Work of the current run saved by checkpoints at time t (multiples of the interval). */
static int64_t saved_work(const struct run *r, uint32_t j, int64_t t)
{
    int64_t done = t - r->run_start_ms[j] - r->overhead_ms[j];
    int64_t every = r->in->jobs[j].checkpoint_interval_ms;
    if (done <= 0 || every <= 0)
        return 0;
    return done / every * every;
}

static int64_t last_checkpoint(const struct run *r, uint32_t j, int64_t t)
{
    int64_t saved = saved_work(r, j, t);
    return saved > 0 ? r->run_start_ms[j] + r->overhead_ms[j] + saved : r->run_start_ms[j];
}

/* Evicts a running job at `now`: work since its last checkpoint is lost, it goes back to its
 * queue with its original submission time. `checkpointed` = it saved everything just now. */
static void evict(struct run *r, uint32_t j, int64_t now, const char *reason, bool checkpointed)
{
    const struct sim_job *job = &r->in->jobs[j];
    int64_t done = now - r->run_start_ms[j] - r->overhead_ms[j];
    if (done < 0)
        done = 0;
    if (done > r->remaining_ms[j])
        done = r->remaining_ms[j];
    int64_t saved = checkpointed ? done : saved_work(r, j, now);
    if (saved > r->remaining_ms[j])
        saved = r->remaining_ms[j];
    int64_t lost_ms =
        (done - saved) + (now - r->run_start_ms[j] < r->overhead_ms[j] ? now - r->run_start_ms[j]
                                                                       : r->overhead_ms[j]);
    r->st->gpu_hours_lost_to_preemption += (double)job->gang.gpus * (double)lost_ms / 3.6e6;
    r->remaining_ms[j] -= saved;
    account_run(r, j, now);
    touch(r, j);
    release_job(r, j);
    r->gen[j]++;
    if (r->n_evicted[j]++ == 0)
        r->st->preempted_gangs++;
    r->st->preemptions++;
    if (r->opt->events) {
        ev_head(r, now, "evict", j);
        fputs(",\"reason\":", r->opt->events);
        json_str(r->opt->events, reason);
        fprintf(r->opt->events, ",\"lost_gpu_s\":%.3f}\n",
                (double)job->gang.gpus * (double)lost_ms / 1000.0);
    }
    submit(r, j, now); /* back to its queue, original submission time kept */
}

/* ---- failures ------------------------------------------------------------------------------ */

/* Jobs still to come, waiting, running or backing off. */
static bool work_left(const struct run *r)
{
    return r->next_sub < r->in->n_jobs || r->n_pending > 0 || r->n_run > 0 || r->n_backoff > 0;
}

/* A timed event that no longer applies: the run it belonged to ended or was torn down. */
static bool fin_stale(const struct run *r, const struct fin *f)
{
    switch (f->kind) {
    case FIN_NODE_DOWN:
    case FIN_NODE_UP:
    case FIN_UNQUARANTINE:
    case FIN_OUTAGE:
        return false;
    case FIN_RESUBMIT:
        return f->gen != r->gen[f->job] || jst(r, f->job) != ENG_JOB_BACKOFF;
    default:
        return f->gen != r->gen[f->job] || jst(r, f->job) != ENG_JOB_RUNNING;
    }
}

static double fail_unit(struct run *r)
{
    return rng_unit(&r->fail_rng);
}

/* Exponential time to the next failure of a node, ms. */
static int64_t next_failure_ms(struct run *r)
{
    double u = fail_unit(r);
    return (int64_t)(-log(1.0 - u) * r->fail->node_mtbf_h * 3.6e6) + 1;
}

static void ev_node(const struct run *r, int64_t now, const char *type, uint32_t node)
{
    FILE *f = r->opt->events;
    if (!f)
        return;
    fprintf(f, "{\"t\":%.3f,\"type\":\"%s\",\"policy\":", (double)now / 1000.0, type);
    json_str(f, r->pol->name);
    fputs(",\"node\":", f);
    json_str(f, r->in->cluster->nodes[node].name);
    fputs("}\n", f);
}

/* A running gang broke: a member never becomes ready (start), or one was lost with its node.
 * The engine's lifecycle rules see it when the daemon would: at the start timeout, or when the
 * node has been NotReady for the grace. */
static void break_gang(struct run *r, uint32_t j, int64_t at, bool start, uint32_t node,
                       int64_t now)
{
    if (r->broken[j])
        return;
    r->broken[j] = 1;
    r->broken_start[j] = start;
    r->lost_node[j] = node;
    r->fail_at[j] = now;
    heap_push(r, at, j, FIN_TEARDOWN);
}

/* The facts of broken job j for the lifecycle rules (sched/engine/life.h): a failed start has
 * one member that never becomes ready (failed_member); a lost member is on a node NotReady
 * since the loss (the simulator's pods die with their node, whether it comes back or not).
 * *act: the rule's action, NULL when none applies. */
static int check_broken(struct run *r, uint32_t j, int64_t now, struct eng_life_action **act)
{
    const struct gang *g = &r->in->jobs[j].gang;
    struct arena *a = &r->life_arena;
    arena_reset(a);
    struct eng_member *m = arena_calloc(a, g->n_pods + 1, sizeof(*m));
    if (!m)
        return SCHED_ENOMEM;
    uint32_t bad = r->broken_start[j] ? failed_member(r, j) : UINT32_MAX;
    for (uint32_t k = 0; k < g->n_pods; k++)
        m[k] = (struct eng_member){.node = r->assign[j][k].node,
                                   .phase = k == bad ? ENG_POD_PENDING : ENG_POD_RUNNING,
                                   .ready = k != bad};
    uint32_t lost = r->broken_start[j] ? UINT32_MAX : r->lost_node[j];
    uint32_t n_nodes = r->in->cluster->n_nodes;
    if (lost < n_nodes)
        r->down_at[lost] = r->fail_at[j];
    struct eng_gang_facts gf = {.gang = j,
                                .members = m,
                                .n_members = g->n_pods,
                                .min_member = g->min_member,
                                .start_timeout_ms = r->fail->start_timeout_ms,
                                .grace_ms = r->fail->detect_ms,
                                .max_restarts = r->fail->max_restarts,
                                .spread = false}; /* whole gangs only: see docs/engine.md */
    uint32_t n;
    int rc = eng_life_check(r->eng, &gf, 1, now, r->down_at, n_nodes, a, act, &n);
    if (lost < n_nodes)
        r->down_at[lost] = 0;
    if (rc == 0 && n == 0)
        *act = NULL;
    return rc;
}

/* Every member of broken job j goes at once: the statistics of the lost run, its nodes freed,
 * event `evict`. `own`: a failed start (no work was done), else a member was lost. */
static void tear_down(struct run *r, uint32_t j, bool own, int64_t now)
{
    const struct sim_job *job = &r->in->jobs[j];
    /* work since the last checkpoint is lost (a failed start did no work at all) */
    int64_t done = now - r->run_start_ms[j] - r->overhead_ms[j];
    if (done < 0 || own)
        done = 0;
    if (done > r->remaining_ms[j])
        done = r->remaining_ms[j];
    int64_t saved = saved_work(r, j, now);
    if (saved > done)
        saved = done;
    double lost_ms = (double)(now - r->run_start_ms[j]) - (double)saved;
    r->st->gpu_hours_lost_to_failures += (double)job->gang.gpus * lost_ms / 3.6e6;
    if (!own) /* a member died: the rest ran partially until now */
        r->st->partial_gang_seconds += (double)(now - r->fail_at[j]) / 1000.0;
    r->remaining_ms[j] -= saved;
    account_run(r, j, now);
    touch(r, j);
    release_job(r, j);
    r->gen[j]++;
    r->st->failure_restarts++;
    if (r->opt->events) {
        ev_head(r, now, "evict", j);
        fputs(",\"reason\":", r->opt->events);
        json_str(r->opt->events, own ? "start failure: a member never became ready"
                                     : "node failure: the gang lost a member");
        fprintf(r->opt->events, ",\"lost_gpu_s\":%.3f}\n",
                (double)job->gang.gpus * lost_ms / 1000.0);
    }
}

/* Carries out one of the engine's effects. */
static void on_effect(struct run *r, const struct eng_effect *f, int64_t now)
{
    switch (f->kind) {
    case ENG_FX_TEARDOWN: /* whole: the simulator has no partial replacement */
        tear_down(r, f->gang, f->own, now);
        if (eng_job_gone(r->eng, f->gang, now, &r->fx) != 0)
            r->oom = true;
        return;
    case ENG_FX_QUARANTINE:
        r->state[f->node].quarantined = true;
        node_changed(r, f->node);
        r->st->quarantines++;
        heap_push(r, f->t_ms, f->node, FIN_UNQUARANTINE);
        ev_node(r, now, "quarantine", f->node);
        return;
    case ENG_FX_RELEASE:
        r->state[f->node].quarantined = false;
        node_changed(r, f->node);
        ev_node(r, now, "unquarantine", f->node);
        return;
    case ENG_FX_GIVE_UP:
        r->st->failed_jobs++;
        r->fail_at[f->gang] = 0;
        if (r->opt->events) {
            ev_head(r, now, "reject", f->gang);
            fputs(",\"reason\":\"failed: retry budget exhausted\"}\n", r->opt->events);
        }
        return;
    case ENG_FX_REQUEUE:
        if (f->t_ms > now) { /* after the backoff */
            r->n_backoff++;
            heap_push(r, f->t_ms, f->gang, FIN_RESUBMIT);
        } else { /* node failures do not use the retry budget: back in line at once */
            submit(r, f->gang, now);
        }
        return;
    }
}

/* Effects in order; carrying one out may add more (a teardown's requeue). */
static void on_effects(struct run *r, int64_t now)
{
    if (r->fx.oom)
        r->oom = true;
    for (uint32_t k = 0; k < r->fx.n; k++) {
        struct eng_effect f = r->fx.v[k];
        on_effect(r, &f, now);
    }
    eng_effects_clear(&r->fx);
}

/* The check of broken job j: the engine's rule and its effects. */
static void teardown(struct run *r, uint32_t j, int64_t now)
{
    struct eng_life_action *act = NULL;
    eng_effects_clear(&r->fx);
    if (check_broken(r, j, now, &act) != 0 ||
        (act && eng_life_apply(r->eng, act, now, &r->fx) != 0)) {
        r->oom = true;
        return;
    }
    r->broken[j] = 0;
    on_effects(r, now);
}

static void failure_event(struct run *r, const struct fin *f, int64_t now)
{
    const struct sim_failures *fl = r->fail;
    uint32_t i = f->job;
    switch (f->kind) {
    case FIN_TEARDOWN:
        teardown(r, i, now);
        return;
    case FIN_RESUBMIT:
        r->n_backoff--;
        eng_job_retry(r->eng, i);
        submit(r, i, now);
        return;
    case FIN_NODE_DOWN:
    case FIN_OUTAGE:
        if (r->state[i].not_ready)
            return;
        r->state[i].not_ready = true;
        node_changed(r, i);
        r->st->node_failures++;
        ev_node(r, now, "node-down", i);
        for (uint32_t k = 0; k < r->n_run; k++) { /* gangs with a member on it break */
            uint32_t j = r->runlist[k];
            const struct gang *g = &r->in->jobs[j].gang;
            for (uint32_t p = 0; p < g->n_pods; p++)
                if (r->assign[j][p].node == i) {
                    break_gang(r, j, now + fl->detect_ms, false, i, now);
                    break;
                }
        }
        if (f->kind == FIN_NODE_DOWN && fl->node_mtbf_h > 0 && fl->repair_h > 0 &&
            (r->next_sub < r->in->n_jobs || r->n_run > 0 || r->n_backoff > 0)) {
            int64_t up = now + (int64_t)(fl->repair_h * 3.6e6);
            heap_push(r, up, i, FIN_NODE_UP);
            heap_push(r, up + next_failure_ms(r), i, FIN_NODE_DOWN);
        }
        return;
    case FIN_NODE_UP:
        if (r->state[i].not_ready)
            ev_node(r, now, "node-up", i);
        r->state[i].not_ready = false;
        node_changed(r, i);
        return;
    case FIN_UNQUARANTINE:
        eng_effects_clear(&r->fx);
        eng_release_due(r->eng, i, now, &r->fx);
        on_effects(r, now);
        return;
    default:
        return;
    }
}

/* Seeds the failure schedule: random node failures and the planned outages. */
static void failures_init(struct run *r, int64_t t0)
{
    const struct sim_failures *fl = r->fail;
    r->fail_rng = fl->seed ? fl->seed * 0x9E3779B97F4A7C15ull + 1 : 0x2545F4914F6CDD1Dull;
    if (fl->node_mtbf_h > 0)
        for (uint32_t i = 0; i < r->in->cluster->n_nodes; i++)
            heap_push(r, t0 + next_failure_ms(r), i, FIN_NODE_DOWN);
    for (uint32_t k = 0; k < fl->n_outages; k++) {
        heap_push(r, fl->outages[k].down_ms, fl->outages[k].node, FIN_OUTAGE);
        heap_push(r, fl->outages[k].up_ms, fl->outages[k].node, FIN_NODE_UP);
    }
}

int sim_outages_read(const char *path, const struct cluster *c, struct sim_outage **out,
                     uint32_t *n, struct sched_errbuf *eb)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sched_fail(eb, SCHED_EIO, "cannot read outages %s: %s", path, strerror(errno));
    char line[512];
    uint32_t cap = 0, lineno = 0;
    *out = NULL;
    *n = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: line longer than %zu bytes", path, lineno,
                            sizeof(line) - 2);
            break;
        }
        line[strcspn(line, "\r\n")] = 0;
        if (lineno == 1) {
            if (strcmp(line, "node,down,up") != 0)
                rc = sched_fail(eb, SCHED_EINVAL, "%s:1: expected the header node,down,up", path);
            continue;
        }
        if (!line[0])
            continue;
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) {
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: expected 3 fields", path, lineno);
            break;
        }
        *c1 = *c2 = 0;
        char *e1, *e2;
        double down = strtod(c1 + 1, &e1), up = strtod(c2 + 1, &e2);
        int node = -1;
        for (uint32_t i = 0; i < c->n_nodes && node < 0; i++)
            if (strcmp(c->nodes[i].name, line) == 0)
                node = (int)i;
        if (node < 0)
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'node': no node '%s' in the cluster",
                            path, lineno, line);
        else if (e1 == c1 + 1 || *e1 || !(down >= 0) || down > 1e12)
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'down': not a time in seconds", path,
                            lineno);
        else if (e2 == c2 + 1 || *e2 || !(up > down) || up > 1e12)
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'up': not a time after 'down'", path,
                            lineno);
        if (rc != 0)
            break;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct sim_outage *o = realloc(*out, cap * sizeof(*o));
            if (!o) {
                rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
                break;
            }
            *out = o;
        }
        (*out)[(*n)++] = (struct sim_outage){.node = (uint32_t)node,
                                             .down_ms = (int64_t)(down * 1000.0),
                                             .up_ms = (int64_t)(up * 1000.0)};
    }
    if (rc == 0 && lineno == 0)
        rc = sched_fail(eb, SCHED_EINVAL, "%s: empty file", path);
    fclose(f);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- preemptor holds and reservation hints (kept by the engine) ------------------------ */

/* "N job until n_nodes node... ..." for the store; 0 or an error. */
static int hl_put(struct store *db, const char *key, const struct eng *e, enum eng_hold_list l,
                  struct sched_errbuf *eb)
{
    size_t cap = 64, at = 0;
    uint32_t n = eng_hold_count(e, l);
    for (uint32_t h = 0; h < n; h++)
        cap += 48 + 12 * (size_t)eng_hold_at(e, l, h)->n_nodes;
    char *buf = malloc(cap);
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    at += (size_t)snprintf(buf, cap, "%u", n);
    for (uint32_t h = 0; h < n; h++) {
        const struct eng_hold *eh = eng_hold_at(e, l, h);
        at += (size_t)snprintf(buf + at, cap - at, " %u %lld %u", eh->gang, (long long)eh->until_ms,
                               eh->n_nodes);
        for (uint32_t k = 0; k < eh->n_nodes; k++)
            at += (size_t)snprintf(buf + at, cap - at, " %u", eh->nodes[k]);
    }
    int rc = store_meta_put(db, key, buf, eb);
    free(buf);
    return rc;
}

/* The inverse of hl_put; an absent key is an empty list unless `required`. 0 or an error
 * naming the key. */
static int hl_get(struct store *db, const char *key, bool required, struct eng *e,
                  enum eng_hold_list l, uint32_t n_jobs, uint32_t n_nodes, struct sched_errbuf *eb)
{
    const char *text;
    int rc = store_meta_get(db, key, &text, eb);
    if (rc == SCHED_ENOENT && !required)
        return 0;
    if (rc != 0)
        return rc;
    char *end;
    unsigned long nh = strtoul(text, &end, 10);
    for (unsigned long h = 0; h < nh; h++) {
        unsigned long job = strtoul(end, &end, 10);
        long long until = strtoll(end, &end, 10);
        unsigned long n = strtoul(end, &end, 10);
        if (job >= n_jobs || n > n_nodes)
            return sched_fail(eb, SCHED_EINVAL, "database: meta %s is malformed", key);
        uint32_t *nodes = malloc((n + 1) * sizeof(*nodes));
        if (!nodes)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        bool ok = true;
        for (unsigned long k = 0; k < n; k++) {
            unsigned long x = strtoul(end, &end, 10);
            ok &= x < n_nodes;
            nodes[k] = (uint32_t)x;
        }
        rc = ok ? eng_hold_put(e, l, (uint32_t)job, nodes, (uint32_t)n, until) : SCHED_EINVAL;
        free(nodes);
        if (rc != 0)
            return sched_fail(
                eb, rc, rc == SCHED_ENOMEM ? "out of memory" : "database: meta %s: bad node", key);
    }
    return 0;
}

static void reject(struct run *r, uint32_t j, int64_t now, const char *why)
{
    touch(r, j);
    unqueue(r, j);
    eng_job_reject(r->eng, j);
    if (r->opt->events) {
        ev_head(r, now, "reject", j);
        fputs(",\"reason\":", r->opt->events);
        json_str(r->opt->events, why);
        fputs("}\n", r->opt->events);
    }
}

/* Free GPUs stranded on partly used nodes, as a share of the cluster's GPUs (r->stranded is kept
 * by occupy() and release_job(), so an instant does not count every node). */
static double stranded_share(const struct run *r)
{
    const struct cluster *c = r->in->cluster;
    return c->total_gpus > 0 ? (double)r->stranded / (double)c->total_gpus : 0.0;
}

static int add_point(struct run *r, int64_t now, int64_t t0)
{
    struct sim_stats *st = r->st;
    if (st->n_series == r->cap_series) {
        size_t cap = r->cap_series ? r->cap_series * 2 : 1024;
        struct report_point *p = realloc(st->series, cap * sizeof(*p));
        if (!p)
            return SCHED_ENOMEM;
        st->series = p;
        r->cap_series = cap;
    }
    uint32_t nq = r->in->n_queues;
    if (st->n_series == 0 || st->n_series + 1 > r->cap_queue_used) {
        size_t cap = r->cap_series;
        double *u = realloc(st->queue_used, (cap * nq + 1) * sizeof(*u));
        if (!u)
            return SCHED_ENOMEM;
        st->queue_used = u;
        r->cap_queue_used = cap;
    }
    for (uint32_t q = 0; q < nq; q++) {
        int64_t gpus = 0;
        for (uint32_t f = 0; f < r->n_flavors; f++)
            gpus += usage_at(r, q, f)[RES_GPU];
        st->queue_used[st->n_series * nq + q] = (double)gpus;
    }
    double total = (double)r->in->cluster->total_gpus;
    st->series[st->n_series++] = (struct report_point){
        .t_s = (double)(now - t0) / 1000.0,
        .util = total > 0 ? (double)r->busy_gpus / total : 0.0,
        .queued = (double)r->n_pending,
    };
    return 0;
}

/* A "reserve" event whenever the held capacity changes (gang or nodes). */
static void log_reservations(struct run *r, const struct sched_result *res, int64_t now)
{
    uint64_t h = SCHED_HASH_INIT;
    for (uint32_t k = 0; k < res->n_reservations; k++) {
        h = sched_hash(h, &res->reservations[k].gang->id, sizeof(res->reservations[k].gang->id));
        h = sched_hash(h, res->reservations[k].nodes,
                       res->reservations[k].n_nodes * sizeof(*res->reservations[k].nodes));
    }
    if (h == r->last_reservation)
        return;
    r->last_reservation = h;
    FILE *f = r->opt->events;
    for (uint32_t k = 0; k < res->n_reservations; k++) {
        const struct sched_reservation *rv = &res->reservations[k];
        ev_head(r, now, "reserve", rv->gang->id);
        fputs(",\"nodes\":[", f);
        for (uint32_t n = 0; n < rv->n_nodes; n++) {
            fputs(n ? "," : "", f);
            json_str(f, r->in->cluster->nodes[rv->nodes[n]].name);
        }
        if (rv->expected_start_ms == INT64_MAX)
            fputs("],\"expected_start\":null}\n", f);
        else
            fprintf(f, "],\"expected_start\":%.3f}\n", (double)rv->expected_start_ms / 1000.0);
    }
}

/* Prints the repeats of the last --explain line ("... x312 until t=...") and forgets it. */
static void explain_flush(struct run *r)
{
    if (r->explain_rep > 0)
        fprintf(stderr, "t=%.0fs policy=%s job=%s: ... x%u until t=%.0fs\n",
                (double)r->explain_from / 1000.0, r->pol->name, r->opt->explain_job, r->explain_rep,
                (double)r->explain_until / 1000.0);
    r->explain_rep = 0;
    r->explain_prev[0] = 0;
}

/* One --explain line: printed when it differs from the previous one, counted otherwise. */
static void explain_line(struct run *r, int64_t now, const char *text)
{
    if (strcmp(text, r->explain_prev) == 0) {
        if (r->explain_rep++ == 0)
            r->explain_from = now;
        r->explain_until = now;
        return;
    }
    explain_flush(r);
    fprintf(stderr, "t=%.0fs policy=%s job=%s: %s\n", (double)now / 1000.0, r->pol->name,
            r->opt->explain_job, text);
    snprintf(r->explain_prev, sizeof(r->explain_prev), "%s", text);
}

static void explain(struct run *r, const struct sched_result *res, int64_t now)
{
    for (uint32_t v = 0; v < res->n_verdicts; v++) {
        const struct sched_verdict *vd = &res->verdicts[v];
        if (strcmp(r->in->jobs[vd->gang->id].id, r->opt->explain_job) != 0)
            continue;
        char buf[512];
        sched_verdict_format(vd, r->in->cluster, r->in->config, buf, sizeof(buf));
        explain_line(r, now, buf);
    }
    for (uint32_t p = 0; p < res->n_placements; p++)
        if (strcmp(r->in->jobs[res->placements[p].gang->id].id, r->opt->explain_job) == 0) {
            const struct sched_placement *pl = &res->placements[p];
            const struct topo *t = &r->in->cluster->topo;
            char terms[128] = "", line[400];
            size_t len = 0;
            for (uint32_t k = 0; k < pl->n_terms && len < sizeof(terms); k++) {
                int w = snprintf(terms + len, sizeof(terms) - len, "%s%s %u",
                                 k ? ", " : "; top scores: ", plugin_scores[pl->terms[k]]->name,
                                 (unsigned)pl->term_values[k]);
                len += w > 0 ? (size_t)w : 0;
            }
            snprintf(line, sizeof(line), "placed in %s %s%s",
                     pl->level >= 0 ? t->levels[pl->level].name : "cluster",
                     pl->level >= 0 ? t->levels[pl->level].domain_names[pl->domain] : "(spans)",
                     terms);
            explain_line(r, now, line);
        }
}

/* ---- statistics -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    size_t k = (size_t)ceil(p * (double)n);
    return v[k > 0 ? k - 1 : 0];
}

static double mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0.0;
}

/* Seconds job j has spent without its GPUs since submission: the first queue time plus every
 * wait after an eviction or a failure (busy_ms holds the time of every run before the current
 * one, or of all runs once it is done). The preemption figures use it, since the first queue
 * time alone would not see that an evicted job waits again. */
static double job_wait_s(const struct run *r, uint32_t j)
{
    int64_t until = jst(r, j) == ENG_JOB_FINISHED ? r->end_ms[j] : r->run_start_ms[j];
    int64_t w = until - r->in->jobs[j].gang.submit_ms - r->busy_ms[j];
    return w > 0 ? (double)w / 1000.0 : 0.0;
}

#define ETA_WAITED_S 600.0 /* the start-time KPIs count gangs that waited longer (seconds) */

static int summarize(struct run *r, int64_t t0, int64_t t_end, double frag_weighted,
                     double frag_time, double frag_wait)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    double *q = malloc((in->n_jobs + 1) * sizeof(*q));
    double *jct = malloc((in->n_jobs + 1) * sizeof(*jct));
    double *qq = malloc((in->n_jobs + 1) * sizeof(*qq));
    if (!q || !jct || !qq) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    size_t nq = 0, nj = 0;
    double busy_gpu_s = 0, wait_sum = 0;
    /* queue time and wait per job priority (at most 8 distinct values reported) */
    double prio_sum[8] = {0}, prio_wait[8] = {0};
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        if (jst(r, j) == ENG_JOB_FAILED)
            st->rejected++;
        else if ((jst(r, j) == ENG_JOB_PENDING || jst(r, j) == ENG_JOB_NONE) &&
                 r->n_evicted[j] == 0 && !(r->fail && r->attempts[j] > 0))
            st->never_started++;
        if (jst(r, j) != ENG_JOB_RUNNING && jst(r, j) != ENG_JOB_FINISHED)
            continue;
        double queue_s = (double)(r->start_ms[j] - in->jobs[j].gang.submit_ms) / 1000.0;
        double wait_s = job_wait_s(r, j);
        int64_t above = in->multinode_above ? in->multinode_above : in->cluster->max_node_gpus;
        if (in->jobs[j].gang.gpus > above) {
            st->multinode_jobs++;
            st->multinode_mean_queue_s += queue_s;
            st->per_queue[in->jobs[j].gang.queue].multinode_jobs++;
            st->per_queue[in->jobs[j].gang.queue].multinode_mean_queue_s += queue_s;
        }
        if (queue_s > ETA_WAITED_S) {
            st->eta_waited++;
            if (r->eta_first[j] != INT64_MIN)
                qq[st->eta_covered++] =
                    fabs((double)(r->eta_first[j] - r->start_ms[j]) / 1000.0) / queue_s;
        }
        q[nq++] = queue_s;
        wait_sum += wait_s;
        if (jst(r, j) == ENG_JOB_FINISHED)
            jct[nj++] = (double)(r->end_ms[j] - in->jobs[j].gang.submit_ms) / 1000.0;
        busy_gpu_s += (double)in->jobs[j].gang.gpus * (double)r->busy_ms[j] / 1000.0;
        int32_t p = in->jobs[j].gang.priority;
        uint32_t k = 0;
        while (k < st->n_prio && st->prio_values[k] != p)
            k++;
        if (k == st->n_prio) {
            if (st->n_prio == 8)
                continue;
            st->prio_values[st->n_prio++] = p;
        }
        st->prio_jobs[k]++;
        prio_sum[k] += queue_s;
        prio_wait[k] += wait_s;
    }
    qsort(qq, st->eta_covered, sizeof(*qq), cmp_double);
    st->eta_median_rel_error = pct(qq, st->eta_covered, 0.50);
    st->eta_p90_rel_error = pct(qq, st->eta_covered, 0.90);
    if (st->multinode_jobs)
        st->multinode_mean_queue_s /= st->multinode_jobs;
    st->jobs = in->n_jobs;
    st->started = (uint32_t)nq;
    st->completed = (uint32_t)nj;
    st->queue_s = malloc((nq + 1) * sizeof(double));
    if (!st->queue_s) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    memcpy(st->queue_s, q, nq * sizeof(double));
    st->n_queue_s = nq;
    st->queue_of = malloc((nq + 1) * sizeof(*st->queue_of));
    if (!st->queue_of) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    for (uint32_t j = 0, k = 0; j < in->n_jobs; j++) /* the same jobs, in the same order */
        if (jst(r, j) == ENG_JOB_RUNNING || jst(r, j) == ENG_JOB_FINISHED)
            st->queue_of[k++] = in->jobs[j].gang.queue;
    qsort(q, nq, sizeof(*q), cmp_double);
    qsort(jct, nj, sizeof(*jct), cmp_double);
    st->mean_queue_s = mean(q, nq);
    st->mean_wait_s = nq ? wait_sum / (double)nq : 0.0;
    st->p50_queue_s = pct(q, nq, 0.50);
    st->p95_queue_s = pct(q, nq, 0.95);
    st->p99_queue_s = pct(q, nq, 0.99);
    st->mean_jct_s = mean(jct, nj);
    for (uint32_t k = 0; k < st->n_prio; k++) {
        st->prio_mean_queue_s[k] = prio_sum[k] / (double)st->prio_jobs[k];
        st->prio_mean_wait_s[k] = prio_wait[k] / (double)st->prio_jobs[k];
    }
    st->p95_jct_s = pct(jct, nj, 0.95);
    st->makespan_s = (double)(t_end - t0) / 1000.0;
    double cap = (double)in->cluster->total_gpus * st->makespan_s;
    st->gpu_utilization = cap > 0 ? busy_gpu_s / cap : 0.0;
    if (st->multinode_gangs)
        st->mean_racks_per_multinode_gang /= (double)st->multinode_gangs;
    /* the mean stranded share while a whole-node gang waits, and how much of the time one
     * waits (their product is the time average over the makespan) */
    st->fragmentation = frag_wait > 0 ? frag_weighted / frag_wait : 0.0;
    st->whole_node_wait_share = frag_time > 0 ? frag_wait / frag_time : 0.0;
    st->mean_recovery_s = st->recoveries ? st->recovery_sum_s / (double)st->recoveries : 0.0;
    for (uint32_t k = 0; k < in->n_queues; k++) {
        struct sim_queue_stats *ps = &st->per_queue[k];
        size_t n = 0;
        ps->name = in->queues[k].name;
        for (uint32_t j = 0; j < in->n_jobs; j++) {
            if (in->jobs[j].gang.queue != k)
                continue;
            ps->jobs++;
            if (jst(r, j) != ENG_JOB_RUNNING && jst(r, j) != ENG_JOB_FINISHED)
                continue;
            qq[n++] = (double)(r->start_ms[j] - in->jobs[j].gang.submit_ms) / 1000.0;
            ps->gpu_hours += (double)in->jobs[j].gang.gpus * (double)r->busy_ms[j] / 3.6e6;
        }
        qsort(qq, n, sizeof(*qq), cmp_double);
        ps->mean_queue_s = mean(qq, n);
        if (ps->multinode_jobs)
            ps->multinode_mean_queue_s /= ps->multinode_jobs;
        st->reclaim_wait_s += ps->reclaim_wait_s;
        ps->p95_queue_s = pct(qq, n, 0.95);
    }
    free(q), free(jct), free(qq);
    return 0;
}

/* ---- persistence (--db) ------------------------------------------------------------------ */

#define DB_BATCH_INSTANTS 4096 /* instants per store transaction by default (--db-batch) */
/*
 * One store transaction per batch of simulated instants (--db-batch), written after the
 * cycles of the batch's last instant:
 *   - the KPI tables of the store: jobs (store_job_upsert), the bind journal and placements
 *     (an intent and its completion for every start, a release for every finish or eviction),
 *     the usage ledger per queue and flavor, preemption records, fair-share history and the
 *     decision log (verdicts of the instant);
 *   - meta rows that make the run resumable exactly: "j:<id>" per job that changed (its whole
 *     simulation state and placement), "n:<node>" per node whose release time changed, and
 *     "sim:loop", "sim:stats", "sim:queues", "sim:holds" for the loop and the accumulators.
 * A crash loses at most the batch in progress; --resume reloads the last committed instant and
 * continues from the next one: the simulation is deterministic, so every job ends exactly as in
 * an uninterrupted run.
 */

static char *fmt_job(const struct run *r, uint32_t j, char *buf, size_t n)
{
    const struct gang *g = &r->in->jobs[j].gang;
    size_t at = (size_t)snprintf(
        buf, n, "%u %lld %lld %lld %lld %lld %lld %u %u %u %lld %u %u %lld %u", jst(r, j),
        (long long)r->start_ms[j], (long long)r->end_ms[j], (long long)r->remaining_ms[j],
        (long long)r->run_start_ms[j], (long long)r->overhead_ms[j], (long long)r->busy_ms[j],
        r->gen[j], r->n_evicted[j], r->evicting[j], (long long)r->evict_at[j], r->evict_kind[j],
        r->job_flavor[j], (long long)r->eta_first[j], r->assign[j] ? g->n_pods : 0);
    for (uint32_t k = 0; r->assign[j] && k < g->n_pods && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, " %u:%u", r->assign[j][k].node,
                               r->assign[j][k].gpu_mask);
    return buf;
}

/* Jobs per group of store writes: their "j:<id>" meta rows and jobs rows go to the store in one
 * call each (it writes several rows per statement, far cheaper than a call per row). */
#define DB_JOB_GROUP 128

struct db_group {
    uint32_t n;
    struct store_kv kv[DB_JOB_GROUP];
    struct store_job sj[DB_JOB_GROUP];
    char key[DB_JOB_GROUP][16];
    char val[DB_JOB_GROUP][64 + 24 * 64];
};

/* Job j into the group (its meta row and jobs row, written by db_group_flush), and its KPI rows
 * of the bind journal and placements at once: placements follow the run (release when the store
 * holds some, then a fresh intent and bind when it runs). */
static int db_job(struct run *r, uint32_t j, int64_t now, struct db_group *gr,
                  struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_job *job = &r->in->jobs[j];
    const struct gang *g = &job->gang;
    if (g->n_pods > 64)
        return sched_fail(eb, SCHED_ERANGE, "job %s: more than 64 pods cannot be persisted",
                          job->id);
    uint32_t at = gr->n++;
    snprintf(gr->key[at], sizeof(gr->key[at]), "j:%u", j);
    gr->kv[at] = (struct store_kv){gr->key[at], fmt_job(r, j, gr->val[at], sizeof(gr->val[at]))};
    int rc = 0;
    if (r->db_placed[j]) /* a no-op otherwise: skipped */
        rc = store_placement_release(db, job->id, NULL, eb);
    r->db_placed[j] = 0;
    if (rc == 0 && jst(r, j) == ENG_JOB_RUNNING) {
        struct store_pod pods[64];
        char names[64][24];
        for (uint32_t k = 0; k < g->n_pods; k++) {
            snprintf(names[k], sizeof(names[k]), "pod-%u", k);
            pods[k] = (struct store_pod){.index = k,
                                         .name = names[k],
                                         .node = r->in->cluster->nodes[r->assign[j][k].node].name,
                                         .gpu_mask = r->assign[j][k].gpu_mask};
        }
        rc = store_journal_intent(db, job->id, (int64_t)r->st->cycles, now, pods, g->n_pods, eb);
        if (rc == 0)
            rc = store_journal_done(db, job->id, STORE_ALL_PODS, STORE_BIND_BOUND, now, NULL, eb);
        r->db_placed[j] = 1;
    }
    enum store_job_state state = jst(r, j) == ENG_JOB_RUNNING    ? STORE_JOB_RUNNING
                                 : jst(r, j) == ENG_JOB_FINISHED ? STORE_JOB_FINISHED
                                 : jst(r, j) == ENG_JOB_FAILED   ? STORE_JOB_FAILED
                                                                 : STORE_JOB_PENDING;
    bool started =
        jst(r, j) == ENG_JOB_RUNNING || jst(r, j) == ENG_JOB_FINISHED || r->n_evicted[j] > 0;
    gr->sj[at] = (struct store_job){
        .gang = job->id,
        .gang_id = j,
        .queue = r->in->queues[g->queue].name,
        .flavor = r->in->config->flavors[r->job_flavor[j]].name,
        .gpus = g->gpus,
        .state = state,
        .submit_ms = g->submit_ms,
        .admit_ms = started ? r->start_ms[j] : STORE_NO_TIME,
        .start_ms = started ? r->start_ms[j] : STORE_NO_TIME,
        .finish_ms = jst(r, j) == ENG_JOB_FINISHED ? r->end_ms[j] : STORE_NO_TIME,
        .preemptions = r->n_evicted[j],
    };
    return rc;
}

static int db_group_flush(struct run *r, struct db_group *gr, struct sched_errbuf *eb)
{
    int rc = store_meta_put_many(r->opt->db, gr->kv, gr->n, eb);
    if (rc == 0)
        rc = store_job_upsert_many(r->opt->db, gr->sj, gr->n, eb);
    gr->n = 0;
    return rc;
}

/* The jobs that changed during the batch, a group at a time. */
static int db_jobs(struct run *r, int64_t now, struct sched_errbuf *eb)
{
    struct db_group *gr = malloc(sizeof(*gr));
    if (!gr)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    gr->n = 0;
    int rc = 0;
    for (uint32_t k = 0; rc == 0 && k < r->n_dirty; k++) {
        rc = db_job(r, r->dirty_list[k], now, gr, eb);
        if (rc == 0 && (gr->n == DB_JOB_GROUP || k + 1 == r->n_dirty))
            rc = db_group_flush(r, gr, eb);
    }
    free(gr);
    return rc;
}

static int db_put_doubles(struct store *db, const char *key, const double *v, uint32_t n,
                          struct sched_errbuf *eb)
{
    char *buf = malloc((size_t)n * 28 + 2);
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    size_t at = 0;
    buf[0] = 0;
    for (uint32_t k = 0; k < n; k++)
        at += (size_t)sprintf(buf + at, k ? " %.17g" : "%.17g", v[k]);
    int rc = store_meta_put(db, key, buf, eb);
    free(buf);
    return rc;
}

/* Everything the batch changed, then the commit; `reopen` begins the next batch's transaction
 * (the cycles' decisions and preemption records go into it as they happen). */
static int db_commit_instant(struct run *r, int64_t now, bool reopen, struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    int rc = store_in_txn(db) ? 0 : store_begin(db, eb);
    if (rc == 0)
        rc = db_jobs(r, now, eb);
    for (uint32_t i = 0; rc == 0 && i < in->cluster->n_nodes; i++)
        if (r->node_dirty[i]) {
            char key[32], val[32];
            snprintf(key, sizeof(key), "n:%u", i);
            snprintf(val, sizeof(val), "%lld", (long long)r->bounded_max[i]);
            rc = store_meta_put(db, key, val, eb);
        }
    for (uint32_t q = 0; rc == 0 && q < in->n_queues; q++) {
        for (uint32_t f = 0; rc == 0 && f < r->n_flavors; f++)
            rc = store_ledger_set(db, in->queues[q].name, in->config->flavors[f].name,
                                  device_resource(), usage_at(r, q, f)[RES_GPU], eb);
        if (rc == 0)
            rc = store_history_put(db, in->queues[q].name, r->hist[q], now, eb);
    }
    if (rc == 0) {
        char loop[512];
        snprintf(loop, sizeof(loop), "%u %lld %lld %lld %.17g %.17g %.17g %u %llu %llu %.17g",
                 r->next_sub, (long long)r->t0, (long long)r->t_end, (long long)r->prev_t,
                 r->frag_w, r->frag_t, r->frag_now, r->whole_waiting,
                 (unsigned long long)r->last_reservation, (unsigned long long)r->events_done,
                 r->frag_wait);
        rc = store_meta_put(db, "sim:loop", loop, eb);
    }
    if (rc == 0) {
        double v[] = {(double)st->tp_splits,
                      st->mean_racks_per_multinode_gang,
                      (double)st->multinode_gangs,
                      (double)st->preemptions,
                      (double)st->preempted_gangs,
                      st->gpu_hours_lost_to_preemption,
                      (double)st->checkpoint_requests,
                      (double)st->quota_violations,
                      (double)st->backfilled,
                      (double)st->reservations,
                      (double)st->cycles};
        rc = db_put_doubles(db, "sim:stats", v, sizeof(v) / sizeof(v[0]), eb);
    }
    if (rc == 0) {
        uint32_t nq = in->n_queues, nv = 7 * nq;
        double *v = malloc((nv + 1) * sizeof(*v));
        if (!v)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        for (uint32_t q = 0; q < nq; q++) {
            const struct sim_queue_stats *ps = &st->per_queue[q];
            double *x = v + 7 * q;
            x[0] = ps->max_usage_gpus, x[1] = ps->borrowed_gpu_hours, x[2] = ps->lent_gpu_hours;
            x[3] = ps->reclaim_wait_s, x[4] = r->hist[q], x[5] = r->share[q];
            x[6] = r->reclaim_wait[q];
        }
        rc = db_put_doubles(db, "sim:queues", v, nv, eb);
        free(v);
    }
    if (rc == 0)
        rc = hl_put(db, "sim:holds", r->eng, ENG_HOLDS, eb);
    if (rc == 0)
        rc = hl_put(db, "sim:hints", r->eng, ENG_HINTS, eb);
    if (rc == 0)
        rc = store_commit(db, eb);
    else
        store_rollback(db);
    if (rc == 0 && reopen)
        rc = store_begin(db, eb);
    for (uint32_t k = 0; k < r->n_dirty; k++)
        r->dirty[r->dirty_list[k]] = 0;
    r->n_dirty = 0;
    memset(r->node_dirty, 0, in->cluster->n_nodes);
    return rc;
}

#define ETA_LOG_SLACK_MS (600 * 1000) /* an expected start moving less is not logged again */

/* FNV-1a over a verdict's fields (everything sched_verdict_format prints, besides the static
 * cluster and config): whether its text may have changed since the last row, without
 * formatting it. Never 0 (0 = unknown, after a resume). */
static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
    /* a word (4 bytes) per step: every pending gang's verdict is hashed every cycle */
    const unsigned char *c = p;
    for (; n >= 4; n -= 4, c += 4) {
        uint32_t w;
        memcpy(&w, c, 4);
        h = (h ^ w) * 16777619u;
    }
    for (; n; n--, c++)
        h = (h ^ *c) * 16777619u;
    return h;
}

static uint32_t verdict_hash(const struct sched_verdict *v)
{
    uint32_t h = 2166136261u;
    int64_t f[] = {v->why,
                   v->short_res,
                   v->need,
                   v->best_free,
                   v->n_nodes,
                   v->near_level,
                   v->near_domain,
                   (int64_t)v->near_pods,
                   v->quota_res,
                   v->quota_flavor,
                   v->quota_need,
                   v->quota_nominal,
                   v->quota_used,
                   v->quota_available,
                   v->quota_potential,
                   v->blocked_by ? (int64_t)v->blocked_by->id : -1};
    h = fnv(h, f, sizeof(f));
    h = fnv(h, v->filtered, sizeof(v->filtered));
    return h ? h : 1;
}

/* The decision log (one row per verdict: gangs examined and not started; the store keeps a
 * row per change of why, with the latest text) and the preemption records of one cycle. */
static int db_cycle_records(struct run *r, const struct sched_result *res, int64_t now,
                            struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    int rc = 0;
    for (uint32_t v = 0; rc == 0 && v < res->n_verdicts; v++) {
        uint32_t j = res->verdicts[v].gang->id;
        uint8_t why = (uint8_t)(res->verdicts[v].why + 1);
        char note[64];
        struct store_decision d = {.cycle = (int64_t)r->st->cycles,
                                   .ts_ms = now,
                                   .gang = in->jobs[res->verdicts[v].gang->id].id,
                                   .why = (int)res->verdicts[v].why};
        eta_for_log(res, res->verdicts[v].gang, now, &d.has_eta, &d.eta_ms, note, sizeof(note));
        d.eta = note[0] ? note : NULL;
        /* the log records changes of reason (and of its figures) and of the expected start (by
         * more than 10 minutes and a quarter of the wait it announced), not every repeat */
        int64_t at = d.has_eta && !d.eta ? d.eta_ms : INT64_MIN, last = r->last_eta[j];
        int64_t slack = last != INT64_MIN && last - now > 4 * ETA_LOG_SLACK_MS ? (last - now) / 4
                                                                               : ETA_LOG_SLACK_MS;
        bool moved =
            at != INT64_MIN && (last == INT64_MIN || at > last + slack || at < last - slack);
        uint32_t h = verdict_hash(&res->verdicts[v]);
        if (r->last_why[j] == why && r->last_reason[j] == h && !moved)
            continue;
        r->last_why[j] = why;
        r->last_reason[j] = h;
        r->last_eta[j] = at;
        char reason[512];
        sched_verdict_format(&res->verdicts[v], in->cluster, in->config, reason, sizeof(reason));
        d.reason = reason;
        rc = store_decision_add(db, &d, eb);
    }
    for (uint32_t e = 0; rc == 0 && e < res->n_evictions; e++) {
        const struct sched_eviction *ev = &res->evictions[e];
        struct store_preemption p = {.cycle = (int64_t)r->st->cycles,
                                     .ts_ms = now,
                                     .victim = in->jobs[ev->victim->gang->id].id,
                                     .preemptor = in->jobs[ev->preemptor->id].id,
                                     .gpus = ev->victim->gang->gpus,
                                     .lost_work_gpu_s = ev->lost_gpu_s,
                                     .cost = ev->cost};
        rc = store_preemption_add(db, &p, eb);
    }
    return rc;
}

/* Reads "%.17g" numbers from a meta row into v (at most n). */
static int db_get_doubles(struct store *db, const char *key, double *v, uint32_t n,
                          struct sched_errbuf *eb)
{
    const char *text;
    int rc = store_meta_get(db, key, &text, eb);
    if (rc != 0)
        return rc;
    char *end;
    for (uint32_t k = 0; k < n; k++) {
        v[k] = strtod(text, &end);
        if (end == text)
            return sched_fail(eb, SCHED_EINVAL, "database: meta %s: expected %u numbers", key, n);
        text = end;
    }
    return 0;
}

/* Recovery of the store itself: intents still open belong to binds that never completed (the
 * simulator binds in the same transaction, so there are none unless the file was written by
 * something else): they are rolled back. */
static int rollback_intent(void *ctx, const struct store_intent *in)
{
    struct store *db = ctx;
    LOG_WARN("store", "gang %s: %u bind intent(s) from cycle %lld never completed: rolled back",
             in->gang, in->n_pods, (long long)in->cycle);
    return store_journal_done(db, in->gang, STORE_ALL_PODS, STORE_BIND_ROLLED_BACK, in->intent_ms,
                              NULL, NULL);
}

/* The ledger must equal what the running gangs hold; differences are corrected and logged. */
static int db_reconcile(struct run *r, struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    int rc = store_journal_pending(db, rollback_intent, db, eb);
    uint32_t n = in->n_queues * r->n_flavors, n_diff = 0;
    struct store_ledger_row *rows = calloc(n + 1, sizeof(*rows));
    if (!rows)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t q = 0; q < in->n_queues; q++)
        for (uint32_t f = 0; f < r->n_flavors; f++)
            rows[q * r->n_flavors + f] =
                (struct store_ledger_row){.queue = in->queues[q].name,
                                          .flavor = in->config->flavors[f].name,
                                          .resource = device_resource(),
                                          .amount = usage_at(r, q, f)[RES_GPU]};
    if (rc == 0)
        rc = store_ledger_reconcile(db, rows, n, &n_diff, eb);
    free(rows);
    if (rc == 0 && n_diff > 0)
        LOG_WARN("store", "ledger differed from the running gangs in %u row(s): corrected", n_diff);
    return rc;
}

/* Rebuilds the run from the last committed instant (see the comment above). */
struct job_key {
    const char *id;
    uint32_t j;
};

static int cmp_job_key(const void *a, const void *b)
{
    return strcmp(((const struct job_key *)a)->id, ((const struct job_key *)b)->id);
}

struct why_ctx {
    struct run *r;
    const struct job_key *keys;
};

static int restore_why(void *ctx, const struct store_decision *d)
{
    struct why_ctx *w = ctx;
    struct job_key k = {.id = d->gang};
    const struct job_key *hit = bsearch(&k, w->keys, w->r->in->n_jobs, sizeof(k), cmp_job_key);
    if (hit && w->r->last_why[hit->j] == 0 && d->why >= 0 && d->why < 255) {
        w->r->last_why[hit->j] = (uint8_t)(d->why + 1); /* newest first: the first row wins */
        w->r->last_eta[hit->j] = d->has_eta && !d->eta ? d->eta_ms : INT64_MIN;
        w->r->last_reason[hit->j] = 0; /* unknown: the next verdict is written, the store keeps
                                          the row when its text is the same */
    }
    return 0;
}

/* The last reason logged per job, from the decision log itself, so that a resumed run logs
 * the same changes of reason as an uninterrupted one (a job whose newest row the retention
 * settings pruned is logged again at its next verdict). */
static int db_restore_last_why(struct run *r, struct sched_errbuf *eb)
{
    struct job_key *keys = malloc((r->in->n_jobs + 1) * sizeof(*keys));
    if (!keys)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t j = 0; j < r->in->n_jobs; j++)
        keys[j] = (struct job_key){.id = r->in->jobs[j].id, .j = j};
    qsort(keys, r->in->n_jobs, sizeof(*keys), cmp_job_key);
    struct why_ctx w = {.r = r, .keys = keys};
    int rc = store_decision_list(r->opt->db, NULL, 0, restore_why, &w, eb);
    free(keys);
    return rc;
}

static int db_resume(struct run *r, struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    const char *text;
    int rc = store_meta_get(db, "sim:loop", &text, eb);
    if (rc == SCHED_ENOENT)
        return 0; /* it crashed before its first commit: start from the beginning */
    if (rc != 0)
        return rc;
    unsigned next_sub, whole;
    long long t0, t_end, prev_t;
    unsigned long long last_res, events;
    if (sscanf(text, "%u %lld %lld %lld %lg %lg %lg %u %llu %llu %lg", &next_sub, &t0, &t_end,
               &prev_t, &r->frag_w, &r->frag_t, &r->frag_now, &whole, &last_res, &events,
               &r->frag_wait) != 11 ||
        next_sub > in->n_jobs)
        return sched_fail(eb, SCHED_EINVAL, "database: meta sim:loop is malformed");
    r->next_sub = next_sub, r->t0 = t0, r->t_end = t_end, r->prev_t = prev_t;
    r->whole_waiting = whole != 0, r->last_reservation = last_res, r->events_done = events;
    double v[11];
    if ((rc = db_get_doubles(db, "sim:stats", v, 11, eb)) != 0)
        return rc;
    st->tp_splits = (uint64_t)v[0], st->mean_racks_per_multinode_gang = v[1];
    st->multinode_gangs = (uint64_t)v[2], st->preemptions = (uint64_t)v[3];
    st->preempted_gangs = (uint64_t)v[4], st->gpu_hours_lost_to_preemption = v[5];
    st->checkpoint_requests = (uint64_t)v[6], st->quota_violations = (uint64_t)v[7];
    st->backfilled = (uint64_t)v[8], st->reservations = (uint64_t)v[9];
    st->cycles = (uint64_t)v[10];
    double *qv = malloc((7 * in->n_queues + 1) * sizeof(*qv));
    if (!qv)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    rc = db_get_doubles(db, "sim:queues", qv, 7 * in->n_queues, eb);
    for (uint32_t q = 0; rc == 0 && q < in->n_queues; q++) {
        struct sim_queue_stats *ps = &st->per_queue[q];
        const double *x = qv + 7 * q;
        ps->max_usage_gpus = x[0], ps->borrowed_gpu_hours = x[1], ps->lent_gpu_hours = x[2];
        ps->reclaim_wait_s = x[3], r->hist[q] = x[4], r->share[q] = x[5];
        r->reclaim_wait[q] = x[6] != 0;
    }
    free(qv);
    if (rc != 0)
        return rc;
    /* nodes' declared release times */
    for (uint32_t i = 0; i < in->cluster->n_nodes; i++) {
        char key[32];
        snprintf(key, sizeof(key), "n:%u", i);
        rc = store_meta_get(db, key, &text, eb);
        if (rc == SCHED_ENOENT)
            continue;
        if (rc != 0)
            return rc;
        r->bounded_max[i] = strtoll(text, NULL, 10);
    }
    /* jobs: the ones never written are still in the future (or never started pending) */
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        char key[32];
        snprintf(key, sizeof(key), "j:%u", j);
        rc = store_meta_get(db, key, &text, eb);
        if (rc == SCHED_ENOENT)
            continue;
        if (rc != 0)
            return rc;
        const struct gang *g = &in->jobs[j].gang;
        unsigned status, gen, nev, evicting, ekind, flavor, npods;
        long long start, end, rem, rstart, over, busy, eat, eta;
        int off = 0;
        if (sscanf(text, "%u %lld %lld %lld %lld %lld %lld %u %u %u %lld %u %u %lld %u%n", &status,
                   &start, &end, &rem, &rstart, &over, &busy, &gen, &nev, &evicting, &eat, &ekind,
                   &flavor, &eta, &npods, &off) != 15 ||
            status > ENG_JOB_FAILED || flavor >= r->n_flavors || (npods != 0 && npods != g->n_pods))
            return sched_fail(eb, SCHED_EINVAL, "database: meta %s is malformed", key);
        eng_job_restore(r->eng, j, (enum eng_state)status, 0);
        r->start_ms[j] = start, r->end_ms[j] = end;
        r->remaining_ms[j] = rem, r->run_start_ms[j] = rstart, r->overhead_ms[j] = over;
        r->busy_ms[j] = busy, r->gen[j] = gen, r->n_evicted[j] = nev;
        r->evicting[j] = (uint8_t)evicting, r->evict_at[j] = eat, r->evict_kind[j] = (uint8_t)ekind;
        r->job_flavor[j] = flavor, r->eta_first[j] = eta;
        r->db_placed[j] = status == ENG_JOB_RUNNING; /* as db_job() left the store */
        if (status == ENG_JOB_PENDING) {
            if (queue_list_insert(&r->queues[g->queue], g) != 0)
                return sched_fail(eb, SCHED_ENOMEM, "out of memory");
            r->n_pending++;
            if (whole_node(r, g))
                r->n_pending_whole++;
        }
        if (npods == 0)
            continue;
        struct sched_assign *a = malloc((g->n_pods + 1) * sizeof(*a));
        if (!a)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        const char *p = text + off;
        for (uint32_t k = 0; k < g->n_pods; k++) {
            unsigned node, mask;
            int used = 0;
            if (sscanf(p, " %u:%u%n", &node, &mask, &used) != 2 || node >= in->cluster->n_nodes) {
                free(a);
                return sched_fail(eb, SCHED_EINVAL, "database: meta %s: bad placement", key);
            }
            a[k] = (struct sched_assign){.node = node, .gpu_mask = mask};
            p += used;
        }
        r->assign[j] = a;
        if (status != ENG_JOB_RUNNING)
            continue;
        occupy(r, j, a, -1); /* release times come from the saved n:<node> rows */
        r->runpos[j] = r->n_run;
        r->runlist[r->n_run++] = j;
        heap_push(r, rstart + over + rem, j, FIN_FINISH);
        if (evicting)
            heap_push(r, eat, j, (enum fin_kind)ekind);
    }
    for (uint32_t i = 0; i < in->cluster->n_nodes; i++)
        r->state[i].release_ms = r->unbounded[i] > 0 ? INT64_MAX : r->bounded_max[i];
    /* preemptor holds (always written) and reservation hints */
    uint32_t nn = in->cluster->n_nodes;
    if ((rc = hl_get(db, "sim:holds", true, r->eng, ENG_HOLDS, in->n_jobs, nn, eb)) != 0 ||
        (rc = hl_get(db, "sim:hints", false, r->eng, ENG_HINTS, in->n_jobs, nn, eb)) != 0)
        return rc;
    if ((rc = db_restore_last_why(r, eb)) != 0)
        return rc;
    return db_reconcile(r, eb);
}

/* ---- estimates ---------------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Learns the run times of the gangs that finished in this instant, in job id order. */
static void learn(struct run *r)
{
    qsort(r->fin_now, r->n_fin_now, sizeof(*r->fin_now), cmp_u32);
    for (uint32_t k = 0; k < r->n_fin_now; k++) {
        const struct gang *g = &r->in->jobs[r->fin_now[k]].gang;
        est_observe(&r->est, g->queue, g->gpus, r->busy_ms[r->fin_now[k]]);
    }
    r->n_fin_now = 0;
}

static const int64_t *sort_end_ms; /* qsort context of cmp_by_end (single-threaded) */

static int cmp_by_end(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int64_t ex = sort_end_ms[x], ey = sort_end_ms[y];
    return ex != ey ? (ex > ey) - (ex < ey) : (x > y) - (x < y);
}

/* After a resume: what an uninterrupted run had learned, in the same order. */
static void relearn(struct run *r)
{
    r->n_fin_now = 0;
    for (uint32_t j = 0; j < r->in->n_jobs; j++)
        if (jst(r, j) == ENG_JOB_FINISHED)
            r->fin_now[r->n_fin_now++] = j;
    sort_end_ms = r->end_ms;
    qsort(r->fin_now, r->n_fin_now, sizeof(*r->fin_now), cmp_by_end);
    for (uint32_t k = 0; k < r->n_fin_now; k++) {
        const struct gang *g = &r->in->jobs[r->fin_now[k]].gang;
        est_observe(&r->est, g->queue, g->gpus, r->busy_ms[r->fin_now[k]]);
    }
    r->n_fin_now = 0;
}

/* A fixed draw in (0, 1) per job (splitmix64 of its index): the quantile of its run time the
 * start planner uses. One draw per job, not the median for all: a waiting gang starts at the
 * k-th release among many running gangs, and the k-th of the medians is much later than the
 * k-th of the run times themselves (the first of many releases comes early); drawn quantiles
 * give the planner releases spread as the run times are. */
static double draw(uint32_t j)
{
    uint64_t z = ((uint64_t)j + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

/* Before a cycle: the run time of every pending gang (safe, and drawn for the start planner),
 * each node's expected release (the latest safe end of what runs on it) and each running pod's
 * drawn end for the start planner. */
static void estimates(struct run *r, int64_t now)
{
    const struct sim_input *in = r->in;
    for (uint32_t q = 0; q < in->n_queues; q++)
        for (uint32_t k = 0; k < r->queues[q].n; k++) {
            const struct gang *g = r->queues[q].items[k];
            r->rt_est[g->id] = est_runtime(&r->est, g, EST_QUANTILE);
            r->rt_typ[g->id] = est_runtime(&r->est, g, draw(g->id));
        }
    for (uint32_t i = 0; i < in->cluster->n_nodes; i++)
        r->state[i].release_ms = r->rel_typ[i] = 0;
    r->n_rels = 0;
    for (uint32_t k = 0; k < r->n_run; k++) {
        uint32_t j = r->runlist[k];
        const struct gang *g = &in->jobs[j].gang;
        int64_t from = r->run_start_ms[j] + r->overhead_ms[j];
        int64_t end = est_end(&r->est, g, from, now, EST_QUANTILE);
        int64_t typ = est_end(&r->est, g, from, now, draw(j));
        for (uint32_t x = 0; x < g->n_pods; x++) {
            uint32_t i = r->assign[j][x].node;
            if (r->n_rels == r->cap_rels) {
                uint32_t cap = r->cap_rels ? 2 * r->cap_rels : 1024;
                struct sched_release *nr = realloc(r->rels, cap * sizeof(*nr));
                if (!nr) {
                    r->oom = true;
                    return;
                }
                r->rels = nr;
                r->cap_rels = cap;
            }
            r->rels[r->n_rels++] = (struct sched_release){
                .node = i,
                .gpus = (uint32_t)__builtin_popcount(r->assign[j][x].gpu_mask),
                .t_ms = typ};
            if (end > r->state[i].release_ms)
                r->state[i].release_ms = end;
            if (typ > r->rel_typ[i])
                r->rel_typ[i] = typ;
        }
    }
}

/* The first expected start the planner gave each waiting gang (for the accuracy KPIs). */
static void note_etas(struct run *r, const struct sched_result *res)
{
    for (uint32_t k = 0; k < res->n_etas; k++) {
        uint32_t j = res->etas[k].gang->id;
        if (r->eta_first[j] == INT64_MIN && res->etas[k].kind == SCHED_ETA_AT) {
            r->eta_first[j] = res->etas[k].start_ms;
            mark_dirty(r, j); /* persisted in its "j:<id>" row, so --resume keeps the KPI */
        }
    }
}

/* The estimate and start-estimate arrays of a run (nj jobs, nn nodes); false on out of memory
 * (estimates_free() releases whatever was allocated). */
static bool estimates_alloc(struct run *r, size_t nj, size_t nn)
{
    r->rt_est = calloc(nj, sizeof(*r->rt_est));
    r->rt_typ = calloc(nj, sizeof(*r->rt_typ));
    r->rel_typ = calloc(nn, sizeof(*r->rel_typ));
    r->fin_now = calloc(nj, sizeof(*r->fin_now));
    r->eta_first = malloc(nj * sizeof(*r->eta_first));
    r->last_eta = r->opt->db ? malloc(nj * sizeof(*r->last_eta)) : NULL;
    for (size_t j = 0; r->eta_first && j < nj; j++)
        r->eta_first[j] = INT64_MIN;
    for (size_t j = 0; r->last_eta && j < nj; j++)
        r->last_eta[j] = INT64_MIN;
    return est_init(&r->est, r->in->n_queues) == 0 && r->rt_est && r->rt_typ && r->rel_typ &&
           r->fin_now && r->eta_first && (!r->opt->db || r->last_eta);
}

static void estimates_free(struct run *r)
{
    free(r->rt_est), free(r->rt_typ), free(r->rel_typ), free(r->rels), free(r->fin_now);
    free(r->eta_first), free(r->last_eta);
    est_free(&r->est);
}

/* ---- the loop ---------------------------------------------------------------------------- */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Integrates the quota metrics over [prev, now) from the state the last cycle left. */
static void quota_integrate(struct run *r, int64_t dt_ms)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    double h = (double)dt_ms / 3.6e6, borrowed = 0, idle = 0;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        double u = (double)queue_gpus(r, q), nom = st->per_queue[q].nominal_gpus;
        borrowed += u > nom ? u - nom : 0;
        idle += nom > u ? nom - u : 0;
    }
    for (uint32_t q = 0; q < in->n_queues; q++) {
        struct sim_queue_stats *ps = &st->per_queue[q];
        double u = (double)queue_gpus(r, q), nom = ps->nominal_gpus;
        ps->borrowed_gpu_hours += (u > nom ? u - nom : 0) * h;
        if (idle > 0) /* borrowed GPUs attributed to lenders in proportion to their idle quota */
            ps->lent_gpu_hours += borrowed * ((nom > u ? nom - u : 0) / idle) * h;
        if (r->reclaim_wait[q])
            ps->reclaim_wait_s += (double)dt_ms / 1000.0;
        r->hist[q] = queue_decay(r->hist[q], r->share[q], dt_ms, in->config->fair_half_life_ms);
    }
}

/* After a cycle: shares for the next interval, violations, reclaim waits. */
static int quota_observe(struct run *r)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    struct quota_tree qt;
    arena_reset(&r->qarena);
    if (quota_build(&qt, in->config, r->usage, &r->qarena) != 0)
        return SCHED_ENOMEM;
    bool violated = false, anyone_borrows = false;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        double u = (double)queue_gpus(r, q);
        r->share[q] = quota_share(&qt, q, 0, NULL);
        violated |= quota_violated(&qt, q);
        anyone_borrows |= u > st->per_queue[q].nominal_gpus;
        if (u > st->per_queue[q].max_usage_gpus)
            st->per_queue[q].max_usage_gpus = u;
    }
    st->quota_violations += violated;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        r->reclaim_wait[q] = false;
        if (!anyone_borrows || r->queues[q].n == 0)
            continue;
        const struct gang *g = r->queues[q].items[0];
        r->reclaim_wait[q] = (double)(queue_gpus(r, q) + g->gpus) <= st->per_queue[q].nominal_gpus;
    }
    return 0;
}

/* The running jobs as the core sees them. */
static void build_views(struct run *r, int64_t now)
{
    const struct sim_input *in = r->in;
    for (uint32_t k = 0; k < r->n_run; k++) {
        uint32_t j = r->runlist[k];
        const struct config_queue *cq = &in->config->queues[in->jobs[j].gang.queue];
        r->runv[k] = (struct sched_running){
            .gang = &in->jobs[j].gang,
            .pods = r->assign[j],
            .flavor = r->job_flavor[j],
            .start_ms = r->run_start_ms[j],
            .last_checkpoint_ms = last_checkpoint(r, j, now),
            .restart_cost_ms = in->jobs[j].restart_cost_ms,
            .min_runtime_ms = cq->preemption.min_runtime_ms,
            .evicting = r->evicting[j] != 0,
        };
    }
}

/* The engine's ids are the simulator's (job and node indices): the core's gang of job g. */
static const struct gang *core_gang(void *ctx, uint32_t g, bool *pending)
{
    const struct run *r = ctx;
    if (g >= r->in->n_jobs)
        return NULL;
    *pending = jst(r, g) == ENG_JOB_PENDING;
    return &r->in->jobs[g].gang;
}

/* Evictions decided by the core: at once, or after a checkpoint when the victim's queue asks
 * for one (checkpointGrace) and the job checkpoints at all. */
static int apply_evictions(struct run *r, const struct sched_result *res, int64_t now,
                           uint32_t *evicted)
{
    const struct sim_input *in = r->in;
    for (uint32_t e = 0; e < res->n_evictions; e++) {
        const struct sched_eviction *ev = &res->evictions[e];
        uint32_t j = ev->victim->gang->id;
        if (jst(r, j) != ENG_JOB_RUNNING || r->evicting[j])
            continue;
        int64_t grace = in->config->queues[in->jobs[j].gang.queue].preemption.checkpoint_grace_ms;
        char reason[160];
        snprintf(reason, sizeof(reason), "%s by %s",
                 ev->kind == SCHED_PREEMPT_RECLAIM      ? "reclaimed"
                 : ev->kind == SCHED_PREEMPT_FAIR_SHARE ? "fair-share preempted"
                                                        : "preempted",
                 in->jobs[ev->preemptor->id].id);
        if (grace > 0) {
            /* the handshake: a job that checkpoints answers after CKPT_WRITE_MS of writing and
             * goes having saved everything; one that does not answer within the grace is
             * evicted at its end and loses the work since its last checkpoint */
            bool answers = in->jobs[j].checkpoint_interval_ms > 0 && grace >= CKPT_WRITE_MS;
            r->evicting[j] = 1;
            r->evict_at[j] = now + (answers ? CKPT_WRITE_MS : grace);
            r->evict_kind[j] = answers ? FIN_EVICT : FIN_EVICT_LATE;
            touch(r, j);
            r->st->checkpoint_requests++;
            heap_push(r, now + (answers ? CKPT_WRITE_MS : grace), j,
                      answers ? FIN_EVICT : FIN_EVICT_LATE);
            if (r->opt->events) {
                ev_head(r, now, "checkpoint-request", j);
                fputs("}\n", r->opt->events);
            }
        } else {
            evict(r, j, now, reason, false);
            (*evicted)++;
        }
    }
    /* the preemptors hold what their victims free */
    return eng_cycle_holds(r->eng, res, NULL, now);
}

static int one_cycle(struct run *r, struct sched_queue_view *views, struct arena *arena,
                     int64_t now, uint32_t *evicted, struct sched_errbuf *eb)
{
    const struct sim_input *in = r->in;
    const struct cluster *c = in->cluster;
    for (uint32_t q = 0; q < in->n_queues; q++)
        views[q] = (struct sched_queue_view){.queue = &in->queues[q],
                                             .pending = r->queues[q].items,
                                             .n_pending = r->queues[q].n,
                                             .class_keys = r->queues[q].keys,
                                             .n_classes = r->queues[q].n_classes};
    if (r->pol->preempt)
        build_views(r, now);
    estimates(r, now);
    struct sched_snapshot snap = {.now_ms = now,
                                  .cluster = c,
                                  .state = r->state,
                                  .queues = views,
                                  .n_queues = in->n_queues,
                                  .policy = r->pol,
                                  .config = in->config,
                                  .usage = r->usage,
                                  .hist_share = r->hist,
                                  .running = r->pol->preempt ? r->runv : NULL,
                                  .n_running = r->pol->preempt ? r->n_run : 0,
                                  .runtime_est_ms = r->rt_est,
                                  .runtime_typ_ms = r->rt_typ,
                                  .release_typ_ms = r->rel_typ,
                                  .releases = r->rels,
                                  .n_releases = r->n_rels,
                                  .n_runtime_est = in->n_jobs,
                                  .plan_starts = true,
                                  /* verdicts serve only rejects unless explained or logged */
                                  .tried_verdicts_only = !r->opt->explain_job && !r->opt->db,
                                  .base = r->base};
    struct sched_result res;
    arena_reset(arena);
    struct eng_ids ids = {.ctx = r, .core_gang = core_gang};
    if (eng_holds_view(r->eng, now, &ids, arena, &snap) != 0 ||
        sched_cycle(&snap, arena, &res) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory in scheduling cycle");
    r->st->cycles++;
    r->st->reservations += res.n_reservations;
    note_etas(r, &res);
    /* this cycle's starvation reservations are the next cycle's hints */
    if (eng_cycle_hints(r->eng, &res, NULL) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (r->opt->events)
        log_reservations(r, &res, now);
    if (r->opt->explain_job)
        explain(r, &res, now);
    if (r->opt->db && db_cycle_records(r, &res, now, eb) != 0)
        return -1;
    /* evictions first: their victims' sched_running views point into this cycle's state */
    if (apply_evictions(r, &res, now, evicted) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t p = 0; p < res.n_placements; p++)
        if (start(r, &res.placements[p], now) != 0)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory starting a job");
    for (uint32_t v = 0; v < res.n_verdicts; v++)
        if ((res.verdicts[v].why == SCHED_WHY_NEVER ||
             res.verdicts[v].why == SCHED_WHY_QUOTA_NEVER) &&
            jst(r, res.verdicts[v].gang->id) == ENG_JOB_PENDING) {
            char buf[256];
            sched_verdict_format(&res.verdicts[v], c, in->config, buf, sizeof(buf));
            reject(r, res.verdicts[v].gang->id, now, buf);
        }
    return 0;
}

/* A crash on purpose (--stop-after-events): no cleanup, no flush, no commit. */
static void maybe_crash(const struct run *r)
{
    if (r->opt->stop_after > 0 && r->events_done >= r->opt->stop_after)
        _exit(75);
}

/* One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote, CR
 * or LF; as is otherwise. */
static void csv_field(FILE *f, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int write_jobs(const struct run *r, FILE *f)
{
    const struct sim_input *in = r->in;
    if (ftell(f) <= 0) /* one header, however many policies write */
        fprintf(f, "job_id,policy,queue,priority,submit_s,first_start_s,finish_s,evictions,"
                   "placement\n");
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        const char *state = jst(r, j) == ENG_JOB_FINISHED ? "" : "-";
        csv_field(f, in->jobs[j].id);
        fputc(',', f);
        csv_field(f, r->pol->name);
        fputc(',', f);
        csv_field(f, in->queues[in->jobs[j].gang.queue].name);
        fprintf(f, ",%d,%.3f,", in->jobs[j].gang.priority,
                (double)in->jobs[j].gang.submit_ms / 1000.0);
        if (jst(r, j) == ENG_JOB_FINISHED || jst(r, j) == ENG_JOB_RUNNING || r->n_evicted[j] > 0)
            fprintf(f, "%.3f,", (double)r->start_ms[j] / 1000.0);
        else
            fputs(",", f);
        if (jst(r, j) == ENG_JOB_FINISHED)
            fprintf(f, "%.3f,%u,", (double)r->end_ms[j] / 1000.0, r->n_evicted[j]);
        else
            fprintf(f, "%s,%u,", state, r->n_evicted[j]);
        char *place = NULL;
        size_t place_len = 0;
        FILE *pf = open_memstream(&place, &place_len);
        if (!pf)
            return SCHED_ENOMEM;
        for (uint32_t k = 0; r->assign[j] && k < in->jobs[j].gang.n_pods; k++)
            fprintf(pf, "%s%s:%x", k ? ";" : "", in->cluster->nodes[r->assign[j][k].node].name,
                    r->assign[j][k].gpu_mask);
        if (fclose(pf) != 0) {
            free(place);
            return SCHED_ENOMEM;
        }
        csv_field(f, place);
        free(place);
        fputc('\n', f);
    }
    return ferror(f) ? SCHED_EIO : 0;
}

static int run_loop(struct run *r, struct sched_errbuf *eb)
{
    const struct sim_input *in = r->in;
    struct arena arena;
    arena_init(&arena, 256 * 1024);
    struct sched_queue_view *views = calloc(in->n_queues + 1, sizeof(*views));
    if (!views)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    int rc = 0;
    r->t0 = in->n_jobs ? in->jobs[0].gang.submit_ms : 0;
    r->t_end = r->prev_t = r->t0;
    if (r->opt->db && r->opt->resume && (rc = db_resume(r, eb)) == 0)
        relearn(r); /* what the crashed run had learned from its finishes */
    if (rc != 0 ||
        (r->opt->db && ((rc = store_begin(r->opt->db, eb)) != 0 ||
                        (rc = store_config_apply(r->opt->db, in->config, NULL, 0, eb)) != 0))) {
        arena_fini(&arena);
        free(views);
        return rc;
    }
    if (r->fail)
        failures_init(r, r->t0);
    double last_progress = wall_s();
    uint64_t iter = 0, instants = 0; /* instants simulated by this process */
    for (;;) {
        int64_t t_sub = r->next_sub < in->n_jobs ? in->jobs[r->next_sub].gang.submit_ms : INT64_MAX;
        /* timed events of evicted runs are stale: they must not make an instant (a resumed
         * run does not have them) */
        while (r->n_heap && fin_stale(r, &r->heap[0]))
            heap_pop(r);
        int64_t t_fin = r->n_heap ? r->heap[0].t_ms : INT64_MAX;
        int64_t now = t_sub < t_fin ? t_sub : t_fin;
        if (now == INT64_MAX || !work_left(r))
            break; /* (node failures go on forever: the run ends with its last job) */
        instants++;
        /* fragmentation over [prev_t, now): the state set by the previous instant; the mean
         * runs over the time some whole-node gang waits (frag_wait), frag_t is the makespan */
        r->frag_w += r->whole_waiting ? r->frag_now * (double)(now - r->prev_t) : 0.0;
        r->frag_t += (double)(now - r->prev_t);
        r->frag_wait += r->whole_waiting ? (double)(now - r->prev_t) : 0.0;
        quota_integrate(r, now - r->prev_t);
        r->prev_t = now;
        while (r->n_heap && r->heap[0].t_ms == now) {
            struct fin f = heap_pop(r);
            if (fin_stale(r, &f))
                continue; /* the run it belonged to was evicted */
            if (f.kind >= FIN_TEARDOWN) {
                failure_event(r, &f, now);
            } else if (f.kind == FIN_FINISH) {
                finish(r, f.job, now);
                r->t_end = now;
            } else if (f.kind == FIN_EVICT) {
                evict(r, f.job, now, "preempted after a requested checkpoint", true);
            } else {
                evict(r, f.job, now, "preempted: no checkpoint within the grace", false);
            }
            maybe_crash(r);
        }
        learn(r);
        while (r->next_sub < in->n_jobs && in->jobs[r->next_sub].gang.submit_ms == now) {
            submit(r, r->next_sub++, now);
            maybe_crash(r);
        }
        /* a cycle; again at the same instant when it evicted (the preemptors start at once) */
        for (int again = 0; again < 3 && r->n_pending > 0 && rc == 0; again++) {
            uint32_t evicted = 0;
            rc = one_cycle(r, views, &arena, now, &evicted, eb);
            maybe_crash(r);
            if (evicted == 0)
                break;
        }
        if (rc == 0 && r->oom)
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
        if (rc != 0)
            break;
        if (quota_observe(r) != 0) {
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
            break;
        }
        r->whole_waiting = r->n_pending_whole > 0;
        r->frag_now = r->whole_waiting ? stranded_share(r) : 0.0;
        if ((rc = add_point(r, now, r->t0)) != 0) {
            sched_fail(eb, rc, "out of memory");
            break;
        }
        /* one transaction per batch of instants (a resume restarts after the last one) */
        if (r->opt->db &&
            ++r->uncommitted >= (r->opt->db_batch ? r->opt->db_batch : DB_BATCH_INSTANTS)) {
            r->uncommitted = 0;
            if ((rc = db_commit_instant(r, now, true, eb)) != 0)
                break;
        }
        if (r->opt->progress && (++iter & 1023) == 0 && wall_s() - last_progress > 0.5) {
            last_progress = wall_s();
            fprintf(stderr, "\r%-10s day %6.1f  submitted %u/%u  pending %u   ", r->pol->name,
                    (double)(now - r->t0) / 8.64e7, r->next_sub, in->n_jobs, r->n_pending);
        }
    }
    if (r->opt->progress)
        fprintf(stderr, "\r%-70s\r", "");
    arena_fini(&arena);
    free(views);
    /* --resume of a finished run changes nothing: no commit (commit_seq stays) */
    if (rc == 0 && r->opt->db && (instants > 0 || !r->opt->resume))
        rc = db_commit_instant(r, r->prev_t, false, eb);
    else if (r->opt->db && store_in_txn(r->opt->db))
        store_rollback(r->opt->db);
    if (rc == 0)
        rc = summarize(r, r->t0, r->t_end, r->frag_w, r->frag_t, r->frag_wait);
    if (rc == 0 && r->opt->jobs_out && write_jobs(r, r->opt->jobs_out) != 0)
        rc = sched_fail(eb, SCHED_EIO, "writing the per-job results failed");
    if (rc != 0 && !eb->msg[0])
        sched_fail(eb, rc, "out of memory");
    return rc;
}

int sim_run(const struct sim_input *in, const struct sched_policy *pol,
            const struct sim_options *opt, struct sim_stats *out, struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    out->policy = pol->name;
    size_t nj = in->n_jobs ? in->n_jobs : 1;
    struct run r = {.in = in, .pol = pol, .opt = opt, .st = out};
    r.state = calloc(in->cluster->n_nodes ? in->cluster->n_nodes : 1, sizeof(*r.state));
    r.base = place_base_new(in->cluster);
    r.start_ms = calloc(nj, sizeof(*r.start_ms));
    r.end_ms = calloc(nj, sizeof(*r.end_ms));
    r.assign = calloc(nj, sizeof(*r.assign));
    r.queues = calloc(in->n_queues + 1, sizeof(*r.queues));
    r.cap_heap = (uint32_t)nj + 16;
    r.heap = calloc(r.cap_heap, sizeof(*r.heap));
    r.n_flavors = in->config->n_flavors;
    size_t nq = in->n_queues + 1;
    r.usage = calloc(nq * r.n_flavors * RES_MAX, sizeof(*r.usage));
    r.job_flavor = calloc(nj, sizeof(*r.job_flavor));
    r.hist = calloc(nq, sizeof(*r.hist));
    r.share = calloc(nq, sizeof(*r.share));
    r.reclaim_wait = calloc(nq, sizeof(*r.reclaim_wait));
    out->per_queue = calloc(nq, sizeof(*out->per_queue));
    out->node_gpu_s = calloc(in->cluster->n_nodes + 1, sizeof(*out->node_gpu_s));
    size_t nn = in->cluster->n_nodes + 1;
    r.pods_on = calloc(nn, sizeof(*r.pods_on));
    r.unbounded = calloc(nn, sizeof(*r.unbounded));
    r.bounded_max = calloc(nn, sizeof(*r.bounded_max));
    r.remaining_ms = calloc(nj, sizeof(*r.remaining_ms));
    r.run_start_ms = calloc(nj, sizeof(*r.run_start_ms));
    r.overhead_ms = calloc(nj, sizeof(*r.overhead_ms));
    r.busy_ms = calloc(nj, sizeof(*r.busy_ms));
    r.gen = calloc(nj, sizeof(*r.gen));
    r.n_evicted = calloc(nj, sizeof(*r.n_evicted));
    r.evicting = calloc(nj, 1);
    r.runlist = calloc(nj, sizeof(*r.runlist));
    r.runpos = calloc(nj, sizeof(*r.runpos));
    r.runv = calloc(nj, sizeof(*r.runv));
    r.fail = opt->failures;
    if (r.fail) {
        r.broken = calloc(nj, 1);
        r.broken_start = calloc(nj, 1);
        r.lost_node = calloc(nj, sizeof(*r.lost_node));
        r.attempts = calloc(nj, sizeof(*r.attempts));
        r.fail_at = calloc(nj, sizeof(*r.fail_at));
        r.down_at = calloc(nn, sizeof(*r.down_at));
    }
    r.evict_at = calloc(nj, sizeof(*r.evict_at));
    struct eng_limits lim;
    eng_limits_default(&lim);
    if (r.fail) /* the failure flags (defaults: the engine's) */
        lim = (struct eng_limits){.strikes = r.fail->strikes,
                                  .strike_window_ms = r.fail->strike_window_ms,
                                  .quarantine_ms = r.fail->quarantine_ms,
                                  .hold_ms = lim.hold_ms,
                                  .backoff_ms = r.fail->backoff_ms};
    r.eng = eng_new(&lim);
    arena_init(&r.life_arena, 4096);
    if (r.eng && eng_reserve(r.eng, (uint32_t)nj, (uint32_t)nn) != 0) {
        eng_free(r.eng);
        r.eng = NULL;
    }
    bool est_ok = estimates_alloc(&r, nj, nn);
    r.evict_kind = calloc(nj, 1);
    if (opt->db) {
        r.dirty = calloc(nj, 1);
        r.dirty_list = calloc(nj, sizeof(*r.dirty_list));
        r.node_dirty = calloc(nn, 1);
        r.last_why = calloc(nj, 1);
        r.last_reason = calloc(nj, sizeof(*r.last_reason));
        r.db_placed = calloc(nj, 1);
    }
    out->n_queues = in->n_queues;
    arena_init(&r.qarena, 16 * 1024);
    int rc;
    if (!r.state || !r.base || !r.start_ms || !r.end_ms || !r.assign || !r.queues || !r.heap ||
        !r.usage || !r.job_flavor || !r.hist || !r.share || !r.reclaim_wait || !out->per_queue ||
        !r.pods_on || !r.unbounded || !r.bounded_max || !r.remaining_ms || !r.run_start_ms ||
        !r.overhead_ms || !r.busy_ms || !r.gen || !r.n_evicted || !r.evicting || !r.runlist ||
        !r.runpos || !r.runv || !est_ok || !r.eng ||
        (r.fail && (!r.broken || !r.broken_start || !r.lost_node || !r.attempts || !r.fail_at ||
                    !r.down_at)) ||
        (opt->db && (!r.dirty || !r.dirty_list || !r.node_dirty || !r.last_why || !r.last_reason ||
                     !r.db_placed))) {
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory for %u jobs", in->n_jobs);
    } else {
        for (uint32_t j = 0; j < in->n_jobs; j++)
            r.remaining_ms[j] = in->jobs[j].duration_ms;
        for (uint32_t q = 0; q < in->n_queues; q++) {
            const struct config_queue *cq = &in->config->queues[q];
            for (uint32_t f = 0; f < r.n_flavors; f++) {
                const struct config_quota *qu = config_quota_get(in->config, &cq->q, f, RES_GPU);
                if (qu)
                    out->per_queue[q].nominal_gpus += (double)qu->nominal;
            }
        }
        for (uint32_t q = 0; q < in->n_queues; q++)
            queue_list_init(&r.queues[q], pol->by_priority);
        for (uint32_t i = 0; i < in->cluster->n_nodes; i++)
            if (gpu_max_island(&in->cluster->nodes[i]) > r.max_island)
                r.max_island = gpu_max_island(&in->cluster->nodes[i]);
        LOG_INFO("sim", "policy %s: %u jobs on %u nodes", pol->name, in->n_jobs,
                 in->cluster->n_nodes);
        if (opt->events)
            ev_cluster(&r);
        rc = run_loop(&r, eb);
        if (opt->explain_job)
            explain_flush(&r);
    }
    if (rc == 0)
        LOG_INFO("sim", "policy %s: done, %llu cycles, %u started", pol->name,
                 (unsigned long long)out->cycles, out->started);
    for (uint32_t j = 0; r.assign && j < in->n_jobs; j++)
        free(r.assign[j]);
    for (uint32_t q = 0; r.queues && q < in->n_queues; q++)
        queue_list_fini(&r.queues[q]);
    place_base_free(r.base);
    free(r.state), free(r.start_ms), free(r.end_ms), free(r.assign);
    free(r.queues), free(r.heap);
    free(r.usage), free(r.job_flavor), free(r.hist), free(r.share), free(r.reclaim_wait);
    free(r.pods_on), free(r.unbounded), free(r.bounded_max);
    free(r.remaining_ms), free(r.run_start_ms), free(r.overhead_ms), free(r.gen), free(r.busy_ms);
    free(r.n_evicted), free(r.evicting), free(r.runlist), free(r.runpos), free(r.runv);
    free(r.evict_at), free(r.evict_kind), free(r.dirty), free(r.dirty_list), free(r.node_dirty);
    free(r.last_why);
    free(r.last_reason), free(r.db_placed);
    estimates_free(&r);
    free(r.broken), free(r.broken_start), free(r.lost_node), free(r.attempts);
    free(r.fail_at), free(r.down_at);
    arena_fini(&r.life_arena);
    eng_effects_free(&r.fx);
    eng_free(r.eng);
    arena_fini(&r.qarena);
    if (rc != 0)
        sim_stats_free(out);
    return rc;
}

void sim_stats_free(struct sim_stats *s)
{
    free(s->per_queue);
    free(s->series);
    free(s->queue_s);
    free(s->queue_of);
    free(s->queue_used);
    free(s->node_gpu_s);
    s->per_queue = NULL;
    s->series = NULL;
    s->queue_s = NULL;
    s->queue_of = NULL;
    s->queue_used = NULL;
    s->node_gpu_s = NULL;
}
