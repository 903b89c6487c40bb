/* sched/kube/driver_unreserve.c: the claims of a rolled-back gang's member whose Binding did not
 * happen, given back (kube-scheduler's DynamicResources Unreserve and the PostFilter that frees a
 * claim reserved for nobody): its reservedFor entry, a PodGroup's entry (KEP-5729) while no pod of
 * the group is placed, and then an allocation this gang's writes (or an earlier attempt's) made.
 *
 * Owns: those writes. Must not touch: the placement, the store, the Bindings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/kube/driver_int.h"

struct kunreserve {
    struct kdrv *d;
    bool made;   /* the gang's writes carried the claim's allocation */
    bool listed; /* the cache had the claim reserved for the pod (an earlier attempt's) */
    char key[KOBJ_KEY_MAX], node[256];
    char path[KOBJ_KEY_MAX + 88]; /* the claim's status path */
};

static void unreserve_done(struct kunreserve *u)
{
    if (u->d->unreserves_left > 0)
        u->d->unreserves_left--;
    free(u);
}

static void on_deallocated(void *ctx, const struct kube_resp *r)
{
    struct kunreserve *u = ctx;
    if (r->status >= 200 && r->status < 300) {
        kdrv_claim_answer_to_cache(u->d, r);
        LOG_INFO(KDRV_MOD, "resourceclaim deallocated after its gang rolled back: claim=%s",
                 u->key);
    } else { /* 409: a consumer was added meanwhile, the allocation is theirs now */
        LOG_WARN(KDRV_MOD, "resourceclaim not deallocated: claim=%s status=%d error=%s", u->key,
                 r->status, r->error ? r->error : "");
    }
    unreserve_done(u);
}

static void on_unreserved(void *ctx, const struct kube_resp *r)
{
    struct kunreserve *u = ctx;
    struct kdrv *d = u->d;
    if (r->status < 200 || r->status >= 300) {
        /* as upstream: "we will get here again when pod scheduling is retried"; the claim
         * controller also releases it once the pod is gone or terminated */
        LOG_WARN(KDRV_MOD, "resourceclaim unreserve failed: claim=%s status=%d error=%s", u->key,
                 r->status, r->error ? r->error : "");
        unreserve_done(u);
        return;
    }
    kdrv_claim_answer_to_cache(d, r);
    const struct kclaim *cl = kcache_claim(d->cache, u->key);
    /* reserved for nobody now, and allocated for this pod (by this gang's writes on the node
     * it chose, or by an earlier attempt that reserved it for the pod): the allocation goes too
     * (as kube-scheduler's PostFilter frees a claim reserved for nobody or only for the pod),
     * so that the retry may choose another node; the claim controller would not: it
     * deallocates only when it removes the last consumer itself */
    bool ours =
        u->listed || (u->made && cl && cl->alloc_node && strcmp(cl->alloc_node, u->node) == 0);
    if (cl && ours && cl->allocated && cl->n_reserved == 0 && cl->rv && kdrv_may_lead(d)) {
        cJSON *body = kdra_claim_deallocate(cl->rv);
        if (body) {
            kdrv_send_or_fail(d, KUBE_PATCH_MERGE, u->path, body, on_deallocated, u);
            return;
        }
    }
    unreserve_done(u);
}

/* Whether the writes of some member of gb reserved claim i of member b (or may have), and
 * whether one of them carried its allocation: b's own, or every consumer's of a shared claim
 * (s). */
static void gang_claim_writes(const struct kgang_binds *gb, const struct kbind *b, uint32_t i,
                              const struct kshared *s, bool *reserved, bool *made)
{
    *reserved = i < 32 && (b->claims_reserved >> i) & 1u;
    *made = i < 32 && (b->claims_made >> i) & 1u;
    for (uint32_t u = 0; s && u < s->n_uses; u++) {
        const struct kbind *m = &gb->pods[s->uses[u].pod];
        uint32_t k = s->uses[u].idx;
        *reserved |= k < 32 && (m->claims_reserved >> k) & 1u;
        *made |= k < 32 && (m->claims_made >> k) & 1u;
    }
}

struct placed_ctx {
    const char *key, *uid;
    bool placed;
};

