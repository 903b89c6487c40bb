/* sched/kube/driver_int.h: internals shared by the files of the Kubernetes driver (driver.c and
 * the driver_*.c files); not a public interface: nothing outside these files includes it.
 *
 * Owns: struct kdrv (the daemon's state on the loop), the binds of a cycle, and the functions
 * one of these files calls in another (each under the name of its file).
 *
 * Must not touch: anything driver.h says the driver must not touch.
 */
#ifndef SCHED_KUBE_DRIVER_INT_H
#define SCHED_KUBE_DRIVER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "config/reload.h"
#include "queue/estimate.h"
#include "sched/core/annot.h"
#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/device.h"
#include "sched/core/eta.h"
#include "sched/core/log.h"
#include "sched/core/policy.h"
#include "sched/core/strmap.h"
#include "sched/engine/engine.h"
#include "sched/engine/fair.h"
#include "sched/engine/life.h"
#include "sched/engine/names.h"
#include "sched/http/follow.h"
#include "sched/http/metrics.h"
#include "sched/http/server.h"
#include "sched/kube/cache.h"
#include "sched/kube/client.h"
#include "sched/kube/driver.h"
#include "sched/kube/lifecycle.h"
#include "sched/kube/native.h"
#include "store/store.h"

#define KDRV_MOD               "kube"
#define KDRV_STATUS_MIN_MS     5000 /* a gang's status changes at most this often for one reason */
#define KDRV_OWED_SEEN_MS      2000 /* a written scheduled condition shows in the watch by then */
#define KDRV_OWED_TRIES        8    /* sends of one scheduled condition before giving up */
/* While a gang waits and a gang of ours runs under a preempting policy, a cycle at least this
 * often even without changes (ms): a safety net for what the core's wake_ms may miss (the
 * fair-share history the driver integrates up to each cycle's now, any time rule the core does
 * not name); the times the core knows of come from wake_ms (kdrv_next_due). */
#define KDRV_SAFETY_RECHECK_MS 30000
/* A cycle whose input could not be built, or that could not decide (out of memory), runs again
 * this much later (ms). */
#define KDRV_RETRY_MS          1000
/* A leader's core stops trying gangs this long before its Lease's renew deadline (ms): what
 * follows the core in the cycle (records, statuses, the Bindings queued) and the renewal itself
 * must fit in it, or the leader steps down and exits for a cycle that only ran long. */
#define KDRV_BUDGET_MARGIN_MS  3000

/* One pod bind in flight. */
struct kbind {
    struct kgang_binds *gb;
    char *pod_key, *ns, *name, *node;
    uint32_t index, gpu_mask;
    bool ok, done;
    bool foreign;     /* 409: already bound to another node, by someone else */
    bool unknown;     /* no definite answer (transport error, 5xx, 429 after retries): the
                         Binding may still be applied by the server */
    uint32_t rereads; /* reads after a resourceVersion conflict (at most 3) */
    char *error;
    char uid[64]; /* metadata.uid the last Binding carried ("" none; a longer one truncated, so
                     it matches nothing) */
    uint32_t claims_reserved; /* bits of the pod's claims (index < 32) whose status write
                                 reserved them for it (2xx), or may have (no definite answer) */
    uint32_t claims_made;     /* of those, the writes that carried status.allocation */
    uint32_t claims_adopt;    /* bits of the pod's claims allocated already that it adopts (the
                                 cycle's kclaims_demand): only its reservedFor entry is written,
                                 and only that entry is removed if the gang rolls back */
    char ext_claim[256]; /* the name of the KEP-5004 claim its writes created (driver_ext.c), or
                            "": deleted if the gang rolls back */
};

struct kclaim_write; /* driver_bind.c: one claim's writes for one member */

/* A member's use of a claim: gb->pods[pod] names it as its claim idx. */
struct kshared_use {
    uint32_t pod, idx;
};

/* A claim more than one member of a gang bind names (driver_shared.c): written once, by the
 * first consumer to reach its claims, for all of them. */
struct kshared {
    char *key;                /* the claim's cache key */
    struct kshared_use *uses; /* its consumers, by member index, each once */
    uint32_t n_uses;
    uint32_t holder; /* uses[holder]: the consumer first by pod key, whose GPUs are the claim's */
    enum { KSHARED_UNSENT, KSHARED_SENT, KSHARED_ANSWERED } state;
    int status;                    /* once answered: the write's HTTP status (0: none) */
    char *error;                   /* and its error, or NULL */
    struct kclaim_write **waiting; /* the other consumers' writes, answered with it */
    uint32_t n_waiting, cap_waiting;
};

/* A gang bind's shared claims, sorted by key; built at the first need. */
struct kgang_shared {
    struct kshared *v;
    uint32_t n;
    struct kshared_use *uses; /* storage of every entry's uses */
    uint32_t n_uses;
    bool built;
};

/* The binds of one placed gang. */
struct kgang_binds {
    struct kdrv *d;
    char *gang, *pg_key; /* pg_key: its group's cache key, NULL for a gang of one */
    enum kpg_api api;
    struct kbind *pods;
    uint32_t n_pods, n_done, n_failed;
    int64_t gpus;     /* the GPUs of the members placed (a fresh gang's: the job's) */
    bool joins;       /* its members join a running elastic gang of the same key */
    int64_t run_gpus; /* then the running members' GPUs in the placement's input, else 0 */
    bool counted;     /* a join whose job row was running at the placement: the row counts
                         them since (record_placement), less members that left since */
    char *queue, *flavor;
    char *summary;              /* "placed in rack r3: 2 pods on n1, n2" */
    struct kgang_shared shared; /* its claims more than one member names (driver_shared.c) */
};

/* What was last written about a gang (status and events are rate-limited). */
struct kstatus {
    char *reason;
    int64_t at_ms;
    bool forced;        /* an outcome (bind failure, teardown, preemption), not a waiting reason */
    uint32_t logged;    /* hash of the last verdict written to the decision log (0: none) */
    int64_t logged_eta; /* the expected start written with it (ms; INT64_MIN: none) */
    int64_t seen_ms;    /* last asked for (a status call; a waiting gang in a cycle): the entry
                           of a gang without an engine id is dropped KDRV_GANG_FORGET_MS later */
    int64_t first_saved_ms; /* the first reservation's expected start written to its job row
                               (driver_promise.c; 0: none written by this process) */
};

