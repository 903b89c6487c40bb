/* sched/kube/lifecycle.c: the engine's lifecycle facts from the cache's build (see lifecycle.h). */
#include "sched/kube/lifecycle.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/annot.h"
#include "sched/core/err.h"

static const char *pg_annotation(const struct kpg *pg, const char *key)
{
    return kobj_pg_annotation(pg, key);
}

/* The gang's settings: the queue's lifecycle, overridden by its PodGroup's annotations (a gang
 * of one: its pod's, kept when it was bound) (annot.c's table; a bad annotation keeps the
 * queue's value: the gang was refused with it at admission). */
static void settings(const struct kgang *kg, const struct config *cfg, int64_t *start_timeout,
                     uint32_t *max_restarts, int64_t *grace, bool *spread)
{
    const struct config_lifecycle *lc =
        cfg && kg->gang.queue < cfg->n_queues ? &cfg->queues[kg->gang.queue].lifecycle : NULL;
    struct annot_run r = {
        .start_timeout_ms = lc ? lc->start_timeout_ms : CONFIG_DEFAULT_START_TIMEOUT_MS,
        .max_restarts = lc ? lc->max_restarts : CONFIG_DEFAULT_MAX_RESTARTS,
    };
    *grace = lc ? lc->failure_grace_ms : CONFIG_DEFAULT_FAILURE_GRACE_MS;
    struct sched_errbuf eb;
    if (kg->pg)
        (void)annot_run(kg->pg->ann, kg->pg->n_ann, &r, &eb);
    const struct kpod *one = !kg->pg && kg->gang.n_pods ? kg->members[0] : NULL;
    if (one && one->start_timeout_ms > 0)
        r.start_timeout_ms = one->start_timeout_ms;
    if (one && one->max_restarts != UINT32_MAX)
        r.max_restarts = one->max_restarts;
    *start_timeout = r.start_timeout_ms;
    *max_restarts = r.max_restarts;
    struct gang g;
    memset(&g, 0, sizeof(g));
    *spread = false;
    if (cfg && config_profile_apply(cfg, kg->gang.queue,
                                    pg_annotation(kg->pg, "gangsched.io/profile"), &g) == 0)
        *spread = g.spread;
}

static uint8_t phase(enum kpod_phase p)
{
    switch (p) {
    case KPOD_RUNNING:
        return ENG_POD_RUNNING;
    case KPOD_SUCCEEDED:
        return ENG_POD_SUCCEEDED;
    case KPOD_FAILED:
        return ENG_POD_FAILED;
    case KPOD_PENDING:
    case KPOD_UNKNOWN:
        break;
    }
    return ENG_POD_PENDING; /* Unknown: live, not started */
}

int klife_facts(const struct kcache_build *kb, const struct config *cfg, struct eng_names *gang_ids,
                struct eng_names *node_ids, struct arena *a, struct klife *out)
{
    const struct cluster *cl = kb->snap.cluster;
    uint32_t n_run = kb->n_gangs - kb->n_pending;
    out->n = 0;
    out->facts = arena_calloc(a, n_run + 1, sizeof(*out->facts));
    out->gangs = arena_calloc(a, n_run + 1, sizeof(*out->gangs));
    if (!out->facts || !out->gangs)
        return SCHED_ENOMEM;
    for (uint32_t g = kb->n_pending; g < kb->n_gangs; g++) {
        const struct kgang *kg = &kb->gangs[g];
        struct eng_gang_facts *gf = &out->facts[out->n];
        struct eng_member *m = arena_calloc(a, kg->gang.n_pods + 1, sizeof(*m));
        if (!m || eng_names_id(gang_ids, kg->key, &gf->gang) != 0)
            return SCHED_ENOMEM;
        for (uint32_t i = 0; i < kg->gang.n_pods; i++) {
            const struct kpod *p = kg->members[i];
            uint32_t ix = kg->nodes ? kg->nodes[i] : UINT32_MAX;
            m[i] = (struct eng_member){.node = ENG_NONE,
                                       .phase = phase(p->phase),
                                       .ready = p->ready,
                                       .gone = p->deleting,
                                       .name = p->key,
                                       .node_name = p->node,
                                       .why = p->why,
                                       .short_part = kg->part_short ? kg->part_short[i] : NULL};
            if (ix < cl->n_nodes && eng_names_id(node_ids, cl->nodes[ix].name, &m[i].node) != 0)
                return SCHED_ENOMEM;
        }
        gf->members = m;
        gf->n_members = kg->gang.n_pods;
        gf->min_member = kg->min_member;
        settings(kg, cfg, &gf->start_timeout_ms, &gf->max_restarts, &gf->grace_ms, &gf->spread);
        /* the queue's cap, as the simulator's facts carry it (0: the engine's default) */
        gf->backoff_max_ms = cfg && kg->gang.queue < cfg->n_queues
                                 ? cfg->queues[kg->gang.queue].lifecycle.backoff_max_ms
                                 : 0;
        out->gangs[out->n++] = kg;
    }
    return 0;
}

const struct kgang *klife_gang(const struct klife *l, uint32_t g)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->facts[i].gang == g)
            return l->gangs[i];
    return NULL;
}

int klife_check(struct eng *e, const struct kcache_build *kb, const struct config *cfg,
                struct eng_names *gang_ids, struct eng_names *node_ids, int64_t now_ms,
                struct arena *a, struct klife *facts, struct eng_life_action **out, uint32_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    int rc = klife_facts(kb, cfg, gang_ids, node_ids, a, facts);
    return rc ? rc : eng_life_check(e, facts->facts, facts->n, now_ms, NULL, 0, a, out, n_out);
}
