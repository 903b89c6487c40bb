/* sched/core/place_podix.c: the indexes of one cycle behind the pod rules (place_pods.c).
 *
 * Owns: a hash of (label key, value) -> the bound pods and those placed in the cycle that carry
 * it, built in the cycle's arena at the first selector that needs it and kept as pods are placed
 * (place_podix_placed), so that a term or a spread whose selector has an In requirement visits
 * the pods with one of its values instead of every pod (a cycle of a thousand gangs beside
 * 50,000 bound pods visited 50 million of them; 8,000 replicas of one cycle, each scored against
 * those placed before it, 32 million). And per topology key, the nodes by their
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
    uint32_t mask;  /* buckets - 1 */
    uint32_t *head; /* per bucket: its first entry + 1, 0 when empty */
    struct podix_entry {
        uint64_t h;    /* kv_hash of the label: a candidate's label is not compared again, since
                          callers test each candidate with podaff_selects */
        uint32_t pod;  /* index among the bound then placed pods (place_pods_at) */
        uint32_t next; /* the next entry of its bucket + 1, 0 at the end */
    } * e;
    uint32_t n, cap;
};

static uint64_t kv_hash(const char *key, const char *value)
{
    return sched_hash_str(sched_hash_str(SCHED_HASH_INIT, key), value);
}

/* Buckets for `entries` entries, at most two entries per bucket on average; false on out of
 * memory (the index unchanged). */
static bool rehash(struct place_state *st, struct place_podix *x, uint64_t entries)
{
    uint32_t buckets = 16;
    while (buckets < entries / 2 && buckets < (1u << 30))
        buckets *= 2;
    uint32_t *head = arena_calloc(st->arena, buckets, sizeof(*head));
    if (!head)
        return false;
    x->head = head;
    x->mask = buckets - 1;
    for (uint32_t k = 0; k < x->n; k++) { /* backwards lists: visited newest first */
        uint32_t b = (uint32_t)x->e[k].h & x->mask;
        x->e[k].next = head[b];
        head[b] = k + 1;
    }
    return true;
}

/* Adds pod k's labels (m) to the index; false on out of memory. */
static bool add_pod(struct place_state *st, struct place_podix *x, uint32_t k,
                    const struct pod_meta *m)
{
    for (uint32_t l = 0; m && l < m->n_labels; l++) {
        if (x->n == x->cap) {
            struct podix_entry *v = arena_grow(st->arena, x->e, x->n, &x->cap, sizeof(*v));
            if (!v)
                return false;
            x->e = v;
        }
        if ((uint64_t)x->n + 1 > 4ull * (x->mask + 1) && !rehash(st, x, 2ull * (x->n + 1)))
            return false;
        uint64_t h = kv_hash(m->labels[l].key, m->labels[l].value);
        uint32_t b = (uint32_t)h & x->mask;
        x->e[x->n] = (struct podix_entry){.h = h, .pod = k, .next = x->head[b]};
        x->head[b] = ++x->n;
    }
    return true;
}

/* Builds the index of the bound and placed pods so far; false on out of memory. */
static bool build(struct place_state *st)
{
    uint64_t entries = 0;
    for (uint32_t k = 0; k < st->n_bound + st->n_placed; k++) {
        const struct pod_meta *m =
            k < st->n_bound ? st->bound[k].meta : st->placed[k - st->n_bound].meta;
        entries += m ? m->n_labels : 0;
    }
    struct place_podix *x = arena_calloc(st->arena, 1, sizeof(*x));
    if (!x || entries >= UINT32_MAX / 2 || !rehash(st, x, entries))
        return false;
    for (uint32_t k = 0; k < st->n_bound + st->n_placed; k++)
        if (!add_pod(st, x, k,
                     k < st->n_bound ? st->bound[k].meta : st->placed[k - st->n_bound].meta))
            return false;
    st->podix = x;
    return true;
}

void place_podix_placed(struct place_state *st, uint32_t k, const struct pod_meta *m)
{
    if (st->podix && !add_pod(st, st->podix, k, m))
        st->podix = NULL; /* out of memory: every pod a candidate until built again */
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

bool place_podix_each(struct place_state *st, const struct pod_term *t,
                      void (*fn)(void *ctx, uint32_t k), void *ctx)
{
    const struct sel_req *r = best_in(t);
    if (t->none)
        return true; /* selects no pod */
    if (!r || (!st->podix && !build(st)))
        return false; /* every pod a candidate (no In requirement, or out of memory) */
    const struct place_podix *x = st->podix;
    for (uint32_t v = 0; v < r->n_values; v++) { /* a pod has one value per key: disjoint */
        uint64_t h = kv_hash(r->key, r->values[v]);
        for (uint32_t e = x->head[(uint32_t)h & x->mask]; e; e = x->e[e - 1].next)
            if (x->e[e - 1].h == h)
                fn(ctx, x->e[e - 1].pod);
    }
    return true;
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

void place_keydom_reject(const struct place_keydom *kd, const uint8_t *mark, uint8_t *why,
                         uint8_t code)
{
    /* the marked domains' nodes: a rule's pods mark few domains, so the marks are skipped
     * eight at a time and only those nodes are touched (a node by node pass cost every node
     * per gang: replicas of many apps grew with nodes x gangs) */
    uint32_t d = 0;
    while (d < kd->n_dom) {
        if (d + 8 <= kd->n_dom) {
            uint64_t w;
            memcpy(&w, mark + d, sizeof(w));
            if (!w) {
                d += 8;
                continue;
            }
        }
        for (uint32_t x = mark[d] ? kd->first[d] : 0; mark[d] && x < kd->first[d + 1]; x++)
            if (!why[kd->nodes[x]])
                why[kd->nodes[x]] = code;
        d++;
    }
}
