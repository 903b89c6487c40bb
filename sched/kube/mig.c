/* sched/kube/mig.c: MIG devices as DRA devices (see mig.h). */
#include "sched/kube/mig.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/device.h"
#include "sched/core/dra.h"
#include "sched/core/log.h"
#include "sched/core/res.h"
#include "sched/k8s/slice.h"

/* A claim as MIG, for one generation of the slices and the classes. */
struct kmig_view {
    const struct kclaim *x; /* the claim it was made for (dropped at the claim's events) */
    uint64_t gen, classes_gen;
    bool mig;
    bool multi;    /* some request accepts several profiles: its choice is of generation cgen */
    uint64_t cgen; /* struct kmig choice_gen it was made in */
    char *why;
    struct kmig_choice ch;
};

/* What one alternative (its class and selectors) takes of MIG devices, shared by every claim
 * that asks alike (the claims of one template): one scan of the devices per generation. */
struct kmig_shape {
    int16_t res;   /* its profile (profile_pick), -1: no device passes */
    int every;     /* every device of that profile passes: 0 not known, 1 yes, 2 no */
    bool multi;    /* several profiles pass: res is chosen by the free devices of generation */
    uint64_t cgen; /* ... cgen (struct kmig choice_gen), and chosen again in a later one */
    bool watch;    /* a firstAvailable subrequest: free is kept per generation too */
    uint32_t free; /* devices of res it accepts that are free (when multi or watch) */
};

struct kmig {
    struct dra_inv *inv; /* type "mig" devices of the accelerator's driver */
    uint64_t gen;        /* counts slice events */
    uint64_t any_gen;    /* kmig_any's answer, of generation any_gen - 1 */
    bool any;
    struct strmap taken;   /* "pool\x1fdevice" -> (uintptr_t) allocated claims naming it */
    struct strmap pending; /* "pool\x1fdevice" -> claim key (malloc'd): picked, write in flight */
    struct strmap views;   /* claim key -> struct kmig_view* */
    struct strmap shapes;  /* class "\x1f" selectors (struct kclaim_alt src) -> kmig_shape* */
    uint64_t shapes_gen, shapes_cgen; /* the shapes' generation: gen + 1, classes_gen */
    uint64_t ugen;                    /* counts changes of taken and pending */
    uint64_t choice_gen; /* ugen at the last kmig_build_begin: what profile choices read */
};

struct kmig *kmig_new(void)
{
    struct kmig *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    if (!(m->inv = dra_inv_new())) {
        free(m);
        return NULL;
    }
    strmap_init(&m->taken);
    strmap_init(&m->pending);
    strmap_init(&m->views);
    strmap_init(&m->shapes);
    return m;
}

static void view_free(struct kmig_view *v)
{
    if (v)
        free(v->why);
    free(v);
}

void kmig_free(struct kmig *m)
{
    if (!m)
        return;
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&m->pending, &i, &k, &v);)
        free(v);
    for (size_t i = 0; strmap_next(&m->views, &i, &k, &v);)
        view_free(v);
    strmap_fini(&m->taken);
    strmap_fini(&m->pending);
    strmap_fini(&m->views);
    for (size_t i = 0; strmap_next(&m->shapes, &i, &k, &v);)
        free(v);
    strmap_fini(&m->shapes);
    dra_inv_free(m->inv);
    free(m);
}

void kmig_build_begin(struct kmig *m)
{
    m->choice_gen = m->ugen;
}

int kmig_slice_event(struct kmig *m, const cJSON *obj, bool deleted)
{
    m->gen++;
    return k8s_slice_typed_event(m->inv, obj, deleted, device_dra()->driver, DRA_MIG_TYPE);
}

static bool any_device(const struct cel_device *d, const void *ctx)
{
    (void)d;
    (void)ctx;
    return true;
}

bool kmig_any(const struct kmig *m)
{
    struct kmig *w = (struct kmig *)m; /* a cache, not state */
    if (w->any_gen != w->gen + 1) {
        w->any = dra_inv_any(w->inv, any_device, NULL);
        w->any_gen = w->gen + 1;
    }
    return w->any;
}

int kmig_apply(const struct kmig *m, struct cluster *c)
{
    static bool said;
    if (kmig_any(m))
        dra_inv_apply_mig(m->inv, c);
    if (dra_mig_uncounted() && !said)
        LOG_WARN("kube", "MIG devices of some profile not counted: its name is no resource name "
                         "or the resource table is full");
    said |= dra_mig_uncounted();
    return 0;
}

