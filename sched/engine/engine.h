/* sched/engine/engine.h: the state that lives between scheduling cycles, shared by both drivers
 * (the simulator, sched/sim/, and the daemon, sched/kube/). See docs/engine.md.
 *
 * Owns, over engine ids (dense uint32_t per gang and per node; the simulator uses its job and node
 * indices, the daemon interns names with sched/engine/names.h and reuses a gang's id only after
 * eng_jobs_forget):
 *   - the job state machine: none -> pending -> admitted -> binding -> running -> finished, with
 *     tearing (members being deleted), backoff (waiting out a retry delay) and failed (retry
 *     budget exhausted: gave up, never scheduled again);
 *   - the retry budget (restarts used against the gang's max_restarts) and the backoff
 *     (limits.backoff_ms doubled per restart used, up to the gang's cap, its queue's
 *     lifecycle.backoffMax given through the lifecycle rules, else ENG_BACKOFF_MAX_MS; or
 *     backoff_ms when that is longer);
 *   - node strikes and quarantine: limits.strikes failed starts on a node within
 *     limits.strike_window_ms exclude it from new pods for limits.quarantine_ms;
 *   - preemptor holds (capacity freed by victims, exclusive to the preemptor until
 *     limits.hold_ms after the latest cycle that reserved it, or until it starts or leaves),
 *     operator reservations (exclusive until they expire or are deleted, whether or not the gang
 *     is pending), and the starvation reservations of the last cycle (the next cycle's hints),
 *     and filling the core's view of them (sched_snapshot.holds, reserve_hints).
 * The lifecycle rules of running gangs (start timeout, failed and lost members, NotReady nodes)
 * are in sched/engine/life.h.
 *
 * Drivers give observations (a gang submitted, placed, bound, finished, evicted, broken, gone; a
 * failed start on a node; the time) and receive effects (struct eng_effect): quarantine or
 * release a node, tear a gang down, requeue it at a time, give it up. Times are integer
 * milliseconds on the driver's clock (virtual in the simulator, wall in the daemon).
 *
 * Must not touch: I/O of any kind (files, network, store, logs), libuv, libcurl, SQLite, cJSON,
 * libyaml, the drivers' structures. Single-threaded: one engine per driver instance.
 */
#ifndef SCHED_ENGINE_ENGINE_H
#define SCHED_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/arena.h"
#include "sched/core/cycle.h"

#define ENG_NONE       UINT32_MAX /* no gang, no node */
#define ENG_UNKNOWN_MS INT64_MIN  /* a time not known */

/* The one set of defaults (docs/lifecycle.md, docs/engine.md). */
#define ENG_STRIKES          3                     /* failed starts on a node ... */
#define ENG_STRIKE_WINDOW_MS (60 * 60 * 1000)      /* ... within this window ... */
#define ENG_QUARANTINE_MS    (30 * 60 * 1000)      /* ... exclude it this long */
#define ENG_HOLD_MS          (10 * 60 * 1000)      /* a preemptor hold after its last reservation */
#define ENG_RESERVE_MS       (24 * 60 * 60 * 1000) /* default operator reservation lifetime */
#define ENG_BACKOFF_MS       (60 * 1000)           /* first retry delay after an own failure */
#define ENG_BACKOFF_MAX_MS                                                                         \
    (60 * 60 * 1000)       /* ... doubled per failure up to this                                   \
                              (a gang's cap when none is given) */
#define ENG_MAX_RESTARTS 3 /* default retry budget (own failures) */

struct eng_limits {
    uint32_t strikes;
    int64_t strike_window_ms;
    int64_t quarantine_ms;
    int64_t hold_ms;
    int64_t backoff_ms; /* 0: an own failure requeues at once */
};

void eng_limits_default(struct eng_limits *l);

/* Allocation hook for the tests' out-of-memory loops: every allocation of the engine goes
 * through fn (realloc semantics; NULL fn = realloc). Frees use free(). Process-wide. */
typedef void *eng_realloc_fn(void *p, size_t n);
void eng_set_realloc(eng_realloc_fn *fn);
void *eng_realloc(void *p, size_t n);

