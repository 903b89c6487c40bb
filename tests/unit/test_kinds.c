/* tests/unit/test_kinds.c: several accelerator kinds in one config (`devices:`, res.h "device
 * kinds"): the list and its refusals with file:line:column, the accelerator slot mirroring a
 * kind's count, the device-kind filter, and quota per kind (queue/quota.c): each kind counts
 * under its own name, and a queue with quota for one kind only cannot run another kind's gang.
 * Own binary: applying a config with kinds changes the process-wide resource table.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "config/config.h"
#include "plugins/plugins.h"
#include "queue/quota.h"
#include "sched/core/device.h"

#define HDR    "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
#define ASCEND "huawei.com/Ascend910"

static struct config *load(const char *yaml)
{
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("k.yaml", yaml, strlen(yaml), &c, &eb) != 0)
        fail_msg("config: %s", eb.msg);
    return c;
}

static void refused(const char *yaml, const char *want)
{
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_not_equal(config_load_buffer("k.yaml", yaml, strlen(yaml), &c, &eb), 0);
    assert_null(c);
    if (!strstr(eb.msg, want))
        fail_msg("expected \"%s\" in \"%s\"", want, eb.msg);
}

#define MIXED                                                                                      \
    HDR "devices:\n  - {resource: nvidia.com/gpu}\n  - {resource: " ASCEND "}\n"                   \
        "queues:\n"                                                                                \
        "  - name: npu\n    quota: {default: {" ASCEND ": 8}}\n"                                   \
        "  - name: gpu\n    quota: {default: {nvidia.com/gpu: 8}}\n"

static struct config *mixed(void)
{
    struct config *c = load(MIXED);
    struct sched_errbuf eb = {{0}};
    if (config_apply_device(c, &eb) != 0)
        fail_msg("apply: %s", eb.msg);
    return c;
}

static struct res_vec vec(int r, int64_t n)
{
    struct res_vec v;
    memset(&v, 0, sizeof(v));
    v.v[r] = n;
    return v;
}

static void devices_list_read(void **unused)
{
    (void)unused;
    struct config *c = mixed();
    assert_string_equal(c->device, "nvidia.com/gpu");
    assert_int_equal(c->n_kinds, 1);
    assert_string_equal(c->kinds[0].resource, ASCEND);
    assert_int_equal(config_device_kind(c, ASCEND), 1);
    assert_int_equal(config_device_kind(c, "nvidia.com/gpu"), 0);
    assert_int_equal(config_device_kind(c, "amd.com/gpu"), -1);
    assert_int_equal(res_kind_count(), 2);
    assert_int_equal(res_kind_res(0), RES_GPU);
    assert_int_equal(res_kind_res(1), res_lookup(ASCEND));
    assert_string_equal(device_kind_unit(1), "NPU");
    assert_string_equal(device_resources(), "nvidia.com/gpu, " ASCEND);
    assert_false(device_is_default());
    config_free(c);
}

static void devices_refused(void **unused)
{
    (void)unused;
    refused(HDR "devices:\n  - {resource: amd.com/gpu}\n  - {resource: amd.com/gpu}\n",
            "k.yaml:5:5: devices[1]: device \"amd.com/gpu\" is listed twice (first at [0])");
    refused(HDR "device: {resource: amd.com/gpu}\ndevices:\n  - {resource: amd.com/gpu}\n",
            "k.yaml:5:3: devices: both device and devices are given");
    refused(HDR "devices: []\n", "k.yaml:3:10: devices: 0 devices: expected 1 to 8");
    refused(HDR "devices:\n  - {resource: amd.com/gpu}\n  - {resource: nvidia.com/gpu}\n",
            "k.yaml:5:5: devices[1]: nvidia.com/gpu, when listed, must be the first device");
    refused(HDR "devices:\n  - {resource: cpu}\n",
            "k.yaml:4:16: devices[0].resource: \"cpu\" is not a device resource");
    refused(HDR "devices:\n  - {resource: amd.com/gpu, units: GPU}\n", "devices[0]");
    refused(HDR "devices:\n  - {resource: amd.com/gpu, unit: G1}\n",
            "k.yaml:4:35: devices[0].unit: unit \"G1\": expected 1 to 15 letters");
    refused(HDR "devices:\n  - {resource: nvidia.com/gpu}\n  - {resource: " ASCEND "}\n"
                "quotaMapping:\n  - {resource: " ASCEND ", quotaResource: nvidia.com/gpu}\n",
            "is the device of this config");
}

static void fold_mirrors_one_kind(void **unused)
{
    (void)unused;
    struct config *c = mixed();
    int asc = res_lookup(ASCEND);
    struct res_vec v = vec(asc, 8);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(res_kinds_fold(&v, &eb), 0);
    assert_int_equal(v.v[RES_GPU], 8);
    assert_int_equal(v.v[asc], 8);
    assert_int_equal(res_kind_of(&v), 1);
    struct res_vec g = vec(RES_GPU, 4);
    assert_int_equal(res_kinds_fold(&g, &eb), 0);
    assert_int_equal(g.v[RES_GPU], 4);
    assert_int_equal(res_kind_of(&g), 0);
    g.v[asc] = 1; /* a pod asking for both kinds */
    assert_int_not_equal(res_kinds_fold(&g, &eb), 0);
    assert_non_null(strstr(eb.msg, "both nvidia.com/gpu and " ASCEND));
    config_free(c);
}

