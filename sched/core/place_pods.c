/* sched/core/place_pods.c: the pod rules in placement (required pod affinity and anti-affinity,
 * host ports, DoNotSchedule topology spreads; see place.h and model.h struct pod_meta).
 *
 * Owns: the pods committed this cycle (st->placed), the rows of nodes each pod set of the gang
 * being placed may use given the pods bound or placed before it (ANDed into st->elig, with the
 * filter that rejected each node for the verdict), the DoNotSchedule spreads kept per shape of
 * gang for the cycle (st->pods_kept: the nodes that count by domain and the pods counted, so the
 * next replica reads them instead of every node's policies and the pods; not in a preemption
 * trial nor under no_shortcuts), and the pod-by-pod placement of a gang whose pods constrain
 * each other.
 *
 * The rules are kube-scheduler's InterPodAffinity, NodePorts and PodTopologySpread filters,
 * evaluated against the pods bound (sched_snapshot.bound_pods) and those placed earlier in the
 * cycle, through the indexes of place_podix.c and the marks kept by place_podmark.c (a required
 * term's selection, the earlier pods' anti-affinity by kind, once large):
 * - an affinity term is met on a node whose domain (the nodes with its value of the term's
 *   topology key) holds a pod the term selects; a node without the key meets no term. When no
 *   pod anywhere is selected by any of the set's affinity terms and the set's own pods meet all of
 *   them, a first pod may go to any node with the keys (a series with affinity to itself);
 * - an anti-affinity term of the set forbids the domains holding a pod it selects, and an
 *   anti-affinity term of a bound or placed pod forbids its own domain to pods it selects;
 * - a host port (protocol and port) is taken at most once per node;
 * - a spread counts the pods its selector picks in the pod's namespace per domain of its key,
 *   over the nodes that count (model.h struct pod_spread), and refuses a node whose domain would
 *   exceed the smallest by more than maxSkew.
 * Anti-affinity and ports only grow stricter as pods are placed; affinity may be met by a
 * placement, which is why a gang with an affinity term has a shape of its own (gang.c).
 *
 * A gang whose pods constrain one another (an anti-affinity or affinity term or a spread that
 * selects its own pods, a host port shared by two of its pods) is placed pod by pod in the engine's
 * node order, its sets most GPUs per pod first as the other fills (place_set_order), each pod on
 * the first node where it fits and every rule holds against the pods placed so far, domain by
 * domain of its required level if it has one (those with the most preferred
 * nodes first: domains_by_tier); with an affinity to itself the
 * first pod is moved to another domain up to PODS_FIRST_TRIES times. Other gangs go through the
 * engine's usual search with the rows.
 *
 * A preemption plan's trial sees the pods of the gangs it releases as gone (sched_pod.set names
 * the running gang's pod set; place_release_pods counts the released pods per node), as
 * kube-scheduler's preemption removes the victims before it runs the filters again. Not
 * modelled: the start planner and reservations ignore these rules.
 *
 * Must not touch: anything outside place_state; the snapshot's pods are read only.
 */
#include <string.h>

#include "plugins/plugins.h"
#include "sched/core/bits.h"
#include "sched/core/place_internal.h"
#include "sched/core/podaff.h"

#define PODS_FIRST_TRIES 8 /* first-pod domains tried for a gang with affinity to itself */

/* An affinity term of a set of the gang being placed that the gang's own pods may meet. */
struct place_pods_term {
    const struct pod_term *t;
    uint32_t set;
    uint8_t *ext; /* [n]: the node's domain holds an earlier pod the term selects (the slot's
                     row, kept across its reuse by the next gangs) */
};

/* A spread constraint of a set of the gang being placed, counted per domain of its key. */
struct place_pods_spread {
    const struct pod_spread *sp;
    uint32_t set;
    bool own;  /* other pods of the gang may be selected: checked pod by pod */
    bool self; /* the set's own pods are selected (each adds one to its domain) */
    const struct place_keydom *kd; /* the nodes by the spread's key */
    const uint32_t *dom;           /* [n]: domain id of a node that counts, UINT32_MAX otherwise */
    uint32_t *cnt;                 /* [n_dom]: selected pods now */
    const uint32_t *cnt0;          /* [n_dom]: before the gang's own (a kept spread's counts) */
    uint32_t n_dom, min;           /* min: the smallest count (0 below min_domains domains) */
    uint32_t n_min;                /* domains whose count is min (when min is a count) */
    bool own_added;                /* cnt counts pods of the gang (spreads_add) */
    uint32_t *buf; /* [3n + 1] this slot's scratch: dom, cnt0 and cnt when not kept, reused
                      by the next gangs (survives the slot's reuse) */
};

/* A spread of one shape of gang's pod set kept for the cycle (its nodes that count by domain,
 * and the earlier live pods it selects per domain, [0, upto) counted): equal shapes, equal
 * filters and selections (gang.shape), so the next replica reads it instead of the nodes'
 * policies and the pods. At most SPREAD_KEPT_BYTES of the arena. */
#define SPREAD_KEPT_BYTES (64u << 20)
struct place_pods_kept {
    uint64_t shape;
    uint32_t set, k; /* the spread: meta->spread[k] of pod set `set` */
    uint32_t *dom, *cnt;
    uint32_t n_dom, upto;
};

/* Appends k to a list of the arena; false on out of memory. */
static bool note(struct place_state *st, uint32_t **list, uint32_t *n, uint32_t *cap, uint32_t k)
{
    uint32_t *v = arena_grow(st->arena, *list, *n, cap, sizeof(*v));
    if (!v)
        return false;
    *list = v;
    v[(*n)++] = k;
    return true;
}

/* arena_grow for a gang's slots (pods_terms, pods_spreads), whose scratch rows outlive their
 * use and serve the next gangs: the slots it adds are clear (no row yet). */
static void *grow_slots(struct place_state *st, void *old, uint32_t n, uint32_t *cap, size_t elem)
{
    uint32_t before = *cap;
    char *v = arena_grow(st->arena, old, n, cap, elem);
    if (v && *cap > before)
        memset(v + (size_t)before * elem, 0, (size_t)(*cap - before) * elem);
    return v;
}

/* Notes pod k (of the bound then placed ones) in st->rules when it carries anti-affinity terms
 * or host ports, the rules that apply to other pods than its own gang's, and in st->scored when
 * it carries affinity or preferred terms, which kube-scheduler scores for other pods
 * (place_podpref.c). */
