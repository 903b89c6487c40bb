/* sched/kube/driver_status.c: status and Events of the Kubernetes driver.
 *
 * Owns: the JSON request helpers (send_json, new_object), Events, PodGroup status for every
 * PodGroup API (scheduler-plugins, Volcano, native scheduling.k8s.io), its rate limit per gang
 * and reason (struct kstatus in d->status), the writes owed until the watch shows them (struct
 * kowed: the native scheduled conditions in d->owed, the checkpoint requests of driver_ckpt.c in
 * d->owed_ckpt on PodGroups and in d->owed_ckpt_pods on pods, one entry per pod), the PodGroup
 * status writes that could not be queued (struct kowed_status in d->owed_status: written again a
 * second later), and the pods' PodScheduled=False condition with the Binding that waits for it
 * (struct kpod_writes in d->pod_writes).
 *
 * A write that cannot even be queued (out of memory) is never taken for written: an Event is
 * dropped with a warning naming it (as a refused one is), a PodGroup status is owed and
 * written again by the next cycles (at most KDRV_OWED_TRIES times), and a pod's condition is
 * sent again by the next cycle, which one armed a second later runs.
 *
 * Must not touch: the store's tables, binds, deletes and evictions (driver_bind.c,
 * driver_life.c); it only writes what it is told.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/core/hash.h"
#include "sched/kube/driver_int.h"

/* ---- JSON request helpers ------------------------------------------------------------------- */

static void ignore_resp(void *ctx, const struct kube_resp *r)
{
    const char *what = ctx;
    if (r->status < 200 || r->status >= 300)
        LOG_WARN(KDRV_MOD, "request failed: what=%s status=%d error=%s", what ? what : "",
                 r->status, r->error ? r->error : "");
}

/* A request whose body is text (len bytes; NULL for none), with the client's request flags
 * (KUBE_LOW: the writes that may wait). The client copies the body. */
static int send_text(struct kdrv *d, enum kube_method m, const char *path, const char *s,
                     size_t len, unsigned flags, kube_resp_fn *fn, void *ctx)
{
    /* every write is a leader's: the client gates it (req_gated), so none leaves past the
     * renew deadline and a step-down drops those queued */
    int rc = kube_request(d->client, m, path, s, len, flags, fn ? fn : ignore_resp,
                          fn ? ctx : (void *)"");
    if (rc != 0)
        LOG_ERROR(KDRV_MOD, "out of memory queueing a request: path=%s", path);
    return rc;
}

/* kdrv_send_json with the client's request flags. */
static int send_json(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                     unsigned flags, kube_resp_fn *fn, void *ctx)
{
    /* a write without its body is a body that could not be built (out of memory: a NULL from
     * cJSON_CreateObject), never a request: it would patch nothing and be taken for written */
    if (!body && m != KUBE_GET && m != KUBE_DELETE) {
        LOG_ERROR(KDRV_MOD, "out of memory building a request's body: path=%s", path);
        return SCHED_ENOMEM;
    }
    char *s = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (body && !s) { /* never sent without its body (a delete's uid precondition) */
        LOG_ERROR(KDRV_MOD, "out of memory writing a request's body: path=%s", path);
        return SCHED_ENOMEM;
    }
    int rc = send_text(d, m, path, s, s ? strlen(s) : 0, flags, fn, ctx);
    free(s);
    return rc;
}

int kdrv_send_json(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                   kube_resp_fn *fn, void *ctx)
{
    return send_json(d, m, path, body, 0, fn, ctx);
}

int kdrv_send_low(struct kdrv *d, enum kube_method m, const char *path, cJSON *body)
{
    return send_json(d, m, path, body, KUBE_LOW, NULL, NULL);
}

/* kdrv_send_json whose failure to queue is answered like an API failure: fn runs at once with
 * status 0, so the caller's retry (its timer, its tries) takes over. */
void kdrv_send_or_fail(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                       kube_resp_fn *fn, void *ctx)
{
    if (kdrv_send_json(d, m, path, body, fn, ctx) != 0) {
        struct kube_resp r = {.status = 0, .body = "", .error = "not queued (out of memory)"};
        fn(ctx, &r);
    }
}

/* A PodGroup status write to `path`: a waiting one (the gang cannot be placed yet) may wait
 * behind the Bindings (KUBE_LOW) and rewrites one still queued instead of queueing another
 * (then fn is not called: *replaced, when given, is set); any other lifts a waiting one still
 * queued out of the low lane first, so that it never lands after this one. */
static int pg_status_send(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                          bool waiting, kube_resp_fn *fn, void *ctx, bool *replaced_out)
{
    if (!waiting) {
        kube_client_promote(d->client, path);
        return send_json(d, m, path, body, 0, fn, ctx);
    }
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    bool replaced = text && kube_client_replace(d->client, path, text, strlen(text));
    free(text);
    if (replaced) {
        cJSON_Delete(body);
        if (replaced_out)
            *replaced_out = true;
        return 0;
    }
    return send_json(d, m, path, body, KUBE_LOW, fn, ctx);
}

/* A new API object {apiVersion, kind, metadata: {name, namespace}}; *meta (may be NULL) gets
 * its metadata for more fields. */
cJSON *kdrv_new_object(const char *api_version, const char *kind, const char *ns, const char *name,
                       cJSON **meta)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", ns);
    if (meta)
        *meta = m;
    return o;
}

/* An Event's name, as client-go's recorder makes it: the object's name, '.', the time in Unix
 * nanoseconds in hex. The nanoseconds are made strictly increasing within the process (the
 * daemon is one thread): two Events about one object within one clock tick (a gang's waiting
 * Event and a NameConflict in the same cycle) got the same name, and the API server refused the
 * second with 409 AlreadyExists. The name is a DNS subdomain of at most 253 characters: other
 * characters become '-' (gang keys of 1.35 Workloads have ':'), and a long object name is cut
 * so that the suffix fits. out must hold 254 bytes. */
void kdrv_event_name(char *out, size_t n, const char *name)
{
    static uint64_t last_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (ns <= last_ns)
        ns = last_ns + 1;
    last_ns = ns;
    char suffix[24];
    int sn = snprintf(suffix, sizeof(suffix), ".%llx", (unsigned long long)ns);
    int keep = 253 - sn; /* DNS subdomain: 253 characters at most */
    snprintf(out, n, "%.*s%s", keep, name, suffix);
    for (char *q = out; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '.' || *q == '-'))
            *q = '-';
}

