/* sched/kube/objects.c: pods and PodGroups from API JSON (see objects.h). */
#include "sched/kube/objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/core/annot.h"
#include "sched/core/duration.h"
#include "sched/core/hash.h"
#include "sched/core/podaff.h"
#include "sched/k8s/nodes.h"
#include "sched/kube/dra.h"
#include "sched/kube/native.h"

/* ---- small JSON helpers ---------------------------------------------------------------------- */

/* cJSON_GetObjectItemCaseSensitive (the first member of that name), comparing the first byte
 * before calling strcmp: most members do not match, and a pod is read with ~50 lookups. */
static const cJSON *get(const cJSON *o, const char *name)
{
    if (!cJSON_IsObject(o))
        return NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && c->string[0] == name[0] && strcmp(c->string, name) == 0)
            return c;
    return NULL;
}

const char *kobj_str(const cJSON *o, const char *path)
{
    char part[128];
    while (o && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, path, n);
        part[n] = 0;
        o = get(o, part);
        path += n + (dot ? 1 : 0);
    }
    return cJSON_IsString(o) ? o->valuestring : NULL;
}

static const char *map_str(const cJSON *map, const char *key)
{
    const cJSON *v = get(map, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int kobj_key(const char *ns, const char *name, char *buf, size_t n)
{
    if (!name || !*name)
        return SCHED_EINVAL;
    if (!ns || !*ns)
        ns = "default";
    size_t nl = strlen(ns), ml = strlen(name);
    if (nl > KOBJ_NAME_MAX || ml > KOBJ_NAME_MAX || memchr(ns, '/', nl) || memchr(name, '/', ml) ||
        nl + ml + 2 > n)
        return SCHED_EINVAL;
    memcpy(buf, ns, nl);
    buf[nl] = '/';
    memcpy(buf + nl + 1, name, ml + 1);
    return 0;
}

/* The n digits at s as a number, or -1. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Days from 1970-01-01 to year-month-day of the proleptic Gregorian calendar (a day past the
 * month's end counts into the next month, as timegm does). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int kobj_time(const char *s, int64_t *ms)
{
    if (!s || strnlen(s, 20) < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return SCHED_EINVAL;
    int Y = digits(s, 4), M = digits(s + 5, 2), D = digits(s + 8, 2), h = digits(s + 11, 2),
        m = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (Y < 0 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 || m > 59 ||
        sec < 0 || sec > 60)
        return SCHED_EINVAL;
    const char *p = s + 19;
    int64_t frac_ms = 0;
    if (*p == '.') {
        int64_t scale = 100;
        p++;
        if (*p < '0' || *p > '9')
            return SCHED_EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
            frac_ms += (*p - '0') * scale;
            scale /= 10;
        }
    }
    int64_t off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh = digits(p + 1, 2), om = p[1] && p[2] && p[3] == ':' ? digits(p + 4, 2) : -1;
        if (oh < 0 || om < 0 || oh > 23 || om > 59)
            return SCHED_EINVAL;
        off_s = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return SCHED_EINVAL;
    }
    if (*p)
        return SCHED_EINVAL;
    int64_t t = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec;
    *ms = (t - off_s) * 1000 + frac_ms;
    return 0;
}

void kobj_format_time(int64_t ms, char *buf, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000) * 1000);
}

/* ---- resource requests ----------------------------------------------------------------------- */

/* Adds a requests map into acc, and each limit whose request of the same name is absent: what
 * the API server's SetDefaults_Pod (pkg/apis/core/v1/defaults.go) stores, so a stored pod has
 * them already; the rule again here reads a pod that did not pass defaulting the same way. */
static int add_requests(const cJSON *req, const cJSON *lim, const char *where, struct res_vec *acc,
                        struct sched_errbuf *eb)
{
    const cJSON *maps[2] = {req, lim};
    for (int k = 0; k < 2; k++) {
        if (!maps[k])
            continue;
        if (!cJSON_IsObject(maps[k]))
            return sched_fail(eb, SCHED_EINVAL, "%s.resources.%s: not an object", where,
                              k ? "limits" : "requests");
        const cJSON *it;
        cJSON_ArrayForEach(it, maps[k])
        {
            if (k == 1 && cJSON_GetObjectItemCaseSensitive(req, it->string))
                continue; /* a request was given */
            if (!cJSON_IsString(it) && !cJSON_IsNumber(it))
                return sched_fail(eb, SCHED_EINVAL, "%s.resources.%s.%s: not a quantity", where,
                                  k ? "limits" : "requests", it->string);
            int id;
            struct sched_errbuf e2;
            if (res_intern(it->string, &id, &e2) != 0)
                return sched_fail(eb, SCHED_EINVAL, "%s.resources: %s", where, e2.msg);
            int64_t v;
            if (kobj_quantity(it, id, &v, &e2) != 0)
                return sched_fail(eb, SCHED_EINVAL, "%s.resources.%s.%s: %s", where,
                                  k ? "limits" : "requests", it->string, e2.msg);
            if (v < 0) /* found by fuzzing: a negative overhead made the request negative */
                return sched_fail(eb, SCHED_EINVAL, "%s.resources.%s.%s: negative quantity", where,
                                  k ? "limits" : "requests", it->string);
            acc->v[id] += v;
        }
    }
    return 0;
}

/* kube-scheduler's effective request: max(sum of containers + sidecars, each ordinary init
 * container + the sidecars started before it), plus overhead. */
static int pod_request(const cJSON *spec, const char *key, struct res_vec *out,
                       struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    char where[320];
    const cJSON *cs = get(spec, "containers");
    if (cs && !cJSON_IsArray(cs))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.containers: not a list", key);
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cs)
    {
        snprintf(where, sizeof(where), "pod %s: spec.containers[%d]", key, i++);
        const cJSON *res = get(c, "resources");
        int rc = add_requests(get(res, "requests"), get(res, "limits"), where, out, eb);
        if (rc)
            return rc;
    }
    struct res_vec sidecars, peak;
    memset(&sidecars, 0, sizeof(sidecars));
    memset(&peak, 0, sizeof(peak));
    const cJSON *ics = get(spec, "initContainers");
    if (ics && !cJSON_IsArray(ics))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.initContainers: not a list", key);
    i = 0;
    cJSON_ArrayForEach(c, ics)
    {
        snprintf(where, sizeof(where), "pod %s: spec.initContainers[%d]", key, i++);
        struct res_vec one;
        memset(&one, 0, sizeof(one));
        const cJSON *res = get(c, "resources");
        int rc = add_requests(get(res, "requests"), get(res, "limits"), where, &one, eb);
        if (rc)
            return rc;
        const char *rp = map_str(c, "restartPolicy");
        if (rp && strcmp(rp, "Always") == 0) {
            res_add(&sidecars, &one);
            for (int r = 0; r < RES_MAX; r++)
                if (sidecars.v[r] > peak.v[r])
                    peak.v[r] = sidecars.v[r];
        } else {
            res_add(&one, &sidecars);
            for (int r = 0; r < RES_MAX; r++)
                if (one.v[r] > peak.v[r])
                    peak.v[r] = one.v[r];
        }
    }
    res_add(out, &sidecars);
    for (int r = 0; r < RES_MAX; r++)
        if (peak.v[r] > out->v[r])
            out->v[r] = peak.v[r];
    const cJSON *ov = get(spec, "overhead");
    if (ov) {
        snprintf(where, sizeof(where), "pod %s: spec.overhead", key);
        int rc = add_requests(ov, NULL, where, out, eb);
        if (rc)
            return rc;
    }
    out->v[RES_PODS] += 1;
    struct sched_errbuf ke; /* another accelerator kind counts in the accelerator slot too */
    if (res_kinds_fold(out, &ke) != 0)
        return sched_fail(eb, SCHED_EINVAL, "pod %s: resources: %s", key, ke.msg);
    return 0;
}

/* The pod's own explanation of why it does not run: the kubelet's status reason and message
 * (admission rejections such as UnexpectedAdmissionError or TopologyAffinityError), else the
 * first container (init containers first) that waits for a reason other than normal creation,
 * or that terminated with a non-zero exit code. NULL when there is nothing to say. */
static char *pod_why(const cJSON *status)
{
    char buf[600];
    const char *reason = map_str(status, "reason"), *message = map_str(status, "message");
    if (reason || message) {
        snprintf(buf, sizeof(buf), "%s%s%s", reason ? reason : "", reason && message ? ": " : "",
                 message ? message : "");
        return strdup(buf);
    }
    const char *lists[] = {"initContainerStatuses", "containerStatuses"};
    for (int l = 0; l < 2; l++) {
        const cJSON *cs = get(status, lists[l]), *c;
        if (!cJSON_IsArray(cs))
            continue;
        cJSON_ArrayForEach(c, cs)
        {
            const cJSON *state = get(c, "state");
            const cJSON *w = get(state, "waiting"), *t = get(state, "terminated");
            const char *r = map_str(w, "reason"), *m = map_str(w, "message");
            if (w && r && strcmp(r, "ContainerCreating") != 0 &&
                strcmp(r, "PodInitializing") != 0) {
                snprintf(buf, sizeof(buf), "container %s: %s%s%s",
                         map_str(c, "name") ? map_str(c, "name") : "?", r, m ? ": " : "",
                         m ? m : "");
                return strdup(buf);
            }
            const cJSON *code = get(t, "exitCode");
            if (t && cJSON_IsNumber(code) && code->valuedouble != 0) {
                r = map_str(t, "reason");
                m = map_str(t, "message");
                snprintf(buf, sizeof(buf), "container %s: terminated with exit code %d%s%s%s%s",
                         map_str(c, "name") ? map_str(c, "name") : "?", (int)code->valuedouble,
                         r ? ": " : "", r ? r : "", m ? ": " : "", m ? m : "");
                return strdup(buf);
            }
        }
    }
    return NULL;
}

bool kobj_rv_older(const char *a, const char *b)
{
    if (!a || !b || !*a || !*b)
        return false;
    char *ea = NULL, *eb = NULL;
    unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
    return *ea == 0 && *eb == 0 && x < y;
}

/* ---- pods ------------------------------------------------------------------------------------ */

static void free_mem(struct arena *mem)
{
    if (mem) {
        arena_fini(mem);
        free(mem);
    }
}

void kobj_pod_free(struct kpod *p)
{
    if (!p)
        return;
    free(p->key); /* ns and name share its block */
    free(p->uid);
    free(p->rv);
    free(p->node);
    free(p->group);
    free(p->pg_ref);
    free(p->queue);
    free(p->user);
    free(p->flavor);
    free(p->why);
    free(p->sched_msg);
    arena_fini(&p->meta_mem);
    for (uint32_t i = 0; i < p->n_claims; i++) {
        free(p->claims[i]);
        free(p->claims_entry ? p->claims_entry[i] : NULL);
    }
    free(p->claims);
    free(p->claims_entry);
    free(p->group_uid);
    free(p->claim_wait);
    free(p->ext_claim);
    if (p->spec)
        arena_fini(&p->spec->mem);
    free(p->spec);
    free(p);
}

static int parse_gpu_ids(const char *s, uint32_t *mask)
{
    uint32_t m = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v >= NODE_MAX_GPUS)
            return SCHED_EINVAL;
        m |= 1u << v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return SCHED_EINVAL;
    }
    *mask = m;
    return 0;
}

