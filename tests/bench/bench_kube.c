/* tests/bench/bench_kube.c: rows 12, what the daemon's cycle input costs beside a backlog: one
 * kcache_build (sched/kube/cache.h) of a cache holding hgx nodes, 10 running pods of another
 * scheduler per node and waiting gangs of 8 pods that no node fits (9 GPUs each), as the kube
 * bench's idle case holds them (tests/bench/kube_bench.py), at two sizes ten times apart; and
 * one of a native PodGroup whose pods all name one ResourceClaim (KEP-5729: a claim thousands
 * of pods may share), at 2,600 and 26,000 pods; and one right after a ResourceSlice changed (every
 * MIG claim judged again: sched/kube/mig.h) of 500 and 5,000 pending pods each claiming a MIG
 * device of 1,000 nodes' 9,000.
 *
 * Must not touch: the network (objects go into the cache as their watch events would).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "sched/core/policy.h"
#include "sched/kube/cache.h"

#include "tests/bench/bench.h"

#define KB_GANG_PODS 8
#define KB_OTHER     10 /* running pods of another scheduler per node */

static const char kb_yaml[] = "apiVersion: gangsched.io/v1alpha1\n"
                              "kind: SchedulerConfig\n"
                              "queues:\n"
                              "  - name: bench\n";

/* One object as its watch event brings it: 0, or 1 (a message printed). */
static int kb_add(struct kcache *c, int kind, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    int rc = !o          ? 1
             : kind == 0 ? kcache_node_event(c, o, false)
             : kind == 1 ? kcache_pod_event(c, o, false)
             : kind == 2 ? kcache_pg_event(c, o, KPG_XK8S, false)
             : kind == 3 ? kcache_pg_event(c, o, KPG_NATIVE_V1BETA1, false)
             : kind == 4 ? kcache_slice_event(c, o, false)
             : kind == 5 ? kcache_claim_event(c, o, false)
                         : kcache_class_event(c, o, false);
    cJSON_Delete(o);
    if (rc)
        fprintf(stderr, "bench: kube objects: cannot take %.80s\n", json);
    return rc != 0;
}

/* n_nodes hgx nodes (racks of 8) with their other pods, and n_gangs waiting gangs. */
static int kb_fill(struct kcache *c, uint32_t n_nodes, uint32_t n_gangs)
{
    char buf[1200];
    int bad = 0;
    for (uint32_t i = 0; i < n_nodes && !bad; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"hgx-%05u\",\"labels\":{"
                 "\"kubernetes.io/hostname\":\"hgx-%05u\","
                 "\"network.topology.gangsched.io/rack\":\"rack-%04u\"}},\"status\":{"
                 "\"allocatable\":{\"cpu\":\"192\",\"memory\":\"2Ti\",\"pods\":\"110\","
                 "\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\","
                 "\"status\":\"True\"}]}}",
                 i, i, i / 8);
        bad = kb_add(c, 0, buf);
        for (uint32_t k = 0; k < KB_OTHER && !bad; k++) {
            snprintf(buf, sizeof(buf),
                     "{\"metadata\":{\"namespace\":\"default\",\"name\":\"other-%07u\","
                     "\"labels\":{\"app\":\"other\"}},\"spec\":{\"schedulerName\":"
                     "\"default-scheduler\",\"nodeName\":\"hgx-%05u\",\"containers\":[{"
                     "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"4Gi\"%s}}}]},"
                     "\"status\":{\"phase\":\"Running\"}}",
                     i * KB_OTHER + k, i, k < 2 ? ",\"nvidia.com/gpu\":\"1\"" : "");
            bad = kb_add(c, 1, buf);
        }
    }
    for (uint32_t g = 0; g < n_gangs && !bad; g++) {
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                 "\"metadata\":{\"namespace\":\"default\",\"name\":\"g%06u\",\"labels\":{"
                 "\"gangsched.io/queue\":\"bench\"}},\"spec\":{\"minMember\":%d}}",
                 g, KB_GANG_PODS);
        bad = kb_add(c, 2, buf);
        for (int k = 0; k < KB_GANG_PODS && !bad; k++) {
            snprintf(buf, sizeof(buf),
                     "{\"metadata\":{\"namespace\":\"default\",\"name\":\"g%06u-%d\","
                     "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
                     "\"scheduling.x-k8s.io/pod-group\":\"g%06u\"}},\"spec\":{"
                     "\"schedulerName\":\"gangsched\",\"containers\":[{\"resources\":{"
                     "\"limits\":{\"nvidia.com/gpu\":\"9\"}}}]}}",
                     g, k, g);
            bad = kb_add(c, 1, buf);
        }
    }
    return bad;
}

/* 4 DRA-only nodes of 8 GPU devices, an unallocated claim default/wide of 2 of them, and a
 * native PodGroup of n_pods pods (minCount n_pods) that all name it as the PodGroup does: one
 * gang on one claim, its consumers the PodGroup (one reservedFor entry). */