/* A growable list of copied strings (keys gathered while iterating, acted on afterwards). */
struct strlist {
    char **v;
    uint32_t n, cap;
};

struct kdrv {
    bool warned_no_device; /* the "no node has the device" warning was logged for this state */
    const struct kube_run_opts *o;
    uv_loop_t *loop;
    uv_timer_t cycle_timer;
    uv_signal_t sigterm, sigint;
    struct kube_auth *auth;
    struct kube_client *client;
    struct kube_informer *inf[3 + KPG_N_API + 6]; /* one per kdrv_watches entry, in order */
    uint32_t n_inf;
    struct kube_lease *lease;
    struct config_watch *cw;
    struct store *db;
    struct kcache *cache;
    const struct sched_policy *pol;
    struct arena arena;
    bool leading, recovered, stopping, failed;
    bool fenced;              /* recovery sent its fences */
    bool xk8s_no_conditions;  /* the scheduler-plugins CRD prunes status.conditions */
    uint32_t fences_left;     /* recovery fences not answered yet */
    uint32_t unreserves_left; /* claim Unreserves of rolled-back gangs not answered yet: no
                                 cycle runs before (its claims would look still reserved) */
    char fatal[SCHED_ERRBUF];
    int64_t cycle;
    /* binds of the current cycle */
    struct kgang_binds *binds;
    uint32_t n_binds, binds_left;
    struct strmap status;    /* gang -> struct kstatus* */
    struct strmap owed;      /* gang -> struct kowed*: a native scheduled condition not seen yet */
    struct strmap owed_ckpt; /* gang -> struct kowed*: a checkpoint request not seen yet */
    struct strmap owed_ckpt_pods; /* pod -> struct kowed*: the same on a member pod of a gang
                                     asked on its pods (driver_ckpt.c kdrv_ckpt_where) */
    struct strmap owed_status;    /* gang -> PodGroup status not queued (driver_status.c) */
    struct strmap pod_writes;     /* pod key -> struct kpod_writes*: its status writes in flight
                                     and the Binding waiting for them (driver_status.c) */
    bool ckpt_resumed; /* handshakes were resumed from the annotations (first cycle as leader) */
    bool promises_restored; /* backfill promises were restored from the store (driver_promise.c) */
    struct strmap jobs;     /* gang -> struct kjob*: admitted or running, charged to the ledger */
    struct strmap shrinks;  /* gang -> struct kshrink*: members asked to checkpoint before they
                               are evicted alone (driver_shrink.c) */
    struct strmap restarts; /* gang -> int64_t*: when members it runs on were last evicted
                               alone, so its workers restarted (driver_shrink.c); kept on its
                               job row too (store_job_restart_put) */
    bool restarts_restored; /* d->restarts were read from the store (first cycle as leader) */
    struct strmap joining;  /* gang -> (void *)1: a running gang whose members waiting to
                               rejoin it had a verdict logged (driver_record.c) */
    struct strmap evict_retry; /* pod -> struct kretry*: evictions that failed, sent again at
                                  a later cycle (driver_life.c) */
    bool jobs_synced;          /* the jobs and the ledger were reconciled with the cluster */
    struct strmap held;        /* queue name -> (void *)1: held or draining (operator actions) */
    struct strmap passed;      /* gang key -> (void *)1: tried and not placed by the cut-short
                                  cycles just before, passed over until a cycle ends uncut
                                  (driver_budget.c) */
    /* HTTP API and metrics */
    struct http_server *http;
    struct http_follow *follow; /* while standby with --follow */
    struct http_metrics *metrics;
    struct http_metric *m_cycle, *m_cycle_cpu, *m_cut, *m_binds, *m_gangs, *m_api, *m_watch,
        *m_leader, *m_pending, *m_evictions, *m_held;
    uint64_t api_seen[11]; /* the client's counters as last copied (update_client_metrics) */
    bool force; /* run the next cycle even if the cache did not change (operator action, reload) */
    /* the wall clock and CLOCK_BOOTTIME (ms) at the last kdrv_clock_check, read together
     * (clock_mono 0: none yet) */
    int64_t clock_wall, clock_mono;
    /* the running cycle's time (ms since the epoch; 0: no cycle runs), kdrv_now's answer during
     * it: a step seen in the middle of a cycle would mix the two clocks in its results */
    int64_t cycle_now;
    /* a wall-clock step moved the engine's promises since the store's job rows were written:
     * the next record writes them all again (driver_promise.c) */
    bool promises_stepped;
    /* without changes, the next cycle runs at the earliest of these (ms since the epoch,
     * INT64_MAX: none; kdrv_next_due names the timers): due_ms from the last cycle,
     * later_ms what asked for a cycle since the last one started (kdrv_cycle_at) */
    int64_t due_ms, later_ms;
    /* the state between cycles (sched/engine/): job states, retry budgets, strikes and
     * quarantine, node health, preemptor holds and operator reservations; gangs and nodes by
     * engine id (interned names; a gang's id is reused only once it is forgotten, driver_eng.c) */
    struct eng *eng;
    struct eng_names *gang_ids, *node_ids;
    struct kgang_seen *gang_seen; /* [cap_gang_seen], by engine gang id (driver_eng.c) */
    uint32_t cap_gang_seen;
    int64_t gang_swept_ms; /* the last sweep of gangs gone (kdrv_gangs_sweep) */
    struct eng_effects fx; /* effects of the engine calls being carried out */
    struct kids *ids;      /* the current cycle's id maps (in the arena), or NULL */
    struct http_metric *m_teardowns, *m_quarantined, *m_pg_api;
    struct http_metric *m_ckpt; /* checkpoint handshakes over, by outcome (driver_ckpt.c) */
    uv_timer_t stats_timer;
    /* run times learned from finished gangs, for the start planner only (driver_est.c) */
    struct est_model est;
    struct strlist est_queues; /* queue name of each of est's queue indices */
    uint32_t est_computed;     /* pending gangs whose estimate the last cycle asked for */
    /* each running gang's expected end, kept while what it depends on stays (driver_est.c) */
    struct strmap est_ends; /* gang -> struct est_end* */
    uint64_t est_gen;       /* changes whenever est is made again (a start, a reload) */
    /* [n_ring_gen]: the value of est_obs when each ring of est last learned (0: not since it
     * was made; a ring index past n_ring_gen, a user's, has not learned either); NULL when out
     * of memory (then est_gen changes at every run learned) */
    uint64_t *est_ring_gen;
    uint32_t n_ring_gen;
    uint64_t est_obs;   /* runs learned so far (never reset) */
    uint64_t est_plans; /* kdrv_est_plan calls (the ends not used by the last one age) */
    uint32_t est_ended; /* running gangs whose end the last plan computed (not kept) */
    /* the fair-share history by queue name (driver_fair.c), restored from the store once;
     * its rows last written at fair_written_ms */
    struct eng_fair *fair;
    bool fair_restored, fair_written;
    int64_t fair_written_ms;
};

