/* sched/cmd/gangctl_show.c: gangctl's renderers, one per tenant command (quota, queues, jobs,
 * explain, top, reservations): aligned tables from the documents of store/views.h, whatever
 * their source (a database offline, the HTTP API remotely), or the document itself (-o json,
 * -o yaml).
 *
 * Must not touch: the database, the network, the command line.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/cmd/gangctl.h"
#include "store/store.h"

/* ---- quota --------------------------------------------------------------------------------- */

static int show_quota(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const hdr[] = {"QUEUE",    "FLAVOR", "RESOURCE", "NOMINAL", "BORROW-LIM",
                                      "LEND-LIM", "USED",   "BORROWED", "LENT",    "AVAILABLE",
                                      "SHARE",    "COHORT", "WEIGHT"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 13 : 11, hdr, 0x7f8);
    EACH(q, jget(doc, "queues"))
    {
        const char *name = or_dash(gstr(q, "name"));
        char share[32] = "-";
        if (cJSON_IsNumber(jget(q, "share")))
            snprintf(share, sizeof(share), "%.3f", gnum(q, "share", 0));
        const cJSON *quotas = jget(q, "quotas");
        if (cJSON_GetArraySize(quotas) == 0) { /* a queue without quotas or usage: one line */
            tbl_cell(&t, C_NONE, "%s", name);
            for (int c = 1; c < 10; c++)
                tbl_cell(&t, C_NONE, "-");
            tbl_cell(&t, C_NONE, "%s", share);
            if (t.ncol > 11) {
                tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "cohort")));
                tbl_cell(&t, C_NONE, "%g", gnum(q, "weight", 1));
            }
        }
        EACH(l, quotas)
        {
            const char *res = or_dash(gstr(l, "resource"));
            bool configured = gbool(l, "configured");
            int64_t borrowed = gint(l, "borrowed", 0), avail = gint(l, "available", 0);
            int64_t lent = gint(l, "lent", 0);
            char a[7][48];
            fmt_amount(a[0], sizeof(a[0]), res, gint(l, "nominal", 0));
            fmt_limit(a[1], sizeof(a[1]), res, gint(l, "borrowing_limit", STORE_NO_LIMIT));
            fmt_limit(a[2], sizeof(a[2]), res, gint(l, "lending_limit", STORE_NO_LIMIT));
            fmt_amount(a[3], sizeof(a[3]), res, gint(l, "used", 0));
            fmt_amount(a[4], sizeof(a[4]), res, borrowed);
            fmt_amount(a[5], sizeof(a[5]), res, avail);
            fmt_amount(a[6], sizeof(a[6]), res, lent);
            tbl_cell(&t, C_NONE, "%s", name);
            tbl_cell(&t, C_NONE, "%s", or_dash(gstr(l, "flavor")));
            tbl_cell(&t, C_NONE, "%s", res);
            tbl_cell(&t, C_NONE, "%s", configured ? a[0] : "-");
            tbl_cell(&t, C_NONE, "%s", configured ? a[1] : "-");
            tbl_cell(&t, C_NONE, "%s", configured ? a[2] : "-");
            tbl_cell(&t, C_NONE, "%s", a[3]);
            tbl_cell(&t, borrowed > 0 ? C_YELLOW : C_NONE, "%s", a[4]);
            tbl_cell(&t, lent > 0 ? C_CYAN : C_NONE, "%s", a[6]);
            tbl_cell(&t, avail == 0 ? C_RED : C_NONE, "%s", a[5]);
            tbl_cell(&t, C_NONE, "%s", share);
            if (t.ncol > 11) {
                tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "cohort")));
                tbl_cell(&t, C_NONE, "%g", gnum(q, "weight", 1));
            }
        }
    }
    return tbl_finish(&t, doc, false, "", true);
}

/* ---- queues -------------------------------------------------------------------------------- */

