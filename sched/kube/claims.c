/* sched/kube/claims.c: the daemon's DRA state (see claims.h). */
#include "sched/kube/claims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/device.h"
#include "sched/core/log.h"
#include "sched/core/strmap.h"
#include "sched/kube/computedomain.h"
#include "sched/kube/mig.h"

/* The pods that reference one claim, sorted by key: consumers[0] holds its devices. */
struct kcons {
    const struct kpod **v;
    uint32_t n, cap;
    bool sorted; /* v by pod key (consumers sorts it at its first read) */
    /* shared_why's answers for the claim, judged once per build (strings in its arena) */
    bool judged;
    const char *why_gangs, *why_alloc;
};

struct kclaims {
    struct strmap claims;    /* "ns/name" -> struct kclaim* */
    struct strmap consumers; /* claim key -> struct kcons*, noted at each build */
    struct strmap counted;   /* claim key -> (void *)1: held by a pod counted on a node, noted
                                at each build (kclaims_note_counted) */
    bool counted_lost;       /* a note failed (out of memory): every claim counts on its own */
    struct strmap adopted;   /* "claim key pod-uid" -> (void *)1: our writes reserved the claim,
                                already allocated, for that pod (kclaims_adopted); dropped at a
                                build once the claim no longer lists the pod */
    struct dra_inv *dra;     /* ResourceSlices */
    uint64_t slices_gen;     /* counts slice events: a class's `any` is of one generation */
    struct strmap classes;   /* DeviceClass name -> struct kdra_class* */
    struct strmap ext_own;   /* pod uid -> struct kclaim*: a KEP-5004 claim owned by the pod */
    struct kcd *cd;          /* ComputeDomains and their IMEX channels */
    struct kmig *mig;        /* MIG devices and the claims that take them */
    uint64_t classes_gen;    /* counts DeviceClass events (a MIG view is of one generation) */
    int class_res;           /* kclaims_configure: the GPU class's quota slot, or -1 */
};

struct kclaims *kclaims_new(void)
{
    struct kclaims *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    strmap_init(&c->claims);
    strmap_init(&c->consumers);
    strmap_init(&c->counted);
    strmap_init(&c->adopted);
    strmap_init(&c->classes);
    strmap_init(&c->ext_own);
    c->class_res = -1;
    if (!(c->dra = dra_inv_new()) || !(c->cd = kcd_new()) || !(c->mig = kmig_new())) {
        dra_inv_free(c->dra);
        kcd_free(c->cd);
        free(c);
        return NULL;
    }
    return c;
}

void kclaims_free(struct kclaims *c)
{
    if (!c)
        return;
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->claims, &i, &k, &v);)
        kdra_claim_free(v);
    strmap_fini(&c->claims);
    kclaims_consumers_reset(c);
    strmap_fini(&c->consumers);
    strmap_fini(&c->counted);
    strmap_fini(&c->adopted);
    for (size_t i = 0; strmap_next(&c->classes, &i, &k, &v);)
        kdra_class_free(v);
    strmap_fini(&c->classes);
    strmap_fini(&c->ext_own);
    dra_inv_free(c->dra);
    kcd_free(c->cd);
    kmig_free(c->mig);
    free(c);
}

struct dra_inv *kclaims_inv(const struct kclaims *c)
{
    return c->dra;
}

struct kcd *kclaims_cd(const struct kclaims *c)
{
    return c->cd;
}

int kclaims_slice_event(struct kclaims *c, const cJSON *obj, bool deleted)
{
    const char *name = kobj_str(obj, "metadata.name");
    if (!name)
        return 0;
    if (kcd_slice_event(c->cd, obj, deleted) != 0 || /* the ComputeDomain driver's channels */
        kmig_slice_event(c->mig, obj, deleted) != 0) /* MIG devices */
        return SCHED_ENOMEM;
    c->slices_gen++;
    if (deleted) {
        dra_inv_remove(c->dra, name);
        return 0;
    }
    struct sched_errbuf eb;
    int rc = k8s_slice_put(c->dra, obj, &eb);
    if (rc == SCHED_EINVAL) { /* the slice's devices are not counted until it is fixed */
        LOG_WARN("kube", "resourceslice skipped: error=%s", eb.msg);
        dra_inv_remove(c->dra, name);
        return 0;
    }
    return rc;
}

int kclaims_class_event(struct kclaims *c, const cJSON *obj, bool deleted)
{
    const char *name = kobj_str(obj, "metadata.name");
    if (!name || !*name) {
        LOG_WARN("kube", "deviceclass without a metadata.name skipped");
        return 0;
    }
    c->classes_gen++;
    if (deleted) {
        kdra_class_free(strmap_del(&c->classes, name));
        return 0;
    }
    struct kdra_class *k = NULL;
    struct sched_errbuf eb;
    int rc = kdra_class_decode(obj, &k, &eb);
    if (rc)
        return rc == SCHED_ENOMEM ? rc : 0;
    if (k->unsupported) /* its claims wait, saying so */
        LOG_WARN("kube", "deviceclass not usable by gangsched: error=%s", k->unsupported);
    void *old = NULL;
    if (strmap_put(&c->classes, k->name, k, &old) != 0) {
        kdra_class_free(k);
        return SCHED_ENOMEM;
    }
    kdra_class_free(old);
    return 0;
}

static bool class_accepts(const struct cel_device *d, const void *k)
{
    return kdra_class_matches(k, d);
}

static bool class_rejects(const struct cel_device *d, const void *k)
{
    return !kdra_class_matches(k, d);
}

/* Whether the class selects some whole device of the accelerator, and (*every) all of them
 * (kept per slice generation: a scan of every device happens once per change). */
static bool class_any(const struct kclaims *c, struct kdra_class *k, bool *every)
{
    if (k->any_gen != c->slices_gen + 1) {
        k->any = dra_inv_any(c->dra, class_accepts, k);
        k->every = !dra_inv_any(c->dra, class_rejects, k);
        k->any_gen = c->slices_gen + 1;
    }
    if (every)
        *every = k->every;
    return k->any;
}

static bool whole_of(const void *ctx, struct kdra_class *k)
{
    return class_any(ctx, k, NULL);
}

