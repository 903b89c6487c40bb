/* config/reload.c: hot reload of the operator configuration (see reload.h for the contract).
 *
 * Owns: the config_watch, its three libuv handles and the configurations it loaded. Must not
 * touch: the configuration file (read only), the scheduler state, anything outside its watch.
 *
 * Memory: the watch is freed when the last of its handles has been closed (libuv reclaims a
 * handle's memory only in or after its close callback); every configuration goes with it.
 */
#include "config/reload.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/file.h"
#include "sched/core/hash.h"
#include "sched/core/log.h"

#define MOD "config"

/* Kubernetes ConfigMap volumes swap this symlink atomically on every update. */
#define CONFIGMAP_DATA "..data"

struct cw_conf {
    struct config *c;
    uint32_t pins;
    struct cw_conf *next; /* retired list */
};

struct config_watch {
    uv_loop_t *loop;
    uv_signal_t sig;
    uv_fs_event_t fsev;
    uv_timer_t timer; /* debounce of file events; retry while the directory is not watched */
    bool sig_open, fsev_open, timer_open;
    int open_handles; /* initialized and not yet closed */
    char *path;       /* as given */
    char *dir;        /* its directory */
    const char *base; /* its last component (points into path) */
    config_apply_fn *apply;
    void *data;
    struct cw_conf *cur;
    struct cw_conf *retired; /* no longer current, still pinned (or about to be freed) */
    struct config_watch_stats st;
    char last_error[SCHED_ERRBUF];
    bool have_bad; /* bad_key identifies the last rejection, until a valid file is seen */
    uint64_t bad_key;
    int bad_rc;
    uint64_t debounce_ms;
    bool armed;   /* fsev watches dir_dev/dir_ino */
    bool pending; /* a relevant file event waits for the debounce timer */
    bool warned;  /* "cannot watch" logged since the last successful arm */
    bool stopping;
    bool in_apply;
    dev_t dir_dev;
    ino_t dir_ino;
};

static unsigned long long ver(const struct config *c)
{
    return (unsigned long long)c->version;
}

/* Frees retired configurations nobody pins any more. */
static void sweep(struct config_watch *w)
{
    struct cw_conf **pp = &w->retired;
    while (*pp) {
        struct cw_conf *e = *pp;
        if (e->pins == 0) {
            *pp = e->next;
            config_free(e->c);
            free(e);
        } else {
            pp = &e->next;
        }
    }
}

static void destroy(struct config_watch *w)
{
    if (w->cur) {
        if (w->cur->pins)
            LOG_WARN(MOD, "%s: watch stopped with the current configuration still pinned", w->path);
        config_free(w->cur->c);
        free(w->cur);
    }
    while (w->retired) {
        struct cw_conf *e = w->retired;
        w->retired = e->next;
        config_free(e->c);
        free(e);
    }
    free(w->path);
    free(w->dir);
    free(w);
}

static void on_close(uv_handle_t *h)
{
    struct config_watch *w = h->data;
    if (--w->open_handles == 0)
        destroy(w);
}

/* Closes every initialized handle; the watch is destroyed with the last close callback (or now,
 * when no handle was ever initialized). */
static void close_all(struct config_watch *w)
{
    w->stopping = true;
    if (w->open_handles == 0) {
        destroy(w);
        return;
    }
    if (w->sig_open)
        uv_close((uv_handle_t *)&w->sig, on_close);
    if (w->fsev_open)
        uv_close((uv_handle_t *)&w->fsev, on_close);
    if (w->timer_open)
        uv_close((uv_handle_t *)&w->timer, on_close);
}

/* Records a rejection: logged and counted once per distinct key (content hash or message). */
static int reject(struct config_watch *w, int rc, uint64_t key, const char *why, const char *msg)
{
    if (w->have_bad && w->bad_key == key) {
        LOG_WARN(MOD, "reload (%s) still rejected, keeping version %016llx: %s", why,
                 ver(w->cur->c), msg);
        return w->bad_rc;
    }
    w->have_bad = true;
    w->bad_key = key;
    w->bad_rc = rc;
    w->st.failures++;
    snprintf(w->last_error, sizeof(w->last_error), "%s", msg);
    LOG_ERROR(MOD, "reload (%s) rejected, keeping version %016llx: %s", why, ver(w->cur->c), msg);
    return rc;
}

