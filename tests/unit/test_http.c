/* tests/unit/test_http.c: the HTTP API's request path without sockets: routing (404, 405),
 * authorisation (no token, wrong token, read-only token on a write, token file rotation),
 * limits (431, 413), malformed requests, reads against a real store (through the same worker
 * function the server runs), operator writes through the provider, and the metrics registry's
 * text format.
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
#include <sys/stat.h>
#include <unistd.h>

#include "config/file.h"
#include "sched/http/server.h"

struct fx {
    char dir[64], w[96], r[96], db[96];
    struct http_server *s;
    int writes;
    char last_target[64];
};

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static int fake_write(void *ctx, const struct http_write *w, cJSON **result,
                      struct sched_errbuf *eb)
{
    struct fx *f = ctx;
    if (strcmp(w->target, "nope") == 0)
        return sched_fail(eb, SCHED_ENOENT, "queue 'nope' not found");
    f->writes++;
    snprintf(f->last_target, sizeof(f->last_target), "%s", w->target);
    *result = cJSON_CreateObject();
    return 0;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/gangsched-http-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->w, sizeof(f->w), "%s/w", f->dir);
    snprintf(f->r, sizeof(f->r), "%s/r", f->dir);
    snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
    put_file(f->w, "wtok\n");
    put_file(f->r, "rtok\n");
    /* a small database: one queue with quota, one pending job */
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(f->db, STORE_CREATE, NULL, &st, &eb), 0);
    struct store_quota qq = {"default", STORE_GPU, 8, STORE_NO_LIMIT, STORE_NO_LIMIT};
    struct store_queue q = {"prod", NULL, 1, 0, &qq, 1};
    assert_int_equal(store_queue_put(st, &q, &eb), 0);
    struct store_job j = {.gang = "ns/a",
                          .gang_id = 1,
                          .queue = "prod",
                          .gpus = 4,
                          .state = STORE_JOB_PENDING,
                          .submit_ms = 1000,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = STORE_NO_TIME};
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    store_close(st);
    struct http_opts o = {
        .listen = "127.0.0.1:0", .write_token_file = f->w, .read_token_file = f->r};
    struct http_provider p = {
        .ctx = f, .store_path = f->db, .store_metrics = true, .write = fake_write};
    assert_int_equal(http_server_new_detached(&o, &p, &f->s, &eb), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    http_server_free_detached(f->s);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static int raw(struct fx *f, const char *req)
{
    return http_feed_raw(f->s, req, strlen(req));
}

/* One request through http_route (and the read worker when needed); returns the status and
 * the body in *body (malloc'd). */
static int call(struct fx *f, const char *method, const char *url, const char *auth,
                const char *body, char **out)
{
    struct http_request r = {method, url, auth, body ? body : "", body ? strlen(body) : 0, "t"};
    struct http_response resp;
    struct http_work *w = NULL;
    if (http_route(f->s, &r, &resp, &w) == 1) {
        http_request_work(f->s, w, &resp);
        http_work_free(w);
    }
    if (out)
        *out = resp.body;
    else
        http_response_release(&resp);
    return resp.status;
}

static void test_routes(void **state)
{
    struct fx *f = *state;
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\n\r\n"), 200);
    assert_int_equal(raw(f, "GET /readyz HTTP/1.1\r\n\r\n"), 200);
    assert_int_equal(raw(f, "GET /v9/x HTTP/1.1\r\n\r\n"), 404);
    assert_int_equal(raw(f, "GET /v1/queues/prod/frob HTTP/1.1\r\n\r\n"), 404);
    assert_int_equal(raw(f, "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 405);
    assert_int_equal(raw(f, "DELETE /v1/queues HTTP/1.1\r\n\r\n"), 405);
    assert_int_equal(raw(f, "GET /v1/queues/prod/hold HTTP/1.1\r\n\r\n"), 405);
    char *body = NULL;
    assert_int_equal(call(f, "GET", "/v1/queues/%zz", NULL, NULL, &body), 400);
    assert_non_null(strstr(body, "\"error\":{\"code\":400"));
    free(body);
}

/* Every route, method and path shape, with and without tokens: status, Allow and the start
 * of the error message (the route table's answers; written against the if-ladder it replaced,
 * which gave the same). */
static void test_route_table(void **state)
{
    struct fx *f = *state;
    static const struct {
        const char *method, *url, *auth;
        int status;
        const char *allow, *msg;
    } cases[] = {
        {"GET", "/healthz", NULL, 200, NULL, NULL},
        {"HEAD", "/healthz", NULL, 405, "GET", "method HEAD not allowed here (allowed: GET)"},
        {"POST", "/readyz", NULL, 405, "GET", NULL},
        {"GET", "/readyz", NULL, 200, NULL, NULL},
        {"GET", "/metrics", NULL, 401, NULL, "missing bearer token"},
        {"GET", "/metrics", "Bearer rtok", 200, NULL, NULL},
        {"POST", "/metrics", NULL, 405, "GET", NULL},
        {"GET", "/v1/queues", "Bearer rtok", 200, NULL, NULL},
        {"GET", "/v1/queues", "Bearer nope", 401, NULL, "invalid bearer token"},
        {"PUT", "/v1/queues", NULL, 405, "GET", NULL},
        {"GET", "/v1/queues/", "Bearer rtok", 404, NULL, "no such route: GET /v1/queues/"},
        {"GET", "/v1/queues/prod", "Bearer rtok", 200, NULL, NULL},
        {"GET", "/v1/queues/prod", NULL, 401, NULL, NULL},
        {"POST", "/v1/queues/prod", NULL, 405, "GET", NULL},
        {"POST", "/v1/queues/prod/hold", "Bearer wtok", 202, NULL, NULL},
        {"POST", "/v1/queues/prod/resume", "Bearer rtok", 403, NULL,
         "the read-only token cannot write"},
        {"POST", "/v1/queues/prod/drain", NULL, 401, NULL, NULL},
        {"POST", "/v1/queues/nope/drain", "Bearer wtok", 404, NULL, "queue 'nope' not found"},
        {"GET", "/v1/queues/prod/drain", "Bearer wtok", 405, "POST", NULL},
        {"POST", "/v1/queues/prod/frob", "Bearer wtok", 404, NULL, "no such route"},
        {"POST", "/v1/queues//hold", "Bearer wtok", 404, NULL, NULL},
        {"POST", "/v1/queues/prod/hold/x", "Bearer wtok", 404, NULL, NULL},
        {"GET", "/v1/quota", "Bearer rtok", 200, NULL, NULL},
        {"GET", "/v1/top", "Bearer wtok", 200, NULL, NULL},
        {"DELETE", "/v1/top", "Bearer wtok", 405, "GET", NULL},
        {"GET", "/v1/store/snapshot", "Bearer rtok", 200, NULL, NULL},
        {"POST", "/v1/store/snapshot", "Bearer rtok", 405, "GET", NULL},
        {"GET", "/v1/reservations", "Bearer rtok", 200, NULL, NULL},
        {"DELETE", "/v1/reservations", "Bearer wtok", 405, "GET, POST", NULL},
        {"POST", "/v1/reservations", "Bearer wtok", 400, NULL, "body: a JSON object"},
        {"POST", "/v1/reservations", "Bearer rtok", 403, NULL, NULL},
        {"DELETE", "/v1/reservations/7", "Bearer wtok", 202, NULL, NULL},
        {"DELETE", "/v1/reservations/7", "Bearer rtok", 403, NULL, NULL},
        {"DELETE", "/v1/reservations/x7", NULL, 400, NULL,
         "reservation id must be a positive integer"},
        {"DELETE", "/v1/reservations/0", "Bearer wtok", 400, NULL, NULL},
        {"GET", "/v1/reservations/7", "Bearer wtok", 405, "DELETE", NULL},
        {"DELETE", "/v1/reservations/7/8", "Bearer wtok", 404, NULL, NULL},
        {"DELETE", "/v1/reservations/", "Bearer wtok", 404, NULL, NULL},
        {"GET", "/v1/jobs", "Bearer rtok", 200, NULL, NULL},
        {"GET", "/v1/jobs?limit=0", "Bearer rtok", 400, NULL, "bad query string: limit=0"},
        {"GET", "/v1/jobs?limit=0", NULL, 401, NULL, NULL},
        {"POST", "/v1/jobs", "Bearer wtok", 405, "GET", NULL},
        {"GET", "/v1/jobs/", "Bearer rtok", 404, NULL, NULL},
        {"GET", "/v1/jobs/ns/a", "Bearer rtok", 200, NULL, NULL},
        {"GET", "/v1/jobs/ns/a?limit=x", "Bearer rtok", 400, NULL, NULL},
        {"GET", "/v1/jobs/ns/a/checkpoint", "Bearer rtok", 404, NULL, "job 'ns/a/checkpoint'"},
        {"POST", "/v1/jobs/ns/a", "Bearer wtok", 405, "GET, POST (…/checkpoint)", NULL},
        {"DELETE", "/v1/jobs/ns/a/checkpoint", "Bearer wtok", 405, "GET, POST (…/checkpoint)",
         NULL},
        {"POST", "/v1/jobs/ns/a/checkpoint", "Bearer wtok", 202, NULL, NULL},
        {"POST", "/v1/jobs/ns/a/checkpoint", NULL, 401, NULL, NULL},
        {"POST", "/v1/jobs//checkpoint", "Bearer wtok", 405, NULL, NULL},
        {"GET", "/v9", NULL, 404, NULL, "no such route: GET /v9"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct http_request r = {cases[i].method, cases[i].url, cases[i].auth, "", 0, "t"};
        struct http_response resp;
        struct http_work *w = NULL;
        if (http_route(f->s, &r, &resp, &w) == 1) {
            http_request_work(f->s, w, &resp);
            http_work_free(w);
        }
        const char *allow = resp.allow ? resp.allow : "";
        const char *body = resp.body ? resp.body : "";
        char want[300] = "";
        if (cases[i].msg)
            snprintf(want, sizeof(want), "\"message\":\"%s", cases[i].msg);
        if (resp.status != cases[i].status ||
            (cases[i].allow && strcmp(allow, cases[i].allow) != 0) ||
            (cases[i].msg && !strstr(body, want)))
            fail_msg("%s %s (%s): %d allow '%s' %s; want %d allow '%s' '%s'", cases[i].method,
                     cases[i].url, cases[i].auth ? cases[i].auth : "no token", resp.status, allow,
                     body, cases[i].status, cases[i].allow ? cases[i].allow : "",
                     cases[i].msg ? cases[i].msg : "");
        http_response_release(&resp);
    }
}

static void test_reads(void **state)
{
    struct fx *f = *state;
    char *body = NULL;
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtok", NULL, &body), 200);
    assert_non_null(strstr(body, "\"name\":\"prod\""));
    free(body);
    assert_int_equal(call(f, "GET", "/v1/queues/prod", "Bearer wtok", NULL, &body), 200);
    assert_non_null(strstr(body, "\"nominal\":8"));
    free(body);
    assert_int_equal(call(f, "GET", "/v1/queues/nope", "Bearer rtok", NULL, &body), 404);
    assert_non_null(strstr(body, "queue 'nope' not found"));
    assert_null(strstr(body, f->dir)); /* the server's paths stay private */
    free(body);
    assert_int_equal(call(f, "GET", "/v1/jobs?queue=prod&all=1", "Bearer rtok", NULL, &body), 200);
    assert_non_null(strstr(body, "\"position\":1"));
    free(body);
    assert_int_equal(call(f, "GET", "/v1/jobs/ns/a?limit=2", "Bearer rtok", NULL, &body), 200);
    assert_non_null(strstr(body, "\"job\":\"ns/a\""));
    free(body);
    assert_int_equal(call(f, "GET", "/v1/jobs/ns%2Fa", "Bearer rtok", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/jobs/ns/a?limit=x", "Bearer rtok", NULL, NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/top", "Bearer rtok", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/reservations", "Bearer rtok", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/metrics", "Bearer rtok", NULL, &body), 200);
    assert_non_null(strstr(body, "gangsched_jobs{cluster_queue=\"prod\",state=\"pending\"} 1"));
    assert_non_null(strstr(body, "gangsched_build_info{version=\""));
    assert_non_null(strstr(body, "\nprocess_start_time_seconds "));
    free(body);
}

/* Every read queries the database (per route): a commit elsewhere is seen by the next read;
 * list routes page with limit and continue. */
static void test_cache_and_paging(void **state)
{
    struct fx *f = *state;
    char *body = NULL;
    unsigned long long loads = http_server_loads(f->s);
    for (int i = 0; i < 5; i++)
        assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtok", NULL, NULL), 200);
    assert_int_equal(http_server_loads(f->s), loads + 5);
    /* a commit elsewhere: the next read sees it (one more load) */
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(f->db, 0, NULL, &st, &eb), 0);
    struct store_quota qq = {"default", STORE_GPU, 8, STORE_NO_LIMIT, STORE_NO_LIMIT};
    const char *names[] = {"q-a", "q-b", "q-c", "q-d"};
    for (int i = 0; i < 4; i++) {
        struct store_queue q = {names[i], NULL, 1, 0, &qq, 1};
        assert_int_equal(store_queue_put(st, &q, &eb), 0);
    }
    store_close(st);
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtok", NULL, &body), 200);
    assert_non_null(strstr(body, "\"q-d\""));
    assert_null(strstr(body, "\"continue\""));
    free(body);
    /* five queues (prod, q-a..q-d), two a page: three pages, then no token */
    char url[600] = "/v1/queues?limit=2";
    int seen = 0;
    for (int pg = 0; pg < 3; pg++) {
        assert_int_equal(call(f, "GET", url, "Bearer rtok", NULL, &body), 200);
        cJSON *doc = cJSON_Parse(body);
        free(body);
        const cJSON *list = cJSON_GetObjectItem(doc, "queues");
        const cJSON *cont = cJSON_GetObjectItem(doc, "continue");
        seen += cJSON_GetArraySize(list);
        assert_int_equal(cJSON_GetArraySize(list), pg < 2 ? 2 : 1);
        if (pg < 2) {
            assert_true(cJSON_IsString(cont));
            snprintf(url, sizeof(url), "/v1/queues?limit=2&continue=%s", cont->valuestring);
        } else {
            assert_null(cont);
        }
        cJSON_Delete(doc);
    }
    assert_int_equal(seen, 5);
    assert_int_equal(call(f, "GET", "/v1/queues?limit=0", "Bearer rtok", NULL, NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/queues?continue=zz", "Bearer rtok", NULL, NULL), 400);
    /* max_stale_ms is accepted and has no effect: a commit elsewhere is seen at once */
    struct http_opts o = {.listen = "127.0.0.1:0", .write_token_file = f->w};
    struct http_provider p = {
        .ctx = f, .store_path = f->db, .max_stale_ms = 600000, .write = fake_write};
    struct http_server *s2 = NULL;
    assert_int_equal(http_server_new_detached(&o, &p, &s2, &eb), 0);
    struct http_request r = {"GET", "/v1/queues", NULL, "", 0, "t"};
    struct http_response resp;
    struct http_work *w = NULL;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(http_route(s2, &r, &resp, &w), 1);
        http_request_work(s2, w, &resp);
        http_work_free(w);
        assert_int_equal(resp.status, 200);
        assert_int_equal(strstr(resp.body, "\"q-e\"") != NULL, i == 1);
        http_response_release(&resp);
        if (i == 0) {
            assert_int_equal(store_open(f->db, 0, NULL, &st, &eb), 0);
            struct store_queue q = {"q-e", NULL, 1, 0, &qq, 1};
            assert_int_equal(store_queue_put(st, &q, &eb), 0);
            store_close(st);
        }
    }
    assert_int_equal(http_server_loads(s2), 2);
    /* and a write through this server is seen by the next read (read-your-writes) */
    struct http_request wr = {"POST", "/v1/queues/prod/hold", "Bearer wtok", "", 0, "t"};
    assert_int_equal(http_route(s2, &wr, &resp, &w), 0);
    assert_int_equal(resp.status, 202);
    http_response_release(&resp);
    assert_int_equal(http_route(s2, &r, &resp, &w), 1);
    http_request_work(s2, w, &resp);
    http_work_free(w);
    assert_non_null(strstr(resp.body, "\"q-e\""));
    free(resp.body);
    assert_int_equal(http_server_loads(s2), 3);
    http_server_free_detached(s2);
    assert_int_equal(call(f, "GET", "/v1/jobs?limit=1&all=1", "Bearer rtok", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/reservations?limit=3", "Bearer rtok", NULL, NULL), 200);
}

/* Reads /v1/queues from a detached server; the body (caller frees). */
static char *queues_of(struct http_server *s)
{
    struct http_request r = {"GET", "/v1/queues", NULL, "", 0, "t"};
    struct http_response resp;
    struct http_work *w = NULL;
    assert_int_equal(http_route(s, &r, &resp, &w), 1);
    http_request_work(s, w, &resp);
    http_work_free(w);
    assert_int_equal(resp.status, 200);
    return resp.body;
}

/* A database file replaced under the server (a standby adopting the leader's snapshot renames
 * it over the old one) is read at the next request, not the old file its connections hold. */
static void test_replaced_file(void **state)
{
    struct fx *f = *state;
    char live[200], next[200];
    snprintf(live, sizeof(live), "%s/live.db", f->dir);
    snprintf(next, sizeof(next), "%s/next.db", f->dir);
    struct sched_errbuf eb = {{0}};
    struct store_quota qq = {"default", STORE_GPU, 8, STORE_NO_LIMIT, STORE_NO_LIMIT};
    const char *paths[] = {live, next}, *names[] = {"q-old", "q-new"};
    for (int i = 0; i < 2; i++) {
        struct store *st = NULL;
        assert_int_equal(store_open(paths[i], STORE_CREATE, NULL, &st, &eb), 0);
        struct store_queue q = {names[i], NULL, 1, 0, &qq, 1};
        assert_int_equal(store_queue_put(st, &q, &eb), 0);
        store_close(st);
    }
    struct http_opts o = {.listen = "127.0.0.1:0"};
    struct http_provider p = {.ctx = f, .store_path = live};
    struct http_server *s = NULL;
    assert_int_equal(http_server_new_detached(&o, &p, &s, &eb), 0);
    for (int i = 0; i < 8; i++) { /* every reader connection opens the old file */
        char *body = queues_of(s);
        assert_non_null(strstr(body, "\"q-old\""));
        free(body);
    }
    assert_int_equal(rename(next, live), 0);
    for (int i = 0; i < 8; i++) {
        char *body = queues_of(s);
        assert_non_null(strstr(body, "\"q-new\""));
        assert_null(strstr(body, "\"q-old\""));
        free(body);
    }
    http_server_free_detached(s);
}

static void test_auth(void **state)
{
    struct fx *f = *state;
    assert_int_equal(call(f, "GET", "/v1/queues", NULL, NULL, NULL), 401);
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer nope", NULL, NULL), 401);
    assert_int_equal(call(f, "GET", "/v1/queues", "Basic rtok", NULL, NULL), 401);
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rto", NULL, NULL), 401);
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtokk", NULL, NULL), 401);
    assert_int_equal(call(f, "POST", "/v1/queues/prod/hold", NULL, NULL, NULL), 401);
    assert_int_equal(call(f, "POST", "/v1/queues/prod/hold", "Bearer bad", NULL, NULL), 401);
    assert_int_equal(call(f, "POST", "/v1/queues/prod/hold", "Bearer rtok", NULL, NULL), 403);
    assert_int_equal(f->writes, 0);
    assert_int_equal(call(f, "POST", "/v1/queues/prod/hold", "bearer  wtok ", NULL, NULL), 202);
    assert_int_equal(f->writes, 1);
    assert_string_equal(f->last_target, "prod");
    /* rotation: the file changes, the old token stops working */
    put_file(f->w, "rotated-token\n");
    assert_int_equal(call(f, "POST", "/v1/queues/prod/drain", "Bearer wtok", NULL, NULL), 401);
    assert_int_equal(call(f, "POST", "/v1/queues/prod/drain", "Bearer rotated-token", NULL, NULL),
                     202);
    /* a missing token file refuses writes */
    unlink(f->w);
    assert_int_equal(call(f, "POST", "/v1/queues/prod/drain", "Bearer rotated-token", NULL, NULL),
                     403);
}

/* Token files go through config_token_read, gangctl's reader too: blanks around the token are
 * ignored on both sides (before: leading blanks kept, so gangctl's token never matched), a
 * 1,500-byte token (a service-account JWT) is whole (before: cut at 1,023 bytes, every request
 * 401), a longer one than CONFIG_TOKEN_MAX is refused, not cut; a FIFO or a directory at the
 * path refuses writes at once (before: the event loop waited for a writer). */
static void test_token_files(void **state)
{
    struct fx *f = *state;
    const char *url = "/v1/queues/prod/drain";
    put_file(f->w, " \t s3cret \r\n");
    assert_int_equal(call(f, "POST", url, "Bearer s3cret", NULL, NULL), 202);
    char *big = malloc(CONFIG_TOKEN_MAX + 64);
    assert_non_null(big);
    memset(big, 't', 1500);
    big[1500] = 0;
    put_file(f->w, big);
    char *auth = malloc(CONFIG_TOKEN_MAX + 64);
    assert_non_null(auth);
    snprintf(auth, CONFIG_TOKEN_MAX + 64, "Bearer %s", big);
    assert_int_equal(call(f, "POST", url, auth, NULL, NULL), 202);
    auth[strlen(auth) - 1] = 0; /* 1,499 bytes: no match */
    assert_int_equal(call(f, "POST", url, auth, NULL, NULL), 401);
    memset(big, 'u', CONFIG_TOKEN_MAX + 1);
    big[CONFIG_TOKEN_MAX + 1] = 0;
    put_file(f->w, big);
    snprintf(auth, CONFIG_TOKEN_MAX + 64, "Bearer %.*s", CONFIG_TOKEN_MAX, big);
    assert_int_equal(call(f, "POST", url, auth, NULL, NULL), 403); /* too long: no token */
    free(big);
    free(auth);
    alarm(20);
    assert_int_equal(unlink(f->w), 0);
    assert_int_equal(mkfifo(f->w, 0600), 0);
    assert_int_equal(call(f, "POST", url, "Bearer s3cret", NULL, NULL), 403);
    assert_int_equal(unlink(f->w), 0);
    assert_int_equal(mkdir(f->w, 0700), 0);
    assert_int_equal(call(f, "POST", url, "Bearer s3cret", NULL, NULL), 403);
    assert_int_equal(rmdir(f->w), 0);
    alarm(0);
    put_file(f->w, "s3cret");
    assert_int_equal(call(f, "POST", url, "Bearer s3cret", NULL, NULL), 202);
}

/* Answers never name the server's files (docs/api.md): a missing or foreign database is 503
 * with the store's message, its path taken out (before: "database unavailable: database
 * /tmp/.../state.db does not exist"). */
static void test_answers_hide_paths(void **state)
{
    struct fx *f = *state;
    char away[128], *body = NULL;
    snprintf(away, sizeof(away), "%s.away", f->db);
    assert_int_equal(rename(f->db, away), 0);
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtok", NULL, &body), 503);
    assert_non_null(strstr(body, "database unavailable: database does not exist"));
    if (strstr(body, f->dir))
        fail_msg("the answer names the server's file: %s", body);
    free(body);
    put_file(f->db, "not a database, but long enough to be looked at by SQLite's header check\n");
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtok", NULL, &body), 503);
    assert_non_null(strstr(body, "database unavailable: "));
    if (strstr(body, f->dir))
        fail_msg("the answer names the server's file: %s", body);
    free(body);
    assert_int_equal(rename(away, f->db), 0);
    assert_int_equal(call(f, "GET", "/v1/queues", "Bearer rtok", NULL, NULL), 200);
}

/* POST /v1/reservations checks the names before anything is recorded (before: duplicate nodes,
 * control characters and 60 KB node names were recorded as they came). */
static void test_reservation_names(void **state)
{
    struct fx *f = *state;
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"{\"job\":\"ns/a\",\"nodes\":[\"n1\",\"n2\",\"n1\"]}",
         "nodes[2]: \\\"n1\\\" is listed twice (also nodes[0])"},
        {"{\"job\":\"ns/a\",\"nodes\":[\"n1\",\"bad\\u001b[2Jnode\"]}",
         "nodes[1]: \\\"bad\\\\x1b[2Jnode\\\" is not a node name (a DNS-1123 subdomain"},
        {"{\"job\":\"ns/a\",\"nodes\":[\"Upper\"]}", "nodes[0]: \\\"Upper\\\" is not a node name"},
        {"{\"job\":\"ns/a\\nb\",\"nodes\":[\"n1\"]}", "is not NS/NAME (a control character)"},
    };
    int before = f->writes;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *body = NULL;
        assert_int_equal(call(f, "POST", "/v1/reservations", "Bearer wtok", bad[i].body, &body),
                         400);
        if (!strstr(body, bad[i].msg))
            fail_msg("case %zu: %s lacks %s", i, body, bad[i].msg);
        free(body);
    }
    /* a 60 KB node name: refused, and the answer quotes only its start */
    size_t n = 60000;
    char *big = malloc(n + 64);
    assert_non_null(big);
    int k = snprintf(big, n + 64, "{\"job\":\"ns/a\",\"nodes\":[\"");
    memset(big + k, 'a', n);
    strcpy(big + k + n, "\"]}");
    char *body = NULL;
    assert_int_equal(call(f, "POST", "/v1/reservations", "Bearer wtok", big, &body), 400);
    assert_non_null(strstr(body, "is not a node name"));
    assert_true(strlen(body) < 1000);
    free(body);
    free(big);
    assert_int_equal(f->writes, before);
    assert_int_equal(call(f, "POST", "/v1/reservations", "Bearer wtok",
                          "{\"job\":\"ns/a\",\"nodes\":[\"hgx-0001\",\"node.rack-2.dc\"]}", NULL),
                     202);
    assert_int_equal(f->writes, before + 1);
}

static void test_writes(void **state)
{
    struct fx *f = *state;
    const char *w = "Bearer wtok";
    assert_int_equal(call(f, "POST", "/v1/queues/nope/hold", w, NULL, NULL), 404);
    assert_int_equal(call(f, "POST", "/v1/jobs/ns/a/checkpoint", w, NULL, NULL), 202);
    assert_string_equal(f->last_target, "ns/a");
    assert_int_equal(
        call(f, "POST", "/v1/reservations", w, "{\"job\":\"ns/a\",\"nodes\":[\"n1\"]}", NULL), 202);
    assert_int_equal(
        call(f, "POST", "/v1/reservations", w, "{\"job\":\"ns/a\",\"nodes\":[]}", NULL), 400);
    assert_int_equal(call(f, "POST", "/v1/reservations", w, "[1,2", NULL), 400);
    assert_int_equal(call(f, "DELETE", "/v1/reservations/7", w, NULL, NULL), 202);
    assert_string_equal(f->last_target, "7");
    assert_int_equal(call(f, "DELETE", "/v1/reservations/-1", w, NULL, NULL), 400);
    assert_int_equal(call(f, "DELETE", "/v1/reservations/x1", w, NULL, NULL), 400);
}

static void test_limits(void **state)
{
    struct fx *f = *state;
    /* a header name that is not a token (a space or tab before the colon) is 400, as Go's
     * net/http answers since CVE-2019-16276; the body is never read as chunked */
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"
                            "0\r\n\r\n"),
                     400);
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello"), 400);
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\nX-A\t: b\r\n\r\n"), 400);
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\nX(A): b\r\n\r\n"), 400);
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\nX-Ok_1.b~: b\r\n\r\n"), 200);
    size_t n = 20000;
    char *big = malloc(n + 100);
    assert_non_null(big);
    int k = snprintf(big, 100, "GET /healthz HTTP/1.1\r\nX-Big: ");
    memset(big + k, 'a', n);
    strcpy(big + k + n, "\r\n\r\n");
    assert_int_equal(raw(f, big), 431);
    free(big);
    assert_int_equal(raw(f, "POST /v1/reservations HTTP/1.1\r\nContent-Length: 70000\r\n\r\n"),
                     413);
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\nAuthorization: Bearer a\r\n"
                            "Authorization: Bearer b\r\n\r\n"),
                     400);
    assert_int_equal(raw(f, "\x01\x02\r\n\r\n"), 400);
    assert_int_equal(raw(f, "GET /healthz HTTP/1.1\r\n"), 0); /* incomplete */
}