enum eng_state {
    ENG_JOB_NONE = 0, /* not submitted yet (or unknown) */
    ENG_JOB_PENDING,  /* in its queue */
    ENG_JOB_RUNNING,  /* bound, members starting or running */
    ENG_JOB_FINISHED,
    ENG_JOB_FAILED,   /* gave up: retry budget exhausted (or never fits), never scheduled again */
    ENG_JOB_BACKOFF,  /* waiting out a retry delay (retry_at_ms) before it queues again */
    ENG_JOB_ADMITTED, /* placed by the core, charged, binds not sent yet */
    ENG_JOB_BINDING,  /* binds in flight */
    ENG_JOB_TEARING,  /* members being deleted (teardown, rollback, eviction); see eng_job */
};

const char *eng_state_name(enum eng_state s);

enum eng_reason {
    ENG_START_TIMEOUT = 0, /* StartTimeout: own failure */
    ENG_MEMBER_FAILED,     /* MemberFailed: own failure */
    ENG_NODE_LOST,         /* NodeLost: a member's node NotReady past the grace */
    ENG_MEMBER_LOST,       /* MemberLost: members deleted or evicted by someone else */
    ENG_BIND_REFUSED,      /* BindRefused: a bind failed, the gang is rolled back */
    ENG_EVICTED,           /* Evicted: preemption */
};

const char *eng_reason_name(enum eng_reason r);

struct eng_job {
    uint8_t state;       /* enum eng_state */
    bool evicting;       /* TEARING by a preemption: the lifecycle rules leave it alone */
    bool own;            /* TEARING after an own failure: requeued after a backoff */
    bool give_up;        /* TEARING after the budget ran out: FAILED once gone */
    uint32_t restarts;   /* own failures so far (the retry budget used) */
    int64_t bound_ms;    /* RUNNING: when its binds completed (or it was first seen running);
                            ENG_UNKNOWN_MS: not known yet (restored, or another state) */
    int64_t retry_at_ms; /* BACKOFF: when it queues again */
    /* the retry delay's cap after an own failure (ms), as its last lifecycle action gave it
     * (eng_life_apply: the queue's lifecycle.backoffMax); 0: ENG_BACKOFF_MAX_MS */
    int64_t backoff_max_ms;
    /* waiting: the expected start its first starvation reservation of this wait announced
     * (eng_job_reserved); 0: none yet. Cleared by any state but PENDING (a driver that does
     * not report submissions, the daemon, leaves a waiting gang in NONE) */
    int64_t reserve_first_ms;
    /* ADMITTED, BINDING, RUNNING: backfill on probation (sched/core/cycle.h): started while
     * gang probation_for held the cycle's earliest reservation, it promised to be gone by
     * probation_until_ms, that gang's reserve_first_ms. probation_until_ms 0: not on
     * probation (probation_for is then meaningless) */
    int64_t probation_until_ms;
    uint32_t probation_for;
    /* TEARING (evicting): the checkpoint handshake of a preemption (docs/preemption.md), asked
     * at ckpt_asked_ms by preemptor ckpt_by: its members stay until its last checkpoint is
     * after ckpt_asked_ms or until ckpt_until_ms (eng_job_ckpt_check). ckpt_until_ms 0: none
     * under way (never asked, or over: the eviction was given). Cleared with any other state */
    int64_t ckpt_asked_ms, ckpt_until_ms;
    uint32_t ckpt_by;
};

enum eng_effect_kind {
    ENG_FX_QUARANTINE = 0, /* node: no new pods until t_ms */
    ENG_FX_RELEASE,        /* node: quarantine over */
    ENG_FX_TEARDOWN,       /* gang: delete its members (whole) or only the lost ones */
    ENG_FX_REQUEUE,        /* gang: back in its queue at t_ms (now: at once) */
    ENG_FX_GIVE_UP,        /* gang: retry budget exhausted (restarts > max_restarts) */
};

struct eng_effect {
    enum eng_effect_kind kind;
    uint32_t gang, node; /* ENG_NONE when not about one */
    int64_t t_ms;
    enum eng_reason reason;          /* TEARDOWN, GIVE_UP */
    bool own, whole;                 /* TEARDOWN */
    uint32_t restarts, max_restarts; /* TEARDOWN, GIVE_UP, REQUEUE */
};

/* Effects of the calls since the last eng_effects_clear(), in the order they happened. */
struct eng_effects {
    struct eng_effect *v;
    uint32_t n, cap;
    bool oom; /* an effect was lost for want of memory: the caller fails (SCHED_ENOMEM) */
};

void eng_effects_clear(struct eng_effects *fx);
void eng_effects_free(struct eng_effects *fx);

struct eng;