/* What sched/kube/mig.h needs of the classes. */
static struct kmig_ctx mig_ctx(const struct kclaims *c)
{
    return (struct kmig_ctx){
        .classes = &c->classes, .classes_gen = c->classes_gen, .whole = whole_of, .ctx = c};
}

struct kmig *kclaims_mig(const struct kclaims *c)
{
    return c->mig;
}

int kclaims_mig_pick(const struct kclaims *c, const char *key, const char *node, const char **dev,
                     const char **drv, const char **pool, uint32_t n_max, uint32_t *n, uint8_t *sub)
{
    const struct kclaim *x = kclaims_get(c, key);
    struct kmig_ctx cx = mig_ctx(c);
    *n = 0;
    return x ? kmig_pick(c->mig, &cx, key, x, node, dev, drv, pool, n_max, n, sub) : 0;
}

void kclaims_mig_release(const struct kclaims *c, const char *key)
{
    kmig_release(c->mig, key);
}

/* A claim leaving the map leaves the owner index too; returns it. */
static void *ext_forget(struct kclaims *c, struct kclaim *x)
{
    if (x && x->ext_owner && strmap_get(&c->ext_own, x->ext_owner) == x)
        strmap_del(&c->ext_own, x->ext_owner);
    return x;
}

/* Why DeviceClass cls of claim `key` keeps it from allocation, or NULL: the class does not
 * exist (yet: kube-scheduler's "device class ... does not exist"), cannot be evaluated, or (but
 * for `alt`, a firstAvailable alternative, which may select none: another is taken) selects none
 * of the accelerator's whole devices (the answer kept per slice generation: a scan of every
 * device happens once per change). */
static const char *one_class_why(const struct kclaims *c, const char *cls, const char *key,
                                 bool alt, struct arena *a)
{
    struct kdra_class *k = strmap_get(&c->classes, cls);
    if (!k)
        return arena_printf(a, "deviceclass %s of resourceclaim %s does not exist (yet)", cls, key);
    if (k->unsupported)
        return arena_printf(a, "resourceclaim %s: %s", key, k->unsupported);
    if (!alt && !class_any(c, k, NULL))
        return arena_printf(a,
                            "resourceclaim %s: deviceclass %s selects none of the "
                            "accelerator's whole devices (driver %s), the only devices "
                            "gangsched allocates",
                            key, cls, device_dra()->driver ? device_dra()->driver : "none");
    return NULL;
}

/* Why claim x (key) cannot be allocated because of a request's DeviceClass other than the
 * accelerator's (one_class_why), or NULL. */
static const char *class_why(const struct kclaims *c, const struct kclaim *x, const char *key,
                             struct arena *a)
{
    for (uint32_t r = 0; r < x->n_reqs; r++) {
        const struct kclaim_req *q = &x->reqs[r];
        const char *why = NULL;
        for (uint32_t s = 0; !why && s < q->n_alts; s++) /* firstAvailable: every class */
            why = q->alts[s].cls ? one_class_why(c, q->alts[s].cls, key, q->first_available, a)
                                 : NULL;
        if (why)
            return why;
    }
    return NULL;
}

int kclaims_claim_event(struct kclaims *c, const cJSON *obj, bool deleted)
{
    const char *ns = kobj_str(obj, "metadata.namespace"), *name = kobj_str(obj, "metadata.name");
    char key[KOBJ_KEY_MAX];
    if (!name || kobj_key(ns, name, key, sizeof(key)) != 0) {
        LOG_WARN("kube", "resourceclaim without a valid metadata.name skipped");
        return 0;
    }
    if (deleted) {
        struct kclaim *gone = strmap_del((struct strmap *)&c->claims, key);
        kmig_claim_changed(c->mig, key, gone, NULL);
        kdra_claim_free(ext_forget(c, gone));
        return 0;
    }
    struct kclaim *cl = NULL;
    struct sched_errbuf eb;
    int rc = kdra_claim_decode(obj, NULL, &cl, &eb);
    if (rc == SCHED_ENOMEM)
        return rc;
    if (rc) {
        LOG_WARN("kube", "resourceclaim skipped: error=%s", eb.msg);
        struct kclaim *gone = strmap_del((struct strmap *)&c->claims, key);
        kmig_claim_changed(c->mig, key, gone, NULL);
        kdra_claim_free(ext_forget(c, gone));
        return 0;
    }
    void *old = NULL;
    if (strmap_put((struct strmap *)&c->claims, key, cl, &old) != 0) {
        kdra_claim_free(cl);
        return SCHED_ENOMEM;
    }
    kmig_claim_changed(c->mig, key, old, cl);
    kdra_claim_free(ext_forget(c, old));
    if (cl->ext_owner && strmap_put(&c->ext_own, cl->ext_owner, cl, NULL) != 0)
        return SCHED_ENOMEM;
    return 0;
}

const struct kclaim *kclaims_ext_of(const struct kclaims *c, const char *uid)
{
    return uid ? strmap_get((struct strmap *)&c->ext_own, uid) : NULL;
}

const char *kclaims_ext_why(const struct kclaims *c, const struct cluster *cl, const struct kpod *p,
                            struct arena *a)
{
    if (!cl || p->gpus_own <= 0 || p->node || !p->ours || cl->n_dra_nodes == 0 ||
        cl->n_dra_gpus < cl->total_gpus || kclaims_ext_class(c, p))
        return NULL;
    return arena_printf(a,
                        "no DeviceClass maps %s (spec.extendedResourceName, KEP-5004) and every "
                        "GPU of the cluster is a ResourceSlice device: pod %s asks %s in its "
                        "containers (give it a ResourceClaim, or map the resource)",
                        device_resource(), p->key, device_resource());
}

const char *kclaims_ext_hint(const struct kclaims *c, const struct cluster *cl,
                             const struct kpod *p, struct arena *a)
{
    if (!cl || p->gpus_own <= 0 || p->node || !p->ours || cl->n_dra_nodes == 0 ||
        kclaims_ext_class(c, p))
        return NULL;
    return arena_printf(a,
                        "pod %s is kept off the %u node(s) whose GPUs are ResourceSlice devices: "
                        "no DeviceClass maps %s (spec.extendedResourceName, KEP-5004)",
                        p->key, cl->n_dra_nodes, device_resource());
}

