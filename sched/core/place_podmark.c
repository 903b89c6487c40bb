/* sched/core/place_podmark.c: the domains that required pod rules mark, kept across the gangs
 * of a cycle (see place_pods.c, which applies the rules, and place_internal.h).
 *
 * Owns: the marks of the cycle (st->podmark): per selection of a pod set's required term, the
 * domains of the term's key that hold an earlier pod it selects; per kind of earlier pods with
 * anti-affinity terms (st->rules), the domains holding the kind's pods, per term; and the
 * earlier pods' rules against a pod set (place_podmark_rules).
 *
 * Without marks, each replica of a Deployment that keeps its replicas apart read every replica
 * placed before it twice (the pods its own term selects, the rules of the pods carrying one): the
 * cost per replica grew with the replicas. A selection that took MARK_MIN pods or more is kept
 * as a mark over the domains, brought up to date with the pods placed since; the earlier pods
 * with anti-affinity terms are grouped by kind (one namespace, equal terms: podaff_same_selection
 * and the topology key), a kind's terms are tested once per pod set, and a kind of MARK_MIN pods
 * or more keeps one mark per term. A pod set tests only the kinds whose terms may select it:
 * those found under its labels (a kind whose every term needs one of a few labels, an In of
 * LAB_VALUES values at most, is found under them) and the open ones (a term that needs none). A pod
 * set then reads a mark per selection or kind instead of the pods: a pass over the domains. Pods
 * with host ports, or with more than KIND_TERMS anti-affinity terms, are read one by one.
 *
 * A mark counts the pods without the releases of a preemption trial, so trials (st->n_rel > 0)
 * and sched_snapshot.no_shortcuts read the pods one by one; the rows are the same either way
 * (tests/unit/test_place_pods.c, test_kept_marks_reject_as_pod_by_pod).
 *
 * Must not touch: anything outside place_state; the snapshot's pods are read only.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/hash.h"
#include "sched/core/place_internal.h"
#include "sched/core/podaff.h"

#define MARK_MIN   32          /* pods a selection or kind takes before it is kept */
#define MARK_BYTES (64u << 20) /* the marks of one cycle at most (arena bytes) */
#define KIND_TERMS 4           /* anti-affinity terms of a kind; a pod with more is read alone */
#define BY_KEYS    8           /* topology keys of one pod set's rules marked at once */
#define LAB_VALUES 8           /* values of an In requirement a kind is found under, at most */

/* A kept selection: the domains of kd holding an earlier pod that t, carried by a pod of
 * namespace ns, selects ([0, upto) of the bound then placed pods counted). */
struct podmark_sel {
    uint64_t key;
    const struct pod_term *t;
    const char *ns;
    const struct place_keydom *kd;
    uint8_t *mark; /* [kd->n_dom + 1] */
    bool any;      /* some such pod on a node with the key */
    uint32_t upto;
};

/* Earlier pods with anti-affinity terms and no host port, of one namespace and equal terms. */
struct podmark_kind {
    uint64_t key;
    const struct pod_meta *rep; /* a pod of the kind */
    uint32_t head;              /* its last pod (index into st->rules) + 1; next links them */
    uint32_t n;                 /* its pods */
    uint8_t *mark[KIND_TERMS];  /* once kept: per term, the domains of its key holding a pod */
    uint32_t seen;              /* the stamp of the last pod set it was a candidate for */
};

/* A kind found under a label (key and value, hashed): each of its terms selects only pods that
 * carry one of the labels it is found under. */
struct podmark_lab {
    uint64_t h; /* label_hash; 0: an empty slot */
    uint32_t kind;
};

/* A mark of one key's domains for the rules of one pod set, clear between uses. */
struct podmark_scratch {
    const struct place_keydom *kd;
    uint8_t *mark; /* [kd->n_dom + 1] */
};

