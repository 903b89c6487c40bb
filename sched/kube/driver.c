/* sched/kube/driver.c: the Kubernetes driver, `gangsched run` (see driver.h).
 *
 * One cycle, on the loop thread:
 *   1. kcache_build: the snapshot (cluster, usage of every scheduler's pods, pending gangs with
 *      minMember pods present, running gangs);
 *   2. sched_cycle: decisions (pure);
 *   3. one store transaction: decisions that changed, preemption records, job rows and the bind
 *      intents of every placed pod; committed (synchronous=FULL) before any request is sent;
 *   4. the binds: every member of every placed gang in parallel (POST pods/NAME/binding with the
 *      GPU ids and the flavor as annotations, merged into the pod); a pod found already bound
 *      to the chosen node counts as bound;
 *   5. when the last bind of the cycle has answered: one transaction closes the intents (bound,
 *      or rolled back for a gang with any failed member, whose bound members are deleted so that
 *      no partial gang survives), then PodGroup status and Events.
 * The next cycle starts only after step 5, so an intent is never open across two commits.
 *
 * Recovery (first cycle after becoming leader): open intents of a previous process are resolved
 * against the API's view: a gang whose pods are all on their intended nodes is recorded bound;
 * otherwise its bound members are deleted and the intents rolled back, and it is scheduled
 * again. Nothing is bound twice: a pod is only bound after its previous intent is closed.
 */
#include "sched/kube/driver.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "config/reload.h"
#include "sched/core/annot.h"
#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/device.h"
#include "sched/core/eta.h"
#include "sched/core/log.h"
#include "sched/core/policy.h"
#include "sched/core/strmap.h"
#include "sched/http/follow.h"
#include "sched/http/metrics.h"
#include "sched/http/server.h"
#include "sched/kube/cache.h"
#include "sched/kube/client.h"
#include "sched/kube/lifecycle.h"
#include "sched/kube/native.h"
#include "store/store.h"

#define KDRV_MOD           "kube"
#define KDRV_STATUS_MIN_MS 5000 /* a gang's status changes at most this often for one reason */

void kube_run_opts_default(struct kube_run_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->scheduler = "gangsched";
    o->policy = "gangsched";
    o->leader_elect = true;
    o->lease_name = "gangsched";
    o->cycle_ms = 100;
    o->qps = 200;
    o->burst = 400;
    o->status_every_s = 60;
    o->listen = "0.0.0.0:8080";
}

/* One pod bind in flight. */
struct kbind {
    struct kgang_binds *gb;
    char *pod_key, *ns, *name, *node;
    uint32_t index, gpu_mask;
    bool ok, done;
    bool foreign;     /* 409: already bound to another node, by someone else */
    bool unknown;     /* no definite answer (transport error, 5xx, 429 after retries): the
                         Binding may still be applied by the server */
    uint32_t rereads; /* reads after a resourceVersion conflict (at most 3) */
    char *error;
};

/* The binds of one placed gang. */
struct kgang_binds {
    struct kdrv *d;
    char *gang, *pg_ns, *pg_name; /* pg_* NULL for a gang of one */
    enum kpg_api api;
    struct kbind *pods;
    uint32_t n_pods, n_done, n_failed;
    int64_t gpus;
    char *queue, *flavor;
    char *summary; /* "placed in rack r3: 2 pods on n1, n2" */
};

/* What was last written about a gang (status and events are rate-limited). */
struct kstatus {
    char *reason;
    int64_t at_ms;
    bool forced;     /* an outcome (bind failure, teardown, preemption), not a waiting reason */
    uint32_t logged; /* hash of the last verdict written to the decision log (0: none) */
};

/* Another row was written for the gang (placed, torn down): its next verdict is new again. */
static void forget_logged(struct kdrv *d, const char *gang);

/* FNV-1a of a verdict and its text: whether the decision log already has it. Never 0. */
static uint32_t verdict_key(int why, const char *text)
{
    uint32_t h = 2166136261u ^ (uint32_t)why;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h ? h : 1;
}

struct kdrv {
    bool warned_no_device; /* the "no node has the device" warning was logged for this state */
    const struct kube_run_opts *o;
    uv_loop_t *loop;
    uv_timer_t cycle_timer;
    uv_signal_t sigterm, sigint;
    struct kube_auth *auth;
    struct kube_client *client;
    struct kube_informer *inf[3 + KPG_N_API + 2];
    uint32_t n_inf;
    struct kube_lease *lease;
    struct config_watch *cw;
    struct store *db;
    struct kcache *cache;
    const struct sched_policy *pol;
    struct arena arena;
    bool leading, recovered, stopping, failed;
    bool fenced;             /* recovery sent its fences */
    bool xk8s_no_conditions; /* the scheduler-plugins CRD prunes status.conditions */
    uint32_t fences_left;    /* recovery fences not answered yet */
    char fatal[SCHED_ERRBUF];
    int64_t cycle;
    /* binds of the current cycle */
    struct kgang_binds *binds;
    uint32_t n_binds, binds_left;
    struct strmap status; /* gang -> struct kstatus* */
    struct strmap jobs;   /* gang -> struct kjob*: admitted or running, charged to the ledger */
    bool jobs_synced;     /* the jobs and the ledger were reconciled with the cluster */
    struct strmap held;   /* queue name -> (void *)1: held or draining (operator actions) */
    /* HTTP API and metrics */
    struct http_server *http;
    struct http_follow *follow; /* while standby with --follow */
    struct http_metrics *metrics;
    struct http_metric *m_cycle, *m_binds, *m_gangs, *m_api, *m_leader, *m_pending, *m_evictions,
        *m_held;
    uint64_t api_seen[4];
    bool force; /* run the next cycle even if the cache did not change (operator action, reload) */
    /* gang lifecycle (sched/kube/lifecycle.h) */
    struct strmap bound_at;  /* gang -> int64_t*: when its binds completed (or first seen) */
    struct strmap tearing;   /* gang -> (void *)1: members being deleted by a teardown or a
                                rollback, (void *)2: evicted by a preemption */
    struct strmap gave_up;   /* gang -> (void *)1: retry budget exhausted, never scheduled */
    struct strmap node_down; /* node -> int64_t*: NotReady since */
    struct strmap strikes;   /* node -> struct kstrike* */
    struct http_metric *m_teardowns, *m_quarantined, *m_pg_api;
    uv_timer_t stats_timer;
    /* capacity freed by preemption, held for the preemptor until it starts (or the hold ends) */
    struct khold *holds;
    uint32_t n_holds;
};

#define KDRV_HOLD_MS (10 * 60 * 1000) /* a preemptor's hold lasts at most this long */

struct khold {
    char *gang;
    char **nodes;
    uint32_t n_nodes;
    int64_t until_ms;
    int64_t operator_id; /* > 0: an operator's reservation (store id): kept whether or not its
                            gang is pending, until deleted or expired */
};

#define KDRV_RESERVE_MS (24 * 60 * 60 * 1000) /* default lifetime of an operator reservation */

static void khold_free(struct khold *h)
{
    for (uint32_t i = 0; i < h->n_nodes; i++)
        free(h->nodes[i]);
    free(h->nodes);
    free(h->gang);
}

/* Failed starts on a node: KDRV_STRIKES within KDRV_STRIKE_WINDOW_MS quarantine it for
 * KDRV_QUARANTINE_MS (the simulator's values, docs/lifecycle.md). */
#define KDRV_STRIKES          3
#define KDRV_STRIKE_WINDOW_MS (60 * 60 * 1000)
#define KDRV_QUARANTINE_MS    (30 * 60 * 1000)

struct kstrike {
    uint32_t n;
    int64_t window_start_ms;
    int64_t until_ms; /* quarantined until, 0 = not */
};

/* A gang charged to the ledger (admitted, binds in flight, or running). */
struct kjob {
    int64_t gpus;
    char *queue, *flavor;
    bool seen; /* running in the current cycle's input */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kjob_free(struct kjob *j)
{
    if (j) {
        free(j->queue);
        free(j->flavor);
        free(j);
    }
}

/* Charges (sign +1) or releases (-1) a job's GPUs in the ledger and tracks it in d->jobs. */
static int job_charge(struct kdrv *d, const char *gang, const char *queue, const char *flavor,
                      int64_t gpus, int sign, struct sched_errbuf *eb)
{
    if (sign > 0) {
        struct kjob *j = calloc(1, sizeof(*j));
        void *old = NULL;
        if (!j || !(j->queue = strdup(queue)) ||
            !(j->flavor = strdup(flavor ? flavor : "default")) ||
            strmap_put(&d->jobs, gang, j, &old) != 0) {
            kjob_free(j);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
        j->gpus = gpus;
        j->seen = true;
        if (old) { /* charged already: replace, not add twice */
            struct kjob *o = old;
            int rc = store_ledger_add(d->db, o->queue, o->flavor, device_resource(), -o->gpus, eb);
            kjob_free(o);
            if (rc)
                return rc;
        }
        LOG_DEBUG(KDRV_MOD, "charged: gang=%s queue=%s flavor=%s gpus=%lld", gang, queue, j->flavor,
                  (long long)gpus);
        return store_ledger_add(d->db, queue, j->flavor, device_resource(), gpus, eb);
    }
    struct kjob *j = strmap_del(&d->jobs, gang);
    if (!j)
        return 0;
    LOG_DEBUG(KDRV_MOD, "released: gang=%s queue=%s flavor=%s gpus=%lld", gang, j->queue, j->flavor,
              (long long)j->gpus);
    int rc = store_ledger_add(d->db, j->queue, j->flavor, device_resource(), -j->gpus, eb);
    kjob_free(j);
    return rc;
}

static void fatal(struct kdrv *d, const char *msg)
{
    if (!d->failed) {
        d->failed = true;
        snprintf(d->fatal, sizeof(d->fatal), "%s", msg);
        LOG_ERROR(KDRV_MOD, "fatal: error=%s", msg);
    }
    uv_stop(d->loop);
}

/* ---- JSON request helpers ------------------------------------------------------------------- */

static void ignore_resp(void *ctx, const struct kube_resp *r)
{
    const char *what = ctx;
    if (r->status < 200 || r->status >= 300)
        LOG_WARN(KDRV_MOD, "request failed: what=%s status=%d error=%s", what ? what : "",
                 r->status, r->error ? r->error : "");
}

static void send_json(struct kdrv *d, enum kube_method m, const char *path, cJSON *body,
                      kube_resp_fn *fn, void *ctx)
{
    char *s = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (kube_request(d->client, m, path, s, s ? strlen(s) : 0, 0, fn ? fn : ignore_resp,
                     fn ? ctx : (void *)"") != 0)
        LOG_ERROR(KDRV_MOD, "out of memory queueing a request: path=%s", path);
    free(s);
}

/* A new API object {apiVersion, kind, metadata: {name, namespace}}; *meta (may be NULL) gets
 * its metadata for more fields. */
static cJSON *new_object(const char *api_version, const char *kind, const char *ns,
                         const char *name, cJSON **meta)
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

/* events.k8s.io/v1 Event about an object (regarding, with its uid: kubectl describe selects a
 * pod's or PodGroup's events by involvedObject.uid, which the API server fills from
 * regarding.uid). ns NULL: a cluster-scoped object (a Node): the Event lives in "default", as
 * client-go's recorder puts it, and regarding has no namespace. */
static const char *pg_api_version(const struct kpg *pg)
{
    return knative_api_version(pg->api); /* every PodGroup API (sched/kube/native.c's table) */
}

static void post_event(struct kdrv *d, const char *api_version, const char *kind, const char *ns,
                       const char *name, const char *uid, const char *type, const char *reason,
                       const char *action, const char *note, const struct kpg *related)
{
    char t[40], ev_name[300], path[300];
    int64_t now = now_ms();
    const char *ev_ns = ns ? ns : "default";
    kobj_format_time(now, t, sizeof(t));
    snprintf(ev_name, sizeof(ev_name), "%s.%llx", name, (unsigned long long)now * 1000000ull);
    for (char *q = ev_name; *q; q++) /* a DNS subdomain: gang keys of 1.35 Workloads have ':' */
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '.' || *q == '-'))
            *q = '-';
    cJSON *e = new_object("events.k8s.io/v1", "Event", ev_ns, ev_name, NULL);
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
    send_json(d, KUBE_POST, path, e, NULL, NULL);
}

static void split_key(const char *key, char *ns, size_t nn, char *name, size_t n)
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

/* Event + PodGroup status for a gang: phase and a condition carrying the reason. Rate-limited:
 * written when the reason changes, else at most every status_every_s. */
static void forget_logged(struct kdrv *d, const char *gang)
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

/* ---- native scheduling.k8s.io groups (sched/kube/native.h) --------------------------------- */

/* The PodGroup's scheduled condition (PodGroupInitiallyScheduled; v1alpha2 PodGroupScheduled) by
 * a strategic merge patch on its status subresource (conditions merge by type): True/Scheduled
 * once its gang is bound, else False with Unschedulable or SchedulerError and the gang's
 * reason; never again once True. 1.35 Workloads have no status: Events only. */
static void native_status(struct kdrv *d, const struct kpg *pg, bool ok, const char *reason,
                          const char *message)
{
    const char *ct = knative_sched_condition(pg->api);
    char msg[700];
    snprintf(msg, sizeof(msg), "%s: %s", reason, message);
    cJSON *body =
        ct ? knative_condition_patch(pg, ct, ok, ok ? "Scheduled" : knative_reason(reason),
                                     ok ? message : msg, now_ms())
           : NULL;
    if (!body)
        return;
    char path[700];
    snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/podgroups/%s/status",
             knative_api_version(pg->api), pg->ns, pg->name);
    send_json(d, KUBE_PATCH_STRATEGIC, path, body, NULL, NULL);
}

/* A victim gang's members, evicted once its PodGroup carries DisruptionTarget (the order
 * kube-scheduler keeps: the condition before the eviction). */
struct kvictim {
    struct kdrv *d;
    char **ns, **name;
    uint32_t n;
};

static void evict_pod(struct kdrv *d, const char *ns, const char *name);

static void on_disruption_target(void *ctx, const struct kube_resp *r)
{
    struct kvictim *v = ctx;
    if (r->status < 200 || r->status >= 300)
        LOG_WARN(KDRV_MOD, "DisruptionTarget not written (evicting anyway): status=%d pod=%s/%s",
                 r->status, v->n ? v->ns[0] : "", v->n ? v->name[0] : "");
    for (uint32_t i = 0; i < v->n; i++) {
        evict_pod(v->d, v->ns[i], v->name[i]);
        free(v->ns[i]);
        free(v->name[i]);
    }
    free(v->ns);
    free(v->name);
    free(v);
}

