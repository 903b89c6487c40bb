/* tests/unit/test_kube_lease_follow.c: a standby that wins the Lease stops following the leader's
 * store (sched/http/follow.c) before adopting DB.follow; a fetch still running on the worker
 * thread at that moment must not write DB.follow afterwards (it would put an older leader's copy
 * where the next adoption takes it).
 *
 * A loopback HTTP server on a thread of the test answers GET /v1/store/snapshot with a valid
 * database, but only when the test lets it: first without a stop (the copy lands as DB.follow:
 * the server and the check work), then with http_follow_stop called while the server holds the
 * answer (no DB.follow, ever). Then the follower's retry after a 503: one that sheds load
 * (Retry-After: 2, the leader's answer budget full) is tried again no sooner than 2 s, one without
 * (not the leader) after 1 s; and the rule's bound (a Retry-After of an hour waits 60 s).
 *
 * Owns: one mkdtemp directory per test and one listening socket on 127.0.0.1 (an ephemeral
 * port), both gone at the end. Every wait is bounded (5 s).
 */
/* cmocka.h needs these four headers first. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "sched/http/follow.h"
#include "store/store.h"

struct server {
    int fd;
    int port;
    char *body; /* the database's bytes */
    size_t len;
    atomic_int accepted; /* 1 once the request was read */
    atomic_int answer;   /* set by the test: send the answer now */
    int n_503;           /* the first n_503 requests get a 503 (then the copy, as above) */
    int retry_after;     /* their Retry-After (s; 0: none) */
    int64_t at[4];       /* ms (CLOCK_MONOTONIC) each request's head was read */
    atomic_int n_503_sent;
    uv_thread_t th;
};