struct place_podmark {
    struct podmark_scratch by[BY_KEYS]; /* reused by every pod set's rules (the keys met first) */
    uint32_t n_by;
    uint8_t *scan;     /* [n + 1] a selection's mark while it is read, or NULL once kept */
    uint32_t scan_len; /* its bytes in use (to clear before the next) */
    struct podmark_sel *sels;
    uint32_t n_sels, cap_sels;
    struct podmark_kind *kinds;
    uint32_t n_kinds, cap_kinds;
    uint32_t *slot; /* the kinds by key, open addressing: kind + 1, 0 empty; mask + 1 slots */
    uint32_t mask;
    struct podmark_lab *labs; /* the kinds by label, open addressing, at most half full */
    uint32_t lab_mask, n_labs;
    uint32_t *open; /* the kinds a pod may meet whatever its labels (kind_index) */
    uint32_t n_open, cap_open;
    uint32_t *cand; /* scratch: one pod set's candidate kinds */
    uint32_t cap_cand, stamp;
    uint32_t *next;  /* per rule pod: the next of its kind + 1, 0 at the end */
    uint32_t *loose; /* the rule pods of no kind (host ports, many terms) */
    uint32_t n_loose, cap_loose, cap_next;
    uint32_t n_sorted; /* st->rules[0 .. n_sorted) are in their kinds or loose */
    uint64_t bytes;    /* of every mark */
    bool lost;         /* out of memory: the pods are read one by one */
};

static struct place_podmark *scratch(struct place_state *st)
{
    if (!st->podmark)
        st->podmark = arena_calloc(st->arena, 1, sizeof(*st->podmark));
    return st->podmark;
}

/* A mark of kd's domains, all clear; NULL past MARK_BYTES or out of memory. */
static uint8_t *mark_new(struct place_state *st, struct place_podmark *pm,
                         const struct place_keydom *kd)
{
    uint64_t bytes = (uint64_t)kd->n_dom + 1;
    if (pm->bytes + bytes > MARK_BYTES)
        return NULL;
    uint8_t *m = arena_calloc(st->arena, kd->n_dom + 1, 1);
    if (m)
        pm->bytes += bytes;
    return m;
}

/* ---- selections of a pod set's own terms ---------------------------------------------------- */

const uint8_t *place_podmark_term(struct place_state *st, const struct pod_term *t, const char *ns,
                                  const struct place_keydom *kd, bool *any)
{
    struct place_podmark *pm = st->podmark;
    if (!pm || pm->n_sels == 0 || !place_keeps(st))
        return NULL;
    uint64_t key = podaff_selection_hash(t, ns);
    uint32_t total = st->n_bound + st->n_placed, n = st->c->n_nodes;
    for (uint32_t k = 0; k < pm->n_sels; k++) {
        struct podmark_sel *m = &pm->sels[k];
        if (m->key != key || m->kd != kd || !podaff_same_selection(m->t, m->ns, t, ns))
            continue;
        for (; m->upto < total; m->upto++) {
            const struct sched_pod *p = place_pods_at(st, m->upto);
            if (p && p->node < n && kd->dom[p->node] != UINT32_MAX &&
                podaff_selects(m->t, m->ns, p->meta)) {
                m->mark[kd->dom[p->node]] = 1;
                m->any = true;
            }
        }
        *any = m->any;
        return m->mark;
    }
    return NULL;
}

uint8_t *place_podmark_scan(struct place_state *st, const struct place_keydom *kd)
{
    struct place_podmark *pm = scratch(st);
    if (!pm)
        return NULL;
    if (!pm->scan) /* the first, or the last was kept: all clear */
        pm->scan = arena_calloc(st->arena, (size_t)st->c->n_nodes + 1, 1);
    else /* what the last use may have marked */
        memset(pm->scan, 0, pm->scan_len);
    pm->scan_len = kd->n_dom + 1;
    return pm->scan;
}

