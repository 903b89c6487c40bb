/* sched/core/place_podix.c: the indexes of one cycle behind the pod rules (place_pods.c).
 *
 * Owns: a hash of (label key, value) -> the bound pods that carry it, built in the cycle's arena
 * at the first selector that needs it, so that a term or a spread whose selector has an In
 * requirement visits the pods with one of its values instead of every bound pod (a cycle of a
 * thousand gangs beside 50,000 bound pods visited 50 million of them); the pods placed in the
 * cycle are not in it: callers visit those themselves. And per topology key, the nodes by their
 * value of it (domain ids, the nodes of each domain), so that a rule compares ids and walks only
 * the nodes of the domains it names.
 *
 * Must not touch: anything outside place_state; the bound pods are read only.
 */
#include <string.h>

#include "sched/core/hash.h"
#include "sched/core/place_internal.h"
#include "sched/core/strmap.h"

struct place_podix {
    uint32_t mask; /* slots - 1 */
    struct podix_slot {
        const char *key, *value; /* NULL: empty */
        uint32_t head;           /* first entry + 1 */
    } * slot;
    uint32_t *next; /* per entry: the next entry of its slot + 1, 0 at the end */
    uint32_t *pod;  /* per entry: the bound pod's index */
};

static uint64_t kv_hash(const char *key, const char *value)
{
    return sched_hash_str(sched_hash_str(SCHED_HASH_INIT, key), value);
}

static struct podix_slot *slot_of(const struct place_podix *x, const char *key, const char *value,
                                  bool add)
{
    for (uint64_t h = kv_hash(key, value);; h++) {
        struct podix_slot *s = &x->slot[h & x->mask];
        if (!s->key) {
            if (add) {
                s->key = key;
                s->value = value;
            }
            return add ? s : NULL;
        }
        if (strcmp(s->key, key) == 0 && strcmp(s->value, value) == 0)
            return s;
    }
}

/* Builds the index; false on out of memory. */
static bool build(struct place_state *st)
{
    uint64_t entries = 0;
    for (uint32_t k = 0; k < st->n_bound; k++)
        entries += st->bound[k].meta ? st->bound[k].meta->n_labels : 0;
    uint32_t slots = 16;
    while (slots < 2 * entries && slots < (1u << 31))
        slots *= 2;
    struct place_podix *x = arena_calloc(st->arena, 1, sizeof(*x));
    if (!x || entries >= UINT32_MAX / 2)
        return false;
    x->mask = slots - 1;
    x->slot = arena_calloc(st->arena, slots, sizeof(*x->slot));
    x->next = arena_alloc(st->arena, (entries ? entries : 1) * sizeof(*x->next));
    x->pod = arena_alloc(st->arena, (entries ? entries : 1) * sizeof(*x->pod));
    if (!x->slot || !x->next || !x->pod)
        return false;
    uint32_t e = 0;
    for (uint32_t k = 0; k < st->n_bound; k++) { /* backwards lists: visited newest first */
        const struct pod_meta *m = st->bound[k].meta;
        for (uint32_t l = 0; m && l < m->n_labels; l++, e++) {
            struct podix_slot *s = slot_of(x, m->labels[l].key, m->labels[l].value, true);
            x->pod[e] = k;
            x->next[e] = s->head;
            s->head = e + 1;
        }
    }
    st->podix = x;
    return true;
}

/* The In requirement of t with the fewest values, or NULL. */
static const struct sel_req *best_in(const struct pod_term *t)
{
    const struct sel_req *best = NULL;
    for (uint32_t r = 0; r < t->n_reqs; r++)
        if (t->reqs[r].op == SEL_IN && (!best || t->reqs[r].n_values < best->n_values))
            best = &t->reqs[r];
    return best;
}

uint32_t *place_podix_find(struct place_state *st, const struct pod_term *t, uint32_t *n, bool *all)
{
    const struct sel_req *r = best_in(t);
    *n = 0;
    *all = !r && !t->none;
    if (!r || st->n_bound == 0)
        return NULL;
    if (!st->podix && !build(st)) {
        *all = true; /* out of memory: every bound pod is a candidate */
        return NULL;
    }
    uint32_t cap = 0, *out = NULL;
    for (uint32_t v = 0; v < r->n_values; v++) { /* a pod has one value per key: disjoint */
        const struct podix_slot *s = slot_of(st->podix, r->key, r->values[v], false);
        for (uint32_t e = s ? s->head : 0; e; e = st->podix->next[e - 1]) {
            if (*n == cap && !(out = arena_grow(st->arena, out, *n, &cap, sizeof(*out)))) {
                *all = true;
                *n = 0;
                return NULL;
            }
            out[(*n)++] = st->podix->pod[e - 1];
        }
    }
    return out;
}

/* ---- nodes by topology key --------------------------------------------------------------- */

#define KEYDOMS_MAX 16 /* keys kept per cycle; more are built again at each use */

/* The nodes by their value of `key` (a domain id per node, UINT32_MAX without the key; the
 * nodes of each domain in CSR form), built once per cycle and key. */
static struct place_keydom *keydom_build(struct place_state *st, const char *key)
{
    uint32_t n = st->c->n_nodes;
    struct place_keydom *kd = arena_calloc(st->arena, 1, sizeof(*kd));
    struct strmap ids;
    strmap_init(&ids);
    bool ok = kd && (kd->dom = arena_alloc(st->arena, (n ? n : 1) * sizeof(*kd->dom))) &&
              (kd->first = arena_calloc(st->arena, n + 2, sizeof(*kd->first))) &&
              (kd->nodes = arena_alloc(st->arena, (n ? n : 1) * sizeof(*kd->nodes)));
    for (uint32_t i = 0; ok && i < n; i++) {
        const char *v = node_label(&st->c->nodes[i], key);
        uintptr_t id = v ? (uintptr_t)strmap_get(&ids, v) : 0;
        if (v && !id && strmap_put(&ids, v, (void *)(id = kd->n_dom + 1u), NULL) != 0)
            ok = false;
        kd->n_dom += v && id == kd->n_dom + 1u;
        kd->dom[i] = v ? (uint32_t)id - 1 : UINT32_MAX;
    }
    strmap_fini(&ids);
    if (!ok)
        return NULL;
    kd->key = key;
    for (uint32_t i = 0; i < n; i++) /* counting sort of the nodes by domain */
        if (kd->dom[i] != UINT32_MAX)
            kd->first[kd->dom[i] + 2]++;
    for (uint32_t d = 2; d <= kd->n_dom + 1; d++)
        kd->first[d] += kd->first[d - 1];
    for (uint32_t i = 0; i < n; i++)
        if (kd->dom[i] != UINT32_MAX)
            kd->nodes[kd->first[kd->dom[i] + 1]++] = i;
    return kd;
}

const struct place_keydom *place_keydom(struct place_state *st, const char *key)
{
    for (uint32_t k = 0; k < st->n_keydoms; k++)
        if (st->keydoms[k]->key == key || strcmp(st->keydoms[k]->key, key) == 0)
            return st->keydoms[k];
    struct place_keydom *kd = keydom_build(st, key);
    if (kd && st->n_keydoms < KEYDOMS_MAX &&
        (st->keydoms || (st->keydoms = arena_alloc(st->arena, KEYDOMS_MAX * sizeof(kd)))))
        st->keydoms[st->n_keydoms++] = kd;
    return kd;
}
