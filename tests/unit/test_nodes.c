/* tests/unit/test_nodes.c: NodeList loading and the cluster generator (sched/k8s/nodes.c,
 * sched/sim/nodegen.c).
 *
 * Owns: tests of nodes_generate() shorthands, of nodes_load_file()/nodes_load_buffer() on
 * tests/data/nodes-small.{yaml,json} (the same cluster, as kubectl prints it) and of located
 * error messages for bad input. Run from the repository root (data paths are relative to it).
 * Must not touch: files outside tests/data, the resource table beyond interning what the data
 * names.
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

#include <cjson/cJSON.h>
/* clang-format on */

#include "sched/core/model.h"
#include "sched/core/res.h"
#include "sched/sim/nodes.h"

#define YAML_PATH "tests/data/nodes-small.yaml"
#define JSON_PATH "tests/data/nodes-small.json"

static struct cluster *generate(const char *spec)
{
    struct cluster *c = cluster_new();
    struct sched_errbuf eb = {{0}};
    assert_non_null(c);
    if (nodes_generate(c, spec, &eb) != 0)
        fail_msg("nodes_generate(%s): %s", spec, eb.msg);
    if (cluster_finalize(c, NULL, NULL, 0, &eb) != 0)
        fail_msg("cluster_finalize(%s): %s", spec, eb.msg);
    return c;
}

static const struct node *find(const struct cluster *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_nodes; i++)
        if (strcmp(c->nodes[i].name, name) == 0)
            return &c->nodes[i];
    fail_msg("no node %s", name);
    return NULL;
}

static uint32_t count_label(const struct cluster *c, const char *key, const char *value)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        const char *v = node_label(&c->nodes[i], key);
        if (v && strcmp(v, value) == 0)
            n++;
    }
    return n;
}

