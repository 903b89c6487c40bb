/* store/records.c: the record tables: usage ledger, reservations, decision log, preemption
 * records, jobs and fair-share history.
 *
 * Owns: argument validation before anything is written, and validation of every row read back
 * (enum texts, ranges): a row that fails it is reported as a corrupt database, never asserted on.
 *
 * Must not touch: transactions (store.c's write bracket decides), the journal and placements
 * (journal.c), the schema (schema.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/log.h"
#include "store/store.h"
#include "store/store_int.h"

static int need(struct store *st, bool ok, const char *what, struct sched_errbuf *eb)
{
    return ok ? 0 : sched_fail(eb, SCHED_EINVAL, "database %s: %s", st->path, what);
}

/* ---- ledger -------------------------------------------------------------------------------- */

static int ledger_key(struct store *st, enum store__stmt id, const char *queue, const char *flavor,
                      const char *resource, int *rc)
{
    store__b_text(st, id, 1, queue, rc);
    store__b_text(st, id, 2, flavor, rc);
    store__b_text(st, id, 3, resource, rc);
    return *rc;
}

static bool key_ok(const char *queue, const char *flavor, const char *resource)
{
    return queue && flavor && resource;
}

int store_ledger_set(struct store *st, const char *queue, const char *flavor, const char *resource,
                     int64_t amount, struct sched_errbuf *eb)
{
    int err =
        need(st, key_ok(queue, flavor, resource), "ledger: queue, flavor, resource required", eb);
    if (!err && amount < 0)
        err = sched_fail(eb, SCHED_ERANGE, "database %s: ledger %s/%s/%s: negative amount %" PRId64,
                         st->path, queue, flavor, resource, amount);
    if (err)
        return err;
    bool own;
    err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    ledger_key(st, STMT_LEDGER_SET, queue, flavor, resource, &rc);
    store__b_i64(st, STMT_LEDGER_SET, 4, amount, &rc);
    rc = store__exec(st, STMT_LEDGER_SET, rc, NULL);
    return store__wend(st, own, rc, "writing the ledger", eb);
}

int store_ledger_add(struct store *st, const char *queue, const char *flavor, const char *resource,
                     int64_t delta, struct sched_errbuf *eb)
{
    int err =
        need(st, key_ok(queue, flavor, resource), "ledger: queue, flavor, resource required", eb);
    if (err)
        return err;
    bool own;
    err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    /* read, check, write: an UPSERT would test the CHECK (amount >= 0) on the candidate row, so
     * a negative delta could never be applied to an existing row */
    int64_t cur = 0;
    err = store_ledger_get(st, queue, flavor, resource, &cur, eb);
    if (!err && (delta > 0 ? cur > INT64_MAX - delta : cur + delta < 0))
        err = sched_fail(eb, SCHED_ERANGE,
                         "database %s: ledger %s/%s/%s: adding %" PRId64 " to %" PRId64
                         " would take it below 0 or past the integer range",
                         st->path, queue, flavor, resource, delta, cur);
    if (!err)
        err = store_ledger_set(st, queue, flavor, resource, cur + delta, eb);
    return store__wfinish(st, own, err, eb);
}

int store_ledger_get(struct store *st, const char *queue, const char *flavor, const char *resource,
                     int64_t *amount, struct sched_errbuf *eb)
{
    int err = need(st, key_ok(queue, flavor, resource) && amount,
                   "ledger: queue, flavor, resource required", eb);
    if (err)
        return err;
    sqlite3_stmt *s = store__s(st, STMT_LEDGER_GET);
    int rc = SQLITE_OK;
    if (ledger_key(st, STMT_LEDGER_GET, queue, flavor, resource, &rc) == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *amount = sqlite3_column_int64(s, 0);
        if (*amount < 0)
            err =
                store__bad_row(st, eb, "ledger %s/%s/%s: negative amount", queue, flavor, resource);
    } else if (rc == SQLITE_DONE) {
        *amount = 0;
    } else {
        err = store__sql_fail(st, rc, "reading the ledger", eb);
    }
    store__done(st, STMT_LEDGER_GET);
    return err;
}

/* The caller's callback and context of a list, for the row functions of store__each. */
struct each {
    union {
        store_ledger_fn *ledger;
        store_reservation_fn *reservation;
        store_decision_fn *decision;
        store_preemption_fn *preemption;
        store_job_fn *job;
        store_history_fn *history;
    } fn;
    void *ctx;
};

static int ledger_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct each *e = ctx;
    struct store_ledger_row r = {store__col_text(s, 0), store__col_text(s, 1),
                                 store__col_text(s, 2), sqlite3_column_int64(s, 3)};
    if (!key_ok(r.queue, r.flavor, r.resource) || r.amount < 0)
        return store__bad_row(st, eb, "ledger: a row with a missing key or negative amount");
    return e->fn.ledger(e->ctx, &r);
}

