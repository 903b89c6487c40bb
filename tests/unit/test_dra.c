/* tests/unit/test_dra.c: the DRA GPU inventory (sched/core/dra.c) fed by ResourceSlice JSON
 * (sched/kube/dra.c): newest pool generation only, incomplete pools not counted, MIG devices and
 * other drivers not whole GPUs, nodes with nvidia.com/gpu keep it, device names by index,
 * malformed slices refused naming the field. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/core/model.h"
#include "sched/kube/dra.h"

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
    assert_int_equal(kdra_slice_put(inv, o, NULL, &eb), 0);
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
    assert_string_equal(dra_inv_device(inv, "b", 4, &drv, &pool), "gpu-0"); /* b-2's first */
    assert_string_equal(drv, "gpu.nvidia.com");
    assert_string_equal(pool, "b");
    assert_null(dra_inv_device(inv, "b", 6, NULL, NULL));
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
        assert_int_equal(kdra_slice_put(inv, o, NULL, &eb), SCHED_EINVAL);
        assert_non_null(strstr(eb.msg, want[i]));
        cJSON_Delete(o);
    }
    assert_int_equal(dra_inv_n_slices(inv), 0);
    dra_inv_free(inv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inventory_rules),
        cmocka_unit_test(malformed_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