static void note_rules(struct place_state *st, uint32_t k, const struct pod_meta *m)
{
    if (!podaff_others(m))
        return;
    /* out of memory: a rule would be missed, so no constrained gang is placed */
    if ((m->n_anti || m->n_ports) && !note(st, &st->rules, &st->n_rules, &st->cap_rules, k))
        st->pods_lost = true;
    /* out of memory: a preference is missed, which places no pod where it may not go */
    if ((m->n_affinity || m->n_pref_affinity || m->n_pref_anti))
        (void)note(st, &st->scored, &st->n_scored, &st->cap_scored, k);
}

void place_pods_build(struct place_state *st, const struct sched_snapshot *snap)
{
    st->bound = snap->bound_pods;
    st->n_bound = snap->bound_pods ? snap->n_bound_pods : 0;
    bool sets = false;
    for (uint32_t k = 0; k < st->n_bound; k++) {
        note_rules(st, k, st->bound[k].meta);
        sets |= st->bound[k].set != NULL;
    }
    uint32_t n = st->c->n_nodes;
    if (sets && !(st->rel_on = arena_calloc(st->arena, n ? n : 1, sizeof(*st->rel_on))))
        st->pods_lost = true;
}

const struct sched_pod *place_pods_at(const struct place_state *st, uint32_t k)
{
    if (k >= st->n_bound)
        return &st->placed[k - st->n_bound];
    const struct sched_pod *p = &st->bound[k];
    if (p->set && st->rel_on && p->node < st->c->n_nodes && st->rel_on[p->node])
        for (uint32_t r = 0; r < st->n_rel; r++)
            if (st->rel[r].node == p->node && st->rel[r].req == &p->set->req)
                return NULL;
    return p;
}

/* Nodes i and j are in one domain of `key` (both have the key, with one value). */
static bool same_domain(struct place_state *st, uint32_t i, uint32_t j, const char *key)
{
    const struct place_keydom *kd = place_keydom(st, key);
    return kd ? kd->dom[i] != UINT32_MAX && kd->dom[i] == kd->dom[j]
              : i == j; /* out of memory: as if each node were its own domain */
}

/* Node i has topology key `key`. */
static bool has_key(struct place_state *st, uint32_t i, const char *key)
{
    const struct place_keydom *kd = place_keydom(st, key);
    return kd ? kd->dom[i] != UINT32_MAX : node_label(&st->c->nodes[i], key) != NULL;
}

struct selecting {
    struct place_state *st;
    const struct pod_term *t;
    const char *ns;
    void (*fn)(void *ctx, const struct sched_pod *p);
    void *ctx;
};

static void select_one(void *ctx, uint32_t k)
{
    const struct selecting *sl = ctx;
    const struct sched_pod *p = place_pods_at(sl->st, k);
    if (p && p->node < sl->st->c->n_nodes && podaff_selects(sl->t, sl->ns, p->meta))
        sl->fn(sl->ctx, p);
}

void place_pods_selected(struct place_state *st, const struct pod_term *t, const char *ns,
                         void (*fn)(void *ctx, const struct sched_pod *p), void *ctx)
{
    struct selecting sl = {st, t, ns, fn, ctx};
    if (!place_podix_each(st, t, select_one, &sl))
        for (uint32_t k = 0; k < st->n_bound + st->n_placed; k++)
            select_one(&sl, k);
}

struct marking {
    const struct place_keydom *kd;
    const uint8_t *mark; /* [kd->n_dom] */
    bool any;
};

struct marking_scan {
    struct marking *mk;
    uint8_t *mark;
    uint32_t seen; /* pods selected */
};

static void mark_pod(void *ctx, const struct sched_pod *p)
{
    struct marking_scan *sc = ctx;
    uint32_t d = sc->mk->kd->dom[p->node];
    sc->seen++;
    if (d != UINT32_MAX) {
        sc->mark[d] = 1;
        sc->mk->any = true;
    }
}

/* Marks in mk the domains (of term t's key) holding an earlier pod t, carried by a pod of
 * namespace ns, selects (a kept mark of place_podmark.c, or made and offered to be kept); false
 * on out of memory. mk->any: some pod on a node with the key. */
static bool term_domains(struct place_state *st, const struct pod_term *t, const char *ns,
                         struct marking *mk)
{
    mk->kd = place_keydom(st, t->topology_key);
    mk->any = false;
    if (!mk->kd)
        return false;
    if ((mk->mark = place_podmark_term(st, t, ns, mk->kd, &mk->any)))
        return true;
    struct marking_scan sc = {mk, place_podmark_scan(st, mk->kd), 0};
    if (!(mk->mark = sc.mark))
        return false;
    place_pods_selected(st, t, ns, mark_pod, &sc);
    place_podmark_keep(st, t, ns, mk->kd, sc.mark, mk->any, sc.seen);
    return true;
}

/* Does an affinity term of a set of g select a pod of g (with more than the one pod itself)? */
static bool self_selects(const struct gang *g, uint32_t a, const struct pod_term *t)
{
    const struct pod_meta *ma = g->sets[a].meta;
    for (uint32_t b = 0; b < g->n_sets; b++)
        if ((b != a || g->sets[a].count > 1) && podaff_selects(t, ma->ns, g->sets[b].meta))
            return true;
    return false;
}

/* Do g's pods bear on one another's preferences (a preferred term or a ScheduleAnyway spread
 * of a set that selects a pod of g, or an affinity term, whose carriers kube-scheduler scores
 * too)? Then each pod is scored against those placed before it (place_pods_gang). */
static bool gang_soft_self(const struct gang *g)
{
    for (uint32_t a = 0; a < g->n_sets; a++) {
        const struct pod_meta *ma = g->sets[a].meta;
        if (!ma || (!podaff_prefers(ma) && !ma->n_affinity))
            continue;
        for (uint32_t t = 0; t < ma->n_pref_affinity; t++)
            if (self_selects(g, a, &ma->pref_affinity[t]))
                return true;
        for (uint32_t t = 0; t < ma->n_pref_anti; t++)
            if (self_selects(g, a, &ma->pref_anti[t]))
                return true;
        for (uint32_t t = 0; t < ma->n_soft_spread; t++)
            if (self_selects(g, a, &ma->soft_spread[t].sel))
                return true;
        for (uint32_t t = 0; t < ma->n_affinity && podaff_prefers(ma); t++)
            if (self_selects(g, a, &ma->affinity[t]))
                return true;
    }
    return false;
}

/* Do g's pods constrain one another (anti-affinity or host ports between two of its pods, or an
 * affinity term that its own pods may meet)? */
