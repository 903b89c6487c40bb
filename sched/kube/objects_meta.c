/* sched/kube/objects_meta.c: what inter-pod constraints read of a Pod (objects.h kpod.meta,
 * core/model.h struct pod_meta): its namespace and labels, its required and preferred pod
 * affinity and anti-affinity terms, its topology spreads, its host ports.
 *
 * The wire format is core/v1 (k8s.io/api/core/v1 types.go): spec.affinity.podAffinity and
 * podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution are lists of PodAffinityTerm
 * {labelSelector, namespaces, namespaceSelector, topologyKey, matchLabelKeys,
 * mismatchLabelKeys}, preferredDuringSchedulingIgnoredDuringExecution lists of
 * WeightedPodAffinityTerm {weight (1-100), podAffinityTerm}; a null labelSelector selects no pod;
 * namespaceSelector {} selects every namespace; matchLabelKeys (mismatchLabelKeys) add "key in
 * (value)" ("key notin (value)") with the pod's own value, a key the pod lacks ignored (KEP-3633;
 * kube-apiserver merges them at creation, so a second merge here adds the same requirement again,
 * which changes nothing). Host ports: spec.containers[].ports[].hostPort with its protocol (TCP by
 * default), init containers' included, as kube-scheduler's NodePorts plugin reads them. Topology
 * spreads: spec.topologySpreadConstraints[] with whenUnsatisfiable DoNotSchedule or ScheduleAnyway
 * (kept apart: a requirement, a preference) {maxSkew, topologyKey,
 * labelSelector (null: no pod), matchLabelKeys, minDomains, nodeAffinityPolicy (Honor by
 * default), nodeTaintsPolicy (Ignore by default)}, counted in the pod's own namespace.
 *
 * A namespaceSelector with requirements selects the namespaces whose labels meet them: the
 * cache points each pod's meta at its namespace's labels (pod_meta.ns_labels, cache.c).
 *
 * Also the digest of a pod's whole object (kobj_pod_digest) and the comparison of two decoded
 * PodGroups (kobj_pg_same), which tell the cache whether a watch event changed anything a cycle
 * reads.
 *
 * Must not touch: the cache, the network.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/hash.h"
#include "sched/core/podaff.h"
#include "sched/kube/objects.h"

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* A selector's matchLabels (not a map: none) appended at r[*k] on as "key in (value)"; a value
 * that is not a string is refused naming where.matchLabels.<key>. */
static int match_labels(const cJSON *ml, const char *where, struct arena *a, struct sel_req *r,
                        uint32_t *k, struct sched_errbuf *eb)
{
    const cJSON *it;
    if (!cJSON_IsObject(ml))
        return 0;
    cJSON_ArrayForEach(it, ml)
    {
        if (!cJSON_IsString(it) || !it->string)
            return sched_fail(eb, SCHED_EINVAL, "%s.matchLabels.%s: not a string", where,
                              it->string ? it->string : "?");
        const char **v = arena_calloc(a, 1, sizeof(*v));
        const char *lk = arena_strdup(a, it->string);
        if (!v || !lk || !(v[0] = arena_strdup(a, it->valuestring)))
            return SCHED_ENOMEM;
        r[(*k)++] = (struct sel_req){.key = lk, .op = SEL_IN, .values = v, .n_values = 1};
    }
    return 0;
}

/* A namespaceSelector's requirements (matchLabels first, then matchExpressions) into t->ns_reqs;
 * {} selects every namespace (t->all_namespaces), null none beyond those listed. */
static int ns_selector(const cJSON *term, const char *where, struct arena *a, struct pod_term *t,
                       struct sched_errbuf *eb)
{
    const cJSON *sel = get(term, "namespaceSelector");
    if (!cJSON_IsObject(sel))
        return 0;
    const cJSON *ml = get(sel, "matchLabels"), *me = get(sel, "matchExpressions");
    int n = cJSON_GetArraySize(ml) + cJSON_GetArraySize(me);
    if (n == 0) {
        t->all_namespaces = true;
        return 0;
    }
    struct sel_req *r = arena_calloc(a, (size_t)n, sizeof(*r));
    if (!r)
        return SCHED_ENOMEM;
    char at[KOBJ_KEY_MAX + 256];
    snprintf(at, sizeof(at), "%s.namespaceSelector", where);
    uint32_t k = 0;
    int rc = match_labels(ml, at, a, r, &k, eb);
    snprintf(at, sizeof(at), "%s.namespaceSelector.matchExpressions", where);
    if (rc == 0)
        rc = kobj_sel_exprs(cJSON_IsArray(me) ? me : NULL, 4, at, a, r, &k, eb);
    t->ns_reqs = r;
    t->n_ns_reqs = k;
    return rc;
}

