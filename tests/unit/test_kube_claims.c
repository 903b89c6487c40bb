/* tests/unit/test_kube_claims.c: what the daemon's claims add to a pending pod set
 * (sched/kube/claims.c kclaims_node_filter) through a whole kcache_build: the nodes whose GPU
 * devices suit a claim, and for firstAvailable requests the preference kube-scheduler's
 * DynamicResources score gives (8 less the index of the alternative a node allows, normalized
 * to 0..100) as preferred node affinity terms; the node of an allocation an earlier attempt left
 * preferred. */
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

#include <cjson/cJSON.h>

#include "config/config.h"
#include "sched/core/policy.h"
#include "sched/kube/cache.h"

static const char yaml[] = "apiVersion: gangsched.io/v1alpha1\n"
                           "kind: SchedulerConfig\n"
                           "queues:\n"
                           "  - name: q\n";

/* One watch event: 0 node, 1 pod, 4 ResourceSlice, 5 ResourceClaim. */
static void add(struct kcache *c, int kind, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    int rc = kind == 0   ? kcache_node_event(c, o, false)
             : kind == 1 ? kcache_pod_event(c, o, false)
             : kind == 4 ? kcache_slice_event(c, o, false)
                         : kcache_claim_event(c, o, false);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

/* A DRA-only node with 2 GPU devices of architecture `arch`. */
static void dra_node(struct kcache *c, const char *name, const char *arch)
{
    char buf[1200];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"8\","
             "\"memory\":\"64Gi\",\"pods\":\"100\"},\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\"}]}}",
             name);
    add(c, 0, buf);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
             "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1},\"devices\":["
             "{\"name\":\"gpu-0\",\"attributes\":{\"type\":{\"string\":\"gpu\"},"
             "\"architecture\":{\"string\":\"%s\"}}},{\"name\":\"gpu-1\",\"attributes\":{"
             "\"type\":{\"string\":\"gpu\"},\"architecture\":{\"string\":\"%s\"}}}]}}",
             name, name, name, arch, arch);
    add(c, 4, buf);
}

/* Claim default/name with one request "g" of firstAvailable alternatives for the architectures
 * first, then second (second NULL: `exactly` of first). */
static void claim(struct kcache *c, const char *name, const char *first, const char *second)
{
    char alt[2][300], buf[1200];
    const char *arch[2] = {first, second};
    for (int i = 0; i < 2; i++)
        snprintf(alt[i], sizeof(alt[i]),
                 "{%s%s%s\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1,\"selectors\":[{"
                 "\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].architecture == "
                 "'%s'\"}}]}",
                 second ? "\"name\":\"" : "", second ? arch[i] : "", second ? "\"," : "",
                 arch[i] ? arch[i] : "");
    if (second)
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"u-%s\"},"
                 "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"firstAvailable\":[%s,"
                 "%s]}]}}}",
                 name, name, alt[0], alt[1]);
    else
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"u-%s\"},"
                 "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":%s}]}}}",
                 name, name, alt[0]);
    add(c, 5, buf);
}

/* A pending pod of queue q whose one claim is default/<claim>. */
static void pod(struct kcache *c, const char *name, const char *claim_name)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"p-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
             "\"gangsched.io/queue\":\"q\"}},\"spec\":{\"schedulerName\":\"gangsched\","
             "\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"%s\"}],"
             "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
             name, name, claim_name);
    add(c, 1, buf);
}

/* The weight the pod set of gang `key` prefers `node` with (summed over its terms). */
static int32_t weight_of(const struct kcache_build *kb, const char *key, const char *node)
{
    for (uint32_t g = 0; g < kb->n_pending; g++) {
        if (strcmp(kb->gangs[g].key, key) != 0)
            continue;
        const struct podset *ps = &kb->gangs[g].gang.sets[0];
        int32_t w = 0;
        for (uint32_t t = 0; t < ps->n_pref; t++)
            for (uint32_t v = 0; v < ps->pref[t].term.reqs[0].n_values; v++)
                w += strcmp(ps->pref[t].term.reqs[0].values[v], node) == 0 ? ps->pref[t].weight : 0;
        return w;
    }
    fail_msg("gang %s not offered", key);
    return -1;
}

static uint32_t n_pref(const struct kcache_build *kb, const char *key)
{
    for (uint32_t g = 0; g < kb->n_pending; g++)
        if (strcmp(kb->gangs[g].key, key) == 0)
            return kb->gangs[g].gang.sets[0].n_pref;
    fail_msg("gang %s not offered", key);
    return 0;
}

static void first_available_preference(void **state)
{
    (void)state;
    struct config *cfg = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    struct kcache *c = kcache_new("gangsched");
    assert_non_null(c);
    dra_node(c, "amp", "Ampere");
    dra_node(c, "hop", "Hopper");
    claim(c, "hopper-first", "Hopper", "Ampere");
    claim(c, "ampere-first", "Ampere", "Hopper");
    claim(c, "only-hopper", "Hopper", NULL);
    claim(c, "volta-first", "Volta", "Hopper"); /* no node allows the first */
    pod(c, "a", "hopper-first");
    pod(c, "b", "ampere-first");
    pod(c, "x", "only-hopper");
    pod(c, "v", "volta-first");
    /* an earlier attempt's allocation on amp, reserved for pending pod e alone: written again
     * there (immutable once set), so amp is preferred */
    add(c, 5,
        "{\"metadata\":{\"namespace\":\"default\",\"name\":\"left\",\"uid\":\"u-left\"},"
        "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.nvidia.com\"}}]}},\"status\":{\"allocation\":{\"devices\":{"
        "\"results\":[{\"request\":\"g\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"amp\","
        "\"device\":\"gpu-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
        "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"amp\"]}]}]}},"
        "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"e\",\"uid\":\"p-e\"}]}}");
    pod(c, "e", "left");
    struct arena a;
    arena_init(&a, 1 << 16);
    struct kcache_build kb;
    assert_int_equal(kcache_build(c, cfg, sched_policy_default(), 1000, &a, &kb, &eb), 0);
    /* the first alternative's node scores 8, the second's 7: 100 and 87 once normalized */
    assert_int_equal(weight_of(&kb, "default/a", "hop"), 100);
    assert_int_equal(weight_of(&kb, "default/a", "amp"), 87);
    assert_int_equal(weight_of(&kb, "default/b", "amp"), 100);
    assert_int_equal(weight_of(&kb, "default/b", "hop"), 87);
    assert_int_equal(n_pref(&kb, "default/x"), 0); /* no alternatives: no preference */
    assert_int_equal(n_pref(&kb, "default/v"), 0); /* only hop allows it: every node alike */
    assert_int_equal(weight_of(&kb, "default/e", "amp"), 100);
    assert_int_equal(weight_of(&kb, "default/e", "hop"), 0);
    arena_fini(&a);
    kcache_free(c);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_available_preference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
