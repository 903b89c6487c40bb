/* sched/kube/dra.c: ResourceClaims and a pod's claims (see dra.h). */
#include "sched/kube/dra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/device.h"
#include "sched/core/quantity.h"
#include "sched/kube/computedomain.h"

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* ---- ResourceClaims ------------------------------------------------------------------------ */

void kdra_claim_free(struct kclaim *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_reqs; i++) {
        free(c->reqs[i].name);
        for (uint32_t k = 0; k < c->reqs[i].n_alts; k++) {
            struct kclaim_alt *x = &c->reqs[i].alts[k];
            for (uint32_t j = 0; j < x->n_sel; j++)
                cel_free(x->sel[j]);
            free(x->sel);
            free(x->src);
            free(x->name);
            free(x->cls);
        }
        free(c->reqs[i].alts);
    }
    for (uint32_t i = 0; i < c->n_reserved; i++)
        free(c->reserved[i]);
    for (uint32_t i = 0; i < c->n_alloc; i++) {
        free(c->alloc[i].pool);
        free(c->alloc[i].device);
    }
    free(c->alloc);
    free(c->alloc_node);
    free(c->ext_owner);
    free(c->ext_pod);
    for (uint32_t i = 0; i < c->n_cons; i++)
        free(c->cons[i].attr);
    free(c->cons);
    free(c->reqs);
    free(c->reserved);
    free(c->key);
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->unsupported);
    free(c->domain);
    free(c->rv);
    cJSON_Delete(c->config);
    free(c);
}

/* Sets c->unsupported (first reason wins); false out of memory. */
static bool refuse(struct kclaim *c, const char *field, const char *why)
{
    if (c->unsupported)
        return true;
    size_t n = strlen(c->key) + strlen(field) + strlen(why) + 32;
    c->unsupported = malloc(n);
    if (!c->unsupported)
        return false;
    snprintf(c->unsupported, n, "resourceclaim %s: %s: %s", c->key, field, why);
    return true;
}

/* CEL selectors sels (a claim request's exactly.selectors, a DeviceClass's spec.selectors)
 * compiled into *out, *n of them; a selector that is not CEL or is outside the subset leaves
 * its field (field + "[k].cel.expression") in bad_field and why in bad (empty: none). 0 or
 * SCHED_ENOMEM. */
/* The selectors as one string, each expression as "<length>:<expression>" ("" none): with the
 * class, an alternative's identity for caches keyed by what it asks (struct kclaim_alt.src).
 * NULL out of memory. */
static char *sels_src(const cJSON *sels)
{
    size_t len = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, sels)
    {
        const char *x = cJSON_GetStringValue(get(get(e, "cel"), "expression"));
        len += x ? strlen(x) + 24 : 0;
    }
    char *out = malloc(len), *at = out;
    if (!out)
        return NULL;
    *out = '\0';
    cJSON_ArrayForEach(e, sels)
    {
        const char *x = cJSON_GetStringValue(get(get(e, "cel"), "expression"));
        if (x)
            at += snprintf(at, len - (size_t)(at - out), "%zu:%s", strlen(x), x);
    }
    return out;
}

static int compile_sels(const cJSON *sels, const char *field, struct cel_prog ***out, uint32_t *n,
                        char **src, char *bad_field, size_t fcap, char *bad, size_t cap)
{
    int ns = cJSON_GetArraySize(sels);
    *bad = '\0';
    if (ns > 0 && !(*out = calloc((size_t)ns, sizeof(**out))))
        return SCHED_ENOMEM;
    if (src && !(*src = sels_src(sels)))
        return SCHED_ENOMEM;
    for (int k = 0; k < ns && !*bad; k++) {
        const char *x =
            cJSON_GetStringValue(get(get(cJSON_GetArrayItem(sels, k), "cel"), "expression"));
        snprintf(bad_field, fcap, "%s[%d].cel.expression", field, k);
        struct sched_errbuf ce;
        if (!x)
            snprintf(bad, cap, "missing (only CEL selectors exist)");
        else if (cel_compile(x, &(*out)[*n], &ce) != 0)
            snprintf(bad, cap, "%.280s", ce.msg);
        else
            (*n)++;
    }
    return 0;
}

/* A request's firstAvailable[] (DRAPrioritizedList): at most 8 subrequests, each a name, a
 * DeviceClass of the accelerator's whole devices, ExactCount of one count for all (placement
 * counts a claim's GPUs before it knows the node), selectors in the CEL subset; into q->alts.
 * Anything else refuses the claim naming the field (*ok false). 0 or SCHED_ENOMEM. */
