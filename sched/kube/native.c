/* sched/kube/native.c: scheduling.k8s.io Workloads and PodGroups (see native.h). */
#include "sched/kube/native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/core/log.h"
#include "sched/core/strmap.h"
#include "sched/kube/dra.h"

static const struct {
    const char *api_version, *kind, *plural, *sched_condition;
} knative_apis[KPG_N_API] = {
    [KPG_XK8S] = {"scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups", NULL},
    [KPG_VOLCANO] = {"scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", NULL},
    [KPG_NATIVE_V1ALPHA2] = {"scheduling.k8s.io/v1alpha2", "PodGroup", "podgroups",
                             "PodGroupScheduled"},
    [KPG_NATIVE_V1BETA1] = {"scheduling.k8s.io/v1beta1", "PodGroup", "podgroups",
                            "PodGroupInitiallyScheduled"},
    [KPG_WORKLOAD_V1ALPHA1] = {"scheduling.k8s.io/v1alpha1", "Workload", "workloads", NULL},
    [KPG_NATIVE_V1ALPHA3] = {"scheduling.k8s.io/v1alpha3", "PodGroup", "podgroups",
                             "PodGroupInitiallyScheduled"},
    [KPG_CPG_V1ALPHA3] = {"scheduling.k8s.io/v1alpha3", "CompositePodGroup", "compositepodgroups",
                          "CompositePodGroupInitiallyScheduled"},
};

bool knative_is(enum kpg_api api)
{
    return api == KPG_NATIVE_V1ALPHA2 || api == KPG_NATIVE_V1BETA1 || api == KPG_NATIVE_V1ALPHA3 ||
           api == KPG_WORKLOAD_V1ALPHA1 || api == KPG_CPG_V1ALPHA3;
}

int knative_cpg_key(const char *ns, const char *name, char *buf, size_t n)
{
    if (!ns || !*ns)
        ns = "default";
    int w = snprintf(buf, n, "%s/cpg:%s", ns, name ? name : "");
    return name && *name && w > 0 && (size_t)w < n && !strchr(ns, '/') && !strpbrk(name, "/:")
               ? 0
               : SCHED_EINVAL;
}

void knative_path(const struct kpg *pg, const char *sub, char *buf, size_t n)
{
    snprintf(buf, n, "/apis/%s/namespaces/%s/%s/%s%s%s", knative_api_version(pg->api), pg->ns,
             knative_plural(pg->api), pg->name, sub ? "/" : "", sub ? sub : "");
}

const char *knative_api_version(enum kpg_api api)
{
    return api < KPG_N_API ? knative_apis[api].api_version : "";
}

const char *knative_kind(enum kpg_api api)
{
    return api < KPG_N_API ? knative_apis[api].kind : "";
}

const char *knative_plural(enum kpg_api api)
{
    return api < KPG_N_API ? knative_apis[api].plural : "";
}

const char *knative_sched_condition(enum kpg_api api)
{
    return api < KPG_N_API ? knative_apis[api].sched_condition : NULL;
}

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* A name usable inside a gang key: non-empty, at most KOBJ_NAME_MAX, no '/' or ':' (DNS names
 * have neither). */
static bool key_part(const cJSON *v)
{
    return cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) <= KOBJ_NAME_MAX &&
           !strpbrk(v->valuestring, "/:");
}

int knative_pod_group(const cJSON *spec, const char *ns, const char *pod_key, struct kpod *p,
                      struct sched_errbuf *eb)
{
    const cJSON *sg = get(spec, "schedulingGroup"), *wr = get(spec, "workloadRef");
    char gkey[3 * KOBJ_NAME_MAX + 8], ref[2 * KOBJ_NAME_MAX + 8];
    if (sg && !cJSON_IsNull(sg)) {
        const cJSON *n = get(sg, "podGroupName");
        if (!key_part(n))
            return sched_fail(eb, SCHED_EINVAL,
                              "pod %s: spec.schedulingGroup.podGroupName: missing or not a "
                              "valid name",
                              pod_key);
        snprintf(gkey, sizeof(gkey), "%s/%s", ns, n->valuestring);
        p->group = strdup(gkey);
        p->native = true;
        return p->group ? 0 : SCHED_ENOMEM;
    }
    if (!wr || cJSON_IsNull(wr))
        return 0;
    const cJSON *wn = get(wr, "name"), *pg = get(wr, "podGroup"),
                *rk = get(wr, "podGroupReplicaKey");
    if (!key_part(wn) || !key_part(pg))
        return sched_fail(eb, SCHED_EINVAL,
                          "pod %s: spec.workloadRef: name and podGroup must be valid names",
                          pod_key);
    bool has_rk = rk && !cJSON_IsNull(rk) && !(cJSON_IsString(rk) && !rk->valuestring[0]);
    if (has_rk && !key_part(rk))
        return sched_fail(eb, SCHED_EINVAL,
                          "pod %s: spec.workloadRef.podGroupReplicaKey: not a valid name", pod_key);
    snprintf(ref, sizeof(ref), "%s/%s:%s", ns, wn->valuestring, pg->valuestring);
    snprintf(gkey, sizeof(gkey), "%s%s%s", ref, has_rk ? ":" : "", has_rk ? rk->valuestring : "");
    p->group = strdup(gkey);
    p->pg_ref = strdup(ref);
    p->native = true;
    return p->group && p->pg_ref ? 0 : SCHED_ENOMEM;
}

