/* config/load_tree.c: cohorts, queues and their quotas, then the resolved tree (see load.h).
 *
 * Owns: the quota entries of cohorts and queues, the queue settings (preemption, lifecycle,
 * namespaces, LocalQueues), the cross-reference checks (names unique across cohorts and queues,
 * parents and cohorts resolved, no cycles, bounded depth), the dense quota tables and the lookup
 * tables kept with the config. Resource names new to the process are interned only here, after
 * the whole file has validated, so that a rejected file never consumes slots of the RES_MAX table.
 */
#include <stdlib.h>
#include <string.h>

#include "config/load.h"

/* ---- quotas -----------------------------------------------------------------------------------
 */

/* Resource id of `name`, or -1 - i for the i-th pending (not yet interned) name. */
static int resolve_res(struct ctx *x, const yaml_node_t *k, const char *name, int *code)
{
    if (strcmp(name, x->c->device) == 0) {
        *code = RES_GPU;
        return 0;
    }
    int id = res_lookup(name);
    if (id == RES_GPU) {
        char e[ESC_CAP], d[ESC_CAP];
        return cl_fail(x, &k->start_mark,
                       "\"%s\" is not the device of this config (device.resource is \"%s\"); a "
                       "quota of the accelerator is written under the device's name",
                       cl_esc(name, strlen(name), e, sizeof(e)),
                       cl_esc(x->c->device, strlen(x->c->device), d, sizeof(d)));
    }
    if (id >= 0) {
        *code = id;
        return 0;
    }
    for (int i = 0; i < x->n_pending; i++) {
        if (strcmp(x->pending[i].name, name) == 0) {
            *code = -1 - i;
            return 0;
        }
    }
    char e[ESC_CAP];
    if (res_count() + x->n_pending >= RES_MAX)
        return cl_fail(
            x, &k->start_mark,
            "too many resource names: \"%s\" would be name number %d, at most %d distinct "
            "resource names are supported",
            cl_esc(name, strlen(name), e, sizeof(e)), res_count() + x->n_pending + 1, RES_MAX);
    char path[256];
    cl_format_path(x, path, sizeof(path));
    struct pending_res *p = &x->pending[x->n_pending];
    p->name = config_pool_strndup(x->tmp, name, strlen(name));
    p->path = config_pool_strndup(x->tmp, path, strlen(path));
    if (!p->name || !p->path)
        return cl_oom(x);
    p->mark = k->start_mark;
    *code = -1 - x->n_pending++;
    return 0;
}

static int add_entry(struct ctx *x, const struct qentry *e)
{
    if (x->n_qe == x->cap_qe) {
        size_t cap = x->cap_qe ? x->cap_qe * 2 : 64;
        struct qentry *g = realloc(x->qe, cap * sizeof(*g));
        if (!g)
            return cl_oom(x);
        x->qe = g;
        x->cap_qe = cap;
    }
    x->qe[x->n_qe++] = *e;
    return 0;
}

