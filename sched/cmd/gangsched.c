/* sched/cmd/gangsched.c: the gangsched command (daemon and simulator front end).
 *
 * Owns: argument parsing, reading the simulator's inputs, printing results (table or JSON),
 * exit codes (0 success, 1 runtime or input error, 2 usage error). Scheduling itself is in the
 * core; the simulation loop in sched/sim/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "sched/core/hash.h"
#include "sched/core/log.h"
#include "sched/core/policy.h"
#include "sched/http/server.h"
#include "sched/kube/driver.h"
#include "sched/sim/nodes.h"
#include "sched/sim/report.h"
#include "sched/sim/sim.h"
#include "sched/sim/trace.h"
#include "store/store.h"

#ifndef GANGSCHED_VERSION
#define GANGSCHED_VERSION "0.1.0"
#endif

/* The bundled default workload (generated at build time from sched/sim/data/, see Makefile). */
extern const unsigned char sim_default_trace[];
extern const unsigned long sim_default_trace_len;

#define DEFAULT_CLUSTER    "hgx:16,pcie:8"
#define DEFAULT_TRACE_NAME "itp-default.csv"
#define MAX_TRACES         64
#define MAX_POLICIES       8

static void usage_main(FILE *f)
{
    fputs("usage: gangsched COMMAND [FLAGS]\n"
          "\n"
          "commands:\n"
          "  run        the scheduler daemon against a Kubernetes API server\n"
          "  simulate   replay job traces on a simulated cluster with one or more policies\n"
          "  config     check an operator configuration: gangsched config check FILE\n"
          "  store      check a database: gangsched store check DB\n"
          "  serve      serve the HTTP API over a database: gangsched serve --db FILE ...\n"
          "  policies   list the scheduling policies\n"
          "  version    print the version\n"
          "\n"
          "Run 'gangsched COMMAND --help' for the flags of a command.\n",
          f);
}

static void usage_simulate(FILE *f)
{
    fputs("usage: gangsched simulate [FLAGS]\n"
          "\n"
          "Replays job traces on a simulated cluster with a virtual clock, through the same\n"
          "scheduling core as the daemon. Without flags: a bundled 14-day excerpt of the\n"
          "Microsoft ITP traces (MIT licence) on " DEFAULT_CLUSTER
          ", policies gangsched and fifo.\n"
          "\n"
          "cluster (one of):\n"
          "  --cluster SPEC     generated cluster: hgx:N, nvl72:N, pcie:N, comma-combined\n"
          "  --nodes FILE       a NodeList as printed by 'kubectl get nodes -o yaml|json'\n"
          "workload:\n"
          "  --trace FILE       CSV trace (repeatable; each file is a queue named after it)\n"
          "  --seed N           seed of every random choice below (default 1)\n"
          "  --high-priority F  give priority 10 to this fraction of jobs without a priority\n"
          "  --checkpoint-default MIN:EVERY  jobs of at least MIN seconds without a\n"
          "                     checkpoint_interval column checkpoint every EVERY seconds\n"
          "                     (+-20% seeded jitter; default 3600:1800, 0:0 = never)\n"
          "failures (seeded by --seed):\n"
          "  --node-mtbf HOURS  each node fails after an exponential time of this mean\n"
          "  --repair HOURS     how long a failed node stays down (default 4)\n"
          "  --outages FILE     planned outages, CSV node,down,up (seconds)\n"
          "  --pod-start-failure-rate P  probability that a gang's start fails\n"
          "  --max-restarts N   retry budget for failed starts (default 3)\n"
          "  --failure-grace S  a gang that lost a member is torn down after S s (default 30)\n"
          "  --start-timeout S  a start that never becomes ready is torn down after S s (300)\n"
          "queues:\n"
          "  --config FILE      operator configuration (queues, quotas, cohorts; see "
          "docs/config.md);\n"
          "                     without it each trace queue gets a nominal GPU quota proportional\n"
          "                     to its GPU-hours in one cohort\n"
          "policies and output:\n"
          "  --policy NAME      policy to run (repeatable; default: gangsched and fifo)\n"
          "  --json             print one JSON object instead of tables\n"
          "  --events FILE      write every event as JSON Lines\n"
          "  --report FILE      write a self-contained HTML report with charts\n"
          "  --explain JOB      print every scheduling verdict for one job id on stderr\n"
          "  --jobs-out FILE    write every job's result (start, finish, placement) as CSV\n"
          "persistence (one policy):\n"
          "  --db FILE          persist the run in a SQLite store, a transaction per batch of\n"
          "                     instants (docs/store.md)\n"
          "  --resume           continue the simulation saved in --db after a crash\n"
          "  --db-batch N       simulated instants per transaction (default 4096)\n"
          "  --rebuild-store    when --db is unreadable or corrupt, keep it as FILE.broken-TIME\n"
          "                     and start a new one (the simulation restarts from its inputs)\n"
          "  --stop-after-events N  end abruptly after N events, as a crash would (for tests)\n"
          "  --no-progress      no progress line on stderr (default: shown on a terminal)\n"
          "  -v, --verbose      log at info level\n",
          f);
}

struct sim_args {
    struct sim_workload workload;
    const char *config_path;
    const char *cluster_spec;
    const char *nodes_file;
    const char *traces[MAX_TRACES];
    int n_traces;
    const struct sched_policy *policies[MAX_POLICIES];
    int n_policies;
    bool json;
    const char *events_path;
    const char *report_path;
    const char *explain_job;
    bool progress;
    const char *db_path;
    bool resume;
    unsigned long long stop_after;
    const char *jobs_out;
    unsigned long db_batch;
    bool rebuild_store;
    struct sim_failures fail;
    bool failing;
    const char *outages_path;
};

