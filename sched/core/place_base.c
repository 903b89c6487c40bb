/* sched/core/place_base.c: placement state kept between cycles (see place_base.h).
 *
 * Memory: one block per base (malloc'd or from an arena), carved into the arrays; the layout is
 * computed twice, once to size the block and once to hand out its parts.
 */
#include "sched/core/place_base.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"

/* ---- layout ------------------------------------------------------------------------------- */

/* Every array starts on a cache line (bytes): a node's free resources (struct res_vec, 256
 * bytes) then span whole lines, so reading its first counts costs one line whatever the size of
 * the structures before them (a 16-byte alignment made the same one-GPU gangs' cycle on
 * hgx:50000 vary by 2.5x with an 8-byte field added to struct place_base: two lines per node
 * read). */
#define PB_ALIGN 64

struct carve {
    char *at; /* NULL while sizing */
    size_t used;
};

static void *carve(struct carve *cv, size_t n, size_t size)
{
    size_t bytes = (n ? n : 1) * size;
    cv->used = (cv->used + PB_ALIGN - 1) & ~(size_t)(PB_ALIGN - 1);
    void *p = cv->at ? cv->at + cv->used : NULL;
    cv->used += bytes;
    return p;
}

static void layout(struct place_base *b, struct carve *cv)
{
    const struct cluster *c = b->c;
    uint32_t n = b->n, md = b->max_domains;
    uint32_t sw = (b->words + 63) / 64;
    b->static_ok = carve(cv, n, 1);
    b->free = carve(cv, n, sizeof(*b->free));
    b->gpu_free = carve(cv, n, sizeof(*b->gpu_free));
    b->ok = carve(cv, n, 1);
    b->held = carve(cv, n, 1);
    b->soft = carve(cv, n, 1);
    b->tier = carve(cv, n, 1);
    b->tier_w = carve(cv, n, sizeof(*b->tier_w));
    b->tier_nodes = carve(cv, n, sizeof(*b->tier_nodes));
    b->key = carve(cv, n, 1);
    b->held_for = carve(cv, n, sizeof(*b->held_for));
    b->sok = carve(cv, n, 1);
    b->lok = carve(cv, n, 1);
    b->next = carve(cv, n, sizeof(*b->next));
    b->prev = carve(cv, n, sizeof(*b->prev));
    b->in_list = carve(cv, n, 1);
    b->in_sh = carve(cv, n, 1);
    b->bits = carve(cv, (size_t)PB_KEYS * b->words, sizeof(*b->bits));
    b->summary = carve(cv, (size_t)PB_KEYS * sw, sizeof(*b->summary));
    b->sh_bits = carve(cv, (size_t)PB_KEYS * b->words, sizeof(*b->sh_bits));
    b->sh_summary = carve(cv, (size_t)PB_KEYS * sw, sizeof(*b->sh_summary));
    b->cand = carve(cv, b->words, sizeof(*b->cand));
    for (uint32_t l = 0; l < c->topo.n_levels; l++)
        b->dom_okg[l] = carve(cv, c->topo.levels[l].n_domains, sizeof(int64_t));
    b->dirty = carve(cv, n, sizeof(*b->dirty));
    b->is_dirty = carve(cv, n, 1);
    b->elig = carve(cv, (size_t)n * GANG_MAX_SETS, 1);
    b->slots = carve(cv, (size_t)n * GANG_MAX_SETS, sizeof(*b->slots));
    b->order = carve(cv, n, sizeof(*b->order));
    b->useful = carve(cv, n, sizeof(*b->useful));
    b->touched = carve(cv, md, sizeof(*b->touched));
    b->dom_cap = carve(cv, (size_t)md * GANG_MAX_SETS, sizeof(*b->dom_cap));
    b->dom_free = carve(cv, md, sizeof(*b->dom_free));
    b->dom_capg = carve(cv, md, sizeof(*b->dom_capg));
}

