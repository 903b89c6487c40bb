/* tests/unit/test_http_conn.c: the HTTP server's connections over loopback sockets: stopping
 * with reads in flight (run under ASan by `make san`), a client that never reads its answers
 * (write timeout), a slowloris writer (request timeout), the probe reserve when every
 * connection slot is taken, 1,000 keep-alive clients, the per-connection output limit, the
 * budget of answers queued on all connections and the limit on snapshots in flight.
 *
 * The server runs on this thread's loop; the clients are non-blocking sockets driven between
 * loop iterations, so nothing here depends on thread scheduling. Time bounds are generous
 * (seconds) and only guard against a hang: what is asserted is the behaviour.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched/http/server.h"

struct fx {
    char dir[64], db[96];
    uv_loop_t loop;
    struct http_server *s;
    int port;
    size_t filler; /* bytes of a meta value added to the database (a large snapshot) */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void make_db(struct fx *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/gangsched-httpc-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(f->db, STORE_CREATE, NULL, &st, &eb), 0);
    struct store_quota qq = {"default", STORE_GPU, 8, STORE_NO_LIMIT, STORE_NO_LIMIT};
    for (int i = 0; i < 20; i++) {
        char name[48];
        snprintf(name, sizeof(name), "queue-with-a-long-name-%02d", i);
        struct store_queue q = {name, NULL, 1, 0, &qq, 1};
        assert_int_equal(store_queue_put(st, &q, &eb), 0);
    }
    if (f->filler) {
        char *v = malloc(f->filler + 1);
        assert_non_null(v);
        for (size_t i = 0; i < f->filler; i++)
            v[i] = (char)('a' + (i * 7919 % 26)); /* no run SQLite could shorten */
        v[f->filler] = 0;
        assert_int_equal(store_meta_put(st, "filler", v, &eb), 0);
        free(v);
    }
    store_close(st);
}

