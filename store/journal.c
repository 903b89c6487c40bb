/* store/journal.c: the bind journal (intent before a bind is sent, completion after) and the
 * placed pods it produces.
 *
 * Owns: the rules that make binding idempotent on the database side: at most one open intent
 * per pod (a partial unique index), and a pod enters placements once (its primary key) until
 * store_placement_release(), so a second bind of a placed pod is refused with SCHED_EEXIST and
 * rolls the cycle back.
 *
 * Must not touch: the cluster (recovery asks the driver what is really bound), transactions
 * (store.c), other tables.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sched/core/arena.h"
#include "store/store.h"
#include "store/store_int.h"

static const char *const bind_states[] = {"intent", "bound", "rolled_back"};

int store_journal_intent(struct store *st, const char *gang, int64_t cycle, int64_t now_ms,
                         const struct store_pod *pods, uint32_t n_pods, struct sched_errbuf *eb)
{
    bool ok = gang && pods && n_pods > 0;
    for (uint32_t i = 0; ok && i < n_pods; i++)
        ok = pods[i].name && pods[i].node && pods[i].index <= INT32_MAX;
    if (!ok)
        return sched_fail(eb, SCHED_EINVAL,
                          "database %s: bind intent needs a gang and pods with name and node",
                          st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    enum store__stmt id = STMT_JOURNAL_INTENT;
    int rc = SQLITE_OK;
    uint32_t i;
    for (i = 0; i < n_pods && rc == SQLITE_OK; i++) {
        store__b_i64(st, id, 1, st->seq + 1, &rc);
        store__b_i64(st, id, 2, cycle, &rc);
        store__b_text(st, id, 3, gang, &rc);
        store__b_i64(st, id, 4, pods[i].index, &rc);
        store__b_text(st, id, 5, pods[i].name, &rc);
        store__b_text(st, id, 6, pods[i].node, &rc);
        store__b_i64(st, id, 7, pods[i].gpu_mask, &rc);
        store__b_i64(st, id, 8, now_ms, &rc);
        rc = store__exec(st, id, rc, NULL);
    }
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return store__wfinish(st, own,
                              sched_fail(eb, SCHED_EEXIST,
                                         "database %s: gang %s pod %u already has an open bind "
                                         "intent",
                                         st->path, gang, pods[i - 1].index),
                              eb);
    return store__wend(st, own, rc, "recording bind intents", eb);
}

int store_journal_done(struct store *st, const char *gang, int32_t pod_index,
                       enum store_bind_state state, int64_t now_ms, uint32_t *n_done,
                       struct sched_errbuf *eb)
{
    if (!gang || pod_index < STORE_ALL_PODS ||
        (state != STORE_BIND_BOUND && state != STORE_BIND_ROLLED_BACK))
        return sched_fail(eb, SCHED_EINVAL,
                          "database %s: completing a bind needs a gang, a pod index or "
                          "STORE_ALL_PODS, and state bound or rolled back",
                          st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK, changes = 0;
    if (state == STORE_BIND_BOUND) {
        store__b_text(st, STMT_JOURNAL_PLACE, 1, gang, &rc);
        store__b_i64(st, STMT_JOURNAL_PLACE, 2, pod_index, &rc);
        store__b_i64(st, STMT_JOURNAL_PLACE, 3, now_ms, &rc);
        rc = store__exec(st, STMT_JOURNAL_PLACE, rc, NULL);
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
            return store__wfinish(st, own,
                                  sched_fail(eb, SCHED_EEXIST,
                                             "database %s: a pod of gang %s is placed already: "
                                             "refusing to bind it twice",
                                             st->path, gang),
                                  eb);
    }
    store__b_text(st, STMT_JOURNAL_DONE, 1, gang, &rc);
    store__b_i64(st, STMT_JOURNAL_DONE, 2, pod_index, &rc);
    store__b_text(st, STMT_JOURNAL_DONE, 3, bind_states[state], &rc);
    store__b_i64(st, STMT_JOURNAL_DONE, 4, now_ms, &rc);
    rc = store__exec(st, STMT_JOURNAL_DONE, rc, &changes);
    st->prune_due = true;
    err = store__wend(st, own, rc, "completing bind intents", eb);
    if (!err && n_done)
        *n_done = (uint32_t)changes;
    return err;
}

struct pending_row {
    const char *gang;
    int64_t cycle, intent_ms;
    struct store_pod pod;
};

int store_journal_pending(struct store *st, store_intent_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_JOURNAL_PENDING);
    struct arena a;
    arena_init(&a, 0);
    struct pending_row *rows = NULL;
    uint32_t n = 0, cap = 0;
    int err = 0, rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            uint32_t ncap = cap ? cap * 2 : 64;
            struct pending_row *grown = realloc(rows, ncap * sizeof(*grown));
            if (!grown) {
                rc = SQLITE_NOMEM;
                break;
            }
            rows = grown;
            cap = ncap;
        }
        struct pending_row *r = &rows[n];
        const char *gang = store__col_text(s, 0), *pod = store__col_text(s, 4),
                   *node = store__col_text(s, 5);
        int64_t index = sqlite3_column_int64(s, 3), mask = sqlite3_column_int64(s, 6);
        if (!gang || !pod || !node || index < 0 || index > INT32_MAX || mask < 0 ||
            mask > UINT32_MAX) {
            err = store__bad_row(st, eb, "bind_journal: open intent of \"%.80s\" is malformed",
                                 gang ? gang : "(null)");
            break;
        }
        /* Rows are sorted by gang: consecutive pods share one copy of the name. */
        bool same = n > 0 && strcmp(rows[n - 1].gang, gang) == 0;
        r->gang = same ? rows[n - 1].gang : arena_strdup(&a, gang);
        r->cycle = sqlite3_column_int64(s, 1);
        r->intent_ms = sqlite3_column_int64(s, 2);
        r->pod.index = (uint32_t)index;
        r->pod.name = arena_strdup(&a, pod);
        r->pod.node = arena_strdup(&a, node);
        r->pod.gpu_mask = (uint32_t)mask;
        if (!r->gang || !r->pod.name || !r->pod.node) {
            rc = SQLITE_NOMEM;
            break;
        }
        n++;
    }
    if (!err && rc != SQLITE_DONE)
        err = store__sql_fail(st, rc, "reading open bind intents", eb);
    store__done(st, STMT_JOURNAL_PENDING);

    struct store_pod *pods = err || !n ? NULL : malloc(n * sizeof(*pods));
    if (!err && n && !pods)
        err = sched_fail(eb, SCHED_ENOMEM, "database %s: out of memory", st->path);
    /* The statement is reset: the callback may write (complete or roll back the intents). */
    for (uint32_t i = 0; i < n && !err;) {
        uint32_t j = i;
        struct store_intent in = {rows[i].gang, rows[i].cycle, rows[i].intent_ms, pods, 0};
        for (; j < n && rows[j].gang == rows[i].gang; j++) {
            pods[j - i] = rows[j].pod;
            if (rows[j].cycle < in.cycle ||
                (rows[j].cycle == in.cycle && rows[j].intent_ms < in.intent_ms)) {
                in.cycle = rows[j].cycle;
                in.intent_ms = rows[j].intent_ms;
            }
        }
        in.n_pods = j - i;
        err = fn(ctx, &in);
        i = j;
    }
    free(pods);
    free(rows);
    arena_fini(&a);
    return err;
}