/* events.k8s.io/v1 Event about an object (regarding, with its uid: kubectl describe selects a
 * pod's or PodGroup's events by involvedObject.uid, which the API server fills from
 * regarding.uid). ns NULL: a cluster-scoped object (a Node): the Event lives in "default", as
 * client-go's recorder puts it, and regarding has no namespace. */
static const char *pg_api_version(const struct kpg *pg)
{
    return knative_api_version(pg->api); /* every PodGroup API (sched/kube/native.c's table) */
}

void kdrv_post_event(struct kdrv *d, const char *api_version, const char *kind, const char *ns,
                     const char *name, const char *uid, const char *type, const char *reason,
                     const char *action, const char *note, const struct kpg *related)
{
    char t[40], ev_name[300], path[300];
    int64_t now = kdrv_now(d);
    const char *ev_ns = ns ? ns : "default";
    kobj_format_time(now, t, sizeof(t));
    kdrv_event_name(ev_name, sizeof(ev_name), name);
    cJSON *e = kdrv_new_object("events.k8s.io/v1", "Event", ev_ns, ev_name, NULL);
    cJSON_AddStringToObject(e, "eventTime", t);
    cJSON_AddStringToObject(e, "reportingController", "gangsched.io/scheduler");
    char inst[129];
    snprintf(inst, sizeof(inst), "%s", d->o->identity ? d->o->identity : "gangsched");
    cJSON_AddStringToObject(e, "reportingInstance", inst);
    cJSON_AddStringToObject(e, "action", action);
    cJSON_AddStringToObject(e, "reason", reason);
    cJSON_AddStringToObject(e, "type", type);
    char n2[1024];
    snprintf(n2, sizeof(n2), "%s", note);
    cJSON_AddStringToObject(e, "note", n2);
    cJSON *reg = cJSON_AddObjectToObject(e, "regarding");
    cJSON_AddStringToObject(reg, "apiVersion", api_version);
    cJSON_AddStringToObject(reg, "kind", kind);
    if (ns)
        cJSON_AddStringToObject(reg, "namespace", ns);
    cJSON_AddStringToObject(reg, "name", name);
    if (uid && *uid)
        cJSON_AddStringToObject(reg, "uid", uid);
    if (related) {
        cJSON *rel = cJSON_AddObjectToObject(e, "related");
        cJSON_AddStringToObject(rel, "apiVersion", pg_api_version(related));
        cJSON_AddStringToObject(rel, "kind", knative_kind(related->api));
        cJSON_AddStringToObject(rel, "namespace", related->ns);
        cJSON_AddStringToObject(rel, "name", related->name);
        if (related->uid)
            cJSON_AddStringToObject(rel, "uid", related->uid);
    }
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", ev_ns);
    /* a refused Event is logged and dropped (ignore_resp); one not queued is too: an Event
     * says what happened then, and the status it goes with carries the state */
    if (send_json(d, KUBE_POST, path, e, KUBE_LOW, NULL, NULL) != 0) /* after the Bindings */
        LOG_WARN(KDRV_MOD, "event dropped (not queued: out of memory): reason=%s %s=%s%s%s", reason,
                 kind, ns ? ns : "", ns ? "/" : "", name);
}

void kdrv_split_key(const char *key, char *ns, size_t nn, char *name, size_t n)
{
    const char *slash = strchr(key, '/');
    if (!slash) {
        snprintf(ns, nn, "default");
        snprintf(name, n, "%s", key);
        return;
    }
    snprintf(ns, nn, "%.*s", (int)(slash - key), key);
    snprintf(name, n, "%s", slash + 1);
}

/* Another row was written for the gang (placed, torn down): its next verdict is new again. */
void kdrv_forget_logged(struct kdrv *d, const char *gang)
{
    struct kstatus *st = strmap_get(&d->status, gang);
    if (st)
        st->logged = 0;
}

static void on_xk8s_status(void *ctx, const struct kube_resp *r);

/* RFC 3339 in seconds ("2025-01-01T12:00:00Z"): metav1.Time, the type of conditions'
 * lastTransitionTime (MicroTime is for Events and Leases). */
static const char *kdrv_rfc3339(int64_t ms, char *buf, size_t n)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/* ---- writes owed until the watch shows them ------------------------------------------------- */

/* A write to a PodGroup or a pod that is sent again until the watch shows it
 * (kdrv_owed_status): a native PodGroup's scheduled condition True (d->owed), a checkpoint
 * request on a PodGroup (d->owed_ckpt) or on one member pod of a gang asked on its pods
 * (d->owed_ckpt_pods, driver_ckpt.c). The first two maps are by gang key (a PodGroup written
 * to has its gang's key), the third by pod key. */
enum kowed_kind { KOWED_SCHEDULED = 0, KOWED_CKPT, KOWED_CKPT_POD, KOWED_N };

struct kowed {
    enum kowed_kind kind;
    char *obj;        /* the PodGroup's or (KOWED_CKPT_POD) the pod's cache key "ns/name" */
    char *uid;        /* its uid: an object created again under the name is another */
    char *gang;       /* KOWED_CKPT_POD: the pod's gang key (the engine's handshake), else NULL */
    char *message;    /* scheduled: the condition's message */
    int64_t since_ms; /* scheduled: the first send (lastTransitionTime); ckpt: the request */
    int64_t until_ms; /* ckpt: the deadline of a preemption's request (0: an operator's) */
    int64_t retry_ms; /* sent again then unless the watch shows it */
    uint32_t tries;   /* sends so far */
    bool inflight;
};

/* A send in flight: the entry it is for (which may be gone when the answer comes). */
struct owed_req {
    struct kdrv *d;
    enum kowed_kind kind;
    char gang[];
};

static struct strmap *owed_map(struct kdrv *d, enum kowed_kind kind)
{
    return kind == KOWED_CKPT       ? &d->owed_ckpt
           : kind == KOWED_CKPT_POD ? &d->owed_ckpt_pods
                                    : &d->owed;
}

/* The gang entry o, under map key `key`, is about. */
static const char *owed_gang(const struct kowed *o, const char *key)
{
    return o->gang ? o->gang : key;
}

static void owed_free(struct kowed *o)
{
    if (!o)
        return;
    free(o->obj);
    free(o->uid);
    free(o->gang);
    free(o->message);
    free(o);
}