/* One resource entry: a quantity (nominal) or {nominal, borrowingLimit, lendingLimit}. */
static int parse_quota_value(struct ctx *x, yaml_node_t *v, struct owner *o, int res,
                             struct config_quota *q)
{
    static const char *const keys[] = {"nominal", "borrowingLimit", "lendingLimit", NULL};
    int scale = res >= 0 ? res_scale(res) : 0;
    q->borrowing_limit = CONFIG_NO_LIMIT;
    q->lending_limit = CONFIG_NO_LIMIT;
    if (v->type == YAML_SCALAR_NODE)
        return cl_get_quantity(x, v, scale, &q->nominal);
    if (v->type != YAML_MAPPING_NODE)
        return cl_expect_fail(x, v,
                              "a quantity or a mapping with nominal, borrowingLimit, lendingLimit");
    int rc = cl_check_map(x, v, keys);
    if (rc)
        return rc;
    yaml_node_t *nom = cl_map_opt(x, v, "nominal");
    if (!nom)
        return cl_missing(x, v, "nominal", "");
    cl_path_push(x, "nominal");
    rc = cl_get_quantity(x, nom, scale, &q->nominal);
    cl_path_pop(x);
    const char *needs = o->is_queue ? "a cohort" : "a parent cohort";
    yaml_node_t *bl = rc ? NULL : cl_map_opt(x, v, "borrowingLimit");
    if (bl) {
        cl_path_push(x, "borrowingLimit");
        rc = o->ref ? cl_get_quantity(x, bl, scale, &q->borrowing_limit)
                    : cl_fail(x, &bl->start_mark, "borrowingLimit needs %s", needs);
        cl_path_pop(x);
    }
    yaml_node_t *ll = rc ? NULL : cl_map_opt(x, v, "lendingLimit");
    if (ll) {
        cl_path_push(x, "lendingLimit");
        rc = o->ref ? cl_get_quantity(x, ll, scale, &q->lending_limit)
                    : cl_fail(x, &ll->start_mark, "lendingLimit needs %s", needs);
        if (!rc && o->is_queue && q->lending_limit > q->nominal) {
            char a[64], b[64];
            config_fmt_qty(q->lending_limit, res, a, sizeof(a));
            config_fmt_qty(q->nominal, res, b, sizeof(b));
            rc = cl_fail(x, &ll->start_mark, "lendingLimit %s is above nominal %s", a, b);
        }
        cl_path_pop(x);
    }
    return rc;
}

static int parse_quota(struct ctx *x, yaml_node_t *qn, uint32_t owner)
{
    struct owner *o = &x->owners[owner];
    o->quota_mark = qn->start_mark;
    int rc = cl_expect_mapping(x, qn);
    if (!rc)
        rc = cl_check_map(x, qn, NULL);
    for (yaml_node_pair_t *p = qn->data.mapping.pairs.start; !rc && p < qn->data.mapping.pairs.top;
         p++) {
        yaml_node_t *fk = ydoc_node(x->y, p->key), *fv = ydoc_node(x->y, p->value);
        cl_path_key(x, ydoc_text(fk), ydoc_len(fk));
        const struct name_ent *fe = cl_name_find(x->flavor_ents, x->c->n_flavors, ydoc_text(fk));
        if (!fe) {
            const char **names = config_pool_array(x->tmp, x->c->n_flavors, sizeof(*names));
            if (!names) {
                rc = cl_oom(x);
            } else {
                for (uint32_t i = 0; i < x->c->n_flavors; i++)
                    names[i] = x->c->flavors[i].name;
                char list[300], e[ESC_CAP];
                rc = cl_fail(x, &fk->start_mark, "unknown flavor \"%s\" (declared: %s)",
                             cl_esc(ydoc_text(fk), ydoc_len(fk), e, sizeof(e)),
                             cl_name_list(names, x->c->n_flavors, list, sizeof(list)));
            }
        }
        if (!rc && !ydoc_is_null(fv)) {
            rc = cl_expect_mapping(x, fv);
            if (!rc)
                rc = cl_check_map(x, fv, NULL);
        }
        for (yaml_node_pair_t *r = ydoc_is_null(fv) ? NULL : fv->data.mapping.pairs.start;
             !rc && r && r < fv->data.mapping.pairs.top; r++) {
            yaml_node_t *rk = ydoc_node(x->y, r->key), *rv = ydoc_node(x->y, r->value);
            cl_path_key(x, ydoc_text(rk), ydoc_len(rk));
            struct qentry e = {owner, fe->idx, 0, {0, 0, 0}};
            if (ydoc_len(rk) == 0)
                rc = cl_fail(x, &rk->start_mark, "empty resource name");
            if (!rc)
                rc = resolve_res(x, rk, ydoc_text(rk), &e.res);
            if (!rc && !ydoc_is_null(rv)) {
                rc = parse_quota_value(x, rv, o, e.res, &e.q);
                if (!rc)
                    rc = add_entry(x, &e);
                if (!rc)
                    o->n_entries++;
            }
            cl_path_pop(x);
        }
        cl_path_pop(x);
    }
    return rc;
}

/* ---- cohorts and queues -----------------------------------------------------------------------
 */