/* An object's namespace ("default" when absent), name and key "namespace/name" (key holds
 * KOBJ_KEY_MAX); `kind` names it in errors. */
static int meta_key(const cJSON *meta, const char *kind, const char **ns, const char **name,
                    char *key, struct sched_errbuf *eb)
{
    *ns = map_str(meta, "namespace");
    *name = map_str(meta, "name");
    if (!cJSON_IsObject(meta) || !*name || !**name)
        return sched_fail(eb, SCHED_EINVAL, "%s: metadata.name: missing", kind);
    if (!*ns || !**ns)
        *ns = "default";
    if (kobj_key(*ns, *name, key, KOBJ_KEY_MAX) != 0)
        return sched_fail(eb, SCHED_EINVAL,
                          "%s %.64s/%.64s: metadata: namespace or name longer than %d characters "
                          "or containing '/'",
                          kind, *ns, *name, KOBJ_NAME_MAX);
    return 0;
}

/* What metadata and spec say of the pod beyond its group: uid, resourceVersion, node,
 * scheduler, deletion, gates, priority, creation time. */
static int pod_basics(const cJSON *meta, const cJSON *spec, const char *scheduler, struct kpod *p,
                      struct sched_errbuf *eb)
{
    p->uid = dup_or_null(map_str(meta, "uid"));
    p->rv = dup_or_null(map_str(meta, "resourceVersion"));
    const char *node = map_str(spec, "nodeName");
    p->node = node && *node ? strdup(node) : NULL;
    const char *sn = map_str(spec, "schedulerName");
    p->ours = sn && scheduler && strcmp(sn, scheduler) == 0;
    p->deleting = get(meta, "deletionTimestamp") && !cJSON_IsNull(get(meta, "deletionTimestamp"));
    p->del_ts = p->deleting;
    const cJSON *gates = get(spec, "schedulingGates");
    p->gated = cJSON_IsArray(gates) && cJSON_GetArraySize(gates) > 0;
    const cJSON *prio = get(spec, "priority");
    if (prio && !cJSON_IsNumber(prio))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.priority: not an integer", p->key);
    p->priority = prio ? (int32_t)prio->valuedouble : 0;
    const char *pp = map_str(spec, "preemptionPolicy");
    p->preempt_never = pp && strcmp(pp, "Never") == 0;
    const char *ct = map_str(meta, "creationTimestamp");
    if (ct && kobj_time(ct, &p->created_ms) != 0)
        return sched_fail(eb, SCHED_EINVAL,
                          "pod %s: metadata.creationTimestamp: \"%.64s\" is not RFC 3339", p->key,
                          ct);
    return 0;
}

