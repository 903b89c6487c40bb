/* sched/http/routes.c: the HTTP API's routes (docs/api.md): one table of {method, path
 * pattern, authorisation, handler}, the bearer-token checks (token files re-read when they
 * change, constant-time comparison), the operator writes handed to the provider, and the reads
 * prepared for a worker (reads.c runs them).
 *
 * Must not touch: connections (server.c), the store's content.
 */
#include <errno.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "sched/core/log.h"
#include "sched/http/server_int.h"
#include "sched/k8s/names.h"

/* ---- tokens -----------------------------------------------------------------------------------
 */

/* Re-reads the file when its inode, size or mtime changed (config_token_read: the one reader
 * of token files, which never blocks on a FIFO); false when it cannot be read or holds no token
 * (then no request matches it). A failure is logged once per change of the file, with its
 * name and cause (answers never name the server's files). */
static bool token_get(struct token *t)
{
    if (!t->path)
        return false;
    struct stat st;
    if (stat(t->path, &st) != 0) {
        if (!t->warned)
            LOG_WARN("http", "token file %s: %s: requests needing its token are refused", t->path,
                     strerror(errno));
        t->warned = true;
        t->have = false;
        t->len = 0;
        return false;
    }
    t->warned = false;
    if (t->have && st.st_ino == t->st.st_ino && st.st_size == t->st.st_size &&
        st.st_mtim.tv_sec == t->st.st_mtim.tv_sec && st.st_mtim.tv_nsec == t->st.st_mtim.tv_nsec)
        return t->len > 0;
    struct sched_errbuf eb = {{0}};
    if (config_token_read(t->path, t->value, sizeof(t->value), &t->len, &eb) != 0)
        LOG_WARN("http", "%s: requests needing its token are refused", eb.msg);
    t->st = st;
    t->have = true;
    return t->len > 0;
}

/* Constant-time in the length of the expected token. */
static bool token_match(const struct token *t, const char *given, size_t n)
{
    unsigned char diff = n != t->len;
    for (size_t i = 0; i < t->len; i++)
        diff |= (unsigned char)(t->value[i] ^ (i < n ? given[i] : 0));
    return diff == 0;
}

/* ---- routing ----------------------------------------------------------------------------------
 */

void http_work_free(struct http_work *w)
{
    if (!w)
        return;
    free(w->arg);
    free(w->cont);
    http_response_release(&w->resp);
    free(w);
}

int http__hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into a new string; NULL for a bad escape or a NUL byte. */
static char *pct_decode(const char *s, size_t n, bool plus_space)
{
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int hi = i + 2 < n ? http__hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? http__hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(d);
                return NULL;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        } else if (c == 0) {
            free(d);
            return NULL;
        }
        d[k++] = c;
    }
    d[k] = 0;
    return d;
}

/* The value of key in a query string (decoded, malloc'd), NULL when absent; *bad on a bad
 * escape. */
static char *query_get(const char *q, size_t qn, const char *key, bool *bad)
{
    size_t kl = strlen(key);
    size_t i = 0;
    while (i < qn) {
        size_t j = i;
        while (j < qn && q[j] != '&')
            j++;
        if (j - i >= kl && strncmp(q + i, key, kl) == 0 && (j - i == kl || q[i + kl] == '=')) {
            size_t vs = j - i == kl ? j : i + kl + 1;
            char *v = pct_decode(q + vs, j - vs, true);
            if (!v)
                *bad = true;
            return v;
        }
        i = j + 1;
    }
    return NULL;
}

enum auth_need { AUTH_NONE, AUTH_READ, AUTH_WRITE };

/* 0 when allowed, else the status (401/403) with resp filled. */
static int authorise(struct http_server *s, const char *auth, enum auth_need need,
                     struct http_response *resp)
{
    if (need == AUTH_NONE)
        return 0;
    bool have_w = token_get(&s->wtok);
    bool have_r = token_get(&s->rtok);
    if (need == AUTH_READ && !s->rtok.path)
        return 0;
    if (need == AUTH_WRITE && !have_w) {
        http__resp_error(resp, 403,
                         "writes are disabled: the server has no write token configured");
        return 403;
    }
    const char *tok = NULL;
    size_t n = 0;
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) {
        tok = auth + 7;
        while (*tok == ' ')
            tok++;
        n = strlen(tok);
        while (n > 0 && tok[n - 1] == ' ')
            n--;
    }
    if (!tok || n == 0) {
        http__resp_error(resp, 401, "missing bearer token (Authorization: Bearer TOKEN)");
        return 401;
    }
    bool w = have_w && token_match(&s->wtok, tok, n);
    bool r = have_r && token_match(&s->rtok, tok, n);
    if (w || (need == AUTH_READ && r))
        return 0;
    if (r) {
        http__resp_error(resp, 403, "the read-only token cannot write");
        return 403;
    }
    http__resp_error(resp, 401, "invalid bearer token");
    return 401;
}