/* Zeroes what is read before it is written (flags, buckets, domain sums, the per-node
 * scratch of filters); the rest (free capacity, lists, search scratch) is written first. */
static void zero_arrays(struct place_base *b)
{
    size_t n = b->n ? b->n : 1;
    uint8_t *flags[] = {b->ok, b->held, b->soft, b->tier, b->sok, b->lok, b->in_list, b->in_sh};
    for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
        memset(flags[k], 0, n);
    memset(b->held_for, 0, n * sizeof(*b->held_for));
    memset(b->gpu_free, 0, n * sizeof(*b->gpu_free));
    memset(b->elig, 0, n * GANG_MAX_SETS);
    memset(b->bits, 0, (size_t)PB_KEYS * b->words * sizeof(*b->bits));
    memset(b->summary, 0, (size_t)PB_KEYS * ((b->words + 63) / 64) * sizeof(*b->summary));
    memset(b->sh_bits, 0, (size_t)PB_KEYS * b->words * sizeof(*b->sh_bits));
    memset(b->sh_summary, 0, (size_t)PB_KEYS * ((b->words + 63) / 64) * sizeof(*b->sh_summary));
    memset(b->cand, 0, b->words * sizeof(*b->cand));
    for (uint32_t l = 0; l < b->c->topo.n_levels; l++)
        memset(b->dom_okg[l], 0,
               (b->c->topo.levels[l].n_domains ? b->c->topo.levels[l].n_domains : 1) *
                   sizeof(*b->dom_okg[l]));
}

/* The cluster's static facts and the "nothing synced yet" state: every node marked. */
static void init_static(struct place_base *b)
{
    const struct cluster *c = b->c;
    filter_env_init(&b->env, c);
    b->node_norm = 1;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct node *nd = &c->nodes[i];
        bool ok = true;
        for (size_t f = 0; plugin_filters[f]; f++)
            if (plugin_filters[f]->node_only && !plugin_filters[f]->pass(NULL, NULL, nd))
                ok = false;
        b->static_ok[i] = ok;
        for (uint32_t t = 0; t < nd->n_taints; t++)
            if (nd->taints[t].effect == TAINT_PREFER_NO_SCHEDULE)
                b->has_soft = true;
        if (gpu_max_island(nd) > b->max_island)
            b->max_island = gpu_max_island(nd);
        if (nd->n_gpus > b->node_norm)
            b->node_norm = nd->n_gpus;
        if (ok) { /* what could ever fit: a node down for now still counts */
            b->static_gpus += nd->n_gpus;
            for (int r = 0; r < res_count(); r++)
                if (nd->alloc.v[r] > b->max_alloc.v[r])
                    b->max_alloc.v[r] = nd->alloc.v[r];
        }
        b->key[i] = PB_NO_KEY;
        b->dirty[i] = i;
        b->is_dirty[i] = 1;
    }
    b->n_dirty = b->n;
    for (uint32_t l = 0; l < c->topo.n_levels; l++) {
        b->level_is_nodes[l] = c->topo.levels[l].n_domains == b->n && l + 1 < c->topo.n_levels;
        b->at_max[l] = c->topo.levels[l].n_domains; /* every sum 0: all at the maximum 0 */
        b->level_stale[l] = b->at_max[l] == 0;
    }
    for (uint32_t k = 0; k < PB_KEYS; k++)
        b->head[k] = -1;
    for (uint32_t d = 0; d < b->max_domains; d++)
        b->dom_free[d] = -1; /* unvisited: see sum_domains() in place.c */
}