/* Requirements of a labelSelector (matchLabels first, then matchExpressions), then the pod's
 * own values of matchLabelKeys and mismatchLabelKeys. */
static int selector(const cJSON *term, const struct pod_meta *m, const char *where, struct arena *a,
                    struct pod_term *t, struct sched_errbuf *eb)
{
    const cJSON *sel = get(term, "labelSelector");
    t->none = !cJSON_IsObject(sel);
    const cJSON *ml = get(sel, "matchLabels"), *me = get(sel, "matchExpressions");
    const cJSON *mk = get(term, "matchLabelKeys"), *mm = get(term, "mismatchLabelKeys");
    int n = cJSON_GetArraySize(ml) + cJSON_GetArraySize(me) + cJSON_GetArraySize(mk) +
            cJSON_GetArraySize(mm);
    struct sel_req *r = arena_calloc(a, (size_t)(n > 0 ? n : 1), sizeof(*r));
    if (!r)
        return SCHED_ENOMEM;
    uint32_t k = 0;
    const cJSON *it, *le = cJSON_IsArray(me) ? me : NULL;
    char at[KOBJ_KEY_MAX + 256];
    snprintf(at, sizeof(at), "%s.labelSelector", where);
    int rc = match_labels(ml, at, a, r, &k, eb);
    snprintf(at, sizeof(at), "%s.labelSelector.matchExpressions", where);
    if (rc == 0)
        rc = kobj_sel_exprs(le, 4, at, a, r, &k, eb);
    if (rc)
        return rc;
    for (int mis = 0; mis < 2 && !t->none; mis++) { /* no selector: keys refused upstream */
        const cJSON *keys = mis ? mm : mk;
        if (!cJSON_IsArray(keys))
            continue;
        cJSON_ArrayForEach(it, keys)
        {
            const char *own = cJSON_IsString(it) ? podaff_label(m, it->valuestring) : NULL;
            if (!own)
                continue; /* a key the pod does not have is ignored */
            const char **v = arena_calloc(a, 1, sizeof(*v));
            if (!v || !(v[0] = arena_strdup(a, own)) ||
                !(r[k].key = arena_strdup(a, it->valuestring)))
                return SCHED_ENOMEM;
            r[k].op = mis ? SEL_NOT_IN : SEL_IN;
            r[k].values = v;
            r[k++].n_values = 1;
        }
    }
    t->reqs = r;
    t->n_reqs = k;
    return 0;
}

/* One PodAffinityTerm at `where` into *t. */
static int term(const cJSON *term, const struct pod_meta *m, const char *where, struct arena *a,
                struct pod_term *t, struct sched_errbuf *eb)
{
    const cJSON *tk = get(term, "topologyKey");
    if (!cJSON_IsString(tk) || !tk->valuestring[0])
        return sched_fail(eb, SCHED_EINVAL, "%s.topologyKey: required", where);
    int rc = selector(term, m, where, a, t, eb);
    if (rc)
        return rc;
    rc = kobj_strings(get(term, "namespaces"), a, &t->namespaces, &t->n_namespaces);
    if (rc == SCHED_EINVAL)
        return sched_fail(eb, rc, "%s.namespaces: not a list of strings", where);
    if (rc || (rc = ns_selector(term, where, a, t, eb)) != 0)
        return rc;
    return (t->topology_key = arena_strdup(a, tk->valuestring)) ? 0 : SCHED_ENOMEM;
}

/* The terms of spec.affinity.<kind>.<when>DuringSchedulingIgnoredDuringExecution into *out:
 * PodAffinityTerms (required), or WeightedPodAffinityTerms {weight 1..100, podAffinityTerm}
 * (preferred). */