/* Flag value from "--flag VALUE" or "--flag=VALUE"; NULL (and a message) when missing. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (a[n] == '=')
        return a + n + 1;
    if (*i + 1 >= argc) {
        fprintf(stderr, "gangsched simulate: flag %s needs a value\n", name);
        return NULL;
    }
    return argv[++*i];
}

static bool is_flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

/* Returns 0, or the exit code to leave with. */
static int parse_simulate(int argc, char **argv, struct sim_args *a)
{
    memset(a, 0, sizeof(*a));
    a->progress = isatty(STDERR_FILENO);
    a->fail = (struct sim_failures){.repair_h = 4.0,
                                    .detect_ms = 30000,
                                    .start_timeout_ms = 300000,
                                    .backoff_ms = 60000,
                                    .max_restarts = 3,
                                    .strikes = 3,
                                    .strike_window_ms = 3600000,
                                    .quarantine_ms = 1800000};
    a->workload = (struct sim_workload){
        .seed = 1, .ckpt_min_duration_ms = 3600 * 1000, .ckpt_interval_ms = 1800 * 1000};
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *v = NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage_simulate(stdout);
            return -1;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = true;
        } else if (strcmp(arg, "--no-progress") == 0) {
            a->progress = false;
        } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
            log_threshold = LOG_LEVEL_INFO;
        } else if (is_flag(arg, "--cluster")) {
            if (!(v = flag_value(argc, argv, &i, "--cluster")))
                return 2;
            a->cluster_spec = v;
        } else if (is_flag(arg, "--seed")) {
            if (!(v = flag_value(argc, argv, &i, "--seed")))
                return 2;
            char *end;
            unsigned long long x = strtoull(v, &end, 10);
            if (!*v || *end) {
                fprintf(stderr, "gangsched simulate: --seed '%s' is not a number\n", v);
                return 2;
            }
            a->workload.seed = x;
        } else if (is_flag(arg, "--high-priority")) {
            if (!(v = flag_value(argc, argv, &i, "--high-priority")))
                return 2;
            char *end;
            double x = strtod(v, &end);
            if (!*v || *end || !(x >= 0 && x <= 1)) {
                fprintf(stderr, "gangsched simulate: --high-priority '%s' is not in 0..1\n", v);
                return 2;
            }
            a->workload.high_priority_fraction = x;
        } else if (is_flag(arg, "--checkpoint-default")) {
            if (!(v = flag_value(argc, argv, &i, "--checkpoint-default")))
                return 2;
            char *end;
            unsigned long long min_s = strtoull(v, &end, 10), every_s = 0;
            if (end != v && *end == ':')
                every_s = strtoull(end + 1, &end, 10);
            if (*end || !strchr(v, ':') || min_s > 1000000000ull || every_s > 1000000000ull) {
                fprintf(stderr,
                        "gangsched simulate: --checkpoint-default '%s' is not MIN:EVERY "
                        "(seconds)\n",
                        v);
                return 2;
            }
            a->workload.ckpt_min_duration_ms = (int64_t)min_s * 1000;
            a->workload.ckpt_interval_ms = (int64_t)every_s * 1000;
        } else if (is_flag(arg, "--config")) {
            if (!(v = flag_value(argc, argv, &i, "--config")))
                return 2;
            a->config_path = v;
        } else if (is_flag(arg, "--nodes")) {
            if (!(v = flag_value(argc, argv, &i, "--nodes")))
                return 2;
            a->nodes_file = v;
        } else if (is_flag(arg, "--trace")) {
            if (!(v = flag_value(argc, argv, &i, "--trace")))
                return 2;
            if (a->n_traces == MAX_TRACES) {
                fprintf(stderr, "gangsched simulate: at most %d --trace files\n", MAX_TRACES);
                return 2;
            }
            a->traces[a->n_traces++] = v;
        } else if (is_flag(arg, "--policy")) {
            if (!(v = flag_value(argc, argv, &i, "--policy")))
                return 2;
            const struct sched_policy *p = sched_policy_find(v);
            if (!p) {
                fprintf(stderr, "gangsched simulate: unknown policy '%s' (known:", v);
                for (size_t k = 0; sched_policies[k]; k++)
                    fprintf(stderr, " %s", sched_policies[k]->name);
                fputs(")\n", stderr);
                return 2;
            }
            if (a->n_policies == MAX_POLICIES) {
                fprintf(stderr, "gangsched simulate: at most %d --policy flags\n", MAX_POLICIES);
                return 2;
            }
            a->policies[a->n_policies++] = p;
        } else if (is_flag(arg, "--events")) {
            if (!(v = flag_value(argc, argv, &i, "--events")))
                return 2;
            a->events_path = v;
        } else if (is_flag(arg, "--report")) {
            if (!(v = flag_value(argc, argv, &i, "--report")))
                return 2;
            a->report_path = v;
        } else if (is_flag(arg, "--db")) {
            if (!(v = flag_value(argc, argv, &i, "--db")))
                return 2;
            a->db_path = v;
        } else if (is_flag(arg, "--node-mtbf") || is_flag(arg, "--repair") ||
                   is_flag(arg, "--pod-start-failure-rate") || is_flag(arg, "--failure-grace") ||
                   is_flag(arg, "--start-timeout") || is_flag(arg, "--max-restarts")) {
            const char *name = arg;
            char flag[32];
            snprintf(flag, sizeof(flag), "%.*s", (int)strcspn(arg, "="), arg);
            if (!(v = flag_value(argc, argv, &i, flag)))
                return 2;
            char *end;
            double x = strtod(v, &end);
            bool rate = strcmp(flag, "--pod-start-failure-rate") == 0;
            if (!*v || *end || !(x >= 0) || x > 1e9 || (rate && x > 1)) {
                fprintf(stderr, "gangsched simulate: %s '%s' is not a %s\n", flag, v,
                        rate ? "probability in 0..1" : "non-negative number");
                return 2;
            }
            (void)name;
            a->failing = true;
            if (strcmp(flag, "--node-mtbf") == 0)
                a->fail.node_mtbf_h = x;
            else if (strcmp(flag, "--repair") == 0)
                a->fail.repair_h = x;
            else if (rate)
                a->fail.pod_start_failure_rate = x;
            else if (strcmp(flag, "--failure-grace") == 0)
                a->fail.detect_ms = (int64_t)(x * 1000);
            else if (strcmp(flag, "--start-timeout") == 0)
                a->fail.start_timeout_ms = (int64_t)(x * 1000);
            else
                a->fail.max_restarts = (uint32_t)x;
        } else if (is_flag(arg, "--outages")) {
            if (!(v = flag_value(argc, argv, &i, "--outages")))
                return 2;
            a->outages_path = v;
            a->failing = true;
        } else if (is_flag(arg, "--db-batch")) {
            if (!(v = flag_value(argc, argv, &i, "--db-batch")))
                return 2;
            char *end;
            a->db_batch = strtoul(v, &end, 10);
            if (!*v || *end || a->db_batch == 0 || a->db_batch > 1000000) {
                fprintf(stderr, "gangsched simulate: --db-batch '%s' is not in 1..1000000\n", v);
                return 2;
            }
        } else if (strcmp(arg, "--rebuild-store") == 0) {
            a->rebuild_store = true;
        } else if (strcmp(arg, "--resume") == 0) {
            a->resume = true;
        } else if (is_flag(arg, "--jobs-out")) {
            if (!(v = flag_value(argc, argv, &i, "--jobs-out")))
                return 2;
            a->jobs_out = v;
        } else if (is_flag(arg, "--stop-after-events")) {
            if (!(v = flag_value(argc, argv, &i, "--stop-after-events")))
                return 2;
            char *end;
            a->stop_after = strtoull(v, &end, 10);
            if (!*v || *end || a->stop_after == 0) {
                fprintf(stderr,
                        "gangsched simulate: --stop-after-events '%s' is not a positive "
                        "number\n",
                        v);
                return 2;
            }
        } else if (is_flag(arg, "--explain")) {
            if (!(v = flag_value(argc, argv, &i, "--explain")))
                return 2;
            a->explain_job = v;
        } else {
            fprintf(stderr, "gangsched simulate: unknown argument '%s' (see --help)\n", arg);
            return 2;
        }
    }
    if (a->cluster_spec && a->nodes_file) {
        fputs("gangsched simulate: give --cluster or --nodes, not both\n", stderr);
        return 2;
    }
    if (a->n_policies == 0) {
        a->policies[a->n_policies++] = sched_policy_find("gangsched");
        if (!a->db_path)
            a->policies[a->n_policies++] = sched_policy_find("fifo");
    }
    if (a->db_path && a->n_policies != 1) {
        fputs("gangsched simulate: --db persists one policy: give exactly one --policy\n", stderr);
        return 2;
    }
    if (a->failing && a->db_path) {
        fputs("gangsched simulate: failure injection cannot be combined with --db yet\n", stderr);
        return 2;
    }
    if (a->resume && a->events_path) {
        fputs("gangsched simulate: --events cannot continue a log across --resume\n", stderr);
        return 2;
    }
    if ((a->resume || a->stop_after) && !a->db_path) {
        fputs("gangsched simulate: --resume and --stop-after-events need --db\n", stderr);
        return 2;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------------ */

static cJSON *stats_json(const struct sim_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->policy);
    cJSON_AddNumberToObject(o, "jobs", s->jobs);
    cJSON_AddNumberToObject(o, "completed", s->completed);
    cJSON_AddNumberToObject(o, "started", s->started);
    cJSON_AddNumberToObject(o, "rejected", s->rejected);
    cJSON_AddNumberToObject(o, "mean_queue_s", s->mean_queue_s);
    cJSON_AddNumberToObject(o, "mean_wait_s", s->mean_wait_s);
    cJSON_AddNumberToObject(o, "p50_queue_s", s->p50_queue_s);
    cJSON_AddNumberToObject(o, "p95_queue_s", s->p95_queue_s);
    cJSON_AddNumberToObject(o, "p99_queue_s", s->p99_queue_s);
    cJSON_AddNumberToObject(o, "mean_jct_s", s->mean_jct_s);
    cJSON_AddNumberToObject(o, "p95_jct_s", s->p95_jct_s);
    cJSON_AddNumberToObject(o, "gpu_utilization", s->gpu_utilization);
    cJSON_AddNumberToObject(o, "makespan_s", s->makespan_s);
    cJSON_AddNumberToObject(o, "tp_splits", (double)s->tp_splits);
    cJSON_AddNumberToObject(o, "mean_racks_per_multinode_gang", s->mean_racks_per_multinode_gang);
    cJSON_AddNumberToObject(o, "multinode_gangs", (double)s->multinode_gangs);
    cJSON_AddNumberToObject(o, "preemptions", (double)s->preemptions);
    cJSON_AddNumberToObject(o, "preempted_gangs", (double)s->preempted_gangs);
    cJSON_AddNumberToObject(o, "gpu_hours_lost_to_preemption", s->gpu_hours_lost_to_preemption);
    cJSON_AddNumberToObject(o, "checkpoint_requests", (double)s->checkpoint_requests);
    cJSON_AddNumberToObject(o, "node_failures", (double)s->node_failures);
    cJSON_AddNumberToObject(o, "failure_restarts", (double)s->failure_restarts);
    cJSON_AddNumberToObject(o, "failed_jobs", (double)s->failed_jobs);
    cJSON_AddNumberToObject(o, "quarantines", (double)s->quarantines);
    cJSON_AddNumberToObject(o, "gpu_hours_lost_to_failures", s->gpu_hours_lost_to_failures);
    cJSON_AddNumberToObject(o, "mean_recovery_s", s->mean_recovery_s);
    cJSON_AddNumberToObject(o, "partial_gang_seconds", s->partial_gang_seconds);
    cJSON *pp = cJSON_AddObjectToObject(o, "per_priority");
    for (uint32_t k = 0; k < s->n_prio; k++) {
        char key[16];
        snprintf(key, sizeof(key), "%d", s->prio_values[k]);
        cJSON *e = cJSON_AddObjectToObject(pp, key);
        cJSON_AddNumberToObject(e, "jobs", s->prio_jobs[k]);
        cJSON_AddNumberToObject(e, "mean_queue_s", s->prio_mean_queue_s[k]);
        cJSON_AddNumberToObject(e, "mean_wait_s", s->prio_mean_wait_s[k]);
    }
    cJSON_AddNumberToObject(o, "quota_violations", (double)s->quota_violations);
    cJSON_AddNumberToObject(o, "fragmentation", s->fragmentation);
    cJSON_AddNumberToObject(o, "whole_node_wait_share", s->whole_node_wait_share);
    cJSON_AddNumberToObject(o, "reclaim_wait_s", s->reclaim_wait_s);
    cJSON_AddNumberToObject(o, "backfilled", (double)s->backfilled);
    cJSON_AddNumberToObject(o, "reservations", (double)s->reservations);
    cJSON_AddNumberToObject(o, "cycles", (double)s->cycles);
    cJSON *pq = cJSON_AddObjectToObject(o, "per_queue");
    for (uint32_t q = 0; q < s->n_queues; q++) {
        cJSON *e = cJSON_AddObjectToObject(pq, s->per_queue[q].name);
        cJSON_AddNumberToObject(e, "jobs", s->per_queue[q].jobs);
        cJSON_AddNumberToObject(e, "mean_queue_s", s->per_queue[q].mean_queue_s);
        cJSON_AddNumberToObject(e, "p95_queue_s", s->per_queue[q].p95_queue_s);
        cJSON_AddNumberToObject(e, "gpu_hours", s->per_queue[q].gpu_hours);
        cJSON_AddNumberToObject(e, "nominal_gpus", s->per_queue[q].nominal_gpus);
        cJSON_AddNumberToObject(e, "max_usage_gpus", s->per_queue[q].max_usage_gpus);
        cJSON_AddNumberToObject(e, "borrowed_gpu_hours", s->per_queue[q].borrowed_gpu_hours);
        cJSON_AddNumberToObject(e, "lent_gpu_hours", s->per_queue[q].lent_gpu_hours);
        cJSON_AddNumberToObject(e, "reclaim_wait_s", s->per_queue[q].reclaim_wait_s);
    }
    return o;
}

