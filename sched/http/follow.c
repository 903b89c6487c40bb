/* sched/http/follow.c: a standby following the leader's store; see follow.h. */
#include "sched/http/follow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config/file.h"
#include "sched/core/log.h"
#include "store/store.h"

#define FOLLOW_MOD "follow"

struct http_follow {
    uv_loop_t *loop;
    uv_timer_t timer;
    uv_work_t work;
    char *url, *token_file, *db, *tmp, *dst;
    uint32_t interval_ms;
    bool busy, stopping, timer_closed;
    /* `cancelled` is set by http_follow_stop on the loop and read by the worker, both under
     * `mu`: the worker renames tmp to dst only while holding `mu` with cancelled false, so once
     * http_follow_stop returns no fetch can write DB.follow any more (a standby that took the
     * Lease adopts DB.follow next; a late rename would leave an older leader's copy there) */
    uv_mutex_t mu;
    bool cancelled;
    uint64_t count;
    /* the last fetch's outcome, logged on the loop: status the HTTP status (0: none),
     * retry_after_s its Retry-After (s; 0: none) */
    int rc;
    long status;
    int64_t retry_after_s;
    char msg[SCHED_ERRBUF];
    size_t bytes;
    int64_t seq;
};

static char *cat(const char *a, const char *b)
{
    size_t n = strlen(a), k = strlen(b);
    char *s = malloc(n + k + 1);
    if (s) {
        memcpy(s, a, n);
        memcpy(s + n, b, k + 1);
    }
    return s;
}

static void drop_side_files(const char *path)
{
    char side[4200];
    if (strlen(path) + 5 > sizeof(side))
        return;
    size_t n = strlen(path);
    memcpy(side, path, n);
    memcpy(side + n, "-wal", 5);
    unlink(side);
    memcpy(side + n, "-shm", 5);
    unlink(side);
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    return fwrite(p, size, n, ctx) == n ? size * n : 0;
}

static bool is_cancelled(struct http_follow *f)
{
    uv_mutex_lock(&f->mu);
    bool c = f->cancelled;
    uv_mutex_unlock(&f->mu);
    return c;
}

/* curl's progress callback: a stopped follower aborts its transfer (non-zero). */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return is_cancelled(ctx);
}

/* Worker thread: one fetch into tmp, checked, renamed to dst. */
static void fetch(uv_work_t *w)
{
    struct http_follow *f = w->data;
    struct sched_errbuf eb = {{0}};
    f->rc = 0;
    f->msg[0] = 0;
    f->bytes = 0;
    f->status = 0;
    f->retry_after_s = 0;
    char *url = cat(f->url, "/v1/store/snapshot");
    FILE *out = url ? fopen(f->tmp, "wb") : NULL;
    CURL *c = out ? curl_easy_init() : NULL;
    if (!c) {
        f->rc = sched_fail(&eb, SCHED_EIO, "cannot fetch into %s: %s", f->tmp, strerror(errno));
        goto done;
    }
    struct curl_slist *h = NULL;
    if (f->token_file) { /* config_token_read: the server's and gangctl's reader of token files */
        char *tok = malloc(CONFIG_TOKEN_MAX + 1);
        size_t n = 0;
        f->rc = tok ? config_token_read(f->token_file, tok, CONFIG_TOKEN_MAX + 1, &n, &eb)
                    : sched_fail(&eb, SCHED_ENOMEM, "out of memory");
        char *auth = f->rc == 0 ? cat("Authorization: Bearer ", tok) : NULL;
        free(tok);
        if (f->rc == 0 && (!auth || !(h = curl_slist_append(h, auth))))
            f->rc = sched_fail(&eb, SCHED_ENOMEM, "out of memory");
        free(auth);
        if (f->rc != 0) {
            curl_easy_cleanup(c);
            goto done;
        }
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gangsched-follow");
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, f);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    CURLcode cc = curl_easy_perform(c);
    long code = 0;
    curl_off_t ra = 0; /* s, from a number or an HTTP-date; 0: none */
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra < 0)
        ra = 0;
    f->status = code;
    f->retry_after_s = (int64_t)ra;
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    bool wrote = fflush(out) == 0 && !ferror(out) && fsync(fileno(out)) == 0;
    wrote = fclose(out) == 0 && wrote;
    out = NULL;
    if (cc != CURLE_OK || code != 200 || !wrote) {
        f->rc = sched_fail(&eb, SCHED_EIO, "GET %s: %s (HTTP %ld)", url,
                           cc != CURLE_OK ? curl_easy_strerror(cc)
                           : http_follow_shed(code, f->retry_after_s)
                               ? "shed: the leader's answer budget is full"
                           : code != 200 ? "not 200 (not the leader, or no database yet)"
                                         : "cannot write the copy",
                           code);
        goto done;
    }
    /* a database this binary reads, whole: else the last good copy stays */
    struct store *st = NULL;
    f->rc = store_open(f->tmp, STORE_READONLY, NULL, &st, &eb);
    if (f->rc == 0) {
        f->seq = store_commit_seq(st);
        store_close(st);
    }
    drop_side_files(f->tmp);
    struct stat sb;
    if (f->rc == 0 && stat(f->tmp, &sb) == 0)
        f->bytes = (size_t)sb.st_size;
    if (f->rc == 0) {
        uv_mutex_lock(&f->mu);
        if (f->cancelled)
            f->rc = sched_fail(&eb, SCHED_EIO, "stopped: this fetch's copy is discarded");
        else if (rename(f->tmp, f->dst) != 0)
            f->rc = sched_fail(&eb, SCHED_EIO, "cannot rename %s: %s", f->tmp, strerror(errno));
        uv_mutex_unlock(&f->mu);
    }