/* Evicts a victim gang's members; a native PodGroup gets DisruptionTarget=True reason
 * PreemptionByScheduler first. */
static void evict_gang(struct kdrv *d, const struct kgang *victim, const char *message)
{
    const struct kpg *pg = victim->pg;
    cJSON *body = pg && knative_sched_condition(pg->api)
                      ? knative_condition_patch(pg, "DisruptionTarget", true,
                                                "PreemptionByScheduler", message, now_ms())
                      : NULL;
    struct kvictim *v = body ? calloc(1, sizeof(*v)) : NULL;
    if (v) {
        v->d = d;
        v->ns = calloc(victim->gang.n_pods + 1, sizeof(char *));
        v->name = calloc(victim->gang.n_pods + 1, sizeof(char *));
        for (uint32_t m = 0; v->ns && v->name && m < victim->gang.n_pods; m++) {
            v->ns[v->n] = strdup(victim->members[m]->ns);
            v->name[v->n] = strdup(victim->members[m]->name);
            if (v->ns[v->n] && v->name[v->n])
                v->n++;
        }
    }
    if (!v || !v->ns || !v->name || v->n != victim->gang.n_pods) {
        if (v) {
            for (uint32_t i = 0; i < v->n; i++) {
                free(v->ns[i]);
                free(v->name[i]);
            }
            free(v->ns);
            free(v->name);
            free(v);
        }
        cJSON_Delete(body);
        for (uint32_t m = 0; m < victim->gang.n_pods; m++)
            evict_pod(d, victim->members[m]->ns, victim->members[m]->name);
        return;
    }
    char path[700];
    snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/podgroups/%s/status",
             knative_api_version(pg->api), pg->ns, pg->name);
    send_json(d, KUBE_PATCH_STRATEGIC, path, body, on_disruption_target, v);
}

/* Returns whether it wrote (false: rate-limited). */
static bool gang_status_rel(struct kdrv *d, const char *gang_key, const struct kpg *pg,
                            const char *phase, const char *type, const char *reason,
                            const char *message, bool force, const struct kpg *related);

static bool gang_status(struct kdrv *d, const char *gang_key, const struct kpg *pg,
                        const char *phase, const char *type, const char *reason,
                        const char *message, bool force)
{
    return gang_status_rel(d, gang_key, pg, phase, type, reason, message, force, NULL);
}

/* gang_status with the Event's `related` object (the preemptor's PodGroup of a Preempted
 * Event), or NULL. */
static bool gang_status_rel(struct kdrv *d, const char *gang_key, const struct kpg *pg,
                            const char *phase, const char *type, const char *reason,
                            const char *message, bool force, const struct kpg *related)
{
    int64_t now = now_ms();
    struct kstatus *st = strmap_get(&d->status, gang_key);
    char full[600];
    snprintf(full, sizeof(full), "%s|%s|%s", phase, reason, message);
    int64_t every_ms = (int64_t)d->o->status_every_s * 1000;
    if (st && !force) {
        /* the same words at most every status_every_s; the same reason with new numbers
         * ("2 of minMember 3 pods exist") at most every KDRV_STATUS_MIN_MS */
        bool same_reason =
            st->reason && strncmp(st->reason, full, strlen(phase) + 1 + strlen(reason)) == 0;
        bool same_words = st->reason && strcmp(st->reason, full) == 0;
        if (same_words && now - st->at_ms < every_ms)
            return false;
        if (same_reason && now - st->at_ms < KDRV_STATUS_MIN_MS)
            return false;
        /* the pods an outcome deleted make the gang wait for pods: that consequence does not
         * hide the outcome (FailedBinding, StartTimeout, ...) for status_every_s */
        bool consequence = strcmp(reason, "WaitingForPods") == 0 ||
                           strcmp(reason, "WaitingForTeardown") == 0 ||
                           strcmp(reason, "PartialGang") == 0;
        if (st->forced && consequence && now - st->at_ms < every_ms)
            return false;
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
    st->at_ms = now;
    st->forced = force;
    char ns[256], name[256];
    split_key(gang_key, ns, sizeof(ns), name, sizeof(name));
    bool warn = strcmp(type, "Warning") == 0;
    if (!pg) { /* a gang of one: the event is about the pod */
        const struct kpod *p = kcache_pod(d->cache, gang_key);
        post_event(d, "v1", "Pod", ns, name, p ? p->uid : NULL, type, reason,
                   warn ? "Scheduling" : "Binding", message, related);
        return true;
    }
    post_event(d, knative_api_version(pg->api), knative_kind(pg->api), pg->ns, pg->name, pg->uid,
               type, reason, warn ? "Scheduling" : "Binding", message, related);
    if (knative_is(pg->api)) {
        native_status(d, pg, !warn, reason, message);
        return true;
    }
    char t[40];
    kobj_format_time(now, t, sizeof(t));
    cJSON *status = cJSON_CreateObject();
    char path[600];
    if (pg->api == KPG_XK8S) {
        /* scheduler-plugins: phase and scheduleStartTime, which its CRD declares; conditions
         * only while the installed CRD keeps them (deploy/crds declares them, the upstream CRD
         * does not and a server prunes them silently: seen in the answer, then not sent) */
        cJSON_AddStringToObject(status, "phase", phase);
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
        cJSON_AddItemToObject(body, "status", status);
        snprintf(path, sizeof(path),
                 "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s/status", pg->ns,
                 pg->name);
        send_json(d, KUBE_PATCH_MERGE, path, body, d->xk8s_no_conditions ? NULL : on_xk8s_status,
                  d);
    } else {
        /* Volcano: its phases (Pending, Running) and its conditions as Volcano writes them:
         * Unschedulable=True with the reason while it waits, Scheduled=True once bound */
        cJSON_AddStringToObject(status, "phase", strcmp(phase, "Running") == 0 ? phase : "Pending");
        cJSON *cond = cJSON_CreateObject();
        cJSON_AddStringToObject(cond, "type", warn ? "Unschedulable" : "Scheduled");
        cJSON_AddStringToObject(cond, "status", "True");
        cJSON_AddStringToObject(cond, "reason", reason);
        cJSON_AddStringToObject(cond, "message", message);
        cJSON_AddStringToObject(cond, "lastTransitionTime", kdrv_rfc3339(now, t, sizeof(t)));
        cJSON_AddItemToArray(cJSON_AddArrayToObject(status, "conditions"), cond);
        /* no status subresource: PUT the object we last saw (a 409 on a stale resourceVersion
         * just waits for the next write) */
        cJSON *obj = cJSON_Parse(pg->raw ? pg->raw : "{}");
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        cJSON_AddItemToObject(obj, "status", status);
        snprintf(path, sizeof(path),
                 "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/%s", pg->ns,
                 pg->name);
        send_json(d, KUBE_PUT, path, obj, NULL, NULL);
    }
    return true;
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

/* The answer of a pod status write: the cache takes the newer pod (its resourceVersion is what
 * the next Binding must carry). */
static void on_pod_status(void *ctx, const struct kube_resp *r)
{
    struct kdrv *d = ctx;
    if (r->status < 200 || r->status >= 300) {
        ignore_resp(NULL, r);
        return;
    }
    cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
    if (obj && kcache_pod_event(d->cache, obj, false) != 0)
        fatal(d, "out of memory in the pod cache");
    cJSON_Delete(obj);
}

/* Pending member pods get PodScheduled=False, reason Unschedulable, with the gang's reason, as
 * kube-scheduler writes it (kubectl describe pod, cluster autoscalers read it): when the gang's
 * status was written (rate-limited there) or the pod has no such condition yet, and only when
 * its message differs. */
static void pods_unschedulable(struct kdrv *d, struct kpod *const *pods, uint32_t n, bool wrote,
                               const char *reason, const char *message)
{
    char msg[900], t[40], path[KOBJ_KEY_MAX + 40];
    snprintf(msg, sizeof(msg), "%s: %s", reason, message);
    kdrv_rfc3339(now_ms(), t, sizeof(t));
    for (uint32_t i = 0; i < n; i++) {
        const struct kpod *p = pods[i];
        if (p->node || p->deleting || (!wrote && p->sched_msg) ||
            (p->sched_msg && strcmp(p->sched_msg, msg) == 0))
            continue;
        cJSON *body = cJSON_CreateObject();
        cJSON *cond = cJSON_CreateObject();
        cJSON_AddStringToObject(cond, "type", "PodScheduled");
        cJSON_AddStringToObject(cond, "status", "False");
        cJSON_AddStringToObject(cond, "reason", "Unschedulable");
        cJSON_AddStringToObject(cond, "message", msg);
        cJSON_AddStringToObject(cond, "lastTransitionTime", t);
        cJSON_AddItemToArray(
            cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "conditions"), cond);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", p->ns, p->name);
        send_json(d, KUBE_PATCH_STRATEGIC, path, body, on_pod_status, d);
    }
}

/* ---- deleting pods (rollback, preemption) ---------------------------------------------------- */

/* A delete in flight: which pod (and uid) it was about. */
struct kdel {
    struct kdrv *d;
    char key[KOBJ_KEY_MAX];
    char uid[128];
};

static void on_deleted(void *ctx, const struct kube_resp *r)
{
    struct kdel *x = ctx;
    /* 404: gone already; 409: the uid precondition failed, so the pod of that uid is gone and
     * another took its name (a StatefulSet's replacement is not ours to delete) */
    if ((r->status < 200 || r->status >= 300) && r->status != 404 && r->status != 409) {
        LOG_WARN(KDRV_MOD, "delete failed: pod=%s status=%d error=%s (sent again if still needed)",
                 x->key, r->status, r->error ? r->error : "");
        kcache_delete_failed(x->d->cache, x->key, x->uid);
    }
    free(x);
}

/* Deletes a pod once, with its uid as a precondition; from the moment it is sent the pod counts
 * as deleting (kcache_delete_sent). */
static void delete_pod(struct kdrv *d, const char *ns, const char *name, const char *why)
{
    char path[600];
    struct kdel *x = calloc(1, sizeof(*x));
    if (!x || kobj_key(ns, name, x->key, sizeof(x->key)) != 0) {
        free(x);
        return;
    }
    const struct kpod *p = kcache_pod(d->cache, x->key);
    if (!p || !kcache_delete_sent(d->cache, x->key)) {
        free(x); /* gone, or deleted once already */
        return;
    }
    x->d = d;
    snprintf(x->uid, sizeof(x->uid), "%s", p->uid ? p->uid : "");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "kind", "DeleteOptions");
    cJSON_AddStringToObject(body, "apiVersion", "v1");
    cJSON_AddStringToObject(body, "propagationPolicy", "Background");
    if (p->uid)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(body, "preconditions"), "uid", p->uid);
    LOG_INFO(KDRV_MOD, "deleting pod: pod=%s/%s why=%s", ns, name, why);
    send_json(d, KUBE_DELETE, path, body, on_deleted, x);
}

/* ---- fences: the read-back that ends a Binding's uncertainty ----------------------------------
 *
 * Every Binding carries the pod's resourceVersion as a precondition, which the API server checks
 * when it applies the write, however late (BindingREST: a GuaranteedUpdate with preconditions).
 * A fence is a write to the pod (the annotation gangsched.io/bind-fence): it changes the
 * resourceVersion, so a Binding sent before it can never apply after it, and its answer is the
 * pod as it is at that point: bound (a Binding got there first: a late bind, accounted for) or
 * not (and then never by an old Binding). */
struct kfence {
    struct kdrv *d;
    char key[KOBJ_KEY_MAX];
    bool recovery; /* recovery waits for every fence; else a rolled-back member to settle */
    uint32_t tries;
};

static void send_fence(struct kfence *f);

static void on_fenced(void *ctx, const struct kube_resp *r)
{
    struct kfence *f = ctx;
    struct kdrv *d = f->d;
    bool done = true;
    if (r->status >= 200 && r->status < 300) {
        cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
        if (obj && kcache_pod_event(d->cache, obj, false) != 0)
            fatal(d, "out of memory in the pod cache");
        cJSON_Delete(obj);
        const struct kpod *p = kcache_pod(d->cache, f->key);
        if (p && p->node) {
            LOG_WARN(KDRV_MOD, "a Binding was applied late: pod=%s node=%s", f->key, p->node);
            if (!f->recovery) { /* a member of a rolled-back gang: it goes too */
                char ns[256], name[256];
                snprintf(ns, sizeof(ns), "%s", p->ns);
                snprintf(name, sizeof(name), "%s", p->name);
                delete_pod(d, ns, name, "bound late, after its gang was rolled back");
            }
        } else {
            kcache_unassume(d->cache, f->key);
        }
    } else if (r->status == 404) {
        kcache_unassume(d->cache, f->key);
    } else if (++f->tries < 5 && !d->stopping) {
        LOG_WARN(KDRV_MOD, "fence failed: pod=%s status=%d error=%s (sent again)", f->key,
                 r->status, r->error ? r->error : "");
        done = false;
    } else {
        LOG_ERROR(KDRV_MOD, "fence failed: pod=%s status=%d error=%s (given up)", f->key, r->status,
                  r->error ? r->error : "");
        if (!f->recovery)
            kcache_unassume(d->cache, f->key);
    }
    if (!done) {
        send_fence(f);
        return;
    }
    if (f->recovery && d->fences_left > 0)
        d->fences_left--;
    free(f);
}

static void send_fence(struct kfence *f)
{
    char path[KOBJ_KEY_MAX + 40], val[300], t[40];
    struct kdrv *d = f->d;
    const char *slash = strchr(f->key, '/'); /* keys are "ns/name" (kobj_key) */
    snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/pods/%s",
             slash ? (int)(slash - f->key) : 0, f->key, slash ? slash + 1 : f->key);
    kobj_format_time(now_ms(), t, sizeof(t));
    snprintf(val, sizeof(val), "%s %s", d->o->identity ? d->o->identity : "gangsched", t);
    cJSON *body = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "metadata"), "annotations");
    cJSON_AddStringToObject(ann, KOBJ_ANNOT_BIND_FENCE, val);
    send_json(d, KUBE_PATCH_MERGE, path, body, on_fenced, f);
}

