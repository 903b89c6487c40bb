/* tests/unit/test_store_views.c: the store's documents (what gangctl and the HTTP API show): the
 * HTTP API's per-route reads (store_read_doc) against the whole-table views (store_views_load),
 * paging, the bound on whole lists and refused tokens, the job counts the triggers keep, and the
 * quota a cohort's queues lend and can still take. The rows themselves: test_store.c.
 *
 * Owns: one mkdtemp directory per test (removed in teardown). Must not touch anything else.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sched/core/cycle.h"
#include "store/store.h"
#include "store/views.h"

#include "tests/unit/store_fx.h"

/* ---- views: lent and available quota -------------------------------------------------------- */

static const cJSON *quota_line(const cJSON *doc, const char *queue)
{
    const cJSON *q = NULL;
    cJSON_ArrayForEach(q, cJSON_GetObjectItem(doc, "queues"))
    {
        const cJSON *n = cJSON_GetObjectItem(q, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, queue) == 0)
            return cJSON_GetArrayItem(cJSON_GetObjectItem(q, "quotas"), 0);
    }
    return NULL;
}

static int64_t qfield(const cJSON *doc, const char *queue, const char *key)
{
    const cJSON *l = quota_line(doc, queue);
    assert_non_null(l);
    const cJSON *v = cJSON_GetObjectItem(l, key);
    assert_true(cJSON_IsNumber(v));
    return (int64_t)v->valuedouble;
}

/* A store with something in every table a read shows: three queues (one in a cohort, one only
 * known through its jobs), jobs in every state, placed pods, decisions, a preemption, a
 * reservation, an operator hold. */
