/* tests/unit/test_store.c: the SQLite store's rows: create and reopen (everything written
 * persists), the bind journal round trip, decision log retention and one row per change of
 * verdict, the ledger check and its repair, reservations, configuration, transactions, rows
 * written several per statement, rows tampered with by another program, the statements being
 * reused rather than leaked (with ASan in `make san`), a cycle of 10,000 decisions and operator
 * actions. The database file from outside (missing, migrations, corrupt, read-only, full disk, a
 * second writer): test_store_files.c; the documents gangctl and the HTTP API show:
 * test_store_views.c.
 *
 * Owns: one mkdtemp directory per test (removed in teardown). Must not touch anything else.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "config/config.h"
#include "sched/core/cycle.h"
#include "store/store.h"

#include "tests/unit/store_fx.h"

/* ---- helpers ------------------------------------------------------------------------------- */

static int count_fn(void *ctx, const struct store_placement *p)
{
    (void)p;
    (*(int *)ctx)++;
    return 0;
}

static int n_placed(struct store *st)
{
    int n = 0;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_placement_list(st, count_fn, &n, &eb), 0);
    return n;
}

/* ---- create and reopen ----------------------------------------------------------------------- */

struct res_seen {
    int n;
    int64_t id;
    char gang[32];
    char nodes[64];
    enum store_res_kind kind;
    int64_t expires_ms, expected_start_ms;
};

static int res_fn(void *ctx, const struct store_reservation *r)
{
    struct res_seen *s = ctx;
    s->n++;
    s->id = r->id;
    s->kind = r->kind;
    s->expires_ms = r->expires_ms;
    s->expected_start_ms = r->expected_start_ms;
    snprintf(s->gang, sizeof(s->gang), "%s", r->gang);
    s->nodes[0] = '\0';
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        strncat(s->nodes, r->nodes[i], sizeof(s->nodes) - strlen(s->nodes) - 2);
        strcat(s->nodes, ",");
    }
    return 0;
}

struct eta_seen {
    int n;
    bool has[4];
    int64_t ms[4];
    char note[64];
};

static int seen_eta(void *ctx, const struct store_decision *d)
{
    struct eta_seen *e = ctx;
    if (e->n < 4) {
        e->has[e->n] = d->has_eta;
        e->ms[e->n] = d->has_eta && !d->eta ? d->eta_ms : STORE_NO_TIME;
        if (d->eta)
            snprintf(e->note, sizeof(e->note), "%s", d->eta);
    }
    e->n++;
    return 0;
}

static void test_create_and_reopen(void **state)
{
    struct fx *f = *state;
    struct sched_errbuf eb = {{0}};
    struct store_opts o;
    store_opts_default(&o);
    o.writer_id = "sched-0";
    struct store *st = open_ok(f->db, STORE_CREATE, &o);
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    assert_string_equal(store_path(st), f->db);
    assert_int_equal(store_begin(st, &eb), 0);
    struct store_job j = job("ns/train-1", "team-a", 16, STORE_JOB_RUNNING);
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    place(st, "ns/train-1", 2, 8, 1);
    assert_int_equal(store_ledger_add(st, "team-a", "default", STORE_GPU, 16, &eb), 0);
    assert_int_equal(store_ledger_add(st, "team-a", "default", "cpu", 64000, &eb), 0);
    assert_int_equal(store_history_put(st, "team-a", 0.25, 3000, &eb), 0);
    const char *held[] = {"node-3", "node-1"};
    struct store_reservation r = {0,    STORE_RES_STARVATION, "ns/big", held, 2, 4000,
                                  9000, STORE_NO_TIME};
    int64_t rid = 0;
    assert_int_equal(store_reservation_put(st, &r, &rid, &eb), 0);
    assert_true(rid > 0);
    struct store_decision d = {0,     1, 10,  "ns/big", SCHED_WHY_RESOURCES, "needs 64 GPUs",
                               false, 0, NULL};
    assert_int_equal(store_decision_add(st, &d, &eb), 0);
    /* schema 3: the expected start rides along (a time, or why there is none) */
    struct store_decision de = {0, 1, 10, "ns/eta", SCHED_WHY_RESOURCES, "r", true, 7000, NULL};
    assert_int_equal(store_decision_add(st, &de, &eb), 0);
    de = (struct store_decision){
        0, 2, 20, "ns/eta", SCHED_WHY_QUOTA, "q", true, 0, "no estimate: waiting for quota"};
    assert_int_equal(store_decision_add(st, &de, &eb), 0);
    struct store_preemption p = {1, 10, "ns/low", "ns/big", 8, 3600.5, 2.0, "priority", 0};
    assert_int_equal(store_preemption_add(st, &p, &eb), 0);
    assert_int_equal(store_meta_put_i64(st, "sim_now_ms", 123456, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    assert_int_equal(store_commit_seq(st), 1);
    store_close(st);

    st = open_ok(f->db, 0, NULL);
    assert_int_equal(store_commit_seq(st), 1);
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, "writer", &v, &eb), 0);
    assert_true(strncmp(v, "pid:", 4) == 0); /* default writer id of this open */
    assert_int_equal(store_meta_get(st, "created_at", &v, &eb), 0);
    assert_int_equal(strlen(v), 20);
    int64_t now = 0;
    assert_int_equal(store_meta_get_i64(st, "sim_now_ms", &now, &eb), 0);
    assert_int_equal(now, 123456);
    assert_int_equal(store_meta_get(st, "nope", &v, &eb), SCHED_ENOENT);

    struct eta_seen es = {0};
    assert_int_equal(store_decision_list(st, "ns/eta", 0, seen_eta, &es, &eb), 0);
    assert_int_equal(es.n, 2);
    assert_true(es.has[0] && es.ms[0] == STORE_NO_TIME); /* newest first: the note */
    assert_string_equal(es.note, "no estimate: waiting for quota");
    assert_true(es.has[1] && es.ms[1] == 7000);
    assert_int_equal(store_decision_list(st, "ns/big", 0, seen_eta, &es, &eb), 0);
    assert_false(es.has[2]); /* none given */

    struct store_job got;
    assert_int_equal(store_job_get(st, "ns/train-1", &got, &eb), 0);
    assert_string_equal(got.gang, "ns/train-1");
    assert_string_equal(got.queue, "team-a");
    assert_string_equal(got.flavor, "default");
    assert_int_equal(got.gang_id, 7);
    assert_int_equal(got.gpus, 16);
    assert_int_equal(got.state, STORE_JOB_RUNNING);
    assert_int_equal(got.admit_ms, 2000);
    assert_int_equal(got.start_ms, 2500);
    assert_true(got.finish_ms == STORE_NO_TIME);
    assert_int_equal(store_job_get(st, "ns/none", &got, &eb), SCHED_ENOENT);

    int64_t amount = -1;
    assert_int_equal(store_ledger_get(st, "team-a", "default", STORE_GPU, &amount, &eb), 0);
    assert_int_equal(amount, 16);
    assert_int_equal(store_ledger_get(st, "team-b", "default", STORE_GPU, &amount, &eb), 0);
    assert_int_equal(amount, 0);
    double share = 0;
    int64_t upd = 0;
    assert_int_equal(store_history_get(st, "team-a", &share, &upd, &eb), 0);
    assert_true(share == 0.25);
    assert_int_equal(upd, 3000);
    assert_int_equal(store_history_get(st, "team-z", &share, &upd, &eb), SCHED_ENOENT);

    struct res_seen seen;
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_reservation_list(st, res_fn, &seen, &eb), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.id, rid);
    assert_int_equal(seen.kind, STORE_RES_STARVATION);
    assert_string_equal(seen.gang, "ns/big");
    assert_string_equal(seen.nodes, "node-3,node-1,"); /* the caller's order */
    assert_int_equal(seen.expires_ms, 9000);
    assert_true(seen.expected_start_ms == STORE_NO_TIME);
    assert_int_equal(n_placed(st), 2);
    int64_t nd = 0;
    assert_int_equal(store_decision_count(st, &nd, &eb), 0);
    assert_int_equal(nd, 3); /* the plain one and the two with expected starts */
    char *text = NULL;
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    store_close(st);

    /* the file really is WAL mode, ours, version 1 */
    assert_int_equal(raw_int(f->db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(raw_int(f->db, "PRAGMA application_id"), STORE_APP_ID);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM pragma_journal_mode WHERE "
                                    "journal_mode = 'wal'"),
                     1);
}

