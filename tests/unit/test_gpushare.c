/* tests/unit/test_gpushare.c: GPU shares in HAMi's model. The per-device rule (split count,
 * memory, cores, all cores only on an unused device, no zero-core share on a device whose cores
 * are taken), device choice under binpack and spread, a pod's shares never spanning devices,
 * whole-gang placement with undo and node policies; HAMi's wire format on the examples of its
 * protocol document (register in both forms, allocations written and read back) and its
 * errors, device filters and policy words; a live Node with HAMi's register (devices, not
 * nvidia.com/gpu's devices x split count; a handshake rewrite is not a change, a register change
 * is). */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/core/gpushare.h"
#include "sched/core/hami.h"
#include "sched/core/res.h"
#include "sched/k8s/nodes.h"

/* HAMi's docs/develop/protocol.md example: two 32 GiB V100s, nine-field form. */
#define V100_REG                                                                                   \
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,0,"  \
    "hami-core:GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla "                \
    "V100-PCIE-32GB,0,true,1,hami-core:"

static struct gs_node node_of(uint8_t devs, int64_t mem, int32_t split)
{
    struct gs_node n;
    memset(&n, 0, sizeof(n));
    n.n_devs = devs;
    for (uint8_t i = 0; i < devs; i++)
        n.dev[i] = (struct gs_dev){
            .mem_total = mem, .cores_total = GS_CORES_FULL, .split = split, .healthy = true};
    return n;
}

static struct gs_req req(uint32_t devs, int64_t mem, int32_t cores)
{
    return (struct gs_req){.devs = devs, .mem_mib = mem, .cores = cores, .allowed = GS_ALL_DEVICES};
}

static void device_rule(void **unused)
{
    (void)unused;
    struct gs_node n = node_of(1, 16000, 3);
    struct gs_dev *d = &n.dev[0];
    struct gs_req small = req(1, 4000, 30);
    assert_true(gs_dev_fits(d, &small));
    gs_dev_take(d, &small, 1);
    gs_dev_take(d, &small, 1);
    assert_int_equal(d->mem_used, 8000);
    assert_int_equal(d->cores_used, 60);
    struct gs_req more_cores = req(1, 1000, 50); /* 60 + 50 > 100 */
    assert_false(gs_dev_fits(d, &more_cores));
    struct gs_req more_mem = req(1, 9000, 10); /* 8000 + 9000 > 16000 */
    assert_false(gs_dev_fits(d, &more_mem));
    gs_dev_take(d, &small, 1); /* third task: the split count */
    struct gs_req tiny = req(1, 1, 0);
    assert_false(gs_dev_fits(d, &tiny));
    gs_dev_take(d, &small, -1);
    assert_true(gs_dev_fits(d, &tiny));
    /* all cores: only on an unused device, even one whose cores are all free */
    struct gs_node e = node_of(1, 16000, 10);
    struct gs_req zero = req(1, 1000, 0), all = req(1, 1000, 100);
    gs_dev_take(&e.dev[0], &zero, 1);
    assert_false(gs_dev_fits(&e.dev[0], &all));
    gs_dev_take(&e.dev[0], &zero, -1);
    assert_true(gs_dev_fits(&e.dev[0], &all));
    gs_dev_take(&e.dev[0], &all, 1);
    assert_false(gs_dev_fits(&e.dev[0], &zero)); /* cores all taken: no zero-core share */
    /* memory by percentage of the device, and the default: the whole device */
    struct gs_req pct = {.devs = 1, .mem_pct = 25, .allowed = GS_ALL_DEVICES};
    assert_int_equal(gs_mem_need(d, &pct), 4000);
    struct gs_req none = {.devs = 1, .allowed = GS_ALL_DEVICES};
    assert_int_equal(gs_mem_need(d, &none), 16000);
    d->healthy = false;
    assert_false(gs_dev_fits(d, &tiny));
}

