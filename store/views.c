/* store/views.c: the tenant views of a store (quota, queues, jobs, explain, top, reservations)
 * as cJSON documents; see store/views.h.
 *
 * Owns: the in-memory copy of the tables a view needs (validated: states, ranges, NULL strings;
 * odd content is skipped, never trusted for sizes or indices), the derived figures, and the
 * documents. Moved here from gangctl so that the HTTP API serves exactly what `gangctl --db`
 * prints.
 *
 * Must not touch: the database's content (list functions only), formatting for humans, HTTP.
 * Out of memory is reported (SCHED_ENOMEM), never fatal: the daemon embeds this code.
 */
#include "store/views.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/cycle.h"
#include "store/store.h"

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
    int64_t gang_id, gpus;
    enum store_job_state state;
    int64_t submit_ms, admit_ms, start_ms, finish_ms;
    uint32_t preemptions, restarts;
    uint32_t position; /* pending: 1-based position in its queue; else 0 */
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
    int64_t now_ms; /* the latest time found in the database; STORE_NO_TIME when none */
};

/* ---- memory ---------------------------------------------------------------------------------- */

static char *vdup(struct store_views *v, const char *s)
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
static bool vgrow(struct store_views *v, void **p, size_t *cap, size_t n, size_t sz)
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

static bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The ledger rows of the accelerator (meta 'device'; nvidia.com/gpu by default). */
static bool is_gpu(struct store_views *v, const char *resource)
{
    return str_eq(resource, store_device(v->st));
}

/* ---- JSON helpers: failures set v->oom, checked once per document ------------------------ */

static cJSON *jobj(struct store_views *v, cJSON *parent, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        v->oom = true;
        return NULL;
    }
    if (parent) {
        if (cJSON_IsArray(parent))
            cJSON_AddItemToArray(parent, o);
        else
            cJSON_AddItemToObject(parent, key, o);
    }
    return o;
}

static cJSON *jarr(struct store_views *v, cJSON *parent, const char *key)
{
    cJSON *a = parent ? cJSON_AddArrayToObject(parent, key) : NULL;
    if (!a)
        v->oom = true;
    return a;
}

static void jstr(struct store_views *v, cJSON *o, const char *key, const char *s)
{
    if (!o || !(s ? cJSON_AddStringToObject(o, key, s) : cJSON_AddNullToObject(o, key)))
        v->oom = true;
}

static void jnum(struct store_views *v, cJSON *o, const char *key, double x)
{
    if (!o || !(isfinite(x) ? cJSON_AddNumberToObject(o, key, x) : cJSON_AddNullToObject(o, key)))
        v->oom = true;
}

static void jint(struct store_views *v, cJSON *o, const char *key, int64_t x)
{
    jnum(v, o, key, (double)x);
}

static void jbool(struct store_views *v, cJSON *o, const char *key, bool b)
{
    if (!o || !cJSON_AddBoolToObject(o, key, b))
        v->oom = true;
}

/* An optional time or limit: null when absent. */
static void jopt(struct store_views *v, cJSON *o, const char *key, int64_t x, int64_t absent)
{
    if (x == absent)
        jstr(v, o, key, NULL);
    else
        jint(v, o, key, x);
}

static void jstr_item(struct store_views *v, cJSON *arr, const char *s)
{
    cJSON *it = cJSON_CreateString(s ? s : "");
    if (!arr || !it) {
        cJSON_Delete(it);
        v->oom = true;
        return;
    }
    cJSON_AddItemToArray(arr, it);
}

/* Ends a document: NULL-safe; on a failed allocation deletes it and reports. */
static int finish_doc(struct store_views *v, cJSON *doc, cJSON **out, struct sched_errbuf *eb)
{
    if (!doc || v->oom) {
        v->oom = false;
        cJSON_Delete(doc);
        return sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(v->st));
    }
    *out = doc;
    return 0;
}

/* ---- loading --------------------------------------------------------------------------------- */

static void see_time(struct store_views *v, int64_t t)
{
    if (t != STORE_NO_TIME && (v->now_ms == STORE_NO_TIME || t > v->now_ms))
        v->now_ms = t;
}

static struct queue_rec *find_queue(const struct store_views *v, const char *name)
{
    for (size_t i = 0; i < v->n_queues; i++)
        if (str_eq(v->queues[i].name, name))
            return &v->queues[i];
    return NULL;
}

