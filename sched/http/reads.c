/* sched/http/reads.c: the HTTP API's reads, run on libuv worker threads: the store's tables
 * loaded once and kept while the database's data_version is unchanged, the views of
 * store/views.h, paging of the list routes (limit, continue), the store snapshot and the metrics
 * derived from the store. See server.h and docs/api.md ("Reads", "Paging").
 * Must not touch: connections, the loop, the store's content (reads only).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/http/server_int.h"

/* The list and key field of a list route's document. */
static bool page_fields(enum view v, const char **list, const char **key)
{
    *list = v == V_JOBS           ? "jobs"
            : v == V_QUEUES       ? "queues"
            : v == V_RESERVATIONS ? "reservations"
                                  : NULL;
    *key = v == V_JOBS ? "job" : v == V_QUEUES ? "name" : "id";
    return *list != NULL;
}

/* An item's key as text (ids are numbers). */
static void item_key(const cJSON *it, const char *key, char *out, size_t cap)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, key);
    if (cJSON_IsString(k))
        snprintf(out, cap, "%s", k->valuestring);
    else if (cJSON_IsNumber(k))
        snprintf(out, cap, "%.0f", k->valuedouble);
    else
        out[0] = 0;
}

/* Cuts a list route's document to one page (docs/api.md "Paging"): the items after the
 * continue token, at most page_limit of them, and "continue" when more remain. The token is
 * "OFFSET.HEXKEY": the next page starts after the item with that key, or at OFFSET when that
 * item is gone. Returns 0, or 400 for a token this server did not make. */
static int page(const struct http_work *w, cJSON *doc)
{
    const char *lname, *kname;
    if (!page_fields(w->v, &lname, &kname) || (!w->page_limit && !w->cont))
        return 0;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, lname);
    int n = cJSON_GetArraySize(list);
    int start = 0;
    if (w->cont) {
        char *dot = NULL;
        errno = 0;
        long off = strtol(w->cont, &dot, 10);
        size_t hl = dot && *dot == '.' ? strlen(dot + 1) : 1;
        if (errno || off < 0 || off > INT32_MAX || !dot || *dot != '.' || hl % 2 || hl > 1024)
            return 400;
        char want[520], have[520];
        for (size_t i = 0; i < hl / 2; i++) {
            int hi = http__hexval(dot[1 + 2 * i]), lo = http__hexval(dot[2 + 2 * i]);
            if (hi < 0 || lo < 0)
                return 400;
            want[i] = (char)(hi * 16 + lo);
        }
        want[hl / 2] = 0;
        start = (int)(off < n ? off : n);
        int i = 0;
        for (const cJSON *it = list ? list->child : NULL; it; it = it->next, i++) {
            item_key(it, kname, have, sizeof(have));
            if (strcmp(have, want) == 0) {
                start = i + 1;
                break;
            }
        }
    }
    int end = w->page_limit && (int64_t)start + w->page_limit < n ? start + (int)w->page_limit : n;
    for (int i = n - 1; i >= end; i--)
        cJSON_DeleteItemFromArray(list, i);
    for (int i = 0; i < start; i++)
        cJSON_DeleteItemFromArray(list, 0);
    if (end < n && end > start) {
        char last[520], tok[1200];
        item_key(cJSON_GetArrayItem(list, end - start - 1), kname, last, sizeof(last));
        int k = snprintf(tok, sizeof(tok), "%d.", end);
        for (size_t i = 0; last[i] && (size_t)k + 3 < sizeof(tok); i++)
            k += snprintf(tok + k, sizeof(tok) - (size_t)k, "%02x", (unsigned char)last[i]);
        cJSON_AddStringToObject(doc, "continue", tok);
        cJSON_AddNumberToObject(doc, "remaining", n - end);
    }
    return 0;
}

/* Loads the views, or keeps the last ones when nothing was committed since; under s->mu. */
static int views_get(struct http_server *s, struct sched_errbuf *eb)
{
    int64_t ver = 0;
    int err = store_data_version(s->ro, &ver, eb);
    if (err)
        return err;
    uint64_t now = uv_hrtime() / 1000000;
    if (s->views && ver == s->views_version)
        return 0;
    if (s->views && now - s->views_ms < s->prov.max_stale_ms && !atomic_load(&s->written))
        return 0;
    atomic_store(&s->written, false);
    store_views_free(s->views);
    s->views = NULL;
    err = store_views_load(s->ro, &s->views, eb);
    if (!err) {
        s->views_version = ver;
        s->views_ms = now;
        s->loads++;
    }
    return err;
}

