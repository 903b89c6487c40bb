/* sched/cmd/gangctl.c: the tenant and operator CLI (also `kubectl gang`, via bin/kubectl-gang).
 *
 * Owns: argument parsing; the two sources of the tenant commands (quota, queues, jobs, explain,
 * top, reservations), which both yield the JSON documents of store/views.h: offline (`--db
 * FILE`: the views of a simulator or scheduler database opened STORE_READONLY, never written)
 * and remote (`--server URL` or $GANGSCHED_SERVER: the scheduler's HTTP API, docs/api.md,
 * through libcurl, with a bearer token from `--token-file FILE` or $GANGSCHED_TOKEN); the
 * operator commands (queue hold|resume|drain, reserve add|delete, checkpoint: writes of the API,
 * remote only); the output, rendered from the documents whatever their source (aligned tables,
 * `-o wide`, `-o json` through cJSON, `-o yaml` through libyaml's emitter; colour only on
 * a terminal); and the exit codes: 0 success, 1 not found (an unknown queue or job), 2 usage
 * error, an unreachable server, an operator command offline, or a database that cannot be
 * opened or read, 3 refused by the server (401 unauthorized, 403 forbidden).
 *
 * Must not touch: the database's content (read-only open), scheduling, the cluster.
 *
 * Documents are read defensively (a server's answer is input): missing or mistyped fields print
 * as absent, text is made harmless for the terminal. docs/cli.md is the user's reference.
 */
#include "sched/cmd/gangctl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "sched/cmd/flags.h"
#include "sched/cmd/stdout_check.h"
#include "sched/core/cycle.h"
#include "sched/core/err.h"
#include "sched/core/quantity.h"
#include "store/store.h"
#include "store/views.h"

