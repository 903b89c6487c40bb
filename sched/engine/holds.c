/* sched/engine/holds.c: preemptor holds, operator reservations and reservation hints, and the
 * core's view of them (see engine.h). */
#include <stdlib.h>
#include <string.h>

#include "sched/core/err.h"
#include "sched/engine/engine.h"
#include "sched/engine/engine_int.h"

static void vec_remove(struct eng_hold_vec *hv, uint32_t h)
{
    free(hv->v[h].nodes);
    hv->v[h] = hv->v[--hv->n];
}

/* Drops the entries of gang g that are preemptors' (operator_id 0) or, with `any`, all. */
static void vec_drop(struct eng_hold_vec *hv, uint32_t g, bool any)
{
    for (uint32_t h = 0; h < hv->n;)
        if (hv->v[h].gang == g && (any || hv->v[h].operator_id == 0))
            vec_remove(hv, h);
        else
            h++;
}

/* Appends an entry; when `replace`, first drops g's entries as vec_drop(hv, g, any) (after the
 * copy: nodes may point into an entry being dropped). */
static int vec_add(struct eng_hold_vec *hv, uint32_t g, const uint32_t *nodes, uint32_t n,
                   int64_t until_ms, int64_t operator_id, bool replace, bool any)
{
    uint32_t *copy = eng_realloc(NULL, ((size_t)n + 1) * sizeof(*copy));
    if (!copy)
        return SCHED_ENOMEM;
    if (n)
        memcpy(copy, nodes, n * sizeof(*copy));
    if (replace)
        vec_drop(hv, g, any);
    if (hv->n == hv->cap) {
        uint32_t cap = hv->cap ? hv->cap * 2 : 8;
        struct eng_hold *v = eng_realloc(hv->v, cap * sizeof(*v));
        if (!v) {
            free(copy);
            return SCHED_ENOMEM;
        }
        hv->v = v;
        hv->cap = cap;
    }
    hv->v[hv->n++] = (struct eng_hold){
        .gang = g, .nodes = copy, .n_nodes = n, .until_ms = until_ms, .operator_id = operator_id};
    return 0;
}

int eng_hold_put(struct eng *e, enum eng_hold_list l, uint32_t g, const uint32_t *nodes, uint32_t n,
                 int64_t until_ms)
{
    return vec_add(&e->holds[l], g, nodes, n, until_ms, 0, true, l == ENG_HINTS);
}

int eng_hold_preemptor(struct eng *e, uint32_t g, const uint32_t *nodes, uint32_t n, int64_t now)
{
    return eng_hold_put(e, ENG_HOLDS, g, nodes, n, now + e->lim.hold_ms);
}

int eng_hold_operator(struct eng *e, int64_t id, uint32_t g, const uint32_t *nodes, uint32_t n,
                      int64_t until_ms)
{
    if (id <= 0)
        return SCHED_EINVAL;
    struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    int rc = vec_add(hv, g, nodes, n, until_ms, id, false, false);
    for (uint32_t h = 0; rc == 0 && h + 1 < hv->n; h++)
        if (hv->v[h].operator_id == id) { /* the same id again: the new entry replaces it */
            vec_remove(hv, h);
            break;
        }
    return rc;
}

int eng_hold_operator_drop(struct eng *e, int64_t id)
{
    struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    for (uint32_t h = 0; h < hv->n; h++)
        if (hv->v[h].operator_id == id) {
            vec_remove(hv, h);
            return 0;
        }
    return SCHED_ENOENT;
}

void eng_hold_drop(struct eng *e, uint32_t g)
{
    vec_drop(&e->holds[ENG_HOLDS], g, false);
}

void eng_holds_forget(struct eng *e, const struct eng_forget *f)
{
    for (int l = ENG_HOLDS; l <= ENG_HINTS; l++) {
        struct eng_hold_vec *hv = &e->holds[l];
        for (uint32_t h = 0; h < hv->n;)
            if (hv->v[h].operator_id == 0 && eng_forgotten(f, hv->v[h].gang))
                vec_remove(hv, h);
            else
                h++;
    }
}

