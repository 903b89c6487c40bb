/* plugins/node_affinity.c: required node affinity with In, NotIn, Exists, DoesNotExist, Gt and
 * Lt, terms ORed and requirements ANDed (Kubernetes semantics; see model.h). */
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

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)env, (void)g;
    return ps->n_affinity > 0;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g;
    for (uint32_t t = 0; t < ps->n_affinity; t++) {
        const struct sel_term *term = &ps->affinity[t];
        bool all = true;
        for (uint32_t k = 0; k < term->n_reqs && all; k++)
            all = sel_req_matches(&term->reqs[k], n);
        if (all)
            return true;
    }
    return false;
}

const struct sched_filter plugin_node_affinity = {
    .name = "node-affinity", .id = FILTER_AFFINITY, .active = active, .pass = pass};
