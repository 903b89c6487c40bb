/* tests/unit/test_qmap.c: quotaMapping (config/load_qmap.c, the projection in queue/quota.c):
 * weights and their units, MIG slices as exact GPU fractions, DeviceClass sources, the reasons'
 * rounding, and every refusal naming file:line:column.
 */
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
#include "queue/quota.h"
#include "sched/core/dra.h"

#define HDR  "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
#define MIG1 "nvidia.com/mig-1g.10gb"
#define MIG3 "nvidia.com/mig-3g.40gb"

static struct config *load(const char *yaml)
{
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("q.yaml", yaml, strlen(yaml), &c, &eb) != 0)
        fail_msg("config: %s", eb.msg);
    return c;
}

static void refused(const char *yaml, const char *want)
{
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_not_equal(config_load_buffer("q.yaml", yaml, strlen(yaml), &c, &eb), 0);
    assert_null(c);
    if (!strstr(eb.msg, want))
        fail_msg("expected \"%s\" in \"%s\"", want, eb.msg);
}

static int rid(const char *name)
{
    int id = res_lookup(name);
    assert_true(id >= 0);
    return id;
}

static struct res_vec req(int r, int64_t n)
{
    struct res_vec v;
    memset(&v, 0, sizeof(v));
    v.v[r] = n;
    return v;
}

#define MIG_CFG                                                                                    \
    HDR "queues:\n  - name: t\n    quota: {default: {nvidia.com/gpu: 2}}\n"                        \
        "quotaMapping:\n"                                                                          \
        "  - {resource: " MIG1 ", quotaResource: nvidia.com/gpu, weight: 1/7}\n"                   \
        "  - {resource: " MIG3 ", quotaResource: nvidia.com/gpu, weight: \"0.5\"}\n"

static void weights_read_reduced(void **unused)
{
    (void)unused;
    struct config *c = load(MIG_CFG);
    assert_int_equal(c->n_qmaps, 2);
    assert_int_equal(c->qmaps[0].source, rid(MIG1));
    assert_int_equal(c->qmaps[0].target, RES_GPU);
    assert_int_equal(c->qmaps[0].num, 1);
    assert_int_equal(c->qmaps[0].den, 7);
    assert_int_equal(c->qmaps[1].num, 1); /* 0.5 = 5/10 reduced */
    assert_int_equal(c->qmaps[1].den, 2);
    assert_int_equal(c->qmaps[0].line, 7);
    assert_int_equal(c->qmaps[0].column, 5);
    config_free(c);
    c = load(HDR "queues:\n  - name: t\n    quota: {default: {nvidia.com/gpu: 2}}\n"
                 "quotaMapping:\n  - {resource: " MIG1 ", quotaResource: nvidia.com/gpu}\n");
    assert_int_equal(c->qmaps[0].num, 1); /* default weight 1 */
    assert_int_equal(c->qmaps[0].den, 1);
    assert_null(c->qmaps[0].device_class);
    config_free(c);
}