static void fill_reads(struct store *st)
{
    struct sched_errbuf eb = {{0}};
    struct store_quota q8 = {"default", STORE_GPU, 8, STORE_NO_LIMIT, STORE_NO_LIMIT};
    struct store_queue qs[] = {{"prod", "co", 2, 1, &q8, 1}, {"dev", "co", 1, 0, &q8, 1}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(store_queue_put(st, &qs[i], &eb), 0);
    static const enum store_job_state states[] = {STORE_JOB_PENDING, STORE_JOB_RUNNING,
                                                  STORE_JOB_FINISHED, STORE_JOB_FAILED,
                                                  STORE_JOB_ADMITTED};
    static const char *const queues[] = {"prod", "dev", "ghost"};
    char gang[32];
    for (int i = 0; i < 23; i++) {
        snprintf(gang, sizeof(gang), "ns/j%02d", i);
        struct store_job j = job(gang, queues[i % 3], 1 + i % 4, states[i % 5]);
        j.submit_ms = 1000 + 10 * (i % 7); /* ties: ordered by name */
        assert_int_equal(store_job_upsert(st, &j, &eb), 0);
        if (j.state == STORE_JOB_RUNNING)
            place(st, gang, 2, 1, 10 + i);
        if (j.state == STORE_JOB_PENDING) {
            struct store_decision d = {0,     3, 5000 + i, gang, 4, "waiting for quota",
                                       false, 0, NULL};
            assert_int_equal(store_decision_add(st, &d, &eb), 0);
        }
    }
    assert_int_equal(store_ledger_set(st, "prod", "default", STORE_GPU, 5, &eb), 0);
    struct store_preemption pr = {4, 6000, "ns/j00", "ns/j05", 2, 30.5, 1.5, "reclaim", 0};
    assert_int_equal(store_preemption_add(st, &pr, &eb), 0);
    const char *nodes[] = {"node-9"};
    for (int i = 0; i < 3; i++) {
        struct store_reservation r = {
            0, STORE_RES_OPERATOR, i ? "ns/j03" : "ns/j00", nodes,
            1, 7000 + i,           STORE_NO_TIME,           STORE_NO_TIME};
        int64_t id = 0;
        assert_int_equal(store_reservation_put(st, &r, &id, &eb), 0);
    }
    struct store_action a = {.ts_ms = 100, .kind = STORE_ACT_HOLD, .target = "dev"};
    int64_t aid = 0;
    assert_int_equal(store_action_add(st, &a, &aid, &eb), 0);
    assert_int_equal(store_action_done(st, aid, STORE_ACTION_APPLIED, 200, NULL, &eb), 0);
    /* a job changing state and queue: job_counts follows (triggers) */
    struct store_job moved = job("ns/j01", "prod", 2, STORE_JOB_FINISHED);
    moved.submit_ms = 1010;
    assert_int_equal(store_job_upsert(st, &moved, &eb), 0);
}

static char *read_json(struct store *st, struct store_read rq, int want)
{
    struct sched_errbuf eb = {{0}};
    cJSON *doc = NULL;
    int err = store_read_doc(st, &rq, &doc, &eb);
    if (err != want)
        fail_msg("route %d: %d (%s), want %d", (int)rq.route, err, eb.msg, want);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    return text;
}

static void same_doc(struct store *st, struct store_views *v, struct store_read rq, int view)
{
    struct sched_errbuf eb = {{0}};
    cJSON *doc = NULL;
    int err = view == 0   ? store_view_quota(v, rq.queue, &doc, &eb)
              : view == 1 ? store_view_queues(v, &doc, &eb)
              : view == 2 ? store_view_jobs(v, rq.queue, rq.all, &doc, &eb)
              : view == 3 ? store_view_explain(v, rq.job, rq.limit, &doc, &eb)
              : view == 4 ? store_view_top(v, &doc, &eb)
                          : store_view_reservations(v, &doc, &eb);
    assert_int_equal(err, 0);
    char *whole = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    char *part = read_json(st, rq, 0);
    if (strcmp(whole, part) != 0)
        fail_msg("route %d differs:\nwhole %s\nread  %s", (int)rq.route, whole, part);
    free(whole);
    free(part);
}

/* Pages of `limit` items, each continuing the last, give the whole list in order. */
static void pages_equal(struct store *st, struct store_read rq, const char *list)
{
    char *all = read_json(st, rq, 0);
    cJSON *whole = cJSON_Parse(all);
    free(all);
    const cJSON *want = cJSON_GetObjectItem(whole, list);
    int n = cJSON_GetArraySize(want), seen = 0;
    char tok[2048] = "";
    for (uint32_t limit = 1; limit <= 4; limit++) {
        seen = 0;
        rq.limit = limit;
        rq.cont = NULL;
        for (int pg = 0; pg < 40; pg++) {
            char *text = read_json(st, rq, 0);
            cJSON *doc = cJSON_Parse(text);
            free(text);
            const cJSON *got = cJSON_GetObjectItem(doc, list);
            for (const cJSON *it = got->child; it; it = it->next, seen++) {
                char *a = cJSON_PrintUnformatted(it);
                char *b = cJSON_PrintUnformatted(cJSON_GetArrayItem(want, seen));
                assert_string_equal(a, b);
                free(a);
                free(b);
            }
            const cJSON *cont = cJSON_GetObjectItem(doc, "continue");
            const cJSON *left = cJSON_GetObjectItem(doc, "remaining");
            if (cont) {
                assert_int_equal((int)left->valuedouble, n - seen);
                snprintf(tok, sizeof(tok), "%s", cont->valuestring);
                rq.cont = tok;
            }
            cJSON_Delete(doc);
            if (!cont)
                break;
        }
        assert_int_equal(seen, n);
    }
    cJSON_Delete(whole);
}

/* A whole list with rq.most: built, the same document, when it has most items at most; else
 * nothing is built (0, no document). A paged read ignores most. */
static void most_bounds(struct store *st, struct store_read rq, const char *list)
{
    char *all = read_json(st, rq, 0);
    cJSON *whole = cJSON_Parse(all);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(whole, list));
    cJSON_Delete(whole);
    assert_true(n > 1);
    rq.most = (uint32_t)n;
    char *same = read_json(st, rq, 0);
    assert_string_equal(same, all);
    free(same);
    rq.most = (uint32_t)n - 1;
    assert_null(read_json(st, rq, 0));
    rq.limit = (uint32_t)n;
    char *page = read_json(st, rq, 0);
    assert_non_null(page);
    free(page);
    free(all);
}

/* The HTTP API's per-route reads (store_read_doc) serve the same documents as the whole-table
 * views, page in order with exact "remaining", build a whole list only within its bound (most),
 * refuse tokens they did not make, and read the job counts the triggers keep. */
