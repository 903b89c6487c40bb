/* sched/kube/client.h: the Kubernetes API client of the daemon (libcurl multi on a libuv loop).
 *
 * Owns: connections to one API server, authentication (kubeconfig or in-cluster service account),
 * client-side rate limiting (QPS and burst), retries with backoff, list+watch informers with
 * relist on 410, and Lease-based leader election. It knows URLs, HTTP and JSON framing; it does
 * not know what a pod or a gang is (sched/kube/decode.c and cache.c do).
 *
 * Must not touch: the scheduler state, the store, the configuration. Every callback runs on the
 * loop thread. Nothing here blocks: every call returns at once and reports through a callback.
 *
 * Memory management: kube_auth, kube_client, kube_informer and kube_lease are owned by their
 * creator and freed by the matching *_free (after which no callback of theirs is ever called).
 * Paths and bodies passed in are copied. Responses passed to callbacks are borrowed for the
 * length of the callback.
 *
 * Errors: functions return 0 or a negative SCHED_E* code with a message in `eb` naming the file,
 * field or URL at fault ("kubeconfig /x/config: users[0].user.client-key: file not found").
 */
#ifndef SCHED_KUBE_CLIENT_H
#define SCHED_KUBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "sched/core/err.h"

/* ---- authentication ------------------------------------------------------------------------ */

/* An exec credential plugin (kubeconfig users[].user.exec, client.authentication.k8s.io v1 or
 * v1beta1, as client-go runs one): run when the credentials are loaded, again once the
 * credential it gave expires (status.expirationTimestamp) and after a 401. It gets
 * KUBERNETES_EXEC_INFO (an ExecCredential: spec.interactive false, spec.cluster when the
 * kubeconfig sets provideClusterInfo) and the kubeconfig's env; stdin is /dev/null (gangsched has
 * no terminal: interactiveMode Always is refused), stderr is ours. It runs at most 30 s (blocking
 * when the kubeconfig is loaded, on the event loop when the client runs it again) and must print
 * an ExecCredential of the same apiVersion whose status holds a token, or clientCertificateData
 * and clientKeyData. */
struct kube_exec {
    char *api_version; /* client.authentication.k8s.io/v1 or v1beta1 */
    char *command;     /* a path (relative ones resolved against the kubeconfig's directory, as
                          client-go does for a command holding a '/'), else looked up in PATH */
    char **args;
    uint32_t n_args;
    char **env; /* "NAME=value" */
    uint32_t n_env;
    char *cluster;      /* JSON of ExecCredential spec.cluster (provideClusterInfo), or NULL */
    char *install_hint; /* installHint (newlines as spaces), told when the command is not
                           found, as client-go does; or NULL */
    char *where;        /* "kubeconfig FILE: users[N].user.exec", for messages */
};

/* A plugin's answer: a token, or a client certificate and key (PEM); strings malloc'd. */
struct kube_exec_cred {
    char *token, *cert_pem, *key_pem;
    int64_t expires_ms; /* ms since the epoch; 0: does not expire */
};

/* Runs the plugin (blocking). 0, or SCHED_EIO (not found, a non-zero exit, killed at 30 s, more
 * than 1 MiB printed) / SCHED_EINVAL (not an ExecCredential as asked) / SCHED_ENOMEM, the
 * message naming the kubeconfig field and the command. */
int kube_exec_run(const struct kube_exec *x, struct kube_exec_cred *cr, struct sched_errbuf *eb);
void kube_exec_cred_clear(struct kube_exec_cred *cr);
/* A run on the event loop: fn(ctx, rc, cr, error) once it has ended, rc and error as
 * kube_exec_run's (cr, zeroed on an error, is the callee's to keep or clear), never before
 * kube_exec_start returns. x must stay valid until then. */
struct kube_exec_job;
typedef void kube_exec_done_fn(void *ctx, int rc, struct kube_exec_cred *cr, const char *error);
int kube_exec_start(uv_loop_t *loop, const struct kube_exec *x, kube_exec_done_fn *fn, void *ctx,
                    struct kube_exec_job **out, struct sched_errbuf *eb);