static int kb_fill_claim(struct kcache *c, uint32_t n_pods)
{
    char buf[1600];
    int bad = kb_add(c, 6, "{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{}}");
    for (uint32_t i = 0; i < 4 && !bad; i++) {
        int at = snprintf(buf, sizeof(buf),
                          "{\"metadata\":{\"name\":\"d%u-gpu\"},\"spec\":{\"driver\":"
                          "\"gpu.nvidia.com\",\"nodeName\":\"d%u\",\"pool\":{\"name\":\"d%u\","
                          "\"generation\":1,\"resourceSliceCount\":1},\"devices\":[",
                          i, i, i);
        for (int g = 0; g < 8; g++)
            at += snprintf(buf + at, sizeof(buf) - (size_t)at, "%s{\"name\":\"gpu-%d\"}",
                           g ? "," : "", g);
        snprintf(buf + at, sizeof(buf) - (size_t)at, "]}}");
        bad = kb_add(c, 4, buf);
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"d%u\"},\"status\":{"
                 "\"allocatable\":{\"cpu\":\"100000\",\"memory\":\"100Ti\",\"pods\":"
                 "\"100000\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 i);
        bad = bad || kb_add(c, 0, buf);
    }
    bad = bad || kb_add(c, 5,
                        "{\"metadata\":{\"namespace\":\"default\",\"name\":\"wide\",\"uid\":"
                        "\"c-wide\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\","
                        "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}}}");
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"namespace\":\"default\",\"name\":\"pg\",\"uid\":\"pg-u\","
             "\"labels\":{\"gangsched.io/queue\":\"bench\"}},\"spec\":{\"schedulingPolicy\":"
             "{\"gang\":{\"minCount\":%u}},\"resourceClaims\":[{\"name\":\"gpus\","
             "\"resourceClaimName\":\"wide\"}]}}",
             n_pods);
    bad = bad || kb_add(c, 3, buf);
    for (uint32_t k = 0; k < n_pods && !bad; k++) {
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"default\",\"name\":\"w%06u\",\"uid\":"
                 "\"u%06u\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{"
                 "\"schedulerName\":\"gangsched\",\"schedulingGroup\":{\"podGroupName\":"
                 "\"pg\"},\"resourceClaims\":[{\"name\":\"gpus\",\"resourceClaimName\":"
                 "\"wide\"}],\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
                 k, k);
        bad = kb_add(c, 1, buf);
    }
    return bad;
}

#define KB_MIG_NODES 1000 /* nodes of the MIG case, each 7 x 1g.10gb and 2 x 3g.40gb devices */

/* Node i's ResourceSlice of the MIG case into buf. */
static void kb_mig_slice(char *buf, size_t n, uint32_t i)
{
    int at = snprintf(buf, n,
                      "{\"metadata\":{\"name\":\"m%04u-gpu\"},\"spec\":{\"driver\":"
                      "\"gpu.nvidia.com\",\"nodeName\":\"m%04u\",\"pool\":{\"name\":\"m%04u\","
                      "\"generation\":1,\"resourceSliceCount\":1},\"devices\":[",
                      i, i, i);
    for (int g = 0; g < 9; g++)
        at += snprintf(buf + at, n - (size_t)at,
                       "%s{\"name\":\"gpu-%d-mig-%d\",\"attributes\":{\"type\":{\"string\":"
                       "\"mig\"},\"profile\":{\"string\":\"%s\"}}}",
                       g ? "," : "", g < 7 ? 0 : 1, g, g < 7 ? "1g.10gb" : "3g.40gb");
    snprintf(buf + at, n - (size_t)at, "]}}");
}

/* KB_MIG_NODES nodes with MIG devices, NVIDIA's class mig.nvidia.com, and n_pods pending pods,
 * each a gang of one whose own claim (one template's shape) asks one 1g.10gb device. */
static int kb_fill_mig(struct kcache *c, uint32_t n_pods)
{
    char buf[2400];
    int bad = kb_add(c, 6,
                     "{\"metadata\":{\"name\":\"mig.nvidia.com\"},\"spec\":{\"selectors\":[{"
                     "\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com' && "
                     "device.attributes['gpu.nvidia.com'].type == 'mig'\"}}]}}");
    for (uint32_t i = 0; i < KB_MIG_NODES && !bad; i++) {
        kb_mig_slice(buf, sizeof(buf), i);
        bad = kb_add(c, 4, buf);
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"Node\",\"metadata\":{\"name\":\"m%04u\"},\"status\":{"
                 "\"allocatable\":{\"cpu\":\"192\",\"memory\":\"2Ti\",\"pods\":\"110\"},"
                 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 i);
        bad = bad || kb_add(c, 0, buf);
    }
    for (uint32_t k = 0; k < n_pods && !bad; k++) {
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"default\",\"name\":\"c%06u\",\"uid\":"
                 "\"cu%06u\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"m\","
                 "\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\",\"selectors\":[{\"cel\":"
                 "{\"expression\":\"device.attributes['gpu.nvidia.com'].profile == "
                 "'1g.10gb'\"}}]}}]}}}",
                 k, k);
        bad = kb_add(c, 5, buf);
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"default\",\"name\":\"p%06u\",\"uid\":"
                 "\"pu%06u\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
                 "\"gangsched.io/queue\":\"bench\"}},\"spec\":{\"schedulerName\":"
                 "\"gangsched\",\"resourceClaims\":[{\"name\":\"m\",\"resourceClaimName\":"
                 "\"c%06u\"}],\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
                 k, k, k);
        bad = bad || kb_add(c, 1, buf);
    }
    return bad;
}