int store_ledger_list(struct store *st, store_ledger_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    struct each e = {.fn.ledger = fn, .ctx = ctx};
    return store__each(st, STMT_LEDGER_LIST, SQLITE_OK, "the ledger", ledger_row, &e, eb);
}

struct ledger_copy {
    struct arena *a;
    struct store_ledger_row *rows;
    uint32_t n, cap;
};

static int ledger_collect(void *ctx, const struct store_ledger_row *r)
{
    struct ledger_copy *c = ctx;
    if (c->n == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : 32;
        struct store_ledger_row *rows = arena_alloc(c->a, cap * sizeof(*rows));
        if (!rows)
            return SCHED_ENOMEM;
        if (c->n)
            memcpy(rows, c->rows, c->n * sizeof(*rows));
        c->rows = rows;
        c->cap = cap;
    }
    struct store_ledger_row *o = &c->rows[c->n];
    o->queue = arena_strdup(c->a, r->queue);
    o->flavor = arena_strdup(c->a, r->flavor);
    o->resource = arena_strdup(c->a, r->resource);
    o->amount = r->amount;
    if (!o->queue || !o->flavor || !o->resource)
        return SCHED_ENOMEM;
    c->n++;
    return 0;
}

static bool same_key(const struct store_ledger_row *a, const struct store_ledger_row *b)
{
    return strcmp(a->queue, b->queue) == 0 && strcmp(a->flavor, b->flavor) == 0 &&
           strcmp(a->resource, b->resource) == 0;
}

int store_ledger_reconcile(struct store *st, const struct store_ledger_row *actual, uint32_t n,
                           uint32_t *n_diff, struct sched_errbuf *eb)
{
    if (n && !actual)
        return sched_fail(eb, SCHED_EINVAL, "database %s: ledger reconcile without rows", st->path);
    for (uint32_t i = 0; i < n; i++) {
        if (!key_ok(actual[i].queue, actual[i].flavor, actual[i].resource) || actual[i].amount < 0)
            return sched_fail(eb, SCHED_EINVAL, "database %s: ledger reconcile: bad row %u",
                              st->path, i);
        for (uint32_t j = 0; j < i; j++)
            if (same_key(&actual[i], &actual[j]))
                return sched_fail(eb, SCHED_EINVAL,
                                  "database %s: ledger reconcile: %s/%s/%s given twice", st->path,
                                  actual[i].queue, actual[i].flavor, actual[i].resource);
    }
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    struct arena a;
    arena_init(&a, 0);
    struct ledger_copy stored = {&a, NULL, 0, 0};
    err = store_ledger_list(st, ledger_collect, &stored, eb);
    if (err == SCHED_ENOMEM)
        err = sched_fail(eb, err, "database %s: out of memory", st->path);
    uint32_t diffs = 0;
    for (uint32_t i = 0; i < n && !err; i++) {
        int64_t was = 0;
        for (uint32_t j = 0; j < stored.n; j++)
            if (same_key(&actual[i], &stored.rows[j]))
                was = stored.rows[j].amount;
        if (was == actual[i].amount)
            continue;
        LOG_WARN("store",
                 "database %s: ledger corrected: queue=%s flavor=%s resource=%s stored=%" PRId64
                 " placed=%" PRId64,
                 st->path, actual[i].queue, actual[i].flavor, actual[i].resource, was,
                 actual[i].amount);
        diffs++;
        err = store_ledger_set(st, actual[i].queue, actual[i].flavor, actual[i].resource,
                               actual[i].amount, eb);
    }
    for (uint32_t j = 0; j < stored.n && !err; j++) {
        bool found = false;
        for (uint32_t i = 0; i < n && !found; i++)
            found = same_key(&actual[i], &stored.rows[j]);
        if (found || stored.rows[j].amount == 0)
            continue;
        LOG_WARN("store",
                 "database %s: ledger corrected: queue=%s flavor=%s resource=%s stored=%" PRId64
                 " placed=0",
                 st->path, stored.rows[j].queue, stored.rows[j].flavor, stored.rows[j].resource,
                 stored.rows[j].amount);
        diffs++;
        err = store_ledger_set(st, stored.rows[j].queue, stored.rows[j].flavor,
                               stored.rows[j].resource, 0, eb);
    }
    arena_fini(&a);
    err = store__wfinish(st, own, err, eb);
    if (!err && n_diff)
        *n_diff = diffs;
    return err;
}

/* ---- reservations -------------------------------------------------------------------------- */

static const char *const res_kinds[] = {"starvation", "preemptor", "operator"};

const char *store_res_kind_name(enum store_res_kind kind)
{
    return (unsigned)kind < sizeof(res_kinds) / sizeof(res_kinds[0]) ? res_kinds[kind] : NULL;
}