/* Kills the run of a job not ended yet; fn is never called. The job frees itself. */
void kube_exec_cancel(struct kube_exec_job *j);
/* Tests only (the kubeconfig fuzzer, whose inputs must never run a command): when set,
 * kube_exec_run calls it instead of running the plugin. */
extern int (*kube_exec_hook)(const struct kube_exec *x, struct kube_exec_cred *cr,
                             struct sched_errbuf *eb);
struct kube_exec *kube_exec_dup(const struct kube_exec *x); /* NULL out of memory */
void kube_exec_free(struct kube_exec *x);

/* The proxy a client's requests to `server` take when the kubeconfig names none, as client-go
 * takes it from the environment (sched/kube/proxy.c): *out a proxy URL as curl takes it
 * (malloc'd), or NULL to connect directly. 0, or SCHED_EINVAL (server not a URL, a proxy of
 * another scheme, named by its variable) / SCHED_ENOMEM. */
int kube_proxy_for(const char *server, char **out, struct sched_errbuf *eb);
/* A proxy URL as curl takes it (malloc'd, NULL out of memory): socks5:// as socks5h:// (Go's
 * SOCKS5 dialer has the proxy resolve the server's name), no scheme as http://. */
char *kube_proxy_norm(const char *url);

/* Where and how to connect; every string owned by the struct. */
struct kube_auth {
    char *server;            /* "https://host:port" (no trailing slash) */
    char *ca_file;           /* CA bundle path, or NULL */
    char *ca_pem;            /* CA PEM data (certificate-authority-data, decoded), or NULL */
    char *cert_file;         /* client certificate path, or NULL */
    char *cert_pem;          /* client certificate PEM data, or NULL */
    char *key_file;          /* client key path, or NULL */
    char *key_pem;           /* client key PEM data, or NULL */
    char *token;             /* bearer token, or NULL */
    struct kube_exec *exec;  /* the credential plugin that gave token or cert/key, or NULL */
    int64_t exec_expires_ms; /* when its credential expires (ms since the epoch; 0: never) */
    char *token_file; /* re-read at most every 60 s and on 401 (service-account token rotation) */
    bool insecure;    /* insecure-skip-tls-verify: only when the kubeconfig says so */
    char *tls_server_name; /* or NULL */
    char *proxy_url;       /* the cluster's proxy-url (http, https, or socks5 resolving names
                              at the proxy, as client-go's), or NULL: the environment's
                              https_proxy/no_proxy, as client-go */
    char *namespace;       /* context namespace, or in-cluster namespace file, or "default" */
    char *source;          /* "kubeconfig PATH (context NAME)" or "in-cluster": for messages */
};

/* Loads a kubeconfig: `path`, else each file of $KUBECONFIG (':'-separated, first wins), else
 * ~/.kube/config; `path` == NULL and none found: the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,
 * namespace}). Supports the current context's server, certificate-authority(-data),
 * insecure-skip-tls-verify, tls-server-name, client-certificate(-data), client-key(-data),
 * proxy-url, token, tokenFile, exec (a credential plugin, run here once: struct kube_exec),
 * namespace;
 * relative paths are relative to the kubeconfig's directory.
 * Errors name the file and the field. Parsed with libyaml (never by hand). */
int kube_auth_load(const char *path, struct kube_auth **out, struct sched_errbuf *eb);
void kube_auth_free(struct kube_auth *a);

/* ---- requests ------------------------------------------------------------------------------ */

struct kube_client_opts {
    double qps;            /* sustained requests per second (token bucket); <= 0: 50 */
    uint32_t burst;        /* bucket size; 0: 100 */
    uint32_t max_inflight; /* concurrent requests, watches excluded; 0: 64 */
    uint32_t max_retries;  /* retries of a retryable failure (transport, 5xx, 429); 0: 5 */
    int64_t timeout_ms;    /* per request (not watches); 0: 30000 */
    int64_t watch_idle_ms; /* informers' watch watchdog (see kube_informer_new); 0: 150000 */
    /* how long a KUBE_LOW request waits behind the others before it takes one start in ten (a
     * steady stream of Bindings never starves the status writes); 0: 5000, < 0: no bound */
    int64_t low_max_wait_ms;
    const char *user_agent; /* NULL: "gangsched/VERSION" */
};
void kube_client_opts_default(struct kube_client_opts *o);

