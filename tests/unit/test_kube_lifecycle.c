/* tests/unit/test_kube_lifecycle.c: the daemon's adapter to the engine's lifecycle rules
 * (sched/kube/lifecycle.c -> sched/engine/life.c) on gangs built by the cache from API objects:
 * the facts it reads (phases, readiness, the pod's own words, nodes as engine ids, the queue's
 * settings and the PodGroup's annotations over them, the inference profile), checked through
 * the engine: start timeout (with the pod's own words and a strike on the right node), failed
 * member, NotReady node past the grace, members lost below minMember, completing gangs, gangs
 * already being torn down, inference gangs that replace only the lost replica. The rules
 * themselves are tested as tables in test_engine_life.c. */
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
#include "sched/engine/engine.h"
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
    struct eng *e;
    struct eng_names *gangs, *nodes;
    struct klife facts;
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
    f.e = eng_new(NULL);
    f.gangs = eng_names_new();
    f.nodes = eng_names_new();
    if (!f.c || !f.e || !f.gangs || !f.nodes)
        return -1;
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
    eng_free(f->e);
    eng_names_free(f->gangs);
    eng_names_free(f->nodes);
    config_free(f->cfg);
    arena_fini(&f->a);
    return 0;
}

static uint32_t id_of(struct eng_names *t, const char *name)
{
    uint32_t id;
    assert_int_equal(eng_names_id(t, name, &id), 0);
    return id;
}

/* The engine knows gang ml/g as bound since bound_ms. */
static void bound_at(struct fx *f, int64_t bound_ms)
{
    assert_int_equal(eng_job_bound(f->e, id_of(f->gangs, "ml/g"), bound_ms), 0);
}

/* Builds and checks at now_ms; returns the actions. */
static uint32_t check_at(struct fx *f, int64_t now_ms, struct eng_life_action **acts)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->a);
    assert_int_equal(kcache_build(f->c, f->cfg, sched_policy_default(), now_ms, &f->a, &f->kb, &eb),
                     0);
    uint32_t n = 0;
    assert_int_equal(
        klife_check(f->e, &f->kb, f->cfg, f->gangs, f->nodes, now_ms, &f->a, &f->facts, acts, &n),
        0);
    for (uint32_t i = 0; i < n; i++) /* every action names a gang of the build */
        assert_non_null(klife_gang(&f->facts, (*acts)[i].gang));
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
    bound_at(f, 1000);
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 1000 + 59999, &acts), 0); /* within the 60 s */
    assert_int_equal(check_at(f, 1000 + 60000, &acts), 1);
    assert_int_equal(acts[0].reason, ENG_START_TIMEOUT);
    assert_true(acts[0].own);
    assert_true(acts[0].whole);
    assert_int_equal(acts[0].max_restarts, 2);
    assert_string_equal(eng_names_name(f->nodes, acts[0].strike_node), "n2");
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
    bound_at(f, 0);
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 4999, &acts), 0);
    assert_int_equal(check_at(f, 5000, &acts), 1);
    assert_int_equal(acts[0].max_restarts, 7);
}

/* A gang of one pod without a PodGroup declares them on its pod, kept once it is bound (a bound
 * pod keeps no annotations). */
static void pod_annotation_of_a_gang_of_one(void **state)
{
    struct fx *f = *state;
    add(f->c, 1,
        "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g\",\"annotations\":{"
        "\"gangsched.io/start-timeout\":\"5s\",\"gangsched.io/max-restarts\":\"7\"}},"
        "\"spec\":{\"schedulerName\":\"gangsched\",\"nodeName\":\"n1\",\"containers\":[{"
        "\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
        "\"status\":{\"phase\":\"Pending\"}}");
    bound_at(f, 0); /* the gang of pod ml/g is ml/g */
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 4999, &acts), 0);
    assert_int_equal(check_at(f, 5000, &acts), 1);
    assert_int_equal(acts[0].reason, ENG_START_TIMEOUT);
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
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 1);
    assert_int_equal(acts[0].reason, ENG_MEMBER_FAILED);
    assert_true(acts[0].own);
    assert_non_null(strstr(acts[0].message, "exit code 137: OOMKilled"));
    assert_int_equal(acts[0].strike_node, ENG_NONE);
}

static void not_ready_node_after_the_grace_is_not_the_jobs_fault(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "");
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n2", "Running", true, "");
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 100000, &acts), 0); /* healthy */
    /* NotReady since 80 s, on the node the adapter maps n2 to */
    assert_int_equal(eng_node_ready(f->e, id_of(f->nodes, "n2"), false, 80000), 0);
    assert_int_equal(check_at(f, 109999, &acts), 0); /* 29.999 s < grace */
    assert_int_equal(check_at(f, 110000, &acts), 1);
    assert_int_equal(acts[0].reason, ENG_NODE_LOST);
    assert_false(acts[0].own);
    assert_non_null(strstr(acts[0].message, "n2"));
}

static void members_lost_below_min_member(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 3, "");
    member(f->c, "g", 0, "n1", "Running", true, "");
    member(f->c, "g", 1, "n1", "Running", true, "");
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 1); /* the third was deleted by someone */
    assert_int_equal(acts[0].reason, ENG_MEMBER_LOST);
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
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 0);
    member(f->c, "g", 0, "n1", "Failed", false, "");
    /* the driver is tearing it down already (an earlier verdict): its deletes were sent */
    assert_int_equal(eng_job_broken(f->e, id_of(f->gangs, "ml/g"), ENG_MEMBER_FAILED, true, true, 3,
                                    ENG_NONE, 10, NULL),
                     0);
    assert_true(kcache_delete_sent(f->c, "ml/g-1"));
    assert_false(kcache_delete_sent(f->c, "ml/g-1")); /* a pod is deleted once */
    assert_int_equal(check_at(f, 10, &acts), 0);
    /* a member bound after the teardown began (a late Binding) goes too */
    member(f->c, "g", 2, "n3", "Pending", false, "");
    assert_int_equal(check_at(f, 10, &acts), 1);
    assert_int_equal(acts[0].reason, ENG_MEMBER_LOST);
    assert_true(acts[0].whole);
}

static void inference_replaces_only_the_lost_replica(void **state)
{
    struct fx *f = *state;
    group(f->c, "g", 2, "\"gangsched.io/profile\":\"inference\"");
    for (int i = 0; i < 3; i++)
        member(f->c, "g", i, i ? "n2" : "n1", i == 2 ? "Failed" : "Running", i != 2, "");
    struct eng_life_action *acts;
    assert_int_equal(check_at(f, 10, &acts), 1);
    assert_false(acts[0].whole);
    assert_int_equal(acts[0].n_lost, 1);
    const struct kgang *kg = klife_gang(&f->facts, acts[0].gang);
    assert_string_equal(kg->members[acts[0].lost[0]]->name, "g-2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(start_timeout_with_the_pods_words, setup, teardown),
        cmocka_unit_test_setup_teardown(pod_annotation_of_a_gang_of_one, setup, teardown),
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
