/* sched/http/server.c: the HTTP API server; see server.h and docs/api.md.
 *
 * Owns: the listener and connections (libuv TCP): one request answered at a time per
 * connection, the request timeout (408), the write timeout (a client that does not take its
 * answer is disconnected), max connections (503) with a reserve of probe-only connections for
 * /healthz and /readyz, the largest answer, the budget of answer bytes queued on all
 * connections and the snapshots in flight (503 with Retry-After past them), a connection there
 * is no memory for (accepted and closed); routing, bearer-token checks (token files re-read
 * when they change, constant-time comparison), JSON errors {"error":{"code":N,"message":"..."}},
 * and the server's own metrics (requests by method and code). The request parser is
 * reqparse.c, routing and authorisation routes.c, the reads run on workers reads.c; the limit
 * flags are read by the commands (sched/cmd/gangsched.c).
 * Must not touch: the store's content, scheduling, other handles of the embedding loop.
 */
#include "sched/http/server.h"

#include <errno.h>
#include <http_parser.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "sched/http/reqparse.h"
#include "sched/http/server_int.h"
#include "store/views.h"

/* ---- server -----------------------------------------------------------------------------------
 */

struct conn;

static char *sdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int server_init(struct http_server *s, const struct http_opts *o,
                       const struct http_provider *p, struct sched_errbuf *eb)
{
    s->prov = *p;
    atomic_init(&s->written, false);
    atomic_init(&s->big_waiting, 0);
    const struct http_limits *l = &o->limits;
    s->lim.max_conns = l->max_conns ? l->max_conns : HTTP_DEFAULT_CONNS;
    s->lim.probe_conns = l->probe_conns ? l->probe_conns : HTTP_DEFAULT_PROBES;
    s->lim.timeout_ms = l->timeout_ms ? l->timeout_ms : HTTP_DEFAULT_TIMEOUT;
    s->lim.write_timeout_ms = l->write_timeout_ms ? l->write_timeout_ms : HTTP_DEFAULT_WTIMEOUT;
    s->lim.max_output = l->max_output ? l->max_output : HTTP_DEFAULT_OUTPUT;
    s->lim.max_queued = l->max_queued ? l->max_queued : HTTP_DEFAULT_QUEUED;
    s->lim.max_snapshots = l->max_snapshots ? l->max_snapshots : HTTP_DEFAULT_SNAPSHOTS;
    s->wtok.path = sdup(o->write_token_file);
    s->rtok.path = sdup(o->read_token_file);
    s->prov.store_path = NULL;
    char *sp = sdup(p->store_path);
    s->prov.store_path = sp;
    s->own = http_metrics_new();
    static const char *const labels[] = {"method", "code"};
    if ((o->write_token_file && !s->wtok.path) || (o->read_token_file && !s->rtok.path) ||
        (p->store_path && !sp) || !s->own ||
        http_metric_add(s->own, "gangsched_http_requests_total",
                        "HTTP API requests answered, by method and status code", HTTP_COUNTER,
                        labels, 2, NULL, 0, &s->m_requests) != 0 ||
        http_metric_add(s->own, "gangsched_http_queued_bytes",
                        "Bytes of HTTP answers queued on the connections, not yet taken by the "
                        "kernel (at most --http-max-queued)",
                        HTTP_GAUGE, NULL, 0, NULL, 0, &s->m_queued) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "http server: out of memory");
    if (uv_mutex_init(&s->mu) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "http server: cannot create a mutex");
    return 0;
}

static void server_free(struct http_server *s)
{
    http__readers_free(s);
    uv_mutex_destroy(&s->mu);
    free(s->wtok.path);
    free(s->rtok.path);
    free((char *)s->prov.store_path);
    http_metrics_free(s->own);
    free(s);
}

