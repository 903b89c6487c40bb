/* store/views_query.c: store_read_doc (store/views.h): one HTTP API read answered from the rows
 * its route needs, read by prepared queries in one read transaction (a WAL snapshot: a writer
 * committing meanwhile neither waits for it nor changes what it sees), then built by the same
 * document code as the whole-database views (store/views.c), so both serve the same bytes.
 *
 * Per route: the queues, their quotas, the ledger, the fair-share history and the applied
 * operator actions (a few rows per queue) always; job counts per queue and state from the
 * job_counts table (kept by triggers, schema version 4); /v1/jobs one page of jobs as an index
 * range of jobs_list (queue, state rank, submission, name) and, for those jobs only, their pods,
 * newest decision, last preemption and place in their queue; explain one job; top the placed
 * pods and the admitted and running jobs per queue and flavor; reservations one page by id.
 * now_ms is one query (jobs_latest, and the newest row of the other tables).
 *
 * Paging (docs/api.md "Paging"): the continue token is opaque to clients: the hex of the last
 * item's sort key ("j", queue, rank, submission, name / "q", name / "r", id; NUL-separated), so
 * the next page starts after that key whatever was added or removed meanwhile.
 *
 * Must not touch: the database's content, HTTP.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store_int.h"
#include "store/views.h"
#include "store/views_int.h"

#define TOKEN_MAX 1024 /* bytes of a decoded continue token */

struct key {
    char kind;
    char *field[4]; /* into buf */
    int n;
    char buf[TOKEN_MAX + 1];
};

static int bad_token(struct sched_errbuf *eb)
{
    return sched_fail(eb, SCHED_EINVAL, "continue: not a token of this server");
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes a token of kind `kind` with n fields. */
static int key_decode(const char *tok, char kind, int n, struct key *k, struct sched_errbuf *eb)
{
    size_t len = strlen(tok);
    if (len % 2 || len / 2 > TOKEN_MAX || len < 4)
        return bad_token(eb);
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hexval(tok[2 * i]), lo = hexval(tok[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return bad_token(eb);
        k->buf[i] = (char)(hi * 16 + lo);
    }
    k->buf[len / 2] = 0;
    if (k->buf[0] != kind || k->buf[1] != 0)
        return bad_token(eb);
    k->kind = kind;
    k->n = 0;
    for (size_t i = 2; i <= len / 2 && k->n < 4; i++) {
        k->field[k->n++] = &k->buf[i];
        i += strlen(&k->buf[i]);
    }
    if (k->n != n || strlen(k->field[n - 1]) + (size_t)(k->field[n - 1] - k->buf) != len / 2)
        return bad_token(eb);
    return 0;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    if (!*s)
        return false;
    long long x = strtoll(s, &end, 10);
    *out = x;
    return *end == 0;
}

/* Adds "continue" (the hex of kind, NUL, the fields joined by NULs) and "remaining". */
static int add_continue(cJSON *doc, char kind, const char *const *field, int n, int64_t left,
                        struct sched_errbuf *eb)
{
    size_t len = 2;
    for (int i = 0; i < n; i++)
        len += strlen(field[i]) + (i ? 1 : 0);
    if (len > TOKEN_MAX)
        return sched_fail(eb, SCHED_EIO, "paging: a key of %zu bytes (at most %d)", len, TOKEN_MAX);
    char *tok = malloc(2 * len + 1), *o = tok;
    if (!tok)
        return SCHED_ENOMEM;
    o += sprintf(o, "%02x00", (unsigned char)kind);
    for (int i = 0; i < n; i++) {
        if (i)
            o += sprintf(o, "00");
        for (const char *c = field[i]; *c; c++)
            o += sprintf(o, "%02x", (unsigned char)*c);
    }
    bool ok = cJSON_AddStringToObject(doc, "continue", tok) &&
              cJSON_AddNumberToObject(doc, "remaining", (double)left);
    free(tok);
    return ok ? 0 : SCHED_ENOMEM;
}

/* ---- the rows every route but reservations needs ------------------------------------------ */

/* The first n columns of statement id's one row into out[] (NULL: STORE_NO_TIME). */
static int row_i64(struct store *st, enum store__stmt id, int rc, int64_t *out, int n,
                   const char *what, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        for (int k = 0; k < n; k++)
            out[k] = sqlite3_column_type(s, k) == SQLITE_NULL ? STORE_NO_TIME
                                                              : sqlite3_column_int64(s, k);
        rc = SQLITE_OK;
    }
    int err = rc == SQLITE_OK || rc == SQLITE_DONE ? 0 : store__sql_fail(st, rc, what, eb);
    store__done(st, id);
    return err;
}

static int one_i64(struct store *st, enum store__stmt id, int rc, int64_t *out, const char *what,
                   struct sched_errbuf *eb)
{
    return row_i64(st, id, rc, out, 1, what, eb);
}

static int load_counts(struct store_views *v, struct sched_errbuf *eb)
{
    static const char *const states[] = {"pending", "admitted", "running", "finished", "failed"};
    sqlite3_stmt *s = store__s(v->st, STMT_VIEW_COUNTS);
    int rc, err = 0;
    while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *q = store__col_text(s, 0), *state = store__col_text(s, 1);
        int64_t n = sqlite3_column_int64(s, 2);
        int k = 0;
        while (k < 5 && (!state || strcmp(states[k], state) != 0))
            k++;
        if (!q || k == 5 || n < 0 || n > UINT32_MAX)
            continue; /* odd rows are skipped, as the whole-table load does */
        struct queue_rec *r = views_queue_ref(v, q);
        if (!r)
            err = SCHED_ENOMEM;
        else
            r->n_state[k] += (uint32_t)n;
    }
    if (!err && rc != SQLITE_DONE)
        err = store__sql_fail(v->st, rc, "reading job counts", eb);
    store__done(v->st, STMT_VIEW_COUNTS);
    return err;
}

