/* plugins/node_affinity.c: required node affinity with In, NotIn, Exists, DoesNotExist, Gt and
 * Lt, terms ORed and requirements ANDed, an empty term matching no node (Kubernetes semantics;
 * see model.h); and the weight a pod set's preferred terms give a node (the engine's node order,
 * sched/core/place.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins.h"

static bool parse_int(const char *s, long long *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

bool sel_req_matches(const struct sel_req *r, const struct node *n)
{
    const char *v = r->field ? n->name : node_label(n, r->key);
    switch (r->op) {
    case SEL_EXISTS:
        return v != NULL;
    case SEL_DOES_NOT_EXIST:
        return v == NULL;
    case SEL_IN:
    case SEL_NOT_IN: {
        bool in = false;
        for (uint32_t k = 0; v && k < r->n_values && !in; k++)
            in = strcmp(v, r->values[k]) == 0;
        return r->op == SEL_IN ? in : !in;
    }
    case SEL_GT:
    case SEL_LT: {
        long long have, want;
        if (r->n_values != 1 || !parse_int(v, &have) || !parse_int(r->values[0], &want))
            return false;
        return r->op == SEL_GT ? have > want : have < want;
    }
    }
    return false;
}

bool sel_term_matches(const struct sel_term *t, const struct node *n)
{
    bool all = t->n_reqs > 0; /* an empty term matches no node */
    for (uint32_t k = 0; k < t->n_reqs && all; k++)
        all = sel_req_matches(&t->reqs[k], n);
    return all;
}

uint32_t sel_pref_weight(const struct podset *ps, const struct node *n)
{
    uint32_t w = 0;
    for (uint32_t t = 0; t < ps->n_pref; t++)
        if (ps->pref[t].weight > 0 && sel_term_matches(&ps->pref[t].term, n))
            w += (uint32_t)ps->pref[t].weight;
    return w;
}

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)env, (void)g;
    return ps->n_affinity > 0;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g;
    for (uint32_t t = 0; t < ps->n_affinity; t++)
        if (sel_term_matches(&ps->affinity[t], n))
            return true;
    return false;
}

const struct sched_filter plugin_node_affinity = {
    .name = "node-affinity", .id = FILTER_AFFINITY, .active = active, .pass = pass};