enum kb_case { KB_BACKLOG, KB_CLAIM, KB_MIG };

/* The mean CPU ms of one kcache_build over at least 3 builds and 1 s (after one untimed build:
 * the first rebuilds the cluster) of the backlog case (n_nodes, n gangs), the claim case (n pods
 * on one claim) or the MIG case (n pods; each build follows a change of one ResourceSlice, after
 * which every MIG claim is judged again); 0 on an error (printed). */
static double kb_time(enum kb_case kind, uint32_t n_nodes, uint32_t n, uint32_t *n_offered)
{
    struct config *cfg = NULL;
    struct sched_errbuf eb = {{0}};
    struct kcache *c = kcache_new("gangsched");
    struct arena a;
    arena_init(&a, 1 << 20);
    double ms = 0;
    if (!c || config_load_buffer("bench.yaml", kb_yaml, strlen(kb_yaml), &cfg, &eb) != 0 ||
        (kind == KB_BACKLOG ? kb_fill(c, n_nodes, n)
         : kind == KB_CLAIM ? kb_fill_claim(c, n)
                            : kb_fill_mig(c, n)) != 0)
        goto out;
    char slice[2400];
    kb_mig_slice(slice, sizeof(slice), 0);
    struct kcache_build kb;
    int rc = kcache_build(c, cfg, sched_policy_default(), NOW_MS, &a, &kb, &eb);
    uint32_t builds = 0;
    double t0 = cpu_seconds(), t = t0;
    while (rc == 0 && (builds < 3 || t - t0 < 1.0)) {
        arena_reset(&a);
        if (kind == KB_MIG && kb_add(c, 4, slice) != 0)
            break;
        rc = kcache_build(c, cfg, sched_policy_default(), NOW_MS, &a, &kb, &eb);
        builds++;
        t = cpu_seconds();
    }
    if (rc == 0)
        ms = (t - t0) * 1e3 / builds, *n_offered = kb.n_pending;
out:
    if (ms == 0)
        fprintf(stderr, "bench: kube build: %s\n",
                !c          ? "out of memory"
                : eb.msg[0] ? eb.msg
                            : "an object was refused");
    arena_fini(&a);
    kcache_free(c);
    config_free(cfg);
    return ms;
}

/* Two rows: the build of one case at size n and at 10 n (the backlog case on n_nodes nodes),
 * the second's ratio the cost per `unit` against the first's; 1 on an error, or when the builds
 * did not offer `offered` and `offered10` gangs. */
static int kb_rows(struct table *t, enum kb_case kind, uint32_t n_nodes, uint32_t n,
                   const char *row, const char *row10, const char *unit, uint32_t offered,
                   uint32_t offered10)
{
    uint32_t n1 = 0, n10 = 0;
    double base = kb_time(kind, n_nodes, n, &n1);
    double big = base > 0 ? kb_time(kind, n_nodes, 10 * n, &n10) : 0;
    if (base <= 0 || big <= 0)
        return 1;
    struct row *r = row_add(t, row);
    if (!r)
        return 1;
    snprintf(r->value, sizeof(r->value), "%.2f ms", base);
    snprintf(r->ratio, sizeof(r->ratio), "%u gang%s offered", n1, n1 == 1 ? "" : "s");
    if (!(r = row_add(t, row10)))
        return 1;
    snprintf(r->value, sizeof(r->value), "%.2f ms", big);
    snprintf(r->ratio, sizeof(r->ratio), "%.2fx per %s at %u", ratio(big / 10, base), unit, n);
    if (n1 == offered && n10 == offered10)
        return 0;
    fprintf(stderr, "bench: %s: %u and %u gangs offered, not %u and %u\n", row, n1, n10, offered,
            offered10);
    return 1;
}

int bench_kube_build(struct table *t)
{
    return kb_rows(t, KB_BACKLOG, 5000, 1250, "12 kube build, 1250 waiting gangs x 8, 5000 nodes",
                   "  12500 waiting gangs x 8, 5000 nodes", "gang", 1250, 12500);
}

int bench_kube_claim(struct table *t)
{
    return kb_rows(t, KB_CLAIM, 0, 2600, "12 kube build, 2600 pods of a PodGroup on one claim",
                   "  26000 pods on one claim", "pod", 1, 1);
}

int bench_kube_mig(struct table *t)
{
    return kb_rows(t, KB_MIG, 0, 500, "12 kube build after a slice change, 500 MIG claims",
                   "  5000 MIG claims (9000 MIG devices)", "pod", 500, 5000);
}
