/* tests/unit/test_cluster.c: the cluster container and cluster_finalize() (sched/core/cluster.c).
 *
 * Owns: tests of the pool, node array, label lookup, NVLink island parsing, GPU sharing
 * detection and the topology domains with their CSR, on small hand-built clusters.
 * Must not touch: the resource table beyond the well-known ids, files on disk (but one temporary
 * file that catches stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* cmocka.h needs these first, in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include "sched/core/model.h"

/* Adds a node with `gpus` GPUs and labels given as "key=value" strings (NULL-terminated). */
static uint32_t add(struct cluster *c, const char *name, int gpus, const char *const *labels)
{
    uint32_t n_labels = 0;
    while (labels && labels[n_labels])
        n_labels++;
    struct kv *kv = cluster_alloc(c, (n_labels ? n_labels : 1) * sizeof(*kv));
    assert_non_null(kv);
    for (uint32_t i = 0; i < n_labels; i++) {
        const char *eq = strchr(labels[i], '=');
        assert_non_null(eq);
        char key[128];
        memcpy(key, labels[i], (size_t)(eq - labels[i]));
        key[eq - labels[i]] = '\0';
        kv[i].key = cluster_strdup(c, key);
        kv[i].value = cluster_strdup(c, eq + 1);
    }
    struct node *n = cluster_add_node(c, name);
    assert_non_null(n);
    n->labels = kv;
    n->n_labels = n_labels;
    n->alloc.v[RES_GPU] = gpus;
    n->alloc.v[RES_CPU] = 64000;
    n->ready = true;
    return c->n_nodes - 1;
}

static void annotate(struct cluster *c, uint32_t i, const char *key, const char *value)
{
    struct kv *kv = cluster_alloc(c, sizeof(*kv));
    assert_non_null(kv);
    kv->key = cluster_strdup(c, key);
    kv->value = cluster_strdup(c, value);
    c->nodes[i].annotations = kv;
    c->nodes[i].n_annotations = 1;
}

static const struct topo_level *level(const struct cluster *c, const char *name)
{
    for (uint32_t l = 0; l < c->topo.n_levels; l++)
        if (strcmp(c->topo.levels[l].name, name) == 0)
            return &c->topo.levels[l];
    fail_msg("no level %s", name);
    return NULL;
}

/* Checks the CSR invariants of every level against node->dom. */
static void check_csr(const struct cluster *c)
{
    for (uint32_t l = 0; l < c->topo.n_levels; l++) {
        const struct topo_level *lv = &c->topo.levels[l];
        assert_int_equal(lv->domain_first[0], 0);
        assert_int_equal(lv->domain_first[lv->n_domains], c->n_nodes);
        for (uint32_t d = 0; d < lv->n_domains; d++) {
            assert_true(lv->domain_first[d] < lv->domain_first[d + 1]); /* never empty */
            for (uint32_t k = lv->domain_first[d]; k < lv->domain_first[d + 1]; k++) {
                uint32_t i = lv->node_index[k];
                assert_true(i < c->n_nodes);
                assert_int_equal(c->nodes[i].dom[l], d);
                if (k > lv->domain_first[d])
                    assert_true(lv->node_index[k - 1] < i);
            }
        }
    }
}

static void test_pool_and_nodes(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    assert_non_null(c);
    const char *s = cluster_strdup(c, "hello");
    assert_string_equal(s, "hello");
    assert_null(cluster_strdup(c, NULL));
    unsigned char *big = cluster_alloc(c, 1 << 20); /* own chunk */
    assert_non_null(big);
    for (size_t i = 0; i < (1u << 20); i++)
        assert_true(big[i] == 0);
    for (int i = 0; i < 1000; i++) {
        uint64_t *p = cluster_alloc(c, 24);
        assert_non_null(p);
        assert_true(((uintptr_t)p % sizeof(uint64_t)) == 0);
        p[0] = p[1] = p[2] = UINT64_MAX;
    }
    assert_string_equal(s, "hello");
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "n%03d", i);
        struct node *n = cluster_add_node(c, name);
        assert_non_null(n);
        assert_int_equal(n->n_labels, 0);
        assert_false(n->ready);
    }
    assert_int_equal(c->n_nodes, 300);
    assert_string_equal(c->nodes[0].name, "n000");
    assert_string_equal(c->nodes[299].name, "n299");
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(c->total_gpus, 0);
    for (uint32_t i = 0; i < c->n_nodes; i++)
        assert_int_equal(c->nodes[i].n_islands, 0);
    check_csr(c);
    cluster_free(c);
    cluster_free(NULL);
}

