/* tests/unit/test_device.c: the accelerator is whatever resource the config names. The same
 * cluster and workload, written once with nvidia.com/gpu and once with huawei.com/Ascend910 or
 * amd.com/gpu, goes through the daemon's cache (API objects as the API server sends them),
 * admission, quota (borrowing and its limit), placement on device indices and reclaim preemption
 * with exactly the same decisions; the config names the device's quota; the store writes the
 * ledger under its name; a cluster without the device gets a warning naming what it has. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "sched/core/cycle.h"
#include "sched/core/device.h"
#include "sched/core/policy.h"
#include "sched/kube/cache.h"
#include "store/store.h"

#define HDR "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"

static void add_json(struct kcache *c, int kind, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    int rc = kind == 0   ? kcache_node_event(c, o, false)
             : kind == 1 ? kcache_pod_event(c, o, false)
                         : kcache_pg_event(c, o, KPG_XK8S, false);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

static void node(struct kcache *c, const char *dev, const char *name, int devices)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"network.topology.gangsched.io/rack\":\"r1\"}},\"status\":{\"allocatable\":{"
             "\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\",\"%s\":\"%d\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name, dev, devices);
    add_json(c, 0, buf);
}

static void pg(struct kcache *c, const char *name, int min, const char *queue)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"pg-%s\","
             "\"labels\":{\"gangsched.io/queue\":\"%s\"}},\"spec\":{\"minMember\":%d}}",
             name, name, queue, min);
    add_json(c, 2, buf);
}

/* A pod of group `group` asking `n` devices; bound to `node_name` ("" = pending), then with
 * the device ids the scheduler wrote at its bind (gangsched.io/gpu-ids, indices 0..n-1). */
static void pod(struct kcache *c, const char *dev, const char *name, const char *group, int n,
                const char *node_name)
{
    char buf[1500], ids[100] = "";
    for (int i = 0; *node_name && i < n; i++)
        snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%d", i ? "," : "", i);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
             "\"scheduling.x-k8s.io/pod-group\":\"%s\"},\"annotations\":{%s%s%s}},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"nodeName\":\"%s\",\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"limits\":{\"%s\":\"%d\"},\"requests\":{"
             "\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"%s}}",
             name, name, group, *ids ? "\"gangsched.io/gpu-ids\":\"" : "", ids, *ids ? "\"" : "",
             node_name, dev, n, *node_name ? "Running" : "Pending",
             *node_name ? ",\"startTime\":\"2026-01-01T00:00:00Z\"" : "");
    add_json(c, 1, buf);
}

/* Replaces every occurrence of `what` in s by `with` (in place; `with` is never longer). */
static void neutral(char *s, const char *what, const char *with)
{
    size_t n = strlen(what), m = strlen(with);
    char *p;
    while ((p = strstr(s, what)) != NULL) {
        memcpy(p, with, m);
        memmove(p + m, p + n, strlen(p + n) + 1);
    }
}