enum kube_method {
    KUBE_GET = 0,
    KUBE_POST,
    KUBE_PUT,
    KUBE_DELETE,
    KUBE_PATCH_MERGE,     /* application/merge-patch+json (works on CRDs) */
    KUBE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in types only) */
    KUBE_PATCH_JSON,      /* application/json-patch+json */
};

/* The final outcome of a request, after retries. */
struct kube_resp {
    int status;       /* HTTP status; 0 = no response (transport error, timeout, cancelled) */
    const char *body; /* response body, NUL-terminated (may be ""), borrowed */
    size_t len;
    const char *error;  /* NULL on 2xx; else a readable message: the Status object's message
                           ("pods \"p\" not found"), or the transport error */
    const char *reason; /* the Status object's reason ("Conflict", "NotFound", ...) or NULL */
    uint32_t attempts;  /* 1 + retries made */
};

typedef void kube_resp_fn(void *ctx, const struct kube_resp *r);

enum kube_req_flags {
    KUBE_NO_RETRY = 1 << 0, /* report the first failure (leader election, binding) */
    /* bypass the QPS bucket and the in-flight limit: lease requests must never wait behind
     * binds (a renewal queued behind max_inflight slow Bindings kept a deposed leader leading) */
    KUBE_NO_LIMIT = 1 << 1,
    /* may wait behind every other request: the status writes and Events of pods not placed,
     * which must not hold Bindings back when the QPS budget is short (KEP-5229 ranks Bindings
     * and preemption's deletes above status writes; kubernetes issue #135900 is the cost of
     * one queue for all) */
    KUBE_LOW = 1 << 2,
};

struct kube_client;

int kube_client_new(uv_loop_t *loop, const struct kube_auth *auth,
                    const struct kube_client_opts *opts, struct kube_client **out,
                    struct sched_errbuf *eb);
/* Cancels every request and watch without calling their callbacks, closes the handles (the loop
 * must run once more to finish closing) and frees the client. */
void kube_client_free(struct kube_client *c);

/* Queues a request; `path` starts with "/" and includes the query string; body may be NULL.
 * Retryable failures (transport errors, 429, 500, 502, 503, 504) are retried up to max_retries
 * times with exponential backoff and jitter (base 200 ms, cap 10 s); a 429 or 503 with
 * Retry-After waits at least that long. An attempt that times out with nothing at all received
 * on its connection since it was sent (no byte of data or of any HTTP/2 frame) has that connection
 * shut down first: over HTTP/2 every request and watch shares it, and libcurl would put the retry
 * on the dead connection again. `fn` is called exactly once unless the client is freed first.
 * Returns 0 or SCHED_ENOMEM. */
int kube_request(struct kube_client *c, enum kube_method m, const char *path, const char *body,
                 size_t len, unsigned flags, kube_resp_fn *fn, void *ctx);

/* A KUBE_LOW write to `path` still queued (not sent) takes `body` instead of its own (the newest
 * such one): true, and nothing more is to be queued; false: none is queued. Status writes of a
 * pod that cannot be placed replace one another instead of piling up. */
bool kube_client_replace(struct kube_client *c, const char *path, const char *body, size_t len);
/* Moves every KUBE_LOW request for `path` still queued ahead of the other KUBE_LOW ones, into
 * the normal order (a Binding that waits for its pod's status write). Returns how many. */
uint32_t kube_client_promote(struct kube_client *c, const char *path);

/* The gate of gated requests (every write, any method but GET, that is not KUBE_NO_LIMIT: a
 * Binding queued for a slot is not sent by a leader whose renew deadline passed meanwhile), asked
 * each time one would leave the queue for the wire (a retry included): false drops it and every
 * other gated request (kube_client_drop_writes), none sent nor retried. The gate may cancel
 * other requests, never a gated one. */
void kube_client_set_gate(struct kube_client *c, bool (*gate)(void *ctx), void *ctx);
/* Cancels at once, without callbacks, every gated request queued (waiting for the bucket, a
 * slot or a retry) and takes every one on the wire off it (an answer would come to nobody):
 * what a leader that stepped down must not send. Returns how many. */