/* ---- bind journal --------------------------------------------------------------------------- */

struct pending_seen {
    int gangs;
    int pods;
    char first[32];
    uint32_t masks;
    bool resolve; /* roll back every gang from inside the callback */
    struct store *st;
};

static int pending_fn(void *ctx, const struct store_intent *in)
{
    struct pending_seen *p = ctx;
    if (p->gangs++ == 0)
        snprintf(p->first, sizeof(p->first), "%s", in->gang);
    p->pods += (int)in->n_pods;
    for (uint32_t i = 0; i < in->n_pods; i++) {
        p->masks |= in->pods[i].gpu_mask;
        if (i > 0 && in->pods[i].index <= in->pods[i - 1].index)
            return -100; /* not sorted */
    }
    if (p->resolve) {
        struct sched_errbuf eb = {{0}};
        uint32_t n = 0;
        int err = store_journal_done(p->st, in->gang, STORE_ALL_PODS, STORE_BIND_ROLLED_BACK, 99,
                                     &n, &eb);
        if (err)
            return err;
        if (n != in->n_pods)
            return -101;
    }
    return 0;
}

static void test_journal_round_trip(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_pod a[3] = {{0, "a-0", "n1", 0x0f}, {1, "a-1", "n1", 0xf0}, {2, "a-2", "n2", 0x3}};
    struct store_pod b[2] = {{1, "b-1", "n3", 0x100}, {0, "b-0", "n3", 0x200}};
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_journal_intent(st, "a", 5, 50, a, 3, &eb), 0);
    assert_int_equal(store_journal_intent(st, "b", 5, 50, b, 2, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);

    /* a crash now: both gangs have open intents; recovery sees them, by gang, pods sorted */
    store_close(st);
    st = open_ok(f->db, 0, NULL);
    struct pending_seen seen;
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_journal_pending(st, pending_fn, &seen, &eb), 0);
    assert_int_equal(seen.gangs, 2);
    assert_int_equal(seen.pods, 5);
    assert_string_equal(seen.first, "a");
    assert_int_equal(seen.masks, 0x3ff);
    char *text = NULL;
    assert_int_equal(verify_text(st, &text), 0); /* open intents of the last commit are fine */
    free(text);

    /* a second intent for an open pod is refused and rolls the cycle back */
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_meta_put(st, "in-cycle", "1", &eb), 0);
    assert_int_equal(store_journal_intent(st, "a", 6, 60, &a[1], 1, &eb), SCHED_EEXIST);
    assert_non_null(strstr(eb.msg, "already has an open bind intent"));
    store_rollback(st);
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, "in-cycle", &v, &eb), SCHED_ENOENT);

    /* gang a is found bound in the cluster; gang b is rolled back from the callback */
    uint32_t n = 0;
    struct store_job ja = job("a", "q", 10, STORE_JOB_RUNNING);
    assert_int_equal(store_job_upsert(st, &ja, &eb), 0);
    assert_int_equal(store_journal_done(st, "a", STORE_ALL_PODS, STORE_BIND_BOUND, 70, &n, &eb), 0);
    assert_int_equal(n, 3);
    assert_int_equal(store_journal_done(st, "a", STORE_ALL_PODS, STORE_BIND_BOUND, 71, &n, &eb), 0);
    assert_int_equal(n, 0); /* completing twice is harmless */
    memset(&seen, 0, sizeof(seen));
    seen.resolve = true;
    seen.st = st;
    assert_int_equal(store_journal_pending(st, pending_fn, &seen, &eb), 0);
    assert_int_equal(seen.gangs, 1);
    assert_string_equal(seen.first, "b");
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_journal_pending(st, pending_fn, &seen, &eb), 0);
    assert_int_equal(seen.gangs, 0);
    assert_int_equal(n_placed(st), 3);
    assert_int_equal(store_ledger_set(st, "q", "default", STORE_GPU, 10, &eb), 0);
    assert_int_equal(verify_text(st, &text), 0);
    free(text);

    /* binding a placed pod again is refused: nothing is bound twice */
    assert_int_equal(store_journal_intent(st, "a", 8, 80, &a[0], 1, &eb), 0);
    assert_int_equal(store_journal_done(st, "a", 0, STORE_BIND_BOUND, 81, &n, &eb), SCHED_EEXIST);
    assert_non_null(strstr(eb.msg, "refusing to bind it twice"));
    assert_int_equal(store_journal_done(st, "a", 0, STORE_BIND_ROLLED_BACK, 82, &n, &eb), 0);
    assert_int_equal(n, 1);
    /* after the job ends its pods are released and may be bound again (a restart) */
    assert_int_equal(store_placement_release(st, "a", &n, &eb), 0);
    assert_int_equal(n, 3);
    assert_int_equal(store_journal_intent(st, "a", 9, 90, a, 3, &eb), 0);
    assert_int_equal(store_journal_done(st, "a", 2, STORE_BIND_BOUND, 91, &n, &eb), 0);
    assert_int_equal(n, 1);
    assert_int_equal(n_placed(st), 1);
    assert_int_equal(store_journal_done(st, "a", STORE_ALL_PODS, STORE_BIND_BOUND, 92, &n, &eb), 0);
    assert_int_equal(n, 2);
    assert_int_equal(n_placed(st), 3);
    /* members of an elastic gang that left: only their rows go; the others stay */
    const char *keep[] = {"a-2", "a-0", "x"};
    assert_int_equal(store_placement_keep(st, "a", keep, 3, &n, &eb), 0);
    assert_int_equal(n, 1);
    assert_int_equal(n_placed(st), 2);
    assert_int_equal(store_placement_keep(st, "a", keep, 3, &n, &eb), 0);
    assert_int_equal(n, 0); /* twice is harmless */
    assert_int_equal(store_placement_keep(st, "a", keep, 1, &n, &eb), 0);
    assert_int_equal(n, 1);
    assert_int_equal(n_placed(st), 1);
    assert_int_equal(store_placement_keep(st, "a", NULL, 1, &n, &eb), SCHED_EINVAL);
    assert_int_equal(store_placement_release(st, "a", &n, &eb), 0);
    assert_int_equal(store_journal_intent(st, "a", 9, 93, a, 3, &eb), 0);
    assert_int_equal(store_journal_done(st, "a", STORE_ALL_PODS, STORE_BIND_BOUND, 94, &n, &eb), 0);
    assert_int_equal(n_placed(st), 3);

    /* an intent left open past the next cycle commit is a finding */
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_journal_intent(st, "c", 10, 100, &b[0], 1, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    assert_int_equal(verify_text(st, &text), 1);
    assert_non_null(strstr(text, "bind intent of gang c pod 1"));
    assert_non_null(strstr(text, "still open"));
    free(text);
    assert_int_equal(store_journal_done(st, "c", 1, STORE_BIND_ROLLED_BACK, 110, &n, &eb), 0);
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    store_close(st);
}

