/* sched/kube/cache_cpg.c: CompositePodGroups (scheduling.k8s.io/v1alpha3, Kubernetes 1.37 alpha):
 * which gang a native pod belongs to, and how the child PodGroups of a gang CompositePodGroup
 * make one gang (kcache_gang_of, kcache_cpg_plan; see cache_int.h).
 *
 * Upstream (scheduling/v1alpha3 types.go, KEP-4671 follow-ups): a CompositePodGroup with
 * schedulingPolicy gang{minGroupCount} admits its tree only when at least minGroupCount child
 * groups are schedulable together, each with its own minCount; its
 * schedulingConstraints.topology puts the whole tree in one domain, a child's in one domain of
 * its own key. Here the tree is one gang keyed "ns/cpg:name": its first minGroupCount children
 * that have their minCount pods (those with bound members first, then by name) are placed
 * all or nothing, minCount pods each, the children as slices of the gang when they have a
 * topology key of their own (one key, one minCount, one pod spec: the core's slices); once
 * the tree runs, each further child starts as a gang of its minCount pods and further pods
 * of a running child one at a time, pinned (a node selector) to the tree's domain and to their
 * child's, as kube-scheduler places a group's pods beyond minCount one by one. A basic
 * CompositePodGroup's children are scheduled as the groups they are.
 *
 * Must not touch: the network, the store, the cache's records (read only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/kube/cache_int.h"
#include "sched/kube/native.h"

const char *kcache_gang_of(const struct kcache *c, const struct kpod *p, char *buf, size_t n,
                           const struct kpg **pg_out, bool *cpg_out)
{
    *cpg_out = false;
    *pg_out = NULL;
    if (!p->group)
        return p->key;
    const struct kpg *pg = strmap_get(&c->pgs, p->pg_ref ? p->pg_ref : p->group);
    if (pg && pg->parent && knative_cpg_key(pg->ns, pg->parent, buf, n) == 0) {
        const struct kpg *cpg = strmap_get(&c->pgs, buf);
        /* a basic CompositePodGroup at the root without a constraint: its children are the
         * groups they are */
        if (!(cpg && cpg->basic && !cpg->parent && !cpg->topology_key)) {
            *cpg_out = true;
            *pg_out = cpg;
            return buf;
        }
    }
    *pg_out = pg;
    return pg && pg->basic ? p->key : p->group; /* native basic policy: each pod alone */
}

/* ---- one tree's plan --------------------------------------------------------------------------
 */

/* A child PodGroup of the tree while planning: its pods sorted by name. */
struct child {
    const char *key;
    const struct kpg *pg;
    uint32_t min; /* its minCount (basic: 1) */
    struct kpod **pending;
    uint32_t n_pending, n_live, n_dying;
    const struct kpod *live_one; /* a bound live member: where its domain is */
};

static const char *child_key(const struct kpod *p)
{
    return p->pg_ref ? p->pg_ref : p->group ? p->group : p->key;
}

static int cmp_pod_child(const void *a, const void *b)
{
    const struct kpod *x = *(const struct kpod *const *)a, *y = *(const struct kpod *const *)b;
    int r = strcmp(child_key(x), child_key(y));
    return r ? r : strcmp(x->name, y->name);
}

static bool terminal(const struct kpod *p)
{
    return p->phase == KPOD_SUCCEEDED || p->phase == KPOD_FAILED;
}

/* The tree's children from its pods (each array sorted by child, then name, here). */
static struct child *children(const struct kcache *c, struct kpod **pending, uint32_t n_pending,
                              struct kpod **bound, uint32_t n_bound, struct arena *a, uint32_t *n)
{
    qsort(pending, n_pending, sizeof(*pending), cmp_pod_child);
    qsort(bound, n_bound, sizeof(*bound), cmp_pod_child);
    struct child *ch = arena_calloc(a, n_pending + n_bound + 1, sizeof(*ch));
    if (!ch)
        return NULL;
    uint32_t k = 0, i = 0, j = 0;
    while (i < n_pending || j < n_bound) { /* a merge of the two by child key */
        const char *pk = i < n_pending ? child_key(pending[i]) : NULL;
        const char *bk = j < n_bound ? child_key(bound[j]) : NULL;
        const char *key = !pk ? bk : !bk ? pk : strcmp(pk, bk) <= 0 ? pk : bk;
        struct child *x = &ch[k++];
        x->key = key;
        x->pg = strmap_get(&c->pgs, key);
        x->min = x->pg && !x->pg->basic && x->pg->min_member ? x->pg->min_member : 1;
        x->pending = &pending[i];
        for (; i < n_pending && strcmp(child_key(pending[i]), key) == 0; i++)
            x->n_pending++;
        for (; j < n_bound && strcmp(child_key(bound[j]), key) == 0; j++) {
            const struct kpod *p = bound[j];
            if (terminal(p))
                continue;
            if (p->deleting) {
                x->n_dying++;
            } else {
                x->n_live++;
                x->live_one = x->live_one ? x->live_one : p;
            }
        }
        /* native: a minCount raised after the group was scheduled applies to later cycles */
        if (knative_min_raised(x->pg) && x->n_live > 0 && x->n_live < x->min)
            x->min = x->n_live;
    }
    *n = k;
    return ch;
}