uint32_t eng_hold_count(const struct eng *e, enum eng_hold_list l)
{
    return e->holds[l].n;
}

const struct eng_hold *eng_hold_at(const struct eng *e, enum eng_hold_list l, uint32_t i)
{
    return i < e->holds[l].n ? &e->holds[l].v[i] : NULL;
}

void eng_hold_replan(struct eng *e, uint32_t g)
{
    struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    for (uint32_t h = 0; h < hv->n; h++)
        if (hv->v[h].gang == g && hv->v[h].operator_id == 0)
            hv->v[h].replan = true;
}

int eng_hold_extend(struct eng *e, uint32_t g, int64_t until_ms)
{
    struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    int64_t want = until_ms > INT64_MAX - e->lim.hold_ms ? INT64_MAX : until_ms + e->lim.hold_ms;
    for (uint32_t h = 0; h < hv->n; h++)
        if (hv->v[h].gang == g && hv->v[h].operator_id == 0 && hv->v[h].until_ms < want)
            hv->v[h].until_ms = want;
    return 0;
}

/* ---- the cycle's reservations --------------------------------------------------------------- */

static uint32_t gang_id(const struct eng_ids *ids, const struct gang *g)
{
    return ids && ids->gang ? ids->gang(ids->ctx, g) : g->id;
}

/* The reservation's nodes as engine ids: rv->nodes itself with the identity, else a copy in
 * *buf (freed by the caller). */
static const uint32_t *engine_nodes(const struct eng_ids *ids, const struct sched_reservation *rv,
                                    uint32_t **buf)
{
    *buf = NULL;
    if (!ids || !ids->node)
        return rv->nodes;
    *buf = eng_realloc(NULL, ((size_t)rv->n_nodes + 1) * sizeof(**buf));
    if (!*buf)
        return NULL;
    for (uint32_t k = 0; k < rv->n_nodes; k++)
        (*buf)[k] = ids->node(ids->ctx, rv->nodes[k]);
    return *buf;
}

