/* tests/unit/test_config.c: tests for the configuration loader (config/load*.c, model.c, print.c).
 *
 * Owns: a full valid configuration checked field by field (quotas in base units), the defaults
 * and the quota shorthand, a table of invalid configurations each checked for SCHED_EINVAL, its
 * "LINE:COLUMN" and the key path or problem, the promise that a rejected file interns no resource
 * name, config_print_tree output, the shipped examples (config/examples/, run from the repo
 * root), the file errors, and large inputs (sorted duplicate checks, the size limit).
 */
/* cmocka.h needs these four headers first. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "config/file.h"

#define H "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"

static struct config *load_ok(const char *yaml)
{
    struct config *c = NULL;
    struct sched_errbuf eb;
    eb.msg[0] = '\0';
    int rc = config_load_buffer("t.yaml", yaml, strlen(yaml), &c, &eb);
    if (rc != 0)
        fail_msg("unexpected error %d: %s", rc, eb.msg);
    assert_non_null(c);
    return c;
}

static const struct config_quota *quota(const struct config *c, const struct config_quota_set *qs,
                                        const char *flavor, const char *res)
{
    int f = config_flavor_index(c, flavor);
    assert_true(f >= 0);
    return config_quota_get(c, qs, (uint32_t)f, res_lookup(res));
}

static const char full_yaml[] =
    H "topology:\n"
      "  levels:\n"
      "    - {name: zone, label: topology.kubernetes.io/zone}\n"
      "    - name: rack\n"
      "      label: network.topology.gangsched.io/rack\n"
      "fairShare:\n"
      "  halfLife: 1h30m\n"
      "starvation: {after: 90s, maxReservations: 3, probationMinGpus: 64}\n"
      "flavors:\n"
      "  - name: h100\n"
      "    nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, pool: b}\n"
      "  - name: a100\n"
      "    nodeLabels:\n"
      "      nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
      "cohorts:\n"
      "  - name: org\n"
      "    quota: {h100: {nvidia.com/gpu: 16}}\n"
      "  - name: research\n"
      "    parent: org\n"
      "    quota:\n"
      "      h100:\n"
      "        nvidia.com/gpu: {nominal: 0, borrowingLimit: 8, lendingLimit: 4}\n"
      "queues:\n"
      "  - name: team-a\n"
      "    cohort: research\n"
      "    weight: 2.5\n"
      "    priority: -7\n"
      "    ordering: StrictFIFO\n"
      "    profile: inference\n"
      "    preemption:\n"
      "      withinQueue: LowerOrNewerEqualPriority\n"
      "      reclaimWithinCohort: LowerPriority\n"
      "      fairSharePreemption: true\n"
      "      minRuntime: 10m\n"
      "      restartCost: 1h5s\n"
      "      checkpointGrace: 250ms\n"
      "    quota:\n"
      "      h100:\n"
      "        nvidia.com/gpu: {nominal: 64, borrowingLimit: 16, lendingLimit: 32}\n"
      "        cpu: 512\n"
      "        memory: 16Gi\n"
      "      a100:\n"
      "        cpu: \"500m\"\n"
      "        nvidia.com/gpu: '8'\n"
      "  - name: solo\n"
      "    profile: batch\n"
      "    quota: {a100: {nvidia.com/gpu: 2, pods: 1k}}\n"
      "profiles:\n"
      "  - name: batch\n"
      "    weights: {binpack: 5, spread: 1.5}\n"
      "  - name: training\n"
      "    weights: {binpack: 1, topology: 2, spread: 3}\n";

static void test_full(void **state)
{
    (void)state;
    struct config *c = load_ok(full_yaml);
    assert_string_equal(c->path, "t.yaml");
    assert_int_equal(c->n_levels, 2);
    assert_string_equal(c->level_names[0], "zone");
    assert_string_equal(c->level_labels[0], "topology.kubernetes.io/zone");
    assert_string_equal(c->level_names[1], "rack");
    assert_string_equal(c->level_labels[1], "network.topology.gangsched.io/rack");
    assert_int_equal(c->fair_half_life_ms, 5400000);
    assert_int_equal(c->starve_after_ms, 90000);
    assert_int_equal(c->max_reservations, 3);
    assert_int_equal(c->probation_min_gpus, 64);

    assert_int_equal(c->n_flavors, 2);
    assert_string_equal(c->flavors[0].name, "h100");
    assert_int_equal(c->flavors[0].n_node_labels, 2);
    /* sorted by key */
    assert_string_equal(c->flavors[0].node_labels[0].key, "nvidia.com/gpu.product");
    assert_string_equal(c->flavors[0].node_labels[0].value, "NVIDIA-H100-80GB-HBM3");
    assert_string_equal(c->flavors[0].node_labels[1].key, "pool");
    assert_string_equal(c->flavors[0].node_labels[1].value, "b");
    assert_string_equal(c->flavors[1].name, "a100");
    assert_int_equal(c->flavors[1].n_node_labels, 1);
    assert_int_equal(config_flavor_index(c, "a100"), 1);
    assert_int_equal(config_flavor_index(c, "default"), -1);

    assert_int_equal(c->n_cohorts, 2);
    assert_string_equal(c->cohorts[0].name, "org");
    assert_int_equal(c->cohorts[0].parent, -1);
    assert_int_equal(c->cohorts[0].line, 18);
    assert_int_equal(c->cohorts[0].column, 5);
    const struct config_quota *q = quota(c, &c->cohorts[0].q, "h100", "nvidia.com/gpu");
    assert_non_null(q);
    assert_int_equal(q->nominal, 16);
    assert_true(q->borrowing_limit == CONFIG_NO_LIMIT);
    assert_true(q->lending_limit == CONFIG_NO_LIMIT);
    assert_null(quota(c, &c->cohorts[0].q, "a100", "nvidia.com/gpu"));
    assert_string_equal(c->cohorts[1].name, "research");
    assert_int_equal(c->cohorts[1].parent, 0);
    q = quota(c, &c->cohorts[1].q, "h100", "nvidia.com/gpu");
    assert_int_equal(q->nominal, 0);
    assert_int_equal(q->borrowing_limit, 8);
    assert_int_equal(q->lending_limit, 4);

    assert_int_equal(c->n_queues, 2);
    assert_int_equal(config_queue_index(c, "team-a"), 0);
    assert_int_equal(config_queue_index(c, "solo"), 1);
    assert_int_equal(config_queue_index(c, "org"), -1);
    assert_int_equal(config_queue_index(c, NULL), -1);
    const struct config_queue *a = &c->queues[0];
    assert_string_equal(a->name, "team-a");
    assert_int_equal(a->line, 26);
    assert_int_equal(a->column, 5);
    assert_int_equal(a->cohort, 1);
    assert_true(a->weight == 2.5);
    assert_int_equal(a->priority, -7);
    assert_int_equal(a->ordering, CONFIG_STRICT_FIFO);
    assert_string_equal(c->profiles[a->profile].name, "inference");
    assert_int_equal(a->preemption.within_queue, CONFIG_PREEMPT_LOWER_OR_NEWER_EQUAL);
    assert_int_equal(a->preemption.reclaim, CONFIG_RECLAIM_LOWER_PRIORITY);
    assert_true(a->preemption.fair_share);
    assert_int_equal(a->preemption.min_runtime_ms, 600000);
    assert_int_equal(a->preemption.restart_cost_ms, 3605000);
    assert_int_equal(a->preemption.checkpoint_grace_ms, 250);
    q = quota(c, &a->q, "h100", "nvidia.com/gpu");
    assert_int_equal(q->nominal, 64);
    assert_int_equal(q->borrowing_limit, 16);
    assert_int_equal(q->lending_limit, 32);
    q = quota(c, &a->q, "h100", "cpu");
    assert_int_equal(q->nominal, 512000); /* millicores */
    assert_true(q->borrowing_limit == CONFIG_NO_LIMIT);
    q = quota(c, &a->q, "h100", "memory");
    assert_int_equal(q->nominal, 17179869184LL); /* bytes */
    assert_int_equal(quota(c, &a->q, "a100", "cpu")->nominal, 500);
    assert_int_equal(quota(c, &a->q, "a100", "nvidia.com/gpu")->nominal, 8);
    assert_null(quota(c, &a->q, "a100", "memory"));
    /* bounds */
    assert_null(config_quota_get(c, &a->q, 2, RES_GPU));
    assert_null(config_quota_get(c, &a->q, 0, -1));
    assert_null(config_quota_get(c, &a->q, 0, RES_MAX));
    assert_null(config_quota_get(c, NULL, 0, RES_GPU));

    const struct config_queue *s = &c->queues[1];
    assert_int_equal(s->cohort, -1);
    assert_true(s->weight == 1.0);
    assert_string_equal(c->profiles[s->profile].name, "batch");
    assert_int_equal(quota(c, &s->q, "a100", "pods")->nominal, 1000);

    /* built-ins first (training overridden in place), then the declared ones */
    assert_int_equal(c->n_profiles, 3);
    assert_string_equal(c->profiles[0].name, "training");
    assert_true(c->profiles[0].weights[CONFIG_SCORE_BINPACK] == 1.0);
    assert_true(c->profiles[0].weights[CONFIG_SCORE_TOPOLOGY] == 2.0);
    assert_true(c->profiles[0].weights[CONFIG_SCORE_SPREAD] == 3.0);
    assert_string_equal(c->profiles[1].name, "inference");
    assert_true(c->profiles[1].weights[CONFIG_SCORE_SPREAD] == 10.0);
    assert_string_equal(c->profiles[2].name, "batch");
    assert_true(c->profiles[2].weights[CONFIG_SCORE_BINPACK] == 5.0);
    assert_true(c->profiles[2].weights[CONFIG_SCORE_TOPOLOGY] == 0.0);
    assert_true(c->profiles[2].weights[CONFIG_SCORE_SPREAD] == 1.5);
    config_free(c);
}

