/* tests/unit/test_kube_lifecycle.c: the daemon's start watchdog and broken-gang rules
 * (sched/kube/lifecycle.c) on gangs built by the cache from API objects: start timeout (with the
 * pod's own words and a strike), failed member, NotReady node past the grace, members lost below
 * minMember, completing gangs, gangs already being torn down, annotations over queue defaults,
 * inference gangs that replace only the lost replica. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "sched/core/policy.h"
#include "sched/kube/lifecycle.h"

static const char *const cfg_yaml =
    "apiVersion: gangsched.io/v1alpha1\n"
    "kind: SchedulerConfig\n"
    "queues:\n"
    "  - name: q\n"
    "    lifecycle: {startTimeout: 60s, maxRestarts: 2, failureGrace: 30s}\n";

struct fx {
    struct kcache *c;
    struct config *cfg;
    struct arena a;
    struct kcache_build kb;
    int64_t bound_ms;
    int64_t down[8];
};

static void add(struct kcache *c, int kind, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    int rc = kind == 0   ? kcache_node_event(c, o, false)
             : kind == 1 ? kcache_pod_event(c, o, false)
                         : kcache_pg_event(c, o, KPG_XK8S, false);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

/* member i of gang g on node n: phase, ready, extra status JSON */
static void member(struct kcache *c, const char *g, int i, const char *node, const char *phase,
                   bool ready, const char *extra)
{
    char buf[1500];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s-%d\",\"labels\":{"
             "\"scheduling.x-k8s.io/pod-group\":\"%s\"}},\"spec\":{\"schedulerName\":"
             "\"gangsched\",\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\","
             "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":"
             "\"%s\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]%s}}",
             g, i, g, node, phase, ready ? "True" : "False", extra);
    add(c, 1, buf);
}

static void group(struct kcache *c, const char *g, int min, const char *annotations)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"annotations\":{%s}},"
             "\"spec\":{\"minMember\":%d}}",
             g, annotations, min);
    add(c, 2, buf);
}

static int setup(void **state)
{
    static struct fx f;
    memset(&f, 0, sizeof(f));
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &f.cfg, &eb) != 0)
        return -1;
    f.c = kcache_new("gangsched");
    arena_init(&f.a, 1 << 16);
    for (int i = 1; i <= 2; i++) {
        char buf[500];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"n%d\"},\"status\":{\"allocatable\":{\"cpu\":\"8\","
                 "\"memory\":\"64Gi\",\"pods\":\"100\",\"nvidia.com/gpu\":\"8\"},\"conditions\":"
                 "[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 i);
        add(f.c, 0, buf);
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    kcache_free(f->c);
    config_free(f->cfg);
    arena_fini(&f->a);
    return 0;
}

static int64_t bound_cb(void *ctx, const char *gang)
{
    (void)gang;
    return ((struct fx *)ctx)->bound_ms;
}

/* Builds and checks at now_ms; returns the actions. */
static uint32_t check_at(struct fx *f, int64_t now_ms, struct klife_action **acts)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->a);
    assert_int_equal(kcache_build(f->c, f->cfg, sched_policy_default(), now_ms, &f->a, &f->kb, &eb),
                     0);
    uint32_t n = 0;
    assert_int_equal(klife_check(&f->kb, f->cfg, now_ms, bound_cb, f, f->down, &f->a, acts, &n), 0);
    return n;
}

static void start_timeout_with_the_pods_words(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "");
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n2", "Pending", false,
           ",\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"waiting\":{\"reason\":"
           "\"ErrImagePull\",\"message\":\"no such image\"}}}]");
    f->bound_ms = 1000;
    struct klife_action *acts;
    assert_int_equal(check_at(f, 1000 + 59999, &acts), 0); /* within the 60 s */
    assert_int_equal(check_at(f, 1000 + 60000, &acts), 1);
    assert_int_equal(acts[0].reason, KLIFE_START_TIMEOUT);
    assert_true(acts[0].own);
    assert_true(acts[0].whole);
    assert_int_equal(acts[0].max_restarts, 2);
    assert_string_equal(acts[0].strike_node, "n2");
    assert_non_null(strstr(acts[0].message, "ErrImagePull: no such image"));
    assert_non_null(strstr(acts[0].message, "ml/g-1"));
}

static void annotation_overrides_queue_default(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 1,
          "\"gangsched.io/start-timeout\":\"5s\",\"gangsched.io/max-restarts\":"
          "\"7\"");
    member(f->c, "g", 0, "n1", "Pending", false, "");
    f->bound_ms = 0;
    struct klife_action *acts;
    assert_int_equal(check_at(f, 4999, &acts), 0);
    assert_int_equal(check_at(f, 5000, &acts), 1);
    assert_int_equal(acts[0].max_restarts, 7);
}