/* "pool\x1fdevice" into buf; false when too long. */
static bool dev_key(const char *pool, const char *device, char *buf, size_t n)
{
    return snprintf(buf, n, "%s\x1f%s", pool ? pool : "", device ? device : "") < (int)n;
}

/* Whether device (pool, name) is held by an allocated claim or picked by a write in flight. */
static bool in_use(const struct kmig *m, const char *pool, const char *name)
{
    char key[600];
    return !dev_key(pool, name, key, sizeof(key)) || strmap_get(&m->pending, key) ||
           strmap_get(&m->taken, key);
}

static void note_alloc(struct kmig *m, const struct kclaim *x, int delta)
{
    for (uint32_t k = 0; x && x->allocated && k < x->n_alloc; k++) {
        char key[600];
        if (!dev_key(x->alloc[k].pool, x->alloc[k].device, key, sizeof(key)))
            continue;
        uintptr_t n = (uintptr_t)strmap_get(&m->taken, key);
        m->ugen++;
        if (delta < 0 && n <= 1)
            strmap_del(&m->taken, key);
        else if (strmap_put(&m->taken, key, (void *)(delta > 0 ? n + 1 : n - 1), NULL) != 0)
            LOG_ERROR("kube", "out of memory noting a claim's MIG devices: claim=%s", x->key);
    }
}

void kmig_claim_changed(struct kmig *m, const char *key, const struct kclaim *old,
                        const struct kclaim *now)
{
    note_alloc(m, old, -1);
    note_alloc(m, now, +1);
    view_free(strmap_del(&m->views, key));
}

/* ---- a claim's view ------------------------------------------------------------------------- */

static bool class_accepts(const struct cel_device *d, const void *k)
{
    return kdra_class_matches(k, d);
}

/* Whether class k selects some MIG device (kept per slice generation). */
static bool class_mig(struct kmig *m, struct kdra_class *k)
{
    if (k->mig_gen != m->gen + 1) {
        k->mig_any = !k->unsupported && dra_inv_any(m->inv, class_accepts, k);
        k->mig_gen = m->gen + 1;
    }
    return k->mig_any;
}

/* The profiles of the MIG devices an alternative accepts, how many of each and how many of
 * those are free (in_use; counted only when free_too: a scan of every device). */
struct profiles {
    const struct kmig *m;
    const struct kclaim_alt *alt;
    const struct strmap *classes;
    bool free_too;
    int16_t res[RES_MAX];
    uint32_t count[RES_MAX], free[RES_MAX];
    uint32_t n;
};

static bool profile_of(const char *pool, const char *name, const struct cel_device *d, void *ctx)
{
    struct profiles *p = ctx;
    if (!kdra_alt_matches(p->alt, p->classes, d))
        return false;
    int r = dra_mig_res(d);
    uint32_t i = 0;
    while (r >= 0 && i < p->n && p->res[i] != r)
        i++;
    if (r >= 0 && i == p->n && p->n < RES_MAX)
        p->res[p->n++] = (int16_t)r;
    if (r >= 0 && i < p->n) {
        p->count[i]++;
        p->free[i] += p->free_too && !in_use(p->m, pool, name);
    }
    return false;
}

/* The profile a request of `need` devices accepting several is given: the one with the most
 * devices in the cluster (the smallest, as a rule) among those with `need` free devices (held by
 * no allocated claim, picked by no write in flight), else among all; then the first by name. */
static int16_t profile_pick(const struct profiles *p, uint32_t need)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < p->n; i++) {
        bool room = p->free[i] >= need, best_room = p->free[best] >= need;
        int d = room != best_room ? (room ? 1 : -1)
                : p->count[i] != p->count[best]
                    ? (p->count[i] > p->count[best] ? 1 : -1)
                    : -strcmp(res_name(p->res[i]), res_name(p->res[best]));
        if (d > 0)
            best = i;
    }
    return p->res[best];
}

/* Scans the devices for shape sh of alternative alt asking `need` devices: its profile, chosen
 * again (free devices counted) when several pass. */