static struct place_base *base_make(const struct cluster *c, struct arena *a)
{
    struct place_base tmp = {.c = c, .n = c->n_nodes};
    tmp.max_domains = c->n_nodes ? c->n_nodes : 1;
    for (uint32_t l = 0; l < c->topo.n_levels; l++)
        if (c->topo.levels[l].n_domains > tmp.max_domains)
            tmp.max_domains = c->topo.levels[l].n_domains;
    tmp.words = (c->n_nodes + 63) / 64;
    if (tmp.words == 0)
        tmp.words = 1;
    struct carve cv = {NULL, 0};
    layout(&tmp, &cv);
    size_t size = sizeof(struct place_base) + PB_ALIGN + cv.used;
    char *block = a ? arena_alloc(a, size) : malloc(size);
    if (!block)
        return NULL;
    struct place_base *b = (struct place_base *)(void *)block;
    *b = tmp;
    b->owned = a == NULL;
    cv.at = (char *)(((uintptr_t)(block + sizeof(*b)) + PB_ALIGN - 1) & ~(uintptr_t)(PB_ALIGN - 1));
    cv.used = 0;
    layout(b, &cv);
    zero_arrays(b);
    init_static(b);
    return b;
}

struct place_base *place_base_new(const struct cluster *c)
{
    return base_make(c, NULL);
}

struct place_base *place_base_in_arena(const struct cluster *c, struct arena *a)
{
    return base_make(c, a);
}

void place_base_free(struct place_base *b)
{
    if (b && b->owned) {
        free(b->share_cache);
        free(b);
    }
}

void place_base_touch(struct place_base *b, uint32_t i)
{
    if (i >= b->n)
        return;
    b->generation++;
    pb_mark(b, i);
}

/* ---- buckets ------------------------------------------------------------------------------ */

static uint32_t swords(const struct place_base *b)
{
    return (b->words + 63) / 64;
}

/* Node i into (out of) bucket k of a bitmap: the buckets' bitmaps (bits, summary) or their
 * shared sets (sh_bits, sh_summary). */
static void bits_set(struct place_base *b, uint64_t *bits, uint64_t *summary, uint32_t k,
                     uint32_t i)
{
    uint64_t *w = bits + (size_t)k * b->words;
    w[i / 64] |= UINT64_C(1) << (i % 64);
    summary[(size_t)k * swords(b) + i / 4096] |= UINT64_C(1) << (i / 64 % 64);
}

static void bits_clear(struct place_base *b, uint64_t *bits, uint64_t *summary, uint32_t k,
                       uint32_t i)
{
    uint64_t *w = bits + (size_t)k * b->words;
    w[i / 64] &= ~(UINT64_C(1) << (i % 64));
    if (w[i / 64] == 0)
        summary[(size_t)k * swords(b) + i / 4096] &= ~(UINT64_C(1) << (i / 64 % 64));
}

/* Node i enters (+1) or leaves (-1) bucket k: the counts per tier, while tiers are kept. */
static inline void tier_count(struct place_base *b, uint32_t i, uint8_t k, int d)
{
    if (b->tier_key)
        b->tier_cnt[b->tier[i]][k] += (uint32_t)d;
}

/* Out of the bucket, without marking (the sync uses it). */
static void unlink_raw(struct place_base *b, uint32_t i)
{
    b->moves++;
    uint8_t k = b->key[i];
    if (k == PB_NO_KEY)
        return;
    tier_count(b, i, k, -1);
    if (b->in_list[i]) {
        int32_t p = b->prev[i], nx = b->next[i];
        if (p >= 0)
            b->next[p] = nx;
        else
            b->head[k] = nx;
        if (nx >= 0)
            b->prev[nx] = p;
        b->in_list[i] = 0;
    } else if (b->in_sh[i]) {
        bits_clear(b, b->sh_bits, b->sh_summary, k, i);
        b->in_sh[i] = 0;
    } else {
        bits_clear(b, b->bits, b->summary, k, i);
    }
    b->free_gpus -= k;
    b->key[i] = PB_NO_KEY;
}

void pb_unlink(struct place_base *b, uint32_t i)
{
    pb_mark(b, i);
    pb_journal(b, i);
    unlink_raw(b, i);
}

