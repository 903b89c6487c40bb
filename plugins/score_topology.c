/* plugins/score_topology.c: score term `topology`: keep domains whole. The share of the
 * candidate's GPUs already in use: a partly used node or rack is preferred to a free one, so
 * free nodes (and free racks, NVL72 cliques) stay whole for the gangs that need them. */
#include "plugins/plugins.h"

static uint32_t score(const struct score_in *in)
{
    if (in->cap_gpus <= 0 || in->free_gpus >= in->cap_gpus)
        return 0;
    int64_t used = in->cap_gpus - (in->free_gpus > 0 ? in->free_gpus : 0);
    return (uint32_t)(used * SCORE_MAX / in->cap_gpus);
}

const struct sched_score plugin_score_topology = {.name = "topology", .score = score};
