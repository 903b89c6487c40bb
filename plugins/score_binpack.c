/* plugins/score_binpack.c: score term `binpack`: the fewest free GPUs left over once the pods
 * are in (best fit). A node or domain the gang fills exactly scores SCORE_MAX; the largest
 * candidate left entirely free would score 0. */
#include "plugins/plugins.h"

static uint32_t score(const struct score_in *in)
{
    int64_t left = in->free_gpus - in->gang_gpus;
    if (left < 0)
        left = 0;
    if (left >= in->norm_gpus)
        return 0;
    return (uint32_t)((in->norm_gpus - left) * SCORE_MAX / in->norm_gpus);
}

const struct sched_score plugin_score_binpack = {.name = "binpack", .score = score};