static void pick_binpack_spread(void **unused)
{
    (void)unused;
    struct gs_node n = node_of(4, 8000, 10);
    struct gs_req a = req(1, 1000, 20);
    gs_take(&n, &a, 0x4, 1); /* device 2 partly used */
    assert_int_equal(gs_pick(&n, &a, GS_BINPACK), 0x4);
    assert_int_equal(gs_pick(&n, &a, GS_SPREAD), 0x1); /* emptiest, lowest index */
    /* a pod of two devices gets two distinct devices, each holding its whole share */
    struct gs_req two = req(2, 5000, 10);
    assert_int_equal(gs_pick(&n, &two, GS_BINPACK), 0x5); /* device 2 (fullest), then 0 */
    assert_int_equal(gs_pick(&n, &two, GS_SPREAD), 0x3);
    /* never spans devices: 7000 MiB fits no device once each has 2000 used, though the node
     * has 24,000 free */
    struct gs_req fill = req(1, 2000, 0);
    gs_take(&n, &fill, 0xb, 1);
    gs_take(&n, &a, 0x4, -1);
    gs_take(&n, &fill, 0x4, 1);
    struct gs_req big = req(1, 7000, 0);
    assert_int_equal(gs_pick(&n, &big, GS_BINPACK), 0);
    struct gs_req five = req(5, 100, 0);
    assert_int_equal(gs_pick(&n, &five, GS_SPREAD), 0); /* more devices than the node has */
    /* the pod's device filter */
    struct gs_req only3 = req(1, 100, 0);
    only3.allowed = 0x8;
    assert_int_equal(gs_pick(&n, &only3, GS_SPREAD), 0x8);
}

static void gang_whole_or_nothing(void **unused)
{
    (void)unused;
    struct gs_node nodes[2] = {node_of(2, 16000, 10), node_of(2, 16000, 10)};
    struct gs_req pods[3] = {req(1, 6000, 30), req(1, 6000, 30), req(1, 6000, 30)};
    struct gs_assign out[3];
    /* binpack: every pod on node 0, all on one device (device 0 fits two 6000 MiB shares) */
    assert_true(gs_place_gang(nodes, 2, pods, 3, NULL, NULL, GS_BINPACK, GS_BINPACK, out));
    assert_int_equal(out[0].node, 0);
    assert_int_equal(out[1].node, 0);
    assert_int_equal(out[2].node, 0);
    assert_int_equal(out[0].mask, 0x1);
    assert_int_equal(out[1].mask, 0x1);
    assert_int_equal(out[2].mask, 0x2);
    assert_int_equal(nodes[0].dev[0].tasks, 2);
    /* room is left for five such shares (node 0: one on device 1; node 1: two per device), so
     * a gang of six does not fit whole: nothing is applied, the sixth pod found no node */
    struct gs_req six[6];
    for (int i = 0; i < 6; i++)
        six[i] = req(1, 6000, 30);
    struct gs_assign out6[6];
    struct gs_node before[2];
    memcpy(before, nodes, sizeof(nodes));
    assert_false(gs_place_gang(nodes, 2, six, 6, NULL, NULL, GS_BINPACK, GS_BINPACK, out6));
    assert_memory_equal(before, nodes, sizeof(nodes));
    assert_int_equal(out6[5].node, -1);
    assert_true(gs_place_gang(nodes, 2, six, 5, NULL, NULL, GS_BINPACK, GS_BINPACK, out6));
    assert_int_equal(out6[0].node, 0);
    assert_int_equal(out6[0].mask, 0x2);
    assert_int_equal(out6[4].node, 1);
    /* spread: pods go to the emptiest node, then the emptiest device */
    struct gs_node s[2] = {node_of(2, 16000, 10), node_of(2, 16000, 10)};
    struct gs_req two[2] = {req(1, 2000, 10), req(1, 2000, 10)};
    assert_true(gs_place_gang(s, 2, two, 2, NULL, NULL, GS_SPREAD, GS_SPREAD, out));
    assert_int_equal(out[0].node, 0);
    assert_int_equal(out[1].node, 1);
    struct gs_req two_more[2] = {req(1, 2000, 10), req(1, 2000, 10)};
    assert_true(gs_place_gang(s, 2, two_more, 2, NULL, NULL, GS_SPREAD, GS_SPREAD, out));
    assert_int_equal(out[0].mask, 0x2); /* the unused device of node 0 */
    assert_int_equal(out[1].mask, 0x2);
}

static uint32_t only_node1(void *ctx, uint32_t pod, uint32_t node)
{
    (void)ctx;
    (void)pod;
    return node == 1 ? GS_ALL_DEVICES : 0;
}

/* Only device 1 of each node: the pod goes there even though binpack prefers device 0. */
static uint32_t only_dev1(void *ctx, uint32_t pod, uint32_t node)
{
    (void)ctx;
    (void)pod;
    (void)node;
    return 2u;
}