/* ---- decision log retention ----------------------------------------------------------------- */

static int newest_fn(void *ctx, const struct store_decision *d)
{
    *(int64_t *)ctx = d->cycle;
    return 1; /* stop after the first */
}

static void test_decision_retention(void **state)
{
    struct fx *f = *state;
    struct store_opts o;
    store_opts_default(&o);
    o.retain_cycles = 0;
    o.retain_rows = 100;
    struct store *st = open_ok(f->db, STORE_CREATE, &o);
    struct sched_errbuf eb = {{0}};
    struct store_decision d[50];
    char gangs[50][16];
    for (int i = 0; i < 50; i++)
        snprintf(gangs[i], sizeof(gangs[i]), "ns/g%d", i);
    /* 50 gangs whose verdict changes every cycle: 50 new rows per cycle */
    for (int c = 1; c <= 20; c++) {
        for (int i = 0; i < 50; i++)
            d[i] = (struct store_decision){0,
                                           c,
                                           c * 1000 + i,
                                           gangs[i],
                                           c % 2 ? SCHED_WHY_QUOTA : SCHED_WHY_RESOURCES,
                                           "x",
                                           false,
                                           0,
                                           NULL};
        assert_int_equal(store_begin(st, &eb), 0);
        assert_int_equal(store_decision_add_many(st, d, 50, &eb), 0);
        assert_int_equal(store_commit(st, &eb), 0);
        int64_t n = 0;
        assert_int_equal(store_decision_count(st, &n, &eb), 0);
        assert_true(n <= 100);
    }
    int64_t n = 0, newest = 0;
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 100);
    assert_int_equal(store_decision_list(st, NULL, 0, newest_fn, &newest, &eb), 1);
    assert_int_equal(newest, 20);
    /* outside a transaction too */
    for (int i = 0; i < 30; i++) {
        struct store_decision one = {0,         21,    i, "ns/h", SCHED_WHY_BLOCKED,
                                     "blocked", false, 0, NULL};
        assert_int_equal(store_decision_add(st, &one, &eb), 0);
    }
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 100);
    assert_int_equal(store_decision_list(st, "ns/h", 1, newest_fn, &newest, &eb), 1);
    assert_int_equal(newest, 21);
    store_close(st);

    /* by cycles: keep the last 3 cycles */
    o.retain_cycles = 3;
    o.retain_rows = 0;
    st = open_ok(f->db, 0, &o);
    for (int c = 30; c < 40; c++) {
        for (int i = 0; i < 50; i++)
            d[i] = (struct store_decision){
                0,   c,     i, gangs[i], c % 2 ? SCHED_WHY_QUOTA : SCHED_WHY_RESOURCES,
                "x", false, 0, NULL};
        assert_int_equal(store_begin(st, &eb), 0);
        assert_int_equal(store_decision_add_many(st, d, 50, &eb), 0);
        /* completed bind journal entries are pruned with the same bound */
        struct store_pod p = {0, "p", "n", 1};
        char gang[16];
        snprintf(gang, sizeof(gang), "g%d", c);
        assert_int_equal(store_journal_intent(st, gang, c, c, &p, 1, &eb), 0);
        assert_int_equal(
            store_journal_done(st, gang, STORE_ALL_PODS, STORE_BIND_ROLLED_BACK, c, NULL, &eb), 0);
        assert_int_equal(store_commit(st, &eb), 0);
    }
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 150);
    store_close(st);
    assert_int_equal(raw_int(f->db, "SELECT MIN(cycle) FROM decisions"), 37);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM bind_journal"), 3);
}

