/* tests/unit/test_dra.c: the DRA GPU inventory (sched/core/dra.c) fed by ResourceSlice JSON
 * (sched/kube/dra.c): newest pool generation only, incomplete pools not counted, MIG devices and
 * other drivers not whole GPUs, nodes with nvidia.com/gpu keep it, device names by index,
 * malformed slices refused naming the field; claims: what is allocated, selectors evaluated,
 * what is refused and how it is named. */
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

#include "sched/core/device.h"
#include "sched/core/model.h"
#include "sched/kube/dra.h"

#include "tests/unit/dra_fx.h"

static void put(struct dra_inv *inv, const char *name, const char *node, const char *driver,
                int gen, int count, int n_dev, const char *dev_type)
{
    char devs[2000] = "";
    for (int i = 0; i < n_dev; i++)
        snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs),
                 "%s{\"name\":\"gpu-%d\",\"attributes\":{\"type\":{\"string\":\"%s\"}}}",
                 i ? "," : "", i, dev_type);
    char buf[3000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"%s\",\"nodeName\":\"%s\","
             "\"pool\":{\"name\":\"%s\",\"generation\":%d,\"resourceSliceCount\":%d},"
             "\"devices\":[%s]}}",
             name, driver, node, node, gen, count, devs);
    cJSON *o = cJSON_Parse(buf);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(k8s_slice_put(inv, o, &eb), 0);
    cJSON_Delete(o);
}

static int64_t gpus_of(struct cluster *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_nodes; i++)
        if (strcmp(c->nodes[i].name, name) == 0)
            return c->nodes[i].alloc.v[RES_GPU];
    return -1;
}

static void inventory_rules(void **state)
{
    (void)state;
    struct dra_inv *inv = dra_inv_new();
    put(inv, "a-old", "a", "gpu.nvidia.com", 1, 1, 2, "gpu");
    put(inv, "a-new", "a", "gpu.nvidia.com", 2, 1, 4, "gpu"); /* supersedes generation 1 */
    put(inv, "b-1", "b", "gpu.nvidia.com", 1, 2, 4, "gpu");   /* 1 of 2 slices: incomplete */
    put(inv, "c-1", "c", "gpu.nvidia.com", 1, 1, 3, "mig");   /* MIG: not whole GPUs */
    put(inv, "d-1", "d", "other.example.com", 1, 1, 3, "gpu");
    put(inv, "e-1", "e", "gpu.nvidia.com", 1, 1, 8, "gpu");
    struct cluster *c = cluster_new();
    const char *names[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        struct node *n = cluster_add_node(c, names[i]);
        n->ready = true;
        if (i == 4)
            n->alloc.v[RES_GPU] = 2; /* the device plugin's count wins */
    }
    assert_int_equal(dra_inv_apply(inv, c), 1);
    assert_int_equal(gpus_of(c, "a"), 4);
    assert_int_equal(gpus_of(c, "b"), 0);
    assert_int_equal(gpus_of(c, "c"), 0);
    assert_int_equal(gpus_of(c, "d"), 0);
    assert_int_equal(gpus_of(c, "e"), 2);
    /* the second slice completes b's pool */
    put(inv, "b-2", "b", "gpu.nvidia.com", 1, 2, 2, "gpu");
    const char *drv = NULL, *pool = NULL;
    assert_string_equal(dra_inv_device(inv, "b", 4, &drv, &pool, NULL), "gpu-0"); /* b-2's first */
    assert_string_equal(drv, "gpu.nvidia.com");
    assert_string_equal(pool, "b");
    assert_null(dra_inv_device(inv, "b", 6, NULL, NULL, NULL));
    /* a "type" that is not a string is no type a rule names (not absent: not a whole GPU) */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"f-1\"},\"spec\":{\"driver\":"
                           "\"gpu.nvidia.com\",\"nodeName\":\"f\",\"pool\":{\"name\":\"f\"},"
                           "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"type\":{"
                           "\"int\":1}}},{\"name\":\"gpu-1\",\"attributes\":{"
                           "\"gpu.nvidia.com/type\":{\"string\":\"gpu\"}}}]}}");
    struct sched_errbuf eb = {{0}};
    assert_int_equal(k8s_slice_put(inv, o, &eb), 0);
    cJSON_Delete(o);
    struct cluster *cf = cluster_new();
    cluster_add_node(cf, "f");
    assert_int_equal(dra_inv_apply(inv, cf), 1);
    assert_int_equal(gpus_of(cf, "f"), 1); /* gpu-1, its type qualified by the driver */
    cluster_free(cf);
    dra_inv_remove(inv, "f-1");
    dra_inv_remove(inv, "a-new"); /* generation 1 is the newest again */
    struct cluster *c2 = cluster_new();
    cluster_add_node(c2, "a");
    cluster_add_node(c2, "b");
    assert_int_equal(dra_inv_apply(inv, c2), 2);
    assert_int_equal(gpus_of(c2, "a"), 2);
    assert_int_equal(gpus_of(c2, "b"), 6);
    cluster_free(c);
    cluster_free(c2);
    dra_inv_free(inv);
}