void place_podmark_keep(struct place_state *st, const struct pod_term *t, const char *ns,
                        const struct place_keydom *kd, uint8_t *mark, bool any, uint32_t seen)
{
    struct place_podmark *pm = seen >= MARK_MIN && place_keeps(st) ? scratch(st) : NULL;
    uint64_t bytes = (uint64_t)st->c->n_nodes + 1; /* a scan's mark: one byte per node */
    if (!pm || pm->bytes + bytes > MARK_BYTES)
        return;
    struct podmark_sel *v = arena_grow(st->arena, pm->sels, pm->n_sels, &pm->cap_sels, sizeof(*v));
    if (!v)
        return; /* read pod by pod */
    pm->sels = v;
    pm->bytes += bytes;
    if (mark == pm->scan)
        pm->scan = NULL; /* the mark is the selection's now */
    v[pm->n_sels++] = (struct podmark_sel){.key = podaff_selection_hash(t, ns),
                                           .t = t,
                                           .ns = ns,
                                           .kd = kd,
                                           .mark = mark,
                                           .any = any,
                                           .upto = st->n_bound + st->n_placed};
}

/* ---- the earlier pods' rules by kind -------------------------------------------------------- */

static uint64_t kind_hash(const struct pod_meta *m)
{
    uint64_t h = SCHED_HASH_INIT;
    for (uint32_t t = 0; t < m->n_anti; t++)
        h = sched_hash_str(h ^ podaff_selection_hash(&m->anti[t], m->ns),
                           m->anti[t].topology_key ? m->anti[t].topology_key : "");
    return h | 1;
}

/* Do the anti-affinity terms of a and b forbid alike (each term selects alike, by one key)? */
static bool same_kind(const struct pod_meta *a, const struct pod_meta *b)
{
    if (a->n_anti != b->n_anti)
        return false;
    for (uint32_t t = 0; t < a->n_anti; t++) {
        const char *ka = a->anti[t].topology_key, *kb = b->anti[t].topology_key;
        if (!podaff_same_selection(&a->anti[t], a->ns, &b->anti[t], b->ns) ||
            strcmp(ka ? ka : "", kb ? kb : "") != 0)
            return false;
    }
    return true;
}

/* Marks the domain of node `node` in each kept mark of kind k. */
static void kind_mark(struct place_state *st, struct podmark_kind *k, uint32_t node)
{
    for (uint32_t t = 0; k->mark[0] && t < k->rep->n_anti; t++) {
        const struct place_keydom *kd = place_keydom(st, k->rep->anti[t].topology_key);
        if (kd && node < st->c->n_nodes && kd->dom[node] != UINT32_MAX)
            k->mark[t][kd->dom[node]] = 1;
    }
}

/* ---- the kinds by label ---------------------------------------------------------------------- */

static uint64_t label_hash(const char *key, const char *value)
{
    return sched_hash_str(sched_hash_str(SCHED_HASH_INIT, key), value) | 1;
}

/* The requirement of term t that a pod it selects must meet by carrying one of a few labels (an
 * In of its key, LAB_VALUES values at most), or NULL: t may select a pod whatever its labels. */
static const struct sel_req *term_label(const struct pod_term *t)
{
    for (uint32_t r = 0; r < t->n_reqs; r++)
        if (t->reqs[r].op == SEL_IN && !t->reqs[r].field && t->reqs[r].n_values <= LAB_VALUES)
            return &t->reqs[r];
    return NULL;
}

static bool lab_put(struct place_state *st, struct place_podmark *pm, uint64_t h, uint32_t kind)
{
    if (!pm->labs || 2 * (pm->n_labs + 1) > pm->lab_mask + 1) { /* at most half full */
        uint32_t size = pm->labs ? 2 * (pm->lab_mask + 1) : 64;
        struct podmark_lab *labs = arena_calloc(st->arena, size, sizeof(*labs));
        if (!labs)
            return false;
        for (uint32_t i = 0; pm->labs && i <= pm->lab_mask; i++) {
            uint32_t x = (uint32_t)pm->labs[i].h & (size - 1);
            while (pm->labs[i].h && labs[x].h)
                x = (x + 1) & (size - 1);
            if (pm->labs[i].h)
                labs[x] = pm->labs[i];
        }
        pm->labs = labs;
        pm->lab_mask = size - 1;
    }
    uint32_t x = (uint32_t)h & pm->lab_mask;
    while (pm->labs[x].h)
        x = (x + 1) & pm->lab_mask;
    pm->labs[x] = (struct podmark_lab){.h = h, .kind = kind};
    pm->n_labs++;
    return true;
}