/* Those with live members first, then by key (the order children are chosen in). */
static int cmp_child(const void *a, const void *b)
{
    const struct child *x = a, *y = b;
    if ((x->n_live > 0) != (y->n_live > 0))
        return x->n_live > 0 ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* The value of node label `key` where p runs, or NULL. */
static const char *domain_of(const struct kcache *c, const struct kpod *p, const char *key)
{
    const struct kassume *am = p->node ? NULL : strmap_get(&c->assumed, p->key);
    int ix = kcache_node_index(c, p->node ? p->node : am ? am->node : "");
    return ix >= 0 && key ? node_label(&c->cluster->nodes[ix], key) : NULL;
}

/* Appends a pin (node label key = the value where `where` runs) to the plan. */
static void pin(const struct kcache *c, struct kcpg_plan *out, const struct kpod *where,
                const char *key)
{
    const char *v = where ? domain_of(c, where, key) : NULL;
    if (v && out->n_pins < KCPG_PINS)
        out->pins[out->n_pins++] = (struct kv){.key = key, .value = v};
}

/* The tree's first gang: the chosen children's minCount pods each, children as slices when
 * they have a topology key. 0, SCHED_ENOMEM; a layout it cannot place: out->reason. */
static int first_gang(const struct kpg *cpg, struct child *ch, uint32_t k, struct arena *a,
                      struct kcpg_plan *out)
{
    uint32_t total = 0;
    for (uint32_t x = 0; x < k; x++)
        total += ch[x].min;
    if (!(out->members = arena_calloc(a, total ? total : 1, sizeof(*out->members))))
        return SCHED_ENOMEM;
    const char *sk = NULL;
    bool mixed = false;
    for (uint32_t x = 0; x < k; x++) {
        memcpy(out->members + out->n_members, ch[x].pending, ch[x].min * sizeof(*out->members));
        out->n_members += ch[x].min;
        const char *tk = ch[x].pg ? ch[x].pg->topology_key : NULL;
        if (x == 0)
            sk = tk;
        mixed |= !kobj_same_str(sk, tk) || ch[x].min != ch[0].min;
    }
    out->min = total;
    out->topo_key = cpg->topology_key;
    if (sk && mixed) {
        out->reason = "InvalidSpec";
        out->message = arena_printf(a,
                                    "compositepodgroup %s/%s: its child pod groups have "
                                    "topology constraints of different keys or minCounts; "
                                    "gangsched places children with a topology constraint "
                                    "as slices of one gang, which need one key and one minCount",
                                    cpg->ns, cpg->name);
        return out->message ? 0 : SCHED_ENOMEM;
    }
    out->slice_key = sk;
    out->slice_size = sk ? ch[0].min : 0;
    return 0;
}

/* The tree runs: its next gang (a child that has no member running, minCount pods; else one
 * pod of a running child), pinned to the domains of the tree and of the child. */
static int next_gang(const struct kcache *c, const struct kpg *cpg, struct child *ch, uint32_t n,
                     struct arena *a, struct kcpg_plan *out)
{
    const struct kpod *any = NULL; /* a live member of the tree */
    for (uint32_t x = 0; x < n && !any; x++)
        any = ch[x].live_one;
    const struct child *next = NULL, *waits = NULL;
    for (uint32_t x = 0; x < n && !next; x++) {
        const struct child *y = &ch[x];
        if (y->n_pending == 0)
            continue;
        if (y->n_live > 0 || y->n_pending >= y->min)
            next = y;
        else if (!waits && y->n_dying == 0)
            waits = y;
    }
    if (!next) {
        out->reason = "WaitingForPods";
        out->message = arena_printf(a,
                                    "compositepodgroup %s/%s runs; child pod group %s: %u of "
                                    "minCount %u pods exist",
                                    cpg->ns, cpg->name, waits ? waits->key : "?",
                                    waits ? waits->n_pending : 0, waits ? waits->min : 0);
        return out->message ? 0 : SCHED_ENOMEM;
    }
    uint32_t take = next->n_live > 0 ? 1 : next->min;
    out->members = next->pending;
    out->n_members = take;
    out->min = take;
    if (!(out->pins = arena_calloc(a, KCPG_PINS, sizeof(*out->pins))))
        return SCHED_ENOMEM;
    pin(c, out, any, cpg->topology_key);
    const char *tk = next->pg ? next->pg->topology_key : NULL;
    if (next->n_live > 0)
        pin(c, out, next->live_one, tk); /* a running child's pods join its domain */
    else
        out->topo_key = tk; /* a new child: one domain of its key, inside the tree's */
    return 0;
}

int kcache_cpg_plan(const struct kcache *c, const struct kpg *cpg, struct kpod **pending,
                    uint32_t n_pending, struct kpod **bound, uint32_t n_bound, struct arena *a,
                    struct kcpg_plan *out)
{
    memset(out, 0, sizeof(*out));
    if (cpg->parent || cpg->basic) {
        out->reason = "InvalidSpec";
        out->message =
            cpg->parent
                ? arena_printf(a,
                               "compositepodgroup %s/%s has a parent (%s): gangsched schedules "
                               "hierarchies of one CompositePodGroup over PodGroups only",
                               cpg->ns, cpg->name, cpg->parent)
                : arena_printf(a,
                               "compositepodgroup %s/%s: a basic policy with "
                               "schedulingConstraints.topology (children placed apart, in one "
                               "domain) is not scheduled by gangsched",
                               cpg->ns, cpg->name);
        return out->message ? 0 : SCHED_ENOMEM;
    }
    uint32_t n;
    struct child *ch = children(c, pending, n_pending, bound, n_bound, a, &n);
    if (!ch)
        return SCHED_ENOMEM;
    qsort(ch, n, sizeof(*ch), cmp_child);
    uint32_t k = cpg->min_groups ? cpg->min_groups : 1, n_whole = 0, n_ready = 0, live = 0;
    uint32_t need = 0, min_whole = 0; /* minCounts of the first k ready, of the first k whole */
    const struct child *short_one = NULL;
    for (uint32_t x = 0; x < n; x++) {
        bool whole = ch[x].n_live >= ch[x].min;
        bool ready = ch[x].n_live + ch[x].n_pending >= ch[x].min;
        live += ch[x].n_live;
        if (whole && n_whole++ < k)
            min_whole += ch[x].min;
        if (ready && n_ready++ < k)
            need += ch[x].min;
        if (!ready && !short_one)
            short_one = &ch[x];
    }
    out->whole = n_whole >= k;
    /* the running tree's minimum: the least its whole children need; below quorum, more than
     * it has (the lifecycle tears a tree below quorum down: a gang never runs partial) */
    out->min = out->whole ? min_whole : need > live ? need : live + 1;
    if (n_pending == 0)
        return 0; /* a running gang only */
    if (live > 0 && !out->whole) {
        out->reason = "PartialGang";
        out->message = arena_printf(a,
                                    "%u of minGroupCount %u child pod groups of compositepodgroup "
                                    "%s/%s have their minCount members bound; they are deleted "
                                    "before the tree is placed again (a gang starts whole)",
                                    n_whole, k, cpg->ns, cpg->name);
        return out->message ? 0 : SCHED_ENOMEM;
    }
    if (out->whole)
        return next_gang(c, cpg, ch, n, a, out);
    if (n_ready < k) {
        /* kube-scheduler's PreEnqueue words for a hierarchy below quorum, with the numbers */
        out->reason = "WaitingForPods";
        out->message =
            arena_printf(a,
                         "waiting for composite pod group \"%s\" tree to meet "
                         "quorum: %u of minGroupCount %u child pod groups have their "
                         "minCount pods (%s: %u of %u)",
                         cpg->name, n_ready, k, short_one ? short_one->key : "none yet",
                         short_one ? short_one->n_pending : 0, short_one ? short_one->min : 0);
        return out->message ? 0 : SCHED_ENOMEM;
    }
    /* the first k ready children, in choosing order */
    uint32_t w = 0;
    for (uint32_t x = 0; x < n; x++)
        if (ch[x].n_live + ch[x].n_pending >= ch[x].min)
            ch[w++] = ch[x];
    return first_gang(cpg, ch, k, a, out);
}
