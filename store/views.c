/* store/views.c: the tenant views of a store (quota, queues, jobs, explain, top, reservations)
 * as cJSON documents; see store/views.h.
 *
 * Owns: the derived figures (quota lines with borrowed, lent and available amounts, waits,
 * reasons, GPU use per node) and the documents, from the records store/views_load.c read. Used
 * by gangctl offline and by the HTTP API, so both serve the same bytes.
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
#include "store/views_int.h"

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

/* Fractions are rounded to the 15 significant digits cJSON prints: the document read offline
 * (gangctl --db) and the same document sent over HTTP and parsed again then hold equal numbers
 * (cJSON's shortest form is only within an epsilon of the double). */
static void jnum(struct store_views *v, cJSON *o, const char *key, double x)
{
    if (isfinite(x) && x != floor(x)) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%1.15g", x);
        x = strtod(buf, NULL);
    }
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
        if (views_str_eq(l->queue, queue) && (!flavor || views_str_eq(l->flavor, flavor)) &&
            views_str_eq(l->resource, resource))
            return l->amount;
    }
    return 0;
}

/* Sum over flavors and device kinds of the queue's ledger (or nominal quota) of devices. */
static int64_t queue_total(const struct store_views *v, const struct queue_rec *q, bool nominal)
{
    int64_t sum = 0;
    if (nominal) {
        for (size_t k = 0; k < q->n_quotas; k++)
            if (store_is_device(v->st, q->quotas[k].resource))
                sum = sat_add(sum, q->quotas[k].nominal);
        return sum;
    }
    for (size_t i = 0; i < v->n_ledger; i++)
        if (views_str_eq(v->ledger[i].queue, q->name) &&
            store_is_device(v->st, v->ledger[i].resource))
            sum = sat_add(sum, v->ledger[i].amount);
    return sum;
}

static const struct quota_rec *find_quota(const struct queue_rec *q, const char *flavor,
                                          const char *resource)
{
    for (size_t k = 0; k < q->n_quotas; k++)
        if (views_str_eq(q->quotas[k].flavor, flavor) &&
            views_str_eq(q->quotas[k].resource, resource))
            return &q->quotas[k];
    return NULL;
}

/* Of queue o's quota on (flavor, resource): what it leaves to the cohort, its lendable part
 * (nominal up to its lending limit) less what it uses beyond its unlent part (it uses that
 * first); negative when o borrows. *unused: the same, at least 0. */
static int64_t lendable(const struct store_views *v, const struct queue_rec *o,
                        const struct quota_rec *r, int64_t *unused)
{
    const struct quota_rec *oq = find_quota(o, r->flavor, r->resource);
    int64_t onom = oq ? oq->nominal : 0;
    int64_t lend = oq && oq->lending_limit != STORE_NO_LIMIT && oq->lending_limit < onom
                       ? oq->lending_limit
                       : onom;
    int64_t oused = ledger_used(v, o->name, r->flavor, r->resource);
    int64_t beyond = sat_add(oused, -(onom - lend)); /* what o takes from its shared part */
    int64_t u = lend - (beyond > 0 ? beyond : 0);
    *unused = u > 0 ? u : 0;
    return u;
}

/* How much of queue q's quota other queues of its cohort use now: the cohort's borrowed total,
 * shared among the lenders in proportion to what each leaves unused (a borrower takes from the
 * cohort, not from one queue), whole units by largest remainder (ties: queue name), so that the
 * lenders' shares add up to what the borrowers use. q can reclaim it (by preemption) up to its
 * nominal quota. */