/* ---- decision log: one row per change of verdict ----------------------------------------------
 */

struct dec_seen {
    int n;
    int64_t cycle, ts;
    int why;
    char reason[64];
    char gangs[4][16];
};

static int dec_seen_fn(void *ctx, const struct store_decision *d)
{
    struct dec_seen *s = ctx;
    if (s->n == 0) {
        s->cycle = d->cycle;
        s->ts = d->ts_ms;
        s->why = d->why;
        snprintf(s->reason, sizeof(s->reason), "%s", d->reason);
    }
    if (s->n < 4)
        snprintf(s->gangs[s->n], sizeof(s->gangs[0]), "%s", d->gang);
    s->n++;
    return 0;
}

/* A driver that reports the same verdict every cycle (the daemon did: 26 rows in 25 s for one
 * waiting gang) leaves one row; new figures replace its text and keep its time; a new verdict
 * appends a row; store_decision_latest gives each gang's newest row. */
static void test_decision_dedup(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    for (int c = 1; c <= 25; c++) {
        struct store_decision d = {0,     c, c * 1000, "ns/w", SCHED_WHY_QUOTA, "may still take 40",
                                   false, 0, NULL};
        assert_int_equal(store_decision_add(st, &d, &eb), 0);
    }
    int64_t n = 0;
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 1);
    struct store_decision d2 = {0,     30, 30000, "ns/w", SCHED_WHY_QUOTA, "may still take 4",
                                false, 0,  NULL};
    assert_int_equal(store_decision_add(st, &d2, &eb), 0);
    struct dec_seen s = {0};
    assert_int_equal(store_decision_list(st, "ns/w", 0, dec_seen_fn, &s, &eb), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.reason, "may still take 4"); /* current figures */
    assert_int_equal(s.cycle, 1);                      /* since the first cycle of that verdict */
    assert_int_equal(s.ts, 1000);
    struct store_decision d3 = {0,     31, 31000, "ns/w", SCHED_WHY_RESOURCES, "no node fits",
                                false, 0,  NULL};
    struct store_decision d4 = {0,     31, 31000, "ns/v", SCHED_WHY_QUOTA, "may still take 0",
                                false, 0,  NULL};
    assert_int_equal(store_decision_add(st, &d3, &eb), 0);
    assert_int_equal(store_decision_add(st, &d4, &eb), 0);
    memset(&s, 0, sizeof(s));
    assert_int_equal(store_decision_list(st, "ns/w", 0, dec_seen_fn, &s, &eb), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.why, SCHED_WHY_RESOURCES);
    /* back to quota: a new row (a change of verdict), not the old one's text */
    struct store_decision d5 = {0,     32, 32000, "ns/w", SCHED_WHY_QUOTA, "may still take 4",
                                false, 0,  NULL};
    assert_int_equal(store_decision_add(st, &d5, &eb), 0);
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 4);
    memset(&s, 0, sizeof(s));
    assert_int_equal(store_decision_latest(st, dec_seen_fn, &s, &eb), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.gangs[0], "ns/v");
    assert_string_equal(s.gangs[1], "ns/w");
    /* store_decision_append trusts its caller (the newest row has another why): it appends
     * without comparing, even the same verdict, where store_decision_add would drop it */
    struct store_decision d6 = {0,     33, 33000, "ns/w", SCHED_WHY_QUOTA, "may still take 4",
                                false, 0,  NULL};
    assert_int_equal(store_decision_add(st, &d6, &eb), 0);
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 4);
    assert_int_equal(store_decision_append(st, &d6, &eb), 0);
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 5);
    /* ... and the next add compares with the appended row */
    struct store_decision d7 = {0,     34, 34000, "ns/w", SCHED_WHY_QUOTA, "may still take 2",
                                false, 0,  NULL};
    assert_int_equal(store_decision_add(st, &d7, &eb), 0);
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, 5);
    memset(&s, 0, sizeof(s));
    assert_int_equal(store_decision_list(st, "ns/w", 0, dec_seen_fn, &s, &eb), 0);
    assert_string_equal(s.reason, "may still take 2");
    assert_int_equal(s.cycle, 33);
    store_close(st);
}

/* ---- ledger check --------------------------------------------------------------------------- */