static int add_reservations(struct eng *e, const struct sched_result *res,
                            const struct eng_ids *ids, bool preemptors, int64_t now)
{
    for (uint32_t k = 0; k < res->n_reservations; k++) {
        const struct sched_reservation *rv = &res->reservations[k];
        if (rv->preemptor != preemptors)
            continue;
        uint32_t *buf;
        const uint32_t *nodes = engine_nodes(ids, rv, &buf);
        if (!nodes)
            return SCHED_ENOMEM;
        uint32_t g = gang_id(ids, rv->gang);
        int rc = preemptors ? eng_hold_preemptor(e, g, nodes, rv->n_nodes, now)
                            : eng_hold_put(e, ENG_HINTS, g, nodes, rv->n_nodes, 0);
        if (rc == 0 && !preemptors)
            rc = eng_job_reserved(e, g, rv->expected_start_ms);
        free(buf);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int eng_cycle_hints(struct eng *e, const struct sched_result *res, const struct eng_ids *ids)
{
    /* the new list is built before the old one is freed: the cycle's reservations may point
     * at the nodes of the hints it was given */
    struct eng_hold_vec old = e->holds[ENG_HINTS];
    memset(&e->holds[ENG_HINTS], 0, sizeof(old));
    int rc = add_reservations(e, res, ids, false, 0);
    while (old.n > 0)
        vec_remove(&old, old.n - 1);
    free(old.v);
    return rc;
}

int eng_cycle_holds(struct eng *e, const struct sched_result *res, const struct eng_ids *ids,
                    int64_t now)
{
    return add_reservations(e, res, ids, true, now);
}

int eng_cycle_reservations(struct eng *e, const struct sched_result *res, const struct eng_ids *ids,
                           int64_t now)
{
    int rc = eng_cycle_hints(e, res, ids);
    return rc != 0 ? rc : eng_cycle_holds(e, res, ids, now);
}

/* ---- the core's view ------------------------------------------------------------------------ */

static const struct gang *core_gang(const struct eng_ids *ids, uint32_t g, bool *pending)
{
    *pending = false;
    return ids && ids->core_gang ? ids->core_gang(ids->ctx, g, pending) : NULL;
}

void eng_probation_view(const struct eng *e, const struct eng_ids *ids, struct sched_running *run,
                        uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct eng_job j = eng_job(e, gang_id(ids, run[i].gang));
        bool pending;
        /* a promise binds for the wait it was made in: while that gang still waits with the
         * same first reservation (it started, or waits again with another: void) */
        bool same_wait = j.probation_until_ms > 0 &&
                         eng_job(e, j.probation_for).reserve_first_ms == j.probation_until_ms;
        const struct gang *to = same_wait ? core_gang(ids, j.probation_for, &pending) : NULL;
        run[i].probation_until_ms = to ? j.probation_until_ms : 0;
        run[i].probation_for = to;
    }
}

void eng_holds_expire(struct eng *e, int64_t now, const struct eng_ids *ids)
{
    struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    for (uint32_t h = 0; h < hv->n;) {
        bool pending;
        const struct gang *g = core_gang(ids, hv->v[h].gang, &pending);
        if (hv->v[h].until_ms <= now || (hv->v[h].operator_id == 0 && (!g || !pending)))
            vec_remove(hv, h); /* expired, or its preemptor started or left */
        else
            h++;
    }
}

/* One list's view: entries whose gang the core knows (operator reservations of a gang not
 * pending: held for nobody), nodes mapped to this cycle's indices. */
static int fill(const struct eng_hold_vec *hv, bool holds, const struct eng_ids *ids,
                struct arena *a, const struct sched_hold **out, uint32_t *n_out)
{
    struct sched_hold *v = arena_calloc(a, hv->n + 1, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    uint32_t n = 0;
    for (uint32_t h = 0; h < hv->n; h++) {
        const struct eng_hold *eh = &hv->v[h];
        bool pending;
        const struct gang *g = core_gang(ids, eh->gang, &pending);
        if (holds && eh->operator_id > 0 && (!g || !pending)) {
            struct gang *nobody = arena_calloc(a, 1, sizeof(*nobody));
            if (!nobody)
                return SCHED_ENOMEM;
            nobody->id = UINT32_MAX;
            g = nobody;
        }
        if (!g)
            continue;
        const uint32_t *nodes = eh->nodes;
        uint32_t nn = eh->n_nodes;
        if (ids && ids->core_node) {
            uint32_t *m = arena_calloc(a, eh->n_nodes + 1, sizeof(*m));
            if (!m)
                return SCHED_ENOMEM;
            nn = 0;
            for (uint32_t k = 0; k < eh->n_nodes; k++) {
                uint32_t ix = ids->core_node(ids->ctx, eh->nodes[k]);
                if (ix != ENG_NONE)
                    m[nn++] = ix;
            }
            nodes = m;
        }
        v[n++] = (struct sched_hold){
            .gang = g, .nodes = nodes, .n_nodes = nn, .replan = holds && eh->replan};
    }
    *out = v;
    *n_out = n;
    return 0;
}

int eng_holds_view(struct eng *e, int64_t now, const struct eng_ids *ids, struct arena *a,
                   struct sched_snapshot *snap)
{
    eng_holds_expire(e, now, ids);
    int rc = fill(&e->holds[ENG_HOLDS], true, ids, a, &snap->holds, &snap->n_holds);
    if (rc == 0)
        rc =
            fill(&e->holds[ENG_HINTS], false, ids, a, &snap->reserve_hints, &snap->n_reserve_hints);
    return rc;
}