static int parse_cohort(struct ctx *x, yaml_node_t *n, uint32_t i)
{
    static const char *const keys[] = {"name", "parent", "quota", NULL};
    struct config_cohort *co = &x->c->cohorts[i];
    struct owner *o = &x->owners[i];
    co->line = (uint32_t)n->start_mark.line + 1;
    co->column = (uint32_t)n->start_mark.column + 1;
    co->parent = -1;
    int rc = cl_named_entry(x, n, keys, &o->name, &o->name_mark);
    if (rc)
        return rc;
    co->name = o->name;
    yaml_node_t *parent = cl_map_opt(x, n, "parent");
    if (parent) {
        cl_path_push(x, "parent");
        rc = cl_get_name(x, parent, &o->ref);
        cl_path_pop(x);
        o->ref_mark = parent->start_mark;
    }
    yaml_node_t *quota = rc ? NULL : cl_map_opt(x, n, "quota");
    if (quota) {
        cl_path_push(x, "quota");
        rc = parse_quota(x, quota, i);
        cl_path_pop(x);
    }
    return rc;
}

static int parse_preemption(struct ctx *x, yaml_node_t *p, struct config_preemption *pre)
{
    static const char *const keys[] = {"withinQueue", "reclaimWithinCohort", "fairSharePreemption",
                                       "minRuntime",  "restartCost",         "checkpointGrace",
                                       NULL};
    static const char *const within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority",
                                         NULL};
    static const char *const reclaim[] = {"Never", "LowerPriority", "Any", NULL};
    int rc = cl_expect_mapping(x, p);
    if (!rc)
        rc = cl_check_map(x, p, keys);
    yaml_node_t *v;
    int e;
    if (!rc && (v = cl_map_opt(x, p, "withinQueue")) != NULL) {
        cl_path_push(x, "withinQueue");
        rc = cl_get_enum(x, v, within, &e);
        pre->within_queue = (enum config_within_queue)e;
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, p, "reclaimWithinCohort")) != NULL) {
        cl_path_push(x, "reclaimWithinCohort");
        rc = cl_get_enum(x, v, reclaim, &e);
        pre->reclaim = (enum config_reclaim)e;
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, p, "fairSharePreemption")) != NULL) {
        cl_path_push(x, "fairSharePreemption");
        rc = cl_get_bool(x, v, &pre->fair_share);
        cl_path_pop(x);
    }
    static const char *const durs[] = {"minRuntime", "restartCost", "checkpointGrace"};
    int64_t *dst[] = {&pre->min_runtime_ms, &pre->restart_cost_ms, &pre->checkpoint_grace_ms};
    for (int k = 0; !rc && k < 3; k++) {
        if ((v = cl_map_opt(x, p, durs[k])) != NULL) {
            cl_path_push(x, durs[k]);
            rc = cl_get_duration(x, v, dst[k]);
            cl_path_pop(x);
        }
    }
    return rc;
}

static int parse_lifecycle(struct ctx *x, yaml_node_t *p, struct config_lifecycle *lc)
{
    static const char *const keys[] = {"startTimeout", "maxRestarts", "failureGrace", "backoffMax",
                                       NULL};
    int rc = cl_expect_mapping(x, p);
    if (!rc)
        rc = cl_check_map(x, p, keys);
    yaml_node_t *v;
    if (!rc && (v = cl_map_opt(x, p, "startTimeout")) != NULL) {
        cl_path_push(x, "startTimeout");
        rc = cl_get_duration(x, v, &lc->start_timeout_ms);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, p, "failureGrace")) != NULL) {
        cl_path_push(x, "failureGrace");
        rc = cl_get_duration(x, v, &lc->failure_grace_ms);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, p, "backoffMax")) != NULL) {
        cl_path_push(x, "backoffMax");
        rc = cl_get_duration(x, v, &lc->backoff_max_ms);
        if (!rc && lc->backoff_max_ms <= 0) /* the delay would never grow: say so */
            rc = cl_fail(x, &v->start_mark,
                         "must be longer than 0 (the longest retry delay after a failure, "
                         "such as 1h)");
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, p, "maxRestarts")) != NULL) {
        long long n;
        cl_path_push(x, "maxRestarts");
        rc = cl_get_int(x, v, 0, 1000, &n);
        lc->max_restarts = (uint32_t)n;
        cl_path_pop(x);
    }
    return rc;
}

