/* plugins/score_spread.c: score term `spread`: the most free GPUs (inference replicas on the
 * emptiest nodes, away from each other and from busy neighbours). */
#include "plugins/plugins.h"

static uint32_t score(const struct score_in *in)
{
    if (in->free_gpus <= 0)
        return 0;
    if (in->free_gpus >= in->norm_gpus)
        return SCORE_MAX;
    return (uint32_t)(in->free_gpus * SCORE_MAX / in->norm_gpus);
}

const struct sched_score plugin_score_spread = {.name = "spread", .score = score};
