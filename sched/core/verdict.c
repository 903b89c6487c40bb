/* sched/core/verdict.c: the words of a cycle's results (see cycle.h): the names of the
 * verdicts and of the preemption kinds, and the text of a verdict and of a probation promise,
 * which both drivers show as they are (decision log, --explain, PodGroup conditions, gangctl).
 *
 * Owns: formatting only. Must not touch: the cycle's state; it reads a verdict and the config.
 */
#include <stdio.h>
#include <string.h>

#include "config/model.h"
#include "sched/core/cycle.h"
#include "sched/core/device.h"
#include "sched/core/duration.h"
#include "sched/core/quantity.h"
#include "sched/core/res.h"

const char *sched_preempt_kind_name(enum sched_preempt_kind kind)
{
    switch (kind) {
    case SCHED_PREEMPT_PRIORITY:
        return "priority";
    case SCHED_PREEMPT_RECLAIM:
        return "reclaim";
    case SCHED_PREEMPT_FAIR_SHARE:
        return "fair_share";
    case SCHED_PREEMPT_OVERDUE:
        return "overdue";
    }
    return "unknown";
}

const char *sched_eviction_format(const struct sched_eviction *ev, const char *by, char *buf,
                                  size_t n)
{
    switch (ev->kind) {
    case SCHED_PREEMPT_RECLAIM:
        snprintf(buf, n, "reclaimed by %s%s", by,
                 ev->below_nominal ? ", which waited starvation.after within its queue's nominal "
                                     "quota (this gang took its own queue over its nominal quota "
                                     "in part: the queue runs below it now)"
                                   : "");
        break;
    case SCHED_PREEMPT_FAIR_SHARE:
        snprintf(buf, n, "fair-share preempted by %s", by);
        break;
    case SCHED_PREEMPT_OVERDUE:
        snprintf(buf, n,
                 "overdue backfill evicted by %s: it started on the promise to end before that "
                 "gang's reservation and overran it",
                 by);
        break;
    default:
        snprintf(buf, n, "preempted by %s", by);
        break;
    }
    return buf;
}

const char *sched_why_name(enum sched_why why)
{
    switch (why) {
    case SCHED_WHY_PLACED:
        return "placed";
    case SCHED_WHY_BLOCKED:
        return "blocked";
    case SCHED_WHY_RESOURCES:
        return "resources";
    case SCHED_WHY_TOPOLOGY:
        return "topology";
    case SCHED_WHY_RESERVED:
        return "reserved";
    case SCHED_WHY_NEVER:
        return "never-fits";
    case SCHED_WHY_NO_NODES:
        return "no-nodes";
    case SCHED_WHY_QUOTA:
        return "quota";
    case SCHED_WHY_QUOTA_NEVER:
        return "quota-never";
    case SCHED_WHY_CHECKPOINT:
        return "checkpoint";
    }
    return "unknown";
}

static const char *const filter_names[FILTER_N] = {
    [FILTER_NOT_READY] = "not ready",
    [FILTER_CORDONED] = "cordoned",
    [FILTER_SELECTOR] = "node selector",
    [FILTER_AFFINITY] = "node affinity",
    [FILTER_GPU_HEALTH] = "unhealthy GPUs",
    [FILTER_TAINT] = "untolerated taint",
    [FILTER_SHARED_GPU] = "shared/MIG GPUs",
    [FILTER_RESOURCES] = "insufficient",
    [FILTER_RESERVED] = "reserved for another gang",
    [FILTER_QUARANTINED] = "quarantined after failed starts",
    [FILTER_DEVICE_KIND] = "another accelerator kind",
    [FILTER_POD_AFFINITY] = "inter-pod affinity unmet",
    [FILTER_POD_ANTI] = "inter-pod anti-affinity",
    [FILTER_HOST_PORT] = "host port in use",
    [FILTER_SPREAD] = "topology spread",
};

static void qty(char *buf, size_t n, int res, int64_t v)
{
    if (v == INT64_MAX) {
        snprintf(buf, n, "unlimited");
        return;
    }
    qty_format(v, res_scale(res), res == RES_MEMORY, buf, n);
}

/* How a message names a gang: its name, else "an older gang" (a snapshot without names). */
static const char *gang_label(const struct gang *g)
{
    return g->name ? g->name : "an older gang";
}