/* {basic: {}} or {gang: {minCount}}, exactly one (what: the field's path in errors). */
static int policy(const cJSON *pol, const char *key, const char *what, struct kpg *g,
                  struct sched_errbuf *eb)
{
    const cJSON *basic = get(pol, "basic"), *gang = get(pol, "gang");
    bool b = basic && !cJSON_IsNull(basic), gg = gang && !cJSON_IsNull(gang);
    if (b == gg)
        return sched_fail(eb, SCHED_EINVAL, "%s: %s: exactly one of basic and gang must be set",
                          key, what);
    if (b) {
        g->basic = true;
        g->min_member = 1;
        return 0;
    }
    if (g->api == KPG_CPG_V1ALPHA3) { /* a CompositePodGroup: child groups, not pods */
        const cJSON *mg = get(gang, "minGroupCount");
        if (!cJSON_IsNumber(mg) || mg->valuedouble < 1 || mg->valuedouble > 1e6 ||
            mg->valuedouble != (double)(int64_t)mg->valuedouble)
            return sched_fail(eb, SCHED_EINVAL,
                              "%s: %s.gang.minGroupCount: not an integer in 1..1000000", key, what);
        g->min_groups = (uint32_t)mg->valuedouble;
        g->min_member = 1; /* its gang's pods: counted from its children (cache_build.c) */
        return 0;
    }
    const cJSON *mc = get(gang, "minCount");
    if (!cJSON_IsNumber(mc) || mc->valuedouble < 1 || mc->valuedouble > 1e6 ||
        mc->valuedouble != (double)(int64_t)mc->valuedouble)
        return sched_fail(eb, SCHED_EINVAL, "%s: %s.gang.minCount: not an integer in 1..1000000",
                          key, what);
    g->min_member = (uint32_t)mc->valuedouble;
    return 0;
}

static struct kpg *new_pg(const char *key, const char *ns, const char *name, const cJSON *meta,
                          enum kpg_api api)
{
    struct kpg *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->api = api;
    g->key = strdup(key);
    g->ns = strdup(ns);
    g->name = strdup(name);
    const char *uid = cJSON_GetStringValue(get(meta, "uid"));
    const char *rv = cJSON_GetStringValue(get(meta, "resourceVersion"));
    g->uid = uid ? strdup(uid) : NULL;
    g->rv = rv ? strdup(rv) : NULL;
    const cJSON *labels = get(meta, "labels");
    const char *q = cJSON_GetStringValue(get(labels, KOBJ_LABEL_QUEUE));
    if (!q && (q = cJSON_GetStringValue(get(labels, KOBJ_LABEL_KUEUE_QUEUE))))
        g->queue_kueue = true; /* a Kueue LocalQueue of the namespace, as on other PodGroups */
    g->queue = q ? strdup(q) : NULL;
    const char *ct = cJSON_GetStringValue(get(meta, "creationTimestamp"));
    if (ct && kobj_time(ct, &g->created_ms) != 0)
        g->created_ms = 0; /* an unreadable time only loses the submit-time hint */
    const cJSON *gen = get(meta, "generation");
    g->generation = cJSON_IsNumber(gen) ? (int64_t)gen->valuedouble : 0;
    /* kept by scheduling.k8s.io/podgroup-protection while a live pod names it (cache.c
     * why_waiting: no pending pod of it is started) */
    g->deleting = get(meta, "deletionTimestamp") && !cJSON_IsNull(get(meta, "deletionTimestamp"));
    if (!g->key || !g->ns || !g->name || (uid && !g->uid) || (rv && !g->rv) || (q && !g->queue)) {
        kobj_pg_free(g);
        return NULL;
    }
    return g;
}