/* ---- command line ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [FLAGS] COMMAND [ARGS]\n"
            "\n"
            "tenants (read a database offline with --db FILE):\n"
            "  quota [QUEUE]          quota per flavor and resource: nominal, limits, used,\n"
            "                         borrowed, lent, available; fair-share history\n"
            "  queues                 queues: state (open, held, draining), GPUs nominal and\n"
            "                         used, running and pending jobs\n"
            "  jobs [-q QUEUE] [-A]   pending and running jobs (-A: all): position in queue,\n"
            "                         current wait, and the reason each pending job waits\n"
            "  explain JOB            a job, its decisions (newest first) and preemptions;\n"
            "                         JOB is NAMESPACE/PODGROUP, or the simulator's job id\n"
            "  top                    GPU usage by queue and by node\n"
            "  reservations           capacity held for waiting jobs\n"
            "operators (need a running scheduler, --server, and a write token):\n"
            "  queue hold|resume|drain QUEUE\n"
            "  reserve add JOB NODE...  hold nodes for a waiting job; reserve delete ID\n"
            "  checkpoint JOB         ask a running job to checkpoint\n"
            "shell:\n"
            "  completion bash|zsh    the completion script for gangctl and kubectl gang\n"
            "\n"
            "flags:\n",
            prog);
    flags_help(f, gangctl_flags, 25);
    fputs("\nexit: 0 ok, 1 unknown queue or job, 2 usage error, server unreachable or not\n"
          "available, 3 refused by the server (401, 403)\n",
          f);
}

const struct cmd_help gangctl_helps[] = {
    {"quota", "quota [QUEUE]",
     "quota per flavor and resource: nominal, limits, used, borrowed, lent, available",
     "Per queue, flavor and resource: nominal quota, borrowing and lending limits (none =\n"
     "unlimited), used (the usage ledger), borrowed = max(0, used - nominal), lent (what\n"
     "other queues of its cohort use of its quota now, which it can reclaim), and available:\n"
     "what the queue could still take now (its unused nominal quota; in a cohort, what the\n"
     "cohort's queues leave unused, and at least its unused nominal quota, lent or not,\n"
     "within its borrowing limit). SHARE is the queue's decayed historical fair share.\n"
     "-o wide adds cohort and weight. Exit 1 for an unknown queue.\n"},
    {"queues", "queues", "queues: state, GPUs nominal and used, running and pending jobs",
     "One line per queue: state (open, held or draining: the operator's last applied action),\n"
     "cohort, weight, priority, nominal and used GPUs, running (admitted or running) and\n"
     "pending jobs. -o wide adds borrowed and lent GPUs, admitted, finished and failed jobs\n"
     "and the fair share. Queues only found in the ledger or the jobs (no longer in the\n"
     "configuration) are marked \"not configured\".\n"},
    {"jobs", "jobs [-q QUEUE] [-u USER] [-A]",
     "jobs: position, current wait and why each pending job waits",
     "Pending and running jobs (-A, --all: every job), by queue. POSITION is a pending job's\n"
     "place in its queue in submission order (the database does not record priorities, so\n"
     "the scheduler may admit in another order). WAITING is a pending job's current wait\n"
     "(since submission, or since its last preemption); STARTED the start of the current run.\n"
     "REASON says why a pending job waits: its newest decision (with the scheduler's latest\n"
     "figures), or its queue's hold. \"Now\" is the latest time in the database. -o wide adds\n"
     "flavor, submission time, preemptions, nodes and QUEUED (submission to first start).\n"},
    {"explain", "explain JOB  [--limit N]", "a job, its decisions (newest first) and preemptions",
     "A job's record (state, GPUs, times, position, placement, its queue's GPU quota while\n"
     "pending, reservations held for it), its scheduling decisions from the decision log,\n"
     "newest first (at most N, default 50; --limit 0 for all), and the preemptions where it\n"
     "was the victim or the preemptor. JOB is matched exactly: NAMESPACE/PODGROUP for the\n"
     "daemon, the trace's job id for the simulator. Exit 1 for an unknown job.\n"},
    {"top", "top", "GPU usage by queue and by node",
     "GPUs in use per queue and flavor (the ledger), against nominal quota, and per node\n"
     "(GPUs, pods and jobs placed there, from the placements).\n"},
    {"reservations", "reservations", "capacity held for waiting jobs",
     "Capacity held for waiting jobs: id, kind (starvation, preemptor, operator), job, nodes,\n"
     "creation, expiry and expected start. -o wide lists every node.\n"},
    {"queue", "queue hold|resume|drain QUEUE", "hold, resume or drain a queue (operator)",
     "Operator command (--server and a write token): hold stops admitting the queue's jobs,\n"
     "resume admits them again, drain stops admitting and lets running jobs finish. The\n"
     "scheduler records the request and applies it; exit 1 for an unknown queue.\n"},
    {"reserve", "reserve add JOB NODE... | reserve delete ID",
     "hold nodes for a waiting job, or remove a reservation (operator)",
     "Operator command (--server and a write token): add holds the nodes for a waiting job\n"
     "(an operator reservation); delete removes reservation ID.\n"},
    {"checkpoint", "checkpoint JOB", "ask a job to checkpoint (operator)",
     "Operator command (--server and a write token): asks the job to checkpoint, without a\n"
     "deadline (the checkpoint handshake of docs/preemption.md): the annotation\n"
     "gangsched.io/checkpoint-requested on its PodGroup, or on each of its running pods when\n"
     "it has none of its own (a gang of one, a Kueue pod group, a 1.35 Workload's pod group).\n"
     "JOB is NAMESPACE/PODGROUP, or NAMESPACE/POD for a gang of one. Exit 1 for an unknown\n"
     "job.\n"},
    {"completion", "completion bash|zsh", "the shell completion script",
     "Prints the completion script of the shell: commands, flags and their values, for\n"
     "gangctl and kubectl-gang. bash: source <(gangctl completion bash); zsh: put it in a\n"
     "directory of $fpath as _gangctl. make install puts both in place.\n"},
};

const size_t gangctl_n_helps = sizeof(gangctl_helps) / sizeof(gangctl_helps[0]);

static const struct cmd_help *find_help(const char *cmd)
{
    for (size_t i = 0; i < gangctl_n_helps; i++)
        if (strcmp(gangctl_helps[i].name, cmd) == 0)
            return &gangctl_helps[i];
    return NULL;
}

static void usage_cmd(FILE *f, const struct cmd_help *h)
{
    fprintf(f, "usage: %s [--db FILE | --server URL] [-o table|wide|json|yaml] %s\n\n%s", prog,
            h->synopsis, h->text);
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "%s: %s%s%s%s\n", prog, msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
    fprintf(stderr, "run '%s --help' for usage\n", prog);
    return EXIT_USAGE;
}

static const char *const out_fmts[] = {"table", "wide", "json", "yaml", NULL};

/* gangctl's flags, into struct args: the parser, --help and the shell completions read it. */
const struct flag gangctl_flags[] = {
    {.name = "--db",
     .kind = FLAG_STRING,
     FLAG_AT(struct args, db),
     .arg = "FILE",
     .help = "read this simulator or scheduler database (read-only)"},
    {.name = "--server",
     .kind = FLAG_STRING,
     FLAG_AT(struct args, server),
     FLAG_GIVEN(struct args, server_flag),
     .arg = "URL",
     .help = "the scheduler's HTTP API (default $GANGSCHED_SERVER)"},
    {.name = "--token-file",
     .kind = FLAG_STRING,
     FLAG_AT(struct args, token_file),
     .arg = "FILE",
     .help = "bearer token for --server (default: $GANGSCHED_TOKEN)"},
    {.name = "--output",
     .short_name = 'o',
     .kind = FLAG_ENUM,
     FLAG_AT(struct args, out_fmt),
     .choices = out_fmts,
     .arg = "FMT",
     .help = "table (default), wide, json or yaml"},
    {.name = "--no-headers",
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, no_headers),
     .help = "tables without their header line"},
    {.name = "--queue",
     .short_name = 'q',
     .kind = FLAG_STRING,
     FLAG_AT(struct args, queue),
     .arg = "QUEUE",
     .help = "jobs: the jobs of this queue only"},
    {.name = "--user",
     .short_name = 'u',
     .kind = FLAG_STRING,
     FLAG_AT(struct args, user),
     .arg = "USER",
     .help = "jobs: the jobs of this user only (gangsched.io/user)"},
    {.name = "--all",
     .short_name = 'A',
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, all),
     .help = "jobs: every job, finished and failed included"},
    {.name = "--all-jobs", .kind = FLAG_BOOL, FLAG_AT(struct args, all), .attrs = FLAG_HIDDEN},
    {.name = "--limit",
     .kind = FLAG_INT,
     FLAG_AT(struct args, limit),
     .imax = UINT32_MAX,
     FLAG_GIVEN(struct args, have_limit),
     .arg = "N",
     .help = "explain: decisions shown (default 50; 0: all)"},
    {.name = "--watch",
     .short_name = 'w',
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, watch),
     .help = "run the command again every 2 s (--watch-interval S)"},
    {.name = "--watch-interval",
     .kind = FLAG_DURATION,
     FLAG_AT(struct args, watch_ms),
     .unit_ms = 1000,
     .unit = "s",
     .min = 0.1,
     .max = 86400,
     .arg = "S",
     .help = "seconds between two runs of --watch"},
    {.name = "--version",
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, version),
     .help = "print the version"},
    {.name = "--no-color",
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, no_color),
     .help = "no colour (default: colour on a terminal, unless $NO_COLOR)"},
    {.name = "--no-colour",
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, no_color),
     .attrs = FLAG_HIDDEN},
    {.name = "--help",
     .short_name = 'h',
     .kind = FLAG_BOOL,
     FLAG_AT(struct args, help),
     .help = "this help; 'COMMAND --help' for one command"},
    FLAGS_END,
};

