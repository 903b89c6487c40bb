/* sched/kube/objects.c: pods and PodGroups from API JSON (see objects.h). */
#include "sched/kube/objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small JSON helpers ---------------------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
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
    if (strlen(ns) > KOBJ_NAME_MAX || strlen(name) > KOBJ_NAME_MAX || strchr(ns, '/') ||
        strchr(name, '/'))
        return SCHED_EINVAL;
    int len = snprintf(buf, n, "%s/%s", ns, name);
    return len < 0 || (size_t)len >= n ? SCHED_EINVAL : 0;
}

int kobj_time(const char *s, int64_t *ms)
{
    if (!s)
        return SCHED_EINVAL;
    int Y, M, D, h, m, sec, used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &used) != 6 ||
        used != 19 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return SCHED_EINVAL;
    const char *p = s + used;
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
        int oh, om, n2 = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n2) != 2 || n2 != 5 || oh > 23 || om > 59)
            return SCHED_EINVAL;
        off_s = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return SCHED_EINVAL;
    }
    if (*p)
        return SCHED_EINVAL;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    *ms = ((int64_t)t - off_s) * 1000 + frac_ms;
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

int kobj_annotations(const cJSON *o, struct arena *a, struct kv **out, uint32_t *n)
{
    const cJSON *m = get(get(o, "metadata"), "annotations");
    uint32_t k = 0;
    *out = NULL;
    *n = 0;
    if (!cJSON_IsObject(m))
        return 0;
    int count = cJSON_GetArraySize(m);
    if (count <= 0)
        return 0;
    struct kv *v = arena_calloc(a, (size_t)count, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, m) if (cJSON_IsString(it) && it->string) v[k++] =
        (struct kv){it->string, it->valuestring};
    *out = v;
    *n = k;
    return 0;
}

/* ---- resource requests ----------------------------------------------------------------------- */

/* Adds a requests map (and the limits that stand for absent requests of extended resources, as
 * the API server defaults them) into acc. */
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
            if (k == 1 && (strcmp(it->string, "cpu") == 0 || strcmp(it->string, "memory") == 0))
                continue; /* limits default requests only when requests are absent entirely */
            if (!cJSON_IsString(it) && !cJSON_IsNumber(it))
                return sched_fail(eb, SCHED_EINVAL, "%s.resources.%s.%s: not a quantity", where,
                                  k ? "limits" : "requests", it->string);
            int id;
            struct sched_errbuf e2;
            if (res_intern(it->string, &id, &e2) != 0)
                return sched_fail(eb, SCHED_EINVAL, "%s.resources: %s", where, e2.msg);
            char num[64];
            const char *q = it->valuestring;
            if (cJSON_IsNumber(it)) {
                snprintf(num, sizeof(num), "%.17g", it->valuedouble);
                q = num;
            }
            int64_t v;
            if (res_parse(id, q, &v, &e2) != 0)
                return sched_fail(eb, SCHED_EINVAL, "%s.resources.%s.%s: %s", where,
                                  k ? "limits" : "requests", it->string, e2.msg);
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

/* ---- pods ------------------------------------------------------------------------------------ */

void kobj_pod_free(struct kpod *p)
{
    if (!p)
        return;
    free(p->key);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->rv);
    free(p->node);
    free(p->group);
    free(p->queue);
    free(p->flavor);
    free(p->why);
    free(p->sched_msg);
    cJSON_Delete(p->obj);
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