/* The name-scoped parts of a meta ("ns", "name"); false when missing. */
static bool meta_names(const cJSON *meta, const char **ns, const char **name)
{
    *ns = cJSON_GetStringValue(get(meta, "namespace"));
    *name = cJSON_GetStringValue(get(meta, "name"));
    if (!*ns || !**ns)
        *ns = "default";
    return *name && **name && !strpbrk(*name, "/:") && strlen(*name) <= KOBJ_NAME_MAX &&
           strlen(*ns) <= KOBJ_NAME_MAX && !strchr(*ns, '/');
}

/* spec.resourceClaims (KEP-5729, gate DRAWorkloadResourceClaims): at most KPG_MAX_CLAIMS
 * entries {name, resourceClaimName | resourceClaimTemplateName}, into g->claims. */
static int pg_claims(const cJSON *rcs, const char *what, struct kpg *g, struct sched_errbuf *eb)
{
    if (!cJSON_IsArray(rcs) || cJSON_GetArraySize(rcs) > KPG_MAX_CLAIMS)
        return sched_fail(eb, SCHED_EINVAL, "%s: spec.resourceClaims: not a list of at most %d",
                          what, KPG_MAX_CLAIMS);
    const cJSON *e;
    cJSON_ArrayForEach(e, rcs)
    {
        int rc = kdra_claim_entry(e, &g->claims[g->n_claims]);
        if (rc == SCHED_EINVAL)
            return sched_fail(eb, rc,
                              "%s: spec.resourceClaims[%u]: a name and exactly one of "
                              "resourceClaimName and resourceClaimTemplateName",
                              what, g->n_claims);
        if (rc)
            return rc;
        g->n_claims++;
    }
    return 0;
}