/* o is sent again after `wait` ms unless the watch shows it by then. */
static void owed_later(struct kdrv *d, struct kowed *o, int64_t wait)
{
    o->inflight = false;
    o->retry_ms = kdrv_now(d) + wait;
    kdrv_cycle_at(d, o->retry_ms);
}

static void on_owed(void *ctx, const struct kube_resp *r)
{
    struct owed_req *x = ctx;
    struct kowed *o = strmap_get(owed_map(x->d, x->kind), x->gang);
    bool ok = r->status >= 200 && r->status < 300;
    if (!o) {
        if (!ok)
            ignore_resp(NULL, r);
        free(x);
        return;
    }
    int64_t wait = KDRV_OWED_SEEN_MS;
    if (!ok) { /* 1 s, 2 s, 4 s, ... 16 s */
        wait = 1000LL << (o->tries > 5 ? 4 : o->tries - 1);
        LOG_WARN(KDRV_MOD,
                 "%s write failed: gang=%s%s%s status=%d error=%s (sent again in %lld ms)",
                 x->kind == KOWED_SCHEDULED ? "podgroup status" : "checkpoint request",
                 owed_gang(o, x->gang), o->gang ? " pod=" : "", o->gang ? x->gang : "", r->status,
                 r->error ? r->error : "", (long long)wait);
    }
    owed_later(x->d, o, wait);
    free(x);
}

/* Sends o, under map key `gang` (nothing is sent when the cache shows it already: the caller
 * checked), to its object (the cache's: the caller found it). Out of memory: sent again in a
 * second. */
static void owed_send(struct kdrv *d, const char *gang, struct kowed *o)
{
    char path[700] = "";
    cJSON *body;
    enum kube_method how = KUBE_PATCH_MERGE; /* metadata: a merge patch, which CRDs accept too */
    const struct kpg *pg = o->kind == KOWED_CKPT_POD ? NULL : kcache_pg(d->cache, o->obj);
    const struct kpod *pod = o->kind == KOWED_CKPT_POD ? kcache_pod(d->cache, o->obj) : NULL;
    if (o->kind == KOWED_CKPT_POD) {
        body = pod ? kdrv_ckpt_patch(o->since_ms, o->until_ms) : NULL;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", pod ? pod->ns : "",
                 pod ? pod->name : "");
    } else if (o->kind == KOWED_CKPT) {
        body = pg ? kdrv_ckpt_patch(o->since_ms, o->until_ms) : NULL;
        if (pg)
            knative_path(pg, NULL, path, sizeof(path));
    } else {
        const char *ct = pg ? knative_sched_condition(pg->api) : NULL;
        body =
            ct ? knative_condition_patch(pg, ct, true, "Scheduled", o->message, o->since_ms) : NULL;
        how = KUBE_PATCH_STRATEGIC;
        if (pg)
            knative_path(pg, "status", path, sizeof(path));
    }
    size_t n = strlen(gang) + 1;
    struct owed_req *x = body ? malloc(sizeof(*x) + n) : NULL;
    o->tries++;
    o->inflight = true;
    if (x) {
        x->d = d;
        x->kind = o->kind;
        memcpy(x->gang, gang, n);
    }
    if (!x || pg_status_send(d, how, path, body, false, on_owed, x, NULL) != 0) {
        if (!x)
            cJSON_Delete(body);
        free(x);
        LOG_ERROR(KDRV_MOD, "out of memory writing to %s %s (sent again in 1000 ms)",
                  o->kind == KOWED_CKPT_POD ? "pod" : "podgroup", o->obj);
        owed_later(d, o, 1000);
    }
}

/* The entry under `key` in the map of `kind`, made when there is none for object obj_key of uid
 * (gang: a pod's gang key, else NULL); an entry left for an object of the name deleted since
 * takes the new uid. NULL: out of memory, logged. */
static struct kowed *owed_entry(struct kdrv *d, enum kowed_kind kind, const char *key,
                                const char *obj_key, const char *uid, const char *gang)
{
    struct kowed *o = strmap_get(owed_map(d, kind), key);
    uid = uid ? uid : "";
    if (o && strcmp(o->uid, uid) != 0) {
        char *u = strdup(uid);
        if (!u) {
            LOG_ERROR(KDRV_MOD, "out of memory recording a write to %s", obj_key);
            return NULL;
        }
        free(o->uid);
        o->uid = u;
        o->since_ms = kdrv_now(d); /* another object: its entry starts afresh */
        o->tries = 0;
    }
    if (o)
        return o;
    o = calloc(1, sizeof(*o));
    if (!o || !(o->obj = strdup(obj_key)) || !(o->uid = strdup(uid)) ||
        (gang && !(o->gang = strdup(gang))) || strmap_put(owed_map(d, kind), key, o, NULL) != 0) {
        owed_free(o);
        LOG_ERROR(KDRV_MOD, "out of memory recording a write to %s", obj_key);
        return NULL;
    }
    o->kind = kind;
    o->since_ms = kdrv_now(d);
    return o;
}

/* The gang is bound: its PodGroup's condition True is owed until the watch shows it. */
static void owe_scheduled(struct kdrv *d, const char *gang, const struct kpg *pg,
                          const char *message)
{
    struct kowed *o = owed_entry(d, KOWED_SCHEDULED, gang, pg->key, pg->uid, NULL);
    if (!o)
        return;
    char *m = strdup(message ? message : "");
    if (m) {
        free(o->message);
        o->message = m;
    }
    if (!o->inflight && o->message)
        owed_send(d, gang, o);
}

void kdrv_child_scheduled(struct kdrv *d, const struct kpod *p, const struct kpg *root,
                          const char *message)
{
    const struct kpg *g = p && p->group ? kcache_pg(d->cache, p->group) : NULL;
    /* its PodGroup, then up; a group True or owed already had its ancestors done with it (an
     * earlier pod of this bind, or the tree's earlier gang) */
    for (int depth = 0; g && g != root && depth <= 4; depth++) {
        if (g->initially_scheduled || !knative_sched_condition(g->api) ||
            strmap_get(&d->owed, g->key))
            return;
        owe_scheduled(d, g->key, g, message);
        g = kcache_pg_parent(d->cache, g, NULL, 0);
    }
}

/* A new request replaces the one owed in o (under map key `key`): sent now unless a send is in
 * flight (then sent again after its answer unless the watch shows it). */
static void owe_request(struct kdrv *d, const char *key, struct kowed *o, int64_t asked_ms,
                        int64_t until_ms)
{
    o->since_ms = asked_ms;
    o->until_ms = until_ms;
    o->tries = 0;
    if (!o->inflight)
        owed_send(d, key, o);
}