static int64_t quota_lent(const struct store_views *v, const struct queue_rec *q,
                          const struct quota_rec *r)
{
    if (!q->cohort)
        return 0;
    int64_t borrowed = 0, lenders = 0, mine = 0;
    for (size_t i = 0; i < v->n_queues; i++) {
        const struct queue_rec *o = &v->queues[i];
        if (!views_str_eq(o->cohort, q->cohort))
            continue;
        const struct quota_rec *oq = find_quota(o, r->flavor, r->resource);
        int64_t onom = oq ? oq->nominal : 0;
        int64_t oused = ledger_used(v, o->name, r->flavor, r->resource);
        if (oused > onom)
            borrowed = sat_add(borrowed, oused - onom);
        int64_t unused;
        lendable(v, o, r, &unused);
        lenders = sat_add(lenders, unused);
        if (o == q)
            mine = unused;
    }
    if (borrowed <= 0 || lenders <= 0 || mine <= 0)
        return 0;
    if (borrowed >= lenders)
        return mine;
    /* each lender's exact share is unused * borrowed / lenders: the floors, then one more unit
     * for the largest remainders until the total is reached (long double: exact here) */
    long double scale = (long double)borrowed / (long double)lenders;
    int64_t base = (int64_t)((long double)mine * scale), given = 0;
    long double frac = (long double)mine * scale - (long double)base;
    uint32_t ahead = 0; /* lenders whose remainder ranks before q's */
    for (size_t i = 0; i < v->n_queues; i++) {
        const struct queue_rec *o = &v->queues[i];
        if (!views_str_eq(o->cohort, q->cohort))
            continue;
        int64_t unused;
        lendable(v, o, r, &unused);
        if (unused <= 0)
            continue;
        int64_t ob = (int64_t)((long double)unused * scale);
        long double of = (long double)unused * scale - (long double)ob;
        given += ob;
        if (o != q && (of > frac || (of == frac && strcmp(o->name, q->name) < 0)))
            ahead++;
    }
    int64_t extra = borrowed - given; /* units left by the floors, one per lender at most */
    return base + ((int64_t)ahead < extra ? 1 : 0);
}

/* What queue q could still take of (flavor, resource) now. Without a cohort: its unused nominal
 * quota. In a cohort: what the cohort's queues leave unused (each other queue lends at most its
 * lending limit, and uses its unlent part first), and at least its own unused nominal quota
 * (what others borrow of it they give back: reclaim), within q's own borrowing limit. The store
 * does not record nested cohorts, so queues are pooled by cohort name. */
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
        if (o == q || !views_str_eq(o->cohort, q->cohort))
            continue;
        int64_t unused;
        pool = sat_add(pool, lendable(v, o, r, &unused));
    }
    if (pool < own)
        pool = own; /* its lent quota comes back */
    int64_t avail = pool < cap ? pool : cap;
    return avail > 0 ? avail : 0;
}