static int decode_subs(struct kclaim *c, struct kclaim_req *q, const cJSON *fa, const char *field,
                       const char *gpu_class, bool *ok)
{
    int n = cJSON_GetArraySize(fa);
    char f[160];
    snprintf(f, sizeof(f), "%s.firstAvailable", field);
    if (!cJSON_IsArray(fa) || n < 1 || n > 8) {
        *ok = refuse(c, f, "1 to 8 subrequests");
        return 0;
    }
    if (!(q->alts = calloc((size_t)n, sizeof(*q->alts))))
        return SCHED_ENOMEM;
    q->first_available = true;
    for (int i = 0; i < n && *ok; i++) {
        const cJSON *x = cJSON_GetArrayItem(fa, i), *cnt = get(x, "count");
        const char *sn = cJSON_GetStringValue(get(x, "name"));
        const char *cls = cJSON_GetStringValue(get(x, "deviceClassName"));
        const char *mode = cJSON_GetStringValue(get(x, "allocationMode"));
        snprintf(f, sizeof(f), "%s.firstAvailable[%d]", field, i);
        uint32_t k = cnt && cJSON_IsNumber(cnt) ? (uint32_t)cnt->valuedouble : 1;
        if (!sn || !*sn || strchr(sn, '/'))
            *ok = refuse(c, f, "name missing or not a DNS label");
        else if (!cls || !*cls || kcd_class(cls))
            *ok = refuse(c, f, "deviceClassName: missing, or a ComputeDomain class");
        else if (!gpu_class)
            *ok = refuse(c, f, "the accelerator has no DeviceClass (the config's device.dra)");
        else if (mode && strcmp(mode, "ExactCount") != 0)
            *ok = refuse(c, f, "allocationMode: only ExactCount is allocated by gangsched");
        else if (cnt && (!cJSON_IsNumber(cnt) || cnt->valuedouble < 1 || cnt->valuedouble > 32))
            *ok = refuse(c, f, "count: not an integer in 1..32");
        else if (i > 0 && k != q->count) {
            char why[160];
            snprintf(why, sizeof(why),
                     "count: %u where the first subrequest asks %u (gangsched allocates "
                     "alternatives of one count)",
                     k, q->count);
            *ok = refuse(c, f, why);
        }
        if (!*ok)
            break;
        struct kclaim_alt *sub = &q->alts[q->n_alts++];
        q->count = k;
        if (!(sub->name = strdup(sn)) || (strcmp(cls, gpu_class) != 0 && !(sub->cls = strdup(cls))))
            return SCHED_ENOMEM;
        char sf[200], bad[300], sp[200];
        snprintf(sp, sizeof(sp), "%s.selectors", f);
        if (compile_sels(get(x, "selectors"), sp, &sub->sel, &sub->n_sel, &sub->src, sf, sizeof(sf),
                         bad, sizeof(bad)) != 0)
            return SCHED_ENOMEM;
        if (*bad)
            *ok = refuse(c, sf, bad);
    }
    c->gpus += *ok ? q->count : 0;
    return 0;
}