static int parse_name(const char *t, const char *const *names, int n)
{
    for (int i = 0; t && i < n; i++)
        if (strcmp(t, names[i]) == 0)
            return i;
    return -1;
}

int store_reservation_put(struct store *st, const struct store_reservation *r, int64_t *id,
                          struct sched_errbuf *eb)
{
    bool ok =
        r && r->gang && store_res_kind_name(r->kind) && r->id >= 0 && (r->n_nodes == 0 || r->nodes);
    for (uint32_t i = 0; ok && i < r->n_nodes; i++)
        ok = r->nodes[i] != NULL;
    int err = need(st, ok, "reservation: bad kind, gang, id or node list", eb);
    if (err)
        return err;
    bool own;
    err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    if (r->id > 0) {
        store__b_i64(st, STMT_RES_DELETE, 1, r->id, &rc);
        rc = store__exec(st, STMT_RES_DELETE, rc, NULL);
    }
    if (r->id > 0)
        store__b_i64(st, STMT_RES_INSERT, 1, r->id, &rc);
    store__b_text(st, STMT_RES_INSERT, 2, store_res_kind_name(r->kind), &rc);
    store__b_text(st, STMT_RES_INSERT, 3, r->gang, &rc);
    store__b_i64(st, STMT_RES_INSERT, 4, r->created_ms, &rc);
    store__b_opt(st, STMT_RES_INSERT, 5, r->expires_ms, STORE_NO_TIME, &rc);
    store__b_opt(st, STMT_RES_INSERT, 6, r->expected_start_ms, STORE_NO_TIME, &rc);
    rc = store__exec(st, STMT_RES_INSERT, rc, NULL);
    int64_t rid = r->id > 0 ? r->id : sqlite3_last_insert_rowid(st->db);
    for (uint32_t i = 0; i < r->n_nodes && rc == SQLITE_OK; i++) {
        store__b_i64(st, STMT_RES_NODE_INSERT, 1, rid, &rc);
        store__b_i64(st, STMT_RES_NODE_INSERT, 2, i, &rc);
        store__b_text(st, STMT_RES_NODE_INSERT, 3, r->nodes[i], &rc);
        rc = store__exec(st, STMT_RES_NODE_INSERT, rc, NULL);
    }
    err = store__wend(st, own, rc, "writing a reservation", eb);
    if (!err && id)
        *id = rid;
    return err;
}

static int res_delete(struct store *st, enum store__stmt id, int64_t v, const char *text,
                      uint32_t *n, struct sched_errbuf *eb)
{
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK, changes = 0;
    if (text)
        store__b_text(st, id, 1, text, &rc);
    else
        store__b_i64(st, id, 1, v, &rc);
    rc = store__exec(st, id, rc, &changes);
    err = store__wend(st, own, rc, "deleting reservations", eb);
    if (!err && n)
        *n = (uint32_t)changes;
    return err;
}

int store_reservation_delete(struct store *st, int64_t id, uint32_t *n, struct sched_errbuf *eb)
{
    return res_delete(st, STMT_RES_DELETE, id, NULL, n, eb);
}

int store_reservation_delete_kind(struct store *st, enum store_res_kind kind, uint32_t *n,
                                  struct sched_errbuf *eb)
{
    const char *name = store_res_kind_name(kind);
    if (!name)
        return sched_fail(eb, SCHED_EINVAL, "database %s: unknown reservation kind %d", st->path,
                          (int)kind);
    return res_delete(st, STMT_RES_DELETE_KIND, 0, name, n, eb);
}

int store_reservation_expire(struct store *st, int64_t now_ms, uint32_t *n, struct sched_errbuf *eb)
{
    return res_delete(st, STMT_RES_EXPIRE, now_ms, NULL, n, eb);
}

/* Reads the held nodes of reservation `rid` into the arena. */
static int res_nodes(struct store *st, int64_t rid, struct arena *a, struct store_reservation *r,
                     struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_RES_NODES);
    const char **nodes = NULL;
    uint32_t cap = 0;
    int err = 0;
    int rc = sqlite3_bind_int64(s, 1, rid);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        if (r->n_nodes == cap) {
            uint32_t ncap = cap ? cap * 2 : 16;
            const char **grown = arena_alloc(a, ncap * sizeof(*grown));
            if (!grown) {
                rc = SQLITE_NOMEM;
                break;
            }
            if (r->n_nodes)
                memcpy(grown, nodes, r->n_nodes * sizeof(*grown));
            nodes = grown;
            cap = ncap;
        }
        const char *t = store__col_text(s, 0);
        if (!t) {
            err = store__bad_row(
                st, eb, "reservation_nodes: reservation %" PRId64 " holds a node without a name",
                rid);
            break;
        }
        nodes[r->n_nodes] = arena_strdup(a, t);
        if (!nodes[r->n_nodes]) {
            rc = SQLITE_NOMEM;
            break;
        }
        r->n_nodes++;
    }
    if (!err && rc != SQLITE_DONE)
        err = store__sql_fail(st, rc, "reading reservation nodes", eb);
    store__done(st, STMT_RES_NODES);
    r->nodes = nodes;
    return err;
}