static int parse_queue(struct ctx *x, yaml_node_t *n, uint32_t i)
{
    static const char *const keys[] = {"name",      "cohort",     "weight",      "priority",
                                       "ordering",  "profile",    "quota",       "preemption",
                                       "lifecycle", "namespaces", "localQueues", NULL};
    static const char *const orderings[] = {"BestEffortFIFO", "StrictFIFO", NULL};
    struct config_queue *q = &x->c->queues[i];
    struct owner *o = &x->owners[x->c->n_cohorts + i];
    q->line = (uint32_t)n->start_mark.line + 1;
    q->column = (uint32_t)n->start_mark.column + 1;
    q->cohort = -1;
    q->weight = 1;
    q->ordering = CONFIG_BEST_EFFORT_FIFO;
    q->profile = -1;
    q->preemption.within_queue = CONFIG_PREEMPT_LOWER_PRIORITY;
    q->preemption.reclaim = CONFIG_RECLAIM_ANY;
    q->lifecycle.start_timeout_ms = CONFIG_DEFAULT_START_TIMEOUT_MS;
    q->lifecycle.max_restarts = CONFIG_DEFAULT_MAX_RESTARTS;
    q->lifecycle.failure_grace_ms = CONFIG_DEFAULT_FAILURE_GRACE_MS;
    q->lifecycle.backoff_max_ms = CONFIG_DEFAULT_BACKOFF_MAX_MS;
    int rc = cl_named_entry(x, n, keys, &o->name, &o->name_mark);
    if (rc)
        return rc;
    q->name = o->name;
    yaml_node_t *v;
    if ((v = cl_map_opt(x, n, "cohort")) != NULL) {
        cl_path_push(x, "cohort");
        rc = cl_get_name(x, v, &o->ref);
        o->ref_mark = v->start_mark;
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "weight")) != NULL) {
        cl_path_push(x, "weight");
        rc = cl_get_number(x, v, 0, true, CONFIG_MAX_WEIGHT, &q->weight);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "priority")) != NULL) {
        long long p;
        cl_path_push(x, "priority");
        rc = cl_get_int(x, v, INT32_MIN, INT32_MAX, &p);
        q->priority = (int32_t)p;
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "ordering")) != NULL) {
        int e;
        cl_path_push(x, "ordering");
        rc = cl_get_enum(x, v, orderings, &e);
        q->ordering = (enum config_ordering)e;
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "profile")) != NULL) {
        const char *pname;
        cl_path_push(x, "profile");
        rc = cl_get_name(x, v, &pname);
        const struct name_ent *pe =
            rc ? NULL : cl_name_find(x->profile_ents, x->c->n_profiles, pname);
        if (!rc && !pe) {
            const char **names = config_pool_array(x->tmp, x->c->n_profiles, sizeof(*names));
            if (!names) {
                rc = cl_oom(x);
            } else {
                for (uint32_t k = 0; k < x->c->n_profiles; k++)
                    names[k] = x->c->profiles[k].name;
                char list[300], e[ESC_CAP];
                rc = cl_fail(x, &v->start_mark, "unknown profile \"%s\" (known: %s)",
                             cl_esc(pname, strlen(pname), e, sizeof(e)),
                             cl_name_list(names, x->c->n_profiles, list, sizeof(list)));
            }
        }
        if (!rc)
            q->profile = (int32_t)pe->idx;
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "preemption")) != NULL) {
        cl_path_push(x, "preemption");
        rc = parse_preemption(x, v, &q->preemption);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "lifecycle")) != NULL) {
        cl_path_push(x, "lifecycle");
        rc = parse_lifecycle(x, v, &q->lifecycle);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "namespaces")) != NULL) {
        cl_path_push(x, "namespaces");
        rc = cl_get_names(x, v, false, &q->namespaces, &q->n_namespaces);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "localQueues")) != NULL) {
        cl_path_push(x, "localQueues");
        rc = cl_get_names(x, v, true, &q->local_queues, &q->n_local_queues);
        for (uint32_t k = 0; !rc && k < q->n_local_queues; k++)
            for (uint32_t j = 0; !rc && j <= i; j++) {
                const struct config_queue *o2 = &x->c->queues[j];
                for (uint32_t m = 0; !rc && m < (j == i ? k : o2->n_local_queues); m++)
                    if (strcmp(o2->local_queues[m], q->local_queues[k]) == 0)
                        rc = cl_fail(x, &ydoc_item(x->y, v, k)->start_mark,
                                     "LocalQueue \"%s\" is mapped twice (also to queue %s)",
                                     q->local_queues[k], j == i ? q->name : o2->name);
            }
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, n, "quota")) != NULL) {
        cl_path_push(x, "quota");
        rc = parse_quota(x, v, x->c->n_cohorts + i);
        cl_path_pop(x);
    }
    return rc;
}

