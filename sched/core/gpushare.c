/* sched/core/gpushare.c: GPU shares in HAMi's model (see gpushare.h).
 *
 * The per-device rule follows HAMi's device filter (pkg/device/nvidia/device.go, as read with the
 * search tool; docs/kubernetes.md "HAMi shares" says what was checked): a device is skipped when
 * it holds its split count of pods, has less free memory or cores than the share, is asked for
 * all of its cores while some pod uses it, or has all cores taken and the share asks for none.
 * Scores are computed after the share is placed, as HAMi's binpack and spread do.
 */
#include "sched/core/gpushare.h"

#include <string.h>

int64_t gs_mem_need(const struct gs_dev *d, const struct gs_req *r)
{
    if (r->mem_mib > 0)
        return r->mem_mib;
    int32_t pct = r->mem_pct > 0 && r->mem_pct < 100 ? r->mem_pct : 100;
    return d->mem_total * pct / 100;
}

bool gs_dev_fits(const struct gs_dev *d, const struct gs_req *r)
{
    if (!d->healthy)
        return false;
    if (d->split > 0 && d->tasks >= d->split)
        return false;
    if (d->mem_total - d->mem_used < gs_mem_need(d, r))
        return false;
    int32_t cores = r->cores > GS_CORES_FULL ? GS_CORES_FULL : r->cores;
    if (d->cores_total - d->cores_used < cores)
        return false;
    if (d->cores_total == GS_CORES_FULL && cores == GS_CORES_FULL && d->tasks > 0)
        return false; /* all cores: the device to itself */
    if (d->cores_total != 0 && d->cores_used >= d->cores_total && cores == 0)
        return false; /* no zero-core share on a device whose cores are all taken */
    return true;
}

void gs_dev_take(struct gs_dev *d, const struct gs_req *r, int sign)
{
    int32_t cores = r->cores > GS_CORES_FULL ? GS_CORES_FULL : r->cores;
    d->mem_used += sign * gs_mem_need(d, r);
    d->cores_used += sign * cores;
    d->tasks += sign;
}

static double ratio(int64_t used, int64_t total)
{
    return total > 0 ? (double)used / (double)total : 0.0;
}

double gs_dev_score(const struct gs_dev *d, const struct gs_req *r)
{
    int32_t cores = r->cores > GS_CORES_FULL ? GS_CORES_FULL : r->cores;
    return ratio(d->cores_used + cores, d->cores_total) +
           ratio(d->mem_used + gs_mem_need(d, r), d->mem_total);
}

double gs_node_score(const struct gs_node *n, const struct gs_req *r)
{
    int64_t tasks = r->devs, split = 0, cores = r->cores * (int64_t)r->devs, cores_total = 0;
    int64_t mem = 0, mem_total = 0;
    int64_t mem_req = 0;
    for (uint8_t i = 0; i < n->n_devs; i++) {
        const struct gs_dev *d = &n->dev[i];
        if (!d->healthy)
            continue;
        tasks += d->tasks;
        split += d->split > 0 ? d->split : 1;
        cores += d->cores_used;
        cores_total += d->cores_total;
        mem += d->mem_used;
        mem_total += d->mem_total;
        if (mem_req == 0)
            mem_req = gs_mem_need(d, r);
    }
    mem += mem_req * (int64_t)r->devs;
    return ratio(tasks, split) + ratio(cores, cores_total) + ratio(mem, mem_total);
}

uint32_t gs_pick(const struct gs_node *n, const struct gs_req *r, enum gs_policy gpu_pol)
{
    if (r->devs == 0 || r->devs > n->n_devs)
        return 0;
    /* candidates in preference order: insertion by score, ties keep the lower index first */
    uint8_t idx[NODE_MAX_GPUS];
    double score[NODE_MAX_GPUS];
    uint32_t k = 0;
    for (uint8_t i = 0; i < n->n_devs; i++) {
        if (!(r->allowed & (1u << i)) || !gs_dev_fits(&n->dev[i], r))
            continue;
        double s = gs_dev_score(&n->dev[i], r);
        if (gpu_pol == GS_BINPACK)
            s = -s;
        uint32_t j = k++;
        while (j > 0 && score[j - 1] > s) {
            score[j] = score[j - 1];
            idx[j] = idx[j - 1];
            j--;
        }
        score[j] = s;
        idx[j] = i;
    }
    if (k < r->devs)
        return 0;
    uint32_t mask = 0;
    for (uint32_t j = 0; j < r->devs; j++)
        mask |= 1u << idx[j];
    return mask;
}

void gs_take(struct gs_node *n, const struct gs_req *r, uint32_t mask, int sign)
{
    for (uint8_t i = 0; i < n->n_devs; i++)
        if (mask & (1u << i))
            gs_dev_take(&n->dev[i], r, sign);
}

/* The node node_pol prefers for pod p, with its devices in *mask; -1 when none can hold it. */
static int32_t choose_node(const struct gs_node *nodes, uint32_t n_nodes, const struct gs_req *r,
                           uint32_t p, gs_eligible_fn eligible, void *ctx, enum gs_policy node_pol,
                           enum gs_policy gpu_pol, uint32_t *mask)
{
    int32_t best = -1;
    double best_score = 0.0;
    for (uint32_t i = 0; i < n_nodes; i++) {
        struct gs_req rr = *r;
        rr.allowed &= eligible ? eligible(ctx, p, i) : GS_ALL_DEVICES;
        if (!rr.allowed)
            continue;
        uint32_t m = gs_pick(&nodes[i], &rr, gpu_pol);
        if (!m)
            continue;
        double s = gs_node_score(&nodes[i], r);
        bool better = best < 0 || (node_pol == GS_BINPACK ? s > best_score : s < best_score);
        if (better) {
            best = (int32_t)i;
            best_score = s;
            *mask = m;
        }
    }
    return best;
}

bool gs_place_gang(struct gs_node *nodes, uint32_t n_nodes, const struct gs_req *pods,
                   uint32_t n_pods, gs_eligible_fn eligible, void *ctx, enum gs_policy node_pol,
                   enum gs_policy gpu_pol, struct gs_assign *out)
{
    for (uint32_t p = 0; p < n_pods; p++) {
        uint32_t mask = 0;
        int32_t i =
            choose_node(nodes, n_nodes, &pods[p], p, eligible, ctx, node_pol, gpu_pol, &mask);
        out[p] = (struct gs_assign){.node = i, .mask = i < 0 ? 0 : mask};
        if (i >= 0) {
            gs_take(&nodes[i], &pods[p], mask, 1);
            continue;
        }
        while (p-- > 0) /* undo the pods placed so far, newest first */
            gs_take(&nodes[out[p].node], &pods[p], out[p].mask, -1);
        return false;
    }
    return true;
}
