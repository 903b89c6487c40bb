/* sched/kube/lease.c: leader election on a coordination.k8s.io/v1 Lease (see client.h).
 *
 * Owns: one candidate's state (leading or not, the last Lease object seen, the local time its
 * record last changed, the last successful renewal), the retry timer, release, and the MicroTime
 * formatter. Must not touch: what the daemon does when leading (the callback decides), the HTTP
 * layer (client.c), anything outside sched/kube.
 *
 * Algorithm (client-go leaderelection, reference section 1.9): every retry period (x [1, 1.2)
 * jitter) a leader first PUTs a renewal on the last object it saw; otherwise (or when that
 * fails) GET; 404 -> POST; a record held by another candidate counts as expired only when it has
 * not changed for its leaseDurationSeconds by the local clock; then PUT with the GET's
 * resourceVersion. A leader that sees another holder, or has not renewed within the renew
 * deadline, stops leading (callback false). A voluntary release does not call the callback.
 *
 * The renew deadline does not depend on any request coming back: a timer of its own fires when
 * renew_s have passed since the SEND time of the last successful acquire or renewal (the other
 * candidates count lease_s from when they see that write, which is after it was sent), and
 * kube_lease_check asks the same question synchronously (a cycle that kept the loop busy past
 * the deadline). Every lease request times out at what is left of the deadline (a leader) or
 * after renew_s (a candidate), and bypasses the client's QPS bucket and in-flight limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "sched/core/log.h"
#include "sched/kube/client.h"
#include "sched/kube/objects.h"
#include "sched/kube/wire.h"

#define RELEASE_TRIES 3

void kube_microtime_now(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    kobj_format_time((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, buf, cap);
}

struct kube_lease {
    struct kube_client *c;
    char *ns, *name, *identity;
    char *coll, *obj; /* collection and object paths */
    uint32_t lease_s, renew_s, retry_ms;
    kube_lease_fn *fn;
    void *ctx;
    uv_timer_t timer;
    uv_timer_t deadline; /* fires at renewed_ms + renew_s while leading */
    int closing;         /* timers still closing after free */
    struct kube_req *req;
    uint64_t sent_ms; /* loop time the request in `req` was queued (bypasses every queue) */
    bool leading;
    cJSON *last;          /* the last Lease object seen (GET, POST or PUT response) */
    char *observed;       /* its spec, printed: the record compared for changes */
    uint64_t observed_ms; /* loop time when the record was last seen to change */
    uint64_t renewed_ms;  /* loop time the last successful acquire or renewal was sent */
    bool stopped;         /* released: no more candidacy */
    void (*release_done)(void *ctx);
    void *release_ctx;
    int release_tries;
    int depth;
    bool dead;
};

static void lease_release_mem(struct kube_lease *l);

static void l_enter(struct kube_lease *l)
{
    l->depth++;
}

static bool l_leave(struct kube_lease *l)
{
    if (--l->depth == 0 && l->dead) {
        lease_release_mem(l);
        return false;
    }
    return !l->dead;
}

static uint64_t now_ms(struct kube_lease *l)
{
    uv_loop_t *loop = kube_client_loop(l->c);
    uv_update_time(loop);
    return uv_now(loop);
}

static void on_deadline(uv_timer_t *t);

static uint64_t renew_ms(const struct kube_lease *l)
{
    return (uint64_t)l->renew_s * 1000;
}

static void set_leading(struct kube_lease *l, bool on, const char *why)
{
    if (l->leading == on)
        return;
    l->leading = on;
    if (!on)
        uv_timer_stop(&l->deadline);
    if (on)
        LOG_INFO("kube", "lease %s/%s: %s is now the leader", l->ns, l->name, l->identity);
    else
        LOG_WARN("kube", "lease %s/%s: %s stopped leading: %s", l->ns, l->name, l->identity, why);
    if (l->fn && !l->dead)
        l->fn(l->ctx, on);
}

static void tick(uv_timer_t *t);
static void next_tick(struct kube_lease *l);