static void gang_eligibility(void **unused)
{
    (void)unused;
    struct gs_node nodes[2] = {node_of(1, 16000, 10), node_of(1, 16000, 10)};
    struct gs_req pods[1] = {req(1, 1000, 10)};
    struct gs_assign out[1];
    assert_true(gs_place_gang(nodes, 2, pods, 1, only_node1, NULL, GS_BINPACK, GS_BINPACK, out));
    assert_int_equal(out[0].node, 1);
    struct gs_node two[1] = {node_of(2, 16000, 10)};
    gs_take(&two[0], &pods[0], 1u, 1); /* device 0 is fuller: binpack's choice */
    assert_true(gs_place_gang(two, 1, pods, 1, only_dev1, NULL, GS_BINPACK, GS_BINPACK, out));
    assert_int_equal(out[0].mask, 2u);
    assert_true(gs_place_gang(two, 1, pods, 1, NULL, NULL, GS_BINPACK, GS_BINPACK, out));
    assert_int_equal(out[0].mask, 1u);
}

static void register_parsed(void **unused)
{
    (void)unused;
    struct hami_reg r;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(hami_parse_register(V100_REG, &r, &eb), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.dev[1].uuid, "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448");
    assert_int_equal(r.dev[0].mem_mib, 32768);
    assert_int_equal(r.dev[0].split, 10);
    assert_int_equal(r.dev[0].cores, 100);
    assert_string_equal(r.dev[0].type, "NVIDIA-Tesla V100-PCIE-32GB");
    assert_true(r.dev[1].healthy);
    /* the seven-field form (older plugins) without the trailing ':'; order gives the index */
    const char *old = "GPU-a,10,16384,100,NVIDIA-A10,0,true:GPU-b,4,16384,100,NVIDIA-A10,0,false";
    assert_int_equal(hami_parse_register(old, &r, &eb), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.dev[1].index, 1);
    assert_false(r.dev[1].healthy);
    struct gs_node n;
    hami_reg_node(&r, &n);
    assert_int_equal(n.n_devs, 2);
    assert_int_equal(n.dev[0].mem_total, 16384);
    assert_int_equal(n.dev[1].split, 4);
    assert_false(n.dev[1].healthy);
    /* devices are ordered by their index field */
    const char *rev = "GPU-x,10,100,100,T,0,true,1,hami-core:GPU-y,10,200,100,T,0,true,0,mig:";
    assert_int_equal(hami_parse_register(rev, &r, &eb), 0);
    assert_string_equal(r.dev[0].uuid, "GPU-y");
    assert_true(r.dev[0].mig);
    hami_reg_node(&r, &n);
    assert_false(n.dev[0].healthy); /* MIG mode: not shared here */
}

static void register_errors(void **unused)
{
    (void)unused;
    struct hami_reg r;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(hami_parse_register("GPU-a,10,abc,100,T,0,true", &r, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "device 1: memory \"abc\""));
    assert_int_equal(hami_parse_register("GPU-a,10,100,100,T,0,true:GPU-b,10,100", &r, &eb),
                     SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "device 2: expected 7 or 9"));
    assert_int_equal(hami_parse_register("GPU-a,10,100,100,T,0,yes", &r, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "healthy \"yes\""));
    assert_int_equal(hami_parse_register("GPU-a,10,100,100,T,0,true,0,x", &r, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "mode"));
    assert_int_equal(hami_parse_register("GPU-a,10,1,1,T,0,true:GPU-a,10,1,1,T,0,true", &r, &eb),
                     SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "listed twice"));
    assert_int_equal(
        hami_parse_register("GPU-a,10,1,1,T,0,true,3,mps:GPU-b,10,1,1,T,0,true,3,mps", &r, &eb),
        SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "two devices with index 3"));
    assert_int_equal(hami_parse_register(",10,1,1,T,0,true", &r, &eb), SCHED_EINVAL);
    /* ';' ends a container in allocations: a UUID with one could not be written back */
    assert_int_equal(hami_parse_register("GPU-a;b,10,1,1,T,0,true", &r, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "uuid \"GPU-a;b\""));
    assert_int_equal(hami_parse_register(NULL, &r, &eb), SCHED_EINVAL);
    char many[40 * 40] = "";
    for (int i = 0; i < 33; i++) {
        char one[40];
        snprintf(one, sizeof(one), "G%d,1,1,1,T,0,true:", i);
        strcat(many, one);
    }
    assert_int_equal(hami_parse_register(many, &r, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "more than 32 devices"));
}