static int method_not_allowed(struct http_response *resp, const char *method, const char *allow)
{
    http__resp_error(resp, 405, "method %s not allowed here (allowed: %s)", method, allow);
    resp->allow = allow;
    return 0;
}

static int do_write(struct http_server *s, const struct http_request *r, struct http_response *resp,
                    enum store_action_kind kind, const char *target, const char *detail)
{
    if (!s->prov.write) {
        http__resp_error(resp, 501, "this server takes no operator writes");
        return 0;
    }
    struct http_write w = {kind, target, detail, r->peer};
    cJSON *result = NULL;
    struct sched_errbuf eb = {{0}};
    int err = s->prov.write(s->prov.ctx, &w, &result, &eb);
    if (err) {
        int st = err == SCHED_ENOENT ? 404 : err == SCHED_EINVAL ? 400 : 500;
        http__resp_error(resp, st, "%s", eb.msg[0] ? eb.msg : sched_strerror(err));
        return 0;
    }
    atomic_store(&s->written, true); /* read-your-writes: see server_int.h */
    http__resp_json(resp, 202, result ? result : cJSON_CreateObject());
    return 0;
}

struct named {
    const char *s;
    int i; /* index in the request */
};

static int named_cmp(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* A reservation's names, before anything is recorded: the job NS/NAME without control bytes
 * and at most 317 bytes (a namespace and an object name), every node a Node's name (DNS-1123
 * subdomain) listed once. 0, or 400 with resp filled, the field and the name quoted. */
static int check_reservation(const char *job, const cJSON *nodes, struct http_response *resp)
{
    char q[80];
    size_t jn = strlen(job);
    for (size_t i = 0; i < jn; i++)
        if ((unsigned char)job[i] < 0x20 || job[i] == 0x7f || jn > 317) {
            sched_quote(job, jn, q, sizeof(q));
            http__resp_error(resp, 400, "job: \"%s\" is not NS/NAME (%s)", q,
                             jn > 317 ? "longer than 317 bytes" : "a control character");
            return 400;
        }
    int i = 0, n_nodes = cJSON_GetArraySize(nodes);
    struct named *sorted = malloc(((size_t)n_nodes + 1) * sizeof(*sorted));
    if (!sorted) {
        http__resp_error(resp, 500, "out of memory");
        return 500;
    }
    for (const cJSON *n = nodes->child; n; n = n->next, i++) {
        const char *v = n->valuestring;
        if (!k8s_dns_subdomain(v, strlen(v))) {
            free(sorted);
            sched_quote(v, strlen(v), q, sizeof(q));
            http__resp_error(resp, 400,
                             "nodes[%d]: \"%s\" is not a node name (a DNS-1123 subdomain: labels "
                             "of " K8S_LABEL_RULE ", joined by '.', at most 253)",
                             i, q);
            return 400;
        }
        sorted[i] = (struct named){v, i};
    }
    /* duplicates: sorted by name, then index (O(n log n): a 64 KiB body holds 16,000 names) */
    qsort(sorted, (size_t)i, sizeof(*sorted), named_cmp);
    for (int k = 1; k < i; k++)
        if (strcmp(sorted[k].s, sorted[k - 1].s) == 0) {
            http__resp_error(resp, 400, "nodes[%d]: \"%s\" is listed twice (also nodes[%d])",
                             sorted[k].i, sorted[k].s, sorted[k - 1].i);
            free(sorted);
            return 400;
        }
    free(sorted);
    return 0;
}

