/* tests/unit/test_kube_lease_client.c: what the Lease needs from the API client
 * (sched/kube/client.c) so that a leader's renew deadline holds whatever the server does:
 *   - a KUBE_NO_LIMIT request is not queued behind the in-flight limit (a renewal behind slow
 *     Bindings), and kube_req_set_timeout cuts it at its own timeout, not the client's 30 s;
 *   - a gated request (a Binding, and every other write: evictions, deletes) leaves the queue
 *     only while the client's gate says yes; when it says no, every queued write is dropped,
 *     never sent nor retried, and an answered read goes on;
 *   - kube_client_drain_writes waits for the writes, dropping what is left at its bound.
 *
 * Owns: a loopback listening socket that never accepts (the kernel completes the handshake, the
 * request is sent and never answered: an unresponsive API server), and requests to the closed
 * port 127.0.0.1:1. Every loop run is bounded by a guard timer (3 s).
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
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "sched/kube/client.h"
#include "sched/kube/wire.h"

struct result {
    int done;
    int status;
    uint64_t at_ms; /* loop time of the answer */
    uv_loop_t *loop;
    bool stop; /* uv_stop the loop on the answer */
};

static void on_resp(void *ctx, const struct kube_resp *r)
{
    struct result *res = ctx;
    res->done++;
    res->status = r->status;
    res->at_ms = uv_now(res->loop);
    if (res->stop)
        uv_stop(res->loop);
}

static void on_guard(uv_timer_t *t)
{
    uv_stop(t->loop);
}