/* Runs the scenario with accelerator `dev`; writes the cycle's decisions, device-neutral. */
static void scenario(const char *dev, char *out, size_t cap)
{
    struct sched_errbuf eb = {{0}};
    assert_int_equal(device_configure(dev, NULL, &eb), 0);
    char yaml[1200];
    snprintf(yaml, sizeof(yaml),
             HDR "device: {resource: %s}\n"
                 "cohorts:\n  - name: co\n"
                 "queues:\n"
                 "  - name: a\n    cohort: co\n    quota: {default: {%s: {nominal: 8}}}\n"
                 "  - name: b\n    cohort: co\n    quota: {default: {%s: {nominal: 8}}}\n",
             dev, dev, dev);
    struct config *cfg = NULL;
    int rc = config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(config_apply_device(cfg, &eb), 0);

    struct kcache *c = kcache_new("gangsched");
    node(c, dev, "n1", 8);
    node(c, dev, "n2", 8);
    /* queue a runs 16 devices in two gangs: 8 of its own and 8 borrowed from b */
    pg(c, "ra", 1, "a");
    pod(c, dev, "ra-0", "ra", 8, "n1");
    pg(c, "rb", 1, "a");
    pod(c, dev, "rb-0", "rb", 8, "n2");
    /* b wants 4 of its nominal back: reclaim */
    pg(c, "pb", 1, "b");
    pod(c, dev, "pb-0", "pb", 4, "");
    /* a asks for more: above what it may borrow */
    pg(c, "pa", 1, "a");
    pod(c, dev, "pa-0", "pa", 1, "");

    struct arena a;
    arena_init(&a, 1 << 16);
    struct kcache_build kb;
    rc = kcache_build(c, cfg, sched_policy_default(), (1767225600LL + 3600) * 1000, &a, &kb, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    const struct cluster *cl = kb.snap.cluster;
    assert_int_equal(cl->total_gpus, 16);
    assert_int_equal(cl->nodes[0].n_gpus, 8);
    assert_int_equal(kb.n_pending, 2);
    assert_int_equal(kb.snap.n_running, 2);
    assert_int_equal(kb.snap.usage[(0 * cfg->n_flavors + 0) * RES_MAX + RES_GPU], 16);

    struct sched_result res;
    assert_int_equal(sched_cycle(&kb.snap, &a, &res), 0);
    size_t len = 0;
    for (uint32_t i = 0; i < res.n_placements; i++) {
        const struct sched_placement *p = &res.placements[i];
        len += (size_t)snprintf(out + len, cap - len, "place %s:", p->gang->name);
        for (uint32_t k = 0; k < p->gang->n_pods; k++)
            len += (size_t)snprintf(out + len, cap - len, " %s/%x", cl->nodes[p->pods[k].node].name,
                                    p->pods[k].gpu_mask);
        len += (size_t)snprintf(out + len, cap - len, "\n");
    }
    for (uint32_t i = 0; i < res.n_evictions; i++)
        len += (size_t)snprintf(out + len, cap - len, "evict %s for %s kind %d\n",
                                res.evictions[i].victim->gang->name,
                                res.evictions[i].preemptor->name, (int)res.evictions[i].kind);
    for (uint32_t i = 0; i < res.n_verdicts; i++) {
        char why[600];
        sched_verdict_format(&res.verdicts[i], cl, cfg, why, sizeof(why));
        len +=
            (size_t)snprintf(out + len, cap - len, "wait %s %s: %s\n", res.verdicts[i].gang->name,
                             sched_why_name(res.verdicts[i].why), why);
    }
    for (uint32_t i = 0; i < res.n_reservations; i++)
        len += (size_t)snprintf(out + len, cap - len, "hold %s on %u nodes\n",
                                res.reservations[i].gang->name, res.reservations[i].n_nodes);
    assert_true(len < cap);
    /* reasons name the device and count in its unit: "4 NPU(s)", "insufficient
     * huawei.com/Ascend910" */
    char unit[32];
    snprintf(unit, sizeof(unit), "%s(s)", device_unit());
    assert_non_null(strstr(out, unit));
    neutral(out, unit, "U(s)");
    neutral(out, dev, "DEV");
    arena_fini(&a);
    kcache_free(c);
    config_free(cfg);
}

static void renamed_device_decides_as_nvidia(void **unused)
{
    (void)unused;
    static char nv[4096], ascend[4096], amd[4096];
    scenario("nvidia.com/gpu", nv, sizeof(nv));
    scenario("huawei.com/Ascend910", ascend, sizeof(ascend));
    scenario("amd.com/gpu", amd, sizeof(amd));
    assert_true(device_configure(RES_DEFAULT_DEVICE, NULL, &(struct sched_errbuf){{0}}) == 0);
    /* the scenario exercises reclaim and the quota limit, so equality says something */
    assert_non_null(strstr(nv, "evict ml/r"));
    assert_non_null(strstr(nv, " for ml/pb kind 1"));
    assert_non_null(strstr(nv, "wait ml/pa"));
    assert_non_null(strstr(nv, "DEV")); /* a reason names the device */
    assert_string_equal(nv, ascend);
    assert_string_equal(nv, amd);
}

static void config_names_the_device(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    static const char ok[] = HDR "device: {resource: huawei.com/Ascend910, unit: NPU}\n"
                                 "queues:\n  - name: a\n"
                                 "    quota: {default: {huawei.com/Ascend910: 16}}\n";
    assert_int_equal(config_load_buffer("t.yaml", ok, strlen(ok), &cfg, &eb), 0);
    assert_string_equal(cfg->device, "huawei.com/Ascend910");
    assert_string_equal(cfg->device_unit, "NPU");
    const struct config_quota *q = config_quota_get(cfg, &cfg->queues[0].q, 0, RES_GPU);
    assert_non_null(q);
    assert_int_equal(q->nominal, 16);
    assert_int_equal(config_apply_device(cfg, &eb), 0);
    assert_string_equal(device_resource(), "huawei.com/Ascend910");
    assert_string_equal(device_unit(), "NPU");
    assert_false(device_is_default());
    config_free(cfg);
    assert_int_equal(device_configure(RES_DEFAULT_DEVICE, NULL, &eb), 0);
    assert_string_equal(device_unit(), "GPU");

    /* a quota of the default name in a config whose device is another */
    static const char wrong[] = HDR "device: {resource: amd.com/gpu}\n"
                                    "queues:\n  - name: a\n"
                                    "    quota: {default: {nvidia.com/gpu: 8}}\n";
    assert_int_not_equal(config_load_buffer("t.yaml", wrong, strlen(wrong), &cfg, &eb), 0);
    assert_non_null(strstr(eb.msg, "t.yaml:6:"));
    assert_non_null(strstr(eb.msg, "not the device of this config"));
    assert_non_null(strstr(eb.msg, "amd.com/gpu"));

    static const char bad_unit[] = HDR "device: {resource: amd.com/gpu, unit: \"G P U\"}\n";
    assert_int_not_equal(config_load_buffer("t.yaml", bad_unit, strlen(bad_unit), &cfg, &eb), 0);
    assert_non_null(strstr(eb.msg, "device.unit"));
    static const char bad_name[] = HDR "device: {resource: \"amd.com/g pu\"}\n";
    assert_int_not_equal(config_load_buffer("t.yaml", bad_name, strlen(bad_name), &cfg, &eb), 0);
    assert_non_null(strstr(eb.msg, "device.resource"));
    static const char no_name[] = HDR "device: {unit: NPU}\n";
    assert_int_not_equal(config_load_buffer("t.yaml", no_name, strlen(no_name), &cfg, &eb), 0);
    assert_non_null(strstr(eb.msg, "resource"));
    /* the usual unit words */
    assert_string_equal(device_default_unit("google.com/tpu"), "TPU");
    assert_string_equal(device_default_unit("huawei.com/Ascend310"), "NPU");
    assert_string_equal(device_default_unit("amd.com/gpu"), "GPU");
}

/* device.dra: the built-in of a known accelerator, the file's driver, class, type and selector
 * for another; errors at the file's line naming the field. */
static void config_names_the_dra_driver(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    static const char amd[] = HDR "device: {resource: amd.com/gpu}\n";
    assert_int_equal(config_load_buffer("t.yaml", amd, strlen(amd), &cfg, &eb), 0);
    assert_false(cfg->dra.set);
    assert_int_equal(config_apply_device(cfg, &eb), 0);
    assert_string_equal(device_dra()->driver, "gpu.amd.com");
    assert_string_equal(device_dra()->type, "amdgpu");
    config_free(cfg);
    static const char own[] =
        HDR "device:\n"
            "  resource: example.com/npu\n"
            "  dra:\n"
            "    driver: npu.example.com\n"
            "    type: chip\n"
            "    untyped: true\n"
            "    selector: 'device.attributes[\"npu.example.com\"].cores >= 8'\n";
    assert_int_equal(config_load_buffer("t.yaml", own, strlen(own), &cfg, &eb), 0);
    assert_true(cfg->dra.set);
    assert_string_equal(cfg->dra.device_class, "npu.example.com"); /* the driver's name */
    assert_int_equal(config_apply_device(cfg, &eb), 0);
    assert_string_equal(device_dra_class(), "npu.example.com");
    assert_string_equal(device_dra()->type, "chip");
    assert_true(device_dra()->untyped);
    assert_non_null(device_dra()->select);
    config_free(cfg);
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {HDR "device: {resource: example.com/npu, dra: {type: chip}}\n", "driver"},
        {HDR "device: {resource: example.com/npu, dra: {driver: NPU.example}}\n",
         "not a DNS subdomain"},
        {HDR "device: {resource: example.com/npu, dra: {driver: a.b, selector: 'x in [1]'}}\n",
         "device.dra.selector"},
        {HDR "device: {resource: example.com/npu, dra: {driver: a.b, colour: red}}\n", "colour"},
        {HDR "devices:\n  - {resource: example.com/npu}\n"
             "  - {resource: example.com/tpu, dra: {driver: a.b}}\n",
         "first device"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg = NULL;
        int rc = config_load_buffer("t.yaml", bad[i].yaml, strlen(bad[i].yaml), &cfg, &eb);
        if (rc == 0 || !strstr(eb.msg, bad[i].want) || !strstr(eb.msg, "t.yaml:"))
            fail_msg("case %zu: rc %d, '%s' lacks '%s'", i, rc, eb.msg, bad[i].want);
        config_free(cfg);
    }
    assert_int_equal(device_configure(RES_DEFAULT_DEVICE, NULL, &eb), 0);
    assert_string_equal(device_dra()->driver, "gpu.nvidia.com");
}

static void device_already_read_is_refused(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    int id;
    assert_int_equal(res_intern("example.com/late-accel", &id, &eb), 0);
    assert_int_not_equal(res_set_device("example.com/late-accel", &eb), 0);
    assert_non_null(strstr(eb.msg, "already known"));
    assert_string_equal(res_name(RES_GPU), RES_DEFAULT_DEVICE);
}

static void cluster_without_device_is_named(void **unused)
{
    (void)unused;
    struct kcache *c = kcache_new("gangsched");
    char buf[800];
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"o%d\"},\"status\":{\"allocatable\":"
                 "{\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\",\"ephemeral-storage\":"
                 "\"1Ti\",\"alibabacloud.com/gpu-count\":\"8\",\"alibabacloud.com/gpu-milli\":"
                 "\"8000\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 i);
        add_json(c, 0, buf);
    }
    static const char yaml[] = HDR "queues:\n  - name: a\n";
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    struct arena a;
    arena_init(&a, 1 << 16);
    struct kcache_build kb;
    assert_int_equal(kcache_build(c, cfg, sched_policy_default(), 1000, &a, &kb, &eb), 0);
    char msg[512];
    assert_true(device_missing(kb.snap.cluster, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "no node of 2 has the device resource nvidia.com/gpu"));
    assert_non_null(
        strstr(msg, "alibabacloud.com/gpu-count, alibabacloud.com/gpu-milli (name the"));
    assert_null(strstr(msg, "ephemeral-storage"));

    /* read already as an ordinary resource: naming it the device now is refused */
    assert_int_not_equal(device_configure("alibabacloud.com/gpu-count", NULL, &eb), 0);
    assert_non_null(strstr(eb.msg, "already known"));
    arena_fini(&a);
    kcache_free(c);
    config_free(cfg);
}