static void shape_scan(struct kmig *m, const struct kmig_ctx *cx, const struct kclaim_alt *alt,
                       uint32_t need, struct kmig_shape *sh)
{
    struct profiles p = {
        .m = m, .alt = alt, .classes = cx->classes, .free_too = sh->multi || sh->watch};
    dra_inv_each(m->inv, profile_of, &p);
    if (p.n > 1 && !p.free_too) { /* first sight: several pass, count the free ones too */
        p = (struct profiles){.m = m, .alt = alt, .classes = cx->classes, .free_too = true};
        dra_inv_each(m->inv, profile_of, &p);
    }
    int16_t res = p.n ? profile_pick(&p, need) : -1;
    if (res != sh->res)
        sh->every = 0;
    sh->res = res;
    sh->free = 0;
    for (uint32_t i = 0; i < p.n; i++)
        sh->free = p.res[i] == res ? p.free[i] : sh->free;
    sh->multi = p.n > 1;
    sh->cgen = m->choice_gen;
}

/* The shape of alternative alt asking `need` devices (made at first sight in a generation; the
 * map is emptied when the slices or the classes change; a shape of several profiles, or one a
 * firstAvailable subrequest watches (its free devices), is scanned again in each later choice
 * generation); NULL out of memory. */
static struct kmig_shape *shape_of(struct kmig *m, const struct kmig_ctx *cx,
                                   const struct kclaim_alt *alt, uint32_t need, bool watch)
{
    const char *k;
    void *v;
    if (m->shapes_gen != m->gen + 1 || m->shapes_cgen != cx->classes_gen) {
        for (size_t i = 0; strmap_next(&m->shapes, &i, &k, &v);)
            free(v);
        strmap_fini(&m->shapes);
        strmap_init(&m->shapes);
        m->shapes_gen = m->gen + 1;
        m->shapes_cgen = cx->classes_gen;
    }
    const char *cls = alt->cls ? alt->cls : "", *src = alt->src ? alt->src : "";
    size_t len = strlen(cls) + strlen(src) + 16;
    char *key = malloc(len);
    if (!key)
        return NULL;
    snprintf(key, len, "%u\x1f%s\x1f%s", need, cls, src);
    struct kmig_shape *sh = strmap_get(&m->shapes, key);
    if (!sh && (sh = calloc(1, sizeof(*sh))) != NULL) {
        sh->res = -1;
        sh->watch = watch;
        shape_scan(m, cx, alt, need, sh);
        if (strmap_put(&m->shapes, key, sh, NULL) != 0) {
            free(sh);
            sh = NULL;
        }
    } else if (sh &&
               (((sh->multi || sh->watch) && sh->cgen != m->choice_gen) || (watch && !sh->watch))) {
        sh->watch |= watch;
        shape_scan(m, cx, alt, need, sh);
    }
    free(key);
    return sh;
}

/* Why request r of claim x (key) cannot be allocated from MIG devices, or NULL with v->ch its
 * profile and alternative: `exactly`'s one, or of firstAvailable's subrequests the first whose
 * profile has `count` free devices in the cluster when the build begins, else the first with a
 * profile (a choice kept for the build, as kmig_build_begin's); the text in buf. */
static const char *request_why(struct kmig *m, const struct kmig_ctx *cx, const char *key,
                               const struct kclaim *x, uint32_t r, struct kmig_view *v, char *buf,
                               size_t n)
{
    const struct kclaim_req *q = &x->reqs[r];
    int at = snprintf(buf, n, "resourceclaim %s: spec.devices.requests[%u]: ", key, r);
    size_t left = at > 0 && (size_t)at < n ? n - (size_t)at : 0;
    char *tail = buf + (n - left);
    if (q->all) {
        snprintf(tail, left, "allocationMode All of MIG devices is not allocated by gangsched");
        return buf;
    }
    int16_t res[8];
    int first = -1, room = -1; /* the first subrequest with a profile, the first with room */
    for (uint32_t s = 0; s < q->n_alts && s < 8; s++) {
        const char *cls = q->alts[s].cls;
        struct kdra_class *k = cls ? strmap_get(cx->classes, cls) : NULL;
        const struct kmig_shape *sh = NULL;
        if (!k || !class_mig(m, k))
            snprintf(tail, left,
                     "a claim takes MIG devices or whole devices, not both (deviceclass %s)",
                     cls ? cls : "of the accelerator");
        else if (cx->whole(cx->ctx, k))
            snprintf(tail, left,
                     "deviceclass %s selects whole devices and MIG devices: a request takes one "
                     "kind",
                     cls);
        else if (!(sh = shape_of(m, cx, &q->alts[s], q->count, q->first_available)))
            snprintf(tail, left, "out of memory");
        if (!sh)
            return buf;
        v->multi |= sh->multi || q->first_available;
        res[s] = sh->res;
        first = first < 0 && sh->res >= 0 ? (int)s : first;
        room = room < 0 && sh->res >= 0 && sh->free >= q->count ? (int)s : room;
    }
    int s = q->first_available && room >= 0 ? room : first;
    if (s >= 0) {
        v->ch.res[r] = res[s];
        v->ch.alt[r] = (uint8_t)s;
        return NULL;
    }
    if (q->first_available)
        snprintf(tail, left,
                 "no MIG device of a known profile passes any firstAvailable "
                 "subrequest");
    else
        snprintf(tail, left,
                 "no MIG device of a known profile passes deviceclass %s and its "
                 "selectors",
                 q->n_alts && q->alts[0].cls ? q->alts[0].cls : "of the accelerator");
    return buf;
}