static void start(struct fx *f, const struct http_limits *l)
{
    make_db(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    struct http_opts o = {.listen = "127.0.0.1:0"};
    if (l)
        o.limits = *l;
    struct http_provider p = {.store_path = f->db, .store_metrics = true};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(http_server_start(&f->loop, &o, &p, &f->s, &eb), 0);
    f->port = http_server_port(f->s);
}

static void stop(struct fx *f)
{
    http_server_stop(f->s);
    int64_t t0 = now_ms();
    while (uv_run(&f->loop, UV_RUN_NOWAIT) != 0 && now_ms() - t0 < 10000)
        usleep(1000);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
}

/* Runs the loop for about ms milliseconds (without blocking in it). */
static void spin(struct fx *f, int ms)
{
    int64_t t0 = now_ms();
    do {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(500);
    } while (now_ms() - t0 < ms);
}

static int client(const struct fx *f, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    if (rcvbuf)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void send_all(struct fx *f, int fd, const char *s)
{
    size_t n = strlen(s), off = 0;
    int64_t t0 = now_ms();
    while (off < n && now_ms() - t0 < 5000) {
        ssize_t k = send(fd, s + off, n - off, MSG_NOSIGNAL);
        if (k > 0)
            off += (size_t)k;
        else
            spin(f, 1);
    }
    assert_int_equal(off, n);
}

/* Reads what the server sent within ms; returns the byte count, *eof when it closed. */
static size_t recv_for(struct fx *f, int fd, char *buf, size_t cap, int ms, bool *eof)
{
    size_t len = 0;
    *eof = false;
    int64_t t0 = now_ms();
    while (now_ms() - t0 < ms) {
        ssize_t k = recv(fd, buf + len, cap - 1 - len, 0);
        if (k > 0) {
            len += (size_t)k;
            buf[len] = 0;
            if (strstr(buf, "\r\n\r\n") && strstr(buf, "}"))
                break;
        } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            *eof = true;
            break;
        }
        spin(f, 1);
    }
    buf[len] = 0;
    return len;
}

/* An answer's status code from the bytes read (0 when none). */
static int status_of(const char *buf)
{
    int st = 0;
    return sscanf(buf, "HTTP/1.1 %d", &st) == 1 ? st : 0;
}

static int probe(struct fx *f, const char *path)
{
    int fd = client(f, 0);
    char req[128];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    send_all(f, fd, req);
    char buf[4096];
    bool eof;
    recv_for(f, fd, buf, sizeof(buf), 3000, &eof);
    close(fd);
    return status_of(buf);
}

/* Stopping the server while reads run on workers: each answer is dropped once (the double
 * free this guards against crashed `gangsched serve` and the daemon on SIGTERM). */
static void test_stop_with_reads_in_flight(void **state)
{
    (void)state;
    struct fx f = {0};
    start(&f, NULL);
    int fds[16];
    for (int i = 0; i < 16; i++) {
        fds[i] = client(&f, 0);
        send_all(&f, fds[i], "GET /v1/queues HTTP/1.1\r\n\r\nGET /v1/quota HTTP/1.1\r\n\r\n");
    }
    int64_t t0 = now_ms();
    while (http_server_reads_in_flight(f.s) == 0 && now_ms() - t0 < 5000)
        uv_run(&f.loop, UV_RUN_NOWAIT);
    assert_true(http_server_reads_in_flight(f.s) > 0);
    stop(&f);
    for (int i = 0; i < 16; i++)
        close(fds[i]);
}

/* A client that sends requests and never reads: once the kernel's buffers are full its answer
 * waits; the write timeout closes the connection (before: held forever). */
static void test_slow_reader_closed(void **state)
{
    (void)state;
    struct fx f = {0};
    struct http_limits l = {.write_timeout_ms = 300, .timeout_ms = 60000};
    start(&f, &l);
    int fd = client(&f, 4096);
    spin(&f, 20);
    assert_int_equal(http_server_conns(f.s), 1);
    static char reqs[64 << 10];
    size_t n = 0;
    while (n + 64 < sizeof(reqs))
        n += (size_t)snprintf(reqs + n, sizeof(reqs) - n, "GET /v1/queues HTTP/1.1\r\n\r\n");
    /* keep sending until the server stops taking requests (it waits on an answer) */
    size_t sent = 0;
    int64_t t0 = now_ms();
    while (now_ms() - t0 < 8000 && http_server_conns(f.s) > 0) {
        ssize_t k = send(fd, reqs + (sent % n), n - (sent % n), MSG_NOSIGNAL);
        if (k > 0)
            sent += (size_t)k;
        spin(&f, 2);
    }
    assert_int_equal(http_server_conns(f.s), 0);
    assert_true(sent > 0);
    assert_true(now_ms() - t0 >= 250); /* closed by the write timeout, not at once */
    close(fd);
    stop(&f);
}

/* A slowloris writer (a byte every 50 ms) gets 408 after the request timeout. */
static void test_slowloris_408(void **state)
{
    (void)state;
    struct fx f = {0};
    struct http_limits l = {.timeout_ms = 400};
    start(&f, &l);
    int fd = client(&f, 0);
    const char *req = "GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    char buf[4096] = "";
    int64_t t0 = now_ms();
    for (size_t i = 0; req[i] && now_ms() - t0 < 5000; i++) {
        send(fd, req + i, 1, MSG_NOSIGNAL);
        spin(&f, 50);
        if (recv(fd, buf, sizeof(buf) - 1, 0) > 0)
            break;
    }
    assert_int_equal(status_of(buf), 408);
    assert_true(now_ms() - t0 < 3000);
    close(fd);
    stop(&f);
}

/* Every slot held by clients that do not read: /healthz and /readyz are still answered from
 * the probe reserve; other routes there get 503; past the reserve, 503. */
static void test_probe_reserve(void **state)
{
    (void)state;
    struct fx f = {0};
    struct http_limits l = {.max_conns = 8, .probe_conns = 2, .timeout_ms = 60000};
    start(&f, &l);
    int hostile[8];
    for (int i = 0; i < 8; i++) {
        hostile[i] = client(&f, 0);
        send_all(&f, hostile[i], "GET /v1/quota HTTP/1.1\r\nX-A: b");
    }
    spin(&f, 50);
    assert_int_equal(http_server_conns(f.s), 8);
    assert_int_equal(probe(&f, "/healthz"), 200);
    assert_int_equal(probe(&f, "/readyz"), 200);
    assert_int_equal(probe(&f, "/v1/queues"), 503);
    /* the reserve itself is bounded: 2 held probe-only connections, the next gets 503 */
    int p1 = client(&f, 0), p2 = client(&f, 0);
    spin(&f, 50);
    assert_int_equal(probe(&f, "/healthz"), 503);
    close(p1);
    close(p2);
    spin(&f, 50);
    assert_int_equal(probe(&f, "/healthz"), 200);
    for (int i = 0; i < 8; i++)
        close(hostile[i]);
    stop(&f);
}

/* 1,000 keep-alive clients, each answered twice on its connection, and a probe among them. */
static void test_keepalive_1000(void **state)
{
    (void)state;
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < 2300) {
        rl.rlim_cur = rl.rlim_max < 2300 ? rl.rlim_max : 2300;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    assert_true(rl.rlim_cur >= 2100); /* 1,000 clients + 1,000 server sides */
    struct fx f = {0};
    start(&f, NULL);
    enum { N = 1000 };
    static int fds[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            if (round == 0)
                fds[i] = client(&f, 0);
            send_all(&f, fds[i], "GET /healthz HTTP/1.1\r\n\r\n");
            if (i % 100 == 0)
                spin(&f, 1);
        }
        int ok = 0;
        char buf[1024];
        for (int i = 0; i < N; i++) {
            bool eof;
            recv_for(&f, fds[i], buf, sizeof(buf), 3000, &eof);
            ok += status_of(buf) == 200 && strstr(buf, "Connection: keep-alive") != NULL;
        }
        assert_int_equal(ok, N);
    }
    assert_int_equal(http_server_conns(f.s), N);
    assert_int_equal(probe(&f, "/healthz"), 200);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    stop(&f);
}