/* Steps down when renew_s have passed since the last successful renewal was sent; a request
 * still in flight is cancelled (its answer would come too late to count). True while leading. */
static bool check_deadline(struct kube_lease *l)
{
    if (!l->leading)
        return false;
    uint64_t now = now_ms(l);
    if (now - l->renewed_ms < renew_ms(l))
        return true;
    if (l->stopped) /* releasing: the release's request goes on, no callback */
        return false;
    if (l->req) { /* the caller re-arms the retry timer (candidacy goes on) */
        kube_req_cancel(l->req);
        l->req = NULL;
    }
    char why[96];
    snprintf(why, sizeof(why), "renew deadline passed: no successful renewal for %llu ms",
             (unsigned long long)(now - l->renewed_ms));
    set_leading(l, false, why);
    return false;
}

static void on_deadline(uv_timer_t *t)
{
    struct kube_lease *l = t->data;
    if (l->dead || l->stopped)
        return;
    l_enter(l);
    check_deadline(l);
    if (l_leave(l) && !l->req)
        next_tick(l);
}

static void next_tick(struct kube_lease *l)
{
    if (l->dead || l->stopped)
        return;
    uint64_t d = l->retry_ms + (uint64_t)(kube_client_rand(l->c) * 0.2 * l->retry_ms);
    uv_timer_start(&l->timer, tick, d, 0);
}

static const char *spec_str(const cJSON *spec, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double spec_num(const cJSON *spec, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void put_num(cJSON *o, const char *k, double v)
{
    cJSON *n = cJSON_CreateNumber(v);
    if (n && !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n) && !cJSON_AddItemToObject(o, k, n))
        cJSON_Delete(n);
}

static void put_str(cJSON *o, const char *k, const char *v)
{
    cJSON *n = cJSON_CreateString(v);
    if (n && !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n) && !cJSON_AddItemToObject(o, k, n))
        cJSON_Delete(n);
}

/* Records a Lease object seen; notes the local time when its spec changed. */
static void observe(struct kube_lease *l, cJSON *obj)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    char *rec = spec ? cJSON_PrintUnformatted(spec) : strdup("");
    if (rec && (!l->observed || strcmp(rec, l->observed))) {
        free(l->observed);
        l->observed = rec;
        l->observed_ms = now_ms(l);
    } else {
        free(rec);
    }
    cJSON_Delete(l->last);
    l->last = obj;
}

/* A PUT or POST body from `base` (a Lease object, or NULL for a new one). */
static char *record_body(struct kube_lease *l, const cJSON *base, const char *holder,
                         uint32_t duration, bool new_term)
{
    char now[40];
    kube_microtime_now(now, sizeof(now));
    cJSON *o = base ? cJSON_Duplicate(base, true) : cJSON_CreateObject();
    if (!o)
        return NULL;
    if (!base) {
        put_str(o, "apiVersion", "coordination.k8s.io/v1");
        put_str(o, "kind", "Lease");
        cJSON *m = cJSON_AddObjectToObject(o, "metadata");
        if (m) {
            put_str(m, "name", l->name);
            put_str(m, "namespace", l->ns);
        }
    }
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
    if (!cJSON_IsObject(spec)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, "spec");
        spec = cJSON_AddObjectToObject(o, "spec");
    }
    char *out = NULL;
    if (spec) {
        double trans = spec_num(spec, "leaseTransitions", 0);
        put_str(spec, "holderIdentity", holder);
        put_num(spec, "leaseDurationSeconds", duration);
        put_str(spec, "renewTime", now);
        if (!base) {
            put_str(spec, "acquireTime", now);
            put_num(spec, "leaseTransitions", 0);
        } else if (new_term) {
            put_str(spec, "acquireTime", now);
            put_num(spec, "leaseTransitions", trans + 1);
        } else if (!*holder) { /* release */
            put_str(spec, "acquireTime", now);
        }
        out = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(o);
    return out;
}

static void on_get(void *ctx, const struct kube_resp *r);

