/* plugins/score_fgd.c: the fragmentation measure of FGD (Weng et al., "Beware of
 * Fragmentation", USENIX ATC 2023), for the shared-GPU placement (sched/core/share.h).
 *
 * A node's GPU capacity is fragmented for a kind of request when that request cannot use it: all
 * of the node's free GPU milli when the request does not fit the node at all (cpu, memory, model
 * or too few GPUs), else the free milli of the GPUs each too small for one share of it. The
 * node's expected fragmentation weighs each kind by how often it arrives. FGD places a pod where
 * this measure grows least (sched/core/share.c).
 */
#include <stddef.h>

#include "sched/core/share.h"

double fgd_node_frag(const struct share_node *n, const struct share_type *types, uint32_t n_types)
{
    int64_t free_total = 0;
    for (uint8_t g = 0; g < n->n_gpus; g++)
        free_total += n->gpu_free[g];
    if (free_total == 0)
        return 0.0;
    double frag = 0.0;
    for (uint32_t t = 0; t < n_types; t++) {
        const struct share_pod *p = &types[t].req;
        int64_t lost;
        if (!share_fits(n, p)) {
            lost = free_total;
        } else {
            /* GPUs each too small for one share of p (for a CPU-only request, none) */
            int16_t need = p->num_gpu == 0 ? 0 : p->gpu_milli;
            lost = 0;
            for (uint8_t g = 0; g < n->n_gpus; g++)
                if (n->gpu_free[g] < need)
                    lost += n->gpu_free[g];
        }
        frag += types[t].freq * (double)lost;
    }
    return frag;
}