int store_placement_release(struct store *st, const char *gang, uint32_t *n,
                            struct sched_errbuf *eb)
{
    if (!gang)
        return sched_fail(eb, SCHED_EINVAL, "database %s: gang required", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK, changes = 0;
    store__b_text(st, STMT_PLACEMENT_RELEASE, 1, gang, &rc);
    rc = store__exec(st, STMT_PLACEMENT_RELEASE, rc, &changes);
    err = store__wend(st, own, rc, "releasing placed pods", eb);
    if (!err && n)
        *n = (uint32_t)changes;
    return err;
}

/* The pod indices of gang's placed pods not named in pods[0 .. n), into *out (malloc'd). */
static int placement_gone(struct store *st, const char *gang, const char *const *pods, uint32_t n,
                          int64_t **out, uint32_t *n_out)
{
    int rc = SQLITE_OK;
    uint32_t cap = 0;
    store__b_text(st, STMT_PLACEMENT_PODS, 1, gang, &rc);
    sqlite3_stmt *s = store__s(st, STMT_PLACEMENT_PODS);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *pod = store__col_text(s, 1);
        uint32_t k = 0;
        while (pod && k < n && (!pods[k] || strcmp(pods[k], pod) != 0))
            k++;
        rc = SQLITE_OK;
        if (pod && k < n)
            continue; /* still a member */
        if (*n_out == cap) {
            int64_t *g = realloc(*out, (cap ? 2 * cap : 8) * sizeof(**out));
            if (!g) {
                rc = SQLITE_NOMEM;
                break;
            }
            *out = g;
            cap = cap ? 2 * cap : 8;
        }
        (*out)[(*n_out)++] = sqlite3_column_int64(s, 0);
    }
    store__done(st, STMT_PLACEMENT_PODS);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int store_placement_keep(struct store *st, const char *gang, const char *const *pods, uint32_t n,
                         uint32_t *released, struct sched_errbuf *eb)
{
    if (!gang || (n && !pods))
        return sched_fail(eb, SCHED_EINVAL, "database %s: gang and pods required", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int64_t *gone = NULL;
    uint32_t n_gone = 0;
    int rc = placement_gone(st, gang, pods, n, &gone, &n_gone);
    for (uint32_t i = 0; rc == SQLITE_OK && i < n_gone; i++) {
        store__b_text(st, STMT_PLACEMENT_RELEASE_POD, 1, gang, &rc);
        store__b_i64(st, STMT_PLACEMENT_RELEASE_POD, 2, gone[i], &rc);
        rc = store__exec(st, STMT_PLACEMENT_RELEASE_POD, rc, NULL);
    }
    free(gone);
    err = store__wend(st, own, rc, "releasing placed pods", eb);
    if (!err && released)
        *released = n_gone;
    return err;
}

int store_placement_next(struct store *st, const char *gang, uint32_t *next,
                         struct sched_errbuf *eb)
{
    if (!gang)
        return sched_fail(eb, SCHED_EINVAL, "database %s: gang required", st->path);
    int rc = SQLITE_OK, err = 0;
    store__b_text(st, STMT_PLACEMENT_NEXT, 1, gang, &rc);
    sqlite3_stmt *s = store__s(st, STMT_PLACEMENT_NEXT);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    if (rc != SQLITE_ROW)
        err = store__sql_fail(st, rc, "reading placed pods", eb);
    else if (v < 0 || v > INT32_MAX)
        err = store__bad_row(st, eb, "placements: a pod index of \"%.80s\" is malformed", gang);
    else
        *next = (uint32_t)v;
    store__done(st, STMT_PLACEMENT_NEXT);
    return err;
}

struct placement_each {
    store_placement_fn *fn;
    void *ctx;
};

static int placement_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct placement_each *e = ctx;
    int64_t index = sqlite3_column_int64(s, 1), mask = sqlite3_column_int64(s, 4);
    struct store_placement p = {store__col_text(s, 0), (uint32_t)index, store__col_text(s, 2),
                                store__col_text(s, 3), (uint32_t)mask,  sqlite3_column_int64(s, 5)};
    if (!p.gang || !p.pod || !p.node || index < 0 || index > INT32_MAX || mask < 0 ||
        mask > UINT32_MAX)
        return store__bad_row(st, eb, "placements: a pod of \"%.80s\" is malformed",
                              p.gang ? p.gang : "(null)");
    return e->fn(e->ctx, &p);
}

int store__placement_query(struct store *st, enum store__stmt id, int rc, store_placement_fn *fn,
                           void *ctx, struct sched_errbuf *eb)
{
    struct placement_each e = {fn, ctx};
    return store__each(st, id, rc, "placed pods", placement_row, &e, eb);
}

int store_placement_list(struct store *st, store_placement_fn *fn, void *ctx,
                         struct sched_errbuf *eb)
{
    return store__placement_query(st, STMT_PLACEMENT_LIST, SQLITE_OK, fn, ctx, eb);
}