static int decode_requests(struct kclaim *c, const cJSON *devices, const char *gpu_class)
{
    const cJSON *reqs = get(devices, "requests");
    int n = cJSON_GetArraySize(reqs);
    c->reqs = calloc((size_t)(n > 0 ? n : 1), sizeof(*c->reqs));
    if (!c->reqs)
        return SCHED_ENOMEM;
    char field[96];
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const cJSON *r = cJSON_GetArrayItem(reqs, i), *ex = get(r, "exactly");
        const char *rn = cJSON_GetStringValue(get(r, "name"));
        snprintf(field, sizeof(field), "spec.devices.requests[%d]", i);
        if (!rn || !*rn) {
            ok = refuse(c, field, "name missing");
            continue;
        }
        struct kclaim_req *q = &c->reqs[c->n_reqs++];
        if (!(q->name = strdup(rn)))
            return SCHED_ENOMEM;
        if (!get(r, "firstAvailable") && !(q->alts = calloc(1, sizeof(*q->alts))))
            return SCHED_ENOMEM;
        q->n_alts = q->alts ? 1 : 0; /* exactly: one alternative */
        if (get(r, "firstAvailable") && ex) {
            ok = refuse(c, field, "exactly one of `exactly` and `firstAvailable`");
            continue;
        }
        if (get(r, "firstAvailable")) {
            int rc = decode_subs(c, q, get(r, "firstAvailable"), field, gpu_class, &ok);
            if (rc)
                return rc;
            continue;
        }
        if (!ex) {
            ok = refuse(c, field, "exactly one of `exactly` and `firstAvailable`");
            continue;
        }
        const char *cls = cJSON_GetStringValue(get(ex, "deviceClassName"));
        const char *mode = cJSON_GetStringValue(get(ex, "allocationMode"));
        const cJSON *cnt = get(ex, "count");
        int cdk = kcd_class(cls); /* a ComputeDomain class (sched/kube/computedomain.h) */
        if (cdk == 1 && (!mode || strcmp(mode, "ExactCount") == 0) &&
            (!cnt || (cJSON_IsNumber(cnt) && cnt->valuedouble == 1)) && !get(ex, "selectors") &&
            !cJSON_IsTrue(get(ex, "adminAccess"))) {
            q->channel = true;
            q->count = 1;
            c->channels++;
            continue;
        }
        if (cdk)
            ok = refuse(c, field,
                        cdk == 1 ? "exactly: a ComputeDomain channel is allocated as one device "
                                   "(ExactCount, count 1, no selectors, no adminAccess)"
                                 : "exactly.deviceClassName: the ComputeDomain daemon class is "
                                   "claimed by the driver's own DaemonSet pods, not workloads");
        else if (!gpu_class)
            ok = refuse(c, field,
                        "exactly.deviceClassName: the accelerator has no DeviceClass "
                        "(the config's device.dra)");
        else if (!cls || !*cls)
            ok = refuse(c, field, "exactly.deviceClassName: missing");
        else if (strcmp(cls, gpu_class) != 0 && !(q->alts[0].cls = strdup(cls)))
            return SCHED_ENOMEM; /* its class's selectors apply (kdra_class) */
        else if (mode && strcmp(mode, "ExactCount") != 0 && strcmp(mode, "All") != 0)
            ok = refuse(c, field, "exactly.allocationMode: not ExactCount or All");
        else if (mode && strcmp(mode, "All") == 0 && cJSON_GetArraySize(reqs) != 1)
            ok = refuse(c, field,
                        "exactly.allocationMode: All is allocated only as a claim's "
                        "one request");
        else if (cJSON_IsTrue(get(ex, "adminAccess")))
            ok = refuse(c, field, "exactly.adminAccess: not allocated by gangsched");
        else if (cnt && (!cJSON_IsNumber(cnt) || cnt->valuedouble < 1 || cnt->valuedouble > 32))
            ok = refuse(c, field, "exactly.count: not an integer in 1..32");
        q->all = mode && strcmp(mode, "All") == 0;
        q->count = q->all ? 0 : cnt ? (uint32_t)cnt->valuedouble : 1;
        c->all |= q->all;
        char sf[160], bad[300], sp[120];
        snprintf(sp, sizeof(sp), "%s.exactly.selectors", field);
        if (ok && compile_sels(get(ex, "selectors"), sp, &q->alts[0].sel, &q->alts[0].n_sel,
                               &q->alts[0].src, sf, sizeof(sf), bad, sizeof(bad)) != 0)
            return SCHED_ENOMEM;
        if (ok && *bad)
            ok = refuse(c, sf, bad);
        c->gpus += q->count;
    }
    const cJSON *cons = get(devices, "constraints");
    int nc = cJSON_GetArraySize(cons);
    if (nc > 0 && !(c->cons = calloc((size_t)nc, sizeof(*c->cons))))
        return SCHED_ENOMEM;
    for (int i = 0; i < nc && ok; i++) {
        const cJSON *x = cJSON_GetArrayItem(cons, i);
        const char *m = cJSON_GetStringValue(get(x, "matchAttribute"));
        const char *d = cJSON_GetStringValue(get(x, "distinctAttribute"));
        snprintf(field, sizeof(field), "spec.devices.constraints[%d]", i);
        if (!m == !d || !strchr(m ? m : d, '/')) {
            ok = refuse(c, field,
                        "exactly one of matchAttribute and distinctAttribute, a "
                        "qualified name (domain/name)");
            continue;
        }
        if (!(c->cons[c->n_cons].attr = strdup(m ? m : d)))
            return SCHED_ENOMEM;
        c->cons[c->n_cons++].distinct = d != NULL;
    }
    if (ok && c->channels && (c->gpus || c->all))
        ok = refuse(c, "spec.devices.requests",
                    "a claim holds a ComputeDomain channel or GPUs, not both");
    if (ok && c->channels && !(c->domain = (char *)kcd_config_domain(devices)))
        ok = refuse(c, "spec.devices.config",
                    "no opaque config of driver " KCD_DRIVER " with parameters.domainID (the "
                    "ComputeDomain's uid)");
    if (c->domain && !(c->domain = strdup(c->domain)))
        return SCHED_ENOMEM;
    const cJSON *cfg = get(devices, "config");
    if (cJSON_GetArraySize(cfg) > 0 && !(c->config = cJSON_Duplicate(cfg, true)))
        return SCHED_ENOMEM;
    return ok ? 0 : SCHED_ENOMEM;
}