/* A gang charged to the ledger (admitted, binds in flight, or running). */
struct kjob {
    int64_t gpus;
    int kind; /* device kind (res.h): the ledger row is under that kind's resource name */
    char *queue, *flavor;
    bool seen;     /* running in the current cycle's input */
    uint32_t pods; /* its members bound at the last cycle (0 before its first) */
};

/* ---- driver_eng.c: the daemon's side of the engine ---- */

/* The engine ids of this cycle's gangs and nodes, both ways (in d->arena, valid until its reset).
 */
struct kids {
    struct kdrv *d;
    const struct kcache_build *kb;
    uint32_t *gang;      /* [kb->n_gangs]: engine gang id of kb->gangs[i] */
    uint32_t *node;      /* [cluster n_nodes]: engine node id of cluster node i */
    uint32_t *core_gang; /* [n_core_gang]: kb gang index of an engine gang id, or ENG_NONE;
                            an elastic gang's pending part (its running part is its .run) */
    uint32_t n_core_gang;
    uint32_t *core_node; /* [n_core_node]: cluster index of an engine node id, or ENG_NONE */
    uint32_t n_core_node;
    struct eng_ids ids; /* callbacks over the maps above */
};

/* A gang's engine id belongs to one object: a name whose PodGroup was deleted and created again
 * (another uid) starts with a fresh record, and a name gone from the cluster (no PodGroup, no
 * pod, no waiting entry) for KDRV_GANG_FORGET_MS is forgotten, its id given to a later name. */
#define KDRV_GANG_FORGET_MS (10 * 60 * 1000)
struct kgang_seen {
    char *uid;       /* its PodGroup's metadata.uid as last seen, NULL: none seen yet */
    int64_t seen_ms; /* the last cycle it was in the cache (ms since the epoch) */
    /* a record restored from the store (which keeps no uid): its gang's submission time, the
     * PodGroup's creationTimestamp (ms); a PodGroup created at another time is another one.
     * 0: not restored */
    int64_t restored_submit_ms;
};

/* The engine, its name tables (the daemon's engine: no backoff, see docs/daemon.md). */
int kdrv_eng_init(struct kdrv *d);
void kdrv_eng_fini(struct kdrv *d);

/* The engine id of a gang ("namespace/name") or node, interned at first sight (ENG_NONE: out of
 * memory). */
uint32_t kdrv_gang_id(struct kdrv *d, const char *key);
uint32_t kdrv_node_id(struct kdrv *d, const char *name);

/* Maps this cycle's gangs and nodes to engine ids (d->ids), each gang (and each waiting one)
 * seen at now; a gang whose PodGroup has another uid than its record's gets a fresh record
 * (kdrv_gang_renew). 0 or SCHED_ENOMEM. */
int kdrv_ids_build(struct kdrv *d, const struct kcache_build *kb, int64_t now);
/* Gang id's record was restored from a store row of the gang submitted at submit_ms (its
 * PodGroup's creation time): a PodGroup of that name created at another time gets a fresh record
 * at first sight. row_ms: the row's latest time (submission, admission, start, finish: the last
 * write of it), the best evidence after a restart of when the gang was last about (when its
 * objects went is not known): it counts as last seen then (at most now), so a gang whose
 * objects are gone is forgotten KDRV_GANG_FORGET_MS after that, not after the start; one whose
 * objects are there is seen by the first cycle. 0 or SCHED_ENOMEM. */
int kdrv_gang_restored(struct kdrv *d, uint32_t id, int64_t submit_ms, int64_t row_ms, int64_t now);
/* When the store is opened: the gangs whose rows say they used up their retry budget
 * (kdrv_job_gave_up) restored as FAILED (kdrv_gang_restored with the row's latest time). */
int kdrv_restore_gave_up(struct kdrv *d, int64_t now, struct sched_errbuf *eb);
/* At most once a minute: the gangs not seen for KDRV_GANG_FORGET_MS, not charged (d->jobs) and
 * without an operator reservation are forgotten (engine record, name, id). Call after the
 * lifecycle step (a gang tearing down is gone by then). */
void kdrv_gangs_sweep(struct kdrv *d, int64_t now);
/* Gang key's store job row starts afresh for a new object of its name (renewed or forgotten
 * record): restarts and preemptions 0 (restore_restarts and the admissions copy them from the
 * row), submitted at submit_ms (< 0: kept). Logs a failure; 0 or its code (driver_life.c). */
int kdrv_job_fresh(struct kdrv *d, const char *key, int64_t submit_ms);
/* Whether job row j restores a gang that gave up (FAILED) when the store is opened: not the row
 * of a gang forgotten since (its counts 0), so a gang gone for KDRV_GANG_FORGET_MS stays
 * forgotten across a restart (driver_bind.c). */
bool kdrv_job_gave_up(const struct store_job *j);

/* Carries out the engine's node effects in d->fx (quarantine: log, Event on the Node; release:
 * log) and clears them. */
void kdrv_node_effects(struct kdrv *d);

/* ---- driver.c: the loop ---- */

/* CLOCK_BOOTTIME in ms (monotonic, counting a suspend as time passed, as the wall clock does) */
int64_t kdrv_mono_ms(void);
/* The wall clock (ms since the epoch) as read: for kdrv_clock_check and tests only. */
int64_t kdrv_now_ms(void);
/* The wall clock (ms since the epoch) for a time the driver records or compares: within a cycle
 * the cycle's own time (d->cycle_now, read after the cycle's clock check), else the clock read
 * by a kdrv_clock_check first, so that a step not seen yet moves the deadlines before a time of
 * the new clock is recorded beside them (else the next check would move that time too). Every
 * driver callback that stamps a time reads it here. */
