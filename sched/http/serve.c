/* sched/http/serve.c: `gangsched serve`: the HTTP API over a database (a simulator run's --db
 * output, or a copy of the daemon's). Its flags are read by sched/cmd/gangsched.c; the metrics
 * a database yields are store_metrics.c.
 *
 * Owns: the command's loop and signals (SIGINT, SIGTERM: stop, once, further ones ignored;
 * SIGHUP ignored), the store-backed provider (reads from the file;
 * operator writes validated against it and recorded as operator_actions rows for a scheduler
 * to apply).
 * Must not touch: the queues, jobs and reservations themselves (writes are requests only).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/http/server.h"

/* ---- the serve command ------------------------------------------------------------------------
 */

struct serve {
    struct store *rw;
    uv_signal_t sigint, sigterm;
    struct http_server *srv;
};

struct find {
    const char *name;
    int64_t id;
    bool found;
};

static int find_queue(void *ctx, const struct store_queue *q)
{
    struct find *f = ctx;
    if (strcmp(q->name, f->name) == 0)
        f->found = true;
    return 0;
}

static int find_resv(void *ctx, const struct store_reservation *r)
{
    struct find *f = ctx;
    if (r->id == f->id)
        f->found = true;
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int serve_write(void *ctx, const struct http_write *w, cJSON **result,
                       struct sched_errbuf *eb)
{
    struct serve *sv = ctx;
    struct find f = {w->target, 0, false};
    int err = 0;
    const char *what = "queue";
    switch (w->kind) {
    case STORE_ACT_HOLD:
    case STORE_ACT_RESUME:
    case STORE_ACT_DRAIN:
        err = store_queue_list(sv->rw, find_queue, &f, eb);
        break;
    case STORE_ACT_RESERVE:
    case STORE_ACT_CHECKPOINT: {
        what = "job";
        struct store_job j;
        err = store_job_get(sv->rw, w->target, &j, eb);
        f.found = err == 0;
        if (err == SCHED_ENOENT)
            err = 0;
        break;
    }
    case STORE_ACT_UNRESERVE:
        what = "reservation";
        f.id = strtoll(w->target, NULL, 10);
        err = store_reservation_list(sv->rw, find_resv, &f, eb);
        break;
    }
    if (err)
        return err;
    char q[160];
    sched_quote(w->target, strlen(w->target), q, sizeof(q));
    if (!f.found)
        return sched_fail(eb, SCHED_ENOENT, "%s '%s' not found", what, q);
    struct store_action a = {.ts_ms = now_ms(),
                             .kind = w->kind,
                             .target = w->target,
                             .detail = w->detail,
                             .actor = w->actor};
    int64_t id = 0;
    err = store_action_add(sv->rw, &a, &id, eb);
    if (err)
        return err;
    cJSON *doc = cJSON_CreateObject();
    cJSON *act = doc ? cJSON_AddObjectToObject(doc, "action") : NULL;
    char msg[300];
    snprintf(msg, sizeof(msg), "%s of %s '%s' requested (action %lld, pending)",
             store_action_kind_name(w->kind), what, q, (long long)id);
    if (!act || !cJSON_AddNumberToObject(act, "id", (double)id) ||
        !cJSON_AddStringToObject(act, "kind", store_action_kind_name(w->kind)) ||
        !cJSON_AddStringToObject(act, "target", w->target) ||
        !cJSON_AddStringToObject(act, "state", "pending") ||
        !cJSON_AddStringToObject(doc, "message", msg)) {
        cJSON_Delete(doc);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    *result = doc;
    return 0;
}

/* Closes the SIGINT and SIGTERM handles and ignores both signals from then on. Closing a
 * libuv signal handle restores the default action (the process would die, exit 143, on a
 * second SIGTERM while the connections close and the reads in flight finish); the signals are
 * blocked on this thread meanwhile, so one that arrives in between is discarded. */
static void close_signals(struct serve *sv)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    uv_close((uv_handle_t *)&sv->sigint, NULL);
    uv_close((uv_handle_t *)&sv->sigterm, NULL);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The first SIGINT or SIGTERM stops the server; later ones are ignored (close_signals). */
static void on_signal(uv_signal_t *h, int sig)
{
    struct serve *sv = h->data;
    (void)sig;
    close_signals(sv);
    http_server_stop(sv->srv);
    sv->srv = NULL;
}

int http_serve(const struct http_serve_opts *so)
{
    const char *db = so->db, *port_file = so->port_file;
    const struct http_opts o = so->http;
    struct serve sv = {0};
    struct sched_errbuf eb = {{0}};
    if (store_open(db, 0, NULL, &sv.rw, &eb) != 0) {
        store_rebuild_hint(&eb, "gangsched run and simulate can start a new store: "
                                "--rebuild-store");
        fprintf(stderr, "gangsched serve: %s\n", eb.msg);
        return 1;
    }
    /* SIGHUP (a closed terminal, a supervisor's reload) does not end the command: nothing to
     * reload (the token files are re-read when they change, the database at every read). */
    signal(SIGHUP, SIG_IGN);
    uv_loop_t *loop = uv_default_loop();
    struct http_provider p = {.ctx = &sv,
                              .store_path = db,
                              .store_metrics = true,
                              .max_stale_ms = so->max_stale_ms,
                              .write = serve_write};
    if (http_server_start(loop, &o, &p, &sv.srv, &eb) != 0) {
        fprintf(stderr, "gangsched serve: %s\n", eb.msg);
        uv_run(loop, UV_RUN_DEFAULT);
        store_close(sv.rw);
        return 1;
    }
    uv_signal_init(loop, &sv.sigint);
    uv_signal_init(loop, &sv.sigterm);
    sv.sigint.data = sv.sigterm.data = &sv;
    uv_signal_start(&sv.sigint, on_signal, SIGINT);
    uv_signal_start(&sv.sigterm, on_signal, SIGTERM);
    int port = http_server_port(sv.srv);
    if (port_file) {
        if (http_server_write_port(sv.srv, port_file, &eb) != 0) {
            fprintf(stderr, "gangsched serve: %s\n", eb.msg);
            http_server_stop(sv.srv);
            close_signals(&sv);
            uv_run(loop, UV_RUN_DEFAULT);
            store_close(sv.rw);
            return 1;
        }
    }
    printf("gangsched serve: listening on port %d (database %s)\n", port, db);
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    store_close(sv.rw);
    return 0;
}