static void test_gen_hgx(void **state)
{
    (void)state;
    struct cluster *c = generate("hgx:20");
    assert_int_equal(c->n_nodes, 20);
    assert_string_equal(c->nodes[0].name, "hgx-0000");
    assert_string_equal(c->nodes[19].name, "hgx-0019");
    const struct node *n = find(c, "hgx-0009");
    assert_string_equal(node_label(n, "kubernetes.io/hostname"), "hgx-0009");
    assert_string_equal(node_label(n, TOPO_LABEL_ZONE), "zone-a");
    assert_string_equal(node_label(n, TOPO_LABEL_BLOCK), "hgx-block-00");
    assert_string_equal(node_label(n, TOPO_LABEL_RACK), "hgx-rack-001");
    assert_null(node_label(n, TOPO_LABEL_CLIQUE));
    assert_string_equal(node_label(n, "nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
    assert_string_equal(node_label(n, "nvidia.com/gpu.count"), "8");
    assert_string_equal(node_label(n, "nvidia.com/gpu.memory"), "81559");
    assert_int_equal(n->alloc.v[RES_CPU], 192000);
    assert_int_equal(n->alloc.v[RES_MEMORY], INT64_C(2) << 40);
    assert_int_equal(n->alloc.v[RES_PODS], 110);
    assert_int_equal(n->alloc.v[RES_GPU], 8);
    assert_true(n->ready);
    assert_false(n->unschedulable);
    assert_int_equal(n->n_taints, 0);
    assert_int_equal(n->n_gpus, 8);
    assert_int_equal(n->n_islands, 1);
    assert_int_equal(n->islands[0], 0xffu);
    assert_int_equal(n->gpu_sharing, GPU_WHOLE);
    assert_int_equal(c->total_gpus, 160);
    assert_int_equal(c->max_node_gpus, 8);
    /* racks of 8: 8 + 8 + 4 */
    assert_int_equal(count_label(c, TOPO_LABEL_RACK, "hgx-rack-000"), 8);
    assert_int_equal(count_label(c, TOPO_LABEL_RACK, "hgx-rack-001"), 8);
    assert_int_equal(count_label(c, TOPO_LABEL_RACK, "hgx-rack-002"), 4);
    const struct topo *t = &c->topo;
    assert_int_equal(t->n_levels, 5);
    assert_int_equal(t->levels[0].n_domains, 1);                /* zone */
    assert_int_equal(t->levels[1].n_domains, 1);                /* block */
    assert_int_equal(t->levels[t->rack_level].n_domains, 3);    /* rack */
    assert_int_equal(t->levels[t->nvlink_level].n_domains, 20); /* no clique: singletons */
    assert_int_equal(t->levels[4].n_domains, 20);
    assert_string_equal(t->levels[t->rack_level].domain_names[2], "hgx-rack-002");
    cluster_free(c);

    /* 4 racks per block, 32 blocks (1024 nodes) per zone */
    c = generate("hgx:2100");
    assert_string_equal(node_label(find(c, "hgx-0031"), TOPO_LABEL_BLOCK), "hgx-block-00");
    assert_string_equal(node_label(find(c, "hgx-0032"), TOPO_LABEL_BLOCK), "hgx-block-01");
    assert_string_equal(node_label(find(c, "hgx-1023"), TOPO_LABEL_ZONE), "zone-a");
    assert_string_equal(node_label(find(c, "hgx-1024"), TOPO_LABEL_ZONE), "zone-b");
    assert_string_equal(node_label(find(c, "hgx-2099"), TOPO_LABEL_ZONE), "zone-c");
    assert_string_equal(node_label(find(c, "hgx-2099"), TOPO_LABEL_RACK), "hgx-rack-262");
    assert_int_equal(c->topo.levels[0].n_domains, 3);
    assert_int_equal(c->topo.levels[1].n_domains, 66);
    assert_int_equal(c->topo.levels[2].n_domains, 263);
    cluster_free(c);

    c = generate("hgx:10001");
    assert_string_equal(c->nodes[10000].name, "hgx-10000");
    cluster_free(c);
}

static void test_gen_nvl72(void **state)
{
    (void)state;
    struct cluster *c = generate("nvl72:2");
    assert_int_equal(c->n_nodes, 36);
    assert_string_equal(c->nodes[0].name, "nvl72-00-00");
    assert_string_equal(c->nodes[17].name, "nvl72-00-17");
    assert_string_equal(c->nodes[18].name, "nvl72-01-00");
    const struct node *n = find(c, "nvl72-01-05");
    assert_string_equal(node_label(n, "nvidia.com/gpu.product"), "NVIDIA-GB200");
    assert_string_equal(node_label(n, "nvidia.com/gpu.count"), "4");
    assert_string_equal(node_label(n, "nvidia.com/gpu.memory"), "189471");
    assert_string_equal(node_label(n, TOPO_LABEL_RACK), "nvl72-rack-001");
    assert_string_equal(node_label(n, TOPO_LABEL_BLOCK), "nvl72-block-00");
    const char *clique = node_label(n, TOPO_LABEL_CLIQUE);
    assert_non_null(clique);
    const char *dot = strrchr(clique, '.');
    assert_non_null(dot);
    assert_string_equal(dot, ".1");
    assert_true(dot - clique >= 8); /* a cluster id before the clique number */
    assert_int_equal(n->n_gpus, 4);
    assert_int_equal(n->islands[0], 0xfu);
    assert_int_equal(c->total_gpus, 144);
    assert_int_equal(count_label(c, TOPO_LABEL_CLIQUE, clique), 18);
    const struct topo *t = &c->topo;
    const struct topo_level *cl = &t->levels[t->nvlink_level];
    assert_int_equal(cl->n_domains, 2);
    assert_int_equal(cl->domain_first[1], 18);
    assert_int_equal(cl->node_index[18], 18);
    assert_int_equal(t->levels[t->rack_level].n_domains, 2);
    assert_int_equal(t->levels[1].n_domains, 1);
    cluster_free(c);
}

static void test_gen_pcie_and_combined(void **state)
{
    (void)state;
    struct cluster *c = generate("pcie:3");
    assert_int_equal(c->n_nodes, 3);
    const struct node *n = find(c, "pcie-0002");
    assert_string_equal(node_label(n, "nvidia.com/gpu.product"), "NVIDIA-L40S");
    assert_string_equal(node_label(n, "nvidia.com/gpu.memory"), "46068");
    assert_string_equal(node_annotation(n, ANNOT_GPU_ISLANDS), "0-3,4-7");
    assert_string_equal(node_label(n, TOPO_LABEL_RACK), "pcie-rack-000");
    assert_int_equal(n->n_islands, 2);
    assert_int_equal(n->islands[0], 0x0fu);
    assert_int_equal(n->islands[1], 0xf0u);
    cluster_free(c);

    c = generate(" hgx:20, nvl72:2 ,pcie:3");
    assert_int_equal(c->n_nodes, 20 + 36 + 3);
    assert_int_equal(c->total_gpus, 160 + 144 + 24);
    const struct topo *t = &c->topo;
    assert_int_equal(t->levels[0].n_domains, 1);             /* all in zone-a */
    assert_int_equal(t->levels[1].n_domains, 3);             /* a block per kind */
    assert_int_equal(t->levels[t->rack_level].n_domains, 6); /* 3 hgx, 2 nvl72, 1 pcie */
    assert_int_equal(t->levels[t->nvlink_level].n_domains, 20 + 2 + 3);
    assert_string_equal(c->nodes[20].name, "nvl72-00-00");
    assert_string_equal(c->nodes[56].name, "pcie-0000");
    cluster_free(c);

    /* parts of one kind continue numbering */
    c = generate("hgx:4,hgx:4");
    assert_int_equal(c->n_nodes, 8);
    assert_string_equal(c->nodes[7].name, "hgx-0007");
    assert_int_equal(c->topo.levels[c->topo.rack_level].n_domains, 1);
    cluster_free(c);
}

static void test_gen_bad(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        const char *frag;
    } bad[] = {
        {"hgx:x", "cluster spec \"hgx:x\": count \"x\" is not a positive integer"},
        {"hgx:0", "count \"0\" is not a positive integer"},
        {"hgx:-1", "count \"-1\" is not a positive integer"},
        {"hgx:", "count \"\" is not a positive integer"},
        {"hgx:4x", "count \"4x\" is not a positive integer"},
        {"hgx:100001", "count \"100001\" is too large (at most 100000)"},
        {"hgx:99999999999999999999", "is too large"},
        {"dgx:4", "unknown kind \"dgx\" (valid kinds: hgx, nvl72, pcie)"},
        {"hgx", "part \"hgx\" is not kind:count"},
        {"", "empty part"},
        {"hgx:4,", "cluster spec \"hgx:4,\": empty part"},
        {"hgx:4,,pcie:1", "empty part"},
        {"hgx:4,pcie:y", "count \"y\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cluster *c = cluster_new();
        struct sched_errbuf eb = {{0}};
        int rc = nodes_generate(c, bad[i].spec, &eb);
        if (rc == 0 || !strstr(eb.msg, bad[i].frag))
            fail_msg("spec \"%s\": rc %d, message \"%s\", want \"%s\"", bad[i].spec, rc, eb.msg,
                     bad[i].frag);
        assert_int_equal(c->n_nodes, 0); /* nothing generated */
        cluster_free(c);
    }
    struct sched_errbuf eb = {{0}};
    struct cluster *c = cluster_new();
    assert_int_equal(nodes_generate(c, NULL, &eb), SCHED_EINVAL);
    /* a second call repeats names: finalize rejects them */
    assert_int_equal(nodes_generate(c, "hgx:2", &eb), 0);
    assert_int_equal(nodes_generate(c, "hgx:2", &eb), 0);
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), SCHED_EEXIST);
    assert_non_null(strstr(eb.msg, "node \"hgx-0000\""));
    cluster_free(c);
}

