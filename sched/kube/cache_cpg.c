/* sched/kube/cache_cpg.c: CompositePodGroups (scheduling.k8s.io/v1alpha3, Kubernetes 1.37 alpha):
 * which gang a native pod belongs to, and how a tree of gang CompositePodGroups over PodGroups
 * makes one gang (kcache_gang_of, kcache_cpg_plan; see cache_int.h).
 *
 * Upstream (scheduling/v1alpha3 types.go, KEP-4671 follow-ups): a CompositePodGroup with
 * schedulingPolicy gang{minGroupCount} admits its subtree only when at least minGroupCount of its
 * child groups (PodGroups, or CompositePodGroups in turn, at most 4 levels) are schedulable
 * together, a PodGroup with its minCount pods; a group's schedulingConstraints.topology keeps its
 * subtree in one domain of its key. Here the tree under the highest gang CompositePodGroup is one
 * gang keyed "ns/cpg:name". Its first gang takes, level by level, the first minGroupCount ready
 * children of each group (those with members running first, then by name) and minCount pods of
 * each PodGroup chosen, all or nothing; the tree's own key is the gang's required level, and
 * the groups of one level below it with a key of their own are the gang's slices (the core's
 * slices: one key, one size, one pod spec). Once the tree runs, each further group starts as a
 * gang of its own first gang, and further pods of a running PodGroup one at a time, pinned by
 * a node selector to the domains its running ancestors hold, as kube-scheduler places a group's
 * pods beyond minCount one by one. A group of a running tree below its own minimum while the
 * tree keeps its quorum without it (it lost members) is short: its live pods are named in the
 * plan (kcache_cpg_short) for the lifecycle to delete, and it is not grown meanwhile; it starts
 * again whole. A basic CompositePodGroup at the root without a constraint leaves its children
 * the groups they are.
 *
 * Must not touch: the network, the store, the cache's records (read only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/kube/cache_int.h"
#include "sched/kube/native.h"

#define TREE_DEPTH 4 /* CompositePodGroup levels above a PodGroup (WorkloadMaxTreeDepth) */

const struct kpg *kcache_pg_parent(const struct kcache *c, const struct kpg *pg, char *key,
                                   size_t n)
{
    char own[KOBJ_KEY_MAX];
    if (!key) {
        key = own;
        n = sizeof(own);
    }
    if (!pg || !pg->parent || knative_cpg_key(pg->ns, pg->parent, key, n) != 0) {
        *key = '\0';
        return NULL;
    }
    return strmap_get(&c->pgs, key);
}

/* The unit a PodGroup's pods are scheduled in: the highest CompositePodGroup above pg reached
 * through gang ones only (NULL: none, pg's pods are its own group), its key in buf; *why when
 * the layout is one gangsched does not schedule (the unit is then its parent), *missing when a
 * CompositePodGroup above is not seen (the unit is then that one, key in buf). */
static const struct kpg *tree_unit(const struct kcache *c, const struct kpg *pg, char *buf,
                                   size_t n, const char **why, bool *missing)
{
    const struct kpg *unit = NULL, *at = pg;
    char key[KOBJ_KEY_MAX];
    *why = NULL;
    *missing = false;
    for (int depth = 0; at->parent; depth++) {
        if (depth == TREE_DEPTH) {
            *why = "more than 4 levels of CompositePodGroups above a PodGroup (or a cycle)";
            break;
        }
        const struct kpg *up = kcache_pg_parent(c, at, key, sizeof(key));
        if (!up && !*key)
            break;
        if (!up) {
            *missing = true;
            snprintf(buf, n, "%s", key);
            return NULL;
        }
        if (up->basic) { /* its children are scheduled independently: above it, nothing holds */
            if (up->topology_key || up->parent)
                *why = "a basic CompositePodGroup with a topology constraint or a parent above "
                       "its PodGroups";
            break;
        }
        unit = at = up;
    }
    if (*why && !unit) /* pg's own parent */
        unit = kcache_pg_parent(c, pg, NULL, 0);
    if (unit)
        snprintf(buf, n, "%s", unit->key);
    return unit;
}

const char *kcache_gang_of(const struct kcache *c, const struct kpod *p, char *buf, size_t n,
                           const struct kpg **pg_out, bool *cpg_out, const char **why)
{
    *cpg_out = false;
    *pg_out = NULL;
    *why = NULL;
    if (!p->group)
        return p->key;
    const struct kpg *pg = strmap_get(&c->pgs, p->pg_ref ? p->pg_ref : p->group);
    if (pg && pg->parent) {
        bool missing;
        const struct kpg *unit = tree_unit(c, pg, buf, n, why, &missing);
        if (unit || missing) {
            *cpg_out = true;
            *pg_out = unit;
            return buf;
        }
    }
    *pg_out = pg;
    return pg && pg->basic ? p->key : p->group; /* native basic policy: each pod alone */
}

