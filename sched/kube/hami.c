/* sched/kube/hami.c: HAMi's allocation annotations on Bindings (see hami.h). */
#include "sched/kube/hami.h"

#include <stdio.h>

#include "sched/core/bits.h"
#include "sched/core/gpushare.h"
#include "sched/core/hami.h"

#define KHAMI_CTRS 64 /* container entries written at most */

/* The pod's share of each device (HAMi's per-device request) from its request: its gpumem,
 * gpumem-percentage and gpucores; none of them = each device whole. */
static struct gs_req pod_share(const struct res_vec *req, uint32_t devs)
{
    struct gs_req q = {.devs = devs, .cores = GS_CORES_FULL, .allowed = GS_ALL_DEVICES};
    int mem = res_lookup(HAMI_RES_MEM), pct = res_lookup(HAMI_RES_MEM_PCT);
    int cores = res_lookup(HAMI_RES_CORES);
    int64_t m = req && mem >= 0 ? req->v[mem] : 0, p = req && pct >= 0 ? req->v[pct] : 0;
    int64_t c = req && cores >= 0 ? req->v[cores] : 0;
    if (m <= 0 && p <= 0 && c <= 0)
        return q;
    q.mem_mib = m > 0 ? m : 0;
    q.mem_pct = p > 0 && p < 100 ? (int32_t)p : 0;
    q.cores = c > GS_CORES_FULL ? GS_CORES_FULL : (int32_t)c;
    return q;
}

int khami_annotate(cJSON *ann, const struct node *nd, uint32_t mask, const struct res_vec *req,
                   const uint8_t *ctr_devs, uint32_t n_ctrs, int64_t now_s, struct sched_errbuf *eb)
{
    const char *reg_s = nd ? node_annotation(nd, HAMI_NODE_REGISTER) : NULL;
    if (!reg_s || !mask)
        return 0;
    struct hami_reg reg;
    int rc = hami_parse_register(reg_s, &reg, eb);
    if (rc)
        return rc;
    struct gs_node gn;
    hami_reg_node(&reg, &gn);
    uint32_t devs = bits_popc32(mask);
    struct gs_req share = pod_share(req, devs);
    uint32_t ctrs[KHAMI_CTRS], n = 0, sum = 0;
    for (; n < n_ctrs && n < KHAMI_CTRS; n++)
        sum += ctrs[n] = ctr_devs[n];
    if (n != n_ctrs || sum != devs) { /* unknown, or init containers hold devices too */
        ctrs[0] = devs;
        n = 1;
    }
    char alloc[NODE_MAX_GPUS * (HAMI_UUID_MAX + 40) + KHAMI_CTRS + 8];
    rc = hami_format_alloc(&reg, &gn, &share, mask, ctrs, n, alloc, sizeof(alloc), eb);
    if (rc)
        return rc;
    char now[24];
    snprintf(now, sizeof(now), "%lld", (long long)now_s);
    if (!cJSON_AddStringToObject(ann, HAMI_TO_ALLOCATE, alloc) ||
        !cJSON_AddStringToObject(ann, HAMI_ALLOCATED, alloc) ||
        !cJSON_AddStringToObject(ann, HAMI_VGPU_NODE, nd->name) ||
        !cJSON_AddStringToObject(ann, HAMI_VGPU_TIME, now) ||
        !cJSON_AddStringToObject(ann, HAMI_BIND_PHASE, "allocating") ||
        !cJSON_AddStringToObject(ann, HAMI_BIND_TIME, now))
        return sched_fail(eb, SCHED_ENOMEM, "HAMi annotations: out of memory");
    return 0;
}
