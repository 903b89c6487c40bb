/* tests/unit/kcache_fx.h: the cache fixture of the unit tests of the daemon's cache
 * (test_kube_cache.c, test_kube_sets.c): a configuration of two queues, three nodes, objects
 * fed as their watch events would come, and builds of the cycle's input. Include after
 * cmocka.h, config/config.h and sched/kube/cache.h. */
#ifndef TESTS_UNIT_KCACHE_FX_H
#define TESTS_UNIT_KCACHE_FX_H

#include <stdio.h>
#include <string.h>

#include "sched/core/policy.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: team-a\n"
                                    "  - name: team-b\n";

struct fx {
    struct kcache *c;
    struct config *cfg;
    struct arena a;
};

static inline void add_json(struct kcache *c, int kind, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    int rc = kind == 0   ? kcache_node_event(c, o, false)
             : kind == 1 ? kcache_pod_event(c, o, false)
             : kind == 2 ? kcache_pg_event(c, o, KPG_XK8S, false)
                         : kcache_pg_event(c, o, KPG_VOLCANO, false);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

static inline void node(struct kcache *c, const char *name, const char *rack, int gpus)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"network.topology.gangsched.io/rack\":\"%s\"}},\"status\":{\"allocatable\":{"
             "\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name, rack, gpus);
    add_json(c, 0, buf);
}

/* A pod: group "" = none; queue "" = no label; sched "" = ours ("gangsched"); node "" =
 * unbound; extra_ann: more annotations as JSON members. */
static inline void pod(struct kcache *c, const char *name, const char *group, const char *queue,
                       int gpus, const char *sched, const char *node_name, const char *extra_ann)
{
    char labels[300] = "", buf[1500];
    if (*group)
        snprintf(labels, sizeof(labels), "\"scheduling.x-k8s.io/pod-group\":\"%s\"", group);
    if (*queue)
        snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels),
                 "%s\"gangsched.io/queue\":\"%s\"", *group ? "," : "", queue);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{%s},"
             "\"annotations\":{%s}},"
             "\"spec\":{\"schedulerName\":\"%s\",\"nodeName\":\"%s\",\"containers\":[{\"name\":"
             "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\"},\"requests\":{"
             "\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, name, labels, extra_ann, *sched ? sched : "gangsched", node_name, gpus,
             *node_name ? "Running" : "Pending");
    add_json(c, 1, buf);
}

/* Pod ml/name's delete event. */
static inline void pod_gone(struct kcache *c, const char *name)
{
    char buf[200];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\"}}", name);
    cJSON *o = cJSON_Parse(buf);
    assert_int_equal(kcache_pod_event(c, o, true), 0);
    cJSON_Delete(o);
}

static inline int setup(void **state)
{
    static struct fx f;
    memset(&f, 0, sizeof(f));
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("test.yaml", cfg_yaml, strlen(cfg_yaml), &f.cfg, &eb) != 0) {
        fprintf(stderr, "%s\n", eb.msg);
        return -1;
    }
    f.c = kcache_new("gangsched");
    arena_init(&f.a, 1 << 16);
    node(f.c, "n1", "r1", 8);
    node(f.c, "n2", "r1", 8);
    node(f.c, "n3", "r2", 8);
    *state = &f;
    return 0;
}

static inline int teardown(void **state)
{
    struct fx *f = *state;
    kcache_free(f->c);
    config_free(f->cfg);
    arena_fini(&f->a);
    return 0;
}

static inline void build_at(struct fx *f, struct kcache_build *kb, int64_t now_ms)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->a);
    int rc = kcache_build(f->c, f->cfg, sched_policy_default(), now_ms, &f->a, kb, &eb);
    if (rc)
        fprintf(stderr, "%s\n", eb.msg);
    assert_int_equal(rc, 0);
}

static inline void build(struct fx *f, struct kcache_build *kb)
{
    build_at(f, kb, 1000);
}

/* A PodGroup; ann: its annotations as JSON members ("" = none). */
static inline void pg_ann(struct kcache *c, const char *name, int min, const char *queue,
                          const char *ann)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"pg-%s\","
             "\"labels\":{\"gangsched.io/queue\":\"%s\"},\"annotations\":{%s}},"
             "\"spec\":{\"minMember\":%d}}",
             name, name, queue, ann, min);
    add_json(c, 2, buf);
}

static inline void pg(struct kcache *c, const char *name, int min, const char *queue)
{
    pg_ann(c, name, min, queue, "");
}

#endif
