/* sched/core/podaff.c: inter-pod term matching and host port clashes (see podaff.h).
 *
 * The label selector follows apimachinery's labels.Selector built from a metav1.LabelSelector:
 * In needs the label with one of the values, NotIn is met by a pod without the label, Exists and
 * DoesNotExist test the key only, and a selector without requirements selects every pod. */
#include "sched/core/podaff.h"

#include <string.h>

#include "sched/core/hash.h"

/* The value of `key` in a list of labels sorted by key, or NULL. */
static const char *kv_find(const struct kv *l, uint32_t n, const char *key)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l[mid].key, key);
        if (c == 0)
            return l[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *podaff_label(const struct pod_meta *m, const char *key)
{
    return m ? kv_find(m->labels, m->n_labels, key) : NULL;
}

static bool in_values(const struct sel_req *r, const char *v)
{
    for (uint32_t k = 0; k < r->n_values; k++)
        if (strcmp(r->values[k], v) == 0)
            return true;
    return false;
}

/* Labels l (n, sorted) meet every requirement of r (n_r). */
static bool reqs_met(const struct sel_req *r, uint32_t n_r, const struct kv *l, uint32_t n)
{
    for (uint32_t k = 0; k < n_r; k++) {
        const char *v = kv_find(l, n, r[k].key);
        bool ok;
        switch (r[k].op) {
        case SEL_IN:
            ok = v && in_values(&r[k], v);
            break;
        case SEL_NOT_IN:
            ok = !v || !in_values(&r[k], v);
            break;
        case SEL_EXISTS:
            ok = v != NULL;
            break;
        case SEL_DOES_NOT_EXIST:
            ok = v == NULL;
            break;
        default: /* Gt and Lt are not label selector operators: decoders refuse them */
            ok = false;
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* The namespaces of t (owner_ns: its pod's) hold p: every one ({}), those listed and those
 * whose labels meet its namespaceSelector, else the owner's alone. */
static bool ns_selected(const struct pod_term *t, const char *owner_ns, const struct pod_meta *p)
{
    if (t->all_namespaces)
        return true;
    const char *ns = p && p->ns ? p->ns : "";
    if (t->n_namespaces == 0 && t->n_ns_reqs == 0)
        return strcmp(ns, owner_ns ? owner_ns : "") == 0;
    for (uint32_t k = 0; k < t->n_namespaces; k++)
        if (strcmp(t->namespaces[k], ns) == 0)
            return true;
    const struct ns_labels *nl = p ? p->ns_labels : NULL;
    return t->n_ns_reqs > 0 && nl && reqs_met(t->ns_reqs, t->n_ns_reqs, nl->labels, nl->n_labels);
}

bool podaff_selects(const struct pod_term *t, const char *owner_ns, const struct pod_meta *p)
{
    if (t->none || !ns_selected(t, owner_ns, p))
        return false;
    return reqs_met(t->reqs, t->n_reqs, p ? p->labels : NULL, p ? p->n_labels : 0);
}

bool podaff_ports_clash(const struct pod_meta *a, const struct pod_meta *b)
{
    if (!a || !b)
        return false;
    uint32_t i = 0, j = 0;
    while (i < a->n_ports && j < b->n_ports) {
        if (a->ports[i] == b->ports[j])
            return true;
        if (a->ports[i] < b->ports[j])
            i++;
        else
            j++;
    }
    return false;
}

static uint64_t fold_reqs(uint64_t h, const struct sel_req *r, uint32_t n)
{
    h = sched_hash(h, &n, sizeof(n));
    for (uint32_t k = 0; k < n; k++) {
        h = sched_hash_str(h, r[k].key);
        h = sched_hash(h, &r[k].op, sizeof(r[k].op));
        for (uint32_t v = 0; v < r[k].n_values; v++)
            h = sched_hash_str(h, r[k].values[v]);
    }
    return h;
}

static uint64_t fold_terms(uint64_t h, const struct pod_term *t, uint32_t n)
{
    h = sched_hash(h, &n, sizeof(n));
    for (uint32_t i = 0; i < n; i++) {
        h = sched_hash_str(h, t[i].topology_key);
        uint8_t flags = (uint8_t)(t[i].all_namespaces | t[i].none << 1);
        h = sched_hash(h, &flags, 1);
        for (uint32_t k = 0; k < t[i].n_namespaces; k++)
            h = sched_hash_str(h, t[i].namespaces[k]);
        h = fold_reqs(h, t[i].ns_reqs, t[i].n_ns_reqs);
        h = fold_reqs(h, t[i].reqs, t[i].n_reqs);
    }
    return h;
}

/* The owner's namespace decides which pods t selects: no namespaces, no namespace selector. */
static bool owner_decides(const struct pod_term *t)
{
    return !t->all_namespaces && t->n_namespaces == 0 && t->n_ns_reqs == 0;
}

uint64_t podaff_selection_hash(const struct pod_term *t, const char *owner_ns)
{
    struct pod_term sel = *t;
    sel.topology_key = "";
    uint64_t h = fold_terms(SCHED_HASH_INIT, &sel, 1);
    return owner_decides(t) ? sched_hash_str(h, owner_ns ? owner_ns : "") : h;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_strs(const char *const *a, const char *const *b, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (!same_str(a[k], b[k]))
            return false;
    return true;
}

bool podaff_same_reqs(const struct sel_req *a, const struct sel_req *b, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (a[k].op != b[k].op || a[k].field != b[k].field || a[k].n_values != b[k].n_values ||
            !same_str(a[k].key, b[k].key) || !same_strs(a[k].values, b[k].values, a[k].n_values))
            return false;
    return true;
}

bool podaff_same_selection(const struct pod_term *a, const char *a_ns, const struct pod_term *b,
                           const char *b_ns)
{
    if (a->none != b->none || a->all_namespaces != b->all_namespaces ||
        a->n_namespaces != b->n_namespaces || a->n_ns_reqs != b->n_ns_reqs ||
        a->n_reqs != b->n_reqs)
        return false;
    if (owner_decides(a) && strcmp(a_ns ? a_ns : "", b_ns ? b_ns : "") != 0)
        return false;
    return same_strs(a->namespaces, b->namespaces, a->n_namespaces) &&
           podaff_same_reqs(a->ns_reqs, b->ns_reqs, a->n_ns_reqs) &&
           podaff_same_reqs(a->reqs, b->reqs, a->n_reqs);
}

uint64_t podaff_labels_hash(uint64_t h, const struct pod_meta *m)
{
    if (!m)
        return sched_hash(h, "-", 1);
    h = sched_hash_str(h, m->ns);
    h = sched_hash(h, &m->n_labels, sizeof(m->n_labels));
    for (uint32_t k = 0; k < m->n_labels; k++) {
        h = sched_hash_str(h, m->labels[k].key);
        h = sched_hash_str(h, m->labels[k].value);
    }
    return h;
}

uint64_t podaff_terms_hash(const struct pod_meta *m)
{
    uint64_t h = sched_hash_str(SCHED_HASH_INIT, m->ns);
    h = fold_terms(h, m->affinity, m->n_affinity);
    h = fold_terms(h, m->pref_affinity, m->n_pref_affinity);
    h = fold_terms(h, m->pref_anti, m->n_pref_anti);
    for (uint32_t k = 0; k < m->n_pref_affinity; k++)
        h = sched_hash(h, &m->pref_affinity[k].weight, sizeof(int32_t));
    for (uint32_t k = 0; k < m->n_pref_anti; k++)
        h = sched_hash(h, &m->pref_anti[k].weight, sizeof(int32_t));
    return h;
}

uint64_t podaff_hash(uint64_t h, const struct pod_meta *m)
{
    if (!m)
        return sched_hash(h, "-", 1);
    h = podaff_labels_hash(h, m);
    h = fold_terms(h, m->affinity, m->n_affinity);
    h = fold_terms(h, m->anti, m->n_anti);
    h = sched_hash(h, m->ports, sizeof(*m->ports) * m->n_ports);
    for (uint32_t k = 0; k < m->n_spread; k++) {
        const struct pod_spread *sp = &m->spread[k];
        h = fold_terms(h, &sp->sel, 1);
        int32_t v[2] = {sp->max_skew, sp->min_domains};
        uint8_t f = (uint8_t)(sp->affinity_ignore | sp->taints_honor << 1);
        h = sched_hash(sched_hash(h, v, sizeof(v)), &f, 1);
    }
    if (!podaff_prefers(m))
        return h; /* folded only when set: the hash of a pod without preferences is unchanged */
    h = fold_terms(sched_hash(h, "p", 1), m->pref_affinity, m->n_pref_affinity);
    h = fold_terms(h, m->pref_anti, m->n_pref_anti);
    for (uint32_t k = 0; k < m->n_pref_affinity; k++)
        h = sched_hash(h, &m->pref_affinity[k].weight, sizeof(int32_t));
    for (uint32_t k = 0; k < m->n_pref_anti; k++)
        h = sched_hash(h, &m->pref_anti[k].weight, sizeof(int32_t));
    for (uint32_t k = 0; k < m->n_soft_spread; k++) {
        const struct pod_spread *sp = &m->soft_spread[k];
        h = fold_terms(h, &sp->sel, 1);
        uint8_t f = (uint8_t)(sp->affinity_ignore | sp->taints_honor << 1);
        h = sched_hash(sched_hash(h, &sp->max_skew, sizeof(sp->max_skew)), &f, 1);
    }
    return h;
}
