/* store/actions.c: operator actions (schema version 2): what operators asked through the HTTP
 * API (hold, resume, drain a queue; reserve and unreserve; checkpoint a job), recorded for the
 * scheduler to apply and mark applied or rejected.
 *
 * Owns: the operator_actions rows and their validation on the way in and out.
 * Must not touch: the queues, reservations or jobs the actions name (applying them is the
 * scheduler's job), any other table.
 */
#include <string.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_int.h"

static const char *const kinds[] = {"hold",    "resume",    "drain",
                                    "reserve", "unreserve", "checkpoint"};
static const char *const states[] = {"pending", "applied", "rejected"};
#define N_KINDS  ((int)(sizeof(kinds) / sizeof(kinds[0])))
#define N_STATES ((int)(sizeof(states) / sizeof(states[0])))

const char *store_action_kind_name(enum store_action_kind k)
{
    return (unsigned)k < (unsigned)N_KINDS ? kinds[k] : NULL;
}

const char *store_action_state_name(enum store_action_state s)
{
    return (unsigned)s < (unsigned)N_STATES ? states[s] : NULL;
}

int store_action_kind_parse(const char *s)
{
    for (int i = 0; s && i < N_KINDS; i++)
        if (strcmp(s, kinds[i]) == 0)
            return i;
    return -1;
}

static int state_parse(const char *s)
{
    for (int i = 0; s && i < N_STATES; i++)
        if (strcmp(s, states[i]) == 0)
            return i;
    return -1;
}

int store_action_add(struct store *st, const struct store_action *a, int64_t *id,
                     struct sched_errbuf *eb)
{
    if (!a || !a->target || !*a->target || !store_action_kind_name(a->kind))
        return sched_fail(eb, SCHED_EINVAL,
                          "database %s: operator action: a known kind and a "
                          "target required",
                          st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_i64(st, STMT_ACTION_ADD, 1, a->ts_ms, &rc);
    store__b_text(st, STMT_ACTION_ADD, 2, kinds[a->kind], &rc);
    store__b_text(st, STMT_ACTION_ADD, 3, a->target, &rc);
    store__b_text(st, STMT_ACTION_ADD, 4, a->detail, &rc);
    store__b_text(st, STMT_ACTION_ADD, 5, a->actor, &rc);
    rc = store__exec(st, STMT_ACTION_ADD, rc, NULL);
    if (rc == SQLITE_OK && id)
        *id = sqlite3_last_insert_rowid(st->db);
    return store__wend(st, own, rc, "recording an operator action", eb);
}

int store_action_done(struct store *st, int64_t id, enum store_action_state state, int64_t now_ms,
                      const char *note, struct sched_errbuf *eb)
{
    if (state != STORE_ACTION_APPLIED && state != STORE_ACTION_REJECTED)
        return sched_fail(eb, SCHED_EINVAL,
                          "database %s: operator action %lld: applied or rejected required",
                          st->path, (long long)id);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK, changes = 0;
    store__b_i64(st, STMT_ACTION_DONE, 1, id, &rc);
    store__b_text(st, STMT_ACTION_DONE, 2, states[state], &rc);
    store__b_i64(st, STMT_ACTION_DONE, 3, now_ms, &rc);
    store__b_text(st, STMT_ACTION_DONE, 4, note, &rc);
    rc = store__exec(st, STMT_ACTION_DONE, rc, &changes);
    err = store__wend(st, own, rc, "completing an operator action", eb);
    if (!err && changes == 0)
        err = sched_fail(eb, SCHED_ENOENT, "database %s: no pending operator action %lld", st->path,
                         (long long)id);
    return err;
}

struct action_each {
    store_action_fn *fn;
    void *ctx;
};

static int action_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct action_each *e = ctx;
    int kind = store_action_kind_parse(store__col_text(s, 2));
    int state = state_parse(store__col_text(s, 6));
    struct store_action a = {.id = sqlite3_column_int64(s, 0),
                             .ts_ms = sqlite3_column_int64(s, 1),
                             .kind = (enum store_action_kind)(kind < 0 ? 0 : kind),
                             .target = store__col_text(s, 3),
                             .detail = store__col_text(s, 4),
                             .actor = store__col_text(s, 5),
                             .state = (enum store_action_state)(state < 0 ? 0 : state),
                             .done_ms = store__col_opt(s, 7, STORE_NO_TIME),
                             .note = store__col_text(s, 8)};
    if (kind < 0 || state < 0 || !a.target)
        return store__bad_row(st, eb, "operator_actions: row %lld: bad kind, state or target",
                              (long long)a.id);
    return e->fn(e->ctx, &a);
}

int store_action_list(struct store *st, bool pending_only, store_action_fn *fn, void *ctx,
                      struct sched_errbuf *eb)
{
    int rc = SQLITE_OK;
    store__b_i64(st, STMT_ACTION_LIST, 1, pending_only ? 1 : 0, &rc);
    struct action_each e = {fn, ctx};
    return store__each(st, STMT_ACTION_LIST, rc, "operator actions", action_row, &e, eb);
}
