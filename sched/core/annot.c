/* sched/core/annot.c: PodGroup annotations into gang fields (see annot.h). */
#include "sched/core/annot.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/duration.h"
#include "sched/core/hami.h"

static const char *get(const struct kv *a, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].key && strcmp(a[i].key, key) == 0)
            return a[i].value ? a[i].value : "";
    return NULL;
}

static int bad(struct sched_errbuf *eb, const char *key, const char *value, const char *what)
{
    char q[96];
    sched_quote(value, strlen(value), q, sizeof(q));
    return sched_fail(eb, SCHED_EINVAL, "annotation %s: \"%s\": %s", key, q, what);
}

/* Level index by name ("node" is the last level). */
static int level_by_name(const struct topo *t, const char *name)
{
    for (uint32_t l = 0; l < t->n_levels; l++)
        if (strcmp(t->levels[l].name, name) == 0)
            return (int)l;
    return -1;
}

/* Level index by node label key (Kueue names levels by their label). */
static int level_by_label(const struct topo *t, const char *label)
{
    if (strcmp(label, "kubernetes.io/hostname") == 0)
        return (int)t->n_levels - 1;
    for (uint32_t l = 0; l < t->n_levels; l++)
        if (t->levels[l].label && strcmp(t->levels[l].label, label) == 0)
            return (int)l;
    return -1;
}

int annot_level_by_label(const struct topo *t, const char *label)
{
    return level_by_label(t, label);
}

static int positive(const char *key, const char *v, uint32_t *out, struct sched_errbuf *eb)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (!*v || *end || errno || x == 0 || x > 100000 || *v == '-' || *v == '+')
        return bad(eb, key, v, "not an integer in 1..100000");
    *out = (uint32_t)x;
    return 0;
}

int annot_duration(const char *s, int64_t *ms)
{
    return s && dur_parse(s, strlen(s), ms) == NULL ? 0 : SCHED_EINVAL;
}

/* A duration annotation (duration.h's grammar): 0, or SCHED_EINVAL naming the annotation, the
 * value, what is wrong and how to write it. */
static int duration_of(const char *key, const char *v, int64_t *ms, struct sched_errbuf *eb)
{
    const char *why = dur_parse(v, strlen(v), ms);
    return why ? bad(eb, key, v, why) : 0;
}

/* A level from our annotation (a name) or Kueue's (a label); -1 when neither is given. */
static int level_of(const struct topo *t, const struct kv *a, size_t n, const char *ours,
                    const char *kueue, int *out, struct sched_errbuf *eb)
{
    const char *v = get(a, n, ours);
    *out = -1;
    if (v) {
        if ((*out = level_by_name(t, v)) < 0)
            return bad(eb, ours, v, "not a topology level of this cluster");
        return 0;
    }
    if (kueue && (v = get(a, n, kueue))) {
        if ((*out = level_by_label(t, v)) < 0)
            return bad(eb, kueue, v, "no topology level uses this node label");
    }
    return 0;
}