static int load_base(struct store_views *v, struct sched_errbuf *eb)
{
    struct store *st = v->st;
    int rc = sqlite3_bind_int64(store__s(st, STMT_VIEW_NOW), 1, STORE_NO_TIME);
    int err = one_i64(st, STMT_VIEW_NOW, rc, &v->now_ms, "reading the latest time", eb);
    if (!err)
        err = views_load_queues(v, eb);
    if (!err)
        err = load_counts(v, eb);
    if (!err && v->n_queues > 1)
        qsort(v->queues, v->n_queues, sizeof(*v->queues), views_cmp_queue);
    return err;
}

/* ---- jobs ----------------------------------------------------------------------------------- */

static int last_decision(struct store_views *v, struct job_rec *j, struct sched_errbuf *eb)
{
    struct store *st = v->st;
    sqlite3_stmt *s = store__s(st, STMT_VIEW_LAST_DECISION);
    int rc = SQLITE_OK;
    store__b_text(st, STMT_VIEW_LAST_DECISION, 1, j->gang, &rc);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && store__col_text(s, 1)) {
        j->why = sqlite3_column_int(s, 0);
        j->reason = views_vdup(v, store__col_text(s, 1));
        j->reason_ms = sqlite3_column_int64(s, 2);
    }
    int err = rc == SQLITE_ROW || rc == SQLITE_DONE || rc == SQLITE_OK
                  ? 0
                  : store__sql_fail(st, rc, "reading a job's newest decision", eb);
    store__done(st, STMT_VIEW_LAST_DECISION);
    return err ? err : v->oom ? SCHED_ENOMEM : 0;
}

/* What a job's document shows besides its row: its pods, and while pending its newest
 * decision, its last preemption and its place in its queue (*pos: the place of the previous
 * pending job of the same queue on this page, 0 for none). */