int kdra_claim_decode(const cJSON *o, const char *gpu_class, struct kclaim **out,
                      struct sched_errbuf *eb)
{
    const cJSON *meta = get(o, "metadata");
    const char *ns = cJSON_GetStringValue(get(meta, "namespace"));
    const char *name = cJSON_GetStringValue(get(meta, "name"));
    const char *uid = cJSON_GetStringValue(get(meta, "uid"));
    if (!name || !*name || strchr(name, '/') || (ns && strchr(ns, '/')))
        return sched_fail(eb, SCHED_EINVAL, "resourceclaim: metadata.name: missing or invalid");
    struct kclaim *c = calloc(1, sizeof(*c));
    if (!c)
        return SCHED_ENOMEM;
    ns = ns && *ns ? ns : "default";
    size_t kn = strlen(ns) + strlen(name) + 2;
    c->key = malloc(kn);
    c->ns = strdup(ns);
    c->name = strdup(name);
    c->uid = uid ? strdup(uid) : NULL;
    int rc = c->key && c->ns && c->name && (!uid || c->uid) ? 0 : SCHED_ENOMEM;
    if (rc == 0) {
        snprintf(c->key, kn, "%s/%s", ns, name);
        rc = decode_requests(c, get(get(o, "spec"), "devices"),
                             gpu_class ? gpu_class : device_dra_class());
    }
    const char *rv = cJSON_GetStringValue(get(meta, "resourceVersion"));
    if (rc == 0 && rv && !(c->rv = strdup(rv)))
        rc = SCHED_ENOMEM;
    const cJSON *dt = get(meta, "deletionTimestamp"), *fin;
    c->deleting = dt && !cJSON_IsNull(dt);
    cJSON_ArrayForEach(fin, get(meta, "finalizers"))
    {
        const char *f = cJSON_GetStringValue(fin);
        c->finalizer |= f && strcmp(f, KDRA_FINALIZER) == 0;
    }
    const cJSON *ext = get(get(meta, "annotations"), KDRA_EXT_ANNOT), *own;
    const char *ev = cJSON_GetStringValue(ext);
    const cJSON *owners = ev && strcmp(ev, "true") == 0 ? get(meta, "ownerReferences") : NULL;
    cJSON_ArrayForEach(own, owners)
    {
        const char *ou = cJSON_GetStringValue(get(own, "uid"));
        const char *kind = cJSON_GetStringValue(get(own, "kind"));
        const char *on = cJSON_GetStringValue(get(own, "name"));
        if (rc || c->ext_owner || !ou || !on || !kind || strcmp(kind, "Pod") != 0 ||
            !cJSON_IsTrue(get(own, "controller")))
            continue;
        size_t len = strlen(c->ns) + strlen(on) + 2;
        if (!(c->ext_owner = strdup(ou)) || !(c->ext_pod = malloc(len)))
            rc = SCHED_ENOMEM;
        else
            snprintf(c->ext_pod, len, "%s/%s", c->ns, on);
    }
    const cJSON *st = get(o, "status"), *rf = get(st, "reservedFor");
    c->allocated = get(st, "allocation") && !cJSON_IsNull(get(st, "allocation"));
    int nr = cJSON_GetArraySize(rf);
    c->reserved = calloc((size_t)(nr > 0 ? nr : 1), sizeof(*c->reserved));
    if (!c->reserved)
        rc = SCHED_ENOMEM;
    const cJSON *res = get(get(get(st, "allocation"), "devices"), "results");
    int na = cJSON_GetArraySize(res);
    if (rc == 0 && na > 0 && !(c->alloc = calloc((size_t)na, sizeof(*c->alloc))))
        rc = SCHED_ENOMEM;
    for (int i = 0; rc == 0 && i < na; i++) {
        const cJSON *x = cJSON_GetArrayItem(res, i);
        const char *drv = cJSON_GetStringValue(get(x, "driver"));
        const char *pool = cJSON_GetStringValue(get(x, "pool"));
        const char *dev = cJSON_GetStringValue(get(x, "device"));
        if (!drv || !pool || !dev || !device_dra()->driver ||
            strcmp(drv, device_dra()->driver) != 0)
            continue;
        struct kclaim_dev *d = &c->alloc[c->n_alloc++];
        if (!(d->pool = strdup(pool)) || !(d->device = strdup(dev)))
            rc = SCHED_ENOMEM;
    }
    /* the node of an allocation like ours: one term, one matchFields metadata.name In [node] */
    const cJSON *terms = get(get(get(st, "allocation"), "nodeSelector"), "nodeSelectorTerms");
    const cJSON *mf = get(cJSON_GetArrayItem(terms, 0), "matchFields");
    const cJSON *f0 = cJSON_GetArrayItem(mf, 0), *vals = get(f0, "values");
    const char *key = cJSON_GetStringValue(get(f0, "key")),
               *op = cJSON_GetStringValue(get(f0, "operator"));
    const char *node = cJSON_GetStringValue(cJSON_GetArrayItem(vals, 0));
    if (rc == 0 && cJSON_GetArraySize(terms) == 1 && cJSON_GetArraySize(mf) == 1 &&
        cJSON_GetArraySize(vals) == 1 && key && op && node && strcmp(key, "metadata.name") == 0 &&
        strcmp(op, "In") == 0 && !(c->alloc_node = strdup(node)))
        rc = SCHED_ENOMEM;
    for (int i = 0; rc == 0 && i < nr; i++) {
        const char *u = cJSON_GetStringValue(get(cJSON_GetArrayItem(rf, i), "uid"));
        if (u && !(c->reserved[c->n_reserved++] = strdup(u)))
            rc = SCHED_ENOMEM;
    }
    if (rc) {
        kdra_claim_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

bool kdra_claim_has_selectors(const struct kclaim *c)
{
    if (c->all)
        return true; /* the node filter keeps whole nodes of the size asked */
    for (uint32_t r = 0; r < c->n_reqs; r++)
        for (uint32_t k = 0; k < c->reqs[r].n_alts; k++)
            if (c->reqs[r].first_available || c->reqs[r].alts[k].n_sel || c->reqs[r].alts[k].cls)
                return true;
    return c->n_cons > 0;
}

int kdra_class_decode(const cJSON *o, struct kdra_class **out, struct sched_errbuf *eb)
{
    const char *name = cJSON_GetStringValue(get(get(o, "metadata"), "name"));
    if (!name || !*name)
        return sched_fail(eb, SCHED_EINVAL, "deviceclass: metadata.name: missing");
    struct kdra_class *k = calloc(1, sizeof(*k));
    if (!k || !(k->name = strdup(name))) {
        kdra_class_free(k);
        return SCHED_ENOMEM;
    }
    char field[120], bad[300];
    int rc = compile_sels(get(get(o, "spec"), "selectors"), "spec.selectors", &k->sel, &k->n_sel,
                          NULL, field, sizeof(field), bad, sizeof(bad));
    const char *ext = cJSON_GetStringValue(get(get(o, "spec"), "extendedResourceName"));
    const char *ct = cJSON_GetStringValue(get(get(o, "metadata"), "creationTimestamp"));
    if (rc == 0 && ((ext && !(k->ext_name = strdup(ext))) || (ct && !(k->created = strdup(ct)))))
        rc = SCHED_ENOMEM;
    size_t n = strlen(name) + strlen(field) + strlen(bad) + 32;
    if (rc == 0 && *bad && (k->unsupported = malloc(n)) != NULL)
        snprintf(k->unsupported, n, "deviceclass %s: %s: %s", name, field, bad);
    else if (rc == 0 && *bad)
        rc = SCHED_ENOMEM;
    if (rc) {
        kdra_class_free(k);
        return rc;
    }
    *out = k;
    return 0;
}

void kdra_class_free(struct kdra_class *k)
{
    if (!k)
        return;
    for (uint32_t i = 0; i < k->n_sel; i++)
        cel_free(k->sel[i]);
    free(k->sel);
    free(k->name);
    free(k->ext_name);
    free(k->created);
    free(k->unsupported);
    free(k);
}

/* Whether every program of sel[n] accepts d. */
static bool all_accept(struct cel_prog *const *sel, uint32_t n, const struct cel_device *d)
{
    for (uint32_t k = 0; k < n; k++) {
        bool ok = false;
        struct sched_errbuf eb;
        if (cel_eval(sel[k], d, &ok, &eb) != 0 || !ok)
            return false;
    }
    return true;
}

bool kdra_class_matches(const struct kdra_class *k, const struct cel_device *d)
{
    return k && !k->unsupported && all_accept(k->sel, k->n_sel, d);
}

/* A device's attribute by qualified name ("resource.kubernetes.io/numaNode"; the driver's own
 * domain also matches its unqualified attributes). */
static const struct cel_attr *attr_of(const struct cel_device *d, const char *qualified)
{
    const char *slash = strrchr(qualified, '/');
    size_t dl = (size_t)(slash - qualified);
    for (uint32_t k = 0; k < d->n_attrs; k++) {
        const struct cel_attr *a = &d->attrs[k];
        const char *dom = a->domain && *a->domain ? a->domain : d->driver ? d->driver : "";
        if (strlen(dom) == dl && strncmp(dom, qualified, dl) == 0 &&
            strcmp(a->name, slash + 1) == 0)
            return a;
    }
    return NULL;
}

static bool same_value(const struct cel_attr *x, const struct cel_attr *y)
{
    if (x->type != y->type)
        return false;
    if (x->type == CEL_STR || x->type == CEL_VER)
        return strcmp(x->s ? x->s : "", y->s ? y->s : "") == 0;
    return x->type == CEL_BOOL ? x->b == y->b : x->i == y->i;
}

/* Whether alternative x's class (NULL: the accelerator's) and selectors accept every device of
 * devs[n]. */
static bool alt_accepts(const struct kclaim_alt *x, const struct strmap *classes,
                        const struct cel_device *const *devs, uint32_t n)
{
    const struct kdra_class *k = x->cls && classes ? strmap_get(classes, x->cls) : NULL;
    for (uint32_t i = 0; i < n; i++)
        if ((x->cls && !kdra_class_matches(k, devs[i])) || !all_accept(x->sel, x->n_sel, devs[i]))
            return false;
    return true;
}

bool kdra_alt_matches(const struct kclaim_alt *x, const struct strmap *classes,
                      const struct cel_device *d)
{
    return alt_accepts(x, classes, &d, 1);
}

/* The first alternative of request q that accepts every device of devs[n], -1 none (a request
 * without any, an IMEX channel's: 0). */
static int req_alt(const struct kclaim_req *q, const struct strmap *classes,
                   const struct cel_device *const *devs, uint32_t n)
{
    for (uint32_t s = 0; s < q->n_alts; s++)
        if (alt_accepts(&q->alts[s], classes, devs, n))
            return (int)s;
    return q->n_alts ? -1 : 0;
}

bool kdra_claim_subs(const struct kclaim *c, const struct strmap *classes,
                     const struct cel_device *const *devs, uint32_t n, uint8_t *sub)
{
    for (uint32_t r = 0; r < c->n_reqs; r++) {
        int a = req_alt(&c->reqs[r], classes, devs, n);
        if (a < 0 || r >= KDRA_MAX_REQS)
            return false;
        sub[r] = (uint8_t)a;
    }
    return true;
}

bool kdra_claim_node_ok(const struct kclaim *c, const struct strmap *classes,
                        const struct cel_device *const *devs, uint32_t n)
{
    for (uint32_t r = 0; r < c->n_reqs; r++)
        if (req_alt(&c->reqs[r], classes, devs, n) < 0)
            return false;
    for (uint32_t k = 0; k < c->n_cons; k++)
        for (uint32_t i = 0; i < n; i++) {
            const struct cel_attr *a = attr_of(devs[i], c->cons[k].attr);
            if (!a)
                return false; /* devices lacking the attribute are not chosen */
            for (uint32_t j = 0; j < i; j++) {
                bool same = same_value(a, attr_of(devs[j], c->cons[k].attr));
                if (same == c->cons[k].distinct)
                    return false;
            }
        }
    return true;
}

bool kdra_claim_matches(const struct kclaim *c, const struct strmap *classes,
                        const struct cel_device *d)
{
    for (uint32_t r = 0; r < c->n_reqs; r++)
        if (req_alt(&c->reqs[r], classes, &d, 1) < 0)
            return false;
    return true;
}

bool kdra_claim_free_for(const struct kclaim *c, const char *uid)
{
    if (!c->allocated && c->n_reserved == 0)
        return true;
    for (uint32_t i = 0; i < c->n_reserved; i++)
        if (!uid || strcmp(c->reserved[i], uid) != 0)
            return false;
    return c->n_reserved > 0 || !c->allocated;
}

bool kdra_claim_reserved_for(const struct kclaim *c, const char *uid)
{
    for (uint32_t i = 0; uid && i < c->n_reserved; i++)
        if (strcmp(c->reserved[i], uid) == 0)
            return true;
    return false;
}

/* One status.reservedFor entry (struct kdra_ref), NULL out of memory. */
static cJSON *consumer_ref(const struct kdra_ref *who)
{
    cJSON *ref = cJSON_CreateObject();
    bool ok = (!who->group || cJSON_AddStringToObject(ref, "apiGroup", "scheduling.k8s.io")) &&
              cJSON_AddStringToObject(ref, "resource", who->group ? "podgroups" : "pods") &&
              cJSON_AddStringToObject(ref, "name", who->name) &&
              cJSON_AddStringToObject(ref, "uid", who->uid ? who->uid : "");
    if (!ok) {
        cJSON_Delete(ref);
        return NULL;
    }
    return ref;
}

cJSON *kdra_claim_adopt(const char *claim_uid, const struct kdra_ref *who)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *rf = cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "reservedFor");
    cJSON *ref = consumer_ref(who);
    if (!ref || !cJSON_AddItemToArray(rf, ref)) { /* on failure ref is not rf's */
        cJSON_Delete(ref);
        cJSON_Delete(body);
        return NULL;
    }
    if (claim_uid &&
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(body, "metadata"), "uid", claim_uid)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

cJSON *kdra_claim_protect(const struct kclaim *c)
{
    if (!c->rv)
        return NULL;
    cJSON *body = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
    cJSON *fins = cJSON_AddArrayToObject(meta, "finalizers");
    cJSON *f = cJSON_CreateString(KDRA_FINALIZER);
    if (!cJSON_AddStringToObject(meta, "resourceVersion", c->rv) ||
        !cJSON_AddItemToArray(fins, f)) {
        cJSON_Delete(f);
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

cJSON *kdra_claim_unreserve(const char *claim_uid, const char *pod_uid)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
    cJSON *rf = cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "reservedFor");
    cJSON *del = cJSON_CreateObject();
    bool ok = cJSON_AddStringToObject(del, "$patch", "delete") &&
              cJSON_AddStringToObject(del, "uid", pod_uid);
    if (!ok || !cJSON_AddItemToArray(rf, del)) { /* on failure del is not rf's */
        cJSON_Delete(del);
        cJSON_Delete(body);
        return NULL;
    }
    if (claim_uid && !cJSON_AddStringToObject(meta, "uid", claim_uid)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

cJSON *kdra_claim_deallocate(const char *rv)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(body, "status");
    if (!cJSON_AddStringToObject(cJSON_AddObjectToObject(body, "metadata"), "resourceVersion",
                                 rv) ||
        !cJSON_AddNullToObject(st, "allocation")) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

bool kdra_claim_free_for_all(const struct kclaim *c, const char *const *uids, uint32_t n)
{
    for (uint32_t i = 0; i < c->n_reserved; i++) {
        bool mine = false;
        for (uint32_t k = 0; k < n && !mine; k++)
            mine = uids[k] && strcmp(c->reserved[i], uids[k]) == 0;
        if (!mine)
            return false;
    }
    return c->n_reserved > 0 || !c->allocated;
}

cJSON *kdra_claim_allocation(const struct kclaim *c, const char *node, const char *const *devices,
                             const char *const *drivers, const char *const *pools,
                             uint32_t n_devices, const struct kdra_ref *who, uint32_t n_who)
{
    return kdra_claim_allocation_subs(c, NULL, node, devices, drivers, pools, n_devices, who,
                                      n_who);
}

cJSON *kdra_claim_allocation_subs(const struct kclaim *c, const uint8_t *sub, const char *node,
                                  const char *const *devices, const char *const *drivers,
                                  const char *const *pools, uint32_t n_devices,
                                  const struct kdra_ref *who, uint32_t n_who)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(body, "status");
    cJSON *alloc = cJSON_AddObjectToObject(st, "allocation");
    cJSON *res = cJSON_AddArrayToObject(cJSON_AddObjectToObject(alloc, "devices"), "results");
    uint32_t k = 0;
    for (uint32_t r = 0; r < c->n_reqs; r++)
        for (uint32_t i = 0; (c->reqs[r].all || i < c->reqs[r].count) && k < n_devices; i++, k++) {
            const struct kclaim_req *q = &c->reqs[r];
            char rn[200]; /* a subrequest's result: "<request>/<subrequest>" */
            uint32_t s = sub && r < KDRA_MAX_REQS && sub[r] < q->n_alts ? sub[r] : 0;
            snprintf(rn, sizeof(rn), "%s%s%s", q->name, q->first_available ? "/" : "",
                     q->first_available ? q->alts[s].name : "");
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "request", rn);
            cJSON_AddStringToObject(x, "driver", drivers[k]);
            cJSON_AddStringToObject(x, "pool", pools[k]);
            cJSON_AddStringToObject(x, "device", devices[k]);
            cJSON_AddItemToArray(res, x);
        }
    const cJSON *e;
    cJSON *cfg =
        c->config ? cJSON_AddArrayToObject(cJSON_GetObjectItem(alloc, "devices"), "config") : NULL;
    cJSON_ArrayForEach(e, c->config)
    {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "source", "FromClaim");
        for (const char *const *f = (const char *const[]){"requests", "opaque", NULL}; *f; f++)
            if (get(e, *f))
                cJSON_AddItemToObject(x, *f, cJSON_Duplicate(get(e, *f), true));
        cJSON_AddItemToArray(cfg, x);
    }
    cJSON *term = cJSON_CreateObject();
    cJSON *mf = cJSON_CreateObject();
    cJSON_AddStringToObject(mf, "key", "metadata.name");
    cJSON_AddStringToObject(mf, "operator", "In");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(mf, "values"), cJSON_CreateString(node));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(term, "matchFields"), mf);
    cJSON_AddItemToArray(
        cJSON_AddArrayToObject(cJSON_AddObjectToObject(alloc, "nodeSelector"), "nodeSelectorTerms"),
        term);
    cJSON *rf = cJSON_AddArrayToObject(st, "reservedFor");
    for (uint32_t i = 0; i < n_who && i <= KDRA_MAX_CONSUMERS; i++) {
        cJSON *ref = consumer_ref(&who[i]);
        if (ref && !cJSON_AddItemToArray(rf, ref))
            cJSON_Delete(ref);
    }
    if (!cJSON_GetArraySize(res) || k != n_devices || cJSON_GetArraySize(rf) != (int)n_who ||
        n_who == 0 || n_who > KDRA_MAX_CONSUMERS) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