/* A new engine (limits NULL: the defaults). NULL when out of memory. */
struct eng *eng_new(const struct eng_limits *limits);
void eng_free(struct eng *e);
const struct eng_limits *eng_limits(const struct eng *e);
/* Room for gang ids < n_gangs and node ids < n_nodes at once (a driver that knows its sizes, the
 * simulator): later calls on those ids allocate nothing for them. 0 or SCHED_ENOMEM. */
int eng_reserve(struct eng *e, uint32_t n_gangs, uint32_t n_nodes);

/* ---- jobs ------------------------------------------------------------------------------- */

/* Job g's record (a zero one, state NONE, for an id never seen). */
struct eng_job eng_job(const struct eng *e, uint32_t g);
enum eng_state eng_job_state(const struct eng *e, uint32_t g);

/* Observations; each returns 0 or SCHED_ENOMEM (growing the table to id g). */
int eng_job_submit(struct eng *e, uint32_t g);  /* -> PENDING (arrival, requeue) */
int eng_job_admit(struct eng *e, uint32_t g);   /* PENDING -> ADMITTED */
int eng_job_binding(struct eng *e, uint32_t g); /* -> BINDING */
/* -> RUNNING since bound_ms; its preemptor holds end (it started). */
int eng_job_bound(struct eng *e, uint32_t g, int64_t bound_ms);
int eng_job_finish(struct eng *e, uint32_t g); /* -> FINISHED */
/* Never fits: -> FAILED without a budget (the core's verdict). */
int eng_job_reject(struct eng *e, uint32_t g);
/* A preemption evicts it: TEARING (evicting) until eng_job_gone(). */
int eng_job_evict(struct eng *e, uint32_t g);
/* The checkpoint handshake: victim g of a preemption by gang `by`, TEARING (evicting) after
 * eng_job_evict, was asked to checkpoint at asked_ms; its eviction waits until it answers or
 * until until_ms (> asked_ms). 0, SCHED_ENOMEM, or SCHED_EINVAL (g not evicting, or
 * until_ms <= asked_ms). */
int eng_job_ckpt_request(struct eng *e, uint32_t g, uint32_t by, int64_t asked_ms,
                         int64_t until_ms);

enum eng_ckpt {
    ENG_CKPT_NONE = 0, /* no handshake under way for the gang */
    ENG_CKPT_WAIT,     /* under way: not answered, grace not over (its members stay) */
    ENG_CKPT_ANSWERED, /* its last checkpoint is after the request: evict now */
    ENG_CKPT_TIMEOUT,  /* no checkpoint by the end of the grace: evict now */
};

/* The handshake of g at now, given its last checkpoint (ms; the start of its run when it has
 * none). ANSWERED and TIMEOUT end the handshake (the driver evicts; g stays TEARING, evicting,
 * until eng_job_gone), so each is returned once. */
enum eng_ckpt eng_job_ckpt_check(struct eng *e, uint32_t g, int64_t last_ckpt_ms, int64_t now);

/* A bind was refused: the gang is rolled back, TEARING (not its own failure). */
int eng_job_bind_refused(struct eng *e, uint32_t g);
/* Waiting gang g holds a starvation reservation expected to start at expected_start_ms: the
 * first one of its wait is kept as reserve_first_ms (its promise to backfill). */
int eng_job_reserved(struct eng *e, uint32_t g, int64_t expected_start_ms);
/* Gang g (ADMITTED, BINDING or RUNNING) was placed with sched_placement.probation_for = for_g:
 * it is on probation until for_g's reserve_first_ms (none when for_g has none). Cleared when
 * the run ends (any state but ADMITTED, BINDING, RUNNING). */
int eng_job_probation(struct eng *e, uint32_t g, uint32_t for_g);
/* The simulator's resume: gang g's promises as a driver saved them (eng_job fields), after
 * eng_job_restore set its state. reserve_first_ms is kept only while PENDING and the probation
 * only while ADMITTED, BINDING or RUNNING, as the live rules keep them. */
int eng_job_restore_promise(struct eng *e, uint32_t g, int64_t reserve_first_ms,
                            int64_t probation_until_ms, uint32_t probation_for);
/* Restores what a driver persisted (daemon: the store's restarts; simulator: its resume). */
int eng_job_restore(struct eng *e, uint32_t g, enum eng_state s, uint32_t restarts);