static void test_gen_large(void **state)
{
    (void)state; /* speed is measured by make bench; here only the shape of a large cluster */
    struct cluster *c = cluster_new();
    struct sched_errbuf eb = {{0}};
    assert_int_equal(nodes_generate(c, "hgx:5000", &eb), 0);
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(c->n_nodes, 5000);
    assert_int_equal(c->total_gpus, 40000);
    cluster_free(c);
}

/* ---- NodeList files -------------------------------------------------------------------------- */

static struct cluster *load(const char *path)
{
    struct cluster *c = cluster_new();
    struct sched_errbuf eb = {{0}};
    if (nodes_load_file(c, path, &eb) != 0)
        fail_msg("nodes_load_file(%s): %s", path, eb.msg);
    if (cluster_finalize(c, NULL, NULL, 0, &eb) != 0)
        fail_msg("cluster_finalize(%s): %s", path, eb.msg);
    return c;
}

static void test_load_yaml(void **state)
{
    (void)state;
    struct cluster *c = load(YAML_PATH);
    assert_int_equal(c->n_nodes, 5);
    const struct node *a1 = &c->nodes[0];
    assert_string_equal(a1->name, "gpu-a-001");
    assert_int_equal(a1->n_labels, 15);
    assert_string_equal(node_label(a1, "node.kubernetes.io/instance-type"), "p5.48xlarge");
    assert_string_equal(node_label(a1, TOPO_LABEL_RACK), "rack-000");
    assert_int_equal(a1->n_annotations, 4);
    assert_string_equal(node_annotation(a1, "csi.volume.kubernetes.io/nodeid"),
                        "{\"ebs.csi.aws.com\":\"i-0a1b2c3d4e5f60718\"}");
    assert_int_equal(a1->alloc.v[RES_CPU], 191500);
    assert_int_equal(a1->alloc.v[RES_MEMORY], INT64_C(2113178140) * 1024);
    assert_int_equal(a1->alloc.v[RES_PODS], 110);
    assert_int_equal(a1->alloc.v[RES_GPU], 8);
    int eph = res_lookup("ephemeral-storage");
    assert_true(eph >= 0);
    assert_int_equal(a1->alloc.v[eph], INT64_C(1770852843137));
    assert_true(res_lookup("hugepages-1Gi") >= 0);
    assert_true(a1->ready);
    assert_false(a1->unschedulable);
    assert_int_equal(a1->n_taints, 0);
    assert_int_equal(a1->gpu_sharing, GPU_WHOLE); /* mig.strategy none */
    assert_int_equal(a1->n_islands, 1);

    const struct node *a2 = &c->nodes[1];
    assert_string_equal(a2->name, "gpu-a-002");
    assert_true(a2->unschedulable);
    assert_true(a2->ready);
    assert_int_equal(a2->n_taints, 2);
    assert_string_equal(a2->taints[0].key, "nvidia.com/gpu");
    assert_string_equal(a2->taints[0].value, "present");
    assert_int_equal(a2->taints[0].effect, TAINT_NO_SCHEDULE);
    assert_string_equal(a2->taints[1].key, "node.kubernetes.io/unschedulable");
    assert_string_equal(a2->taints[1].value, "");
    assert_int_equal(a2->alloc.v[RES_MEMORY], INT64_C(2) << 40);
    assert_int_equal(a2->alloc.v[RES_CPU], 192000);

    const struct node *b1 = &c->nodes[2];
    assert_false(b1->ready); /* Ready Unknown */
    assert_int_equal(b1->n_islands, 2);
    assert_int_equal(b1->islands[1], 0xf0u);
    assert_int_equal(b1->alloc.v[RES_CPU], 95500);

    const struct node *c1 = &c->nodes[3];
    assert_int_equal(c1->gpu_sharing, GPU_TIME_SLICED);
    assert_int_equal(c1->n_gpus, 16);

    const struct node *cpu = &c->nodes[4];
    assert_int_equal(cpu->n_gpus, 0);
    assert_int_equal(cpu->n_islands, 0);
    assert_string_equal(node_label(cpu, "node-role.kubernetes.io/control-plane"), "");
    assert_int_equal(cpu->taints[0].effect, TAINT_NO_SCHEDULE);

    const struct topo *t = &c->topo;
    assert_int_equal(t->levels[0].n_domains, 2);             /* us-east-1a, us-east-1b */
    assert_int_equal(t->levels[t->rack_level].n_domains, 4); /* rack-000, rack-001, 2 singles */
    assert_int_equal(t->levels[t->rack_level].domain_first[1], 2);
    assert_int_equal(c->total_gpus, 8 + 8 + 8 + 16);
    cluster_free(c);
}