static int parse_list(struct ctx *x, yaml_node_t *l, const char *section, uint32_t *n)
{
    *n = 0;
    if (!l)
        return 0;
    cl_path_push(x, section);
    int rc = cl_expect_sequence(x, l);
    cl_path_pop(x);
    if (!rc && ydoc_count(l) > INT32_MAX / 2)
        rc = cl_fail(x, &l->start_mark, "too many %s", section);
    if (!rc)
        *n = (uint32_t)ydoc_count(l);
    return rc;
}

/* Names unique across cohorts and queues; parents and cohorts resolved; no cycles. */
static int resolve_tree(struct ctx *x)
{
    struct config *c = x->c;
    uint32_t nc = c->n_cohorts, n = nc + c->n_queues;
    struct name_ent *ents = config_pool_array(x->tmp, n ? n : 1, sizeof(*ents));
    if (!ents)
        return cl_oom(x);
    for (uint32_t i = 0; i < n; i++) {
        struct owner *o = &x->owners[i];
        ents[i] = (struct name_ent){o->name, o->idx, o->is_queue, o->name_mark};
    }
    size_t first;
    long d = cl_name_sort_dups(ents, n, &first);
    if (d >= 0) {
        const struct name_ent *e = &ents[d], *f = &ents[first];
        cl_path_set(x, e->kind ? "queues" : "cohorts", (long)e->idx, "name");
        char q[ESC_CAP];
        cl_esc(e->name, strlen(e->name), q, sizeof(q));
        if (e->kind == f->kind)
            return cl_fail(x, &e->mark, "duplicate %s name \"%s\" (first declared at line %zu)",
                           e->kind ? "queue" : "cohort", q, f->mark.line + 1);
        return cl_fail(x, &e->mark,
                       "name \"%s\" is used by both a cohort and a queue (the %s at line %zu)", q,
                       f->kind ? "queue" : "cohort", f->mark.line + 1);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct owner *o = &x->owners[i];
        if (!o->ref)
            continue;
        const struct name_ent *e = cl_name_find(ents, n, o->ref);
        const char *field = o->is_queue ? "cohort" : "parent";
        if (!e || e->kind == 1) {
            char q[ESC_CAP];
            cl_path_set(x, o->is_queue ? "queues" : "cohorts", (long)o->idx, field);
            cl_esc(o->ref, strlen(o->ref), q, sizeof(q));
            if (e)
                return cl_fail(x, &o->ref_mark, "\"%s\" is a queue, not a cohort", q);
            return cl_fail(x, &o->ref_mark, "unknown cohort \"%s\"", q);
        }
        if (o->is_queue)
            c->queues[o->idx].cohort = (int32_t)e->idx;
        else
            c->cohorts[o->idx].parent = (int32_t)e->idx;
    }
    /* cycles: follow parents; 0 unvisited, 1 on the current walk, 2 done */
    uint8_t *st = config_pool_array(x->tmp, nc ? nc : 1, 1);
    if (!st)
        return cl_oom(x);
    for (uint32_t i = 0; i < nc; i++) {
        int32_t k = (int32_t)i;
        while (k >= 0 && st[k] == 0) {
            st[k] = 1;
            k = c->cohorts[k].parent;
        }
        if (k >= 0 && st[k] == 1) {
            /* the cycle through k; name it from its earliest declared member */
            int32_t start = k, m = c->cohorts[k].parent;
            while (m != k) {
                if (m < start)
                    start = m;
                m = c->cohorts[m].parent;
            }
            char cyc[400];
            struct sbuf b = {cyc, sizeof(cyc), 0};
            cyc[0] = '\0';
            m = start;
            do {
                cl_sb_escape(&b, c->cohorts[m].name, strlen(c->cohorts[m].name));
                cl_sb_printf(&b, " -> ");
                m = c->cohorts[m].parent;
            } while (m != start);
            cl_sb_escape(&b, c->cohorts[start].name, strlen(c->cohorts[start].name));
            cl_path_set(x, "cohorts", start, "parent");
            return cl_fail(x, &x->owners[start].ref_mark, "cohort cycle: %s", cyc);
        }
        for (k = (int32_t)i; k >= 0 && st[k] == 1; k = c->cohorts[k].parent)
            st[k] = 2;
    }
    /* depth (levels from the root, the root being 1), each cohort once: a chain walked up to
     * the first cohort whose depth is known, then filled in on the way back */
    uint32_t *dep = config_pool_array(x->tmp, nc ? nc : 1, sizeof(*dep));
    uint32_t *walk = config_pool_array(x->tmp, nc ? nc : 1, sizeof(*walk));
    if (!dep || !walk)
        return cl_oom(x);
    memset(dep, 0, (nc ? nc : 1) * sizeof(*dep));
    for (uint32_t i = 0; i < nc; i++) {
        uint32_t wn = 0;
        int32_t k = (int32_t)i;
        while (k >= 0 && dep[k] == 0) {
            walk[wn++] = (uint32_t)k;
            k = c->cohorts[k].parent;
        }
        uint32_t dk = k >= 0 ? dep[k] : 0;
        while (wn > 0)
            dep[walk[--wn]] = ++dk;
    }
    for (uint32_t i = 0; i < nc; i++)
        if (dep[i] > CONFIG_MAX_COHORT_DEPTH) {
            int32_t root = (int32_t)i;
            while (c->cohorts[root].parent >= 0)
                root = c->cohorts[root].parent;
            cl_path_set(x, "cohorts", i, "parent");
            return cl_fail(x, &x->owners[i].ref_mark,
                           "cohort '%s' is %u levels deep under root cohort '%s' (at most %d)",
                           c->cohorts[i].name, dep[i], c->cohorts[root].name,
                           CONFIG_MAX_COHORT_DEPTH);
        }
    return 0;
}