/* A running gang broke (the action of a lifecycle rule, life.h). Whole: TEARING; an own failure
 * uses one restart of max_restarts, and a budget exceeded gives it up. Effects, in order:
 * TEARDOWN, QUARANTINE of strike_node (when its strikes reach the limit), GIVE_UP. */
int eng_job_broken(struct eng *e, uint32_t g, enum eng_reason why, bool own, bool whole,
                   uint32_t max_restarts, uint32_t strike_node, int64_t now,
                   struct eng_effects *fx);

/* No member of a TEARING gang is bound any more. Effects: REQUEUE at now (not its own failure,
 * eviction, rollback) or at the end of the backoff (own failure: BACKOFF until then); nothing
 * when it gave up (FAILED). Other states: no effect. */
int eng_job_gone(struct eng *e, uint32_t g, int64_t now, struct eng_effects *fx);

/* The backoff of job g ended: BACKOFF -> PENDING (the driver queues it). */
int eng_job_retry(struct eng *e, uint32_t g);

/* Whether the core may be offered job g: not FAILED (gave up), BACKOFF or TEARING. A driver that
 * lists pending gangs from the cluster (the daemon) keeps the others out of the queues. */
bool eng_job_schedulable(const struct eng *e, uint32_t g);
/* Ids below this bound may have a record (iterate 0..bound to find TEARING or BACKOFF jobs). */
uint32_t eng_job_bound_id(const struct eng *e);
/* Gangs g[0..n) are gone for good (or their id now names another gang: the daemon's PodGroup
 * deleted and created again under the same name): each record becomes that of an id never seen
 * (eng_job: state NONE, no
 * restarts, no starvation reservation, probation or checkpoint handshake), their preemptor holds
 * and reservation hints are dropped, and what other records say of them is cleared (a promise
 * made to one of them: off probation; a handshake asked by one: ckpt_by ENG_NONE). Operator
 * reservations stay (an operator reserves for a name). Ids out of range: ignored. Allocates at
 * most a bit per id, and does without it (slower) when out of memory. */
void eng_jobs_forget(struct eng *e, const uint32_t *g, uint32_t n);

/* ---- strikes and quarantine --------------------------------------------------------------- */

/* A failed start on node n at now. Effect QUARANTINE (until now + quarantine_ms) when it is the
 * limits.strikes-th within the window; strikes on a quarantined node do not count. The window
 * opens at the first strike after a quarantine or after the window ended. */
int eng_strike(struct eng *e, uint32_t n, int64_t now, struct eng_effects *fx);
/* Node n is quarantined at now (until > now). */
bool eng_quarantined(const struct eng *e, uint32_t n, int64_t now);
/* Quarantine end of node n (0: never quarantined). */
int64_t eng_quarantine_until(const struct eng *e, uint32_t n);
/* Effect RELEASE when node n's quarantine ended by now (once per quarantine). */
void eng_release_due(struct eng *e, uint32_t n, int64_t now, struct eng_effects *fx);
/* A driver that polls, at each step: RELEASE for every node whose quarantine ended (in id
 * order), then REQUEUE for every job whose backoff ended (BACKOFF -> PENDING, in id order). */
void eng_tick(struct eng *e, int64_t now, struct eng_effects *fx);
/* The earliest time after now at which the engine's answers change with time alone: a
 * quarantine ends, a backoff ends, a hold or reservation expires, a checkpoint handshake's
 * grace ends (eng_job_ckpt_request), or a rule of the last
 * eng_life_check comes due (a start timeout, a NotReady grace). INT64_MAX: none. A driver that
 * runs cycles only on changes runs one then (the daemon, docs/daemon.md). */
int64_t eng_next_due(const struct eng *e, int64_t now);

/* Node health, for the lifecycle rules (life.h): node n seen Ready or NotReady at now. The
 * NotReady-since time is the first NotReady sight after a Ready one. */
int eng_node_ready(struct eng *e, uint32_t n, bool ready, int64_t now);
/* Since when node n is NotReady (0: ready or never seen). */
int64_t eng_node_down_since(const struct eng *e, uint32_t n);

/* ---- holds and reservation hints (sched/engine/holds.c) ----------------------------------- */

struct eng_hold {
    uint32_t gang;
    uint32_t *nodes; /* engine node ids */
    uint32_t n_nodes;
    int64_t until_ms;    /* INT64_MAX: no end; hints: 0 */
    int64_t operator_id; /* > 0: an operator's reservation (the driver's id) */
    /* a preemptor's hold restored by a new leader from the handshakes it resumed, which lacks
     * what else the plan counted on: once the gangs leaving its nodes are gone, its preemptor
     * plans again (sched_hold.replan) */
    bool replan;
};