static void fence_pod(struct kdrv *d, const char *key, bool recovery)
{
    struct kfence *f = calloc(1, sizeof(*f));
    if (!f) {
        LOG_ERROR(KDRV_MOD, "out of memory fencing %s", key);
        return;
    }
    f->d = d;
    f->recovery = recovery;
    snprintf(f->key, sizeof(f->key), "%s", key);
    if (recovery)
        d->fences_left++;
    send_fence(f);
}

/* An eviction in flight: the pod, for the delete fallback. */
struct kevict {
    struct kdrv *d;
    char ns[254], name[254];
};

static void on_evicted(void *ctx, const struct kube_resp *r)
{
    struct kevict *ev = ctx;
    struct kdrv *d = ev->d;
    if (r->status >= 200 && r->status < 300) {
        free(ev);
        return;
    }
    if (r->status == 404) { /* gone already */
        free(ev);
        return;
    }
    if (r->status == 429 && d->o->evict_fallback_delete) {
        LOG_WARN(KDRV_MOD, "eviction still blocked after retries, deleting: pod=%s/%s error=%s",
                 ev->ns, ev->name, r->error ? r->error : "");
        delete_pod(d, ev->ns, ev->name, "eviction blocked by a disruption budget");
    } else {
        LOG_WARN(KDRV_MOD,
                 "eviction failed: pod=%s/%s status=%d error=%s (retried at a later "
                 "cycle)",
                 ev->ns, ev->name, r->status, r->error ? r->error : "");
    }
    free(ev);
}

/* Eviction API (PodDisruptionBudgets respected; the client retries 429 with its Retry-After).
 * When it stays blocked and --evict-fallback-delete is set, the pod is deleted (its termination
 * grace period is honoured by the kubelet). */
static void evict_pod(struct kdrv *d, const char *ns, const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
    cJSON *body = new_object("policy/v1", "Eviction", ns, name, NULL);
    struct kevict *ev = calloc(1, sizeof(*ev));
    if (!ev) {
        cJSON_Delete(body);
        LOG_ERROR(KDRV_MOD, "out of memory evicting %s/%s", ns, name);
        return;
    }
    ev->d = d;
    snprintf(ev->ns, sizeof(ev->ns), "%s", ns);
    snprintf(ev->name, sizeof(ev->name), "%s", name);
    char *s = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!s || kube_request(d->client, KUBE_POST, path, s, strlen(s), 0, on_evicted, ev) != 0) {
        LOG_ERROR(KDRV_MOD, "out of memory evicting %s/%s", ns, name);
        free(ev);
    }
    free(s);
}

/* ---- binding ----------------------------------------------------------------------------------
 */

static void schedule_cycle(struct kdrv *d, uint64_t delay_ms);
static void set_bound_at(struct kdrv *d, const char *gang, int64_t at);

static void gang_binds_free(struct kgang_binds *gb)
{
    for (uint32_t i = 0; i < gb->n_pods; i++) {
        free(gb->pods[i].pod_key);
        free(gb->pods[i].ns);
        free(gb->pods[i].name);
        free(gb->pods[i].node);
        free(gb->pods[i].error);
    }
    free(gb->pods);
    free(gb->gang);
    free(gb->pg_ns);
    free(gb->pg_name);
    free(gb->queue);
    free(gb->flavor);
    free(gb->summary);
}

/* Every bind of the cycle has answered: close the intents in one transaction, roll back gangs
 * with a failed member, then status and events. */
static void binds_finished(struct kdrv *d)
{
    struct sched_errbuf eb;
    int64_t now = now_ms();
    int rc = store_begin(d->db, &eb);
    for (uint32_t g = 0; rc == 0 && g < d->n_binds; g++) {
        struct kgang_binds *gb = &d->binds[g];
        bool ok = gb->n_failed == 0;
        rc = store_journal_done(d->db, gb->gang, STORE_ALL_PODS,
                                ok ? STORE_BIND_BOUND : STORE_BIND_ROLLED_BACK, now, NULL, &eb);
        if (rc == 0) {
            struct store_job j = {.gang = gb->gang,
                                  .gang_id = -1,
                                  .queue = gb->queue,
                                  .flavor = gb->flavor,
                                  .gpus = gb->gpus,
                                  .state = ok ? STORE_JOB_RUNNING : STORE_JOB_PENDING,
                                  .submit_ms = now,
                                  .admit_ms = ok ? now : STORE_NO_TIME,
                                  .start_ms = ok ? now : STORE_NO_TIME,
                                  .finish_ms = STORE_NO_TIME};
            struct store_job old;
            if (store_job_get(d->db, gb->gang, &old, NULL) == 0) {
                j.submit_ms = old.submit_ms;
                j.preemptions = old.preemptions;
                j.restarts = old.restarts;
                if (!ok)
                    j.flavor = NULL;
            }
            if (!ok)
                j.flavor = NULL;
            rc = store_job_upsert(d->db, &j, &eb);
        }
        if (rc == 0 && !ok)
            rc = job_charge(d, gb->gang, NULL, NULL, 0, -1, &eb);
    }
    if (rc == 0)
        rc = store_commit(d->db, &eb);
    if (rc != 0) {
        store_rollback(d->db);
        fatal(d, eb.msg); /* the journal must stay true: stop rather than guess */
        return;
    }
    for (uint32_t g = 0; g < d->n_binds; g++) {
        struct kgang_binds *gb = &d->binds[g];
        const struct kpg *pg = NULL;
        if (gb->pg_ns) {
            char key[600];
            snprintf(key, sizeof(key), "%s/%s", gb->pg_ns, gb->pg_name);
            pg = kcache_pg(d->cache, key);
        }
        const char *bound_lbl[] = {"bound"}, *failed_lbl[] = {"failed"};
        http_metric_add_value(d->m_binds, bound_lbl, gb->n_pods - gb->n_failed);
        http_metric_add_value(d->m_binds, failed_lbl, gb->n_failed);
        const char *outcome[] = {gb->n_failed == 0 ? "bound" : "rolled_back"};
        http_metric_add_value(d->m_gangs, outcome, 1);
        if (gb->n_failed == 0) {
            set_bound_at(d, gb->gang, now);
            LOG_INFO(KDRV_MOD, "gang bound: gang=%s pods=%u", gb->gang, gb->n_pods);
            gang_status(d, gb->gang, pg, "Running", "Normal", "Scheduled", gb->summary, true);
            continue;
        }
        const char *first_err = "";
        for (uint32_t i = 0; i < gb->n_pods; i++)
            if (!gb->pods[i].ok && gb->pods[i].error) {
                first_err = gb->pods[i].error;
                break;
            }
        char msg[700];
        snprintf(msg, sizeof(msg),
                 "%u of %u pods could not be bound (%s); the bound ones are "
                 "deleted and the gang is scheduled again",
                 gb->n_failed, gb->n_pods, first_err);
        LOG_WARN(KDRV_MOD, "gang bind failed: gang=%s error=%s", gb->gang, msg);
        /* whole-gang rollback: the members bound (by us, or by someone else first) are deleted
         * and stay assumed until the watch shows them bound; a Binding without a definite
         * answer may still land: the pod stays assumed until a fence says how it ended */
        for (uint32_t i = 0; i < gb->n_pods; i++) {
            struct kbind *b = &gb->pods[i];
            if (b->ok || b->foreign)
                delete_pod(d, b->ns, b->name,
                           b->ok ? "partial gang rolled back"
                                 : "bound elsewhere by someone else: its gang is rolled back");
            if (b->unknown)
                fence_pod(d, b->pod_key, false);
            else if (!b->ok)
                kcache_unassume(d->cache, b->pod_key);
        }
        /* its members' deletion is the rollback, not a failure for the lifecycle */
        strmap_put(&d->tearing, gb->gang, (void *)1, NULL);
        free(strmap_del(&d->bound_at, gb->gang));
        gang_status(d, gb->gang, pg, "Pending", "Warning", "FailedBinding", msg, true);
    }
    for (uint32_t g = 0; g < d->n_binds; g++)
        gang_binds_free(&d->binds[g]);
    free(d->binds);
    d->binds = NULL;
    d->n_binds = 0;
    if (d->stopping)
        uv_stop(d->loop);
    else
        schedule_cycle(d, d->o->cycle_ms);
}

static void send_bind(struct kdrv *d, struct kbind *b, const char *flavor);

/* One bind has its outcome (b->ok, foreign, unknown; why: the error when it failed). */
static void bind_done(struct kbind *b, const char *why)
{
    struct kgang_binds *gb = b->gb;
    struct kdrv *d = gb->d;
    b->done = true;
    if (!b->ok) {
        b->error = strdup(why);
        gb->n_failed++;
    }
    gb->n_done++;
    if (--d->binds_left == 0)
        binds_finished(d);
}

/* The pod read back after its Binding's resourceVersion precondition failed: something wrote
 * it since our snapshot (our own status write, a label, or another scheduler's Binding). */
static void on_bind_reread(void *ctx, const struct kube_resp *r)
{
    struct kbind *b = ctx;
    struct kdrv *d = b->gb->d;
    char buf[700];
    if (r->status == 200) {
        cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
        if (obj && kcache_pod_event(d->cache, obj, false) != 0)
            fatal(d, "out of memory in the pod cache");
        cJSON_Delete(obj);
        const struct kpod *p = kcache_pod(d->cache, b->pod_key);
        if (p && p->node) { /* bound by someone else first (same node or not: not our GPUs) */
            b->foreign = true;
            snprintf(buf, sizeof(buf),
                     "pod %s: bound to node \"%s\" by someone else before our Binding", b->pod_key,
                     p->node);
            bind_done(b, buf);
            return;
        }
        if (p && !p->deleting && !d->stopping) { /* still ours to bind: with its new version */
            send_bind(d, b, b->gb->flavor);
            return;
        }
        snprintf(buf, sizeof(buf), "pod %s: deleted or replaced before its Binding", b->pod_key);
        bind_done(b, buf);
        return;
    }
    b->unknown = r->status != 404;
    snprintf(buf, sizeof(buf), "pod %s: HTTP %d reading it back: %s", b->pod_key, r->status,
             r->error ? r->error : "no response");
    bind_done(b, buf);
}

static void on_bind(void *ctx, const struct kube_resp *r)
{
    struct kbind *b = ctx;
    struct kdrv *d = b->gb->d;
    if (r->status >= 200 && r->status < 300) {
        b->ok = true;
    } else if (r->status == 409 && r->error) {
        /* "pod X is already assigned to node \"N\"": fine when N is the node we chose (a retry
         * of a Binding that went through); another node: someone else bound it */
        char want[600];
        snprintf(want, sizeof(want), "already assigned to node \"%s\"", b->node);
        b->ok = strstr(r->error, want) != NULL;
        b->foreign = !b->ok && strstr(r->error, "already assigned to node") != NULL;
        if (!b->ok && !b->foreign && b->rereads < 3 &&
            strstr(r->error, "Precondition failed: ResourceVersion")) {
            /* the pod changed since our snapshot: read it back and decide (a leader deposed
             * meanwhile has exited: the renew deadline is shorter than the lease) */
            char path[KOBJ_KEY_MAX + 40];
            b->rereads++;
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", b->ns, b->name);
            if (kube_request(d->client, KUBE_GET, path, NULL, 0, 0, on_bind_reread, b) == 0)
                return;
        }
    }
    if (!b->ok && (r->status == 0 || r->status == 429 || r->status >= 500))
        b->unknown = true; /* the server may still apply it: fenced at the rollback */
    char buf[600];
    snprintf(buf, sizeof(buf), "pod %s: HTTP %d: %s", b->pod_key, r->status,
             r->error ? r->error : "no response");
    bind_done(b, buf);
}

static void send_bind(struct kdrv *d, struct kbind *b, const char *flavor)
{
    char path[600], ids[160];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", b->ns, b->name);
    cJSON *meta;
    cJSON *body = new_object("v1", "Binding", b->ns, b->name, &meta);
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    if (p && p->uid)
        cJSON_AddStringToObject(meta, "uid", p->uid);
    if (p && p->rv) /* checked when applied: a fence (or any write) since makes it fail */
        cJSON_AddStringToObject(meta, "resourceVersion", p->rv);
    cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
    annot_gpu_ids(b->gpu_mask, ids, sizeof(ids));
    if (b->gpu_mask)
        cJSON_AddStringToObject(ann, KOBJ_ANNOT_GPU_IDS, ids);
    if (flavor)
        cJSON_AddStringToObject(ann, KOBJ_ANNOT_FLAVOR, flavor);
    cJSON *target = cJSON_AddObjectToObject(body, "target");
    cJSON_AddStringToObject(target, "apiVersion", "v1");
    cJSON_AddStringToObject(target, "kind", "Node");
    cJSON_AddStringToObject(target, "name", b->node);
    char *s = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    /* retried on 5xx and 429: a bind that landed but whose answer was lost comes back as 409
     * "already assigned" to this node, which on_bind counts as bound */
    if (!s || kube_request(d->client, KUBE_POST, path, s, strlen(s), 0, on_bind, b)) {
        struct kube_resp r = {.status = 0, .body = "", .error = "out of memory"};
        free(s);
        on_bind(b, &r);
        return;
    }
    free(s);
}

/* ---- DRA: a pod's ResourceClaims allocated before its Binding (sched/kube/dra.h) ---------- */

/* The claim writes of one pod in flight; its Binding follows when all succeeded. */
struct kclaim_writes {
    struct kbind *b;
    char *flavor;
    uint32_t left, failed;
    char *error;
};

static void on_claim_written(void *ctx, const struct kube_resp *r)
{
    struct kclaim_writes *w = ctx;
    if (r->status < 200 || r->status >= 300) {
        w->failed++;
        if (!w->error) {
            char buf[600];
            snprintf(buf, sizeof(buf), "pod %s: ResourceClaim allocation: HTTP %d: %s",
                     w->b->pod_key, r->status, r->error ? r->error : "no response");
            w->error = strdup(buf);
        }
    }
    if (--w->left > 0)
        return;
    struct kbind *b = w->b;
    if (w->failed == 0) /* allocation and reservedFor written: now the Binding */
        send_bind(b->gb->d, b, w->flavor);
    else
        bind_done(b, w->error ? w->error : "ResourceClaim allocation failed");
    free(w->flavor);
    free(w->error);
    free(w);
}

/* Writes status.allocation and status.reservedFor of every claim of the pod (resourceclaims/
 * status, as kube-scheduler's DynamicResources PreBind), the devices being the node's DRA GPUs
 * of the pod's GPU mask in index order, then sends its Binding; a pod without claims is bound
 * at once. A failed write fails the bind (the gang rolls back whole). */