/* POST /v1/reservations: {"job": "NS/NAME", "nodes": ["n1", ...]} */
static int reserve(struct http_server *s, const struct http_request *r, struct http_response *resp)
{
    cJSON *doc = r->body_len ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(doc, "job");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
    bool ok = cJSON_IsObject(doc) && cJSON_IsString(job) && *job->valuestring &&
              cJSON_IsArray(nodes) && cJSON_GetArraySize(nodes) > 0;
    for (const cJSON *n = ok ? nodes->child : NULL; n; n = n->next)
        ok = ok && cJSON_IsString(n) && *n->valuestring;
    if (!ok) {
        cJSON_Delete(doc);
        http__resp_error(resp, 400,
                         "body: a JSON object {\"job\": \"NS/NAME\", \"nodes\": [\"NODE\", ...]} "
                         "required");
        return 0;
    }
    if (check_reservation(job->valuestring, nodes, resp) != 0) {
        cJSON_Delete(doc);
        return 0;
    }
    char *detail = cJSON_PrintUnformatted(doc);
    int rc = detail ? do_write(s, r, resp, STORE_ACT_RESERVE, job->valuestring, detail) : 0;
    if (!detail)
        http__resp_error(resp, 500, "out of memory");
    free(detail);
    cJSON_Delete(doc);
    return rc;
}

static struct http_work *new_work(enum view v, const char *arg)
{
    struct http_work *w = calloc(1, sizeof(*w));
    if (w && arg && !(w->arg = strdup(arg))) {
        free(w);
        return NULL;
    }
    if (w)
        w->v = v;
    return w;
}

/* path matches pattern: literal bytes; "*" one non-empty segment (no '/'); "**" a non-empty
 * rest (slashes allowed) that the pattern's literal tail ends. The wildcard's text: *cap, *n. */
static bool match(const char *pat, const char *path, const char **cap, size_t *n)
{
    while (*pat) {
        if (pat[0] == '*' && pat[1] == '*') {
            size_t np = strlen(path), nt = strlen(pat + 2);
            if (np <= nt || strcmp(path + np - nt, pat + 2) != 0)
                return false;
            *cap = path;
            *n = np - nt;
            return true;
        }
        if (*pat == '*') {
            size_t k = strcspn(path, "/");
            if (k == 0)
                return false;
            *cap = path;
            *n = k;
            path += k;
            pat++;
            continue;
        }
        if (*pat++ != *path++)
            return false;
    }
    return *path == 0;
}

struct route;
/* A route's answer: fills resp and returns 0, or returns 1 with *work, a read for a worker.
 * arg: the pattern's wildcard (NUL-terminated), or NULL. */
typedef int (*route_fn)(struct http_server *s, const struct http_request *r, const struct route *rt,
                        const char *arg, const char *q, size_t qn, struct http_response *resp,
                        struct http_work **work);

struct route {
    const char *method;
    const char *pattern; /* see match() */
    enum auth_need auth;
    const char *allow; /* the Allow of a 405: the path is a route's, the method none of its */
    /* Before authorisation: answers (returns 1) or lets the request through (0); or NULL. */
    int (*check)(struct http_server *s, const char *arg, struct http_response *resp);
    route_fn fn;
    int param; /* r_read: the view; r_write: the action */
};

static int r_health(struct http_server *s, const struct http_request *r, const struct route *rt,
                    const char *arg, const char *q, size_t qn, struct http_response *resp,
                    struct http_work **work)
{
    (void)s, (void)r, (void)rt, (void)arg, (void)q, (void)qn, (void)work;
    http__resp_json(resp, 200, cJSON_Parse("{\"status\":\"ok\"}"));
    return 0;
}

static int r_ready(struct http_server *s, const struct http_request *r, const struct route *rt,
                   const char *arg, const char *q, size_t qn, struct http_response *resp,
                   struct http_work **work)
{
    (void)r, (void)rt, (void)arg, (void)q, (void)qn, (void)work;
    char why[256] = "";
    if (s->prov.ready && !s->prov.ready(s->prov.ctx, why, sizeof(why))) {
        http__resp_error(resp, 503, "not ready: %s", why[0] ? why : "not ready");
        return 0;
    }
    cJSON *ok = cJSON_Parse("{\"status\":\"ready\"}");
    if (ok && why[0]) /* what the provider says about a ready state (the APIs in use) */
        cJSON_AddStringToObject(ok, "detail", why);
    http__resp_json(resp, 200, ok);
    return 0;
}