const struct kdra_class *kclaims_ext_class(const struct kclaims *c, const struct kpod *p)
{
    if (p->gpus_own <= 0 || !p->spec || !p->spec->n_ext)
        return NULL;
    /* the devices its claim would ask; fewer than its GPUs: another accelerator kind too */
    uint64_t n = kdra_ext_devices(p->spec->ext, p->spec->n_ext);
    struct kdra_class *k = (struct kdra_class *)kdra_ext_class(&c->classes, device_resource());
    if (n != (uint64_t)p->gpus_own || !k || k->unsupported)
        return NULL;
    return class_any(c, k, NULL) ? k : NULL;
}

void kclaims_configure(struct kclaims *c, const struct config *cfg)
{
    c->class_res = config_qmap_class(cfg, device_dra_class());
    dra_inv_set_class_res(c->dra, c->class_res);
}

/* ---- shared claims ------------------------------------------------------------------------- */

void kclaims_consumers_reset(struct kclaims *c)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&c->consumers, &i, &k, &v);) {
        struct kcons *cs = v;
        free(cs->v);
        free(cs);
    }
    strmap_fini(&c->consumers);
    strmap_init(&c->consumers);
    strmap_fini(&c->counted);
    strmap_init(&c->counted);
    c->counted_lost = false;
    /* adoption records: kept while the claim is allocated and lists the pod (a new map: the
     * old one must not change while it is walked; out of memory, all are kept) */
    struct strmap keep;
    strmap_init(&keep);
    bool lost = false;
    for (size_t i = 0; strmap_next(&c->adopted, &i, &k, &v);) {
        const char *sp = strchr(k, ' ');
        char key[KOBJ_KEY_MAX];
        if (!sp || (size_t)(sp - k) >= sizeof(key))
            continue;
        memcpy(key, k, (size_t)(sp - k));
        key[sp - k] = '\0';
        const struct kclaim *x = strmap_get(&c->claims, key);
        if (x && x->allocated && kdra_claim_reserved_for(x, sp + 1))
            lost |= strmap_put(&keep, k, (void *)1, NULL) != 0;
    }
    if (lost) {
        strmap_fini(&keep);
        return;
    }
    strmap_fini(&c->adopted);
    c->adopted = keep;
}

int kclaims_adopted(struct kclaims *c, const char *key, const char *uid)
{
    char k[KOBJ_KEY_MAX + 80];
    if (!uid || (size_t)snprintf(k, sizeof(k), "%s %s", key, uid) >= sizeof(k))
        return 0; /* a uid that long names no pod the API server made */
    return strmap_put(&c->adopted, k, (void *)1, NULL) != 0 ? SCHED_ENOMEM : 0;
}

/* Whether our writes reserved claim `key` for pod `uid` as an adoption (kclaims_adopted). */
static bool recorded(const struct kclaims *c, const char *key, const char *uid)
{
    char k[KOBJ_KEY_MAX + 80];
    return uid && (size_t)snprintf(k, sizeof(k), "%s %s", key, uid) < sizeof(k) &&
           strmap_get((struct strmap *)&c->adopted, k);
}

/* kdra_who for claim `key` of p. */
static const char *who_of(const struct kpod *p, const char *key)
{
    for (uint32_t i = 0; i < p->n_claims; i++)
        if (strcmp(p->claims[i], key) == 0)
            return kdra_who(p, i);
    return p->uid;
}

int kclaims_note_pod(struct kclaims *c, const struct kpod *p)
{
    for (uint32_t i = 0; !p->deleting && i < p->n_claims; i++) {
        struct kcons *cs = strmap_get(&c->consumers, p->claims[i]);
        if (!cs && (!(cs = calloc(1, sizeof(*cs))) ||
                    strmap_put(&c->consumers, p->claims[i], cs, NULL) != 0)) {
            free(cs);
            return SCHED_ENOMEM;
        }
        if (cs->n == cs->cap) {
            uint32_t cap = cs->cap ? cs->cap * 2 : 4;
            const struct kpod **v = realloc(cs->v, cap * sizeof(*v));
            if (!v)
                return SCHED_ENOMEM;
            cs->v = v;
            cs->cap = cap;
        }
        cs->v[cs->n++] = p; /* sorted by key when first read (consumers) */
        cs->sorted = cs->n == 1 || (cs->sorted && strcmp(cs->v[cs->n - 2]->key, p->key) < 0);
    }
    return 0;
}

static int cmp_pod_key(const void *a, const void *b)
{
    return strcmp((*(const struct kpod *const *)a)->key, (*(const struct kpod *const *)b)->key);
}

/* The consumers of claim `key` noted at this build, by key (sorted at the first read: a claim
 * thousands of pods share is noted in O(n), not by insertion) (n 0: none). */
static const struct kpod *const *consumers(const struct kclaims *c, const char *key, uint32_t *n)
{
    struct kcons *cs = strmap_get((struct strmap *)&c->consumers, key);
    if (cs && !cs->sorted) {
        qsort(cs->v, cs->n, sizeof(*cs->v), cmp_pod_key);
        cs->sorted = true;
    }
    *n = cs ? cs->n : 0;
    return cs ? cs->v : NULL;
}

/* Whether pods a and b are of one gang (a gang of one: the same pod). */
static bool same_gang(const struct kpod *a, const struct kpod *b)
{
    return a == b || (a->group && b->group && strcmp(a->group, b->group) == 0);
}

/* Whether unplaced pod p (no node: pending, or assumed while its Binding is in flight) uses
 * allocated claim x (key) without allocating it (an adoption): unless every consumer the claim
 * is reserved for is a pending pod of ours in p's gang that names it, or the PodGroup of such
 * pods (KEP-5729) none of whose pods naming it is placed (kube-scheduler's PostFilter frees such
 * a reservation: ScheduledPodsCount 0) (an earlier attempt's allocation for them, which this
 * attempt writes again: docs/kubernetes.md "Unreserve"), and none of them reserved it as an
 * adoption of ours (kclaims_adopted). */