/* An answer larger than --http-max-output is refused with 500 naming the flag. */
static void test_output_limit(void **state)
{
    (void)state;
    struct fx f = {0};
    struct http_limits l = {.max_output = 100};
    start(&f, &l);
    int fd = client(&f, 0);
    send_all(&f, fd, "GET /v1/queues HTTP/1.1\r\n\r\n");
    char buf[4096];
    bool eof;
    recv_for(&f, fd, buf, sizeof(buf), 3000, &eof);
    assert_int_equal(status_of(buf), 500);
    assert_non_null(strstr(buf, "--http-max-output"));
    close(fd);
    assert_int_equal(probe(&f, "/healthz"), 200);
    stop(&f);
}

/* Sends `req` on a new client that never reads beyond its answer's status line (its receive
 * buffer 4 KiB); returns the socket, the status in *status and the bytes read in buf. */
static int lazy_client(struct fx *f, const char *req, int *status, char *buf, size_t cap)
{
    int fd = client(f, 4096);
    send_all(f, fd, req);
    size_t len = 0;
    int64_t t0 = now_ms();
    buf[0] = 0;
    while (!strstr(buf, "\r\n\r\n") && now_ms() - t0 < 5000) {
        ssize_t k = recv(fd, buf + len, cap - 1 - len, 0);
        if (k > 0) {
            len += (size_t)k;
            buf[len] = 0;
        } else if (k == 0) {
            break;
        }
        spin(f, 1);
    }
    *status = status_of(buf);
    return fd;
}

/* Clients that ask for a large answer (a 1.5 MB snapshot, more than the kernel's buffers hold)
 * and never read it: the answers queued stay within --http-max-queued, further reads get 503
 * with Retry-After, small answers (the probes) still go out, and the budget comes back when
 * the clients go (before: every answer queued, 100 snapshots of a 6.5 MB database took 1 GB). */
