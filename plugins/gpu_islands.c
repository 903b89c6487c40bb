/* plugins/gpu_islands.c: which GPU indices a pod gets inside a node.
 *
 * Island-aware choice keeps a tensor-parallel pod inside one NVLink island whenever the pod is
 * not larger than an island, and picks the fullest island that fits so that free islands stay
 * whole for larger pods (best fit). The topology-blind choice takes the lowest free indices,
 * as device plugins do by default; it is the baseline the simulator compares against.
 */
#include "plugins/plugins.h"
#include "sched/core/bits.h"

static uint32_t lowest_bits(uint32_t mask, uint32_t count)
{
    uint32_t out = 0;
    while (count > 0 && mask) {
        uint32_t bit = mask & -mask;
        out |= bit;
        mask &= ~bit;
        count--;
    }
    return count == 0 ? out : 0;
}

uint32_t gpu_max_island(const struct node *n)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n->n_islands; i++) {
        uint32_t s = bits_popc32(n->islands[i]);
        if (s > m)
            m = s;
    }
    return m;
}

uint32_t gpu_pick(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t island_limit)
{
    if (count == 0)
        return 0;
    if (bits_popc32(free_mask) < count)
        return 0;
    if (island_limit == 0)
        return lowest_bits(free_mask, count);
    if (count <= island_limit) {
        int best = -1;
        uint32_t best_free = 0;
        for (uint32_t i = 0; i < n->n_islands; i++) {
            uint32_t f = bits_popc32(free_mask & n->islands[i]);
            if (f >= count && (best < 0 || f < best_free)) {
                best = (int)i;
                best_free = f;
            }
        }
        return best < 0 ? 0 : lowest_bits(free_mask & n->islands[best], count);
    }
    /* Larger than an island: whole free islands first (most free first), then the rest. */
    uint32_t out = 0, left = count, used = 0;
    while (left > 0) {
        int best = -1;
        uint32_t best_free = 0;
        for (uint32_t i = 0; i < n->n_islands; i++) {
            if (used & (1u << i))
                continue;
            uint32_t f = bits_popc32(free_mask & n->islands[i]);
            if (f > best_free) {
                best = (int)i;
                best_free = f;
            }
        }
        if (best < 0)
            return 0;
        used |= 1u << best;
        uint32_t take = best_free < left ? best_free : left;
        out |= lowest_bits(free_mask & n->islands[best], take);
        left -= take;
    }
    return out;
}

uint32_t gpu_slots(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t island_limit)
{
    if (count == 0)
        return UINT32_MAX;
    uint32_t total = bits_popc32(free_mask);
    if (island_limit == 0 || count > island_limit)
        return total / count;
    uint32_t slots = 0;
    for (uint32_t i = 0; i < n->n_islands; i++)
        slots += bits_popc32(free_mask & n->islands[i]) / count;
    return slots;
}

uint32_t gpu_islands_touched(const struct node *n, uint32_t mask)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n->n_islands; i++)
        if (mask & n->islands[i])
            k++;
    return k;
}

bool gpu_tp_split(const struct node *n, uint32_t mask, uint32_t tp)
{
    if (tp <= 1)
        return false;
    for (uint32_t i = 0; i < n->n_islands; i++)
        if (bits_popc32(mask & n->islands[i]) % tp != 0)
            return true;
    return false;
}

uint32_t gpu_pick_groups(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp)
{
    if (count == 0 || tp == 0)
        return 0;
    uint32_t out = 0, left = count, used = 0;
    while (left > 0) {
        /* the island that leaves the fewest free GPUs behind: best fit, groups stay whole */
        int best = -1;
        uint32_t best_take = 0, best_rest = 0;
        for (uint32_t i = 0; i < n->n_islands; i++) {
            if (used & (1u << i))
                continue;
            uint32_t f = bits_popc32(free_mask & n->islands[i]);
            uint32_t take = f / tp * tp;
            if (take > left)
                take = left / tp * tp;
            if (take == 0)
                continue;
            uint32_t rest = f - take;
            if (best < 0 || take > best_take || (take == best_take && rest < best_rest)) {
                best = (int)i;
                best_take = take;
                best_rest = rest;
            }
        }
        if (best < 0)
            return 0;
        used |= 1u << best;
        out |= lowest_bits(free_mask & n->islands[best], best_take);
        left -= best_take;
    }
    return out;
}

uint32_t gpu_slots_groups(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp)
{
    if (count == 0 || tp == 0)
        return UINT32_MAX;
    uint32_t groups = 0;
    for (uint32_t i = 0; i < n->n_islands; i++)
        groups += bits_popc32(free_mask & n->islands[i]) / tp;
    return groups / ((count + tp - 1) / tp);
}

/* ---- the reserve plugin ------------------------------------------------------------------------
 */

static uint32_t reserve_pick(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp,
                             uint32_t island_limit)
{
    if (tp > 0 && tp < count)
        return gpu_pick_groups(n, free_mask, count, tp);
    return gpu_pick(n, free_mask, count, tp > 0 ? UINT32_MAX : island_limit);
}

static uint32_t reserve_slots(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp,
                              uint32_t island_limit)
{
    if (tp > 0 && tp < count)
        return gpu_slots_groups(n, free_mask, count, tp);
    return gpu_slots(n, free_mask, count, tp > 0 ? UINT32_MAX : island_limit);
}

const struct sched_reserve plugin_reserve_islands = {
    .name = "gpu-islands", .pick = reserve_pick, .slots = reserve_slots};
