/* sched/kube/client.c: the transfer half of the API client (see client.h; the queue half is
 * client_queue.c, what both share is client_int.h).
 *
 * Owns: the libcurl multi handle and its libuv glue (one uv_poll_t per socket, one uv_timer_t for
 * curl's timeout), each attempt's easy handle (URL, TLS and credential options, headers, body;
 * the handles of ended attempts are kept, reset, for the next ones),
 * the bearer token (re-read from token_file every 60 s and after a 401), receiving (buffered
 * bodies, streamed watch bodies), completion (retries with backoff, Status-object errors,
 * callbacks), the counters, creating and freeing the client, and abandoning a silent stream.
 * Must not touch: the queue's order, the bucket, the in-flight limit or the write gate (those are
 * client_queue.c's: an attempt is started only by kclient_start from its pump), JSON beyond the
 * Status object, informer or lease state, anything outside sched/kube.
 *
 * Re-entrancy: user callbacks may call any function here, kube_client_free included. Requests
 * are never started from inside a curl callback (kube_request only arms the start timer), a
 * cancelled request on the wire is removed from the multi handle by the start timer, and a free
 * from inside a callback is finished when the outermost loop callback of this client returns.
 */
#include "sched/kube/client.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <uv.h>

#include "sched/core/log.h"
#include "sched/kube/client_int.h"
#include "sched/kube/wire.h"

#ifndef GANGSCHED_VERSION
#define GANGSCHED_VERSION "0.1.0"
#endif

#define BACKOFF_BASE_MS    200
#define BACKOFF_CAP_MS     10000
#define RETRY_AFTER_CAP_MS 60000
#define TOKEN_REFRESH_MS   60000
#define MAX_BODY_BYTES     ((size_t)256 << 20)
#define CONNECT_TIMEOUT_MS 10000L