static void send_claims_then_bind(struct kdrv *d, struct kbind *b, const char *flavor)
{
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    if (!p || p->n_claims == 0) {
        send_bind(d, b, flavor);
        return;
    }
    const char *dev[32], *drv[32], *pool[32];
    uint32_t n = 0;
    for (uint32_t g = 0; g < 32; g++)
        if (b->gpu_mask & (1u << g)) {
            dev[n] = kcache_dra_device(d->cache, b->node, g, &drv[n], &pool[n]);
            if (!dev[n]) {
                char buf[600];
                snprintf(buf, sizeof(buf), "pod %s: GPU %u of node %s is not a DRA device",
                         b->pod_key, g, b->node);
                bind_done(b, buf);
                return;
            }
            n++;
        }
    struct kclaim_writes *w = calloc(1, sizeof(*w));
    if (!w || (flavor && !(w->flavor = strdup(flavor)))) {
        free(w);
        bind_done(b, "out of memory");
        return;
    }
    w->b = b;
    w->left = p->n_claims;
    uint32_t at = 0;
    for (uint32_t i = 0; i < p->n_claims; i++) {
        const struct kclaim *cl = kcache_claim(d->cache, p->claims[i]);
        uint32_t take = cl ? cl->all ? n - at : (uint32_t)cl->gpus : 0; /* All: the rest */
        cJSON *body = cl && at + take <= n ? kdra_claim_allocation(cl, b->node, dev + at, drv + at,
                                                                   pool + at, take, p->name, p->uid)
                                           : NULL;
        at += take;
        char path[KOBJ_KEY_MAX + 80];
        snprintf(path, sizeof(path),
                 "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status", p->ns,
                 cl ? cl->name : "");
        if (!body) {
            struct kube_resp r = {
                .status = 0, .body = "", .error = "claim unknown or too few devices"};
            on_claim_written(w, &r);
            continue;
        }
        send_json(d, KUBE_PATCH_MERGE, path, body, on_claim_written, w);
    }
}

/* ---- recovery ----------------------------------------------------------------------------------
 */

static int recover_intent(void *ctx, const struct store_intent *in)
{
    struct kdrv *d = ctx;
    uint32_t on_target = 0;
    for (uint32_t i = 0; i < in->n_pods; i++) {
        const struct kpod *p = kcache_pod(d->cache, in->pods[i].name);
        if (p && p->node && !p->deleting && strcmp(p->node, in->pods[i].node) == 0)
            on_target++;
    }
    bool whole = on_target == in->n_pods;
    if (!whole) /* every member bound, wherever and by whoever, goes: the gang starts whole */
        for (uint32_t i = 0; i < in->n_pods; i++) {
            const struct kpod *p = kcache_pod(d->cache, in->pods[i].name);
            if (p && p->node) {
                char ns[256], name[256];
                split_key(in->pods[i].name, ns, sizeof(ns), name, sizeof(name));
                delete_pod(d, ns, name, "partial gang found at recovery");
            }
        }
    LOG_INFO(KDRV_MOD, "recovered bind intent: gang=%s pods=%u bound=%u outcome=%s", in->gang,
             in->n_pods, on_target, whole ? "bound" : "rolled-back");
    return store_journal_done(d->db, in->gang, STORE_ALL_PODS,
                              whole ? STORE_BIND_BOUND : STORE_BIND_ROLLED_BACK, now_ms(), NULL,
                              NULL);
}

/* The unbound pods of an open intent may still be bound by a Binding of the previous process:
 * fenced before the intent is judged. */
static int fence_intent(void *ctx, const struct store_intent *in)
{
    struct kdrv *d = ctx;
    for (uint32_t i = 0; i < in->n_pods; i++) {
        const struct kpod *p = kcache_pod(d->cache, in->pods[i].name);
        if (p && !p->node && !p->deleting)
            fence_pod(d, p->key, true);
    }
    return 0;
}

/* Without the previous leader's journal, any pending pod of ours may have a Binding in flight. */
static void fence_pending(void *ctx, const struct kpod *p)
{
    struct kdrv *d = ctx;
    if (p->ours && !p->node && !p->deleting && !p->gated && p->phase == KPOD_PENDING)
        fence_pod(d, p->key, true);
}

#define KDRV_META_TERM "daemon.lease_term" /* the Lease term this database last led in */

/* Whether this database's bind journal covers every Binding the previous leader may have sent:
 * it led the term just before this one (a restart on the same database), or nobody led before
 * (this process created the Lease), or there is no leader election. */
static bool journal_complete(struct kdrv *d, int64_t term)
{
    if (!d->lease || term == 0)
        return true;
    int64_t last = -2;
    if (store_meta_get_i64(d->db, KDRV_META_TERM, &last, NULL) != 0)
        return false;
    return last == term - 1 || last == term;
}
static store_action_fn replay_action;

static store_reservation_fn load_operator_hold;

static int load_gave_up(void *ctx, const struct store_job *j)
{
    struct kdrv *d = ctx;
    if (j->state == STORE_JOB_FAILED && strmap_put(&d->gave_up, j->gang, (void *)1, NULL) != 0)
        return SCHED_ENOMEM;
    return 0;
}

/* The database is opened by the leader only (standbys never write). */
static int open_store(struct kdrv *d)
{
    struct sched_errbuf eb;
    struct store_opts so;
    store_opts_default(&so);
    so.writer_id = d->o->identity;
    char adopted[600];
    int rc = http_follow_adopt(d->o->db_path, adopted, sizeof(adopted), &eb); /* fail-over */
    if (rc == 1)
        LOG_INFO(KDRV_MOD, "%s", adopted);
    else if (rc < 0)
        LOG_WARN(KDRV_MOD, "the followed store is not adopted: error=%s", eb.msg);
    rc = store_open(d->o->db_path, STORE_CREATE | STORE_DURABLE, &so, &d->db, &eb);
    if (rc != 0 && d->o->rebuild_store) {
        /* the cluster is the truth: what is lost is the operators' holds and reservations, the
         * retry budgets spent and the decision history; said loudly, the old file kept */
        char aside[4200];
        if (store_set_aside(d->o->db_path, rc, aside, sizeof(aside), &eb) == 0) {
            LOG_WARN(KDRV_MOD, "database rebuilt: error=%s kept_as=%s", eb.msg, aside);
            rc = store_open(d->o->db_path, STORE_CREATE | STORE_DURABLE, &so, &d->db, &eb);
        }
    }
    if (rc == 0) {
        rc = store_config_apply(d->db, config_watch_current(d->cw), NULL, 0, &eb);
        if (rc == 0) /* the operators' holds survive a restart or a new leader */
            rc = store_action_list(d->db, false, replay_action, d, &eb);
        if (rc == 0) /* and so do the gangs that used up their retry budget */
            rc = store_job_list(d->db, load_gave_up, d, &eb);
        if (rc == 0) /* and the operators' reservations */
            rc = store_reservation_list(d->db, load_operator_hold, d, &eb);
        if (rc != 0) {
            store_close(d->db);
            d->db = NULL;
        }
    }
    if (rc != 0)
        fatal(d, eb.msg);
    return rc;
}

/* Resolves what a previous leader left: first the fences (returns 1 while they are answered),
 * then the open intents judged from the pods as read back. */
static int recover(struct kdrv *d)
{
    struct sched_errbuf eb;
    int64_t term = d->lease ? kube_lease_transitions(d->lease) : 0;
    if (!d->fenced) {
        d->fenced = true;
        bool complete = journal_complete(d, term);
        if (store_journal_pending(d->db, fence_intent, d, &eb) != 0) {
            fatal(d, eb.msg);
            return -1;
        }
        if (!complete)
            kcache_each_pod(d->cache, fence_pending, d);
        LOG_INFO(KDRV_MOD, "recovery: term=%lld journal=%s fences=%u", (long long)term,
                 complete ? "complete" : "of another leader", d->fences_left);
    }
    if (d->fences_left > 0)
        return 1;
    int rc = store_begin(d->db, &eb);
    if (rc == 0 && d->lease)
        rc = store_meta_put_i64(d->db, KDRV_META_TERM, term, &eb);
    if (rc == 0)
        rc = store_journal_pending(d->db, recover_intent, d, &eb);
    if (rc == 0)
        rc = store_commit(d->db, &eb);
    if (rc != 0) {
        store_rollback(d->db);
        fatal(d, eb.msg);
        return rc;
    }
    d->recovered = true;
    return 0;
}

/* ---- the cycle ----------------------------------------------------------------------------------
 */

static bool synced(const struct kdrv *d)
{
    for (uint32_t i = 0; i < d->n_inf; i++)
        if (!kube_informer_synced(d->inf[i]))
            return false;
    return true;
}

static const char *flavor_name(const struct config *cfg, uint32_t f)
{
    return cfg && f < cfg->n_flavors ? cfg->flavors[f].name : NULL;
}

/* Records a running gang the store does not know as running (bound by an earlier leader, or
 * before a crash): its job row and its placed pods. */
static int adopt_running(struct kdrv *d, const struct kgang *kg, const struct kcache_build *kb,
                         const struct config *cfg, int64_t now, struct sched_errbuf *eb)
{
    const struct sched_running *r = NULL;
    for (uint32_t i = 0; i < kb->snap.n_running; i++)
        if (kb->snap.running[i].gang == &kg->gang)
            r = &kb->snap.running[i];
    uint32_t flavor = r ? r->flavor : 0;
    struct store_job old;
    bool known = store_job_get(d->db, kg->key, &old, NULL) == 0 && old.state == STORE_JOB_RUNNING;
    int rc = 0;
    if (!known) {
        struct store_pod *pods = arena_calloc(&d->arena, kg->gang.n_pods, sizeof(*pods));
        if (!pods)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < kg->gang.n_pods; i++) {
            const struct kpod *p = kg->members[i];
            pods[i] = (struct store_pod){.index = i,
                                         .name = p->key,
                                         .node = p->node ? p->node : "",
                                         .gpu_mask = p->gpu_mask};
        }
        rc = store_journal_done(d->db, kg->key, STORE_ALL_PODS, STORE_BIND_ROLLED_BACK, now, NULL,
                                eb);
        if (rc == 0)
            rc = store_placement_release(d->db, kg->key, NULL, eb);
        if (rc == 0)
            rc = store_journal_intent(d->db, kg->key, d->cycle, now, pods, kg->gang.n_pods, eb);
        if (rc == 0)
            rc =
                store_journal_done(d->db, kg->key, STORE_ALL_PODS, STORE_BIND_BOUND, now, NULL, eb);
        struct store_job j = {.gang = kg->key,
                              .gang_id = -1,
                              .queue = cfg->queues[kg->gang.queue].name,
                              .flavor = flavor_name(cfg, flavor),
                              .gpus = kg->gang.gpus,
                              .state = STORE_JOB_RUNNING,
                              .submit_ms = kg->gang.submit_ms,
                              .admit_ms = now,
                              .start_ms = now,
                              .finish_ms = STORE_NO_TIME};
        struct store_job prev;
        if (store_job_get(d->db, kg->key, &prev, NULL) == 0) {
            j.preemptions = prev.preemptions;
            j.restarts = prev.restarts;
        }
        if (rc == 0)
            rc = store_job_upsert(d->db, &j, eb);
    }
    if (rc == 0)
        rc = job_charge(d, kg->key, cfg->queues[kg->gang.queue].name, flavor_name(cfg, flavor),
                        kg->gang.gpus, +1, eb);
    return rc;
}

/* A growable list of copied strings (keys gathered while iterating, acted on afterwards). */
struct strlist {
    char **v;
    uint32_t n, cap;
};

static int strlist_add(struct strlist *l, const char *str)
{
    if (l->n == l->cap) {
        uint32_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, nc * sizeof(*nv));
        if (!nv)
            return SCHED_ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    if (!(l->v[l->n] = strdup(str)))
        return SCHED_ENOMEM;
    l->n++;
    return 0;
}

static void strlist_free(struct strlist *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* GPU ledger rows with an amount, as queue and flavor pairs. */
static int collect_ledger(void *ctx, const struct store_ledger_row *r)
{
    struct strlist *l = ctx;
    if (strcmp(r->resource, device_resource()) != 0 || r->amount == 0)
        return 0;
    int rc = strlist_add(l, r->queue);
    return rc ? rc : strlist_add(l, r->flavor);
}

/* Sets every GPU ledger row to 0 (the first cycle as leader recharges what runs). */
static int zero_ledger(struct kdrv *d, struct sched_errbuf *eb)
{
    struct strlist l = {0};
    int rc = store_ledger_list(d->db, collect_ledger, &l, eb);
    if (rc == SCHED_ENOMEM)
        rc = sched_fail(eb, rc, "out of memory");
    for (uint32_t i = 0; rc == 0 && i + 1 < l.n; i += 2)
        rc = store_ledger_set(d->db, l.v[i], l.v[i + 1], device_resource(), 0, eb);
    strlist_free(&l);
    return rc;
}

struct stale_ctx {
    struct kdrv *d;
    struct strlist gangs;
};

static int collect_stale(void *ctx, const struct store_job *j)
{
    struct stale_ctx *sc = ctx;
    if (j->state != STORE_JOB_ADMITTED && j->state != STORE_JOB_RUNNING)
        return 0;
    if (strmap_get(&sc->d->jobs, j->gang))
        return 0;
    return strlist_add(&sc->gangs, j->gang);
}

static int job_finished(struct kdrv *d, const char *gang, int64_t now, struct sched_errbuf *eb)
{
    struct store_job old;
    int rc = store_job_get(d->db, gang, &old, eb);
    if (rc == 0) {
        struct store_job j = old;
        char *g = strdup(gang), *q = strdup(old.queue);
        if (!g || !q) {
            free(g);
            free(q);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
        j.gang = g;
        j.queue = q;
        j.flavor = NULL;
        j.state = STORE_JOB_FINISHED;
        j.finish_ms = now;
        rc = store_job_upsert(d->db, &j, eb);
        free(g);
        free(q);
    } else if (rc == SCHED_ENOENT) {
        rc = 0;
    }
    if (rc == 0)
        rc = store_placement_release(d->db, gang, NULL, eb);
    if (rc == 0)
        rc = job_charge(d, gang, NULL, NULL, 0, -1, eb);
    return rc;
}

/* Keeps the jobs and the GPU ledger equal to the cluster: running gangs of the cycle's input are
 * charged, gangs no longer running (finished, deleted, evicted) are released. The first cycle
 * as leader reconciles whatever an earlier process left. Runs inside the cycle's transaction. */
static int sync_jobs(struct kdrv *d, const struct kcache_build *kb, const struct config *cfg,
                     int64_t now, struct sched_errbuf *eb)
{
    int rc = 0;
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->jobs, &i, &k, &v);)
        ((struct kjob *)v)->seen = false;
    if (!d->jobs_synced) /* start from an empty ledger: every running gang is charged below */
        rc = zero_ledger(d, eb);
    for (uint32_t g = kb->n_pending; rc == 0 && g < kb->n_gangs; g++) {
        const struct kgang *kg = &kb->gangs[g];
        struct kjob *j = strmap_get(&d->jobs, kg->key);
        if (j)
            j->seen = true;
        else if (!strmap_get(&d->tearing, kg->key)) /* a teardown released it already */
            rc = adopt_running(d, kg, kb, cfg, now, eb);
    }
    /* gangs charged but no longer running */
    struct stale_ctx sc = {.d = d};
    for (size_t i = 0; rc == 0 && strmap_next(&d->jobs, &i, &k, &v);)
        if (!((struct kjob *)v)->seen && strlist_add(&sc.gangs, k) != 0)
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0 && !d->jobs_synced) /* rows of an earlier process that are not running now */
        rc = store_job_list(d->db, collect_stale, &sc, eb);
    if (rc == SCHED_ENOMEM)
        rc = sched_fail(eb, rc, "out of memory");
    for (uint32_t i = 0; rc == 0 && i < sc.gangs.n; i++)
        rc = job_finished(d, sc.gangs.v[i], now, eb);
    strlist_free(&sc.gangs);
    if (rc == 0)
        d->jobs_synced = true;
    return rc;
}