/* The filter on the nodes of a finalized cluster: each node's kind is found once, by
 * cluster_finalize (node.kind), and an NVIDIA pod never gets an Ascend node nor the reverse. */
static void filter_keeps_kinds_apart(void **unused)
{
    (void)unused;
    struct config *c = mixed();
    int asc = res_lookup(ASCEND);
    struct cluster *cl = cluster_new();
    struct node *n0 = cluster_add_node(cl, "nv");
    n0->alloc.v[RES_GPU] = 8;
    struct node *n1 = cluster_add_node(cl, "npu"); /* cluster_add_node may move the nodes */
    n1->alloc.v[RES_GPU] = 8;
    n1->alloc.v[asc] = 8;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(cl, NULL, NULL, 0, &eb), 0);
    const struct node *nv = &cl->nodes[0], *npu = &cl->nodes[1];
    assert_int_equal(nv->kind, 0);
    assert_int_equal(npu->kind, 1);
    struct podset ps_nv, ps_npu, ps_cpu;
    memset(&ps_nv, 0, sizeof(ps_nv));
    memset(&ps_npu, 0, sizeof(ps_npu));
    memset(&ps_cpu, 0, sizeof(ps_cpu));
    ps_nv.req.v[RES_GPU] = 2;
    ps_npu.req.v[RES_GPU] = 2;
    ps_npu.req.v[asc] = 2;
    ps_cpu.req.v[RES_CPU] = 1000;
    struct gang g;
    memset(&g, 0, sizeof(g));
    const struct sched_filter *f = &plugin_device_kind;
    struct filter_env env;
    memset(&env, 0, sizeof(env));
    assert_true(f->active(&env, &g, &ps_nv));
    assert_false(f->active(&env, &g, &ps_cpu)); /* CPU pods go anywhere */
    assert_true(f->pass(&g, &ps_nv, nv));
    assert_false(f->pass(&g, &ps_nv, npu)); /* an NVIDIA pod never gets an Ascend device */
    assert_true(f->pass(&g, &ps_npu, npu));
    assert_false(f->pass(&g, &ps_npu, nv));
    cluster_free(cl);
    config_free(c);
}

static void quota_per_kind(void **unused)
{
    (void)unused;
    struct config *c = mixed();
    int asc = res_lookup(ASCEND);
    uint32_t npu = (uint32_t)config_queue_index(c, "npu"),
             gpu = (uint32_t)config_queue_index(c, "gpu");
    struct arena a;
    arena_init(&a, 0);
    struct quota_tree t;
    assert_int_equal(quota_build(&t, c, NULL, &a), 0);
    assert_int_equal(t.n_tracked, 2);
    struct res_vec ascend8 = vec(RES_GPU, 8), nv8 = vec(RES_GPU, 8);
    ascend8.v[asc] = 8;
    struct quota_short why;
    assert_int_equal(quota_check(&t, npu, 0, &ascend8, NULL), QUOTA_FITS);
    assert_int_equal(quota_check(&t, npu, 0, &nv8, &why), QUOTA_NEVER);
    assert_int_equal(why.res, RES_GPU); /* the NVIDIA count, under its own name */
    assert_int_equal(quota_check(&t, gpu, 0, &nv8, NULL), QUOTA_FITS);
    assert_int_equal(quota_check(&t, gpu, 0, &ascend8, &why), QUOTA_NEVER);
    assert_int_equal(why.res, asc);
    assert_int_equal(quota_need_of(&t, &ascend8, RES_GPU), 0);
    assert_int_equal(quota_need_of(&t, &ascend8, asc), 8);
    quota_charge(&t, npu, 0, &ascend8, +1);
    assert_int_equal(quota_used(&t, npu, 0, asc), 8);
    assert_int_equal(quota_used(&t, npu, 0, RES_GPU), 0);
    assert_int_equal(quota_check(&t, npu, 0, &ascend8, NULL), QUOTA_WAIT);
    assert_int_equal(quota_check(&t, gpu, 0, &nv8, NULL), QUOTA_FITS); /* untouched */
    assert_true(quota_share(&t, npu, 0, NULL) > 0.99);
    assert_true(quota_share(&t, gpu, 0, NULL) < 0.01);
    arena_fini(&a);
    config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(devices_list_read),     cmocka_unit_test(devices_refused),
        cmocka_unit_test(fold_mirrors_one_kind), cmocka_unit_test(filter_keeps_kinds_apart),
        cmocka_unit_test(quota_per_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