double kube_client_rand(struct kube_client *c)
{
    /* xorshift64*: jitter only, not cryptographic */
    uint64_t x = c->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    return (double)((x * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

uv_loop_t *kube_client_loop(struct kube_client *c)
{
    return c->loop;
}

struct kube_client_stats *kube_client_counters(struct kube_client *c)
{
    return &c->stats;
}

void kube_client_stats(const struct kube_client *c, struct kube_client_stats *out)
{
    *out = c->stats;
    out->inflight = c->inflight;
    out->queued = c->pending.n + c->pending_low.n;
}

void kube_client_opts_default(struct kube_client_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->qps = 50;
    o->burst = 100;
    o->max_inflight = 64;
    o->max_retries = 5;
    o->timeout_ms = 30000;
    o->watch_idle_ms = 150000;
    o->low_max_wait_ms = 5000;
}

static const char *method_name(enum kube_method m)
{
    switch (m) {
    case KUBE_GET:
        return "GET";
    case KUBE_POST:
        return "POST";
    case KUBE_PUT:
        return "PUT";
    case KUBE_DELETE:
        return "DELETE";
    case KUBE_PATCH_MERGE:
    case KUBE_PATCH_STRATEGIC:
    case KUBE_PATCH_JSON:
        return "PATCH";
    }
    return "GET";
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- token ----------------------------------------------------------------------------------- */

/* A run of the credential plugin ended: its credential replaces the previous one (a failure
 * keeps that), and the requests held meanwhile start. */
static void exec_done(void *ctx, int rc, struct kube_exec_cred *cr, const char *error)
{
    struct kube_client *c = ctx;
    c->exec_job = NULL;
    if (rc != 0) {
        LOG_WARN("kube", "credential plugin: keeping the previous credential: error=%s", error);
    } else {
        free(c->token);
        free(c->cert_pem);
        free(c->key_pem);
        c->token = cr->token;
        c->cert_pem = cr->cert_pem;
        c->key_pem = cr->key_pem;
        c->exec_expires_ms = cr->expires_ms;
        c->stats.exec_runs++;
    }
    kclient_pump_soon(c);
}

/* The credential plugin (client.h struct kube_exec) run again on the loop: once its credential
 * has expired, or forced (a 401), at most once a second. */
static void exec_refresh(struct kube_client *c, bool force)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    int64_t wall = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    uint64_t now = uv_now(c->loop);
    if (c->exec_job || (!force && (!c->exec_expires_ms || wall < c->exec_expires_ms)) ||
        (c->token_read && now - c->token_read_ms < 1000))
        return;
    c->token_read = true;
    c->token_read_ms = now;
    struct sched_errbuf eb;
    if (kube_exec_start(c->loop, c->exec, exec_done, c, &c->exec_job, &eb) != 0)
        LOG_WARN("kube", "credential plugin: keeping the previous credential: error=%s", eb.msg);
}

bool kclient_exec_hold(struct kube_client *c)
{
    if (c->exec)
        exec_refresh(c, false);
    return c->exec_job != NULL;
}

static void token_refresh(struct kube_client *c, bool force)
{
    if (c->exec) {
        exec_refresh(c, force);
        return;
    }
    if (!c->token_file)
        return;
    uint64_t now = uv_now(c->loop);
    if (c->token_read && !force && now - c->token_read_ms < TOKEN_REFRESH_MS)
        return;
    c->token_read = true;
    c->token_read_ms = now;
    FILE *f = fopen(c->token_file, "rb");
    char buf[16384];
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    if (!f || n == 0) {
        LOG_WARN("kube", "token file %s: cannot read or empty: keeping the previous token",
                 c->token_file);
        return;
    }
    if (c->token && !strcmp(c->token, buf))
        return;
    char *t = strdup(buf);
    if (t) {
        free(c->token);
        c->token = t;
    }
}

/* ---- curl <-> libuv -------------------------------------------------------------------------- */

void kclient_enter(struct kube_client *c)
{
    c->depth++;
}

static void release_client(struct kube_client *c);

void kclient_leave(struct kube_client *c)
{
    if (--c->depth == 0 && c->dead && !c->released)
        release_client(c);
}

static void maybe_final_free(struct kube_client *c)
{
    if (c->released && c->closing == 0)
        free(c);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct kube_client *c = h->data;
    c->closing--;
    maybe_final_free(c);
}

static void on_poll_closed(uv_handle_t *h)
{
    struct kpoll *p = (struct kpoll *)h;
    struct kube_client *c = p->c;
    free(p);
    c->closing--;
    maybe_final_free(c);
}

static void poll_close(struct kube_client *c, struct kpoll *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        c->polls = p->next;
    if (p->next)
        p->next->prev = p->prev;
    uv_poll_stop(&p->h);
    c->closing++;
    uv_close((uv_handle_t *)&p->h, on_poll_closed);
}

static void check_done(struct kube_client *c);

static void socket_action(struct kube_client *c, curl_socket_t s, int flags)
{
    int running = 0;
    c->in_curl++;
    curl_multi_socket_action(c->multi, s, flags, &running);
    c->in_curl--;
    check_done(c);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct kpoll *p = (struct kpoll *)h;
    struct kube_client *c = p->c;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE) {
        flags |= CURL_CSELECT_IN;
        p->rx_ms = uv_now(c->loop);
    }
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    kclient_enter(c);
    if (!c->dead)
        socket_action(c, p->s, flags);
    kclient_leave(c);
}

static int socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    struct kube_client *c = userp;
    struct kpoll *p = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (p) {
            poll_close(c, p);
            if (!c->released)
                curl_multi_assign(c->multi, s, NULL);
        }
        return 0;
    }
    if (!p) {
        p = calloc(1, sizeof(*p));
        if (!p)
            return -1;
        if (uv_poll_init_socket(c->loop, &p->h, s) != 0) {
            free(p);
            return -1;
        }
        p->c = c;
        p->s = s;
        p->rx_ms = uv_now(c->loop);
        p->next = c->polls;
        if (c->polls)
            c->polls->prev = p;
        c->polls = p;
        curl_multi_assign(c->multi, s, p);
    }
    int ev = 0;
    if (what & CURL_POLL_IN)
        ev |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        ev |= UV_WRITABLE;
    uv_poll_start(&p->h, ev, on_poll);
    return 0;
}

static void on_curl_timeout(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    kclient_enter(c);
    if (!c->dead)
        socket_action(c, CURL_SOCKET_TIMEOUT, 0);
    kclient_leave(c);
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    struct kube_client *c = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&c->curl_timer);
    else
        uv_timer_start(&c->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---- requests -------------------------------------------------------------------------------- */

void kclient_req_free(struct kube_req *r)
{
    if (r->easy)
        curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->hdrs);
    free(r->path);
    free(r->body);
    free(r->buf);
    free(r);
}

/* An easy handle off the multi handle: kept for the next attempt (its options reset), or
 * cleaned up when enough are kept or the client is going. */