static void store_ledger_uses_the_device(void **unused)
{
    (void)unused;
    char path[] = "/tmp/gangsched-test-device-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    struct sched_errbuf eb = {{0}};
    struct store *st = NULL;
    assert_int_equal(store_open(path, STORE_CREATE, NULL, &st, &eb), 0);
    assert_string_equal(store_device(st), STORE_GPU); /* never configured */
    assert_string_equal(store_device_unit(st), "GPU");
    static const char yaml[] =
        HDR "device: {resource: google.com/tpu}\n"
            "queues:\n  - name: a\n    quota: {default: {google.com/tpu: 4}}\n";
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    assert_int_equal(store_config_apply(st, cfg, NULL, 0, &eb), 0);
    assert_string_equal(store_device(st), "google.com/tpu");
    assert_string_equal(store_device_unit(st), "TPU");
    store_close(st);
    /* a read-only reader (gangctl) finds it too */
    assert_int_equal(store_open(path, STORE_READONLY, NULL, &st, &eb), 0);
    assert_string_equal(store_device(st), "google.com/tpu");
    store_close(st);
    config_free(cfg);
    char side[600];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

/* MIG mixed strategy: whole GPUs and each MIG profile are separate pools of one node; a MIG gang
 * gets slices and no GPU index, a GPU gang whole GPUs (several on one node: they are exclusive
 * devices), and quota is per profile. */
static void mig_mixed_pools(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    static const char yaml[] =
        HDR "queues:\n"
            "  - name: a\n    quota: {default: {nvidia.com/gpu: 8, "
            "nvidia.com/mig-1g.10gb: 4}}\n"
            "  - name: b\n    quota: {default: {nvidia.com/mig-1g.10gb: 8}}\n";
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    struct kcache *c = kcache_new("gangsched");
    add_json(c, 0,
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"m1\",\"labels\":{"
             "\"nvidia.com/mig.strategy\":\"mixed\"}},\"status\":{\"allocatable\":{"
             "\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\",\"nvidia.com/gpu\":\"4\","
             "\"nvidia.com/mig-1g.10gb\":\"14\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    pg(c, "mg", 2, "b");
    pod(c, "nvidia.com/mig-1g.10gb", "mg-0", "mg", 3, "");
    pod(c, "nvidia.com/mig-1g.10gb", "mg-1", "mg", 3, "");
    pg(c, "wg", 1, "a");
    pod(c, "nvidia.com/gpu", "wg-0", "wg", 4, "");
    pg(c, "mq", 1, "a");
    pod(c, "nvidia.com/mig-1g.10gb", "mq-0", "mq", 6, "");
    struct arena a;
    arena_init(&a, 1 << 16);
    struct kcache_build kb;
    assert_int_equal(kcache_build(c, cfg, sched_policy_default(), 1000, &a, &kb, &eb), 0);
    assert_int_equal(kb.snap.cluster->nodes[0].gpu_sharing, GPU_WHOLE);
    assert_int_equal(kb.snap.cluster->nodes[0].n_gpus, 4);
    struct sched_result res;
    assert_int_equal(sched_cycle(&kb.snap, &a, &res), 0);
    bool mg = false, wg = false;
    for (uint32_t i = 0; i < res.n_placements; i++) {
        const struct sched_placement *p = &res.placements[i];
        if (strcmp(p->gang->name, "ml/mg") == 0) {
            mg = true;
            assert_int_equal(p->pods[0].gpu_mask, 0); /* slices, no GPU index */
            assert_int_equal(p->pods[1].gpu_mask, 0);
        }
        if (strcmp(p->gang->name, "ml/wg") == 0) {
            wg = true;
            assert_int_equal(p->pods[0].gpu_mask, 0xf); /* the four whole GPUs */
        }
    }
    assert_true(mg && wg);
    /* 6 slices for a queue whose profile quota is 4 */
    assert_int_equal(res.n_verdicts, 1);
    assert_string_equal(res.verdicts[0].gang->name, "ml/mq");
    assert_true(res.verdicts[0].why == SCHED_WHY_QUOTA_NEVER ||
                res.verdicts[0].why == SCHED_WHY_QUOTA);
    assert_string_equal(res_name(res.verdicts[0].quota_res), "nvidia.com/mig-1g.10gb");
    arena_fini(&a);
    kcache_free(c);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(renamed_device_decides_as_nvidia),
        cmocka_unit_test(config_names_the_device),
        cmocka_unit_test(config_names_the_dra_driver),
        cmocka_unit_test(device_already_read_is_refused),
        cmocka_unit_test(cluster_without_device_is_named),
        cmocka_unit_test(store_ledger_uses_the_device),
        cmocka_unit_test(mig_mixed_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