static void test_topology_custom_levels(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    /* Levels zone (label z) and rack (label r); n3 has no labels at all, n5 no rack. */
    add(c, "n0", 8, (const char *const[]){"z=za", "r=r1", NULL});
    add(c, "n1", 8, (const char *const[]){"r=r1", "z=za", NULL});
    add(c, "n2", 8, (const char *const[]){"z=za", "r=r2", NULL});
    add(c, "n3", 4, NULL);
    add(c, "n4", 8, (const char *const[]){"z=zb", "r=r3", NULL});
    add(c, "n5", 8, (const char *const[]){"z=zb", NULL});
    add(c, "n6", 0, (const char *const[]){"z=za", "r=r2", NULL});
    const char *const names[] = {"zone", "rack"};
    const char *const labels[] = {"z", "r"};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, names, labels, 2, &eb), 0);

    assert_int_equal(c->topo.n_levels, 3);
    assert_int_equal(c->topo.rack_level, 1);
    assert_int_equal(c->topo.nvlink_level, -1);
    assert_string_equal(c->topo.levels[2].name, "node");
    assert_null(c->topo.levels[2].label);
    assert_string_equal(c->topo.levels[0].label, "z");

    /* zone: za (first seen at n0), singleton n3, zb. */
    const struct topo_level *zone = level(c, "zone");
    assert_int_equal(zone->n_domains, 3);
    assert_string_equal(zone->domain_names[0], "za");
    assert_string_equal(zone->domain_names[1], "n3");
    assert_string_equal(zone->domain_names[2], "zb");
    const uint32_t zone_first[] = {0, 4, 5, 7};
    const uint32_t zone_nodes[] = {0, 1, 2, 6, 3, 4, 5};
    assert_memory_equal(zone->domain_first, zone_first, sizeof(zone_first));
    assert_memory_equal(zone->node_index, zone_nodes, sizeof(zone_nodes));

    /* rack: r1 {0,1}, r2 {2,6}, n3, r3 {4}, n5. */
    const struct topo_level *rack = level(c, "rack");
    assert_int_equal(rack->n_domains, 5);
    const char *const rack_names[] = {"r1", "r2", "n3", "r3", "n5"};
    for (int d = 0; d < 5; d++)
        assert_string_equal(rack->domain_names[d], rack_names[d]);
    const uint32_t rack_first[] = {0, 2, 4, 5, 6, 7};
    const uint32_t rack_nodes[] = {0, 1, 2, 6, 3, 4, 5};
    assert_memory_equal(rack->domain_first, rack_first, sizeof(rack_first));
    assert_memory_equal(rack->node_index, rack_nodes, sizeof(rack_nodes));
    assert_int_equal(c->nodes[6].dom[1], 1);
    assert_int_equal(c->nodes[5].dom[1], 4);

    /* node level: one domain per node, named after it. */
    const struct topo_level *node = level(c, "node");
    assert_int_equal(node->n_domains, 7);
    for (uint32_t i = 0; i < 7; i++) {
        assert_int_equal(c->nodes[i].dom[2], i);
        assert_string_equal(node->domain_names[i], c->nodes[i].name);
    }
    check_csr(c);

    assert_int_equal(c->total_gpus, 8 * 5 + 4);
    assert_int_equal(c->max_node_gpus, 8);
    /* labels are sorted and searchable */
    assert_string_equal(c->nodes[1].labels[0].key, "r");
    assert_string_equal(node_label(&c->nodes[1], "z"), "za");
    assert_null(node_label(&c->nodes[3], "z"));
    assert_null(node_label(&c->nodes[1], "zz"));
    assert_null(node_annotation(&c->nodes[1], "z"));

    /* finalizing again gives the same result */
    assert_int_equal(cluster_finalize(c, names, labels, 2, &eb), 0);
    assert_int_equal(level(c, "rack")->n_domains, 5);
    check_csr(c);
    cluster_free(c);
}