/* ---- one tree's plan --------------------------------------------------------------------------
 */

/* A group of the tree while planning: a PodGroup (leaf, its pods sorted by name) or a
 * CompositePodGroup (its children sorted: those with live members first, then by key). */
struct tnode {
    const char *key;
    const struct kpg *pg;
    bool leaf;
    uint32_t min; /* a PodGroup's minCount (basic: 1), a CompositePodGroup's minGroupCount */
    struct tnode **kids;
    uint32_t n_kids, cap_kids;
    struct kpod **pending, **bound; /* a leaf's, each sorted by name */
    uint32_t n_pending, n_bound, n_live, n_dying;
    /* derived (eval) */
    uint32_t live;               /* live members in the subtree */
    uint32_t n_whole;            /* a CompositePodGroup's children that run whole */
    bool ready, whole;           /* its minimum can start (pending and live) / runs (live) */
    uint32_t need, need_whole;   /* pods its first gang takes; the least its whole part needs */
    const struct kpod *live_one; /* a live member in the subtree: where its domains are */
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

struct tree {
    const struct kcache *c;
    struct arena *a;
    struct strmap nodes; /* key -> struct tnode* */
    struct tnode *root;
};

static int link_kid(struct tree *t, struct tnode *up, struct tnode *kid)
{
    if (up->n_kids == up->cap_kids) {
        uint32_t nc = up->cap_kids ? up->cap_kids * 2 : 4;
        struct tnode **v = arena_calloc(t->a, nc, sizeof(*v));
        if (!v)
            return SCHED_ENOMEM;
        if (up->n_kids)
            memcpy(v, up->kids, up->n_kids * sizeof(*v));
        up->kids = v;
        up->cap_kids = nc;
    }
    up->kids[up->n_kids++] = kid;
    return 0;
}

/* The node of group pg (NULL: none), made and linked under its parent up to the root when
 * new. */
static struct tnode *node_of(struct tree *t, const struct kpg *pg, int depth)
{
    struct tnode *x = pg ? strmap_get(&t->nodes, pg->key) : NULL;
    if (x || !pg || depth > TREE_DEPTH + 1)
        return x;
    if (!(x = arena_calloc(t->a, 1, sizeof(*x))) || strmap_put(&t->nodes, pg->key, x, NULL) != 0)
        return NULL;
    x->key = pg->key;
    x->pg = pg;
    x->leaf = pg->api != KPG_CPG_V1ALPHA3;
    x->min = x->leaf ? (!pg->basic && pg->min_member ? pg->min_member : 1)
                     : (pg->min_groups ? pg->min_groups : 1);
    if (pg == t->root->pg)
        return x;
    struct tnode *u = node_of(t, kcache_pg_parent(t->c, pg, NULL, 0), depth + 1);
    return u && link_kid(t, u, x) == 0 ? x : NULL;
}

/* The run of pods of one child in v[n] (sorted by child) that starts at i: its end in *end,
 * its group's node (NULL: a group out of this tree, changed since the pods were grouped). */
static struct tnode *run_at(struct tree *t, struct kpod **v, uint32_t n, uint32_t i, uint32_t *end)
{
    const char *key = child_key(v[i]);
    uint32_t j = i;
    while (j < n && strcmp(child_key(v[j]), key) == 0)
        j++;
    *end = j;
    return node_of(t, strmap_get(&t->c->pgs, key), 0);
}

/* The leaves' pods (each array sorted by child, then name, here) into the tree. */
static int add_pods(struct tree *t, struct kpod **pending, uint32_t n_pending, struct kpod **bound,
                    uint32_t n_bound)
{
    if (n_pending > 1) /* (qsort of a NULL array, even empty, is undefined) */
        qsort(pending, n_pending, sizeof(*pending), cmp_pod_child);
    if (n_bound > 1)
        qsort(bound, n_bound, sizeof(*bound), cmp_pod_child);
    for (uint32_t i = 0, j; i < n_pending; i = j) {
        struct tnode *x = run_at(t, pending, n_pending, i, &j);
        if (x) {
            x->pending = &pending[i];
            x->n_pending = j - i;
        }
    }
    for (uint32_t i = 0, j; i < n_bound; i = j) {
        struct tnode *x = run_at(t, bound, n_bound, i, &j);
        if (x) {
            x->bound = &bound[i];
            x->n_bound = j - i;
        }
        for (uint32_t k = i; x && k < j; k++) {
            const struct kpod *p = bound[k];
            if (terminal(p))
                continue;
            if (p->deleting) {
                x->n_dying++;
            } else {
                x->n_live++;
                x->live_one = x->live_one ? x->live_one : p;
            }
        }
    }
    return 0;
}

/* Those with live members first, then by key (the order children are chosen in). */
static int cmp_kid(const void *a, const void *b)
{
    const struct tnode *x = *(const struct tnode *const *)a, *y = *(const struct tnode *const *)b;
    if ((x->live > 0) != (y->live > 0))
        return x->live > 0 ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* ready, whole, need, need_whole and live of x's subtree. */
static void eval(struct tnode *x)
{
    if (x->leaf) {
        /* native: a minCount raised after the group was scheduled applies to later cycles */
        if (knative_min_raised(x->pg) && x->n_live > 0 && x->n_live < x->min)
            x->min = x->n_live;
        x->live = x->n_live;
        x->ready = x->n_live + x->n_pending >= x->min;
        x->whole = x->n_live >= x->min;
        x->need = x->need_whole = x->min;
        return;
    }
    for (uint32_t i = 0; i < x->n_kids; i++) {
        eval(x->kids[i]);
        x->live += x->kids[i]->live;
    }
    if (x->n_kids > 1)
        qsort(x->kids, x->n_kids, sizeof(*x->kids), cmp_kid);
    uint32_t n_ready = 0, n_whole = 0;
    for (uint32_t i = 0; i < x->n_kids; i++) {
        const struct tnode *k = x->kids[i];
        x->live_one = x->live_one ? x->live_one : k->live_one;
        if (k->ready && n_ready++ < x->min)
            x->need += k->need;
        if (k->whole && n_whole++ < x->min)
            x->need_whole += k->need_whole;
    }
    x->ready = n_ready >= x->min;
    x->whole = n_whole >= x->min;
    x->n_whole = n_whole;
}

/* The first gang of subtree x: the first min ready children of each group chosen (in their
 * order), minCount pods of each PodGroup, appended to out->members in depth-first order. */
static void collect(const struct tnode *x, struct kcpg_plan *out)
{
    if (x->leaf) {
        memcpy(out->members + out->n_members, x->pending, x->min * sizeof(*out->members));
        out->n_members += x->min;
        return;
    }
    for (uint32_t i = 0, taken = 0; i < x->n_kids && taken < x->min; i++)
        if (x->kids[i]->ready) {
            collect(x->kids[i], out);
            taken++;
        }
}

/* The keyed groups of the first gang of subtree x strictly below it, by depth below x (1 = its
 * children): their key, size, and whether every chosen group of that depth has one. */
struct keyed {
    const char *key;
    uint32_t size, n_keyed, n_all;
    bool mixed; /* keys or sizes differ */
};

static void keyed_levels(const struct tnode *x, int depth, struct keyed lv[TREE_DEPTH + 2])
{
    for (uint32_t i = 0, taken = 0; !x->leaf && i < x->n_kids && taken < x->min; i++) {
        const struct tnode *k = x->kids[i];
        if (!k->ready)
            continue;
        taken++;
        struct keyed *l = &lv[depth + 1];
        const char *key = k->pg->topology_key;
        l->n_all++;
        if (key) {
            l->mixed |= l->n_keyed > 0 && (!kobj_same_str(l->key, key) || l->size != k->need);
            l->key = key;
            l->size = k->need;
            l->n_keyed++;
        }
        keyed_levels(k, depth + 1, lv);
    }
}

/* out's gang from subtree x (its first gang): members, the required level (x's key) and the
 * slices (the one level below x whose chosen groups have keys). A layout the core cannot place
 * sets out->reason. 0 or SCHED_ENOMEM. */
static int gang_of(const struct tnode *x, struct arena *a, struct kcpg_plan *out)
{
    if (!(out->members = arena_calloc(a, x->need ? x->need : 1, sizeof(*out->members))))
        return SCHED_ENOMEM;
    collect(x, out);
    out->min = out->n_members;
    out->topo_key = x->pg->topology_key;
    struct keyed lv[TREE_DEPTH + 2] = {{0}};
    keyed_levels(x, 0, lv);
    int at = -1, n_at = 0;
    for (int d = 1; d < TREE_DEPTH + 2; d++)
        if (lv[d].n_keyed) {
            at = d;
            n_at++;
        }
    if (at < 0)
        return 0;
    if (n_at > 1 || lv[at].mixed || lv[at].n_keyed != lv[at].n_all) {
        out->reason = "InvalidSpec";
        out->message = arena_printf(a,
                                    "%s: the groups under it have topology constraints at more "
                                    "than one level, or of different keys or sizes; gangsched "
                                    "places the groups of one level with a constraint as slices "
                                    "of one gang, which need one key and one size",
                                    x->key);
        return out->message ? 0 : SCHED_ENOMEM;
    }
    out->slice_key = lv[at].key;
    out->slice_size = lv[at].size;
    return 0;
}

/* Appends a pin (node label key = the value where `where` runs) to the plan. */
static void pin(const struct kcache *c, struct kcpg_plan *out, const struct kpod *where,
                const char *key)
{
    const struct kassume *am = where && !where->node ? strmap_get(&c->assumed, where->key) : NULL;
    int ix = where ? kcache_node_index(c, where->node ? where->node : am ? am->node : "") : -1;
    const char *v = ix >= 0 && key ? node_label(&c->cluster->nodes[ix], key) : NULL;
    if (v && out->n_pins < KCPG_PINS)
        out->pins[out->n_pins++] = (struct kv){.key = key, .value = v};
}

/* The running tree's next gang under x (x has live members): the first group, depth first,
 * that has none running and can start (its first gang), else one more pod of a running
 * PodGroup; pinned to the domains x and the running groups on the way hold. true: found. */
static bool next_in(const struct kcache *c, const struct tnode *x, struct arena *a,
                    struct kcpg_plan *out, int *rc)
{
    if (x->leaf) {
        if (x->n_pending == 0)
            return false;
        out->members = x->pending;
        out->n_members = out->min = 1;
        pin(c, out, x->live_one, x->pg->topology_key);
        return true;
    }
    uint32_t pins = out->n_pins;
    pin(c, out, x->live_one, x->pg->topology_key);
    for (uint32_t i = 0; i < x->n_kids; i++) {
        const struct tnode *k = x->kids[i];
        if (k->live > 0 && k->whole && next_in(c, k, a, out, rc)) /* (short: torn down) */
            return true;
        if (k->live == 0 && k->n_dying == 0 && k->ready) {
            *rc = gang_of(k, a, out);
            return true;
        }
    }
    out->n_pins = pins; /* nothing under x */
    return false;
}

/* The live pods of subtree x into out->shorts, each with why. */
static void short_pods(const struct tnode *x, const char *why, struct kcpg_plan *out)
{
    for (uint32_t i = 0; x->leaf && i < x->n_bound; i++)
        if (!terminal(x->bound[i]) && !x->bound[i]->deleting)
            out->shorts[out->n_short++] = (struct kcpg_short){.pod = x->bound[i], .why = why};
    for (uint32_t i = 0; i < x->n_kids; i++)
        short_pods(x->kids[i], why, out);
}

/* The groups under x (x runs whole) that run below their own minimum, the highest of each
 * branch, into out->shorts (cap: the tree's live pods): a group started whole that lost
 * members since, the tree still holding its quorum without it. The lifecycle deletes their
 * live pods (eng_member.short_part) and the group starts again whole (next_in). */
static int find_short(const struct tnode *x, uint32_t cap, struct arena *a, struct kcpg_plan *out)
{
    for (uint32_t i = 0; i < x->n_kids; i++) {
        const struct tnode *k = x->kids[i];
        if (k->live == 0 || (k->whole && k->leaf))
            continue;
        if (k->whole) {
            int rc = find_short(k, cap, a, out);
            if (rc)
                return rc;
            continue;
        }
        if (!out->shorts && !(out->shorts = arena_calloc(a, cap, sizeof(*out->shorts))))
            return SCHED_ENOMEM;
        const char *why =
            k->leaf ? arena_printf(a, "podgroup %s/%s: %u of minCount %u pods live", k->pg->ns,
                                   k->pg->name, k->n_live, k->min)
                    : arena_printf(a,
                                   "compositepodgroup %s/%s: %u of minGroupCount %u child groups "
                                   "run whole",
                                   k->pg->ns, k->pg->name, k->n_whole, k->min);
        if (!why)
            return SCHED_ENOMEM;
        short_pods(k, why, out);
    }
    return 0;
}

static int cmp_short(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct kcpg_short *)a)->pod;
    uintptr_t y = (uintptr_t)((const struct kcpg_short *)b)->pod;
    return x < y ? -1 : x > y;
}