static bool adopts(const struct kclaims *c, const struct kpod *p, const char *key,
                   const struct kclaim *x)
{
    if (!x->allocated)
        return false;
    uint32_t n;
    const struct kpod *const *v = consumers(c, key, &n);
    if (x->n_reserved == 0 || x->n_reserved > n)
        return true; /* reserved for nobody, or for some pod that does not name it here */
    for (uint32_t r = 0; r < x->n_reserved; r++) {
        if (recorded(c, key, x->reserved[r]))
            return true;
        bool pending_mate = false, placed = false;
        for (uint32_t k = 0; k < n; k++) {
            const char *who = who_of(v[k], key);
            if (!who || strcmp(who, x->reserved[r]) != 0)
                continue;
            placed |= v[k]->node != NULL;
            pending_mate |= v[k]->ours && !v[k]->node && same_gang(v[k], p);
        }
        if (!pending_mate || placed)
            return true;
    }
    return false;
}

/* Whether GPU ids `mask` of node hold allocated claim x: every device of it the node's slices
 * list is among them (none listed: `dflt`). The claim's devices are its holder's GPUs (the
 * daemon allocates a claim from them), never a pod's that adopted it (they are in use). */
static bool covers(const struct kclaims *c, const struct kclaim *x, const char *node, uint32_t mask,
                   bool dflt)
{
    bool seen = false;
    for (uint32_t k = 0; k < x->n_alloc; k++) {
        int g = dra_inv_index(c->dra, node, x->alloc[k].pool, x->alloc[k].device);
        if (g < 0 || g >= 32)
            continue;
        if (!(mask & (1u << g)))
            return false;
        seen = true;
    }
    return seen || dflt;
}

/* Whether p's demand asks claim x's (key) devices and they count through p on its node: one
 * pod at most. An unallocated claim: its first consumer by key. An allocated one: an unplaced
 * pod of ours that allocates it again (adopts: false), the first by key; a bound pod of ours
 * whose gangsched.io/gpu-ids hold its devices; else another scheduler's bound pod, the first by
 * key, when no pod of ours holds it; else nobody (kclaims_held_use counts it on its node). */
static bool holds(const struct kclaims *c, const struct kpod *p, const char *key,
                  const struct kclaim *x)
{
    uint32_t n;
    const struct kpod *const *v = consumers(c, key, &n);
    bool first = n <= 1 || v[0] == p;
    if (!x || !x->allocated)
        return first;
    if (!p->node)
        return first && !adopts(c, p, key, x);
    if (p->ours)
        return covers(c, x, p->node, p->has_gpu_ids ? p->gpu_mask : 0, first);
    for (uint32_t k = 0; first && k < n; k++)
        if (v[k]->ours && v[k]->node && holds(c, v[k], key, x))
            return false;
    return first;
}

bool kclaims_shared(const struct kclaims *c, const struct kpod *p)
{
    for (uint32_t i = 0; i < p->n_claims; i++) {
        uint32_t n;
        consumers(c, p->claims[i], &n);
        if (n > 1 && !(i < 32 && (p->claims_adopt >> i) & 1u))
            return true;
    }
    return false;
}

/* What of shared_why does not depend on the pod, once per claim and build into cs: at most
 * KDRA_MAX_CONSUMERS distinct reservedFor entries (each pod reserving for itself, each PodGroup
 * its pods reserve for: the first 8 told apart, more counted once each: never fewer); all of
 * them ours and of one gang (why_gangs); the claim free or reserved only for them (why_alloc). */
static void judge_shared(struct kcons *cs, const char *key, const struct kclaim *x, struct arena *a)
{
    const struct kpod *const *v = cs->v;
    uint32_t n = cs->n;
    cs->judged = true;
    const char **uids = arena_calloc(a, n + 1, sizeof(*uids));
    if (!uids) {
        cs->why_gangs = "out of memory";
        return;
    }
    uint32_t refs = 0, n_groups = 0;
    const char *groups[8];
    for (uint32_t i = 0; i < n; i++) {
        const char *who = uids[i] = who_of(v[i], key);
        bool seen = false;
        for (uint32_t k = 0; who != v[i]->uid && k < n_groups && !seen; k++)
            seen = strcmp(groups[k], who) == 0;
        refs += !seen;
        if (!seen && who != v[i]->uid && n_groups < 8)
            groups[n_groups++] = who;
    }
    if (refs > KDRA_MAX_CONSUMERS) {
        cs->why_gangs =
            arena_printf(a, "resourceclaim %s: %u pods use it, at most %d (status.reservedFor)",
                         key, refs, KDRA_MAX_CONSUMERS);
        return;
    }
    for (uint32_t i = 0; i < n && !cs->why_gangs; i++)
        if (!v[i]->ours || !v[i]->group || !v[0]->group || strcmp(v[i]->group, v[0]->group) != 0)
            cs->why_gangs = arena_printf(a,
                                         "resourceclaim %s is shared by pods of several gangs or "
                                         "schedulers (%s and %s) and not allocated yet: gangsched "
                                         "allocates a shared claim for the pods of one gang (an "
                                         "allocated one, any pod may use)",
                                         key, v[0]->key, v[i == 0 && n > 1 ? 1 : i]->key);
    if (!cs->why_gangs && !kdra_claim_free_for_all(x, uids, n))
        cs->why_alloc = arena_printf(
            a, "ResourceClaim %s is allocated to consumers outside gang %s", key, v[0]->group);
}

/* Why pending pod p cannot allocate claim x (key) with its other consumers, or NULL: they must
 * all be ours, of one gang, at most KDRA_MAX_CONSUMERS entries, the claim its only GPUs, and
 * the claim free or reserved only for them. The part of every consumer alike is judged once per
 * claim and build (judge_shared): a claim a PodGroup's thousands of pods share costs O(pods). */
static const char *shared_why(const struct kclaims *c, const struct kpod *p, const char *key,
                              const struct kclaim *x, struct arena *a)
{
    struct kcons *cs = strmap_get((struct strmap *)&c->consumers, key);
    if (!cs || cs->n == 0)
        return NULL;
    if (!cs->judged)
        judge_shared(cs, key, x, a);
    if (cs->why_gangs)
        return cs->why_gangs;
    if (p->n_claims > 1 || p->gpus_own > 0 || x->all)
        return arena_printf(a,
                            "resourceclaim %s: a claim shared by several pods must be their only "
                            "GPUs (pod %s has others), and not allocationMode All",
                            key, p->key);
    return cs->why_alloc;
}

