/* sched/sim/run.h: the state of one simulated run (struct run), shared by the simulator's own
 * files; private to sched/sim/ (no other module includes it).
 *
 * Files: sim.c (the loop, the transitions of jobs, the cycle), input.c (jobs from traces),
 * events.c (event log, --explain), failures.c (failure injection), persist.c (--db), stats.c
 * (KPIs, per-job CSV), estimates.c (run-time and start estimates). The rules between cycles
 * (job states, retry budget, teardown, strikes, quarantine, holds) are the engine's
 * (sched/engine/engine.h); struct run holds the engine, never a copy of its state.
 * Must not touch: the trace, the cluster and the config it is given (read-only).
 */
#ifndef SCHED_SIM_RUN_H
#define SCHED_SIM_RUN_H

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
#include "sched/sim/sim.h"
#include "store/store.h"

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
    FIN_OUTAGE,    /* a planned outage begins (its end is a FIN_NODE_UP) */
    FIN_REPAIR,    /* a randomly failed node is repaired */
    FIN_WAKE,      /* a cycle's wake_ms: time alone may change its decisions (job field unused) */
    FIN_JOIN_CKPT, /* an elastic job answers the checkpoint its waiting members asked for */
};

#define CKPT_WRITE_MS 30000 /* time a job takes to answer a checkpoint request */

/* A timed event of a running job; stale when its generation no longer matches the job's. */
struct fin {
    int64_t t_ms;
    uint32_t job;
    uint32_t gen;
    enum fin_kind kind;
};

/* An elastic job (sim_job.min_pods > 0; sim/elastic.c): the members it runs with and those
 * waiting to join it, each member named by its pod set in the trace's gang (a set index). */
struct sim_elastic {
    uint32_t job;
    uint8_t *live_set;    /* [n_pods of the job] the running members' sets, in pod order */
    uint8_t *live_flavor; /* [n_pods] the flavor each running member is charged to (members
                             that joined: their placement's) */
    uint32_t n_live;      /* = its gang's n_pods while it runs whole */
    uint8_t *grow_set;    /* [n_pods] the members evicted alone, waiting to join, in set order */
    uint32_t n_grow;
    struct gang live; /* the running gang: id = the job's, min_member = min_pods */
    struct gang grow; /* the waiting members: id = n_jobs + slot, every one together */
    struct podset live_sets[SIM_JOB_SETS], grow_sets[SIM_JOB_SETS]; /* live's and grow's sets */
    bool grow_queued; /* grow is in its queue (and pending in the engine) */
    uint32_t *near;   /* [n_pods] the running members' nodes, for grow (gang.near) */
    uint32_t *ask;    /* members asked to leave after a checkpoint (indices into live) */
    uint32_t n_ask;
    /* the checkpoint its waiting members ask for (the core's ask_checkpoint) in the current run:
     * asked at ckpt_asked_ms, answered at ckpt_due_ms (FIN_JOIN_CKPT; 0: no answer to come),
     * written at ckpt_from_ms (0: none yet), from which its checkpoints then count */
    int64_t ckpt_asked_ms, ckpt_due_ms, ckpt_from_ms;
    double gpu_ms; /* GPU-milliseconds held over every run (stats.c) */
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
    int64_t wake_ms; /* the FIN_WAKE pending in the heap (sched_result.wake_ms, the earliest of
                        the cycles since the last one fired), INT64_MAX: none */
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
    uint32_t *resume_text; /* after a resume, per job until its first verdict: a hash of the text
                              of its newest row (0: none), which tells a repeat (NULL: none) */
    int64_t *last_eta;     /* expected start last logged per job, INT64_MIN = none */
    const struct sched_eta **eta_of; /* per job: its entry in the cycle's result while the
                                        decision log is written (eta_index), else NULL */
    uint8_t *db_placed; /* per job: the store holds placements of it (it ran at its last write) */
    struct db_text *texts; /* new figures of a job's logged reason, written once (db_texts_flush) */
    uint32_t n_texts, cap_texts;
    uint32_t *text_of; /* per job: 1 + its entry in texts, 0 = none */
    /* failures */
    const struct sim_failures *fail;
    /* a failure injected into a run is checked by the engine's lifecycle rules when the driver
     * would see it (start timeout, NotReady grace); strikes, quarantine, retry budget and
     * backoff are the engine's */
    uint8_t *broken;       /* per job: a failure happened, its check is scheduled */
    uint8_t *broken_start; /* per job: the failure is a start that never becomes ready */
    uint32_t *lost_node;   /* per job: else the node a member was lost with */
    uint32_t *attempts;    /* per job: starts so far (seeds the start-failure draw) */
    int64_t *fail_at;      /* per job: when it broke (for recovery time), -1 = not broken */
    int64_t *down_at;      /* per node: scratch NotReady-since of one check, 0 otherwise */
    uint32_t *held_down;   /* per node: outages in progress + 1 while a random failure holds it
                              down (not_ready while > 0) */
    struct arena life_arena;
    struct eng_effects fx;
    uint64_t fail_rng;
    uint32_t n_backoff; /* jobs in ENG_JOB_BACKOFF */
    /* run-time estimates (learned from finishes, in (instant, job id) order so that a resumed
     * run learns the same) and start-time estimates */
    struct est_model est;
    int64_t *rt_est; /* per job: expected run time given to the core, 0 = unknown */
    int64_t *rt_typ; /* per job: typical run time, for start estimates */
    /* rt_est and rt_typ of a pending gang are computed when the cycle first asks for them:
     * rt_want[j] == est_epoch marks the gangs pending at this cycle's snapshot, rt_done[j] ==
     * est_epoch those computed for it (a gang not pending keeps its last values) */
    uint32_t *rt_want, *rt_done;
    uint32_t est_epoch;
    struct sched_runtime_source rt_src;
    int64_t *rel_typ;           /* per node: typical release, for start estimates */
    struct sched_release *rels; /* per running pod: typical release, for start estimates */
    uint32_t n_rels, cap_rels;
    /* the nodes whose release_ms or rel_typ may be non-zero (each listed once): the next
     * sim_estimates() resets only these, so its cost follows what runs, not the cluster */
    uint32_t *rel_nodes;
    uint8_t *rel_listed;
    uint32_t n_rel_nodes;
    uint32_t *fin_now; /* jobs finished in the current instant, not yet learned from */
    uint32_t n_fin_now;
    int64_t *eta_first; /* per job: first expected start planned, INT64_MIN = none yet */
    /* elastic jobs (sim/elastic.c): el_of[j] = job j's slot in el, UINT32_MAX for a rigid job;
     * a slot's waiting members are the core's and the engine's gang n_jobs + slot, so every
     * per-job array is n_ids = n_jobs + n_elastic long */
    uint32_t *el_of;
    struct sim_elastic *el;
    uint32_t n_ids;
};