/* Each flavor's resourceWeights names a resource some quota of the file names: its code (a
 * resource id, or -1 - i for the i-th pending name, as qentry.res) goes into .res. */
static int check_weights(struct ctx *x)
{
    struct config *c = x->c;
    for (uint32_t f = 0; f < c->n_flavors; f++) {
        struct config_res_weight *rw = (struct config_res_weight *)c->flavors[f].weights;
        for (uint32_t k = 0; k < c->flavors[f].n_weights; k++) {
            bool dev = strcmp(rw[k].name, c->device) == 0;
            int code = dev ? RES_GPU : res_lookup(rw[k].name);
            bool known = dev || (code >= 0 && code != RES_GPU); /* the slot has the device's name */
            for (int i = 0; !known && code < 0 && i < x->n_pending; i++)
                if (strcmp(x->pending[i].name, rw[k].name) == 0) {
                    code = -1 - i;
                    known = true;
                }
            bool named = false;
            for (size_t q = 0; known && !named && q < x->n_qe; q++)
                named = x->qe[q].res == code;
            if (!named) {
                char e[ESC_CAP];
                cl_path_set(x, "flavors", (long)f, "resourceWeights");
                return cl_fail(x, &x->weight_marks[f][k],
                               "\"%s\" is not a resource any quota of this file names: a weight "
                               "only changes how a quota-tracked resource counts in the "
                               "fair-share order",
                               cl_esc(rw[k].name, strlen(rw[k].name), e, sizeof(e)));
            }
            rw[k].res = code;
        }
    }
    return 0;
}