struct res_each {
    struct each e;
    struct arena a; /* the nodes of one row */
};

static int reservation_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    struct res_each *re = ctx;
    struct store_reservation r;
    memset(&r, 0, sizeof(r));
    r.id = sqlite3_column_int64(s, 0);
    const char *kind = store__col_text(s, 1);
    int k = parse_name(kind, res_kinds, (int)(sizeof(res_kinds) / sizeof(res_kinds[0])));
    r.kind = (enum store_res_kind)(k < 0 ? 0 : k);
    r.gang = store__col_text(s, 2);
    r.created_ms = sqlite3_column_int64(s, 3);
    r.expires_ms = store__col_opt(s, 4, STORE_NO_TIME);
    r.expected_start_ms = store__col_opt(s, 5, STORE_NO_TIME);
    if (k < 0 || !r.gang)
        return store__bad_row(st, eb, "reservations: id %" PRId64 " has kind \"%.20s\" or no gang",
                              r.id, kind ? kind : "(null)");
    arena_reset(&re->a);
    int err = res_nodes(st, r.id, &re->a, &r, eb);
    return err ? err : re->e.fn.reservation(re->e.ctx, &r);
}

int store__reservation_query(struct store *st, enum store__stmt id, int rc,
                             store_reservation_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    struct res_each re = {.e = {.fn.reservation = fn, .ctx = ctx}};
    arena_init(&re.a, 0);
    int err = store__each(st, id, rc, "reservations", reservation_row, &re, eb);
    arena_fini(&re.a);
    return err;
}

int store_reservation_list(struct store *st, store_reservation_fn *fn, void *ctx,
                           struct sched_errbuf *eb)
{
    return store__reservation_query(st, STMT_RES_LIST, SQLITE_OK, fn, ctx, eb);
}

/* ---- decision log -------------------------------------------------------------------------- */

/* The newest row of `gang`: 1 with *id, *why and the reason copied into the scratch buffer
 * (*reason), 0 when the gang has none, or a negative SQLite result. */
static int decision_last(struct store *st, const char *gang, int64_t *id, int *why,
                         const char **reason)
{
    int rc = SQLITE_OK;
    store__b_text(st, STMT_DECISION_LAST_GANG, 1, gang, &rc);
    sqlite3_stmt *s = store__s(st, STMT_DECISION_LAST_GANG);
    int found = 0;
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *text = store__col_text(s, 2);
        size_t n = text ? strlen(text) + 1 : 1;
        char *copy = store__scratch(st, n);
        if (!copy) {
            rc = SQLITE_NOMEM;
        } else {
            memcpy(copy, text ? text : "", n);
            *id = sqlite3_column_int64(s, 0);
            *why = (int)sqlite3_column_int64(s, 1);
            *reason = copy;
            found = 1;
            rc = SQLITE_OK;
        }
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    store__done(st, STMT_DECISION_LAST_GANG);
    return rc == SQLITE_OK ? found : -(rc ? rc : 1);
}

/* Each decision is compared with the gang's newest row: the same verdict with the same text is
 * not written again; the same verdict with new text (new figures: "may still take 4") replaces
 * that row's text, keeping its cycle and time (when the gang began to wait for that reason, as
 * a Kubernetes condition keeps its lastTransitionTime); any other verdict appends a row. So the
 * log holds the changes of reason, each with current figures, however often a driver reports. */