static void test_read_routes(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    fill_reads(st);
    struct store *ro = open_ok(f->db, STORE_READONLY, NULL);
    struct store_views *v = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_views_load(ro, &v, &eb), 0);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_QUOTA}, 0);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_QUOTA, .queue = "prod"}, 0);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_QUEUES}, 1);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_JOBS}, 2);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_JOBS, .all = true}, 2);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_JOBS, .queue = "ghost", .all = true},
             2);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_JOBS, .queue = "dev"}, 2);
    static const char *const jobs[] = {"ns/j00", "ns/j01", "ns/j03", "ns/j05", "ns/j15"};
    for (int i = 0; i < 5; i++)
        same_doc(ro, v, (struct store_read){.route = STORE_READ_EXPLAIN, .job = jobs[i]}, 3);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_TOP}, 4);
    same_doc(ro, v, (struct store_read){.route = STORE_READ_RESERVATIONS}, 5);
    store_views_free(v);
    pages_equal(ro, (struct store_read){.route = STORE_READ_JOBS, .all = true}, "jobs");
    pages_equal(ro, (struct store_read){.route = STORE_READ_JOBS}, "jobs");
    pages_equal(ro, (struct store_read){.route = STORE_READ_JOBS, .queue = "prod", .all = true},
                "jobs");
    pages_equal(ro, (struct store_read){.route = STORE_READ_QUEUES}, "queues");
    pages_equal(ro, (struct store_read){.route = STORE_READ_RESERVATIONS}, "reservations");
    most_bounds(ro, (struct store_read){.route = STORE_READ_JOBS, .all = true}, "jobs");
    most_bounds(ro, (struct store_read){.route = STORE_READ_JOBS, .queue = "prod"}, "jobs");
    most_bounds(ro, (struct store_read){.route = STORE_READ_QUEUES}, "queues");
    most_bounds(ro, (struct store_read){.route = STORE_READ_RESERVATIONS}, "reservations");
    free(read_json(ro, (struct store_read){.route = STORE_READ_JOBS, .queue = "nope"},
                   SCHED_ENOENT));
    free(read_json(ro, (struct store_read){.route = STORE_READ_EXPLAIN, .job = "ns/none"},
                   SCHED_ENOENT));
    static const char *const bad[] = {"zz", "6a", "7100", "6a0070726f64", "7200", "72007878"};
    for (int i = 0; i < 6; i++) {
        free(read_json(ro,
                       (struct store_read){.route = STORE_READ_JOBS, .cont = bad[i], .limit = 2},
                       SCHED_EINVAL));
        free(read_json(ro, (struct store_read){.route = STORE_READ_RESERVATIONS, .cont = bad[i]},
                       SCHED_EINVAL));
    }
    free(read_json(ro, (struct store_read){.route = STORE_READ_QUEUES, .cont = "6a00"},
                   SCHED_EINVAL));
    /* job_counts equals the jobs table, per queue and state */
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM (SELECT queue, state, COUNT(*) n FROM "
                                    "jobs GROUP BY 1, 2 EXCEPT SELECT queue, state, n FROM "
                                    "job_counts WHERE n > 0)"),
                     0);
    assert_int_equal(raw_int(f->db, "SELECT SUM(n) FROM job_counts"), 23);
    store_close(ro);
    store_close(st);
}

/* Cohort co: a (nominal 10, uses 2) and b (10, uses 4) lend, c (0, uses 9) borrows 9; d has no
 * cohort. The 9 borrowed GPUs are a's and b's in proportion to what each leaves unused (8 and
 * 6): 5.14 and 3.86, whole units by largest remainder: 5 and 4. Each can take back what it lent
 * (available = its unused nominal), c can still take the 5 the cohort leaves free. */
static void test_views_lent(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    const char *gpu = STORE_GPU;
    struct store_quota q10 = {"default", gpu, 10, STORE_NO_LIMIT, STORE_NO_LIMIT};
    struct store_quota q0 = {"default", gpu, 0, STORE_NO_LIMIT, STORE_NO_LIMIT};
    struct store_quota q5 = {"default", gpu, 5, STORE_NO_LIMIT, STORE_NO_LIMIT};
    struct store_queue qs[] = {{"a", "co", 1, 0, &q10, 1},
                               {"b", "co", 1, 0, &q10, 1},
                               {"c", "co", 1, 0, &q0, 1},
                               {"d", NULL, 1, 0, &q5, 1}};
    const int64_t used[] = {2, 4, 9, 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(store_queue_put(st, &qs[i], &eb), 0);
        assert_int_equal(store_ledger_set(st, qs[i].name, "default", gpu, used[i], &eb), 0);
    }
    struct store_views *v = NULL;
    cJSON *doc = NULL;
    assert_int_equal(store_views_load(st, &v, &eb), 0);
    assert_int_equal(store_view_quota(v, NULL, &doc, &eb), 0);
    assert_int_equal(qfield(doc, "a", "lent"), 5);
    assert_int_equal(qfield(doc, "b", "lent"), 4);
    assert_int_equal(qfield(doc, "c", "lent"), 0);
    assert_int_equal(qfield(doc, "c", "borrowed"), 9);
    assert_int_equal(qfield(doc, "a", "available"), 8);
    assert_int_equal(qfield(doc, "b", "available"), 6);
    assert_int_equal(qfield(doc, "c", "available"), 5);
    assert_int_equal(qfield(doc, "d", "lent"), 0);
    assert_int_equal(qfield(doc, "d", "available"), 4);
    cJSON_Delete(doc);
    doc = NULL;
    assert_int_equal(store_view_queues(v, &doc, &eb), 0);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "queues"), 0);
    assert_int_equal((int64_t)cJSON_GetObjectItem(first, "lent_gpus")->valuedouble, 5);
    cJSON_Delete(doc);
    store_views_free(v);
    store_close(st);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_read_routes),
        T(test_views_lent),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