/* A gang not offered to the core (pods missing, no or unknown queue, invalid spec): a job row
 * (its queue label, or "-"; GPUs unknown yet: 0) and a decision naming why, so that `gangctl
 * jobs` lists it and `explain` finds it. The store keeps one decision row per change. */
static int waiting_gang_records(struct kdrv *d, const struct kwaiting *w, int64_t now,
                                struct sched_errbuf *eb)
{
    struct store_job old;
    int rc = 0;
    if (store_job_get(d->db, w->key, &old, NULL) == SCHED_ENOENT) {
        struct store_job j = {.gang = w->key,
                              .gang_id = -1,
                              .queue = w->queue ? w->queue : "-",
                              .state = STORE_JOB_PENDING,
                              .submit_ms = now,
                              .admit_ms = STORE_NO_TIME,
                              .start_ms = STORE_NO_TIME,
                              .finish_ms = STORE_NO_TIME};
        rc = store_job_upsert(d->db, &j, eb);
    }
    char text[600];
    snprintf(text, sizeof(text), "waiting: %s (%s)", w->message ? w->message : "", w->reason);
    struct store_decision dec = {
        .cycle = d->cycle, .ts_ms = now, .gang = w->key, .why = STORE_WHY_WAITING, .reason = text};
    return rc ? rc : store_decision_add(d->db, &dec, eb);
}

/* A gang waiting in a queue (a verdict, or a held queue) has a job row, so that `gangctl jobs`
 * lists it and `gangctl explain` finds it; a placeholder row of a gang that waited for its pods
 * (no GPUs known) takes its queue and GPUs once it has them. */
static int waiting_job_row(struct kdrv *d, const char *key, const char *queue, const struct gang *g,
                           struct sched_errbuf *eb)
{
    struct store_job old;
    int got = store_job_get(d->db, key, &old, NULL);
    if (got == 0 && !(old.state == STORE_JOB_PENDING && old.gpus == 0 && g->gpus > 0))
        return 0;
    if (got != 0 && got != SCHED_ENOENT)
        return 0;
    struct store_job j = {.gang = key,
                          .gang_id = -1,
                          .queue = queue,
                          .gpus = g->gpus,
                          .state = STORE_JOB_PENDING,
                          .submit_ms = g->submit_ms,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = STORE_NO_TIME};
    return store_job_upsert(d->db, &j, eb);
}

static int record_cycle(struct kdrv *d, const struct kcache_build *kb,
                        const struct sched_result *res, const struct config *cfg, int64_t now,
                        struct sched_errbuf *eb)
{
    int rc = store_begin(d->db, eb);
    if (rc == 0)
        rc = sync_jobs(d, kb, cfg, now, eb);
    for (uint32_t v = 0; rc == 0 && v < res->n_verdicts; v++) {
        const struct sched_verdict *vd = &res->verdicts[v];
        const struct kgang *kg = &kb->gangs[vd->gang->id];
        char reason[512];
        sched_verdict_format(vd, kb->snap.cluster, cfg, reason, sizeof(reason));
        /* the store keeps one row per change of verdict with its latest text; what it has
         * already is not sent again (a store read per gang and cycle otherwise) */
        struct kstatus *st = strmap_get(&d->status, kg->key);
        if (!st && (st = calloc(1, sizeof(*st))) && strmap_put(&d->status, kg->key, st, NULL)) {
            free(st);
            st = NULL;
        }
        uint32_t h = verdict_key((int)vd->why, reason);
        if (st && st->logged == h)
            continue;
        char note[64];
        struct store_decision dec = {.cycle = d->cycle,
                                     .ts_ms = now,
                                     .gang = kg->key,
                                     .why = (int)vd->why,
                                     .reason = reason};
        eta_for_log(res, vd->gang, now, &dec.has_eta, &dec.eta_ms, note, sizeof(note));
        dec.eta = note[0] ? note : NULL;
        rc = store_decision_add(d->db, &dec, eb);
        if (rc == 0)
            rc = waiting_job_row(d, kg->key, cfg->queues[vd->gang->queue].name, vd->gang, eb);
        if (rc == 0 && st)
            st->logged = h;
    }
    for (uint32_t e = 0; rc == 0 && e < res->n_evictions; e++) {
        const struct sched_eviction *ev = &res->evictions[e];
        struct store_preemption p = {.cycle = d->cycle,
                                     .ts_ms = now,
                                     .victim = kb->gangs[ev->victim->gang->id].key,
                                     .preemptor = kb->gangs[ev->preemptor->id].key,
                                     .gpus = ev->victim->gang->gpus,
                                     .lost_work_gpu_s = ev->lost_gpu_s,
                                     .cost = ev->cost};
        rc = store_preemption_add(d->db, &p, eb);
        /* the victim goes back to pending (a preemption never counts against its retry budget)
         * and its members' deletion is not a failure the lifecycle should act on */
        const char *victim = kb->gangs[ev->victim->gang->id].key;
        struct store_job old;
        if (rc == 0 && store_job_get(d->db, victim, &old, NULL) == 0) {
            struct store_job j = old;
            j.gang = victim;
            j.queue = cfg->queues[ev->victim->gang->queue].name;
            j.flavor = NULL;
            j.state = STORE_JOB_PENDING;
            j.admit_ms = j.start_ms = STORE_NO_TIME;
            j.preemptions = old.preemptions + 1;
            rc = store_job_upsert(d->db, &j, eb);
        }
        if (rc == 0)
            rc = job_charge(d, victim, NULL, NULL, 0, -1, eb);
        if (rc == 0)
            rc = store_placement_release(d->db, victim, NULL, eb);
        if (rc == 0 && strmap_put(&d->tearing, victim, (void *)2, NULL) != 0) /* 2: evicted */
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
        free(strmap_del(&d->bound_at, victim));
    }
    for (uint32_t p = 0; rc == 0 && p < res->n_placements; p++) {
        const struct sched_placement *pl = &res->placements[p];
        const struct kgang *kg = &kb->gangs[pl->gang->id];
        struct store_pod *pods = arena_calloc(&d->arena, pl->gang->n_pods, sizeof(*pods));
        if (!pods)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < pl->gang->n_pods; i++)
            pods[i] = (struct store_pod){.index = i,
                                         .name = kg->members[i]->key,
                                         .node = kb->snap.cluster->nodes[pl->pods[i].node].name,
                                         .gpu_mask = pl->pods[i].gpu_mask};
        rc = store_journal_intent(d->db, kg->key, d->cycle, now, pods, pl->gang->n_pods, eb);
        if (rc == 0) {
            struct store_decision dec = {.cycle = d->cycle,
                                         .ts_ms = now,
                                         .gang = kg->key,
                                         .why = SCHED_WHY_PLACED,
                                         .reason = "placed"};
            rc = store_decision_add(d->db, &dec, eb);
            forget_logged(d, kg->key);
        }
        if (rc == 0) {
            struct store_job j = {.gang = kg->key,
                                  .gang_id = -1,
                                  .queue = cfg->queues[pl->gang->queue].name,
                                  .flavor = flavor_name(cfg, pl->flavor),
                                  .gpus = pl->gang->gpus,
                                  .state = STORE_JOB_ADMITTED,
                                  .submit_ms = pl->gang->submit_ms,
                                  .admit_ms = now,
                                  .start_ms = STORE_NO_TIME,
                                  .finish_ms = STORE_NO_TIME};
            struct store_job old; /* a restart keeps its counters */
            if (store_job_get(d->db, kg->key, &old, NULL) == 0) {
                j.preemptions = old.preemptions;
                j.restarts = old.restarts;
            }
            rc = store_job_upsert(d->db, &j, eb);
        }
        if (rc == 0)
            rc = job_charge(d, kg->key, cfg->queues[pl->gang->queue].name,
                            flavor_name(cfg, pl->flavor), pl->gang->gpus, +1, eb);
    }
    if (rc == 0)
        rc = store_commit(d->db, eb);
    if (rc != 0)
        store_rollback(d->db);
    return rc;
}

/* ---- gang lifecycle: start watchdog, broken gangs, node health --------------------------------
 */

static int64_t bound_at_cb(void *ctx, const char *gang)
{
    struct kdrv *d = ctx;
    void *tv = strmap_get(&d->tearing, gang);
    if (tv) /* evicted (preemption: PodDisruptionBudgets decide when), or torn down */
        return tv == (void *)2 ? KLIFE_EVICTING : KLIFE_TEARING;
    int64_t *t = strmap_get(&d->bound_at, gang);
    if (t)
        return *t;
    /* first seen running (bound before this process led): the start timeout counts from now */
    t = malloc(sizeof(*t));
    if (!t)
        return now_ms();
    *t = now_ms();
    if (strmap_put(&d->bound_at, gang, t, NULL) != 0) {
        free(t);
        return now_ms();
    }
    return *t;
}

static void set_bound_at(struct kdrv *d, const char *gang, int64_t at)
{
    int64_t *t = malloc(sizeof(*t));
    void *old = NULL;
    if (t) {
        *t = at;
        if (strmap_put(&d->bound_at, gang, t, &old) != 0)
            free(t);
    }
    free(old);
}

/* NotReady-since per node of the build's cluster (0 = ready), and quarantine flags. */
static int64_t *node_health(struct kdrv *d, struct kcache_build *kb, int64_t now)
{
    const struct cluster *cl = kb->snap.cluster;
    int64_t *down = arena_calloc(&d->arena, cl->n_nodes ? cl->n_nodes : 1, sizeof(*down));
    if (!down)
        return NULL;
    uint32_t quarantined = 0;
    for (uint32_t i = 0; i < cl->n_nodes; i++) {
        const char *name = cl->nodes[i].name;
        int64_t *since = strmap_get(&d->node_down, name);
        if (!cl->nodes[i].ready) {
            if (!since && (since = malloc(sizeof(*since))) != NULL) {
                *since = now;
                if (strmap_put(&d->node_down, name, since, NULL) != 0) {
                    free(since);
                    since = NULL;
                }
            }
            down[i] = since ? *since : now;
        } else if (since) {
            free(strmap_del(&d->node_down, name));
        }
        struct kstrike *st = strmap_get(&d->strikes, name);
        if (st && st->until_ms > now) {
            kb->state[i].quarantined = true;
            quarantined++;
        }
    }
    http_metric_set(d->m_quarantined, NULL, quarantined);
    return down;
}

static void strike(struct kdrv *d, const char *node, int64_t now)
{
    struct kstrike *st = strmap_get(&d->strikes, node);
    if (!st) {
        st = calloc(1, sizeof(*st));
        if (!st || strmap_put(&d->strikes, node, st, NULL) != 0) {
            free(st);
            return;
        }
    }
    if (st->until_ms > now)
        return; /* quarantined already */
    if (st->n == 0 || now - st->window_start_ms > KDRV_STRIKE_WINDOW_MS) {
        st->n = 0;
        st->window_start_ms = now;
    }
    if (++st->n < KDRV_STRIKES)
        return;
    st->n = 0;
    st->until_ms = now + KDRV_QUARANTINE_MS;
    char note[300];
    snprintf(note, sizeof(note),
             "%d failed gang starts within %d minutes: no new pods for %d "
             "minutes",
             KDRV_STRIKES, KDRV_STRIKE_WINDOW_MS / 60000, KDRV_QUARANTINE_MS / 60000);
    LOG_WARN(KDRV_MOD, "node quarantined: node=%s why=%s", node, note);
    post_event(d, "v1", "Node", NULL, node, kcache_node_uid(d->cache, node), "Warning",
               "Quarantined", "Scheduling", note, NULL);
}

/* Tears a broken gang down (or, for an inference gang, deletes only its lost members), charges
 * its own failures to its retry budget and records the outcome. Inside a store transaction. */
