/* tests/unit/test_share.c: shared GPUs. Per-GPU accounting (a share stays on one device, whole
 * GPUs are taken only when entirely free), the model constraint, FGD's fragmentation measure
 * and its choice where best fit chooses otherwise; the openb readers on unchanged excerpts of the
 * real files and their errors; FGD's seeded arrivals up to 130% of capacity; the curve. */
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

#include "sched/core/share.h"
#include "sched/sim/openb.h"

#define NODES_EXCERPT "tests/data/openb-nodes-excerpt.csv"
#define PODS_EXCERPT  "tests/data/openb-pods-excerpt.csv"

static struct share_node gpu_node(uint8_t gpus)
{
    struct share_node n;
    memset(&n, 0, sizeof(n));
    n.cpu = n.cpu_free = 64000;
    n.mem = n.mem_free = 262144;
    n.n_gpus = gpus;
    for (uint8_t g = 0; g < gpus; g++)
        n.gpu_free[g] = SHARE_MILLI;
    return n;
}

static struct share_pod pod(uint8_t num, int16_t milli)
{
    struct share_pod p = {.cpu = 1000, .mem = 1024, .num_gpu = num, .gpu_milli = milli};
    return p;
}

static void shares_stay_on_one_gpu(void **unused)
{
    (void)unused;
    struct share_node nodes[1] = {gpu_node(2)};
    struct share_cluster c = {.nodes = nodes, .n_nodes = 1};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(share_init(&c, NULL, 0, 0, &eb), 0);
    assert_int_equal(c.gpu_milli_total, 2000);
    struct share_pod half = pod(1, 500), big = pod(1, 600), whole = pod(1, 1000);
    struct share_choice ch = share_choose(&c, &half, SHARE_BESTFIT);
    assert_int_equal(ch.node, 0);
    assert_int_equal(ch.gpus, 0x1);
    share_commit(&c, &half, ch);
    /* best fit packs the second half onto the same GPU */
    ch = share_choose(&c, &half, SHARE_BESTFIT);
    assert_int_equal(ch.gpus, 0x1);
    share_commit(&c, &half, ch);
    assert_int_equal(nodes[0].gpu_free[0], 0);
    assert_int_equal(nodes[0].gpu_free[1], 1000);
    /* 600 does not fit the 500 left of GPU 0 after another half; it takes GPU 1, never both */
    struct share_node n2 = gpu_node(2);
    n2.gpu_free[0] = 500;
    assert_true(share_fits(&n2, &big));
    nodes[0] = n2;
    ch = share_choose(&c, &big, SHARE_BESTFIT);
    assert_int_equal(ch.gpus, 0x2);
    share_commit(&c, &big, ch);
    assert_int_equal(nodes[0].gpu_free[0], 500);
    assert_int_equal(nodes[0].gpu_free[1], 400);
    /* a whole GPU needs an entirely free one: 500 + 400 free is not one GPU */
    assert_false(share_fits(&nodes[0], &whole));
    assert_int_equal(share_choose(&c, &whole, SHARE_BESTFIT).node, -1);
    /* several whole GPUs: only entirely free ones */
    struct share_node n4 = gpu_node(4);
    n4.gpu_free[1] = 999;
    struct share_pod two = pod(2, 1000), four = pod(4, 1000);
    assert_true(share_fits(&n4, &two));
    assert_false(share_fits(&n4, &four));
    nodes[0] = n4;
    ch = share_choose(&c, &two, SHARE_BESTFIT);
    assert_int_equal(ch.gpus, 0x5); /* GPUs 0 and 2 */
    /* cpu, memory and the model constrain too */
    struct share_pod cpu_heavy = pod(1, 100);
    cpu_heavy.cpu = 64001;
    assert_false(share_fits(&n4, &cpu_heavy));
    struct share_pod t4_only = pod(1, 100);
    t4_only.models = 1u << 3;
    n4.model = 2;
    assert_false(share_fits(&n4, &t4_only));
    n4.model = 3;
    assert_true(share_fits(&n4, &t4_only));
    struct share_pod cpu_only = pod(0, 0);
    n4.model = 2;
    assert_true(share_fits(&n4, &cpu_only)); /* no GPU asked: any model */
    share_fini(&c);
}