uint32_t kube_client_drop_writes(struct kube_client *c);
/* Calls done once no gated request is queued or on the wire (at once when none is), dropping
 * what is left after max_ms (ms): a leader's writes finish before it releases its Lease. */
void kube_client_drain_writes(struct kube_client *c, uint64_t max_ms, void (*done)(void *ctx),
                              void *ctx);

/* Counters for /metrics and tests. */
struct kube_client_stats {
    uint64_t requests;       /* attempts sent */
    uint64_t retries;        /* attempts that were retries */
    uint64_t errors;         /* final outcomes that were not 2xx */
    uint64_t throttled;      /* 429 responses */
    uint64_t watch_events;   /* watch events delivered */
    uint64_t bookmarks;      /* BOOKMARK events received */
    uint64_t relists;        /* lists started after a 410 */
    uint64_t reconnects;     /* watches restarted after an end or an error */
    uint64_t watch_stalls;   /* watches abandoned by the informers' watchdog (also reconnects) */
    uint64_t paged_lists;    /* lists completed in pages */
    uint64_t streamed_lists; /* streaming lists (WatchList) completed */
    uint64_t stream_refused; /* streaming lists refused by the server (then paged) */
    uint64_t dropped;        /* gated requests dropped (kube_client_drop_writes, a closed gate) */
    uint64_t exec_runs;      /* credential plugin runs after the first (expiry, 401) */
    uint64_t rx_ms;    /* loop time (ms) of the last body bytes received on any request; 0: none */
    uint32_t inflight; /* requests on the wire now */
    uint32_t queued;   /* requests waiting for the bucket or an in-flight slot */
};
void kube_client_stats(const struct kube_client *c, struct kube_client_stats *out);

/* ---- informers: list, then watch, forever ---------------------------------------------------- */

enum kube_event {
    KUBE_ADDED = 0,
    KUBE_MODIFIED,
    KUBE_DELETED, /* also synthesized for objects gone after a relist */
    KUBE_SYNCED,  /* obj NULL: the initial list (or a relist) is complete and applied */
};

/* One object event. `obj` is the decoded object (borrowed for the call). */
typedef void kube_informer_fn(void *ctx, enum kube_event ev, const cJSON *obj);

struct kube_informer_opts {
    const char *path;           /* collection path, e.g. "/api/v1/pods" */
    const char *field_selector; /* or NULL, unencoded ("status.phase!=Succeeded") */
    const char *label_selector; /* or NULL */
    uint32_t page_size;         /* list limit; 0: 500 */
    uint32_t watch_timeout_s;   /* 0: random in [300, 600) */
    bool paged;                 /* list in pages only, never a streaming list */
};

struct kube_informer;

/* Starts listing at once. Behaviour (as client-go's reflector): a streaming list (WatchList,
 * KEP-3157, on by default in kube-apiserver 1.32 and since 1.34: a watch with
 * sendInitialEvents=true that sends every object as ADDED, then a BOOKMARK annotated
 * k8s.io/initial-events-end, then the changes), unless opts.paged, the server refused one (a
 * 4xx answer: from then on this informer lists in pages) or the resource is not served (404:
 * looked for again with LISTs); or a paginated LIST
 * (limit/continue; an expired continue token restarts the list). Either way the items are
 * applied as ADDED or MODIFIED (objects already known by namespace/name) and DELETED for known
 * objects absent from the new list, then KUBE_SYNCED; then (a paged list) WATCH from the list's
 * resourceVersion with allowWatchBookmarks=true, or the streaming list's watch goes on; every
 * event (bookmarks included) advances the resourceVersion; a watch that ends or drops restarts
 * from it after a short backoff; a 410 (HTTP status on a list, or an ERROR event with code 410
 * inside a watch) relists. Connection errors back off exponentially (800 ms doubling to 30 s,
 * with jitter). A malformed event or object (not JSON, no metadata.name) is logged with the
 * path and skipped, never a crash. Watch streams are cut into objects by counting braces
 * outside strings (chunk borders fall anywhere; objects may be megabytes).
 * Watchdog (a connection that goes silent, no bytes and no FIN, e.g. through a proxy that lost
 * its upstream, would otherwise freeze the cache for good): a watch is abandoned (logged, the
 * request cancelled, its connection shut down only when nothing at all, no byte of data or of any
 * HTTP/2 frame, has come in on that connection for watch_idle_ms; watched again from the last
 * resourceVersion after the backoff) when
 * its response status has not arrived within the client's watch_idle_ms; when nothing has
 * arrived for watch_idle_ms although a watch of THIS informer got a bookmark before
 * (kube-apiserver's watch cache sends one about once a minute to each watch that allows them, but
 * only for a resource type that has had an event since that cacher started: a quiet type gets
 * none and is not held to it); and in any case when it is still open min(30 s, watch_idle_ms)
 * after the timeoutSeconds it asked for (the server ends it then). */