/* Interns the new resource names, then fills the dense quota tables. */
static int build_quotas(struct ctx *x)
{
    struct config *c = x->c;
    int ids[RES_MAX];
    int rc = cl_qmap_check(x); /* the last refusals, before any name is interned */
    if (!rc)
        rc = check_weights(x);
    if (rc)
        return rc;
    for (int i = 0; i < x->n_pending; i++) {
        struct pending_res *p = &x->pending[i];
        struct sched_errbuf reb;
        if (res_intern(p->name, &ids[i], &reb) != 0)
            return sched_fail(x->eb, SCHED_EINVAL, "%s:%zu:%zu: %s: %s", x->file, p->mark.line + 1,
                              p->mark.column + 1, p->path, reb.msg);
    }
    size_t cells = (size_t)c->n_flavors * RES_MAX;
    /* nodes without a quota share one empty table (the config is read-only) */
    struct config_quota *empty_q = config_pool_array(x->pool, cells, sizeof(*empty_q));
    bool *empty_has = config_pool_array(x->pool, cells, sizeof(*empty_has));
    if (!empty_q || !empty_has)
        return cl_oom(x);
    size_t used = cells;
    uint32_t n = c->n_cohorts + c->n_queues;
    for (uint32_t i = 0; i < n; i++) {
        struct owner *o = &x->owners[i];
        o->set->quota = empty_q;
        o->set->has = empty_has;
        if (o->n_entries == 0)
            continue;
        used += cells;
        if (used > CONFIG_MAX_QUOTA_CELLS) {
            cl_path_set(x, o->is_queue ? "queues" : "cohorts", (long)o->idx, "quota");
            return cl_fail(x, &o->quota_mark,
                           "too many quotas: %zu quota tables of %u flavors x %d resources exceed "
                           "the limit of %zu cells; use fewer flavors or fewer queues with a quota",
                           used / cells - 1, c->n_flavors, RES_MAX, (size_t)CONFIG_MAX_QUOTA_CELLS);
        }
        o->set->quota = config_pool_array(x->pool, cells, sizeof(*o->set->quota));
        o->set->has = config_pool_array(x->pool, cells, sizeof(*o->set->has));
        if (!o->set->quota || !o->set->has)
            return cl_oom(x);
    }
    for (size_t k = 0; k < x->n_qe; k++) {
        const struct qentry *e = &x->qe[k];
        int r = e->res >= 0 ? e->res : ids[-1 - e->res];
        struct config_quota_set *s = x->owners[e->owner].set;
        size_t cell = (size_t)e->flavor * RES_MAX + (size_t)r;
        s->quota[cell] = e->q;
        s->has[cell] = true;
    }
    for (uint32_t f = 0; f < c->n_flavors; f++) {
        struct config_res_weight *rw = (struct config_res_weight *)c->flavors[f].weights;
        for (uint32_t k = 0; k < c->flavors[f].n_weights; k++)
            if (rw[k].res < 0)
                rw[k].res = ids[-1 - rw[k].res];
    }
    return 0;
}

static int name_idx_cmp(const void *a, const void *b)
{
    return strcmp(((const struct name_idx *)a)->name, ((const struct name_idx *)b)->name);
}

/* Counting sort of `n` items into `nb` buckets: first[b] .. first[b + 1] index `list`, items in
 * declaration order. `first` has nb + 1 entries, zeroed. */
static void csr_fill(uint32_t *first, uint32_t nb, uint32_t *list, uint32_t n,
                     const uint32_t *bucket_of)
{
    for (uint32_t i = 0; i < n; i++)
        first[bucket_of[i] + 1]++;
    for (uint32_t b = 0; b < nb; b++)
        first[b + 1] += first[b];
    for (uint32_t i = 0; i < n; i++)
        list[first[bucket_of[i]]++] = i; /* first[b] moves to the end of bucket b */
    for (uint32_t b = nb; b > 0; b--)
        first[b] = first[b - 1];
    first[0] = 0;
}