/* The operator actions whose target is the route's wildcard (queue, job, reservation id). */
static int r_write(struct http_server *s, const struct http_request *r, const struct route *rt,
                   const char *arg, const char *q, size_t qn, struct http_response *resp,
                   struct http_work **work)
{
    (void)q, (void)qn, (void)work;
    return do_write(s, r, resp, (enum store_action_kind)rt->param, arg, NULL);
}

static int r_reserve(struct http_server *s, const struct http_request *r, const struct route *rt,
                     const char *arg, const char *q, size_t qn, struct http_response *resp,
                     struct http_work **work)
{
    (void)rt, (void)arg, (void)q, (void)qn, (void)work;
    return reserve(s, r, resp);
}

/* A positive whole number of at most 64 bits, in decimal. */
static bool positive_id(const char *s)
{
    char *end = NULL;
    errno = 0;
    long long id = strtoll(s, &end, 10);
    return *s >= '0' && *s <= '9' && !*end && !errno && id > 0;
}

static int check_resv_id(struct http_server *s, const char *arg, struct http_response *resp)
{
    (void)s;
    if (positive_id(arg))
        return 0;
    http__resp_error(resp, 400, "reservation id must be a positive integer");
    return 1;
}

static int check_leader(struct http_server *s, const char *arg, struct http_response *resp)
{
    (void)arg;
    if (!s->prov.leading || s->prov.leading(s->prov.ctx))
        return 0;
    http__resp_error(resp, 503, "not the leader: only the leader serves its store");
    return 1;
}

/* The query of a read: ?queue, ?all, ?limit and ?continue of the lists; ?limit of explain.
 * false for a bad one. */
static bool read_query(struct http_work *w, const char *q, size_t qn)
{
    bool bad = false;
    enum view v = w->v;
    if (v == V_JOBS || v == V_QUEUES || v == V_RESERVATIONS) {
        if (v == V_JOBS) {
            w->arg = query_get(q, qn, "queue", &bad);
            char *all = query_get(q, qn, "all", &bad);
            w->all = all && (strcmp(all, "1") == 0 || strcmp(all, "true") == 0);
            free(all);
        }
        char *lim = query_get(q, qn, "limit", &bad);
        if (lim) {
            char *end = NULL;
            unsigned long n = strtoul(lim, &end, 10);
            bad = bad || *lim < '0' || *lim > '9' || *end || n == 0 || n > HTTP_MAX_PAGE;
            w->page_limit = (uint32_t)n;
        }
        free(lim);
        w->cont = query_get(q, qn, "continue", &bad);
    } else if (v == V_EXPLAIN) {
        char *lim = query_get(q, qn, "limit", &bad);
        if (lim) {
            char *end = NULL;
            unsigned long n = strtoul(lim, &end, 10);
            bad = bad || *lim < '0' || *lim > '9' || *end || n > UINT32_MAX;
            w->limit = (uint32_t)n;
        }
        free(lim);
    }
    return !bad;
}

/* A read, run on a worker: the view of the route, of the wildcard (a queue, a job). */
static int r_read(struct http_server *s, const struct http_request *r, const struct route *rt,
                  const char *arg, const char *q, size_t qn, struct http_response *resp,
                  struct http_work **work)
{
    (void)r;
    struct http_work *w = new_work((enum view)rt->param, arg);
    if (!w) {
        http__resp_error(resp, 500, "out of memory");
        return 0;
    }
    w->limit = 50;
    if (!read_query(w, q, qn)) {
        http_work_free(w);
        http__resp_error(resp, 400, "bad query string: %.*s", (int)(qn > 200 ? 200 : qn), q);
        return 0;
    }
    if (w->v != V_METRICS || s->prov.store_metrics) {
        if (!s->prov.store_path) {
            http_work_free(w);
            http__resp_error(resp, 503, "this server has no database to read");
            return 0;
        }
    }
    *work = w;
    return 1;
}

#define CKPT_ALLOW "GET, POST (…/checkpoint)"

/* Every route of the API (docs/api.md), first match of path and method wins. A path that some
 * route has but not with this method is 405 with the first such route's Allow; no route's path
 * is 404. Order of the checks: method, the route's check, authorisation, the answer. */