static void test_defaults(void **state)
{
    (void)state;
    struct config *c = load_ok(H);
    assert_string_equal(c->path, "t.yaml");
    assert_int_equal(c->n_levels, 0);
    assert_int_equal(c->fair_half_life_ms, 24LL * 3600 * 1000);
    assert_int_equal(c->starve_after_ms, 10 * 60 * 1000);
    assert_int_equal(c->max_reservations, 1);
    assert_int_equal(c->probation_min_gpus, CONFIG_PROBATION_MIN_GPUS);
    assert_int_equal(c->n_flavors, 1);
    assert_string_equal(c->flavors[0].name, "default");
    assert_int_equal(c->flavors[0].n_node_labels, 0);
    assert_int_equal(c->n_cohorts, 0);
    assert_int_equal(c->n_queues, 0);
    assert_int_equal(c->n_profiles, 2);
    assert_string_equal(c->profiles[0].name, "training");
    assert_true(c->profiles[0].weights[0] == 10 && c->profiles[0].weights[1] == 10 &&
                c->profiles[0].weights[2] == 0);
    assert_string_equal(c->profiles[1].name, "inference");
    assert_true(c->profiles[1].weights[0] == 0 && c->profiles[1].weights[1] == 2 &&
                c->profiles[1].weights[2] == 10);
    config_free(c);

    c = load_ok(H "hami: {nodeSchedulerPolicy: spread, gpuSchedulerPolicy: binpack}\n");
    assert_int_equal(c->share_node_policy, 2); /* 1 + GS_SPREAD */
    assert_int_equal(c->share_gpu_policy, 1);  /* 1 + GS_BINPACK */
    config_free(c);

    c = load_ok(H "fairShare: {halfLife: 0}\nstarvation: {after: \"0\", maxReservations: 0}\n"
                  "queues:\n  - name: q\n    cohort: ~\n    quota:\n");
    assert_int_equal(c->fair_half_life_ms, 0);
    assert_int_equal(c->starve_after_ms, 0);
    assert_int_equal(c->max_reservations, 0);
    assert_int_equal(c->share_node_policy, 0); /* HAMi's defaults */
    assert_int_equal(c->share_gpu_policy, 0);
    const struct config_queue *q = &c->queues[0];
    assert_int_equal(q->cohort, -1);
    assert_true(q->weight == 1.0);
    assert_int_equal(q->priority, 0);
    assert_int_equal(q->ordering, CONFIG_BEST_EFFORT_FIFO);
    assert_int_equal(q->profile, -1);
    assert_int_equal(q->preemption.within_queue, CONFIG_PREEMPT_LOWER_PRIORITY);
    assert_int_equal(q->preemption.reclaim, CONFIG_RECLAIM_ANY);
    assert_false(q->preemption.fair_share);
    assert_int_equal(q->preemption.min_runtime_ms, 0);
    assert_int_equal(q->preemption.restart_cost_ms, 0);
    assert_int_equal(q->preemption.checkpoint_grace_ms, 0);
    /* no quota: an empty table, never NULL */
    assert_non_null(q->q.quota);
    assert_non_null(q->q.has);
    assert_null(config_quota_get(c, &q->q, 0, RES_GPU));
    config_free(c);
}