int http_server_new_detached(const struct http_opts *o, const struct http_provider *p,
                             struct http_server **out, struct sched_errbuf *eb)
{
    struct http_server *s = calloc(1, sizeof(*s));
    if (!s)
        return sched_fail(eb, SCHED_ENOMEM, "http server: out of memory");
    int err = server_init(s, o, p, eb);
    if (err) {
        free(s->wtok.path);
        free(s->rtok.path);
        free((char *)s->prov.store_path);
        http_metrics_free(s->own);
        free(s);
        return err;
    }
    *out = s;
    return 0;
}

void http_server_free_detached(struct http_server *s)
{
    if (s)
        server_free(s);
}

int http_server_port(const struct http_server *s)
{
    return s ? s->port : 0;
}

unsigned http_server_conns(const struct http_server *s)
{
    return s ? s->n_conns : 0;
}

uint64_t http_server_queued_bytes(const struct http_server *s)
{
    return s ? s->queued : 0;
}

unsigned http_server_snapshots(const struct http_server *s)
{
    return s ? s->n_snapshots : 0;
}

void http_server_test_fail_conns(struct http_server *s, unsigned n)
{
    s->test_fail_conns = n;
}

unsigned http_server_refused(const struct http_server *s)
{
    return s ? s->refused : 0;
}

unsigned http_server_reads_in_flight(const struct http_server *s)
{
    return s ? s->n_reads : 0;
}

/* ---- responses --------------------------------------------------------------------------------
 */

void http_response_release(struct http_response *resp)
{
    if (resp->release)
        resp->release(resp->body);
    else
        free(resp->body);
    resp->body = NULL;
    resp->release = NULL;
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 202:
        return "Accepted";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 413:
        return "Payload Too Large";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    }
    return "Unknown";
}

void http__resp_json(struct http_response *r, int status, cJSON *doc)
{
    r->status = status;
    r->content_type = "application/json";
    r->body = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!r->body) {
        static const char oom[] = "{\"error\":{\"code\":500,\"message\":\"out of memory\"}}";
        r->status = 500;
        r->body = sdup(oom);
    }
    r->len = r->body ? strlen(r->body) : 0;
}

void http__resp_error(struct http_response *r, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *doc = cJSON_CreateObject();
    cJSON *e = doc ? cJSON_AddObjectToObject(doc, "error") : NULL;
    if (e) {
        cJSON_AddNumberToObject(e, "code", status);
        cJSON_AddStringToObject(e, "message", msg);
    }
    http__resp_json(r, status, doc);
    r->status = status;
}

/* ---- reads (worker threads) -------------------------------------------------------------------
 */

static void render_live(struct http_server *s, struct http_response *resp)
{
    if (resp->status != 200)
        return;
    char *buf = resp->body;
    size_t len = resp->len;
    int err = http_metrics_render(s->own, &buf, &len);
    if (!err && s->prov.metrics)
        err = http_metrics_render(s->prov.metrics, &buf, &len);
    resp->body = buf;
    resp->len = len;
    resp->monitoring = true;
    if (err) {
        http_response_release(resp);
        memset(resp, 0, sizeof(*resp));
        http__resp_error(resp, 500, "rendering the metrics: out of memory");
    }
}

static void count_request(struct http_server *s, const char *method, int status)
{
    char code[16];
    snprintf(code, sizeof(code), "%d", status);
    const char *values[] = {method ? method : "unknown", code};
    http_metric_add_value(s->m_requests, values, 1);
}

/* Answers one request inline (reads too): the tests' and the fuzz harness's path. */
static int answer_inline(struct http_server *s, const struct http_request *q)
{
    struct http_response resp;
    struct http_work *w = NULL;
    if (http_route(s, q, &resp, &w) == 1) {
        http_request_work(s, w, &resp);
        if (w->v == V_METRICS)
            render_live(s, &resp);
        http_work_free(w);
    }
    int st = resp.status;
    count_request(s, q->method, st);
    http_response_release(&resp);
    return st;
}