static int decisions_add(struct store *st, const struct store_decision *d, uint32_t n, bool append,
                         struct sched_errbuf *eb)
{
    if (n && !d)
        return sched_fail(eb, SCHED_EINVAL, "database %s: no decisions", st->path);
    for (uint32_t i = 0; i < n; i++)
        if (!d[i].gang || !d[i].reason)
            return sched_fail(eb, SCHED_EINVAL, "database %s: decision %u without gang or reason",
                              st->path, i);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    for (uint32_t i = 0; i < n && rc == SQLITE_OK; i++) {
        int64_t last_id = 0;
        int last_why = -1;
        const char *last_reason = NULL;
        int found = append ? 0 : decision_last(st, d[i].gang, &last_id, &last_why, &last_reason);
        if (found < 0) {
            rc = -found;
            break;
        }
        bool at = d[i].has_eta && !d[i].eta;
        if (found && last_why == d[i].why) {
            if (strcmp(last_reason, d[i].reason) == 0 && !d[i].has_eta)
                continue;
            store__b_i64(st, STMT_DECISION_SET_REASON, 1, last_id, &rc);
            store__b_text(st, STMT_DECISION_SET_REASON, 2, d[i].reason, &rc);
            store__b_opt(st, STMT_DECISION_SET_REASON, 3, at ? d[i].eta_ms : STORE_NO_TIME,
                         STORE_NO_TIME, &rc);
            store__b_text(st, STMT_DECISION_SET_REASON, 4, d[i].has_eta ? d[i].eta : NULL, &rc);
            rc = store__exec(st, STMT_DECISION_SET_REASON, rc, NULL);
            continue;
        }
        store__b_i64(st, STMT_DECISION_ADD, 1, d[i].cycle, &rc);
        store__b_i64(st, STMT_DECISION_ADD, 2, d[i].ts_ms, &rc);
        store__b_text(st, STMT_DECISION_ADD, 3, d[i].gang, &rc);
        store__b_i64(st, STMT_DECISION_ADD, 4, d[i].why, &rc);
        store__b_text(st, STMT_DECISION_ADD, 5, d[i].reason, &rc);
        store__b_opt(st, STMT_DECISION_ADD, 6, at ? d[i].eta_ms : STORE_NO_TIME, STORE_NO_TIME,
                     &rc);
        store__b_text(st, STMT_DECISION_ADD, 7, d[i].has_eta ? d[i].eta : NULL, &rc);
        rc = store__exec(st, STMT_DECISION_ADD, rc, NULL);
        st->prune_due = true;
    }
    return store__wend(st, own, rc, "writing the decision log", eb);
}

bool store_decision_eta_moved(int64_t last_ms, int64_t at_ms, int64_t now_ms)
{
    if (at_ms == INT64_MIN)
        return false;
    if (last_ms == INT64_MIN)
        return true;
    int64_t slack =
        last_ms - now_ms > 4 * STORE_ETA_SLACK_MS ? (last_ms - now_ms) / 4 : STORE_ETA_SLACK_MS;
    return at_ms > last_ms + slack || at_ms < last_ms - slack;
}

int store_decision_add_many(struct store *st, const struct store_decision *d, uint32_t n,
                            struct sched_errbuf *eb)
{
    return decisions_add(st, d, n, false, eb);
}

int store_decision_add(struct store *st, const struct store_decision *d, struct sched_errbuf *eb)
{
    return decisions_add(st, d, d ? 1 : 0, false, eb);
}

int store_decision_append(struct store *st, const struct store_decision *d, struct sched_errbuf *eb)
{
    return decisions_add(st, d, d ? 1 : 0, true, eb);
}

int store_decision_count(struct store *st, int64_t *n, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_DECISION_COUNT);
    int rc = sqlite3_step(s);
    int err = 0;
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int64(s, 0);
    else
        err = store__sql_fail(st, rc, "counting decisions", eb);
    store__done(st, STMT_DECISION_COUNT);
    return err;
}

static int decision_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct each *e = ctx;
    struct store_decision d = {.id = sqlite3_column_int64(s, 0),
                               .cycle = sqlite3_column_int64(s, 1),
                               .ts_ms = sqlite3_column_int64(s, 2),
                               .gang = store__col_text(s, 3),
                               .why = (int)sqlite3_column_int64(s, 4),
                               .reason = store__col_text(s, 5),
                               .eta_ms = store__col_opt(s, 6, STORE_NO_TIME),
                               .eta = store__col_text(s, 7)};
    d.has_eta = d.eta_ms != STORE_NO_TIME || d.eta != NULL;
    if (!d.gang || !d.reason)
        return store__bad_row(st, eb, "decisions: row %" PRId64 " without gang or reason", d.id);
    return e->fn.decision(e->ctx, &d);
}

int store_decision_list(struct store *st, const char *gang, uint32_t limit, store_decision_fn *fn,
                        void *ctx, struct sched_errbuf *eb)
{
    enum store__stmt id = gang ? STMT_DECISION_LIST_GANG : STMT_DECISION_LIST;
    int rc = SQLITE_OK;
    if (gang)
        store__b_text(st, id, 1, gang, &rc);
    store__b_i64(st, id, gang ? 2 : 1, limit ? (int64_t)limit : -1, &rc);
    struct each e = {.fn.decision = fn, .ctx = ctx};
    return store__each(st, id, rc, "the decision log", decision_row, &e, eb);
}

int store_decision_latest(struct store *st, store_decision_fn *fn, void *ctx,
                          struct sched_errbuf *eb)
{
    struct each e = {.fn.decision = fn, .ctx = ctx};
    return store__each(st, STMT_DECISION_LATEST, SQLITE_OK, "the decision log", decision_row, &e,
                       eb);
}

/* ---- preemptions --------------------------------------------------------------------------- */

/* Whether s names a kind of preemption (sched_preempt_kind_name's names, up to its "unknown"). */
static bool preempt_kind_known(const char *s)
{
    for (int k = 0; s && k < 64; k++) {
        const char *name = sched_preempt_kind_name((enum sched_preempt_kind)k);
        if (strcmp(name, "unknown") == 0)
            break;
        if (strcmp(name, s) == 0)
            return true;
    }
    return false;
}