static void easy_done(struct kube_client *c, CURL *e)
{
    if (!c->released && c->n_spare < KCLIENT_SPARE) {
        curl_easy_reset(e);
        c->spare[c->n_spare++] = e;
    } else {
        curl_easy_cleanup(e);
    }
}

/* Takes an on-wire request off the multi handle (never from inside a curl callback). */
void kclient_req_detach(struct kube_client *c, struct kube_req *r)
{
    curl_multi_remove_handle(c->multi, r->easy);
    easy_done(c, r->easy);
    r->easy = NULL;
    curl_slist_free_all(r->hdrs);
    r->hdrs = NULL;
    kclient_list_unlink(&c->active, r);
    r->on_wire = false;
    if (!r->stream)
        c->inflight--;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_req *r = userdata;
    size_t n = size * nmemb;
    if (r->cancelled || r->c->dead)
        return 0;
    r->c->stats.rx_ms = uv_now(r->c->loop);
    if (r->stream && !r->status_known) {
        long code = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
        r->status_known = true;
        r->streaming = code == 200;
    }
    if (r->streaming)
        return r->data(r->ctx, ptr, n) ? 0 : n;
    if (r->len + n + 1 > r->cap) {
        if (r->len + n + 1 > MAX_BODY_BYTES) {
            r->too_big = true;
            return 0;
        }
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *b = realloc(r->buf, cap);
        if (!b)
            return 0;
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, ptr, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return n;
}

static bool easy_setup(struct kube_client *c, struct kube_req *r)
{
    CURL *e = c->n_spare ? c->spare[--c->n_spare] : curl_easy_init();
    if (!e)
        return false;
    r->easy = e;
    size_t ul = strlen(c->base) + strlen(r->path) + 1;
    char *url = malloc(ul);
    if (!url)
        return false;
    snprintf(url, ul, "%s%s", c->base, r->path);
    bool ok = curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK;
    free(url); /* curl copies strings */
    r->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    /* over TLS a request waits to share the connection being opened (ALPN tells at the end of
     * the handshake whether it multiplexes; not waiting opened a second connection at every
     * start); plain HTTP is HTTP/1.1 (2TLS), which never multiplexes, and waiting there is only
     * harm: curl 7.88 decides only when another transfer's response comes, and a watch's never
     * ends (the informers' streaming lists, all opened at start, waited for the first one) */
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, c->https ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    if (!r->stream) {
        int64_t t = r->timeout_ms && r->timeout_ms < c->timeout_ms ? r->timeout_ms : c->timeout_ms;
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)t);
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    }
    if (c->connect_to)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
    /* the kubeconfig's proxy-url or the environment's, chosen as client-go chooses
     * (kube_proxy_for), "" none: curl reads neither the environment nor its no_proxy */
    curl_easy_setopt(e, CURLOPT_PROXY, c->proxy_url ? c->proxy_url : "");
    curl_easy_setopt(e, CURLOPT_NOPROXY, "");
    if (c->https) {
        if (c->ca_pem) {
            struct curl_blob b = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_NOCOPY};
            curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
        } else if (c->ca_file) {
            curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
        }
        if (c->cert_pem) {
            /* copied: a credential plugin may replace it while the request waits */
            struct curl_blob b = {c->cert_pem, strlen(c->cert_pem), CURL_BLOB_COPY};
            curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
            curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        } else if (c->cert_file) {
            curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
        }
        if (c->key_pem) {
            struct curl_blob b = {c->key_pem, strlen(c->key_pem), CURL_BLOB_COPY};
            curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
            curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        } else if (c->key_file) {
            curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
        }
        if (c->insecure) {
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
    }
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    static const char *const ctypes[] = {
        [KUBE_GET] = NULL,
        [KUBE_POST] = "Content-Type: application/json",
        [KUBE_PUT] = "Content-Type: application/json",
        [KUBE_DELETE] = "Content-Type: application/json",
        [KUBE_PATCH_MERGE] = "Content-Type: application/merge-patch+json",
        [KUBE_PATCH_STRATEGIC] = "Content-Type: application/strategic-merge-patch+json",
        [KUBE_PATCH_JSON] = "Content-Type: application/json-patch+json",
    };
    if (h && ctypes[r->m] && (r->body || r->m != KUBE_DELETE))
        h = curl_slist_append(h, ctypes[r->m]);
    if (h)
        h = curl_slist_append(h, "Expect:");
    /* like client-go: credentials only over TLS */
    if (h && c->https && c->token && *c->token) {
        size_t n = strlen(c->token) + 32;
        char *a = malloc(n);
        if (!a) {
            curl_slist_free_all(h);
            return false;
        }
        snprintf(a, n, "Authorization: Bearer %s", c->token);
        h = curl_slist_append(h, a);
        free(a);
    }
    if (!h)
        return false;
    r->hdrs = h;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (r->m != KUBE_GET)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method_name(r->m));
    if (r->m != KUBE_GET && (r->body || r->m != KUBE_DELETE)) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->blen);
    }
    return ok;
}