/* HAMi's binpack and spread, per node and per GPU */
static void binpack_and_spread(void **unused)
{
    (void)unused;
    struct share_node nodes[2] = {gpu_node(2), gpu_node(2)};
    nodes[0].gpu_free[0] = 300;
    nodes[0].gpu_free[1] = 800;
    struct share_cluster c = {.nodes = nodes, .n_nodes = 2};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(share_init(&c, NULL, 0, 0, &eb), 0);
    struct share_pod p = pod(1, 200);
    struct share_choice bp = share_choose(&c, &p, SHARE_BESTFIT);
    struct share_choice sp = share_choose(&c, &p, SHARE_SPREAD);
    assert_int_equal(bp.node, 0); /* the fuller node, its fuller GPU */
    assert_int_equal(bp.gpus, 0x1);
    assert_int_equal(sp.node, 1); /* the emptier node */
    nodes[1].gpu_free[0] = 100;   /* now node 1 is the fuller one */
    nodes[1].gpu_free[1] = 100;
    nodes[1].version++;
    sp = share_choose(&c, &p, SHARE_SPREAD);
    assert_int_equal(sp.node, 0);
    assert_int_equal(sp.gpus, 0x2); /* the emptier GPU of it */
    share_fini(&c);
}

static void fragmentation_measure(void **unused)
{
    (void)unused;
    struct share_node n = gpu_node(2);
    n.gpu_free[1] = 300;
    struct share_type types[2] = {{.req = pod(1, 500), .freq = 0.5},
                                  {.req = pod(2, 1000), .freq = 0.5}};
    /* 500 fits GPU 0: GPU 1 (300) is lost to it; two whole GPUs do not fit: all 1300 lost */
    assert_true(fgd_node_frag(&n, types, 2) > 799.999 && fgd_node_frag(&n, types, 2) < 800.001);
    n.cpu_free = 0; /* nothing fits any more: everything free is lost */
    assert_true(fgd_node_frag(&n, types, 2) > 1299.999 && fgd_node_frag(&n, types, 2) < 1300.001);
    n.gpu_free[0] = n.gpu_free[1] = 0;
    assert_true(fgd_node_frag(&n, types, 2) == 0.0);
    /* as in FGD's simulator: a request for no GPU leaves every free GPU idle, fit or not, and
     * memory is not part of the measure */
    struct share_node m = gpu_node(2);
    m.gpu_free[1] = 300;
    m.mem_free = 0;
    struct share_type cpu_and_share[2] = {{.req = pod(0, 0), .freq = 0.5},
                                          {.req = pod(1, 500), .freq = 0.5}};
    double f = fgd_node_frag(&m, cpu_and_share, 2);
    assert_true(f > 0.5 * 1300 + 0.5 * 300 - 0.001 && f < 0.5 * 1300 + 0.5 * 300 + 0.001);
}

static void fgd_keeps_gpus_usable(void **unused)
{
    (void)unused;
    /* node 0 has 700 free, node 1 a whole free GPU; requests of 700 are what arrives. A 300
     * share: best fit fills node 0 (400 left, useless to 700s); FGD puts it on node 1, which
     * keeps 700 free there and 700 on node 0. Ten nodes (eight without GPUs): node 1's place in
     * the order costs 3000 x 1/10 milli, less than the 400 it saves. */
    struct share_node nodes[10];
    for (int i = 0; i < 10; i++)
        nodes[i] = gpu_node(i < 2 ? 1 : 0);
    nodes[0].gpu_free[0] = 700;
    struct share_type types[1] = {{.req = pod(1, 700), .freq = 1.0}};
    types[0].req.type = 0;
    struct share_cluster c = {.nodes = nodes, .n_nodes = 10};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(share_init(&c, types, 1, 1, &eb), 0);
    struct share_pod small = pod(1, 300);
    small.type = 1; /* not a typical request: no memo */
    assert_int_equal(share_choose(&c, &small, SHARE_BESTFIT).node, 0);
    assert_int_equal(share_choose(&c, &small, SHARE_FGD).node, 1);
    assert_int_equal(share_choose(&c, &small, SHARE_FGD_PLAIN).node, 1);
    /* the memo gives the same answer and follows the node's changes */
    struct share_pod seven = types[0].req;
    struct share_choice ch = share_choose(&c, &seven, SHARE_FGD);
    assert_true(ch.node == 0 || ch.node == 1);
    share_commit(&c, &seven, ch);
    struct share_choice again = share_choose(&c, &seven, SHARE_FGD);
    assert_int_equal(again.node, 1 - ch.node);
    share_commit(&c, &seven, again);
    assert_int_equal(share_choose(&c, &seven, SHARE_FGD).node, -1);
    assert_int_equal(c.gpu_milli_used, 300 + 700 + 700);
    share_fini(&c);
    /* two nodes: the second place costs 1500 milli, more than the 400 saved: FGD packs node 0 */
    nodes[0] = gpu_node(1);
    nodes[0].gpu_free[0] = 700;
    nodes[1] = gpu_node(1);
    c.n_nodes = 2;
    assert_int_equal(share_init(&c, types, 1, 2, &eb), 0); /* small is class 1: memoised */
    assert_int_equal(share_choose(&c, &small, SHARE_FGD).node, 0);
    assert_int_equal(share_choose(&c, &small, SHARE_FGD_PLAIN).node, 1); /* 40 against 50 */
    assert_int_equal(share_choose(&c, &small, SHARE_FGD).node, 0);       /* memo per policy */
    share_fini(&c);
}