const struct kclaim *kclaims_get(const struct kclaims *c, const char *key)
{
    return strmap_get((struct strmap *)&c->claims, key);
}

/* A ComputeDomain channel claim: one channel device of the pod's node (computedomain.h); what
 * keeps it from placement, or NULL. */
static const char *kclaims_channel(const struct kclaims *c, struct kpod *p, const struct kclaim *x,
                                   struct arena *a)
{
    int r = kcd_res();
    if (r < 0)
        return arena_printf(a,
                            "resourceclaim %s: ComputeDomain channels cannot be counted "
                            "(resource table full)",
                            x->key);
    p->req.v[r] += x->channels;
    if (!kcd_name(c->cd, x->domain))
        return arena_printf(a,
                            "waiting for ComputeDomain uid %s (ResourceClaim %s's channel "
                            "config)",
                            x->domain, x->key);
    if (!kcd_in_namespace(c->cd, x->domain, x->ns))
        return arena_printf(a,
                            "resourceclaim %s: spec.devices.config: ComputeDomain %s is in "
                            "another namespace (the driver refuses to prepare the channel)",
                            x->key, kcd_name(c->cd, x->domain));
    return NULL;
}

/* The node of allocated claim x, as kclaims_held_use counts its devices there: its
 * nodeSelector's one metadata.name, else the node its first device's pool is named after (a
 * per-node pool); NULL when neither names a node of cl. */
static const char *alloc_node(const struct cluster *cl, const struct kclaim *x)
{
    if (x->alloc_node)
        return x->alloc_node;
    for (uint32_t i = 0; cl && x->n_alloc && i < cl->n_nodes; i++)
        if (strcmp(cl->nodes[i].name, x->alloc[0].pool) == 0)
            return cl->nodes[i].name;
    return NULL;
}

/* What keeps pending pod p from adopting allocated claim x (key), or NULL (kube-scheduler's
 * bindClaim: not while it is being deleted; at most KDRA_MAX_CONSUMERS in reservedFor). */
static const char *adopt_why(const struct cluster *cl, const struct kpod *p, uint32_t i,
                             const struct kclaim *x, struct arena *a)
{
    const char *key = p->claims[i];
    if (x->deleting) /* kube-scheduler: "resourceclaim ... is being deleted" */
        return arena_printf(a, "resourceclaim %s is being deleted (deletionTimestamp set)", key);
    if (i >= 32 || !p->uid)
        return arena_printf(a, "resourceclaim %s: pod %s names more than 32 claims", key, p->key);
    if (!kdra_claim_reserved_for(x, kdra_who(p, i)) && x->n_reserved >= KDRA_MAX_CONSUMERS)
        return arena_printf(a, "resourceclaim %s: %u pods use it, at most %d (status.reservedFor)",
                            key, x->n_reserved + 1, KDRA_MAX_CONSUMERS);
    if (!alloc_node(cl, x))
        return arena_printf(a,
                            "resourceclaim %s is allocated on a node gangsched cannot tell "
                            "(status.allocation.nodeSelector is not one metadata.name, no device "
                            "pool is named after a node): it is not used by other pods",
                            key);
    return NULL;
}

/* n more of resource r (a MIG profile's) in p's request, noted to be taken back; false when
 * the pod's claims take more profiles than it notes. */
static bool mig_put(struct kpod *p, int r, int64_t n)
{
    uint32_t j = 0, max = sizeof(p->mig) / sizeof(p->mig[0]);
    if (r < 0 || r >= RES_MAX || n <= 0)
        return true;
    while (j < p->n_mig && p->mig[j].res != r)
        j++;
    if (j == max)
        return false;
    if (j == p->n_mig)
        p->mig[p->n_mig++] = (struct kpod_mig){.res = (int16_t)r, .n = 0};
    p->mig[j].n = (int16_t)(p->mig[j].n + n);
    p->req.v[r] += n;
    return true;
}

/* MIG claim x's devices into pending or bound pod p's request: an allocation's as allocated,
 * else (its view refused: nothing) each request's count of its profile (kmig_claim's ch); why
 * a pending pod waits because of them, or NULL. */
static const char *mig_add(const struct kclaims *c, struct kpod *p, const struct kclaim *x,
                           const struct kmig_choice *ch, bool refused, struct arena *a)
{
    bool ok = true;
    if (x->allocated && x->n_alloc) {
        const char *node = x->alloc_node ? x->alloc_node : x->alloc[0].pool;
        for (uint32_t k = 0; k < x->n_alloc; k++)
            ok &=
                mig_put(p, kmig_device_res(c->mig, node, x->alloc[k].pool, x->alloc[k].device), 1);
    } else {
        for (uint32_t r = 0; !refused && r < x->n_reqs && r < KDRA_MAX_REQS; r++)
            ok &= mig_put(p, ch->res[r], x->reqs[r].count);
    }
    return ok || p->node ? NULL
                         : arena_printf(a,
                                        "pod %s: its claims take MIG devices of more than %u "
                                        "profiles",
                                        p->key, (unsigned)(sizeof(p->mig) / sizeof(p->mig[0])));
}