/* Quota 2 GPUs with 1g slices at 1/7 and 3g slices at 1/2: the tree keeps 1/14 GPU units. */
static void mig_slices_are_exact_fractions(void **unused)
{
    (void)unused;
    struct config *c = load(MIG_CFG);
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    assert_int_equal(t.n_tracked, 1);
    assert_int_equal(t.scale[0], 14); /* lcm(7, 2) */
    assert_int_equal(quota_nominal(&t, 0, 0, RES_GPU), 28);
    struct res_vec one = req(rid(MIG1), 1), three = req(rid(MIG3), 1), gpu = req(RES_GPU, 1);
    assert_int_equal(quota_need_of(&t, &one, RES_GPU), 2);
    assert_int_equal(quota_need_of(&t, &three, RES_GPU), 7);
    assert_int_equal(quota_need_of(&t, &gpu, RES_GPU), 14);
    /* 14 slices of 1/7 are exactly 2 GPUs: they fit, a 15th does not */
    struct res_vec fourteen = req(rid(MIG1), 14);
    assert_int_equal(quota_check(&t, 0, 0, &fourteen, NULL), QUOTA_FITS);
    quota_charge(&t, 0, 0, &fourteen, +1);
    struct quota_short why;
    assert_int_equal(quota_check(&t, 0, 0, &one, &why), QUOTA_WAIT);
    /* reasons in GPUs: the need of 1/7 rounds up to 1, what is left (0) down */
    assert_int_equal(why.res, RES_GPU);
    assert_int_equal(why.need, 1);
    assert_int_equal(why.used, 2);
    assert_int_equal(why.nominal, 2);
    assert_int_equal(why.available, 0);
    quota_charge(&t, 0, 0, &fourteen, -1);
    /* 1 GPU + 2 3g slices (1/2 each) = 2 GPUs exactly; one more 1g slice is over */
    struct res_vec mix = req(RES_GPU, 1);
    mix.v[rid(MIG3)] = 2;
    assert_int_equal(quota_check(&t, 0, 0, &mix, NULL), QUOTA_FITS);
    mix.v[rid(MIG1)] = 1;
    assert_int_equal(quota_check(&t, 0, 0, &mix, &why), QUOTA_NEVER);
    assert_int_equal(why.need, 3); /* 2 + 1/7 GPUs, rounded up */
    /* the usage table (base units per resource) is projected the same way */
    int64_t usage[RES_MAX] = {0};
    usage[rid(MIG1)] = 7;
    arena_reset(&a);
    assert_int_equal(quota_build(&t, c, usage, &a), 0);
    assert_int_equal(quota_used(&t, 0, 0, RES_GPU), 14); /* 1 GPU in 1/14 units */
    assert_true(quota_share(&t, 0, 0, NULL) > 0.499 && quota_share(&t, 0, 0, NULL) < 0.501);
    arena_fini(&a);
    config_free(c);
}

/* No quotaMapping: scale 1 and the request itself, as before. */
static void no_mapping_changes_nothing(void **unused)
{
    (void)unused;
    struct config *c =
        load(HDR "queues:\n  - name: t\n    quota: {default: {nvidia.com/gpu: 8, " MIG1 ": 3}}\n");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    assert_int_equal(c->n_qmaps, 0);
    struct res_vec v = req(RES_GPU, 5);
    v.v[rid(MIG1)] = 2;
    for (uint32_t k = 0; k < t.n_tracked; k++) {
        assert_int_equal(t.scale[k], 1);
        assert_int_equal(quota_need_of(&t, &v, t.tracked[k]), v.v[t.tracked[k]]);
    }
    assert_int_equal(quota_nominal(&t, 0, 0, rid(MIG1)), 3); /* quota per profile */
    arena_fini(&a);
    config_free(c);
}

/* The devices of a DeviceClass count as its target and leave the accelerator's count. */
static void device_class_source(void **unused)
{
    (void)unused;
    struct config *c = load(HDR "queues:\n  - name: t\n    quota: {default: {nvidia.com/gpu: 8, "
                                "example.com/dra-gpu: 4}}\n"
                                "quotaMapping:\n  - deviceClass: gpu.nvidia.com\n"
                                "    quotaResource: example.com/dra-gpu\n");
    int cls = rid(DRA_CLASS_RES_PREFIX "gpu.nvidia.com");
    assert_int_equal(c->qmaps[0].source, cls);
    assert_string_equal(c->qmaps[0].device_class, "gpu.nvidia.com");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    /* a pod with 2 device-plugin GPUs and 3 claimed devices: the accelerator count holds 5 */
    struct res_vec v = req(RES_GPU, 5);
    v.v[cls] = 3;
    assert_int_equal(quota_need_of(&t, &v, RES_GPU), 2);
    assert_int_equal(quota_need_of(&t, &v, rid("example.com/dra-gpu")), 3);
    struct res_vec five = req(RES_GPU, 5);
    five.v[cls] = 5;
    struct quota_short why;
    assert_int_equal(quota_check(&t, 0, 0, &five, &why), QUOTA_NEVER);
    assert_int_equal(why.res, rid("example.com/dra-gpu"));
    assert_int_equal(why.need, 5);
    five.v[cls] = 4;
    five.v[RES_GPU] = 4;
    assert_int_equal(quota_check(&t, 0, 0, &five, NULL), QUOTA_FITS);
    arena_fini(&a);
    config_free(c);
}

#define Q1 HDR "queues:\n  - name: t\n    quota: {default: {nvidia.com/gpu: 2}}\nquotaMapping:\n"