/* FGD's simulator's plugins as published: integer scores, ties by rank */
static void published_plugins(void **unused)
{
    (void)unused;
    /* best fit over the largest node's capacity, not each node's own: a 2-GPU node with both
     * free against an 8-GPU, 128-core node with 2 GPUs free, for one whole GPU. Ours: the big
     * node is left with 1/8 of its GPUs (fuller); FGD's: the small node has less left in
     * absolute terms (1000 milli and 63 cores against 1000 and 127) */
    struct share_node nodes[2] = {gpu_node(2), gpu_node(8)};
    nodes[1].cpu = nodes[1].cpu_free = 128000;
    for (int g = 2; g < 8; g++)
        nodes[1].gpu_free[g] = 0;
    struct share_cluster c = {.nodes = nodes, .n_nodes = 2};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(share_init(&c, NULL, 0, 0, &eb), 0);
    struct share_pod one = pod(1, 1000);
    assert_int_equal(share_choose(&c, &one, SHARE_BESTFIT).node, 1);
    assert_int_equal(share_choose(&c, &one, SHARE_BESTFIT_PLAIN).node, 0);
    /* equal integer scores: the lower rank */
    nodes[1] = gpu_node(2);
    share_fini(&c);
    assert_int_equal(share_init(&c, NULL, 0, 0, &eb), 0);
    assert_int_equal(share_choose(&c, &one, SHARE_BESTFIT_PLAIN).node, 0);
    uint32_t rank[2] = {1, 0};
    c.rank = rank;
    assert_int_equal(share_choose(&c, &one, SHARE_BESTFIT_PLAIN).node, 1);
    share_fini(&c);
    /* FGD's integer score: growths of 0 and -15 milli both score 50 and tie; the exact growth
     * tells them apart. Requests: 700 (5%) and 100 (95%); a 300 share on node 0 (all free)
     * changes nothing, on node 1 (400 free) it shrinks what 700s cannot use from 400 to 100 */
    struct share_type types[2] = {{.req = pod(1, 700), .freq = 0.05},
                                  {.req = pod(1, 100), .freq = 0.95}};
    nodes[0] = gpu_node(1);
    nodes[1] = gpu_node(1);
    nodes[1].gpu_free[0] = 400;
    c.rank = NULL;
    assert_int_equal(share_init(&c, types, 2, 0, &eb), 0);
    struct share_pod small = pod(1, 300);
    assert_int_equal(share_choose(&c, &small, SHARE_FGD_PLAIN).node, 0);
    c.rank = rank;
    assert_int_equal(share_choose(&c, &small, SHARE_FGD_PLAIN).node, 1);
    share_fini(&c);
}