/* A successful create or update: we hold the lease. */
static void won(struct kube_lease *l, const struct kube_resp *r)
{
    cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
    if (obj)
        observe(l, obj);
    uint64_t now = now_ms(l);
    if (now - l->sent_ms >= renew_ms(l)) { /* cannot happen: the request timed out before */
        LOG_WARN("kube", "lease %s/%s: a write came back after the renew deadline", l->ns, l->name);
        return;
    }
    l->renewed_ms = l->sent_ms;
    uv_timer_start(&l->deadline, on_deadline, l->renewed_ms + renew_ms(l) - now, 0);
    set_leading(l, true, NULL);
}

static void on_write(void *ctx, const struct kube_resp *r)
{
    struct kube_lease *l = ctx;
    l->req = NULL;
    l_enter(l);
    if (r->status >= 200 && r->status < 300) {
        won(l, r);
    } else {
        LOG_DEBUG("kube", "lease %s/%s: update by %s failed: %s", l->ns, l->name, l->identity,
                  r->error ? r->error : "no response");
    }
    if (l_leave(l))
        next_tick(l);
}

/* Queues one lease request (never behind binds: KUBE_NO_LIMIT) with a timeout of what is left
 * of the renew deadline for a leader, renew_s for a candidate; a leader past its deadline
 * steps down instead (SCHED_ERANGE). Frees body. */
static int lease_send(struct kube_lease *l, enum kube_method m, const char *path, char *body,
                      kube_resp_fn *fn)
{
    uint64_t now = now_ms(l), left = renew_ms(l);
    if (l->leading && !l->stopped) {
        if (!check_deadline(l)) {
            free(body);
            return SCHED_ERANGE;
        }
        left = l->renewed_ms + renew_ms(l) - now;
    }
    int rc = body ? kube_request_h(l->c, m, path, body, strlen(body), KUBE_NO_LIMIT | KUBE_NO_RETRY,
                                   fn, l, &l->req)
                  : kube_request_h(l->c, m, path, NULL, 0, KUBE_NO_LIMIT | KUBE_NO_RETRY, fn, l,
                                   &l->req);
    free(body);
    if (rc == 0) {
        kube_req_set_timeout(l->req, (uint32_t)left);
        l->sent_ms = now;
    }
    return rc;
}

static void on_fast(void *ctx, const struct kube_resp *r)
{
    struct kube_lease *l = ctx;
    l->req = NULL;
    l_enter(l);
    if (r->status >= 200 && r->status < 300) {
        won(l, r);
        if (l_leave(l))
            next_tick(l);
        return;
    }
    /* fall back to the slow path at once */
    if (lease_send(l, KUBE_GET, l->obj, NULL, on_get) != 0)
        next_tick(l);
    l_leave(l);
}

static void on_get(void *ctx, const struct kube_resp *r)
{
    struct kube_lease *l = ctx;
    l->req = NULL;
    l_enter(l);
    uint64_t now = now_ms(l);
    if (r->status == 404) {
        if (lease_send(l, KUBE_POST, l->coll, record_body(l, NULL, l->identity, l->lease_s, true),
                       on_write) != 0)
            next_tick(l);
        l_leave(l);
        return;
    }
    cJSON *obj = r->status == 200 ? cJSON_ParseWithLength(r->body, r->len) : NULL;
    if (!obj) {
        LOG_WARN("kube", "lease %s/%s: get: %s", l->ns, l->name,
                 r->error ? r->error : "not a JSON object");
        if (l_leave(l))
            next_tick(l);
        return;
    }
    observe(l, obj);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(l->last, "spec");
    const char *holder = spec ? spec_str(spec, "holderIdentity") : NULL;
    double dur = spec ? spec_num(spec, "leaseDurationSeconds", l->lease_s) : l->lease_s;
    bool mine = holder && !strcmp(holder, l->identity);
    if (holder && *holder && !mine && l->observed_ms + (uint64_t)(dur * 1000.0) > now) {
        set_leading(l, false, "another candidate holds the lease");
        if (l_leave(l))
            next_tick(l);
        return;
    }
    if (lease_send(l, KUBE_PUT, l->obj, record_body(l, l->last, l->identity, l->lease_s, !mine),
                   on_write) != 0)
        next_tick(l);
    l_leave(l);
}