static void test_shorthand(void **state)
{
    (void)state;
    struct config *c = load_ok(H "cohorts: [{name: all}]\n"
                                 "queues:\n"
                                 "  - name: q\n"
                                 "    cohort: all\n"
                                 "    quota:\n"
                                 "      default:\n"
                                 "        cpu: 1.5\n"
                                 "        memory: \"1G\"\n"
                                 "        nvidia.com/gpu: 8\n"
                                 "        pods: {nominal: 10, borrowingLimit: 0}\n"
                                 "        nvidia.com/mig-1g.10gb: ~\n");
    const struct config_quota_set *qs = &c->queues[0].q;
    const struct config_quota *q = config_quota_get(c, qs, 0, RES_CPU);
    assert_int_equal(q->nominal, 1500);
    assert_true(q->borrowing_limit == CONFIG_NO_LIMIT && q->lending_limit == CONFIG_NO_LIMIT);
    assert_int_equal(config_quota_get(c, qs, 0, RES_MEMORY)->nominal, 1000000000);
    assert_int_equal(config_quota_get(c, qs, 0, RES_GPU)->nominal, 8);
    q = config_quota_get(c, qs, 0, RES_PODS);
    assert_int_equal(q->nominal, 10);
    assert_int_equal(q->borrowing_limit, 0);
    assert_true(q->lending_limit == CONFIG_NO_LIMIT);
    /* a null entry is absent, and its name is still interned (the file was valid) */
    int mig = res_lookup("nvidia.com/mig-1g.10gb");
    assert_true(mig >= RES_N_WELLKNOWN);
    assert_null(config_quota_get(c, qs, 0, mig));
    config_free(c);
}

static void test_version(void **state)
{
    (void)state;
    struct config *a = load_ok(H);
    struct config *b = load_ok(H);
    struct config *d = load_ok(H "# a comment changes the bytes\n");
    assert_true(a->version == b->version);
    assert_true(a->version != d->version);
    config_free(a);
    config_free(b);
    config_free(d);
    config_free(NULL);
}

struct bad {
    const char *yaml;
    const char *where;   /* "LINE:COLUMN: " expected right after "t.yaml:" */
    const char *problem; /* fragment of the rest of the message */
};

#define Q1 "queues:\n  - name: a\n"                             /* lines 3-4 */
#define QQ "queues:\n  - name: a\n    quota:\n      default:\n" /* lines 3-6 */