static void valid_seen(struct config_watch *w)
{
    w->have_bad = false;
    w->last_error[0] = '\0';
}

static int unchanged(struct config_watch *w, const char *why)
{
    w->st.unchanged++;
    valid_seen(w);
    LOG_INFO(MOD, "reload (%s): %s unchanged (version %016llx)", why, w->path, ver(w->cur->c));
    return 1;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The same DRA identity (the inventory counted devices by it). */
static bool same_dra(const struct config_dra *a, const struct config_dra *b)
{
    return a->set == b->set && same_str(a->driver, b->driver) &&
           same_str(a->device_class, b->device_class) && same_str(a->type, b->type) &&
           a->untyped == b->untyped && same_str(a->selector, b->selector);
}

/* Same accelerators, same order and units: a reload may not re-slot what the cache counted. */
static bool same_devices(const struct config *a, const struct config *b)
{
    if (strcmp(a->device, b->device) != 0 || strcmp(a->device_unit, b->device_unit) != 0 ||
        a->n_kinds != b->n_kinds || !same_dra(&a->dra, &b->dra))
        return false;
    for (uint32_t k = 0; k < a->n_kinds; k++)
        if (strcmp(a->kinds[k].resource, b->kinds[k].resource) != 0 ||
            strcmp(a->kinds[k].unit, b->kinds[k].unit) != 0)
            return false;
    return true;
}

static int do_reload(struct config_watch *w, const char *why)
{
    if (w->stopping || w->in_apply)
        return SCHED_EINVAL;
    w->st.attempts++;
    struct sched_errbuf eb;
    eb.msg[0] = '\0';
    char *buf = NULL;
    size_t len = 0;
    int rc = config_file_read(w->path, CONFIG_FILE_MAX, &buf, &len, &eb);
    if (rc)
        return reject(w, rc, sched_hash(SCHED_HASH_INIT, eb.msg, strlen(eb.msg)), why, eb.msg);
    uint64_t h = sched_hash(SCHED_HASH_INIT, buf, len); /* as config->version */
    if (h == w->cur->c->version) {
        free(buf);
        return unchanged(w, why);
    }
    if (w->have_bad && w->bad_key == h) {
        free(buf);
        return reject(w, w->bad_rc, h, why, w->last_error);
    }
    struct config *fresh = NULL;
    rc = config_load_buffer(w->path, buf, len, &fresh, &eb);
    free(buf);
    if (rc)
        return reject(w, rc, h, why, eb.msg);
    if (fresh->version == w->cur->c->version) { /* the loader hashes differently: still equal */
        config_free(fresh);
        return unchanged(w, why);
    }
    if (!same_devices(fresh, w->cur->c)) {
        /* the accelerator names a resource slot every cached pod and node already uses */
        snprintf(eb.msg, sizeof(eb.msg),
                 "%s: device: the accelerators or their device.dra changed (%s, %u more "
                 "before; %s, %u more now): "
                 "every cached pod and node is counted by kind, so it takes effect only at a "
                 "restart",
                 w->path, w->cur->c->device, w->cur->c->n_kinds, fresh->device, fresh->n_kinds);
        config_free(fresh);
        return reject(w, SCHED_EINVAL, h, why, eb.msg);
    }
    struct cw_conf *e = calloc(1, sizeof(*e));
    if (!e) {
        config_free(fresh);
        snprintf(eb.msg, sizeof(eb.msg), "%s: out of memory", w->path);
        return reject(w, SCHED_ENOMEM, h, why, eb.msg);
    }
    e->c = fresh;
    struct cw_conf *old = w->cur;
    w->cur = e;
    old->next = w->retired;
    w->retired = old;
    w->st.applied++;
    valid_seen(w);
    LOG_INFO(MOD, "reload (%s): %s applied version %016llx (was %016llx)", why, w->path, ver(fresh),
             ver(old->c));
    if (w->apply) {
        w->in_apply = true;
        w->apply(w->data, fresh, old->c);
        w->in_apply = false;
    }
    sweep(w);
    return 0;
}

static void on_fs_event(uv_fs_event_t *h, const char *filename, int events, int status);

/* Makes sure the directory being watched is the one at w->dir now. Returns 0 when watching
 * (*rearmed tells whether the watch was (re)started now), -1 when it cannot watch yet. */
static int check_dir(struct config_watch *w, bool *rearmed)
{
    struct stat sb;
    int st = stat(w->dir, &sb);
    int serr = errno;
    if (w->armed) {
        if (st == 0 && sb.st_dev == w->dir_dev && sb.st_ino == w->dir_ino)
            return 0;
        uv_fs_event_stop(&w->fsev);
        w->armed = false;
        LOG_WARN(MOD, "%s: directory %s, watching it again", w->dir,
                 st == 0 ? "was replaced" : "disappeared");
    }
    int rc;
    if (st != 0)
        rc = uv_translate_sys_error(serr);
    else if (!S_ISDIR(sb.st_mode))
        rc = UV_ENOTDIR;
    else
        rc = uv_fs_event_start(&w->fsev, on_fs_event, w->dir, 0);
    if (rc) {
        if (!w->warned)
            LOG_WARN(MOD,
                     "cannot watch %s (%s): file changes are not seen, SIGHUP still reloads; "
                     "retrying every %d ms",
                     w->dir, uv_strerror(rc), CONFIG_WATCH_RETRY_MS);
        w->warned = true;
        return -1;
    }
    w->armed = true;
    w->warned = false;
    w->dir_dev = sb.st_dev;
    w->dir_ino = sb.st_ino;
    *rearmed = true;
    return 0;
}

static void on_timer(uv_timer_t *t)
{
    struct config_watch *w = t->data;
    if (w->stopping)
        return;
    bool rearmed = false;
    if (check_dir(w, &rearmed) != 0) {
        uv_timer_start(&w->timer, on_timer, CONFIG_WATCH_RETRY_MS, 0);
        return;
    }
    if (w->pending || rearmed) {
        /* after a gap in watching, the file may have changed unseen */
        const char *why = w->pending ? "file changed" : "directory watched again";
        w->pending = false;
        do_reload(w, why);
    }
}

static void on_fs_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct config_watch *w = h->data;
    (void)events;
    if (w->stopping)
        return;
    if (status < 0)
        LOG_WARN(MOD, "watching %s: %s", w->dir, uv_strerror(status));
    bool relevant = status == 0 && filename &&
                    (strcmp(filename, w->base) == 0 || strcmp(filename, CONFIGMAP_DATA) == 0);
    if (relevant) {
        w->pending = true;
        uv_timer_start(&w->timer, on_timer, w->debounce_ms, 0); /* restarts the quiet time */
    } else if (!uv_is_active((const uv_handle_t *)&w->timer)) {
        /* another name, an error or the directory itself: check the directory soon */
        uv_timer_start(&w->timer, on_timer, w->debounce_ms, 0);
    }
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct config_watch *w = s->data;
    (void)signum;
    if (!w->stopping)
        do_reload(w, "SIGHUP");
}