int64_t kdrv_now(struct kdrv *d);

void kdrv_fatal(struct kdrv *d, const char *msg);
/* The end of an orderly stop (SIGTERM, once no bind is in flight): the leader's queued and
 * in-flight writes finish (at most KDRV_DRAIN_MS, the rest dropped), then its Lease, when it
 * holds one, is released so that a standby leads at once, then the loop stops. The same with
 * --leader-elect false (no Lease to release). Not leading: the loop stops at once. */
#define KDRV_DRAIN_MS 5000
void kdrv_stop_releasing(struct kdrv *d);

/* Whether this replica may make a leader's writes now (start a cycle, send a Binding or any
 * write: the client's gate asks it before each goes on the wire): leading,
 * and (with leader election) less than the renew deadline since its last successful renewal was
 * sent. A leader past the deadline steps down here (on_lease: the daemon stops). */
bool kdrv_may_lead(struct kdrv *d);

const char *kdrv_flavor_name(const struct config *cfg, uint32_t f);

void kdrv_schedule_cycle(struct kdrv *d, uint64_t delay_ms);

/* What the next cycle's due time depends on, as the last cycle left it (kdrv_next_due). Times in
 * ms since the epoch, INT64_MAX: none. */
struct kdrv_due_in {
    int64_t now;     /* the cycle's time */
    bool decided;    /* its input was built and the core decided: wake_ms is the core's answer */
    int64_t wake_ms; /* sched_result.wake_ms: when time alone may change the decisions */
    int64_t eng_due; /* eng_next_due: backoff, quarantine, hold and reservation expiry, start
                        timeout, NotReady grace, checkpoint deadlines */
    bool preempting; /* the policy preempts (sched_policy.preempt) */
    uint32_t n_pending, n_running; /* gangs of ours pending and running in the cycle's input */
};
/* When the next cycle is due if nothing changes (the rest of its input only changes by an
 * event, which marks the cache dirty): the earliest of the engine's timers, the core's wake_ms
 * when the cycle decided (the simulator runs a cycle at the same instant), now + KDRV_RETRY_MS
 * when it did not, and now + KDRV_SAFETY_RECHECK_MS while a gang is pending and one runs under
 * a preempting policy. The timers asked for since the cycle began (d->later_ms, kdrv_cycle_at:
 * a status held back by its rate limit, a native scheduled condition owed, a failed delete or
 * eviction to send again) are compared beside it in cycle_due: they may be set after the cycle
 * ends. Pure: the unit tests call it without a server. */
int64_t kdrv_next_due(const struct kdrv_due_in *in);
/* A cycle is due at `at` (ms since the epoch) even if nothing changes: a status held back by
 * its rate limit, a failed delete or eviction to send again (d->later_ms). */
void kdrv_cycle_at(struct kdrv *d, int64_t at);

/* ---- driver_ckpt.c ---- */

/* Where a gang is asked to checkpoint and where its request is read back after a restart:
 * KDRV_CKPT_PODGROUP, on its own PodGroup (scheduler-plugins, Volcano, a native scheduling.k8s.io
 * PodGroup: the object whose key is the gang's); KDRV_CKPT_PODS, on every member pod (a gang of
 * one, a Kueue pod group, a native basic pod, a pod group of a 1.35 Workload: that object is
 * shared by its pod groups and their replicas, so it cannot say which gang is asked);
 * KDRV_CKPT_NONE: nowhere (no member). Its answer, gangsched.io/last-checkpoint, is read from
 * the PodGroup (if any) and every member pod alike (cache.c: the latest wins). */
enum kdrv_ckpt_where { KDRV_CKPT_NONE = 0, KDRV_CKPT_PODGROUP, KDRV_CKPT_PODS };
enum kdrv_ckpt_where kdrv_ckpt_where(const struct kgang *kg);

/* The merge patch of a checkpoint request on a PodGroup or pod (and, until_ms > 0, the deadline
 * of a preemption), the write kdrv_owe_ckpt and kdrv_owe_ckpt_pod owe. */
cJSON *kdrv_ckpt_patch(int64_t asked_ms, int64_t until_ms);
/* The request a PodGroup's annotations show (ms since the epoch; 0: none or not RFC 3339). */
void kdrv_ckpt_pg_times(const struct kpg *pg, int64_t *asked_ms, int64_t *until_ms);
/* Whether an object showing request shown_asked_ms with deadline shown_until_ms (0: none) shows
 * the request asked_ms (with deadline until_ms; 0: an operator's, any deadline) or a later one. */
bool kdrv_ckpt_shown(int64_t shown_asked_ms, int64_t shown_until_ms, int64_t asked_ms,
                     int64_t until_ms);
/* Whether an owed checkpoint write of gang's needs no more sends: its object shows it
 * (kdrv_ckpt_shown), or, a preemption's request, the handshake is over (the engine's). */
bool kdrv_ckpt_settled(struct kdrv *d, const char *gang, int64_t shown_asked_ms,
                       int64_t shown_until_ms, int64_t asked_ms, int64_t until_ms);
/* Whether a victim of the core is asked to checkpoint rather than evicted at once: its queue has
 * a checkpointGrace (and it has a member or a PodGroup to ask it on: kdrv_ckpt_where). */
bool kdrv_ckpt_asks(const struct kgang *victim, const struct config *cfg);
/* Writes request asked_ms (deadline until_ms, 0: an operator's) where kdrv_ckpt_where says,
 * each object's write owed until the watch shows it (a member pod that shows it already is not
 * written again). */
void kdrv_ckpt_write(struct kdrv *d, const struct kgang *kg, int64_t asked_ms, int64_t until_ms);
/* The latest checkpoint request kg was given, of any kind: shown on its PodGroup or a member pod,
 * or written and not seen yet (ms; 0: none). */
int64_t kdrv_ckpt_asked(struct kdrv *d, const struct kgang *kg);
/* The operator's `gangctl checkpoint KEY` (no deadline): on the PodGroup of that key where a
 * gang is asked on its PodGroup, else on the running member pods of this scheduler whose gang
 * key is KEY (a gang of one: the pod's own key). SCHED_ENOENT when there is neither. */