int kdra_claim_entry(const cJSON *rc, char **out)
{
    const char *cn = cJSON_GetStringValue(get(rc, "name"));
    const char *claim = cJSON_GetStringValue(get(rc, "resourceClaimName"));
    const char *tmpl = cJSON_GetStringValue(get(rc, "resourceClaimTemplateName"));
    *out = NULL;
    if (!cn || !*cn || !claim == !tmpl || strchr(cn, ' ') || strchr(claim ? claim : tmpl, ' '))
        return SCHED_EINVAL;
    size_t len = strlen(cn) + strlen(claim ? claim : tmpl) + 12;
    if (!(*out = malloc(len)))
        return SCHED_ENOMEM;
    snprintf(*out, len, "%s %s %s", cn, claim ? "claim" : "template", claim ? claim : tmpl);
    return 0;
}

int kdra_note_group(struct kpod *p, const struct kpg *pg)
{
    uint32_t bits = 0;
    for (uint32_t i = 0; pg && pg->uid && p->claims_entry && i < p->n_claims && i < 32; i++)
        for (uint32_t k = 0; k < pg->n_claims; k++)
            if (p->claims_entry[i] && strcmp(p->claims_entry[i], pg->claims[k]) == 0)
                bits |= 1u << i;
    p->claims_group = bits;
    if (!bits || !kobj_same_str(p->group_uid, pg->uid)) {
        free(p->group_uid);
        p->group_uid = NULL;
    }
    if (bits && !p->group_uid && !(p->group_uid = strdup(pg->uid))) {
        p->claims_group = 0;
        return SCHED_ENOMEM;
    }
    return 0;
}