int http_feed_raw(struct http_server *s, const char *data, size_t len)
{
    struct reqp *r = calloc(1, sizeof(*r));
    if (!r)
        return 500;
    reqp_reset(r);
    reqp_feed(r, data, len);
    int st = 0;
    if (r->error) {
        st = r->error;
    } else if (r->complete) {
        struct http_request q;
        reqp_fill_request(r, &q, "fuzz");
        st = answer_inline(s, &q);
    }
    reqp_free(r);
    free(r);
    return st;
}

/* ---- connections ------------------------------------------------------------------------------
 */

#define IN_CAP (HTTP_MAX_HEADER_BYTES + HTTP_MAX_BODY_BYTES + 4096)
#define IN_MIN 4096 /* first input buffer; grown to IN_CAP as a request needs */

/* A connection. Memory: the struct (under 1 KiB), the parser's URL and Authorization buffers
 * (grown to what requests needed, usually a few hundred bytes) and its input buffer, which
 * exists only while bytes are waiting (IN_MIN, grown to IN_CAP): an idle keep-alive connection
 * costs about 1.5 KiB. */
struct conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* request timeout, idle timeout, or write timeout while `writing` */
    struct http_server *srv;
    struct conn *next, **pprev;
    struct reqp rp;
    char *in;
    size_t in_len, in_cap;
    char peer[64];
    bool busy;    /* a request is being answered (read on a worker, or answer queued) */
    bool writing; /* an answer is queued and not yet taken by the kernel */
    bool closing; /* close once the answer is written */
    bool closed;
    bool reading;
    bool probe_only; /* beyond max_conns: answers /healthz and /readyz, once */
    bool snap;       /* its read is a snapshot, counted in srv->n_snapshots until answered */
    int open;        /* handles not closed yet + work in flight */
};

/* One answer being written: the head here, the body as built (never copied). */
struct wreq {
    uv_write_t w;
    struct conn *c;
    struct http_response body; /* body, len and release of the answer */
    uint64_t bytes;            /* counted in srv->queued until written */
    bool close_after;
    bool snap; /* a snapshot answer, counted in srv->n_snapshots until written */
    char head[512];
};

/* A uv_buf_t holds a size_t length on Unix: an answer over 4 GiB is one buffer, not truncated
 * (uv_buf_init takes an unsigned int). */
_Static_assert(sizeof(((uv_buf_t *)0)->len) == sizeof(size_t), "uv_buf_t.len is a size_t");

static void queued_add(struct http_server *s, uint64_t add, uint64_t sub)
{
    s->queued = s->queued + add - sub;
    http_metric_set(s->m_queued, NULL, (double)s->queued);
}

static void snap_done(struct http_server *s, bool *snap)
{
    if (*snap)
        s->n_snapshots--;
    *snap = false;
}

static void conn_release(struct conn *c)
{
    if (--c->open > 0)
        return;
    struct http_server *s = c->srv;
    snap_done(s, &c->snap);
    reqp_free(&c->rp);
    free(c->in);
    free(c);
    s->pending--;
    if (s->stopping && s->pending == 0)
        server_free(s);
}

static void on_closed(uv_handle_t *h)
{
    conn_release(h->data);
}