static void tick(uv_timer_t *t)
{
    struct kube_lease *l = t->data;
    if (l->dead || l->stopped)
        return;
    l_enter(l);
    check_deadline(l);
    if (!l_leave(l))
        return;
    if (l->req) { /* still waiting for the last attempt */
        next_tick(l);
        return;
    }
    int rc;
    if (l->leading && l->last)
        rc = lease_send(l, KUBE_PUT, l->obj,
                        record_body(l, l->last, l->identity, l->lease_s, false), on_fast);
    else
        rc = lease_send(l, KUBE_GET, l->obj, NULL, on_get);
    if (rc != 0)
        next_tick(l);
}

static bool dns_name(const char *s)
{
    if (!s || !*s || strlen(s) > 253)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
            return false;
    return true;
}

int kube_lease_new(struct kube_client *c, const struct kube_lease_opts *o, kube_lease_fn *fn,
                   void *ctx, struct kube_lease **out, struct sched_errbuf *eb)
{
    if (!c || !o || !out)
        return sched_fail(eb, SCHED_EINVAL, "lease: client, options and output are required");
    if (!dns_name(o->ns) || !dns_name(o->name))
        return sched_fail(eb, SCHED_EINVAL, "lease: namespace and name must be DNS names (%s/%s)",
                          o->ns ? o->ns : "(null)", o->name ? o->name : "(null)");
    if (!o->identity || !*o->identity)
        return sched_fail(eb, SCHED_EINVAL, "lease %s/%s: identity is required", o->ns, o->name);
    uint32_t lease_s = o->lease_s ? o->lease_s : 15, renew_s = o->renew_s ? o->renew_s : 10;
    uint32_t retry_ms = o->retry_ms ? o->retry_ms : 2000;
    if (!(lease_s > renew_s && (double)renew_s * 1000.0 > 1.2 * retry_ms))
        return sched_fail(eb, SCHED_EINVAL,
                          "lease %s/%s: need leaseDuration (%u s) > renewDeadline (%u s) > 1.2 x "
                          "retryPeriod (%u ms)",
                          o->ns, o->name, lease_s, renew_s, retry_ms);
    struct kube_lease *l = calloc(1, sizeof(*l));
    if (!l)
        return sched_fail(eb, SCHED_ENOMEM, "lease: out of memory");
    l->c = c;
    l->fn = fn;
    l->ctx = ctx;
    l->lease_s = lease_s;
    l->renew_s = renew_s;
    l->retry_ms = retry_ms;
    l->ns = strdup(o->ns);
    l->name = strdup(o->name);
    l->identity = strdup(o->identity);
    size_t n = strlen(o->ns) + strlen(o->name) + 64;
    l->coll = malloc(n);
    l->obj = malloc(n);
    if (!l->ns || !l->name || !l->identity || !l->coll || !l->obj) {
        free(l->ns);
        free(l->name);
        free(l->identity);
        free(l->coll);
        free(l->obj);
        free(l);
        return sched_fail(eb, SCHED_ENOMEM, "lease: out of memory");
    }
    snprintf(l->coll, n, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", o->ns);
    snprintf(l->obj, n, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", o->ns, o->name);
    uv_timer_init(kube_client_loop(c), &l->timer);
    l->timer.data = l;
    uv_timer_init(kube_client_loop(c), &l->deadline);
    l->deadline.data = l;
    uv_timer_start(&l->timer, tick, 0, 0);
    *out = l;
    return 0;
}

int64_t kube_lease_transitions(const struct kube_lease *l)
{
    return (int64_t)spec_num(cJSON_GetObjectItemCaseSensitive(l->last, "spec"), "leaseTransitions",
                             0);
}

bool kube_lease_leading(const struct kube_lease *l)
{
    return l && l->leading;
}

int64_t kube_lease_left_ms(struct kube_lease *l)
{
    if (!l || l->dead || !l->leading)
        return 0;
    uint64_t now = now_ms(l), until = l->renewed_ms + renew_ms(l);
    return now < until ? (int64_t)(until - now) : 0;
}

bool kube_lease_check(struct kube_lease *l)
{
    if (!l || l->dead)
        return false;
    l_enter(l);
    bool on = check_deadline(l);
    if (!l_leave(l))
        return false;
    if (!on && !l->req && !uv_is_active((uv_handle_t *)&l->timer))
        next_tick(l);
    return on;
}

static void release_finish(struct kube_lease *l)
{
    l->leading = false;
    void (*done)(void *) = l->release_done;
    l->release_done = NULL;
    if (done)
        done(l->release_ctx);
}

static void on_release(void *ctx, const struct kube_resp *r);

static void on_release_get(void *ctx, const struct kube_resp *r)
{
    struct kube_lease *l = ctx;
    l->req = NULL;
    l_enter(l);
    cJSON *obj = r->status == 200 ? cJSON_ParseWithLength(r->body, r->len) : NULL;
    const cJSON *spec = obj ? cJSON_GetObjectItemCaseSensitive(obj, "spec") : NULL;
    const char *holder = spec ? spec_str(spec, "holderIdentity") : NULL;
    if (obj && holder && !strcmp(holder, l->identity) && l->release_tries < RELEASE_TRIES) {
        observe(l, obj);
        if (lease_send(l, KUBE_PUT, l->obj, record_body(l, l->last, "", 1, false), on_release) ==
            0) {
            l_leave(l);
            return;
        }
    } else {
        cJSON_Delete(obj);
    }
    release_finish(l);
    l_leave(l);
}

static void on_release(void *ctx, const struct kube_resp *r)
{
    struct kube_lease *l = ctx;
    l->req = NULL;
    l_enter(l);
    l->release_tries++;
    if (r->status == 409 && l->release_tries < RELEASE_TRIES &&
        lease_send(l, KUBE_GET, l->obj, NULL, on_release_get) == 0) {
        l_leave(l);
        return;
    }
    if (r->status < 200 || r->status > 299)
        LOG_WARN("kube", "lease %s/%s: release by %s failed: %s", l->ns, l->name, l->identity,
                 r->error ? r->error : "no response");
    else
        LOG_INFO("kube", "lease %s/%s: released by %s", l->ns, l->name, l->identity);
    release_finish(l);
    l_leave(l);
}

void kube_lease_release(struct kube_lease *l, void (*done)(void *ctx), void *ctx)
{
    if (!l || l->dead)
        return;
    l->stopped = true;
    uv_timer_stop(&l->timer);
    uv_timer_stop(&l->deadline); /* a voluntary release: no callback (kube_lease_check still
                                    answers false past the deadline, without side effects) */
    if (l->req) {
        kube_req_cancel(l->req);
        l->req = NULL;
    }
    bool held = l->leading && l->last;
    l->release_done = done;
    l->release_ctx = ctx;
    l->release_tries = 0;
    if (!held ||
        lease_send(l, KUBE_PUT, l->obj, record_body(l, l->last, "", 1, false), on_release) != 0)
        release_finish(l);
}

static void on_lease_closed(uv_handle_t *h)
{
    struct kube_lease *l = h->data;
    if (--l->closing == 0)
        free(l);
}

static void lease_release_mem(struct kube_lease *l)
{
    cJSON_Delete(l->last);
    free(l->observed);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l->coll);
    free(l->obj);
    l->closing = 2;
    uv_close((uv_handle_t *)&l->timer, on_lease_closed);
    uv_close((uv_handle_t *)&l->deadline, on_lease_closed);
}

void kube_lease_free(struct kube_lease *l)
{
    if (!l || l->dead)
        return;
    l->dead = true;
    if (l->req) {
        kube_req_cancel(l->req);
        l->req = NULL;
    }
    uv_timer_stop(&l->timer);
    uv_timer_stop(&l->deadline);
    if (l->depth == 0)
        lease_release_mem(l);
}