static const struct bad bad_configs[] = {
    /* files and YAML */
    {"", "1:1: ", "empty file"},
    {"# only a comment\n\n", "1:1: ", "empty file"},
    {H "queues: [a, b\n", "4:1: ", "YAML syntax error: did not find expected ',' or ']'"},
    {H "queues:\n\t- name: a\n", "4:1: ", "YAML syntax error: found character that cannot start"},
    {H "x: \"\xff\"\n", "3:5: ", "YAML syntax error: invalid leading UTF-8 octet"},
    {"- a\n- b\n",
     "1:1: ", "the document must be a mapping with apiVersion and kind, got a sequence"},
    {"just text\n",
     "1:1: ", "must be a mapping with apiVersion and kind, got the string \"just text\""},
    {H "flavors:\n  - &f {name: x}\n  - *f\n", "5:5: ", "flavors[1]: aliases are not supported"},
    {H "---\n" H, "3:1: ", "only one YAML document is allowed"},
    {H "queues: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
     "3:40: ", "queues[0][0][0][0][0][0][0]...: nesting deeper than 32 levels"},
    /* header */
    {"kind: SchedulerConfig\n",
     "1:1: ", "apiVersion: missing required field (apiVersion: gangsched.io/v1alpha1)"},
    {"apiVersion: v1\nkind: SchedulerConfig\n",
     "1:13: ", "apiVersion: unsupported apiVersion \"v1\" (expected gangsched.io/v1alpha1)"},
    {"apiVersion: gangsched.io/v1alpha1\nkind: Config\n",
     "2:7: ", "kind: unsupported kind \"Config\" (expected SchedulerConfig)"},
    {"apiVersion: gangsched.io/v1alpha1\n", "1:1: ", "kind: missing required field"},
    /* keys and types */
    {H "queue: []\n", "3:1: ",
     "queue: unknown key (allowed: apiVersion, kind, device, devices, topology, fairShare, "
     "starvation, "
     "flavors, cohorts, queues, profiles, quotaMapping, hami)"},
    {H "kind: SchedulerConfig\n", "3:1: ", "kind: duplicate key (first at line 2, column 1)"},
    {H "queues: {}\n", "3:9: ", "queues: expected a sequence, got a mapping"},
    {H "queues: [foo]\n", "3:10: ", "queues[0]: expected a mapping, got the string \"foo\""},
    {H "queues:\n  - weight: 1\n", "4:5: ", "queues[0].name: missing required field"},
    {H "queues:\n  - name: \"\"\n", "4:11: ", "queues[0].name: must not be empty"},
    {H "queues:\n  - name: [a]\n", "4:11: ", "queues[0].name: expected a string, got a sequence"},
    {H "queues:\n  - name: \"a\\0b\"\n", "4:11: ", "queues[0].name: the string contains a NUL"},
    {H Q1 "    color: red\n", "5:5: ",
     "queues[0].color: unknown key (allowed: name, cohort, weight, priority, ordering, profile, "
     "quota, preemption, lifecycle, namespaces, localQueues)"},
    {H Q1 "    localQueues: [team-a]\n",
     "5:19: ", "queues[0].localQueues: \"team-a\" is not NAMESPACE/NAME"},
    {H Q1 "    namespaces: [a/b]\n", "5:18: ", "queues[0].namespaces: \"a/b\" is not a namespace"},
    /* namespaces are DNS-1123 labels, LocalQueue names DNS-1123 subdomains */
    {H Q1 "    namespaces: [ok-1, \"Team A\"]\n", "5:24: ",
     "queues[0].namespaces: \"Team A\" is not a namespace name (lowercase letters, digits and "
     "'-', at most 63, a letter or digit first and last)"},
    {H Q1 "    namespaces: [-a]\n", "5:18: ", "queues[0].namespaces: \"-a\" is not a namespace"},
    {H Q1 "    namespaces: [a-]\n", "5:18: ", "queues[0].namespaces: \"a-\" is not a namespace"},
    {H Q1 "    namespaces: [a.b]\n", "5:18: ", "queues[0].namespaces: \"a.b\" is not a namespace"},
    {H Q1 "    namespaces: [a123456789012345678901234567890123456789012345678901234567890123]\n",
     "5:18: ", "is not a namespace name"},
    {H Q1 "    localQueues: [\"UP PER/x y\"]\n",
     "5:19: ", "queues[0].localQueues: \"UP PER/x y\": \"UP PER\" is not a namespace name"},
    {H Q1 "    localQueues: [\"ns/x y\"]\n", "5:19: ",
     "queues[0].localQueues: \"ns/x y\": \"x y\" is not a LocalQueue name (a DNS-1123 subdomain"},
    {H Q1 "    localQueues: [ns/a..b]\n", "5:19: ", "\"a..b\" is not a LocalQueue name"},
    {H Q1 "    localQueues: [ns/a.-b]\n", "5:19: ", "\"a.-b\" is not a LocalQueue name"},
    {H Q1 "    localQueues: [ns/.a]\n", "5:19: ", "\".a\" is not a LocalQueue name"},
    {H Q1 "    localQueues: [ns/a.]\n", "5:19: ", "\"a.\" is not a LocalQueue name"},
    {H "queues:\n  - name: a\n    localQueues: [ns/q]\n  - name: b\n    localQueues: [ns/q]\n",
     "7:19: ", "queues[1].localQueues: LocalQueue \"ns/q\" is mapped twice (also to queue a)"},
    {H "fairShare: 24h\n", "3:12: ", "fairShare: expected a mapping, got the string \"24h\""},
    /* duplicate names */
    {H "queues:\n  - name: a\n  - name: b\n  - name: a\n",
     "6:11: ", "queues[2].name: duplicate queue name \"a\" (first declared at line 4)"},
    {H "cohorts: [{name: x}, {name: x}]\n",
     "3:29: ", "cohorts[1].name: duplicate cohort name \"x\" (first declared at line 3)"},
    {H "cohorts: [{name: x}]\nqueues: [{name: x}]\n", "4:17: ",
     "queues[0].name: name \"x\" is used by both a cohort and a queue (the cohort at line 3)"},
    {H "flavors: [{name: h}, {name: g}, {name: h}]\n",
     "3:40: ", "flavors[2].name: duplicate flavor name \"h\" (first declared at line 3)"},
    {H "profiles: [{name: p}, {name: p}]\n",
     "3:30: ", "profiles[1].name: duplicate profile name \"p\""},
    {H "flavors:\n  - name: h\n    nodeLabels: {a: 1, b: 2, a: 3}\n",
     "5:30: ", "flavors[0].nodeLabels.a: duplicate key (first at line 5, column 18)"},
    /* quantities and limits */
    {H QQ "        nvidia.com/gpu: -4\n",
     "7:25: ", "queues[0].quota.default.nvidia.com/gpu: negative quantity \"-4\""},
    {H "cohorts: [{name: c}]\n" QQ "        cpu: {nominal: \"-1\"}\n",
     "8:24: ", "queues[0].quota.default.cpu.nominal: negative quantity \"-1\""},
    {H QQ "        cpu: 12xyz\n",
     "7:14: ", "queues[0].quota.default.cpu: invalid quantity \"12xyz\""},
    {H QQ "        cpu: true\n", "7:14: ", "invalid quantity \"true\""},
    {H QQ "        cpu: [1]\n", "7:14: ",
     "cpu: expected a quantity or a mapping with nominal, borrowingLimit, lendingLimit, got a "
     "sequence"},
    {H QQ "        cpu: {borrowingLimit: 1}\n",
     "7:14: ", "queues[0].quota.default.cpu.nominal: missing required field"},
    {H QQ "        cpu: {nominal: 1, limit: 2}\n",
     "7:27: ", "cpu.limit: unknown key (allowed: nominal, borrowingLimit, lendingLimit)"},
    {H QQ "        nvidia.com/gpu: {nominal: 4, borrowingLimit: 2}\n", "7:54: ",
     "queues[0].quota.default.nvidia.com/gpu.borrowingLimit: borrowingLimit needs a cohort"},
    {H QQ "        nvidia.com/gpu: {nominal: 4, lendingLimit: 2}\n",
     "7:52: ", "nvidia.com/gpu.lendingLimit: lendingLimit needs a cohort"},
    {H "cohorts: [{name: c}]\n"
       "queues:\n  - name: a\n    cohort: c\n    quota:\n      default:\n"
       "        nvidia.com/gpu: {nominal: 32, lendingLimit: 40}\n",
     "9:53: ", "nvidia.com/gpu.lendingLimit: lendingLimit 40 is above nominal 32"},
    {H "cohorts: [{name: c}]\n"
       "queues:\n  - name: a\n    cohort: c\n    quota:\n      default:\n"
       "        memory: {nominal: 1Gi, lendingLimit: 2Gi}\n",
     "9:46: ", "lendingLimit 2Gi is above nominal 1Gi"},
    {H "cohorts:\n  - name: root\n    quota: {default: {cpu: {nominal: 1, borrowingLimit: 1}}}\n",
     "5:57: ", "cohorts[0].quota.default.cpu.borrowingLimit: borrowingLimit needs a parent cohort"},
    {H "cohorts:\n  - name: root\n    quota: {default: {cpu: {nominal: 1, lendingLimit: 1}}}\n",
     "5:55: ", "lendingLimit needs a parent cohort"},
    /* the tree */
    {H "cohorts:\n  - {name: a, parent: b}\n  - {name: b, parent: a}\n",
     "4:23: ", "cohorts[0].parent: cohort cycle: a -> b -> a"},
    {H "cohorts:\n  - {name: r}\n  - {name: x, parent: y}\n  - {name: y, parent: z}\n"
       "  - {name: z, parent: x}\n",
     "5:23: ", "cohorts[1].parent: cohort cycle: x -> y -> z -> x"},
    {H "cohorts: [{name: s, parent: s}]\n", "3:29: ", "cohort cycle: s -> s"},
    {H "cohorts: [{name: a, parent: nope}]\n",
     "3:29: ", "cohorts[0].parent: unknown cohort \"nope\""},
    {H "queues: [{name: a, cohort: nope}]\n",
     "3:28: ", "queues[0].cohort: unknown cohort \"nope\""},
    {H "queues: [{name: a}, {name: b, cohort: a}]\n",
     "3:39: ", "queues[1].cohort: \"a\" is a queue, not a cohort"},
    /* flavors and resources */
    {H QQ "        cpu: 1\n      h100:\n        cpu: 1\n",
     "8:7: ", "queues[0].quota.h100: unknown flavor \"h100\" (declared: default)"},
    {H "flavors: [{name: h100}, {name: a100}]\n" QQ "        cpu: 1\n",
     "7:7: ", "unknown flavor \"default\" (declared: h100, a100)"},
    {H "flavors: [{name: h100, nodeLabels: [a]}]\n",
     "3:36: ", "flavors[0].nodeLabels: expected a mapping, got a sequence"},
    {H QQ "        Bad_Name!: 1\n",
     "7:9: ", "queues[0].quota.default.Bad_Name!: invalid resource name \"Bad_Name!\""},
    {H QQ "        cpu: 1\n        cpu: 2\n",
     "8:9: ", "queues[0].quota.default.cpu: duplicate key (first at line 7, column 9)"},
    /* numbers, words, booleans */
    {H Q1 "    weight: 0\n", "5:13: ", "queues[0].weight: must be > 0 and <= 1000000, got 0"},
    {H Q1 "    weight: -1\n", "5:13: ", "must be > 0"},
    {H Q1 "    weight: heavy\n",
     "5:13: ", "queues[0].weight: expected a number, got the string \"heavy\""},
    {H Q1 "    weight: \"2\"\n", "5:13: ", "expected a number, got the string \"2\""},
    {H Q1 "    weight: .inf\n", "5:13: ", "expected a number"},
    {H Q1 "    priority: 2147483648\n",
     "5:15: ", "queues[0].priority: must be an integer in -2147483648..2147483647, got 2147483648"},
    {H Q1 "    priority: 1.5\n", "5:15: ", "expected an integer, got the number 1.5"},
    {H Q1 "    ordering: FIFO\n",
     "5:15: ", "queues[0].ordering: invalid value \"FIFO\" (allowed: BestEffortFIFO, StrictFIFO)"},
    {H Q1 "    preemption: {withinQueue: Always}\n", "5:31: ",
     "queues[0].preemption.withinQueue: invalid value \"Always\" (allowed: Never, LowerPriority, "
     "LowerOrNewerEqualPriority)"},
    {H Q1 "    preemption: {reclaimWithinCohort: all}\n",
     "5:39: ", "reclaimWithinCohort: invalid value \"all\" (allowed: Never, LowerPriority, Any)"},
    {H Q1 "    preemption: {fairSharePreemption: yes}\n", "5:39: ",
     "queues[0].preemption.fairSharePreemption: expected a boolean (true or false), got the "
     "string \"yes\""},
    {H Q1 "    profile: fast\n",
     "5:14: ", "queues[0].profile: unknown profile \"fast\" (known: training, inference)"},
    /* durations */
    {H "fairShare: {halfLife: 1.5h}\n",
     "3:23: ", "fairShare.halfLife: invalid duration \"1.5h\": fractions are not supported"},
    {H "starvation: {after: -5m}\n",
     "3:21: ", "starvation.after: invalid duration \"-5m\": negative duration"},
    {H "starvation: {after: 10}\n", "3:21: ", "invalid duration \"10\": missing unit"},
    /* the forms annotations used to accept: one grammar (sched/core/duration.h) refuses both */
    {H "starvation: {after: 90}\n", "3:21: ",
     "starvation.after: invalid duration \"90\": missing unit: a bare number is not a duration, "
     "write 90s for 90 seconds"},
    {H "fairShare: {halfLife: 30m1h}\n", "3:23: ",
     "fairShare.halfLife: invalid duration \"30m1h\": units must appear once each, largest first "
     "(d, h, m, s, ms): write 1h30m, not 30m1h"},
    {H Q1 "    preemption: {minRuntime: 5x}\n",
     "5:30: ", "queues[0].preemption.minRuntime: invalid duration \"5x\": unknown unit"},
    {H Q1 "    preemption: {restartCost: 5m1h}\n", "5:31: ", "largest first"},
    {H Q1 "    lifecycle: {maxRestarts: -1}\n", "5:30: ", "queues[0].lifecycle.maxRestarts"},
    {H Q1 "    lifecycle: {startTimeout: soon}\n", "5:31: ", "lifecycle.startTimeout: invalid"},
    {H Q1 "    lifecycle: {retries: 3}\n", "5:17: ", "lifecycle.retries: unknown key"},
    {H Q1 "    lifecycle: {backoffMax: 0}\n",
     "5:29: ", "queues[0].lifecycle.backoffMax: must be longer than 0"},
    {H Q1 "    lifecycle: {backoffMax: 0s}\n", "5:29: ", "backoffMax: must be longer than 0"},
    {H Q1 "    lifecycle: {backoffMax: 3600}\n",
     "5:29: ", "queues[0].lifecycle.backoffMax: invalid duration \"3600\": missing unit"},
    {H Q1 "    lifecycle: {backoffMax: -1h}\n", "5:29: ", "lifecycle.backoffMax: invalid duration"},
    {H Q1 "    preemption: {checkpointGrace: soon}\n",
     "5:35: ", "checkpointGrace: invalid duration \"soon\": expected a number followed by a unit"},
    {H "fairShare: {halfLife: 99999d}\n", "3:23: ", "duration too long"},
    {H "fairShare: {halfLife: {}}\n", "3:23: ", "expected a duration such as 90s"},
    {H "starvation: {maxReservations: 1001}\n",
     "3:31: ", "starvation.maxReservations: must be an integer in 0..1000, got 1001"},
    {H "starvation: {maxReservations: -1}\n", "3:31: ", "must be an integer in 0..1000"},
    {H "starvation: {probationMinGpus: 8.5}\n",
     "3:32: ", "starvation.probationMinGpus: expected an integer, got the number 8.5"},
    {H "starvation: {probationMinGpus: 1000001}\n",
     "3:32: ", "starvation.probationMinGpus: must be an integer in 0..1000000, got 1000001"},
    {H "starvation: {probationMinGpu: 8}\n", "3:14: ", "probationMinGpu"},
    {H "hami: {gpuSchedulerPolicy: tight}\n",
     "3:28: ", "hami.gpuSchedulerPolicy: invalid value \"tight\" (allowed: binpack, spread)"},
    {H "hami: {nodePolicy: spread}\n", "3:8: ", "hami.nodePolicy: unknown key"},
    /* topology */
    {H "topology:\n  levels: [{name: a, label: a}, {name: b, label: b}, {name: c, label: c}, "
       "{name: d, label: d}, {name: e, label: e}, {name: f, label: f}, {name: g, label: g}, "
       "{name: h, label: h}]\n",
     "4:11: ", "topology.levels: at most 7 levels"},
    {H "topology:\n  levels:\n    - {name: node, label: kubernetes.io/hostname}\n",
     "5:14: ", "topology.levels[0].name: the level name \"node\" is reserved"},
    {H "topology:\n  levels:\n    - {name: r, label: x}\n    - {name: r, label: y}\n",
     "6:14: ", "topology.levels[1].name: duplicate level name \"r\""},
    {H "topology:\n  levels:\n    - {name: r, label: x}\n    - {name: s, label: x}\n",
     "6:24: ", "topology.levels[1].label: duplicate level label"},
    {H "topology:\n  levels:\n    - {name: r}\n",
     "5:7: ", "topology.levels[0].label: missing required field"},
    {H "topology: {levels: [{name: r, label: x, size: 3}]}\n",
     "3:41: ", "topology.levels[0].size: unknown key (allowed: name, label)"},
    /* profiles */
    {H "profiles: [{name: p, weights: {binpack: -1}}]\n",
     "3:41: ", "profiles[0].weights.binpack: must be >= 0"},
    {H "profiles: [{name: p, weights: {packing: 1}}]\n",
     "3:32: ", "profiles[0].weights.packing: unknown key (allowed: binpack, topology, spread)"},
    {H "profiles: [{weights: {}}]\n", "3:12: ", "profiles[0].name: missing required field"},
};