int store_preemption_add(struct store *st, const struct store_preemption *p,
                         struct sched_errbuf *eb)
{
    int err = need(st,
                   p && p->victim && p->preemptor && p->gpus >= 0 && isfinite(p->lost_work_gpu_s) &&
                       p->lost_work_gpu_s >= 0 && isfinite(p->cost) && p->members >= 0,
                   "preemption: victim, preemptor, gpus >= 0, finite lost work >= 0, cost and "
                   "members >= 0 required",
                   eb);
    if (err)
        return err;
    if (!preempt_kind_known(p->kind))
        return sched_fail(eb, SCHED_EINVAL,
                          "preemption of %s: kind \"%s\" is not one of priority, reclaim, "
                          "fair_share, overdue",
                          p->victim, p->kind ? p->kind : "(none)");
    bool own;
    err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_i64(st, STMT_PREEMPT_ADD, 1, p->cycle, &rc);
    store__b_i64(st, STMT_PREEMPT_ADD, 2, p->ts_ms, &rc);
    store__b_text(st, STMT_PREEMPT_ADD, 3, p->victim, &rc);
    store__b_text(st, STMT_PREEMPT_ADD, 4, p->preemptor, &rc);
    store__b_i64(st, STMT_PREEMPT_ADD, 5, p->gpus, &rc);
    store__b_double(st, STMT_PREEMPT_ADD, 6, p->lost_work_gpu_s, &rc);
    store__b_double(st, STMT_PREEMPT_ADD, 7, p->cost, &rc);
    store__b_text(st, STMT_PREEMPT_ADD, 8, p->kind, &rc);
    store__b_opt(st, STMT_PREEMPT_ADD, 9, p->members, 0, &rc); /* NULL: the whole gang */
    rc = store__exec(st, STMT_PREEMPT_ADD, rc, NULL);
    return store__wend(st, own, rc, "writing a preemption record", eb);
}

static int preemption_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct each *e = ctx;
    struct store_preemption p = {
        sqlite3_column_int64(s, 0),  sqlite3_column_int64(s, 1), store__col_text(s, 2),
        store__col_text(s, 3),       sqlite3_column_int64(s, 4), sqlite3_column_double(s, 5),
        sqlite3_column_double(s, 6), store__col_text(s, 7),      sqlite3_column_int64(s, 8)};
    if (!p.victim || !p.preemptor)
        return store__bad_row(st, eb, "preemptions: a row without victim or preemptor");
    return e->fn.preemption(e->ctx, &p);
}

int store__preemption_query(struct store *st, enum store__stmt id, int rc, store_preemption_fn *fn,
                            void *ctx, struct sched_errbuf *eb)
{
    struct each e = {.fn.preemption = fn, .ctx = ctx};
    return store__each(st, id, rc, "preemption records", preemption_row, &e, eb);
}

int store_preemption_list(struct store *st, store_preemption_fn *fn, void *ctx,
                          struct sched_errbuf *eb)
{
    return store__preemption_query(st, STMT_PREEMPT_LIST, SQLITE_OK, fn, ctx, eb);
}

int store_preemption_list_of(struct store *st, const char *gang, store_preemption_fn *fn, void *ctx,
                             struct sched_errbuf *eb)
{
    int rc = SQLITE_OK;
    store__b_text(st, STMT_VIEW_PREEMPTIONS, 1, gang, &rc);
    return store__preemption_query(st, STMT_VIEW_PREEMPTIONS, rc, fn, ctx, eb);
}

/* ---- jobs ---------------------------------------------------------------------------------- */

static const char *const job_states[] = {"pending", "admitted", "running", "finished", "failed"};
#define N_JOB_STATES ((int)(sizeof(job_states) / sizeof(job_states[0])))

const char *store_job_state_name(enum store_job_state s)
{
    return (unsigned)s < (unsigned)N_JOB_STATES ? job_states[s] : NULL;
}

static int job_valid(struct store *st, const struct store_job *j, struct sched_errbuf *eb)
{
    int err = need(st, j && j->gang && j->queue && store_job_state_name(j->state) && j->gpus >= 0,
                   "job: gang, queue, a known state and gpus >= 0 required", eb);
    if (!err && !j->flavor && (j->state == STORE_JOB_ADMITTED || j->state == STORE_JOB_RUNNING))
        err = sched_fail(eb, SCHED_EINVAL, "database %s: job %s is %s but names no flavor",
                         st->path, j->gang, store_job_state_name(j->state));
    return err;
}