/* The queue `name`, added as "not configured" when the config does not have it; NULL on OOM. */
static struct queue_rec *queue_ref(struct store_views *v, const char *name)
{
    struct queue_rec *q = find_queue(v, name);
    if (q)
        return q;
    if (!vgrow(v, (void **)&v->queues, &v->cap_queues, v->n_queues, sizeof(*v->queues)))
        return NULL;
    char *copy = vdup(v, name);
    if (!copy)
        return NULL;
    q = &v->queues[v->n_queues++];
    memset(q, 0, sizeof(*q));
    q->name = copy;
    q->weight = 1;
    return q;
}

static int load_queue(void *ctx, const struct store_queue *sq)
{
    struct store_views *v = ctx;
    if (!sq->name || find_queue(v, sq->name))
        return 0;
    struct queue_rec *q = queue_ref(v, sq->name);
    if (!q)
        return SCHED_ENOMEM;
    q->cohort = vdup(v, sq->cohort);
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
            r->flavor = vdup(v, sqq->flavor);
            r->resource = vdup(v, sqq->resource);
            r->nominal = sqq->nominal;
            r->borrowing_limit = sqq->borrowing_limit < 0 ? STORE_NO_LIMIT : sqq->borrowing_limit;
            r->lending_limit = sqq->lending_limit < 0 ? STORE_NO_LIMIT : sqq->lending_limit;
        }
    }
    return v->oom ? SCHED_ENOMEM : 0;
}

static int load_ledger(void *ctx, const struct store_ledger_row *r)
{
    struct store_views *v = ctx;
    if (!r->queue || !r->flavor || !r->resource || r->amount < 0)
        return 0;
    if (!vgrow(v, (void **)&v->ledger, &v->cap_ledger, v->n_ledger, sizeof(*v->ledger)))
        return SCHED_ENOMEM;
    v->ledger[v->n_ledger++] =
        (struct ledger_rec){vdup(v, r->queue), vdup(v, r->flavor), vdup(v, r->resource), r->amount};
    return v->oom ? SCHED_ENOMEM : 0;
}