/* queues[].lifecycle.backoffMax: the cap of a failed gang's retry delay, 1h by default. */
static void test_lifecycle_backoff_max(void **state)
{
    (void)state;
    const char *yaml = H "queues:\n  - name: a\n  - name: b\n"
                         "    lifecycle: {maxRestarts: 5, backoffMax: 10m}\n";
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &c, &eb), 0);
    assert_int_equal(c->n_queues, 2);
    assert_int_equal(c->queues[0].lifecycle.backoff_max_ms, 60 * 60 * 1000);
    assert_int_equal(c->queues[1].lifecycle.backoff_max_ms, 10 * 60 * 1000);
    assert_int_equal(c->queues[1].lifecycle.max_restarts, 5);
    config_free(c);
}

static void test_bad_configs(void **state)
{
    (void)state;
    int before = res_count();
    size_t n = sizeof(bad_configs) / sizeof(bad_configs[0]);
    assert_true(n >= 30);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        const struct bad *b = &bad_configs[i];
        struct config *c = NULL;
        struct sched_errbuf eb;
        eb.msg[0] = '\0';
        int rc = config_load_buffer("t.yaml", b->yaml, strlen(b->yaml), &c, &eb);
        char where[64];
        snprintf(where, sizeof(where), "t.yaml:%s", b->where);
        if (rc != SCHED_EINVAL || c != NULL || strncmp(eb.msg, where, strlen(where)) != 0 ||
            !strstr(eb.msg, b->problem)) {
            print_error("case %zu: rc %d, message\n  %s\nwanted %s...%s\n", i, rc, eb.msg, where,
                        b->problem);
            failures++;
            config_free(c);
        }
    }
    assert_int_equal(failures, 0);
    /* a rejected file interns no resource name */
    assert_int_equal(res_count(), before);
    assert_int_equal(res_lookup("Bad_Name!"), -1);
}