static void openb_excerpts_read(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    struct openb_nodes nodes;
    struct openb_pods pods;
    int rc = openb_nodes_read(NODES_EXCERPT, &nodes, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(nodes.n, 20);
    assert_int_equal(nodes.n_models, 7); /* P100 G3 V100M32 V100M16 G2 T4 A10 */
    assert_string_equal(nodes.names[3], "openb-node-0022");
    assert_int_equal(nodes.nodes[3].n_gpus, 8);
    assert_int_equal(nodes.nodes[3].cpu, 128000);
    assert_int_equal(nodes.nodes[3].mem, 786432);
    assert_string_equal(nodes.models[nodes.nodes[3].model], "G3");
    rc = openb_pods_read(PODS_EXCERPT, &nodes, &pods, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(pods.n, 60);
    assert_string_equal(pods.names[1], "openb-pod-0001");
    assert_int_equal(pods.pods[1].cpu, 6000);
    assert_int_equal(pods.pods[1].num_gpu, 1);
    assert_int_equal(pods.pods[1].gpu_milli, 460);
    double sum = 0;
    for (uint32_t t = 0; t < pods.n_types; t++)
        sum += pods.types[t].freq;
    assert_true(sum > 0.999999 && sum < 1.000001);
    assert_true(pods.n_types > 5 && pods.n_types < 60);

    /* FGD's arrivals: every pod once in a seeded order, then draws up to 130% */
    int64_t total = 0;
    for (uint32_t i = 0; i < nodes.n; i++)
        total += nodes.nodes[i].n_gpus * SHARE_MILLI;
    uint32_t *a = NULL, *b = NULL, na = 0, nb = 0;
    assert_int_equal(openb_arrivals(&pods, total, 42, &a, &na, &eb), 0);
    assert_int_equal(openb_arrivals(&pods, total, 42, &b, &nb, &eb), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof(*a));
    free(b);
    assert_int_equal(openb_arrivals(&pods, total, 43, &b, &nb, &eb), 0);
    assert_true(na != nb || memcmp(a, b, na * sizeof(*a)) != 0);
    free(b);
    assert_true(na > pods.n);
    uint8_t seen[60] = {0};
    int64_t demand = 0;
    for (uint32_t i = 0; i < na; i++) {
        const struct share_pod *p = &pods.pods[a[i]];
        demand += p->num_gpu == 1 ? p->gpu_milli : p->num_gpu * SHARE_MILLI;
        if (i < pods.n)
            seen[a[i]]++;
    }
    for (uint32_t i = 0; i < pods.n; i++)
        assert_int_equal(seen[i], 1);
    assert_true(demand <= total * 130 / 100);
    assert_true(demand > total * 130 / 100 - 8 * SHARE_MILLI);

    /* the curve: allocated never above arrived, never decreasing, all pods accounted */
    for (int pol = SHARE_BESTFIT; pol <= SHARE_BESTFIT_PLAIN; pol++) {
        struct openb_result r;
        assert_int_equal(openb_run(&nodes, &pods, a, na, (enum share_policy)pol, 7, &r, &eb), 0);
        assert_int_equal(r.arrived, na);
        assert_int_equal(r.placed + r.failed, na);
        assert_true(r.failed > 0); /* 130% cannot all fit */
        for (int k = 1; k <= OPENB_CURVE_MAX; k++) {
            assert_true(r.curve[k] >= r.curve[k - 1]);
            assert_true(r.curve[k] <= k + 0.001 + 100.0 * 8 * SHARE_MILLI / (double)total);
            assert_true(r.curve[k] <= 100.0);
        }
        assert_true(r.curve[100] > 50.0);
    }
    free(a);
    openb_pods_free(&pods);
    openb_nodes_free(&nodes);
}

/* Writes `text` to a temporary file; returns its path (static buffer per call site). */
static void write_tmp(char *path, const char *text)
{
    strcpy(path, "/tmp/gangsched-test-openb-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void openb_bad_input(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    struct openb_nodes nodes;
    struct openb_pods pods;
    char path[64];
    static const struct {
        const char *text, *want;
    } bad_nodes[] = {
        {"name,cpu\nx,1\n", ":1: not an openb node list (expected the header sn,cpu_milli,"},
        {"sn,cpu_milli,memory_mib,gpu,model\nn1,64000,1024,2,T4\nn2,lots,1024,2,T4\n",
         ":3: column 'cpu_milli': 'lots' is not an integer"},
        {"sn,cpu_milli,memory_mib,gpu,model\nn1,64000,1024,33,T4\n",
         ":2: column 'gpu': 33 is above 32"},
        {"sn,cpu_milli,memory_mib,gpu,model\nn1,64000,1024,2,\n", ":2: column 'model': empty"},
        {"sn,cpu_milli,memory_mib,gpu,model\nn1,64000,1024,2\n", ":2: 4 fields, the header has 5"},
        {"sn,cpu_milli,memory_mib,gpu,model\n", ": no nodes"},
        {"sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,0,\nn2,1,1,0,\nn1,1,1,0,\n",
         ": node \"n1\" appears twice"},
    };
    for (size_t i = 0; i < sizeof(bad_nodes) / sizeof(bad_nodes[0]); i++) {
        write_tmp(path, bad_nodes[i].text);
        assert_int_not_equal(openb_nodes_read(path, &nodes, &eb), 0);
        if (!strstr(eb.msg, bad_nodes[i].want) || !strstr(eb.msg, path))
            fail_msg("case %zu: got \"%s\", wanted \"%s\"", i, eb.msg, bad_nodes[i].want);
        unlink(path);
    }
    /* a byte order mark and CRLF line ends are accepted */
    write_tmp(path, "\xEF\xBB\xBFsn,cpu_milli,memory_mib,gpu,model\r\nn1,64000,1024,2,T4\r\n");
    assert_int_equal(openb_nodes_read(path, &nodes, &eb), 0);
    assert_int_equal(nodes.n, 1);
    assert_int_equal(nodes.nodes[0].n_gpus, 2);
    openb_nodes_free(&nodes);
    unlink(path);
    assert_int_equal(openb_nodes_read(NODES_EXCERPT, &nodes, &eb), 0);
    static const char hdr[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                              "creation_time,deletion_time,scheduled_time\n";
    static const struct {
        const char *rows, *want;
    } bad_pods[] = {
        {"p1,1000,10,2,500,,LS,Running,0,1,0\n", ":2: column 'gpu_milli': 500 with num_gpu 2"},
        {"p1,1000,10,1,0,,LS,Running,0,1,0\n", ":2: column 'gpu_milli': 0 for a pod with 1 GPU"},
        {"p1,1000,10,1,1001,,LS,Running,0,1,0\n", ":2: column 'gpu_milli': 1001 is above 1000"},
        {"p1,1000,10,1,500,,LS,Running,-5,1,0\n", ":2: column 'creation_time': '-5' is not"},
        {"p1,1000,10,1,500,,LS\n", ":2: 7 fields, the header has 11"},
    };
    for (size_t i = 0; i < sizeof(bad_pods) / sizeof(bad_pods[0]); i++) {
        char text[600];
        snprintf(text, sizeof(text), "%s%s", hdr, bad_pods[i].rows);
        write_tmp(path, text);
        assert_int_not_equal(openb_pods_read(path, &nodes, &pods, &eb), 0);
        if (!strstr(eb.msg, bad_pods[i].want))
            fail_msg("pod case %zu: got \"%s\", wanted \"%s\"", i, eb.msg, bad_pods[i].want);
        unlink(path);
    }
    /* gpu_spec: alternatives of the nodes' models; a model no node has matches nothing */
    char text[600];
    snprintf(text, sizeof(text), "%s%s", hdr,
             "p1,1000,10,1,500,V100M16|V100M32,LS,Running,0,1,0\n"
             "p2,1000,10,1,500,H100,LS,Running,0,1,0\n");
    write_tmp(path, text);
    assert_int_equal(openb_pods_read(path, &nodes, &pods, &eb), 0);
    unlink(path);
    uint32_t v16 = 0, v32 = 0;
    for (uint32_t m = 0; m < nodes.n_models; m++) {
        if (strcmp(nodes.models[m], "V100M16") == 0)
            v16 = 1u << m;
        if (strcmp(nodes.models[m], "V100M32") == 0)
            v32 = 1u << m;
    }
    assert_int_equal(pods.pods[0].models, v16 | v32);
    bool any = false;
    for (uint32_t i = 0; i < nodes.n; i++)
        any |= share_fits(&nodes.nodes[i], &pods.pods[1]);
    assert_false(any);
    openb_pods_free(&pods);
    openb_nodes_free(&nodes);
}

static const char pod_hdr[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                              "creation_time,deletion_time,scheduled_time\n";

/* FGD's typical pods: the most popular requests (memory aside) until they cover 95% */
static void typical_pods(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    struct openb_nodes nodes;
    struct openb_pods pods;
    char path[64], text[4096];
    assert_int_equal(openb_nodes_read(NODES_EXCERPT, &nodes, &eb), 0);
    for (int b = 1; b <= 2; b++) { /* 19 + 1: the rare one is left out; 18 + 2: it is in */
        snprintf(text, sizeof(text), "%s", pod_hdr);
        for (int i = 0; i < 20; i++) /* A pods differ in memory only: one typical pod */
            snprintf(text + strlen(text), sizeof(text) - strlen(text),
                     i < 20 - b ? "a%d,4000,%d,1,500,,LS,Running,0,1,0\n"
                                : "b%d,8000,%d,2,1000,,LS,Running,0,1,0\n",
                     i, 1000 + i % 2);
        write_tmp(path, text);
        assert_int_equal(openb_pods_read(path, &nodes, &pods, &eb), 0);
        unlink(path);
        assert_int_equal(pods.n_classes, 3 + (b == 2)); /* memory makes classes */
        assert_int_equal(pods.n_types, b);
        assert_int_equal(pods.types[0].req.gpu_milli, 500);
        if (b == 2)
            assert_true(pods.types[1].freq > 0.0999 && pods.types[1].freq < 0.1001);
        else
            assert_true(pods.types[0].freq > 0.9999 && pods.types[0].freq < 1.0001);
        assert_int_equal(pods.pods[0].type, 0);
        assert_int_equal(pods.pods[1].type, 1);
        openb_pods_free(&pods);
    }
    openb_nodes_free(&nodes);
}

/* The curve as FGD's analysis computes it: the mean over the arrivals whose arrived
 * percentage rounds (half to even) to k, else over k - 1 and k + 1, else the allocation when
 * the arrivals first reached k% */
static void curve_windows(void **unused)
{
    (void)unused;
    struct sched_errbuf eb = {{0}};
    struct openb_nodes nodes;
    struct openb_pods pods;
    char path[64], text[600];
    write_tmp(path, "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,10,T4\n");
    assert_int_equal(openb_nodes_read(path, &nodes, &eb), 0);
    unlink(path);
    snprintf(text, sizeof(text), "%s%s", pod_hdr,
             "s,1000,10,1,50,,LS,Running,0,1,0\nw,1000,10,1,1000,,LS,Running,0,1,0\n");
    write_tmp(path, text);
    assert_int_equal(openb_pods_read(path, &nodes, &pods, &eb), 0);
    unlink(path);
    uint32_t order[3] = {0, 1, 1}; /* arrived 0.5%, 10.5%, 20.5% of 10 GPUs; all placed */
    struct openb_result r;
    assert_int_equal(openb_run(&nodes, &pods, order, 3, SHARE_BESTFIT, 1, &r, &eb), 0);
    assert_int_equal(r.placed, 3);
    assert_true(r.curve[0] > 0.4999 && r.curve[0] < 0.5001);     /* 0.5 rounds to 0 */
    assert_true(r.curve[1] > 0.4999 && r.curve[1] < 0.5001);     /* from window 0 */
    assert_true(r.curve[10] > 10.4999 && r.curve[10] < 10.5001); /* 10.5 rounds to 10 */
    assert_true(r.curve[11] > 10.4999 && r.curve[11] < 10.5001);
    assert_true(r.curve[5] > 10.4999 && r.curve[5] < 10.5001); /* first reached 5% at 10.5 */
    assert_true(r.curve[20] > 20.4999 && r.curve[20] < 20.5001);
    assert_true(r.curve[130] > 20.4999 && r.curve[130] < 20.5001); /* the end */
    openb_pods_free(&pods);
    openb_nodes_free(&nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shares_stay_on_one_gpu), cmocka_unit_test(binpack_and_spread),
        cmocka_unit_test(fragmentation_measure),  cmocka_unit_test(fgd_keeps_gpus_usable),
        cmocka_unit_test(openb_excerpts_read),    cmocka_unit_test(openb_bad_input),
        cmocka_unit_test(published_plugins),      cmocka_unit_test(curve_windows),
        cmocka_unit_test(typical_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
