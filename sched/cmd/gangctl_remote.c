/* sched/cmd/gangctl_remote.c: gangctl against the scheduler's HTTP API (docs/api.md) through
 * libcurl: the tenant commands' GETs (the same documents as offline) and the operator
 * commands' writes, with a bearer token.
 *
 * Must not touch: the database, the output format (gangctl_show.c renders the documents).
 * A server's answer is input: its size is bounded, its text made harmless for the terminal.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "config/file.h"
#include "sched/cmd/gangctl.h"

/* ---- the scheduler's HTTP API (--server) ------------------------------------------------------
 */

struct grow_buf {
    char *p;
    size_t n;
    bool too_big;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct grow_buf *b = ctx;
    size_t n = size * nmemb;
    if (b->n + n > (64u << 20)) { /* 64 MiB: more than any answer of ours */
        b->too_big = true;
        return 0;
    }
    b->p = xrealloc(b->p, b->n + n + 1);
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

/* "ns/name" -> "ns/name" with every other byte of each segment percent-escaped. A segment "."
 * or ".." is sent as %2E or %2E%2E (and remote_call sets CURLOPT_PATH_AS_IS): else curl folds
 * it ("queue hold ../../x" was POST /x/hold), and the request goes to another route. A name
 * that is empty or has an empty segment is a usage error (exit 2). */
static char *escape_path(CURL *c, const char *s)
{
    char *out = xstrdup("");
    const char *seg = s;
    for (;;) {
        const char *slash = strchr(seg, '/');
        size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
        if (len == 0) {
            fprintf(stderr, "%s: '%s' is not a name: %s\n", prog, s,
                    *s ? "an empty part before or after a '/'" : "it is empty");
            exit(EXIT_USAGE);
        }
        bool dots = (len == 1 || len == 2) && strncmp(seg, "..", len) == 0;
        char *e = dots ? xstrdup(len == 1 ? "%2E" : "%2E%2E") : curl_easy_escape(c, seg, (int)len);
        if (!e)
            die_oom();
        char *x = xasprintf("%s%s%s", out, seg == s ? "" : "/", e);
        if (dots)
            free(e);
        else
            curl_free(e);
        free(out);
        out = x;
        if (!slash)
            break;
        seg = slash + 1;
    }
    return out;
}

/* Calls the API; returns 0 with *doc (a JSON document), or an exit code after printing why. */
static int remote_call(const struct remote *r, const char *method, const char *path,
                       const char *body, cJSON **doc)
{
    CURL *c = curl_easy_init();
    if (!c)
        die_oom();
    size_t base_len = strlen(r->server);
    while (base_len > 0 && r->server[base_len - 1] == '/')
        base_len--;
    char *url = xasprintf("%.*s%s", (int)base_len, r->server, path);
    struct grow_buf b = {0};
    struct curl_slist *h = NULL;
    char *auth = NULL;
    if (r->token) {
        auth = xasprintf("Authorization: Bearer %s", r->token);
        h = curl_slist_append(h, auth);
    }
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* never fold "/../" (escape_path) */
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gangctl");
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    free(auth);
    curl_easy_cleanup(c);
    int rc = 0;
    if (cc != CURLE_OK) {
        fprintf(stderr, "%s: cannot reach the scheduler at %s: %s\n", prog, r->server,
                b.too_big ? "answer too large" : curl_easy_strerror(cc));
        rc = EXIT_USAGE;
    } else {
        cJSON *d = b.p ? cJSON_ParseWithLength(b.p, b.n) : NULL;
        if (status >= 200 && status < 300 && cJSON_IsObject(d)) {
            *doc = d;
            d = NULL;
        } else {
            const char *msg = gstr(jget(d, "error"), "message");
            struct table t; /* only to make the server's text harmless on a terminal */
            tbl_init(&t, 1, NULL, 0);
            tbl_cell(&t, C_NONE, "%s", msg ? msg : "no error message");
            if (status >= 200 && status < 300)
                fprintf(stderr, "%s: %s %s: the server's answer is not a JSON object\n", prog,
                        method, url);
            else if (status == 401)
                fprintf(stderr, "%s: unauthorized (401): %s%s\n", prog, t.cell[0],
                        r->token ? "" : " (give a token: --token-file FILE or $GANGSCHED_TOKEN)");
            else if (status == 403)
                fprintf(stderr, "%s: forbidden (403): %s\n", prog, t.cell[0]);
            else
                fprintf(stderr, "%s: %s (HTTP %ld from %s)\n", prog, t.cell[0], status, r->server);
            tbl_free(&t);
            rc = status == 404                    ? EXIT_NOTFOUND
                 : status == 401 || status == 403 ? EXIT_DENIED
                                                  : EXIT_USAGE;
        }
        cJSON_Delete(d);
    }
    free(b.p);
    free(url);
    return rc;
}

/* A GET of a path built from a format; escapes nothing (callers escape names). */
static int remote_get(const struct remote *r, const char *path, cJSON **doc)
{
    return remote_call(r, "GET", path, NULL, doc);
}

/* The token: --token-file FILE (its first line, blanks around it ignored: config_token_read,
 * the server's reader too), else $GANGSCHED_TOKEN. A token file that cannot be read, is not a
 * regular file or holds no token is an error (exit 2), never a request without a token.
 * Returns 0 or an exit code. */
int load_token(const char *file, char **out)
{
    *out = NULL;
    if (!file) {
        const char *env = getenv("GANGSCHED_TOKEN");
        if (env && *env)
            *out = xstrdup(env);
        return 0;
    }
    static char buf[CONFIG_TOKEN_MAX + 1];
    size_t len = 0;
    struct sched_errbuf eb = {{0}};
    if (config_token_read(file, buf, sizeof(buf), &len, &eb) != 0) {
        fprintf(stderr, "%s: --token-file: %s\n", prog, eb.msg);
        return EXIT_USAGE;
    }
    *out = xstrdup(buf);
    return 0;
}

/* The operator commands: one write each; prints the server's message (or the document). */
int remote_write(const struct remote *r, const struct args *a)
{
    const char *cmd = a->pos[0];
    CURL *c = curl_easy_init();
    if (!c)
        die_oom();
    char *path = NULL, *body = NULL;
    const char *method = "POST";
    if (strcmp(cmd, "queue") == 0) {
        char *q = escape_path(c, a->pos[2]);
        path = xasprintf("/v1/queues/%s/%s", q, a->pos[1]);
        free(q);
    } else if (strcmp(cmd, "checkpoint") == 0) {
        char *j = escape_path(c, a->pos[1]);
        path = xasprintf("/v1/jobs/%s/checkpoint", j);
        free(j);
    } else if (a->n_pos >= 3 && strcmp(a->pos[1], "delete") == 0) {
        char *id = escape_path(c, a->pos[2]);
        path = xasprintf("/v1/reservations/%s", id);
        method = "DELETE";
        free(id);
    } else {
        cJSON *d = cJSON_CreateObject();
        cJSON *nodes = d ? cJSON_AddArrayToObject(d, "nodes") : NULL;
        if (!nodes || !cJSON_AddStringToObject(d, "job", a->pos[2]))
            die_oom();
        for (int i = 3; i < a->n_pos; i++) {
            cJSON *s = cJSON_CreateString(a->pos[i]);
            if (!s)
                die_oom();
            cJSON_AddItemToArray(nodes, s);
        }
        body = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
        if (!body)
            die_oom();
        path = xstrdup("/v1/reservations");
    }
    curl_easy_cleanup(c);
    cJSON *doc = NULL;
    int rc = remote_call(r, method, path, body ? body : "", &doc);
    free(path);
    free(body);
    if (rc)
        return rc;
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    const char *msg = gstr(doc, "message");
    struct table t;
    tbl_init(&t, 1, NULL, 0);
    tbl_cell(&t, C_NONE, "%s", msg ? msg : "done");
    puts(t.cell[0]);
    tbl_free(&t);
    cJSON_Delete(doc);
    return 0;
}

/* A tenant command against the API: the same documents as offline, the same renderers. */
int remote_read(const struct remote *r, const struct args *a)
{
    const char *cmd = a->pos[0];
    const char *arg = a->n_pos > 1 ? a->pos[1] : NULL;
    CURL *c = curl_easy_init();
    if (!c)
        die_oom();
    char *path = NULL;
    if (strcmp(cmd, "quota") == 0 && arg) {
        char *q = escape_path(c, arg);
        path = xasprintf("/v1/queues/%s", q);
        free(q);
    } else if (strcmp(cmd, "quota") == 0) {
        path = xstrdup("/v1/quota");
    } else if (strcmp(cmd, "queues") == 0) {
        path = xstrdup("/v1/queues");
    } else if (strcmp(cmd, "jobs") == 0) {
        char *q = a->queue ? curl_easy_escape(c, a->queue, 0) : NULL;
        path = xasprintf("/v1/jobs%s%s%s%s", q || a->all ? "?" : "", q ? "queue=" : "", q ? q : "",
                         a->all ? (q ? "&all=1" : "all=1") : "");
        curl_free(q);
    } else if (strcmp(cmd, "explain") == 0) {
        char *j = escape_path(c, arg);
        path = xasprintf("/v1/jobs/%s?limit=%u", j, a->limit);
        free(j);
    } else if (strcmp(cmd, "top") == 0) {
        path = xstrdup("/v1/top");
    } else {
        path = xstrdup("/v1/reservations");
    }
    curl_easy_cleanup(c);
    cJSON *doc = NULL;
    int rc = remote_get(r, path, &doc);
    free(path);
    if (rc)
        return rc;
    return show(doc, cmd, a);
}

/* A tenant command on a database file: the views of store/views.h, then the renderers. */
