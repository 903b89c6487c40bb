/* plugins/registry.c: the explicit list of filters, in evaluation order (cheapest first). */
#include "plugins/plugins.h"

const struct sched_filter *const plugin_filters[] = {
    &plugin_node_ready, &plugin_cordon,      &plugin_node_selector, &plugin_node_affinity,
    &plugin_taints,     &plugin_gpu_sharing, &plugin_gpu_health,    NULL,
};

void filter_env_init(struct filter_env *env, const struct cluster *c)
{
    env->cluster = c;
    env->has_hard_taints = false;
    env->has_shared_gpus = false;
    env->has_unhealthy_gpus = false;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        const struct node *n = &c->nodes[i];
        for (uint32_t t = 0; t < n->n_taints; t++)
            if (n->taints[t].effect != TAINT_PREFER_NO_SCHEDULE)
                env->has_hard_taints = true;
        if (n->gpu_sharing != GPU_WHOLE)
            env->has_shared_gpus = true;
        if (n->gpu_capacity > n->n_gpus)
            env->has_unhealthy_gpus = true;
    }
}