static void print_json(const struct sim_stats *s, int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "policies");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, stats_json(&s[i]));
    char *txt = cJSON_Print(root);
    if (txt)
        puts(txt);
    free(txt);
    cJSON_Delete(root);
}

static void dur(char *buf, size_t n, double s)
{
    if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%.1fm", s / 60);
    else if (s < 86400 * 2)
        snprintf(buf, n, "%.2fh", s / 3600);
    else
        snprintf(buf, n, "%.2fd", s / 86400);
}

static void print_table(const struct sim_stats *s, int n, const char *cluster, int64_t gpus,
                        uint32_t nodes)
{
    printf("cluster %s: %u nodes, %lld GPUs; %u jobs\n\n", cluster, nodes, (long long)gpus,
           n ? s[0].jobs : 0);
    printf("%-32s", "metric");
    for (int i = 0; i < n; i++)
        printf("%14s", s[i].policy);
    putchar('\n');
    char b[32];
#define ROW_D(label, expr)                                                                         \
    do {                                                                                           \
        printf("%-32s", label);                                                                    \
        for (int i = 0; i < n; i++) {                                                              \
            dur(b, sizeof(b), (expr));                                                             \
            printf("%14s", b);                                                                     \
        }                                                                                          \
        putchar('\n');                                                                             \
    } while (0)
#define ROW_F(label, fmt, expr)                                                                    \
    do {                                                                                           \
        printf("%-32s", label);                                                                    \
        for (int i = 0; i < n; i++)                                                                \
            printf(fmt, (expr));                                                                   \
        putchar('\n');                                                                             \
    } while (0)
    ROW_F("jobs completed", "%14u", s[i].completed);
    ROW_F("jobs rejected (never fit)", "%14u", s[i].rejected);
    ROW_D("mean queue time", s[i].mean_queue_s);
    ROW_D("mean wait (with re-waits)", s[i].mean_wait_s);
    ROW_D("p50 queue time", s[i].p50_queue_s);
    ROW_D("p95 queue time", s[i].p95_queue_s);
    ROW_D("p99 queue time", s[i].p99_queue_s);
    ROW_D("mean job completion time", s[i].mean_jct_s);
    ROW_D("p95 job completion time", s[i].p95_jct_s);
    ROW_F("GPU utilization", "%13.1f%%", 100.0 * s[i].gpu_utilization);
    ROW_D("makespan", s[i].makespan_s);
    ROW_F("tensor-parallel splits", "%14llu", (unsigned long long)s[i].tp_splits);
    ROW_F("racks per multi-node gang", "%14.2f", s[i].mean_racks_per_multinode_gang);
    ROW_F("fragmentation", "%13.1f%%", 100.0 * s[i].fragmentation);
    ROW_F("whole-node gang waiting", "%13.1f%%", 100.0 * s[i].whole_node_wait_share);
    ROW_F("backfilled gangs", "%14llu", (unsigned long long)s[i].backfilled);
    ROW_F("preemptions (evictions)", "%14llu", (unsigned long long)s[i].preemptions);
    ROW_F("GPU-hours lost to preemption", "%14.1f", s[i].gpu_hours_lost_to_preemption);
    if (n > 0 && (s[0].node_failures || s[0].failure_restarts)) {
        ROW_F("node failures", "%14llu", (unsigned long long)s[i].node_failures);
        ROW_F("failure restarts", "%14llu", (unsigned long long)s[i].failure_restarts);
        ROW_F("jobs failed (retries exhausted)", "%14llu", (unsigned long long)s[i].failed_jobs);
        ROW_F("GPU-hours lost to failures", "%14.1f", s[i].gpu_hours_lost_to_failures);
        ROW_D("mean recovery time", s[i].mean_recovery_s);
        ROW_F("partial-gang seconds", "%14.0f", s[i].partial_gang_seconds);
    }
    ROW_F("quota violations", "%14llu", (unsigned long long)s[i].quota_violations);
    ROW_D("waited within nominal quota", s[i].reclaim_wait_s);
    if (n > 0 && s[0].n_queues > 1) {
        printf("\nmean queue time per queue\n");
        for (uint32_t q = 0; q < s[0].n_queues; q++) {
            char label[64];
            snprintf(label, sizeof(label), "  %.20s (%u jobs)", s[0].per_queue[q].name,
                     s[0].per_queue[q].jobs);
            ROW_D(label, s[i].per_queue[q].mean_queue_s);
        }
    }
#undef ROW_D
#undef ROW_F
}

