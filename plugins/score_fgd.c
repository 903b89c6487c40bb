/* plugins/score_fgd.c: the fragmentation measure of FGD (Weng et al., "Beware of
 * Fragmentation", USENIX ATC 2023), for the shared-GPU placement (sched/core/share.h).
 *
 * A node's free GPU capacity is fragmented for a kind of request when that request cannot use
 * it: all of the node's free GPU milli when the request cannot run there (cpu, model or too few
 * GPUs with enough left), else the free milli of the GPUs each too small for one share of it.
 * A request for no GPU uses none of it: all of it counts (FGD's simulator sums every category
 * but "satisfied", and a CPU-only request is never "satisfied", fit or not). Memory is not
 * part of the measure (the simulator's NodeResource has no memory). The node's expected
 * fragmentation weighs each kind by how often it arrives; FGD places a pod where this measure
 * grows least (sched/core/share.c).
 */
#include <stddef.h>

#include "sched/core/share.h"

/* Can the GPUs and cpu of n host p (FGD's "satisfied"; memory is not looked at)? */
static bool gpu_and_cpu_fit(const struct share_node *n, const struct share_pod *p)
{
    if (p->cpu > n->cpu_free)
        return false;
    if (p->models && !(p->models & (1u << n->model)))
        return false;
    int16_t need = p->num_gpu == 1 ? p->gpu_milli : SHARE_MILLI;
    int enough = 0;
    for (uint8_t g = 0; g < n->n_gpus; g++)
        enough += n->gpu_free[g] >= need;
    return enough >= p->num_gpu;
}

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
        if (p->num_gpu == 0 || !gpu_and_cpu_fit(n, p)) {
            lost = free_total;
        } else { /* GPUs each too small for one share of p */
            int16_t need = p->num_gpu == 1 ? p->gpu_milli : SHARE_MILLI;
            lost = 0;
            for (uint8_t g = 0; g < n->n_gpus; g++)
                if (n->gpu_free[g] < need)
                    lost += n->gpu_free[g];
        }
        frag += types[t].freq * (double)lost;
    }
    return frag;
}