static void test_metrics_registry(void **state)
{
    (void)state;
    struct http_metrics *m = http_metrics_new();
    assert_non_null(m);
    struct http_metric *c = NULL, *h = NULL, *bad = NULL;
    const char *lab[] = {"queue"};
    const double b[] = {1, 2.5};
    assert_int_equal(
        http_metric_add(m, "x_total", "help \\ with\nnewline", HTTP_COUNTER, lab, 1, NULL, 0, &c),
        0);
    assert_int_equal(http_metric_add(m, "h_seconds", "h", HTTP_HISTOGRAM, NULL, 0, b, 2, &h), 0);
    assert_int_equal(http_metric_add(m, "9bad", "", HTTP_GAUGE, NULL, 0, NULL, 0, &bad),
                     SCHED_EINVAL);
    const char *le[] = {"le"};
    assert_int_equal(http_metric_add(m, "y", "", HTTP_GAUGE, le, 1, NULL, 0, &bad), SCHED_EINVAL);
    struct http_metric *z = NULL, *q = NULL; /* without labels: its series at 0 from the start */
    assert_int_equal(http_metric_add(m, "z_total", "z", HTTP_COUNTER, NULL, 0, NULL, 0, &z), 0);
    assert_int_equal(http_metric_add(m, "q_seconds", "q", HTTP_HISTOGRAM, NULL, 0, b, 2, &q), 0);
    const char *v[] = {"a\"b"};
    assert_int_equal(http_metric_add_value(c, v, 2), 0);
    assert_int_equal(http_metric_add_value(c, v, -1), SCHED_EINVAL);
    assert_int_equal(http_metric_observe(h, NULL, 2), 0);
    assert_int_equal(http_metric_observe(h, NULL, 0.5), 0);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(http_metrics_render(m, &buf, &len), 0);
    assert_non_null(strstr(buf, "# HELP x_total help \\\\ with\\nnewline\n"));
    assert_non_null(strstr(buf, "x_total{queue=\"a\\\"b\"} 2\n"));
    assert_non_null(strstr(buf, "h_seconds_bucket{le=\"1.0\"} 1\n"));
    assert_non_null(strstr(buf, "h_seconds_bucket{le=\"2.5\"} 2\n"));
    assert_non_null(strstr(buf, "h_seconds_bucket{le=\"+Inf\"} 2\nh_seconds_sum 2.5\n"));
    assert_non_null(strstr(buf, "# TYPE z_total counter\nz_total 0\n"));
    assert_non_null(strstr(buf, "q_seconds_bucket{le=\"+Inf\"} 0\nq_seconds_sum 0\n"));
    assert_null(strstr(buf, "x_total{queue=\"\"}")); /* a labelled family: its series as told */
    assert_int_equal(strlen(buf), len);
    free(buf);
    http_metrics_free(m);
}

