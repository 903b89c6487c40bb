/* sched/http/reads.c: the HTTP API's reads, run on libuv worker threads, each on a read-only
 * connection of its own (a small pool): the documents of store/views.h answered from the
 * queries each route needs (store_read_doc, with paging: limit, continue), the store snapshot
 * and the metrics derived from the store. See server.h and docs/api.md ("Reads", "Paging").
 * The memory a large read's document freed is trimmed back once it is printed, when it was
 * large (HTTP_TRIM_BYTES) and the last of the large reads' line (http__big_read; the server
 * builds one at a time, docs/api.md "Limits").
 * Must not touch: connections, the loop, the store's content (reads only).
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sched/http/server_int.h"

/* A reader connection for this read, its mutex held: a free one if any, else waits for one. */
static struct http_reader *reader_get(struct http_server *s)
{
    uv_mutex_lock(&s->mu);
    if (!s->readers_ready) {
        int n = 0;
        while (n < HTTP_READERS && uv_mutex_init(&s->readers[n].mu) == 0)
            n++;
        if (n < HTTP_READERS) { /* cannot happen on Linux; undo and read on slot 0 under mu */
            while (n-- > 0)
                uv_mutex_destroy(&s->readers[n].mu);
            uv_mutex_unlock(&s->mu);
            return NULL;
        }
        s->readers_ready = true;
    }
    s->loads++;
    unsigned start = s->next_reader++ % HTTP_READERS;
    uv_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < HTTP_READERS; i++) {
        struct http_reader *r = &s->readers[(start + i) % HTTP_READERS];
        if (uv_mutex_trylock(&r->mu) == 0)
            return r;
    }
    uv_mutex_lock(&s->readers[start].mu);
    return &s->readers[start];
}

void http__readers_free(struct http_server *s)
{
    if (!s->readers_ready)
        return;
    for (int i = 0; i < HTTP_READERS; i++) {
        store_close(s->readers[i].st);
        s->readers[i].st = NULL;
        uv_mutex_destroy(&s->readers[i].mu);
    }
    s->readers_ready = false;
}

unsigned long long http_server_loads(struct http_server *s)
{
    uv_mutex_lock(&s->mu);
    unsigned long long n = s->loads;
    uv_mutex_unlock(&s->mu);
    return n;
}

unsigned long long http_server_docs_built(struct http_server *s)
{
    uv_mutex_lock(&s->mu);
    unsigned long long n = s->built;
    uv_mutex_unlock(&s->mu);
    return n;
}

/* The route's document, from its own queries (store_read_doc). */
static int read_doc(struct http_server *s, struct store *st, struct http_work *w, cJSON **doc,
                    struct sched_errbuf *eb)
{
    struct store_read rq = {.limit = w->page_limit, .cont = w->cont};
    switch (w->v) {
    case V_QUOTA:
        rq.route = STORE_READ_QUOTA;
        break;
    case V_QUEUE:
        rq.route = STORE_READ_QUOTA;
        rq.queue = w->arg;
        break;
    case V_QUEUES:
        rq.route = STORE_READ_QUEUES;
        break;
    case V_JOBS:
        rq.route = STORE_READ_JOBS;
        rq.queue = w->arg && *w->arg ? w->arg : NULL;
        rq.all = w->all;
        break;
    case V_EXPLAIN:
        rq.route = STORE_READ_EXPLAIN;
        rq.job = w->arg;
        rq.limit = w->limit;
        rq.cont = NULL;
        break;
    case V_TOP:
        rq.route = STORE_READ_TOP;
        break;
    case V_RESERVATIONS:
    case V_METRICS:
    case V_SNAPSHOT:
        rq.route = STORE_READ_RESERVATIONS;
        break;
    }
    if (rq.route != STORE_READ_QUEUES && rq.route != STORE_READ_JOBS &&
        rq.route != STORE_READ_RESERVATIONS) {
        rq.cont = NULL; /* not a list route: limit and continue do not apply */
        if (rq.route != STORE_READ_EXPLAIN)
            rq.limit = 0;
    }
    bool whole = rq.limit == 0 && !rq.cont &&
                 (rq.route == STORE_READ_QUEUES || rq.route == STORE_READ_JOBS ||
                  rq.route == STORE_READ_RESERVATIONS);
    /* a whole list, not yet known large: counted first (in the same read); built here when it
     * has HTTP_BIG_ITEMS items at most, else nothing is built: it is large, built in the large
     * reads' line */
    if (whole && !w->big)
        rq.most = HTTP_BIG_ITEMS;
    int err = store_read_doc(st, &rq, doc, eb);
    if (err == 0 && !*doc && rq.most)
        w->big = w->again = true;
    if (*doc) {
        uv_mutex_lock(&s->mu);
        s->built++;
        uv_mutex_unlock(&s->mu);
    }
    return err;
}