/* More distinct resource names than RES_MAX: rejected before anything is interned. */
static void test_too_many_resources(void **state)
{
    (void)state;
    int before = res_count();
    size_t cap = 8192, o = 0;
    char *y = malloc(cap);
    assert_non_null(y);
    o += (size_t)snprintf(y + o, cap - o, "%s", H QQ);
    for (int i = 0; i < RES_MAX + 2; i++)
        o += (size_t)snprintf(y + o, cap - o, "        example.com/r%d: 1\n", i);
    struct config *c = NULL;
    struct sched_errbuf eb;
    int rc = config_load_buffer("t.yaml", y, o, &c, &eb);
    assert_int_equal(rc, SCHED_EINVAL);
    assert_null(c);
    char where[128];
    int nth = RES_MAX - before; /* index of the first name that does not fit */
    snprintf(where, sizeof(where),
             "t.yaml:%d:9: queues[0].quota.default.example.com/r%d: ", 7 + nth, nth);
    if (strncmp(eb.msg, where, strlen(where)) != 0)
        fail_msg("got %s, wanted %s", eb.msg, where);
    assert_non_null(strstr(eb.msg, "too many resource names"));
    assert_int_equal(res_count(), before);
    free(y);
}

static void test_errors_without_errbuf(void **state)
{
    (void)state;
    struct config *c = NULL;
    assert_int_equal(config_load_buffer("t.yaml", "x: [", 4, &c, NULL), SCHED_EINVAL);
    assert_int_equal(config_load_buffer(NULL, H "queues: 1\n", strlen(H) + 10, &c, NULL),
                     SCHED_EINVAL);
    struct sched_errbuf eb;
    assert_int_equal(config_load_buffer(NULL, "x: 1\n", 5, &c, &eb), SCHED_EINVAL);
    assert_true(strncmp(eb.msg, "<buffer>:1:1: ", 14) == 0);
    assert_int_equal(config_load_buffer("t", NULL, 3, &c, &eb), SCHED_EINVAL);
    assert_int_equal(config_load_buffer("t", H, strlen(H), NULL, &eb), SCHED_EINVAL);
    assert_null(c);
    config_print_tree(NULL, stdout);
}

static char *print_to_string(const struct config *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    config_print_tree(c, f);
    fclose(f);
    return text;
}