static void malformed_slices(void **state)
{
    (void)state;
    struct dra_inv *inv = dra_inv_new();
    struct sched_errbuf eb = {{0}};
    const char *bad[] = {
        "{\"metadata\":{},\"spec\":{}}",
        "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"pool\":{\"name\":\"p\"}}}",
        "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\","
        "\"generation\":-1}}}",
        "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
        "\"devices\":[{}]}}",
    };
    const char *want[] = {"metadata.name", "spec.driver", "spec.pool.generation",
                          "spec.devices[0].name"};
    for (int i = 0; i < 4; i++) {
        cJSON *o = cJSON_Parse(bad[i]);
        assert_int_equal(k8s_slice_put(inv, o, &eb), SCHED_EINVAL);
        assert_non_null(strstr(eb.msg, want[i]));
        cJSON_Delete(o);
    }
    assert_int_equal(dra_inv_n_slices(inv), 0);
    dra_inv_free(inv);
}

/* A claim of the given spec.devices (JSON). */
static struct kclaim *claim_devices(const char *devices)
{
    char buf[2000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\"},\"spec\":{\"devices\":%s}}",
             devices);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    struct kclaim *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdra_claim_decode(o, NULL, &c, &eb), 0);
    cJSON_Delete(o);
    return c;
}

/* A claim of one request "gpus" whose `exactly` is the given JSON, and more of spec.devices. */
static struct kclaim *claim(const char *exactly, const char *more)
{
    char buf[1800];
    snprintf(buf, sizeof(buf), "{\"requests\":[{\"name\":\"gpus\",\"exactly\":%s}]%s}", exactly,
             more);
    return claim_devices(buf);
}