/* Answers never name the server's files (docs/api.md): in a store message the database's path
 * goes ("database PATH does not exist" -> "database does not exist"; elsewhere "the database
 * file", PATH-wal "the database's -wal file"). In place, within cap bytes. */
static void hide_path(char *msg, size_t cap, const char *path)
{
    size_t n = path ? strlen(path) : 0;
    char *at = n ? strstr(msg, path) : NULL;
    for (int guard = 0; at && guard < 8; guard++) {
        char out[SCHED_ERRBUF];
        size_t head = (size_t)(at - msg);
        const char *tail = at + n;
        const char *with = "the database file";
        if (head >= 9 && strncmp(at - 9, "database ", 9) == 0) {
            head--; /* "database PATH" -> "database" */
            with = "";
        } else if (strncmp(tail, "-wal", 4) == 0 || strncmp(tail, "-shm", 4) == 0) {
            with = tail[1] == 'w' ? "the database's -wal file" : "the database's -shm file";
            tail += 4;
        }
        snprintf(out, sizeof(out), "%.*s%s%s", (int)head, msg, with, tail);
        snprintf(msg, cap, "%s", out);
        at = strstr(msg, path);
    }
}

/* An error answer from a store message (its path hidden), after prefix. */
static void db_error(const struct http_server *s, struct http_response *resp, int status,
                     const char *prefix, struct sched_errbuf *eb, int err)
{
    if (!eb->msg[0])
        snprintf(eb->msg, sizeof(eb->msg), "%s", sched_strerror(err));
    hide_path(eb->msg, sizeof(eb->msg), s->prov.store_path);
    http__resp_error(resp, status, "%s%s", prefix, eb->msg);
}

/* A large read: a list page of more than HTTP_BIG_ITEMS items (or a whole list found longer),
 * an explanation of more decisions than that (or all). Its cJSON tree takes about eight times
 * the answer's bytes while it is built and printed (a 1.9 MB page of 10,000 jobs: about 16 MiB),
 * more than the answer that the budget counts: the server builds one at a time (server.c
 * read_start). A whole list of queues, reservations or one queue's jobs, most often short, runs
 * beside the others: a first run counts it and builds it only when it has HTTP_BIG_ITEMS items
 * at most (read_doc). */
bool http__big_read(const struct http_work *w)
{
    if (w->big)
        return true;
    switch (w->v) {
    case V_JOBS:
    case V_QUEUES:
    case V_RESERVATIONS:
        return w->page_limit > HTTP_BIG_ITEMS;
    case V_EXPLAIN:
        return w->limit == 0 || w->limit > HTTP_BIG_ITEMS;
    default:
        return false;
    }
}

/* Returns the memory the allocator keeps free to the system (glibc: malloc_trim; else none):
 * freed by a worker thread, it stays in that thread's arena otherwise, for the next answer of
 * any worker to grow beside. */