const char *sched_placed_format(const char *to, const char *until, bool past, char *buf, size_t n)
{
    if (!to)
        snprintf(buf, n, "placed");
    else if (past)
        snprintf(buf, n,
                 "placed on probation: backfilled ahead of %s's reservation, whose first expected "
                 "start (%s) has already passed; %s may evict it whenever that lets it start",
                 to, until, to);
    else
        snprintf(buf, n,
                 "placed on probation: backfilled ahead of %s's reservation on the promise to end "
                 "by %s; after that, %s may evict it",
                 to, until, to);
    return buf;
}

#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + at, at < n ? n - at : 0, __VA_ARGS__);                             \
        if (k_ > 0)                                                                                \
            at += (size_t)k_;                                                                      \
    } while (0)

/* The rest of a quota verdict's text, from buf + at; returns the new length. */
static size_t quota_reason(const struct sched_verdict *v, const struct config *cfg, char *buf,
                           size_t n, size_t at)
{
    const struct gang *g = v->gang;
    char need[32], nom[32], used[32], avail[32], pot[32], wait[32];
    int r = v->quota_res;
    qty(need, sizeof(need), r, v->quota_need);
    qty(nom, sizeof(nom), r, v->quota_nominal);
    qty(used, sizeof(used), r, v->quota_used);
    qty(avail, sizeof(avail), r, v->quota_available);
    qty(pot, sizeof(pot), r, v->quota_potential);
    const char *qn = cfg && g->queue < cfg->n_queues ? cfg->queues[g->queue].name : "queue";
    const char *fn =
        cfg && v->quota_flavor < cfg->n_flavors ? cfg->flavors[v->quota_flavor].name : "default";
    PUT("; %s %s on %s needs %s, nominal %s, used %s, may still take %s", qn, res_name(r), fn, need,
        nom, used, avail);
    bool within = v->quota_used + v->quota_need <= v->quota_nominal;
    if (v->why == SCHED_WHY_QUOTA_NEVER)
        PUT(" (at most %s ever, borrowing included)", pot);
    else if (within && v->reclaim_after_ms != 0)
        PUT(" (within its nominal quota: others borrowed it, through gangs whose eviction would "
            "leave their queue below its own nominal quota; %s%s%s)",
            v->reclaim_after_ms > 0 ? "reclaim takes one once this gang has waited "
                                    : "without a starvation guard, reclaim never takes them: "
                                      "it waits for them to end",
            v->reclaim_after_ms > 0 ? dur_format(v->reclaim_after_ms, wait, sizeof(wait)) : "",
            v->reclaim_after_ms > 0 ? ", starvation.after" : "");
    else if (within)
        PUT(" (within its nominal quota: others borrowed it; reclaim frees it)");
    else if (v->pool_hold)
        PUT(" (it must borrow and has waited past starvation.after: no other gang of its cohort "
            "borrows on %s until it starts)",
            fn);
    return at;
}