static bool gang_self(const struct gang *g)
{
    for (uint32_t a = 0; a < g->n_sets; a++) {
        const struct pod_meta *ma = g->sets[a].meta;
        if (!podaff_constrains(ma))
            continue;
        for (uint32_t t = 0; t < ma->n_anti; t++)
            if (self_selects(g, a, &ma->anti[t]))
                return true;
        for (uint32_t t = 0; t < ma->n_affinity; t++)
            if (self_selects(g, a, &ma->affinity[t]))
                return true;
        for (uint32_t b = 0; b < g->n_sets; b++)
            if ((b != a || g->sets[a].count > 1) && podaff_ports_clash(ma, g->sets[b].meta))
                return true;
    }
    return false;
}

/* The topology level whose label is `key` (the node level for the hostname), or -1. */
static int key_level(const struct place_state *st, const char *key)
{
    const struct topo *t = &st->c->topo;
    bool host = strcmp(key, "kubernetes.io/hostname") == 0;
    for (uint32_t l = 0; l < t->n_levels; l++)
        if (t->levels[l].label ? strcmp(t->levels[l].label, key) == 0 : host)
            return (int)l;
    return -1;
}

/* Is every domain of `key` a single node (the hostname, or a level of one node per domain)? */
static bool node_key(const struct place_state *st, const char *key)
{
    int l = key_level(st, key);
    return strcmp(key, "kubernetes.io/hostname") == 0 ||
           (l >= 0 && (st->level_is_nodes[l] || !st->c->topo.levels[l].label));
}

unsigned place_pods_self(const struct place_state *st, const struct gang *g, int *level)
{
    unsigned f = 0;
    *level = -1;
    for (uint32_t a = 0; a < g->n_sets; a++) {
        const struct pod_meta *ma = g->sets[a].meta;
        if (!podaff_constrains(ma))
            continue;
        for (uint32_t b = 0; b < g->n_sets; b++)
            if ((b != a || g->sets[a].count > 1) && podaff_ports_clash(ma, g->sets[b].meta))
                f |= PODS_SELF_NODE;
        for (uint32_t t = 0; t < ma->n_anti; t++)
            if (self_selects(g, a, &ma->anti[t]))
                f |= node_key(st, ma->anti[t].topology_key) ? PODS_SELF_NODE : PODS_SELF_OTHER;
        for (uint32_t t = 0; t < ma->n_affinity; t++) {
            if (!self_selects(g, a, &ma->affinity[t]))
                continue;
            int l = key_level(st, ma->affinity[t].topology_key);
            f |= l < 0 ? PODS_SELF_OTHER : PODS_SELF_LEVEL;
            if (l > *level)
                *level = l; /* every key's domain at once: the tightest */
        }
        for (uint32_t t = 0; t < ma->n_spread; t++)
            if (self_selects(g, a, &ma->spread[t].sel))
                f |= PODS_SELF_OTHER;
    }
    return f;
}

/* The row of pod set s of g (why: FILTER_* + 1 per node, 0 allowed) against the earlier pods. */
static void set_row(struct place_state *st, const struct gang *g, uint32_t s, uint8_t *why,
                    bool *oom)
{
    const struct pod_meta *m = g->sets[s].meta;
    uint32_t n = st->c->n_nodes;
    struct marking mk;
    for (uint32_t t = 0; m && t < m->n_anti && !*oom; t++) {
        if (!term_domains(st, &m->anti[t], m->ns, &mk))
            *oom = true;
        else
            place_keydom_reject(mk.kd, mk.mark, why, FILTER_POD_ANTI + 1);
    }
    if (!*oom && !place_podmark_rules(st, m, why))
        *oom = true;
    if (!m || !m->n_affinity || *oom)
        return;
    /* kube-scheduler's first-pod rule: no earlier pod meets any term, the set meets them all */
    bool any = false, self_all = true, own_terms = false;
    for (uint32_t t = 0; t < m->n_affinity && !*oom; t++) {
        const struct pod_term *pt = &m->affinity[t];
        if (!term_domains(st, pt, m->ns, &mk)) {
            *oom = true;
            return;
        }
        any |= mk.any;
        self_all &= podaff_selects(pt, m->ns, m);
        bool own = self_selects(g, s, pt);
        own_terms |= own;
        struct place_pods_term *pp = NULL;
        if (own) { /* met by earlier pods or by the gang's own: place_pods_gang decides */
            st->pods_terms = grow_slots(st, st->pods_terms, st->n_pods_terms, &st->cap_pods_terms,
                                        sizeof(*st->pods_terms));
            pp = st->pods_terms ? &st->pods_terms[st->n_pods_terms] : NULL;
            /* the slot's row, reused by the next gangs (every node written below) */
            uint8_t *ext = !pp ? NULL : pp->ext ? pp->ext : arena_alloc(st->arena, n ? n : 1);
            if (!ext) {
                *oom = true;
                return;
            }
            *pp = (struct place_pods_term){.t = pt, .set = s, .ext = ext};
            st->n_pods_terms++;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t d = mk.kd->dom[i];
            bool met = d != UINT32_MAX && mk.mark[d];
            if (pp)
                pp->ext[i] = met;
            else if (!met && !why[i] && (d == UINT32_MAX || !own))
                why[i] = FILTER_POD_AFFINITY + 1;
        }
    }
    st->pods_any[s] = any;
    /* a first pod whose terms no other pod of its gang meets: any node with every key (with
     * such terms, place_pods_gang decides) */
    if (!any && self_all && !own_terms)
        for (uint32_t i = 0; i < n; i++)
            if (why[i] == FILTER_POD_AFFINITY + 1) {
                bool keys = true;
                for (uint32_t t = 0; t < m->n_affinity && keys; t++)
                    keys = has_key(st, i, m->affinity[t].topology_key);
                why[i] = keys ? 0 : why[i];
            }
}

bool place_pods_spread_policy(const struct place_state *st, const struct gang *g, uint32_t s,
                              const struct pod_spread *sp, uint32_t i)
{
    const struct node *nd = &st->c->nodes[i];
    const struct podset *ps = &g->sets[s]; /* each filter where it can reject (its active) */
    if (!sp->affinity_ignore && ((ps->n_node_selector && !plugin_node_selector.pass(g, ps, nd)) ||
                                 (ps->n_affinity && !plugin_node_affinity.pass(g, ps, nd))))
        return false;
    return !sp->taints_honor || !nd->n_taints || plugin_taints.pass(g, ps, nd);
}

/* Whether e's min is 0 by rule (no domain, or fewer than min_domains), not a count. */
static bool spread_min_fixed(const struct place_pods_spread *e)
{
    return e->n_dom == 0 || (e->sp->min_domains > 0 && e->n_dom < (uint32_t)e->sp->min_domains);
}