static void test_queued_budget(void **state)
{
    (void)state;
    struct fx f = {.filler = 1500000};
    struct http_limits l = {.max_queued = 4u << 20,
                            .max_snapshots = 64,
                            .write_timeout_ms = 60000,
                            .timeout_ms = 60000};
    start(&f, &l);
    const char *req = "GET /v1/store/snapshot HTTP/1.1\r\n\r\n";
    int fds[8], st[8], n200 = 0, n503 = 0;
    char buf[4096], shed[4096] = "";
    for (int i = 0; i < 8; i++) {
        fds[i] = lazy_client(&f, req, &st[i], buf, sizeof(buf));
        n200 += st[i] == 200;
        n503 += st[i] == 503;
        if (st[i] == 503 && !shed[0])
            snprintf(shed, sizeof(shed), "%s", buf);
        assert_true(http_server_queued_bytes(f.s) <= l.max_queued);
    }
    /* each answer is about 1.5 MB: two fit in 4 MiB, the third would not */
    assert_int_equal(n200, 2);
    assert_int_equal(n503, 6);
    assert_true(http_server_queued_bytes(f.s) > 3000000);
    assert_non_null(strstr(shed, "Retry-After: 1\r\n"));
    assert_non_null(strstr(shed, "--http-max-queued"));
    assert_int_equal(probe(&f, "/healthz"), 200);
    assert_int_equal(probe(&f, "/v1/queues"), 200); /* a small answer still goes out */
    for (int i = 0; i < 8; i++)
        close(fds[i]);
    int64_t t0 = now_ms();
    while (http_server_queued_bytes(f.s) > 0 && now_ms() - t0 < 5000)
        spin(&f, 5);
    assert_int_equal(http_server_queued_bytes(f.s), 0);
    int fd = lazy_client(&f, req, &st[0], buf, sizeof(buf));
    assert_int_equal(st[0], 200);
    /* the gauge shows the queued answer */
    int mfd = client(&f, 0);
    send_all(&f, mfd, "GET /metrics HTTP/1.1\r\n\r\n");
    static char mbuf[1 << 16];
    bool eof;
    size_t mlen = 0;
    t0 = now_ms();
    while (!strstr(mbuf, "gangsched_http_requests_total") && now_ms() - t0 < 5000)
        mlen += recv_for(&f, mfd, mbuf + mlen, sizeof(mbuf) - mlen, 100, &eof);
    const char *g = strstr(mbuf, "\ngangsched_http_queued_bytes ");
    assert_non_null(g);
    assert_true(strtod(g + 29, NULL) > 1500000);
    close(mfd);
    close(fd);
    stop(&f);
}

/* In an overload (the budget spent by one answer a client does not read) reads are shed, but a
 * Prometheus scrape still gets /metrics: the time the operator needs it (before: 503). */
static void test_metrics_in_overload(void **state)
{
    (void)state;
    struct fx f = {.filler = 1500000};
    struct http_limits l = {
        .max_queued = 1000000, .max_snapshots = 64, .write_timeout_ms = 60000, .timeout_ms = 60000};
    start(&f, &l);
    int st;
    char buf[4096];
    int fd = lazy_client(&f, "GET /v1/store/snapshot HTTP/1.1\r\n\r\n", &st, buf, sizeof(buf));
    assert_int_equal(st, 200); /* larger than the budget, sent alone */
    assert_true(http_server_queued_bytes(f.s) >= l.max_queued);
    assert_int_equal(probe(&f, "/v1/queues"), 503);
    assert_int_equal(probe(&f, "/metrics"), 200);
    assert_int_equal(probe(&f, "/healthz"), 200);
    close(fd);
    stop(&f);
}

/* A connection the server has no memory for is accepted and closed, and the listener keeps
 * accepting (before: left unaccepted, libuv stopped polling the listener and every later
 * client hung). Three at once: the second and third wait for the spare handle to close. */