static int terms(const cJSON *spec, const char *kind, bool preferred, const struct pod_meta *m,
                 const char *key, struct arena *a, const struct pod_term **out, uint32_t *n_out,
                 struct sched_errbuf *eb)
{
    const char *when = preferred ? "preferredDuringSchedulingIgnoredDuringExecution"
                                 : "requiredDuringSchedulingIgnoredDuringExecution";
    const cJSON *list = get(get(get(spec, "affinity"), kind), when);
    *out = NULL;
    *n_out = 0;
    if (list && !cJSON_IsArray(list))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.affinity.%s.%s: not a list", key, kind,
                          when);
    int n = cJSON_GetArraySize(list);
    if (n <= 0)
        return 0;
    struct pod_term *t = arena_calloc(a, (size_t)n, sizeof(*t));
    if (!t)
        return SCHED_ENOMEM;
    uint32_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        char where[KOBJ_KEY_MAX + 128];
        int len =
            snprintf(where, sizeof(where), "pod %s: spec.affinity.%s.%s[%u]", key, kind, when, k);
        const cJSON *w = get(it, "weight");
        if (preferred && (!cJSON_IsNumber(w) || w->valuedouble < 1 || w->valuedouble > 100 ||
                          w->valuedouble != (double)(int)w->valuedouble))
            return sched_fail(eb, SCHED_EINVAL, "%s.weight: an integer from 1 to 100", where);
        if (preferred && len > 0 && (size_t)len < sizeof(where))
            snprintf(where + len, sizeof(where) - (size_t)len, ".podAffinityTerm");
        int rc = term(preferred ? get(it, "podAffinityTerm") : it, m, where, a, &t[k], eb);
        if (rc)
            return rc;
        t[k++].weight = preferred ? (int32_t)w->valuedouble : 0;
    }
    *out = t;
    *n_out = k;
    return 0;
}

/* Host ports of every container and init container, protocol << 16 | port, sorted, unique. */
static int ports(const cJSON *spec, struct arena *a, struct pod_meta *m)
{
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const protos[] = {"TCP", "UDP", "SCTP"};
    uint32_t n = 0, cap = 0, *v = NULL;
    for (int l = 0; l < 2; l++) {
        const cJSON *c, *cs = get(spec, lists[l]);
        if (!cJSON_IsArray(cs))
            continue;
        cJSON_ArrayForEach(c, cs)
        {
            const cJSON *p, *ps = get(c, "ports");
            if (!cJSON_IsArray(ps))
                continue;
            cJSON_ArrayForEach(p, ps)
            {
                const cJSON *hp = get(p, "hostPort"), *pr = get(p, "protocol");
                if (!cJSON_IsNumber(hp) || hp->valuedouble < 1 || hp->valuedouble > 65535)
                    continue; /* 0 or absent: no host port */
                uint32_t proto = 0;
                for (uint32_t x = 0; cJSON_IsString(pr) && x < 3; x++)
                    if (strcmp(pr->valuestring, protos[x]) == 0)
                        proto = x;
                if (n == cap) {
                    uint32_t *w = arena_alloc(a, (cap = cap ? 2 * cap : 8) * sizeof(*w));
                    if (!w)
                        return SCHED_ENOMEM;
                    if (n)
                        memcpy(w, v, n * sizeof(*w));
                    v = w;
                }
                v[n++] = (proto + 6) << 16 | (uint32_t)hp->valuedouble;
            }
        }
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_u32);
    uint32_t w = 0;
    for (uint32_t k = 0; k < n; k++)
        if (w == 0 || v[w - 1] != v[k])
            v[w++] = v[k];
    m->ports = v;
    m->n_ports = w;
    return 0;
}

/* spec.topologySpreadConstraints: DoNotSchedule ones into m->spread, ScheduleAnyway ones into
 * m->soft_spread (another value: skipped, as by kube-scheduler). */