static void test_print_tree(void **state)
{
    (void)state;
    struct config *c = load_ok(full_yaml);
    char *t = print_to_string(c);
    static const char *const want[] = {
        "flavors:",
        "h100",
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
        "  cohort org\n",
        "      nvidia.com/gpu@h100: nominal 16\n",
        "    cohort research\n",
        "        nvidia.com/gpu@h100: nominal 0, borrow <=8, lend <=4\n",
        "      queue team-a ",
        "weight 2.5",
        "priority -7",
        "StrictFIFO",
        "profile inference",
        "nvidia.com/gpu@h100: nominal 64, borrow <=16, lend <=32\n",
        "cpu@h100:            nominal 512\n",
        "memory@h100:         nominal 16Gi\n",
        "cpu@a100:            nominal 500m\n",
        "minRuntime 10m",
        "restartCost 1h5s",
        "checkpointGrace 250ms",
        "\n  queue solo ",
        "pods@a100:           nominal 1000\n",
        "halfLife 1h30m",
        "zone=topology.kubernetes.io/zone, rack=network.topology.gangsched.io/rack, node",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!strstr(t, want[i]))
            fail_msg("\"%s\" missing from:\n%s", want[i], t);
    }
    /* the tree: org before research before team-a; solo (no cohort) last */
    assert_true(strstr(t, "cohort org") < strstr(t, "cohort research"));
    assert_true(strstr(t, "cohort research") < strstr(t, "queue team-a"));
    assert_true(strstr(t, "queue team-a") < strstr(t, "queue solo"));
    free(t);
    config_free(c);
}