void kdrv_owe_ckpt(struct kdrv *d, const struct kpg *pg, int64_t asked_ms, int64_t until_ms)
{
    struct kowed *o = owed_entry(d, KOWED_CKPT, pg->key, pg->key, pg->uid, NULL);
    if (o)
        owe_request(d, pg->key, o, asked_ms, until_ms);
}

void kdrv_owe_ckpt_pod(struct kdrv *d, const char *gang, const struct kpod *pod, int64_t asked_ms,
                       int64_t until_ms)
{
    if (kdrv_ckpt_shown(pod->ckpt_asked_ms, pod->ckpt_until_ms, asked_ms, until_ms) &&
        !strmap_get(&d->owed_ckpt_pods, pod->key))
        return; /* it shows this request already (a resumed handshake): nothing to write */
    struct kowed *o = owed_entry(d, KOWED_CKPT_POD, pod->key, pod->key, pod->uid, gang);
    if (o)
        owe_request(d, pod->key, o, asked_ms, until_ms);
}

int64_t kdrv_owed_ckpt_ms(struct kdrv *d, const struct kgang *kg)
{
    const struct kowed *o = kg->pg ? strmap_get(&d->owed_ckpt, kg->pg->key) : NULL;
    int64_t t = o ? o->since_ms : 0;
    for (uint32_t m = 0; m < kg->gang.n_pods; m++)
        if ((o = strmap_get(&d->owed_ckpt_pods, kg->members[m]->key)) && o->since_ms > t)
            t = o->since_ms;
    return t;
}

/* Whether o (under map key `key`) is done with: its object gone or another, the watch shows it,
 * or (a request of a preemption) its handshake is over; else when it was sent too often (given
 * up, logged). */
static bool owed_over(struct kdrv *d, const char *key, const struct kowed *o, int64_t now)
{
    const char *gang = owed_gang(o, key);
    const struct kpg *pg = o->kind == KOWED_CKPT_POD ? NULL : kcache_pg(d->cache, o->obj);
    const struct kpod *pod = o->kind == KOWED_CKPT_POD ? kcache_pod(d->cache, o->obj) : NULL;
    const char *uid = pg ? pg->uid : pod ? pod->uid : NULL;
    if ((!pg && !pod) || strcmp(uid ? uid : "", o->uid) != 0)
        return true;
    int64_t a = 0, u = 0; /* the request the object shows (0: none) */
    if (pod) {
        a = pod->ckpt_asked_ms;
        u = pod->ckpt_until_ms;
    } else if (o->kind == KOWED_CKPT) {
        kdrv_ckpt_pg_times(pg, &a, &u);
    }
    if (o->kind == KOWED_SCHEDULED ? pg->initially_scheduled
                                   : kdrv_ckpt_settled(d, gang, a, u, o->since_ms, o->until_ms))
        return true;
    /* a preemption's request is sent until its handshake ends; the others a bounded number
     * of times */
    bool bounded = o->kind == KOWED_SCHEDULED || o->until_ms == 0;
    if (o->inflight || now < o->retry_ms || !bounded || o->tries < KDRV_OWED_TRIES)
        return false;
    LOG_WARN(KDRV_MOD,
             "%s of gang %s was written %u times to %s %s and never seen in the watch: given up",
             o->kind == KOWED_SCHEDULED ? "the scheduled condition" : "the checkpoint request",
             gang, o->tries, pod ? "pod" : "podgroup", o->obj);
    return true;
}

static void owed_step(struct kdrv *d, enum kowed_kind kind, int64_t now)
{
    struct strlist done = {0};
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(owed_map(d, kind), &i, &k, &v);) {
        struct kowed *o = v;
        if (owed_over(d, k, o, now))
            kdrv_strlist_add(&done, k); /* out of memory: looked at again next cycle */
        else if (o->inflight)
            continue;
        else if (now >= o->retry_ms)
            owed_send(d, k, o);
        else
            kdrv_cycle_at(d, o->retry_ms);
    }
    for (uint32_t i = 0; i < done.n; i++)
        owed_free(strmap_del(owed_map(d, kind), done.v[i]));
    kdrv_strlist_free(&done);
}

/* ---- PodGroup status writes that could not be queued ----------------------------------------- */

/* A gang's PodGroup status (pg_status_write's arguments) that could not be queued (out of
 * memory), or a Volcano PUT of it refused with 409 (the object changed since the version the
 * PUT carried: another write landed first, such as its member counts): written again a second
 * later by the next cycle, from the object as seen then, at most KDRV_OWED_TRIES times in all,
 * until a newer status of the gang replaces it or its PodGroup is gone. Any other answer to a
 * queued status is final (a refused one is logged). A 409 on a status that a newer one has
 * replaced since is dropped: the newer one was sent on its own, or (a waiting gang's, which
 * takes the place of one still queued, pg_status_send) is written again by the cycles. */
struct kowed_status {
    char *pg;  /* the PodGroup's cache key "ns/name" */
    char *uid; /* its uid: a PodGroup created again under the name is another */
    char *phase, *type, *reason, *message;
    int64_t retry_ms; /* written again then (ms since the epoch) */
    uint32_t tries;   /* writes not queued or refused with 409 so far */
    /* while it is the context of a Volcano PUT (on_volcano_status): */
    struct kdrv *d;
    char *gang;
};

static int pg_status_write(struct kdrv *d, const char *gang, const struct kpg *pg,
                           const char *phase, const char *type, const char *reason,
                           const char *message, uint32_t tries);

static void owed_status_free(struct kowed_status *o)
{
    if (!o)
        return;
    free(o->pg);
    free(o->uid);
    free(o->phase);
    free(o->type);
    free(o->reason);
    free(o->message);
    free(o->gang);
    free(o);
}

/* A copy of a status write's arguments, or NULL (out of memory). */
static struct kowed_status *owed_new(const struct kpg *pg, const char *phase, const char *type,
                                     const char *reason, const char *message)
{
    struct kowed_status *o = calloc(1, sizeof(*o));
    if (!o || !(o->pg = strdup(pg->key)) || !(o->uid = strdup(pg->uid ? pg->uid : "")) ||
        !(o->phase = strdup(phase)) || !(o->type = strdup(type)) || !(o->reason = strdup(reason)) ||
        !(o->message = strdup(message))) {
        owed_status_free(o);
        return NULL;
    }
    return o;
}