static int spreads(const cJSON *spec, struct pod_meta *m, const char *key, struct arena *a,
                   struct sched_errbuf *eb)
{
    const cJSON *list = get(spec, "topologySpreadConstraints"), *c;
    if (list && !cJSON_IsArray(list))
        return sched_fail(eb, SCHED_EINVAL, "pod %s: spec.topologySpreadConstraints: not a list",
                          key);
    int n = cJSON_GetArraySize(list);
    if (n <= 0)
        return 0;
    struct pod_spread *hard = arena_calloc(a, (size_t)n, sizeof(*hard));
    struct pod_spread *soft = arena_calloc(a, (size_t)n, sizeof(*soft));
    if (!hard || !soft)
        return SCHED_ENOMEM;
    uint32_t i = 0;
    cJSON_ArrayForEach(c, list)
    {
        char where[KOBJ_KEY_MAX + 64];
        snprintf(where, sizeof(where), "pod %s: spec.topologySpreadConstraints[%u]", key, i++);
        const cJSON *w = get(c, "whenUnsatisfiable"), *tk = get(c, "topologyKey");
        const cJSON *skew = get(c, "maxSkew"), *md = get(c, "minDomains");
        bool is_soft = cJSON_IsString(w) && strcmp(w->valuestring, "ScheduleAnyway") == 0;
        if (!is_soft && (!cJSON_IsString(w) || strcmp(w->valuestring, "DoNotSchedule") != 0))
            continue;
        struct pod_spread *v = is_soft ? soft : hard;
        uint32_t k = is_soft ? m->n_soft_spread++ : m->n_spread++;
        if (!cJSON_IsString(tk) || !tk->valuestring[0])
            return sched_fail(eb, SCHED_EINVAL, "%s.topologyKey: required", where);
        if (!cJSON_IsNumber(skew) || skew->valuedouble < 1 || skew->valuedouble > INT32_MAX)
            return sched_fail(eb, SCHED_EINVAL, "%s.maxSkew: an integer of at least 1", where);
        if (md && !cJSON_IsNull(md) &&
            (!cJSON_IsNumber(md) || md->valuedouble < 1 || md->valuedouble > INT32_MAX))
            return sched_fail(eb, SCHED_EINVAL, "%s.minDomains: an integer of at least 1", where);
        int rc = selector(c, m, where, a, &v[k].sel, eb);
        if (rc)
            return rc;
        if (!(v[k].sel.topology_key = arena_strdup(a, tk->valuestring)))
            return SCHED_ENOMEM;
        v[k].max_skew = (int32_t)skew->valuedouble;
        v[k].min_domains = cJSON_IsNumber(md) ? (int32_t)md->valuedouble : 0;
        const char *nap = kobj_str(c, "nodeAffinityPolicy"), *ntp = kobj_str(c, "nodeTaintsPolicy");
        v[k].affinity_ignore = nap && strcmp(nap, "Ignore") == 0; /* default Honor */
        v[k].taints_honor = ntp && strcmp(ntp, "Honor") == 0;     /* default Ignore */
        if (is_soft)
            v[k].min_domains = 0; /* kube-apiserver allows it with DoNotSchedule only */
    }
    m->spread = m->n_spread ? hard : NULL;
    m->soft_spread = m->n_soft_spread ? soft : NULL;
    return 0;
}

int kobj_pod_meta(const cJSON *o, struct kpod *p, struct sched_errbuf *eb)
{
    struct arena *a = &p->meta_mem;
    arena_init(a, 256); /* a pod's labels and rules: most fit one chunk, allocated at first use */
    struct pod_meta *m = p->meta = &p->meta_own;
    memset(m, 0, sizeof(*m));
    m->ns = p->ns; /* in the pod's key block, freed with it */
    const cJSON *spec = get(o, "spec");
    int rc =
        kobj_kv_copy(get(get(o, "metadata"), "labels"), NULL, a, &m->labels, &m->n_labels, NULL);
    if (rc == 0)
        rc = terms(spec, "podAffinity", false, m, p->key, a, &m->affinity, &m->n_affinity, eb);
    if (rc == 0)
        rc = terms(spec, "podAntiAffinity", false, m, p->key, a, &m->anti, &m->n_anti, eb);
    if (rc == 0)
        rc = terms(spec, "podAffinity", true, m, p->key, a, &m->pref_affinity, &m->n_pref_affinity,
                   eb);
    if (rc == 0)
        rc = terms(spec, "podAntiAffinity", true, m, p->key, a, &m->pref_anti, &m->n_pref_anti, eb);
    if (rc == 0)
        rc = ports(spec, a, m);
    if (rc == 0)
        rc = spreads(spec, m, p->key, a, eb);
    return rc;
}

/* ---- quantities --------------------------------------------------------------------------- */

int kobj_quantity(const cJSON *v, int id, int64_t *out, struct sched_errbuf *eb)
{
    char num[64];
    const char *q = cJSON_GetStringValue(v);
    if (cJSON_IsNumber(v)) {
        snprintf(num, sizeof(num), "%.17g", v->valuedouble);
        q = num;
    }
    if (!q)
        return sched_fail(eb, SCHED_EINVAL, "not a quantity");
    return res_parse(id, q, out, eb);
}