int kdrv_ckpt_operator(struct kdrv *d, const char *key, struct sched_errbuf *eb);
/* A victim asked to checkpoint, in its grace: it runs, charged, until its handshake ends (then
 * it is evicted, or it ended by itself and finished). */
static inline bool kdrv_job_in_grace(struct eng_job j)
{
    return j.state == ENG_JOB_TEARING && j.ckpt_until_ms != 0;
}
/* A victim of the core: when its queue has a checkpointGrace, it is asked to checkpoint (the
 * engine's handshake, the annotations where kdrv_ckpt_where says, status and Event) and true is
 * returned; false: evict it at once. Call after the cycle's record (eng_job_evict). */
bool kdrv_ckpt_request(struct kdrv *d, const struct kgang *victim, const struct kgang *by,
                       const struct sched_eviction *ev, const struct config *cfg, int64_t now);
/* Before the decisions: handshakes answered or over evicted, the victims still waiting marked
 * evicting in kb->running; at the first cycle as leader (a start, a new leader), handshakes
 * resumed from the annotations, each preemptor's hold on its victims' nodes restored. */
void kdrv_ckpt_step(struct kdrv *d, struct kcache_build *kb, int64_t now);

/* ---- driver_shrink.c: members of an elastic gang preempted alone ---- */
/* Eviction ev of the core takes members of its victim alone: evicted now, or asked to
 * checkpoint first when the victim's queue has a checkpointGrace (d->shrinks). Call after the
 * cycle's record. */
void kdrv_shrink(struct kdrv *d, const struct kcache_build *kb, const struct sched_eviction *ev,
                 const struct config *cfg, int64_t now);
/* Before the decisions: handshakes of members answered or over end (members evicted, charge
 * and job row of those left), the gangs still asked marked evicting in kb->running; the new
 * members of a gang that lost members to a preemption count its checkpoints from then when it
 * has not checkpointed since (its workers restarted: gang_set_join). */
void kdrv_shrink_step(struct kdrv *d, struct kcache_build *kb, int64_t now);
/* The core asks the running gang of new members kg (a pending gang; sched_verdict.ask_checkpoint)
 * to checkpoint so that they join: the request alone (no deadline) where kdrv_ckpt_where says,
 * a CheckpointRequested Event; nothing while the gang is being evicted or asked for members. */
void kdrv_join_ask(struct kdrv *d, const struct kgang *kg, int64_t now);
/* Whether gang's members were asked at asked_ms (until until_ms; 0: any) and still are. */
bool kdrv_shrink_asks(const struct kdrv *d, const char *gang, int64_t asked_ms, int64_t until_ms);
void kdrv_shrink_fini(struct kdrv *d);
/* In the store's open transaction: gang runs on with gpus (its charge and job row); with kg, it
 * runs on without its members gone[0 .. n_gone) (indices into kg->members, evicted alone): its
 * placed pods become those kept at once too, as its row and charge do (not a cycle after the
 * evicted pods are gone: `store check` in between found them apart). */
int kdrv_record_shrunk(struct kdrv *d, const char *gang, int64_t gpus, const struct kgang *kg,
                       const uint32_t *gone, uint32_t n_gone, struct sched_errbuf *eb);
/* Outside the cycle's record (a checkpoint handshake ended), in a transaction of its own: gang
 * evicted at now (gpus < 0: kdrv_record_evicted, its queue's name or NULL) or running on with gpus
 * without kg's members gone[0 .. n_gone) (kdrv_record_shrunk). A store that cannot be written
 * stops the daemon, as the cycle's record does. */
void kdrv_record_apart(struct kdrv *d, const char *gang, const char *queue, int64_t gpus,
                       const struct kgang *kg, const uint32_t *gone, uint32_t n_gone, int64_t now);

/* ---- driver_promise.c: backfill promises across restarts ------------------------------------ */
/* In the cycle's transaction, after its placements' rows: the first reservation of each gang
 * reserved for this cycle (once per value) and each placement's promise (or none) on the job
 * rows. */
int kdrv_promise_record(struct kdrv *d, const struct kcache_build *kb,
                        const struct sched_result *res, struct sched_errbuf *eb);
/* At the first cycle as leader, after the lifecycle step (running gangs are RUNNING) and before
 * the probation view: the engine gets back the first reservations of the waiting gangs and the
 * promises of the running ones that the store's job rows keep, for the gangs of build kb that
 * are the rows' (the same submission). Later calls do nothing. */
void kdrv_promise_restore(struct kdrv *d, const struct kcache_build *kb);

/* ---- driver_status.c ---- */

/* Sends body (freed) to path; fn(ctx) gets the answer. SCHED_ENOMEM: nothing was queued (nor
 * is a request ever sent without a body it could not write, nor a POST, PUT or PATCH whose body
 * is NULL: one that could not be built) and fn is never called (ctx is the caller's). */
int kdrv_send_json(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                   kube_resp_fn *fn, void *ctx);
/* kdrv_send_json of a write that may wait behind every other request (KUBE_LOW: the member
 * counts of PodGroups, driver_counts.c), its answer only logged when it fails. */
int kdrv_send_low(struct kdrv *d, enum kube_method m, const char *path, cJSON *body);
/* kdrv_send_json; when nothing could be queued (or the body not written: a request is never
 * sent without it) fn(ctx) runs at once with status 0, as for a failed request. */
void kdrv_send_or_fail(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                       kube_resp_fn *fn, void *ctx);

/* A new API object {apiVersion, kind, metadata: {name, namespace}}; *meta (may be NULL) gets
 * its metadata for more fields. */
cJSON *kdrv_new_object(const char *api_version, const char *kind, const char *ns, const char *name,
                       cJSON **meta);

/* An Event's metadata.name for object name (driver_status.c): unique within the process, a DNS
 * subdomain of at most 253 characters; out holds at least 254 bytes. */
void kdrv_event_name(char *out, size_t n, const char *name);
void kdrv_post_event(struct kdrv *d, const char *api_version, const char *kind, const char *ns,
                     const char *name, const char *uid, const char *type, const char *reason,
                     const char *action, const char *note, const struct kpg *related);