static void claims(void **state)
{
    (void)state;
    struct kclaim *c = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":4,"
                             "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes["
                             "'gpu.nvidia.com'].architecture == 'Hopper'\"}}]}",
                             "");
    assert_null(c->unsupported);
    assert_int_equal(c->gpus, 4);
    assert_true(kdra_claim_has_selectors(c));
    struct cel_attr hopper = {.domain = "", .name = "architecture", .type = CEL_STR, .s = "Hopper"};
    struct cel_attr ampere = {.domain = "", .name = "architecture", .type = CEL_STR, .s = "Ampere"};
    struct cel_device d = {.driver = "gpu.nvidia.com", .attrs = &hopper, .n_attrs = 1};
    assert_true(kdra_claim_matches(c, NULL, &d));
    d.attrs = &ampere;
    assert_false(kdra_claim_matches(c, NULL, &d));
    d.n_attrs = 0; /* a missing attribute: an evaluation error, the device is not chosen */
    assert_false(kdra_claim_matches(c, NULL, &d));
    assert_true(kdra_claim_free_for(c, "u1"));
    kdra_claim_free(c);
    const char *bad[][3] = {
        {"{\"count\":1}", "", "deviceClassName: missing"},
        {"{\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"Some\"}", "",
         "allocationMode: not ExactCount or All"},
        {"{\"deviceClassName\":\"gpu.nvidia.com\"}",
         ",\"constraints\":[{\"requests\":[\"gpus\"],\"matchAttribute\":\"numaNode\"}]",
         "spec.devices.constraints[0]: exactly one"},
        {"{\"deviceClassName\":\"gpu.nvidia.com\",\"selectors\":[{\"cel\":{"
         "\"expression\":\"device.driver in ['a']\"}}]}",
         "", "selectors[0].cel.expression: column"},
    };
    /* allocationMode All: no count of its own, a node filter */
    c = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"All\"}", "");
    assert_null(c->unsupported);
    assert_true(c->all);
    assert_int_equal(c->gpus, 0);
    assert_true(kdra_claim_has_selectors(c));
    kdra_claim_free(c);
    /* constraints: a node suits when any choice of its devices would */
    c = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}",
              ",\"constraints\":[{\"matchAttribute\":\"resource.kubernetes.io/numaNode\"},"
              "{\"distinctAttribute\":\"gpu.nvidia.com/uuid\"}]");
    assert_null(c->unsupported);
    struct cel_attr a0[] = {
        {.domain = "resource.kubernetes.io", .name = "numaNode", .type = CEL_INT, .i = 0},
        {.domain = "", .name = "uuid", .type = CEL_STR, .s = "GPU-a"}};
    struct cel_attr a1[] = {
        {.domain = "resource.kubernetes.io", .name = "numaNode", .type = CEL_INT, .i = 0},
        {.domain = "", .name = "uuid", .type = CEL_STR, .s = "GPU-b"}};
    struct cel_attr a2[] = {
        {.domain = "resource.kubernetes.io", .name = "numaNode", .type = CEL_INT, .i = 1},
        {.domain = "", .name = "uuid", .type = CEL_STR, .s = "GPU-c"}};
    struct cel_device d0 = {.driver = "gpu.nvidia.com", .attrs = a0, .n_attrs = 2};
    struct cel_device d1 = {.driver = "gpu.nvidia.com", .attrs = a1, .n_attrs = 2};
    struct cel_device d2 = {.driver = "gpu.nvidia.com", .attrs = a2, .n_attrs = 2};
    const struct cel_device *same_numa[] = {&d0, &d1}, *two_numa[] = {&d0, &d1, &d2},
                            *dup_uuid[] = {&d0, &d0};
    assert_true(kdra_claim_node_ok(c, NULL, same_numa, 2));
    assert_false(kdra_claim_node_ok(c, NULL, two_numa, 3));
    assert_false(kdra_claim_node_ok(c, NULL, dup_uuid, 2));
    kdra_claim_free(c);
    for (int i = 0; i < 4; i++) {
        c = claim(bad[i][0], bad[i][1]);
        assert_non_null(c->unsupported);
        assert_non_null(strstr(c->unsupported, bad[i][2]));
        assert_non_null(strstr(c->unsupported, "resourceclaim ml/c"));
        kdra_claim_free(c);
    }
}

/* firstAvailable (DRAPrioritizedList): alternatives of one count; a node suits when one of them
 * accepts its devices, the first that does is written "<request>/<subrequest>"; alternatives of
 * different counts, or not ExactCount, are refused naming the field. */