/* Phase, readiness, the PodScheduled condition, the start of its run and its own words. */
static void pod_status(const cJSON *status, struct kpod *p)
{
    const char *phase = map_str(status, "phase");
    p->phase = !phase                            ? KPOD_PENDING
               : strcmp(phase, "Pending") == 0   ? KPOD_PENDING
               : strcmp(phase, "Running") == 0   ? KPOD_RUNNING
               : strcmp(phase, "Succeeded") == 0 ? KPOD_SUCCEEDED
               : strcmp(phase, "Failed") == 0    ? KPOD_FAILED
                                                 : KPOD_UNKNOWN;
    const cJSON *conds = get(status, "conditions"), *c;
    if (!cJSON_IsArray(conds))
        conds = NULL;
    int64_t scheduled_ms = 0;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = map_str(c, "type"), *s = map_str(c, "status");
        if (t && s && strcmp(t, "Ready") == 0)
            p->ready = strcmp(s, "True") == 0;
        if (t && s && strcmp(t, "PodScheduled") == 0 && strcmp(s, "False") == 0 && !p->sched_msg)
            p->sched_msg = strdup(map_str(c, "message") ? map_str(c, "message") : "");
        const char *lt = map_str(c, "lastTransitionTime");
        if (t && s && lt && strcmp(t, "PodScheduled") == 0 && strcmp(s, "True") == 0 &&
            kobj_time(lt, &scheduled_ms) != 0)
            scheduled_ms = 0; /* an unreadable time is only a missing hint */
    }
    /* the run's start: a malformed startTime falls back to the PodScheduled time (else 0, the
     * caller counts the run from now), never an error, since only the preemption cost and
     * minRuntime depend on it */
    const char *st = map_str(status, "startTime");
    if (!st || kobj_time(st, &p->started_ms) != 0)
        p->started_ms = scheduled_ms;
    p->bound_ms = scheduled_ms > 0 ? scheduled_ms : p->started_ms;
    p->why = pod_why(status);
}

/* The group the pod names, if any (Kubernetes' own fields, then the CRD APIs' labels and
 * annotations, then Kueue's plain-pod group). */
static int pod_group(const cJSON *spec, const cJSON *labels, const cJSON *ann, const char *ns,
                     struct kpod *p, struct sched_errbuf *eb)
{
    int rc = knative_pod_group(spec, ns, p->key, p, eb);
    if (rc || p->group)
        return rc;
    const char *grp = map_str(labels, KOBJ_LABEL_XK8S_GROUP);
    if (!grp)
        grp = map_str(ann, KOBJ_ANNOT_KUBE_GROUP);
    if (!grp)
        grp = map_str(ann, KOBJ_ANNOT_VOLCANO_GRP);
    const char *kg = map_str(labels, KOBJ_LABEL_KUEUE_GROUP);
    if (!grp && kg && *kg) { /* Kueue's plain-pod group: no PodGroup object, a total count */
        const char *tc = map_str(ann, KOBJ_ANNOT_KUEUE_TOTAL);
        char *end = NULL;
        long total = tc ? strtol(tc, &end, 10) : -1;
        if (!tc || !end || *end || end == tc || total < 1 || total > 100000)
            return sched_fail(eb, SCHED_EINVAL,
                              "pod %s: label %s needs the annotation %s, a count >= 1 (got "
                              "\"%.32s\")",
                              p->key, KOBJ_LABEL_KUEUE_GROUP, KOBJ_ANNOT_KUEUE_TOTAL, tc ? tc : "");
        p->group_total = (uint32_t)total;
        grp = kg;
    }
    if (!grp || !*grp)
        return 0;
    char gkey[KOBJ_KEY_MAX];
    if (kobj_key(ns, grp, gkey, sizeof(gkey)) != 0)
        return sched_fail(eb, SCHED_EINVAL, "pod %s: pod group name \"%.64s\" is not a valid name",
                          p->key, grp);
    p->group = strdup(gkey);
    return p->group ? 0 : SCHED_ENOMEM;
}

/* A bound pod's own run settings (annot_run's keys among its annotations; the pod keeps no
 * annotations once bound). A bad value was refused when its gang was admitted: none. */
