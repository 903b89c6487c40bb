/* plugins/node_selector.c: spec.nodeSelector, every key must be present with an equal value. */
#include <string.h>

#include "plugins/plugins.h"

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)env, (void)g;
    return ps->n_node_selector > 0;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g;
    for (uint32_t i = 0; i < ps->n_node_selector; i++) {
        const char *v = node_label(n, ps->node_selector[i].key);
        if (!v || strcmp(v, ps->node_selector[i].value) != 0)
            return false;
    }
    return true;
}

const struct sched_filter plugin_node_selector = {
    .name = "node-selector", .id = FILTER_SELECTOR, .active = active, .pass = pass};