static const struct route routes[] = {
    {"GET", "/healthz", AUTH_NONE, "GET", NULL, r_health, 0},
    {"GET", "/readyz", AUTH_NONE, "GET", NULL, r_ready, 0},
    {"GET", "/metrics", AUTH_READ, "GET", NULL, r_read, V_METRICS},
    {"GET", "/v1/queues", AUTH_READ, "GET", NULL, r_read, V_QUEUES},
    {"GET", "/v1/store/snapshot", AUTH_READ, "GET", check_leader, r_read, V_SNAPSHOT},
    {"GET", "/v1/quota", AUTH_READ, "GET", NULL, r_read, V_QUOTA},
    {"GET", "/v1/top", AUTH_READ, "GET", NULL, r_read, V_TOP},
    {"POST", "/v1/reservations", AUTH_WRITE, "GET, POST", NULL, r_reserve, 0},
    {"GET", "/v1/reservations", AUTH_READ, "GET, POST", NULL, r_read, V_RESERVATIONS},
    {"DELETE", "/v1/reservations/*", AUTH_WRITE, "DELETE", check_resv_id, r_write,
     STORE_ACT_UNRESERVE},
    {"POST", "/v1/queues/*/hold", AUTH_WRITE, "POST", NULL, r_write, STORE_ACT_HOLD},
    {"POST", "/v1/queues/*/resume", AUTH_WRITE, "POST", NULL, r_write, STORE_ACT_RESUME},
    {"POST", "/v1/queues/*/drain", AUTH_WRITE, "POST", NULL, r_write, STORE_ACT_DRAIN},
    {"GET", "/v1/queues/*", AUTH_READ, "GET", NULL, r_read, V_QUEUE},
    {"GET", "/v1/jobs", AUTH_READ, "GET", NULL, r_read, V_JOBS},
    {"POST", "/v1/jobs/**/checkpoint", AUTH_WRITE, CKPT_ALLOW, NULL, r_write, STORE_ACT_CHECKPOINT},
    {"GET", "/v1/jobs/**", AUTH_READ, CKPT_ALLOW, NULL, r_read, V_EXPLAIN},
};

static int route(struct http_server *s, const struct http_request *r, const char *path,
                 const char *q, size_t qn, struct http_response *resp, struct http_work **work)
{
    const struct route *hit = NULL, *near = NULL;
    const char *cap = NULL;
    size_t cap_n = 0;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]) && !hit; i++) {
        const char *c = NULL;
        size_t n = 0;
        if (!match(routes[i].pattern, path, &c, &n))
            continue;
        near = near ? near : &routes[i];
        if (strcmp(routes[i].method, r->method) == 0) {
            hit = &routes[i];
            cap = c;
            cap_n = n;
        }
    }
    if (!near) {
        http__resp_error(resp, 404, "no such route: %s %s", r->method, r->url);
        return 0;
    }
    if (!hit)
        return method_not_allowed(resp, r->method, near->allow);
    char *arg = cap ? strndup(cap, cap_n) : NULL;
    if (cap && !arg) {
        http__resp_error(resp, 500, "out of memory");
        return 0;
    }
    int rc = 0;
    if (!(hit->check && hit->check(s, arg, resp)) && !authorise(s, r->auth, hit->auth, resp))
        rc = hit->fn(s, r, hit, arg, q, qn, resp, work);
    free(arg);
    return rc;
}

int http_route(struct http_server *s, const struct http_request *r, struct http_response *resp,
               struct http_work **work)
{
    memset(resp, 0, sizeof(*resp));
    *work = NULL;
    struct http_parser_url u;
    http_parser_url_init(&u);
    size_t n = strlen(r->url);
    if (n == 0 || http_parser_parse_url(r->url, n, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH))) {
        http__resp_error(resp, 400, "malformed request target");
        return 0;
    }
    char *path = pct_decode(r->url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len, false);
    if (!path) {
        http__resp_error(resp, 400, "malformed percent-escape in the path");
        return 0;
    }
    const char *q = u.field_set & (1 << UF_QUERY) ? r->url + u.field_data[UF_QUERY].off : "";
    size_t qn = u.field_set & (1 << UF_QUERY) ? u.field_data[UF_QUERY].len : 0;
    int rc = route(s, r, path, q, qn, resp, work);
    free(path);
    return rc;
}