static void test_ledger_check(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_begin(st, &eb), 0);
    struct store_job a = job("ns/a", "q1", 8, STORE_JOB_RUNNING);
    struct store_job b = job("ns/b", "q1", 4, STORE_JOB_ADMITTED);
    struct store_job c = job("ns/c", "q2", 2, STORE_JOB_RUNNING);
    struct store_job d = job("ns/d", "q2", 6, STORE_JOB_FINISHED);
    assert_int_equal(store_job_upsert(st, &a, &eb), 0);
    assert_int_equal(store_job_upsert(st, &b, &eb), 0);
    assert_int_equal(store_job_upsert(st, &c, &eb), 0);
    assert_int_equal(store_job_upsert(st, &d, &eb), 0);
    place(st, "ns/a", 2, 4, 1);
    place(st, "ns/c", 1, 2, 1);
    assert_int_equal(store_ledger_add(st, "q1", "default", STORE_GPU, 12, &eb), 0);
    assert_int_equal(store_ledger_add(st, "q2", "default", STORE_GPU, 2, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    char *text = NULL;
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(store_check_main(f->db, devnull), 0);

    /* the ledger drifts */
    assert_int_equal(store_ledger_add(st, "q1", "default", STORE_GPU, 4, &eb), 0);
    assert_int_equal(verify_text(st, &text), 1);
    assert_non_null(strstr(text, "ledger mismatch: queue=q1 flavor=default nvidia.com/gpu: "
                                 "ledger 16, admitted and running jobs 12"));
    free(text);
    assert_int_equal(store_check_main(f->db, devnull), 1);
    /* a running job whose placed pods hold fewer GPUs, and pods of a finished job */
    struct store_job c2 = job("ns/c", "q2", 3, STORE_JOB_RUNNING);
    assert_int_equal(store_job_upsert(st, &c2, &eb), 0);
    place(st, "ns/d", 1, 1, 2);
    assert_int_equal(verify_text(st, &text), 1);
    assert_non_null(strstr(text, "running job ns/c: 3 GPUs, but its 1 placed pods hold 2"));
    assert_non_null(strstr(text, "1 placed pods of job ns/d, which is finished"));
    assert_non_null(strstr(text, "ledger mismatch: queue=q2"));
    free(text);
    assert_int_equal(store_job_upsert(st, &c, &eb), 0);
    assert_int_equal(store_placement_release(st, "ns/d", NULL, &eb), 0);

    /* recovery: the driver computes what is placed and the store takes it */
    struct store_ledger_row actual[] = {{"q1", "default", STORE_GPU, 12},
                                        {"q2", "default", STORE_GPU, 2}};
    uint32_t diff = 0;
    assert_int_equal(store_ledger_add(st, "q3", "default", STORE_GPU, 5, &eb), 0);
    assert_int_equal(store_ledger_reconcile(st, actual, 2, &diff, &eb), 0);
    assert_int_equal(diff, 2); /* q1 16 -> 12, q3 5 -> 0 */
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    assert_int_equal(store_ledger_reconcile(st, actual, 2, &diff, &eb), 0);
    assert_int_equal(diff, 0);

    /* a negative delta releases what was charged */
    assert_int_equal(store_ledger_add(st, "q2", "default", STORE_GPU, -1, &eb), 0);
    assert_int_equal(store_ledger_add(st, "q2", "default", STORE_GPU, 1, &eb), 0);
    /* a ledger never goes negative: the write fails, nothing changes */
    assert_int_equal(store_ledger_add(st, "q2", "default", STORE_GPU, -3, &eb), SCHED_ERANGE);
    assert_non_null(strstr(eb.msg, "below 0"));
    int64_t amount = 0;
    assert_int_equal(store_ledger_get(st, "q2", "default", STORE_GPU, &amount, &eb), 0);
    assert_int_equal(amount, 2);
    assert_int_equal(store_ledger_add(st, "q2", "default", STORE_GPU, INT64_MAX, &eb),
                     SCHED_ERANGE);
    assert_int_equal(store_check_main(f->db, devnull), 0);
    fclose(devnull);
    store_close(st);
}

/* ---- reservations, configuration, transactions ---------------------------------------------- */

static void test_reservations(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    const char *n1[] = {"a", "b"}, *n2[] = {"c"};
    struct store_reservation s = {0, STORE_RES_STARVATION, "g1", n1, 2, 10, STORE_NO_TIME, 500};
    struct store_reservation p = {0, STORE_RES_PREEMPTOR, "g2", n2, 1, 10, 100, STORE_NO_TIME};
    struct store_reservation op = {0, STORE_RES_OPERATOR, "maint", n2, 1, 10, 50, STORE_NO_TIME};
    int64_t id1 = 0, id2 = 0, id3 = 0;
    assert_int_equal(store_reservation_put(st, &s, &id1, &eb), 0);
    assert_int_equal(store_reservation_put(st, &p, &id2, &eb), 0);
    assert_int_equal(store_reservation_put(st, &op, &id3, &eb), 0);
    assert_true(id1 < id2 && id2 < id3);
    /* replace reservation 1: its nodes are replaced too */
    s.id = id1;
    s.nodes = n2;
    s.n_nodes = 1;
    int64_t again = 0;
    assert_int_equal(store_reservation_put(st, &s, &again, &eb), 0);
    assert_int_equal(again, id1);
    uint32_t n = 0;
    assert_int_equal(store_reservation_expire(st, 60, &n, &eb), 0);
    assert_int_equal(n, 1); /* the operator hold ended at 50 */
    struct res_seen seen;
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_reservation_list(st, res_fn, &seen, &eb), 0);
    assert_int_equal(seen.n, 2);
    assert_int_equal(store_reservation_delete_kind(st, STORE_RES_STARVATION, &n, &eb), 0);
    assert_int_equal(n, 1);
    assert_int_equal(store_reservation_delete(st, id2, &n, &eb), 0);
    assert_int_equal(n, 1);
    assert_int_equal(store_reservation_delete(st, id2, &n, &eb), 0);
    assert_int_equal(n, 0);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_reservation_list(st, res_fn, &seen, &eb), 0);
    assert_int_equal(seen.n, 0);
    /* the node rows went with them (foreign key cascade) */
    store_close(st);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM reservation_nodes"), 0);
    assert_string_equal(store_res_kind_name(STORE_RES_OPERATOR), "operator");
}

struct queue_seen {
    int n;
    char text[256];
};