const char *kclaims_demand(const struct kclaims *c, const struct cluster *cl, struct kpod *p,
                           struct arena *a)
{
    for (uint32_t j = 0; j < p->n_mig; j++) /* the last build's MIG devices */
        p->req.v[p->mig[j].res] -= p->mig[j].n;
    p->n_mig = 0;
    struct kmig_ctx cx = mig_ctx(c);
    p->req.v[RES_GPU] = p->gpus_own;
    int cr = res_lookup(KCD_RESOURCE); /* channels: counted again below */
    if (cr >= 0)
        p->req.v[cr] = 0;
    if (c->class_res >= 0)
        p->req.v[c->class_res] = 0;
    p->claims_adopt = 0;
    const char *why = p->claim_wait;
    uint32_t n_all = 0, n_gpu_claims = 0;
    for (uint32_t i = 0; i < p->n_claims; i++) {
        const struct kclaim *x = strmap_get((struct strmap *)&c->claims, p->claims[i]);
        if (!x) {
            why = why ? why : arena_printf(a, "waiting for ResourceClaim %s", p->claims[i]);
            continue;
        }
        if (!p->node && adopts(c, p, p->claims[i], x)) {
            /* allocated already: its devices stay in use on its node (kclaims_held_use or their
             * holder), the pod asks none of them and goes to that node (kclaims_node_filter) */
            if (i < 32)
                p->claims_adopt |= 1u << i;
            why = why ? why : adopt_why(cl, p, i, x, a);
            continue;
        }
        uint32_t users;
        consumers(c, p->claims[i], &users);
        const char *sw = users > 1 && !p->node ? shared_why(c, p, p->claims[i], x, a) : NULL;
        const char *cw = NULL;
        if (!holds(c, p, p->claims[i], x)) { /* a shared claim's devices count once */
            why = why ? why : sw;
            continue;
        }
        const struct kmig_choice *mres;
        const char *mw = NULL; /* a MIG claim's refusal (mig.h), in place of class_why's */
        bool mig = kmig_claim(c->mig, &cx, p->claims[i], x, &mres, &mw);
        if (mig) {
            const char *aw = mig_add(c, p, x, mres, mw != NULL, a);
            mw = mw ? mw : aw;
            if (!mw && users > 1)
                mw = arena_printf(a,
                                  "resourceclaim %s: a claim of MIG devices shared by several "
                                  "pods is not allocated by gangsched",
                                  p->claims[i]);
            mw = p->node ? NULL : mw;
        } else {
            p->req.v[RES_GPU] += x->gpus;
            if (x->channels && !x->unsupported)
                why = why ? why : kclaims_channel(c, p, x, a);
            n_all += x->all; /* every GPU of a node: added below */
            n_gpu_claims += x->gpus > 0 || x->all;
        }
        if (x->deleting && !p->node) /* kube-scheduler: "resourceclaim ... is being deleted" */
            why = why ? why
                      : arena_printf(a, "resourceclaim %s is being deleted (deletionTimestamp set)",
                                     p->claims[i]);
        else if (x->unsupported)
            why = why ? why : x->unsupported;
        else if (!why && (cw = mig ? mw : class_why(c, x, p->claims[i], a)) != NULL)
            why = cw;
        else if (sw)
            why = why ? why : sw;
        else if (users <= 1 && !p->node && !kdra_claim_free_for(x, kdra_who(p, i)))
            why = why ? why
                      : arena_printf(a, "ResourceClaim %s is allocated to another consumer",
                                     p->claims[i]);
    }
    if (n_all) {
        p->req.v[RES_GPU] += cl ? cl->max_node_gpus : 0;
        if (n_all > 1 || n_gpu_claims > 1 || p->gpus_own > 0)
            why = why ? why
                      : arena_printf(a,
                                     "pod %s: a ResourceClaim with allocationMode All must "
                                     "hold the pod's only GPUs",
                                     p->key);
    }
    if (c->class_res >= 0) /* the claimed devices, for quota (config_qmap) */
        p->req.v[c->class_res] = p->req.v[RES_GPU] - p->gpus_own;
    return why;
}

/* The node requirement metadata.name In names[n] (a matchFields term's). */
static struct sel_req names_in(const char **names, uint32_t n)
{
    return (struct sel_req){
        .key = "metadata.name", .field = true, .op = SEL_IN, .values = names, .n_values = n};
}

/* A preferred node affinity term of `weight` for nodes names[n] added to ps's own. 0 or
 * SCHED_ENOMEM. */
static int pref_names(struct arena *a, struct podset *ps, const char **names, uint32_t n,
                      int32_t weight)
{
    struct pref_term *pt = arena_calloc(a, ps->n_pref + 1, sizeof(*pt));
    struct sel_req *req = arena_calloc(a, 1, sizeof(*req));
    if (!pt || !req)
        return SCHED_ENOMEM;
    if (ps->n_pref)
        memcpy(pt, ps->pref, ps->n_pref * sizeof(*pt));
    *req = names_in(names, n);
    pt[ps->n_pref] = (struct pref_term){.weight = weight, .term = {.reqs = req, .n_reqs = 1}};
    ps->pref = pt;
    ps->n_pref++;
    return 0;
}

/* kube-scheduler's DynamicResources score of a node whose GPU devices are devs[n] for claims
 * sel[n_sel] (computeScore): per firstAvailable request, FirstAvailableDeviceRequestMaxSize (8)
 * less the index of the alternative taken there. */
static int32_t alt_score(const struct kclaims *c, const struct kclaim *const *sel, uint32_t n_sel,
                         const struct cel_device *const *devs, uint32_t n)
{
    int32_t score = 0;
    for (uint32_t s = 0; s < n_sel; s++) {
        uint8_t sub[KDRA_MAX_REQS];
        if (!kdra_claim_subs(sel[s], &c->classes, devs, n, sub))
            continue;
        for (uint32_t r = 0; r < sel[s]->n_reqs && r < KDRA_MAX_REQS; r++)
            if (sel[s]->reqs[r].first_available)
                score += 8 - sub[r];
    }
    return score;
}

#define ALT_LEVELS 32 /* distinct scores turned into preferences; more: none */

/* The alternatives' scores of nodes names[k] as preferred node affinity terms added to ps's own:
 * normalized to 0..100 against the best (DefaultNormalizeScore), one term per distinct nonzero
 * weight naming its nodes; nothing when every node scores alike. 0 or SCHED_ENOMEM. */
static int alt_prefs(struct arena *a, const char **names, const int32_t *score, uint32_t k,
                     struct podset *ps)
{
    int32_t max = 0, min = INT32_MAX, w[ALT_LEVELS];
    uint32_t n_w = 0;
    for (uint32_t i = 0; i < k; i++) {
        max = score[i] > max ? score[i] : max;
        min = score[i] < min ? score[i] : min;
    }
    if (k == 0 || max == min)
        return 0;
    for (uint32_t i = 0; i < k; i++) {
        int32_t v = score[i] * 100 / max, j = 0;
        while (j < (int32_t)n_w && w[j] != v)
            j++;
        if (v > 0 && j == (int32_t)n_w && n_w == ALT_LEVELS)
            return 0;
        if (v > 0 && j == (int32_t)n_w)
            w[n_w++] = v;
    }
    for (uint32_t j = 0; j < n_w; j++) {
        const char **in = arena_calloc(a, k, sizeof(*in));
        if (!in)
            return SCHED_ENOMEM;
        uint32_t m = 0;
        for (uint32_t i = 0; i < k; i++)
            if (score[i] * 100 / max == w[j])
                in[m++] = names[i];
        if (pref_names(a, ps, in, m, w[j]) != 0)
            return SCHED_ENOMEM;
    }
    return 0;
}