int kobj_pod_decode(const cJSON *o, const char *scheduler, struct kpod **out,
                    struct sched_errbuf *eb)
{
    const cJSON *meta = get(o, "metadata"), *spec = get(o, "spec"), *status = get(o, "status");
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
    p->key = strdup(key);
    p->ns = strdup(ns);
    p->name = strdup(name);
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
    if (prio && !cJSON_IsNumber(prio)) {
        rc = sched_fail(eb, SCHED_EINVAL, "pod %s: spec.priority: not an integer", key);
        goto fail;
    }
    p->priority = prio ? (int32_t)prio->valuedouble : 0;
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
    p->why = pod_why(status);
    const char *ct = map_str(meta, "creationTimestamp");
    if (ct && kobj_time(ct, &p->created_ms) != 0) {
        rc = sched_fail(eb, SCHED_EINVAL,
                        "pod %s: metadata.creationTimestamp: \"%.64s\" is not "
                        "RFC 3339",
                        key, ct);
        goto fail;
    }
    const cJSON *labels = get(meta, "labels"), *ann = get(meta, "annotations");
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
        if (!tc || !end || *end || end == tc || total < 1 || total > 100000) {
            rc = sched_fail(eb, SCHED_EINVAL,
                            "pod %s: label %s needs the annotation %s, a count >= 1 (got "
                            "\"%.32s\")",
                            key, KOBJ_LABEL_KUEUE_GROUP, KOBJ_ANNOT_KUEUE_TOTAL, tc ? tc : "");
            goto fail;
        }
        p->group_total = (uint32_t)total;
        grp = kg;
    }
    if (grp && *grp) {
        char gkey[KOBJ_KEY_MAX];
        if (kobj_key(ns, grp, gkey, sizeof(gkey)) != 0) {
            rc = sched_fail(eb, SCHED_EINVAL,
                            "pod %s: pod group name \"%.64s\" is not a valid "
                            "name",
                            key, grp);
            goto fail;
        }
        p->group = strdup(gkey);
    }
    const char *q = map_str(labels, KOBJ_LABEL_QUEUE);
    if (!q && (q = map_str(labels, KOBJ_LABEL_KUEUE_QUEUE)) != NULL)
        p->queue_kueue = true;
    if (!q)
        q = map_str(ann, KOBJ_ANNOT_VOLCANO_Q);
    p->queue = dup_or_null(q);
    p->flavor = dup_or_null(map_str(ann, KOBJ_ANNOT_FLAVOR));
    const char *ids = map_str(ann, KOBJ_ANNOT_GPU_IDS);
    if (ids) {
        if (parse_gpu_ids(ids, &p->gpu_mask) != 0) {
            rc = sched_fail(eb, SCHED_EINVAL,
                            "pod %s: annotation %s: \"%.64s\" is not a list of "
                            "GPU indices 0..31",
                            p->key, KOBJ_ANNOT_GPU_IDS, ids);
            goto fail;
        }
        p->has_gpu_ids = true;
    }
    if ((rc = pod_request(spec, p->key, &p->req, eb)) != 0)
        goto fail;
    if (!p->key || !p->ns || !p->name) {
        rc = SCHED_ENOMEM;
        goto fail;
    }
    if (p->ours && !p->node) {
        p->obj = cJSON_Duplicate(o, 1);
        if (!p->obj) {
            rc = SCHED_ENOMEM;
            goto fail;
        }
    }
    *out = p;
    return 0;
fail:
    kobj_pod_free(p);
    return rc;
}

/* ---- placement constraints ------------------------------------------------------------------- */

static int strings(const cJSON *arr, struct arena *a, const char *const **out, uint32_t *n)
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
        v[(*n)++] = it->valuestring;
    }
    *out = v;
    return 0;
}