static int show_queues(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const hdr[] = {"QUEUE",   "STATE",    "COHORT",   "WEIGHT",  "PRIORITY",
                                      "NOMINAL", "USED",     "RUNNING",  "PENDING", "BORROWED",
                                      "LENT",    "ADMITTED", "FINISHED", "FAILED",  "SHARE"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 15 : 9, hdr, 0x7ff8);
    const cJSON *qs = jget(doc, "queues");
    EACH(q, qs)
    {
        bool configured = gbool(q, "configured");
        long long nominal = (long long)gint(q, "nominal_gpus", 0);
        long long used = (long long)gint(q, "used_gpus", 0);
        long long pending = (long long)gint(q, "pending", 0);
        const char *adm = gstr(q, "admission") ? gstr(q, "admission") : "open";
        tbl_cell(&t, configured ? C_NONE : C_DIM, "%s%s", or_dash(gstr(q, "name")),
                 configured ? "" : " (not configured)");
        tbl_cell(&t, str_eq(adm, "open") ? C_NONE : C_RED, "%s", adm);
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "cohort")));
        tbl_cell(&t, C_NONE, "%g", gnum(q, "weight", 1));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "priority", 0));
        tbl_cell(&t, C_NONE, "%lld %s", nominal, gpu_unit);
        tbl_cell(&t, used > nominal ? C_YELLOW : C_NONE, "%lld %s", used, gpu_unit);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "running", 0));
        tbl_cell(&t, pending ? C_YELLOW : C_NONE, "%lld", pending);
        if (t.ncol > 9) {
            tbl_cell(&t, C_NONE, "%lld %s", (long long)gint(q, "borrowed_gpus", 0), gpu_unit);
            tbl_cell(&t, C_NONE, "%lld %s", (long long)gint(q, "lent_gpus", 0), gpu_unit);
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "admitted", 0));
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "finished", 0));
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "failed", 0));
            if (cJSON_IsNumber(jget(q, "share")))
                tbl_cell(&t, C_NONE, "%.3f", gnum(q, "share", 0));
            else
                tbl_cell(&t, C_NONE, "-");
        }
    }
    return tbl_finish(&t, doc, cJSON_GetArraySize(qs) == 0, "no queues", true);
}

/* ---- jobs ---------------------------------------------------------------------------------- */

/* "hgx-0001:8,hgx-0002:8": nodes and GPUs of a job's placed pods. */
static char *job_nodes(const cJSON *job)
{
    char *s = xstrdup("");
    EACH(n, jget(job, "nodes"))
    {
        char *x = xasprintf("%s%s%s:%lld", s, *s ? "," : "", or_dash(gstr(n, "node")),
                            (long long)gint(n, "gpus", 0));
        free(s);
        s = x;
    }
    return s;
}

/* The jobs table. WAITING: a pending job's current wait (since submission, or since its last
 * preemption); STARTED: the start of the current run (none while pending again); QUEUED (wide):
 * the time from submission to the first start. REASON, last because it is free text: why a
 * pending job waits (the newest decision, or its queue's hold). START, before it: a pending
 * job's expected start (as squeue --start), else in one word why there is none (quota,
 * behind:N, unknown, never). */
static void eta_word(const char *note, char *buf, size_t n)
{
    unsigned behind;
    if (!note)
        return;
    if (strstr(note, "quota"))
        snprintf(buf, n, "quota");
    else if (sscanf(note, "no estimate: behind %u", &behind) == 1)
        snprintf(buf, n, "behind:%u", behind);
    else if (strstr(note, "never"))
        snprintf(buf, n, "never");
    else
        snprintf(buf, n, "unknown");
}

/* Drops the jobs of doc's "jobs" whose user is not `user` (gangctl jobs -u: the server and the
 * store list every user's; a job of no known user has none). */