static void first_available(void **state)
{
    (void)state;
    struct kclaim *c = claim_devices(
        "{\"requests\":[{\"name\":\"gpus\",\"firstAvailable\":["
        "{\"name\":\"a100\",\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2,\"selectors\":["
        "{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].productName == 'A100'\"}}"
        "]},{\"name\":\"h100\",\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2,\"selectors\":["
        "{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].productName == 'H100'\"}}"
        "]}]}]}");
    assert_null(c->unsupported);
    assert_int_equal(c->gpus, 2);
    assert_int_equal(c->reqs[0].n_alts, 2);
    assert_true(kdra_claim_has_selectors(c));
    struct cel_attr h100 = {.domain = "", .name = "productName", .type = CEL_STR, .s = "H100"};
    struct cel_attr a100 = {.domain = "", .name = "productName", .type = CEL_STR, .s = "A100"};
    struct cel_attr l4 = {.domain = "", .name = "productName", .type = CEL_STR, .s = "L4"};
    struct cel_device dh = {.driver = "gpu.nvidia.com", .attrs = &h100, .n_attrs = 1};
    struct cel_device da = {.driver = "gpu.nvidia.com", .attrs = &a100, .n_attrs = 1};
    struct cel_device dl = {.driver = "gpu.nvidia.com", .attrs = &l4, .n_attrs = 1};
    const struct cel_device *hs[] = {&dh, &dh}, *as[] = {&da, &da}, *mixed[] = {&da, &dh},
                            *ls[] = {&dl, &dl};
    uint8_t sub[KDRA_MAX_REQS] = {9};
    assert_true(kdra_claim_node_ok(c, NULL, hs, 2));
    assert_true(kdra_claim_subs(c, NULL, hs, 2, sub));
    assert_int_equal(sub[0], 1);
    assert_true(kdra_claim_subs(c, NULL, as, 2, sub));
    assert_int_equal(sub[0], 0);
    assert_false(kdra_claim_node_ok(c, NULL, ls, 2));
    assert_false(kdra_claim_node_ok(c, NULL, mixed, 2)); /* no one alternative takes them all */
    assert_false(kdra_claim_subs(c, NULL, ls, 2, sub));
    const char *dev[] = {"gpu-0", "gpu-1"}, *drv[] = {"gpu.nvidia.com", "gpu.nvidia.com"},
               *pool[] = {"n1", "n1"};
    struct kdra_ref who = {.name = "p", .uid = "u"};
    sub[0] = 1;
    cJSON *b = kdra_claim_allocation_subs(c, sub, "n1", dev, drv, pool, 2, &who, 1);
    const cJSON *res = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "status"), "allocation"),
                            "devices"),
        "results");
    assert_int_equal(cJSON_GetArraySize(res), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "request")->valuestring,
                        "gpus/h100");
    cJSON_Delete(b);
    kdra_claim_free(c);
    const char *bad[][2] = {
        {"{\"requests\":[{\"name\":\"gpus\",\"firstAvailable\":[{\"name\":\"a\","
         "\"deviceClassName\":"
         "\"gpu.nvidia.com\",\"count\":2},{\"name\":\"b\",\"deviceClassName\":\"gpu.nvidia.com\","
         "\"count\":4}]}]}",
         "firstAvailable[1]: count: 4 where the first subrequest asks 2"},
        {"{\"requests\":[{\"name\":\"gpus\",\"firstAvailable\":[{\"name\":\"a\","
         "\"deviceClassName\":"
         "\"gpu.nvidia.com\",\"allocationMode\":\"All\"}]}]}",
         "firstAvailable[0]: allocationMode: only ExactCount"},
        {"{\"requests\":[{\"name\":\"gpus\",\"firstAvailable\":[]}]}", "1 to 8 subrequests"},
        {"{\"requests\":[{\"name\":\"gpus\"}]}", "exactly one of `exactly` and `firstAvailable`"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = claim_devices(bad[i][0]);
        assert_non_null(c->unsupported);
        assert_non_null(strstr(c->unsupported, bad[i][1]));
        kdra_claim_free(c);
    }
}

/* A request of another DeviceClass takes the accelerator's devices its class's selectors accept
 * (before the request's own); a class not known accepts nothing; one outside the CEL subset says
 * where. */