unsigned long long http_server_loads(struct http_server *s)
{
    uv_mutex_lock(&s->mu);
    unsigned long long n = s->loads;
    uv_mutex_unlock(&s->mu);
    return n;
}

void http_request_work(struct http_server *s, struct http_work *w, struct http_response *resp)
{
    memset(resp, 0, sizeof(*resp));
    struct sched_errbuf eb = {{0}};
    if (w->v == V_METRICS && !s->prov.store_metrics) {
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        return;
    }
    uv_mutex_lock(&s->mu);
    int err = 0;
    if (!s->ro)
        err = store_open(s->prov.store_path, STORE_READONLY, NULL, &s->ro, &eb);
    if (err) {
        uv_mutex_unlock(&s->mu);
        http__resp_error(resp, 503, "database unavailable: %s", eb.msg);
        return;
    }
    if (w->v == V_SNAPSHOT) { /* the whole database, for a following standby */
        unsigned char *img = NULL;
        size_t len = 0;
        err = store_snapshot(s->ro, &img, &len, &eb);
        char *body = err ? NULL : malloc(len);
        if (body)
            memcpy(body, img, len);
        store_snapshot_free(img);
        uv_mutex_unlock(&s->mu);
        if (!body) {
            http__resp_error(resp, 500, "snapshot: %s", err ? eb.msg : "out of memory");
            return;
        }
        resp->status = 200;
        resp->content_type = "application/vnd.sqlite3";
        resp->body = body;
        resp->len = len;
        resp->unlimited = true;
        return;
    }
    if (w->v == V_METRICS) {
        struct http_metrics *m = http_metrics_new();
        err = m ? http_store_metrics(s->ro, m, &eb) : SCHED_ENOMEM;
        char *buf = NULL;
        size_t len = 0;
        if (!err)
            err = http_metrics_render(m, &buf, &len);
        http_metrics_free(m);
        uv_mutex_unlock(&s->mu);
        if (err) {
            free(buf);
            http__resp_error(resp, 500, "metrics from the database: %s",
                             eb.msg[0] ? eb.msg : sched_strerror(err));
            return;
        }
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        resp->body = buf;
        resp->len = len;
        return;
    }
    cJSON *doc = NULL;
    err = views_get(s, &eb);
    struct store_views *v = s->views;
    if (!err) {
        switch (w->v) {
        case V_QUOTA:
            err = store_view_quota(v, NULL, &doc, &eb);
            break;
        case V_QUEUE:
            err = store_view_quota(v, w->arg, &doc, &eb);
            break;
        case V_QUEUES:
            err = store_view_queues(v, &doc, &eb);
            break;
        case V_JOBS:
            err = store_view_jobs(v, w->arg && *w->arg ? w->arg : NULL, w->all, &doc, &eb);
            break;
        case V_EXPLAIN:
            err = store_view_explain(v, w->arg, w->limit, &doc, &eb);
            break;
        case V_TOP:
            err = store_view_top(v, &doc, &eb);
            break;
        case V_RESERVATIONS:
        case V_METRICS:
        case V_SNAPSHOT:
            err = store_view_reservations(v, &doc, &eb);
            break;
        }
    }
    if (err && err != SCHED_ENOENT) { /* reopen next time: the file may have been replaced */
        store_views_free(s->views);
        s->views = NULL;
        store_close(s->ro);
        s->ro = NULL;
    }
    uv_mutex_unlock(&s->mu);
    if (!err && page(w, doc) != 0) {
        cJSON_Delete(doc);
        http__resp_error(resp, 400, "continue: not a token of this server");
        return;
    }
    if (err) {
        /* messages name the server's file: say only what was not found */
        const char *msg = eb.msg[0] ? eb.msg : sched_strerror(err);
        if (err == SCHED_ENOENT) {
            char clean[SCHED_ERRBUF];
            snprintf(clean, sizeof(clean), "%s", msg);
            char *in = strstr(clean, "' not found in ");
            if (in)
                in[strlen("' not found")] = 0;
            http__resp_error(resp, 404, "%s", clean);
        } else {
            http__resp_error(resp, 500, "reading the database: %s", msg);
        }
        return;
    }
    http__resp_json(resp, 200, doc);
}