static void keep_user(cJSON *doc, const char *user)
{
    cJSON *jobs = cJSON_GetObjectItemCaseSensitive(doc, "jobs");
    for (cJSON *j = jobs ? jobs->child : NULL, *next; j; j = next) {
        next = j->next;
        if (!str_eq(gstr(j, "user"), user))
            cJSON_Delete(cJSON_DetachItemViaPointer(jobs, j));
    }
}

static int show_jobs(cJSON *doc, const char *only, bool all, const char *user)
{
    if (user)
        keep_user(doc, user);
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    const char *const hdr[] = {"JOB",     "QUEUE",   "STATE",    gpus_col, "POSITION",
                               "WAITING", "STARTED", "FINISHED", "START",  "REASON"};
    const char *const whdr[] = {"JOB",      "QUEUE",    "USER",      "STATE",
                                gpus_col,   "POSITION", "WAITING",   "STARTED",
                                "FINISHED", "FLAVOR",   "SUBMITTED", "PREEMPTIONS",
                                "NODES",    "QUEUED",   "START",     "REASON"};
    bool wide = out_fmt == OUT_WIDE;
    struct table t; /* right-aligned: GPUS and POSITION, in wide also PREEMPTIONS and QUEUED */
    tbl_init(&t, wide ? 16 : 10, wide ? whdr : hdr, wide ? 0x2830 : 0x18);
    const cJSON *jobs = jget(doc, "jobs");
    EACH(j, jobs)
    {
        const char *state = or_dash(gstr(j, "state"));
        bool pending = str_eq(state, "pending");
        int64_t pos = gint(j, "position", 0);
        char w[32], st[64], fin[64], sub[64], qd[32];
        fmt_dur(w, sizeof(w), gint(j, "waiting_ms", STORE_NO_TIME));
        fmt_time(st, sizeof(st), pending ? STORE_NO_TIME : gint(j, "start_ms", STORE_NO_TIME));
        fmt_time(fin, sizeof(fin), gint(j, "finish_ms", STORE_NO_TIME));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "job")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "queue")));
        if (wide)
            tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "user")));
        tbl_cell(&t, state_color(state), "%s", state);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(j, "gpus", 0));
        if (pos > 0)
            tbl_cell(&t, C_NONE, "%lld", (long long)pos);
        else
            tbl_cell(&t, C_NONE, "-");
        tbl_cell(&t, C_NONE, "%s", w);
        tbl_cell(&t, C_NONE, "%s", st);
        tbl_cell(&t, C_NONE, "%s", fin);
        if (wide) {
            fmt_time(sub, sizeof(sub), gint(j, "submit_ms", STORE_NO_TIME));
            fmt_dur(qd, sizeof(qd), pending ? STORE_NO_TIME : gint(j, "wait_ms", STORE_NO_TIME));
            char *nodes = job_nodes(j);
            tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "flavor")));
            tbl_cell(&t, C_NONE, "%s", sub);
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(j, "preemptions", 0));
            tbl_cell(&t, C_NONE, "%s", *nodes ? nodes : "-");
            tbl_cell(&t, C_NONE, "%s", qd);
            free(nodes);
        }
        char eta[64];
        fmt_time(eta, sizeof(eta), gint(j, "expected_start_ms", STORE_NO_TIME));
        eta_word(gstr(j, "expected_start"), eta, sizeof(eta));
        tbl_cell(&t, C_NONE, "%s", eta);
        tbl_cell(&t, pending ? C_YELLOW : C_NONE, "%s", or_dash(gstr(j, "reason")));
    }
    if (cJSON_GetArraySize(jobs) == 0)
        printf("no %sjobs%s%s%s%s\n", all ? "" : "pending or running ", only ? " in queue " : "",
               only ? only : "", user ? " of user " : "", user ? user : "");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);
    print_now(doc);
    cJSON_Delete(doc);
    return 0;
}

/* ---- explain ------------------------------------------------------------------------------- */