static void spread_min(struct place_pods_spread *e)
{
    e->min = 0;
    e->n_min = 0;
    if (spread_min_fixed(e))
        return;
    e->min = UINT32_MAX;
    for (uint32_t d = 0; d < e->n_dom; d++) {
        e->n_min = e->cnt[d] < e->min ? 0 : e->n_min;
        e->min = e->cnt[d] < e->min ? e->cnt[d] : e->min;
        e->n_min += e->cnt[d] == e->min;
    }
}

struct counting {
    const uint32_t *dom;
    uint32_t *cnt;
};

static void count_pod(void *ctx, const struct sched_pod *p)
{
    struct counting *c = ctx;
    if (!p->deleting && c->dom[p->node] != UINT32_MAX)
        c->cnt[c->dom[p->node]]++;
}

/* The nodes of set s of g that count for spread sp by its domains (dom, numbered anew; remap:
 * [kd->n_dom + 1] scratch) and the earlier live pods it selects per domain (cnt, [n] clear);
 * the number of domains. */
static uint32_t spread_count(struct place_state *st, const struct gang *g, uint32_t s,
                             const struct pod_spread *sp, const struct place_keydom *kd,
                             uint32_t *remap, uint32_t *dom, uint32_t *cnt)
{
    const struct pod_meta *m = g->sets[s].meta;
    uint32_t n = st->c->n_nodes, n_dom = 0;
    memset(remap, 0xff, (kd->n_dom + 1) * sizeof(*remap));
    for (uint32_t i = 0; i < n; i++) { /* the domains of the nodes that count, numbered anew */
        uint32_t d = kd->dom[i];
        dom[i] = UINT32_MAX;
        bool keys = d != UINT32_MAX;
        for (uint32_t k = 0; k < m->n_spread && keys; k++)
            keys = has_key(st, i, m->spread[k].sel.topology_key);
        if (!keys || !place_pods_spread_policy(st, g, s, sp, i))
            continue;
        if (remap[d] == UINT32_MAX)
            remap[d] = n_dom++;
        dom[i] = remap[d];
    }
    struct counting c = {dom, cnt};
    place_pods_selected(st, &sp->sel, m->ns, count_pod, &c);
    return n_dom;
}

/* Spread k of set s of g as kept for its shape, brought up to date (made when new and within
 * SPREAD_KEPT_BYTES); NULL: count it afresh. Not in a preemption trial (a kept count does not
 * see its releases), not under no_shortcuts. */
static struct place_pods_kept *spread_kept(struct place_state *st, const struct gang *g, uint32_t s,
                                           uint32_t k, const struct place_keydom *kd)
{
    if (!place_keeps(st))
        return NULL;
    const struct pod_meta *m = g->sets[s].meta;
    const struct pod_spread *sp = &m->spread[k];
    uint32_t n = st->c->n_nodes, total = st->n_bound + st->n_placed;
    for (uint32_t x = 0; x < st->n_pods_kept; x++) {
        struct place_pods_kept *kp = &st->pods_kept[x];
        if (kp->shape != g->shape || kp->set != s || kp->k != k)
            continue;
        for (; kp->upto < total; kp->upto++) {
            const struct sched_pod *p = place_pods_at(st, kp->upto);
            if (p && p->node < n && !p->deleting && kp->dom[p->node] != UINT32_MAX &&
                podaff_selects(&sp->sel, m->ns, p->meta))
                kp->cnt[kp->dom[p->node]]++;
        }
        return kp;
    }
    uint64_t bytes = 2ull * (n + 1) * sizeof(uint32_t);
    if (st->pods_kept_bytes + bytes > SPREAD_KEPT_BYTES)
        return NULL;
    struct place_pods_kept *v =
        arena_grow(st->arena, st->pods_kept, st->n_pods_kept, &st->cap_pods_kept, sizeof(*v));
    uint32_t *dom = v ? arena_alloc(st->arena, (n + 1) * sizeof(*dom)) : NULL;
    uint32_t *cnt = dom ? arena_calloc(st->arena, n + 1, sizeof(*cnt)) : NULL;
    uint32_t *remap = cnt ? arena_alloc(st->arena, (kd->n_dom + 1) * sizeof(*remap)) : NULL;
    if (v)
        st->pods_kept = v;
    if (!remap)
        return NULL;
    st->pods_kept_bytes += bytes;
    struct place_pods_kept *kp = &v[st->n_pods_kept++];
    *kp = (struct place_pods_kept){.shape = g->shape, .set = s, .k = k, .dom = dom, .cnt = cnt};
    kp->n_dom = spread_count(st, g, s, sp, kd, remap, dom, cnt);
    kp->upto = total;
    return kp;
}

/* Counts spread k of set s over the earlier pods into e (kept for g's shape, or in e's
 * scratch); false on out of memory. */
static bool spread_build(struct place_state *st, const struct gang *g, uint32_t s, uint32_t k,
                         struct place_pods_spread *e)
{
    uint32_t n = st->c->n_nodes;
    const struct pod_meta *m = g->sets[s].meta;
    const struct pod_spread *sp = &m->spread[k];
    uint32_t *buf = e->buf; /* the slot's scratch, kept across its reuse */
    *e = (struct place_pods_spread){.sp = sp, .set = s, .self = podaff_selects(&sp->sel, m->ns, m)};
    for (uint32_t b = 0; b < g->n_sets; b++)
        e->own |=
            (b != s || g->sets[s].count > 1) && podaff_selects(&sp->sel, m->ns, g->sets[b].meta);
    e->kd = place_keydom(st, sp->sel.topology_key);
    if (!buf)
        buf = arena_alloc(st->arena, (3 * (size_t)n + 2) * sizeof(*buf));
    e->buf = buf;
    if (!e->kd || !buf)
        return false;
    e->cnt = buf + 2 * (size_t)n + 1;
    const struct place_pods_kept *kp = spread_kept(st, g, s, k, e->kd);
    if (kp) {
        e->dom = kp->dom;
        e->cnt0 = kp->cnt;
        e->n_dom = kp->n_dom;
    } else { /* afresh: dom, then cnt0, in the scratch (the remap in cnt until counted) */
        uint32_t *dom = buf, *cnt0 = buf + n;
        memset(cnt0, 0, (n + 1) * sizeof(*cnt0));
        e->n_dom = spread_count(st, g, s, sp, e->kd, e->cnt, dom, cnt0);
        e->dom = dom;
        e->cnt0 = cnt0;
    }
    memcpy(e->cnt, e->cnt0, e->n_dom * sizeof(*e->cnt));
    spread_min(e);
    return true;
}

