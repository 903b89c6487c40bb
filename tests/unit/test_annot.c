/* tests/unit/test_annot.c: PodGroup annotations (ours, Kueue's, Volcano's) into gang fields. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "sched/core/annot.h"
#include "sched/core/duration.h"
#include "sched/sim/nodes.h"

static struct cluster *cl;

static int setup(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    cl = cluster_new();
    if (nodes_generate(cl, "hgx:16,nvl72:1", &eb) || cluster_finalize(cl, NULL, NULL, 0, &eb))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_free(cl);
    return 0;
}

static struct gang fresh(void)
{
    struct gang g;
    memset(&g, 0, sizeof(g));
    g.topo_required = g.topo_preferred = g.slice_level = -1;
    return g;
}

static void test_ours(void **state)
{
    (void)state;
    struct gang g = fresh();
    const struct kv a[] = {
        {"gangsched.io/topology-required", "rack"}, {"gangsched.io/tp-size", "8"},
        {"gangsched.io/slice-size", "4"},           {"gangsched.io/slice-topology", "clique"},
        {"gangsched.io/max-runtime", "1h30m"},      {"gangsched.io/profile", "inference"}};
    const char *profile = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(annot_apply(&g, &cl->topo, a, 6, &profile, &eb), 0);
    assert_int_equal(g.topo_required, cl->topo.rack_level);
    assert_int_equal(g.topo_preferred, -1);
    assert_int_equal(g.tp_size, 8);
    assert_int_equal(g.slice_size, 4);
    assert_int_equal(g.slice_level, cl->topo.nvlink_level);
    assert_int_equal(g.max_runtime_ms, 5400000);
    assert_string_equal(profile, "inference");
}

static void test_kueue_equivalents(void **state)
{
    (void)state;
    struct gang g = fresh();
    const struct kv a[] = {{"kueue.x-k8s.io/podset-required-topology", TOPO_LABEL_BLOCK},
                           {"kueue.x-k8s.io/podset-slice-required-topology", TOPO_LABEL_RACK},
                           {"kueue.x-k8s.io/podset-slice-size", "8"}};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(annot_apply(&g, &cl->topo, a, 3, NULL, &eb), 0);
    int block = -1;
    for (uint32_t l = 0; l < cl->topo.n_levels; l++)
        if (strcmp(cl->topo.levels[l].name, "block") == 0)
            block = (int)l;
    assert_int_equal(g.topo_required, block);
    assert_int_equal(g.slice_level, cl->topo.rack_level);
    assert_int_equal(g.slice_size, 8);
    /* ours wins over Kueue's */
    const struct kv b[] = {{"kueue.x-k8s.io/podset-required-topology", TOPO_LABEL_BLOCK},
                           {"gangsched.io/topology-required", "rack"}};
    g = fresh();
    assert_int_equal(annot_apply(&g, &cl->topo, b, 2, NULL, &eb), 0);
    assert_int_equal(g.topo_required, cl->topo.rack_level);
    /* hostname means one node */
    const struct kv c[] = {{"kueue.x-k8s.io/podset-preferred-topology", "kubernetes.io/hostname"}};
    g = fresh();
    assert_int_equal(annot_apply(&g, &cl->topo, c, 1, NULL, &eb), 0);
    assert_int_equal(g.topo_preferred, (int)cl->topo.n_levels - 1);
}

static void test_volcano_tiers(void **state)
{
    (void)state;
    struct gang g = fresh();
    const struct kv hard[] = {{"volcano.sh/network-topology-mode", "hard"},
                              {"volcano.sh/network-topology-highest-tier", "2"}};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(annot_apply(&g, &cl->topo, hard, 2, NULL, &eb), 0);
    assert_int_equal(g.topo_required, (int)cl->topo.n_levels - 3); /* two above the node */
    assert_int_equal(g.topo_preferred, -1);
    const struct kv soft[] = {{"volcano.sh/network-topology-mode", "soft"}};
    g = fresh();
    assert_int_equal(annot_apply(&g, &cl->topo, soft, 1, NULL, &eb), 0);
    assert_int_equal(g.topo_required, -1);
    assert_int_equal(g.topo_preferred, (int)cl->topo.n_levels - 2);
}

