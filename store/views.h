/* store/views.h: read-only views of a store as JSON documents, shared by `gangctl --db` (offline
 * mode) and the scheduler's HTTP API (sched/http), so that both answer with the same fields.
 *
 * Owns: reading every table a tenant command needs into memory (store_views_load: validated,
 * copied, sorted), the derived figures (quota lines with borrowed and available amounts, a
 * pending job's position in its queue, waiting times, GPU use per node) and the cJSON documents
 * built from them. Field names are stable: docs/api.md and docs/cli.md document them.
 *
 * Must not touch: the database's content (it only calls store list functions), output
 * formatting for humans (gangctl renders the documents), HTTP.
 *
 * Memory: store_views_load returns an object owning copies of everything; the documents are new
 * cJSON trees the caller deletes. Errors: 0 or a negative SCHED_E* code with a message in eb:
 * SCHED_ENOENT for an unknown queue or job ("queue 'x' not found"), SCHED_ENOMEM, or the store's
 * errors. One views object is used by one thread.
 */
#ifndef STORE_VIEWS_H
#define STORE_VIEWS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sched/core/err.h"

struct store;
struct store_views;

/* Reads every table but the decision log (kept for explain, which reads it from `st`). `st` must
 * stay open while the views are used. */
int store_views_load(struct store *st, struct store_views **out, struct sched_errbuf *eb);
void store_views_free(struct store_views *v);
/* The latest time found in the database (STORE_NO_TIME when none). */
int64_t store_views_now(const struct store_views *v);

/* {"now_ms", "queues": [{name, cohort, weight, priority, configured, share, share_updated_ms,
 *  quotas: [{flavor, resource, nominal, borrowing_limit, lending_limit, used, borrowed,
 *  available, configured}]}]}; queue NULL: every queue. */
int store_view_quota(struct store_views *v, const char *queue, cJSON **out,
                     struct sched_errbuf *eb);
/* {"now_ms", "queues": [{name, cohort, weight, priority, configured, admission ("open", "held",
 *  "draining": operator actions applied), nominal_gpus, used_gpus, borrowed_gpus, running,
 *  pending, admitted, finished, failed, share}]} */
int store_view_queues(struct store_views *v, cJSON **out, struct sched_errbuf *eb);
/* {"now_ms", "jobs": [job]}: pending, admitted and running jobs (all: every job) of one queue
 * (NULL: every queue), by queue, state, submission time. */
int store_view_jobs(struct store_views *v, const char *queue, bool all, cJSON **out,
                    struct sched_errbuf *eb);
/* {"now_ms", "job", "placements", "reservations", "queue_quota", "decisions",
 *  "decisions_total", "preemptions"}: decisions newest first, at most limit (0 = all). */
int store_view_explain(struct store_views *v, const char *job, uint32_t limit, cJSON **out,
                       struct sched_errbuf *eb);
/* {"now_ms", "queues": [{queue, flavor, used_gpus, nominal_gpus, running}], "used_gpus",
 *  "placed_gpus", "nodes": [{node, gpus, pods, jobs}]} */
int store_view_top(struct store_views *v, cJSON **out, struct sched_errbuf *eb);
/* {"now_ms", "reservations": [{id, kind, job, nodes, created_ms, expires_ms,
 *  expected_start_ms}]} */
int store_view_reservations(struct store_views *v, cJSON **out, struct sched_errbuf *eb);

/* One read of the HTTP API, answered from the rows its route needs (store/views_query.c)
 * rather than from store_views_load's whole tables: the same documents, plus paging. */
enum store_read_route {
    STORE_READ_QUOTA,        /* store_view_quota (queue: one, NULL: every queue) */
    STORE_READ_QUEUES,       /* store_view_queues, paged by name */
    STORE_READ_JOBS,         /* store_view_jobs (queue, all), paged in read order */
    STORE_READ_EXPLAIN,      /* store_view_explain (job, limit: decisions) */
    STORE_READ_TOP,          /* store_view_top */
    STORE_READ_RESERVATIONS, /* store_view_reservations, paged by id */
};

struct store_read {
    enum store_read_route route;
    const char *queue; /* QUOTA, JOBS: one queue, or NULL */
    const char *job;   /* EXPLAIN */
    bool all;          /* JOBS: every state */
    uint32_t limit;    /* list routes: items a page (0 = all); EXPLAIN: decisions (0 = all) */
    const char *cont;  /* list routes: the "continue" of the previous page, or NULL */
    uint32_t most;     /* list routes, a whole list (no limit, no cont): items at most, counted
                          before anything is built (job_counts, the queue rows, COUNT(*) of the
                          reservations); 0 = no bound */
};

/* The route's document; on a list route with a limit, "continue" (an opaque token) and
 * "remaining" (items after this page) when more follow. Runs in one read transaction of st (a
 * STORE_READONLY connection serves). A whole list of more than rq->most items builds nothing:
 * 0 with *out NULL. Errors: SCHED_ENOENT (unknown queue or job), SCHED_EINVAL ("continue: not a
 * token of this server"), SCHED_ENOMEM, the store's. */
int store_read_doc(struct store *st, const struct store_read *rq, cJSON **out,
                   struct sched_errbuf *eb);

#endif
