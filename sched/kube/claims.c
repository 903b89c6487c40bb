/* sched/kube/claims.c: the daemon's DRA state (see claims.h). */
#include "sched/kube/claims.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/log.h"
#include "sched/core/strmap.h"
#include "sched/kube/computedomain.h"

/* The pods that reference one claim, sorted by key: consumers[0] holds its devices. */
struct kcons {
    const struct kpod **v;
    uint32_t n, cap;
};

struct kclaims {
    struct strmap claims;    /* "ns/name" -> struct kclaim* */
    struct strmap consumers; /* claim key -> struct kcons*, noted at each build */
    struct strmap counted;   /* claim key -> (void *)1: held by a pod counted on a node, noted
                                at each build (kclaims_note_counted) */
    bool counted_lost;       /* a note failed (out of memory): every claim counts on its own */
    struct dra_inv *dra;     /* ResourceSlices */
    struct kcd *cd;          /* ComputeDomains and their IMEX channels */
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
    c->class_res = -1;
    if (!(c->dra = dra_inv_new()) || !(c->cd = kcd_new())) {
        dra_inv_free(c->dra);
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
    dra_inv_free(c->dra);
    kcd_free(c->cd);
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
    if (kcd_slice_event(c->cd, obj, deleted) != 0) /* the ComputeDomain driver's channels */
        return SCHED_ENOMEM;
    if (deleted) {
        dra_inv_remove(c->dra, name);
        return 0;
    }
    struct sched_errbuf eb;
    int rc = k8s_slice_put(c->dra, obj, NULL, &eb);
    if (rc == SCHED_EINVAL) { /* the slice's devices are not counted until it is fixed */
        LOG_WARN("kube", "resourceslice skipped: error=%s", eb.msg);
        dra_inv_remove(c->dra, name);
        return 0;
    }
    return rc;
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
        kdra_claim_free(strmap_del((struct strmap *)&c->claims, key));
        return 0;
    }
    struct kclaim *cl = NULL;
    struct sched_errbuf eb;
    int rc = kdra_claim_decode(obj, NULL, &cl, &eb);
    if (rc == SCHED_ENOMEM)
        return rc;
    if (rc) {
        LOG_WARN("kube", "resourceclaim skipped: error=%s", eb.msg);
        kdra_claim_free(strmap_del((struct strmap *)&c->claims, key));
        return 0;
    }
    void *old = NULL;
    if (strmap_put((struct strmap *)&c->claims, key, cl, &old) != 0) {
        kdra_claim_free(cl);
        return SCHED_ENOMEM;
    }
    kdra_claim_free(old);
    return 0;
}

void kclaims_configure(struct kclaims *c, const struct config *cfg)
{
    c->class_res = config_qmap_class(cfg, DRA_GPU_DRIVER);
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
        uint32_t at = cs->n++; /* sorted by key: insertion */
        while (at > 0 && strcmp(cs->v[at - 1]->key, p->key) > 0) {
            cs->v[at] = cs->v[at - 1];
            at--;
        }
        cs->v[at] = p;
    }
    return 0;
}

/* The consumers of claim `key` noted at this build (n 0: none). */
static const struct kpod *const *consumers(const struct kclaims *c, const char *key, uint32_t *n)
{
    const struct kcons *cs = strmap_get((struct strmap *)&c->consumers, key);
    *n = cs ? cs->n : 0;
    return cs ? cs->v : NULL;
}

bool kclaims_shared(const struct kclaims *c, const struct kpod *p)
{
    for (uint32_t i = 0; i < p->n_claims; i++) {
        uint32_t n;
        consumers(c, p->claims[i], &n);
        if (n > 1)
            return true;
    }
    return false;
}

/* Why pod p cannot use shared claim x (key) with its other consumers, or NULL: they must all be
 * ours, of one gang, at most KDRA_MAX_CONSUMERS, the claim its only GPUs, and the claim free or
 * reserved only for them. *holder: p holds the devices (the first consumer by key). */