static void device_classes(void **state)
{
    (void)state;
    struct kclaim *c = claim("{\"deviceClassName\":\"h100.example.com\",\"count\":2,"
                             "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes["
                             "'gpu.nvidia.com'].numa == 0\"}}]}",
                             "");
    assert_null(c->unsupported);
    assert_string_equal(c->reqs[0].alts[0].cls, "h100.example.com");
    assert_true(kdra_claim_has_selectors(c));
    struct strmap classes;
    strmap_init(&classes);
    struct cel_attr h100[] = {{.domain = "", .name = "productName", .type = CEL_STR, .s = "H100"},
                              {.domain = "", .name = "numa", .type = CEL_INT, .i = 0}};
    struct cel_attr a100[] = {{.domain = "", .name = "productName", .type = CEL_STR, .s = "A100"},
                              {.domain = "", .name = "numa", .type = CEL_INT, .i = 0}};
    struct cel_attr h100_1[] = {{.domain = "", .name = "productName", .type = CEL_STR, .s = "H100"},
                                {.domain = "", .name = "numa", .type = CEL_INT, .i = 1}};
    struct cel_device dh = {.driver = "gpu.nvidia.com", .attrs = h100, .n_attrs = 2};
    struct cel_device da = {.driver = "gpu.nvidia.com", .attrs = a100, .n_attrs = 2};
    struct cel_device dh1 = {.driver = "gpu.nvidia.com", .attrs = h100_1, .n_attrs = 2};
    assert_false(kdra_claim_matches(c, &classes, &dh)); /* the class is not known (yet) */
    struct kdra_class *k = fx_device_class(
        "h100.example.com", "device.attributes['gpu.nvidia.com'].productName == 'H100'");
    assert_null(k->unsupported);
    assert_int_equal(strmap_put(&classes, k->name, k, NULL), 0);
    assert_true(kdra_claim_matches(c, &classes, &dh));
    assert_false(kdra_claim_matches(c, &classes, &da));  /* the class's selector */
    assert_false(kdra_claim_matches(c, &classes, &dh1)); /* the request's own */
    const struct cel_device *node[] = {&dh, &dh};
    assert_true(kdra_claim_node_ok(c, &classes, node, 2));
    struct kdra_class *bad = fx_device_class("macro.example.com", "device.attributes.all(d, true)");
    assert_non_null(bad->unsupported);
    assert_non_null(strstr(bad->unsupported,
                           "deviceclass macro.example.com: spec.selectors[0].cel.expression: "
                           "column"));
    assert_false(kdra_class_matches(bad, &dh));
    kdra_class_free(bad);
    kdra_class_free(strmap_del(&classes, "h100.example.com"));
    strmap_fini(&classes);
    kdra_claim_free(c);
}

/* GPUs of node `name` of a new cluster of nodes a and b from inv. */
static int64_t gpus_in(const struct dra_inv *inv, const char *name)
{
    struct cluster *c = cluster_new();
    cluster_add_node(c, "a");
    cluster_add_node(c, "b");
    assert_true(dra_inv_apply(inv, c) >= 0);
    int64_t n = gpus_of(c, name);
    cluster_free(c);
    return n;
}

/* The accelerator's DRA identity follows the device: AMD's driver for amd.com/gpu (type amdgpu:
 * partitions and VFIO devices are not whole GPUs; its claims of class gpu.amd.com, NVIDIA's
 * refused), none for an unknown resource (claims refused, saying so), the config's driver, type
 * and CEL selector otherwise. */
static void other_vendors(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(device_configure("amd.com/gpu", NULL, &eb), 0);
    struct dra_inv *inv = dra_inv_new();
    put(inv, "a-1", "a", "gpu.amd.com", 1, 3, 4, "amdgpu");
    put(inv, "a-2", "a", "gpu.amd.com", 1, 3, 8, "amdgpu-partition");
    put(inv, "a-3", "a", "gpu.amd.com", 1, 3, 2, "vfio");
    put(inv, "b-1", "b", "gpu.nvidia.com", 1, 1, 8, "gpu");
    assert_int_equal(gpus_in(inv, "a"), 4);
    assert_int_equal(gpus_in(inv, "b"), 0);
    struct kclaim *c = claim("{\"deviceClassName\":\"gpu.amd.com\",\"count\":2}", "");
    assert_null(c->unsupported);
    assert_int_equal(c->gpus, 2);
    kdra_claim_free(c);
    c = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}", "");
    assert_null(c->unsupported); /* another class: its DeviceClass's selectors decide */
    assert_string_equal(c->reqs[0].alts[0].cls, "gpu.nvidia.com");
    kdra_claim_free(c);
    dra_inv_free(inv);

    /* an accelerator without a built-in driver has no DRA devices until configured */
    assert_int_equal(device_configure("example.com/npu", NULL, &eb), 0);
    assert_null(device_dra_class());
    inv = dra_inv_new();
    put(inv, "a-1", "a", "npu.example.com", 1, 1, 5, "full");
    put(inv, "a-2", "a", "npu.example.com", 1, 1, 3, "half");
    assert_int_equal(gpus_in(inv, "a"), 0);
    c = claim("{\"deviceClassName\":\"npu.example.com\",\"count\":1}", "");
    assert_non_null(strstr(c->unsupported, "has no DeviceClass"));
    kdra_claim_free(c);
    /* configured: any type, a selector excluding the halves; the slices read again */
    struct device_dra d = {.driver = "npu.example.com",
                           .select = "device.attributes[\"npu.example.com\"].type != 'half'"};
    assert_int_equal(device_set_dra(&d, &eb), 0);
    assert_string_equal(device_dra_class(), "npu.example.com"); /* the driver's name */
    put(inv, "a-1", "a", "npu.example.com", 1, 1, 5, "full");
    put(inv, "a-2", "a", "npu.example.com", 1, 1, 3, "half");
    assert_int_equal(gpus_in(inv, "a"), 5);
    c = claim("{\"deviceClassName\":\"npu.example.com\",\"count\":1}", "");
    assert_null(c->unsupported);
    kdra_claim_free(c);
    d = (struct device_dra){.driver = "other.example.com", /* outside the subset: refused */
                            .select = "device.driver in ['x']"};
    assert_int_equal(device_set_dra(&d, &eb), SCHED_EINVAL);
    assert_string_equal(device_dra_class(), "npu.example.com"); /* nothing changed */
    assert_non_null(strstr(eb.msg, "column"));
    assert_int_equal(gpus_in(inv, "a"), 5);
    dra_inv_free(inv);
    assert_int_equal(device_configure("nvidia.com/gpu", NULL, &eb), 0);
    assert_string_equal(device_dra_class(), "gpu.nvidia.com");
}

