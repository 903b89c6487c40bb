/* store/views_int.h: what the two halves of the views share (internal to store/): the records
 * store_views_load copies out of the database (store/views_load.c) and the helpers both halves
 * use; store/views.c derives the figures and builds the documents.
 *
 * Must not touch: anything outside store/views*.c.
 */
#ifndef STORE_VIEWS_INT_H
#define STORE_VIEWS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/views.h"

struct quota_rec {
    char *flavor, *resource;
    int64_t nominal, borrowing_limit, lending_limit;
};

struct queue_rec {
    char *name, *cohort;
    double weight;
    int32_t priority;
    bool configured; /* in the applied configuration (else only in the ledger, jobs or history) */
    struct quota_rec *quotas;
    size_t n_quotas;
    bool has_share;
    double share;
    int64_t share_ms;
    uint32_t n_state[5];   /* jobs per enum store_job_state */
    const char *admission; /* "open", "held" or "draining": the last applied operator action */
};

struct ledger_rec {
    char *queue, *flavor, *resource;
    int64_t amount;
};

struct job_rec {
    char *gang, *queue, *flavor;
    char *user; /* who submitted it, or NULL: not known */
    int64_t gang_id, gpus;
    enum store_job_state state;
    int64_t submit_ms, admit_ms, start_ms, finish_ms;
    uint32_t preemptions, restarts;
    uint32_t position;  /* pending: 1-based position in its queue; else 0 */
    int why;            /* the newest decision's verdict (enum sched_why); -1 when none */
    char *reason;       /* its text (kept current by the store), or NULL */
    int64_t reason_ms;  /* when the job began to wait for that verdict */
    int64_t requeue_ms; /* pending after a preemption: the last one's time; else STORE_NO_TIME */
    int64_t evict_ms;   /* running and preempted during this run (its eviction waits for a
                           checkpoint handshake): that preemption's time; else STORE_NO_TIME */
    int64_t whole_ms;   /* its last preemption of the whole gang, in any state; else NO_TIME */
    int64_t run_ms;     /* the earliest bound_ms of its placed pods: when its current run began
                           (the simulator's start_ms is the first start); else NO_TIME */
    int64_t members_ms; /* its last preemption of members alone (an elastic gang), else NO_TIME */
};

struct place_rec {
    char *gang, *pod, *node;
    uint32_t pod_index, gpu_mask;
    int64_t bound_ms;
};

struct resv_rec {
    int64_t id;
    enum store_res_kind kind;
    char *gang;
    char **nodes;
    uint32_t n_nodes;
    int64_t created_ms, expires_ms, expected_start_ms;
};

struct preempt_rec {
    int64_t cycle, ts_ms, gpus;
    char *victim, *preemptor;
    double lost_work_gpu_s, cost;
    char *kind;      /* NULL: not recorded (a row older than schema version 5) */
    int64_t members; /* 0: the whole gang; else members of an elastic gang evicted alone */
};

struct run_rec {
    char *queue, *flavor;
    uint32_t n; /* admitted and running jobs */
};

struct store_views {
    struct store *st;
    bool oom; /* an allocation failed: the load or the document is incomplete */
    struct queue_rec *queues;
    size_t n_queues, cap_queues;
    struct ledger_rec *ledger;
    size_t n_ledger, cap_ledger;
    struct job_rec *jobs;
    size_t n_jobs, cap_jobs;
    struct place_rec *places;
    size_t n_places, cap_places;
    struct resv_rec *resvs;
    size_t n_resvs, cap_resvs;
    struct preempt_rec *preempts;
    size_t n_preempts, cap_preempts;
    struct run_rec *runs; /* per queue and flavor (top) */
    size_t n_runs, cap_runs;
    int64_t now_ms; /* the latest time found in the database; STORE_NO_TIME when none */
};

/* Memory: failures set v->oom (checked once per load or document), never fatal. */
char *views_vdup(struct store_views *v, const char *s);
/* Grows *p (elements of size sz) so that index n fits; false (and v->oom) when it cannot. */
bool views_vgrow(struct store_views *v, void **p, size_t *cap, size_t n, size_t sz);
bool views_str_eq(const char *a, const char *b);
bool views_is_gpu(struct store_views *v, const char *resource);
struct queue_rec *views_find_queue(const struct store_views *v, const char *name);
/* The queue `name`, added as "not configured" when the config does not have it; NULL on OOM. */
struct queue_rec *views_queue_ref(struct store_views *v, const char *name);
int views_cmp_queue(const void *a, const void *b);
bool views_add_running(struct store_views *v, const char *queue, const char *flavor, uint32_t n);
uint32_t views_running(const struct store_views *v, const char *queue, const char *flavor);

/* The queues with their quotas, the ledger, the fair-share history, the applied operator actions
 * (in that order: an action names a queue read before it) and a queue for every ledger row:
 * where both loads start. */
int views_load_queues(struct store_views *v, struct sched_errbuf *eb);

/* Row callbacks of the store's list functions that copy a row into the views (ctx: the views);
 * odd rows are skipped. store/views_load.c reads whole tables through them, store/views_query.c
 * the rows one route needs. */
int views_load_queue(void *ctx, const struct store_queue *sq);
int views_load_ledger(void *ctx, const struct store_ledger_row *r);
int views_load_job(void *ctx, const struct store_job *j);
int views_load_place(void *ctx, const struct store_placement *p);
int views_load_resv(void *ctx, const struct store_reservation *r);
int views_load_preempt(void *ctx, const struct store_preemption *p);
/* A preemption of job j at ts_ms: a pending job's latest one is its requeue_ms; a running job's
 * made during its current run is its evict_ms (one rule for both reads). */
void views_job_preempted(struct job_rec *j, int64_t ts_ms);
/* A pod of job j placed at bound_ms (its current run's placements). */
void views_job_placed(struct job_rec *j, int64_t bound_ms);
/* A preemption of members of job j alone at ts_ms (an elastic gang runs on without them). */
void views_job_members(struct job_rec *j, int64_t ts_ms);
/* Whether running job j has members waiting to join it: its newest decision is a verdict other
 * than "placed" (a join logs "placed") made during this run and after its last whole
 * preemption, for members preempted alone (views_members_rejoin) or new members of a scale-up
 * (this run's start known from its placed pods). Its reason is then theirs. */
bool views_members_wait(const struct job_rec *j);
/* Whether those members were preempted alone (after its last whole preemption and during this
 * run) and wait to rejoin it, the verdict made since. */
bool views_members_rejoin(const struct job_rec *j);
int views_load_history(void *ctx, const char *queue, double share, int64_t updated_ms);
int views_load_action(void *ctx, const struct store_action *a);

#endif