static void test_topology_defaults(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    add(c, "a", 4,
        (const char *const[]){TOPO_LABEL_ZONE "=z1", TOPO_LABEL_BLOCK "=b1", TOPO_LABEL_RACK "=r1",
                              TOPO_LABEL_CLIQUE "=uuid.1", NULL});
    add(c, "b", 4,
        (const char *const[]){TOPO_LABEL_ZONE "=z1", TOPO_LABEL_BLOCK "=b1", TOPO_LABEL_RACK "=r1",
                              TOPO_LABEL_CLIQUE "=uuid.1", NULL});
    add(c, "c", 8, (const char *const[]){TOPO_LABEL_ZONE "=z1", TOPO_LABEL_RACK "=r2", NULL});
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(c->topo.n_levels, 5);
    const char *const want[] = {"zone", "block", "rack", "clique", "node"};
    for (int l = 0; l < 5; l++)
        assert_string_equal(c->topo.levels[l].name, want[l]);
    assert_string_equal(c->topo.levels[1].label, TOPO_LABEL_BLOCK);
    assert_int_equal(c->topo.rack_level, 2);
    assert_int_equal(c->topo.nvlink_level, 3);
    assert_int_equal(c->topo.levels[0].n_domains, 1);
    assert_int_equal(c->topo.levels[1].n_domains, 2); /* b1, singleton c */
    assert_string_equal(c->topo.levels[1].domain_names[1], "c");
    assert_int_equal(c->topo.levels[2].n_domains, 2);
    assert_int_equal(c->topo.levels[3].n_domains, 2); /* uuid.1, singleton c */
    assert_int_equal(c->topo.levels[4].n_domains, 3);
    check_csr(c);
    cluster_free(c);
}

static void test_levels_rejected(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    add(c, "a", 8, NULL);
    struct sched_errbuf eb = {{0}};
    const char *const many[8] = {"l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7"};
    assert_int_equal(cluster_finalize(c, many, many, 8, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "at most 7"));
    const char *const node_name[] = {"node"};
    const char *const lab[] = {"x"};
    assert_int_equal(cluster_finalize(c, node_name, lab, 1, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "reserved"));
    const char *const twice[] = {"rack", "rack"};
    const char *const labs[] = {"x", "y"};
    assert_int_equal(cluster_finalize(c, twice, labs, 2, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "\"rack\" used twice"));
    /* names default to labels */
    assert_int_equal(cluster_finalize(c, NULL, labs, 2, &eb), 0);
    assert_string_equal(c->topo.levels[1].name, "y");
    assert_int_equal(c->topo.n_levels, 3);
    cluster_free(c);
}

static void test_islands(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    add(c, "whole", 8, NULL);
    uint32_t pcie = add(c, "pcie", 8, NULL);
    annotate(c, pcie, ANNOT_GPU_ISLANDS, "0-3,4-7");
    uint32_t semi = add(c, "semi", 8, NULL);
    annotate(c, semi, ANNOT_GPU_ISLANDS, "0,2,4,6; 1,3,5,7");
    add(c, "big", 64, NULL);
    uint32_t none = add(c, "cpu", 0, NULL);
    annotate(c, none, ANNOT_GPU_ISLANDS, "0-3,4-7"); /* ignored without GPUs */
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(c->nodes[0].n_gpus, 8);
    assert_int_equal(c->nodes[0].n_islands, 1);
    assert_int_equal(c->nodes[0].islands[0], 0xffu);
    assert_int_equal(c->nodes[1].n_islands, 2);
    assert_int_equal(c->nodes[1].islands[0], 0x0fu);
    assert_int_equal(c->nodes[1].islands[1], 0xf0u);
    assert_int_equal(c->nodes[2].n_islands, 2);
    assert_int_equal(c->nodes[2].islands[0], 0x55u);
    assert_int_equal(c->nodes[2].islands[1], 0xaau);
    assert_int_equal(c->nodes[3].n_gpus, NODE_MAX_GPUS);
    assert_int_equal(c->nodes[3].islands[0], UINT32_MAX);
    assert_int_equal(c->nodes[4].n_gpus, 0);
    assert_int_equal(c->nodes[4].n_islands, 0);
    assert_int_equal(c->total_gpus, 8 * 3 + 32);
    assert_int_equal(c->max_node_gpus, 32);
    cluster_free(c);
}

