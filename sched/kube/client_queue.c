/* sched/kube/client_queue.c: the queue half of the API client (see client.h; the transfer half
 * is client.c, what both share is client_int.h).
 *
 * Owns: the request queue (c->pending, in order; retries come back to it with a not-before
 * time; KUBE_LOW requests in c->pending_low, started only when nothing of c->pending can
 * start), the QPS token bucket, the in-flight limit (streams and KUBE_NO_LIMIT requests bypass
 * both), the write gate (may_write, asked as each gated request leaves the queue for the wire),
 * dropping and draining writes, queueing (kube_request, kube_stream) and cancelling. Must not
 * touch: curl options or the multi handle beyond taking a request off it (kclient_req_detach),
 * completion and retries (client.c decides; a retry is only pushed back here).
 *
 * Invariant: a request is in exactly one of c->pending or c->pending_low (not on the wire, the
 * latter when KUBE_LOW) and c->active (on the wire, on_wire set); c->inflight counts the active
 * ones that are not streams; c->pending_special counts the pending ones that bypass the bucket and
 * the in-flight limit.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <uv.h>

#include "sched/core/log.h"
#include "sched/kube/client.h"
#include "sched/kube/client_int.h"
#include "sched/kube/wire.h"

/* ---- lists ----------------------------------------------------------------------------------- */