static int teardown(struct kdrv *d, const struct klife_action *act, int64_t now,
                    struct sched_errbuf *eb)
{
    const struct kgang *kg = act->gang;
    const char *reason = klife_reason_name(act->reason);
    const char *lbl[] = {reason};
    http_metric_add_value(d->m_teardowns, lbl, 1);
    LOG_WARN(KDRV_MOD, "gang broken: gang=%s reason=%s whole=%d why=%s", kg->key, reason,
             act->whole, act->message);
    if (!act->whole) {
        for (uint32_t i = 0; i < act->n_lost; i++)
            delete_pod(d, act->lost[i]->ns, act->lost[i]->name, reason);
        char msg[1000];
        snprintf(msg, sizeof(msg), "%s: %u lost replica(s) replaced, the others go on",
                 act->message, act->n_lost);
        gang_status(d, kg->key, kg->pg, "Running", "Warning", reason, msg, true);
        return 0;
    }
    for (uint32_t m = 0; m < kg->gang.n_pods; m++)
        if (!kg->members[m]->deleting)
            delete_pod(d, kg->members[m]->ns, kg->members[m]->name, reason);
    if (strmap_put(&d->tearing, kg->key, (void *)1, NULL) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    free(strmap_del(&d->bound_at, kg->key));
    struct store_job old;
    uint32_t restarts = 0, preemptions = 0;
    int64_t submit = kg->gang.submit_ms;
    if (store_job_get(d->db, kg->key, &old, NULL) == 0) {
        restarts = old.restarts;
        preemptions = old.preemptions;
        submit = old.submit_ms;
    }
    if (act->own)
        restarts++;
    bool exhausted = act->own && restarts > act->max_restarts;
    const struct config *cfg = config_watch_current(d->cw);
    struct store_job j = {.gang = kg->key,
                          .gang_id = -1,
                          .queue = cfg && kg->gang.queue < cfg->n_queues
                                       ? cfg->queues[kg->gang.queue].name
                                       : "unknown",
                          .gpus = kg->gang.gpus,
                          .state = exhausted ? STORE_JOB_FAILED : STORE_JOB_PENDING,
                          .submit_ms = submit,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = exhausted ? now : STORE_NO_TIME,
                          .preemptions = preemptions,
                          .restarts = restarts};
    int rc = job_charge(d, kg->key, NULL, NULL, 0, -1, eb);
    if (rc == 0)
        rc = store_placement_release(d->db, kg->key, NULL, eb);
    if (rc == 0)
        rc = store_job_upsert(d->db, &j, eb);
    char reason_text[1100];
    snprintf(reason_text, sizeof(reason_text), "%s: %s", reason, act->message);
    struct store_decision dec = {.cycle = d->cycle,
                                 .ts_ms = now,
                                 .gang = kg->key,
                                 .why = SCHED_WHY_RESOURCES,
                                 .reason = reason_text};
    if (rc == 0)
        rc = store_decision_add(d->db, &dec, eb);
    forget_logged(d, kg->key);
    if (rc)
        return rc;
    char msg[1200];
    if (exhausted) {
        if (strmap_put(&d->gave_up, kg->key, (void *)1, NULL) != 0)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        snprintf(msg, sizeof(msg),
                 "failed %u times, more than maxRestarts %u (last: %s: %s); "
                 "'gangctl explain %s' lists every failure",
                 restarts, act->max_restarts, reason, act->message, kg->key);
        gang_status(d, kg->key, kg->pg, "Failed", "Warning", "RetryBudgetExhausted", msg, true);
    } else {
        snprintf(msg, sizeof(msg),
                 "%s; every member is deleted and the gang is scheduled "
                 "again with its place in line (restart %u of %u allowed)",
                 act->message, restarts, act->max_restarts);
        gang_status(d, kg->key, kg->pg, "Pending", "Warning", reason, msg, true);
    }
    if (act->strike_node)
        strike(d, act->strike_node, now);
    return 0;
}

/* The lifecycle step of a cycle: node health into the snapshot, broken gangs torn down, gangs
 * that gave up kept out of the queues. */
/* Once per change of state: warns when the nodes have none of the configured accelerator, naming
 * the extended resources they do have (a device.resource typo, or the wrong device plugin). */
static void warn_no_device(struct kdrv *d, const struct cluster *c)
{
    char msg[512];
    bool missing = device_missing(c, msg, sizeof(msg));
    if (missing && !d->warned_no_device)
        LOG_WARN(KDRV_MOD, "%s", msg);
    d->warned_no_device = missing;
}

static int lifecycle_step(struct kdrv *d, struct kcache_build *kb, const struct config *cfg,
                          int64_t now, struct sched_errbuf *eb)
{
    /* teardowns are over once none of the gang's members is bound any more */
    struct strmap running;
    strmap_init(&running);
    for (uint32_t g = kb->n_pending; g < kb->n_gangs; g++)
        if (strmap_put(&running, kb->gangs[g].key, (void *)1, NULL) != 0) {
            strmap_fini(&running);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
    const char *k;
    struct strlist over = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && strmap_next(&d->tearing, &i, &k, NULL);)
        if (!strmap_get(&running, k))
            rc = strlist_add(&over, k);
    for (uint32_t i = 0; i < over.n; i++)
        strmap_del(&d->tearing, over.v[i]);
    strlist_free(&over);
    strmap_fini(&running);
    if (rc)
        return sched_fail(eb, rc, "out of memory");
    int64_t *down = node_health(d, kb, now);
    if (!down)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    struct klife_action *acts;
    uint32_t n;
    rc = klife_check(kb, cfg, now, bound_at_cb, d, down, &d->arena, &acts, &n);
    if (rc)
        return sched_fail(eb, rc, "out of memory");
    if (n > 0) {
        rc = store_begin(d->db, eb);
        for (uint32_t i = 0; rc == 0 && i < n; i++)
            rc = teardown(d, &acts[i], now, eb);
        if (rc == 0)
            rc = store_commit(d->db, eb);
        if (rc) {
            store_rollback(d->db);
            return rc;
        }
    }
    for (uint32_t q = 0; q < kb->snap.n_queues; q++) {
        struct sched_queue_view *v = &kb->views[q];
        uint32_t keep = 0;
        for (uint32_t i = 0; i < v->n_pending; i++) {
            const struct kgang *kg = &kb->gangs[v->pending[i]->id];
            if (strmap_get(&d->gave_up, kg->key)) {
                gang_status(d, kg->key, kg->pg, "Failed", "Warning", "RetryBudgetExhausted",
                            "the gang used up its retry budget; delete and recreate it to try "
                            "again",
                            false);
                continue;
            }
            ((const struct gang **)v->pending)[keep++] = v->pending[i];
        }
        v->n_pending = keep;
    }
    return 0;
}

static void run_cycle(struct kdrv *d)
{
    if (d->stopping || !d->leading || d->n_binds > 0 || !synced(d))
        return;
    if (!d->db && open_store(d) != 0)
        return;
    if (!d->recovered && recover(d) != 0)
        return;
    if (!kcache_dirty(d->cache) && !d->force)
        return;
    d->force = false;
    const struct config *cfg = config_watch_pin(d->cw);
    struct sched_errbuf eb;
    int64_t now = now_ms();
    struct kcache_build kb;
    arena_reset(&d->arena);
    int rc = kcache_build(d->cache, cfg, d->pol, now, &d->arena, &kb, &eb);
    if (rc != 0) {
        config_watch_unpin(d->cw, cfg);
        LOG_ERROR(KDRV_MOD, "cannot build the cycle's input: error=%s",
                  rc == SCHED_ENOMEM ? "out of memory" : eb.msg);
        return;
    }
    warn_no_device(d, kb.snap.cluster);
    if (lifecycle_step(d, &kb, cfg, now, &eb) != 0) {
        config_watch_unpin(d->cw, cfg);
        fatal(d, eb.msg);
        return;
    }
    /* held and draining queues admit nothing (operator actions) */
    for (uint32_t q = 0; q < kb.snap.n_queues; q++) {
        const char *qn = cfg->queues[q].name;
        const char *lbl[] = {qn};
        bool held = strmap_get(&d->held, qn) != NULL;
        http_metric_set(d->m_pending, lbl, kb.views[q].n_pending);
        http_metric_set(d->m_held, lbl, held ? 1 : 0);
        for (uint32_t i = 0; held && i < kb.views[q].n_pending; i++) {
            const struct kgang *kg = &kb.gangs[kb.views[q].pending[i]->id];
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "queue %s is held by an operator: nothing is admitted "
                     "until 'gangctl queue resume %s'",
                     qn, qn);
            bool w = gang_status(d, kg->key, kg->pg, "Pending", "Warning", "QueueHeld", msg, false);
            pods_unschedulable(d, kg->members, kg->gang.n_pods, w, "QueueHeld", msg);
            if (d->leading && waiting_job_row(d, kg->key, qn, kb.views[q].pending[i], &eb) != 0)
                LOG_WARN(KDRV_MOD, "cannot record the job of gang %s: %s", kg->key, eb.msg);
        }
        if (held)
            kb.views[q].n_pending = 0;
    }
    /* gangs that cannot be offered to the core */
    for (uint32_t w = 0; w < kb.n_waiting; w++) {
        const struct kwaiting *kw = &kb.waiting[w];
        bool wrote =
            gang_status(d, kw->key, kw->pg, "Pending", "Warning", kw->reason, kw->message, false);
        pods_unschedulable(d, kw->pods, kw->n_pods, wrote, kw->reason, kw->message);
        if (d->leading && waiting_gang_records(d, kw, now, &eb) != 0)
            LOG_WARN(KDRV_MOD, "cannot record waiting gang %s: %s", kw->key, eb.msg);
    }
    /* preemptor holds: kept while their gang is pending and the hold has not ended */
    struct sched_hold *hv = arena_calloc(&d->arena, d->n_holds + 1, sizeof(*hv));
    uint32_t n_hv = 0;
    for (uint32_t h = 0; hv && h < d->n_holds;) {
        struct khold *kh = &d->holds[h];
        const struct gang *g = NULL;
        for (uint32_t i = 0; i < kb.n_pending && !g; i++)
            if (strcmp(kb.gangs[i].key, kh->gang) == 0)
                g = &kb.gangs[i].gang;
        if ((!g && kh->operator_id == 0) || kh->until_ms <= now) {
            khold_free(kh);
            d->holds[h] = d->holds[--d->n_holds];
            continue;
        }
        if (!g) { /* reserved ahead for a gang not pending yet: the nodes are held for nobody */
            struct gang *ph = arena_calloc(&d->arena, 1, sizeof(*ph));
            if (ph)
                ph->id = UINT32_MAX;
            g = ph;
        }
        uint32_t *nodes = arena_calloc(&d->arena, kh->n_nodes + 1, sizeof(*nodes));
        uint32_t nn = 0;
        for (uint32_t k = 0; nodes && k < kh->n_nodes; k++) {
            int ix = kcache_node_index(d->cache, kh->nodes[k]);
            if (ix >= 0)
                nodes[nn++] = (uint32_t)ix;
        }
        if (nodes)
            hv[n_hv++] = (struct sched_hold){.gang = g, .nodes = nodes, .n_nodes = nn};
        h++;
    }
    kb.snap.holds = hv;
    kb.snap.n_holds = hv ? n_hv : 0;
    struct sched_result res;
    d->cycle++;
    uint64_t t0 = uv_hrtime();
    kb.snap.plan_starts = true; /* expected starts for the decision log */
    int crc = sched_cycle(&kb.snap, &d->arena, &res);
    http_metric_observe(d->m_cycle, NULL, (double)(uv_hrtime() - t0) / 1e9);
    if (crc != 0) {
        config_watch_unpin(d->cw, cfg);
        LOG_ERROR(KDRV_MOD, "out of memory in the scheduling cycle");
        return;
    }
    if (record_cycle(d, &kb, &res, cfg, now, &eb) != 0) {
        config_watch_unpin(d->cw, cfg);
        fatal(d, eb.msg);
        return;
    }
    for (uint32_t v = 0; v < res.n_verdicts; v++) {
        const struct kgang *kg = &kb.gangs[res.verdicts[v].gang->id];
        char msg[512];
        sched_verdict_format(&res.verdicts[v], kb.snap.cluster, cfg, msg, sizeof(msg));
        bool w = gang_status(d, kg->key, kg->pg, "Pending", "Warning", "Unschedulable", msg, false);
        pods_unschedulable(d, kg->members, kg->gang.n_pods, w, "Unschedulable", msg);
    }
    /* preemption: every member of each victim gang, through the Eviction API */
    for (uint32_t e = 0; e < res.n_evictions; e++) {
        const struct kgang *victim = &kb.gangs[res.evictions[e].victim->gang->id];
        const struct kgang *by = &kb.gangs[res.evictions[e].preemptor->id];
        char msg[600];
        snprintf(msg, sizeof(msg),
                 "preempted by %s (%.0f GPU-seconds of work since the last "
                 "checkpoint lost)",
                 by->key, res.evictions[e].lost_gpu_s);
        evict_gang(d, victim, msg);
        const char *kind[] = {res.evictions[e].kind == SCHED_PREEMPT_RECLAIM      ? "reclaim"
                              : res.evictions[e].kind == SCHED_PREEMPT_FAIR_SHARE ? "fair_share"
                                                                                  : "priority"};
        http_metric_add_value(d->m_evictions, kind, 1);
        gang_status_rel(d, victim->key, victim->pg, "Pending", "Warning", "Preempted", msg, true,
                        by->pg);
    }
    for (uint32_t r = 0; r < res.n_reservations; r++) {
        const struct sched_reservation *rv = &res.reservations[r];
        LOG_DEBUG(KDRV_MOD, "reservation: gang=%s preemptor=%d nodes=%u",
                  kb.gangs[rv->gang->id].key, rv->preemptor, rv->n_nodes);
        if (!rv->preemptor)
            continue;
        const char *key = kb.gangs[rv->gang->id].key;
        uint32_t h = 0;
        while (h < d->n_holds && strcmp(d->holds[h].gang, key) != 0)
            h++;
        if (h < d->n_holds)
            continue; /* held already: keep the first hold's deadline */
        struct khold *nh = realloc(d->holds, (d->n_holds + 1) * sizeof(*nh));
        if (!nh)
            break;
        d->holds = nh;
        struct khold *kh = &d->holds[d->n_holds];
        memset(kh, 0, sizeof(*kh)); /* a preemptor's hold, not an operator's */
        kh->gang = strdup(key);
        kh->nodes = calloc(rv->n_nodes + 1, sizeof(*kh->nodes));
        kh->n_nodes = 0;
        kh->until_ms = now + KDRV_HOLD_MS;
        if (!kh->gang || !kh->nodes) {
            khold_free(kh);
            break;
        }
        for (uint32_t k = 0; k < rv->n_nodes; k++)
            if ((kh->nodes[kh->n_nodes] = strdup(kb.snap.cluster->nodes[rv->nodes[k]].name)))
                kh->n_nodes++;
        d->n_holds++;
    }
    /* binds */
    if (res.n_placements > 0) {
        d->binds = calloc(res.n_placements, sizeof(*d->binds));
        if (!d->binds) {
            config_watch_unpin(d->cw, cfg);
            fatal(d, "out of memory");
            return;
        }
        d->n_binds = res.n_placements;
        d->binds_left = 0;
        for (uint32_t p = 0; p < res.n_placements; p++) {
            const struct sched_placement *pl = &res.placements[p];
            const struct kgang *kg = &kb.gangs[pl->gang->id];
            struct kgang_binds *gb = &d->binds[p];
            gb->d = d;
            gb->gang = strdup(kg->key);
            gb->queue = strdup(cfg->queues[pl->gang->queue].name);
            const char *fl = flavor_name(cfg, pl->flavor);
            gb->flavor = fl ? strdup(fl) : NULL;
            gb->gpus = pl->gang->gpus;
            if (kg->pg) {
                gb->pg_ns = strdup(kg->pg->ns);
                gb->pg_name = strdup(kg->pg->name);
                gb->api = kg->pg->api;
            }
            gb->n_pods = pl->gang->n_pods;
            gb->pods = calloc(gb->n_pods, sizeof(*gb->pods));
            const struct cluster *cl = kb.snap.cluster;
            char summary[400];
            int off = snprintf(summary, sizeof(summary), "%u pods placed", gb->n_pods);
            if (pl->level >= 0 && (uint32_t)pl->level < cl->topo.n_levels)
                off += snprintf(summary + off, sizeof(summary) - (size_t)off, " in %s %s",
                                cl->topo.levels[pl->level].name,
                                cl->topo.levels[pl->level].domain_names[pl->domain]);
            if (pl->borrowing && off < (int)sizeof(summary))
                snprintf(summary + off, sizeof(summary) - (size_t)off, " (borrowing quota)");
            gb->summary = strdup(summary);
            if (!gb->gang || !gb->queue || !gb->pods || !gb->summary) {
                config_watch_unpin(d->cw, cfg);
                fatal(d, "out of memory");
                return;
            }
            for (uint32_t i = 0; i < gb->n_pods; i++) {
                const struct kpod *pod = kg->members[i];
                struct kbind *b = &gb->pods[i];
                b->gb = gb;
                b->index = i;
                b->pod_key = strdup(pod->key);
                b->ns = strdup(pod->ns);
                b->name = strdup(pod->name);
                b->node = strdup(cl->nodes[pl->pods[i].node].name);
                b->gpu_mask = pl->pods[i].gpu_mask;
                if (!b->pod_key || !b->ns || !b->name || !b->node ||
                    kcache_assume(d->cache, pod->key, b->node, b->gpu_mask, pl->flavor) != 0) {
                    config_watch_unpin(d->cw, cfg);
                    fatal(d, "out of memory");
                    return;
                }
                d->binds_left++;
            }
        }
        /* send after every pod is assumed: a bind answering at once must not end the cycle
         * while others are still being prepared */
        uint32_t n_binds = d->n_binds;
        struct kgang_binds *binds = d->binds;
        for (uint32_t p = 0; p < n_binds; p++)
            for (uint32_t i = 0; i < binds[p].n_pods; i++)
                send_claims_then_bind(d, &binds[p].pods[i], binds[p].flavor);
    }
    config_watch_unpin(d->cw, cfg);
}