static void compare_clusters(const struct cluster *a, const struct cluster *b)
{
    assert_int_equal(a->n_nodes, b->n_nodes);
    assert_int_equal(a->total_gpus, b->total_gpus);
    assert_int_equal(a->topo.n_levels, b->topo.n_levels);
    for (uint32_t i = 0; i < a->n_nodes; i++) {
        const struct node *x = &a->nodes[i], *y = &b->nodes[i];
        assert_string_equal(x->name, y->name);
        assert_memory_equal(&x->alloc, &y->alloc, sizeof(x->alloc));
        assert_int_equal(x->n_labels, y->n_labels);
        for (uint32_t k = 0; k < x->n_labels; k++) {
            assert_string_equal(x->labels[k].key, y->labels[k].key);
            assert_string_equal(x->labels[k].value, y->labels[k].value);
        }
        assert_int_equal(x->n_annotations, y->n_annotations);
        for (uint32_t k = 0; k < x->n_annotations; k++) {
            assert_string_equal(x->annotations[k].key, y->annotations[k].key);
            assert_string_equal(x->annotations[k].value, y->annotations[k].value);
        }
        assert_int_equal(x->n_taints, y->n_taints);
        for (uint32_t k = 0; k < x->n_taints; k++) {
            assert_string_equal(x->taints[k].key, y->taints[k].key);
            assert_string_equal(x->taints[k].value, y->taints[k].value);
            assert_int_equal(x->taints[k].effect, y->taints[k].effect);
        }
        assert_int_equal(x->ready, y->ready);
        assert_int_equal(x->unschedulable, y->unschedulable);
        assert_int_equal(x->gpu_sharing, y->gpu_sharing);
        assert_int_equal(x->n_gpus, y->n_gpus);
        assert_int_equal(x->n_islands, y->n_islands);
        assert_memory_equal(x->islands, y->islands, sizeof(x->islands));
        assert_memory_equal(x->dom, y->dom, sizeof(x->dom));
    }
    for (uint32_t l = 0; l < a->topo.n_levels; l++) {
        const struct topo_level *x = &a->topo.levels[l], *y = &b->topo.levels[l];
        assert_int_equal(x->n_domains, y->n_domains);
        for (uint32_t d = 0; d < x->n_domains; d++)
            assert_string_equal(x->domain_names[d], y->domain_names[d]);
        assert_memory_equal(x->domain_first, y->domain_first,
                            (x->n_domains + 1) * sizeof(uint32_t));
        assert_memory_equal(x->node_index, y->node_index, a->n_nodes * sizeof(uint32_t));
    }
}