static int job_extras(struct store_views *v, struct job_rec *j, uint32_t *pos,
                      struct sched_errbuf *eb)
{
    struct store *st = v->st;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_VIEW_PLACEMENTS, 1, j->gang, &rc);
    size_t from = v->n_places;
    int err = store__placement_query(st, STMT_VIEW_PLACEMENTS, rc, views_load_place, v, eb);
    for (size_t i = from; i < v->n_places; i++)
        views_job_placed(j, v->places[i].bound_ms);
    bool running = j->state == STORE_JOB_RUNNING;
    if (err || (j->state != STORE_JOB_PENDING && !running))
        return err;
    err = last_decision(v, j, eb);
    rc = SQLITE_OK;
    store__b_text(st, STMT_VIEW_REQUEUE, 1, j->gang, &rc);
    int64_t last[2] = {STORE_NO_TIME, STORE_NO_TIME}; /* whole gang, members alone */
    if (!err)
        err = row_i64(st, STMT_VIEW_REQUEUE, rc, last, 2, "reading preemptions", eb);
    else
        store__done(st, STMT_VIEW_REQUEUE);
    views_job_preempted(j, last[0]);
    views_job_members(j, last[1]);
    if (running)
        return err;
    if (!err && !*pos) {
        int64_t ahead = 0;
        rc = SQLITE_OK;
        store__b_text(st, STMT_VIEW_AHEAD, 1, j->queue, &rc);
        store__b_i64(st, STMT_VIEW_AHEAD, 2, j->submit_ms, &rc);
        store__b_text(st, STMT_VIEW_AHEAD, 3, j->gang, &rc);
        err = one_i64(st, STMT_VIEW_AHEAD, rc, &ahead, "counting pending jobs", eb);
        *pos = (uint32_t)(ahead == STORE_NO_TIME ? 0 : ahead);
    }
    j->position = ++*pos;
    return err;
}

static int extras_all(struct store_views *v, struct sched_errbuf *eb)
{
    uint32_t pos = 0;
    int err = 0;
    for (size_t i = 0; i < v->n_jobs && !err; i++) {
        if (i > 0 && strcmp(v->jobs[i].queue, v->jobs[i - 1].queue) != 0)
            pos = 0;
        err = job_extras(v, &v->jobs[i], &pos, eb);
    }
    return err;
}

/* A queue's jobs this read shows (from its counts). The state_rank of a job is its enum
 * store_job_state (pending 0 ... failed 4), so a rank indexes n_state. */
static int64_t jobs_wanted(const struct queue_rec *q, int max_rank, int from_rank)
{
    int64_t n = 0;
    for (int r = from_rank; r <= max_rank; r++)
        n += q->n_state[r];
    return n;
}

/* How many jobs follow `last` in read order (its queue's after it, then later queues'). */
static int jobs_left(struct store_views *v, const struct store_read *rq, const struct job_rec *last,
                     int max_rank, int64_t *left, struct sched_errbuf *eb)
{
    struct store *st = v->st;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_VIEW_JOBS_LEFT, 1, last->queue, &rc);
    store__b_i64(st, STMT_VIEW_JOBS_LEFT, 2, (int64_t)last->state, &rc);
    store__b_i64(st, STMT_VIEW_JOBS_LEFT, 3, last->submit_ms, &rc);
    store__b_text(st, STMT_VIEW_JOBS_LEFT, 4, last->gang, &rc);
    int err = one_i64(st, STMT_VIEW_JOBS_LEFT, rc, left, "counting jobs", eb);
    for (size_t i = 0; i < v->n_queues && !err; i++) {
        const struct queue_rec *q = &v->queues[i];
        int c = strcmp(q->name, last->queue);
        if (c == 0)
            *left += jobs_wanted(q, max_rank, (int)last->state + 1);
        else if (c > 0 && !rq->queue)
            *left += jobs_wanted(q, max_rank, 0);
    }
    return err;
}

