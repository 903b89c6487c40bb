/* plugins/gpu_sharing.c: time-sliced ("-SHARED") and MIG nodes do not offer whole GPUs. Only a
 * gang of one pod asking for one GPU may use them; multi-GPU pods and multi-pod GPU gangs need
 * exclusive devices. */
#include "plugins/plugins.h"

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)g;
    return env->has_shared_gpus && ps->req.v[RES_GPU] > 0;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    if (n->gpu_sharing == GPU_WHOLE)
        return true;
    return g->n_pods == 1 && ps->req.v[RES_GPU] == 1;
}

const struct sched_filter plugin_gpu_sharing = {
    .name = "gpu-sharing", .id = FILTER_SHARED_GPU, .active = active, .pass = pass};