/* Splits w->path into w->dir and w->base. */
static int split_path(struct config_watch *w)
{
    const char *slash = strrchr(w->path, '/');
    if (!slash) {
        w->base = w->path;
        w->dir = strdup(".");
    } else {
        w->base = slash + 1;
        size_t n = slash == w->path ? 1 : (size_t)(slash - w->path);
        w->dir = strndup(w->path, n);
    }
    return w->dir ? 0 : SCHED_ENOMEM;
}

int config_watch_start(uv_loop_t *loop, const char *path, config_apply_fn *apply, void *data,
                       struct config_watch **out, struct sched_errbuf *eb)
{
    if (out)
        *out = NULL;
    if (!loop || !path || !out)
        return sched_fail(eb, SCHED_EINVAL, "config watch: no loop, path or output");
    if (!*path || path[strlen(path) - 1] == '/')
        return sched_fail(eb, SCHED_EINVAL, "config watch: \"%s\" is not a file name", path);
    struct config_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    w->loop = loop;
    w->apply = apply;
    w->data = data;
    w->debounce_ms = CONFIG_WATCH_DEBOUNCE_MS;
    w->path = strdup(path);
    w->cur = calloc(1, sizeof(*w->cur));
    if (!w->path || !w->cur || split_path(w) != 0) {
        destroy(w);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    }
    int rc = config_load_file(path, &w->cur->c, eb);
    if (rc) {
        free(w->cur);
        w->cur = NULL;
        destroy(w);
        return rc;
    }