/* Pending jobs ns/jNNNN, from..to-1, in queue prod of the fixture's database. */
static void add_jobs(struct fx *f, int from, int to)
{
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(f->db, 0, NULL, &st, &eb), 0);
    assert_int_equal(store_begin(st, &eb), 0);
    for (int i = from; i < to; i++) {
        char gang[32];
        snprintf(gang, sizeof(gang), "ns/j%04d", i);
        struct store_job j = {.gang = gang,
                              .gang_id = -1,
                              .queue = "prod",
                              .gpus = 1,
                              .state = STORE_JOB_PENDING,
                              .submit_ms = 2000 + i,
                              .admit_ms = STORE_NO_TIME,
                              .start_ms = STORE_NO_TIME,
                              .finish_ms = STORE_NO_TIME};
        assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    }
    assert_int_equal(store_commit(st, &eb), 0);
    store_close(st);
}

/* GET /v1/jobs?queue=prod as a whole list: its items, and the reads and documents it took. */
static int whole_jobs(struct fx *f, unsigned long long *loads, unsigned long long *built)
{
    char *body = NULL;
    unsigned long long l0 = http_server_loads(f->s), b0 = http_server_docs_built(f->s);
    assert_int_equal(call(f, "GET", "/v1/jobs?queue=prod", "Bearer rtok", NULL, &body), 200);
    *loads = http_server_loads(f->s) - l0;
    *built = http_server_docs_built(f->s) - b0;
    cJSON *doc = cJSON_Parse(body);
    free(body);
    assert_non_null(doc);
    assert_null(cJSON_GetObjectItem(doc, "continue"));
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "jobs"));
    cJSON_Delete(doc);
    return n;
}

