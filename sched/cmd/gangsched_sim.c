/* sched/cmd/gangsched_sim.c: `gangsched simulate`: its flags (one table: the parser and
 * --help), reading its inputs (cluster, configuration, traces, outages), the --db store and
 * --resume checks, the outputs written whole or not at all, and the results (table or JSON).
 *
 * Must not touch: the simulation itself (sched/sim/), scheduling (the core).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "sched/cmd/flags.h"
#include "sched/cmd/gangsched.h"
#include "sched/core/device.h"
#include "sched/core/dra.h"
#include "sched/core/hash.h"
#include "sched/core/log.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"
#include "sched/sim/openb.h"
#include "sched/sim/outfile.h"
#include "sched/sim/report.h"
#include "sched/sim/sim.h"
#include "sched/sim/trace.h"
#include "store/store.h"

/* The bundled default workload (generated at build time from sched/sim/data/, see Makefile). */
extern const unsigned char sim_default_trace[];
extern const unsigned long sim_default_trace_len;

#define DEFAULT_CLUSTER    "hgx:16,pcie:8"
#define DEFAULT_TRACE_NAME "itp-default.csv"
#define MAX_TRACES         64
#define MAX_POLICIES       8

struct sim_args {
    struct sim_workload workload;
    const char *config_path;
    const char *cluster_spec;
    const char *nodes_file;              /* the first --nodes */
    const char *nodes_files[MAX_TRACES]; /* every --nodes (Nodes and ResourceSlices) */
    int n_nodes_files;
    const char *traces[MAX_TRACES];
    int n_traces;
    const struct sched_policy *policies[MAX_POLICIES];
    int n_policies;
    bool json;
    const char *events_path;
    const char *report_path;
    const char *explain_job;
    const char *tolerate;
    bool progress, no_progress, verbose, help;
    const char *db_path;
    bool resume;
    unsigned long long stop_after;
    const char *jobs_out;
    uint64_t db_batch;
    bool rebuild_store;
    struct sim_failures fail;
    bool failing;
    const char *outages_path;
};

/* --policy NAME: a known policy, at most MAX_POLICIES of them. */
static int policy_flag(const char *v, void *opts, char *err, size_t n)
{
    struct sim_args *a = opts;
    const struct sched_policy *p = sched_policy_find(v);
    if (!p) {
        int at = snprintf(err, n, "unknown policy '%s' (known:", v);
        for (size_t k = 0; sched_policies[k] && at > 0 && (size_t)at < n; k++)
            at += snprintf(err + at, n - (size_t)at, " %s", sched_policies[k]->name);
        if (at > 0 && (size_t)at < n)
            snprintf(err + at, n - (size_t)at, ")");
        return -1;
    }
    if (a->n_policies == MAX_POLICIES) {
        snprintf(err, n, "at most %d --policy flags", MAX_POLICIES);
        return -1;
    }
    a->policies[a->n_policies++] = p;
    return 0;
}

/* --checkpoint-default MIN:EVERY, in seconds. */
static int ckpt_flag(const char *v, void *opts, char *err, size_t n)
{
    struct sim_workload *w = &((struct sim_args *)opts)->workload;
    char *end;
    unsigned long long min_s = strtoull(v, &end, 10), every_s = 0;
    if (end != v && *end == ':')
        every_s = strtoull(end + 1, &end, 10);
    if (*end || !strchr(v, ':') || min_s > 1000000000ull || every_s > 1000000000ull) {
        snprintf(err, n, "--checkpoint-default '%s' is not MIN:EVERY (seconds)", v);
        return -1;
    }
    w->ckpt_min_duration_ms = (int64_t)min_s * 1000;
    w->ckpt_interval_ms = (int64_t)every_s * 1000;
    return 0;
}

/* --arrival NAME is read before the table (the openb workload has its own flags): only the
 * "--arrival=NAME" spelling reaches here. */
static int arrival_flag(const char *v, void *opts, char *err, size_t n)
{
    (void)opts;
    snprintf(err, n, "write --arrival %s as two words (the openb workload has its own flags)", v);
    return -1;
}

#define BIG 1e9 /* the failure flags' bound */