/* A node with more GPUs than the scheduler indexes (64, as one Kubernetes node) offers 32 and
 * says so on stderr, naming the node and the resource; its allocatable matches what is used. */
static void test_too_many_gpus(void **state)
{
    (void)state;
    char path[] = "/tmp/gangsched-cluster-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) == 2);
    struct cluster *c = cluster_new();
    add(c, "dgx-64", 64, NULL);
    add(c, "hgx-8", 8, NULL);
    struct sched_errbuf eb = {{0}};
    int rc = cluster_finalize(c, NULL, NULL, 0, &eb);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(rc, 0);
    assert_int_equal(c->nodes[0].n_gpus, NODE_MAX_GPUS);
    assert_int_equal(c->nodes[0].alloc.v[RES_GPU], NODE_MAX_GPUS);
    assert_int_equal(c->nodes[1].alloc.v[RES_GPU], 8);
    char log[1024] = "";
    ssize_t n = pread(fd, log, sizeof(log) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    log[n] = 0;
    assert_non_null(strstr(log, "node dgx-64"));
    assert_non_null(strstr(log, "nvidia.com/gpu 64"));
    assert_null(strstr(log, "hgx-8"));
    cluster_free(c);
}

static void test_islands_parse(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    uint32_t isl[NODE_MAX_ISLANDS] = {0};
    uint8_t n = 0;
    assert_int_equal(gpu_islands_parse("0-1,2-3", 4, isl, &n, &eb), 0);
    assert_int_equal(n, 2);
    assert_int_equal(isl[0], 0x3u);
    assert_int_equal(isl[1], 0xcu);
    assert_int_equal(gpu_islands_parse("0,1,2,3", 4, isl, &n, &eb), 0); /* four islands of one */
    assert_int_equal(n, 4);
    assert_int_equal(isl[3], 0x8u);
    assert_int_equal(gpu_islands_parse("0-31", 32, isl, &n, &eb), 0);
    assert_int_equal(isl[0], UINT32_MAX);
    assert_int_equal(gpu_islands_parse("0-1;2,3", 4, isl, &n, &eb), 0);
    assert_int_equal(n, 2);
    assert_int_equal(isl[1], 0xcu);

    static const struct {
        const char *s;
        uint8_t gpus;
        const char *frag;
    } bad[] = {
        {"", 8, "empty"},
        {"0-3,4-8", 8, "GPU index 8 out of range (node has 8 GPUs)"},
        {"0-3,3-7", 8, "GPU 3 is listed twice"},
        {"0-3", 8, "GPU 4 is in no island"},
        {"3-0,4-7", 8, "range 3-0 is reversed"},
        {"0-3,,4-7", 8, "expected a GPU index at offset 4"},
        {"0-3,4-7,", 8, "expected a GPU index"},
        {"a", 8, "expected a GPU index at offset 0"},
        {"0-3 4-7", 8, "unexpected '4'"},
        {"0,1,2,3,4,5,6,7,8", 9, "more than 8 islands"},
        {"99999999999999999999", 8, "out of range"},
        {"0-", 8, "expected a GPU index"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eb.msg[0] = '\0';
        n = 77;
        int rc = gpu_islands_parse(bad[i].s, bad[i].gpus, isl, &n, &eb);
        if (rc != SCHED_EINVAL || !strstr(eb.msg, bad[i].frag) || !strstr(eb.msg, bad[i].s))
            fail_msg("\"%s\": rc %d, message \"%s\", want \"%s\"", bad[i].s, rc, eb.msg,
                     bad[i].frag);
        assert_int_equal(n, 77); /* untouched */
    }
    assert_int_equal(gpu_islands_parse(NULL, 8, isl, &n, &eb), SCHED_EINVAL);
}

static void test_bad_island_annotation(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    add(c, "fine", 8, NULL);
    uint32_t i = add(c, "gpu-b-007", 8, NULL);
    annotate(c, i, ANNOT_GPU_ISLANDS, "0-3,4-9");
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "node \"gpu-b-007\""));
    assert_non_null(strstr(eb.msg, ANNOT_GPU_ISLANDS));
    assert_non_null(strstr(eb.msg, "\"0-3,4-9\""));
    cluster_free(c);
}