static void on_cycle_timer(uv_timer_t *t)
{
    struct kdrv *d = t->data;
    run_cycle(d);
    if (d->n_binds == 0 && !d->stopping)
        schedule_cycle(d, d->o->cycle_ms);
}

static void schedule_cycle(struct kdrv *d, uint64_t delay_ms)
{
    if (!uv_is_closing((uv_handle_t *)&d->cycle_timer))
        uv_timer_start(&d->cycle_timer, on_cycle_timer, delay_ms, 0);
}

/* ---- informers, lease, signals -------------------------------------------------------------- */

/* Two pod informers: every non-terminal pod (usage on the nodes), and this scheduler's pods in
 * every phase (a member that fails must be seen failing, not vanish from a phase-filtered
 * watch). The first ignores this scheduler's pods, so that each pod has one source. */
static bool ours(const struct kdrv *d, const cJSON *obj)
{
    const char *sn = kobj_str(obj, "spec.schedulerName");
    return sn && strcmp(sn, d->o->scheduler) == 0;
}

static void on_pod(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && !ours(d, obj) &&
        kcache_pod_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the pod cache");
}

static void on_own_pod(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pod_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the pod cache");
}

static void on_node(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_node_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the node cache");
}

static void on_pg_xk8s(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pg_event(d->cache, obj, KPG_XK8S, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_volcano(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pg_event(d->cache, obj, KPG_VOLCANO, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_native_a2(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_NATIVE_V1ALPHA2, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_native_b1(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_NATIVE_V1BETA1, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_native_a3(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_NATIVE_V1ALPHA3, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the podgroup cache");
}

static void on_workload(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_WORKLOAD_V1ALPHA1, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the podgroup cache");
}

static void on_claim(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_claim_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the resourceclaim cache");
}

static void on_slice(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_slice_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        fatal(d, "out of memory in the resourceslice cache");
}

static void on_lease(void *ctx, bool leading)
{
    struct kdrv *d = ctx;
    if (leading) {
        LOG_INFO(KDRV_MOD, "became leader: identity=%s", d->o->identity);
        http_follow_stop(d->follow); /* the store it followed is adopted when opened */
        d->follow = NULL;
        d->leading = true;
        d->recovered = false;
        d->jobs_synced = false;
        http_metric_set(d->m_leader, NULL, 1);
        schedule_cycle(d, 0);
        return;
    }
    if (d->leading) {
        d->leading = false;
        fatal(d, "lost the Lease: stopping so that a deposed leader never binds");
    }
}

static void on_released(void *ctx)
{
    struct kdrv *d = ctx;
    uv_stop(d->loop);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct kdrv *d = s->data;
    LOG_INFO(KDRV_MOD, "shutting down: signal=%d binds_in_flight=%u", signum, d->binds_left);
    d->stopping = true;
    uv_timer_stop(&d->cycle_timer);
    if (d->n_binds > 0)
        return; /* binds_finished() stops the loop */
    if (d->lease && kube_lease_leading(d->lease))
        kube_lease_release(d->lease, on_released, d);
    else
        uv_stop(d->loop);
}

static void on_config(void *data, const struct config *fresh, const struct config *old)
{
    struct kdrv *d = data;
    (void)old;
    struct sched_errbuf eb;
    LOG_INFO(KDRV_MOD, "configuration applied: version=%016llx",
             (unsigned long long)fresh->version);
    if (d->db && d->leading && store_config_apply(d->db, fresh, NULL, 0, &eb) != 0)
        LOG_ERROR(KDRV_MOD, "cannot record the configuration: error=%s", eb.msg);
    d->force = true;
    schedule_cycle(d, 0);
}

/* ---- HTTP API: readiness, operator writes, metrics ------------------------------------------ */

/* The PodGroup APIs: informer KDRV_INF_PG + i reads enum kpg_api i (knative_api_version names
 * it); whether the server serves it is whether its list was a 404. */
#define KDRV_INF_PG 3 /* index of the first PodGroup informer in d->inf */

/* "podgroup APIs in use: scheduling.x-k8s.io/v1alpha1; not served: ..." into buf. */
static void pg_apis(const struct kdrv *d, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "podgroup APIs in use:");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && off < n)
            off += (size_t)snprintf(buf + off, n - off, "; not served:");
        int k = 0;
        for (uint32_t i = 0; i < KPG_N_API && KDRV_INF_PG + i < d->n_inf; i++) {
            bool absent = kube_informer_absent(d->inf[KDRV_INF_PG + i]);
            if (absent == (pass == 1) && off < n)
                off += (size_t)snprintf(buf + off, n - off, "%s %s%s", k++ ? "," : "",
                                        knative_api_version(i),
                                        i == KPG_WORKLOAD_V1ALPHA1 ? " (workloads)" : "");
        }
        if (k == 0 && off < n)
            off += (size_t)snprintf(buf + off, n - off, " none");
    }
}

/* Only the leader serves its store to a following standby (sched/http/follow.h). */
static bool http_leading(void *ctx)
{
    const struct kdrv *d = ctx;
    return d->leading && d->db != NULL;
}

static bool http_ready(void *ctx, char *why, size_t n)
{
    struct kdrv *d = ctx;
    for (uint32_t i = 0; i < d->n_inf; i++)
        if (!kube_informer_synced(d->inf[i])) {
            snprintf(why, n, "informer %u has not listed yet", i);
            return false;
        }
    if (d->o->leader_elect && !d->leading && d->lease && kube_lease_leading(d->lease)) {
        snprintf(why, n, "holds the Lease but has not started leading yet");
        return false;
    }
    pg_apis(d, why, n);
    return true;
}

/* Applies one operator action (also replayed from the store when a leader starts). */
static int apply_action(struct kdrv *d, enum store_action_kind kind, const char *target,
                        struct sched_errbuf *eb)
{
    switch (kind) {
    case STORE_ACT_HOLD:
    case STORE_ACT_DRAIN:
        return strmap_put(&d->held, target, (void *)1, NULL) == 0
                   ? 0
                   : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    case STORE_ACT_RESUME:
        strmap_del(&d->held, target);
        return 0;
    case STORE_ACT_CHECKPOINT: {
        const struct kpg *pg = kcache_pg(d->cache, target);
        if (!pg)
            return sched_fail(eb, SCHED_ENOENT, "podgroup %s not found", target);
        char t[40], path[700];
        kobj_format_time(now_ms(), t, sizeof(t));
        cJSON *body = cJSON_CreateObject();
        cJSON *ann =
            cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "metadata"), "annotations");
        cJSON_AddStringToObject(ann, "gangsched.io/checkpoint-requested", t);
        snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/%s/%s", knative_api_version(pg->api),
                 pg->ns, knative_plural(pg->api), pg->name);
        send_json(d, KUBE_PATCH_MERGE, path, body, NULL, NULL);
        return 0;
    }
    case STORE_ACT_RESERVE:
    case STORE_ACT_UNRESERVE:
        break;
    }
    return sched_fail(eb, SCHED_EINVAL, "not an action applied here");
}

/* Adds an operator reservation's hold (id: its store id). */
static int add_operator_hold(struct kdrv *d, int64_t id, const char *gang, const char *const *nodes,
                             uint32_t n, int64_t until_ms)
{
    struct khold *nh = realloc(d->holds, (d->n_holds + 1) * sizeof(*nh));
    if (!nh)
        return SCHED_ENOMEM;
    d->holds = nh;
    struct khold *kh = &d->holds[d->n_holds];
    memset(kh, 0, sizeof(*kh));
    kh->gang = strdup(gang);
    kh->nodes = calloc(n + 1, sizeof(*kh->nodes));
    kh->until_ms = until_ms;
    kh->operator_id = id;
    if (!kh->gang || !kh->nodes) {
        khold_free(kh);
        return SCHED_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((kh->nodes[kh->n_nodes] = strdup(nodes[i])))
            kh->n_nodes++;
    d->n_holds++;
    return 0;
}

/* POST /v1/reservations: the nodes are held for the gang (only it may use their free capacity)
 * until deleted or KDRV_RESERVE_MS later; recorded in the store as an operator reservation. */
static int operator_reserve(struct kdrv *d, const struct http_write *w, int64_t *id,
                            struct sched_errbuf *eb)
{
    cJSON *doc = cJSON_Parse(w->detail ? w->detail : "");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes"), *n;
    uint32_t count = (uint32_t)cJSON_GetArraySize(nodes);
    const char **names = calloc(count + 1, sizeof(*names));
    int rc = names ? 0 : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    uint32_t k = 0;
    cJSON_ArrayForEach(n, nodes)
    {
        bool known = cJSON_IsString(n) && kcache_node_index(d->cache, n->valuestring) >= 0;
        if (rc == 0 && !known)
            rc = sched_fail(eb, SCHED_ENOENT, "node '%.200s' not found",
                            cJSON_IsString(n) ? n->valuestring : "?");
        if (rc == 0)
            names[k++] = n->valuestring;
    }
    int64_t now = now_ms();
    struct store_reservation r = {.kind = STORE_RES_OPERATOR,
                                  .gang = w->target,
                                  .nodes = names,
                                  .n_nodes = k,
                                  .created_ms = now,
                                  .expires_ms = now + KDRV_RESERVE_MS,
                                  .expected_start_ms = STORE_NO_TIME};
    if (rc == 0)
        rc = store_reservation_put(d->db, &r, id, eb);
    if (rc == 0)
        rc = add_operator_hold(d, *id, w->target, names, k, r.expires_ms);
    free(names);
    cJSON_Delete(doc);
    return rc;
}

static int operator_unreserve(struct kdrv *d, const char *target, struct sched_errbuf *eb)
{
    char *end = NULL;
    long long id = strtoll(target, &end, 10);
    if (!*target || *end || id <= 0)
        return sched_fail(eb, SCHED_EINVAL, "reservation id '%.64s' is not a positive integer",
                          target);
    uint32_t h = 0;
    while (h < d->n_holds && d->holds[h].operator_id != id)
        h++;
    if (h == d->n_holds)
        return sched_fail(eb, SCHED_ENOENT, "reservation %lld not found", id);
    khold_free(&d->holds[h]);
    d->holds[h] = d->holds[--d->n_holds];
    return store_reservation_delete(d->db, id, NULL, eb);
}

static int load_operator_hold(void *ctx, const struct store_reservation *r)
{
    struct kdrv *d = ctx;
    if (r->kind != STORE_RES_OPERATOR)
        return 0;
    int64_t until = r->expires_ms == STORE_NO_TIME ? INT64_MAX : r->expires_ms;
    return add_operator_hold(d, r->id, r->gang, r->nodes, r->n_nodes, until);
}

static int http_write(void *ctx, const struct http_write *w, cJSON **result,
                      struct sched_errbuf *eb)
{
    struct kdrv *d = ctx;
    if (!d->leading || !d->db)
        return sched_fail(eb, SCHED_EIO,
                          "this replica is not the leader: send writes to the "
                          "leader (the holder of the Lease)");
    const struct config *cfg = config_watch_current(d->cw);
    bool queue_kind =
        w->kind == STORE_ACT_HOLD || w->kind == STORE_ACT_RESUME || w->kind == STORE_ACT_DRAIN;
    if (queue_kind && config_queue_index(cfg, w->target) < 0)
        return sched_fail(eb, SCHED_ENOENT, "queue '%s' not found", w->target);
    int64_t res_id = 0;
    int rc = w->kind == STORE_ACT_RESERVE     ? operator_reserve(d, w, &res_id, eb)
             : w->kind == STORE_ACT_UNRESERVE ? operator_unreserve(d, w->target, eb)
                                              : apply_action(d, w->kind, w->target, eb);
    if (rc)
        return rc;
    struct store_action a = {.ts_ms = now_ms(),
                             .kind = w->kind,
                             .target = w->target,
                             .detail = w->detail,
                             .actor = w->actor};
    int64_t id = 0;
    rc = store_action_add(d->db, &a, &id, eb);
    if (rc == 0)
        rc = store_action_done(d->db, id, STORE_ACTION_APPLIED, a.ts_ms, "applied", eb);
    if (rc)
        return rc;
    d->force = true;
    schedule_cycle(d, 0);
    *result = cJSON_CreateObject();
    cJSON_AddStringToObject(*result, "action", store_action_kind_name(w->kind));
    cJSON_AddStringToObject(*result, "target", w->target);
    cJSON_AddStringToObject(*result, "message", "applied");
    if (res_id > 0)
        cJSON_AddNumberToObject(*result, "id", (double)res_id);
    return 0;
}

static int replay_action(void *ctx, const struct store_action *a)
{
    struct kdrv *d = ctx;
    if (a->state == STORE_ACTION_APPLIED &&
        (a->kind == STORE_ACT_HOLD || a->kind == STORE_ACT_DRAIN || a->kind == STORE_ACT_RESUME))
        return apply_action(d, a->kind, a->target, NULL);
    return 0;
}

static int start_metrics(struct kdrv *d)
{
    static const double cycle_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                           0.05,   0.1,   0.25,   0.5,   1,    2.5};
    static const char *const result[] = {"result"}, *const outcome[] = {"outcome"},
                             *const kind[] = {"kind"}, *const queue[] = {"cluster_queue"},
                             *const reason[] = {"reason"}, *const api[] = {"api"};
    /* the daemon's families (docs/metrics.md), one row each */
    const struct {
        const char *name, *help;
        enum http_metric_type type;
        const char *const *labels;
        struct http_metric **out;
    } fams[] = {
        {"gangsched_cycle_duration_seconds", "Time the scheduling core took per cycle",
         HTTP_HISTOGRAM, NULL, &d->m_cycle},
        {"gangsched_binds_total", "Pod bindings by result", HTTP_COUNTER, result, &d->m_binds},
        {"gangsched_gangs_bound_total", "Placed gangs by outcome of their binds", HTTP_COUNTER,
         outcome, &d->m_gangs},
        {"gangsched_kube_client_requests_total",
         "Kubernetes API requests by kind (sent, retries, errors, throttled)", HTTP_COUNTER, kind,
         &d->m_api},
        {"gangsched_leader", "1 while this replica schedules (holds the Lease, or runs alone)",
         HTTP_GAUGE, NULL, &d->m_leader},
        {"gangsched_pending_gangs", "Gangs offered to the core at the last cycle, per queue",
         HTTP_GAUGE, queue, &d->m_pending},
        {"gangsched_victim_gangs_evicted_total",
         "Preemption victim gangs this process evicted, by kind of preemption", HTTP_COUNTER,
         reason, &d->m_evictions},
        {"gangsched_queue_held", "1 while an operator holds or drains the queue", HTTP_GAUGE, queue,
         &d->m_held},
        {"gangsched_gang_teardowns_total",
         "Running gangs torn down (or inference replicas replaced), by reason", HTTP_COUNTER,
         reason, &d->m_teardowns},
        {"gangsched_nodes_quarantined", "Nodes excluded after repeated failed gang starts",
         HTTP_GAUGE, NULL, &d->m_quarantined},
        {"gangsched_podgroup_api_served",
         "1 while the API server serves this PodGroup API (its CRD is installed) and the daemon "
         "watches it, 0 while it answers 404",
         HTTP_GAUGE, api, &d->m_pg_api},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(fams) / sizeof(fams[0]); i++) {
        bool hist = fams[i].type == HTTP_HISTOGRAM;
        rc = http_metric_add(d->metrics, fams[i].name, fams[i].help, fams[i].type, fams[i].labels,
                             fams[i].labels ? 1 : 0, hist ? cycle_buckets : NULL, hist ? 12 : 0,
                             fams[i].out);
    }
    if (rc == 0)
        rc = http_metric_set(d->m_leader, NULL, 0);
    /* which resource every *gpu* figure counts (device.resource of the config) */
    static const char *const dev_labels[] = {"resource", "unit"};
    struct http_metric *dev = NULL;
    if (rc == 0)
        rc = http_metric_add(d->metrics, "gangsched_device_info",
                             "The accelerator resource the scheduler counts as GPUs, and its unit",
                             HTTP_GAUGE, dev_labels, 2, NULL, 0, &dev);
    if (rc == 0) {
        const char *vals[] = {device_resource(), device_unit()};
        rc = http_metric_set(dev, vals, 1);
    }
    return rc;
}