static void trim(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

static void snapshot_release(void *img)
{
    store_snapshot_free(img);
}

static void request_work(struct http_server *s, struct http_work *w, struct http_response *resp)
{
    memset(resp, 0, sizeof(*resp));
    struct sched_errbuf eb = {{0}};
    if (w->v == V_METRICS && !s->prov.store_metrics) {
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        return;
    }
    struct http_reader *r = reader_get(s);
    if (!r) {
        http__resp_error(resp, 503, "database unavailable: cannot create a lock");
        return;
    }
    int err = 0;
    struct stat sb;
    bool found = s->prov.store_path && stat(s->prov.store_path, &sb) == 0;
    if (r->st && (!found || sb.st_dev != r->dev || sb.st_ino != r->ino)) {
        store_close(r->st); /* the path names another file now: read that one */
        r->st = NULL;
    }
    if (!r->st) {
        /* the whole-file check once per file, not once per reader */
        uv_mutex_lock(&s->mu);
        bool checked = found && sb.st_ino == s->checked_ino && sb.st_dev == s->checked_dev;
        uv_mutex_unlock(&s->mu);
        err = store_open(s->prov.store_path, STORE_READONLY | (checked ? STORE_CHECKED : 0), NULL,
                         &r->st, &eb);
        r->dev = found ? sb.st_dev : 0;
        r->ino = found ? sb.st_ino : 0;
        if (!err && found && !checked) {
            uv_mutex_lock(&s->mu);
            s->checked_dev = sb.st_dev;
            s->checked_ino = sb.st_ino;
            uv_mutex_unlock(&s->mu);
        }
    }
    if (err) {
        uv_mutex_unlock(&r->mu);
        db_error(s, resp, 503, "database unavailable: ", &eb, err);
        return;
    }
    if (w->v == V_SNAPSHOT) { /* the whole database, for a following standby */
        unsigned char *img = NULL;
        size_t len = 0;
        err = store_snapshot(r->st, &img, &len, &eb);
        uv_mutex_unlock(&r->mu);
        if (err) {
            db_error(s, resp, 500, "snapshot: ", &eb, err);
            return;
        }
        /* the answer is the image itself: one copy of the database per snapshot in flight */
        resp->status = 200;
        resp->content_type = "application/vnd.sqlite3";
        resp->body = (char *)img;
        resp->len = len;
        resp->release = snapshot_release;
        resp->unlimited = true;
        return;
    }
    if (w->v == V_METRICS) {
        struct http_metrics *m = http_metrics_new();
        err = m ? http_store_metrics(r->st, m, &eb) : SCHED_ENOMEM;
        char *buf = NULL;
        size_t len = 0;
        if (!err)
            err = http_metrics_render(m, &buf, &len);
        http_metrics_free(m);
        uv_mutex_unlock(&r->mu);
        if (err) {
            free(buf);
            db_error(s, resp, 500, "metrics from the database: ", &eb, err);
            return;
        }
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        resp->body = buf;
        resp->len = len;
        return;
    }
    cJSON *doc = NULL;
    err = read_doc(s, r->st, w, &doc, &eb);
    if (err && err != SCHED_ENOENT && err != SCHED_EINVAL) {
        store_close(r->st); /* reopen next time: the file may have been replaced */
        r->st = NULL;
    }
    uv_mutex_unlock(&r->mu);
    if (w->again)
        return; /* server.c queues it again in the large reads' line */
    if (err) {
        /* messages name the server's file: say only what was not found */
        if (!eb.msg[0])
            snprintf(eb.msg, sizeof(eb.msg), "%s", sched_strerror(err));
        hide_path(eb.msg, sizeof(eb.msg), s->prov.store_path);
        const char *msg = eb.msg;
        if (err == SCHED_ENOENT) {
            char clean[SCHED_ERRBUF];
            snprintf(clean, sizeof(clean), "%s", msg);
            char *in = strstr(clean, "' not found in ");
            if (in)
                in[strlen("' not found")] = 0;
            http__resp_error(resp, 404, "%s", clean);
        } else if (err == SCHED_EINVAL) {
            http__resp_error(resp, 400, "%s", msg);
        } else {
            db_error(s, resp, 500, "reading the database: ", &eb, err);
        }
        return;
    }
    http__resp_json(resp, 200, doc);
}

void http__request_try(struct http_server *s, struct http_work *w, struct http_response *resp)
{
    request_work(s, w, resp);
    if (http__big_read(w) && !w->again && resp->len >= HTTP_TRIM_BYTES &&
        atomic_load(&s->big_waiting) == 0)
        trim(); /* the document's tree and the print's buffers, freed: back to the system */
}

void http_request_work(struct http_server *s, struct http_work *w, struct http_response *resp)
{
    http__request_try(s, w, resp);
    if (w->again) { /* inline (tests, fuzz): no line to wait in, built now */
        w->again = false;
        http__request_try(s, w, resp);
    }
}