static struct kmig_view *view_make(struct kmig *m, const struct kmig_ctx *cx, const char *key,
                                   const struct kclaim *x)
{
    struct kmig_view *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    *v = (struct kmig_view){
        .x = x, .gen = m->gen, .classes_gen = cx->classes_gen, .cgen = m->choice_gen};
    for (uint32_t r = 0; r < x->n_reqs && !v->mig; r++)
        for (uint32_t s = 0; s < x->reqs[r].n_alts && !v->mig; s++) {
            const char *cls = x->reqs[r].alts[s].cls;
            struct kdra_class *k = cls ? strmap_get(cx->classes, cls) : NULL;
            v->mig = k && class_mig(m, k);
        }
    char buf[800];
    const char *why = v->mig ? x->unsupported : NULL; /* refused when read: requests half read */
    for (uint32_t r = 0; v->mig && !why && r < x->n_reqs; r++)
        why = r < KDRA_MAX_REQS ? request_why(m, cx, key, x, r, v, buf, sizeof(buf)) : NULL;
    if (v->mig && !why && x->n_cons)
        why = (snprintf(buf, sizeof(buf),
                        "resourceclaim %s: spec.devices.constraints: constraints between MIG "
                        "devices are not allocated by gangsched",
                        key),
               buf);
    void *old = NULL;
    if ((why && !(v->why = strdup(why))) || strmap_put(&m->views, key, v, &old) != 0) {
        view_free(v);
        return NULL;
    }
    view_free(old);
    return v;
}

static struct kmig_view *view_of(struct kmig *m, const struct kmig_ctx *cx, const char *key,
                                 const struct kclaim *x)
{
    struct kmig_view *v = strmap_get(&m->views, key);
    if (v && v->x == x && v->gen == m->gen && v->classes_gen == cx->classes_gen &&
        (!v->multi || v->cgen == m->choice_gen))
        return v;
    return view_make(m, cx, key, x);
}

bool kmig_claim(struct kmig *m, const struct kmig_ctx *cx, const char *key, const struct kclaim *x,
                const struct kmig_choice **ch, const char **why)
{
    *ch = NULL;
    *why = NULL;
    if (!x || x->n_reqs == 0 || x->channels || !kmig_any(m))
        return false;
    struct kmig_view *v = view_of(m, cx, key, x);
    if (!v) {
        *why = "resourceclaim: out of memory judging its MIG devices";
        return true;
    }
    *ch = &v->ch;
    *why = v->why;
    return v->mig;
}

int kmig_device_res(const struct kmig *m, const char *node, const char *pool, const char *device)
{
    int g = dra_inv_index(m->inv, node, pool, device);
    const struct cel_device *info = NULL;
    if (g < 0 || !dra_inv_device(m->inv, node, (uint32_t)g, NULL, NULL, &info))
        return -1;
    return dra_mig_res(info);
}

/* The node rule of kmig_node_ok and kmig_every_node: a request taking profile res of alt
 * refuses device d when d is of that profile and does not pass alt. */
struct reject_ctx {
    const struct kclaim_alt *alt;
    const struct strmap *classes;
    int res;
};

static bool rejects(const struct cel_device *d, const void *ctx)
{
    const struct reject_ctx *rc = ctx;
    return dra_mig_res(d) == rc->res && !kdra_alt_matches(rc->alt, rc->classes, d);
}