/* Runs the loop until stopped or `ms` pass. */
static void run_for(uv_loop_t *loop, uint64_t ms)
{
    uv_timer_t guard;
    uv_timer_init(loop, &guard);
    uv_timer_start(&guard, on_guard, ms, 0);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

/* A socket listening on 127.0.0.1 that never accepts; its port. */
static int silent_server(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void lease_request_bypasses_inflight_and_times_out(void **state)
{
    (void)state;
    int port;
    int fd = silent_server(&port);
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_auth a = {.server = server, .source = (char *)"test"};
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    o.max_inflight = 1;
    struct kube_client *c;
    struct sched_errbuf eb;
    assert_int_equal(kube_client_new(&loop, &a, &o, &c, &eb), 0);
    struct result bind1 = {.loop = &loop}, bind2 = {.loop = &loop};
    struct result lease = {.loop = &loop, .stop = true};
    /* a slow Binding holds the only slot; a second waits for it */
    assert_int_equal(kube_request(c, KUBE_POST, "/api/v1/namespaces/d/pods/p1/binding", "{}", 2,
                                  KUBE_NO_RETRY, on_resp, &bind1),
                     0);
    assert_int_equal(kube_request(c, KUBE_POST, "/api/v1/namespaces/d/pods/p2/binding", "{}", 2,
                                  KUBE_NO_RETRY, on_resp, &bind2),
                     0);
    struct kube_req *h = NULL;
    assert_int_equal(kube_request_h(c, KUBE_PUT, "/apis/coordination.k8s.io/v1/leases/x", "{}", 2,
                                    KUBE_NO_LIMIT | KUBE_NO_RETRY, on_resp, &lease, &h),
                     0);
    kube_req_set_timeout(h, 300); /* what is left of the renew deadline */
    uint64_t t0 = uv_now(&loop);
    run_for(&loop, 3000);
    struct kube_client_stats st;
    kube_client_stats(c, &st);
    /* the renewal went on the wire beside the held Binding and was cut at 300 ms */
    assert_int_equal(lease.done, 1);
    assert_int_equal(lease.status, 0);
    assert_true(lease.at_ms - t0 >= 250 && lease.at_ms - t0 < 2000);
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.queued, 1);
    assert_int_equal(bind1.done + bind2.done, 0);
    kube_client_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    close(fd);
}

static bool gate_open;

static bool gate(void *ctx)
{
    int *asked = ctx;
    (*asked)++;
    return gate_open;
}

static void gated_writes_are_dropped_never_sent(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_auth a = {.server = (char *)"http://127.0.0.1:1", .source = (char *)"test"};
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    struct kube_client *c;
    struct sched_errbuf eb;
    assert_int_equal(kube_client_new(&loop, &a, &o, &c, &eb), 0);
    int asked = 0;
    gate_open = false;
    kube_client_set_gate(c, gate, &asked);
    struct result bind = {.loop = &loop}, del = {.loop = &loop}, get = {.loop = &loop};
    struct result get2 = {.loop = &loop};
    assert_int_equal(kube_request(c, KUBE_POST, "/api/v1/namespaces/d/pods/p/binding", "{}", 2,
                                  KUBE_NO_RETRY, on_resp, &bind),
                     0);
    /* an eviction or pod delete: a write, gated as the Binding is */
    assert_int_equal(
        kube_request(c, KUBE_DELETE, "/api/v1/namespaces/d/pods/q", NULL, 0, 0, on_resp, &del), 0);
    assert_int_equal(
        kube_request(c, KUBE_GET, "/api/v1/pods", NULL, 0, KUBE_NO_RETRY, on_resp, &get), 0);
    run_for(&loop, 500);
    struct kube_client_stats st;
    kube_client_stats(c, &st);
    /* a deposed leader: both writes dropped unsent and unanswered, the read goes on */
    assert_int_equal(asked, 1);
    assert_int_equal(bind.done + del.done, 0);
    assert_int_equal(get.done, 1);
    assert_int_equal(st.requests, 1);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.dropped, 2);
    /* the gate opening again sends nothing of what was dropped */
    gate_open = true;
    assert_int_equal(
        kube_request(c, KUBE_GET, "/api/v1/nodes", NULL, 0, KUBE_NO_RETRY, on_resp, &get2), 0);
    run_for(&loop, 500);
    kube_client_stats(c, &st);
    assert_int_equal(bind.done + del.done, 0);
    assert_int_equal(get2.done, 1);
    assert_int_equal(st.requests, 2);
    kube_client_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void on_drop_timer(uv_timer_t *t)
{
    gate_open = false; /* the renew deadline passes while a write waits for its retry */
    (void)t;
}

static void gated_retry_is_not_sent_past_the_gate(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_auth a = {.server = (char *)"http://127.0.0.1:1", .source = (char *)"test"};
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    struct kube_client *c;
    struct sched_errbuf eb;
    assert_int_equal(kube_client_new(&loop, &a, &o, &c, &eb), 0);
    int asked = 0;
    gate_open = true;
    kube_client_set_gate(c, gate, &asked);
    struct result ev = {.loop = &loop};
    /* an eviction, retried on transport errors (the closed port) after 200-300 ms backoff */
    assert_int_equal(kube_request(c, KUBE_POST, "/api/v1/namespaces/d/pods/p/eviction", "{}", 2, 0,
                                  on_resp, &ev),
                     0);
    uv_timer_t close_gate;
    uv_timer_init(&loop, &close_gate);
    uv_timer_start(&close_gate, on_drop_timer, 100, 0);
    run_for(&loop, 2000);
    uv_close((uv_handle_t *)&close_gate, NULL);
    struct kube_client_stats st;
    kube_client_stats(c, &st);
    assert_int_equal(st.requests, 1); /* the first attempt only: no retry past the gate */
    assert_int_equal(st.retries, 0);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(ev.done, 0);
    assert_int_equal(asked, 2);
    kube_client_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

struct drained {
    int n;
    uint64_t at_ms;
    uv_loop_t *loop;
};

static void on_drained(void *ctx)
{
    struct drained *dr = ctx;
    dr->n++;
    dr->at_ms = uv_now(dr->loop);
    if (dr->n == 2) /* the first is answered outside the loop */
        uv_stop(dr->loop);
}

static void drain_waits_for_writes_then_drops(void **state)
{
    (void)state;
    int port;
    int fd = silent_server(&port);
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_auth a = {.server = server, .source = (char *)"test"};
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    struct kube_client *c;
    struct sched_errbuf eb;
    assert_int_equal(kube_client_new(&loop, &a, &o, &c, &eb), 0);
    struct drained dr = {.loop = &loop};
    kube_client_drain_writes(c, 300, on_drained, &dr); /* nothing to wait for: at once */
    assert_int_equal(dr.n, 1);
    struct result del = {.loop = &loop}, get = {.loop = &loop};
    assert_int_equal(kube_request(c, KUBE_DELETE, "/api/v1/namespaces/d/pods/q", NULL, 0,
                                  KUBE_NO_RETRY, on_resp, &del),
                     0);
    assert_int_equal(
        kube_request(c, KUBE_GET, "/api/v1/pods", NULL, 0, KUBE_NO_RETRY, on_resp, &get), 0);
    uint64_t t0 = uv_now(&loop);
    kube_client_drain_writes(c, 300, on_drained, &dr);
    run_for(&loop, 3000);
    struct kube_client_stats st;
    kube_client_stats(c, &st);
    /* the delete was sent and never answered: dropped at the bound; the read is not waited */
    assert_int_equal(dr.n, 2);
    assert_true(dr.at_ms - t0 >= 250 && dr.at_ms - t0 < 2000);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(del.done, 0);
    kube_client_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lease_request_bypasses_inflight_and_times_out),
        cmocka_unit_test(gated_writes_are_dropped_never_sent),
        cmocka_unit_test(gated_retry_is_not_sent_past_the_gate),
        cmocka_unit_test(drain_waits_for_writes_then_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