/* The flags of `gangsched simulate`, into struct sim_args. */
static const struct flag sim_flags[] = {
    FLAGS_SECTION("cluster (one of):"),
    {.name = "--cluster",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, cluster_spec),
     .arg = "SPEC",
     .help = "generated cluster: hgx:N, nvl72:N, pcie:N, comma-combined"},
    {.name = "--nodes",
     .kind = FLAG_REPEATED,
     FLAG_AT(struct sim_args, nodes_files),
     FLAG_COUNT(struct sim_args, n_nodes_files),
     .max_count = MAX_TRACES,
     .arg = "FILE",
     .help = "a NodeList as printed by 'kubectl get nodes -o yaml|json', or a\n"
             "List of Nodes and ResourceSlices ('kubectl get\n"
             "nodes,resourceslices'); repeatable (a node's GPUs: its\n"
             "nvidia.com/gpu, else its gpu.nvidia.com devices)"},
    FLAGS_SECTION("workload:"),
    {.name = "--trace",
     .kind = FLAG_REPEATED,
     FLAG_AT(struct sim_args, traces),
     FLAG_COUNT(struct sim_args, n_traces),
     .max_count = MAX_TRACES,
     .arg = "FILE",
     .help = "CSV trace (repeatable; each file is a queue named after it)"},
    {.name = "--arrival",
     .kind = FLAG_FUNC,
     .fn = arrival_flag,
     .arg = "fgd",
     .help = "the openb GPU-sharing workload with FGD's method (openb node\n"
             "and pod CSVs; see 'gangsched simulate --arrival fgd --help')"},
    {.name = "--seed",
     .kind = FLAG_INT,
     FLAG_AT(struct sim_args, workload.seed),
     .imax = UINT64_MAX,
     .arg = "N",
     .help = "seed of every random choice below (default 1)"},
    {.name = "--high-priority",
     .kind = FLAG_DOUBLE,
     FLAG_AT(struct sim_args, workload.high_priority_fraction),
     .max = 1,
     .arg = "F",
     .help = "give priority 10 to this fraction of jobs without a priority"},
    {.name = "--elastic",
     .kind = FLAG_DOUBLE,
     FLAG_AT(struct sim_args, workload.elastic_fraction),
     .max = 1,
     .arg = "F",
     .help = "make this fraction of multi-pod jobs without a min_pods column\n"
             "elastic (min_pods = half their pods, rounded up)"},
    {.name = "--checkpoint-default",
     .kind = FLAG_FUNC,
     .fn = ckpt_flag,
     .arg = "MIN:EVERY",
     .help = "jobs of at least MIN seconds without a\n"
             "checkpoint_interval column checkpoint every EVERY seconds\n"
             "(+-20% seeded jitter; default 3600:1800, 0:0 = never)"},
    {.name = "--tolerate",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, tolerate),
     .arg = "LIST",
     .help = "tolerations of every job without a tolerations column, as\n"
             "kubectl taint writes them, ';'-separated (for the GPU operator's\n"
             "taint: nvidia.com/gpu=present:NoSchedule; '*' tolerates all)"},
    FLAGS_SECTION("failures (seeded by --seed):"),
    {.name = "--node-mtbf",
     .kind = FLAG_DOUBLE,
     FLAG_AT(struct sim_args, fail.node_mtbf_h),
     .max = BIG,
     .unit = "hours",
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "HOURS",
     .help = "each node fails after an exponential time of this mean"},
    {.name = "--repair",
     .kind = FLAG_DOUBLE,
     FLAG_AT(struct sim_args, fail.repair_h),
     .max = BIG,
     .unit = "hours",
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "HOURS",
     .help = "how long a failed node stays down (default 4)"},
    {.name = "--outages",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, outages_path),
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "FILE",
     .help = "planned outages, CSV node,down,up (seconds)"},
    {.name = "--pod-start-failure-rate",
     .kind = FLAG_DOUBLE,
     FLAG_AT(struct sim_args, fail.pod_start_failure_rate),
     .max = 1,
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "P",
     .help = "probability that a gang's start fails"},
    {.name = "--max-restarts",
     .kind = FLAG_INT,
     FLAG_AT(struct sim_args, fail.max_restarts),
     .imax = 1000000000,
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "N",
     .help = "retry budget for failed starts (default 3)"},
    {.name = "--failure-grace",
     .kind = FLAG_DURATION,
     FLAG_AT(struct sim_args, fail.detect_ms),
     .unit_ms = 1000,
     .unit = "s",
     .max = BIG,
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "S",
     .help = "a gang that lost a member is torn down after S s (default 30)"},
    {.name = "--start-timeout",
     .kind = FLAG_DURATION,
     FLAG_AT(struct sim_args, fail.start_timeout_ms),
     .unit_ms = 1000,
     .unit = "s",
     .max = BIG,
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "S",
     .help = "a start that never becomes ready is torn down after S s (300)"},
    {.name = "--restart-backoff",
     .kind = FLAG_DURATION,
     FLAG_AT(struct sim_args, fail.backoff_ms),
     .unit_ms = 1000,
     .unit = "s",
     .max = BIG,
     FLAG_GIVEN(struct sim_args, failing),
     .arg = "S",
     .help = "a gang torn down by its own failure queues again after S s x 2^(k-1),\n"
             "at most 1 h (default 60): the workload controller's delay before it\n"
             "recreates the pods (the daemon leaves it to the controller; 0: at once)"},
    FLAGS_SECTION("queues:"),
    {.name = "--config",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, config_path),
     .arg = "FILE",
     .help = "operator configuration (queues, quotas, cohorts; see docs/config.md);\n"
             "without it each trace queue gets a nominal GPU quota proportional\n"
             "to its GPU-hours in one cohort"},
    FLAGS_SECTION("policies and output:"),
    {.name = "--policy",
     .kind = FLAG_FUNC,
     .fn = policy_flag,
     .arg = "NAME",
     .attrs = FLAG_MANY,
     .help = "policy to run (repeatable; default: gangsched and fifo)"},
    {.name = "--json",
     .kind = FLAG_BOOL,
     FLAG_AT(struct sim_args, json),
     .help = "print one JSON object instead of tables"},
    {.name = "--events",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, events_path),
     .arg = "FILE",
     .help = "write every event as JSON Lines"},
    {.name = "--report",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, report_path),
     .arg = "FILE",
     .help = "write a self-contained HTML report with charts"},
    {.name = "--explain",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, explain_job),
     .arg = "JOB",
     .help = "print every scheduling verdict for one job id on stderr"},
    {.name = "--jobs-out",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, jobs_out),
     .arg = "FILE",
     .help = "write every job's result (start, finish, placement) as CSV"},
    FLAGS_SECTION("persistence (one policy):"),
    {.name = "--db",
     .kind = FLAG_STRING,
     FLAG_AT(struct sim_args, db_path),
     .arg = "FILE",
     .help = "persist the run in a SQLite store, a transaction per batch of\n"
             "instants (docs/store.md)"},
    {.name = "--resume",
     .kind = FLAG_BOOL,
     FLAG_AT(struct sim_args, resume),
     .help = "continue the simulation saved in --db after a crash"},
    {.name = "--db-batch",
     .kind = FLAG_INT,
     FLAG_AT(struct sim_args, db_batch),
     .imin = 1,
     .imax = 1000000,
     .arg = "N",
     .help = "simulated instants per transaction (default 4096)"},
    {.name = "--rebuild-store",
     .kind = FLAG_BOOL,
     FLAG_AT(struct sim_args, rebuild_store),
     .help = "when --db is unreadable or corrupt, keep it as FILE.broken-TIME\n"
             "and start a new one (the simulation restarts from its inputs)"},
    {.name = "--stop-after-events",
     .kind = FLAG_INT,
     FLAG_AT(struct sim_args, stop_after),
     .imin = 1,
     .imax = UINT64_MAX,
     .arg = "N",
     .help = "end abruptly after N events, as a crash would (for tests)"},
    {.name = "--no-progress",
     .kind = FLAG_BOOL,
     FLAG_AT(struct sim_args, no_progress),
     .help = "no progress line on stderr (default: shown on a terminal)"},
    {.name = "--verbose",
     .short_name = 'v',
     .kind = FLAG_BOOL,
     FLAG_AT(struct sim_args, verbose),
     .help = "log at info level"},
    FLAGS_HELP(struct sim_args, help),
    FLAGS_END,
};