/* A shared claim's write lists every consumer; 0 or more than 256 consumers are refused; a claim
 * reserved only for some of the consumers is still free for them, not for others. */
static void shared_claim_body(void **state)
{
    (void)state;
    struct kclaim *c = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}", "");
    const char *dev[] = {"gpu-0", "gpu-1"}, *drv[] = {"gpu.nvidia.com", "gpu.nvidia.com"},
               *pool[] = {"n1", "n1"};
    static const char *uids[300];
    static struct kdra_ref who[300];
    char nb[300][16], ub[300][16];
    for (int i = 0; i < 300; i++) {
        snprintf(nb[i], sizeof(nb[i]), "p-%d", i);
        snprintf(ub[i], sizeof(ub[i]), "u-%d", i);
        who[i] = (struct kdra_ref){.name = nb[i], .uid = ub[i]};
        uids[i] = ub[i];
    }
    cJSON *b = kdra_claim_allocation(c, "n1", dev, drv, pool, 2, who, 3);
    assert_non_null(b);
    const cJSON *rf = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "status"), "reservedFor");
    assert_int_equal(cJSON_GetArraySize(rf), 3);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(rf, 2), "uid")),
                        "u-2");
    cJSON_Delete(b);
    assert_non_null(b = kdra_claim_allocation(c, "n1", dev, drv, pool, 2, who, 256));
    cJSON_Delete(b);
    assert_null(kdra_claim_allocation(c, "n1", dev, drv, pool, 2, who, 257));
    assert_null(kdra_claim_allocation(c, "n1", dev, drv, pool, 2, who, 0));
    /* KEP-5729: a PodGroup's entry (apiGroup scheduling.k8s.io, resource podgroups) */
    struct kdra_ref pg = {.name = "train", .uid = "pg-uid", .group = true};
    assert_non_null(b = kdra_claim_allocation(c, "n1", dev, drv, pool, 2, &pg, 1));
    rf = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "status"), "reservedFor");
    char *rtext = cJSON_PrintUnformatted(rf);
    assert_string_equal(rtext, "[{\"apiGroup\":\"scheduling.k8s.io\",\"resource\":\"podgroups\","
                               "\"name\":\"train\",\"uid\":\"pg-uid\"}]");
    cJSON_free(rtext);
    cJSON_Delete(b);
    assert_true(kdra_claim_free_for_all(c, uids, 3)); /* not allocated */
    c->allocated = true;
    free(c->reserved); /* the decoder's empty list */
    c->reserved = calloc(2, sizeof(*c->reserved));
    c->reserved[0] = strdup("u-1");
    c->n_reserved = 1;
    assert_true(kdra_claim_free_for_all(c, uids, 3));  /* reserved for one of them: ours */
    assert_false(kdra_claim_free_for_all(c, uids, 1)); /* u-1 is not among u-0 */
    kdra_claim_free(c);
}