struct fx {
    char dir[64], db[128], follow[160];
    struct server srv;
    bool started; /* serve_start ran */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads one request's head from c. */
static void read_head(int c)
{
    char buf[4096];
    size_t n = 0;
    while (n < sizeof(buf) - 1) {
        ssize_t k = recv(c, buf + n, sizeof(buf) - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
        buf[n] = 0;
        if (strstr(buf, "\r\n\r\n"))
            break;
    }
}

/* n_503 connections answered 503 each, then one that reads the request head, waits for
 * `answer` (5 s at most) and sends the copy. */
static void serve(void *arg)
{
    struct server *s = arg;
    for (int i = 0; i < s->n_503 && i < 3; i++) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return;
        read_head(c);
        s->at[i] = mono_ms();
        char ra[40] = "", head[200];
        if (s->retry_after)
            snprintf(ra, sizeof(ra), "Retry-After: %d\r\n", s->retry_after);
        int h = snprintf(head, sizeof(head),
                         "HTTP/1.1 503 Service Unavailable\r\n%sContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n",
                         ra);
        (void)send(c, head, (size_t)h, MSG_NOSIGNAL);
        close(c);
        atomic_fetch_add(&s->n_503_sent, 1);
    }
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return;
    read_head(c);
    s->at[s->n_503 < 3 ? s->n_503 : 3] = mono_ms();
    atomic_store(&s->accepted, 1);
    for (int64_t end = mono_ms() + 5000; !atomic_load(&s->answer) && mono_ms() < end;)
        usleep(1000);
    char head[200];
    int h = snprintf(head, sizeof(head),
                     "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     s->len);
    if (send(c, head, (size_t)h, MSG_NOSIGNAL) == h) /* the client may have gone: no SIGPIPE */
        (void)send(c, s->body, s->len, MSG_NOSIGNAL);
    close(c);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/gangsched-follow-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof(f->db), "%s/leader.db", f->dir);
    /* the leader's database, whole, is what the server sends */
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(f->db, STORE_CREATE, NULL, &st, &eb), 0);
    store_close(st);
    FILE *in = fopen(f->db, "rb");
    assert_non_null(in);
    f->srv.body = malloc(1 << 20);
    assert_non_null(f->srv.body);
    f->srv.len = fread(f->srv.body, 1, 1 << 20, in);
    fclose(in);
    assert_true(f->srv.len > 0);
    /* the standby's own database path: DB.follow beside it */
    snprintf(f->db, sizeof(f->db), "%s/standby.db", f->dir);
    snprintf(f->follow, sizeof(f->follow), "%s.follow", f->db);
    f->srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->srv.fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(f->srv.fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->srv.fd, 4), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(f->srv.fd, (struct sockaddr *)&a, &al), 0);
    f->srv.port = ntohs(a.sin_port);
    /* accept gives up after 10 s: a follower that never comes back cannot hang the test */
    struct timeval tv = {.tv_sec = 10};
    assert_int_equal(setsockopt(f->srv.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    *state = f;
    return 0;
}

/* The server's thread, once the test set how it answers. */
static void serve_start(struct fx *f)
{
    assert_int_equal(uv_thread_create(&f->srv.th, serve, &f->srv), 0);
    f->started = true;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    atomic_store(&f->srv.answer, 1);
    if (f->started)
        uv_thread_join(&f->srv.th);
    close(f->srv.fd);
    free(f->srv.body);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Starts a follower of the test's server; runs the loop until the server holds the request. */
static struct http_follow *follow_until_held(struct fx *f, uv_loop_t *loop)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", f->srv.port);
    struct http_follow *fol = NULL;
    struct sched_errbuf eb = {{0}};
    serve_start(f);
    assert_int_equal(http_follow_start(loop, url, NULL, f->db, 600000, &fol, &eb), 0);
    for (int64_t end = mono_ms() + 5000; !atomic_load(&f->srv.accepted) && mono_ms() < end;) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_true(atomic_load(&f->srv.accepted));
    return fol;
}

/* Without a stop the held fetch lands as DB.follow once answered. */
static void test_fetch_lands(void **state)
{
    struct fx *f = *state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct http_follow *fol = follow_until_held(f, &loop);
    atomic_store(&f->srv.answer, 1);
    for (int64_t end = mono_ms() + 5000; http_follow_count(fol) == 0 && mono_ms() < end;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(http_follow_count(fol), 1);
    assert_true(exists(f->follow));
    http_follow_stop(fol);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Stopped while the fetch is held: the answer that follows is discarded, no DB.follow. */
static void test_stopped_fetch_discarded(void **state)
{
    struct fx *f = *state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct http_follow *fol = follow_until_held(f, &loop);
    http_follow_stop(fol); /* the standby won the Lease: it adopts DB.follow next */
    atomic_store(&f->srv.answer, 1);
    uv_run(&loop, UV_RUN_DEFAULT); /* until the worker's fetch ended and the follower is freed */
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_false(exists(f->follow));
}

/* The request after n_503 503s (Retry-After retry_after s; 0: none) came gap ms after the
 * first; the copy then lands. */
static int64_t retry_gap(struct fx *f, int retry_after)
{
    f->srv.n_503 = 1;
    f->srv.retry_after = retry_after;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct http_follow *fol = follow_until_held(f, &loop);
    assert_int_equal(atomic_load(&f->srv.n_503_sent), 1);
    int64_t gap = f->srv.at[1] - f->srv.at[0];
    atomic_store(&f->srv.answer, 1);
    for (int64_t end = mono_ms() + 5000; http_follow_count(fol) == 0 && mono_ms() < end;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(http_follow_count(fol), 1);
    http_follow_stop(fol);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    print_message("  503 with Retry-After %d: the next fetch %lld ms later\n", retry_after,
                  (long long)gap);
    return gap;
}

/* Shed by the leader's answer budget (503, Retry-After: 2): not tried again before 2 s (it was
 * tried after 1 s, as a 503 of a replica that does not lead). */
static void test_shed_honours_retry_after(void **state)
{
    int64_t gap = retry_gap(*state, 2);
    assert_true(gap >= 1900);
    assert_true(gap < 4000);
}

/* A 503 without Retry-After (a standby behind the Service): tried again after 1 s. */
static void test_not_leader_retried_soon(void **state)
{
    int64_t gap = retry_gap(*state, 0);
    assert_true(gap >= 900);
    assert_true(gap < 1900);
}

/* The rule: Retry-After honoured up to HTTP_FOLLOW_RETRY_MAX_MS; not shed: soon, or at the
 * interval when that is sooner. */
static void test_retry_rule(void **state)
{
    (void)state;
    assert_true(http_follow_shed(503, 1));
    assert_true(http_follow_shed(429, 5));
    assert_false(http_follow_shed(503, 0)); /* not the leader */
    assert_false(http_follow_shed(500, 5));
    assert_int_equal(http_follow_retry_ms(503, 2, 10000), 2000);
    assert_int_equal(http_follow_retry_ms(503, 2, 500), 2000); /* the leader asked: not sooner */
    assert_int_equal(http_follow_retry_ms(503, 3600, 10000), HTTP_FOLLOW_RETRY_MAX_MS);
    assert_int_equal(http_follow_retry_ms(429, 7, 10000), 7000);
    assert_int_equal(http_follow_retry_ms(503, 0, 10000), HTTP_FOLLOW_SOON_MS);
    assert_int_equal(http_follow_retry_ms(0, 0, 10000), HTTP_FOLLOW_SOON_MS); /* no answer */
    assert_int_equal(http_follow_retry_ms(503, 0, 800), 0); /* the interval is sooner */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fetch_lands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_fetch_discarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shed_honours_retry_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_leader_retried_soon, setup, teardown),
        cmocka_unit_test(test_retry_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