static void test_bad_values(void **state)
{
    (void)state;
    static const struct {
        struct kv a;
        const char *frag;
    } cases[] = {
        {{"gangsched.io/topology-required", "shelf"},
         "annotation gangsched.io/topology-required: \"shelf\": not a topology level"},
        {{"kueue.x-k8s.io/podset-required-topology", "example.com/pod"},
         "no topology level uses this node label"},
        {{"gangsched.io/tp-size", "0"}, "gangsched.io/tp-size: \"0\": not an integer"},
        {{"gangsched.io/tp-size", "8x"}, "not an integer"},
        {{"gangsched.io/slice-size", "4"}, "go together"},
        {{"gangsched.io/max-runtime", "soon"}, "gangsched.io/max-runtime: \"soon\""},
        {{"volcano.sh/network-topology-mode", "maybe"}, "not hard or soft"},
        {{"volcano.sh/network-topology-highest-tier", "-1"}, "not an integer"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gang g = fresh();
        g.tp_size = 77;
        struct sched_errbuf eb = {{0}};
        assert_int_equal(annot_apply(&g, &cl->topo, &cases[i].a, 1, NULL, &eb), SCHED_EINVAL);
        if (!strstr(eb.msg, cases[i].frag))
            fail_msg("case %zu: %s", i, eb.msg);
        assert_int_equal(g.tp_size, 77); /* untouched on error */
    }
}

static void test_gpu_ids_and_durations(void **state)
{
    (void)state;
    char buf[64];
    annot_gpu_ids(0xF0, buf, sizeof(buf));
    assert_string_equal(buf, "4,5,6,7");
    annot_gpu_ids(0x1, buf, sizeof(buf));
    assert_string_equal(buf, "0");
    annot_gpu_ids(0, buf, sizeof(buf));
    assert_string_equal(buf, "");
}

/* The one duration grammar (sched/core/duration.h), as the configuration and the annotations
 * read it. `why` NULL: accepted with value ms; else a fragment of the message. The last rows are
 * the forms the annotation parser used to accept and the config rejected ("90", "30m1h"): both
 * now reject them, with the fix in the message. */
static const struct {
    const char *in;
    int64_t ms;
    const char *why;
} dur_cases[] = {
    {"0", 0, NULL},
    {"250ms", 250, NULL},
    {"90s", 90000, NULL},
    {"10m", 600000, NULL},
    {"24h", 86400000, NULL},
    {"1h30m", 5400000, NULL},
    {"1d12h", 129600000, NULL},
    {"1d2h3m4s5ms", 86400000 + 7200000 + 180000 + 4000 + 5, NULL},
    {"0s", 0, NULL},
    {"3650d", 3650LL * 86400000, NULL},
    {"", 0, "empty duration"},
    {"-5s", 0, "negative duration"},
    {"1.5h", 0, "fractions are not supported: write 1h30m"},
    {"5x", 0, "unknown unit"},
    {"1h30", 0, "missing unit"},
    {"soon", 0, "expected a number followed by a unit"},
    {"3651d", 0, "duration too long"},
    {"99999999999999999999d", 0, "duration too long"},
    {"1h1h", 0, "units must appear once each"},
    {"5us", 0, "unknown unit"},
    {"90", 0, "missing unit: a bare number is not a duration, write 90s"},
    {"30m1h", 0, "largest first (d, h, m, s, ms): write 1h30m, not 30m1h"},
};

static void test_duration_grammar(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(dur_cases) / sizeof(dur_cases[0]); i++) {
        int64_t ms = -7;
        const char *why = dur_parse(dur_cases[i].in, strlen(dur_cases[i].in), &ms);
        if (!dur_cases[i].why) {
            if (why)
                fail_msg("\"%s\": %s", dur_cases[i].in, why);
            assert_int_equal(ms, dur_cases[i].ms);
            assert_int_equal(annot_duration(dur_cases[i].in, &ms), 0);
            char back[64];
            int64_t again = -1;
            dur_format(ms, back, sizeof(back));
            assert_null(dur_parse(back, strlen(back), &again));
            assert_int_equal(again, ms);
        } else {
            if (!why || !strstr(why, dur_cases[i].why))
                fail_msg("\"%s\": got %s", dur_cases[i].in, why ? why : "success");
            assert_int_equal(ms, -7); /* untouched */
            assert_int_equal(annot_duration(dur_cases[i].in, &ms), SCHED_EINVAL);
        }
    }
    int64_t ms = 0;
    assert_non_null(dur_parse("1s\0", 3, &ms)); /* an embedded NUL byte */
    char buf[32];
    assert_string_equal(dur_format(5400250, buf, sizeof(buf)), "1h30m250ms");
    assert_string_equal(dur_format(0, buf, sizeof(buf)), "0");
}