int kobj_podset(const cJSON *pod, const char *key, struct arena *a, struct podset *ps,
                struct sched_errbuf *eb)
{
    const cJSON *spec = get(pod, "spec");
    const cJSON *sel = get(spec, "nodeSelector");
    if (sel && !cJSON_IsObject(sel))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.nodeSelector: not an object", key);
    int n = cJSON_GetArraySize(sel);
    if (n > 0) {
        struct kv *kv = arena_calloc(a, (size_t)n, sizeof(*kv));
        if (!kv)
            return SCHED_ENOMEM;
        uint32_t k = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, sel)
        {
            if (!cJSON_IsString(it))
                return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.nodeSelector.%s: not a string",
                                  key, it->string);
            kv[k++] = (struct kv){it->string, it->valuestring};
        }
        ps->node_selector = kv;
        ps->n_node_selector = k;
    }
    const cJSON *tols = get(spec, "tolerations");
    if (tols && !cJSON_IsArray(tols))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.tolerations: not a list", key);
    n = cJSON_GetArraySize(tols);
    if (n > 0) {
        struct toleration *t = arena_calloc(a, (size_t)n, sizeof(*t));
        if (!t)
            return SCHED_ENOMEM;
        uint32_t k = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, tols)
        {
            const char *op = map_str(it, "operator"), *eff = map_str(it, "effect");
            struct toleration *x = &t[k];
            x->key = map_str(it, "key");
            x->value = map_str(it, "value");
            x->op_exists = op && strcmp(op, "Exists") == 0;
            if (op && !x->op_exists && strcmp(op, "Equal") != 0)
                return sched_fail(eb, SCHED_EINVAL,
                                  "pod %s: spec.tolerations[%u].operator: \"%.32s\" is not Equal "
                                  "or Exists",
                                  key, k, op);
            x->effect = !eff || !*eff                          ? -1
                        : strcmp(eff, "NoSchedule") == 0       ? TAINT_NO_SCHEDULE
                        : strcmp(eff, "PreferNoSchedule") == 0 ? TAINT_PREFER_NO_SCHEDULE
                        : strcmp(eff, "NoExecute") == 0        ? TAINT_NO_EXECUTE
                                                               : -2;
            if (x->effect == -2)
                return sched_fail(eb, SCHED_EINVAL,
                                  "pod %s: spec.tolerations[%u].effect: "
                                  "\"%.32s\" is not a taint effect",
                                  key, k, eff);
            if (!x->value)
                x->value = "";
            k++;
        }
        ps->tolerations = t;
        ps->n_tolerations = k;
    }
    const cJSON *terms = get(get(get(get(spec, "affinity"), "nodeAffinity"),
                                 "requiredDuringSchedulingIgnoredDuringExecution"),
                             "nodeSelectorTerms");
    if (terms && !cJSON_IsArray(terms))
        return sched_fail(eb, SCHED_EINVAL,
                          "pod %s: spec.affinity.nodeAffinity: "
                          "nodeSelectorTerms: not a list",
                          key);
    n = cJSON_GetArraySize(terms);
    if (n > 0) {
        struct sel_term *st = arena_calloc(a, (size_t)n, sizeof(*st));
        if (!st)
            return SCHED_ENOMEM;
        uint32_t k = 0;
        const cJSON *term;
        cJSON_ArrayForEach(term, terms)
        {
            const cJSON *exprs = get(term, "matchExpressions");
            int m = cJSON_GetArraySize(exprs);
            struct sel_req *r = arena_calloc(a, (size_t)(m > 0 ? m : 1), sizeof(*r));
            if (!r)
                return SCHED_ENOMEM;
            uint32_t j = 0;
            const cJSON *e;
            if (!cJSON_IsArray(exprs))
                exprs = NULL;
            cJSON_ArrayForEach(e, exprs)
            {
                const char *op = map_str(e, "operator");
                r[j].key = map_str(e, "key");
                static const char *const ops[] = {"In",           "NotIn", "Exists",
                                                  "DoesNotExist", "Gt",    "Lt"};
                int found = -1;
                for (int o = 0; op && o < 6; o++)
                    if (strcmp(op, ops[o]) == 0)
                        found = o;
                if (!r[j].key || found < 0)
                    return sched_fail(eb, SCHED_EINVAL,
                                      "pod %s: nodeSelectorTerms[%u]."
                                      "matchExpressions[%u]: needs a key and an operator of In, "
                                      "NotIn, Exists, DoesNotExist, Gt, Lt",
                                      key, k, j);
                r[j].op = (enum sel_op)found;
                if (strings(get(e, "values"), a, &r[j].values, &r[j].n_values) != 0)
                    return sched_fail(eb, SCHED_EINVAL,
                                      "pod %s: nodeSelectorTerms[%u]."
                                      "matchExpressions[%u].values: not a list of strings",
                                      key, k, j);
                j++;
            }
            st[k].reqs = r;
            st[k].n_reqs = j;
            k++;
        }
        ps->affinity = st;
        ps->n_affinity = k;
    }
    return 0;
}

static bool json_eq(const cJSON *a, const cJSON *b)
{
    if (!a && !b)
        return true;
    if (!a || !b)
        return false;
    return cJSON_Compare(a, b, 1);
}

bool kobj_same_spec(const struct kpod *a, const struct kpod *b)
{
    if (memcmp(&a->req, &b->req, sizeof(a->req)) != 0 || a->priority != b->priority)
        return false;
    const cJSON *sa = get(a->obj, "spec"), *sb = get(b->obj, "spec");
    return json_eq(get(sa, "nodeSelector"), get(sb, "nodeSelector")) &&
           json_eq(get(sa, "tolerations"), get(sb, "tolerations")) &&
           json_eq(get(sa, "affinity"), get(sb, "affinity"));
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
    cJSON_Delete(g->obj);
    free(g);
}

int kobj_pg_decode(const cJSON *o, enum kpg_api api, struct kpg **out, struct sched_errbuf *eb)
{
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
    g->obj = cJSON_Duplicate(o, 1);
    if (!g->key || !g->ns || !g->name || !g->obj) {
        kobj_pg_free(g);
        return SCHED_ENOMEM;
    }
    *out = g;
    return 0;
}