static void test_yaml_json_identical(void **state)
{
    (void)state;
    struct cluster *y = load(YAML_PATH);
    struct cluster *j = load(JSON_PATH);
    compare_clusters(y, j);
    cluster_free(y);
    cluster_free(j);
}

static int load_str(struct cluster *c, const char *name, const char *text, struct sched_errbuf *eb)
{
    return nodes_load_buffer(c, name, text, strlen(text), eb);
}

static void test_load_variants(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    struct cluster *c = cluster_new();
    /* a single Node, then a multi-document stream, then JSON with numbers; one cluster */
    const char *single = "apiVersion: v1\n"
                         "kind: Node\n"
                         "metadata:\n"
                         "  name: solo\n"
                         "status:\n"
                         "  allocatable:\n"
                         "    cpu: 4\n"
                         "    memory: 1e3\n"
                         "    nvidia.com/gpu: 2\n";
    assert_int_equal(load_str(c, "single.yaml", single, &eb), 0);
    const char *multi = "kind: Node\nmetadata: {name: m1}\n---\n"
                        "kind: NodeList\nitems:\n- metadata: {name: m2}\n  spec:\n"
                        "    unschedulable: True\n  status: {conditions: []}\n"
                        "- metadata: {name: m3}\n  status:\n    conditions:\n"
                        "    - {type: MemoryPressure, status: \"False\"}\n";
    assert_int_equal(load_str(c, "multi.yaml", multi, &eb), 0);
    const char *json = "  {\"kind\": \"Node\", \"metadata\": {\"name\": \"js\"}, "
                       "\"spec\": {\"unschedulable\": false},"
                       "\"status\": {\"allocatable\": {\"cpu\": 0.1, \"pods\": 110}}}\n";
    assert_int_equal(load_str(c, "one.json", json, &eb), 0);
    const char *empty_list = "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n"
                             "  resourceVersion: \"\"\n";
    assert_int_equal(load_str(c, "empty.yaml", empty_list, &eb), 0);
    assert_int_equal(load_str(c, "empty.json", "{\"kind\":\"NodeList\",\"items\":null}", &eb), 0);
    assert_int_equal(c->n_nodes, 5);
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    assert_string_equal(c->nodes[0].name, "solo");
    assert_int_equal(c->nodes[0].alloc.v[RES_CPU], 4000);
    assert_int_equal(c->nodes[0].alloc.v[RES_MEMORY], 1000);
    assert_int_equal(c->nodes[0].n_gpus, 2);
    assert_true(c->nodes[0].ready); /* no conditions */
    assert_string_equal(c->nodes[2].name, "m2");
    assert_true(c->nodes[2].unschedulable);
    assert_true(c->nodes[2].ready); /* empty conditions */
    assert_string_equal(c->nodes[3].name, "m3");
    assert_false(c->nodes[3].ready); /* conditions without Ready */
    assert_string_equal(c->nodes[4].name, "js");
    assert_int_equal(c->nodes[4].alloc.v[RES_CPU], 100);
    assert_int_equal(c->nodes[4].alloc.v[RES_PODS], 110);
    cluster_free(c);
}