int annot_apply(struct gang *g, const struct topo *t, const struct kv *annotations, size_t n,
                const char **profile, struct sched_errbuf *eb)
{
    const struct kv *a = annotations;
    int req, pref, slice_level;
    uint32_t tp = 0, slice = 0;
    int64_t max_runtime = 0;
    int rc;
    if ((rc = level_of(t, a, n, "gangsched.io/topology-required",
                       "kueue.x-k8s.io/podset-required-topology", &req, eb)) ||
        (rc = level_of(t, a, n, "gangsched.io/topology-preferred",
                       "kueue.x-k8s.io/podset-preferred-topology", &pref, eb)) ||
        (rc = level_of(t, a, n, "gangsched.io/slice-topology",
                       "kueue.x-k8s.io/podset-slice-required-topology", &slice_level, eb)))
        return rc;
    /* Volcano: a hard network topology bounded by a tier is a requirement; soft, a preference.
     * Tier 1 is the tightest level above the node. */
    const char *mode = get(a, n, "volcano.sh/network-topology-mode");
    const char *tier = get(a, n, "volcano.sh/network-topology-highest-tier");
    if (mode || tier) {
        uint32_t k = 1;
        if (tier && (rc = positive("volcano.sh/network-topology-highest-tier", tier, &k, eb)))
            return rc;
        if (mode && strcmp(mode, "hard") != 0 && strcmp(mode, "soft") != 0)
            return bad(eb, "volcano.sh/network-topology-mode", mode, "not hard or soft");
        int node_level = (int)t->n_levels - 1;
        int lvl = node_level - (int)k;
        if (lvl < 0)
            lvl = 0;
        if (mode && strcmp(mode, "hard") == 0) {
            if (req < 0)
                req = lvl;
        } else if (pref < 0) {
            pref = lvl;
        }
    }
    const char *v;
    if ((v = get(a, n, "gangsched.io/tp-size")) &&
        (rc = positive("gangsched.io/tp-size", v, &tp, eb)))
        return rc;
    if ((v = get(a, n, "gangsched.io/slice-size")) &&
        (rc = positive("gangsched.io/slice-size", v, &slice, eb)))
        return rc;
    if (!get(a, n, "gangsched.io/slice-size") &&
        (v = get(a, n, "kueue.x-k8s.io/podset-slice-size")) &&
        (rc = positive("kueue.x-k8s.io/podset-slice-size", v, &slice, eb)))
        return rc;
    if ((slice > 0) != (slice_level >= 0))
        return sched_fail(eb, SCHED_EINVAL,
                          "annotations: a slice size and a slice topology go together");
    if ((v = get(a, n, "gangsched.io/max-runtime")) &&
        (rc = duration_of("gangsched.io/max-runtime", v, &max_runtime, eb)))
        return rc;
    /* HAMi's per-pod policies for GPU shares (sched/core/place_share.c) */
    enum gs_policy pol[2];
    const char *pk[2] = {HAMI_NODE_POLICY, HAMI_GPU_POLICY};
    uint8_t pv[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        if ((v = get(a, n, pk[k]))) {
            struct sched_errbuf peb;
            if (hami_policy(v, &pol[k], &peb) != 0)
                return bad(eb, pk[k], v, "not binpack or spread");
            pv[k] = (uint8_t)(pol[k] + 1);
        }
    g->share_node_pol = pv[0];
    g->share_gpu_pol = pv[1];
    g->topo_required = (int8_t)req;
    g->topo_preferred = (int8_t)pref;
    g->slice_level = (int8_t)slice_level;
    g->slice_size = slice;
    g->tp_size = tp;
    if (max_runtime > 0)
        g->max_runtime_ms = max_runtime;
    if (profile)
        *profile = get(a, n, "gangsched.io/profile");
    return 0;
}

/* The per-gang run-time annotations: one table, read for every running gang by both drivers'
 * callers of annot_run, and checked when a gang is admitted (a bad value is refused then). */
enum run_kind { RUN_DURATION, RUN_POSITIVE_DURATION, RUN_BOOL, RUN_COUNT };
static const struct {
    const char *key;
    enum run_kind kind;
    size_t off; /* into struct annot_run */
} run_keys[] = {
    {"gangsched.io/min-runtime", RUN_DURATION, offsetof(struct annot_run, min_runtime_ms)},
    {"gangsched.io/restart-cost", RUN_DURATION, offsetof(struct annot_run, restart_cost_ms)},
    {"gangsched.io/non-preemptible", RUN_BOOL, offsetof(struct annot_run, non_preemptible)},
    {"gangsched.io/start-timeout", RUN_POSITIVE_DURATION,
     offsetof(struct annot_run, start_timeout_ms)},
    {"gangsched.io/max-restarts", RUN_COUNT, offsetof(struct annot_run, max_restarts)},
    {"gangsched.io/checkpoint-interval", RUN_DURATION,
     offsetof(struct annot_run, checkpoint_every_ms)},
};

/* One value of run_keys[k] into field; 0 or SCHED_EINVAL naming the annotation. */
static int run_value(size_t k, const char *v, char *field, struct sched_errbuf *eb)
{
    const char *key = run_keys[k].key;
    int64_t ms;
    int rc;
    switch (run_keys[k].kind) {
    case RUN_BOOL:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return bad(eb, key, v, "not true or false");
        *(bool *)(void *)field = strcmp(v, "true") == 0;
        return 0;
    case RUN_COUNT: {
        char *end;
        errno = 0;
        unsigned long x = strtoul(v, &end, 10);
        if (!*v || *end || errno || x > ANNOT_MAX_RESTARTS || *v == '-' || *v == '+')
            return bad(eb, key, v, "not an integer in 0..1000");
        *(uint32_t *)(void *)field = (uint32_t)x;
        return 0;
    }
    case RUN_DURATION:
    case RUN_POSITIVE_DURATION:
        if ((rc = duration_of(key, v, &ms, eb)))
            return rc;
        if (ms == 0 && run_keys[k].kind == RUN_POSITIVE_DURATION)
            return bad(eb, key, v, "must be longer than 0");
        *(int64_t *)(void *)field = ms;
        return 0;
    }
    return bad(eb, key, v, "unknown kind");
}

int annot_run(const struct kv *a, size_t n, struct annot_run *out, struct sched_errbuf *eb)
{
    struct annot_run r = *out;
    for (size_t k = 0; k < sizeof(run_keys) / sizeof(run_keys[0]); k++) {
        const char *v = get(a, n, run_keys[k].key);
        int rc;
        if (v && (rc = run_value(k, v, (char *)&r + run_keys[k].off, eb)))
            return rc;
    }
    *out = r;
    return 0;
}

int annot_gpu_ids(uint32_t mask, char *buf, size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = 0;
    for (uint32_t b = 0; b < 32; b++)
        if (mask & (1u << b)) {
            int k = snprintf(buf + at, at < n ? n - at : 0, at ? ",%u" : "%u", b);
            if (k > 0)
                at += (size_t)k;
        }
    return (int)at;
}