/* Kind k found under the labels its terms need, or open when a term needs none (a term that
 * selects nothing needs none either: it is never met). False out of memory. */
static bool kind_index(struct place_state *st, struct place_podmark *pm, uint32_t k)
{
    const struct pod_meta *rep = pm->kinds[k].rep;
    for (uint32_t t = 0; t < rep->n_anti; t++)
        if (!rep->anti[t].none && !term_label(&rep->anti[t])) {
            uint32_t *v = arena_grow(st->arena, pm->open, pm->n_open, &pm->cap_open, sizeof(*v));
            if (!v)
                return false;
            pm->open = v;
            v[pm->n_open++] = k;
            return true;
        }
    for (uint32_t t = 0; t < rep->n_anti; t++) {
        const struct sel_req *r = rep->anti[t].none ? NULL : term_label(&rep->anti[t]);
        for (uint32_t v = 0; r && v < r->n_values; v++)
            if (!lab_put(st, pm, label_hash(r->key, r->values[v]), k))
                return false;
    }
    return true;
}

/* Candidate kind k for the pod set being read, once. */
static void cand_add(struct place_podmark *pm, uint32_t *n, uint32_t k)
{
    if (pm->kinds[k].seen != pm->stamp) {
        pm->kinds[k].seen = pm->stamp;
        pm->cand[(*n)++] = k;
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The kinds whose terms may select pod m, ascending: the open ones and those found under m's
 * labels (*n of them in pm->cand); false out of memory. */
static bool candidates(struct place_state *st, struct place_podmark *pm, const struct pod_meta *m,
                       uint32_t *n)
{
    if (pm->cap_cand < pm->n_kinds) {
        uint32_t cap = pm->n_kinds * 2;
        uint32_t *c = arena_alloc(st->arena, (size_t)cap * sizeof(*c));
        if (!c)
            return false;
        pm->cand = c;
        pm->cap_cand = cap;
    }
    if (++pm->stamp == 0) { /* wrapped: no kind may look seen */
        for (uint32_t k = 0; k < pm->n_kinds; k++)
            pm->kinds[k].seen = 0;
        pm->stamp = 1;
    }
    *n = 0;
    for (uint32_t o = 0; o < pm->n_open; o++)
        cand_add(pm, n, pm->open[o]);
    for (uint32_t l = 0; m && pm->labs && l < m->n_labels; l++) {
        uint64_t h = label_hash(m->labels[l].key, m->labels[l].value);
        for (uint32_t x = (uint32_t)h & pm->lab_mask; pm->labs[x].h; x = (x + 1) & pm->lab_mask)
            if (pm->labs[x].h == h)
                cand_add(pm, n, pm->labs[x].kind);
    }
    if (*n > 1)
        qsort(pm->cand, *n, sizeof(*pm->cand), cmp_u32);
    return true;
}

/* The kind of rule pod m, made when new; NULL out of memory. */
static struct podmark_kind *kind_of(struct place_state *st, struct place_podmark *pm,
                                    const struct pod_meta *m)
{
    uint64_t key = kind_hash(m);
    if (!pm->slot || 2 * (pm->n_kinds + 1) > pm->mask + 1) { /* at most half full */
        uint32_t size = pm->slot ? 2 * (pm->mask + 1) : 64;
        uint32_t *slot = arena_calloc(st->arena, size, sizeof(*slot));
        if (!slot)
            return NULL;
        for (uint32_t k = 0; k < pm->n_kinds; k++) {
            uint32_t x = (uint32_t)pm->kinds[k].key & (size - 1);
            while (slot[x])
                x = (x + 1) & (size - 1);
            slot[x] = k + 1;
        }
        pm->slot = slot;
        pm->mask = size - 1;
    }
    uint32_t x = (uint32_t)key & pm->mask;
    for (; pm->slot[x]; x = (x + 1) & pm->mask) {
        struct podmark_kind *k = &pm->kinds[pm->slot[x] - 1];
        if (k->key == key && same_kind(k->rep, m))
            return k;
    }
    struct podmark_kind *v =
        arena_grow(st->arena, pm->kinds, pm->n_kinds, &pm->cap_kinds, sizeof(*v));
    if (!v)
        return NULL;
    pm->kinds = v;
    v[pm->n_kinds] = (struct podmark_kind){.key = key, .rep = m};
    pm->slot[x] = ++pm->n_kinds;
    return kind_index(st, pm, pm->n_kinds - 1) ? &v[pm->n_kinds - 1] : NULL;
}

/* Puts the pods noted in st->rules since the last call into their kinds (or loose). */
static void kinds_update(struct place_state *st, struct place_podmark *pm)
{
    for (; !pm->lost && pm->n_sorted < st->n_rules; pm->n_sorted++) {
        uint32_t r = pm->n_sorted;
        const struct sched_pod *p = place_pods_at(st, st->rules[r]);
        uint32_t *v = arena_grow(st->arena, pm->next, r, &pm->cap_next, sizeof(*v));
        if (!v || !p) { /* no pod: a trial's release, never seen while marks are on */
            pm->lost = true;
            return;
        }
        pm->next = v;
        v[r] = 0;
        const struct pod_meta *m = p->meta;
        struct podmark_kind *k = NULL;
        if (!m->n_ports && m->n_anti > 0 && m->n_anti <= KIND_TERMS) {
            if (!(k = kind_of(st, pm, m))) {
                pm->lost = true;
                return;
            }
            v[r] = k->head;
            k->head = r + 1;
            k->n++;
            kind_mark(st, k, p->node);
            continue;
        }
        uint32_t *l = arena_grow(st->arena, pm->loose, pm->n_loose, &pm->cap_loose, sizeof(*l));
        if (!l) {
            pm->lost = true;
            return;
        }
        pm->loose = l;
        l[pm->n_loose++] = r;
    }
}

/* Keeps kind k's marks once it has MARK_MIN pods (one per term; none past MARK_BYTES). */
static void kind_keep(struct place_state *st, struct place_podmark *pm, struct podmark_kind *k)
{
    if (k->mark[0] || k->n < MARK_MIN)
        return;
    uint8_t *mk[KIND_TERMS] = {NULL};
    uint64_t before = pm->bytes;
    for (uint32_t t = 0; t < k->rep->n_anti; t++) {
        const struct place_keydom *kd = place_keydom(st, k->rep->anti[t].topology_key);
        if (!kd || !(mk[t] = mark_new(st, pm, kd))) {
            pm->bytes = before; /* what was taken is left unused */
            return;
        }
    }
    memcpy(k->mark, mk, k->rep->n_anti * sizeof(*mk));
    for (uint32_t r = k->head; r; r = pm->next[r - 1])
        kind_mark(st, k, place_pods_at(st, st->rules[r - 1])->node);
}

/* Term pt of a pod on node `node` forbids pod m its domain there: marked in the scratch of pt's
 * key (*used: the scratches marked, their nodes rejected at the end), or, past BY_KEYS keys in
 * the cycle or without the key's domains (out of memory), that domain's nodes into why at once;
 * false on out of memory. */
static bool forbid(struct place_state *st, struct place_podmark *pm, uint32_t *used,
                   const struct pod_term *pt, uint32_t node, uint8_t *why)
{
    const struct place_keydom *kd = place_keydom(st, pt->topology_key);
    uint32_t n = st->c->n_nodes, b = 0;
    if (node >= n)
        return true;
    while (b < pm->n_by && pm->by[b].kd != kd)
        b++;
    if (kd && b == pm->n_by && b < BY_KEYS) {
        uint8_t *mark = arena_calloc(st->arena, kd->n_dom + 1, 1);
        if (!mark)
            return false;
        pm->by[pm->n_by++] = (struct podmark_scratch){.kd = kd, .mark = mark};
    }
    if (!kd || b == BY_KEYS) {
        for (uint32_t i = 0; i < n; i++)
            if (!why[i] &&
                (kd ? kd->dom[i] != UINT32_MAX && kd->dom[i] == kd->dom[node] : i == node))
                why[i] = FILTER_POD_ANTI + 1;
        return true;
    }
    *used |= 1u << b;
    if (kd->dom[node] != UINT32_MAX)
        pm->by[b].mark[kd->dom[node]] = 1;
    return true;
}

/* Rejects the nodes of the domains marked in the scratches `used`, and clears them. */
static void reject_by(struct place_podmark *pm, uint32_t used, uint8_t *why)
{
    for (uint32_t b = 0; b < pm->n_by; b++)
        if (used & 1u << b) {
            place_keydom_reject(pm->by[b].kd, pm->by[b].mark, why, FILTER_POD_ANTI + 1);
            memset(pm->by[b].mark, 0, pm->by[b].kd->n_dom + 1);
        }
}

/* Rule pod p against pod m (NULL: none): its host ports, its anti-affinity terms. */
static bool pod_rules(struct place_state *st, struct place_podmark *pm, const struct sched_pod *p,
                      const struct pod_meta *m, uint32_t *used, uint8_t *why)
{
    if (m && m->n_ports && podaff_ports_clash(m, p->meta))
        why[p->node] = FILTER_HOST_PORT + 1;
    for (uint32_t t = 0; t < p->meta->n_anti; t++)
        if (podaff_selects(&p->meta->anti[t], p->meta->ns, m) &&
            !forbid(st, pm, used, &p->meta->anti[t], p->node, why))
            return false;
    return true;
}

/* Kind k's rules against pod m: per term that selects m, its kept mark or its pods. */
static bool kind_rules(struct place_state *st, struct place_podmark *pm, struct podmark_kind *k,
                       const struct pod_meta *m, uint32_t *used, uint8_t *why)
{
    bool selects[KIND_TERMS], any = false;
    for (uint32_t t = 0; t < k->rep->n_anti; t++)
        any |= selects[t] = podaff_selects(&k->rep->anti[t], k->rep->ns, m);
    if (!any)
        return true;
    kind_keep(st, pm, k);
    for (uint32_t t = 0; t < k->rep->n_anti; t++) {
        if (!selects[t])
            continue;
        if (k->mark[0]) { /* kept: its domains' nodes at once (an anti-affinity fills only 0s) */
            place_keydom_reject(place_keydom(st, k->rep->anti[t].topology_key), k->mark[t], why,
                                FILTER_POD_ANTI + 1);
            continue;
        }
        for (uint32_t r = k->head; r; r = pm->next[r - 1]) {
            const struct sched_pod *p = place_pods_at(st, st->rules[r - 1]);
            if (!forbid(st, pm, used, &k->rep->anti[t], p->node, why))
                return false;
        }
    }
    return true;
}

bool place_podmark_rules(struct place_state *st, const struct pod_meta *m, uint8_t *why)
{
    uint32_t used = 0, n = st->c->n_nodes;
    struct place_podmark *pm = scratch(st);
    if (!pm)
        return false;
    bool on = place_keeps(st), ok = true;
    if (on)
        kinds_update(st, pm);
    if (!on || pm->lost) { /* every rule pod, one by one */
        for (uint32_t r = 0; r < st->n_rules && ok; r++) {
            const struct sched_pod *p = place_pods_at(st, st->rules[r]);
            ok = !p || p->node >= n || pod_rules(st, pm, p, m, &used, why);
        }
    } else {
        /* the loose pods first: a host port's reason replaces another (as pod by pod) */
        for (uint32_t x = 0; x < pm->n_loose && ok; x++) {
            const struct sched_pod *p = place_pods_at(st, st->rules[pm->loose[x]]);
            ok = p->node >= n || pod_rules(st, pm, p, m, &used, why);
        }
        uint32_t n_cand = 0; /* the kinds that may select m, in kind order */
        ok = candidates(st, pm, m, &n_cand);
        for (uint32_t c = 0; c < n_cand && ok; c++)
            ok = kind_rules(st, pm, &pm->kinds[pm->cand[c]], m, &used, why);
    }
    reject_by(pm, used, why);
    return ok;
}