static const char *shared_why(const struct kclaims *c, const struct kpod *p, const char *key,
                              const struct kclaim *x, bool *holder, struct arena *a)
{
    uint32_t n;
    const struct kpod *const *v = consumers(c, key, &n);
    *holder = n == 0 || v[0] == p;
    if (n > KDRA_MAX_CONSUMERS)
        return arena_printf(a, "resourceclaim %s: %u pods use it, at most %d (status.reservedFor)",
                            key, n, KDRA_MAX_CONSUMERS);
    const char **uids = arena_calloc(a, n + 1, sizeof(*uids));
    if (!uids)
        return "out of memory";
    for (uint32_t i = 0; i < n; i++) {
        if (!v[i]->ours || !v[i]->group || !p->group || strcmp(v[i]->group, p->group) != 0)
            return arena_printf(a,
                                "resourceclaim %s is shared by pods of several gangs or "
                                "schedulers (%s and %s): gangsched allocates a shared claim for "
                                "the pods of one gang",
                                key, p->key, v[i]->key);
        uids[i] = v[i]->uid;
    }
    if (p->n_claims > 1 || p->gpus_own > 0 || x->all)
        return arena_printf(a,
                            "resourceclaim %s: a claim shared by several pods must be their only "
                            "GPUs (pod %s has others), and not allocationMode All",
                            key, p->key);
    if (!p->node && !kdra_claim_free_for_all(x, uids, n))
        return arena_printf(a, "ResourceClaim %s is allocated to consumers outside gang %s", key,
                            p->group);
    return NULL;
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

const char *kclaims_demand(const struct kclaims *c, const struct cluster *cl, struct kpod *p,
                           struct arena *a)
{
    p->req.v[RES_GPU] = p->gpus_own;
    int cr = res_lookup(KCD_RESOURCE); /* channels: counted again below */
    if (cr >= 0)
        p->req.v[cr] = 0;
    if (c->class_res >= 0)
        p->req.v[c->class_res] = 0;
    const char *why = p->claim_wait;
    uint32_t n_all = 0, n_gpu_claims = 0;
    for (uint32_t i = 0; i < p->n_claims; i++) {
        const struct kclaim *x = strmap_get((struct strmap *)&c->claims, p->claims[i]);
        if (!x) {
            why = why ? why : arena_printf(a, "waiting for ResourceClaim %s", p->claims[i]);
            continue;
        }
        uint32_t users;
        consumers(c, p->claims[i], &users);
        bool holder = true;
        const char *sw = users > 1 ? shared_why(c, p, p->claims[i], x, &holder, a) : NULL;
        if (!holder) { /* a shared claim's devices count once: on its first consumer */
            why = why ? why : sw;
            continue;
        }
        p->req.v[RES_GPU] += x->gpus;
        if (x->channels && !x->unsupported)
            why = why ? why : kclaims_channel(c, p, x, a);
        n_all += x->all; /* every GPU of a node: added below */
        n_gpu_claims += x->gpus > 0 || x->all;
        if (x->deleting && !p->node) /* kube-scheduler: "resourceclaim ... is being deleted" */
            why = why ? why
                      : arena_printf(a, "resourceclaim %s is being deleted (deletionTimestamp set)",
                                     p->claims[i]);
        else if (x->unsupported)
            why = why ? why : x->unsupported;
        else if (sw)
            why = why ? why : sw;
        else if (users <= 1 && !p->node && !kdra_claim_free_for(x, p->uid))
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

int kclaims_node_filter(const struct kclaims *c, const struct cluster *cl, const struct kpod *p,
                        struct arena *a, struct podset *ps)
{
    const struct kclaim *sel[8];
    uint32_t n_sel = 0;
    const char *pin = NULL; /* a claim allocated to others that the pod joins: its node */
    for (uint32_t i = 0; i < p->n_claims && n_sel < 8; i++) {
        const struct kclaim *x = strmap_get((struct strmap *)&c->claims, p->claims[i]);
        if (x && kdra_claim_has_selectors(x))
            sel[n_sel++] = x;
        if (x && x->alloc_node && kdra_claim_joins(x, p->uid))
            pin = x->alloc_node;
    }
    if (n_sel == 0 && !pin)
        return 0;
    bool all = false;
    for (uint32_t s = 0; s < n_sel; s++)
        all |= sel[s]->all;
    const char **names = arena_calloc(a, cl->n_nodes + 1, sizeof(*names));
    if (!names)
        return SCHED_ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < cl->n_nodes; i++) {
        const struct node *nd = &cl->nodes[i];
        bool ok = nd->n_gpus > 0 && (!all || nd->n_gpus == cl->max_node_gpus) &&
                  (!pin || strcmp(nd->name, pin) == 0);
        const struct cel_device *devs[NODE_MAX_GPUS];
        for (uint32_t g = 0; g < nd->n_gpus && ok; g++)
            ok = dra_inv_device(c->dra, nd->name, g, NULL, NULL, &devs[g]) && devs[g];
        for (uint32_t s = 0; s < n_sel && ok; s++)
            ok = kdra_claim_node_ok(sel[s], devs, nd->n_gpus);
        if (ok)
            names[k++] = nd->name;
    }
    uint32_t nt = ps->n_affinity ? ps->n_affinity : 1;
    struct sel_term *terms = arena_calloc(a, nt, sizeof(*terms));
    if (!terms)
        return SCHED_ENOMEM;
    for (uint32_t t = 0; t < nt; t++) {
        const struct sel_term *old = ps->n_affinity ? &ps->affinity[t] : NULL;
        uint32_t n = old ? old->n_reqs : 0;
        struct sel_req *reqs = arena_calloc(a, n + 1, sizeof(*reqs));
        if (!reqs)
            return SCHED_ENOMEM;
        if (n)
            memcpy(reqs, old->reqs, n * sizeof(*reqs));
        reqs[n] = (struct sel_req){
            .key = "metadata.name", .field = true, .op = SEL_IN, .values = names, .n_values = k};
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
        uint32_t users;
        const struct kpod *const *v = consumers(c, p->claims[i], &users);
        if (users > 1 && v[0] != p)
            continue; /* a shared claim's devices are its first consumer's */
        for (uint32_t k = 0; cl && k < cl->n_alloc; k++) {
            int g = dra_inv_index(c->dra, node, cl->alloc[k].pool, cl->alloc[k].device);
            if (g >= 0 && g < 32 && !(m & (1u << g))) {
                m |= 1u << g;
                n++;
            }
        }
    }
    *mask = m;
    return n > 0 && n == p->req.v[RES_GPU];
}

/* ---- devices held by allocated claims ----------------------------------------------------- */

void kclaims_note_counted(struct kclaims *c, const struct kpod *p)
{
    for (uint32_t i = 0; i < p->n_claims && !c->counted_lost; i++) {
        uint32_t users;
        const struct kpod *const *v = consumers(c, p->claims[i], &users);
        if (users > 1 && v[0] != p)
            continue; /* a shared claim's devices are its first consumer's (kclaims_demand) */
        if (strmap_put(&c->counted, p->claims[i], (void *)1, NULL) != 0)
            c->counted_lost = true; /* over-counts rather than hands devices out twice */
    }
}

/* Claim x (key) is left to the one pending pod of ours that names it (not counted on a node:
 * neither bound nor assumed), whose demand asks its GPUs: a claim reserved for it alone (an
 * earlier attempt's: its bind writes the claim again, and a 422 rolls back and deallocates it;
 * counted here, the pod could wait for ever on a full cluster). No pod runs on its devices. An
 * idle claim (reserved for nobody) is never left: it always counts. */
static bool left_to_pending(const struct kclaims *c, const char *key, const struct kclaim *x)
{
    uint32_t users;
    const struct kpod *const *v = consumers(c, key, &users);
    if (users != 1 || !v[0]->ours || v[0]->node)
        return false;
    return x->n_reserved > 0 && kdra_claim_free_for(x, v[0]->uid);
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
        int64_t add = bits_popc32(mask); /* GPUs, each device once */
        state[n].gpu_used |= mask;
        state[n].used.v[RES_GPU] += add;
        if (c->class_res >= 0) /* DRA nodes hold as many of the class's slot as GPUs */
            state[n].used.v[c->class_res] += add;
    }
}