const char *kcache_cpg_short(const struct kcpg_plan *plan, const struct kpod *p)
{
    if (plan->n_short == 0)
        return NULL;
    struct kcpg_short key = {.pod = p};
    const struct kcpg_short *s = bsearch(&key, plan->shorts, plan->n_short, sizeof(key), cmp_short);
    return s ? s->why : NULL;
}

/* The first group (depth first) of a running tree that waits for pods, for the message. */
static const struct tnode *short_of(const struct tnode *x)
{
    if (!x->ready && x->live == 0)
        return x;
    for (uint32_t i = 0; i < x->n_kids; i++) {
        const struct tnode *s = short_of(x->kids[i]);
        if (s)
            return s;
    }
    return NULL;
}

static int waits(struct kcpg_plan *out, const char *reason, const char *msg)
{
    out->reason = reason;
    out->message = msg;
    return msg ? 0 : SCHED_ENOMEM;
}

/* The plan of a tree made (eval'd) from its pods. */
static int plan_tree(const struct kcache *c, const struct tnode *r, const struct kpg *cpg,
                     uint32_t n_pending, struct arena *a, struct kcpg_plan *out)
{
    out->whole = r->whole;
    /* the running tree's minimum: the least its whole part needs; below quorum, more than it
     * has (the lifecycle tears a tree below quorum down: a gang never runs partial) */
    out->min = r->whole ? r->need_whole : r->need > r->live ? r->need : r->live + 1;
    if (r->whole) {
        int rc = find_short(r, r->live, a, out);
        if (rc)
            return rc;
        if (out->n_short > 1)
            qsort(out->shorts, out->n_short, sizeof(*out->shorts), cmp_short);
    }
    if (n_pending == 0)
        return 0; /* a running gang only */
    if (r->live > 0 && !r->whole)
        return waits(out, "PartialGang",
                     arena_printf(a,
                                  "compositepodgroup %s/%s has members bound below its quorum "
                                  "(minGroupCount %u groups with their minimum); they are "
                                  "deleted before the tree is placed again (a gang starts whole)",
                                  cpg->ns, cpg->name, r->min));
    if (r->whole) {
        if (!(out->pins = arena_calloc(a, KCPG_PINS, sizeof(*out->pins))))
            return SCHED_ENOMEM;
        int rc = 0;
        if (next_in(c, r, a, out, &rc))
            return rc;
        const struct tnode *s = short_of(r);
        return waits(out, "WaitingForPods",
                     arena_printf(a, "compositepodgroup %s/%s runs; %s waits for its pods (%u)",
                                  cpg->ns, cpg->name, s ? s->key : "?", s ? s->n_pending : 0));
    }
    if (!r->ready) { /* kube-scheduler's PreEnqueue words for a tree below quorum */
        const struct tnode *s = short_of(r);
        uint32_t n_ready = 0;
        for (uint32_t i = 0; i < r->n_kids; i++)
            n_ready += r->kids[i]->ready;
        return waits(out, "WaitingForPods",
                     arena_printf(a,
                                  "waiting for composite pod group \"%s\" tree to meet quorum: "
                                  "%u of minGroupCount %u child groups can start (%s: %u pods)",
                                  cpg->name, n_ready, r->min, s && s != r ? s->key : "none yet",
                                  s && s != r ? s->n_pending : 0));
    }
    return gang_of(r, a, out);
}