void pb_link(struct place_base *b, uint32_t i)
{
    b->moves++;
    pb_mark(b, i);
    pb_journal(b, i);
    uint8_t k = (uint8_t)bits_popc32(b->gpu_free[i]);
    b->key[i] = k;
    tier_count(b, i, k, 1);
    b->in_list[i] = 1;
    b->prev[i] = -1;
    b->next[i] = b->head[k];
    if (b->head[k] >= 0)
        b->prev[b->head[k]] = (int32_t)i;
    b->head[k] = (int32_t)i;
    b->free_gpus += k;
}

void pb_link_shared(struct place_base *b, uint32_t i)
{
    pb_journal(b, i);
    unlink_raw(b, i);
    uint8_t k = (uint8_t)bits_popc32(b->gpu_free[i]);
    b->key[i] = k;
    tier_count(b, i, k, 1);
    b->in_sh[i] = 1;
    bits_set(b, b->sh_bits, b->sh_summary, k, i);
    b->free_gpus += k;
}

/* The highest node of bitmap (w, s) below `below`, or -1. */
static int32_t bits_prev(const uint64_t *w, const uint64_t *s, uint32_t below)
{
    if (below == 0)
        return -1;
    uint32_t at = below - 1, wi = at / 64;
    uint64_t m = w[wi] & (~UINT64_C(0) >> (63 - at % 64));
    if (!m) { /* the previous non-empty word, through the summary */
        if (wi == 0)
            return -1;
        uint32_t from = wi - 1, si = from / 64;
        uint64_t sm = s[si] & (~UINT64_C(0) >> (63 - from % 64));
        while (!sm) {
            if (si == 0)
                return -1;
            sm = s[--si];
        }
        wi = si * 64 + bits_top64(sm);
        m = w[wi];
    }
    return (int32_t)(wi * 64 + bits_top64(m));
}

int32_t pb_iter_next(const struct place_base *b, uint32_t k, struct pb_iter *it)
{
    if (it->phase == 0) {
        if (it->list >= 0) {
            int32_t i = it->list;
            it->list = b->next[i];
            return i;
        }
        it->phase = 1;
    }
    if (it->phase == 1) {
        int32_t i = bits_prev(b->sh_bits + (size_t)k * b->words,
                              b->sh_summary + (size_t)k * swords(b), it->pos);
        if (i >= 0) {
            it->pos = (uint32_t)i;
            return i;
        }
        it->phase = 2;
        it->pos = 0;
    }
    if (it->pos >= b->n)
        return -1;
    const uint64_t *w = b->bits + (size_t)k * b->words;
    uint32_t wi = it->pos / 64;
    uint64_t m = w[wi] & (~UINT64_C(0) << (it->pos % 64));
    if (!m) { /* the next non-empty word, through the summary */
        const uint64_t *s = b->summary + (size_t)k * swords(b);
        uint32_t from = wi + 1, si = from / 64;
        if (from >= b->words)
            return -1;
        uint64_t sm = s[si] & (~UINT64_C(0) << (from % 64));
        while (!sm) {
            if (++si >= swords(b))
                return -1;
            sm = s[si];
        }
        wi = si * 64 + bits_ctz64(sm);
        m = w[wi];
    }
    uint32_t i = wi * 64 + bits_ctz64(m);
    it->pos = i + 1;
    return (int32_t)i;
}

void pb_cand_fill(struct place_base *b, uint32_t kmin)
{
    uint32_t sw = swords(b);
    for (uint32_t k = kmin; k < PB_KEYS; k++) {
        for (int set = 0; set < 2; set++) { /* the bitmap and the shared set */
            const uint64_t *w = (set ? b->sh_bits : b->bits) + (size_t)k * b->words;
            const uint64_t *s = (set ? b->sh_summary : b->summary) + (size_t)k * sw;
            for (uint32_t si = 0; si < sw; si++) /* only the non-empty words, by the summary */
                for (uint64_t m = s[si]; m; m &= m - 1) {
                    uint32_t wi = si * 64 + bits_ctz64(m);
                    b->cand[wi] |= w[wi];
                }
        }
        for (int32_t i = b->head[k]; i >= 0; i = b->next[i])
            b->cand[(uint32_t)i / 64] |= UINT64_C(1) << ((uint32_t)i % 64);
    }
}