/* Whether pod p's containers ask a MIG profile as an extended resource (what its claims' MIG
 * devices add is p->mig[]): not on a node whose count of it is of ResourceSlice devices
 * (node.dra_mig), where kubelet would give the pod none (KEP-5004 maps no MIG profile here). */
static bool containers_ask_mig(const struct cluster *cl, const struct kpod *p)
{
    for (int r = 0; cl->n_dra_mig_nodes && r < RES_MAX; r++) {
        if (!p->req.v[r] || !dra_res_mig(r))
            continue;
        int64_t claimed = 0;
        for (uint32_t j = 0; j < p->n_mig; j++)
            claimed += p->mig[j].res == r ? p->mig[j].n : 0;
        if (p->req.v[r] > claimed)
            return true;
    }
    return false;
}

int kclaims_node_filter(const struct kclaims *c, const struct cluster *cl, const struct kpod *p,
                        struct arena *a, struct podset *ps)
{
    const char **prev = arena_calloc(a, p->n_claims + 1, sizeof(*prev));
    uint32_t n_prev = 0; /* nodes of allocations it asks again (an earlier attempt's) */
    const struct kclaim *sel[8], *migs[8];
    const struct kmig_choice *mig_res[8];
    uint32_t n_sel = 0, n_mig = 0;
    struct kmig_ctx cx = mig_ctx(c);
    const char *pin = NULL; /* the node of the allocated claims the pod adopts */
    bool apart = false;     /* two of them on different nodes: no node */
    const char *mw;
    if (!prev)
        return SCHED_ENOMEM;
    for (uint32_t i = 0; i < p->n_claims && n_sel < 8 && n_mig < 8; i++) {
        const struct kclaim *x = strmap_get((struct strmap *)&c->claims, p->claims[i]);
        bool adopt = i < 32 && (p->claims_adopt >> i) & 1u;
        if (x && x->allocated && !adopt && alloc_node(cl, x))
            prev[n_prev++] = alloc_node(cl, x);
        if (adopt && x) {
            const char *at = alloc_node(cl, x);
            apart |= !at || (pin && strcmp(pin, at) != 0);
            pin = at ? at : pin;
        } else if (x && kmig_claim(c->mig, &cx, p->claims[i], x, &mig_res[n_mig], &mw)) {
            /* MIG devices: only nodes whose devices of the profile all suit it, unless every
             * node's do (selectors naming the profile only) */
            if (!mw && n_mig < 8 && !kmig_every_node(c->mig, &cx, p->claims[i], x))
                migs[n_mig++] = x;
        } else if (x && kdra_claim_has_selectors(x)) {
            sel[n_sel++] = x;
        }
    }
    /* container GPUs (an extended resource) where a device plugin counts them, and on a node
     * whose GPUs are ResourceSlice devices only through KEP-5004's claim: when a DeviceClass
     * maps the resource and accepts every GPU device of the node */
    bool own = p->gpus_own > 0 && cl->n_dra_nodes > 0;
    const struct kdra_class *ext = own ? kclaims_ext_class(c, p) : NULL;
    bool every = false; /* the class accepts every GPU device: no node is kept off for it */
    if (ext)
        class_any(c, (struct kdra_class *)ext, &every);
    /* the nodes of allocations an earlier attempt left: their allocation, immutable once
     * written, is written again there (elsewhere it is refused until the rollback's
     * deallocation) */
    if (n_prev && pref_names(a, ps, prev, n_prev, 100) != 0)
        return SCHED_ENOMEM;
    bool own_mig = containers_ask_mig(cl, p);
    if (n_sel == 0 && n_mig == 0 && !pin && !apart && (!own || every) && !own_mig)
        return 0;
    bool all = false, alts = false; /* alts: firstAvailable requests, scored per node */
    for (uint32_t s = 0; s < n_sel; s++) {
        all |= sel[s]->all;
        for (uint32_t r = 0; r < sel[s]->n_reqs; r++)
            alts |= sel[s]->reqs[r].first_available;
    }
    const char **names = arena_calloc(a, cl->n_nodes + 1, sizeof(*names));
    int32_t *score = alts ? arena_calloc(a, cl->n_nodes + 1, sizeof(*score)) : NULL;
    if (!names || (alts && !score))
        return SCHED_ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < cl->n_nodes; i++) {
        const struct node *nd = &cl->nodes[i];
        bool via_ext = own && nd->dra_gpus && ext && !every;
        bool ok = !apart && (nd->n_gpus > 0 || !n_sel) && !(own && nd->dra_gpus && !ext) &&
                  (!all || nd->n_gpus == cl->max_node_gpus) &&
                  (!pin || strcmp(nd->name, pin) == 0) && !(own_mig && nd->dra_mig);
        const struct cel_device *devs[NODE_MAX_GPUS];
        for (uint32_t g = 0; g < nd->n_gpus && ok && (n_sel || via_ext); g++)
            ok = dra_inv_device(c->dra, nd->name, g, NULL, NULL, &devs[g]) && devs[g] &&
                 (!via_ext || kdra_class_matches(ext, devs[g]));
        for (uint32_t s = 0; s < n_sel && ok; s++)
            ok = kdra_claim_node_ok(sel[s], &c->classes, devs, nd->n_gpus);
        for (uint32_t s = 0; s < n_mig && ok; s++)
            ok = kmig_node_ok(c->mig, &cx, migs[s], mig_res[s], nd->name);
        if (ok && alts)
            score[k] = alt_score(c, sel, n_sel, devs, nd->n_gpus);
        if (ok)
            names[k++] = nd->name;
    }
    if (alts && alt_prefs(a, names, score, k, ps) != 0)
        return SCHED_ENOMEM;
    uint32_t nt = ps->n_affinity ? ps->n_affinity : 1;
    struct sel_term *terms = arena_calloc(a, nt, sizeof(*terms));
    if (!terms)
        return SCHED_ENOMEM;
    for (uint32_t t = 0; t < nt; t++) {
        const struct sel_term *old = ps->n_affinity ? &ps->affinity[t] : NULL;
        uint32_t n = old ? old->n_reqs : 0;
        if (old && n == 0) { /* an empty term matches no node, and still none with the names */
            terms[t] = *old;
            continue;
        }
        struct sel_req *reqs = arena_calloc(a, n + 1, sizeof(*reqs));
        if (!reqs)
            return SCHED_ENOMEM;
        if (n)
            memcpy(reqs, old->reqs, n * sizeof(*reqs));
        reqs[n] = names_in(names, k);
        terms[t] = (struct sel_term){.reqs = reqs, .n_reqs = n + 1};
    }
    ps->affinity = terms;
    ps->n_affinity = nt;
    return 0;
}