static int write_report(const char *path, const char *title, const struct sim_stats *s, int n)
{
    struct report_policy rp[MAX_POLICIES];
    struct report_metric m[MAX_POLICIES][12];
    for (int i = 0; i < n; i++) {
        const struct sim_stats *x = &s[i];
        struct report_metric *mm = m[i];
        size_t k = 0;
        mm[k++] = (struct report_metric){"completed", x->completed};
        mm[k++] = (struct report_metric){"mean_queue_s", x->mean_queue_s};
        mm[k++] = (struct report_metric){"p50_queue_s", x->p50_queue_s};
        mm[k++] = (struct report_metric){"p95_queue_s", x->p95_queue_s};
        mm[k++] = (struct report_metric){"p99_queue_s", x->p99_queue_s};
        mm[k++] = (struct report_metric){"mean_jct_s", x->mean_jct_s};
        mm[k++] = (struct report_metric){"gpu_utilization", x->gpu_utilization};
        mm[k++] = (struct report_metric){"makespan_s", x->makespan_s};
        mm[k++] = (struct report_metric){"tp_splits", (double)x->tp_splits};
        mm[k++] = (struct report_metric){"mean_racks_per_multinode_gang",
                                         x->mean_racks_per_multinode_gang};
        mm[k++] = (struct report_metric){"fragmentation", x->fragmentation};
        mm[k++] = (struct report_metric){"backfilled", (double)x->backfilled};
        rp[i] = (struct report_policy){.name = x->policy,
                                       .series = x->series,
                                       .n_series = x->n_series,
                                       .queue_s = x->queue_s,
                                       .n_queue_s = x->n_queue_s,
                                       .metrics = mm,
                                       .n_metrics = k};
    }
    struct sched_errbuf eb = {{0}};
    int rc = report_write_html(path, title, rp, (size_t)n, &eb);
    if (rc != 0)
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
    return rc;
}

