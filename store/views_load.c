/* store/views_load.c: store_views_load and store_views_free (see store/views.h): every table a
 * tenant view needs, read once into memory, validated (states, ranges, NULL strings; odd rows
 * are skipped, never trusted for sizes or indices), sorted, with each pending job's position and
 * each job's newest decision.
 *
 * Must not touch: the database's content (list functions only), the documents (store/views.c).
 * Out of memory is reported (SCHED_ENOMEM), never fatal: the daemon embeds this code.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/cycle.h"
#include "store/views_int.h"

/* ---- memory ---------------------------------------------------------------------------------- */

char *views_vdup(struct store_views *v, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d) {
        v->oom = true;
        return NULL;
    }
    memcpy(d, s, n);
    return d;
}

/* Grows *p (elements of size sz) so that index n fits; false (and v->oom) when it cannot. */
bool views_vgrow(struct store_views *v, void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c <= n)
        c *= 2;
    void *q = c <= SIZE_MAX / sz ? realloc(*p, c * sz) : NULL;
    if (!q) {
        v->oom = true;
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

bool views_str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The ledger rows of the accelerator (meta 'device'; nvidia.com/gpu by default). */
bool views_is_gpu(struct store_views *v, const char *resource)
{
    return store_is_device(v->st, resource);
}

/* Adds n to the admitted and running jobs of (queue, flavor); false on out of memory. */
bool views_add_running(struct store_views *v, const char *queue, const char *flavor, uint32_t n)
{
    for (size_t i = 0; i < v->n_runs; i++)
        if (views_str_eq(v->runs[i].queue, queue) && views_str_eq(v->runs[i].flavor, flavor)) {
            v->runs[i].n += n;
            return true;
        }
    if (!views_vgrow(v, (void **)&v->runs, &v->cap_runs, v->n_runs, sizeof(*v->runs)))
        return false;
    struct run_rec *r = &v->runs[v->n_runs++];
    *r = (struct run_rec){views_vdup(v, queue), views_vdup(v, flavor), n};
    return !v->oom;
}

uint32_t views_running(const struct store_views *v, const char *queue, const char *flavor)
{
    for (size_t i = 0; i < v->n_runs; i++)
        if (views_str_eq(v->runs[i].queue, queue) && views_str_eq(v->runs[i].flavor, flavor))
            return v->runs[i].n;
    return 0;
}

/* ---- loading --------------------------------------------------------------------------------- */

static void see_time(struct store_views *v, int64_t t)
{
    if (t != STORE_NO_TIME && (v->now_ms == STORE_NO_TIME || t > v->now_ms))
        v->now_ms = t;
}

struct queue_rec *views_find_queue(const struct store_views *v, const char *name)
{
    for (size_t i = 0; i < v->n_queues; i++)
        if (views_str_eq(v->queues[i].name, name))
            return &v->queues[i];
    return NULL;
}

/* The queue `name`, added as "not configured" when the config does not have it; NULL on OOM. */
struct queue_rec *views_queue_ref(struct store_views *v, const char *name)
{
    struct queue_rec *q = views_find_queue(v, name);
    if (q)
        return q;
    if (!views_vgrow(v, (void **)&v->queues, &v->cap_queues, v->n_queues, sizeof(*v->queues)))
        return NULL;
    char *copy = views_vdup(v, name);
    if (!copy)
        return NULL;
    q = &v->queues[v->n_queues++];
    memset(q, 0, sizeof(*q));
    q->name = copy;
    q->weight = 1;
    return q;
}

int views_load_queue(void *ctx, const struct store_queue *sq)
{
    struct store_views *v = ctx;
    if (!sq->name || views_find_queue(v, sq->name))
        return 0;
    struct queue_rec *q = views_queue_ref(v, sq->name);
    if (!q)
        return SCHED_ENOMEM;
    q->cohort = views_vdup(v, sq->cohort);
    q->weight = sq->weight;
    q->priority = sq->priority;
    q->configured = true;
    if (sq->n_quotas > 0 && sq->quotas) {
        q->quotas = calloc(sq->n_quotas, sizeof(*q->quotas));
        if (!q->quotas)
            return SCHED_ENOMEM;
        for (uint32_t i = 0; i < sq->n_quotas; i++) {
            const struct store_quota *sqq = &sq->quotas[i];
            if (!sqq->flavor || !sqq->resource || sqq->nominal < 0)
                continue;
            struct quota_rec *r = &q->quotas[q->n_quotas++];
            r->flavor = views_vdup(v, sqq->flavor);
            r->resource = views_vdup(v, sqq->resource);
            r->nominal = sqq->nominal;
            r->borrowing_limit = sqq->borrowing_limit < 0 ? STORE_NO_LIMIT : sqq->borrowing_limit;
            r->lending_limit = sqq->lending_limit < 0 ? STORE_NO_LIMIT : sqq->lending_limit;
        }
    }
    return v->oom ? SCHED_ENOMEM : 0;
}

int views_load_ledger(void *ctx, const struct store_ledger_row *r)
{
    struct store_views *v = ctx;
    if (!r->queue || !r->flavor || !r->resource || r->amount < 0)
        return 0;
    if (!views_vgrow(v, (void **)&v->ledger, &v->cap_ledger, v->n_ledger, sizeof(*v->ledger)))
        return SCHED_ENOMEM;
    v->ledger[v->n_ledger++] = (struct ledger_rec){
        views_vdup(v, r->queue), views_vdup(v, r->flavor), views_vdup(v, r->resource), r->amount};
    return v->oom ? SCHED_ENOMEM : 0;
}

int views_load_job(void *ctx, const struct store_job *j)
{
    struct store_views *v = ctx;
    if (!j->gang || !j->queue || (unsigned)j->state > STORE_JOB_FAILED)
        return 0;
    if (!views_vgrow(v, (void **)&v->jobs, &v->cap_jobs, v->n_jobs, sizeof(*v->jobs)))
        return SCHED_ENOMEM;
    struct job_rec *r = &v->jobs[v->n_jobs++];
    *r = (struct job_rec){
        .gang = views_vdup(v, j->gang),
        .queue = views_vdup(v, j->queue),
        .flavor = views_vdup(v, j->flavor),
        .user = views_vdup(v, j->user),
        .gang_id = j->gang_id,
        .gpus = j->gpus < 0 ? 0 : j->gpus,
        .state = j->state,
        .submit_ms = j->submit_ms,
        .admit_ms = j->admit_ms,
        .start_ms = j->start_ms,
        .finish_ms = j->finish_ms,
        .preemptions = j->preemptions,
        .restarts = j->restarts,
        .why = -1,
        .reason_ms = STORE_NO_TIME,
        .requeue_ms = STORE_NO_TIME,
        .evict_ms = STORE_NO_TIME,
        .whole_ms = STORE_NO_TIME,
        .members_ms = STORE_NO_TIME,
        .run_ms = STORE_NO_TIME,
    };
    see_time(v, j->submit_ms);
    see_time(v, j->admit_ms);
    see_time(v, j->start_ms);
    see_time(v, j->finish_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

int views_load_place(void *ctx, const struct store_placement *p)
{
    struct store_views *v = ctx;
    if (!p->gang || !p->node)
        return 0;
    if (!views_vgrow(v, (void **)&v->places, &v->cap_places, v->n_places, sizeof(*v->places)))
        return SCHED_ENOMEM;
    v->places[v->n_places++] = (struct place_rec){views_vdup(v, p->gang),
                                                  views_vdup(v, p->pod ? p->pod : ""),
                                                  views_vdup(v, p->node),
                                                  p->pod_index,
                                                  p->gpu_mask,
                                                  p->bound_ms};
    see_time(v, p->bound_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

int views_load_resv(void *ctx, const struct store_reservation *r)
{
    struct store_views *v = ctx;
    if (!r->gang || (unsigned)r->kind > STORE_RES_OPERATOR)
        return 0;
    if (!views_vgrow(v, (void **)&v->resvs, &v->cap_resvs, v->n_resvs, sizeof(*v->resvs)))
        return SCHED_ENOMEM;
    struct resv_rec *x = &v->resvs[v->n_resvs++];
    *x = (struct resv_rec){.id = r->id,
                           .kind = r->kind,
                           .gang = views_vdup(v, r->gang),
                           .created_ms = r->created_ms,
                           .expires_ms = r->expires_ms,
                           .expected_start_ms = r->expected_start_ms};
    if (r->nodes && r->n_nodes > 0) {
        x->nodes = calloc(r->n_nodes, sizeof(*x->nodes));
        if (!x->nodes)
            return SCHED_ENOMEM;
        for (uint32_t i = 0; i < r->n_nodes; i++)
            if (r->nodes[i])
                x->nodes[x->n_nodes++] = views_vdup(v, r->nodes[i]);
    }
    see_time(v, r->created_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

int views_load_preempt(void *ctx, const struct store_preemption *p)
{
    struct store_views *v = ctx;
    if (!p->victim || !p->preemptor)
        return 0;
    if (!views_vgrow(v, (void **)&v->preempts, &v->cap_preempts, v->n_preempts,
                     sizeof(*v->preempts)))
        return SCHED_ENOMEM;
    v->preempts[v->n_preempts++] =
        (struct preempt_rec){p->cycle,
                             p->ts_ms,
                             p->gpus,
                             views_vdup(v, p->victim),
                             views_vdup(v, p->preemptor),
                             isfinite(p->lost_work_gpu_s) ? p->lost_work_gpu_s : 0,
                             isfinite(p->cost) ? p->cost : 0,
                             p->kind ? views_vdup(v, p->kind) : NULL,
                             p->members > 0 ? p->members : 0};
    see_time(v, p->ts_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

int views_load_history(void *ctx, const char *queue, double share, int64_t updated_ms)
{
    struct store_views *v = ctx;
    if (!queue || !isfinite(share) || share < 0)
        return 0;
    struct queue_rec *q = views_queue_ref(v, queue);
    if (!q)
        return SCHED_ENOMEM;
    q->has_share = true;
    q->share = share;
    q->share_ms = updated_ms;
    see_time(v, updated_ms);
    return 0;
}

static int latest_decision(void *ctx, const struct store_decision *d)
{
    see_time(ctx, d->ts_ms);
    return 0;
}

static int cmp_job_gang(const void *a, const void *b)
{
    return strcmp((*(const struct job_rec *const *)a)->gang,
                  (*(const struct job_rec *const *)b)->gang);
}

struct latest_ctx {
    struct store_views *v;
    struct job_rec **by_gang; /* the jobs sorted by gang */
};

/* The newest decision of a gang: its job's REASON. */
static int latest_of_gang(void *ctx, const struct store_decision *d)
{
    struct latest_ctx *c = ctx;
    struct job_rec key = {.gang = (char *)(uintptr_t)d->gang}, *kp = &key;
    struct job_rec **hit =
        c->v->n_jobs ? bsearch(&kp, c->by_gang, c->v->n_jobs, sizeof(*c->by_gang), cmp_job_gang)
                     : NULL;
    if (!hit || !d->reason)
        return 0;
    free((*hit)->reason);
    (*hit)->reason = views_vdup(c->v, d->reason);
    (*hit)->why = d->why;
    (*hit)->reason_ms = d->ts_ms;
    return c->v->oom ? SCHED_ENOMEM : 0;
}

/* When running job j's current run began: its start, or the first bind of the pods it has
 * placed when later (a restart; the simulator's row keeps the first start). NO_TIME: unknown. */
static int64_t run_began(const struct job_rec *j)
{
    if (j->run_ms == STORE_NO_TIME)
        return j->start_ms;
    return j->start_ms == STORE_NO_TIME || j->run_ms > j->start_ms ? j->run_ms : j->start_ms;
}

/* A running job's newest decision is a verdict made after its last whole preemption. */
static bool running_verdict(const struct job_rec *j)
{
    return j->state == STORE_JOB_RUNNING && j->reason && j->why != SCHED_WHY_PLACED &&
           (j->whole_ms == STORE_NO_TIME || j->reason_ms > j->whole_ms);
}

bool views_members_rejoin(const struct job_rec *j)
{
    int64_t began = run_began(j);
    return running_verdict(j) && j->members_ms != STORE_NO_TIME &&
           (j->whole_ms == STORE_NO_TIME || j->members_ms > j->whole_ms) &&
           (began == STORE_NO_TIME || j->members_ms >= began) && j->reason_ms >= j->members_ms;
}

bool views_members_wait(const struct job_rec *j)
{
    return views_members_rejoin(j) ||
           (running_verdict(j) && j->run_ms != STORE_NO_TIME && j->reason_ms > run_began(j));
}

void views_job_placed(struct job_rec *j, int64_t bound_ms)
{
    if (bound_ms != STORE_NO_TIME && (j->run_ms == STORE_NO_TIME || bound_ms < j->run_ms))
        j->run_ms = bound_ms;
}

void views_job_members(struct job_rec *j, int64_t ts_ms)
{
    if (ts_ms != STORE_NO_TIME && (j->members_ms == STORE_NO_TIME || ts_ms > j->members_ms))
        j->members_ms = ts_ms;
}

void views_job_preempted(struct job_rec *j, int64_t ts_ms)
{
    if (ts_ms == STORE_NO_TIME)
        return;
    if (j->whole_ms == STORE_NO_TIME || ts_ms > j->whole_ms)
        j->whole_ms = ts_ms;
    if (j->state == STORE_JOB_PENDING && (j->requeue_ms == STORE_NO_TIME || ts_ms > j->requeue_ms))
        j->requeue_ms = ts_ms;
    int64_t began = run_began(j);
    if (j->state == STORE_JOB_RUNNING && began != STORE_NO_TIME && ts_ms >= began &&
        (j->evict_ms == STORE_NO_TIME || ts_ms > j->evict_ms))
        j->evict_ms = ts_ms;
}

/* Each job's newest decision, and the time of the last preemption of a job pending again (or
 * of a running one being evicted). */
static int load_reasons(struct store_views *v, struct sched_errbuf *eb)
{
    if (v->n_jobs == 0)
        return 0;
    struct latest_ctx c = {v, malloc(v->n_jobs * sizeof(*c.by_gang))};
    if (!c.by_gang)
        return SCHED_ENOMEM;
    for (size_t i = 0; i < v->n_jobs; i++)
        c.by_gang[i] = &v->jobs[i];
    qsort(c.by_gang, v->n_jobs, sizeof(*c.by_gang), cmp_job_gang);
    int err = store_decision_latest(v->st, latest_of_gang, &c, eb);
    for (size_t i = 0; i < v->n_places && !err; i++) { /* before the preemptions: run_began() */
        struct job_rec key = {.gang = v->places[i].gang}, *kp = &key;
        struct job_rec **hit = bsearch(&kp, c.by_gang, v->n_jobs, sizeof(*c.by_gang), cmp_job_gang);
        if (hit)
            views_job_placed(*hit, v->places[i].bound_ms);
    }
    for (size_t i = 0; i < v->n_preempts && !err; i++) {
        struct job_rec key = {.gang = v->preempts[i].victim}, *kp = &key;
        struct job_rec **hit = bsearch(&kp, c.by_gang, v->n_jobs, sizeof(*c.by_gang), cmp_job_gang);
        if (hit && v->preempts[i].members == 0)
            views_job_preempted(*hit, v->preempts[i].ts_ms);
        else if (hit) /* members alone: the gang runs on, they wait to rejoin it */
            views_job_members(*hit, v->preempts[i].ts_ms);
    }
    free(c.by_gang);
    return err;
}

int views_cmp_queue(const void *a, const void *b)
{
    return strcmp(((const struct queue_rec *)a)->name, ((const struct queue_rec *)b)->name);
}

static int state_rank(enum store_job_state s)
{
    switch (s) {
    case STORE_JOB_PENDING:
        return 0;
    case STORE_JOB_ADMITTED:
        return 1;
    case STORE_JOB_RUNNING:
        return 2;
    case STORE_JOB_FINISHED:
        return 3;
    case STORE_JOB_FAILED:
        return 4;
    }
    return 5;
}

/* Queue, then pending (in queue order: submission time, then name), admitted, running,
 * finished, failed; each by submission time, then name. */
static int cmp_job(const void *a, const void *b)
{
    const struct job_rec *x = a, *y = b;
    int c = strcmp(x->queue, y->queue);
    if (c)
        return c;
    c = state_rank(x->state) - state_rank(y->state);
    if (c)
        return c;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return strcmp(x->gang, y->gang);
}

int64_t store_views_now(const struct store_views *v)
{
    return v ? v->now_ms : STORE_NO_TIME;
}

/* Applied hold, drain and resume actions, oldest first: the last one per queue wins. */
int views_load_action(void *ctx, const struct store_action *a)
{
    struct store_views *v = ctx;
    if (a->state != STORE_ACTION_APPLIED || !a->target)
        return 0;
    const char *st = a->kind == STORE_ACT_HOLD     ? "held"
                     : a->kind == STORE_ACT_DRAIN  ? "draining"
                     : a->kind == STORE_ACT_RESUME ? "open"
                                                   : NULL;
    struct queue_rec *q = st ? views_find_queue(v, a->target) : NULL;
    if (q)
        q->admission = st;
    return 0;
}

int views_load_queues(struct store_views *v, struct sched_errbuf *eb)
{
    struct store *st = v->st;
    (void)store_device(st); /* read the device once, before any list borrows the scratch */
    int err = store_queue_list(st, views_load_queue, v, eb);
    if (!err)
        err = store_ledger_list(st, views_load_ledger, v, eb);
    if (!err)
        err = store_history_list(st, views_load_history, v, eb);
    if (!err)
        err = store_action_list(st, false, views_load_action, v, eb);
    for (size_t i = 0; i < v->n_ledger && !err; i++)
        if (v->ledger[i].queue && !views_queue_ref(v, v->ledger[i].queue))
            err = SCHED_ENOMEM;
    return err;
}

int store_views_load(struct store *st, struct store_views **out, struct sched_errbuf *eb)
{
    struct store_views *v = calloc(1, sizeof(*v));
    if (!v)
        return sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(st));
    v->st = st;
    v->now_ms = STORE_NO_TIME;
    int err = views_load_queues(v, eb);
    if (!err)
        err = store_job_list(st, views_load_job, v, eb);
    if (!err)
        err = store_placement_list(st, views_load_place, v, eb);
    if (!err)
        err = store_reservation_list(st, views_load_resv, v, eb);
    if (!err)
        err = store_preemption_list(st, views_load_preempt, v, eb);
    if (!err)
        err = store_decision_list(st, NULL, 1, latest_decision, v, eb);
    for (size_t i = 0; i < v->n_jobs && !err; i++) {
        struct job_rec *j = &v->jobs[i];
        struct queue_rec *q = j->queue && j->gang ? views_queue_ref(v, j->queue) : NULL;
        if (!q)
            err = SCHED_ENOMEM;
        else
            q->n_state[j->state]++;
        if (!err && (j->state == STORE_JOB_ADMITTED || j->state == STORE_JOB_RUNNING) &&
            !views_add_running(v, j->queue, j->flavor, 1))
            err = SCHED_ENOMEM;
    }
    if (!err && v->oom)
        err = SCHED_ENOMEM;
    if (err) {
        if (err == SCHED_ENOMEM)
            sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(st));
        store_views_free(v);
        return err;
    }
    if (v->n_queues > 1)
        qsort(v->queues, v->n_queues, sizeof(*v->queues), views_cmp_queue);
    if (v->n_jobs > 1)
        qsort(v->jobs, v->n_jobs, sizeof(*v->jobs), cmp_job);
    err = load_reasons(v, eb);
    if (err) {
        if (err == SCHED_ENOMEM)
            sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(st));
        store_views_free(v);
        return err;
    }
    uint32_t pos = 0;
    for (size_t i = 0; i < v->n_jobs; i++) {
        struct job_rec *j = &v->jobs[i];
        if (i == 0 || strcmp(j->queue, v->jobs[i - 1].queue) != 0)
            pos = 0;
        if (j->state == STORE_JOB_PENDING)
            j->position = ++pos;
    }
    *out = v;
    return 0;
}

void store_views_free(struct store_views *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_queues; i++) {
        struct queue_rec *q = &v->queues[i];
        for (size_t k = 0; k < q->n_quotas; k++) {
            free(q->quotas[k].flavor);
            free(q->quotas[k].resource);
        }
        free(q->quotas);
        free(q->name);
        free(q->cohort);
    }
    for (size_t i = 0; i < v->n_ledger; i++) {
        free(v->ledger[i].queue);
        free(v->ledger[i].flavor);
        free(v->ledger[i].resource);
    }
    for (size_t i = 0; i < v->n_jobs; i++) {
        free(v->jobs[i].gang);
        free(v->jobs[i].queue);
        free(v->jobs[i].flavor);
        free(v->jobs[i].user);
        free(v->jobs[i].reason);
    }
    for (size_t i = 0; i < v->n_places; i++) {
        free(v->places[i].gang);
        free(v->places[i].pod);
        free(v->places[i].node);
    }
    for (size_t i = 0; i < v->n_resvs; i++) {
        for (uint32_t k = 0; k < v->resvs[i].n_nodes; k++)
            free(v->resvs[i].nodes[k]);
        free(v->resvs[i].nodes);
        free(v->resvs[i].gang);
    }
    for (size_t i = 0; i < v->n_preempts; i++) {
        free(v->preempts[i].victim);
        free(v->preempts[i].preemptor);
        free(v->preempts[i].kind);
    }
    for (size_t i = 0; i < v->n_runs; i++) {
        free(v->runs[i].queue);
        free(v->runs[i].flavor);
    }
    free(v->runs);
    free(v->queues);
    free(v->ledger);
    free(v->jobs);
    free(v->places);
    free(v->resvs);
    free(v->preempts);
    free(v);
}