static void failed_member_is_the_jobs_own_failure(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "");
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n2", "Failed", false,
           ",\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"terminated\":{\"exitCode\":"
           "137,\"reason\":\"OOMKilled\"}}}]");
    struct klife_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 1);
    assert_int_equal(acts[0].reason, KLIFE_MEMBER_FAILED);
    assert_true(acts[0].own);
    assert_non_null(strstr(acts[0].message, "exit code 137: OOMKilled"));
    assert_null(acts[0].strike_node);
}

static void not_ready_node_after_the_grace_is_not_the_jobs_fault(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "");
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n2", "Running", true, "");
    struct klife_action *acts;
    assert_int_equal(check_at(f, 100000, &acts), 0); /* healthy */
    const struct cluster *cl = kcache_cluster(f->c);
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (strcmp(cl->nodes[i].name, "n2") == 0)
            f->down[i] = 80000;                      /* NotReady since 80 s */
    assert_int_equal(check_at(f, 109999, &acts), 0); /* 29.999 s < grace */
    assert_int_equal(check_at(f, 110000, &acts), 1);
    assert_int_equal(acts[0].reason, KLIFE_NODE_LOST);
    assert_false(acts[0].own);
    assert_non_null(strstr(acts[0].message, "n2"));
}

static void members_lost_below_min_member(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 3, "");
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n1", "Running", true, "");
    struct klife_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 1); /* the third was deleted by someone */
    assert_int_equal(acts[0].reason, KLIFE_MEMBER_LOST);
    assert_false(acts[0].own);
    /* every member being deleted (the user deleted the job): nothing left to tear down */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g-0\","
                           "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
                           "\"scheduling.x-k8s.io/pod-group\":\"g\"}},\"spec\":{"
                           "\"schedulerName\":\"gangsched\",\"nodeName\":\"n1\"},"
                           "\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(kcache_pod_event(f->c, o, false), 0);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g-1\","
                    "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
                    "\"scheduling.x-k8s.io/pod-group\":\"g\"}},\"spec\":{"
                    "\"schedulerName\":\"gangsched\",\"nodeName\":\"n1\"},"
                    "\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(kcache_pod_event(f->c, o, false), 0);
    cJSON_Delete(o);
    assert_int_equal(check_at(f, 10, &acts), 0);
    /* back to two live members for the elastic case below */
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n1", "Running", true, "");
    /* an elastic gang above its minMember goes on */
    group(f->c, "g", 2, "");
    assert_int_equal(check_at(f, 10, &acts), 0);
}

static void completing_and_tearing_gangs_are_left_alone(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "");
    member(f->c, "g", 0, "n1", "Succeeded", false, "");
    member(f->c, "g", 1, "n2", "Running", true, "");
    struct klife_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 0);
    member(f->c, "g", 0, "n1", "Failed", false, "");
    f->bound_ms = INT64_MIN; /* the driver is tearing it down already: its deletes were sent */
    assert_true(kcache_delete_sent(f->c, "ml/g-1"));
    assert_false(kcache_delete_sent(f->c, "ml/g-1")); /* a pod is deleted once */
    assert_int_equal(check_at(f, 10, &acts), 0);
    /* a member bound after the teardown began (a late Binding) goes too */
    member(f->c, "g", 2, "n3", "Pending", false, "");
    assert_int_equal(check_at(f, 10, &acts), 1);
    assert_int_equal(acts[0].reason, KLIFE_MEMBER_LOST);
    assert_true(acts[0].whole);
}

static void inference_replaces_only_the_lost_replica(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "\"gangsched.io/profile\":\"inference\"");
    for (int i = 0; i < 3; i++)
        member(f->c, "g", i, i ? "n2" : "n1", i == 2 ? "Failed" : "Running", i != 2, "");
    struct klife_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 1);
    assert_false(acts[0].whole);
    assert_int_equal(acts[0].n_lost, 1);
    assert_string_equal(acts[0].lost[0]->name, "g-2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(start_timeout_with_the_pods_words, setup, teardown),
        cmocka_unit_test_setup_teardown(annotation_overrides_queue_default, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_member_is_the_jobs_own_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(not_ready_node_after_the_grace_is_not_the_jobs_fault, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(members_lost_below_min_member, setup, teardown),
        cmocka_unit_test_setup_teardown(completing_and_tearing_gangs_are_left_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(inference_replaces_only_the_lost_replica, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