void kdrv_split_key(const char *key, char *ns, size_t nn, char *name, size_t n);

/* Another row was written for the gang (placed, torn down): its next verdict is new again. */
void kdrv_forget_logged(struct kdrv *d, const char *gang);

/* Event + PodGroup status for a gang: phase and a condition carrying the reason. Rate-limited:
 * written when the reason changes, else at most every status_every_s.
 * Returns whether it wrote (false: rate-limited). */
bool kdrv_gang_status(struct kdrv *d, const char *gang_key, const struct kpg *pg, const char *phase,
                      const char *type, const char *reason, const char *message, bool force);

/* A CompositePodGroup's tree (root) is bound: pod p's PodGroup and the CompositePodGroups
 * between it and the root get their scheduled condition True (PodGroupInitiallyScheduled,
 * CompositePodGroupInitiallyScheduled), each owed as a gang's own until the watch shows it (a
 * group True already or owed: nothing). */
void kdrv_child_scheduled(struct kdrv *d, const struct kpod *p, const struct kpg *root,
                          const char *message);

/* gang_status with the Event's `related` object (the preemptor's PodGroup of a Preempted
 * Event), or NULL. */
bool kdrv_gang_status_rel(struct kdrv *d, const char *gang_key, const struct kpg *pg,
                          const char *phase, const char *type, const char *reason,
                          const char *message, bool force, const struct kpg *related);

/* The native PodGroups' scheduled conditions (True) and the checkpoint requests written but
 * not yet seen in the watch (d->owed, d->owed_ckpt, d->owed_ckpt_pods): each is sent again while
 * the watch does not show it, after a failed write (backoff from 1 s; 1 s when out of memory) or
 * KDRV_OWED_SEEN_MS after a write that succeeded (another write may have overwritten it), at
 * most KDRV_OWED_TRIES times (a preemption's request: until its handshake is over); dropped
 * once seen or its PodGroup is gone. Called by each cycle; arms kdrv_cycle_at for the next
 * send. */
void kdrv_owed_status(struct kdrv *d, int64_t now);

/* ---- driver_counts.c ---- */

/* The PodGroups whose member counts (status.running, succeeded, failed) changed are written,
 * each at most every KDRV_STATUS_MIN_MS (arms kdrv_cycle_at for the next). Called by each cycle. */
void kdrv_counts_step(struct kdrv *d, int64_t now);
/* Sets status's counts of pg's members (scheduler-plugins and Volcano PodGroups only): a status
 * written whole (Volcano's PUT) keeps them. */
void kdrv_counts_add(struct kdrv *d, const struct kpg *pg, cJSON *status);
/* The status.phase a write to scheduler-plugins' or Volcano's PodGroup pg carries, from its
 * members' counts k (NULL: none known) as the API's own controller moves it. daemon_phase: the
 * daemon's ("Pending", "Running" for a gang it bound, "Failed"), or NULL for a counts write,
 * where NULL is returned when the phase stays as seen. A string constant. */
const char *kdrv_counts_phase(const struct kpg *pg, const struct kcounts *k,
                              const char *daemon_phase);

/* A checkpoint request (until_ms 0: an operator's; else the deadline of a preemption) owed on pg,
 * a PodGroup of ours (its key is its gang's): sent now, and again until the watch shows it
 * (kdrv_owed_status); it replaces the one owed on pg. */
void kdrv_owe_ckpt(struct kdrv *d, const struct kpg *pg, int64_t asked_ms, int64_t until_ms);
/* The same on pod, a member of gang (its key): one entry per pod, each pod's write owed until the
 * watch shows it on that pod; nothing when the pod shows it already and none is owed. */
void kdrv_owe_ckpt_pod(struct kdrv *d, const char *gang, const struct kpod *pod, int64_t asked_ms,
                       int64_t until_ms);

/* The latest checkpoint request owed (written, not seen in the watch yet) on kg's PodGroup or
 * on one of its members (ms; 0: none). */
int64_t kdrv_owed_ckpt_ms(struct kdrv *d, const struct kgang *kg);

/* The wall clock stepped by step_ms (kdrv_clock_check): the status rate limits, the forget times
 * and the owed writes' next sends move by it; what was written (a condition's
 * lastTransitionTime, a checkpoint request's times) does not. */
void kdrv_status_clock_stepped(struct kdrv *d, int64_t step_ms);

/* Frees d->status, d->owed, d->owed_ckpt, d->owed_ckpt_pods, d->owed_status and d->pod_writes
 * (the driver's end). */
void kdrv_status_fini(struct kdrv *d);

/* Pending member pods get PodScheduled=False, reason Unschedulable, with the gang's reason, as
 * kube-scheduler writes it (kubectl describe pod, cluster autoscalers read it): when the gang's
 * status was written (rate-limited there) or the pod has no such condition yet, and only when
 * its message differs. */
void kdrv_pods_unschedulable(struct kdrv *d, struct kpod *const *pods, uint32_t n, bool wrote,
                             const char *reason, const char *message);

/* A Binding of a pod whose own status write (kdrv_pods_unschedulable) is still unanswered waits
 * for that answer (true: b is parked, and kdrv_bind_resume sends it then), so that it carries the
 * resourceVersion that write made instead of failing its precondition on it. */
bool kdrv_pod_writes_park(struct kdrv *d, struct kbind *b);

/* ---- driver_bind.c ---- */

void kdrv_gang_binds_free(struct kgang_binds *gb);
/* Sends the Binding of b parked by kdrv_pod_writes_park (the pod's version now the newest). */
void kdrv_bind_resume(struct kbind *b);

/* Writes status.allocation and status.reservedFor of every claim of the pod (resourceclaims/
 * status, as kube-scheduler's DynamicResources PreBind), the devices being the node's DRA GPUs
 * of the pod's GPU mask in index order, then sends its Binding; a pod without claims is bound
 * at once. A failed write fails the bind (the gang rolls back whole). */
void kdrv_send_claims_then_bind(struct kdrv *d, struct kbind *b, const char *flavor);
/* The same without KEP-5004's claim (driver_ext.c calls it once that claim is written). */
void kdrv_claims_then_bind(struct kdrv *d, struct kbind *b, const char *flavor);
/* The claim as the API server answered it goes into the cache (a newer view than the watch's
 * may yet be). */