static void finish(struct kube_client *c, struct kube_req *r, int status, const char *error,
                   const char *reason);

/* Starts one attempt of a request taken off the pending list. */
void kclient_start(struct kube_client *c, struct kube_req *r)
{
    if (!c->exec) /* a plugin's credential is renewed before the queue starts (kclient_pump) */
        token_refresh(c, false);
    r->len = 0;
    if (r->buf)
        r->buf[0] = '\0';
    r->status_known = r->streaming = r->too_big = false;
    if (!easy_setup(c, r)) {
        finish(c, r, 0, "out of memory preparing the request", NULL);
        return;
    }
    if (r->attempts > 0)
        c->stats.retries++;
    r->attempts++;
    r->sent_ms = uv_now(c->loop);
    c->stats.requests++;
    r->on_wire = true;
    kclient_list_push(&c->active, r);
    if (!r->stream)
        c->inflight++;
    CURLMcode mc = curl_multi_add_handle(c->multi, r->easy);
    if (mc != CURLM_OK) {
        kclient_req_detach(c, r);
        finish(c, r, 0, curl_multi_strerror(mc), NULL);
    }
}

/* The Status object's message and reason, if the body is one. */
static void parse_status(const char *body, char *msg, size_t mcap, char *reason, size_t rcap)
{
    msg[0] = reason[0] = '\0';
    cJSON *j = body ? cJSON_Parse(body) : NULL;
    if (!j)
        return;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "Status")) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "reason");
        if (cJSON_IsString(m))
            snprintf(msg, mcap, "%s", m->valuestring);
        if (cJSON_IsString(r))
            snprintf(reason, rcap, "%s", r->valuestring);
    }
    cJSON_Delete(j);
}

/* Calls the callback once and frees the request. */
static void finish(struct kube_client *c, struct kube_req *r, int status, const char *error,
                   const char *reason)
{
    if (status < 200 || status > 299)
        c->stats.errors++;
    bool call = !r->cancelled && !c->dead && r->fn;
    r->cancelled = true; /* a kube_req_cancel from inside the callback is a no-op */
    if (call) {
        struct kube_resp resp = {
            .status = status,
            .body = r->buf && !r->streaming ? r->buf : "",
            .len = r->buf && !r->streaming ? r->len : 0,
            .error = error,
            .reason = reason,
            .attempts = r->attempts,
        };
        r->fn(r->ctx, &resp);
    }
    kclient_req_free(r);
}

static bool retryable_status(long s)
{
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static long sockaddr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return -1;
}

/* The watched socket of the connection an on-wire request rides, or NULL. libcurl 7.88's
 * CURLINFO_ACTIVESOCKET names a connection only once a transfer of that easy handle has ended
 * (its "last connection"), never during one, and every attempt here has a fresh handle; so the
 * connection is found by its ports (CURLINFO_LOCAL_PORT and CURLINFO_PRIMARY_PORT are set as soon
 * as the transfer is given its connection, new or reused) among the sockets curl watches. */