int kcache_cpg_plan(const struct kcache *c, const struct kpg *cpg, const char *why,
                    struct kpod **pending, uint32_t n_pending, struct kpod **bound,
                    uint32_t n_bound, struct arena *a, struct kcpg_plan *out)
{
    memset(out, 0, sizeof(*out));
    if (why || cpg->basic)
        return waits(out, "InvalidSpec",
                     arena_printf(a,
                                  "compositepodgroup %s/%s: %s: gangsched does not schedule "
                                  "this layout",
                                  cpg->ns, cpg->name,
                                  why ? why
                                      : "a basic policy with schedulingConstraints.topology "
                                        "(children placed apart, in one domain)"));
    struct tree t = {.c = c, .a = a};
    strmap_init(&t.nodes);
    struct tnode root = {.key = cpg->key, .pg = cpg, .min = cpg->min_groups ? cpg->min_groups : 1};
    t.root = &root;
    int rc = strmap_put(&t.nodes, cpg->key, &root, NULL) != 0
                 ? SCHED_ENOMEM
                 : add_pods(&t, pending, n_pending, bound, n_bound);
    if (rc == 0) {
        eval(&root);
        rc = plan_tree(c, &root, cpg, n_pending, a, out);
    }
    strmap_fini(&t.nodes);
    return rc;
}