/* The job's record: state, position, why it waits, times, preemptions. */
static void explain_job(const cJSON *j)
{
    const char *state = or_dash(gstr(j, "state"));
    const char *flavor = gstr(j, "flavor");
    bool pending = strcmp(state, "pending") == 0;
    int64_t requeued = gint(j, "requeued_ms", STORE_NO_TIME);
    char b[6][64];
    fmt_time(b[0], sizeof(b[0]), gint(j, "submit_ms", STORE_NO_TIME));
    fmt_time(b[1], sizeof(b[1]), gint(j, "admit_ms", STORE_NO_TIME));
    fmt_time(b[2], sizeof(b[2]), gint(j, "start_ms", STORE_NO_TIME));
    fmt_time(b[3], sizeof(b[3]), gint(j, "finish_ms", STORE_NO_TIME));
    fmt_dur(b[4], sizeof(b[4]), gint(j, pending ? "waiting_ms" : "wait_ms", STORE_NO_TIME));
    fmt_time(b[5], sizeof(b[5]), requeued);
    struct table t;
    tbl_init(&t, 1, NULL, 0);
    tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "job"))); /* control bytes made harmless */
    tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "queue")));
    tbl_cell(&t, C_NONE, "%s", flavor ? flavor : "");
    tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "reason")));
    printf("Job:          %s\n", t.cell[0]);
    printf("Queue:        %s\n", t.cell[1]);
    printf("State:        ");
    if (use_color)
        printf("%s%s\033[0m\n", color_seq(state_color(state)), state);
    else
        printf("%s\n", state);
    if (gint(j, "position", 0) > 0)
        printf("Position:     %lld in queue %s (submission order)\n",
               (long long)gint(j, "position", 0), t.cell[1]);
    if (pending || gstr(j, "reason")) { /* running: checkpointing, or members waiting */
        char since[64];
        fmt_time(since, sizeof(since), gint(j, "reason_since_ms", STORE_NO_TIME));
        printf("Reason:       %s%s%s%s\n", t.cell[3], strcmp(since, "-") ? " (since " : "",
               strcmp(since, "-") ? since : "", strcmp(since, "-") ? ")" : "");
    }
    printf("%ss:         %lld %s%s%s\n", gpu_unit, (long long)gint(j, "gpus", 0), gpu_unit,
           flavor ? " on flavor " : "", t.cell[2]);
    tbl_free(&t);
    printf("Submitted:    %s\n", b[0]);
    printf("Admitted:     %s\n", b[1]);
    if (pending && requeued != STORE_NO_TIME)
        printf("Started:      %s (its first start; preempted at %s, pending again)\n", b[2], b[5]);
    else
        printf("Started:      %s\n", b[2]);
    printf("Finished:     %s\n", b[3]);
    if (pending)
        printf("Waiting:      %s (since %s)\n", b[4],
               requeued != STORE_NO_TIME ? "its last preemption" : "submission");
    else
        printf("Waited:       %s (from submission to its first start)\n", b[4]);
    printf("Preemptions:  %lld, restarts %lld\n", (long long)gint(j, "preemptions", 0),
           (long long)gint(j, "restarts", 0));
}