static int pod_run_hints(const cJSON *ann, struct kpod *p)
{
    int count = cJSON_IsObject(ann) ? cJSON_GetArraySize(ann) : 0;
    if (count <= 0)
        return 0;
    struct kv *v = calloc((size_t)count, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ann)
    {
        if (cJSON_IsString(it) && it->string)
            v[n++] = (struct kv){.key = it->string, .value = it->valuestring};
    }
    struct annot_run r = {.min_runtime_ms = -1,
                          .restart_cost_ms = -1,
                          .start_timeout_ms = -1,
                          .max_restarts = UINT32_MAX};
    struct sched_errbuf eb;
    if (annot_run(v, n, &r, &eb) == 0) {
        p->min_runtime_ms = r.min_runtime_ms;
        p->restart_cost_ms = r.restart_cost_ms;
        p->start_timeout_ms = r.start_timeout_ms;
        p->max_restarts = r.max_restarts;
        p->non_preemptible = r.non_preemptible;
    }
    free(v);
    return 0;
}

/* Queue, flavor, GPU indices and checkpoint times from labels and annotations. */
static int pod_marks(const cJSON *labels, const cJSON *ann, struct kpod *p, struct sched_errbuf *eb)
{
    const char *q = map_str(labels, KOBJ_LABEL_QUEUE);
    if (!q && (q = map_str(labels, KOBJ_LABEL_KUEUE_QUEUE)) != NULL)
        p->queue_kueue = true;
    if (!q)
        q = map_str(ann, KOBJ_ANNOT_VOLCANO_Q);
    p->queue = dup_or_null(q);
    const char *u = map_str(ann, KOBJ_ANNOT_USER);
    p->user = dup_or_null(u ? u : map_str(labels, KOBJ_ANNOT_USER));
    p->flavor = dup_or_null(map_str(ann, KOBJ_ANNOT_FLAVOR));
    const char *mr = p->ours && p->node ? map_str(ann, KOBJ_ANNOT_MAX_RUNTIME) : NULL;
    int64_t mr_ms = 0; /* a bad value was refused when the gang was admitted: none */
    if (mr && !dur_parse(mr, strlen(mr), &mr_ms) && mr_ms > 0)
        p->max_runtime_s = (uint32_t)((mr_ms + 999) / 1000); /* DUR_MAX_MS fits */
    p->min_runtime_ms = p->restart_cost_ms = p->start_timeout_ms = -1;
    p->max_restarts = UINT32_MAX;
    if (p->ours && p->node && pod_run_hints(ann, p) != 0)
        return SCHED_ENOMEM;
    if (p->ours) { /* the checkpoint handshake's times; an unreadable one is none */
        const char *ck[] = {KOBJ_ANNOT_CKPT_ASKED, KOBJ_ANNOT_CKPT_UNTIL, KOBJ_ANNOT_LAST_CKPT};
        int64_t *to[] = {&p->ckpt_asked_ms, &p->ckpt_until_ms, &p->ckpt_last_ms};
        for (int i = 0; i < 3; i++) {
            const char *t = map_str(ann, ck[i]);
            if (t && kobj_time(t, to[i]) != 0)
                *to[i] = 0;
        }
    }
    const char *ids = map_str(ann, KOBJ_ANNOT_GPU_IDS);
    if (!ids)
        return 0;
    if (parse_gpu_ids(ids, &p->gpu_mask) != 0)
        return sched_fail(eb, SCHED_EINVAL,
                          "pod %s: annotation %s: \"%.64s\" is not a list of GPU indices 0..31",
                          p->key, KOBJ_ANNOT_GPU_IDS, ids);
    p->has_gpu_ids = true;
    return 0;
}

static int pod_place(const cJSON *o, struct kpod *p);

static uint64_t rules_hash(const struct pod_meta *m, bool prefs);

int kobj_pod_decode(const cJSON *o, const char *scheduler, struct kpod **out,
                    struct sched_errbuf *eb)
{
    const cJSON *meta = get(o, "metadata"), *spec = get(o, "spec");
    const char *ns, *name;
    char key[KOBJ_KEY_MAX];
    int rc = meta_key(meta, "pod", &ns, &name, key, eb);
    if (rc)
        return rc;
    if (spec && !cJSON_IsObject(spec))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec: not an object", key);
    struct kpod *p = calloc(1, sizeof(*p));
    if (!p)
        return SCHED_ENOMEM;
    size_t kl = strlen(key) + 1, nl = strlen(ns) + 1; /* key, ns and name in one block */
    if (!(p->key = malloc(kl + kl))) {
        kobj_pod_free(p);
        return SCHED_ENOMEM;
    }
    memcpy(p->key, key, kl);
    p->ns = memcpy(p->key + kl, ns, nl);
    p->name = memcpy(p->key + kl + nl, name, kl - nl);
    const cJSON *labels = get(meta, "labels"), *ann = get(meta, "annotations");
    if ((rc = pod_basics(meta, spec, scheduler, p, eb)) == 0) {
        pod_status(get(o, "status"), p);
        rc = pod_group(spec, labels, ann, ns, p, eb);
    }
    if (rc == 0)
        rc = pod_marks(labels, ann, p, eb);
    if (rc == 0 && (rc = pod_request(spec, p->key, &p->req, eb)) == 0)
        p->gpus_own = p->req.v[RES_GPU];
    if (rc == 0)
        rc = kdra_pod_claims(o, ns, p, eb);
    char bad[SCHED_ERRBUF] = ""; /* a constraint that cannot be read (objects_meta.c) */
    if (rc == 0 && (rc = kobj_pod_meta(o, p, eb)) == SCHED_EINVAL) {
        snprintf(bad, sizeof(bad), "%s", eb->msg);
        struct pod_meta *m = p->meta; /* its gang waits: no constraint is read, and none */
        m->n_affinity = m->n_anti = m->n_ports = m->n_spread = 0; /* half read is kept */
        m->n_pref_affinity = m->n_pref_anti = m->n_soft_spread = 0;
        rc = 0;
    }
    if (rc == 0 && p->ours && !p->node)
        rc = pod_place(o, p);
    if (rc == 0 && bad[0] && p->spec && !p->spec->err && /* its gang waits with InvalidSpec */
        !(p->spec->err = arena_strdup(&p->spec->mem, bad)))
        rc = SCHED_ENOMEM;
    if (rc) {
        kobj_pod_free(p);
        return rc;
    }
    if (p->ours) /* only its own pods carry what this scheduler writes */
        p->digest = kobj_pod_digest(o);
    for (int prefs = 0; p->spec && prefs < 2; prefs++)  /* compared for each pending member */
        p->rules_h[prefs] = rules_hash(p->meta, prefs); /* of its gang at every build */
    *out = p;
    return 0;
}