void kclient_list_push(struct req_list *l, struct kube_req *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

void kclient_list_unlink(struct req_list *l, struct kube_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->prev = r->next = NULL;
    l->n--;
}

static bool req_special(const struct kube_req *r)
{
    return r->stream || (r->flags & KUBE_NO_LIMIT);
}

/* The gate's requests: every write that is not the Lease's (KUBE_NO_LIMIT): a leader's
 * Bindings, evictions, deletes, patches and claim writes. */
static bool req_gated(const struct kube_req *r)
{
    return r->m != KUBE_GET && !(r->flags & KUBE_NO_LIMIT);
}

/* The queue of r: c->pending_low for a KUBE_LOW request, else c->pending. */
static struct req_list *lane(struct kube_client *c, const struct kube_req *r)
{
    return (r->flags & KUBE_LOW) ? &c->pending_low : &c->pending;
}

void kclient_pending_push(struct kube_client *c, struct kube_req *r)
{
    r->queued_ms = uv_now(c->loop);
    kclient_list_push(lane(c, r), r);
    c->pending_special += req_special(r);
    if (r->flags & KUBE_LOW) /* out of memory: not found by kube_client_replace, still sent */
        (void)strmap_put(&c->low_by_path, r->path, r, NULL);
}

static void pending_unlink(struct kube_client *c, struct kube_req *r)
{
    kclient_list_unlink(lane(c, r), r);
    c->pending_special -= req_special(r);
    if ((r->flags & KUBE_LOW) && strmap_get(&c->low_by_path, r->path) == r)
        strmap_del(&c->low_by_path, r->path);
}

bool kube_client_replace(struct kube_client *c, const char *path, const char *body, size_t len)
{
    if (!c || c->dead || !path || !body)
        return false;
    struct kube_req *r = strmap_get(&c->low_by_path, path); /* the newest for it */
    if (r && r->m != KUBE_GET && r->m != KUBE_DELETE) {
        char *b = malloc(len + 1);
        if (!b)
            return false;
        memcpy(b, body, len);
        b[len] = '\0';
        free(r->body);
        r->body = b;
        r->blen = len;
        return true;
    }
    return false;
}

uint32_t kube_client_promote(struct kube_client *c, const char *path)
{
    uint32_t n = 0;
    if (!c || c->dead || !path)
        return 0;
    for (struct kube_req *r = c->pending_low.head, *nx; r; r = nx) {
        nx = r->next;
        if (strcmp(r->path, path) != 0)
            continue;
        pending_unlink(c, r);
        r->flags &= ~(unsigned)KUBE_LOW;
        kclient_pending_push(c, r);
        n++;
    }
    if (n)
        kclient_pump_soon(c);
    return n;
}

static void on_pump(uv_timer_t *t);

void kclient_pump_soon(struct kube_client *c)
{
    if (!c->dead)
        uv_timer_start(&c->pump_timer, on_pump, 0, 0);
}

/* Starts the requests of lane l queued at or before `upto` (at most max_starts) that the bucket,
 * the in-flight limit and backoffs allow; true when no request of an ordinary kind can start now
 * (the lanes after it need not be scanned). */
static bool pump_lane(struct kube_client *c, struct req_list *l, uint64_t upto, uint64_t now,
                      uint64_t *wake, uint32_t max_starts)
{
    for (struct kube_req *r = l->head, *nx; r && !c->dead && max_starts > 0; r = nx) {
        nx = r->next;
        if (r->queued_ms > upto)
            return false; /* queued in order: the rest are younger */
        bool special = req_special(r);
        if (!special && c->inflight >= c->max_inflight) {
            if (c->pending_special == 0)
                return true;
            continue; /* a completion pumps again */
        }
        if (r->not_before > now) {
            if (r->not_before < *wake)
                *wake = r->not_before;
            continue;
        }
        if (!special && c->bucket < 1.0) {
            uint64_t w = (uint64_t)((1.0 - c->bucket) * 1000.0 / c->qps) + 1;
            if (now + w < *wake)
                *wake = now + w;
            if (c->pending_special == 0)
                return true;
            continue;
        }
        if (req_gated(r) && c->gate) {
            if (!c->gate(c->gate_ctx)) {
                /* closed: this write and every other one are dropped, never sent nor retried
                 * (a deposed leader's); no gated request is left, so the rescan asks no more */
                kube_client_drop_writes(c);
                nx = l->head;
                continue;
            }
            nx = r->next; /* the gate may have cancelled a queued lease request */
        }
        if (!special)
            c->bucket -= 1.0;
        if (l == &c->pending_low)
            c->since_low = 0;
        else if (!special)
            c->since_low++;
        pending_unlink(c, r);
        kclient_start(c, r);
        max_starts--;
    }
    return false;
}

/* Starts what the bucket, the in-flight limit and backoffs allow; arms the timer for the rest. */
void kclient_pump(struct kube_client *c)
{
    for (struct kube_req *r = c->active.head, *nx; r; r = nx) {
        nx = r->next;
        if (r->cancelled) {
            kclient_req_detach(c, r);
            kclient_req_free(r);
        }
    }
    if (kclient_exec_hold(c)) /* pumped again when the plugin has answered */
        return;
    uint64_t now = uv_now(c->loop);
    if (now > c->bucket_ms) {
        c->bucket += (double)(now - c->bucket_ms) * c->qps / 1000.0;
        if (c->bucket > c->burst)
            c->bucket = c->burst;
        c->bucket_ms = now;
    }
    uint64_t wake = UINT64_MAX;
    /* The scan stops as soon as nothing further down the queue can start: with thousands of
     * queued binds, scanning all of them on every completion made a cycle's binds quadratic.
     * A completion pumps again (in-flight limit), and so does the timer (bucket, backoff). The
     * low lane is scanned only when the normal one leaves room. */
    bool full = false;
    /* an overdue low request takes one start in every KCLIENT_LOW_SHARE: never starved, never
     * ahead of the others for long (a backlog of them all overdue must not hold Bindings) */
    if (c->low_max_wait_ms >= 0 && now >= (uint64_t)c->low_max_wait_ms &&
        c->since_low >= KCLIENT_LOW_SHARE - 1)
        full = pump_lane(c, &c->pending_low, now - (uint64_t)c->low_max_wait_ms, now, &wake, 1);
    if (!full && !c->dead)
        full = pump_lane(c, &c->pending, UINT64_MAX, now, &wake, UINT32_MAX);
    if (!full && !c->dead)
        pump_lane(c, &c->pending_low, UINT64_MAX, now, &wake, UINT32_MAX);
    if (c->pending_low.head && c->low_max_wait_ms >= 0) { /* when the head becomes overdue */
        uint64_t due = c->pending_low.head->queued_ms + (uint64_t)c->low_max_wait_ms;
        if (due > now && due < wake)
            wake = due;
    }
    if (c->dead)
        return;
    if (wake != UINT64_MAX)
        uv_timer_start(&c->pump_timer, on_pump, wake > now ? wake - now : 1, 0);
}

static void on_pump(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    kclient_enter(c);
    if (!c->dead)
        kclient_pump(c);
    kclient_leave(c);
}

/* Is a write queued or on the wire? The first one found ends the scan: the writes queued at a
 * shutdown (thousands of status writes) sit at the head of their lanes, so each answer that may
 * end the drain costs O(1), not a pass over them all. */
static bool any_write(const struct kube_client *c)
{
    for (const struct kube_req *r = c->pending.head; r; r = r->next)
        if (req_gated(r))
            return true;
    for (const struct kube_req *r = c->pending_low.head; r; r = r->next)
        if (req_gated(r))
            return true;
    for (const struct kube_req *r = c->active.head; r; r = r->next)
        if (req_gated(r) && !r->cancelled)
            return true;
    return false;
}

/* Ends a drain once no write is queued or on the wire. */
void kclient_drain_check(struct kube_client *c)
{
    if (!c->drain_fn || c->dead || any_write(c))
        return;
    void (*fn)(void *) = c->drain_fn;
    c->drain_fn = NULL;
    uv_timer_stop(&c->drain_timer);
    fn(c->drain_ctx);
}

static int queue_req(struct kube_client *c, enum kube_method m, const char *path, const char *body,
                     size_t len, unsigned flags, kube_resp_fn *fn, kube_data_fn *data, void *ctx,
                     struct kube_req **out)
{
    if (out)
        *out = NULL;
    if (!c || c->dead || !path || path[0] != '/')
        return SCHED_EINVAL;
    struct kube_req *r = calloc(1, sizeof(*r));
    if (!r)
        return SCHED_ENOMEM;
    r->c = c;
    r->m = m;
    r->flags = flags;
    r->fn = fn;
    r->data = data;
    r->stream = data != NULL;
    r->ctx = ctx;
    r->path = strdup(path);
    if (body) {
        r->body = malloc(len + 1);
        if (r->body) {
            memcpy(r->body, body, len);
            r->body[len] = '\0';
        }
        r->blen = len;
    }
    if (!r->path || (body && !r->body)) {
        kclient_req_free(r);
        return SCHED_ENOMEM;
    }
    kclient_pending_push(c, r);
    kclient_pump_soon(c);
    if (out)
        *out = r;
    return 0;
}

int kube_request(struct kube_client *c, enum kube_method m, const char *path, const char *body,
                 size_t len, unsigned flags, kube_resp_fn *fn, void *ctx)
{
    return queue_req(c, m, path, body, len, flags, fn, NULL, ctx, NULL);
}

int kube_request_h(struct kube_client *c, enum kube_method m, const char *path, const char *body,
                   size_t len, unsigned flags, kube_resp_fn *fn, void *ctx, struct kube_req **out)
{
    return queue_req(c, m, path, body, len, flags, fn, NULL, ctx, out);
}

int kube_stream(struct kube_client *c, const char *path, kube_data_fn *data, kube_resp_fn *done,
                void *ctx, struct kube_req **out)
{
    if (!data)
        return SCHED_EINVAL;
    return queue_req(c, KUBE_GET, path, NULL, 0, KUBE_NO_RETRY | KUBE_NO_LIMIT, done, data, ctx,
                     out);
}

void kube_req_set_timeout(struct kube_req *r, uint32_t ms)
{
    if (r && !r->on_wire)
        r->timeout_ms = ms;
}

void kube_client_set_gate(struct kube_client *c, bool (*gate)(void *ctx), void *ctx)
{
    c->gate = gate;
    c->gate_ctx = ctx;
}

uint32_t kube_client_drop_writes(struct kube_client *c)
{
    if (!c || c->dead)
        return 0;
    uint32_t n = 0;
    struct req_list *lanes[] = {&c->pending, &c->pending_low};
    for (int k = 0; k < 2; k++)
        for (struct kube_req *r = lanes[k]->head, *nx; r; r = nx) {
            nx = r->next;
            if (req_gated(r)) {
                pending_unlink(c, r);
                kclient_req_free(r);
                n++;
            }
        }
    for (struct kube_req *r = c->active.head, *nx; r; r = nx) {
        nx = r->next;
        if (req_gated(r) && !r->cancelled) {
            kube_req_cancel(r); /* off the multi handle now, or by the pump inside curl */
            n++;
        }
    }
    c->stats.dropped += n;
    if (n)
        LOG_WARN("kube", "dropped %u writes not sent or not answered: no longer allowed", n);
    return n;
}

static void on_drain_timeout(uv_timer_t *t)
{
    struct kube_client *c = t->data;
    kclient_enter(c);
    if (!c->dead && c->drain_fn) {
        kube_client_drop_writes(c);
        kclient_drain_check(c);
    }
    kclient_leave(c);
}

void kube_client_drain_writes(struct kube_client *c, uint64_t max_ms, void (*done)(void *ctx),
                              void *ctx)
{
    if (!c || c->dead)
        return;
    c->drain_fn = done;
    c->drain_ctx = ctx;
    uv_timer_start(&c->drain_timer, on_drain_timeout, max_ms, 0);
    kclient_enter(c);
    kclient_drain_check(c);
    kclient_leave(c);
}

void kube_req_cancel(struct kube_req *r)
{
    if (!r || r->cancelled)
        return;
    struct kube_client *c = r->c;
    r->cancelled = true;
    r->fn = NULL;
    if (!r->on_wire) {
        pending_unlink(c, r);
        kclient_req_free(r);
    } else if (c->in_curl) {
        kclient_pump_soon(c); /* the start timer takes it off the wire */
    } else {
        kclient_req_detach(c, r);
        kclient_req_free(r);
        kclient_pump_soon(c);
    }
}