static void allocation_round_trip(void **unused)
{
    (void)unused;
    struct hami_reg r;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(hami_parse_register(V100_REG, &r, &eb), 0);
    struct gs_node n;
    hami_reg_node(&r, &n);
    /* the protocol's example: two containers, one device each, 3000 and 5000 MiB; ours is one
     * request per pod, so a pod of one container with device 1 */
    struct gs_req q = req(1, 3000, 0);
    uint32_t ctr[2] = {0, 1};
    char buf[512];
    assert_int_equal(hami_format_alloc(&r, &n, &q, 0x2, ctr, 2, buf, sizeof(buf), &eb), 0);
    assert_string_equal(buf, ";GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,0:;");
    /* two devices, percentages resolved per device */
    struct gs_req half = {.devs = 2, .mem_pct = 50, .cores = 30, .allowed = GS_ALL_DEVICES};
    uint32_t one[1] = {2};
    assert_int_equal(hami_format_alloc(&r, &n, &half, 0x3, one, 1, buf, sizeof(buf), &eb), 0);
    assert_string_equal(buf, "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA,16384,30:"
                             "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,16384,30:;");
    /* read back as a running pod's usage */
    uint32_t mask = 0;
    assert_int_equal(hami_apply_alloc(&r, &n, buf, &mask, &eb), 0);
    assert_int_equal(mask, 0x3);
    assert_int_equal(n.dev[1].mem_used, 16384);
    assert_int_equal(n.dev[1].cores_used, 30);
    assert_int_equal(n.dev[1].tasks, 1);
    /* the protocol document's own two-container value */
    const char *doc = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,0:;"
                      "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,5000,0:;";
    assert_int_equal(hami_apply_alloc(&r, &n, doc, &mask, &eb), 0);
    assert_int_equal(n.dev[1].mem_used, 16384 + 8000);
    assert_int_equal(n.dev[1].tasks, 3);
    /* errors: whole or nothing */
    struct gs_node before = n;
    assert_int_equal(hami_apply_alloc(&r, &n,
                                      "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA,1,0:"
                                      "GPU-zzz,NVIDIA,1,0:;",
                                      &mask, &eb),
                     SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "GPU-zzz is not in the node's"));
    assert_memory_equal(&before, &n, sizeof(n));
    assert_int_equal(hami_apply_alloc(&r, &n,
                                      "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA,x,0:", &mask,
                                      &eb),
                     SCHED_EINVAL);
    assert_int_equal(hami_format_alloc(&r, &n, &q, 0x3, one + 0, 0, buf, sizeof(buf), &eb),
                     SCHED_EINVAL);
    assert_int_equal(hami_format_alloc(&r, &n, &half, 0x3, one, 1, buf, 20, &eb), SCHED_EFULL);
    assert_string_equal(buf, "");
}

static void filters_and_policies(void **unused)
{
    (void)unused;
    struct hami_reg r;
    struct sched_errbuf eb = {{0}};
    const char *mixed = "GPU-a,10,1,100,NVIDIA-A100-SXM4-80GB,0,true:"
                        "GPU-b,10,1,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
                        "GPU-c,10,1,100,NVIDIA-A100-PCIE-40GB,0,true";
    assert_int_equal(hami_parse_register(mixed, &r, &eb), 0);
    assert_int_equal(hami_allowed(&r, NULL, NULL, NULL, NULL), 0x7);
    assert_int_equal(hami_allowed(&r, "GPU-c, GPU-a", NULL, NULL, NULL), 0x5);
    assert_int_equal(hami_allowed(&r, NULL, "GPU-a", NULL, NULL), 0x6);
    assert_int_equal(hami_allowed(&r, NULL, NULL, "a100", NULL), 0x5);
    assert_int_equal(hami_allowed(&r, NULL, NULL, "A100", "PCIE"), 0x1);
    assert_int_equal(hami_allowed(&r, NULL, NULL, "H100", NULL), 0);
    enum gs_policy p = GS_SPREAD;
    assert_int_equal(hami_policy("binpack", &p, &eb), 0);
    assert_int_equal(p, GS_BINPACK);
    assert_int_equal(hami_policy("spread", &p, &eb), 0);
    assert_int_equal(p, GS_SPREAD);
    assert_int_equal(hami_policy("Binpack", &p, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "expected binpack or spread"));
    assert_int_equal(hami_policy(NULL, &p, &eb), SCHED_EINVAL);
}