/* Copies the client's counters into the metrics (called every second). */
static void update_client_metrics(struct kdrv *d)
{
    static const char *const names[] = {"sent", "retries", "errors", "throttled"};
    struct kube_client_stats st;
    kube_client_stats(d->client, &st);
    uint64_t now[4] = {st.requests, st.retries, st.errors, st.throttled};
    for (int i = 0; i < 4; i++) {
        const char *lbl[] = {names[i]};
        if (now[i] > d->api_seen[i])
            http_metric_add_value(d->m_api, lbl, (double)(now[i] - d->api_seen[i]));
        else
            http_metric_add_value(d->m_api, lbl, 0);
        d->api_seen[i] = now[i];
    }
}

/* Every second: the client's counters, and a cycle even without changes, so that start
 * timeouts and failure graces are noticed when they pass. */
static void on_stats_timer(uv_timer_t *t)
{
    struct kdrv *d = t->data;
    update_client_metrics(d);
    for (uint32_t i = 0; i < KPG_N_API && KDRV_INF_PG + i < d->n_inf; i++) {
        const char *lbl[] = {knative_api_version(i)};
        const struct kube_informer *inf = d->inf[KDRV_INF_PG + i];
        http_metric_set(d->m_pg_api, lbl,
                        kube_informer_synced(inf) && !kube_informer_absent(inf) ? 1 : 0);
    }
    if (d->leading && !d->stopping && d->n_binds == 0) {
        d->force = true;
        schedule_cycle(d, 0);
    }
}

static int start_informer(struct kdrv *d, const char *path, const char *field_selector,
                          kube_informer_fn *fn, struct sched_errbuf *eb)
{
    struct kube_informer_opts io = {.path = path, .field_selector = field_selector};
    return kube_informer_new(d->client, &io, fn, d, &d->inf[d->n_inf++], eb);
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

int kube_run(const struct kube_run_opts *o, struct sched_errbuf *eb)
{
    struct kdrv d;
    memset(&d, 0, sizeof(d));
    d.o = o;
    d.pol = sched_policy_find(o->policy ? o->policy : "gangsched");
    if (!d.pol)
        return sched_fail(eb, SCHED_EINVAL, "--policy %s: unknown policy", o->policy);
    if (d.pol->private_slices)
        return sched_fail(eb, SCHED_EINVAL, "--policy %s: a simulator baseline only", o->policy);
    if (!o->config_path || !o->db_path)
        return sched_fail(eb, SCHED_EINVAL, "--config and --db are required");
    d.loop = uv_default_loop();
    strmap_init(&d.status);
    strmap_init(&d.jobs);
    strmap_init(&d.held);
    strmap_init(&d.bound_at);
    strmap_init(&d.tearing);
    strmap_init(&d.gave_up);
    strmap_init(&d.node_down);
    strmap_init(&d.strikes);
    d.metrics = http_metrics_new();
    arena_init(&d.arena, 1 << 20);
    int rc = kube_auth_load(o->kubeconfig, &d.auth, eb);
    if (rc == 0) {
        struct kube_client_opts co;
        kube_client_opts_default(&co);
        co.qps = o->qps;
        co.burst = o->burst;
        rc = kube_client_new(d.loop, d.auth, &co, &d.client, eb);
    }
    if (rc == 0)
        rc = config_watch_start(d.loop, o->config_path, on_config, &d, &d.cw, eb);
    if (rc == 0)
        rc = config_apply_device(config_watch_current(d.cw), eb);
    if (rc == 0 && !(d.cache = kcache_new(o->scheduler)))
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0)
        rc = start_informer(&d, "/api/v1/nodes", NULL, on_node, eb);
    if (rc == 0)
        rc = start_informer(&d, "/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed",
                            on_pod, eb);
    char own_sel[300];
    snprintf(own_sel, sizeof(own_sel), "spec.schedulerName=%s", o->scheduler);
    if (rc == 0)
        rc = start_informer(&d, "/api/v1/pods", own_sel, on_own_pod, eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", NULL, on_pg_xk8s,
                            eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.volcano.sh/v1beta1/podgroups", NULL,
                            on_pg_volcano, eb);
    /* Kubernetes' own groups, in enum kpg_api order; a version the server does not serve lists
     * 404 and counts as synced and empty (1.36 serves v1alpha2, 1.37 v1beta1, 1.35 v1alpha1
     * Workloads, each only with its gates on) */
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.k8s.io/v1alpha2/podgroups", NULL, on_pg_native_a2,
                            eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.k8s.io/v1beta1/podgroups", NULL, on_pg_native_b1,
                            eb);
    if (rc == 0)
        rc =
            start_informer(&d, "/apis/scheduling.k8s.io/v1alpha1/workloads", NULL, on_workload, eb);
    /* 1.37's v1alpha3 (with CompositePodGroup): the same PodGroups as v1beta1 when both are
     * served (one object, one key: the later event wins) */
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.k8s.io/v1alpha3/podgroups", NULL, on_pg_native_a3,
                            eb);
    /* DRA devices: GPUs of nodes that run a DRA driver instead of the device plugin */
    if (rc == 0)
        rc = start_informer(&d, "/apis/resource.k8s.io/v1/resourceslices", NULL, on_slice, eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/resource.k8s.io/v1/resourceclaims", NULL, on_claim, eb);
    uv_timer_init(d.loop, &d.cycle_timer);
    d.cycle_timer.data = &d;
    uv_timer_init(d.loop, &d.stats_timer);
    d.stats_timer.data = &d;
    if (rc == 0 && (!d.metrics || start_metrics(&d) != 0))
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0 && o->listen && *o->listen) {
        struct http_opts ho = {.listen = o->listen,
                               .write_token_file = o->token_file,
                               .read_token_file = o->read_token_file,
                               .limits = o->http};
        struct http_provider hp = {.ctx = &d,
                                   .store_path = o->db_path,
                                   .ready = http_ready,
                                   .metrics = d.metrics,
                                   .store_metrics = true,
                                   .leading = http_leading,
                                   .write = http_write};
        rc = http_server_start(d.loop, &ho, &hp, &d.http, eb);
        if (rc == 0 && o->port_file)
            rc = http_server_write_port(d.http, o->port_file, eb);
        if (rc == 0)
            LOG_INFO(KDRV_MOD, "HTTP API listening: port=%d", http_server_port(d.http));
    }
    if (rc == 0 && o->follow_url && *o->follow_url && !d.leading) {
        rc = http_follow_start(d.loop, o->follow_url, o->follow_token_file, o->db_path,
                               o->follow_ms, &d.follow, eb);
        if (rc == 0)
            LOG_INFO(KDRV_MOD, "following the leader's store: url=%s every_ms=%u", o->follow_url,
                     o->follow_ms ? o->follow_ms : HTTP_FOLLOW_DEFAULT_MS);
    }
    if (rc == 0)
        uv_timer_start(&d.stats_timer, on_stats_timer, 1000, 1000);
    uv_signal_init(d.loop, &d.sigterm);
    uv_signal_init(d.loop, &d.sigint);
    d.sigterm.data = d.sigint.data = &d;
    if (rc == 0) {
        uv_signal_start(&d.sigterm, on_signal, SIGTERM);
        uv_signal_start(&d.sigint, on_signal, SIGINT);
        if (o->leader_elect) {
            struct kube_lease_opts lo = {.ns = o->lease_ns ? o->lease_ns : d.auth->namespace,
                                         .name = o->lease_name,
                                         .identity = o->identity};
            rc = kube_lease_new(d.client, &lo, on_lease, &d, &d.lease, eb);
        } else {
            d.leading = true;
            http_metric_set(d.m_leader, NULL, 1); /* the only replica: it schedules */
        }
    }
    if (rc == 0) {
        LOG_INFO(KDRV_MOD, "started: server=%s scheduler=%s policy=%s db=%s", d.auth->server,
                 o->scheduler, d.pol->name, o->db_path);
        schedule_cycle(&d, o->cycle_ms);
        uv_run(d.loop, UV_RUN_DEFAULT);
        if (d.failed)
            rc = sched_fail(eb, SCHED_EIO, "%s", d.fatal);
    }
    /* teardown: every handle closed, the loop run until they are */
    for (uint32_t i = 0; i < d.n_inf; i++)
        kube_informer_free(d.inf[i]);
    kube_lease_free(d.lease);
    kube_client_free(d.client);
    config_watch_stop(d.cw);
    uv_close((uv_handle_t *)&d.cycle_timer, close_cb);
    uv_close((uv_handle_t *)&d.stats_timer, close_cb);
    if (d.http)
        http_server_stop(d.http);
    http_follow_stop(d.follow);
    uv_close((uv_handle_t *)&d.sigterm, close_cb);
    uv_close((uv_handle_t *)&d.sigint, close_cb);
    uv_run(d.loop, UV_RUN_DEFAULT);
    uv_loop_close(d.loop);
    for (uint32_t g = 0; g < d.n_binds; g++)
        gang_binds_free(&d.binds[g]);
    free(d.binds);
    for (uint32_t h = 0; h < d.n_holds; h++)
        khold_free(&d.holds[h]);
    free(d.holds);
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d.status, &i, &k, &v);) {
        struct kstatus *st = v;
        free(st->reason);
        free(st);
    }
    strmap_fini(&d.status);
    for (size_t i = 0; strmap_next(&d.jobs, &i, &k, &v);)
        kjob_free(v);
    strmap_fini(&d.jobs);
    strmap_fini(&d.held);
    struct strmap *owned[] = {&d.bound_at, &d.node_down, &d.strikes};
    for (int m = 0; m < 3; m++) {
        for (size_t i = 0; strmap_next(owned[m], &i, &k, &v);)
            free(v);
        strmap_fini(owned[m]);
    }
    strmap_fini(&d.tearing);
    strmap_fini(&d.gave_up);
    store_close(d.db);
    kcache_free(d.cache);
    kube_auth_free(d.auth);
    arena_fini(&d.arena);
    http_metrics_free(d.metrics);
    return rc;
}