/* May a pod of e's set go to node i by spread e (its count so far)? */
static bool spread_ok(const struct place_pods_spread *e, uint32_t i)
{
    if (e->kd->dom[i] == UINT32_MAX)
        return false;
    uint64_t c = e->dom[i] != UINT32_MAX ? e->cnt[e->dom[i]] : 0;
    return c + e->self <= (uint64_t)e->min + (uint64_t)e->sp->max_skew;
}

/* The spreads of g's sets (st->pods_spreads); rows reject by those its own pods do not move. */
static void spreads_rows(struct place_state *st, const struct gang *g, bool *oom)
{
    uint32_t n = st->c->n_nodes;
    for (uint32_t s = 0; s < g->n_sets && !*oom; s++) {
        const struct pod_meta *m = g->sets[s].meta;
        uint8_t *why = st->pods_why + (size_t)s * n;
        for (uint32_t k = 0; m && k < m->n_spread && !*oom; k++) {
            st->pods_spreads = grow_slots(st, st->pods_spreads, st->n_pods_spreads,
                                          &st->cap_pods_spreads, sizeof(*st->pods_spreads));
            struct place_pods_spread *e =
                st->pods_spreads ? &st->pods_spreads[st->n_pods_spreads] : NULL;
            if (!e || !spread_build(st, g, s, k, e)) {
                *oom = true;
                break;
            }
            st->n_pods_spreads++;
            st->pods_self |= e->own;
            for (uint32_t i = 0; i < n && !e->own; i++)
                if (!why[i] && !spread_ok(e, i))
                    why[i] = FILTER_SPREAD + 1;
        }
    }
}

/* A pod of set b of g went to node j: the spreads that select it count it. */
static void spreads_add(struct place_state *st, const struct gang *g, uint32_t b, uint32_t j)
{
    for (uint32_t k = 0; k < st->n_pods_spreads; k++) {
        struct place_pods_spread *e = &st->pods_spreads[k];
        const struct pod_meta *m = g->sets[e->set].meta;
        if (e->dom[j] != UINT32_MAX && podaff_selects(&e->sp->sel, m->ns, g->sets[b].meta)) {
            e->cnt[e->dom[j]]++;
            e->own_added = true;
            spread_min(e);
        }
    }
}

/* Back to the counts before the gang's own pods. */
static void spreads_reset(struct place_state *st)
{
    for (uint32_t k = 0; k < st->n_pods_spreads; k++) {
        struct place_pods_spread *e = &st->pods_spreads[k];
        memcpy(e->cnt, e->cnt0, e->n_dom * sizeof(*e->cnt));
        e->own_added = false;
        spread_min(e);
    }
}

/* May a replica of g (the same shape) carry g's rows on (place_pods_carry)? One pod set whose
 * own rules (in the shape) are anti-affinity terms and DoNotSchedule spreads only (spreads: of
 * a gang of one pod, whose spreads the cycle keeps), outside trials and no_shortcuts. */
static bool carries(const struct place_state *st, const struct gang *g)
{
    const struct pod_meta *m = g->n_sets == 1 ? g->sets[0].meta : NULL;
    return m && g->shape && !st->no_shortcuts && st->n_rel == 0 && !st->pods_lost &&
           podaff_constrains(m) && (m->n_anti || m->n_spread) && !m->n_affinity && !m->n_ports &&
           !gang_soft_self(g) && (!m->n_spread || (g->n_pods == 1 && place_keeps(st)));
}

/* row[i] = 0 wherever why[i] != 0, eight nodes at a time (a byte is nonzero when its low
 * seven bits carry into its top bit, or the top bit is set: no carry crosses bytes). */
static void and_allowed(uint8_t *row, const uint8_t *why, uint32_t n)
{
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7Full, top = 0x8080808080808080ull;
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w, r;
        memcpy(&w, why + i, sizeof(w));
        memcpy(&r, row + i, sizeof(r));
        uint64_t refused = ((((w & low7) + low7) | w) & top) >> 7; /* 0x01 per nonzero byte */
        r &= ~(refused * 0xFF);
        memcpy(row + i, &r, sizeof(r));
    }
    for (; i < n; i++)
        row[i] = (uint8_t)(row[i] & (why[i] == 0));
}

void place_pods_rows(struct place_state *st, const struct gang *g)
{
    uint32_t n = st->c->n_nodes;
    st->pods_gang = NULL;
    st->pods_self = false;
    st->n_pods_terms = 0;
    st->n_pods_spreads = 0;
    st->pods_soft_self = false;
    st->n_pods_own = 0;
    bool any = false;
    for (uint32_t s = 0; s < g->n_sets; s++)
        any |= podaff_constrains(g->sets[s].meta) || podaff_prefers(g->sets[s].meta) ||
               (st->n_rules && g->sets[s].meta);
    st->rows_shape = 0; /* the rows are this gang's from here on */
    st->rows_carried = false;
    if ((!any && !st->pods_lost) || n == 0)
        return;
    st->pods_gang = g;
    st->pods_soft_self = gang_soft_self(g);
    st->pods_self = gang_self(g) || st->pods_soft_self;
    if (!st->pods_why)
        st->pods_why = arena_alloc(st->arena, (size_t)GANG_MAX_SETS * n);
    bool oom = st->pods_why == NULL || st->pods_lost;
    for (uint32_t s = 0; s < g->n_sets && !oom; s++) {
        uint8_t *why = st->pods_why + (size_t)s * n;
        memset(why, 0, n);
        st->pods_any[s] = false;
        set_row(st, g, s, why, &oom);
    }
    if (!oom)
        spreads_rows(st, g, &oom);
    bool carry = !oom && carries(st, g), filt = carry && g->sets[0].meta->n_spread;
    if (filt && !st->rows_filt && !(st->rows_filt = arena_alloc(st->arena, n)))
        filt = false; /* out of memory: this shape does not carry */
    for (uint32_t s = 0; s < g->n_sets && !oom; s++) {
        const uint8_t *why = st->pods_why + (size_t)s * n;
        uint8_t *row = st->elig + (size_t)s * n;
        if (!st->elig_on[s])
            memset(row, 1, n);
        st->elig_on[s] = true;
        if (s == 0 && filt)
            memcpy(st->rows_filt, row, n);
        and_allowed(row, why, n);
    }
    if (oom) { /* out of memory: no node is known to be allowed */
        for (uint32_t s = 0; s < g->n_sets; s++) {
            memset(st->elig + (size_t)s * n, 0, n);
            st->elig_on[s] = true;
        }
        st->pods_gang = NULL;
        st->pods_self = st->pods_soft_self = false;
    } else if (carry && (!g->sets[0].meta->n_spread || filt)) {
        st->rows_shape = g->shape;
        st->rows_placed = st->n_placed;
    }
}

