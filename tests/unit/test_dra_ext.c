/* tests/unit/test_dra_ext.c: KEP-5004 (sched/kube/dra_ext.c): which DeviceClass maps the
 * accelerator's extended resource, what a pod's containers ask of it, and the special claim's
 * requests and the pod's mappings, as kube-scheduler's extendeddynamicresources.go builds them
 * (createRequestsAndMappings: one request per long-lived container, init containers reuse the
 * later long-lived ones' first, the largest of what they still lack kept). */
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

#include "sched/core/arena.h"
#include "sched/core/device.h"
#include "sched/kube/dra.h"

static struct kdra_class *klass(const char *name, const char *ext, const char *created)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\"%s%s%s},\"spec\":{%s%s%s}}", name,
             created ? ",\"creationTimestamp\":\"" : "", created ? created : "",
             created ? "\"" : "", ext ? "\"extendedResourceName\":\"" : "", ext ? ext : "",
             ext ? "\"" : "");
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    struct kdra_class *k = NULL;
    struct sched_errbuf eb;
    assert_int_equal(kdra_class_decode(o, &k, &eb), 0);
    cJSON_Delete(o);
    return k;
}

/* The newest class naming the resource, then the first name; else the implicit name. */
static void resolver(void **state)
{
    (void)state;
    struct strmap m;
    strmap_init(&m);
    struct kdra_class *v[] = {
        klass("old.example.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z"),
        klass("new-b.example.com", "nvidia.com/gpu", "2026-03-01T00:00:00Z"),
        klass("new-a.example.com", "nvidia.com/gpu", "2026-03-01T00:00:00Z"),
        klass("gpu.nvidia.com", NULL, "2026-04-01T00:00:00Z"),
    };
    for (int i = 0; i < 4; i++)
        assert_int_equal(strmap_put(&m, v[i]->name, v[i], NULL), 0);
    assert_string_equal(v[1]->ext_name, "nvidia.com/gpu");
    assert_string_equal(v[1]->created, "2026-03-01T00:00:00Z");
    assert_string_equal(kdra_ext_class(&m, "nvidia.com/gpu")->name, "new-a.example.com");
    assert_string_equal(
        kdra_ext_class(&m, "deviceclass.resource.kubernetes.io/gpu.nvidia.com")->name,
        "gpu.nvidia.com");
    assert_null(kdra_ext_class(&m, "amd.com/gpu"));
    assert_null(kdra_ext_class(&m, "deviceclass.resource.kubernetes.io/none"));
    for (int i = 0; i < 4; i++)
        kdra_class_free(v[i]);
    strmap_fini(&m);
}

/* Init containers, sidecars and containers, limits standing for requests, the resource's index
 * among the sorted names of the container's requests. */
static void pod_containers(void **state)
{
    (void)state;
    assert_int_equal(device_configure("nvidia.com/gpu", NULL, NULL), 0);
    cJSON *spec = cJSON_Parse(
        "{\"initContainers\":["
        "{\"name\":\"fetch\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}},"
        "{\"name\":\"log\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":"
        "{\"nvidia.com/gpu\":1}}},"
        "{\"name\":\"plain\"}],"
        "\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":\"4\","
        "\"memory\":\"1Gi\"},\"limits\":{\"nvidia.com/gpu\":\"4\",\"a.io/x\":\"1\"}}}]}");
    assert_non_null(spec);
    struct arena a;
    arena_init(&a, 256);
    const struct kobj_ext_ctr *v;
    uint32_t n;
    assert_int_equal(kdra_pod_ext(spec, &a, &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "fetch");
    assert_true(v[0].idx == 0 && v[0].ridx == 0 && v[0].count == 2 && v[0].short_lived);
    assert_string_equal(v[1].name, "log");
    assert_true(v[1].idx == 1 && v[1].count == 1 && !v[1].short_lived);
    assert_string_equal(v[2].name, "main"); /* a.io/x, cpu, memory, nvidia.com/gpu */
    assert_true(v[2].idx == 3 && v[2].ridx == 3 && v[2].count == 4 && !v[2].short_lived);
    assert_int_equal(kdra_ext_devices(v, n), 5); /* fetch's 2 fit in log's and main's */
    cJSON_Delete(spec);
    spec = cJSON_Parse("{\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":"
                       "{\"nvidia.com/gpu\":\"half\"}}}]}");
    assert_int_equal(kdra_pod_ext(spec, &a, &v, &n), 0);
    assert_int_equal(n, 0); /* unreadable: no mapping */
    cJSON_Delete(spec);
    arena_fini(&a);
}

static const char *str_at(const cJSON *list, int i, const char *field)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(list, i), field));
}