/* Job j's state: the engine's job table (sched/engine/engine.h). */
static inline enum eng_state sim_state(const struct run *r, uint32_t j)
{
    return eng_job_state(r->eng, j);
}

/* Job j's slot in r->el when it is elastic (sim/elastic.c), else UINT32_MAX. */
static inline uint32_t sim_elastic_slot(const struct run *r, uint32_t j)
{
    return r->el_of ? r->el_of[j] : UINT32_MAX;
}

/* The gang job j runs as: an elastic job's members now, else its trace gang. */
static inline const struct gang *sim_gang(const struct run *r, uint32_t j)
{
    uint32_t k = sim_elastic_slot(r, j);
    return k != UINT32_MAX && r->el[k].n_live > 0 ? &r->el[k].live : &r->in->jobs[j].gang;
}

/* The checkpointGrace of job j's queue (ms; 0: none). */
static inline int64_t sim_ckpt_grace(const struct run *r, uint32_t j)
{
    return r->in->config->queues[r->in->jobs[j].gang.queue].preemption.checkpoint_grace_ms;
}

/* The trace job behind core gang id g: itself, or the elastic job whose members g is. */
static inline uint32_t sim_job_of(const struct run *r, uint32_t g)
{
    return g < r->in->n_jobs ? g : r->el[g - r->in->n_jobs].job;
}

static inline int64_t *sim_usage_at(struct run *r, uint32_t q, uint32_t f)
{
    return r->usage + ((size_t)q * r->n_flavors + f) * RES_MAX;
}

/* ---- persistence (--db) ------------------------------------------------------------------ */

#define DB_BATCH_INSTANTS 16384 /* instants per store transaction by default (--db-batch) */

/* sim.c */
void sim_mark_dirty(struct run *r, uint32_t j);
void sim_touch(struct run *r, uint32_t j);
void sim_node_changed(struct run *r, uint32_t i);
void sim_occupy(struct run *r, uint32_t j, const struct sched_assign *a, int64_t now);
int64_t sim_queue_gpus(struct run *r, uint32_t q);
void sim_heap_push(struct run *r, int64_t t, uint32_t job, enum fin_kind kind);
bool sim_whole_node(const struct run *r, const struct gang *g);
void sim_submit(struct run *r, uint32_t j, int64_t now);
void sim_release_job(struct run *r, uint32_t j);
void sim_account_run(struct run *r, uint32_t j, int64_t now);
int64_t sim_saved_work(const struct run *r, uint32_t j, int64_t t);
int64_t sim_last_checkpoint(const struct run *r, uint32_t j, int64_t t);
int64_t sim_ckpt_answer_ms(const struct run *r, uint32_t j);
void sim_ckpt_phase(const struct run *r, uint32_t j, int64_t *from_ms, int64_t *every_ms);