/* A claim allocated by us (status written by kdra_claim_allocation) decodes with its node and
 * consumers; a pod not in its reservedFor adopts it with a strategic merge patch holding its one
 * entry (merged by uid) and the claim's uid as precondition, no allocation. */
static void joining_an_allocated_claim(void **state)
{
    (void)state;
    struct kclaim *c = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}", "");
    const char *dev[] = {"gpu-0", "gpu-1"}, *drv[] = {"gpu.nvidia.com", "gpu.nvidia.com"},
               *pool[] = {"n1", "n1"};
    struct kdra_ref two[] = {{.name = "p-0", .uid = "u-0"}, {.name = "p-1", .uid = "u-1"}};
    cJSON *b = kdra_claim_allocation(c, "n1", dev, drv, pool, 2, two, 2);
    assert_non_null(b);
    kdra_claim_free(c);
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\"},\"spec\":{"
                           "\"devices\":{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                           "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}}}");
    assert_non_null(o);
    cJSON_AddItemToObject(o, "status", cJSON_DetachItemFromObject(b, "status"));
    cJSON_Delete(b);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdra_claim_decode(o, NULL, &c, &eb), 0);
    cJSON_Delete(o);
    assert_true(c->allocated);
    assert_string_equal(c->alloc_node, "n1");
    assert_true(kdra_claim_reserved_for(c, "u-1"));
    assert_false(kdra_claim_reserved_for(c, "u-2"));
    assert_false(kdra_claim_reserved_for(c, NULL));
    cJSON *j = kdra_claim_adopt("cu", &(struct kdra_ref){.name = "p-2", .uid = "u-2"});
    char *text = cJSON_PrintUnformatted(j);
    assert_string_equal(text, "{\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"name\":"
                              "\"p-2\",\"uid\":\"u-2\"}]},\"metadata\":{\"uid\":\"cu\"}}");
    cJSON_free(text);
    cJSON_Delete(j);
    kdra_claim_free(c);
    struct kclaim *fresh = claim("{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}", "");
    assert_null(fresh->alloc_node);
    assert_false(fresh->allocated);
    kdra_claim_free(fresh);
}

/* What bindClaim and Unreserve need of a claim: its resourceVersion, whether it is being
 * deleted and carries resource.kubernetes.io/delete-protection; the finalizer patch (with the
 * resourceVersion as precondition), the Unreserve patch (deleting one reservedFor entry by its
 * merge key uid, the claim's uid as precondition) and the deallocation. */
static void protect_and_unreserve(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\",\"uid\":\"cu\","
                           "\"resourceVersion\":\"42\",\"finalizers\":[\"x/y\"]},\"spec\":{"
                           "\"devices\":{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                           "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}}}");
    struct kclaim *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdra_claim_decode(o, NULL, &c, &eb), 0);
    assert_string_equal(c->rv, "42");
    assert_false(c->deleting);
    assert_false(c->finalizer); /* another finalizer is not ours */
    cJSON *b = kdra_claim_protect(c);
    char *text = cJSON_PrintUnformatted(b);
    assert_string_equal(text, "{\"metadata\":{\"finalizers\":[\"resource.kubernetes.io/"
                              "delete-protection\"],\"resourceVersion\":\"42\"}}");
    cJSON_free(text);
    cJSON_Delete(b);
    kdra_claim_free(c);
    cJSON *meta = cJSON_GetObjectItem(o, "metadata");
    cJSON_AddStringToObject(meta, "deletionTimestamp", "2026-01-01T00:00:00Z");
    cJSON_AddItemToArray(cJSON_GetObjectItem(meta, "finalizers"),
                         cJSON_CreateString(KDRA_FINALIZER));
    cJSON_DeleteItemFromObject(meta, "resourceVersion");
    assert_int_equal(kdra_claim_decode(o, NULL, &c, &eb), 0);
    cJSON_Delete(o);
    assert_true(c->deleting);
    assert_true(c->finalizer);
    assert_null(kdra_claim_protect(c)); /* no resourceVersion: no precondition, no write */
    kdra_claim_free(c);
    b = kdra_claim_unreserve("cu", "pu");
    text = cJSON_PrintUnformatted(b);
    assert_string_equal(text, "{\"metadata\":{\"uid\":\"cu\"},\"status\":{\"reservedFor\":["
                              "{\"$patch\":\"delete\",\"uid\":\"pu\"}]}}");
    cJSON_free(text);
    cJSON_Delete(b);
    b = kdra_claim_deallocate("43");
    text = cJSON_PrintUnformatted(b);
    assert_string_equal(
        text, "{\"status\":{\"allocation\":null},\"metadata\":{\"resourceVersion\":\"43\"}}");
    cJSON_free(text);
    cJSON_Delete(b);
}