static void test_conn_no_memory(void **state)
{
    (void)state;
    struct fx f = {0};
    start(&f, NULL);
    http_server_test_fail_conns(f.s, 3);
    int fds[3];
    for (int i = 0; i < 3; i++)
        fds[i] = client(&f, 0);
    for (int i = 0; i < 3; i++) {
        char buf[256];
        bool eof;
        recv_for(&f, fds[i], buf, sizeof(buf), 3000, &eof);
        assert_true(eof);
        close(fds[i]);
    }
    assert_int_equal(http_server_refused(f.s), 3);
    assert_int_equal(probe(&f, "/healthz"), 200);
    assert_int_equal(probe(&f, "/v1/queues"), 200);
    stop(&f);
}

/* An answer larger than the whole budget goes out alone (a snapshot of a database larger than
 * --http-max-queued still reaches a standby); while it waits every read is shed before it runs. */
static void test_queued_alone(void **state)
{
    (void)state;
    struct fx f = {.filler = 1500000};
    struct http_limits l = {.max_queued = 1u << 20, .write_timeout_ms = 60000, .timeout_ms = 60000};
    start(&f, &l);
    int st;
    char buf[4096];
    int fd = lazy_client(&f, "GET /v1/store/snapshot HTTP/1.1\r\n\r\n", &st, buf, sizeof(buf));
    assert_int_equal(st, 200);
    assert_true(http_server_queued_bytes(f.s) > l.max_queued);
    unsigned long long loads = http_server_loads(f.s);
    assert_int_equal(probe(&f, "/v1/queues"), 503);
    assert_int_equal(http_server_loads(f.s), loads); /* shed before any read */
    assert_int_equal(probe(&f, "/healthz"), 200);
    close(fd);
    int64_t t0 = now_ms();
    while (http_server_queued_bytes(f.s) > 0 && now_ms() - t0 < 5000)
        spin(&f, 5);
    assert_int_equal(probe(&f, "/v1/queues"), 200);
    stop(&f);
}

/* At most --http-max-snapshots snapshots are built or queued at once; the next gets 503 until
 * one is taken. */
static void test_snapshot_limit(void **state)
{
    (void)state;
    struct fx f = {.filler = 1500000};
    struct http_limits l = {.write_timeout_ms = 60000, .timeout_ms = 60000};
    start(&f, &l);
    const char *req = "GET /v1/store/snapshot HTTP/1.1\r\n\r\n";
    int fds[4], st[4];
    char buf[4096];
    for (int i = 0; i < 4; i++)
        fds[i] = lazy_client(&f, req, &st[i], buf, sizeof(buf));
    assert_int_equal(st[0], 200);
    assert_int_equal(st[1], 200);
    assert_int_equal(st[2], 503);
    assert_int_equal(st[3], 503);
    assert_non_null(strstr(buf, "--http-max-snapshots"));
    assert_non_null(strstr(buf, "Retry-After: 1\r\n"));
    assert_int_equal(http_server_snapshots(f.s), 2);
    close(fds[0]);
    int64_t t0 = now_ms();
    while (http_server_snapshots(f.s) > 1 && now_ms() - t0 < 5000)
        spin(&f, 5);
    assert_int_equal(http_server_snapshots(f.s), 1);
    int fd = lazy_client(&f, req, &st[0], buf, sizeof(buf));
    assert_int_equal(st[0], 200);
    close(fd);
    for (int i = 1; i < 4; i++)
        close(fds[i]);
    stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_with_reads_in_flight),
        cmocka_unit_test(test_slow_reader_closed),
        cmocka_unit_test(test_slowloris_408),
        cmocka_unit_test(test_probe_reserve),
        cmocka_unit_test(test_keepalive_1000),
        cmocka_unit_test(test_output_limit),
        cmocka_unit_test(test_queued_budget),
        cmocka_unit_test(test_metrics_in_overload),
        cmocka_unit_test(test_queued_alone),
        cmocka_unit_test(test_conn_no_memory),
        cmocka_unit_test(test_snapshot_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