int knative_pg_decode(const cJSON *o, enum kpg_api api, struct kpg **out, struct sched_errbuf *eb)
{
    const cJSON *meta = get(o, "metadata"), *spec = get(o, "spec"), *status = get(o, "status");
    const char *ns, *name;
    if (!meta_names(meta, &ns, &name))
        return sched_fail(eb, SCHED_EINVAL, "podgroup: metadata.name: missing or not a name");
    bool cpg = api == KPG_CPG_V1ALPHA3;
    char key[KOBJ_KEY_MAX];
    if (cpg)
        (void)knative_cpg_key(ns, name, key, sizeof(key)); /* meta_names checked the parts */
    else
        snprintf(key, sizeof(key), "%s/%s", ns, name);
    struct kpg *g = new_pg(key, ns, name, meta, api);
    if (!g)
        return SCHED_ENOMEM;
    char what[KOBJ_KEY_MAX + 32];
    snprintf(what, sizeof(what), "%s %s/%s", cpg ? "compositepodgroup" : "podgroup", ns, name);
    int rc = policy(get(spec, "schedulingPolicy"), what, "spec.schedulingPolicy", g, eb);
    const cJSON *topo = get(get(spec, "schedulingConstraints"), "topology");
    if (rc == 0 && topo && !cJSON_IsNull(topo)) {
        const cJSON *k0 = get(cJSON_GetArrayItem(topo, 0), "key");
        if (!cJSON_IsArray(topo) || cJSON_GetArraySize(topo) > 1 ||
            (cJSON_GetArraySize(topo) == 1 && !cJSON_IsString(k0)))
            rc = sched_fail(eb, SCHED_EINVAL,
                            "%s: spec.schedulingConstraints.topology: at most one entry with a "
                            "key",
                            what);
        else if (k0 && !(g->topology_key = strdup(k0->valuestring)))
            rc = SCHED_ENOMEM;
    }
    const cJSON *pr = get(spec, "priority");
    if (rc == 0 && cJSON_IsNumber(pr)) {
        if (pr->valuedouble < -2147483648.0 || pr->valuedouble > 1e9)
            rc = sched_fail(eb, SCHED_EINVAL, "%s: spec.priority: out of range", what);
        g->has_priority = true;
        g->priority = (int32_t)pr->valuedouble;
    }
    const cJSON *dm = get(spec, "disruptionMode");
    if (rc == 0 && dm && !cJSON_IsNull(dm)) {
        if (cJSON_IsString(dm)) /* v1alpha2: string enum Pod | PodGroup */
            g->disrupt_all = strcmp(dm->valuestring, "PodGroup") == 0;
        else if (cJSON_IsObject(dm)) /* v1beta1: {single: {}} | {all: {}} */
            g->disrupt_all = get(dm, "all") && !cJSON_IsNull(get(dm, "all"));
        else
            rc = sched_fail(eb, SCHED_EINVAL,
                            "%s: spec.disruptionMode: not {all: {}} or "
                            "{single: {}}",
                            what);
    }
    const char *pp = cJSON_GetStringValue(get(spec, "preemptionPolicy"));
    if (rc == 0 && pp && strcmp(pp, "Never") != 0 && strcmp(pp, "PreemptLowerPriority") != 0)
        rc = sched_fail(eb, SCHED_EINVAL,
                        "%s: spec.preemptionPolicy: \"%.40s\" is not PreemptLowerPriority or Never",
                        what, pp);
    g->has_preempt_policy = pp != NULL;
    g->preempt_never = pp && strcmp(pp, "Never") == 0;
    const char *pcn = cJSON_GetStringValue(get(spec, "priorityClassName"));
    if (rc == 0 && pcn && !(g->priority_class = strdup(pcn)))
        rc = SCHED_ENOMEM;
    const cJSON *par = get(spec, "parentCompositePodGroupName");
    if (rc == 0 && par && !cJSON_IsNull(par)) {
        if (!cJSON_IsString(par) || !*par->valuestring || strpbrk(par->valuestring, "/:") ||
            strlen(par->valuestring) > KOBJ_NAME_MAX)
            rc = sched_fail(eb, SCHED_EINVAL, "%s: spec.parentCompositePodGroupName: not a name",
                            what);
        else if (!(g->parent = strdup(par->valuestring)))
            rc = SCHED_ENOMEM;
    }
    const cJSON *rcs = get(spec, "resourceClaims");
    if (rc == 0 && !cpg && rcs && !cJSON_IsNull(rcs))
        rc = pg_claims(rcs, what, g, eb);
    const char *sc = knative_sched_condition(api);
    const cJSON *c;
    cJSON_ArrayForEach(c, get(status, "conditions"))
    {
        const char *t = cJSON_GetStringValue(get(c, "type"));
        const char *s = cJSON_GetStringValue(get(c, "status"));
        if (sc && t && s && strcmp(t, sc) == 0 && strcmp(s, "True") == 0) {
            const cJSON *og = get(c, "observedGeneration");
            g->initially_scheduled = true;
            g->sched_generation = cJSON_IsNumber(og) ? (int64_t)og->valuedouble : 0;
        }
    }
    if (rc == 0)
        rc = kobj_pg_keep(g, o);
    if (rc) {
        kobj_pg_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int knative_workload_decode(const cJSON *o, struct kpg ***out, uint32_t *n, struct sched_errbuf *eb)
{
    const cJSON *meta = get(o, "metadata"), *groups = get(get(o, "spec"), "podGroups");
    const char *ns, *name;
    *out = NULL;
    *n = 0;
    if (!meta_names(meta, &ns, &name))
        return sched_fail(eb, SCHED_EINVAL, "workload: metadata.name: missing or not a name");
    int count = cJSON_GetArraySize(groups);
    if (!cJSON_IsArray(groups) || count < 1 || count > 8)
        return sched_fail(eb, SCHED_EINVAL, "workload %s/%s: spec.podGroups: 1 to 8 entries", ns,
                          name);
    struct kpg **v = calloc((size_t)count, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        const cJSON *pg = cJSON_GetArrayItem(groups, i), *pn = get(pg, "name");
        char key[3 * KOBJ_NAME_MAX + 8], what[sizeof(key) + 40];
        if (!key_part(pn)) {
            rc = sched_fail(eb, SCHED_EINVAL,
                            "workload %s/%s: spec.podGroups[%d].name: missing "
                            "or not a name",
                            ns, name, i);
            break;
        }
        snprintf(key, sizeof(key), "%s/%s:%s", ns, name, pn->valuestring);
        if (!(v[i] = new_pg(key, ns, name, meta, KPG_WORKLOAD_V1ALPHA1))) {
            rc = SCHED_ENOMEM;
            break;
        }
        snprintf(what, sizeof(what), "spec.podGroups[%d].policy", i);
        char who[KOBJ_KEY_MAX + 16];
        snprintf(who, sizeof(who), "workload %s/%s", ns, name);
        rc = policy(get(pg, "policy"), who, what, v[i], eb);
        if (rc == 0)
            rc = kobj_pg_keep(v[i], o);
    }
    if (rc) {
        for (int i = 0; i < count; i++)
            kobj_pg_free(v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *n = (uint32_t)count;
    return 0;
}

static void rfc3339(int64_t ms, char *buf, size_t n)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

cJSON *knative_condition_patch(const struct kpg *pg, const char *ctype, bool ok, const char *reason,
                               const char *message, int64_t now_ms)
{
    if (!pg || !knative_sched_condition(pg->api))
        return NULL;
    const char *want = ok ? "True" : "False";
    const char *ltt = NULL;
    for (uint32_t i = 0; i < pg->n_conds; i++) {
        const char *t = pg->conds[i].type, *s = pg->conds[i].status;
        if (!t || !s || strcmp(t, ctype) != 0)
            continue;
        if (strcmp(ctype, knative_sched_condition(pg->api)) == 0 && strcmp(s, "True") == 0)
            return NULL; /* terminal once True, never overwritten */
        if (strcmp(s, want) == 0)
            ltt = pg->conds[i].last_transition;
    }
    char t[40];
    if (!ltt) {
        rfc3339(now_ms, t, sizeof(t));
        ltt = t;
    }
    cJSON *body = cJSON_CreateObject();
    cJSON *cond = cJSON_CreateObject();
    cJSON_AddStringToObject(cond, "type", ctype);
    cJSON_AddStringToObject(cond, "status", want);
    cJSON_AddNumberToObject(cond, "observedGeneration", (double)pg->generation);
    cJSON_AddStringToObject(cond, "lastTransitionTime", ltt);
    cJSON_AddStringToObject(cond, "reason", reason);
    cJSON_AddStringToObject(cond, "message", message ? message : "");
    cJSON_AddItemToArray(
        cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "conditions"), cond);
    return body;
}

bool knative_min_raised(const struct kpg *pg)
{
    return pg && pg->initially_scheduled &&
           (pg->sched_generation <= 0 || pg->generation > pg->sched_generation);
}

const char *knative_reason(const char *why)
{
    return why && (strcmp(why, "InvalidSpec") == 0 || strcmp(why, "SchedulerError") == 0)
               ? "SchedulerError"
               : "Unschedulable";
}

/* A 1.35 Workload: its pod groups replace the ones it had ("ns/workload:*" keys). */
int knative_workload_event(struct strmap *pgs, const cJSON *obj, bool deleted)
{
    const char *ns = kobj_str(obj, "metadata.namespace"), *name = kobj_str(obj, "metadata.name");
    if (!name || strlen(name) > KOBJ_NAME_MAX || (ns && strlen(ns) > KOBJ_NAME_MAX)) {
        LOG_WARN("kube", "workload without a valid metadata.name skipped");
        return 0;
    }
    char prefix[2 * KOBJ_NAME_MAX + 4];
    snprintf(prefix, sizeof(prefix), "%s/%s:", ns && *ns ? ns : "default", name);
    struct kpg **v = NULL;
    uint32_t n = 0;
    if (!deleted) {
        struct sched_errbuf eb;
        int rc = knative_workload_decode(obj, &v, &n, &eb);
        if (rc == SCHED_ENOMEM)
            return rc;
        if (rc) /* the old pod groups stay: pods keep waiting on what was last valid */
            LOG_WARN("kube", "workload skipped: error=%s", eb.msg);
        if (rc)
            return 0;
    }
    /* at most 8 pod groups per Workload: one scan per deletion */
    size_t plen = strlen(prefix);
    for (bool more = true; more;) {
        more = false;
        const char *k;
        void *val;
        for (size_t i = 0; strmap_next(pgs, &i, &k, &val);)
            if (strncmp(k, prefix, plen) == 0) {
                char *dup = strdup(k);
                if (!dup) {
                    for (uint32_t j = 0; j < n; j++)
                        kobj_pg_free(v[j]);
                    free(v);
                    return SCHED_ENOMEM;
                }
                kobj_pg_free(strmap_del(pgs, dup));
                free(dup);
                more = true;
                break;
            }
    }
    int rc = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (rc == 0 && strmap_put(pgs, v[j]->key, v[j], NULL) == 0)
            continue;
        rc = SCHED_ENOMEM;
        kobj_pg_free(v[j]);
    }
    free(v);
    return rc;
}