done:
    if (out)
        fclose(out);
    if (f->rc != 0)
        unlink(f->tmp);
    free(url);
    snprintf(f->msg, sizeof(f->msg), "%s", eb.msg);
}

bool http_follow_shed(long status, int64_t retry_after_s)
{
    return (status == 503 || status == 429) && retry_after_s > 0;
}

uint64_t http_follow_retry_ms(long status, int64_t retry_after_s, uint32_t interval_ms)
{
    if (http_follow_shed(status, retry_after_s)) {
        int64_t cap = HTTP_FOLLOW_RETRY_MAX_MS / 1000;
        return (uint64_t)(retry_after_s < cap ? retry_after_s : cap) * 1000;
    }
    /* behind a Service a fetch may reach the other standby, or a leader without its database
     * yet (503 without Retry-After), or fail on the way: try again soon */
    return interval_ms > HTTP_FOLLOW_SOON_MS ? HTTP_FOLLOW_SOON_MS : 0;
}

static void follow_free(struct http_follow *f)
{
    free(f->url);
    free(f->token_file);
    free(f->db);
    free(f->tmp);
    free(f->dst);
    uv_mutex_destroy(&f->mu);
    free(f);
}

static void on_timer_closed(uv_handle_t *h)
{
    struct http_follow *f = h->data;
    f->timer_closed = true;
    if (!f->busy)
        follow_free(f);
}

static void on_tick(uv_timer_t *t);

static void fetched(uv_work_t *w, int status)
{
    struct http_follow *f = w->data;
    f->busy = false;
    if (status == 0 && f->rc == 0) {
        f->count++;
        LOG_INFO(FOLLOW_MOD, "followed the leader's store: bytes=%zu commit_seq=%lld file=%s",
                 f->bytes, (long long)f->seq, f->dst);
    } else if (status == 0 && f->stopping) {
        LOG_INFO(FOLLOW_MOD, "a fetch in flight at the stop was discarded: %s", f->msg);
    } else if (status == 0) {
        uint64_t wait = http_follow_retry_ms(f->status, f->retry_after_s, f->interval_ms);
        if (http_follow_shed(f->status, f->retry_after_s))
            LOG_INFO(FOLLOW_MOD,
                     "the leader shed the fetch (its answer budget is full): retry_after_s=%lld "
                     "next_ms=%llu",
                     (long long)f->retry_after_s, (unsigned long long)wait);
        else
            LOG_WARN(FOLLOW_MOD, "following the leader's store failed: error=%s next_ms=%llu",
                     f->msg, (unsigned long long)(wait ? wait : f->interval_ms));
        if (!f->stopping && wait)
            uv_timer_start(&f->timer, on_tick, wait, f->interval_ms);
    }
    if (f->stopping && f->timer_closed)
        follow_free(f);
}