enum eng_hold_list {
    ENG_HOLDS = 0, /* preemptor holds and operator reservations: exclusive capacity */
    ENG_HINTS,     /* the last cycle's starvation reservations: hints, holding nothing */
};

/* A preemptor's hold on nodes[n] until now + limits.hold_ms (replaces its earlier one). */
int eng_hold_preemptor(struct eng *e, uint32_t g, const uint32_t *nodes, uint32_t n, int64_t now);
/* An operator's reservation id (> 0) for gang g until until_ms (INT64_MAX: no end). */
int eng_hold_operator(struct eng *e, int64_t id, uint32_t g, const uint32_t *nodes, uint32_t n,
                      int64_t until_ms);
/* Deletes operator reservation id: 0 or SCHED_ENOENT. */
int eng_hold_operator_drop(struct eng *e, int64_t id);
/* Puts an entry back as persisted (resume): replaces g's entry of the list. */
int eng_hold_put(struct eng *e, enum eng_hold_list l, uint32_t g, const uint32_t *nodes, uint32_t n,
                 int64_t until_ms);
/* g's victims leave only at until_ms (a checkpoint handshake): its preemptor hold lasts at
 * least until until_ms + limits.hold_ms, so that no second victim is taken for it meanwhile.
 * No hold: nothing. Returns 0. */
int eng_hold_extend(struct eng *e, uint32_t g, int64_t until_ms);
/* Marks g's preemptor hold (if any) replan (eng_hold.replan); a new plan's hold replaces it. */
void eng_hold_replan(struct eng *e, uint32_t g);
/* Drops g's preemptor holds (it started, or left). */
void eng_hold_drop(struct eng *e, uint32_t g);

uint32_t eng_hold_count(const struct eng *e, enum eng_hold_list l);
const struct eng_hold *eng_hold_at(const struct eng *e, enum eng_hold_list l, uint32_t i);

/* The cycle's result: its starvation reservations become the next cycle's hints, and its
 * preemptors' reservations holds (eng_hold_preemptor). core_gang maps a reservation's gang to
 * its engine id, core_node a core node index to an engine node id (NULL: identity). */
struct eng_ids {
    void *ctx;
    uint32_t (*gang)(void *ctx, const struct gang *g); /* NULL: g->id */
    uint32_t (*node)(void *ctx, uint32_t core_node);   /* NULL: identity */
    /* the core's gang for engine gang g this cycle, or NULL (not in the cycle's input);
     * *pending: it is pending (a preemptor hold of a gang not pending ends) */
    const struct gang *(*core_gang)(void *ctx, uint32_t g, bool *pending);
    /* the core node index of engine node n this cycle, or ENG_NONE (gone); NULL: identity */
    uint32_t (*core_node)(void *ctx, uint32_t n);
};

int eng_cycle_reservations(struct eng *e, const struct sched_result *res, const struct eng_ids *ids,
                           int64_t now);
/* Backfill on probation, the core's view: each running gang's promise (probation_until_ms,
 * probation_for) from its engine record (eng_job_probation), the gang it promised to mapped to
 * this cycle's core gang. A promise binds only for the wait it was made in: not on probation
 * when that gang is not in the cycle, started, or waits again (its reserve_first_ms is no
 * longer the promise). */
void eng_probation_view(const struct eng *e, const struct eng_ids *ids, struct sched_running *run,
                        uint32_t n);
/* Hints only (the cycle's starvation reservations), without the preemptors' holds. */
int eng_cycle_hints(struct eng *e, const struct sched_result *res, const struct eng_ids *ids);
/* Preemptors' holds only. */
int eng_cycle_holds(struct eng *e, const struct sched_result *res, const struct eng_ids *ids,
                    int64_t now);

/* Ends the holds due at now (expired, or a preemptor's gang no longer pending), then fills the
 * core's view of holds and hints from arena a (valid until its reset). An operator reservation
 * of a gang not pending holds its nodes for nobody (a gang with id UINT32_MAX). */
int eng_holds_view(struct eng *e, int64_t now, const struct eng_ids *ids, struct arena *a,
                   struct sched_snapshot *snap);
/* Only the expiry of eng_holds_view (a driver that fills its own view). */
void eng_holds_expire(struct eng *e, int64_t now, const struct eng_ids *ids);

#endif