bool kclaims_mask(const struct kclaims *c, const struct kpod *p, const char *node, uint32_t *mask)
{
    uint32_t m = 0;
    int64_t n = 0;
    for (uint32_t i = 0; i < p->n_claims; i++) {
        const struct kclaim *cl = strmap_get((struct strmap *)&c->claims, p->claims[i]);
        if (!cl || !holds(c, p, p->claims[i], cl))
            continue; /* a shared claim's devices are its holder's */
        for (uint32_t k = 0; k < cl->n_alloc; k++) {
            int g = dra_inv_index(c->dra, node, cl->alloc[k].pool, cl->alloc[k].device);
            if (g >= 0 && g < 32 && !(m & (1u << g))) {
                m |= 1u << g;
                n++;
            }
        }
    }
    const struct kclaim *x =
        p->ext_claim ? strmap_get((struct strmap *)&c->claims, p->ext_claim) : NULL;
    for (uint32_t k = 0;
         x && p->uid && x->ext_owner && strcmp(x->ext_owner, p->uid) == 0 && k < x->n_alloc; k++) {
        int g = dra_inv_index(c->dra, node, x->alloc[k].pool, x->alloc[k].device);
        if (g >= 0 && g < 32 && !(m & (1u << g))) {
            m |= 1u << g;
            n++;
        }
    }
    *mask = m;
    return n > 0 && n == p->req.v[RES_GPU];
}

bool kclaims_subs(const struct kclaims *c, const struct kclaim *x, const char *node, uint8_t *sub)
{
    const struct cel_device *devs[NODE_MAX_GPUS];
    uint32_t n = 0;
    while (n < NODE_MAX_GPUS && dra_inv_device(c->dra, node, n, NULL, NULL, &devs[n]) && devs[n])
        n++;
    return kdra_claim_subs(x, &c->classes, devs, n, sub);
}

/* ---- devices held by allocated claims ----------------------------------------------------- */

void kclaims_note_counted(struct kclaims *c, const struct kpod *p)
{
    for (uint32_t i = 0; i < p->n_claims && !c->counted_lost; i++) {
        const struct kclaim *x = strmap_get(&c->claims, p->claims[i]);
        if (!holds(c, p, p->claims[i], x))
            continue; /* a shared or adopted claim's devices are its holder's (kclaims_demand) */
        if (strmap_put(&c->counted, p->claims[i], (void *)1, NULL) != 0)
            c->counted_lost = true; /* over-counts rather than hands devices out twice */
    }
    const struct kclaim *x = p->ext_claim ? strmap_get(&c->claims, p->ext_claim) : NULL;
    if (x && p->uid && x->ext_owner && strcmp(x->ext_owner, p->uid) == 0 && /* its own */
        strmap_put(&c->counted, p->ext_claim, (void *)1, NULL) != 0)
        c->counted_lost = true;
}

/* Claim x (key) is left to the one pending pod of ours that names it (not counted on a node:
 * neither bound nor assumed), whose demand asks its GPUs: a claim reserved for it alone (an
 * earlier attempt's: its bind writes the claim again, and a 422 rolls back and deallocates it;
 * counted here, the pod could wait for ever on a full cluster). No pod runs on its devices. An
 * idle claim (reserved for nobody), or one the pod adopted (kclaims_adopted), is never left: it
 * always counts, and the pod adopts it asking none of its devices. */
static bool left_to_pending(const struct kclaims *c, const char *key, const struct kclaim *x)
{
    uint32_t users;
    const struct kpod *const *v = consumers(c, key, &users);
    if (users != 1 || !v[0]->ours || v[0]->node)
        return false;
    return x->n_reserved > 0 && kdra_claim_free_for(x, who_of(v[0], key)) &&
           !adopts(c, v[0], key, x);
}

void kclaims_held_use(const struct kclaims *c, kclaims_node_ix_fn *node_ix, const void *ctx,
                      struct node_state *state)
{
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&c->claims, &i, &key, &v);) {
        const struct kclaim *x = v;
        if (!x->allocated || x->n_alloc == 0 ||
            (!c->counted_lost && strmap_get((struct strmap *)&c->counted, key)) ||
            left_to_pending(c, key, x))
            continue;
        /* the allocation's node; an allocation whose nodeSelector is not ours (one matchFields
         * metadata.name term): a per-node pool is named after its node */
        const char *node = x->alloc_node ? x->alloc_node : x->alloc[0].pool;
        int n = node_ix(ctx, node);
        if (n < 0)
            continue;
        uint32_t mask = 0;
        for (uint32_t k = 0; k < x->n_alloc; k++) {
            int g = dra_inv_index(c->dra, node, x->alloc[k].pool, x->alloc[k].device);
            if (g >= 0 && g < 32)
                mask |= 1u << g;
        }
        for (uint32_t k = 0; kmig_any(c->mig) && k < x->n_alloc; k++) { /* MIG devices */
            int r = kmig_device_res(c->mig, node, x->alloc[k].pool, x->alloc[k].device);
            if (r >= 0)
                state[n].used.v[r]++;
        }
        int64_t add = bits_popc32(mask); /* GPUs, each device once */
        state[n].gpu_used |= mask;
        state[n].used.v[RES_GPU] += add;
        if (c->class_res >= 0) /* DRA nodes hold as many of the class's slot as GPUs */
            state[n].used.v[c->class_res] += add;
    }
}