struct quota_line {
    const char *flavor, *resource;
    int64_t nominal, borrowing_limit, lending_limit, used, borrowed, lent, available;
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
        if (!views_vgrow(v, (void **)&ln, &cap, n, sizeof(*ln))) {
            free(ln);
            return 0;
        }
        int64_t used = ledger_used(v, q->name, r->flavor, r->resource);
        int64_t lent = quota_lent(v, q, r);
        ln[n++] = (struct quota_line){r->flavor,
                                      r->resource,
                                      r->nominal,
                                      r->borrowing_limit,
                                      r->lending_limit,
                                      used,
                                      used > r->nominal ? used - r->nominal : 0,
                                      lent,
                                      quota_available(v, q, r, used),
                                      true};
    }
    for (size_t i = 0; i < v->n_ledger; i++) {
        const struct ledger_rec *l = &v->ledger[i];
        if (!views_str_eq(l->queue, q->name) || find_quota(q, l->flavor, l->resource))
            continue;
        if (!views_vgrow(v, (void **)&ln, &cap, n, sizeof(*ln))) {
            free(ln);
            return 0;
        }
        ln[n++] = (struct quota_line){
            l->flavor, l->resource, 0, STORE_NO_LIMIT, STORE_NO_LIMIT, l->amount,
            l->amount, 0,           0, false};
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
    jint(v, o, "lent", l->lent);
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
    if (only && !views_find_queue(v, only))
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
        int64_t borrowed = 0, lent = 0;
        struct quota_line *ln = NULL;
        size_t n = quota_lines(v, q, &ln);
        for (size_t k = 0; k < n; k++)
            if (views_is_gpu(v, ln[k].resource)) {
                borrowed = sat_add(borrowed, ln[k].borrowed);
                lent = sat_add(lent, ln[k].lent);
            }
        free(ln);
        cJSON *o = jobj(v, jqs, NULL);
        jstr(v, o, "name", q->name);
        jstr(v, o, "cohort", q->cohort);
        jnum(v, o, "weight", q->weight);
        jint(v, o, "priority", q->priority);
        jbool(v, o, "configured", q->configured);
        jstr(v, o, "admission", q->admission ? q->admission : "open");
        jint(v, o, "nominal_gpus", queue_total(v, q, true));
        jint(v, o, "used_gpus", queue_total(v, q, false));
        jint(v, o, "borrowed_gpus", borrowed);
        jint(v, o, "lent_gpus", lent);
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

/* How long it waited before its first start (or admission, or end); for a job still pending,
 * the time since submission. */
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

struct eta_ctx {
    bool seen;
    int64_t ms;
    char note[96];
};

static int newest_eta(void *ctx, const struct store_decision *d)
{
    struct eta_ctx *e = ctx;
    if (e->seen)
        return 0;
    e->seen = true;
    e->ms = d->has_eta && !d->eta ? d->eta_ms : STORE_NO_TIME;
    snprintf(e->note, sizeof(e->note), "%s", d->has_eta && d->eta ? d->eta : "");
    return 0;
}

/* A pending job's expected start (or its waiting members', while it runs), as its newest
 * decision row gave it (sched/core/eta.h): expected_start_ms, or expected_start "no estimate:
 * ..." (both null when none was given). */
static void job_eta(struct store_views *v, cJSON *o, const struct job_rec *j)
{
    struct eta_ctx e = {.ms = STORE_NO_TIME};
    struct sched_errbuf eb = {{0}};
    if ((j->state == STORE_JOB_PENDING || views_members_wait(j)) &&
        store_decision_list(v->st, j->gang, 1, newest_eta, &e, &eb))
        e = (struct eta_ctx){.ms = STORE_NO_TIME}; /* unreadable: shown as none */
    jopt(v, o, "expected_start_ms", e.ms, STORE_NO_TIME);
    jstr(v, o, "expected_start", e.note[0] ? e.note : NULL);
}

/* A pending job's current wait: since its last preemption when it was preempted, else since
 * its submission. STORE_NO_TIME for any other state. */
static int64_t job_waiting(const struct store_views *v, const struct job_rec *j)
{
    int64_t from = j->requeue_ms != STORE_NO_TIME ? j->requeue_ms : j->submit_ms;
    if (j->state != STORE_JOB_PENDING || from == STORE_NO_TIME || v->now_ms == STORE_NO_TIME ||
        v->now_ms < from)
        return STORE_NO_TIME;
    return v->now_ms - from;
}

static const char *why_name(int why)
{
    if (why == STORE_WHY_WAITING)
        return "waiting";
    return why >= SCHED_WHY_PLACED && why <= SCHED_WHY_CHECKPOINT
               ? sched_why_name((enum sched_why)why)
               : "unknown";
}

/* Why a job is not running: a held or draining queue first (the scheduler does not offer its
 * jobs, so the decision log has nothing newer), else the newest decision while pending. */
static void job_reason_json(struct store_views *v, cJSON *o, const struct job_rec *j)
{
    const struct queue_rec *q = views_find_queue(v, j->queue);
    const char *adm = q && q->admission ? q->admission : "open";
    bool pending = j->state == STORE_JOB_PENDING;
    if (pending && strcmp(adm, "open") != 0) {
        char text[400];
        snprintf(text, sizeof(text),
                 strcmp(adm, "held") == 0
                     ? "held: queue %.160s is held by an operator (gangctl queue resume %.160s)"
                     : "draining: queue %.160s admits no new jobs while it drains (gangctl queue "
                       "resume %.160s)",
                 j->queue, j->queue);
        jstr(v, o, "why", strcmp(adm, "held") == 0 ? "held" : "draining");
        jstr(v, o, "reason", text);
        jstr(v, o, "reason_since_ms", NULL);
    } else if (pending && j->reason) {
        jstr(v, o, "why", why_name(j->why));
        jstr(v, o, "reason", j->reason);
        /* a job pending again after a preemption waits for that reason since then */
        jopt(v, o, "reason_since_ms",
             j->requeue_ms != STORE_NO_TIME && j->requeue_ms > j->reason_ms ? j->requeue_ms
                                                                            : j->reason_ms,
             STORE_NO_TIME);
    } else if (j->state == STORE_JOB_RUNNING && j->evict_ms != STORE_NO_TIME) {
        /* preempted during this run and still running: its eviction waits for its checkpoint
         * handshake (docs/preemption.md) */
        jstr(v, o, "why", "checkpointing");
        jstr(v, o, "reason",
             "checkpointing: preempted and asked to checkpoint; evicted once it has (its "
             "gangsched.io/last-checkpoint after the request) or when its grace ends");
        jopt(v, o, "reason_since_ms", j->evict_ms, STORE_NO_TIME);
    } else if (views_members_wait(j)) {
        /* an elastic gang runs on while members taken alone wait to rejoin it, or new members
         * of a scale-up to join it: their verdict, since they began to wait for it */
        char text[700];
        snprintf(text, sizeof(text), "members waiting to %s: %s",
                 views_members_rejoin(j) ? "rejoin" : "join", j->reason);
        jstr(v, o, "why", why_name(j->why));
        jstr(v, o, "reason", text);
        jopt(v, o, "reason_since_ms", j->reason_ms, STORE_NO_TIME);
    } else {
        jstr(v, o, "why", NULL);
        jstr(v, o, "reason", NULL);
        jstr(v, o, "reason_since_ms", NULL);
    }
}

static void job_json(struct store_views *v, cJSON *o, const struct job_rec *j)
{
    jstr(v, o, "job", j->gang);
    jstr(v, o, "queue", j->queue);
    jstr(v, o, "user", j->user);
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
    jopt(v, o, "waiting_ms", job_waiting(v, j), STORE_NO_TIME);
    jopt(v, o, "requeued_ms", j->requeue_ms, STORE_NO_TIME);
    jint(v, o, "preemptions", j->preemptions);
    jint(v, o, "restarts", j->restarts);
    jbool(v, o, "members_waiting", views_members_wait(j));
    job_eta(v, o, j);
    job_reason_json(v, o, j);
    /* nodes and GPUs of its placed pods, in pod order */
    cJSON *nodes = jarr(v, o, "nodes");
    for (size_t i = 0; i < v->n_places; i++) {
        const struct place_rec *p = &v->places[i];
        if (!views_str_eq(p->gang, j->gang))
            continue;
        cJSON *n = jobj(v, nodes, NULL);
        jstr(v, n, "node", p->node);
        jint(v, n, "gpus", __builtin_popcount(p->gpu_mask));
    }
}

int store_view_jobs(struct store_views *v, const char *only, bool all, cJSON **out,
                    struct sched_errbuf *eb)
{
    if (only && !views_find_queue(v, only))
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
    jopt(c->v, o, "expected_start_ms", d->has_eta && !d->eta ? d->eta_ms : STORE_NO_TIME,
         STORE_NO_TIME);
    jstr(c->v, o, "expected_start", d->has_eta ? d->eta : NULL);
    return c->v->oom ? SCHED_ENOMEM : 0;
}

int store_view_explain(struct store_views *v, const char *name, uint32_t limit, cJSON **out,
                       struct sched_errbuf *eb)
{
    const struct job_rec *j = NULL;
    for (size_t i = 0; i < v->n_jobs && !j; i++)
        if (views_str_eq(v->jobs[i].gang, name))
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
        if (!views_str_eq(p->gang, j->gang))
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
        if (!views_str_eq(r->gang, j->gang))
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
    const struct queue_rec *q =
        j->state == STORE_JOB_PENDING ? views_find_queue(v, j->queue) : NULL;
    if (q) {
        struct quota_line *ln = NULL;
        size_t n = quota_lines(v, q, &ln);
        for (size_t k = 0; k < n; k++)
            if (views_is_gpu(v, ln[k].resource))
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
        if (p->kind) /* absent: not recorded (a row older than schema version 5) */
            jstr(v, o, "kind", p->kind);
        jstr(v, o, "victim", p->victim);
        jstr(v, o, "preemptor", p->preemptor);
        jint(v, o, "gpus", p->gpus);
        jopt(v, o, "members", p->members, 0); /* null: the whole gang */
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
        if (!views_is_gpu(v, l->resource))
            continue;
        total = sat_add(total, l->amount);
        const struct queue_rec *q = views_find_queue(v, l->queue);
        const struct quota_rec *r = q ? find_quota(q, l->flavor, l->resource) : NULL;
        uint32_t running = views_running(v, l->queue, l->flavor);
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
            if (!views_vgrow(v, (void **)&nu, &cap, n, sizeof(*nu)))
                break;
            u = &nu[n++];
            *u = (struct node_use){p->node, 0, 0, 0, NULL};
        }
        u->gpus += __builtin_popcount(p->gpu_mask);
        u->pods++;
        if (!views_str_eq(u->last_gang, p->gang)) {
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