static void on_tick(uv_timer_t *t)
{
    struct http_follow *f = t->data;
    if (f->busy || f->stopping)
        return;
    f->busy = true;
    f->work.data = f;
    if (uv_queue_work(f->loop, &f->work, fetch, fetched) != 0)
        f->busy = false;
}

int http_follow_start(uv_loop_t *loop, const char *url, const char *token_file, const char *db_path,
                      uint32_t interval_ms, struct http_follow **out, struct sched_errbuf *eb)
{
    if (!url || !*url || !db_path)
        return sched_fail(eb, SCHED_EINVAL, "--follow: a URL and --db are needed");
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return sched_fail(eb, SCHED_EINVAL, "--follow %s: not an http:// or https:// URL", url);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return sched_fail(eb, SCHED_EIO, "--follow: curl_global_init failed");
    struct http_follow *f = calloc(1, sizeof(*f));
    if (!f)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (uv_mutex_init(&f->mu) != 0) {
        free(f);
        return sched_fail(eb, SCHED_ENOMEM, "--follow: cannot create a mutex");
    }
    f->loop = loop;
    f->interval_ms = interval_ms ? interval_ms : HTTP_FOLLOW_DEFAULT_MS;
    f->url = cat(url, "");
    f->token_file = token_file ? cat(token_file, "") : NULL;
    f->db = cat(db_path, "");
    f->dst = cat(db_path, ".follow");
    char sfx[40];
    snprintf(sfx, sizeof(sfx), ".follow.tmp-%ld", (long)getpid());
    f->tmp = cat(db_path, sfx);
    if (!f->url || (token_file && !f->token_file) || !f->db || !f->dst || !f->tmp) {
        follow_free(f);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    size_t n = strlen(f->url);
    while (n > 0 && f->url[n - 1] == '/')
        f->url[--n] = 0;
    uv_timer_init(loop, &f->timer);
    f->timer.data = f;
    uv_timer_start(&f->timer, on_tick, 0, f->interval_ms);
    *out = f;
    return 0;
}

void http_follow_stop(struct http_follow *f)
{
    if (!f || f->stopping)
        return;
    f->stopping = true;
    uv_mutex_lock(&f->mu);
    f->cancelled = true; /* a fetch in flight ends without writing DB.follow */
    uv_mutex_unlock(&f->mu);
    uv_timer_stop(&f->timer);
    uv_close((uv_handle_t *)&f->timer, on_timer_closed);
}

uint64_t http_follow_count(const struct http_follow *f)
{
    return f ? f->count : 0;
}

static bool newer(const struct stat *a, const struct stat *b)
{
    return a->st_mtim.tv_sec > b->st_mtim.tv_sec ||
           (a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec > b->st_mtim.tv_nsec);
}

int http_follow_adopt(const char *db_path, char *what, size_t cap, struct sched_errbuf *eb)
{
    char fol[4200], wal[4200];
    snprintf(fol, sizeof(fol), "%s.follow", db_path);
    snprintf(wal, sizeof(wal), "%s-wal", db_path);
    struct stat fs, ds, ws;
    if (stat(fol, &fs) != 0)
        return 0;
    if ((stat(db_path, &ds) == 0 && !newer(&fs, &ds)) || (stat(wal, &ws) == 0 && !newer(&fs, &ws)))
        return 0; /* written here since: ours is newer */
    struct store *st = NULL;
    int rc = store_open(fol, STORE_READONLY, NULL, &st, eb);
    int64_t seq = rc == 0 ? store_commit_seq(st) : 0;
    store_close(st);
    drop_side_files(fol);
    if (rc != 0)
        return rc;
    drop_side_files(db_path);
    if (rename(fol, db_path) != 0)
        return sched_fail(eb, SCHED_EIO, "cannot adopt %s: %s", fol, strerror(errno));
    snprintf(what, cap, "adopted the followed store: file=%s commit_seq=%lld age_s=%lld", fol,
             (long long)seq, (long long)(time(NULL) - fs.st_mtim.tv_sec));
    return 1;
}