/* o (taken) becomes gang's owed status, written again a second later. Logs why. */
static void owe_status(struct kdrv *d, const char *gang, struct kowed_status *o, const char *why)
{
    if (!o || strmap_put(&d->owed_status, gang, o, NULL) != 0) {
        LOG_ERROR(KDRV_MOD, "status of gang %s dropped (out of memory): reason=%s", gang,
                  o ? o->reason : "");
        owed_status_free(o);
        return;
    }
    o->tries++;
    o->retry_ms = kdrv_now(d) + 1000;
    kdrv_cycle_at(d, o->retry_ms);
    LOG_WARN(KDRV_MOD, "status of gang %s %s: written again in 1000 ms", gang, why);
}

/* Writes the status of gang's PodGroup pg; when it cannot be queued, it is owed (a second
 * later). A newer status replaces the one owed. */
static void status_send(struct kdrv *d, const char *gang, const struct kpg *pg, const char *phase,
                        const char *type, const char *reason, const char *message)
{
    owed_status_free(strmap_del(&d->owed_status, gang));
    if (pg->deleting) /* a PodGroup being deleted: the Event says why, its status is left */
        return;
    if (pg_status_write(d, gang, pg, phase, type, reason, message, 0) != 0)
        owe_status(d, gang, owed_new(pg, phase, type, reason, message),
                   "not queued (out of memory)");
}

/* A gang's status as kstatus.reason keeps it: "PHASE|REASON|MESSAGE", cut to STATUS_KEY_MAX. */
#define STATUS_KEY_MAX 600
static void status_key(char *out, const char *phase, const char *reason, const char *message)
{
    snprintf(out, STATUS_KEY_MAX, "%s|%s|%s", phase, reason, message);
}

/* The answer to a Volcano status PUT (ctx: its kowed_status, taken): a 409 on the gang's
 * latest status makes it owed, until KDRV_OWED_TRIES. */
static void on_volcano_status(void *ctx, const struct kube_resp *r)
{
    struct kowed_status *o = ctx;
    struct kdrv *d = o->d;
    const struct kstatus *st = r->status == 409 ? strmap_get(&d->status, o->gang) : NULL;
    char full[STATUS_KEY_MAX];
    status_key(full, o->phase, o->reason, o->message);
    if (!st || !st->reason || strcmp(st->reason, full) != 0 ||
        strmap_get(&d->owed_status, o->gang) || o->tries + 1 >= KDRV_OWED_TRIES) {
        ignore_resp(NULL, r);
        owed_status_free(o);
        return;
    }
    char *gang = o->gang;
    o->gang = NULL;
    o->d = NULL;
    owe_status(d, gang, o, "refused with 409 (the PodGroup changed since)");
    free(gang);
}

/* Each owed status that is due is written again; one done with (written, replaced, its
 * PodGroup gone or another, or not queued KDRV_OWED_TRIES times: given up, logged) is dropped. */
static void owed_status_step(struct kdrv *d, int64_t now)
{
    struct strlist done = {0};
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->owed_status, &i, &k, &v);) {
        struct kowed_status *o = v;
        const struct kpg *pg = kcache_pg(d->cache, o->pg);
        bool over = !pg || strcmp(pg->uid ? pg->uid : "", o->uid) != 0;
        if (!over && now < o->retry_ms) {
            kdrv_cycle_at(d, o->retry_ms);
            continue;
        }
        if (!over &&
            pg_status_write(d, k, pg, o->phase, o->type, o->reason, o->message, o->tries) != 0) {
            if (++o->tries < KDRV_OWED_TRIES) {
                o->retry_ms = kdrv_now(d) + 1000;
                kdrv_cycle_at(d, o->retry_ms);
                continue;
            }
            LOG_WARN(KDRV_MOD, "status of gang %s could not be queued %u times: given up", k,
                     o->tries);
        }
        kdrv_strlist_add(&done, k); /* out of memory: looked at again next cycle */
    }
    for (uint32_t i = 0; i < done.n; i++)
        owed_status_free(strmap_del(&d->owed_status, done.v[i]));
    kdrv_strlist_free(&done);
}

void kdrv_owed_status(struct kdrv *d, int64_t now)
{
    owed_step(d, KOWED_SCHEDULED, now);
    owed_step(d, KOWED_CKPT, now);
    owed_step(d, KOWED_CKPT_POD, now);
    owed_status_step(d, now);
}

/* t + step for a time whose 0 means none (kept > 0). */
static void shift_ms(int64_t *t, int64_t step)
{
    if (*t > 0 && *t != INT64_MAX)
        *t = *t + step > 0 ? *t + step : 1;
}

void kdrv_status_clock_stepped(struct kdrv *d, int64_t step_ms)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->status, &i, &k, &v);) {
        struct kstatus *st = v; /* the rate limit's start and the forget time's */
        shift_ms(&st->at_ms, step_ms);
        shift_ms(&st->seen_ms, step_ms);
    }
    for (int kind = KOWED_SCHEDULED; kind < KOWED_N; kind++)
        for (size_t i = 0; strmap_next(owed_map(d, kind), &i, &k, &v);)
            shift_ms(&((struct kowed *)v)->retry_ms, step_ms); /* not since_ms, until_ms: sent */
    for (size_t i = 0; strmap_next(&d->owed_status, &i, &k, &v);)
        shift_ms(&((struct kowed_status *)v)->retry_ms, step_ms);
}

void kdrv_status_fini(struct kdrv *d)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->status, &i, &k, &v);) {
        struct kstatus *st = v;
        free(st->reason);
        free(st);
    }
    strmap_fini(&d->status);
    for (int kind = KOWED_SCHEDULED; kind < KOWED_N; kind++) {
        for (size_t i = 0; strmap_next(owed_map(d, kind), &i, &k, &v);)
            owed_free(v);
        strmap_fini(owed_map(d, kind));
    }
    for (size_t i = 0; strmap_next(&d->owed_status, &i, &k, &v);)
        owed_status_free(v);
    strmap_fini(&d->owed_status);
    for (size_t i = 0; strmap_next(&d->pod_writes, &i, &k, &v);)
        free(v); /* its Binding, if any, is the cycle's (kdrv_gang_binds_free) */
    strmap_fini(&d->pod_writes);
}

