/* sched/kube/lifecycle.c: start watchdog and broken-gang detection (see lifecycle.h). */
#include "sched/kube/lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/annot.h"

const char *klife_reason_name(enum klife_reason r)
{
    switch (r) {
    case KLIFE_START_TIMEOUT:
        return "StartTimeout";
    case KLIFE_MEMBER_FAILED:
        return "MemberFailed";
    case KLIFE_NODE_LOST:
        return "NodeLost";
    case KLIFE_MEMBER_LOST:
        return "MemberLost";
    }
    return "Unknown";
}

static const char *pg_annotation(const struct kpg *pg, const char *key)
{
    return kobj_pg_annotation(pg, key);
}

/* The gang's settings: the queue's lifecycle, overridden by its PodGroup's annotations (a bad
 * annotation keeps the queue's value: it was reported when the gang was admitted). */
static void settings(const struct kgang *kg, const struct config *cfg, int64_t *start_timeout,
                     uint32_t *max_restarts, int64_t *grace, bool *spread)
{
    const struct config_lifecycle *lc =
        cfg && kg->gang.queue < cfg->n_queues ? &cfg->queues[kg->gang.queue].lifecycle : NULL;
    *start_timeout = lc ? lc->start_timeout_ms : CONFIG_DEFAULT_START_TIMEOUT_MS;
    *max_restarts = lc ? lc->max_restarts : CONFIG_DEFAULT_MAX_RESTARTS;
    *grace = lc ? lc->failure_grace_ms : CONFIG_DEFAULT_FAILURE_GRACE_MS;
    const char *v = pg_annotation(kg->pg, "gangsched.io/start-timeout");
    int64_t ms;
    if (v && annot_duration(v, &ms) == 0 && ms > 0)
        *start_timeout = ms;
    v = pg_annotation(kg->pg, "gangsched.io/max-restarts");
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : -1;
    if (v && end && !*end && n >= 0 && n <= 1000)
        *max_restarts = (uint32_t)n;
    struct gang g;
    memset(&g, 0, sizeof(g));
    *spread = false;
    if (cfg && config_profile_apply(cfg, kg->gang.queue,
                                    pg_annotation(kg->pg, "gangsched.io/profile"), &g) == 0)
        *spread = g.spread;
}

int klife_check(const struct kcache_build *kb, const struct config *cfg, int64_t now_ms,
                klife_bound_fn *bound_ms, void *ctx, const int64_t *node_down_since,
                struct arena *a, struct klife_action **out, uint32_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    uint32_t n_run = kb->n_gangs - kb->n_pending;
    if (n_run == 0)
        return 0;
    struct klife_action *acts = arena_calloc(a, n_run, sizeof(*acts));
    if (!acts)
        return SCHED_ENOMEM;
    const struct cluster *cl = kb->snap.cluster;
    uint32_t n = 0;
    for (uint32_t g = kb->n_pending; g < kb->n_gangs; g++) {
        const struct kgang *kg = &kb->gangs[g];
        int64_t start_timeout, grace;
        uint32_t max_restarts;
        bool spread;
        settings(kg, cfg, &start_timeout, &max_restarts, &grace, &spread);
        uint32_t min = kg->min_member ? kg->min_member : 1;
        uint32_t live = 0, started = 0;
        const struct kpod *failed = NULL, *not_started = NULL, *on_lost_node = NULL;
        const struct kpod **lost = arena_calloc(a, kg->gang.n_pods, sizeof(*lost));
        if (!lost)
            return SCHED_ENOMEM;
        uint32_t n_lost = 0;
        for (uint32_t m = 0; m < kg->gang.n_pods; m++) {
            const struct kpod *p = kg->members[m];
            if (p->deleting)
                continue; /* on its way out: neither live nor a new failure */
            if (p->phase == KPOD_SUCCEEDED)
                goto next_gang; /* the gang is completing: its members end on their own */
            if (p->phase == KPOD_FAILED) {
                failed = failed ? failed : p;
                lost[n_lost++] = p;
                continue;
            }
            uint32_t ix = kg->nodes ? kg->nodes[m] : UINT32_MAX;
            if (ix < cl->n_nodes && node_down_since && node_down_since[ix] > 0 &&
                now_ms - node_down_since[ix] >= grace) {
                on_lost_node = on_lost_node ? on_lost_node : p;
                lost[n_lost++] = p;
                continue;
            }
            live++;
            if (p->phase == KPOD_RUNNING && p->ready)
                started++;
            else if (!not_started)
                not_started = p;
        }
        int64_t since = bound_ms ? bound_ms(ctx, kg->key) : now_ms;
        if (since == KLIFE_EVICTING || (since == KLIFE_TEARING && live == 0))
            continue; /* being evicted, or torn down with every member on its way out */
        struct klife_action *act = &acts[n];
        char msg[900];
        act->gang = kg;
        act->max_restarts = max_restarts;
        act->whole = true;
        if (since == KLIFE_TEARING) {
            /* members bound after its rollback or teardown began (a Binding applied late, or
             * another scheduler's): they go too, the gang starts whole or not at all */
            act->reason = KLIFE_MEMBER_LOST;
            snprintf(msg, sizeof(msg),
                     "%u member(s) bound after the gang was rolled back or torn down (a "
                     "Binding applied late, or another scheduler's)",
                     live);
        } else if (failed) {
            act->reason = KLIFE_MEMBER_FAILED;
            act->own = true;
            snprintf(msg, sizeof(msg), "member %s failed (%s)", failed->key,
                     failed->why ? failed->why : "phase Failed");
        } else if (on_lost_node) {
            act->reason = KLIFE_NODE_LOST;
            snprintf(msg, sizeof(msg), "member %s is on node %s, NotReady for more than %llds",
                     on_lost_node->key, on_lost_node->node, (long long)(grace / 1000));
        } else if (live < min && live > 0) { /* none live: the gang is going away whole */
            act->reason = KLIFE_MEMBER_LOST;
            snprintf(msg, sizeof(msg), "%u of minMember %u members left (deleted or evicted)", live,
                     min);
        } else if (started < live && now_ms - since >= start_timeout) {
            act->reason = KLIFE_START_TIMEOUT;
            act->own = true;
            act->strike_node = not_started ? not_started->node : NULL;
            snprintf(msg, sizeof(msg),
                     "%u of %u members not running and ready %llds after "
                     "binding; %s: %s",
                     live - started, live, (long long)(start_timeout / 1000),
                     not_started ? not_started->key : "?",
                     not_started && not_started->why ? not_started->why : "not ready");
        } else {
            continue;
        }
        /* an inference gang (spreads replicas) replaces only what it lost, while it keeps
         * minMember live members */
        if (spread && act->reason != KLIFE_START_TIMEOUT && live >= min && n_lost > 0) {
            act->whole = false;
            act->lost = lost;
            act->n_lost = n_lost;
        }
        act->message = arena_strdup(a, msg);
        if (!act->message)
            return SCHED_ENOMEM;
        n++;
    next_gang:;
    }
    *out = acts;
    *n_out = n;
    return 0;
}