/* Node j's domain of `key` refused to set 0 (its rows why, row), for place_pods_carry; false
 * when the nodes by key are not known (out of memory). */
static bool refuse_domain(struct place_state *st, const char *key, uint32_t j, uint8_t *why,
                          uint8_t *row)
{
    const struct place_keydom *kd = place_keydom(st, key);
    if (!kd)
        return false;
    uint32_t d = kd->dom[j];
    for (uint32_t x = d != UINT32_MAX ? kd->first[d] : 0; d != UINT32_MAX && x < kd->first[d + 1];
         x++) {
        uint32_t i = kd->nodes[x];
        if (!why[i] || why[i] == FILTER_SPREAD + 1) /* anti-affinity first, as set_row */
            why[i] = FILTER_POD_ANTI + 1;
        row[i] = 0;
    }
    return true;
}

/* Node i against every spread of the carried rows: its why and row brought to what
 * spreads_rows would make (a node refused by another rule stays so). */
static void spread_recheck(struct place_state *st, uint32_t i, uint8_t *why, uint8_t *row)
{
    if (why[i] && why[i] != FILTER_SPREAD + 1)
        return;
    bool ok = true;
    for (uint32_t k = 0; k < st->n_pods_spreads && ok; k++)
        ok = spread_ok(&st->pods_spreads[k], i);
    why[i] = ok ? 0 : FILTER_SPREAD + 1;
    row[i] = (uint8_t)(ok && st->rows_filt[i]);
}

/* The carried spreads of g counted up to the pods placed since their rows (one pod each,
 * their domains' nodes checked again; every node when a smallest count grew); their kept
 * counts (cnt0) brought up to date alike. False: not carried (a spread counted the gang's own
 * pods, or its counts are not kept). */
static bool spreads_carry(struct place_state *st, const struct gang *g, uint8_t *why, uint8_t *row)
{
    const struct pod_meta *m = g->sets[0].meta;
    uint32_t n = st->c->n_nodes;
    bool all = false;
    for (uint32_t k = 0; k < st->n_pods_spreads; k++) {
        struct place_pods_spread *e = &st->pods_spreads[k];
        const struct place_pods_kept *kp =
            e->own_added || e->own ? NULL : spread_kept(st, g, 0, k, e->kd);
        if (!kp || kp->cnt != e->cnt0)
            return false;
        e->sp = &m->spread[k];
        for (uint32_t x = st->rows_placed; x < st->n_placed; x++) {
            const struct sched_pod *p = &st->placed[x];
            uint32_t d = p->node < n ? e->dom[p->node] : UINT32_MAX;
            if (d == UINT32_MAX || p->deleting || !podaff_selects(&e->sp->sel, m->ns, p->meta))
                continue;
            bool at_min = !spread_min_fixed(e) && e->cnt[d] == e->min;
            e->cnt[d]++;
            if (at_min && --e->n_min == 0) { /* the smallest count grew: every node again */
                spread_min(e);
                all = true;
            }
        }
    }
    if (all) {
        for (uint32_t i = 0; i < n; i++)
            spread_recheck(st, i, why, row);
        st->rows_reopened = true;
        return true;
    }
    for (uint32_t k = 0; k < st->n_pods_spreads; k++) { /* the domains that counted one more */
        const struct place_pods_spread *e = &st->pods_spreads[k];
        for (uint32_t x = st->rows_placed; x < st->n_placed; x++) {
            uint32_t j = st->placed[x].node, d = j < n ? e->kd->dom[j] : UINT32_MAX;
            for (uint32_t y = d != UINT32_MAX ? e->kd->first[d] : 0;
                 d != UINT32_MAX && y < e->kd->first[d + 1]; y++)
                spread_recheck(st, e->kd->nodes[y], why, row);
        }
    }
    return true;
}

bool place_pods_carry(struct place_state *st, const struct gang *g)
{
    st->rows_carried = st->rows_reopened = false;
    if (!st->rows_shape || st->rows_shape != g->shape || !carries(st, g))
        return false;
    /* the rows refuse the pods' domains only (anti-affinity both ways: the set has no host
     * port, spread nor affinity term), and the pods placed since only refuse more: those of
     * the domains they are in, as set_row would mark them */
    const struct pod_meta *m = g->sets[0].meta;
    uint8_t *why = st->pods_why, *row = st->elig;
    for (uint32_t k = st->rows_placed; k < st->n_placed; k++) {
        const struct sched_pod *p = &st->placed[k];
        for (uint32_t t = 0; t < p->meta->n_anti; t++)
            if (podaff_selects(&p->meta->anti[t], p->meta->ns, m) &&
                !refuse_domain(st, p->meta->anti[t].topology_key, p->node, why, row))
                return st->rows_shape = 0, false;
        for (uint32_t t = 0; t < m->n_anti; t++)
            if (podaff_selects(&m->anti[t], m->ns, p->meta) &&
                !refuse_domain(st, m->anti[t].topology_key, p->node, why, row))
                return st->rows_shape = 0, false;
    }
    if (m->n_spread && !spreads_carry(st, g, why, row))
        return st->rows_shape = 0, false;
    st->rows_placed = st->n_placed;
    st->pods_gang = g;
    st->pods_self = gang_self(g);
    st->pods_soft_self = false;
    st->n_pods_terms = st->n_pods_own = 0;
    st->n_pods_spreads = m->n_spread ? st->n_pods_spreads : 0;
    st->pods_any[0] = false;
    st->rows_carried = true;
    return true;
}

bool place_pods_refused(const struct place_state *st, const struct gang *g)
{
    if (st->pods_gang != g || !st->pods_why)
        return false;
    size_t n = (size_t)g->n_sets * st->c->n_nodes;
    for (size_t k = 0; k < n; k++)
        if (st->pods_why[k])
            return true;
    return false;
}

int place_pods_why(const struct place_state *st, const struct gang *g, uint32_t s, uint32_t i)
{
    if (st->pods_gang != g || !st->pods_why || s >= g->n_sets)
        return -1;
    uint8_t w = st->pods_why[(size_t)s * st->c->n_nodes + i];
    return w ? (int)w - 1 : -1;
}

/* ---- pod by pod -------------------------------------------------------------------------- */