/* ---- what changed: the digest of a pod's object ------------------------------------------- */

enum digest_at { AT_ROOT, AT_METADATA, AT_STATUS, AT_CONDITIONS, AT_OTHER };

/* Is this member of the object one the digest leaves out? metadata.resourceVersion and
 * managedFields (every write changes them) and the PodScheduled condition (what this scheduler
 * writes on a pod that waits: kdrv_pods_unschedulable). */
static bool digest_skips(enum digest_at at, const cJSON *j)
{
    if (at == AT_METADATA)
        return j->string && (strcmp(j->string, "resourceVersion") == 0 ||
                             strcmp(j->string, "managedFields") == 0);
    if (at == AT_CONDITIONS) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
        return cJSON_IsString(t) && strcmp(t->valuestring, "PodScheduled") == 0;
    }
    return false;
}

/* h folded with j's members that count; *counted says how many did. A member whose own members
 * were all left out is left out too, its name included: the first PodScheduled condition
 * written on a pod that had none adds status.conditions (and perhaps status) and nothing else
 * the digest reads. */
static uint64_t digest_fold(uint64_t h, const cJSON *j, enum digest_at at, uint32_t *counted)
{
    *counted = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        if (digest_skips(at, c))
            continue;
        uint64_t g = sched_hash_str(h, c->string);
        int type = c->type & 0xFF;
        g = sched_hash(g, &type, sizeof(type));
        if (cJSON_IsString(c))
            g = sched_hash_str(g, c->valuestring);
        else if (cJSON_IsNumber(c))
            g = sched_hash(g, &c->valuedouble, sizeof(c->valuedouble));
        else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            enum digest_at next = AT_OTHER;
            if (at == AT_ROOT && c->string)
                next = strcmp(c->string, "metadata") == 0 ? AT_METADATA
                       : strcmp(c->string, "status") == 0 ? AT_STATUS
                                                          : AT_OTHER;
            else if (at == AT_STATUS && c->string && strcmp(c->string, "conditions") == 0)
                next = AT_CONDITIONS;
            uint32_t inner;
            g = sched_hash(digest_fold(sched_hash(g, "{", 1), c, next, &inner), "}", 1);
            if (inner == 0 && c->child)
                continue; /* every member left out */
        }
        h = g;
        (*counted)++;
    }
    return h;
}

uint64_t kobj_pod_digest(const cJSON *o)
{
    uint32_t counted;
    return cJSON_IsObject(o) ? digest_fold(SCHED_HASH_INIT, o, AT_ROOT, &counted) : 0;
}

bool kobj_pg_same(const struct kpg *a, const struct kpg *b)
{
    if (a->api != b->api || a->min_member != b->min_member || a->queue_kueue != b->queue_kueue ||
        a->created_ms != b->created_ms || a->deleting != b->deleting ||
        a->has_nt_tier != b->has_nt_tier || a->nt_tier != b->nt_tier || a->basic != b->basic ||
        a->disrupt_all != b->disrupt_all || a->has_priority != b->has_priority ||
        a->priority != b->priority || a->initially_scheduled != b->initially_scheduled ||
        a->min_groups != b->min_groups || !kobj_same_str(a->parent, b->parent) ||
        a->preempt_never != b->preempt_never || a->has_preempt_policy != b->has_preempt_policy ||
        a->n_ann != b->n_ann || !kobj_same_str(a->uid, b->uid) ||
        !kobj_same_str(a->queue, b->queue) ||
        !kobj_same_str(a->priority_class, b->priority_class) ||
        !kobj_same_str(a->nt_mode, b->nt_mode) ||
        !kobj_same_str(a->topology_key, b->topology_key) || a->n_claims != b->n_claims)
        return false;
    for (uint32_t k = 0; k < a->n_claims; k++)
        if (!kobj_same_str(a->claims[k], b->claims[k]))
            return false;
    for (uint32_t k = 0; k < a->n_ann; k++)
        if (!kobj_same_str(a->ann[k].key, b->ann[k].key) ||
            !kobj_same_str(a->ann[k].value, b->ann[k].value))
            return false;
    return true;
}