/* The PodGroup's scheduled condition (PodGroupInitiallyScheduled; v1alpha2 PodGroupScheduled) by
 * a strategic merge patch on its status subresource (conditions merge by type): True/Scheduled
 * once its gang is bound (owed until the watch shows it: sent again after a failure or an
 * overwrite, kdrv_owed_status), else False with Unschedulable or SchedulerError and the gang's
 * reason; never again once True, nor while a True is owed. 1.35 Workloads have no status:
 * Events only. */
static int native_status(struct kdrv *d, const char *gang, const struct kpg *pg, bool ok,
                         const char *reason, const char *message)
{
    const char *ct = knative_sched_condition(pg->api);
    if (!ct || strmap_get(&d->owed, gang))
        return 0;
    if (ok) { /* True once: an elastic gang's later members owe nothing */
        if (!pg->initially_scheduled)
            owe_scheduled(d, gang, pg, message); /* its own retries */
        return 0;
    }
    if (pg->initially_scheduled) /* terminal: never False again (its pods beyond minCount, a */
        return 0;                /* tree's further children wait: their pods say why) */
    char msg[700];
    snprintf(msg, sizeof(msg), "%s: %s", reason, message);
    cJSON *body = knative_condition_patch(pg, ct, false, knative_reason(reason), msg, kdrv_now(d));
    if (!body)
        return SCHED_ENOMEM;
    char path[700];
    knative_path(pg, "status", path, sizeof(path));
    return pg_status_send(d, KUBE_PATCH_STRATEGIC, path, body, true, NULL, NULL, NULL);
}

struct pods_event {
    struct kdrv *d;
    const char *type, *reason, *action, *message;
    const struct kpg *related;
    uint32_t n;
};

static void pod_event(void *ctx, const struct kpod *p)
{
    struct pods_event *e = ctx;
    if (p->deleting)
        return;
    kdrv_post_event(e->d, "v1", "Pod", p->ns, p->name, p->uid, e->type, e->reason, e->action,
                    e->message, e->related);
    e->n++;
}

/* The Event of a gang with no PodGroup object: about its pod (a gang of one, named by the key),
 * else about each of its pods that is not being deleted (a Kueue plain-pod group, whose key
 * names no object: `kubectl describe pod` shows it on every member, as kube-scheduler's
 * per-pod Events do). A group none of whose pods is known: about the key's pod, as before. */
static void pods_event(struct kdrv *d, const char *gang_key, const char *type, const char *reason,
                       const char *action, const char *message, const struct kpg *related)
{
    struct pods_event e = {d, type, reason, action, message, related, 0};
    kcache_each_gang_pod(d->cache, gang_key, pod_event, &e);
    if (e.n > 0)
        return;
    const struct kpod *p = kcache_pod(d->cache, gang_key);
    char ns[256], name[256];
    kdrv_split_key(gang_key, ns, sizeof(ns), name, sizeof(name));
    kdrv_post_event(d, "v1", "Pod", ns, name, p ? p->uid : NULL, type, reason, action, message,
                    related);
}

/* Event + PodGroup status for a gang: phase and a condition carrying the reason. Rate-limited:
 * written when the reason changes, else at most every status_every_s.
 * Returns whether it wrote (false: rate-limited). */
bool kdrv_gang_status(struct kdrv *d, const char *gang_key, const struct kpg *pg, const char *phase,
                      const char *type, const char *reason, const char *message, bool force)
{
    return kdrv_gang_status_rel(d, gang_key, pg, phase, type, reason, message, force, NULL);
}

/* gang_status with the Event's `related` object (the preemptor's PodGroup of a Preempted
 * Event), or NULL. */
bool kdrv_gang_status_rel(struct kdrv *d, const char *gang_key, const struct kpg *pg,
                          const char *phase, const char *type, const char *reason,
                          const char *message, bool force, const struct kpg *related)
{
    int64_t now = kdrv_now(d);
    struct kstatus *st = strmap_get(&d->status, gang_key);
    if (st)
        st->seen_ms = now;
    char full[STATUS_KEY_MAX];
    status_key(full, phase, reason, message);
    int64_t every_ms = (int64_t)d->o->status_every_s * 1000;
    bool numbers = false; /* the same reason as last written, with new words */
    if (st && !force) {
        /* the same words at most every status_every_s; the same reason with new numbers
         * ("2 of minMember 3 pods exist") at most every KDRV_STATUS_MIN_MS */
        bool same_reason =
            st->reason && strncmp(st->reason, full, strlen(phase) + 1 + strlen(reason)) == 0;
        bool same_words = st->reason && strcmp(st->reason, full) == 0;
        if (same_words && now - st->at_ms < every_ms)
            return false; /* a refresh of the same words: no timer (no cycle runs for it) */
        if (same_reason && now - st->at_ms < KDRV_STATUS_MIN_MS) {
            kdrv_cycle_at(d, st->at_ms + KDRV_STATUS_MIN_MS); /* the new numbers then */
            return false;
        }
        numbers = same_reason && !same_words && !st->forced;
        /* the pods an outcome deleted make the gang wait for pods: that consequence does not
         * hide the outcome (FailedBinding, StartTimeout, ...) for status_every_s */
        bool consequence = strcmp(reason, "WaitingForPods") == 0 ||
                           strcmp(reason, "WaitingForTeardown") == 0 ||
                           strcmp(reason, "PartialGang") == 0;
        if (st->forced && consequence && now - st->at_ms < every_ms) {
            kdrv_cycle_at(d, st->at_ms + every_ms); /* the consequence then */
            return false;
        }
    }
    if (!st) {
        st = calloc(1, sizeof(*st));
        if (!st || strmap_put(&d->status, gang_key, st, NULL) != 0) {
            free(st);
            return false;
        }
    }
    free(st->reason);
    st->reason = strdup(full);
    st->at_ms = st->seen_ms = now;
    st->forced = force;
    bool warn = strcmp(type, "Warning") == 0;
    /* new numbers for the same reason update the status, not the Events: an Event says what
     * happened (kube-scheduler's event correlator drops such repeats as spam) */
    bool event = !numbers;
    if (!pg) { /* a gang of one, or a group without an object (Kueue's plain pods) */
        if (event)
            pods_event(d, gang_key, type, reason, warn ? "Scheduling" : "Binding", message,
                       related);
        return true;
    }
    if (event)
        kdrv_post_event(d, knative_api_version(pg->api), knative_kind(pg->api), pg->ns, pg->name,
                        pg->uid, type, reason, warn ? "Scheduling" : "Binding", message, related);
    status_send(d, gang_key, pg, phase, type, reason, message);
    return true;
}