static struct kpoll *req_poll(struct kube_client *c, struct kube_req *r)
{
    curl_socket_t s = CURL_SOCKET_BAD;
    long lport = 0, rport = 0;
    if (!r->on_wire || !r->easy)
        return NULL;
    if (curl_easy_getinfo(r->easy, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK)
        s = CURL_SOCKET_BAD;
    if (s == CURL_SOCKET_BAD &&
        (curl_easy_getinfo(r->easy, CURLINFO_LOCAL_PORT, &lport) != CURLE_OK ||
         curl_easy_getinfo(r->easy, CURLINFO_PRIMARY_PORT, &rport) != CURLE_OK || lport <= 0))
        return NULL;
    for (struct kpoll *p = c->polls; p; p = p->next) {
        if (s != CURL_SOCKET_BAD) {
            if (p->s == s)
                return p;
            continue;
        }
        struct sockaddr_storage la, ra;
        socklen_t ln = sizeof(la), rn = sizeof(ra);
        if (getsockname(p->s, (struct sockaddr *)&la, &ln) == 0 &&
            getpeername(p->s, (struct sockaddr *)&ra, &rn) == 0 && sockaddr_port(&la) == lport &&
            sockaddr_port(&ra) == rport)
            return p;
    }
    return NULL;
}

/* Shuts the connection of an on-wire request down when nothing at all (no byte: no data, no
 * PING, no SETTINGS) has come in on it since `since` (loop time, ms): over HTTP/2 every stream of
 * the client may share it, and curl would put each new one on it again (libcurl 7.88 cannot ping
 * from a multi handle; client-go pings after 30 s of silence and closes after 15 s more). curl
 * sees the end and closes it; the fd stays curl's. */
static void shut_if_silent(struct kube_client *c, struct kube_req *r, uint64_t since,
                           const char *why)
{
    struct kpoll *p = req_poll(c, r);
    if (!p || p->rx_ms > since)
        return;
    LOG_WARN("kube", "%s %s: %s and its connection received nothing for %llu ms: shut down",
             method_name(r->m), r->path, why, (unsigned long long)(uv_now(c->loop) - p->rx_ms));
    shutdown(p->s, SHUT_RDWR);
}

/* One attempt ended: retry, or report. */
static void attempt_done(struct kube_client *c, struct kube_req *r, CURLcode result)
{
    long status = 0;
    curl_off_t retry_after = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after);
    char cerr[CURL_ERROR_SIZE + 64];
    snprintf(cerr, sizeof(cerr), "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(result));
    /* a request that timed out with nothing received on its connection since it was sent: that
     * connection is dead, the retry must not go on it again */
    if (result == CURLE_OPERATION_TIMEDOUT && !r->cancelled)
        shut_if_silent(c, r, r->sent_ms, "timed out");
    kclient_req_detach(c, r);
    if (r->cancelled) {
        kclient_req_free(r);
        return;
    }
    if (result != CURLE_OK)
        status = 0;
    if (status == 429)
        c->stats.throttled++;
    if (status == 401 && (c->token_file || c->exec) && !r->auth_retried) {
        token_refresh(c, true);
        r->auth_retried = true;
        r->not_before = 0;
        kclient_pending_push(c, r);
        return;
    }
    bool transport = result != CURLE_OK && !r->too_big && !(r->stream && r->streaming);
    if (!r->stream && !(r->flags & KUBE_NO_RETRY) && r->retries < c->max_retries &&
        (transport || retryable_status(status))) {
        uint64_t d = BACKOFF_BASE_MS << (r->retries < 16 ? r->retries : 16);
        if (d > BACKOFF_CAP_MS)
            d = BACKOFF_CAP_MS;
        d += (uint64_t)(kube_client_rand(c) * (double)d * 0.5);
        if (d > BACKOFF_CAP_MS)
            d = BACKOFF_CAP_MS;
        if ((status == 429 || status == 503) && retry_after > 0) {
            uint64_t ra = (uint64_t)retry_after * 1000;
            if (ra > RETRY_AFTER_CAP_MS)
                ra = RETRY_AFTER_CAP_MS;
            if (ra > d)
                d = ra;
        }
        r->retries++;
        r->not_before = uv_now(c->loop) + d;
        LOG_DEBUG("kube", "%s %s: %s: retry %u in %llu ms", method_name(r->m), r->path,
                  status ? "HTTP error" : cerr, r->retries, (unsigned long long)d);
        kclient_pending_push(c, r);
        return;
    }
    char msg[1024], reason[128], err[1200];
    const char *error = NULL, *rsn = NULL;
    if (result != CURLE_OK) {
        if (r->too_big)
            snprintf(err, sizeof(err), "%s %s: response larger than %zu MiB", method_name(r->m),
                     r->path, MAX_BODY_BYTES >> 20);
        else if (r->stream && r->streaming)
            snprintf(err, sizeof(err), "%s %s: stream ended: %s", method_name(r->m), r->path, cerr);
        else
            snprintf(err, sizeof(err), "%s %s%s: %s", method_name(r->m), c->base, r->path, cerr);
        error = err;
    } else if (status < 200 || status > 299) {
        parse_status(r->buf, msg, sizeof(msg), reason, sizeof(reason));
        if (msg[0]) {
            error = msg;
        } else {
            char q[160];
            sched_quote(r->buf ? r->buf : "", r->len, q, sizeof(q));
            snprintf(err, sizeof(err), "%s %s: HTTP %ld%s%s", method_name(r->m), r->path, status,
                     q[0] ? ": " : "", q);
            error = err;
        }
        rsn = reason[0] ? reason : NULL;
    }
    finish(c, r, (int)status, error, rsn);
}

static void check_done(struct kube_client *c)
{
    CURLMsg *msg;
    int left;
    while (!c->dead && (msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct kube_req *r = NULL;
        CURLcode res = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r)
            attempt_done(c, r, res);
    }
    if (!c->dead && (c->pending.n || c->pending_low.n))
        kclient_pump(c);
    kclient_drain_check(c);
}

/* ---- public ---------------------------------------------------------------------------------- */

static int set_base(struct kube_client *c, const struct kube_auth *a, struct sched_errbuf *eb)
{
    c->https = !strncmp(a->server, "https://", 8);
    if (!a->tls_server_name || !c->https) {
        c->base = strdup(a->server);
        return c->base ? 0 : sched_fail(eb, SCHED_ENOMEM, "kube client: out of memory");
    }
    /* tls-server-name: the URL names that host (SNI and verification), CONNECT_TO sends it to the
     * real server. */
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    int rc = 0;
    if (!u || curl_url_set(u, CURLUPART_URL, a->server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        rc = sched_fail(eb, SCHED_EINVAL, "%s: server %s: not a valid URL", a->source, a->server);
    } else {
        size_t n = strlen(a->tls_server_name) + strlen(host) + 2 * strlen(port) + 32;
        char *ct = malloc(n);
        c->base = malloc(n);
        if (ct && c->base) {
            snprintf(ct, n, "%s:%s:%s:%s", a->tls_server_name, port, host, port);
            snprintf(c->base, n, "https://%s:%s", a->tls_server_name, port);
            c->connect_to = curl_slist_append(NULL, ct);
        }
        free(ct);
        if (!c->connect_to)
            rc = sched_fail(eb, SCHED_ENOMEM, "kube client: out of memory");
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

static void free_fields(struct kube_client *c)
{
    strmap_fini(&c->low_by_path);
    free(c->base);
    curl_slist_free_all(c->connect_to);
    free(c->ca_file);
    free(c->ca_pem);
    free(c->cert_file);
    free(c->cert_pem);
    free(c->key_file);
    free(c->key_pem);
    free(c->token);
    free(c->token_file);
    kube_exec_free(c->exec);
    free(c->proxy_url);
    free(c->user_agent);
}

int kube_client_new(uv_loop_t *loop, const struct kube_auth *auth,
                    const struct kube_client_opts *opts, struct kube_client **out,
                    struct sched_errbuf *eb)
{
    if (!loop || !auth || !auth->server || !out)
        return sched_fail(eb, SCHED_EINVAL,
                          "kube_client_new: loop, auth.server and out are required");
    static bool curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return sched_fail(eb, SCHED_EIO, "kube client: curl_global_init failed");
        curl_ready = true;
    }
    struct kube_client_opts d;
    kube_client_opts_default(&d);
    struct kube_client *c = calloc(1, sizeof(*c));
    if (!c)
        return sched_fail(eb, SCHED_ENOMEM, "kube client: out of memory");
    c->loop = loop;
    strmap_init(&c->low_by_path);
    c->qps = opts && opts->qps > 0 ? opts->qps : d.qps;
    c->burst = opts && opts->burst ? opts->burst : d.burst;
    c->max_inflight = opts && opts->max_inflight ? opts->max_inflight : d.max_inflight;
    c->max_retries = opts && opts->max_retries ? opts->max_retries : d.max_retries;
    c->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : d.timeout_ms;
    c->watch_idle_ms =
        (uint64_t)(opts && opts->watch_idle_ms > 0 ? opts->watch_idle_ms : d.watch_idle_ms);
    c->low_max_wait_ms = opts && opts->low_max_wait_ms ? opts->low_max_wait_ms : d.low_max_wait_ms;
    c->bucket = c->burst;
    c->bucket_ms = uv_now(loop);
    c->rng = uv_hrtime() ^ ((uint64_t)(uintptr_t)c << 16) ^ 0x9e3779b97f4a7c15ull;
    if (!c->rng)
        c->rng = 1;
    c->user_agent =
        strdup(opts && opts->user_agent ? opts->user_agent : "gangsched/" GANGSCHED_VERSION);
    c->insecure = auth->insecure;
    int rc = set_base(c, auth, eb);
    c->ca_file = dup_or_null(auth->ca_file);
    c->ca_pem = dup_or_null(auth->ca_pem);
    c->cert_file = dup_or_null(auth->cert_file);
    c->cert_pem = dup_or_null(auth->cert_pem);
    c->key_file = dup_or_null(auth->key_file);
    c->key_pem = dup_or_null(auth->key_pem);
    c->token = dup_or_null(auth->token);
    c->token_file = dup_or_null(auth->token_file);
    c->exec = auth->exec ? kube_exec_dup(auth->exec) : NULL;
    c->proxy_url = dup_or_null(auth->proxy_url);
    if (!rc && !auth->proxy_url) /* the environment's, as client-go reads it */
        rc = kube_proxy_for(auth->server, &c->proxy_url, eb);
    c->exec_expires_ms = auth->exec_expires_ms;
    if (!rc && (!c->user_agent || (auth->ca_file && !c->ca_file) || (auth->ca_pem && !c->ca_pem) ||
                (auth->cert_file && !c->cert_file) || (auth->cert_pem && !c->cert_pem) ||
                (auth->key_file && !c->key_file) || (auth->key_pem && !c->key_pem) ||
                (auth->token && !c->token) || (auth->token_file && !c->token_file) ||
                (auth->exec && !c->exec) || (auth->proxy_url && !c->proxy_url)))
        rc = sched_fail(eb, SCHED_ENOMEM, "kube client: out of memory");
    if (!rc && !(c->multi = curl_multi_init()))
        rc = sched_fail(eb, SCHED_ENOMEM, "kube client: curl_multi_init failed");
    if (rc) {
        free_fields(c);
        free(c);
        return rc;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    uv_timer_init(loop, &c->curl_timer);
    uv_timer_init(loop, &c->pump_timer);
    uv_timer_init(loop, &c->drain_timer);
    c->curl_timer.data = c;
    c->pump_timer.data = c;
    c->drain_timer.data = c;
    if (!c->exec) /* the plugin ran when the credentials were loaded */
        token_refresh(c, true);
    *out = c;
    return 0;
}

static void release_client(struct kube_client *c)
{
    c->released = true;
    kube_exec_cancel(c->exec_job);
    c->exec_job = NULL;
    for (struct kube_req *r = c->active.head, *nx; r; r = nx) {
        nx = r->next;
        kclient_req_detach(c, r);
        kclient_req_free(r);
    }
    struct req_list *lanes[] = {&c->pending, &c->pending_low};
    for (int k = 0; k < 2; k++) {
        for (struct kube_req *r = lanes[k]->head, *nx; r; r = nx) {
            nx = r->next;
            kclient_req_free(r);
        }
        lanes[k]->head = lanes[k]->tail = NULL;
    }
    while (c->n_spare)
        curl_easy_cleanup(c->spare[--c->n_spare]);
    curl_multi_cleanup(c->multi);
    c->multi = NULL;
    while (c->polls)
        poll_close(c, c->polls);
    free_fields(c);
    c->closing += 3;
    uv_close((uv_handle_t *)&c->curl_timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->pump_timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->drain_timer, on_handle_closed);
}

void kube_client_free(struct kube_client *c)
{
    if (!c || c->dead)
        return;
    c->dead = true;
    if (c->depth == 0)
        release_client(c);
}

void kube_req_abandon(struct kube_req *r)
{
    if (!r || r->cancelled)
        return;
    struct kube_client *c = r->c;
    /* a connection shared over HTTP/2 carries every request of the client: shut it down only
     * when all of it is silent, never because one stream is quiet */
    uint64_t now = uv_now(c->loop);
    if (now >= c->watch_idle_ms)
        shut_if_silent(c, r, now - c->watch_idle_ms, "abandoned");
    kube_req_cancel(r);
}

int kube_req_status(const struct kube_req *r)
{
    long code = 0;
    if (r && r->on_wire && r->easy)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    return (int)code;
}

uint64_t kube_client_watch_idle_ms(const struct kube_client *c)
{
    return c->watch_idle_ms;
}