/* ---- simulate ---------------------------------------------------------------------------- */

/* One "PATH HASH" line per input file the run reads (config, NodeList, outages, traces, in
 * that order), HASH the FNV-1a of its bytes: --resume refuses a file changed since the crash.
 * Returns 0 or SCHED_EIO (naming the file). */
static int input_fingerprint(const struct sim_args *a, char *buf, size_t cap,
                             struct sched_errbuf *eb)
{
    const char *files[MAX_TRACES + 3];
    int n = 0;
    if (a->config_path)
        files[n++] = a->config_path;
    if (a->nodes_file)
        files[n++] = a->nodes_file;
    if (a->outages_path)
        files[n++] = a->outages_path;
    for (int i = 0; i < a->n_traces; i++)
        files[n++] = a->traces[i];
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(files[i], "rb");
        if (!f)
            return sched_fail(eb, SCHED_EIO, "cannot read %s: %s", files[i], strerror(errno));
        uint64_t h = SCHED_HASH_INIT;
        char chunk[65536];
        size_t got;
        while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
            h = sched_hash(h, chunk, got);
        bool failed = ferror(f) != 0;
        fclose(f);
        if (failed)
            return sched_fail(eb, SCHED_EIO, "cannot read %s", files[i]);
        int k = snprintf(buf + at, cap - at, "%s %016llx\n", files[i], (unsigned long long)h);
        if (k < 0 || (size_t)k >= cap - at)
            return sched_fail(eb, SCHED_EIO, "too many input files to fingerprint");
        at += (size_t)k;
    }
    return 0;
}

/* The file named by the first line where two fingerprints differ. */
static void changed_file(const char *saved, const char *now, char *out, size_t cap)
{
    while (*saved && *now) {
        size_t ls = strcspn(saved, "\n"), ln = strcspn(now, "\n");
        if (ls != ln || memcmp(saved, now, ls) != 0)
            break;
        saved += ls + (saved[ls] != 0);
        now += ln + (now[ln] != 0);
    }
    const char *line = *now ? now : saved;
    size_t len = strcspn(line, "\n");
    while (len > 0 && line[len - 1] != ' ')
        len--; /* drop the hash */
    snprintf(out, cap, "%.*s", len > 0 ? (int)len - 1 : 0, line);
}

/* Opens the --db store and checks that a resumed run is the same simulation (every argument
 * that shapes the run, in order). */