static void test_examples(void **state)
{
    (void)state;
    struct sched_errbuf eb;
    struct config *c = NULL;
    int rc = config_load_file("config/examples/itp-tenants.yaml", &c, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    static const char *const stems[] = {"cluster01", "cluster02", "cluster05", "cluster07",
                                        "cluster08", "cluster09", "cluster10"};
    static const int64_t gpus[] = {27, 149, 17, 442, 81, 47, 5};
    assert_string_equal(c->path, "config/examples/itp-tenants.yaml");
    assert_int_equal(c->n_queues, 7);
    assert_int_equal(c->n_cohorts, 1);
    assert_string_equal(c->cohorts[0].name, "itp");
    assert_int_equal(c->cohorts[0].parent, -1);
    assert_int_equal(c->n_flavors, 1);
    assert_string_equal(c->flavors[0].name, "default");
    int64_t sum = 0;
    for (int i = 0; i < 7; i++) {
        int qi = config_queue_index(c, stems[i]);
        assert_true(qi >= 0);
        const struct config_queue *q = &c->queues[qi];
        assert_int_equal(q->cohort, 0);
        assert_true(q->weight == 1.0);
        assert_int_equal(q->ordering, CONFIG_BEST_EFFORT_FIFO);
        const struct config_quota *g = config_quota_get(c, &q->q, 0, RES_GPU);
        assert_non_null(g);
        assert_int_equal(g->nominal, gpus[i]);
        assert_true(g->borrowing_limit == CONFIG_NO_LIMIT);
        assert_true(g->lending_limit == CONFIG_NO_LIMIT);
        sum += g->nominal;
    }
    assert_int_equal(sum, 768);
    char *t = print_to_string(c);
    assert_non_null(strstr(t, "nvidia.com/gpu@default: nominal 442"));
    free(t);
    config_free(c);

    c = NULL;
    rc = config_load_file("config/examples/full.yaml", &c, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(c->n_flavors, 2);
    assert_string_equal(c->flavors[0].name, "h100");
    assert_string_equal(c->flavors[1].name, "a100");
    assert_int_equal(c->n_levels, 4);
    /* a cohort tree of depth 3 */
    int depth = 0;
    for (uint32_t i = 0; i < c->n_cohorts; i++) {
        int d = 1;
        for (int32_t p = c->cohorts[i].parent; p >= 0; p = c->cohorts[p].parent)
            d++;
        depth = d > depth ? d : depth;
    }
    assert_int_equal(depth, 3);
    int strict = 0;
    for (uint32_t i = 0; i < c->n_queues; i++)
        strict += c->queues[i].ordering == CONFIG_STRICT_FIFO;
    assert_true(strict >= 1);
    config_free(c);
}

static void test_file_errors(void **state)
{
    (void)state;
    struct sched_errbuf eb;
    struct config *c = NULL;
    assert_int_equal(config_load_file("tests/data/no-such-config.yaml", &c, &eb), SCHED_EIO);
    assert_string_equal(eb.msg,
                        "cannot read tests/data/no-such-config.yaml: No such file or directory");
    assert_int_equal(config_load_file("tests/data", &c, &eb), SCHED_EIO);
    assert_string_equal(eb.msg, "cannot read tests/data: a directory, not a regular file");
    /* a file that is YAML but not a config: the path leads the message */
    assert_int_equal(config_load_file("tests/data/nodes-small.yaml", &c, &eb), SCHED_EINVAL);
    assert_true(strncmp(eb.msg, "tests/data/nodes-small.yaml:1:13: apiVersion: unsupported", 57) ==
                0);
    assert_null(c);
}

static void test_size_limit(void **state)
{
    (void)state;
    size_t n = ((size_t)4 << 20) + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, '\n', n);
    memcpy(big, H, strlen(H));
    struct config *c = NULL;
    struct sched_errbuf eb;
    assert_int_equal(config_load_buffer("big.yaml", big, n, &c, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "big.yaml: larger than 4 MiB"));
    /* exactly at the limit is fine */
    struct config *ok = NULL;
    assert_int_equal(config_load_buffer("big.yaml", big, n - 1, &ok, &eb), 0);
    config_free(ok);
    free(big);
}

/* Valid namespaces and LocalQueue names: labels up to 63 bytes, subdomains with dots. */
static void test_dns_names_accepted(void **state)
{
    (void)state;
    struct config *c = load_ok(
        H "queues:\n  - name: a\n    namespaces: [a, 0, team-a1, "
          "a12345678901234567890123456789012345678901234567890123456789012]\n"
          "    localQueues: [ml-eval/gpu, a/x.y-1.z, b/a12345678901234567890123456789012345678901"
          "234567890123456789012.b]\n");
    assert_int_equal(c->queues[0].n_namespaces, 4);
    assert_int_equal(c->queues[0].n_local_queues, 3);
    config_free(c);
}

/* config/file.c: the reader of the configuration and of token files. Files in a fresh directory;
 * a FIFO without a writer is refused at once (alarm() turns a hang into a failure). */
static void put(const char *dir, const char *name, const char *text, size_t n, char *path)
{
    snprintf(path, 128, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_file_reader(void **state)
{
    (void)state;
    char dir[64] = "/tmp/gangsched-file-XXXXXX", p[128], want[256];
    assert_non_null(mkdtemp(dir));
    struct sched_errbuf eb;
    char *buf = NULL, tok[16];
    size_t len = 0;
    /* a whole file, and the size limit: max bytes pass, one more does not */
    put(dir, "a", "0123456789", 10, p);
    assert_int_equal(config_file_read(p, 10, &buf, &len, &eb), 0);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    free(buf);
    assert_int_equal(config_file_read(p, 9, &buf, &len, &eb), SCHED_EINVAL);
    assert_null(buf);
    snprintf(want, sizeof(want), "%s: larger than 9 bytes", p);
    assert_string_equal(eb.msg, want);
    /* a FIFO: refused without waiting for a writer */
    alarm(20);
    snprintf(p, sizeof(p), "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(config_file_read(p, 10, &buf, &len, &eb), SCHED_EIO);
    snprintf(want, sizeof(want), "cannot read %s: a FIFO, not a regular file", p);
    assert_string_equal(eb.msg, want);
    assert_int_equal(config_token_read(p, tok, sizeof(tok), &len, &eb), SCHED_EIO);
    assert_string_equal(eb.msg, want);
    /* the one-shot commands' reader takes a FIFO, waiting for its writer */
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        int fd = open(p, O_WRONLY);
        _exit(fd >= 0 && write(fd, "piped", 5) == 5 ? 0 : 1);
    }
    assert_int_equal(config_file_read_pipe(p, 10, &buf, &len, &eb), 0);
    assert_int_equal(len, 5);
    assert_string_equal(buf, "piped");
    free(buf);
    int ws = 0;
    assert_int_equal(waitpid(w, &ws, 0), w);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    alarm(0);
    assert_int_equal(config_token_read("/dev/null", tok, sizeof(tok), &len, &eb), SCHED_EIO);
    assert_string_equal(eb.msg, "cannot read /dev/null: a device, not a regular file");
    /* tokens: the first line, blanks around it removed; at most cap - 1 bytes */
    static const struct {
        const char *text, *token, *error; /* error: what follows the path */
    } cases[] = {
        {"abc", "abc", NULL},
        {" \t abc \t\r\nsecond line\n", "abc", NULL},
        {"a b\n", "a b", NULL},
        {"123456789012345\n", "123456789012345", NULL},
        {"1234567890123456\n", NULL, ": the token is 16 bytes, above 15"},
        {"\n abc\n", NULL, ": no token on its first line"},
        {"", NULL, ": no token on its first line"},
        {"ab\rc\n", NULL, ": a control character at byte 3 of its first line"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        put(dir, "t", cases[i].text, strlen(cases[i].text), p);
        int rc = config_token_read(p, tok, sizeof(tok), &len, &eb);
        if (cases[i].token) {
            assert_int_equal(rc, 0);
            assert_string_equal(tok, cases[i].token);
            assert_int_equal(len, strlen(cases[i].token));
        } else {
            assert_true(rc < 0);
            assert_int_equal(len, 0);
            snprintf(want, sizeof(want), "token file %s%s", p, cases[i].error);
            assert_string_equal(eb.msg, want);
        }
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Many queues and a big mapping: the sorted duplicate checks find the earliest duplicate. */
static void test_large(void **state)
{
    (void)state;
    enum { N = 3000 };
    size_t cap = (size_t)N * 64 + 1024, o = 0;
    char *y = malloc(cap);
    assert_non_null(y);
    o += (size_t)snprintf(y + o, cap - o, "%s", H "cohorts: [{name: all}]\nqueues:\n");
    for (int i = 0; i < N; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - {name: q%d, cohort: all}\n", i);
    struct config *c = load_ok(y);
    assert_int_equal(c->n_queues, N);
    assert_int_equal(config_queue_index(c, "q2999"), 2999);
    assert_int_equal(config_queue_index(c, "q1500"), 1500);
    char *t = print_to_string(c);
    assert_non_null(strstr(t, "queue q2999"));
    free(t);
    config_free(c);

    /* duplicates at lines 3005 (q7 again) and 3006 (q5 again): the first one is reported */
    o += (size_t)snprintf(y + o, cap - o, "  - {name: q7}\n  - {name: q5}\n");
    struct sched_errbuf eb;
    assert_int_equal(config_load_buffer("t.yaml", y, o, &c, &eb), SCHED_EINVAL);
    assert_string_equal(eb.msg, "t.yaml:3005:12: queues[3000].name: duplicate queue name \"q7\" "
                                "(first declared at line 12)");

    /* a mapping with more than 16 keys */
    o = (size_t)snprintf(y, cap, "%s", H "flavors:\n  - name: f\n    nodeLabels:\n");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(y + o, cap - o, "      k%d: v\n", i % 37);
    assert_int_equal(config_load_buffer("t.yaml", y, o, &c, &eb), SCHED_EINVAL);
    assert_string_equal(eb.msg, "t.yaml:43:7: flavors[0].nodeLabels.k0: duplicate key (first at "
                                "line 6, column 7)");

    /* quota tables: 256 flavors x RES_MAX cells each; the 512th queue with a quota is too many */
    o = (size_t)snprintf(y, cap, "%s", H "flavors:\n");
    for (int i = 0; i < 256; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - {name: f%d}\n", i);
    o += (size_t)snprintf(y + o, cap - o, "queues:\n");
    for (int i = 0; i < 512; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - {name: q%d, quota: {f%d: {cpu: 1}}}\n", i,
                              i % 256);
    assert_int_equal(config_load_buffer("t.yaml", y, o, &c, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "t.yaml:772:25: queues[511].quota: too many quotas: 512 quota "
                                   "tables of 256 flavors x 32 resources"));
    /* one flavor too many */
    o = (size_t)snprintf(y, cap, "%s", H "flavors:\n");
    for (int i = 0; i < 257; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - {name: f%d}\n", i);
    assert_int_equal(config_load_buffer("t.yaml", y, o, &c, &eb), SCHED_EINVAL);
    assert_string_equal(eb.msg, "t.yaml:4:3: flavors: at most 256 flavors, got 257");
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_shorthand),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_lifecycle_backoff_max),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_too_many_resources),
        cmocka_unit_test(test_errors_without_errbuf),
        cmocka_unit_test(test_print_tree),
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_file_reader),
        cmocka_unit_test(test_dns_names_accepted),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