struct bad_case {
    const char *name;
    const char *text;
    const char *frag; /* expected in the message */
};

/* Bad Node, NodeList and List input, YAML then JSON: each load must fail with a message that
 * contains frag, and leave the cluster's nodes as they were. */
static const struct bad_case bad_inputs[] = {
    {"bad.yaml",
     "kind: NodeList\n"
     "items:\n"
     "- metadata:\n"
     "    name: n1\n"
     "  status:\n"
     "    allocatable:\n"
     "      cpu: abc\n",
     "bad.yaml:7:12: node \"n1\": field status.allocatable.cpu: invalid quantity \"abc\""},
    {"bad.yaml",
     "kind: List\n"
     "items:\n"
     "- metadata:\n"
     "    labels: {}\n",
     "bad.yaml:4:5: items[0]: field metadata.name: missing"},
    {"bad.yaml",
     "kind: Node\n"
     "metadata:\n"
     "  name: n1\n"
     "  labels:\n"
     "    gpu.count: 8\n",
     "bad.yaml:5:16: node \"n1\": field metadata.labels.gpu.count: expected a string, got a "
     "number (quote it)"},
    {"bad.yaml",
     "kind: Node\n"
     "metadata:\n"
     "  name: n1\n"
     "spec:\n"
     "  taints:\n"
     "  - key: k\n"
     "    effect: Sometimes\n",
     "bad.yaml:7:13: node \"n1\": field spec.taints[0].effect: unknown effect \"Sometimes\""},
    {"bad.yaml",
     "kind: Node\n"
     "metadata:\n"
     "  name: n1\n"
     "spec:\n"
     "  unschedulable: \"yes\"\n",
     "bad.yaml:5:18: node \"n1\": field spec.unschedulable: expected a boolean, got a string"},
    {"bad.yaml", "kind: Pod\nmetadata: {name: p}\n",
     "bad.yaml:1:7: field kind: \"Pod\" is not Node, ResourceSlice, NodeList or List"},
    {"bad.yaml", "metadata: {name: p}\n", "bad.yaml:1:1: field kind: missing"},
    {"bad.yaml", "kind: Node\nmetadata:\n  name: [n1\n", "bad.yaml:4:1: YAML syntax error"},
    {"bad.yaml", "kind: List\nitems:\n- just-a-string\n",
     "bad.yaml:3:3: items[0]: expected a Node (a mapping), got a string"},
    {"bad.yaml", "kind: List\nitems: &a [*a]\n",
     "items[0]: expected a Node (a mapping), got a sequence"},
    {"bad.yaml", "kind: List\nitems: {a: b}\n",
     "bad.yaml:2:8: field items: expected a sequence, got a mapping"},
    {"bad.yaml", "kind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: [cpu]\n",
     "bad.yaml:4:16: node \"n1\": field status.allocatable: expected a mapping, got a "
     "sequence"},
    {"bad.yaml",
     "kind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n"
     "    cpu: 99999999999999999999999\n",
     "bad.yaml:5:10: node \"n1\": field status.allocatable.cpu: quantity "
     "\"99999999999999999999999\" out of range"},
    {"bad.yaml", "kind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n    cpu: -1\n",
     "field status.allocatable.cpu: negative quantity \"-1\""},
    {"bad.yaml",
     "kind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n    \"bad name!\": 1\n",
     "bad.yaml:5:5: node \"n1\": field status.allocatable.bad name!: invalid resource name"},
    {"bad.yaml",
     "kind: Node\nmetadata: {name: n1}\nstatus:\n  conditions:\n"
     "  - type: Ready\n    status: Maybe\n",
     "bad.yaml:6:13: node \"n1\": field status.conditions[0].status: expected \"True\", "
     "\"False\" or \"Unknown\", got \"Maybe\""},
    {"bad.yaml", "kind: Node\nmetadata:\n  name: n1\n  labels:\n    a: x\n    a: y\n",
     "bad.yaml:5:5: node \"n1\": field metadata.labels: duplicate key \"a\""},
    {"bad.yaml", "kind: Node\nmetadata:\n  name: \"\"\n",
     "bad.yaml:3:9: field metadata.name: empty"},
    {"bad.yaml", "kind: Node\nmetadata:\n  name: 42\n",
     "bad.yaml:3:9: field metadata.name: expected a string, got a number"},
    {"bad.yaml", "kind: Node\nmetadata:\n  name: n1\nspec:\n  taints:\n  - effect: NoSchedule\n",
     "bad.yaml:6:5: node \"n1\": field spec.taints[0].key: missing"},
    {"bad.yaml", "- a\n- b\n",
     "bad.yaml:1:1: expected a Node, NodeList or List (a mapping), got a sequence"},
    {"bad.yaml", "# only a comment\n", "bad.yaml: no YAML document"},
    {"bad.yaml", " \n\t\n", "bad.yaml: empty input"},
    {"bad.json",
     "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"a\"}},\n"
     " {\"metadata\": {\"name\": \"b\"}, \"status\": {\"allocatable\": "
     "{\"memory\": \"12Qi\"}}}]}",
     "bad.json: node \"b\" (items[1]): field status.allocatable.memory: invalid quantity "
     "\"12Qi\""},
    {"bad.json", "{\"kind\": \"List\",\n \"items\": [}", "bad.json:2:12: invalid JSON"},
    {"bad.json", "{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}} x",
     "bad.json:1:45: invalid JSON: data after the value"},
    {"bad.json",
     "{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"unschedulable\": "
     "\"true\"}}",
     "bad.json: node \"a\": field spec.unschedulable: expected a boolean, got a string"},
    {"bad.json", "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": 7}}]}",
     "bad.json: items[0]: field metadata.name: expected a string, got a number"},
    {"bad.json",
     "{\"kind\": \"NodeList\", \"items\": [{\"kind\": \"Node\", \"metadata\": "
     "{\"name\": \"a\", \"labels\": {\"x\": true}}}]}",
     "bad.json: node \"a\" (items[0]): field metadata.labels.x: expected a string, got a "
     "boolean"},
    {"bad.json",
     "{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}, \"status\": {\"allocatable\": "
     "{\"cpu\": 1e400}}}",
     "bad.json: node \"a\": field status.allocatable.cpu: invalid quantity \"inf\""},
    {"bad.json", "{\"kind\": \"NodeList\", \"items\": [{\"kind\": \"Pod\"}]}",
     "bad.json: items[0]: field kind: \"Pod\" is not Node"},
};