void kdrv_claim_answer_to_cache(struct kdrv *d, const struct kube_resp *r);
/* The DRA device names of GPUs `mask` of node (devices in index order); false when one is not a
 * DRA device. */
bool kdrv_mask_devices(struct kdrv *d, const char *node, uint32_t mask, const char **dev,
                       const char **drv, const char **pool, uint32_t *n);
/* b's bind failed before its Binding was sent (why: the error). */
void kdrv_bind_fail(struct kbind *b, const char *why);

/* A verdict of the core in words (sched_verdict_format) and, for a wait on capacity, the
 * daemon's hint of the gang (kgang.hint), into buf[n]: the one text of status, Events and the
 * decision log (driver_record.c). */
void kdrv_verdict_text(const struct kcache_build *kb, const struct sched_verdict *vd,
                       const struct config *cfg, char *buf, size_t n);

/* ---- driver_shared.c: the claims several members of a gang bind name ---- */

/* The reservedFor entry of claim i of pod p: the pod, or its PodGroup for a claim the PodGroup
 * lists alike (KEP-5729, dra.h kdra_who). */
struct kdra_ref kdrv_claim_ref(const struct kpod *p, uint32_t i);
/* The entry of claim `key` into *s when more than one member of gb names it, else NULL (the
 * table built at the first call); -1 out of memory. */
int kdrv_shared(struct kdrv *d, struct kgang_binds *gb, const char *key, struct kshared **s);
/* The reservedFor entries of s's consumers into who[] (each once, at most KDRA_MAX_CONSUMERS):
 * their count. */
uint32_t kdrv_shared_who(struct kdrv *d, const struct kgang_binds *gb, const struct kshared *s,
                         struct kdra_ref *who);
void kdrv_shared_free(struct kgang_binds *gb);

/* ---- driver_unreserve.c: the claims of a member never bound, given back ---- */

/* kube-scheduler's DynamicResources Unreserve for member b of a rolled-back gang, whose Binding
 * definitely did not happen (driver_unreserve.c). */
void kdrv_unreserve_claims(struct kdrv *d, struct kgang_binds *gb, const struct kbind *b);

/* ---- driver_ext.c: KEP-5004's claim before a Binding (sched/kube/dra.h) ---- */

/* Whether pod b asks GPUs in its containers and is placed on GPUs that are DRA devices. */
bool kdrv_ext_needed(struct kdrv *d, const struct kbind *b);
/* Writes its claim and its status, then kdrv_claims_then_bind; a failure fails the bind. */
void kdrv_ext_then_bind(struct kdrv *d, struct kbind *b, const char *flavor);
/* A member of a rolled-back gang, never bound: the claim its writes created is deleted. */
void kdrv_ext_rollback(struct kdrv *d, struct kbind *b);
/* Deletes the claims earlier attempts left for pending pods of ours (kb->ext_stale; kube-
 * scheduler's PostFilter deletes such a claim): their devices are free once they are gone. */
void kdrv_ext_sweep(struct kdrv *d, const struct kcache_build *kb);

/* The database is opened by the leader only (standbys never write). */
int kdrv_open_store(struct kdrv *d);

/* Resolves what a previous leader left: first the fences (returns 1 while they are answered),
 * then the open intents judged from the pods as read back. */
int kdrv_recover(struct kdrv *d);

/* The cycle's binds (step 4 of driver.c): every member of every placed gang assumed in the cache,
 * then sent. */
void kdrv_binds_start(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                      const struct config *cfg);

/* ---- driver_life.c ---- */

/* Evicts a victim gang's members; a native PodGroup gets DisruptionTarget=True reason
 * PreemptionByScheduler first. */
void kdrv_evict_gang(struct kdrv *d, const struct kgang *victim, const char *message);
/* Evicts victim's members pods[0 .. n) alone (an elastic gang's shrink): no PodGroup
 * condition, the gang runs on. */
void kdrv_evict_members(struct kdrv *d, const struct kgang *victim, const uint32_t *pods,
                        uint32_t n, const char *message);
/* Evictions that failed (the client's retries over; a 429 without --evict-fallback-delete) are
 * sent again, 1 s after the failure doubling to 30 s, while the pod (the same uid) is there and
 * not deleted: nothing else sends them again (the victim is being evicted: no plan takes it
 * again). Called at each cycle. */
void kdrv_evictions_retry(struct kdrv *d, int64_t now);
void kdrv_evictions_fini(struct kdrv *d);

/* Deletes a pod once, with its uid as a precondition; from the moment it is sent the pod counts
 * as deleting (kcache_delete_sent). */
void kdrv_delete_pod(struct kdrv *d, const char *ns, const char *name, const char *why);

/* Once per change of state: warns when the nodes have none of the configured accelerator, naming
 * the extended resources they do have (a device.resource typo, or the wrong device plugin). */
void kdrv_warn_no_device(struct kdrv *d, const struct cluster *c);

/* Reads the wall clock and CLOCK_BOOTTIME (monotonic, counting a suspend as time passed, as the
 * wall clock does) together and returns the wall clock's step since the last call (ms, > 0
 * forward; 0: none, eng_clock_step's rule). A step moves every deadline of the driver and its
 * engine that is a duration from an event of this run (eng_clock_stepped, eng_fair_clock_stepped,
 * kdrv_status_clock_stepped; the next cycle's due times, the sweep and fair-share write times,
 * the gangs' last sightings), not the instants read from or written to the API. Called at every
 * tick of the cycle timer (cycle_due), cycle or not: a step back no longer delays the cycle that
 * would have seen it by the step's length. */
int64_t kdrv_clock_check(struct kdrv *d);

/* The lifecycle step of a cycle: node health into the snapshot, broken gangs torn down, gangs
 * that gave up kept out of the queues. */
int kdrv_lifecycle_step(struct kdrv *d, struct kcache_build *kb, const struct config *cfg,
                        int64_t now, struct sched_errbuf *eb);
/* Pending gangs the engine does not schedule leave the queues' views (eng_job_schedulable): gave
 * up (FAILED: their status says so), backing off, or torn down (TEARING: the new members of a
 * gang being evicted or rolled back wait for its next run, a decision row says so). The
 * lifecycle step calls it, and the cycle again before its decisions: a checkpoint handshake that
 * ends in between (kdrv_ckpt_step) tears its gang down, whose new members must not join it.
 * since: what tore gangs down since the last call (logged with each such gang), or NULL. */
