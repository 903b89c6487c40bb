/* sched/kube/wire.h: internals shared by the files of the Kubernetes API client (auth.c,
 * client.c, informer.c, lease.c) and their tests; not for the rest of the daemon.
 *
 * Owns: base64 decoding, the watch-stream framer, the list-page scanner, the MicroTime formatter,
 * percent-encoding of query values, and the client's streaming-request and cancellation hooks used
 * by informers and leases. Must not touch: anything outside sched/kube.
 */
#ifndef SCHED_KUBE_WIRE_H
#define SCHED_KUBE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/kube/client.h"

/* ---- base64 (RFC 4648, standard alphabet; padding optional; whitespace ignored) ----------------
 */

/* Decodes in[0..len) into a new NUL-terminated buffer (*out, *out_len). 0, SCHED_EINVAL on a
 * character outside the alphabet or a bad length (*bad_at = its offset), SCHED_ENOMEM. */
int kube_base64_decode(const char *in, size_t len, char **out, size_t *out_len, size_t *bad_at);

/* ---- watch-stream framer: cuts a byte stream into top-level JSON objects -----------------------
 */

struct kube_framer {
    char *buf;
    size_t len, cap;
    size_t scan;    /* bytes of buf already examined */
    size_t start;   /* offset of the current object's '{' (valid when depth > 0) */
    size_t max_obj; /* an object longer than this is an error */
    unsigned depth;
    bool in_str, esc;
};

/* Called once per complete object; text[len] is '\0'. Non-zero stops the feed and is returned. */
typedef int kube_frame_fn(void *ctx, const char *text, size_t len);

void kube_framer_init(struct kube_framer *f, size_t max_obj);
void kube_framer_reset(struct kube_framer *f); /* drops any partial object, keeps the limit */
void kube_framer_free(struct kube_framer *f);
/* Feeds n bytes; emits each object that completes. Bytes between objects ('\n', spaces, stray
 * characters) are skipped. Returns 0, the callback's non-zero value, SCHED_ERANGE when an object
 * grows past max_obj (message in eb; the framer is reset), or SCHED_ENOMEM. */
int kube_framer_feed(struct kube_framer *f, const char *data, size_t n, kube_frame_fn *fn,
                     void *ctx, struct sched_errbuf *eb);

/* ---- list pages: the members of a list object found without parsing it ---------------------
 */

/* The text of the top-level members "metadata" and "items" of a list object (NULL, 0: absent). */
struct kube_list_page {
    const char *meta, *items;
    size_t meta_len, items_len;
};

/* Finds them in the JSON object s[0..n); false when s is not an object (or ends early). Strings
 * are skipped with their escapes; brackets are counted, not matched: cJSON checks each member
 * when it is parsed. */
bool kube_list_scan(const char *s, size_t n, struct kube_list_page *pg);
/* The end (one past) of the JSON value that starts at s[i] (a string, an object or array, or a
 * scalar), or 0 when it does not end within n bytes. */
size_t kube_json_end(const char *s, size_t n, size_t i);

/* ---- small text helpers ------------------------------------------------------------------------
 */

/* "2006-01-02T15:04:05.000000Z" for the current wall-clock time; buf needs 32 bytes. */
void kube_microtime_now(char *buf, size_t cap);
/* Appends s percent-encoded (RFC 3986 unreserved kept) to dst (capacity cap, NUL-terminated);
 * false when it does not fit. */
bool kube_query_escape(char *dst, size_t cap, const char *s);
/* A uniformly random double in [0, 1) from the client's generator. */
double kube_client_rand(struct kube_client *c);

/* ---- client hooks for informers and leases ------------------------------------------------------
 */

struct kube_req;

uv_loop_t *kube_client_loop(struct kube_client *c);
struct kube_client_stats *kube_client_counters(struct kube_client *c);

/* kube_request that also returns a handle for kube_req_cancel; the handle is valid until `fn` is
 * called (clear it there) or it is cancelled. */
int kube_request_h(struct kube_client *c, enum kube_method m, const char *path, const char *body,
                   size_t len, unsigned flags, kube_resp_fn *fn, void *ctx, struct kube_req **out);
/* A queued request's whole-transfer timeout (ms, from the moment it is put on the wire; at most
 * the client's timeout_ms): a lease request never outlives the renew deadline. No effect once
 * the request is on the wire; call it right after queueing. */
void kube_req_set_timeout(struct kube_req *r, uint32_t ms);

/* Streaming GET (watches): no timeout (the informer's watchdog bounds it), no rate limit, no
 * in-flight slot, no retries. While the response status is 200, every chunk of the body goes to
 * `data` (non-zero aborts the transfer, which then ends with a transport error); other statuses are
 * buffered and parsed as usual. `done` is called once at the end (body "" for a 200 stream). */
typedef int kube_data_fn(void *ctx, const char *data, size_t n);
int kube_stream(struct kube_client *c, const char *path, kube_data_fn *data, kube_resp_fn *done,
                void *ctx, struct kube_req **out);

/* Cancels a request or stream: its callbacks are never called again; safe inside callbacks. */
void kube_req_cancel(struct kube_req *r);
/* For a stream the watchdog gave up on: kube_req_cancel (curl takes the transfer off its
 * connection: over HTTP/2 that stream is reset and the other streams go on; over HTTP/1.1 the
 * connection of that transfer is closed). Only when nothing at all (no byte: no data, no PING,
 * no SETTINGS) has come in on that request's connection for watch_idle_ms (the whole connection
 * silent) is it shut down first, so that no other stream multiplexed on it keeps waiting and curl
 * stops putting new streams on it; those then end with a transport error (requests are retried,
 * watches restarted, on a new connection). */
void kube_req_abandon(struct kube_req *r);
/* The HTTP status of the response being received, 0 until its status line has arrived (or when
 * the request is not on the wire). */
int kube_req_status(const struct kube_req *r);
/* kube_client_opts.watch_idle_ms as resolved (ms, > 0). */
uint64_t kube_client_watch_idle_ms(const struct kube_client *c);

#endif