/* ---- domain sums -------------------------------------------------------------------------- */

static void dom_add(struct place_base *b, uint32_t l, uint32_t d, int64_t delta)
{
    int64_t old = b->dom_okg[l][d], now = old + delta;
    b->dom_okg[l][d] = now;
    if (b->level_stale[l])
        return;
    if (now > b->level_max[l]) {
        b->level_max[l] = now;
        b->at_max[l] = 1;
        return;
    }
    if (now == b->level_max[l])
        b->at_max[l]++;
    if (old == b->level_max[l] && --b->at_max[l] == 0)
        b->level_stale[l] = true; /* the largest shrank: found again by pb_level_max */
}

static void set_lok(struct place_base *b, uint32_t i, uint8_t on)
{
    if (b->lok[i] == on)
        return;
    b->lok[i] = on;
    const struct node *nd = &b->c->nodes[i];
    int64_t delta = on ? nd->n_gpus : -(int64_t)nd->n_gpus;
    for (uint32_t l = 0; l < b->c->topo.n_levels; l++)
        dom_add(b, l, nd->dom[l], delta);
}

void pb_level_max(struct place_base *b, int64_t *out)
{
    for (uint32_t l = 0; l < b->c->topo.n_levels; l++) {
        if (b->level_stale[l]) {
            const struct topo_level *lv = &b->c->topo.levels[l];
            int64_t max = 0;
            uint32_t at = 0;
            for (uint32_t d = 0; d < lv->n_domains; d++) {
                if (b->dom_okg[l][d] > max) {
                    max = b->dom_okg[l][d];
                    at = 0;
                }
                if (b->dom_okg[l][d] == max)
                    at++;
            }
            b->level_max[l] = max;
            b->at_max[l] = at;
            b->level_stale[l] = at == 0;
        }
        out[l] = b->level_max[l];
    }
}

/* ---- sync --------------------------------------------------------------------------------- */

void place_base_sync(struct place_base *b, const struct node_state *state)
{
    const struct cluster *c = b->c;
    for (uint32_t k = 0; k < b->n_dirty; k++) {
        uint32_t i = b->dirty[k];
        const struct node *nd = &c->nodes[i];
        unlink_raw(b, i);
        b->free[i] = nd->alloc;
        res_sub(&b->free[i], &state[i].used);
        uint32_t all = bits_low32(nd->n_gpus);
        b->gpu_free[i] = all & ~state[i].gpu_used;
        b->held[i] = 0;
        b->held_for[i] = NULL;
        uint8_t ok = b->static_ok[i] && !state[i].not_ready && !state[i].quarantined;
        if (b->sok[i] != ok) {
            b->ok_gpus += ok ? nd->n_gpus : -(int64_t)nd->n_gpus;
            b->sok[i] = ok;
        }
        set_lok(b, i, ok);
        b->ok[i] = ok;
        if (ok) {
            uint8_t key = (uint8_t)bits_popc32(b->gpu_free[i]);
            b->key[i] = key;
            b->in_list[i] = 0;
            bits_set(b, b->bits, b->summary, key, i);
            b->free_gpus += key;
        }
        b->is_dirty[i] = 0;
    }
    b->n_synced = b->n_dirty; /* b->dirty keeps them until the next mark (pb_synced) */
    b->n_dirty = 0;
    for (uint32_t k = 0; k < PB_KEYS; k++)
        b->head[k] = -1; /* every node of a list was marked, so it is in a bitmap again */
}

void pb_hold(struct place_base *b, uint32_t i, const struct gang *g)
{
    if (!b->ok[i])
        return;
    b->held_for[i] = g;
    pb_unlink(b, i);
    b->ok[i] = 0;
    set_lok(b, i, 0);
}