/* Returns 0, or an exit code. */
static int parse_args(int argc, char **argv, struct args *a)
{
    a->out_fmt = out_fmt;
    char err[512];
    struct flag_parse p = {
        .flags = gangctl_flags, .opts = a, .pos = a->pos, .max_pos = 8, .n_pos = &a->n_pos};
    if (flags_parse(&p, argc - 1, argv + 1, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        fprintf(stderr, "run '%s --help' for usage\n", prog);
        return EXIT_USAGE;
    }
    out_fmt = (enum out_fmt)a->out_fmt;
    no_headers = a->no_headers;
    if (a->watch_ms > 0)
        a->watch_s = (double)a->watch_ms / 1000.0;
    return 0;
}

static bool is_operator(const char *cmd)
{
    return strcmp(cmd, "queue") == 0 || strcmp(cmd, "reserve") == 0 ||
           strcmp(cmd, "checkpoint") == 0;
}

static int offline(const char *path, const struct args *a)
{
    const char *cmd = a->pos[0];
    const char *arg = a->n_pos > 1 ? a->pos[1] : NULL;
    struct sched_errbuf eb = {{0}};
    struct store *st = NULL;
    struct store_views *v = NULL;
    cJSON *doc = NULL;
    int err = store_open(path, STORE_READONLY, NULL, &st, &eb);
    if (!err) {
        set_device(store_device(st), store_device_unit(st));
        err = store_views_load(st, &v, &eb);
    }
    if (!err) {
        if (strcmp(cmd, "quota") == 0)
            err = store_view_quota(v, arg, &doc, &eb);
        else if (strcmp(cmd, "queues") == 0)
            err = store_view_queues(v, &doc, &eb);
        else if (strcmp(cmd, "jobs") == 0)
            err = store_view_jobs(v, a->queue, a->all, &doc, &eb);
        else if (strcmp(cmd, "explain") == 0)
            err = store_view_explain(v, arg, a->limit, &doc, &eb);
        else if (strcmp(cmd, "top") == 0)
            err = store_view_top(v, &doc, &eb);
        else
            err = store_view_reservations(v, &doc, &eb);
    }
    int rc = 0;
    if (err) {
        store_rebuild_hint(&eb, "the simulator or scheduler that writes it can start a new one: "
                                "--rebuild-store");
        fprintf(stderr, "%s: %s\n", prog, eb.msg[0] ? eb.msg : sched_strerror(err));
        rc = err == SCHED_ENOENT && v ? EXIT_NOTFOUND : EXIT_USAGE;
    } else {
        source_kind = "database";
        source_name = path;
        rc = show(doc, cmd, a);
    }
    store_views_free(v);
    store_close(st);
    return rc;
}

/* 0, or EXIT_USAGE with a message naming the error when standard output lost a write (a full
 * disk): a table or document cut short is never reported as a success. close: at exit. */
static int check_stdout(bool close)
{
    return stdout_check(prog, close) == 0 ? 0 : EXIT_USAGE;
}

static int execute(const struct args *ap, const char *cmd);
static int watch(const struct args *a, const char *cmd, int argc, char **argv);

static int run(int argc, char **argv)
{
    struct args a = {.limit = DEFAULT_LIMIT};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.version) {
        printf("%s %s\n", prog, GANGSCHED_VERSION);
        return 0;
    }
    const char *cmd = a.n_pos > 0 ? a.pos[0] : NULL;
    if (cmd && strcmp(cmd, "help") == 0) {
        const struct cmd_help *h = a.n_pos > 1 ? find_help(a.pos[1]) : NULL;
        if (a.n_pos > 1 && !h)
            return usage_error("unknown command", a.pos[1]);
        if (h)
            usage_cmd(stdout, h);
        else
            usage(stdout);
        return 0;
    }
    if (!cmd) {
        usage(a.help ? stdout : stderr);
        return a.help ? 0 : EXIT_USAGE;
    }
    const struct cmd_help *h = find_help(cmd);
    if (!h)
        return usage_error("unknown command", cmd);
    if (a.help) {
        usage_cmd(stdout, h);
        return 0;
    }
    if (strcmp(cmd, "completion") == 0) {
        if (a.n_pos != 2)
            return usage_error("completion needs a shell: bash or zsh", NULL);
        return gangctl_completion(stdout, a.pos[1])
                   ? usage_error("unknown shell (bash, zsh):", a.pos[1])
                   : 0;
    }
    int max_pos = strcmp(cmd, "quota") == 0 || strcmp(cmd, "explain") == 0 ? 2
                  : strcmp(cmd, "queue") == 0                              ? 3
                  : strcmp(cmd, "reserve") == 0                            ? 8
                  : strcmp(cmd, "checkpoint") == 0                         ? 2
                                                                           : 1;
    if (a.n_pos > max_pos)
        return usage_error("unexpected argument", a.pos[max_pos]);
    if ((strcmp(cmd, "explain") == 0 || strcmp(cmd, "checkpoint") == 0) && a.n_pos < 2) {
        fprintf(stderr, "%s: %s needs a job: %s %s\n", prog, cmd, prog, h->synopsis);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "queue") == 0 &&
        (a.n_pos < 3 || (strcmp(a.pos[1], "hold") != 0 && strcmp(a.pos[1], "resume") != 0 &&
                         strcmp(a.pos[1], "drain") != 0))) {
        fprintf(stderr, "%s: usage: %s %s\n", prog, prog, h->synopsis);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "reserve") == 0 && !(a.n_pos >= 4 && strcmp(a.pos[1], "add") == 0) &&
        !(a.n_pos == 3 && strcmp(a.pos[1], "delete") == 0)) {
        fprintf(stderr, "%s: usage: %s %s\n", prog, prog, h->synopsis);
        return EXIT_USAGE;
    }
    if ((a.queue || a.all || a.user) && strcmp(cmd, "jobs") != 0)
        return usage_error(a.queue  ? "-q applies to jobs only, not"
                           : a.user ? "-u applies to jobs only, not"
                                    : "-A applies to jobs only, not",
                           cmd);
    if (a.have_limit && strcmp(cmd, "explain") != 0)
        return usage_error("--limit applies to explain only, not", cmd);

    if (!a.server && !a.db && getenv("GANGSCHED_SERVER") && *getenv("GANGSCHED_SERVER"))
        a.server = getenv("GANGSCHED_SERVER");
    if (a.server_flag && a.db) {
        fprintf(stderr, "%s: use either --db FILE or --server URL, not both\n", prog);
        return EXIT_USAGE;
    }
    if (is_operator(cmd) && !a.server) {
        fprintf(stderr,
                "%s: '%s%s%s' needs a running scheduler (--server); not available offline\n", prog,
                cmd, strcmp(cmd, "queue") == 0 ? " " : "",
                strcmp(cmd, "queue") == 0 ? a.pos[1] : "");
        return EXIT_USAGE;
    }
    if (!a.db && !a.server) {
        fprintf(stderr,
                "%s: no database and no server: use --db FILE (a 'gangsched simulate --db' or "
                "scheduler database) or --server URL\n",
                prog);
        return EXIT_USAGE;
    }
    const char *nc = getenv("NO_COLOR");
    use_color = !a.no_color && (out_fmt == OUT_TABLE || out_fmt == OUT_WIDE) &&
                isatty(STDOUT_FILENO) && !(nc && *nc);
    if (!a.watch)
        return execute(&a, cmd);
    if (is_operator(cmd)) {
        fprintf(stderr, "%s: --watch applies to the tenant commands, not '%s'\n", prog, cmd);
        return EXIT_USAGE;
    }
    return watch(&a, cmd, argc, argv);
}