static int load_job(void *ctx, const struct store_job *j)
{
    struct store_views *v = ctx;
    if (!j->gang || !j->queue || (unsigned)j->state > STORE_JOB_FAILED)
        return 0;
    if (!vgrow(v, (void **)&v->jobs, &v->cap_jobs, v->n_jobs, sizeof(*v->jobs)))
        return SCHED_ENOMEM;
    struct job_rec *r = &v->jobs[v->n_jobs++];
    *r = (struct job_rec){
        .gang = vdup(v, j->gang),
        .queue = vdup(v, j->queue),
        .flavor = vdup(v, j->flavor),
        .gang_id = j->gang_id,
        .gpus = j->gpus < 0 ? 0 : j->gpus,
        .state = j->state,
        .submit_ms = j->submit_ms,
        .admit_ms = j->admit_ms,
        .start_ms = j->start_ms,
        .finish_ms = j->finish_ms,
        .preemptions = j->preemptions,
        .restarts = j->restarts,
    };
    see_time(v, j->submit_ms);
    see_time(v, j->admit_ms);
    see_time(v, j->start_ms);
    see_time(v, j->finish_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

static int load_place(void *ctx, const struct store_placement *p)
{
    struct store_views *v = ctx;
    if (!p->gang || !p->node)
        return 0;
    if (!vgrow(v, (void **)&v->places, &v->cap_places, v->n_places, sizeof(*v->places)))
        return SCHED_ENOMEM;
    v->places[v->n_places++] = (struct place_rec){vdup(v, p->gang), vdup(v, p->pod ? p->pod : ""),
                                                  vdup(v, p->node), p->pod_index,
                                                  p->gpu_mask,      p->bound_ms};
    see_time(v, p->bound_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

static int load_resv(void *ctx, const struct store_reservation *r)
{
    struct store_views *v = ctx;
    if (!r->gang || (unsigned)r->kind > STORE_RES_OPERATOR)
        return 0;
    if (!vgrow(v, (void **)&v->resvs, &v->cap_resvs, v->n_resvs, sizeof(*v->resvs)))
        return SCHED_ENOMEM;
    struct resv_rec *x = &v->resvs[v->n_resvs++];
    *x = (struct resv_rec){.id = r->id,
                           .kind = r->kind,
                           .gang = vdup(v, r->gang),
                           .created_ms = r->created_ms,
                           .expires_ms = r->expires_ms,
                           .expected_start_ms = r->expected_start_ms};
    if (r->nodes && r->n_nodes > 0) {
        x->nodes = calloc(r->n_nodes, sizeof(*x->nodes));
        if (!x->nodes)
            return SCHED_ENOMEM;
        for (uint32_t i = 0; i < r->n_nodes; i++)
            if (r->nodes[i])
                x->nodes[x->n_nodes++] = vdup(v, r->nodes[i]);
    }
    see_time(v, r->created_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

static int load_preempt(void *ctx, const struct store_preemption *p)
{
    struct store_views *v = ctx;
    if (!p->victim || !p->preemptor)
        return 0;
    if (!vgrow(v, (void **)&v->preempts, &v->cap_preempts, v->n_preempts, sizeof(*v->preempts)))
        return SCHED_ENOMEM;
    v->preempts[v->n_preempts++] =
        (struct preempt_rec){p->cycle,
                             p->ts_ms,
                             p->gpus,
                             vdup(v, p->victim),
                             vdup(v, p->preemptor),
                             isfinite(p->lost_work_gpu_s) ? p->lost_work_gpu_s : 0,
                             isfinite(p->cost) ? p->cost : 0};
    see_time(v, p->ts_ms);
    return v->oom ? SCHED_ENOMEM : 0;
}

static int load_history(void *ctx, const char *queue, double share, int64_t updated_ms)
{
    struct store_views *v = ctx;
    if (!queue || !isfinite(share) || share < 0)
        return 0;
    struct queue_rec *q = queue_ref(v, queue);
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

static int cmp_queue(const void *a, const void *b)
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
static int load_action(void *ctx, const struct store_action *a)
{
    struct store_views *v = ctx;
    if (a->state != STORE_ACTION_APPLIED || !a->target)
        return 0;
    const char *st = a->kind == STORE_ACT_HOLD     ? "held"
                     : a->kind == STORE_ACT_DRAIN  ? "draining"
                     : a->kind == STORE_ACT_RESUME ? "open"
                                                   : NULL;
    struct queue_rec *q = st ? find_queue(v, a->target) : NULL;
    if (q)
        q->admission = st;
    return 0;
}

int store_views_load(struct store *st, struct store_views **out, struct sched_errbuf *eb)
{
    struct store_views *v = calloc(1, sizeof(*v));
    if (!v)
        return sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(st));
    v->st = st;
    v->now_ms = STORE_NO_TIME;
    (void)store_device(st); /* read the device once, before any list borrows the scratch */
    int err = store_queue_list(st, load_queue, v, eb);
    if (!err)
        err = store_ledger_list(st, load_ledger, v, eb);
    if (!err)
        err = store_job_list(st, load_job, v, eb);
    if (!err)
        err = store_placement_list(st, load_place, v, eb);
    if (!err)
        err = store_reservation_list(st, load_resv, v, eb);
    if (!err)
        err = store_preemption_list(st, load_preempt, v, eb);
    if (!err)
        err = store_history_list(st, load_history, v, eb);
    if (!err)
        err = store_decision_list(st, NULL, 1, latest_decision, v, eb);
    if (!err)
        err = store_action_list(st, false, load_action, v, eb);
    for (size_t i = 0; i < v->n_ledger && !err; i++)
        if (v->ledger[i].queue && !queue_ref(v, v->ledger[i].queue))
            err = SCHED_ENOMEM;
    for (size_t i = 0; i < v->n_jobs && !err; i++) {
        struct job_rec *j = &v->jobs[i];
        struct queue_rec *q = j->queue && j->gang ? queue_ref(v, j->queue) : NULL;
        if (!q)
            err = SCHED_ENOMEM;
        else
            q->n_state[j->state]++;
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
        qsort(v->queues, v->n_queues, sizeof(*v->queues), cmp_queue);
    if (v->n_jobs > 1)
        qsort(v->jobs, v->n_jobs, sizeof(*v->jobs), cmp_job);
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
    }
    free(v->queues);
    free(v->ledger);
    free(v->jobs);
    free(v->places);
    free(v->resvs);
    free(v->preempts);
    free(v);
}

/* ---- derived figures ------------------------------------------------------------------------- */

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static int64_t ledger_used(const struct store_views *v, const char *queue, const char *flavor,
                           const char *resource)
{
    for (size_t i = 0; i < v->n_ledger; i++) {
        const struct ledger_rec *l = &v->ledger[i];
        if (str_eq(l->queue, queue) && (!flavor || str_eq(l->flavor, flavor)) &&
            str_eq(l->resource, resource))
            return l->amount;
    }
    return 0;
}

/* Sum over flavors of the queue's ledger (or nominal quota) for one resource. */
static int64_t queue_total(const struct store_views *v, const struct queue_rec *q,
                           const char *resource, bool nominal)
{
    int64_t sum = 0;
    if (nominal) {
        for (size_t k = 0; k < q->n_quotas; k++)
            if (str_eq(q->quotas[k].resource, resource))
                sum = sat_add(sum, q->quotas[k].nominal);
        return sum;
    }
    for (size_t i = 0; i < v->n_ledger; i++)
        if (str_eq(v->ledger[i].queue, q->name) && str_eq(v->ledger[i].resource, resource))
            sum = sat_add(sum, v->ledger[i].amount);
    return sum;
}

static const struct quota_rec *find_quota(const struct queue_rec *q, const char *flavor,
                                          const char *resource)
{
    for (size_t k = 0; k < q->n_quotas; k++)
        if (str_eq(q->quotas[k].flavor, flavor) && str_eq(q->quotas[k].resource, resource))
            return &q->quotas[k];
    return NULL;
}

/* What queue q could still take of (flavor, resource) now. Without a cohort: its unused nominal
 * quota. In a cohort: what the cohort's queues leave unused (each other queue lends at most its
 * lending limit, and uses its unlent part first), within q's own borrowing limit. The store does
 * not record nested cohorts, so queues are pooled by cohort name. */
static int64_t quota_available(const struct store_views *v, const struct queue_rec *q,
                               const struct quota_rec *r, int64_t used)
{
    int64_t own = sat_add(r->nominal, -used);
    if (!q->cohort)
        return own > 0 ? own : 0;
    int64_t cap = r->borrowing_limit == STORE_NO_LIMIT
                      ? INT64_MAX
                      : sat_add(sat_add(r->nominal, r->borrowing_limit), -used);
    int64_t pool = own;
    for (size_t i = 0; i < v->n_queues; i++) {
        const struct queue_rec *o = &v->queues[i];
        if (o == q || !str_eq(o->cohort, q->cohort))
            continue;
        const struct quota_rec *oq = find_quota(o, r->flavor, r->resource);
        int64_t onom = oq ? oq->nominal : 0;
        int64_t lend = oq && oq->lending_limit != STORE_NO_LIMIT && oq->lending_limit < onom
                           ? oq->lending_limit
                           : onom;
        int64_t oused = ledger_used(v, o->name, r->flavor, r->resource);
        int64_t beyond = sat_add(oused, -(onom - lend)); /* what o takes from the shared part */
        pool = sat_add(pool, lend - (beyond > 0 ? beyond : 0));
    }
    int64_t avail = pool < cap ? pool : cap;
    return avail > 0 ? avail : 0;
}

struct quota_line {
    const char *flavor, *resource;
    int64_t nominal, borrowing_limit, lending_limit, used, borrowed, available;
    bool configured;
};

/* The quota lines of a queue: its configured quotas, then ledger rows it has no quota for.
 * Returns the number of lines; *out NULL (and v->oom) when it cannot allocate them. */
static size_t quota_lines(struct store_views *v, const struct queue_rec *q, struct quota_line **out)
{
    size_t n = 0, cap = 0;
    struct quota_line *ln = NULL;
    *out = NULL;
    for (size_t k = 0; k < q->n_quotas; k++) {
        const struct quota_rec *r = &q->quotas[k];
        if (!vgrow(v, (void **)&ln, &cap, n, sizeof(*ln))) {
            free(ln);
            return 0;
        }
        int64_t used = ledger_used(v, q->name, r->flavor, r->resource);
        ln[n++] = (struct quota_line){r->flavor,
                                      r->resource,
                                      r->nominal,
                                      r->borrowing_limit,
                                      r->lending_limit,
                                      used,
                                      used > r->nominal ? used - r->nominal : 0,
                                      quota_available(v, q, r, used),
                                      true};
    }
    for (size_t i = 0; i < v->n_ledger; i++) {
        const struct ledger_rec *l = &v->ledger[i];
        if (!str_eq(l->queue, q->name) || find_quota(q, l->flavor, l->resource))
            continue;
        if (!vgrow(v, (void **)&ln, &cap, n, sizeof(*ln))) {
            free(ln);
            return 0;
        }
        ln[n++] = (struct quota_line){l->flavor, l->resource, 0, STORE_NO_LIMIT, STORE_NO_LIMIT,
                                      l->amount, l->amount,   0, false};
    }
    *out = ln;
    return n;
}

static void quota_line_json(struct store_views *v, cJSON *arr, const struct quota_line *l)
{
    cJSON *o = jobj(v, arr, NULL);
    jstr(v, o, "flavor", l->flavor);
    jstr(v, o, "resource", l->resource);
    jint(v, o, "nominal", l->nominal);
    jopt(v, o, "borrowing_limit", l->borrowing_limit, STORE_NO_LIMIT);
    jopt(v, o, "lending_limit", l->lending_limit, STORE_NO_LIMIT);
    jint(v, o, "used", l->used);
    jint(v, o, "borrowed", l->borrowed);
    jint(v, o, "available", l->available);
    jbool(v, o, "configured", l->configured);
}

static int not_found_queue(const struct store_views *v, const char *name, struct sched_errbuf *eb)
{
    char q[160];
    sched_quote(name, strlen(name), q, sizeof(q));
    return sched_fail(eb, SCHED_ENOENT, "queue '%s' not found in %s", q, store_path(v->st));
}

static cJSON *new_doc(struct store_views *v)
{
    cJSON *doc = jobj(v, NULL, NULL);
    jopt(v, doc, "now_ms", v->now_ms, STORE_NO_TIME);
    return doc;
}

/* ---- the views ------------------------------------------------------------------------------- */

int store_view_quota(struct store_views *v, const char *only, cJSON **out, struct sched_errbuf *eb)
{
    if (only && !find_queue(v, only))
        return not_found_queue(v, only, eb);
    cJSON *doc = new_doc(v);
    cJSON *jqs = jarr(v, doc, "queues");
    for (size_t i = 0; i < v->n_queues && !v->oom; i++) {
        const struct queue_rec *q = &v->queues[i];
        if (only && strcmp(q->name, only) != 0)
            continue;
        cJSON *jq = jobj(v, jqs, NULL);
        jstr(v, jq, "name", q->name);
        jstr(v, jq, "cohort", q->cohort);
        jnum(v, jq, "weight", q->weight);
        jint(v, jq, "priority", q->priority);
        jbool(v, jq, "configured", q->configured);
        if (q->has_share) {
            jnum(v, jq, "share", q->share);
            jint(v, jq, "share_updated_ms", q->share_ms);
        } else {
            jstr(v, jq, "share", NULL);
            jstr(v, jq, "share_updated_ms", NULL);
        }
        struct quota_line *ln = NULL;
        size_t n = quota_lines(v, q, &ln);
        cJSON *ja = jarr(v, jq, "quotas");
        for (size_t k = 0; k < n; k++)
            quota_line_json(v, ja, &ln[k]);
        free(ln);
    }
    return finish_doc(v, doc, out, eb);
}

int store_view_queues(struct store_views *v, cJSON **out, struct sched_errbuf *eb)
{
    cJSON *doc = new_doc(v);
    cJSON *jqs = jarr(v, doc, "queues");
    for (size_t i = 0; i < v->n_queues && !v->oom; i++) {
        const struct queue_rec *q = &v->queues[i];
        int64_t borrowed = 0;
        struct quota_line *ln = NULL;
        size_t n = quota_lines(v, q, &ln);
        for (size_t k = 0; k < n; k++)
            if (is_gpu(v, ln[k].resource))
                borrowed = sat_add(borrowed, ln[k].borrowed);
        free(ln);
        cJSON *o = jobj(v, jqs, NULL);
        jstr(v, o, "name", q->name);
        jstr(v, o, "cohort", q->cohort);
        jnum(v, o, "weight", q->weight);
        jint(v, o, "priority", q->priority);
        jbool(v, o, "configured", q->configured);
        jstr(v, o, "admission", q->admission ? q->admission : "open");
        jint(v, o, "nominal_gpus", queue_total(v, q, store_device(v->st), true));
        jint(v, o, "used_gpus", queue_total(v, q, store_device(v->st), false));
        jint(v, o, "borrowed_gpus", borrowed);
        jint(v, o, "running", q->n_state[STORE_JOB_RUNNING] + q->n_state[STORE_JOB_ADMITTED]);
        jint(v, o, "pending", q->n_state[STORE_JOB_PENDING]);
        jint(v, o, "admitted", q->n_state[STORE_JOB_ADMITTED]);
        jint(v, o, "finished", q->n_state[STORE_JOB_FINISHED]);
        jint(v, o, "failed", q->n_state[STORE_JOB_FAILED]);
        if (q->has_share)
            jnum(v, o, "share", q->share);
        else
            jstr(v, o, "share", NULL);
    }
    return finish_doc(v, doc, out, eb);
}

/* Pending: how long it has waited so far; otherwise how long it waited before its first start. */
static int64_t job_wait(const struct store_views *v, const struct job_rec *j)
{
    if (j->submit_ms == STORE_NO_TIME)
        return STORE_NO_TIME;
    int64_t end = j->state == STORE_JOB_PENDING  ? v->now_ms
                  : j->start_ms != STORE_NO_TIME ? j->start_ms
                  : j->admit_ms != STORE_NO_TIME ? j->admit_ms
                                                 : j->finish_ms;
    if (end == STORE_NO_TIME || end < j->submit_ms)
        return STORE_NO_TIME;
    return end - j->submit_ms;
}

static void job_json(struct store_views *v, cJSON *o, const struct job_rec *j)
{
    jstr(v, o, "job", j->gang);
    jstr(v, o, "queue", j->queue);
    jstr(v, o, "flavor", j->flavor);
    jstr(v, o, "state", store_job_state_name(j->state));
    jint(v, o, "gpus", j->gpus);
    if (j->position)
        jint(v, o, "position", j->position);
    else
        jstr(v, o, "position", NULL);
    jopt(v, o, "submit_ms", j->submit_ms, STORE_NO_TIME);
    jopt(v, o, "admit_ms", j->admit_ms, STORE_NO_TIME);
    jopt(v, o, "start_ms", j->start_ms, STORE_NO_TIME);
    jopt(v, o, "finish_ms", j->finish_ms, STORE_NO_TIME);
    jopt(v, o, "wait_ms", job_wait(v, j), STORE_NO_TIME);
    jint(v, o, "preemptions", j->preemptions);
    jint(v, o, "restarts", j->restarts);
    /* nodes and GPUs of its placed pods, in pod order */
    cJSON *nodes = jarr(v, o, "nodes");
    for (size_t i = 0; i < v->n_places; i++) {
        const struct place_rec *p = &v->places[i];
        if (!str_eq(p->gang, j->gang))
            continue;
        cJSON *n = jobj(v, nodes, NULL);
        jstr(v, n, "node", p->node);
        jint(v, n, "gpus", __builtin_popcount(p->gpu_mask));
    }
}

int store_view_jobs(struct store_views *v, const char *only, bool all, cJSON **out,
                    struct sched_errbuf *eb)
{
    if (only && !find_queue(v, only))
        return not_found_queue(v, only, eb);
    cJSON *doc = new_doc(v);
    cJSON *ja = jarr(v, doc, "jobs");
    for (size_t i = 0; i < v->n_jobs && !v->oom; i++) {
        const struct job_rec *j = &v->jobs[i];
        if (only && strcmp(j->queue, only) != 0)
            continue;
        if (!all && j->state != STORE_JOB_PENDING && j->state != STORE_JOB_ADMITTED &&
            j->state != STORE_JOB_RUNNING)
            continue;
        job_json(v, jobj(v, ja, NULL), j);
    }
    return finish_doc(v, doc, out, eb);
}

static const char *why_name(int why)
{
    return why >= SCHED_WHY_PLACED && why <= SCHED_WHY_QUOTA_NEVER
               ? sched_why_name((enum sched_why)why)
               : "unknown";
}

struct dec_ctx {
    struct store_views *v;
    cJSON *arr;
    uint32_t limit, total;
};

static int collect_decision(void *ctx, const struct store_decision *d)
{
    struct dec_ctx *c = ctx;
    c->total++;
    if (c->limit && c->total > c->limit)
        return 0;
    cJSON *o = jobj(c->v, c->arr, NULL);
    jint(c->v, o, "id", d->id);
    jint(c->v, o, "cycle", d->cycle);
    jopt(c->v, o, "ts_ms", d->ts_ms, STORE_NO_TIME);
    jstr(c->v, o, "why", why_name(d->why));
    jint(c->v, o, "why_code", d->why);
    jstr(c->v, o, "reason", d->reason ? d->reason : "");
    return c->v->oom ? SCHED_ENOMEM : 0;
}

int store_view_explain(struct store_views *v, const char *name, uint32_t limit, cJSON **out,
                       struct sched_errbuf *eb)
{
    const struct job_rec *j = NULL;
    for (size_t i = 0; i < v->n_jobs && !j; i++)
        if (str_eq(v->jobs[i].gang, name))
            j = &v->jobs[i];
    if (!j) {
        char q[160];
        sched_quote(name, strlen(name), q, sizeof(q));
        return sched_fail(eb, SCHED_ENOENT, "job '%s' not found in %s", q, store_path(v->st));
    }
    cJSON *doc = new_doc(v);
    job_json(v, jobj(v, doc, "job"), j);
    cJSON *jp = jarr(v, doc, "placements");
    for (size_t i = 0; i < v->n_places; i++) {
        const struct place_rec *p = &v->places[i];
        if (!str_eq(p->gang, j->gang))
            continue;
        cJSON *o = jobj(v, jp, NULL);
        jint(v, o, "pod_index", p->pod_index);
        jstr(v, o, "pod", p->pod);
        jstr(v, o, "node", p->node);
        jint(v, o, "gpus", __builtin_popcount(p->gpu_mask));
        jint(v, o, "gpu_mask", p->gpu_mask);
        jopt(v, o, "bound_ms", p->bound_ms, STORE_NO_TIME);
    }
    cJSON *jr = jarr(v, doc, "reservations");
    for (size_t i = 0; i < v->n_resvs; i++) {
        const struct resv_rec *r = &v->resvs[i];
        if (!str_eq(r->gang, j->gang))
            continue;
        cJSON *o = jobj(v, jr, NULL);
        jint(v, o, "id", r->id);
        jstr(v, o, "kind", store_res_kind_name(r->kind));
        cJSON *nodes = jarr(v, o, "nodes");
        for (uint32_t k = 0; k < r->n_nodes; k++)
            jstr_item(v, nodes, r->nodes[k]);
        jopt(v, o, "expected_start_ms", r->expected_start_ms, STORE_NO_TIME);
    }
    /* while pending: its queue's GPU quota, what stands between it and admission */
    cJSON *jq = jarr(v, doc, "queue_quota");
    const struct queue_rec *q = j->state == STORE_JOB_PENDING ? find_queue(v, j->queue) : NULL;
    if (q) {
        struct quota_line *ln = NULL;
        size_t n = quota_lines(v, q, &ln);
        for (size_t k = 0; k < n; k++)
            if (is_gpu(v, ln[k].resource))
                quota_line_json(v, jq, &ln[k]);
        free(ln);
    }
    struct dec_ctx dc = {v, jarr(v, doc, "decisions"), limit, 0};
    int err =
        v->oom ? SCHED_ENOMEM : store_decision_list(v->st, j->gang, 0, collect_decision, &dc, eb);
    if (err && err != SCHED_ENOMEM) {
        cJSON_Delete(doc);
        return err;
    }
    jint(v, doc, "decisions_total", dc.total);
    cJSON *jpre = jarr(v, doc, "preemptions");
    for (size_t i = 0; i < v->n_preempts; i++) {
        const struct preempt_rec *p = &v->preempts[i];
        bool victim = strcmp(p->victim, j->gang) == 0;
        if (!victim && strcmp(p->preemptor, j->gang) != 0)
            continue;
        cJSON *o = jobj(v, jpre, NULL);
        jint(v, o, "cycle", p->cycle);
        jopt(v, o, "ts_ms", p->ts_ms, STORE_NO_TIME);
        jstr(v, o, "role", victim ? "victim" : "preemptor");
        jstr(v, o, "victim", p->victim);
        jstr(v, o, "preemptor", p->preemptor);
        jint(v, o, "gpus", p->gpus);
        jnum(v, o, "lost_work_gpu_s", p->lost_work_gpu_s);
        jnum(v, o, "cost", p->cost);
    }
    return finish_doc(v, doc, out, eb);
}

struct node_use {
    const char *node;
    int64_t gpus;
    uint32_t pods, jobs;
    const char *last_gang;
};

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const struct node_use *)a)->node, ((const struct node_use *)b)->node);
}

int store_view_top(struct store_views *v, cJSON **out, struct sched_errbuf *eb)
{
    cJSON *doc = new_doc(v);
    int64_t total = 0;
    cJSON *jq = jarr(v, doc, "queues");
    for (size_t i = 0; i < v->n_ledger; i++) {
        const struct ledger_rec *l = &v->ledger[i];
        if (!is_gpu(v, l->resource))
            continue;
        total = sat_add(total, l->amount);
        const struct queue_rec *q = find_queue(v, l->queue);
        const struct quota_rec *r = q ? find_quota(q, l->flavor, l->resource) : NULL;
        uint32_t running = 0;
        for (size_t k = 0; k < v->n_jobs; k++)
            if (str_eq(v->jobs[k].queue, l->queue) && str_eq(v->jobs[k].flavor, l->flavor) &&
                (v->jobs[k].state == STORE_JOB_RUNNING || v->jobs[k].state == STORE_JOB_ADMITTED))
                running++;
        cJSON *o = jobj(v, jq, NULL);
        jstr(v, o, "queue", l->queue);
        jstr(v, o, "flavor", l->flavor);
        jint(v, o, "used_gpus", l->amount);
        jint(v, o, "nominal_gpus", r ? r->nominal : 0);
        jint(v, o, "running", running);
    }
    /* by node, from the placements (sorted by gang, so a gang's pods are adjacent) */
    struct node_use *nu = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < v->n_places; i++) {
        const struct place_rec *p = &v->places[i];
        struct node_use *u = NULL;
        for (size_t k = 0; k < n && !u; k++)
            if (strcmp(nu[k].node, p->node) == 0)
                u = &nu[k];
        if (!u) {
            if (!vgrow(v, (void **)&nu, &cap, n, sizeof(*nu)))
                break;
            u = &nu[n++];
            *u = (struct node_use){p->node, 0, 0, 0, NULL};
        }
        u->gpus += __builtin_popcount(p->gpu_mask);
        u->pods++;
        if (!str_eq(u->last_gang, p->gang)) {
            u->jobs++;
            u->last_gang = p->gang;
        }
    }
    if (n > 1)
        qsort(nu, n, sizeof(*nu), cmp_node);
    int64_t placed = 0;
    for (size_t k = 0; k < n; k++)
        placed += nu[k].gpus;
    jint(v, doc, "used_gpus", total);
    jint(v, doc, "placed_gpus", placed);
    cJSON *jn = jarr(v, doc, "nodes");
    for (size_t k = 0; k < n; k++) {
        cJSON *o = jobj(v, jn, NULL);
        jstr(v, o, "node", nu[k].node);
        jint(v, o, "gpus", nu[k].gpus);
        jint(v, o, "pods", nu[k].pods);
        jint(v, o, "jobs", nu[k].jobs);
    }
    free(nu);
    return finish_doc(v, doc, out, eb);
}

int store_view_reservations(struct store_views *v, cJSON **out, struct sched_errbuf *eb)
{
    cJSON *doc = new_doc(v);
    cJSON *ja = jarr(v, doc, "reservations");
    for (size_t i = 0; i < v->n_resvs; i++) {
        const struct resv_rec *r = &v->resvs[i];
        cJSON *o = jobj(v, ja, NULL);
        jint(v, o, "id", r->id);
        jstr(v, o, "kind", store_res_kind_name(r->kind));
        jstr(v, o, "job", r->gang);
        cJSON *nodes = jarr(v, o, "nodes");
        for (uint32_t k = 0; k < r->n_nodes; k++)
            jstr_item(v, nodes, r->nodes[k]);
        jopt(v, o, "created_ms", r->created_ms, STORE_NO_TIME);
        jopt(v, o, "expires_ms", r->expires_ms, STORE_NO_TIME);
        jopt(v, o, "expected_start_ms", r->expected_start_ms, STORE_NO_TIME);
    }
    return finish_doc(v, doc, out, eb);
}
