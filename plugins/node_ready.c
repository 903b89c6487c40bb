/* plugins/node_ready.c: nodes that are NotReady or cordoned (spec.unschedulable) take no pods. */
#include "plugins/plugins.h"

static bool always(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)env, (void)g, (void)ps;
    return true;
}

static bool ready_pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g, (void)ps;
    return n->ready;
}

static bool cordon_pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g, (void)ps;
    return !n->unschedulable;
}

const struct sched_filter plugin_node_ready = {.name = "node-ready",
                                               .id = FILTER_NOT_READY,
                                               .node_only = true,
                                               .active = always,
                                               .pass = ready_pass};
const struct sched_filter plugin_cordon = {.name = "cordon",
                                           .id = FILTER_CORDONED,
                                           .node_only = true,
                                           .active = always,
                                           .pass = cordon_pass};