/* Deeply nested input: no crash, an error. */
static char *nested(char open, size_t depth, const char *prefix)
{
    size_t pl = strlen(prefix);
    char *s = malloc(pl + depth + 1);
    assert_non_null(s);
    memcpy(s, prefix, pl);
    memset(s + pl, open, depth);
    s[pl + depth] = '\0';
    return s;
}

static void test_bad_input(void **state)
{
    (void)state;
    const struct bad_case *cases = bad_inputs;
    for (size_t i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
        struct cluster *c = cluster_new();
        struct sched_errbuf eb = {{0}};
        assert_int_equal(nodes_generate(c, "hgx:2", &eb), 0);
        int rc = load_str(c, cases[i].name, cases[i].text, &eb);
        if (rc == 0 || !strstr(eb.msg, cases[i].frag))
            fail_msg("case %zu: rc %d, message\n  \"%s\"\nwant\n  \"%s\"", i, rc, eb.msg,
                     cases[i].frag);
        assert_int_equal(c->n_nodes, 2); /* nodes of the failing call removed */
        cluster_free(c);
    }

    /* deep nesting, both formats */
    char *deep[] = {nested('[', 200000, "kind: List\nitems: "), nested('{', 200000, ""),
                    nested('[', 200000, "{\"kind\": \"List\", \"items\": "),
                    nested('[', 400000, "kind: List\nitems: ")};
    memset(deep[3] + strlen(deep[3]) - 200000, ']', 200000); /* balanced */
    for (size_t i = 0; i < sizeof(deep) / sizeof(deep[0]); i++) {
        struct cluster *c = cluster_new();
        struct sched_errbuf eb = {{0}};
        assert_int_not_equal(
            load_str(c, i == 0 || i == 3 ? "deep.yaml" : "deep.json", deep[i], &eb), 0);
        if (!strstr(eb.msg, "invalid") && !strstr(eb.msg, "nesting deeper"))
            fail_msg("deep case %zu: %s", i, eb.msg);
        assert_int_equal(c->n_nodes, 0);
        cluster_free(c);
        free(deep[i]);
    }

    /* a buffer that is not NUL-terminated */
    const char text[] = "kind: Node\nmetadata: {name: cut}\nXXXX";
    struct cluster *c = cluster_new();
    struct sched_errbuf eb = {{0}};
    assert_int_equal(nodes_load_buffer(c, "cut.yaml", text, strlen(text) - 4, &eb), 0);
    assert_int_equal(c->n_nodes, 1);
    cluster_free(c);

    c = cluster_new();
    assert_int_equal(nodes_load_file(c, "tests/data/does-not-exist.yaml", &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "tests/data/does-not-exist.yaml: cannot open"));
    cluster_free(c);
}