int kube_informer_new(struct kube_client *c, const struct kube_informer_opts *o,
                      kube_informer_fn *fn, void *ctx, struct kube_informer **out,
                      struct sched_errbuf *eb);
void kube_informer_free(struct kube_informer *inf);
bool kube_informer_synced(const struct kube_informer *inf); /* a list has completed */
/* The last list was 404 (a custom resource whose CRD is not installed): the informer counts as
 * synced with no objects and lists again every few seconds, so a CRD installed later is picked
 * up; a watch answered 404 (the CRD removed) relists. */
bool kube_informer_absent(const struct kube_informer *inf);
const char *kube_informer_rv(const struct kube_informer *inf); /* last resourceVersion seen */

/* ---- leader election (coordination.k8s.io/v1 Lease) ------------------------------------------ */

struct kube_lease_opts {
    const char *ns;       /* lease namespace */
    const char *name;     /* lease name, e.g. "gangsched" */
    const char *identity; /* holder identity, e.g. "host_pid_random" */
    uint32_t lease_s;     /* leaseDurationSeconds; 0: 15 */
    uint32_t renew_s;     /* renew deadline; 0: 10 */
    uint32_t retry_ms;    /* retry period; 0: 2000 */
};

/* Called when leadership starts (true) or is lost (false: the renew deadline passed without a
 * successful renewal, or another holder took the lease). */
typedef void kube_lease_fn(void *ctx, bool leading);

struct kube_lease;

/* Runs client-go's algorithm: GET the Lease; 404 -> POST (holder self, leaseTransitions 0); a
 * lease held by another is considered expired only when its record has not changed for
 * leaseDurationSeconds by the LOCAL clock since it was last seen to change; then PUT with the
 * read resourceVersion (409 = lost the race), leaseTransitions + 1 and acquireTime = now when the
 * holder changes. MicroTime format for acquireTime/renewTime. Renews every retry period with
 * KUBE_NO_LIMIT | KUBE_NO_RETRY requests, each timing out at what is left of the renew deadline;
 * a timer of its own ends leadership renew_s after the last successful renewal was sent. */
int kube_lease_new(struct kube_client *c, const struct kube_lease_opts *o, kube_lease_fn *fn,
                   void *ctx, struct kube_lease **out, struct sched_errbuf *eb);
bool kube_lease_leading(const struct kube_lease *l);
/* Whether this candidate leads now: false once renew_s have passed since its last successful
 * renewal was sent, even before the deadline timer ran (it steps down here then, calling the
 * callback). Ask it before any write only a leader may make (a cycle, a Binding). */
bool kube_lease_check(struct kube_lease *l);
/* While leading: the milliseconds left until the renew deadline (renew_s after the last
 * successful renewal was sent), by the loop's clock updated now; 0 when not leading. A cycle
 * that may keep the loop busy stops short of it (the renewal runs between cycles). */
int64_t kube_lease_left_ms(struct kube_lease *l);
/* spec.leaseTransitions of the Lease as last seen (after acquiring: this term's number; 0 when
 * this process created the Lease, so nobody led before). */
int64_t kube_lease_transitions(const struct kube_lease *l);
/* Gives the lease up (PUT holderIdentity "", leaseDurationSeconds 1, keeping leaseTransitions)
 * when held, then calls done (also when not held, at once). */
void kube_lease_release(struct kube_lease *l, void (*done)(void *ctx), void *ctx);
void kube_lease_free(struct kube_lease *l);

#endif