static int queue_fn(void *ctx, const struct store_queue *q)
{
    struct queue_seen *s = ctx;
    s->n++;
    size_t at = strlen(s->text);
    snprintf(s->text + at, sizeof(s->text) - at, "%s/%s/%g/%d:", q->name,
             q->cohort ? q->cohort : "-", q->weight, q->priority);
    for (uint32_t i = 0; i < q->n_quotas; i++) {
        at = strlen(s->text);
        snprintf(s->text + at, sizeof(s->text) - at, "%s.%s=%lld,%lld;", q->quotas[i].flavor,
                 q->quotas[i].resource, (long long)q->quotas[i].nominal,
                 q->quotas[i].borrowing_limit == STORE_NO_LIMIT
                     ? -1LL
                     : (long long)q->quotas[i].borrowing_limit);
    }
    return 0;
}

static void test_config_and_queues(void **state)
{
    struct fx *f = *state;
    static const char yaml[] = "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
                               "cohorts:\n  - name: co\nqueues:\n"
                               "  - name: a\n    cohort: co\n    weight: 2\n    priority: 5\n"
                               "    quota:\n      default:\n"
                               "        nvidia.com/gpu: {nominal: 9, borrowingLimit: 1}\n"
                               "  - name: b\n    quota:\n      default:\n"
                               "        nvidia.com/gpu: 12\n";
    struct config *cfg = NULL;
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("test.yaml", yaml, strlen(yaml), &cfg, &eb) != 0)
        fail_msg("config: %s", eb.msg);
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct store_quota extra = {"default", "cpu", 1000, STORE_NO_LIMIT, STORE_NO_LIMIT};
    struct store_queue old = {"gone", NULL, 1, 0, &extra, 1};
    assert_int_equal(store_queue_put(st, &old, &eb), 0);
    assert_int_equal(store_config_apply(st, cfg, yaml, strlen(yaml), &eb), 0);
    struct queue_seen seen;
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_queue_list(st, queue_fn, &seen, &eb), 0);
    assert_int_equal(seen.n, 2); /* "gone" was replaced */
    assert_string_equal(seen.text, "a/co/2/5:default.nvidia.com/gpu=9,1;"
                                   "b/-/1/0:default.nvidia.com/gpu=12,-1;");
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, "config_text", &v, &eb), 0);
    assert_string_equal(v, yaml);
    assert_int_equal(store_meta_get(st, "config_version", &v, &eb), 0);
    char want[32];
    snprintf(want, sizeof(want), "%016llx", (unsigned long long)cfg->version);
    assert_string_equal(v, want);
    struct store_queue bad = {"w", NULL, 0, 0, NULL, 0};
    assert_int_equal(store_queue_put(st, &bad, &eb), SCHED_EINVAL);
    assert_int_equal(store_queue_delete(st, "b", &eb), 0);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_queue_list(st, queue_fn, &seen, &eb), 0);
    assert_int_equal(seen.n, 1);
    store_close(st);
    config_free(cfg);
}

static void test_transactions(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_commit(st, &eb), SCHED_EINVAL);
    assert_int_equal(store_begin(st, &eb), 0);
    assert_true(store_in_txn(st));
    assert_int_equal(store_begin(st, &eb), SCHED_EINVAL);
    assert_int_equal(store_meta_put(st, "k", "rolled back", &eb), 0);
    store_rollback(st);
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, "k", &v, &eb), SCHED_ENOENT);
    store_rollback(st); /* no-op */
    /* a job that holds resources must name its flavor (caught before writing) */
    struct store_job j = job("x", "q", 1, STORE_JOB_RUNNING);
    j.flavor = NULL;
    assert_int_equal(store_job_upsert(st, &j, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "names no flavor"));
    /* close with an open transaction: rolled back, not committed */
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_meta_put(st, "k", "lost", &eb), 0);
    store_close(st);
    st = open_ok(f->db, 0, NULL);
    assert_int_equal(store_meta_get(st, "k", &v, &eb), SCHED_ENOENT);
    assert_int_equal(store_commit_seq(st), 0);
    store_close(st);
    store_close(NULL);
}

/* store_meta_put_many and store_job_upsert_many write several rows per statement (full groups of
 * 32, the rest one by one): every row lands exactly as the single-row calls write it, a second
 * write updates, and one invalid row writes nothing at all. */
static void test_many_rows(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    enum { N = 75 }; /* two full statements of 32 rows and 11 single rows */
    static char names[N][16], vals[N][16];
    struct store_kv kv[N];
    struct store_job jobs[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "g%02d", i);
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        kv[i] = (struct store_kv){names[i], vals[i]};
        jobs[i] = job(names[i], "q", i, i % 2 ? STORE_JOB_RUNNING : STORE_JOB_PENDING);
    }
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_meta_put_many(st, kv, N, &eb), 0);
    assert_int_equal(store_job_upsert_many(st, jobs, N, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    /* again, changed: every row is updated in place */
    for (int i = 0; i < N; i++) {
        snprintf(vals[i], sizeof(vals[i]), "w%d", i);
        jobs[i].state = STORE_JOB_FINISHED;
        jobs[i].finish_ms = 9000 + i;
    }
    assert_int_equal(store_meta_put_many(st, kv, N, &eb), 0); /* outside a transaction too */
    assert_int_equal(store_job_upsert_many(st, jobs, N, &eb), 0);
    for (int i = 0; i < N; i++) {
        const char *v = NULL;
        assert_int_equal(store_meta_get(st, names[i], &v, &eb), 0);
        assert_string_equal(v, vals[i]);
        struct store_job got;
        assert_int_equal(store_job_get(st, names[i], &got, &eb), 0);
        assert_int_equal(got.gpus, i);
        assert_int_equal(got.state, STORE_JOB_FINISHED);
        assert_int_equal(got.finish_ms, 9000 + i);
        assert_int_equal(got.start_ms, i % 2 ? 2500 : STORE_NO_TIME);
    }
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM jobs"), N);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM meta WHERE key LIKE 'g%'"), N);
    /* one bad row (the last, after two full statements): nothing of the call is written */
    jobs[N - 1].gpus = -1;
    jobs[0].state = STORE_JOB_FAILED;
    assert_int_equal(store_job_upsert_many(st, jobs, N, &eb), SCHED_EINVAL);
    struct store_job got;
    assert_int_equal(store_job_get(st, names[0], &got, &eb), 0);
    assert_int_equal(got.state, STORE_JOB_FINISHED);
    kv[N - 1].value = NULL;
    kv[0].value = "lost";
    assert_int_equal(store_meta_put_many(st, kv, N, &eb), SCHED_EINVAL);
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, names[0], &v, &eb), 0);
    assert_string_equal(v, "w0");
    assert_int_equal(store_meta_put_many(st, kv, 0, &eb), 0);
    assert_int_equal(store_job_upsert_many(st, NULL, 0, &eb), 0);
    assert_int_equal(store_job_upsert_many(st, NULL, 1, &eb), SCHED_EINVAL);
    assert_int_equal(store_verify(st, NULL, &eb), 0);
    store_close(st);
}