static int open_db(const struct sim_args *a, int argc, char **argv, struct store **out,
                   struct sched_errbuf *eb)
{
    char args[4096];
    size_t at = 0;
    for (int i = 0; i < argc && at < sizeof(args); i++) {
        const char *x = argv[i];
        if (strcmp(x, "--resume") == 0 || strcmp(x, "--no-progress") == 0 ||
            strcmp(x, "--json") == 0 || strcmp(x, "--rebuild-store") == 0)
            continue;
        if (is_flag(x, "--stop-after-events") || is_flag(x, "--jobs-out") ||
            is_flag(x, "--report") || is_flag(x, "--events") || is_flag(x, "--explain")) {
            if (!strchr(x, '='))
                i++; /* and its value */
            continue;
        }
        int k = snprintf(args + at, sizeof(args) - at, "%s%s", at ? " " : "", x);
        if (k > 0)
            at += (size_t)k;
    }
    char inputs[(MAX_TRACES + 3) * 1100];
    int rc = input_fingerprint(a, inputs, sizeof(inputs), eb);
    if (rc != 0)
        return rc;
    struct store_opts o;
    store_opts_default(&o);
    rc = store_open(a->db_path, STORE_CREATE, &o, out, eb);
    /* only a file the store itself calls rebuildable (corrupt, foreign, newer): never one that
     * is merely locked by another writer or unreadable for a passing reason */
    if (rc != 0 && a->rebuild_store) {
        /* never silently: the old file is kept next to the new one, and said so */
        char aside[4200];
        if (store_set_aside(a->db_path, rc, aside, sizeof(aside), eb) == 0) {
            fprintf(stderr,
                    "gangsched simulate: %s\ngangsched simulate: --rebuild-store: keeping it as %s "
                    "and starting a new store\n",
                    eb->msg, aside);
            rc = store_open(a->db_path, STORE_CREATE, &o, out, eb);
        }
    }
    if (rc != 0)
        return rc;
    const char *saved = NULL;
    rc = store_meta_get(*out, "sim:args", &saved, eb);
    if (rc == SCHED_ENOENT) { /* new, or killed before its first commit: start from the top */
        rc = store_meta_put(*out, "sim:args", args, eb);
        return rc != 0 ? rc : store_meta_put(*out, "sim:inputs", inputs, eb);
    }
    if (rc != 0)
        return rc;
    if (!a->resume)
        return sched_fail(eb, SCHED_EEXIST,
                          "%s already holds a simulation: add --resume, or use a new file",
                          a->db_path);
    if (strcmp(saved, args) != 0)
        return sched_fail(eb, SCHED_EINVAL,
                          "%s holds another simulation (saved: \"%s\"; now: \"%s\")", a->db_path,
                          saved, args);
    /* the same arguments: are the files they name still the same bytes? (a store written
     * before fingerprints were kept gets them now) */
    rc = store_meta_get(*out, "sim:inputs", &saved, eb);
    if (rc == SCHED_ENOENT)
        return store_meta_put(*out, "sim:inputs", inputs, eb);
    if (rc != 0)
        return rc;
    if (strcmp(saved, inputs) != 0) {
        char file[1024];
        changed_file(saved, inputs, file, sizeof(file));
        return sched_fail(eb, SCHED_EINVAL,
                          "%s: input file %s changed since the run was saved: --resume needs the "
                          "same inputs (use a new --db file for new ones)",
                          a->db_path, file);
    }
    return 0;
}

/* An output file written whole or not at all: FILE.tmp-PID in the same directory, renamed to
 * FILE once closed without error; removed otherwise. A path that exists and is not a regular
 * file (a device such as /dev/stdout, a FIFO, a symbolic link) is written in place: renaming
 * over it would replace the device or the link itself. */
struct outfile {
    const char *path;
    char tmp[4096];
    FILE *f;
    bool in_place;
};