static void conn_close(struct conn *c)
{
    if (c->closed)
        return;
    c->closed = true;
    *c->pprev = c->next;
    if (c->next)
        c->next->pprev = c->pprev;
    c->srv->n_conns--;
    if (c->probe_only)
        c->srv->n_probe--;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void conn_drain(struct conn *c);

static void on_written(uv_write_t *w, int status)
{
    struct wreq *wr = (struct wreq *)w;
    struct conn *c = wr->c;
    http_response_release(&wr->body);
    queued_add(c->srv, 0, wr->bytes);
    snap_done(c->srv, &wr->snap);
    bool close_after = wr->close_after;
    free(wr);
    if (!c->closed) {
        c->writing = false;
        if (status < 0 || close_after) {
            conn_close(c);
        } else {
            c->busy = false;
            reqp_reset(&c->rp);
            uv_timer_again(&c->timer); /* back to the request/idle timeout */
            conn_drain(c);
        }
    }
    conn_release(c);
}

static void on_timeout(uv_timer_t *t);

/* Replaces an answer by a 503 that sheds load: the client may retry after HTTP_RETRY_AFTER. */
static void resp_shed(struct http_response *resp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void resp_shed(struct http_response *resp, const char *fmt, ...)
{
    http_response_release(resp);
    memset(resp, 0, sizeof(*resp));
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    http__resp_error(resp, 503, "%s", msg);
    resp->retry_after = HTTP_RETRY_AFTER;
}

/* The 503 of a spent answer budget (--http-max-queued). */
static void shed_budget(const struct http_server *s, struct http_response *resp)
{
    resp_shed(resp,
              "overloaded: %llu bytes of answers wait for clients to read them (budget %llu "
              "bytes, --http-max-queued); retry later",
              (unsigned long long)s->queued, (unsigned long long)s->lim.max_queued);
}

/* The limits on one answer: max_output on the connection, max_queued on them all. */
static void resp_limit(struct http_server *s, struct http_response *resp, size_t head)
{
    if (resp->len > s->lim.max_output && !resp->unlimited) {
        size_t len = resp->len;
        http_response_release(resp);
        memset(resp, 0, sizeof(*resp));
        http__resp_error(
            resp, 500,
            "the answer (%zu bytes) is larger than this server sends on one connection "
            "(%u bytes, --http-max-output): page with limit and continue",
            len, s->lim.max_output);
    }
    uint64_t total = (uint64_t)head + resp->len;
    if (resp->len > HTTP_SMALL_ANSWER && !resp->monitoring && s->queued > 0 &&
        s->queued + total > s->lim.max_queued)
        shed_budget(s, resp);
}

static int resp_head(const struct http_response *resp, bool close, char *head, size_t n)
{
    char retry[48] = "";
    if (resp->retry_after > 0)
        snprintf(retry, sizeof(retry), "Retry-After: %d\r\n", resp->retry_after);
    return snprintf(head, n,
                    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                    "Cache-Control: no-store\r\n%s%s%s%s%s%sConnection: %s\r\n\r\n",
                    resp->status, reason(resp->status),
                    resp->content_type ? resp->content_type : "application/json", resp->len,
                    resp->allow ? "Allow: " : "", resp->allow ? resp->allow : "",
                    resp->allow ? "\r\n" : "",
                    resp->status == 401 ? "WWW-Authenticate: Bearer realm=\"gangsched\"" : "",
                    resp->status == 401 ? "\r\n" : "", retry, close ? "close" : "keep-alive");
}

/* Queues one answer; takes resp->body (released here, set NULL) and the connection's snapshot
 * count (released once the answer is written or dropped). */
static void conn_send(struct conn *c, struct http_response *resp, const char *method, bool close)
{
    struct http_server *s = c->srv;
    bool snap = c->snap;
    c->snap = false;
    struct wreq *wr = c->closed ? NULL : calloc(1, sizeof(*wr));
    if (!wr) { /* closed (the answer is dropped), or out of memory */
        count_request(s, method, c->closed ? resp->status : 500);
        http_response_release(resp);
        snap_done(s, &snap);
        conn_close(c);
        return;
    }
    resp_limit(s, resp, sizeof(wr->head));
    count_request(s, method, resp->status);
    int hn = resp_head(resp, close, wr->head, sizeof(wr->head));
    if (hn < 0 || (size_t)hn >= sizeof(wr->head)) /* cannot happen: the fields are short */
        hn = (int)strlen(wr->head);
    wr->c = c;
    wr->body = *resp;
    memset(resp, 0, sizeof(*resp)); /* the body is the write's now */
    wr->bytes = (uint64_t)hn + wr->body.len;
    wr->close_after = close;
    wr->snap = snap;
    c->busy = true;
    c->open++;
    uv_buf_t b[2] = {uv_buf_init(wr->head, (unsigned)hn)};
    b[1].base = wr->body.body;
    b[1].len = wr->body.len;
    queued_add(s, wr->bytes, 0);
    if (uv_write(&wr->w, (uv_stream_t *)&c->tcp, b, wr->body.len ? 2 : 1, on_written) != 0) {
        http_response_release(&wr->body);
        queued_add(s, 0, wr->bytes);
        snap_done(s, &wr->snap);
        free(wr);
        c->open--;
        conn_close(c);
        return;
    }
    /* The client has write_timeout_ms to take the answer; then the idle/request timeout. */
    c->writing = true;
    uint32_t idle = c->probe_only ? HTTP_PROBE_TIMEOUT : s->lim.timeout_ms;
    uv_timer_start(&c->timer, on_timeout, s->lim.write_timeout_ms, idle);
}

static void send_error(struct conn *c, int status, const char *msg)
{
    struct http_response resp = {0};
    http__resp_error(&resp, status, "%s", msg);
    if (status == 503) /* too many connections, or no room to queue the read */
        resp.retry_after = HTTP_RETRY_AFTER;
    conn_send(c, &resp, "unknown", true);
}

static void work_run(uv_work_t *req)
{
    struct http_work *w = req->data;
    http__request_try(w->srv, w, &w->resp);
}

static void work_done(uv_work_t *req, int status);

/* Queues a read on a worker, or (a large read while another is built) behind it on the loop.
 * 0, or uv_queue_work's error (nothing queued). */
static int read_start(struct http_server *s, struct http_work *w)
{
    bool big = http__big_read(w);
    if (big && s->big_running) {
        w->next_big = NULL;
        if (s->big_tail)
            s->big_tail->next_big = w;
        else
            s->big_head = w;
        s->big_tail = w;
        atomic_fetch_add(&s->big_waiting, 1);
        return 0;
    }
    int rc = uv_queue_work(s->loop, &w->req, work_run, work_done);
    w->in_line = big && rc == 0;
    s->big_running |= w->in_line;
    return rc;
}

/* Whether the client of a waiting read is gone: its side of the connection closed (EOF) or
 * broken. Reading stops while a request is answered, so on_read has not seen it: peeked here. A
 * client that only shut down its writing side looks gone too (as to nginx). */
static bool client_gone(struct conn *c)
{
    uv_os_fd_t fd;
    if (c->closed || uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0)
        return true;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void read_end(struct http_work *w, int status);

/* The large read being built ended: the next waiting one is queued; while the server stops, or
 * when it cannot be queued, a waiting one ends without being built (503), and one whose client
 * is gone ends unbuilt too (its answer would be dropped). Called while the ended read still
 * holds its connection (the server cannot be freed meanwhile). */
static void big_next(struct http_server *s)
{
    s->big_running = false;
    while (s->big_head && !s->big_running) {
        struct http_work *w = s->big_head;
        s->big_head = w->next_big;
        if (!s->big_head)
            s->big_tail = NULL;
        atomic_fetch_sub(&s->big_waiting, 1);
        if (!s->stopping && client_gone(w->conn)) {
            read_end(w, UV_ECONNRESET);
        } else if (s->stopping || read_start(s, w) != 0) {
            read_end(w, UV_ECANCELED);
        }
    }
}

static void work_done(uv_work_t *req, int status)
{
    struct http_work *w = req->data;
    struct http_server *s = w->srv;
    if (w->in_line) {
        w->in_line = false;
        big_next(s);
    }
    if (status == 0 && w->again) { /* a whole list found large: into the large reads' line */
        w->again = false;
        if (!s->stopping && read_start(s, w) == 0)
            return;
        status = UV_ECANCELED;
    }
    read_end(w, status);
}

/* A read's answer sent (status != 0: it did not run), its connection released. */
static void read_end(struct http_work *w, int status)
{
    struct conn *c = w->conn;
    w->srv->n_reads--;
    if (status != 0) {
        http_response_release(&w->resp);
        memset(&w->resp, 0, sizeof(w->resp));
        http__resp_error(&w->resp, 503, "%s",
                         w->srv->stopping          ? "the server is stopping"
                         : status == UV_ECONNRESET ? "the client closed its connection first"
                                                   : "cannot queue the request");
        w->resp.retry_after = w->srv->stopping || status == UV_ECONNRESET ? 0 : HTTP_RETRY_AFTER;
    }
    if (w->v == V_METRICS)
        render_live(w->srv, &w->resp);
    bool close = !c->rp.keep_alive || w->srv->stopping || c->probe_only || status == UV_ECONNRESET;
    conn_send(c, &w->resp, w->method, close);
    http_work_free(w);
    conn_release(c);
}

/* Whether a request target is one of the probe routes (path /healthz or /readyz). */
static bool is_probe(const char *url)
{
    size_t n = strcspn(url, "?#");
    return (n == 8 && strncmp(url, "/healthz", 8) == 0) ||
           (n == 7 && strncmp(url, "/readyz", 7) == 0);
}

/* Whether a read is shed before it runs (resp: the 503): the answers queued fill the budget,
 * or it is a snapshot and max_snapshots are being built or sent. */
static bool read_shed(struct http_server *s, const struct http_work *w, struct http_response *resp)
{
    memset(resp, 0, sizeof(*resp));
    if (s->queued >= s->lim.max_queued && w->v != V_METRICS) /* scrapes go on (monitoring) */
        shed_budget(s, resp);
    else if (w->v == V_SNAPSHOT && s->n_snapshots >= s->lim.max_snapshots)
        resp_shed(resp,
                  "overloaded: %u store snapshots are being sent (at most %u at once, "
                  "--http-max-snapshots); retry later",
                  s->n_snapshots, s->lim.max_snapshots);
    else
        return false;
    return true;
}

static void dispatch(struct conn *c)
{
    struct http_request q;
    reqp_fill_request(&c->rp, &q, c->peer);
    if (c->probe_only && !is_probe(q.url)) {
        struct http_response resp = {0};
        http__resp_error(&resp, 503,
                         "too many connections: this one answers only /healthz and /readyz");
        conn_send(c, &resp, q.method, true);
        return;
    }
    struct http_response resp;
    struct http_work *w = NULL;
    if (http_route(c->srv, &q, &resp, &w) == 1) {
        if (read_shed(c->srv, w, &resp)) {
            http_work_free(w);
            conn_send(c, &resp, q.method, !c->rp.keep_alive || c->probe_only);
            return;
        }
        c->snap = w->v == V_SNAPSHOT;
        c->srv->n_snapshots += c->snap;
        w->conn = c;
        w->srv = c->srv;
        snprintf(w->method, sizeof(w->method), "%s", q.method);
        w->req.data = w;
        c->busy = true;
        c->open++;
        if (read_start(c->srv, w) != 0) {
            c->open--;
            http_work_free(w);
            c->busy = false;
            send_error(c, 503, "cannot queue the request");
            return;
        }
        c->srv->n_reads++;
        return;
    }
    conn_send(c, &resp, q.method, !c->rp.keep_alive || c->probe_only);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    (void)suggested;
    if (c->in_cap - c->in_len < IN_MIN / 4 && c->in_cap < IN_CAP) {
        size_t nc = c->in_cap ? c->in_cap * 2 : IN_MIN;
        if (nc > IN_CAP)
            nc = IN_CAP;
        char *b = realloc(c->in, nc);
        if (b) {
            c->in = b;
            c->in_cap = nc;
        }
    }
    /* a zero-length buffer makes libuv report UV_ENOBUFS: the connection is closed */
    *buf = uv_buf_init(c->in ? c->in + c->in_len : NULL, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = st->data;
    (void)buf;
    if (n < 0) {
        if (!c->busy)
            conn_close(c);
        else
            c->closing = true;
        return;
    }
    c->in_len += (size_t)n;
    conn_drain(c);
}

/* Parses buffered bytes while no request is being answered. */
static void conn_drain(struct conn *c)
{
    while (!c->busy && !c->closed && c->in_len > 0) {
        size_t used = reqp_feed(&c->rp, c->in, c->in_len);
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        if (c->rp.error) {
            int st = c->rp.error;
            send_error(c, st,
                       st == 413   ? "request body larger than 65536 bytes"
                       : st == 431 ? "request line and headers larger than 16384 bytes"
                                   : "malformed HTTP request");
            return;
        }
        if (c->rp.complete) {
            dispatch(c);
            continue;
        }
        if (used == 0)
            break;
    }
    if (c->closed)
        return;
    if (c->closing && !c->busy) {
        conn_close(c);
        return;
    }
    if (c->in_len == 0 && c->in) { /* an idle connection keeps no input buffer */
        free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    }
    bool want = !c->busy && c->in_len < IN_CAP;
    if (want && !c->reading)
        c->reading = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0;
    else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    if (c->writing) { /* the client does not read its answer */
        conn_close(c);
        return;
    }
    if (c->busy) /* a read on a worker: bounded by the server, not the client */
        return;
    if (c->in_len > 0 || c->rp.header_bytes > 0)
        send_error(c, 408, "request not received in time");
    else
        conn_close(c);
}

static void refuse_connection(struct http_server *s);

static void on_spare_closed(uv_handle_t *h)
{
    struct http_server *s = h->data;
    s->spare_busy = false;
    s->pending--;
    if (s->stopping) {
        if (s->pending == 0)
            server_free(s);
        return;
    }
    if (s->accept_stalled) { /* the connection that found the spare busy: close it now */
        s->accept_stalled = false;
        refuse_connection(s);
    }
}

/* No memory for a connection: it is accepted on the spare handle and closed at once. Left
 * unaccepted, libuv would stop polling the listener for good (every later client would hang).
 * While the spare closes, a second such connection waits unaccepted (libuv stops polling the
 * listener) and is accepted and closed once the spare is closed (libuv then polls again). */
static void refuse_connection(struct http_server *s)
{
    if (s->spare_busy) {
        s->accept_stalled = true;
        return;
    }
    s->refused++;
    uv_tcp_init(s->loop, &s->spare);
    s->spare.data = s;
    s->spare_busy = true;
    s->pending++;
    (void)uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&s->spare);
    uv_close((uv_handle_t *)&s->spare, on_spare_closed);
}

static void on_connection(uv_stream_t *ls, int status)
{
    struct http_server *s = ls->data;
    if (status < 0 || s->stopping)
        return;
    struct conn *c = NULL;
    if (s->test_fail_conns > 0)
        s->test_fail_conns--;
    else
        c = calloc(1, sizeof(*c));
    if (!c) {
        refuse_connection(s);
        return;
    }
    c->srv = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open = 2;
    s->pending++;
    c->next = s->conns;
    if (s->conns)
        s->conns->pprev = &c->next;
    c->pprev = &s->conns;
    s->conns = c;
    s->n_conns++;
    reqp_reset(&c->rp);
    if (uv_accept(ls, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    /* A fixed send buffer (the kernel's autotuning grows it to megabytes): a client that sends
     * requests and never reads its answers fills it after HTTP_SNDBUF bytes, the answers then
     * queue in user space under the output limit and the write timeout, instead of the server
     * spending a core writing megabytes into every such socket (docs/api.md "Limits"). */
    int sndbuf = HTTP_SNDBUF;
    (void)uv_send_buffer_size((uv_handle_t *)&c->tcp, &sndbuf);
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    snprintf(c->peer, sizeof(c->peer), "unknown");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        char ip[48] = "";
        if (ss.ss_family == AF_INET6)
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip));
        else
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
        snprintf(c->peer, sizeof(c->peer), "%s", ip);
    }
    uint32_t served = s->n_conns - 1 - s->n_probe; /* before this one */
    if (served >= s->lim.max_conns) {
        if (s->n_probe >= s->lim.probe_conns) {
            uv_timer_start(&c->timer, on_timeout, s->lim.timeout_ms, s->lim.timeout_ms);
            send_error(c, 503, "too many connections");
            return;
        }
        c->probe_only = true;
        s->n_probe++;
    }
    uint32_t t = c->probe_only ? HTTP_PROBE_TIMEOUT : s->lim.timeout_ms;
    uv_timer_start(&c->timer, on_timeout, t, t);
    conn_drain(c);
}

static void on_listener_closed(uv_handle_t *h)
{
    struct http_server *s = h->data;
    s->pending--;
    if (s->stopping && s->pending == 0)
        server_free(s);
}

int http_server_start(uv_loop_t *loop, const struct http_opts *o, const struct http_provider *p,
                      struct http_server **out, struct sched_errbuf *eb)
{
    if (!o || !o->listen || !p)
        return sched_fail(eb, SCHED_EINVAL, "http server: no listen address");
    char host[256];
    const char *colon = strrchr(o->listen, ':');
    if (!colon || (size_t)(colon - o->listen) >= sizeof(host) || !colon[1])
        return sched_fail(eb, SCHED_EINVAL, "http server: listen address '%s' is not HOST:PORT",
                          o->listen);
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return sched_fail(eb, SCHED_EINVAL, "http server: bad port in '%s'", o->listen);
    memcpy(host, o->listen, (size_t)(colon - o->listen));
    host[colon - o->listen] = 0;
    struct sockaddr_storage addr;
    int rc;
    if (host[0] == '[' && strlen(host) > 2 && host[strlen(host) - 1] == ']') {
        host[strlen(host) - 1] = 0;
        rc = uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)&addr);
    } else {
        rc = uv_ip4_addr(host, (int)port, (struct sockaddr_in *)&addr);
    }
    if (rc != 0)
        return sched_fail(eb, SCHED_EINVAL, "http server: bad address in '%s'", o->listen);
    struct http_server *s = NULL;
    int err = http_server_new_detached(o, p, &s, eb);
    if (err)
        return err;
    s->loop = loop;
    /* room for every connection the limits allow, plus the program's own files */
    struct rlimit rl;
    rlim_t want = (rlim_t)s->lim.max_conns + s->lim.probe_conns + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->pending = 1;
    rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
    if (rc != 0) {
        sched_fail(eb, SCHED_EIO, "http server: cannot listen on %s: %s", o->listen,
                   uv_strerror(rc));
        s->stopping = true;
        uv_close((uv_handle_t *)&s->listener, on_listener_closed);
        return SCHED_EIO;
    }
    struct sockaddr_storage bound;
    int blen = sizeof(bound);
    if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen) == 0)
        s->port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                              : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    s->listening = true;
    *out = s;
    return 0;
}

void http_server_stop(struct http_server *s)
{
    if (!s || s->stopping)
        return;
    s->stopping = true;
    while (s->conns) {
        struct conn *c = s->conns;
        conn_close(c);
    }
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
}

int http_server_write_port(const struct http_server *s, const char *path, struct sched_errbuf *eb)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return sched_fail(eb, SCHED_EINVAL, "port file %s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", http_server_port(s)) < 0 || fclose(f) != 0 ||
        rename(tmp, path) != 0) {
        if (f)
            remove(tmp);
        return sched_fail(eb, SCHED_EIO, "cannot write the port file %s", path);
    }
    return 0;
}