static int show_explain(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    const cJSON *j = jget(doc, "job");
    char b[6][64];
    struct table t;
    explain_job(j);
    char *nodes = job_nodes(j);
    if (*nodes)
        printf("Placed on:    %s\n", nodes);
    free(nodes);
    EACH(l, jget(doc, "queue_quota"))
    {
        const char *res = or_dash(gstr(l, "resource"));
        fmt_amount(b[0], sizeof(b[0]), res, gint(l, "used", 0));
        fmt_amount(b[1], sizeof(b[1]), res, gint(l, "nominal", 0));
        fmt_amount(b[2], sizeof(b[2]), res, gint(l, "available", 0));
        printf("Queue quota:  %s used of %s nominal on %s, %s available now\n", b[0], b[1],
               or_dash(gstr(l, "flavor")), b[2]);
    }
    EACH(r, jget(doc, "reservations"))
    {
        fmt_time(b[0], sizeof(b[0]), gint(r, "expected_start_ms", STORE_NO_TIME));
        printf("Reservation:  #%lld (%s) on %d node(s), expected start %s\n",
               (long long)gint(r, "id", 0), or_dash(gstr(r, "kind")),
               cJSON_GetArraySize(jget(r, "nodes")), b[0]);
    }

    static const char *const dhdr[] = {"CYCLE", "SINCE", "WHY", "REASON"};
    tbl_init(&t, 4, dhdr, 0x1);
    const cJSON *decs = jget(doc, "decisions");
    EACH(d, decs)
    {
        const char *why = or_dash(gstr(d, "why"));
        fmt_time(b[0], sizeof(b[0]), gint(d, "ts_ms", STORE_NO_TIME));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(d, "cycle", 0));
        tbl_cell(&t, C_NONE, "%s", b[0]);
        tbl_cell(&t, strcmp(why, "placed") == 0 ? C_GREEN : C_YELLOW, "%s", why);
        tbl_cell(&t, C_NONE, "%s", gstr(d, "reason") ? gstr(d, "reason") : "");
    }
    long long shown = cJSON_GetArraySize(decs);
    long long total = (long long)gint(doc, "decisions_total", shown);
    printf("\nDecisions (newest first, %lld of %lld%s):\n", shown, total,
           shown < total ? "; --limit 0 shows all" : "");
    if (total == 0)
        puts("  none in the decision log (never waited, or pruned by its retention)");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);

    /* KIND: why (priority, reclaim, fair_share, overdue); "-" for a row the store has without
     * it (written before schema version 5). ROLE says how many members an elastic gang lost
     * alone (it ran on) */
    const char *const phdr[] = {"CYCLE",     "TIME",   "ROLE",       "KIND",
                                "OTHER JOB", gpus_col, "LOST GPU-H", "COST"};
    tbl_init(&t, 8, phdr, 0xE1);
    const cJSON *pre = jget(doc, "preemptions");
    EACH(p, pre)
    {
        bool victim = str_eq(gstr(p, "role"), "victim");
        fmt_time(b[0], sizeof(b[0]), gint(p, "ts_ms", STORE_NO_TIME));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(p, "cycle", 0));
        tbl_cell(&t, C_NONE, "%s", b[0]);
        long long members = gint(p, "members", 0); /* an elastic gang's members alone */
        if (victim && members > 0)
            tbl_cell(&t, C_RED, "victim (%lld member%s)", members, members == 1 ? "" : "s");
        else
            tbl_cell(&t, victim ? C_RED : C_NONE, "%s", victim ? "victim" : "preemptor");
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(p, "kind")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(p, victim ? "preemptor" : "victim")));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(p, "gpus", 0));
        tbl_cell(&t, C_NONE, "%.2f", gnum(p, "lost_work_gpu_s", 0) / 3600.0);
        tbl_cell(&t, C_NONE, "%.2f", gnum(p, "cost", 0));
    }
    printf("\nPreemptions (%d):\n", cJSON_GetArraySize(pre));
    if (cJSON_GetArraySize(pre))
        tbl_print(stdout, &t);
    else
        puts("  none");
    tbl_free(&t);
    cJSON_Delete(doc);
    return 0;
}

/* ---- top ----------------------------------------------------------------------------------- */