/* A refused duration annotation names the annotation, the value and the fix. */
static void test_duration_annotations(void **state)
{
    (void)state;
    static const struct {
        struct kv a;
        const char *msg;
    } cases[] = {
        {{"gangsched.io/max-runtime", "90"},
         "annotation gangsched.io/max-runtime: \"90\": missing unit: a bare number is not a "
         "duration, write 90s for 90 seconds"},
        {{"gangsched.io/max-runtime", "30m1h"},
         "annotation gangsched.io/max-runtime: \"30m1h\": units must appear once each, largest "
         "first (d, h, m, s, ms): write 1h30m, not 30m1h"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gang g;
        memset(&g, 0, sizeof(g));
        struct sched_errbuf eb = {{0}};
        assert_int_equal(annot_apply(&g, &cl->topo, &cases[i].a, 1, NULL, &eb), SCHED_EINVAL);
        assert_string_equal(eb.msg, cases[i].msg);
    }
    struct annot_run r = {.min_runtime_ms = 5, .restart_cost_ms = 6};
    struct kv bad = {"gangsched.io/min-runtime", "600"};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(annot_run(&bad, 1, &r, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "annotation gangsched.io/min-runtime: \"600\": missing unit"));
    assert_int_equal(r.min_runtime_ms, 5);
    struct kv good[] = {{"gangsched.io/min-runtime", "1h30m"}, {"gangsched.io/restart-cost", "0"}};
    assert_int_equal(annot_run(good, 2, &r, &eb), 0);
    assert_int_equal(r.min_runtime_ms, 5400000);
    assert_int_equal(r.restart_cost_ms, 0);
    /* start-timeout and max-restarts: the lifecycle's overrides, refused when bad */
    struct {
        struct kv a;
        const char *msg;
    } life[] = {
        {{"gangsched.io/start-timeout", "0"},
         "annotation gangsched.io/start-timeout: \"0\": must be longer than 0"},
        {{"gangsched.io/start-timeout", "10"}, "annotation gangsched.io/start-timeout: \"10\""},
        {{"gangsched.io/max-restarts", "-1"},
         "annotation gangsched.io/max-restarts: \"-1\": not an integer in 0..1000"},
        {{"gangsched.io/max-restarts", "1001"},
         "annotation gangsched.io/max-restarts: \"1001\": not an integer in 0..1000"},
        {{"gangsched.io/max-restarts", "three"},
         "annotation gangsched.io/max-restarts: \"three\": not an integer in 0..1000"},
        {{"gangsched.io/checkpoint-interval", "30"},
         "annotation gangsched.io/checkpoint-interval: \"30\""},
    };
    r = (struct annot_run){.start_timeout_ms = 7, .max_restarts = 3};
    for (size_t i = 0; i < sizeof(life) / sizeof(life[0]); i++) {
        assert_int_equal(annot_run(&life[i].a, 1, &r, &eb), SCHED_EINVAL);
        assert_non_null(strstr(eb.msg, life[i].msg));
        assert_int_equal(r.start_timeout_ms, 7);
        assert_int_equal(r.max_restarts, 3);
    }
    struct kv ok[] = {{"gangsched.io/max-restarts", "0"},
                      {"gangsched.io/start-timeout", "5m"},
                      {"gangsched.io/checkpoint-interval", "30m"}};
    assert_int_equal(annot_run(ok, 3, &r, &eb), 0);
    assert_int_equal(r.max_restarts, 0);
    assert_int_equal(r.start_timeout_ms, 300000);
    assert_int_equal(r.checkpoint_every_ms, 1800000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ours),
        cmocka_unit_test(test_kueue_equivalents),
        cmocka_unit_test(test_volcano_tiers),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_gpu_ids_and_durations),
        cmocka_unit_test(test_duration_grammar),
        cmocka_unit_test(test_duration_annotations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