static void refusals_name_the_place(void **unused)
{
    (void)unused;
    refused(Q1 "  - {quotaResource: nvidia.com/gpu}\n",
            "q.yaml:7:5: quotaMapping[0]: give exactly one of resource");
    refused(Q1 "  - {resource: a.com/x, deviceClass: c, quotaResource: nvidia.com/gpu}\n",
            "q.yaml:7:5: quotaMapping[0]: give exactly one of resource");
    refused(Q1 "  - {resource: a.com/x}\n",
            "q.yaml:7:5: quotaMapping[0].quotaResource: missing required field");
    refused(Q1 "  - {resource: a.com/x, quotaResource: nvidia.com/gpu, weight: 1/0}\n",
            "q.yaml:7:64: quotaMapping[0].weight: weight \"1/0\": expected a number >= 0");
    refused(Q1 "  - {resource: a.com/x, quotaResource: nvidia.com/gpu, weight: -1}\n",
            "weight \"-1\": expected");
    refused(Q1 "  - {resource: a.com/x, quotaResource: nvidia.com/gpu, weight: 1/7x}\n",
            "weight \"1/7x\"");
    refused(Q1 "  - {resource: a.com/x, quotaResource: nvidia.com/gpu, wieght: 2}\n",
            "q.yaml:7:56: quotaMapping[0].wieght: unknown key");
    refused(Q1 "  - {resource: nvidia.com/gpu, quotaResource: a.com/y}\n",
            "q.yaml:7:16: quotaMapping[0]: \"nvidia.com/gpu\" is the device of this config");
    refused(Q1 "  - {resource: a.com/x, quotaResource: nvidia.com/gpu}\n"
               "  - {resource: a.com/x, quotaResource: nvidia.com/gpu, weight: 2}\n",
            "q.yaml:8:16: quotaMapping[1]: \"a.com/x\" is mapped twice (first at line 7)");
    refused(Q1 "  - {resource: a.com/x, quotaResource: a.com/y}\n"
               "  - {resource: a.com/y, quotaResource: nvidia.com/gpu}\n",
            "q.yaml:8:5: quotaMapping[1]: \"a.com/y\" and \"nvidia.com/gpu\": a mapped resource "
            "cannot be the quota resource of another mapping");
    refused(HDR "queues:\n  - name: t\n    quota: {default: {nvidia.com/gpu: 2, " MIG1 ": 7}}\n"
                "quotaMapping:\n  - {resource: " MIG1 ", quotaResource: nvidia.com/gpu}\n",
            "q.yaml:7:16: quotaMapping[0]: \"" MIG1 "\" counts as \"nvidia.com/gpu\" here, so it "
            "cannot also have a quota (queue 't' gives it one)");
    refused(Q1 "  - {resource: a.com/x, quotaResource: nvidia.com/gpu, weight: 1/999999}\n"
               "  - {resource: a.com/y, quotaResource: nvidia.com/gpu, weight: 1/999998}\n",
            "q.yaml:8:5: quotaMapping[1]: the weights mapped to \"nvidia.com/gpu\" need a common "
            "denominator");
    refused(Q1 "  - {resource: \"a b\", quotaResource: nvidia.com/gpu}\n",
            "q.yaml:7:16: quotaMapping[0].resource:");
    refused(Q1 "  resource: a.com/x\n", "q.yaml:7:3: quotaMapping: expected a sequence");
}

/* A rejected file interns no name: neither its quota's nor its mapping's. */
static void rejected_file_interns_nothing(void **unused)
{
    (void)unused;
    int before = res_count();
    refused(HDR "queues:\n  - name: t\n    quota: {default: {fresh.io/src: 7, fresh.io/q: 1}}\n"
                "quotaMapping:\n  - {resource: fresh.io/src, quotaResource: fresh.io/tgt}\n",
            "q.yaml:7:16: quotaMapping[0]: \"fresh.io/src\" counts as \"fresh.io/tgt\" here");
    assert_int_equal(res_count(), before);
    assert_int_equal(res_lookup("fresh.io/src"), -1);
    assert_int_equal(res_lookup("fresh.io/q"), -1);
    assert_int_equal(res_lookup("fresh.io/tgt"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(weights_read_reduced),
        cmocka_unit_test(mig_slices_are_exact_fractions),
        cmocka_unit_test(no_mapping_changes_nothing),
        cmocka_unit_test(device_class_source),
        cmocka_unit_test(refusals_name_the_place),
        cmocka_unit_test(rejected_file_interns_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