/* The rule (FILTER_*) that keeps a pod of set s off node i against the gang's pods placed so
 * far (out[0 .. k), their sets in st->pods_tset), or -1 when it may go. The rows cover the
 * earlier pods. */
static int own_why(struct place_state *st, const struct gang *g, uint32_t s, uint32_t i,
                   const struct sched_assign *out, uint32_t k)
{
    const struct pod_meta *m = g->sets[s].meta;
    for (uint32_t x = 0; x < k; x++) {
        uint32_t j = out[x].node, b = st->pods_tset[x];
        const struct pod_meta *mb = g->sets[b].meta;
        if (i == j && podaff_ports_clash(m, mb))
            return FILTER_HOST_PORT;
        for (uint32_t t = 0; m && t < m->n_anti; t++)
            if (same_domain(st, i, j, m->anti[t].topology_key) &&
                podaff_selects(&m->anti[t], m->ns, mb))
                return FILTER_POD_ANTI;
        for (uint32_t t = 0; mb && t < mb->n_anti; t++)
            if (same_domain(st, i, j, mb->anti[t].topology_key) &&
                podaff_selects(&mb->anti[t], mb->ns, m))
                return FILTER_POD_ANTI;
    }
    for (uint32_t e = 0; e < st->n_pods_spreads; e++)
        if (st->pods_spreads[e].set == s && st->pods_spreads[e].own &&
            !spread_ok(&st->pods_spreads[e], i))
            return FILTER_SPREAD;
    /* affinity terms its own pods may meet (the others are in the rows) */
    bool met_all = true, own_any = false;
    for (uint32_t e = 0; e < st->n_pods_terms; e++) {
        const struct place_pods_term *pp = &st->pods_terms[e];
        if (pp->set != s)
            continue;
        bool met = pp->ext[i];
        for (uint32_t x = 0; x < k && !met; x++)
            if (podaff_selects(pp->t, m->ns, g->sets[st->pods_tset[x]].meta)) {
                own_any = true;
                met = same_domain(st, i, out[x].node, pp->t->topology_key);
            }
        met_all &= met;
    }
    if (met_all)
        return -1;
    if (st->pods_any[s] || own_any)
        return FILTER_POD_AFFINITY;
    /* a first pod: no pod meets any of the set's terms yet, and it meets them all itself */
    for (uint32_t t = 0; t < m->n_affinity; t++)
        if (!podaff_selects(&m->affinity[t], m->ns, m) ||
            !has_key(st, i, m->affinity[t].topology_key))
            return FILTER_POD_AFFINITY;
    return -1;
}

/* Set s's pod could go nowhere: the rule that kept it off each node it fits, for the verdict
 * (place_pods_why; the nodes the rows rejected keep their rule). */
static void own_diagnose(struct place_state *st, const struct gang *g, uint32_t s, uint32_t n_order,
                         const struct sched_assign *out, uint32_t k)
{
    uint8_t *why = st->pods_why + (size_t)s * st->c->n_nodes;
    st->rows_shape = 0; /* the rows now hold the gang's own reasons */
    for (uint32_t j = 0; j < n_order; j++) {
        uint32_t i = st->order[j], mask;
        int w = !why[i] && place_eligible(st, s, i) && place_pod_fits(st, &g->sets[s], i, &mask)
                    ? own_why(st, g, s, i, out, k)
                    : -1;
        if (w >= 0)
            why[i] = (uint8_t)(w + 1);
    }
}

/* The first affinity term of g's first set that its own pods may meet, or NULL. */
static const struct pod_term *first_self_term(const struct place_state *st)
{
    return st->n_pods_terms ? st->pods_terms[0].t : NULL;
}

/* Does a node that refuses a pod of set s refuse every later pod of the set? Yes unless the set
 * has an affinity term its own pods may meet or a spread of its own pods: the other rules
 * (anti-affinity, host ports, the rows) and the resources only ever refuse more as pods are
 * placed, so the next pod's scan may start where the last one was placed (the first-pod ban
 * applies to the gang's first pod alone, before any other). */
static bool rejects_stay(const struct place_state *st, uint32_t s)
{
    if (st->no_shortcuts || st->pods_soft_self)
        return false;
    for (uint32_t e = 0; e < st->n_pods_terms; e++)
        if (st->pods_terms[e].set == s)
            return false;
    for (uint32_t e = 0; e < st->n_pods_spreads; e++)
        if (st->pods_spreads[e].set == s && st->pods_spreads[e].own)
            return false;
    return true;
}

/* The nodes of domain d of `level` in order for the next pod of g, k of its pods placed in out:
 * with preferences among its own pods (pods_soft_self), its tiers made again counting them. */
static uint32_t pod_order(struct place_state *st, const struct gang *g, int level, uint32_t d,
                          const struct sched_assign *out, uint32_t k)
{
    if (k > 0 || st->n_pods_own > 0) { /* the gang's first pod: the tiers it was prepared with */
        st->pods_own = out;
        st->n_pods_own = k;
        place_pref_tiers(st, g);
    }
    return place_order_domain(st, level, d);
}

/* May domain d of `level` hold g's GPUs (free GPUs of its usable nodes)? Spares a gang placed
 * pod by pod with its tiers made again after each pod (pods_soft_self) a try where it cannot
 * fit. */
static bool domain_may_hold(const struct place_state *st, const struct gang *g, int level,
                            uint32_t d)
{
    const struct topo_level *lv = &st->c->topo.levels[level];
    int64_t free = 0;
    for (uint32_t j = lv->domain_first[d]; j < lv->domain_first[d + 1] && free < g->gpus; j++) {
        uint32_t i = lv->node_index[j];
        free += st->ok[i] ? bits_popc32(st->gpu_free[i]) : 0;
    }
    return free >= g->gpus;
}

/* Fills g pod by pod over the nodes of domain d of `level` in order (pod_order), its sets in
 * place_set_order (st->pods_filled, then copied to out in set order); a first pod may not go to
 * a domain of `first` named in banned[0 .. n_banned). */