/* ---- placement constraints ------------------------------------------------------------------- */

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

int kobj_kv_copy(const cJSON *map, const char *where, struct arena *a, const struct kv **out,
                 uint32_t *n, struct sched_errbuf *eb)
{
    *out = NULL;
    *n = 0;
    int count = cJSON_IsObject(map) ? cJSON_GetArraySize(map) : 0;
    if (count <= 0)
        return 0;
    struct kv *v = arena_calloc(a, (size_t)count, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    uint32_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, map)
    {
        if (!cJSON_IsString(it) || !it->string) {
            if (where)
                return sched_fail(eb, SCHED_EINVAL, "%s.%s: not a string", where,
                                  it->string ? it->string : "?");
            continue;
        }
        v[k].key = arena_strdup(a, it->string);
        v[k].value = arena_strdup(a, it->valuestring);
        if (!v[k].key || !v[k++].value)
            return SCHED_ENOMEM;
    }
    qsort(v, k, sizeof(*v), cmp_kv);
    *out = v;
    *n = k;
    return 0;
}

/* A copy of s in `a`; *ok is cleared when it cannot be made. NULL stays NULL. */
static const char *adup(struct arena *a, const char *s, bool *ok)
{
    char *d = s ? arena_strdup(a, s) : NULL;
    if (s && !d)
        *ok = false;
    return d;
}

int kobj_strings(const cJSON *arr, struct arena *a, const char *const **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!arr)
        return 0;
    if (!cJSON_IsArray(arr))
        return SCHED_EINVAL;
    int count = cJSON_GetArraySize(arr);
    const char **v = arena_calloc(a, (size_t)(count ? count : 1), sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsString(it))
            return SCHED_EINVAL;
        if (!(v[(*n)++] = arena_strdup(a, it->valuestring)))
            return SCHED_ENOMEM;
    }
    *out = v;
    return 0;
}

static int place_tolerations(const cJSON *tols, const char *key, struct arena *a, struct podset *ps,
                             struct sched_errbuf *eb)
{
    if (tols && !cJSON_IsArray(tols))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.tolerations: not a list", key);
    int n = cJSON_GetArraySize(tols);
    if (n <= 0)
        return 0;
    struct toleration *t = arena_calloc(a, (size_t)n, sizeof(*t));
    if (!t)
        return SCHED_ENOMEM;
    uint32_t k = 0;
    bool ok = true;
    const cJSON *it;
    cJSON_ArrayForEach(it, tols)
    {
        const char *op = map_str(it, "operator"), *eff = map_str(it, "effect");
        struct toleration *x = &t[k];
        x->key = adup(a, map_str(it, "key"), &ok);
        x->value = adup(a, map_str(it, "value") ? map_str(it, "value") : "", &ok);
        x->op_exists = op && strcmp(op, "Exists") == 0;
        if (op && !x->op_exists && strcmp(op, "Equal") != 0)
            return sched_fail(eb, SCHED_EINVAL,
                              "pod %s: spec.tolerations[%u].operator: \"%.32s\" is not Equal or "
                              "Exists",
                              key, k, op);
        x->effect = !eff || !*eff                          ? -1
                    : strcmp(eff, "NoSchedule") == 0       ? TAINT_NO_SCHEDULE
                    : strcmp(eff, "PreferNoSchedule") == 0 ? TAINT_PREFER_NO_SCHEDULE
                    : strcmp(eff, "NoExecute") == 0        ? TAINT_NO_EXECUTE
                                                           : -2;
        if (x->effect == -2)
            return sched_fail(eb, SCHED_EINVAL,
                              "pod %s: spec.tolerations[%u].effect: \"%.32s\" is not a taint "
                              "effect",
                              key, k, eff);
        k++;
    }
    ps->tolerations = t;
    ps->n_tolerations = k;
    return ok ? 0 : SCHED_ENOMEM;
}

int kobj_sel_exprs(const cJSON *exprs, int n_ops, const char *where, struct arena *a,
                   struct sel_req *r, uint32_t *k, struct sched_errbuf *eb)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    if (!cJSON_IsArray(exprs))
        return 0;
    uint32_t j = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, exprs)
    {
        const char *op = map_str(e, "operator"), *key = map_str(e, "key");
        int found = -1;
        for (int o = 0; op && o < n_ops && o < 6; o++)
            if (strcmp(op, ops[o]) == 0)
                found = o;
        if (!key || found < 0)
            return sched_fail(eb, SCHED_EINVAL, "%s[%u]: needs a key and an operator of %s", where,
                              j,
                              n_ops > 4   ? "In, NotIn, Exists, DoesNotExist, Gt, Lt"
                              : n_ops > 2 ? "In, NotIn, Exists, DoesNotExist"
                                          : "In, NotIn");
        struct sel_req *q = &r[*k];
        q->op = (enum sel_op)found;
        if (!(q->key = arena_strdup(a, key)))
            return SCHED_ENOMEM;
        int rc = kobj_strings(get(e, "values"), a, &q->values, &q->n_values);
        if (rc == SCHED_EINVAL)
            return sched_fail(eb, SCHED_EINVAL, "%s[%u].values: not a list of strings", where, j);
        if (rc)
            return rc;
        (*k)++, j++;
    }
    return 0;
}

/* One NodeSelectorTerm at `where`: its matchExpressions (labels; the six operators) and its
 * matchFields (the node's metadata.name, In or NotIn: the only field core/v1 validation
 * accepts), ANDed; a term with neither matches no node (model.h sel_term). */