static void usage_simulate(FILE *f)
{
    fputs("usage: gangsched simulate [FLAGS]\n"
          "\n"
          "Replays job traces on a simulated cluster with a virtual clock, through the same\n"
          "scheduling core as the daemon. Without flags: a bundled 14-day excerpt of the\n"
          "Microsoft ITP traces (MIT licence) on " DEFAULT_CLUSTER
          ", policies gangsched and fifo.\n"
          "\n",
          f);
    flags_help(f, sim_flags, 21);
}

/* Checks of flags against each other. Returns 0, or the exit code. */
static int check_simulate(struct sim_args *a)
{
    if (a->cluster_spec && a->nodes_file) {
        fputs("gangsched simulate: give --cluster or --nodes, not both\n", stderr);
        return 2;
    }
    if (a->n_policies == 0) {
        a->policies[a->n_policies++] = sched_policy_find("gangsched");
        if (!a->db_path)
            a->policies[a->n_policies++] = sched_policy_find("fifo");
    }
    for (int k = 0; a->db_path && k < a->n_policies; k++)
        if (a->policies[k]->private_slices) {
            fputs("gangsched simulate: --db cannot persist --policy private\n", stderr);
            return 2;
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

/* Returns 0, -1 after --help, or the exit code to leave with. */
static int parse_simulate(int argc, char **argv, struct sim_args *a)
{
    memset(a, 0, sizeof(*a));
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
    char err[512];
    int rc = flags_parse(&(struct flag_parse){.flags = sim_flags, .opts = a}, argc, argv, err,
                         sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "gangsched simulate: %s (see --help)\n", err);
        return 2;
    }
    if (a->help) {
        usage_simulate(stdout);
        return -1;
    }
    a->progress = isatty(STDERR_FILENO) && !a->no_progress;
    if (a->verbose)
        log_threshold = LOG_LEVEL_INFO;
    a->nodes_file = a->n_nodes_files ? a->nodes_files[0] : NULL;
    return check_simulate(a);
}

static void warn_unfit(const struct sim_input *in, const char *tolerate);

/* The table or JSON on stdout, then the --report page. Returns the exit code. */
static int print_results(const struct sim_args *a, const struct sim_stats *stats, int n,
                         const char *cluster_desc, const struct cluster *c, uint32_t n_jobs)
{
    if (a->json)
        sim_print_json(stats, n);
    else
        sim_print_table(stats, n, cluster_desc, c->total_gpus, c->n_nodes);
    if (a->report_path) {
        char title[256];
        struct sched_errbuf eb = {{0}};
        snprintf(title, sizeof(title), "gangsched simulate: %s, %u jobs", cluster_desc, n_jobs);
        if (sim_write_report(a->report_path, title, stats, n, c, &eb) != 0) {
            fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
            return 1;
        }
    }
    return 0;
}

/* After the input is built: the tolerations of --tolerate and the trace, a warning when some
 * jobs fit no node, and the --explain id must be a job of the trace. 0, or the exit code. */
static int prepare_jobs(struct sim_input *in, const struct trace *t, const struct sim_args *a)
{
    struct sched_errbuf eb = {{0}};
    if (sim_input_tolerations(in, t, a->tolerate, &eb) != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        return 2;
    }
    warn_unfit(in, a->tolerate);
    if (a->explain_job) {
        uint32_t j = 0;
        while (j < in->n_jobs && strcmp(in->jobs[j].id, a->explain_job) != 0)
            j++;
        if (j == in->n_jobs) {
            fprintf(stderr,
                    "gangsched simulate: --explain: no job '%s' in the trace (%u jobs; the id is "
                    "the trace's job id column, as in --jobs-out and gangctl jobs)\n",
                    a->explain_job, in->n_jobs);
            return 2;
        }
    }
    return 0;
}

/* Warns on stderr when some jobs fit no node at all (before the run: such jobs never start). */
static void warn_unfit(const struct sim_input *in, const char *tolerate)
{
    struct sim_unfit u;
    sim_input_unfit(in, &u);
    if (u.jobs == 0)
        return;
    fprintf(stderr, "gangsched simulate: warning: %u of %u jobs fit no node (e.g. %s)", u.jobs,
            in->n_jobs, u.example ? u.example : "?");
    if (u.by_taint > 0 && u.taint[0])
        fprintf(stderr,
                "; %u of them only because of the taint %s on %u of %u nodes, which they do not "
                "tolerate: add a tolerations column to the trace or --tolerate %s%s\n",
                u.by_taint, u.taint, u.taint_nodes, in->cluster->n_nodes, u.taint,
                tolerate ? " (in addition to the current --tolerate)" : "");
    else
        fputs("; their pods ask more than any node has\n", stderr);
}

/* One "PATH HASH" line per input file the run reads (config, NodeList, outages, traces, in
 * that order), HASH the FNV-1a of its bytes: --resume refuses a file changed since the crash.
 * Returns 0 or SCHED_EIO (naming the file). */
static int input_fingerprint(const struct sim_args *a, char *buf, size_t cap,
                             struct sched_errbuf *eb)
{
    const char *files[2 * MAX_TRACES + 3];
    int n = 0;
    if (a->config_path)
        files[n++] = a->config_path;
    for (int i = 0; i < a->n_nodes_files; i++)
        files[n++] = a->nodes_files[i];
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

/* arg is --name or --name=VALUE. */
static bool is_flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
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

/* --events and --jobs-out are written whole or not at all (sched/sim/outfile.h; --report too):
 * these print the message. 0, or -1. */
static int outfile_open(struct sim_outfile *o, const char *path)
{
    struct sched_errbuf eb = {{0}};
    if (sim_outfile_open(o, path, &eb) == 0)
        return 0;
    fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
    return -1;
}

static int outfile_close(struct sim_outfile *o, bool ok)
{
    struct sched_errbuf eb = {{0}};
    if (sim_outfile_close(o, ok, &eb) == 0)
        return 0;
    if (ok)
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
    return -1;
}

/* The generated cluster or the --nodes files, finalised with the configuration's topology
 * levels. 0, or -1 with a message. */
static int build_cluster(const struct sim_args *a, const struct config *cfg, struct cluster *c)
{
    struct sched_errbuf eb = {{0}};
    int rc = a->nodes_file
                 ? 0
                 : nodes_generate(c, a->cluster_spec ? a->cluster_spec : DEFAULT_CLUSTER, &eb);
    for (int i = 0; rc == 0 && i < a->n_nodes_files; i++) /* Nodes and ResourceSlices, any file */
        rc = nodes_load_file(c, a->nodes_files[i], &eb);
    if (c->dra) /* quota per DeviceClass: DRA nodes hold the GPU class's slot (core/dra.h) */
        dra_inv_set_class_res(c->dra, config_qmap_class(cfg, device_dra_class()));
    if (rc == 0)
        rc = cfg && cfg->n_levels > 0
                 ? cluster_finalize(c, cfg->level_names, cfg->level_labels, cfg->n_levels, &eb)
                 : cluster_finalize(c, NULL, NULL, 0, &eb);
    if (rc == 0)
        return 0;
    fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
    if (a->nodes_file && openb_sniff(a->nodes_file))
        fputs("gangsched simulate: this is an openb node list: add --arrival fgd\n", stderr);
    return -1;
}

/* The --trace files (or the bundled trace), sorted. 0, or -1 with a message. */
static int read_traces(const struct sim_args *a, struct trace *t)
{
    struct sched_errbuf eb = {{0}};
    int rc = 0;
    if (a->n_traces == 0)
        rc = trace_parse(t, DEFAULT_TRACE_NAME, (const char *)sim_default_trace,
                         (size_t)sim_default_trace_len, &eb);
    int bad_trace = -1;
    for (int i = 0; i < a->n_traces && rc == 0; i++)
        if ((rc = trace_read(t, a->traces[i], &eb)) != 0)
            bad_trace = i;
    if (rc != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        if (bad_trace >= 0 && openb_sniff(a->traces[bad_trace]))
            fputs("gangsched simulate: this is an openb pod list: add --arrival fgd\n", stderr);
        return -1;
    }
    trace_sort(t);
    return 0;
}

int gangsched_simulate(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) /* the openb GPU-sharing workload: its own flags */
        if (strcmp(argv[i], "--arrival") == 0)
            return openb_main(argc, argv);
    struct sim_args a;
    int rc = parse_simulate(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    sim_outfile_guard(); /* SIGINT, SIGTERM: no FILE.tmp-PID left; ulimit -f: an error */
    struct sched_errbuf eb = {{0}};
    int exit_code = 1;
    struct cluster *c = cluster_new();
    struct trace t;
    trace_init(&t);
    struct sim_input in = {0};
    struct config *cfg = NULL;
    struct store *db = NULL;
    struct sim_outfile jobs_out = {0}, events = {0};
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
    if (a.config_path &&
        (config_load_cli(a.config_path, &cfg, &eb) != 0 || config_apply_device(cfg, &eb) != 0)) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    if (build_cluster(&a, cfg, c) != 0)
        goto out;
    char nodev[512];
    if (device_missing(c, nodev, sizeof(nodev)))
        fprintf(stderr, "gangsched simulate: warning: %s: %s\n", cluster_desc, nodev);
    if (read_traces(&a, &t) != 0)
        goto out;
    if (sim_input_build(&in, &t, c, cfg, &eb) != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        goto out;
    }
    sim_input_workload(&in, &t, &a.workload);
    if ((exit_code = prepare_jobs(&in, &t, &a)) != 0)
        goto out;
    exit_code = 1;
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
    opt.jobs_out_name = a.jobs_out;
    for (int p = 0; p < a.n_policies; p++) {
        if ((a.policies[p]->private_slices
                 ? sim_run_private(&in, a.policies[p], &opt, &stats[p], &eb)
                 : sim_run(&in, a.policies[p], &opt, &stats[p], &eb)) != 0) {
            fprintf(stderr, "gangsched simulate: policy %s: %s\n", a.policies[p]->name, eb.msg);
            goto out;
        }
        n_done++;
    }
    if (outfile_close(&events, true) != 0 || outfile_close(&jobs_out, true) != 0)
        goto out;
    exit_code = print_results(&a, stats, n_done, cluster_desc, c, in.n_jobs);
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