int sched_verdict_format(const struct sched_verdict *v, const struct cluster *c,
                         const struct config *cfg, char *buf, size_t n)
{
    const struct gang *g = v->gang;
    /* the accelerator slot under the gang's own device kind's name */
    const char *short_name =
        res_name(v->short_res == RES_GPU && g ? res_kind_res(gang_kind(g)) : v->short_res);
    size_t at = 0;
    PUT("%s: %u pod(s), %lld %s(s)", sched_why_name(v->why), g->n_pods, (long long)g->gpus,
        device_kind_unit(gang_kind(g)));
    if (v->why == SCHED_WHY_QUOTA || v->why == SCHED_WHY_QUOTA_NEVER)
        return (int)quota_reason(v, cfg, buf, n, at);
    if (v->why == SCHED_WHY_CHECKPOINT) {
        char past[32], every[32], open[32];
        PUT("; new members of a training gang: joining restarts every worker from its last "
            "checkpoint, now %s past (it checkpoints every %s); they join within %s after its "
            "next one",
            dur_format(v->join_past_ms, past, sizeof(past)),
            dur_format(g->join_every_ms, every, sizeof(every)),
            dur_format(g->join_open_ms, open, sizeof(open)));
        if (v->ask_checkpoint)
            PUT("; its job is asked to checkpoint now (gangsched.io/checkpoint-requested): they "
                "join once it has");
        else if (v->asked)
            PUT("; its job was asked to checkpoint %s ago: they join once it has",
                dur_format(v->join_waited_ms, past, sizeof(past)));
        return (int)at;
    }
    if (v->why == SCHED_WHY_BLOCKED && v->blocked_by && v->pool_hold) {
        const struct gang *h = v->blocked_by;
        PUT("; behind %s of %s, which must borrow and has waited past starvation.after: no other "
            "gang of its cohort borrows on %s until it starts (gangs within their queue's "
            "nominal quota are not held)",
            gang_label(h),
            cfg && h->queue < cfg->n_queues ? cfg->queues[h->queue].name : "its queue",
            cfg && v->quota_flavor < cfg->n_flavors ? cfg->flavors[v->quota_flavor].name
                                                    : "default");
        return (int)at;
    }
    if (v->why == SCHED_WHY_BLOCKED && v->blocked_by) {
        PUT("; behind %s of its queue, which waits for the queue's quota and holds a starvation "
            "reservation (only gangs expected to end before it starts may pass)",
            gang_label(v->blocked_by));
        return (int)at;
    }
    if (v->why == SCHED_WHY_NEVER && v->never_domain && c && g &&
        (uint32_t)g->topo_required < c->topo.n_levels) {
        PUT("; no single %s can ever hold the whole gang, as its required topology asks",
            c->topo.levels[g->topo_required].name);
        return (int)at;
    }
    if (v->why == SCHED_WHY_NEVER) {
        PUT("; larger than the cluster can ever hold");
        if (v->short_res >= 0)
            PUT(" (%s)", short_name);
        return (int)at;
    }
    uint32_t fitting = v->n_nodes;
    for (int f = 0; f < FILTER_N; f++)
        fitting -= v->filtered[f] <= fitting ? v->filtered[f] : fitting;
    PUT("; %u/%u nodes fit one pod", fitting, c ? c->n_nodes : v->n_nodes);
    const char *sep = ": ";
    for (int f = 0; f < FILTER_N; f++) {
        if (!v->filtered[f])
            continue;
        if (f == FILTER_RESOURCES && v->short_res == RES_GPU && v->best_free >= v->need)
            /* enough GPUs free on a node, but not inside one NVLink island */
            PUT("%s%u without %lld %s free in one NVLink island (best node has %lld free, split "
                "across islands)",
                sep, v->filtered[f], (long long)v->need, short_name, (long long)v->best_free);
        else if (f == FILTER_RESOURCES && v->short_res >= 0)
            PUT("%s%u insufficient %s (needs %lld, best node has %lld free)", sep, v->filtered[f],
                short_name, (long long)v->need, (long long)v->best_free);
        else
            PUT("%s%u %s", sep, v->filtered[f], filter_names[f]);
        sep = ", ";
    }
    if (v->why == SCHED_WHY_TOPOLOGY)
        PUT("; no single domain of the required level holds the whole gang");
    if (v->why == SCHED_WHY_RESERVED && v->blocked_by && v->held_for_preemptor)
        PUT("; it would start now on nodes held for %s until the gangs it preempts there are "
            "gone",
            gang_label(v->blocked_by));
    else if (v->why == SCHED_WHY_RESERVED && v->blocked_by)
        PUT("; it would start now on nodes held for %s, which has waited past starvation.after; "
            "a gang may use them only if its gangsched.io/max-runtime (else the run time learned "
            "for its queue and shape) ends before the reservations' earliest expected start%s",
            gang_label(v->blocked_by),
            v->hold_start_unknown ? ", which is unknown (no run time is known for the gangs "
                                    "on the held nodes)"
                                  : "");
    if (v->near_level >= -1 && c && g->n_pods > 1 && v->near_pods < g->n_pods) {
        if (v->near_level >= 0)
            PUT("; best %s %s holds %llu of %u pods now", c->topo.levels[v->near_level].name,
                c->topo.levels[v->near_level].domain_names[v->near_domain],
                (unsigned long long)v->near_pods, g->n_pods);
        else
            PUT("; the whole cluster holds %llu of %u pods now", (unsigned long long)v->near_pods,
                g->n_pods);
    }
#undef PUT
    return (int)at;
}