/* One page of jobs: queue after queue (by name), each an index range of jobs_list. */
static int read_jobs(struct store_views *v, const struct store_read *rq, cJSON **out,
                     struct sched_errbuf *eb)
{
    struct store *st = v->st;
    struct key k;
    int64_t rank = 0, submit = 0;
    int err = 0;
    if (rq->cont && ((err = key_decode(rq->cont, 'j', 4, &k, eb)) != 0 ||
                     !parse_i64(k.field[1], &rank) || !parse_i64(k.field[2], &submit)))
        return err ? err : bad_token(eb);
    int max_rank = rq->all ? STORE_JOB_FAILED : STORE_JOB_RUNNING;
    int64_t room = rq->limit ? (int64_t)rq->limit : INT64_MAX;
    for (size_t i = 0; i < v->n_queues && !err && room > 0; i++) {
        const struct queue_rec *q = &v->queues[i];
        int c = rq->cont ? strcmp(q->name, k.field[0]) : 1;
        if ((rq->queue && strcmp(q->name, rq->queue) != 0) || c < 0 || !jobs_wanted(q, max_rank, 0))
            continue;
        int rc = SQLITE_OK;
        size_t before = v->n_jobs;
        store__b_text(st, STMT_VIEW_JOBS, 1, q->name, &rc);
        store__b_i64(st, STMT_VIEW_JOBS, 2, max_rank, &rc);
        store__b_i64(st, STMT_VIEW_JOBS, 3, c == 0 ? rank : -1, &rc);
        store__b_i64(st, STMT_VIEW_JOBS, 4, c == 0 ? submit : INT64_MIN, &rc);
        store__b_text(st, STMT_VIEW_JOBS, 5, c == 0 ? k.field[3] : "", &rc);
        store__b_i64(st, STMT_VIEW_JOBS, 6, room == INT64_MAX ? -1 : room, &rc);
        err = store__job_query(st, STMT_VIEW_JOBS, rc, views_load_job, v, eb);
        room -= (int64_t)(v->n_jobs - before);
    }
    if (!err)
        err = extras_all(v, eb);
    if (!err)
        err = store_view_jobs(v, rq->queue, rq->all, out, eb);
    if (err || !rq->limit || v->n_jobs < rq->limit)
        return err;
    const struct job_rec *last = &v->jobs[v->n_jobs - 1];
    int64_t left = 0;
    err = jobs_left(v, rq, last, max_rank, &left, eb);
    char rs[8], ss[24];
    snprintf(rs, sizeof(rs), "%d", (int)last->state);
    snprintf(ss, sizeof(ss), "%" PRId64, last->submit_ms);
    const char *f[] = {last->queue, rs, ss, last->gang};
    return !err && left > 0 ? add_continue(*out, 'j', f, 4, left, eb) : err;
}

static int read_explain(struct store_views *v, const struct store_read *rq, cJSON **out,
                        struct sched_errbuf *eb)
{
    struct store *st = v->st;
    struct store_job j;
    int err = store_job_get(st, rq->job, &j, eb);
    if (!err)
        err = views_load_job(v, &j);
    else if (err == SCHED_ENOENT) /* store_view_explain says so, in the views' words */
        err = 0;
    if (err)
        return err;
    if (!err && v->n_jobs) {
        uint32_t pos = 0;
        err = job_extras(v, &v->jobs[0], &pos, eb);
    }
    int rc = SQLITE_OK;
    store__b_i64(st, STMT_VIEW_RESV, 1, INT64_MIN, &rc);
    store__b_text(st, STMT_VIEW_RESV, 2, rq->job, &rc);
    store__b_i64(st, STMT_VIEW_RESV, 3, -1, &rc);
    if (!err)
        err = store__reservation_query(st, STMT_VIEW_RESV, rc, views_load_resv, v, eb);
    else
        store__done(st, STMT_VIEW_RESV);
    if (!err)
        err = store_preemption_list_of(st, rq->job, views_load_preempt, v, eb);
    return err ? err : store_view_explain(v, rq->job, rq->limit, out, eb);
}