bool kmig_node_ok(const struct kmig *m, const struct kmig_ctx *cx, const struct kclaim *x,
                  const struct kmig_choice *ch, const char *node)
{
    const struct cel_device *info;
    for (uint32_t g = 0; dra_inv_device(m->inv, node, g, NULL, NULL, &info); g++)
        for (uint32_t q = 0; q < x->n_reqs && q < KDRA_MAX_REQS; q++) {
            struct reject_ctx rc = {
                .alt = &x->reqs[q].alts[ch->alt[q]], .classes = cx->classes, .res = ch->res[q]};
            if (rejects(info, &rc))
                return false;
        }
    return true;
}

bool kmig_every_node(struct kmig *m, const struct kmig_ctx *cx, const char *key,
                     const struct kclaim *x)
{
    struct kmig_view *v = view_of(m, cx, key, x);
    if (!v || !v->mig || v->why)
        return true; /* such a claim waits: no node is asked of it */
    for (uint32_t r = 0; r < x->n_reqs && r < KDRA_MAX_REQS; r++) {
        const struct kclaim_req *q = &x->reqs[r];
        const struct kclaim_alt *alt = &q->alts[v->ch.alt[r]];
        struct kmig_shape *sh = shape_of(m, cx, alt, q->count, q->first_available);
        if (!sh)
            return false; /* out of memory: each node is judged */
        if (!sh->every) {
            struct reject_ctx rc = {.alt = alt, .classes = cx->classes, .res = sh->res};
            sh->every = dra_inv_any(m->inv, rejects, &rc) ? 2 : 1;
        }
        if (sh->every == 2)
            return false;
    }
    return true;
}

/* ---- allocation at binding ------------------------------------------------------------------ */

static bool own_device(const struct kclaim *x, const char *pool, const char *device)
{
    for (uint32_t k = 0; x->allocated && k < x->n_alloc; k++)
        if (strcmp(x->alloc[k].pool, pool) == 0 && strcmp(x->alloc[k].device, device) == 0)
            return true;
    return false;
}

/* Whether device (pool, name) can be picked for claim x: held by no other allocated claim, not
 * picked by a write in flight nor already in dev/pool[n]. */
static bool free_for(const struct kmig *m, const struct kclaim *x, const char *pool,
                     const char *name, const char *const *dev, const char *const *pools, uint32_t n)
{
    char key[600];
    if (!dev_key(pool, name, key, sizeof(key)) || strmap_get(&m->pending, key) ||
        (strmap_get(&m->taken, key) && !own_device(x, pool, name)))
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(dev[i], name) == 0 && strcmp(pools[i], pool) == 0)
            return false;
    return true;
}

int kmig_pick(struct kmig *m, const struct kmig_ctx *cx, const char *key, const struct kclaim *x,
              const char *node, const char **dev, const char **drv, const char **pool,
              uint32_t n_max, uint32_t *n, uint8_t *sub)
{
    const struct kmig_choice *ch;
    const char *why;
    *n = 0;
    if (!kmig_claim(m, cx, key, x, &ch, &why))
        return 0;
    if (why)
        return -1;
    uint32_t k = 0;
    for (uint32_t r = 0; r < x->n_reqs && r < KDRA_MAX_REQS; r++) {
        uint32_t need = x->reqs[r].count;
        const char *name, *dv, *pl;
        const struct cel_device *info;
        for (uint32_t g = 0; need && (name = dra_inv_device(m->inv, node, g, &dv, &pl, &info));
             g++) {
            if (dra_mig_res(info) != ch->res[r] ||
                !kdra_alt_matches(&x->reqs[r].alts[ch->alt[r]], cx->classes, info) ||
                !free_for(m, x, pl, name, dev, pool, k))
                continue;
            if (k == n_max)
                return -1;
            dev[k] = name;
            drv[k] = dv;
            pool[k] = pl;
            k++;
            need--;
        }
        if (need)
            return -1;
    }
    for (uint32_t i = 0; i < k; i++) {
        char dk[600];
        char *owner = strdup(key);
        void *old = NULL;
        if (!owner || !dev_key(pool[i], dev[i], dk, sizeof(dk)) ||
            strmap_put(&m->pending, dk, owner, &old) != 0) {
            free(owner);
            kmig_release(m, key);
            return -1;
        }
        free(old);
    }
    m->ugen += k > 0;
    if (sub)
        memcpy(sub, ch->alt, sizeof(ch->alt));
    *n = k;
    return 1;
}

void kmig_release(struct kmig *m, const char *key)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&m->pending, &i, &k, &v);)
        if (strcmp(v, key) == 0) {
            free(strmap_del(&m->pending, k));
            m->ugen++;
        }
}
