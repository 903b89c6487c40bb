/* sched/http/server.h: the scheduler's HTTP API (docs/api.md) on a libuv loop: the read routes
 * (the views of store/views.h), the operator writes, /healthz, /readyz and /metrics.
 *
 * Owns: the listening socket and its connections (keep-alive, limits, timeouts), request
 * parsing (the http-parser library; never a hand-written parser), routing, bearer-token
 * authorisation, the JSON answers and errors, and one read-only store connection used by
 * libuv's worker threads (reads never run on the loop: the API never blocks scheduling).
 * Must not touch: scheduling, the store's content (reads only; writes go to the provider), the
 * embedding program's loop beyond its own handles.
 *
 * Embedding (the daemon, `gangsched serve`):
 *   struct http_provider p = {.ctx = d, .store_path = "state.db", .ready = ready_fn,
 *                             .metrics = d->metrics, .store_metrics = true, .write = write_fn};
 *   struct http_opts o = {.listen = "0.0.0.0:8080", .write_token_file = "/var/run/secrets/..."};
 *   http_server_start(loop, &o, &p, &srv, &eb);  ... http_server_stop(srv);
 * Every callback runs on the loop thread. Errors: 0 or a negative SCHED_E* code with a message.
 */
#ifndef SCHED_HTTP_SERVER_H
#define SCHED_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "sched/core/err.h"
#include "sched/http/metrics.h"
#include "store/store.h"

#define HTTP_MAX_HEADER_BYTES  (16u << 10) /* request line and headers: more is 431 */
#define HTTP_MAX_BODY_BYTES    (64u << 10) /* body: more is 413 */
#define HTTP_DEFAULT_CONNS     4096
#define HTTP_DEFAULT_PROBES    16          /* connections kept for /healthz and /readyz */
#define HTTP_DEFAULT_TIMEOUT   10000       /* ms a connection may take to send one request */
#define HTTP_DEFAULT_WTIMEOUT  10000       /* ms a client may take to take one answer */
#define HTTP_DEFAULT_OUTPUT    (8u << 20)  /* bytes: the largest answer queued on one connection */
#define HTTP_PROBE_TIMEOUT     2000        /* ms: the request timeout of a probe-only connection */
#define HTTP_MAX_PAGE          10000       /* list routes: the largest ?limit= */
#define HTTP_SNDBUF            (256 << 10) /* bytes: a connection's kernel send buffer */
#define HTTP_DEFAULT_QUEUED    (256ull << 20) /* bytes: answers queued on all connections at once */
#define HTTP_DEFAULT_SNAPSHOTS 2    /* /v1/store/snapshot answers built or queued at once */
#define HTTP_SMALL_ANSWER      4096 /* bytes: an answer this small is never shed */
#define HTTP_RETRY_AFTER       1    /* s: the Retry-After of an answer shed for load */

/* Limits that bound what clients, hostile or slow, can hold (docs/api.md "Limits"). Each 0
 * field takes its default. */
struct http_limits {
    uint32_t max_conns;        /* connections served; HTTP_DEFAULT_CONNS (the soft limit on open
                                  files is raised toward it, up to the hard limit) */
    uint32_t probe_conns;      /* more connections, beyond max_conns, that answer only /healthz
                                  and /readyz (one request each); HTTP_DEFAULT_PROBES */
    uint32_t timeout_ms;       /* a request must arrive within it (408); an idle keep-alive
                                  connection is closed after it; HTTP_DEFAULT_TIMEOUT */
    uint32_t write_timeout_ms; /* an answer not taken by the client within it closes the
                                  connection; HTTP_DEFAULT_WTIMEOUT */
    uint32_t max_output;       /* bytes: a larger answer is refused (500, "page with limit and
                                  continue"); HTTP_DEFAULT_OUTPUT */
    uint64_t max_queued;       /* bytes: answers queued on every connection together (built, not
                                  yet taken by the kernel); past it reads are shed (503 with
                                  Retry-After), answers of HTTP_SMALL_ANSWER bytes or less never;
                                  one answer is sent when nothing else is queued even if larger
                                  (a store snapshot over the budget); HTTP_DEFAULT_QUEUED */
    uint32_t max_snapshots;    /* /v1/store/snapshot answers being built or queued at once; more
                                  are shed (503); HTTP_DEFAULT_SNAPSHOTS */
};

struct http_opts {
    const char *listen;           /* "HOST:PORT" (IPv4 or [IPv6]); port 0 picks a free one */
    const char *write_token_file; /* bearer token for writes, re-read when the file changes;
                                     NULL: writes are refused (403) */
    const char *read_token_file;  /* NULL: reads need no token; else reads need this token or
                                     the write token */
    struct http_limits limits;
};

/* One operator write, validated by the server (kind, target); detail is the request's JSON
 * text for reserve ({"job":..., "nodes":[...]}), actor the client's address. */
struct http_write {
    enum store_action_kind kind;
    const char *target; /* queue, job ("NS/NAME"), or reservation id */
    const char *detail;
    const char *actor;
};