static void test_duplicates(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    add(c, "a", 8, NULL);
    add(c, "dup-node", 8, NULL);
    add(c, "b", 8, NULL);
    add(c, "dup-node", 8, NULL);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), SCHED_EEXIST);
    assert_non_null(strstr(eb.msg, "node \"dup-node\""));
    assert_non_null(strstr(eb.msg, "duplicate node name"));
    cluster_free(c);

    c = cluster_new();
    add(c, "lbl", 8, (const char *const[]){"k=1", "j=2", "k=3", NULL});
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), SCHED_EEXIST);
    assert_non_null(strstr(eb.msg, "node \"lbl\": duplicate label \"k\""));
    cluster_free(c);
}

static void test_sharing(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    add(c, "whole", 8, (const char *const[]){"nvidia.com/gpu.product=NVIDIA-H100", NULL});
    add(c, "shared", 8, (const char *const[]){"nvidia.com/gpu.product=NVIDIA-H100-SHARED", NULL});
    add(c, "replicas", 8, (const char *const[]){"nvidia.com/gpu.replicas=4", NULL});
    add(c, "replicas1", 8, (const char *const[]){"nvidia.com/gpu.replicas=1", NULL});
    add(c, "mig-single", 8, (const char *const[]){"nvidia.com/mig.strategy=single", NULL});
    add(c, "mig-mixed", 8, (const char *const[]){"nvidia.com/mig.strategy=mixed", NULL});
    add(c, "mig-none", 8, (const char *const[]){"nvidia.com/mig.strategy=none", NULL});
    add(c, "shared-word", 8, (const char *const[]){"nvidia.com/gpu.product=SHARED", NULL});
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    /* MIG mixed: nvidia.com/gpu counts the GPUs without MIG, whole devices */
    const enum gpu_sharing want[] = {GPU_WHOLE, GPU_TIME_SLICED, GPU_TIME_SLICED, GPU_WHOLE,
                                     GPU_MIG,   GPU_WHOLE,       GPU_WHOLE,       GPU_WHOLE};
    for (uint32_t i = 0; i < c->n_nodes; i++)
        if (c->nodes[i].gpu_sharing != want[i])
            fail_msg("%s: sharing %d, want %d", c->nodes[i].name, (int)c->nodes[i].gpu_sharing,
                     (int)want[i]);
    cluster_free(c);
}

/* 20,000 nodes in 2,500 racks: domains correct (speed is measured by make bench). */
static void test_large(void **state)
{
    (void)state;
    struct cluster *c = cluster_new();
    char name[32], rack[48], zone[48];
    const uint32_t n = 20000;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "node-%05u", i);
        snprintf(rack, sizeof(rack), TOPO_LABEL_RACK "=rack-%04u", (i * 7919u) % 2500u);
        snprintf(zone, sizeof(zone), TOPO_LABEL_ZONE "=zone-%u", i % 3);
        add(c, name, 8, (const char *const[]){rack, zone, NULL});
    }
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(c->topo.levels[0].n_domains, 3);
    assert_int_equal(c->topo.levels[1].n_domains, n); /* no block labels: singletons */
    assert_int_equal(c->topo.levels[2].n_domains, 2500);
    assert_int_equal(c->total_gpus, 8 * (int64_t)n);
    check_csr(c);
    cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_and_nodes),
        cmocka_unit_test(test_topology_custom_levels),
        cmocka_unit_test(test_topology_defaults),
        cmocka_unit_test(test_levels_rejected),
        cmocka_unit_test(test_islands),
        cmocka_unit_test(test_too_many_gpus),
        cmocka_unit_test(test_islands_parse),
        cmocka_unit_test(test_bad_island_annotation),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_sharing),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