/* A slice of n_dev GPUs where device i has partition<size> = i / size for each size in sizes
 * (0-terminated), the way NVIDIA's driver publishes Fabric Manager partitions. */
static void put_parts(struct dra_inv *inv, const char *node, int n_dev, const int *sizes)
{
    char devs[6000] = "";
    for (int i = 0; i < n_dev; i++) {
        char attrs[400] = "\"type\":{\"string\":\"gpu\"}";
        for (const int *z = sizes; *z; z++)
            snprintf(attrs + strlen(attrs), sizeof(attrs) - strlen(attrs),
                     ",\"%spartition%d\":{\"int\":%d}", *z == 2 ? "gpu.nvidia.com/" : "", *z,
                     100 + i / *z);
        snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs),
                 "%s{\"name\":\"gpu-%d\",\"attributes\":{%s}}", i ? "," : "", i, attrs);
    }
    char buf[7000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s-s\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
             "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1,"
             "\"resourceSliceCount\":1},\"devices\":[%s]}}",
             node, node, node, devs);
    cJSON *o = cJSON_Parse(buf);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(k8s_slice_put(inv, o, &eb), 0);
    cJSON_Delete(o);
}

/* NVLink partitions as islands: the largest partition size every device has, below the node's
 * GPU count, groups the GPUs; a partition of the whole node (or none) leaves one island; an
 * operator's gpu-islands annotation wins. */
static void partitions_as_islands(void **state)
{
    (void)state;
    struct dra_inv *inv = dra_inv_new();
    static const int halves[] = {1, 2, 4, 0}, whole[] = {2, 4, 8, 0}, none[] = {0};
    put_parts(inv, "p", 8, halves);
    put_parts(inv, "w", 8, whole);
    put_parts(inv, "n", 8, none);
    put_parts(inv, "o", 8, halves);
    struct cluster *c = cluster_new();
    const char *names[] = {"n", "o", "p", "w"};
    for (int i = 0; i < 4; i++) {
        struct node *n = cluster_add_node(c, names[i]);
        n->ready = true;
        if (i == 1) {
            struct kv *kv = cluster_alloc(c, sizeof(*kv));
            *kv = (struct kv){ANNOT_GPU_ISLANDS, "0-1,2-7"};
            n->annotations = kv;
            n->n_annotations = 1;
        }
    }
    c->dra = inv; /* cluster_finalize applies it, as for `simulate --nodes` */
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    const struct node *n = &c->nodes[0], *o = &c->nodes[1], *p = &c->nodes[2], *w = &c->nodes[3];
    assert_int_equal(p->n_gpus, 8);
    assert_int_equal(p->n_islands, 2);
    assert_int_equal(p->islands[0], 0x0f);
    assert_int_equal(p->islands[1], 0xf0);
    assert_string_equal(node_annotation(p, ANNOT_GPU_ISLANDS), "0,1,2,3;4,5,6,7");
    assert_int_equal(w->n_islands, 1);
    assert_int_equal(w->islands[0], 0xff);
    assert_null(node_annotation(w, ANNOT_GPU_ISLANDS));
    assert_int_equal(n->n_islands, 1);
    assert_int_equal(o->n_islands, 2); /* the operator's annotation */
    assert_int_equal(o->islands[0], 0x03);
    cluster_free(c); /* frees the inventory too */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inventory_rules),
        cmocka_unit_test(malformed_slices),
        cmocka_unit_test(claims),
        cmocka_unit_test(first_available),
        cmocka_unit_test(other_vendors),
        cmocka_unit_test(device_classes),
        cmocka_unit_test(partitions_as_islands),
        cmocka_unit_test(shared_claim_body),
        cmocka_unit_test(joining_an_allocated_claim),
        cmocka_unit_test(protect_and_unreserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