/* A live Node as HAMi's device plugin leaves it: nvidia.com/gpu 40 (4 devices, split 10). */
static struct nodes_rec *hami_live(const char *reg, const char *handshake)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"h1\",\"annotations\":{"
             "\"hami.io/node-nvidia-register\":\"%s\","
             "\"hami.io/node-handshake-nvidia\":\"%s\"}},"
             "\"status\":{\"allocatable\":{\"cpu\":\"96\",\"nvidia.com/gpu\":\"40\"},"
             "\"capacity\":{\"cpu\":\"96\",\"nvidia.com/gpu\":\"40\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             reg, handshake);
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    struct nodes_rec *r = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(nodes_decode(o, "node h1", &r, &eb), 0);
    cJSON_Delete(o);
    return r;
}

static void live_node(void **unused)
{
    (void)unused;
    const char *four = "GPU-a,10,32768,100,V100,0,true,0,hami-core:GPU-b,10,32768,100,V100,0,"
                       "true,1,hami-core:GPU-c,10,32768,100,V100,0,true,2,hami-core:GPU-d,10,"
                       "32768,100,V100,0,true,3,hami-core:";
    const char *sick = "GPU-a,10,32768,100,V100,0,true,0,hami-core:GPU-b,10,32768,100,V100,0,"
                       "true,1,hami-core:GPU-c,10,32768,100,V100,0,false,2,hami-core:GPU-d,10,"
                       "32768,100,V100,0,true,3,hami-core:";
    struct nodes_rec *a = hami_live(four, "Requesting_2026-01-01 00:00:00");
    struct nodes_rec *b = hami_live(four, "Reported_2026-01-01 00:00:15");
    struct nodes_rec *c = hami_live(sick, "Reported_2026-01-01 00:00:15");
    struct nodes_rec *d = hami_live("GPU-a,10,lots,100,V100,0,true", "x");
    assert_int_equal(a->node.alloc.v[RES_GPU], 4);
    assert_int_equal(a->node.gpu_capacity, 4);
    assert_int_equal(c->node.alloc.v[RES_GPU], 2);
    assert_int_equal(d->node.alloc.v[RES_GPU], 0); /* unreadable: no device */
    assert_true(nodes_rec_same(a, b));             /* only the handshake changed */
    assert_false(nodes_rec_same(b, c));            /* the register changed */
    nodes_rec_free(a);
    nodes_rec_free(b);
    nodes_rec_free(c);
    nodes_rec_free(d);
}

/* Quota charge of shares: per device (HAMi's ResourceQuota, Kueue's HAMi transformation). */
static void charge_per_device(void **unused)
{
    (void)unused;
    int mem, cores;
    assert_int_equal(res_intern(HAMI_RES_MEM, &mem, NULL), 0);
    assert_int_equal(res_intern(HAMI_RES_CORES, &cores, NULL), 0);
    struct podset sets[2] = {{0}};
    struct gang g = {.n_sets = 2, .sets = sets};
    g.sets[0].count = 3;
    g.sets[0].req.v[RES_GPU] = 2;
    g.sets[0].req.v[mem] = 4000;
    g.sets[0].req.v[cores] = 25;
    g.sets[0].req.v[RES_CPU] = 1000;
    g.sets[1].count = 1;
    g.sets[1].req.v[mem] = 1000; /* no device named: one share */
    struct res_vec need;
    gang_request(&g, &need);
    assert_int_equal(need.v[mem], 3 * 2 * 4000 + 1000);
    assert_int_equal(need.v[cores], 3 * 2 * 25);
    assert_int_equal(need.v[RES_GPU], 6);
    assert_int_equal(need.v[RES_CPU], 3000); /* other resources per pod, as always */
    struct res_vec one = {{0}};
    gang_pod_charge(&g.sets[0].req, 1, &one);
    assert_int_equal(one.v[mem], 8000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_rule),
        cmocka_unit_test(pick_binpack_spread),
        cmocka_unit_test(gang_whole_or_nothing),
        cmocka_unit_test(gang_eligibility),
        cmocka_unit_test(register_parsed),
        cmocka_unit_test(register_errors),
        cmocka_unit_test(allocation_round_trip),
        cmocka_unit_test(filters_and_policies),
        cmocka_unit_test(live_node),
        cmocka_unit_test(charge_per_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