static void bind_job(struct store *st, enum store__stmt id, int base, uint32_t i, const void *rows,
                     int *rc)
{
    const struct store_job *j = (const struct store_job *)rows + i;
    store__b_text(st, id, base + 1, j->gang, rc);
    store__b_opt(st, id, base + 2, j->gang_id < 0 ? -1 : j->gang_id, -1, rc);
    store__b_text(st, id, base + 3, j->queue, rc);
    store__b_text(st, id, base + 4, j->flavor, rc);
    store__b_i64(st, id, base + 5, j->gpus, rc);
    store__b_text(st, id, base + 6, store_job_state_name(j->state), rc);
    store__b_i64(st, id, base + 7, j->submit_ms, rc);
    store__b_opt(st, id, base + 8, j->admit_ms, STORE_NO_TIME, rc);
    store__b_opt(st, id, base + 9, j->start_ms, STORE_NO_TIME, rc);
    store__b_opt(st, id, base + 10, j->finish_ms, STORE_NO_TIME, rc);
    store__b_i64(st, id, base + 11, j->preemptions, rc);
    store__b_i64(st, id, base + 12, j->restarts, rc);
    store__b_text(st, id, base + 13, j->user, rc);
}

int store_job_upsert_many(struct store *st, const struct store_job *j, uint32_t n,
                          struct sched_errbuf *eb)
{
    for (uint32_t i = 0; i < n; i++) {
        int err = job_valid(st, j ? j + i : NULL, eb);
        if (err)
            return err;
    }
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = store__exec_rows(st, STMT_JOB_UPSERT, STMT_JOB_UPSERT_MANY, n, bind_job, j);
    return store__wend(st, own, rc, "writing a job", eb);
}

int store_job_upsert(struct store *st, const struct store_job *j, struct sched_errbuf *eb)
{
    return store_job_upsert_many(st, j, 1, eb);
}

/* Decodes a row of JOB_GET / JOB_LIST (strings borrowed from the statement). */
static int job_row(struct store *st, sqlite3_stmt *s, struct store_job *j, struct sched_errbuf *eb)
{
    memset(j, 0, sizeof(*j));
    j->gang = store__col_text(s, 0);
    j->gang_id = store__col_opt(s, 1, -1);
    j->queue = store__col_text(s, 2);
    j->flavor = store__col_text(s, 3);
    j->gpus = sqlite3_column_int64(s, 4);
    const char *state = store__col_text(s, 5);
    int k = parse_name(state, job_states, N_JOB_STATES);
    j->state = (enum store_job_state)(k < 0 ? 0 : k);
    j->submit_ms = sqlite3_column_int64(s, 6);
    j->admit_ms = store__col_opt(s, 7, STORE_NO_TIME);
    j->start_ms = store__col_opt(s, 8, STORE_NO_TIME);
    j->finish_ms = store__col_opt(s, 9, STORE_NO_TIME);
    j->user = store__col_text(s, 12);
    j->ran_ms = store__col_opt(s, 13, 0);
    int ran_type = sqlite3_column_type(s, 13);
    int64_t pre = sqlite3_column_int64(s, 10), re = sqlite3_column_int64(s, 11);
    if (!j->gang || !j->queue || k < 0 || j->gpus < 0 || pre < 0 || pre > UINT32_MAX || re < 0 ||
        re > UINT32_MAX || j->ran_ms < 0 || (ran_type != SQLITE_NULL && ran_type != SQLITE_INTEGER))
        return store__bad_row(st, eb, "jobs: row \"%.80s\" has a bad state, queue, count or ran_ms",
                              j->gang ? j->gang : "(null)");
    j->preemptions = (uint32_t)pre;
    j->restarts = (uint32_t)re;
    return 0;
}

/* Copies src into the scratch at *off; returns the copy or NULL for NULL. */
static const char *scratch_put(char *base, size_t *off, const char *src)
{
    if (!src)
        return NULL;
    size_t n = strlen(src) + 1;
    memcpy(base + *off, src, n);
    const char *r = base + *off;
    *off += n;
    return r;
}

int store_job_get(struct store *st, const char *gang, struct store_job *out,
                  struct sched_errbuf *eb)
{
    int err = need(st, gang && out, "job: gang required", eb);
    if (err)
        return err;
    sqlite3_stmt *s = store__s(st, STMT_JOB_GET);
    int rc = SQLITE_OK;
    store__b_text(st, STMT_JOB_GET, 1, gang, &rc);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        struct store_job j;
        err = job_row(st, s, &j, eb);
        size_t n = err ? 0
                       : strlen(j.gang) + strlen(j.queue) + (j.flavor ? strlen(j.flavor) : 0) +
                             (j.user ? strlen(j.user) : 0) + 4;
        char *buf = err ? NULL : store__scratch(st, n);
        if (!err && !buf)
            err = sched_fail(eb, SCHED_ENOMEM, "database %s: out of memory", st->path);
        if (!err) {
            size_t off = 0;
            j.gang = scratch_put(buf, &off, j.gang);
            j.queue = scratch_put(buf, &off, j.queue);
            j.flavor = scratch_put(buf, &off, j.flavor);
            j.user = scratch_put(buf, &off, j.user);
            *out = j;
        }
    } else if (rc == SQLITE_DONE) {
        err = sched_fail(eb, SCHED_ENOENT, "database %s: no job %s", st->path, gang);
    } else {
        err = store__sql_fail(st, rc, "reading a job", eb);
    }
    store__done(st, STMT_JOB_GET);
    return err;
}