static int read_top(struct store_views *v, cJSON **out, struct sched_errbuf *eb)
{
    struct store *st = v->st;
    int err = store_placement_list(st, views_load_place, v, eb);
    for (size_t i = 0; i < v->n_queues && !err; i++) {
        const struct queue_rec *q = &v->queues[i];
        if (!q->n_state[STORE_JOB_ADMITTED] && !q->n_state[STORE_JOB_RUNNING])
            continue;
        sqlite3_stmt *s = store__s(st, STMT_VIEW_RUNNING);
        int rc = SQLITE_OK;
        store__b_text(st, STMT_VIEW_RUNNING, 1, q->name, &rc);
        while (!err && rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            int64_t n = sqlite3_column_int64(s, 1);
            rc = SQLITE_OK;
            if (n > 0 && n <= UINT32_MAX &&
                !views_add_running(v, q->name, store__col_text(s, 0), (uint32_t)n))
                err = SCHED_ENOMEM;
        }
        if (!err && rc != SQLITE_DONE)
            err = store__sql_fail(st, rc, "counting running jobs", eb);
        store__done(st, STMT_VIEW_RUNNING);
    }
    return err ? err : store_view_top(v, out, eb);
}

static int read_reservations(struct store_views *v, const struct store_read *rq, cJSON **out,
                             struct sched_errbuf *eb)
{
    struct store *st = v->st;
    struct key k;
    int64_t after = INT64_MIN;
    int err = 0;
    if (rq->cont &&
        ((err = key_decode(rq->cont, 'r', 1, &k, eb)) != 0 || !parse_i64(k.field[0], &after)))
        return err ? err : bad_token(eb);
    int rc = sqlite3_bind_int64(store__s(st, STMT_VIEW_NOW), 1, STORE_NO_TIME);
    err = one_i64(st, STMT_VIEW_NOW, rc, &v->now_ms, "reading the latest time", eb);
    rc = SQLITE_OK;
    store__b_i64(st, STMT_VIEW_RESV, 1, after, &rc);
    store__b_i64(st, STMT_VIEW_RESV, 3, rq->limit ? (int64_t)rq->limit : -1, &rc);
    if (!err)
        err = store__reservation_query(st, STMT_VIEW_RESV, rc, views_load_resv, v, eb);
    else
        store__done(st, STMT_VIEW_RESV);
    if (!err)
        err = store_view_reservations(v, out, eb);
    if (err || !rq->limit || v->n_resvs < rq->limit)
        return err;
    int64_t left = 0, last = v->resvs[v->n_resvs - 1].id;
    rc = sqlite3_bind_int64(store__s(st, STMT_VIEW_RESV_LEFT), 1, last);
    err = one_i64(st, STMT_VIEW_RESV_LEFT, rc, &left, "counting reservations", eb);
    char ids[24];
    snprintf(ids, sizeof(ids), "%" PRId64, last);
    const char *f[] = {ids};
    return !err && left > 0 ? add_continue(*out, 'r', f, 1, left, eb) : err;
}

/* Whether a whole list (no limit, no continue) has more than rq->most items, counted before any
 * item is built: the queue rows and job_counts (read by load_base; the figures "remaining"
 * uses), the reservations by COUNT(*). */
static int whole_over(struct store_views *v, const struct store_read *rq, bool *over,
                      struct sched_errbuf *eb)
{
    *over = false;
    if (!rq->most || rq->limit || rq->cont)
        return 0;
    int64_t n = 0;
    int err = 0;
    if (rq->route == STORE_READ_QUEUES) {
        n = (int64_t)v->n_queues;
    } else if (rq->route == STORE_READ_JOBS) {
        int max_rank = rq->all ? STORE_JOB_FAILED : STORE_JOB_RUNNING;
        for (size_t i = 0; i < v->n_queues; i++)
            if (!rq->queue || strcmp(v->queues[i].name, rq->queue) == 0)
                n += jobs_wanted(&v->queues[i], max_rank, 0);
    } else if (rq->route == STORE_READ_RESERVATIONS) {
        int rc = sqlite3_bind_int64(store__s(v->st, STMT_VIEW_RESV_LEFT), 1, INT64_MIN);
        err = one_i64(v->st, STMT_VIEW_RESV_LEFT, rc, &n, "counting reservations", eb);
    }
    *over = !err && n > (int64_t)rq->most;
    return err;
}

