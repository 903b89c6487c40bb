/* tests/unit/kube_fx.h: API objects fed to the daemon's cache, shared by the unit tests of the
 * daemon's driver (test_kube_engine.c, test_kube_est.c, test_kube_fair.c, test_kube_ckpt.c,
 * test_kube_native.c, test_kube_budget.c). Include after cmocka.h
 * and sched/kube/driver_int.h. */
#ifndef TESTS_UNIT_KUBE_FX_H
#define TESTS_UNIT_KUBE_FX_H

#include <stdbool.h>
#include <stdio.h>

struct fx {
    struct kdrv d;
    struct config *cfg;
    struct kcache_build kb;
};

/* One watch event (kind 0: node, 1: pod, 2: PodGroup of api) of the JSON object, applied to
 * the cache. */
static inline void fx_event(struct kcache *c, int kind, enum kpg_api api, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    int rc = kind == 0   ? kcache_node_event(c, o, false)
             : kind == 1 ? kcache_pod_event(c, o, false)
                         : kcache_pg_event(c, o, api, false);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

/* The cycle's input of f's cache and its engine id maps, at now. */
static inline void fx_build_at(struct fx *f, int64_t now)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->d.arena);
    assert_int_equal(
        kcache_build(f->d.cache, f->cfg, sched_policy_default(), now, &f->d.arena, &f->kb, &eb), 0);
    assert_int_equal(kdrv_ids_build(&f->d, &f->kb, now), 0);
}

/* A node (kind 0) or pod (kind 1) event. */
static inline void fx_add(struct kcache *c, int kind, const char *json)
{
    fx_event(c, kind, KPG_XK8S, json);
}

/* A ready node of 8 GPUs. */
static inline void fx_node(struct kcache *c, const char *name)
{
    char buf[500];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"8\","
             "\"memory\":\"64Gi\",\"pods\":\"100\",\"nvidia.com/gpu\":\"8\"},\"conditions\":"
             "[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name);
    fx_add(c, 0, buf);
}

/* A gang of one (pod ml/name, `gpus` GPUs) in queue q, bound to node_name ("" = pending); a
 * bound one with a startTime when `started`; ann: its metadata.annotations as JSON members
 * ("\"k\":\"v\"", or ""). */
static inline void fx_pod_gpus(struct kcache *c, const char *name, const char *node_name,
                               bool started, const char *ann, int gpus)
{
    char buf[1200];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{%s},\"labels\":{"
             "\"gangsched.io/queue\":\"q\"}},\"spec\":{\"schedulerName\":\"gangsched\","
             "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"%d\"}}}]},\"status\":{\"phase\":\"%s\"%s}}",
             name, name, ann, node_name, gpus, *node_name ? "Running" : "Pending",
             started && *node_name ? ",\"startTime\":\"2026-01-01T00:00:00Z\"" : "");
    fx_add(c, 1, buf);
}

/* The same with 8 GPUs. */
static inline void fx_pod_ann(struct kcache *c, const char *name, const char *node_name,
                              bool started, const char *ann)
{
    fx_pod_gpus(c, name, node_name, started, ann, 8);
}

static inline void fx_pod(struct kcache *c, const char *name, const char *node_name, bool started)
{
    fx_pod_ann(c, name, node_name, started, "");
}

#endif