void sim_on_effects(struct run *r, int64_t now);

void sim_pod_on(struct run *r, const struct gang *g, const struct podset *ps,
                const struct sched_assign *a, int64_t now);
void sim_pod_off(struct run *r, const struct gang *g, const struct podset *ps,
                 const struct sched_assign *a);
void sim_charge_req(struct run *r, uint32_t q, uint32_t f, const struct res_vec *need, int sign);
int64_t sim_work_done(const struct run *r, uint32_t j, int64_t t);
int64_t sim_wall_for(const struct run *r, uint32_t j, int64_t work_ms);

/* elastic.c */
bool sim_elastic_alloc(struct run *r);
bool sim_elastic_charge(struct run *r, uint32_t j, int sign);
void sim_elastic_free(struct run *r);
void sim_elastic_started(struct run *r, uint32_t j);
void sim_elastic_withdraw(struct run *r, uint32_t j);
int sim_shrink(struct run *r, uint32_t j, const uint32_t *pods, uint32_t n, int64_t now,
               bool checkpointed, const char *reason);
int sim_lose_members(struct run *r, uint32_t j, const uint32_t *lost, uint32_t n, int64_t now);
int sim_grow(struct run *r, const struct sched_placement *p, int64_t now);
void sim_drop_joins_of_victims(struct run *r, struct sched_result *res);
void sim_join_ask(struct run *r, uint32_t g, int64_t now);
void sim_join_checkpoint(struct run *r, uint32_t j, int64_t now);
int sim_elastic_restore(struct run *r, uint32_t j, uint32_t n_live, uint32_t n_grow, bool queued,
                        int64_t reserve_first_ms, double gpu_ms, uint32_t n_ask);
const struct gang *sim_grow_gang(const struct run *r, uint32_t g);

/* input.c */
double sim_rng_unit(uint64_t *x);

/* events.c */
void sim_json_str(FILE *f, const char *s);
void sim_ev_head(const struct run *r, int64_t t_ms, const char *type, uint32_t job);
void sim_ev_cluster(const struct run *r);
void sim_ev_pods(const struct run *r, const struct sched_assign *a, const uint32_t *idx,
                 uint32_t n);
void sim_ev_node(const struct run *r, int64_t now, const char *type, uint32_t node);
void sim_log_reservations(struct run *r, const struct sched_result *res, int64_t now);
void sim_explain_flush(struct run *r);
void sim_explain(struct run *r, const struct sched_result *res, int64_t now);

/* failures.c */
bool sim_start_fails(const struct run *r, uint32_t j);
void sim_break_gang(struct run *r, uint32_t j, int64_t at, bool start, uint32_t node, int64_t now);
void sim_failure_event(struct run *r, const struct fin *f, int64_t now);
void sim_failures_init(struct run *r, int64_t t0);
bool sim_failures_only(const struct run *r);

void sim_tear_down(struct run *r, uint32_t j, bool own, int64_t now);

/* persist.c */
int sim_db_commit_instant(struct run *r, int64_t now, bool reopen, struct sched_errbuf *eb);
int sim_db_cycle_records(struct run *r, const struct sched_result *res, int64_t now,
                         struct sched_errbuf *eb);
int sim_db_resume(struct run *r, struct sched_errbuf *eb);

/* stats.c */
double sim_stranded_share(const struct run *r);
int sim_add_point(struct run *r, int64_t now, int64_t t0);
int sim_summarize(struct run *r, int64_t t0, int64_t t_end, double frag_weighted, double frag_time,
                  double frag_wait);
void sim_quota_integrate(struct run *r, int64_t dt_ms);
int sim_quota_observe(struct run *r);
int sim_write_jobs(const struct run *r, FILE *f);

/* estimates.c */
void sim_learn(struct run *r);
void sim_relearn(struct run *r);
void sim_estimates(struct run *r, int64_t now);
/* Node i's release_ms or rel_typ was just set (to anything): the next sim_estimates() resets it. */
void sim_release_note(struct run *r, uint32_t i);
void sim_note_etas(struct run *r, const struct sched_result *res);
bool sim_estimates_alloc(struct run *r, size_t nj, size_t nn);
void sim_estimates_free(struct run *r);

#endif