static int place_term(const cJSON *term, const char *where, struct arena *a, struct sel_term *st,
                      struct sched_errbuf *eb)
{
    if (term && !cJSON_IsObject(term))
        return sched_fail(eb, SCHED_EINVAL, "%s: not an object", where);
    const cJSON *exprs = get(term, "matchExpressions"), *fields = get(term, "matchFields");
    int m = cJSON_GetArraySize(exprs) + cJSON_GetArraySize(fields);
    struct sel_req *r = arena_calloc(a, (size_t)(m > 0 ? m : 1), sizeof(*r));
    if (!r)
        return SCHED_ENOMEM;
    char at[600];
    snprintf(at, sizeof(at), "%s.matchExpressions", where);
    uint32_t j = 0;
    int rc = kobj_sel_exprs(exprs, 6, at, a, r, &j, eb);
    uint32_t first_field = j;
    snprintf(at, sizeof(at), "%s.matchFields", where);
    if (rc == 0)
        rc = kobj_sel_exprs(fields, 2, at, a, r, &j, eb);
    for (uint32_t k = first_field; rc == 0 && k < j; k++) {
        if (strcmp(r[k].key, "metadata.name") != 0)
            return sched_fail(eb, SCHED_EINVAL, "%s[%u].key: '%s': only metadata.name is a field",
                              at, k - first_field, r[k].key);
        r[k].field = true;
    }
    st->reqs = r;
    st->n_reqs = j;
    return rc;
}

/* spec.affinity.nodeAffinity's required terms into ps->affinity (ORed) and its preferred terms
 * into ps->pref (core/v1 PreferredSchedulingTerm: weight 1..100; a term of weight 0 or with an
 * empty preference counts for nothing, as kube-scheduler's NodeAffinity score reads it). */
