/* tests/unit/test_kube_lease_follow.c: a standby that wins the Lease stops following the leader's
 * store (sched/http/follow.c) before adopting DB.follow; a fetch still running on the worker
 * thread at that moment must not write DB.follow afterwards (it would put an older leader's copy
 * where the next adoption takes it).
 *
 * A loopback HTTP server on a thread of the test answers GET /v1/store/snapshot with a valid
 * database, but only when the test lets it: first without a stop (the copy lands as DB.follow:
 * the server and the check work), then with http_follow_stop called while the server holds the
 * answer (no DB.follow, ever).
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
    uv_thread_t th;
};

struct fx {
    char dir[64], db[128], follow[160];
    struct server srv;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One connection: reads the request head, waits for `answer` (5 s at most), sends the copy. */
static void serve(void *arg)
{
    struct server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return;
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
    assert_int_equal(uv_thread_create(&f->srv.th, serve, &f->srv), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    atomic_store(&f->srv.answer, 1);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fetch_lands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_fetch_discarded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