static int show_top(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const qhdr[] = {"QUEUE",   "FLAVOR",     "USED",
                                       "NOMINAL", "OF NOMINAL", "RUNNING"};
    struct table t;
    tbl_init(&t, 6, qhdr, 0x3c);
    EACH(q, jget(doc, "queues"))
    {
        long long used = (long long)gint(q, "used_gpus", 0);
        long long nominal = (long long)gint(q, "nominal_gpus", 0);
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "queue")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "flavor")));
        tbl_cell(&t, C_NONE, "%lld %s", used, gpu_unit);
        tbl_cell(&t, C_NONE, "%lld %s", nominal, gpu_unit);
        if (nominal > 0)
            tbl_cell(&t, used > nominal ? C_YELLOW : C_NONE, "%.0f%%",
                     100.0 * (double)used / (double)nominal);
        else
            tbl_cell(&t, C_NONE, "-");
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "running", 0));
    }
    printf("%s usage by queue (ledger): %lld %s in use\n", gpu_unit,
           (long long)gint(doc, "used_gpus", 0), gpu_unit);
    if (t.n)
        tbl_print(stdout, &t);
    tbl_free(&t);
    const cJSON *nodes = jget(doc, "nodes");
    int n = cJSON_GetArraySize(nodes);
    printf("\n%s usage by node (placed pods): %lld %s on %d node(s)\n", gpu_unit,
           (long long)gint(doc, "placed_gpus", 0), gpu_unit, n);
    const char *const nhdr[] = {"NODE", gpus_col, "PODS", "JOBS"};
    tbl_init(&t, 4, nhdr, 0xe);
    EACH(u, nodes)
    {
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(u, "node")));
        tbl_cell(&t, C_NONE, "%lld %s", (long long)gint(u, "gpus", 0), gpu_unit);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(u, "pods", 0));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(u, "jobs", 0));
    }
    return tbl_finish(&t, doc, n == 0, "  no placed pods", true);
}

/* ---- reservations -------------------------------------------------------------------------- */

static int show_reservations(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const hdr[] = {"ID",      "KIND",    "JOB",           "NODES",
                                      "CREATED", "EXPIRES", "EXPECTED START"};
    struct table t;
    tbl_init(&t, 7, hdr, 0x1);
    const cJSON *rs = jget(doc, "reservations");
    EACH(r, rs)
    {
        const cJSON *list = jget(r, "nodes");
        int n_nodes = cJSON_GetArraySize(list), k = 0;
        char *nodes = xstrdup("");
        EACH(node, list)
        {
            if (out_fmt != OUT_WIDE && k == 3) {
                char *s = xasprintf("%s,+%d more", nodes, n_nodes - 3);
                free(nodes);
                nodes = s;
                break;
            }
            char *s = xasprintf("%s%s%s", nodes, k ? "," : "",
                                cJSON_IsString(node) ? node->valuestring : "?");
            free(nodes);
            nodes = s;
            k++;
        }
        int64_t expires = gint(r, "expires_ms", STORE_NO_TIME);
        int64_t expected = gint(r, "expected_start_ms", STORE_NO_TIME);
        char c[64], e[64], x[64];
        fmt_time(c, sizeof(c), gint(r, "created_ms", STORE_NO_TIME));
        fmt_time(e, sizeof(e), expires);
        fmt_time(x, sizeof(x), expected);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(r, "id", 0));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(r, "kind")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(r, "job")));
        tbl_cell(&t, C_NONE, "%s", *nodes ? nodes : "-");
        tbl_cell(&t, C_NONE, "%s", c);
        tbl_cell(&t, C_NONE, "%s", expires == STORE_NO_TIME ? "never" : e);
        tbl_cell(&t, C_NONE, "%s", expected == STORE_NO_TIME ? "unknown" : x);
        free(nodes);
    }
    return tbl_finish(&t, doc, cJSON_GetArraySize(rs) == 0, "no reservations", false);
}

int show(cJSON *doc, const char *cmd, const struct args *a)
{
    if (strcmp(cmd, "quota") == 0)
        return show_quota(doc);
    if (strcmp(cmd, "queues") == 0)
        return show_queues(doc);
    if (strcmp(cmd, "jobs") == 0)
        return show_jobs(doc, a->queue, a->all, a->user);
    if (strcmp(cmd, "explain") == 0)
        return show_explain(doc);
    if (strcmp(cmd, "top") == 0)
        return show_top(doc);
    return show_reservations(doc);
}