/* Lookup tables and the CSR tree used by lookups and config_print_tree. */
static int build_indices(struct ctx *x)
{
    struct config *c = x->c;
    struct config_pool *p = x->pool;
    uint32_t nc = c->n_cohorts, nq = c->n_queues;
    p->queue_idx = config_pool_array(p, nq ? nq : 1, sizeof(*p->queue_idx));
    p->flavor_idx = config_pool_array(p, c->n_flavors, sizeof(*p->flavor_idx));
    p->child_first = config_pool_array(p, nc + 2, sizeof(uint32_t));
    p->child = config_pool_array(p, nc ? nc : 1, sizeof(uint32_t));
    p->child_pos = config_pool_array(p, nc ? nc : 1, sizeof(uint32_t));
    p->queue_first = config_pool_array(p, nc + 2, sizeof(uint32_t));
    p->queue_list = config_pool_array(p, nq ? nq : 1, sizeof(uint32_t));
    uint32_t *bucket = config_pool_array(x->tmp, nc + nq + 1, sizeof(uint32_t));
    if (!p->queue_idx || !p->flavor_idx || !p->child_first || !p->child || !p->child_pos ||
        !p->queue_first || !p->queue_list || !bucket)
        return cl_oom(x);
    for (uint32_t i = 0; i < nq; i++)
        p->queue_idx[i] = (struct name_idx){c->queues[i].name, i};
    for (uint32_t i = 0; i < c->n_flavors; i++)
        p->flavor_idx[i] = (struct name_idx){c->flavors[i].name, i};
    qsort(p->queue_idx, nq, sizeof(*p->queue_idx), name_idx_cmp);
    qsort(p->flavor_idx, c->n_flavors, sizeof(*p->flavor_idx), name_idx_cmp);
    /* bucket nc holds the roots (cohorts) and the queues without a cohort */
    for (uint32_t i = 0; i < nc; i++)
        bucket[i] = c->cohorts[i].parent >= 0 ? (uint32_t)c->cohorts[i].parent : nc;
    csr_fill(p->child_first, nc + 1, p->child, nc, bucket);
    for (uint32_t k = 0; k < nc; k++)
        p->child_pos[p->child[k]] = k;
    for (uint32_t i = 0; i < nq; i++)
        bucket[i] = c->queues[i].cohort >= 0 ? (uint32_t)c->queues[i].cohort : nc;
    csr_fill(p->queue_first, nc + 1, p->queue_list, nq, bucket);
    return 0;
}

/* Cohorts and queues (sequences cl and ql, NULL when absent), then the resolved tree, the quota
 * tables and the lookup tables. */
int cl_parse_tree(struct ctx *x, yaml_node_t *cl, yaml_node_t *ql)
{
    struct config *c = x->c;
    int rc = parse_list(x, cl, "cohorts", &c->n_cohorts);
    if (!rc)
        rc = parse_list(x, ql, "queues", &c->n_queues);
    if (rc)
        return rc;
    uint32_t nc = c->n_cohorts, nq = c->n_queues;
    c->cohorts = config_pool_array(x->pool, nc ? nc : 1, sizeof(*c->cohorts));
    c->queues = config_pool_array(x->pool, nq ? nq : 1, sizeof(*c->queues));
    x->owners = config_pool_array(x->tmp, nc + nq + 1, sizeof(*x->owners));
    if (!c->cohorts || !c->queues || !x->owners)
        return cl_oom(x);
    for (uint32_t i = 0; i < nc + nq; i++) {
        struct owner *o = &x->owners[i];
        o->is_queue = i >= nc;
        o->idx = o->is_queue ? i - nc : i;
        o->set = o->is_queue ? &c->queues[o->idx].q : &c->cohorts[o->idx].q;
    }
    for (uint32_t i = 0; !rc && i < nc; i++) {
        cl_path_set(x, "cohorts", i, NULL);
        rc = parse_cohort(x, ydoc_item(x->y, cl, i), i);
    }
    for (uint32_t i = 0; !rc && i < nq; i++) {
        cl_path_set(x, "queues", i, NULL);
        rc = parse_queue(x, ydoc_item(x->y, ql, i), i);
    }
    x->depth = 0;
    if (!rc)
        rc = resolve_tree(x);
    if (!rc)
        rc = build_quotas(x);
    if (!rc)
        rc = build_indices(x);
    return rc;
}