struct http_provider {
    void *ctx;
    /* The database the read routes show (opened STORE_READONLY by a worker thread, kept
     * open); NULL: the read routes answer 503. */
    const char *store_path;
    /* Readiness for /readyz (caches synced; the leader holds its Lease); NULL: always ready.
     * On false, `why` (n bytes) says what is missing. */
    bool (*ready)(void *ctx, char *why, size_t n);
    /* Live families rendered on /metrics after the server's own; NULL: none. */
    struct http_metrics *metrics;
    /* Also render the families derived from the store (http_store_metrics), in a worker. */
    bool store_metrics;
    /* Unused: every read queries the database (per route, on a read-only connection), so it
     * always shows the last commit. Kept so that `serve --max-stale` is still accepted. */
    uint32_t max_stale_ms;
    /* Whether this process leads (the daemon); NULL: always. Only a leader serves
     * /v1/store/snapshot (a standby answers 503), so that a standby following the Service's
     * address never copies another standby's file. */
    bool (*leading)(void *ctx);
    /* An operator write. Returns 0 with *result (a JSON object: "action", "message"; the server
     * answers 202 with it), or SCHED_ENOENT (404: unknown queue, job or reservation),
     * SCHED_EINVAL (400), another code (500), with a message in eb. NULL: writes answer 501. */
    int (*write)(void *ctx, const struct http_write *w, cJSON **result, struct sched_errbuf *eb);
};

struct http_server;

int http_server_start(uv_loop_t *loop, const struct http_opts *o, const struct http_provider *p,
                      struct http_server **out, struct sched_errbuf *eb);
/* The bound port (useful with port 0). */
int http_server_port(const struct http_server *s);
/* Writes the bound port to `path` atomically (a temporary file renamed), for tests that start
 * a server on port 0. */
int http_server_write_port(const struct http_server *s, const char *path, struct sched_errbuf *eb);
/* Closes the listener and every connection; the memory is freed once libuv has closed the
 * handles and finished the server's work (run the loop until it has). NULL is a no-op. */
void http_server_stop(struct http_server *s);

/* For tests: connections open now (probe-only ones included), and reads queued on workers. */
unsigned http_server_conns(const struct http_server *s);
unsigned http_server_reads_in_flight(const struct http_server *s);
/* Bytes of answers queued on the connections now (built, not yet taken by the kernel; the
 * gauge gangsched_http_queued_bytes), and /v1/store/snapshot answers built or queued now. */
uint64_t http_server_queued_bytes(const struct http_server *s);
unsigned http_server_snapshots(const struct http_server *s);
/* For tests: the next n connections find no memory (they are accepted and closed), and how
 * many connections were closed so. */
void http_server_test_fail_conns(struct http_server *s, unsigned n);
unsigned http_server_refused(const struct http_server *s);
/* For tests: how many reads the server ran against the database, and how many JSON documents
 * they built (a whole list found large is counted, not built, before its run in the line). */
unsigned long long http_server_loads(struct http_server *s);
unsigned long long http_server_docs_built(struct http_server *s);

/* ---- the request path without sockets (unit tests and the fuzz harness) ---------------------- */

/* A parsed request. */
struct http_request {
    const char *method; /* "GET", ... */
    const char *url;    /* as sent */
    const char *auth;   /* Authorization header value, or NULL */
    const char *body;
    size_t body_len;
    const char *peer; /* client address, for the actor of writes */
};

/* An answer. */
struct http_response {
    int status;
    const char *content_type;
    char *body; /* malloc'd, or freed by `release` (http_response_release frees either way) */
    size_t len;
    const char *allow; /* 405: the Allow header */
    bool unlimited;    /* exempt from max_output (the store snapshot: bounded by the file) */
    bool monitoring;   /* exempt from max_queued (/metrics: a scrape must work in an overload,
                        * the time it is needed; its size is bounded by the series, not by
                        * what a client asks) */
    int retry_after;   /* s: a Retry-After header (503 shed for load); 0: none */
    void (*release)(void *body); /* frees body when it is not malloc'd (the snapshot's image) */
};
/* Frees resp->body (by its release function, else free) and sets it NULL. */
void http_response_release(struct http_response *resp);

/* Routes and authorises one request. Returns 1 when the answer needs a store read (the server
 * queues it on a worker; *work receives an opaque job for http_request_work/http_work_free),
 * 0 when `resp` holds the answer. */
struct http_work;
int http_route(struct http_server *s, const struct http_request *r, struct http_response *resp,
               struct http_work **work);
/* Runs a queued read (in a worker thread, or directly in tests) and fills resp. */
void http_request_work(struct http_server *s, struct http_work *w, struct http_response *resp);
void http_work_free(struct http_work *w);

/* Feeds raw bytes through a fresh request parser and the router, as a connection would (reads
 * run inline); returns the status of the first answer, 0 when the bytes hold no whole request.
 * For the fuzz harness and tests; `s` from http_server_new_detached. */
int http_feed_raw(struct http_server *s, const char *data, size_t len);
/* A server without a loop or socket, for http_route and http_feed_raw. */
int http_server_new_detached(const struct http_opts *o, const struct http_provider *p,
                             struct http_server **out, struct sched_errbuf *eb);
void http_server_free_detached(struct http_server *s);

/* Fills `m` with the families derived from a store (store_metrics.c): admission wait-time histogram
 * per queue, admitted/evicted/preempted counters, quota usage and share gauges, GPU-hours lost to
 * preemption (docs/metrics.md). */
int http_store_metrics(struct store *st, struct http_metrics *m, struct sched_errbuf *eb);

/* `gangsched serve` (sched/http/serve.c; its flags: sched/cmd/gangsched.c): the API over the
 * database db until SIGINT or SIGTERM. */
struct http_serve_opts {
    const char *db;        /* required */
    const char *port_file; /* the bound port is written there, or NULL */
    uint32_t max_stale_ms; /* answers from the tables as loaded up to this long after a commit */
    struct http_opts http;
};
/* Returns the exit code: 0, 1 runtime error. */
int http_serve(const struct http_serve_opts *o);

#endif