/* Rows are validated when read, never asserted on: a row that bypassed the CHECK constraints
 * (written by another program) is reported as corruption, and so is the file at the next open. */
static void test_tampered_rows(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_job j = job("ns/t", "q", 2, STORE_JOB_PENDING);
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    place(st, "ns/t", 1, 2, 1);
    raw_sql(f->db, "PRAGMA ignore_check_constraints = ON;"
                   "UPDATE jobs SET state = 'zombie' WHERE gang = 'ns/t';"
                   "UPDATE placements SET gpu_mask = -5;");
    struct store_job got;
    assert_int_equal(store_job_get(st, "ns/t", &got, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "corrupt database"));
    assert_non_null(strstr(eb.msg, "ns/t"));
    assert_int_equal(store_placement_list(st, count_fn, &(int){0}, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "placements"));
    store_close(st);
    open_fails(f->db, 0, SCHED_EIO, "corrupt database", "quick_check");
    /* store check opens the file read-only, where SQLite's integrity_check skips CHECK
     * constraints (before: "consistent", exit 0): it verifies them itself, from the file's
     * schema; "CHECK" in a name, a string or a comment is not a constraint */
    raw_sql(f->db, "CREATE TABLE \"odd \"\"t\"\"\" (checkpoint INTEGER CHECK (checkpoint <> ')'),"
                   "  note TEXT DEFAULT 'CHECK (0)' /* CHECK (0) */ -- CHECK (0)\n"
                   "  , CHECK ((checkpoint) > 0));"
                   "PRAGMA ignore_check_constraints = ON;"
                   "INSERT INTO \"odd \"\"t\"\"\" VALUES (-1, 'x'), (-2, 'y'), (3, 'z');");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(store_check_main(f->db, out), 1);
    fclose(out);
    static const char *const want[] = {
        "CHECK constraint failed in jobs: 1 row breaks CHECK (state IN ('pending', 'admitted', "
        "'running', 'finished', 'failed'))",
        "CHECK constraint failed in placements: 1 row breaks CHECK (gpu_mask BETWEEN 0 AND "
        "4294967295)",
        "CHECK constraint failed in odd \"t\": 2 rows break CHECK ((checkpoint) > 0)",
        "4 problems found"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("store check lacks \"%s\":\n%s", want[i], text);
    free(text);
}

/* ---- statements are reused ------------------------------------------------------------------ */

static void test_statements_reused(void **state)
{
    struct fx *f = *state;
    sqlite3_int64 base = sqlite3_memory_used();
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    sqlite3_int64 opened = sqlite3_memory_used();
    for (int round = 0; round < 3; round++) {
        assert_int_equal(store_begin(st, &eb), 0);
        for (int i = 0; i < 300; i++) {
            char gang[32];
            snprintf(gang, sizeof(gang), "g%d", i);
            struct store_job j = job(gang, "q", i % 4, STORE_JOB_PENDING);
            j.restarts = (uint32_t)round;
            assert_int_equal(store_job_upsert(st, &j, &eb), 0);
            struct store_job got;
            assert_int_equal(store_job_get(st, gang, &got, &eb), 0);
            assert_int_equal(got.restarts, round);
            int64_t amount;
            assert_int_equal(store_ledger_get(st, "q", "default", STORE_GPU, &amount, &eb), 0);
            /* errors reset the statement too */
            assert_int_equal(store_job_get(st, "missing", &got, &eb), SCHED_ENOENT);
        }
        assert_int_equal(store_commit(st, &eb), 0);
    }
    /* the connection's memory does not grow with use beyond the page cache */
    sqlite3_int64 used = sqlite3_memory_used();
    assert_true(used - opened < 4 * 1024 * 1024);
    store_close(st);
    assert_int_equal(sqlite3_memory_used(), base); /* everything finalized and freed */
}

/* ---- a large cycle -------------------------------------------------------------------------- */

/* A cycle of 10,000 decisions persists in one transaction and reads back whole (its speed is
 * measured by make bench, not here). */
static void test_cycle_of_10000_decisions(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    enum { N = 10000 };
    struct store_decision *d = calloc(N, sizeof(*d));
    char(*gangs)[24] = calloc(N, sizeof(*gangs));
    assert_non_null(d);
    assert_non_null(gangs);
    for (int i = 0; i < N; i++) {
        snprintf(gangs[i], sizeof(gangs[i]), "ns/job-%05d", i);
        d[i] = (struct store_decision){0,
                                       1,
                                       1000,
                                       gangs[i],
                                       SCHED_WHY_RESOURCES,
                                       "needs 8 nvidia.com/gpu per pod x 2 pods; 0/64 nodes fit: "
                                       "60 insufficient nvidia.com/gpu (best 4 free), 4 cordoned",
                                       false,
                                       0,
                                       NULL};
    }
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_decision_add_many(st, d, N, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    int64_t n = 0;
    assert_int_equal(store_decision_count(st, &n, &eb), 0);
    assert_int_equal(n, N);
    free(gangs);
    free(d);
    store_close(st);
}

/* ---- operator actions (schema version 2) ---------------------------------------------------- */

struct act_seen {
    int n;
    int64_t last_id;
    enum store_action_state last_state;
    char target[32];
};

static int see_action(void *ctx, const struct store_action *a)
{
    struct act_seen *s = ctx;
    s->n++;
    s->last_id = a->id;
    s->last_state = a->state;
    snprintf(s->target, sizeof(s->target), "%s", a->target);
    return 0;
}

static void test_operator_actions(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_action a = {.ts_ms = 5, .kind = STORE_ACT_HOLD, .target = "prod"};
    int64_t id1 = 0, id2 = 0;
    assert_int_equal(store_action_add(st, &a, &id1, &eb), 0);
    a.kind = STORE_ACT_RESERVE;
    a.target = "ns/job";
    a.detail = "{\"nodes\":[\"n1\"]}";
    assert_int_equal(store_action_add(st, &a, &id2, &eb), 0);
    assert_true(id2 > id1 && id1 > 0);
    a.target = NULL;
    assert_int_equal(store_action_add(st, &a, NULL, &eb), SCHED_EINVAL);
    a.target = "x";
    a.kind = (enum store_action_kind)99;
    assert_int_equal(store_action_add(st, &a, NULL, &eb), SCHED_EINVAL);
    assert_int_equal(store_action_done(st, id1, STORE_ACTION_APPLIED, 9, NULL, &eb), 0);
    assert_int_equal(store_action_done(st, id1, STORE_ACTION_REJECTED, 9, "x", &eb), SCHED_ENOENT);
    struct act_seen seen = {0};
    assert_int_equal(store_action_list(st, true, see_action, &seen, &eb), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.last_id, id2);
    assert_string_equal(seen.target, "ns/job");
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(store_action_list(st, false, see_action, &seen, &eb), 0);
    assert_int_equal(seen.n, 2);
    assert_int_equal(store_action_kind_parse("checkpoint"), STORE_ACT_CHECKPOINT);
    assert_int_equal(store_action_kind_parse("nope"), -1);
    store_close(st);
}

/* store_decision_eta_moved: the rule both drivers use to write an unchanged verdict again. */
static void test_decision_eta_moved(void **state)
{
    (void)state;
    const int64_t now = 1000000000, min = 60 * 1000;
    assert_false(store_decision_eta_moved(INT64_MIN, INT64_MIN, now)); /* none, still none */
    assert_true(store_decision_eta_moved(INT64_MIN, now + min, now));  /* a first one */
    assert_false(store_decision_eta_moved(now + min, INT64_MIN, now)); /* gone: not a move */
    /* a wait of 20 minutes announced: the slack is 10 minutes */
    assert_false(store_decision_eta_moved(now + 20 * min, now + 30 * min, now));
    assert_true(store_decision_eta_moved(now + 20 * min, now + 30 * min + 1, now));
    assert_false(store_decision_eta_moved(now + 20 * min, now + 10 * min, now));
    assert_true(store_decision_eta_moved(now + 20 * min, now + 10 * min - 1, now));
    /* a wait of 2 hours announced: a quarter of it, 30 minutes */
    assert_false(store_decision_eta_moved(now + 120 * min, now + 145 * min, now));
    assert_true(store_decision_eta_moved(now + 120 * min, now + 151 * min, now));
    assert_false(store_decision_eta_moved(now + 120 * min, now + 90 * min, now));
    assert_true(store_decision_eta_moved(now + 120 * min, now + 89 * min, now));
    /* an announced start already past: 10 minutes */
    assert_true(store_decision_eta_moved(now - 30 * min, now, now));
}

/* store check finds what a job row keeps of its wait or run in a bad shape (written by hand:
 * the store's own writes cannot make them): a time that is not an integer, a promise to no
 * gang, an in-place restart on a job out of its run. One in its run is fine. */
static void test_verify_run_notes(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_job a = job("ns/a", "q", 0, STORE_JOB_ADMITTED),
                     p = job("ns/p", "q", 0, STORE_JOB_PENDING);
    assert_int_equal(store_job_upsert(st, &a, &eb), 0);
    assert_int_equal(store_job_upsert(st, &p, &eb), 0);
    store_close(st);
    raw_sql(f->db, "UPDATE jobs SET restart_ms = 5 WHERE gang = 'ns/a'");
    st = open_ok(f->db, 0, NULL);
    char *text = NULL;
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    store_close(st);
    raw_sql(f->db,
            "UPDATE jobs SET restart_ms = 'soon', probation_until_ms = 9 WHERE gang = 'ns/a';"
            "UPDATE jobs SET restart_ms = 5, reserve_first_ms = 'x', ran_ms = -3 "
            "WHERE gang = 'ns/p'");
    st = open_ok(f->db, 0, NULL);
    assert_int_equal(verify_text(st, &text), 1);
    assert_non_null(strstr(text, "job ns/a: its restart_ms is text"));
    assert_non_null(strstr(text, "job ns/a: its backfill promise names no gang"));
    assert_non_null(strstr(text, "job ns/p is pending, but has an in-place restart"));
    assert_non_null(strstr(text, "job ns/p: its backfill promise has a text reserve_first_ms"));
    assert_non_null(strstr(text, "job ns/p: its ran_ms is negative"));
    free(text);
    store_close(st);
    raw_sql(f->db, "UPDATE jobs SET ran_ms = 2.5 WHERE gang = 'ns/p'");
    st = open_ok(f->db, 0, NULL);
    assert_int_equal(verify_text(st, &text), 1);
    assert_non_null(strstr(text, "job ns/p: its ran_ms is real"));
    free(text);
    store_close(st);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_create_and_reopen),
        T(test_decision_eta_moved),
        T(test_journal_round_trip),
        T(test_decision_retention),
        T(test_decision_dedup),
        T(test_ledger_check),
        T(test_reservations),
        T(test_config_and_queues),
        T(test_transactions),
        T(test_many_rows),
        T(test_tampered_rows),
        T(test_statements_reused),
        T(test_cycle_of_10000_decisions),
        T(test_operator_actions),
        T(test_verify_run_notes),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