static void note_placed(void *ctx, const struct kpod *q)
{
    struct placed_ctx *x = ctx;
    for (uint32_t k = 0; q->node && !x->placed && k < q->n_claims; k++)
        x->placed = strcmp(q->claims[k], x->key) == 0 && strcmp(kdra_who(q, k), x->uid) == 0;
}

/* Whether member b's rollback takes PodGroup entry `uid` out of claim `key`'s reservedFor
 * (KEP-5729): kube-scheduler's Unreserve leaves such an entry ("other Pods in the group may
 * still need this claim") and its PostFilter removes it while no pod of the group is scheduled
 * (unreservePodGroupClaims). So: no member of the gang reserved under it (b, or the consumers
 * of shared claim s) is bound or may be (a Binding that succeeded, or without a definite
 * answer, or someone else's), no pod of the group naming the claim is on a node, and b is the
 * first of those members (one patch). */
static bool group_entry_leaves(struct kdrv *d, const struct kgang_binds *gb, const struct kbind *b,
                               const struct kpod *p, const struct kshared *s, const char *key,
                               const char *uid)
{
    bool first = true;
    for (uint32_t u = 0; s && u < s->n_uses; u++) {
        const struct kbind *m = &gb->pods[s->uses[u].pod];
        const struct kpod *q = kcache_pod(d->cache, m->pod_key);
        if (!q || s->uses[u].idx >= q->n_claims || strcmp(kdra_who(q, s->uses[u].idx), uid) != 0)
            continue;
        if (m->ok || m->unknown || m->foreign || q->node)
            return false;
        first &= m->index >= b->index;
    }
    struct placed_ctx x = {.key = key, .uid = uid};
    if (first && p->group)
        kcache_each_gang_pod(d->cache, p->group, note_placed, &x);
    return first && !x.placed;
}

/* kube-scheduler's DynamicResources Unreserve for member b of a rolled-back gang, whose Binding
 * definitely did not happen: its reservedFor entry leaves every claim the gang's writes reserved
 * for it (or that lists it), by a strategic merge patch of the claim's status; a PodGroup's
 * entry (KEP-5729) only when no pod of the group is placed (group_entry_leaves); a claim left
 * reserved for nobody whose allocation the gang wrote on that node, or that was reserved for
 * the pod before (an earlier attempt's), is then deallocated (on_unreserved). The
 * next cycle waits for the answers (cycle_due), which go into the cache. */
void kdrv_unreserve_claims(struct kdrv *d, struct kgang_binds *gb, const struct kbind *b)
{
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    for (uint32_t i = 0; p && p->uid && i < p->n_claims && kdrv_may_lead(d); i++) {
        const struct kclaim *cl = kcache_claim(d->cache, p->claims[i]);
        const char *who = kdra_who(p, i);
        struct kshared *s = NULL;
        bool reserved, made, listed = false;
        if (kdrv_shared(d, gb, p->claims[i], &s) != 0) {
            LOG_ERROR(KDRV_MOD, "out of memory unreserving claim %s", p->claims[i]);
            continue;
        }
        gang_claim_writes(gb, b, i, s, &reserved, &made);
        for (uint32_t k = 0; cl && k < cl->n_reserved; k++)
            listed |= strcmp(cl->reserved[k], who) == 0;
        if (!cl || !(reserved || listed) ||
            (who != p->uid && !group_entry_leaves(d, gb, b, p, s, p->claims[i], who)))
            continue;
        bool adopted = i < 32 && (b->claims_adopt >> i) & 1u; /* never ours to deallocate */
        cJSON *body = kdra_claim_unreserve(cl->uid, who);
        struct kunreserve *u = body ? calloc(1, sizeof(*u)) : NULL;
        if (!u) {
            cJSON_Delete(body);
            LOG_ERROR(KDRV_MOD, "out of memory unreserving claim %s", p->claims[i]);
            continue;
        }
        u->d = d;
        u->made = made && !adopted;
        u->listed = listed && !adopted;
        snprintf(u->key, sizeof(u->key), "%s", p->claims[i]);
        snprintf(u->node, sizeof(u->node), "%s", b->node);
        snprintf(u->path, sizeof(u->path),
                 "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status", p->ns,
                 cl->name);
        d->unreserves_left++;
        kdrv_send_or_fail(d, KUBE_PATCH_STRATEGIC, u->path, body, on_unreserved, u);
    }
}