static int job_each(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct each *e = ctx;
    struct store_job j;
    int err = job_row(st, s, &j, eb);
    return err ? err : e->fn.job(e->ctx, &j);
}

int store__job_query(struct store *st, enum store__stmt id, int rc, store_job_fn *fn, void *ctx,
                     struct sched_errbuf *eb)
{
    struct each e = {.fn.job = fn, .ctx = ctx};
    return store__each(st, id, rc, "jobs", job_each, &e, eb);
}

int store_job_list(struct store *st, store_job_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    return store__job_query(st, STMT_JOB_LIST, SQLITE_OK, fn, ctx, eb);
}

/* ---- fair-share history -------------------------------------------------------------------- */

int store_history_put(struct store *st, const char *queue, double share, int64_t updated_ms,
                      struct sched_errbuf *eb)
{
    int err = need(st, queue && isfinite(share) && share >= 0,
                   "fair share: queue and a finite share >= 0 required", eb);
    if (err)
        return err;
    bool own;
    err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_HIST_PUT, 1, queue, &rc);
    store__b_double(st, STMT_HIST_PUT, 2, share, &rc);
    store__b_i64(st, STMT_HIST_PUT, 3, updated_ms, &rc);
    rc = store__exec(st, STMT_HIST_PUT, rc, NULL);
    return store__wend(st, own, rc, "writing fair-share history", eb);
}

int store_history_get(struct store *st, const char *queue, double *share, int64_t *updated_ms,
                      struct sched_errbuf *eb)
{
    int err = need(st, queue && share && updated_ms, "fair share: queue required", eb);
    if (err)
        return err;
    sqlite3_stmt *s = store__s(st, STMT_HIST_GET);
    int rc = SQLITE_OK;
    store__b_text(st, STMT_HIST_GET, 1, queue, &rc);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        double v = sqlite3_column_double(s, 0);
        if (!isfinite(v) || v < 0)
            err = store__bad_row(st, eb, "fair_share: queue %s has share %g", queue, v);
        else {
            *share = v;
            *updated_ms = sqlite3_column_int64(s, 1);
        }
    } else if (rc == SQLITE_DONE) {
        err = sched_fail(eb, SCHED_ENOENT, "database %s: no fair-share history for queue %s",
                         st->path, queue);
    } else {
        err = store__sql_fail(st, rc, "reading fair-share history", eb);
    }
    store__done(st, STMT_HIST_GET);
    return err;
}

static int history_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct each *e = ctx;
    const char *q = store__col_text(s, 0);
    double v = sqlite3_column_double(s, 1);
    if (!q || !isfinite(v) || v < 0)
        return store__bad_row(st, eb, "fair_share: a row without queue or with share %g", v);
    return e->fn.history(e->ctx, q, v, sqlite3_column_int64(s, 2));
}

int store_history_list(struct store *st, store_history_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    struct each e = {.fn.history = fn, .ctx = ctx};
    return store__each(st, STMT_HIST_LIST, SQLITE_OK, "fair-share history", history_row, &e, eb);
}

struct history_scan {
    store_history_row_fn *fn;
    void *ctx;
};

static int history_scan_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    (void)st;
    (void)eb;
    const struct history_scan *h = ctx;
    const char *q = store__col_text(s, 0);
    int ts = sqlite3_column_type(s, 1);
    double v = sqlite3_column_double(s, 1);
    char bad[96] = "";
    if (!q)
        snprintf(bad, sizeof(bad), "queue: missing");
    else if (ts != SQLITE_FLOAT && ts != SQLITE_INTEGER)
        snprintf(bad, sizeof(bad), "share: not a number");
    else if (!isfinite(v) || v < 0)
        snprintf(bad, sizeof(bad), "share: %g is not a finite number >= 0", v);
    else if (sqlite3_column_type(s, 2) != SQLITE_INTEGER)
        snprintf(bad, sizeof(bad), "updated_ms: not an integer");
    return h->fn(h->ctx, q, v, sqlite3_column_int64(s, 2), bad[0] ? bad : NULL);
}

int store_history_scan(struct store *st, store_history_row_fn *fn, void *ctx,
                       struct sched_errbuf *eb)
{
    struct history_scan h = {fn, ctx};
    return store__each(st, STMT_HIST_LIST, SQLITE_OK, "fair-share history", history_scan_row, &h,
                       eb);
}
