/* sched/kube/client_int.h: what the two halves of the API client share (client.c: transfers,
 * client_queue.c: the queue and the write gate); not for informer.c, lease.c or anyone else
 * (they use client.h and wire.h).
 *
 * Owns: struct kube_req and struct kube_client, and the few calls each half makes into the other.
 * Must not touch: anything outside sched/kube/client*.c.
 */
#ifndef SCHED_KUBE_CLIENT_INT_H
#define SCHED_KUBE_CLIENT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>
#include <uv.h>

#include "sched/core/strmap.h"
#include "sched/kube/client.h"
#include "sched/kube/wire.h"

struct kube_req {
    struct kube_req *prev, *next; /* in c->pending or c->active */
    struct kube_client *c;
    enum kube_method m;
    char *path, *body;
    size_t blen;
    unsigned flags;
    kube_resp_fn *fn;
    kube_data_fn *data; /* streams only */
    void *ctx;
    bool stream, on_wire, cancelled, auth_retried, status_known, streaming, too_big;
    CURL *easy;
    struct curl_slist *hdrs;
    char errbuf[CURL_ERROR_SIZE];
    char *buf;
    size_t len, cap;
    uint32_t attempts, retries;
    uint64_t not_before; /* loop time (ms) before which the next attempt must not start */
    uint64_t queued_ms;  /* loop time (ms) it was last queued (kclient_pending_push) */
    uint32_t timeout_ms; /* whole transfer, per attempt; 0: the client's timeout_ms */
    uint64_t sent_ms;    /* loop time (ms) this attempt was put on the wire */
};

struct req_list {
    struct kube_req *head, *tail;
    uint32_t n;
};

/* One socket curl watches: one connection (over HTTP/2, every stream multiplexed on it). */
struct kpoll {
    uv_poll_t h;
    struct kpoll *prev, *next;
    struct kube_client *c;
    curl_socket_t s;
    uint64_t rx_ms; /* loop time (ms) it was last readable (any byte: data, PING, SETTINGS), or
                       was first watched */
};

/* An overdue KUBE_LOW request takes at most one start in this many (client_queue.c). */
#define KCLIENT_LOW_SHARE 10
/* Easy handles of ended attempts kept, reset, for the next attempts. */
#define KCLIENT_SPARE     16

struct kube_client {
    uv_loop_t *loop;
    CURLM *multi;
    /* easy handles of ended attempts, reset (curl_easy_reset), for the next ones: a handle made
     * and cleaned up per attempt was a tenth of the CPU of a daemon draining status writes */
    CURL *spare[KCLIENT_SPARE];
    uint32_t n_spare;
    uv_timer_t curl_timer, pump_timer;
    char *base; /* URL prefix: the server, or https://TLS-SERVER-NAME:PORT with connect_to */
    bool https;
    struct curl_slist *connect_to;
    char *ca_file, *ca_pem, *cert_file, *cert_pem, *key_file, *key_pem;
    char *token, *token_file;
    char *proxy_url;         /* kube_auth's, else the environment's (kube_proxy_for); NULL: none */
    struct kube_exec *exec;  /* a credential plugin (client.h), or NULL */
    int64_t exec_expires_ms; /* when its credential expires (ms since the epoch; 0: never) */
    struct kube_exec_job *exec_job; /* the plugin running again, or NULL: no request starts */
    bool insecure;
    uint64_t token_read_ms;
    bool token_read;
    char *user_agent;
    double qps;
    uint32_t burst, max_inflight, max_retries;
    int64_t timeout_ms;
    uint64_t watch_idle_ms; /* see kube_client_opts */
    double bucket;
    uint64_t bucket_ms;
    /* queued requests: KUBE_LOW ones in pending_low, started only when nothing of pending
     * can start; the others in pending */
    struct req_list pending, pending_low, active;
    struct strmap low_by_path; /* path -> the newest request of pending_low for it */
    uint32_t pending_special;  /* streams and KUBE_NO_LIMIT requests in `pending` */
    int64_t low_max_wait_ms;   /* kube_client_opts.low_max_wait_ms (< 0: no bound) */
    uint32_t since_low;        /* ordinary requests started since the last KUBE_LOW one */
    uint32_t inflight;         /* active non-stream requests */
    bool (*gate)(void *ctx);   /* gated requests (req_gated) start only while it says true */
    void *gate_ctx;
    uv_timer_t drain_timer;      /* kube_client_drain_writes' bound */
    void (*drain_fn)(void *ctx); /* set while draining: called once no write is left */
    void *drain_ctx;
    struct kube_client_stats stats;
    uint64_t rng;
    struct kpoll *polls;
    int depth;     /* nesting of loop callbacks of this client */
    int in_curl;   /* inside curl_multi_socket_action (curl callbacks may run) */
    bool dead;     /* kube_client_free was called */
    bool released; /* handles closed; freed when `closing` drops to 0 */
    int closing;
};

/* ---- client_queue.c ---- */

void kclient_list_push(struct req_list *l, struct kube_req *r);
void kclient_list_unlink(struct req_list *l, struct kube_req *r);
/* Back into the queue (a retry after its backoff, a 401 after the token was re-read). */
void kclient_pending_push(struct kube_client *c, struct kube_req *r);
/* Starts what the bucket, the in-flight limit, backoffs and the gate allow; never from inside a
 * curl callback (kclient_pump_soon arms the start timer instead). */
void kclient_pump(struct kube_client *c);
void kclient_pump_soon(struct kube_client *c);
/* Ends a kube_client_drain_writes once no gated request is left. */
void kclient_drain_check(struct kube_client *c);

/* ---- client.c ---- */

/* Whether requests must wait for the credential plugin: it is running again (started here when
 * its credential has expired); they start once it has answered. */
bool kclient_exec_hold(struct kube_client *c);

/* Puts one attempt of a request taken off the queue on the wire (or finishes it on failure). */
void kclient_start(struct kube_client *c, struct kube_req *r);
/* Takes an on-wire request off the multi handle (never from inside a curl callback). */
void kclient_req_detach(struct kube_client *c, struct kube_req *r);
void kclient_req_free(struct kube_req *r);
/* Brackets every loop callback of the client: a kube_client_free from inside one is finished when
 * the outermost returns. */
void kclient_enter(struct kube_client *c);
void kclient_leave(struct kube_client *c);

#endif