static int node_affinity_decode(const cJSON *na, const char *key, struct arena *a,
                                struct podset *ps, struct sched_errbuf *eb)
{
    char where[KOBJ_KEY_MAX + 160];
    const cJSON *terms =
        get(get(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    const cJSON *prefs = get(na, "preferredDuringSchedulingIgnoredDuringExecution");
    bool bad_req = terms && !cJSON_IsArray(terms) && !cJSON_IsNull(terms);
    if (bad_req || (prefs && !cJSON_IsArray(prefs) && !cJSON_IsNull(prefs)))
        return sched_fail(
            eb, SCHED_EINVAL, "pod %s: spec.affinity.nodeAffinity.%s: not a list", key,
            bad_req ? "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
                    : "preferredDuringSchedulingIgnoredDuringExecution");
    int n = cJSON_GetArraySize(terms), np = cJSON_GetArraySize(prefs);
    struct sel_term *st = n > 0 ? arena_calloc(a, (size_t)n, sizeof(*st)) : NULL;
    struct pref_term *pt = np > 0 ? arena_calloc(a, (size_t)np, sizeof(*pt)) : NULL;
    if ((n > 0 && !st) || (np > 0 && !pt))
        return SCHED_ENOMEM;
    uint32_t k = 0;
    const cJSON *term;
    cJSON_ArrayForEach(term, terms)
    {
        snprintf(where, sizeof(where), "pod %s: nodeSelectorTerms[%u]", key, k);
        int rc = place_term(term, where, a, &st[k++], eb);
        if (rc)
            return rc;
    }
    ps->affinity = st;
    ps->n_affinity = k;
    k = 0;
    cJSON_ArrayForEach(term, prefs)
    {
        snprintf(
            where, sizeof(where),
            "pod %s: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            "[%u]",
            key, k);
        const cJSON *w = get(term, "weight");
        double wv = cJSON_IsNumber(w) ? w->valuedouble : -1;
        if (wv < 0 || wv > 100 || wv != (double)(int)wv)
            return sched_fail(eb, SCHED_EINVAL, "%s.weight: not an integer from 1 to 100", where);
        size_t len = strlen(where);
        snprintf(where + len, sizeof(where) - len, ".preference");
        int rc = place_term(get(term, "preference"), where, a, &pt[k].term, eb);
        if (rc)
            return rc;
        pt[k].weight = (int32_t)wv;
        if (pt[k].weight > 0 && pt[k].term.n_reqs > 0)
            k++; /* a no-op term is not kept: pods differing by one stay in one set */
    }
    ps->pref = k ? pt : NULL;
    ps->n_pref = k;
    return 0;
}

/* The placement constraints of an unbound pod (nodeSelector, tolerations, required node
 * affinity) into ps, copied into `a`. */
static int place_decode(const cJSON *spec, const char *key, struct arena *a, struct podset *ps,
                        struct sched_errbuf *eb)
{
    const cJSON *sel = get(spec, "nodeSelector");
    if (sel && !cJSON_IsObject(sel))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.nodeSelector: not an object", key);
    char where[KOBJ_KEY_MAX + 32];
    snprintf(where, sizeof(where), "pod %s: spec.nodeSelector", key);
    int rc = kobj_kv_copy(sel, where, a, &ps->node_selector, &ps->n_node_selector, eb);
    if (rc == 0)
        rc = place_tolerations(get(spec, "tolerations"), key, a, ps, eb);
    if (rc)
        return rc;
    return node_affinity_decode(get(get(spec, "affinity"), "nodeAffinity"), key, a, ps, eb);
}

/* The device count of each container (sched/kube/hami.h writes one allocation entry each). */
static void gpu_containers(const cJSON *spec, struct kpod_spec *sp)
{
    const cJSON *cs = get(spec, "containers"), *c;
    bool ok = cJSON_IsArray(cs) && cJSON_GetArraySize(cs) <= KOBJ_GPU_CTRS;
    const cJSON *list = ok ? cs : NULL;
    uint8_t n = 0;
    cJSON_ArrayForEach(c, list)
    {
        struct res_vec one;
        struct sched_errbuf eb;
        memset(&one, 0, sizeof(one));
        const cJSON *res = get(c, "resources");
        if (add_requests(get(res, "requests"), get(res, "limits"), "", &one, &eb) ||
            one.v[RES_GPU] > NODE_MAX_GPUS) {
            ok = false;
            break;
        }
        sp->gpu_ctrs[n++] = (uint8_t)one.v[RES_GPU];
    }
    sp->n_gpu_ctrs = ok ? n : 0;
}

/* What placing an unbound pod of ours reads, decoded now (the object is not kept): its
 * constraints (a malformed one is kept as place_err: its gang waits with InvalidSpec), its
 * annotations, the shape of its claims. */
static int pod_place(const cJSON *o, struct kpod *p)
{
    struct kpod_spec *sp = p->spec = calloc(1, sizeof(*p->spec));
    if (!sp)
        return SCHED_ENOMEM;
    arena_init(&sp->mem, 1024);
    const cJSON *spec = get(o, "spec");
    struct sched_errbuf eb;
    struct podset ps;
    memset(&ps, 0, sizeof(ps));
    int rc = place_decode(spec, p->key, &sp->mem, &ps, &eb);
    if (rc == SCHED_EINVAL) {
        memset(&ps, 0, sizeof(ps));
        if (!(sp->err = arena_strdup(&sp->mem, eb.msg)))
            return SCHED_ENOMEM;
    } else if (rc) {
        return rc;
    }
    sp->node_selector = ps.node_selector;
    sp->n_node_selector = ps.n_node_selector;
    sp->tolerations = ps.tolerations;
    sp->n_tolerations = ps.n_tolerations;
    sp->affinity = ps.affinity;
    sp->n_affinity = ps.n_affinity;
    sp->pref = ps.pref;
    sp->n_pref = ps.n_pref;
    if (kobj_kv_copy(get(get(o, "metadata"), "annotations"), NULL, &sp->mem, &sp->ann, &sp->n_ann,
                     NULL))
        return SCHED_ENOMEM;
    gpu_containers(spec, sp);
    if (kdra_pod_ext(spec, &sp->mem, &sp->ext, &sp->n_ext))
        return SCHED_ENOMEM;
    const cJSON *rcs = get(spec, "resourceClaims");
    if (rcs && !cJSON_IsNull(rcs)) {
        char *txt = cJSON_PrintUnformatted(rcs);
        sp->claim_shape = txt ? arena_strdup(&sp->mem, txt) : NULL;
        cJSON_free(txt);
        if (!sp->claim_shape)
            return SCHED_ENOMEM;
    }
    return 0;
}

static bool term_eq(const struct sel_term *a, const struct sel_term *b)
{
    return a->n_reqs == b->n_reqs && podaff_same_reqs(a->reqs, b->reqs, a->n_reqs);
}

static bool terms_eq(const struct sel_term *a, const struct sel_term *b, uint32_t n)
{
    for (uint32_t t = 0; t < n; t++)
        if (!term_eq(&a[t], &b[t]))
            return false;
    return true;
}

static bool prefs_eq(const struct pref_term *a, const struct pref_term *b, uint32_t n)
{
    for (uint32_t t = 0; t < n; t++)
        if (a[t].weight != b[t].weight || !term_eq(&a[t].term, &b[t].term))
            return false;
    return true;
}

/* m without its inter-pod preferences (preferred terms, ScheduleAnyway spreads). */
static struct pod_meta meta_without_prefs(const struct pod_meta *m)
{
    struct pod_meta r = *m;
    r.pref_affinity = r.pref_anti = NULL;
    r.n_pref_affinity = r.n_pref_anti = 0;
    r.soft_spread = NULL;
    r.n_soft_spread = 0;
    return r;
}

/* The hash of what a pod's inter-pod constraints are (not its labels: the pods of one set are
 * read with the labels of its first pod, core/model.h podset.meta), its inter-pod preferences
 * with `prefs`. */
static uint64_t rules_hash(const struct pod_meta *m, bool prefs)
{
    if (!m)
        return 0;
    struct pod_meta r = prefs ? *m : meta_without_prefs(m);
    r.labels = NULL;
    r.n_labels = 0;
    return podaff_hash(SCHED_HASH_INIT, &r);
}

const struct pod_meta *kobj_set_meta(struct arena *a, const struct pod_meta *m, bool prefs)
{
    if (prefs || !podaff_prefers(m))
        return m;
    struct pod_meta *r = arena_alloc(a, sizeof(*r));
    if (r)
        *r = meta_without_prefs(m);
    return r;
}

static uint64_t pod_rules_hash(const struct kpod *p, bool prefs)
{
    return p->spec ? p->rules_h[prefs] : rules_hash(p->meta, prefs);
}

bool kobj_same_spec(const struct kpod *a, const struct kpod *b, bool prefs)
{
    if (pod_rules_hash(a, prefs) != pod_rules_hash(b, prefs))
        return false;
    static const struct kpod_spec none;
    const struct kpod_spec *x = a->spec ? a->spec : &none, *y = b->spec ? b->spec : &none;
    if (memcmp(&a->req, &b->req, sizeof(a->req)) != 0 || a->priority != b->priority ||
        !kobj_same_str(x->err, y->err) || !kobj_same_str(x->claim_shape, y->claim_shape))
        return false;
    if (!nodes_kv_same(x->node_selector, x->n_node_selector, y->node_selector,
                       y->n_node_selector) ||
        x->n_tolerations != y->n_tolerations || x->n_affinity != y->n_affinity ||
        (prefs && x->n_pref != y->n_pref))
        return false;
    for (uint32_t i = 0; i < x->n_tolerations; i++) {
        const struct toleration *s = &x->tolerations[i], *t = &y->tolerations[i];
        if (s->op_exists != t->op_exists || s->effect != t->effect ||
            !kobj_same_str(s->key, t->key) || !kobj_same_str(s->value, t->value))
            return false;
    }
    return terms_eq(x->affinity, y->affinity, x->n_affinity) &&
           (!prefs || prefs_eq(x->pref, y->pref, x->n_pref));
}

uint32_t kobj_sets(struct kpod *const *pods, uint32_t n, bool prefs, uint32_t set_of[GANG_MAX_SETS],
                   uint8_t *set_id, bool *over)
{
    uint32_t n_sets = 0;
    *over = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = 0;
        while (s < n_sets && !kobj_same_spec(pods[set_of[s]], pods[i], prefs))
            s++;
        if (s == n_sets && n_sets == GANG_MAX_SETS) {
            *over = true;
            return n_sets;
        }
        if (s == n_sets)
            set_of[n_sets++] = i;
        set_id[i] = (uint8_t)s;
    }
    return n_sets;
}

/* ---- PodGroups ------------------------------------------------------------------------------- */

void kobj_pg_free(struct kpg *g)
{
    if (!g)
        return;
    free(g->key);
    free(g->ns);
    free(g->name);
    free(g->uid);
    free(g->rv);
    free(g->queue);
    free(g->priority_class);
    free(g->topology_key);
    free(g->parent);
    for (uint32_t i = 0; i < g->n_claims; i++)
        free(g->claims[i]);
    free_mem(g->mem);
    free(g);
}

/* status.conditions (type, status, lastTransitionTime) into g. */
static int pg_conditions(const cJSON *conds, struct kpg *g)
{
    int n = cJSON_IsArray(conds) ? cJSON_GetArraySize(conds) : 0;
    if (n <= 0)
        return 0;
    struct kpg_cond *v = arena_calloc(g->mem, (size_t)n, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    bool ok = true;
    uint32_t k = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        v[k].type = adup(g->mem, map_str(c, "type"), &ok);
        v[k].status = adup(g->mem, map_str(c, "status"), &ok);
        v[k++].last_transition = adup(g->mem, map_str(c, "lastTransitionTime"), &ok);
    }
    g->conds = v;
    g->n_conds = k;
    return ok ? 0 : SCHED_ENOMEM;
}

int kobj_pg_keep(struct kpg *g, const cJSON *o)
{
    if (!g->mem) {
        if (!(g->mem = malloc(sizeof(*g->mem))))
            return SCHED_ENOMEM;
        arena_init(g->mem, 1024);
    }
    if (kobj_kv_copy(get(get(o, "metadata"), "annotations"), NULL, g->mem, &g->ann, &g->n_ann,
                     NULL))
        return SCHED_ENOMEM;
    const cJSON *spec = get(o, "spec"), *status = get(o, "status");
    g->has_start_time = get(status, "scheduleStartTime") != NULL;
    bool kept = true;
    g->phase = adup(g->mem, map_str(status, "phase"), &kept);
    if (!kept)
        return SCHED_ENOMEM;
    static const char *const counted[KPOD_COUNTS] = {"running", "succeeded", "failed"};
    for (int k = 0; k < KPOD_COUNTS; k++) {
        const cJSON *n = get(status, counted[k]);
        g->seen_counts[k] = cJSON_IsNumber(n) && n->valuedouble >= 0 && n->valuedouble <= INT32_MAX
                                ? (int32_t)n->valuedouble
                                : 0;
    }
    if (g->api == KPG_VOLCANO) {
        const cJSON *nt = get(spec, "networkTopology"), *tier = get(nt, "highestTierAllowed");
        bool ok = true;
        g->nt_mode = adup(g->mem, map_str(nt, "mode"), &ok);
        g->has_nt_tier = cJSON_IsNumber(tier);
        g->nt_tier = g->has_nt_tier ? tier->valueint : 0;
        char *txt = cJSON_PrintUnformatted(o);
        g->raw = txt ? arena_strdup(g->mem, txt) : NULL;
        cJSON_free(txt);
        if (!ok || !g->raw)
            return SCHED_ENOMEM;
    }
    return knative_is(g->api) ? pg_conditions(get(status, "conditions"), g) : 0;
}

const char *kobj_pg_annotation(const struct kpg *pg, const char *key)
{
    if (!pg || !pg->n_ann)
        return NULL;
    struct kv want = {key, NULL};
    const struct kv *hit = bsearch(&want, pg->ann, pg->n_ann, sizeof(*pg->ann), cmp_kv);
    return hit ? hit->value : NULL;
}

int kobj_pg_decode(const cJSON *o, enum kpg_api api, struct kpg **out, struct sched_errbuf *eb)
{
    if (api == KPG_NATIVE_V1ALPHA2 || api == KPG_NATIVE_V1BETA1 || api == KPG_NATIVE_V1ALPHA3 ||
        api == KPG_CPG_V1ALPHA3)
        return knative_pg_decode(o, api, out, eb);
    const cJSON *meta = get(o, "metadata"), *spec = get(o, "spec");
    const char *ns, *name;
    char key[KOBJ_KEY_MAX];
    int rc = meta_key(meta, "podgroup", &ns, &name, key, eb);
    if (rc)
        return rc;
    const cJSON *mm = get(spec, "minMember");
    if (mm && (!cJSON_IsNumber(mm) || mm->valuedouble < 0 || mm->valuedouble > 1e6 ||
               mm->valuedouble != (double)(int64_t)mm->valuedouble))
        return sched_fail(eb, SCHED_EINVAL,
                          "podgroup %s: spec.minMember: not an integer in "
                          "0..1000000",
                          key);
    struct kpg *g = calloc(1, sizeof(*g));
    if (!g)
        return SCHED_ENOMEM;
    g->api = api;
    g->key = strdup(key);
    g->ns = strdup(ns);
    g->name = strdup(name);
    g->uid = dup_or_null(map_str(meta, "uid"));
    g->rv = dup_or_null(map_str(meta, "resourceVersion"));
    g->deleting = get(meta, "deletionTimestamp") && !cJSON_IsNull(get(meta, "deletionTimestamp"));
    g->min_member = mm && mm->valuedouble >= 1 ? (uint32_t)mm->valuedouble : 1;
    const cJSON *labels = get(meta, "labels");
    const char *q = map_str(labels, KOBJ_LABEL_QUEUE);
    if (!q && (q = map_str(labels, KOBJ_LABEL_KUEUE_QUEUE)) != NULL)
        g->queue_kueue = true;
    if (!q && api == KPG_VOLCANO)
        q = map_str(spec, "queue");
    g->queue = dup_or_null(q);
    g->priority_class = dup_or_null(map_str(spec, "priorityClassName"));
    const char *ct = map_str(meta, "creationTimestamp");
    if (ct && kobj_time(ct, &g->created_ms) != 0) {
        kobj_pg_free(g);
        return sched_fail(eb, SCHED_EINVAL,
                          "podgroup %s: metadata.creationTimestamp: not RFC "
                          "3339",
                          key);
    }
    if (!g->key || !g->ns || !g->name || kobj_pg_keep(g, o) != 0) {
        kobj_pg_free(g);
        return SCHED_ENOMEM;
    }
    *out = g;
    return 0;
}