/* One tenant or operator command against the server or the database; flushes the output. */
static int execute(const struct args *ap, const char *cmd)
{
    struct args a = *ap;
    int rc;
    if (a.server) {
        if (strncmp(a.server, "http://", 7) != 0 && strncmp(a.server, "https://", 8) != 0) {
            fprintf(stderr, "%s: --server needs an http:// or https:// URL, not '%s'\n", prog,
                    a.server);
            return EXIT_USAGE;
        }
        struct remote r = {a.server, NULL};
        rc = load_token(a.token_file, &r.token);
        if (rc)
            return rc;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
            fprintf(stderr, "%s: cannot initialise libcurl\n", prog);
            free(r.token);
            return EXIT_USAGE;
        }
        source_kind = "server";
        source_name = a.server;
        rc = is_operator(cmd) ? remote_write(&r, &a) : remote_read(&r, &a);
        free(r.token);
        curl_global_cleanup();
    } else {
        rc = offline(a.db, &a);
    }
    return rc ? rc : check_stdout(false);
}

/* --watch: the command again every --watch-interval seconds (default 2), under a line naming
 * it and the time, the screen cleared first on a terminal, until interrupted. A usage error,
 * an unreachable server or a refusal ends it at once (exit code as without --watch). */
static int watch(const struct args *a, const char *cmd, int argc, char **argv)
{
    double every = a->watch_s > 0 ? a->watch_s : 2.0;
    bool tty = isatty(STDOUT_FILENO);
    for (unsigned long round = 0;; round++) {
        if (tty)
            fputs("\033[H\033[2J", stdout);
        else if (round > 0)
            putchar('\n');
        char when[32] = "";
        time_t now = time(NULL);
        struct tm tm;
        if (gmtime_r(&now, &tm))
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        printf("Every %gs: %s", every, prog);
        for (int i = 1; i < argc; i++)
            printf(" %s", argv[i]);
        printf("   %s\n\n", when);
        int rc = execute(a, cmd);
        if (rc == EXIT_USAGE || rc == EXIT_DENIED)
            return rc;
        struct timespec ts = {(time_t)every, (long)((every - (double)(time_t)every) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

int main(int argc, char **argv)
{
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : (argc > 0 && argv[0] ? argv[0] : "gangctl");
    if (strcmp(base, "kubectl-gang") == 0)
        prog = "kubectl gang";
    int rc = strcmp(base, "kubectl_complete-gang") == 0
                 ? gangctl_complete_words(stdout, argc - 1, argv + 1)
                 : run(argc, argv);
    return rc ? rc : check_stdout(true); /* (a failed command has said why) */
}