/* A live node with more GPUs than a mask indexes is decoded (never refused: it exists) with
 * NODE_MAX_GPUS of them and a warning naming it and the resource; a file refuses it. */
static void test_decode_too_many_gpus(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"dgx-64\",\"uid\":\"u1\"},"
                           "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"64\"}}}");
    assert_non_null(o);
    char path[] = "/tmp/gangsched-nodes-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) == 2);
    struct nodes_rec *r = NULL;
    struct sched_errbuf eb = {{0}};
    int rc = nodes_decode(o, "node dgx-64", &r, &eb);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(rc, 0);
    assert_int_equal(r->node.alloc.v[RES_GPU], NODE_MAX_GPUS);
    char log[1024] = "";
    ssize_t n = pread(fd, log, sizeof(log) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    log[n] = 0;
    assert_non_null(strstr(log, "node dgx-64"));
    assert_non_null(strstr(log, "nvidia.com/gpu 64"));
    nodes_rec_free(r);
    cJSON_Delete(o);
    /* the same node in a NodeList file is refused, with the field */
    struct cluster *c = cluster_new();
    const char *doc = "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: dgx-64}\n"
                      "  status:\n    allocatable: {nvidia.com/gpu: \"64\"}\n";
    memset(&eb, 0, sizeof(eb));
    assert_int_not_equal(nodes_load_buffer(c, "big.yaml", doc, strlen(doc), &eb), 0);
    assert_non_null(strstr(eb.msg, "big.yaml:"));
    assert_non_null(strstr(eb.msg, "status.allocatable"));
    cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gen_hgx),
        cmocka_unit_test(test_gen_nvl72),
        cmocka_unit_test(test_gen_pcie_and_combined),
        cmocka_unit_test(test_gen_bad),
        cmocka_unit_test(test_gen_large),
        cmocka_unit_test(test_load_yaml),
        cmocka_unit_test(test_yaml_json_identical),
        cmocka_unit_test(test_load_variants),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_decode_too_many_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