/* /v1/queues: one page of the queue list (a few rows a queue: paged in memory, by name). */
static int page_queues(const struct store_read *rq, cJSON *doc, struct sched_errbuf *eb)
{
    struct key k;
    int err = rq->cont ? key_decode(rq->cont, 'q', 1, &k, eb) : 0;
    if (err || (!rq->limit && !rq->cont))
        return err;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "queues");
    int n = cJSON_GetArraySize(list), start = 0;
    for (const cJSON *it = list ? list->child : NULL; rq->cont && it; it = it->next, start++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(name) && strcmp(name->valuestring, k.field[0]) > 0)
            break;
    }
    int end = rq->limit && (int64_t)start + rq->limit < n ? start + (int)rq->limit : n;
    for (int i = n - 1; i >= end; i--)
        cJSON_DeleteItemFromArray(list, i);
    for (int i = 0; i < start; i++)
        cJSON_DeleteItemFromArray(list, 0);
    if (end >= n || end <= start)
        return 0;
    const cJSON *name =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, end - start - 1), "name");
    const char *f[] = {cJSON_IsString(name) ? name->valuestring : ""};
    return add_continue(doc, 'q', f, 1, n - end, eb);
}

static int read_route(struct store_views *v, const struct store_read *rq, cJSON **out,
                      struct sched_errbuf *eb)
{
    bool over = false;
    int err = rq->route == STORE_READ_RESERVATIONS ? whole_over(v, rq, &over, eb) : 0;
    if (err || over)
        return err; /* too long a whole list: *out stays NULL */
    if (rq->route == STORE_READ_RESERVATIONS)
        return read_reservations(v, rq, out, eb);
    err = load_base(v, eb);
    if (!err)
        err = whole_over(v, rq, &over, eb);
    if (err || over)
        return err;
    switch (rq->route) {
    case STORE_READ_QUOTA:
        return store_view_quota(v, rq->queue, out, eb);
    case STORE_READ_QUEUES:
        err = store_view_queues(v, out, eb);
        return err ? err : page_queues(rq, *out, eb);
    case STORE_READ_JOBS:
        return read_jobs(v, rq, out, eb);
    case STORE_READ_EXPLAIN:
        return read_explain(v, rq, out, eb);
    case STORE_READ_TOP:
        return read_top(v, out, eb);
    case STORE_READ_RESERVATIONS:
        break;
    }
    return sched_fail(eb, SCHED_EINVAL, "store_read_doc: unknown route %d", (int)rq->route);
}

int store_read_doc(struct store *st, const struct store_read *rq, cJSON **out,
                   struct sched_errbuf *eb)
{
    *out = NULL;
    if ((rq->route == STORE_READ_EXPLAIN && !rq->job))
        return sched_fail(eb, SCHED_EINVAL, "store_read_doc: explain without a job");
    struct store_views *v = calloc(1, sizeof(*v));
    if (!v)
        return sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(st));
    v->st = st;
    v->now_ms = STORE_NO_TIME;
    int rc = store__exec(st, STMT_BEGIN_READ, SQLITE_OK, NULL);
    int err = rc == SQLITE_OK ? 0 : store__sql_fail(st, rc, "starting a read", eb);
    if (!err)
        err = read_route(v, rq, out, eb);
    if (rc == SQLITE_OK)
        store__exec(st, STMT_COMMIT, SQLITE_OK, NULL); /* a read: ends the snapshot */
    if (err == SCHED_ENOMEM && !eb->msg[0])
        sched_fail(eb, SCHED_ENOMEM, "views of %s: out of memory", store_path(st));
    if (err) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    store_views_free(v);
    return err;
}