static int outfile_open(struct outfile *o, const char *path)
{
    o->path = path;
    o->f = NULL;
    struct stat st;
    o->in_place = lstat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (o->in_place) {
        if (!(o->f = fopen(path, "w"))) {
            fprintf(stderr, "gangsched simulate: cannot write %s: %s\n", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (snprintf(o->tmp, sizeof(o->tmp), "%s.tmp-%ld", path, (long)getpid()) >=
        (int)sizeof(o->tmp)) {
        fprintf(stderr, "gangsched simulate: %s: path too long\n", path);
        return -1;
    }
    if (!(o->f = fopen(o->tmp, "w"))) {
        fprintf(stderr, "gangsched simulate: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ok: rename into place when every write succeeded; else (or on !ok) remove. Returns 0 when
 * the file is in place, -1 with a message otherwise (nothing said when !ok). */
static int outfile_close(struct outfile *o, bool ok)
{
    if (!o->f)
        return ok ? 0 : -1;
    bool good =
        ok && fflush(o->f) == 0 && !ferror(o->f) && (o->in_place || fsync(fileno(o->f)) == 0);
    int saved = errno;
    good = fclose(o->f) == 0 && good;
    if (o->in_place) {
        o->f = NULL;
        if (!good && ok)
            fprintf(stderr, "gangsched simulate: writing %s: %s\n", o->path,
                    strerror(saved ? saved : EIO));
        return good ? 0 : -1;
    }
    if (good && rename(o->tmp, o->path) != 0) {
        saved = errno;
        good = false;
    }
    o->f = NULL;
    if (good)
        return 0;
    remove(o->tmp);
    if (ok)
        fprintf(stderr, "gangsched simulate: writing %s: %s (nothing written)\n", o->path,
                strerror(saved ? saved : EIO));
    return -1;
}

static int cmd_simulate(int argc, char **argv)
{
    struct sim_args a;
    int rc = parse_simulate(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct sched_errbuf eb = {{0}};
    int exit_code = 1;
    struct cluster *c = cluster_new();
    struct trace t;
    trace_init(&t);
    struct sim_input in = {0};
    struct config *cfg = NULL;
    struct store *db = NULL;
    struct outfile jobs_out = {0}, events = {0};
    struct sim_outage *outages = NULL;
    struct sim_stats stats[MAX_POLICIES];
    int n_done = 0;
    const char *cluster_desc = a.nodes_file     ? a.nodes_file
                               : a.cluster_spec ? a.cluster_spec
                                                : DEFAULT_CLUSTER;
    if (!c) {
        fputs("gangsched simulate: out of memory\n", stderr);
        goto out;
    }
    if (a.config_path && config_load_file(a.config_path, &cfg, &eb) != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    rc = a.nodes_file ? nodes_load_file(c, a.nodes_file, &eb)
                      : nodes_generate(c, a.cluster_spec ? a.cluster_spec : DEFAULT_CLUSTER, &eb);
    if (rc == 0)
        rc = cfg && cfg->n_levels > 0
                 ? cluster_finalize(c, cfg->level_names, cfg->level_labels, cfg->n_levels, &eb)
                 : cluster_finalize(c, NULL, NULL, 0, &eb);
    if (rc != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    if (a.n_traces == 0) {
        rc = trace_parse(&t, DEFAULT_TRACE_NAME, (const char *)sim_default_trace,
                         (size_t)sim_default_trace_len, &eb);
    }
    for (int i = 0; i < a.n_traces && rc == 0; i++)
        rc = trace_read(&t, a.traces[i], &eb);
    if (rc != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    trace_sort(&t);
    if (sim_input_build(&in, &t, c, cfg, &eb) != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    sim_input_workload(&in, &t, &a.workload);
    if (a.outages_path && sim_outages_read(a.outages_path, c, &outages, &a.fail.n_outages, &eb)) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    a.fail.outages = outages;
    a.fail.seed = a.workload.seed;
    struct sim_options opt = {.progress = a.progress, .explain_job = a.explain_job};
    if (a.failing)
        opt.failures = &a.fail;
    if (a.db_path) {
        if (open_db(&a, argc, argv, &db, &eb) != 0) {
            fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
            goto out;
        }
        opt.db = db;
        opt.resume = a.resume;
        opt.stop_after = a.stop_after;
        opt.db_batch = (uint32_t)a.db_batch;
    }
    /* outputs only once every input and the database are accepted */
    if (a.events_path && outfile_open(&events, a.events_path) != 0)
        goto out;
    if (a.jobs_out && outfile_open(&jobs_out, a.jobs_out) != 0)
        goto out;
    opt.events = events.f;
    opt.jobs_out = jobs_out.f;
    for (int p = 0; p < a.n_policies; p++) {
        if (sim_run(&in, a.policies[p], &opt, &stats[p], &eb) != 0) {
            fprintf(stderr, "gangsched simulate: policy %s: %s\n", a.policies[p]->name, eb.msg);
            goto out;
        }
        n_done++;
    }
    if (outfile_close(&events, true) != 0 || outfile_close(&jobs_out, true) != 0)
        goto out;
    if (a.json)
        print_json(stats, n_done);
    else
        print_table(stats, n_done, cluster_desc, c->total_gpus, c->n_nodes);
    if (a.report_path) {
        char title[256];
        snprintf(title, sizeof(title), "gangsched simulate: %s, %u jobs", cluster_desc, in.n_jobs);
        if (write_report(a.report_path, title, stats, n_done) != 0)
            goto out;
    }
    exit_code = 0;
out:
    outfile_close(&events, false);
    outfile_close(&jobs_out, false);
    store_close(db);
    free(outages);
    for (int p = 0; p < n_done; p++)
        sim_stats_free(&stats[p]);
    sim_input_free(&in);
    config_free(cfg);
    trace_free(&t);
    cluster_free(c);
    return exit_code;
}

/* gangsched config check FILE: validate and print the queue tree; exit 0 valid, 1 invalid. */
static int cmd_config(int argc, char **argv)
{
    if (argc >= 1 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
        puts("usage: gangsched config check FILE\n\nValidates an operator configuration and "
             "prints its cohorts and queues with their quotas. Exit status 0 when valid, 1 when "
             "not (the error names file:line:column and the key).");
        return 0;
    }
    if (argc != 2 || strcmp(argv[0], "check") != 0) {
        fputs("usage: gangsched config check FILE\n", stderr);
        return 2;
    }
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    if (config_load_file(argv[1], &cfg, &eb) != 0) {
        fprintf(stderr, "%s\n", eb.msg);
        return 1;
    }
    printf("%s: valid\n", argv[1]);
    config_print_tree(cfg, stdout);
    config_free(cfg);
    return 0;
}

static void usage_run(FILE *f)
{
    fputs("usage: gangsched run --config FILE --db FILE [FLAGS]\n"
          "\n"
          "Schedules the pods whose spec.schedulerName is --scheduler-name, whole gangs at a\n"
          "time, through the Kubernetes API. Without --kubeconfig: $KUBECONFIG, ~/.kube/config,\n"
          "then the in-cluster service account.\n"
          "\n"
          "  --config FILE          operator configuration (YAML; reloaded on change and SIGHUP)\n"
          "  --db FILE              SQLite database (created when missing)\n"
          "  --kubeconfig FILE      kubeconfig to use\n"
          "  --scheduler-name NAME  spec.schedulerName handled (default gangsched)\n"
          "  --policy NAME          scheduling policy (default gangsched; see 'policies')\n"
          "  --leader-elect BOOL    Lease-based leader election (default true)\n"
          "  --lease-namespace NS   namespace of the Lease (default: $POD_NAMESPACE, else the\n"
          "                         context's)\n"
          "  --lease-name NAME      name of the Lease (default gangsched)\n"
          "  --identity ID          holder identity (default: $POD_NAME, else HOSTNAME_PID)\n"
          "  --cycle-ms N           minimum interval between cycles (default 100)\n"
          "  --kube-qps N           API requests per second (default 200)\n"
          "  --kube-burst N         API request burst (default 400)\n"
          "  --listen HOST:PORT     HTTP API, /metrics, /healthz, /readyz (default 0.0.0.0:8080;\n"
          "                         \"\" = none; port 0 picks a free one)\n"
          "  --port-file FILE       write the HTTP port here once listening\n"
          "  --token-file FILE      bearer token for operator writes (re-read when it changes)\n"
          "  --read-token-file FILE bearer token required for reads (default: reads are open)\n"
          "  --follow URL           while standby, copy the leader's store from its HTTP API\n"
          "                         (GET URL/v1/store/snapshot) to FILE.follow, adopted at\n"
          "                         takeover (docs/store.md \"Fail-over\")\n"
          "  --follow-interval MS   between two copies (default 10000)\n"
          "  --follow-token-file F  the read token for it (when reads need one)\n"
          "  --http-max-conns, --http-probe-conns, --http-timeout, --http-write-timeout,\n"
          "  --http-max-output      the HTTP API's limits (docs/api.md \"Limits\")\n"
          "  --rebuild-store BOOL   a corrupt or foreign --db file is kept as FILE.broken-TIME\n"
          "                         and a new store started (default false: stop)\n"
          "  --evict-fallback-delete BOOL  delete a preemption victim whose eviction a\n"
          "                         disruption budget keeps blocking (default false)\n"
          "  --log-level LEVEL      error, warn, info (default) or debug\n",
          f);
}

static int cmd_run(int argc, char **argv)
{
    struct kube_run_opts o;
    kube_run_opts_default(&o);
    static char identity[300];
    char host[256] = "gangsched";
    gethostname(host, sizeof(host) - 1);
    snprintf(identity, sizeof(identity), "%s_%ld", host, (long)getpid());
    o.identity = identity;
    /* In a pod (deploy/deployment.yaml, the downward API): the pod's name is the identity and
     * its namespace the Lease's; --identity and --lease-namespace still win. */
    const char *pod = getenv("POD_NAME"), *pod_ns = getenv("POD_NAMESPACE");
    if (pod && *pod)
        o.identity = pod;
    if (pod_ns && *pod_ns)
        o.lease_ns = pod_ns;
    log_threshold = LOG_LEVEL_INFO;
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) {
            usage_run(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "gangsched run: %s: missing value (or unknown flag)\n", f);
            return 2;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (strcmp(f, "--config") == 0) {
            o.config_path = v;
        } else if (strcmp(f, "--db") == 0) {
            o.db_path = v;
        } else if (strcmp(f, "--kubeconfig") == 0) {
            o.kubeconfig = v;
        } else if (strcmp(f, "--scheduler-name") == 0) {
            o.scheduler = v;
        } else if (strcmp(f, "--policy") == 0) {
            o.policy = v;
        } else if (strcmp(f, "--leader-elect") == 0) {
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
                fprintf(stderr, "gangsched run: --leader-elect %s: expected true or false\n", v);
                return 2;
            }
            o.leader_elect = strcmp(v, "true") == 0;
        } else if (strcmp(f, "--rebuild-store") == 0) {
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
                fprintf(stderr, "gangsched run: --rebuild-store %s: expected true or false\n", v);
                return 2;
            }
            o.rebuild_store = strcmp(v, "true") == 0;
        } else if (strcmp(f, "--evict-fallback-delete") == 0) {
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
                fprintf(stderr,
                        "gangsched run: --evict-fallback-delete %s: expected true or false\n", v);
                return 2;
            }
            o.evict_fallback_delete = strcmp(v, "true") == 0;
        } else if (strcmp(f, "--lease-namespace") == 0) {
            o.lease_ns = v;
        } else if (strcmp(f, "--lease-name") == 0) {
            o.lease_name = v;
        } else if (strcmp(f, "--identity") == 0) {
            o.identity = v;
        } else if (strcmp(f, "--listen") == 0) {
            o.listen = v;
        } else if (strcmp(f, "--port-file") == 0) {
            o.port_file = v;
        } else if (strcmp(f, "--token-file") == 0) {
            o.token_file = v;
        } else if (strcmp(f, "--read-token-file") == 0) {
            o.read_token_file = v;
        } else if (strcmp(f, "--follow") == 0) {
            o.follow_url = v;
        } else if (strcmp(f, "--follow-token-file") == 0) {
            o.follow_token_file = v;
        } else if (strcmp(f, "--follow-interval") == 0) {
            double x = strtod(v, &end);
            if (!*v || *end || x < 100 || x > 3600000) {
                fprintf(stderr, "gangsched run: --follow-interval %s: expected 100..3600000 ms\n",
                        v);
                return 2;
            }
            o.follow_ms = (uint32_t)x;
        } else if (strncmp(f, "--http-", 7) == 0) {
            struct sched_errbuf leb = {{0}};
            if (http_limit_flag(&o.http, f, v, &leb) <= 0) {
                fprintf(stderr, "gangsched run: %s\n",
                        leb.msg[0] ? leb.msg : "unknown --http- flag");
                return 2;
            }
        } else if (strcmp(f, "--cycle-ms") == 0 || strcmp(f, "--kube-qps") == 0 ||
                   strcmp(f, "--kube-burst") == 0) {
            double x = strtod(v, &end);
            if (!*v || *end || x < 1 || x > 1e6) {
                fprintf(stderr, "gangsched run: %s %s: expected a number in 1..1000000\n", f, v);
                return 2;
            }
            if (strcmp(f, "--cycle-ms") == 0)
                o.cycle_ms = (uint32_t)x;
            else if (strcmp(f, "--kube-qps") == 0)
                o.qps = x;
            else
                o.burst = (uint32_t)x;
        } else if (strcmp(f, "--log-level") == 0) {
            static const char *const names[] = {"error", "warn", "info", "debug"};
            int lv = -1;
            for (int k = 0; k < 4; k++)
                if (strcmp(v, names[k]) == 0)
                    lv = k;
            if (lv < 0) {
                fprintf(stderr,
                        "gangsched run: --log-level %s: expected error, warn, info or "
                        "debug\n",
                        v);
                return 2;
            }
            log_threshold = (enum log_level)lv;
        } else {
            fprintf(stderr, "gangsched run: unknown flag %s\n", f);
            usage_run(stderr);
            return 2;
        }
    }
    if (!o.config_path || !o.db_path) {
        fputs("gangsched run: --config and --db are required\n", stderr);
        usage_run(stderr);
        return 2;
    }
    struct sched_errbuf eb = {{0}};
    if (kube_run(&o, &eb) != 0) {
        fprintf(stderr, "gangsched run: %s\n", eb.msg);
        return 1;
    }
    return 0;
}

static int dispatch_command(int argc, char **argv);

/* Every command's standard output is checked once it is done: a full disk or a closed pipe
 * makes the command fail (exit 1) instead of reporting success over a truncated output. */
int main(int argc, char **argv)
{
    int rc = dispatch_command(argc, argv);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gangsched: writing standard output: %s\n", strerror(errno ? errno : EIO));
        return rc ? rc : 1;
    }
    return rc;
}

static int dispatch_command(int argc, char **argv)
{
    if (argc < 2) {
        usage_main(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "simulate") == 0)
        return cmd_simulate(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "config") == 0)
        return cmd_config(argc - 2, argv + 2);
    if (strcmp(cmd, "store") == 0) {
        if (argc != 4 || strcmp(argv[2], "check") != 0) {
            fputs("usage: gangsched store check DB\n", stderr);
            return 2;
        }
        return store_check_main(argv[3], stdout);
    }
    if (strcmp(cmd, "serve") == 0)
        return http_serve_main(argc - 2, argv + 2);
    if (strcmp(cmd, "policies") == 0) {
        for (size_t k = 0; sched_policies[k]; k++)
            printf("%-12s %s\n", sched_policies[k]->name, sched_policies[k]->summary);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("gangsched %s\n", GANGSCHED_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage_main(stdout);
        return 0;
    }
    fprintf(stderr, "gangsched: unknown command '%s'\n", cmd);
    usage_main(stderr);
    return 2;
}
