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
    int64_t ms;
    assert_int_equal(annot_duration("90", &ms), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(annot_duration("1d2h3m4s5ms", &ms), 0);
    assert_int_equal(ms, 86400000 + 7200000 + 180000 + 4000 + 5);
    assert_int_not_equal(annot_duration("1h30", &ms), 0);
    assert_int_not_equal(annot_duration("", &ms), 0);
    assert_int_not_equal(annot_duration("-5s", &ms), 0);
    assert_int_not_equal(annot_duration("99999999999999999999d", &ms), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ours),
        cmocka_unit_test(test_kueue_equivalents),
        cmocka_unit_test(test_volcano_tiers),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_gpu_ids_and_durations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