/* The PodGroup's status (phase, and a condition carrying the reason) as its API writes it.
 * Non-zero: nothing was queued. */
static int pg_status_write(struct kdrv *d, const char *gang, const struct kpg *pg,
                           const char *phase, const char *type, const char *reason,
                           const char *message, uint32_t tries)
{
    bool warn = strcmp(type, "Warning") == 0;
    if (knative_is(pg->api))
        return native_status(d, gang, pg, !warn, reason, message);
    int64_t now = kdrv_now(d);
    char t[40];
    kobj_format_time(now, t, sizeof(t));
    cJSON *status = cJSON_CreateObject();
    if (!status)
        return SCHED_ENOMEM; /* owed, as a write that could not be queued */
    char path[600];
    if (pg->api == KPG_XK8S) {
        /* scheduler-plugins: phase and scheduleStartTime, which its CRD declares; conditions
         * only while the installed CRD keeps them (deploy/crds declares them, the upstream CRD
         * does not and a server prunes them silently: seen in the answer, then not sent) */
        cJSON_AddStringToObject(status, "phase",
                                kdrv_counts_phase(pg, kcache_counts(d->cache, pg->key), phase));
        if (!pg->has_start_time)
            cJSON_AddStringToObject(status, "scheduleStartTime", kdrv_rfc3339(now, t, sizeof(t)));
        if (!d->xk8s_no_conditions) {
            kobj_format_time(now, t, sizeof(t));
            cJSON *cond = cJSON_CreateObject();
            cJSON_AddStringToObject(cond, "type", "Scheduled");
            cJSON_AddStringToObject(cond, "status", warn ? "False" : "True");
            cJSON_AddStringToObject(cond, "reason", reason);
            cJSON_AddStringToObject(cond, "message", message);
            cJSON_AddStringToObject(cond, "lastTransitionTime", kdrv_rfc3339(now, t, sizeof(t)));
            cJSON_AddItemToArray(cJSON_AddArrayToObject(status, "conditions"), cond);
        }
        cJSON *body = cJSON_CreateObject();
        if (!body) {
            cJSON_Delete(status);
            return SCHED_ENOMEM;
        }
        cJSON_AddItemToObject(body, "status", status);
        snprintf(path, sizeof(path),
                 "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s/status", pg->ns,
                 pg->name);
        return pg_status_send(d, KUBE_PATCH_MERGE, path, body, warn,
                              d->xk8s_no_conditions ? NULL : on_xk8s_status, d, NULL);
    }
    /* Volcano: its phases (Pending, Running, Completed) and its conditions as Volcano writes
     * them: Unschedulable=True with the reason while it waits, Scheduled=True once bound */
    cJSON_AddStringToObject(status, "phase",
                            kdrv_counts_phase(pg, kcache_counts(d->cache, pg->key), phase));
    cJSON *cond = cJSON_CreateObject();
    cJSON_AddStringToObject(cond, "type", warn ? "Unschedulable" : "Scheduled");
    cJSON_AddStringToObject(cond, "status", "True");
    cJSON_AddStringToObject(cond, "reason", reason);
    cJSON_AddStringToObject(cond, "message", message);
    cJSON_AddStringToObject(cond, "lastTransitionTime", kdrv_rfc3339(now, t, sizeof(t)));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(status, "conditions"), cond);
    /* no status subresource: PUT the object we last saw (a 409 on a stale resourceVersion
     * is owed: on_volcano_status) */
    cJSON *obj = cJSON_Parse(pg->raw ? pg->raw : "{}");
    if (!obj) { /* never a PUT without the object */
        cJSON_Delete(status);
        return SCHED_ENOMEM;
    }
    kdrv_counts_add(d, pg, status); /* the status is written whole: its counts too */
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", status);
    snprintf(path, sizeof(path), "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/%s",
             pg->ns, pg->name);
    struct kowed_status *o = owed_new(pg, phase, type, reason, message);
    if (o && !(o->gang = strdup(gang))) {
        owed_status_free(o);
        o = NULL;
    }
    if (o) {
        o->d = d;
        o->tries = tries;
    }
    bool replaced = false;
    int rc =
        pg_status_send(d, KUBE_PUT, path, obj, warn, o ? on_volcano_status : NULL, o, &replaced);
    if (rc != 0 || replaced)
        owed_status_free(o); /* not queued, or its body took the place of one queued */
    return rc;
}

/* The answer of a scheduler-plugins status write that carried conditions: when they are not in
 * it, the installed CRD does not declare them (the upstream one): they are not sent again. */
static void on_xk8s_status(void *ctx, const struct kube_resp *r)
{
    struct kdrv *d = ctx;
    if (r->status < 200 || r->status >= 300) {
        ignore_resp(NULL, r);
        return;
    }
    cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (obj && st && !cJSON_GetObjectItemCaseSensitive(st, "conditions") &&
        !d->xk8s_no_conditions) {
        d->xk8s_no_conditions = true;
        LOG_WARN(KDRV_MOD,
                 "the installed scheduler-plugins PodGroup CRD does not keep status.conditions "
                 "(the API server pruned them): PodGroups get phase and scheduleStartTime only; "
                 "the reasons are on the pods' PodScheduled condition and in Events (install "
                 "deploy/crds to have them on the PodGroup too)");
    }
    cJSON_Delete(obj);
}

/* ---- a pod's status writes and its Binding ---------------------------------------------------
 *
 * The Binding carries the pod's resourceVersion as a precondition (driver_bind.c, for its
 * fences), so a status write of ours that the server applies between our read of the pod and
 * the Binding fails the Binding (409) and costs a read-back and a second Binding. A Binding
 * therefore waits for the answer of any status write of its pod still in flight and then
 * carries the version that write made. kube-scheduler orders the same two calls likewise: with
 * SchedulerAsyncAPICalls (1.34+, pkg/scheduler/backend/api_dispatcher) a call for an object
 * whose previous call is in flight waits for it, and a pending status patch is merged or
 * overwritten by the binding call (pkg/scheduler/framework/api_calls: binding is the more
 * relevant); its DefaultBinder's Binding carries only the pod's uid, no resourceVersion.
 * Every pod write callback runs exactly once (client.h) unless the client is freed or a
 * deposed leader's writes are dropped, after which no Binding is sent anyway. */
struct kpod_writes {
    uint32_t n;         /* status writes in flight */
    struct kbind *bind; /* the Binding waiting for them, or NULL */
    uint64_t msg_hash;  /* sched_hash_str of the message of the newest one (queued or sent) */
};