void kdrv_views_schedulable(struct kdrv *d, struct kcache_build *kb, int64_t now,
                            const char *since);

/* ---- driver_record.c ---- */

void kdrv_kjob_free(struct kjob *j);

/* Charges (sign +1) or releases (-1) a job's GPUs in the ledger and tracks it in d->jobs. */
int kdrv_job_charge(struct kdrv *d, const char *gang, const char *queue, const char *flavor,
                    int64_t gpus, int sign, struct sched_errbuf *eb);
/* Charges gang g's devices under its device kind's resource name (res.h "device kinds"). */
int kdrv_job_charge_gang(struct kdrv *d, const char *key, const char *queue, const char *flavor,
                         const struct gang *g, struct sched_errbuf *eb);
/* A charged job's GPUs become gpus (same queue, flavor and kind): an elastic gang whose later
 * members' binds failed keeps the charge of those that run. 0 when it is not charged. */
int kdrv_job_recharge(struct kdrv *d, const char *gang, int64_t gpus, struct sched_errbuf *eb);
int kdrv_strlist_add(struct strlist *l, const char *str);

void kdrv_strlist_free(struct strlist *l);

/* A gang not offered to the core (pods missing, no or unknown queue, invalid spec): a job row
 * (its queue label, or "-"; GPUs unknown yet: 0) and a decision naming why, so that `gangctl
 * jobs` lists it and `explain` finds it. The store keeps one decision row per change. */
int kdrv_waiting_gang_records(struct kdrv *d, const struct kwaiting *w, int64_t now,
                              struct sched_errbuf *eb);

/* A gang waiting in a queue (a verdict, or a held queue) has a job row, so that `gangctl jobs`
 * lists it and `gangctl explain` finds it; a placeholder row of a gang that waited for its pods
 * (no GPUs known) takes its queue and GPUs once it has them. */
int kdrv_waiting_job_row(struct kdrv *d, const char *key, const char *queue, const struct gang *g,
                         struct sched_errbuf *eb);

/* Victim gang `victim` leaves at `now` (evicted at once, or at the end of its checkpoint
 * handshake): its job row back to pending with one more preemption (under queue, NULL: its
 * row's) and the run it ends added to its earlier runs (kdrv_run_ended), its charge and
 * placements released. Inside a store transaction. */
int kdrv_record_evicted(struct kdrv *d, const char *victim, const char *queue, int64_t now,
                        struct sched_errbuf *eb);
/* The run of old (gang's row before it leaves its run at now) into the row's earlier runs
 * (store_job_ran_put), as the simulator counts a job's busy time over its runs: what a gang
 * that ran more than once teaches the run-time estimates (driver_est.c). A row with no run
 * started writes nothing. Inside a store transaction. */
int kdrv_run_ended(struct kdrv *d, const char *gang, const struct store_job *old, int64_t now,
                   struct sched_errbuf *eb);

int kdrv_record_cycle(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                      const struct config *cfg, int64_t now, struct sched_errbuf *eb);

/* ---- driver_est.c ---- */

/* A job that ended by itself (its row as it was while running) teaches its run time, now minus
 * its start plus its earlier runs (ran_ms: runs a preemption or a restart ended), to the
 * estimates of its queue and shape, as the simulator's job teaches its busy time. */
void kdrv_est_learn(struct kdrv *d, const struct store_job *j, int64_t now);
/* The cycle's run times from what was learned, as the simulator gives them: the safe ones for
 * decisions (kb->snap.runtime_src's safe answers, kb->state's release_ms) and the typical ones
 * for the start planner (runtime_src's typical answers, release_typ_ms, releases). Before
 * kcache_base: the releases are part of the node state it compares. 0 or SCHED_ENOMEM. */
int kdrv_est_plan(struct kdrv *d, struct kcache_build *kb, const struct config *cfg, int64_t now);
/* Forgets the running gangs' kept ends (each is computed again at the next plan). */
void kdrv_est_ends_clear(struct kdrv *d);
void kdrv_est_fini(struct kdrv *d);

/* ---- driver_fair.c ---- */

/* Before the core: the fair-share history (restored from the store at the first cycle with it
 * open) integrated up to now, offered as kb->snap.hist_share. 0 or SCHED_ENOMEM. */
int kdrv_fair_offer(struct kdrv *d, struct kcache_build *kb, const struct config *cfg, int64_t now);

/* ---- the cycle's time budget (driver_budget.c) ---- */
/* The core's deadline in snap: KDRV_BUDGET_MARGIN_MS short of the Lease's renew deadline, and
 * within --cycle-budget; none without either. */
void kdrv_budget(struct kdrv *d, struct sched_snapshot *snap);
/* kb->snap.pass_over from the keys in passed (none when it is empty), in a's memory. */
void kdrv_pass_over(const struct strmap *passed, struct kcache_build *kb, struct arena *a);
/* After the core: a cut-short result adds the gangs it tried and could not place (not those
 * that hold a reservation) to passed; an uncut one empties it. */
void kdrv_chain(struct strmap *passed, const struct kcache_build *kb,
                const struct sched_result *res);
/* In the cycle's transaction, after the core: the share of the usage the decisions leave (held
 * until the next cycle), and the history's rows written when due. */
int kdrv_fair_record(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                     const struct config *cfg, int64_t now, struct sched_errbuf *eb);

/* ---- driver_ops.c ---- */

int kdrv_load_operator_hold(void *ctx, const struct store_reservation *r);

int kdrv_http_write(void *ctx, const struct http_write *w, cJSON **result, struct sched_errbuf *eb);

int kdrv_replay_action(void *ctx, const struct store_action *a);

/* Holds and reservation hints offered to the core (kb->snap.holds, reserve_hints): the engine's
 * view (eng_holds_view). */
void kdrv_holds_offer(struct kdrv *d, struct kcache_build *kb, int64_t now);

/* The cycle's reservations into the engine (eng_cycle_reservations): preemptors' holds until
 * ENG_HOLD_MS after the latest cycle that reserved them, starvation reservations as hints. */
void kdrv_holds_take(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                     int64_t now);

#endif