const char *kdra_who(const struct kpod *p, uint32_t i)
{
    return i < 32 && (p->claims_group >> i) & 1u && p->group_uid ? p->group_uid : p->uid;
}

int kdra_pod_claims(const cJSON *pod, const char *ns, struct kpod *p, struct sched_errbuf *eb)
{
    const cJSON *rcs = get(get(pod, "spec"), "resourceClaims");
    const cJSON *sts = get(get(pod, "status"), "resourceClaimStatuses");
    const char *ext = cJSON_GetStringValue(
        get(get(get(pod, "status"), "extendedResourceClaimStatus"), "resourceClaimName"));
    if (ext && *ext && !strchr(ext, '/')) {
        size_t len = strlen(ns) + strlen(ext) + 2;
        if (!(p->ext_claim = malloc(len)))
            return SCHED_ENOMEM;
        snprintf(p->ext_claim, len, "%s/%s", ns, ext);
    }
    int n = cJSON_GetArraySize(rcs);
    if (n <= 0)
        return 0;
    if (!(p->claims = calloc((size_t)n, sizeof(*p->claims))) ||
        !(p->claims_entry = calloc((size_t)n, sizeof(*p->claims_entry))))
        return SCHED_ENOMEM;
    for (int i = 0; i < n; i++) {
        const cJSON *rc = cJSON_GetArrayItem(rcs, i);
        const char *cn = cJSON_GetStringValue(get(rc, "name"));
        const char *claim = cJSON_GetStringValue(get(rc, "resourceClaimName"));
        const char *tmpl = cJSON_GetStringValue(get(rc, "resourceClaimTemplateName"));
        char *entry = NULL;
        int erc = kdra_claim_entry(rc, &entry);
        if (erc == SCHED_EINVAL)
            return sched_fail(eb, SCHED_EINVAL,
                              "pod %s: spec.resourceClaims[%d]: a name and exactly one of "
                              "resourceClaimName and resourceClaimTemplateName",
                              p->key, i);
        if (erc)
            return erc;
        if (tmpl) {
            const cJSON *s;
            cJSON_ArrayForEach(s, sts)
            {
                const char *sn = cJSON_GetStringValue(get(s, "name"));
                if (sn && strcmp(sn, cn) == 0)
                    claim = cJSON_GetStringValue(get(s, "resourceClaimName"));
            }
        }
        if (!claim) {
            free(entry);
            if (p->claim_wait)
                continue;
            size_t len = strlen(tmpl) + strlen(cn) + 120;
            if (!(p->claim_wait = malloc(len)))
                return SCHED_ENOMEM;
            snprintf(p->claim_wait, len,
                     "waiting for the ResourceClaim of claim \"%s\" (template %s) to be created",
                     cn, tmpl);
            continue;
        }
        size_t len = strlen(ns) + strlen(claim) + 2;
        if (!(p->claims[p->n_claims] = malloc(len))) {
            free(entry);
            return SCHED_ENOMEM;
        }
        p->claims_entry[p->n_claims] = entry;
        snprintf(p->claims[p->n_claims++], len, "%s/%s", ns, claim);
    }
    return 0;
}