/* Two init containers: the first fits in main's request, the second lacks 2 and asks them. */
static void requests_and_mappings(void **state)
{
    (void)state;
    const struct kobj_ext_ctr ctr[] = {
        {.name = "a", .idx = 0, .ridx = 0, .count = 2, .short_lived = true},
        {.name = "b", .idx = 1, .ridx = 1, .count = 6, .short_lived = true},
        {.name = "main", .idx = 2, .ridx = 0, .count = 4},
    };
    cJSON *maps = NULL;
    uint32_t devices = 0;
    cJSON *reqs = kdra_ext_requests(ctr, 3, "nvidia.com/gpu", "gpu.nvidia.com", &maps, &devices);
    assert_non_null(reqs);
    assert_int_equal(devices, 6);
    assert_int_equal(kdra_ext_devices(ctr, 3), 6);
    assert_int_equal(cJSON_GetArraySize(reqs), 2); /* sorted by name */
    assert_string_equal(str_at(reqs, 0, "name"), "container-1-request-1");
    assert_string_equal(str_at(reqs, 1, "name"), "container-2-request-0");
    cJSON *x = cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "exactly");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(x, "deviceClassName")),
                        "gpu.nvidia.com");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(x, "allocationMode")),
                        "ExactCount");
    assert_int_equal(cJSON_GetObjectItem(x, "count")->valueint, 2);
    const char *want[][2] = {{"main", "container-2-request-0"},
                             {"a", "container-2-request-0"},
                             {"b", "container-2-request-0"},
                             {"b", "container-1-request-1"}};
    assert_int_equal(cJSON_GetArraySize(maps), 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(str_at(maps, i, "containerName"), want[i][0]);
        assert_string_equal(str_at(maps, i, "requestName"), want[i][1]);
        assert_string_equal(str_at(maps, i, "resourceName"), "nvidia.com/gpu");
    }
    cJSON_Delete(reqs);
    cJSON_Delete(maps);
}

/* Two init containers both lacking devices: one request, the largest, which both map to. */
static void init_containers_share_the_largest(void **state)
{
    (void)state;
    const struct kobj_ext_ctr ctr[] = {
        {.name = "a", .idx = 0, .ridx = 0, .count = 8, .short_lived = true},
        {.name = "b", .idx = 1, .ridx = 0, .count = 6, .short_lived = true},
        {.name = "main", .idx = 2, .ridx = 0, .count = 4},
    };
    cJSON *maps = NULL;
    uint32_t devices = 0;
    cJSON *reqs = kdra_ext_requests(ctr, 3, "nvidia.com/gpu", "c", &maps, &devices);
    assert_int_equal(devices, 8);
    assert_int_equal(kdra_ext_devices(ctr, 3), 8);
    assert_int_equal(cJSON_GetArraySize(reqs), 2);
    assert_string_equal(str_at(reqs, 0, "name"), "container-0-request-0");
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "exactly"), "count")
            ->valueint,
        4);
    assert_int_equal(cJSON_GetArraySize(maps), 5);
    assert_string_equal(str_at(maps, 4, "containerName"), "b"); /* b's own, rewritten */
    assert_string_equal(str_at(maps, 4, "requestName"), "container-0-request-0");
    cJSON_Delete(reqs);
    cJSON_Delete(maps);
}

/* The claim's body, the pod's status patch, the finalizer's removal; a claim read back. */
static void bodies(void **state)
{
    (void)state;
    cJSON *reqs = cJSON_Parse("[{\"name\":\"container-0-request-0\"}]");
    cJSON *c = kdra_ext_claim("ml", "w-0", "u-1", reqs);
    char *s = cJSON_PrintUnformatted(c);
    assert_string_equal(
        s, "{\"metadata\":{\"annotations\":{\"resource.kubernetes.io/extended-resource-claim\":"
           "\"true\"},\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":"
           "\"w-0\",\"uid\":\"u-1\",\"controller\":true}],\"finalizers\":[\"resource.kubernetes"
           ".io/delete-protection\"],\"generateName\":\"w-0-extended-resources-\",\"namespace\":"
           "\"ml\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"container-0-request-0\"}]}},"
           "\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\"}");
    free(s);
    /* read back as the server answers it: the owner known */
    cJSON_AddStringToObject(cJSON_GetObjectItem(c, "metadata"), "name", "w-0-extended-resources-x");
    struct kclaim *k = NULL;
    struct sched_errbuf eb;
    assert_int_equal(kdra_claim_decode(c, NULL, &k, &eb), 0);
    assert_string_equal(k->ext_owner, "u-1");
    assert_string_equal(k->ext_pod, "ml/w-0");
    kdra_claim_free(k);
    cJSON_ReplaceItemInObject(
        cJSON_GetObjectItem(cJSON_GetObjectItem(c, "metadata"), "annotations"),
        "resource.kubernetes.io/extended-resource-claim", cJSON_CreateString("false"));
    assert_int_equal(kdra_claim_decode(c, NULL, &k, &eb), 0);
    assert_null(k->ext_owner); /* not the annotation's "true": an ordinary claim */
    kdra_claim_free(k);
    cJSON_Delete(c);
    cJSON *st = kdra_ext_pod_status("w-0-extended-resources-x", cJSON_CreateArray());
    s = cJSON_PrintUnformatted(st);
    assert_string_equal(s, "{\"status\":{\"extendedResourceClaimStatus\":{\"resourceClaimName\":"
                           "\"w-0-extended-resources-x\",\"requestMappings\":[]}}}");
    free(s);
    cJSON_Delete(st);
    cJSON *u = kdra_claim_unprotect();
    s = cJSON_PrintUnformatted(u);
    assert_string_equal(s, "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":"
                           "[\"resource.kubernetes.io/delete-protection\"]}}");
    free(s);
    cJSON_Delete(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resolver),
        cmocka_unit_test(pod_containers),
        cmocka_unit_test(requests_and_mappings),
        cmocka_unit_test(init_containers_share_the_largest),
        cmocka_unit_test(bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
