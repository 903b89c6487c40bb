/* plugins/gpu_health.c: a node whose allocatable GPUs dropped below its capacity has unhealthy
 * devices, and which index failed is unknown to the scheduler: its NVLink topology cannot be
 * trusted. It takes single-GPU pods of one-pod gangs only; tensor-parallel pods and multi-pod
 * GPU gangs go elsewhere. */
#include "plugins/plugins.h"

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)g;
    return env->has_unhealthy_gpus && ps->req.v[RES_GPU] > 0;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    if (n->gpu_capacity <= n->n_gpus)
        return true;
    return g->n_pods == 1 && ps->req.v[RES_GPU] == 1;
}

const struct sched_filter plugin_gpu_health = {
    .name = "gpu-health", .id = FILTER_GPU_HEALTH, .active = active, .pass = pass};