struct kpod_write {
    struct kdrv *d;
    char key[KOBJ_KEY_MAX];
};

/* A status write of pod key begins, saying the message of hash msg_hash: its context, or NULL
 * (out of memory: not sent). */
static struct kpod_write *pod_write_begin(struct kdrv *d, const char *key, uint64_t msg_hash)
{
    struct kpod_write *w = calloc(1, sizeof(*w));
    struct kpod_writes *pw = strmap_get(&d->pod_writes, key);
    if (!w)
        return NULL;
    if (!pw) {
        pw = calloc(1, sizeof(*pw));
        if (!pw || strmap_put(&d->pod_writes, key, pw, NULL) != 0) {
            free(pw);
            free(w);
            return NULL;
        }
    }
    pw->n++;
    pw->msg_hash = msg_hash;
    w->d = d;
    snprintf(w->key, sizeof(w->key), "%s", key);
    return w;
}

/* The write of w was answered (or not sent): the last one in flight lets a waiting Binding go. */
static void pod_write_end(struct kpod_write *w)
{
    struct kpod_writes *pw = strmap_get(&w->d->pod_writes, w->key);
    if (!pw || --pw->n > 0) {
        free(w);
        return;
    }
    struct kbind *b = pw->bind;
    free(strmap_del(&w->d->pod_writes, w->key));
    free(w);
    if (b)
        kdrv_bind_resume(b);
}

bool kdrv_pod_writes_park(struct kdrv *d, struct kbind *b)
{
    struct kpod_writes *pw = strmap_get(&d->pod_writes, b->pod_key);
    if (!pw || pw->n == 0 || (pw->bind && pw->bind != b))
        return false;
    pw->bind = b;
    LOG_DEBUG(KDRV_MOD, "bind waits for the pod's status write: pod=%s", b->pod_key);
    char ns[KOBJ_NAME_MAX + 1], name[KOBJ_NAME_MAX + 1], path[KOBJ_KEY_MAX + 40];
    kdrv_split_key(b->pod_key, ns, sizeof(ns), name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    kube_client_promote(d->client, path); /* no longer a write that may wait */
    return true;
}

/* The answer of a pod status write: the cache takes the newer pod (its resourceVersion is what
 * the next Binding must carry), then a Binding waiting for it goes. */
static void on_pod_status(void *ctx, const struct kube_resp *r)
{
    struct kpod_write *w = ctx;
    struct kdrv *d = w->d;
    if (r->status < 200 || r->status >= 300) {
        ignore_resp(NULL, r);
    } else {
        cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
        if (obj && kcache_pod_event(d->cache, obj, false) != 0)
            kdrv_fatal(d, "out of memory in the pod cache");
        cJSON_Delete(obj);
    }
    pod_write_end(w);
}

/* The body of a PodScheduled=False condition with message msg at time t (JSON text to free),
 * or NULL (out of memory). */
static char *unschedulable_body(const char *msg, const char *t)
{
    cJSON *body = cJSON_CreateObject(), *cond = cJSON_CreateObject();
    cJSON *conds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "conditions");
    bool whole = cJSON_AddStringToObject(cond, "type", "PodScheduled") &&
                 cJSON_AddStringToObject(cond, "status", "False") &&
                 cJSON_AddStringToObject(cond, "reason", "Unschedulable") &&
                 cJSON_AddStringToObject(cond, "message", msg) &&
                 cJSON_AddStringToObject(cond, "lastTransitionTime", t);
    if (!conds || !cJSON_AddItemToArray(conds, cond)) {
        cJSON_Delete(cond); /* not in the body: still its own */
        whole = false;
    }
    char *text = whole ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    return text;
}

/* Pending member pods get PodScheduled=False, reason Unschedulable, with the gang's reason, as
 * kube-scheduler writes it (kubectl describe pod, cluster autoscalers read it): when the gang's
 * status was written (rate-limited there) or the pod has no such condition yet, and only when
 * its message differs from the pod's and from that of its newest write still queued or in
 * flight (while the API server is behind, a cycle adds nothing for the pods it already wrote;
 * a 64-bit hash of the message tells). One body serves every pod of the call. */
void kdrv_pods_unschedulable(struct kdrv *d, struct kpod *const *pods, uint32_t n, bool wrote,
                             const char *reason, const char *message)
{
    char msg[900], t[40], path[KOBJ_KEY_MAX + 40];
    uint32_t not_queued = 0;
    snprintf(msg, sizeof(msg), "%s: %s", reason, message);
    uint64_t mh = sched_hash_str(SCHED_HASH_INIT, msg);
    char *text = NULL; /* built for the first pod that needs it */
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct kpod *p = pods[i];
        if (p->node || p->deleting || (!wrote && p->sched_msg) ||
            (p->sched_msg && strcmp(p->sched_msg, msg) == 0))
            continue;
        struct kpod_writes *pw = strmap_get(&d->pod_writes, p->key);
        if (pw && pw->n > 0 && pw->msg_hash == mh)
            continue; /* its newest write says this already */
        if (!text) {
            kdrv_rfc3339(kdrv_now(d), t, sizeof(t));
            if (!(text = unschedulable_body(msg, t))) {
                not_queued += n - i;
                break;
            }
            len = strlen(text);
        }
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
        if (kube_client_replace(d->client, path, text, len)) {
            if (pw) /* its write still queued says this instead: one per pod at most */
                pw->msg_hash = mh;
            continue;
        }
        struct kpod_write *w = pod_write_begin(d, p->key, mh);
        if (!w) {
            not_queued++;
        } else if (send_text(d, KUBE_PATCH_STRATEGIC, path, text, len, KUBE_LOW, on_pod_status,
                             w) != 0) { /* after the Bindings, unless one waits for it
                                           (kdrv_pod_writes_park) */
            pod_write_end(w);
            not_queued++;
        }
    }
    free(text);
    /* as after a refused write, the pod keeps what it showed: the next cycle sends it again
     * (its first condition; an older message with the gang's next status). That cycle runs a
     * second later, whatever else changes. */
    if (not_queued > 0) {
        LOG_WARN(KDRV_MOD,
                 "PodScheduled condition of %u pods not queued (out of memory): "
                 "sent again by a cycle in 1000 ms",
                 not_queued);
        kdrv_cycle_at(d, kdrv_now(d) + 1000);
    }
}