static bool fill_pods(struct place_state *st, const struct gang *g, int level, uint32_t d,
                      struct sched_assign *out, const struct pod_term *first,
                      const char *const *banned, uint32_t n_banned, uint32_t *first_node)
{
    struct sched_assign *fo = st->pods_filled;
    uint32_t k = 0, n_order = st->pods_soft_self ? pod_order(st, g, level, d, fo, 0)
                                                 : place_order_domain(st, level, d);
    uint8_t ord[GANG_MAX_SETS];
    uint32_t at[GANG_MAX_SETS], n_sets = place_set_order(g, ord, at);
    *first_node = UINT32_MAX;
    spreads_reset(st);
    for (uint32_t x = 0; x < n_sets; x++) {
        uint32_t s = ord[x];
        const struct podset *ps = &g->sets[s];
        bool resume = rejects_stay(st, s);
        for (uint32_t p = 0, from = 0; p < ps->count; p++) {
            uint32_t mask = 0, j = resume ? from : 0;
            for (; j < n_order; j++) {
                uint32_t i = st->order[j];
                if (!place_eligible(st, s, i) || own_why(st, g, s, i, fo, k) >= 0)
                    continue;
                bool ban = false;
                const char *v =
                    k == 0 && first ? node_label(&st->c->nodes[i], first->topology_key) : NULL;
                for (uint32_t b = 0; v && b < n_banned && !ban; b++)
                    ban = strcmp(banned[b], v) == 0;
                if (!ban && place_pod_fits(st, ps, i, &mask))
                    break;
            }
            if (j == n_order)
                own_diagnose(st, g, s, n_order, fo, k);
            if (j == n_order || !place_apply(st, st->order[j], mask, &ps->req))
                return false;
            st->pods_tset[k] = s;
            spreads_add(st, g, s, st->order[j]);
            if (k == 0)
                *first_node = st->order[j];
            out[at[s] + p] = fo[k++] =
                (struct sched_assign){.node = st->order[j], .gpu_mask = mask};
            from = j; /* that node may take the next pod too */
            if (st->pods_soft_self && k < g->n_pods)
                n_order = pod_order(st, g, level, d, fo, k);
        }
    }
    return true;
}

/* The tightest level whose one domain holds every pod of out (the node level last). */
static int tightest(const struct place_state *st, const struct gang *g,
                    const struct sched_assign *out, uint32_t *domain)
{
    const struct topo *t = &st->c->topo;
    for (int l = (int)t->n_levels - 1; l >= 0; l--) {
        uint32_t d = st->c->nodes[out[0].node].dom[l];
        bool one = true;
        for (uint32_t k = 1; k < g->n_pods && one; k++)
            one = st->c->nodes[out[k].node].dom[l] == d;
        if (one) {
            *domain = d;
            return l;
        }
    }
    return -1;
}

/* Tries g over the nodes of domain d of `level` (the cluster: level < 0), moving a first pod
 * with affinity to itself to another domain up to PODS_FIRST_TRIES times. */
static bool try_domain(struct place_state *st, const struct gang *g, int level, uint32_t d,
                       struct sched_assign *out)
{
    const struct pod_term *first = first_self_term(st);
    const char *banned[PODS_FIRST_TRIES];
    for (uint32_t tries = 0; tries < PODS_FIRST_TRIES; tries++) {
        uint32_t at;
        if (fill_pods(st, g, level, d, out, first, banned, tries, &at))
            return true;
        place_rollback(st);
        const char *v =
            first && at != UINT32_MAX ? node_label(&st->c->nodes[at], first->topology_key) : NULL;
        if (!v)
            return false;
        banned[tries] = v;
    }
    return false;
}

/* The domains of `lv` in the order a gang placed pod by pod tries them: by the most preferred
 * tier among their usable nodes (place_pref.c), then by id; NULL (id order) without tiers or
 * on out of memory. */
static const uint32_t *domains_by_tier(struct place_state *st, const struct topo_level *lv)
{
    uint32_t nd = lv->n_domains, count[PLACE_PREF_TIERS + 2] = {0};
    if (st->n_tiers <= 1 || nd == 0)
        return NULL;
    uint32_t *best = arena_alloc(st->arena, nd * sizeof(*best));
    uint32_t *order = arena_alloc(st->arena, nd * sizeof(*order));
    if (!best || !order)
        return NULL;
    for (uint32_t d = 0; d < nd; d++) {
        best[d] = PLACE_PREF_TIERS; /* no usable node */
        for (uint32_t j = lv->domain_first[d]; j < lv->domain_first[d + 1]; j++) {
            uint32_t i = lv->node_index[j], t = place_tier_of(st, i);
            best[d] = st->ok[i] && t < best[d] ? t : best[d];
        }
        count[best[d] + 1]++;
    }
    for (uint32_t t = 1; t <= PLACE_PREF_TIERS + 1; t++)
        count[t] += count[t - 1];
    for (uint32_t d = 0; d < nd; d++) /* stable: ids ascending within a tier */
        order[count[best[d]]++] = d;
    return order;
}

enum sched_why place_pods_gang(struct place_state *st, const struct gang *g,
                               struct sched_assign *out, int *level, uint32_t *domain)
{
    size_t np = g->n_pods ? g->n_pods : 1;
    st->pods_tset = arena_alloc(st->arena, np * sizeof(*st->pods_tset));
    st->pods_filled = arena_alloc(st->arena, np * sizeof(*st->pods_filled));
    if (!st->pods_tset || !st->pods_filled)
        return SCHED_WHY_RESOURCES;
    memset(out, 0, g->n_pods * sizeof(*out));
    bool placed = false;
    int req = g->topo_required;
    if (req >= 0) {
        const struct topo_level *lv = &st->c->topo.levels[req];
        const uint32_t *by_tier = domains_by_tier(st, lv);
        for (uint32_t x = 0; x < lv->n_domains && !placed; x++) {
            uint32_t d = by_tier ? by_tier[x] : x;
            if ((st->only_level < -1 || st->only_level != req || st->only_domain == d) &&
                (!st->pods_soft_self || domain_may_hold(st, g, req, d)))
                placed = try_domain(st, g, req, d, out);
        }
    } else {
        placed = try_domain(st, g, -1, 0, out);
    }
    if (!placed)
        return SCHED_WHY_RESOURCES;
    *level = tightest(st, g, out, domain);
    return SCHED_WHY_PLACED;
}

void place_pods_commit(struct place_state *st, const struct gang *g, const struct sched_assign *out)
{
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++) {
        const struct pod_meta *m = g->sets[s].meta;
        for (uint32_t p = 0; p < g->sets[s].count; p++, k++) {
            if (!m)
                continue;
            struct sched_pod *v = arena_grow(st->arena, st->placed, st->n_placed, &st->cap_placed,
                                             sizeof(*st->placed));
            if (!v) { /* out of memory: later gangs could not see it, so none is placed */
                st->pods_lost = true;
                continue;
            }
            st->placed = v;
            st->placed[st->n_placed++] = (struct sched_pod){.node = out[k].node, .meta = m};
            note_rules(st, st->n_bound + st->n_placed - 1, m);
            place_podix_placed(st, st->n_bound + st->n_placed - 1, m);
        }
    }
}