    const char *what = "uv_signal_init";
    rc = uv_signal_init(loop, &w->sig);
    if (!rc) {
        w->sig_open = true;
        w->open_handles++;
        w->sig.data = w;
        what = "uv_timer_init";
        rc = uv_timer_init(loop, &w->timer);
    }
    if (!rc) {
        w->timer_open = true;
        w->open_handles++;
        w->timer.data = w;
        what = "uv_fs_event_init";
        rc = uv_fs_event_init(loop, &w->fsev);
    }
    if (!rc) {
        w->fsev_open = true;
        w->open_handles++;
        w->fsev.data = w;
        what = "uv_signal_start(SIGHUP)";
        rc = uv_signal_start(&w->sig, on_signal, SIGHUP);
    }
    if (rc) {
        int err = sched_fail(eb, SCHED_EIO, "config watch %s: %s: %s", path, what, uv_strerror(rc));
        close_all(w);
        return err;
    }
    bool rearmed = false;
    if (check_dir(w, &rearmed) != 0)
        uv_timer_start(&w->timer, on_timer, CONFIG_WATCH_RETRY_MS, 0);
    LOG_INFO(MOD, "%s: loaded version %016llx, watching %s and SIGHUP", path, ver(w->cur->c),
             w->dir);
    *out = w;
    return 0;
}

const struct config *config_watch_current(const struct config_watch *w)
{
    return w && w->cur ? w->cur->c : NULL;
}

const struct config *config_watch_pin(struct config_watch *w)
{
    if (!w || !w->cur)
        return NULL;
    w->cur->pins++;
    return w->cur->c;
}

void config_watch_unpin(struct config_watch *w, const struct config *c)
{
    if (!w || !c)
        return;
    if (w->cur && w->cur->c == c) {
        if (w->cur->pins)
            w->cur->pins--;
        return;
    }
    for (struct cw_conf *e = w->retired; e; e = e->next) {
        if (e->c == c) {
            if (e->pins)
                e->pins--;
            if (e->pins == 0 && !w->in_apply)
                sweep(w);
            return;
        }
    }
    LOG_WARN(MOD, "%s: unpin of a configuration this watch does not hold", w->path);
}

int config_watch_reload(struct config_watch *w)
{
    if (!w)
        return SCHED_EINVAL;
    return do_reload(w, "manual");
}

void config_watch_set_debounce(struct config_watch *w, uint64_t ms)
{
    if (w)
        w->debounce_ms = ms;
}

void config_watch_stats(const struct config_watch *w, struct config_watch_stats *out)
{
    if (!out)
        return;
    if (w)
        *out = w->st;
    else
        memset(out, 0, sizeof(*out));
}

uint64_t config_watch_failures(const struct config_watch *w)
{
    return w ? w->st.failures : 0;
}

const char *config_watch_last_error(const struct config_watch *w)
{
    return w ? w->last_error : "";
}

void config_watch_stop(struct config_watch *w)
{
    if (!w || w->stopping)
        return;
    close_all(w);
}