/* A whole list (no ?limit) is counted first: a short one (1,000 items at most) is built and
 * answered by that one read; a longer one builds nothing there and is built once, whole (a large
 * read: on a server, in the large reads' line; here, inline), the same document with every item
 * and no "continue". Building a first page of a long list and dropping it would show as a
 * second document built. */
static void test_whole_list(void **state)
{
    struct fx *f = *state;
    unsigned long long loads = 0, built = 0;
    assert_int_equal(whole_jobs(f, &loads, &built), 1);
    assert_int_equal(loads, 1);
    assert_int_equal(built, 1);
    add_jobs(f, 0, 999); /* 1,000 jobs: still one read */
    assert_int_equal(whole_jobs(f, &loads, &built), 1000);
    assert_int_equal(loads, 1);
    assert_int_equal(built, 1);
    add_jobs(f, 999, 1100); /* 1,101: counted, then built once in the large reads' line */
    assert_int_equal(whole_jobs(f, &loads, &built), 1101);
    assert_int_equal(loads, 2);
    assert_int_equal(built, 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_routes),
        T(test_route_table),
        T(test_reads),
        T(test_cache_and_paging),
        T(test_replaced_file),
        T(test_auth),
        T(test_token_files),
        T(test_answers_hide_paths),
        T(test_reservation_names),
        T(test_writes),
        T(test_limits),
        cmocka_unit_test(test_metrics_registry),
        T(test_whole_list),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
