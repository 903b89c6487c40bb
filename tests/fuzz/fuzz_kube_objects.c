/* tests/fuzz/fuzz_kube_objects.c: libFuzzer harness for the decoders of API objects
 * (sched/kube/objects.c, sched/k8s/nodes.c nodes_decode) and the cache built from them
 * (sched/kube/cache.c, cache_build.c).
 *
 * Owns: parsing each input as JSON (as a watch event's object or a list item would be), feeding
 * it to the cache as a node, a pod, every kind of PodGroup (scheduler-plugins, Volcano,
 * scheduling.k8s.io PodGroup and Workload), a ResourceSlice, a ResourceClaim and a Namespace,
 * and, for a pod, its twin (the same object under another name and uid: two members of one
 * gang when it names a group, whose pod sets the build compares), building a cycle's input and
 * running the core on it, then deleting everything again. Checks
 * the decoders' promises: a refused object leaves nothing behind, an accepted one has its key
 * and sane numbers, the cache never offers a gang below its minMember, and a group's member
 * counts come back to none with its members. Violations abort, so
 * the fuzzer reports them.
 * An input that is a watch event ({"type":..., "object":...}) is unwrapped first.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/kube/cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static const char cfg_yaml[] = "apiVersion: gangsched.io/v1alpha1\n"
                               "kind: SchedulerConfig\n"
                               "queues:\n"
                               "  - name: default\n";

/* obj under metadata.name + "-twin" and uid "twin", or NULL when it has no string name. */
static cJSON *twin_of(const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
    if (!cJSON_IsString(name) || strlen(name->valuestring) > 200)
        return NULL;
    cJSON *twin = cJSON_Duplicate(obj, 1);
    check(twin != NULL);
    cJSON *m = cJSON_GetObjectItemCaseSensitive(twin, "metadata");
    char buf[256];
    snprintf(buf, sizeof(buf), "%s-twin", name->valuestring);
    cJSON_DeleteItemFromObjectCaseSensitive(m, "name");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "uid");
    check(cJSON_AddStringToObject(m, "name", buf) && cJSON_AddStringToObject(m, "uid", "twin"));
    return twin;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root)
        return 0;
    const cJSON *obj = root;
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(root, "object");
    if (cJSON_IsObject(inner))
        obj = inner;

    struct kpod *p = NULL;
    struct sched_errbuf eb;
    char group[600] = ""; /* a pod's group key, whose member counts are checked below */
    if (kobj_pod_decode(obj, "gangsched", &p, &eb) == 0) {
        check(p->key && p->ns && p->name && strchr(p->key, '/'));
        if (p->group && strlen(p->group) < sizeof(group))
            strcpy(group, p->group);
        check(p->req.v[RES_PODS] >= 1);
        for (int r = 0; r < RES_MAX; r++)
            check(p->req.v[r] >= 0);
        kobj_pod_free(p);
    } else {
        check(eb.msg[0] != 0);
    }
    struct kpg *g = NULL;
    if (kobj_pg_decode(obj, KPG_VOLCANO, &g, &eb) == 0) {
        check(g->min_member >= 1 && g->key && g->raw);
        kobj_pg_free(g);
    }

    static struct config *cfg;
    if (!cfg && config_load_buffer("fuzz.yaml", cfg_yaml, sizeof(cfg_yaml) - 1, &cfg, &eb) != 0)
        abort();
    struct kcache *c = kcache_new("gangsched");
    check(c != NULL);
    check(kcache_node_event(c, obj, false) == 0);
    check(kcache_pod_event(c, obj, false) == 0);
    cJSON *twin = twin_of(obj);
    check(!twin || kcache_pod_event(c, twin, false) == 0);
    check(kcache_pg_event(c, obj, KPG_XK8S, false) == 0);
    check(kcache_pg_event(c, obj, KPG_VOLCANO, false) == 0);
    /* Kubernetes' own groups and DRA objects (issue 17) */
    check(kcache_pg_event(c, obj, KPG_NATIVE_V1BETA1, false) == 0);
    check(kcache_pg_event(c, obj, KPG_WORKLOAD_V1ALPHA1, false) == 0);
    check(kcache_slice_event(c, obj, false) == 0);
    check(kcache_claim_event(c, obj, false) == 0);
    check(kcache_ns_event(c, obj, false) == 0); /* its labels, read by namespaceSelectors */
    struct arena a;
    arena_init(&a, 1 << 16);
    struct kcache_build kb;
    int rc = kcache_build(c, cfg, sched_policy_default(), 0, &a, &kb, &eb);
    check(rc == 0 || rc == SCHED_EINVAL);
    if (rc == 0) {
        for (uint32_t i = 0; i < kb.n_pending; i++) {
            const struct kgang *kg = &kb.gangs[i];
            /* a native gang's extra pods come one at a time once it is whole */
            check(kg->gang.n_pods >= (kg->pg ? kg->pg->min_member : 1) ||
                  (kg->pg && kg->gang.n_pods == 1));
        }
        struct sched_result res;
        check(sched_cycle(&kb.snap, &a, &res) == 0);
    }
    check(kcache_pod_event(c, obj, true) == 0);
    check(!twin || kcache_pod_event(c, twin, true) == 0);
    cJSON_Delete(twin);
    /* the member counts (cache_counts.c) come back to none once the members are gone */
    const struct kcounts *k = group[0] ? kcache_counts(c, group) : NULL;
    check(!k || (k->pods == 0 && k->n[0] == 0 && k->n[1] == 0 && k->n[2] == 0));
    check(kcache_node_event(c, obj, true) == 0);
    check(kcache_pg_event(c, obj, KPG_XK8S, true) == 0);
    check(kcache_pg_event(c, obj, KPG_WORKLOAD_V1ALPHA1, true) == 0);
    check(kcache_slice_event(c, obj, true) == 0);
    check(kcache_claim_event(c, obj, true) == 0);
    check(kcache_ns_event(c, obj, true) == 0);
    check(kcache_n_pods(c) == 0 && kcache_n_nodes(c) == 0);
    arena_fini(&a);
    kcache_free(c);
    cJSON_Delete(root);
    return 0;
}
