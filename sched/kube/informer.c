/* sched/kube/informer.c: list+watch of one collection (see client.h), and the watch framer.
 *
 * Owns: the informer state machine (a streaming list, or LIST pages -> SYNCED -> WATCH ->
 * reconnect or relist), the
 * map namespace/name -> resourceVersion that turns a relist into ADDED/MODIFIED/DELETED events,
 * the brace-counting framer, and the query-string encoding. Must not touch: what the objects
 * mean (decode.c, cache.c), the HTTP layer (client.c), anything outside sched/kube.
 *
 * Synthetic DELETED events (objects gone after a relist) carry a minimal object: metadata with
 * namespace (when namespaced), name, resourceVersion and uid as last seen.
 *
 * A list page is not parsed whole: its envelope is scanned for the members "metadata" (parsed:
 * the continue token and resourceVersion) and "items" (kept as text); each item is then parsed,
 * handed to the callback and freed before the next (its end is where cJSON stopped parsing it,
 * no second scan), so no tree of a whole page (500 pods) is ever built and the next page is
 * asked for before any item is parsed. (Parsing pages on a thread of libuv's pool was tried: it
 * halved the loop thread's instructions but cost 35% more CPU in all, and started later.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "sched/core/hash.h"
#include "sched/core/log.h"
#include "sched/kube/client.h"
#include "sched/kube/wire.h"

#define WATCH_MAX_OBJECT ((size_t)64 << 20)
#define BACKOFF_MIN_MS   800
#define BACKOFF_MAX_MS   30000
#define ABSENT_RETRY_MS  5000 /* a resource the API does not serve is listed again this often */
#define REWATCH_MS       100  /* after a watch that ended cleanly */
/* The watchdog gives a watch this long (or the client's watch_idle_ms when shorter) past the
 * timeoutSeconds it asked for: the server ends it then (kube-apiserver sends a bookmark 2 s
 * before), so a watch still open is stuck. */
#define WATCH_GRACE_MS   30000

/* ---- framer ---------------------------------------------------------------------------------- */

void kube_framer_init(struct kube_framer *f, size_t max_obj)
{
    memset(f, 0, sizeof(*f));
    f->max_obj = max_obj;
}

void kube_framer_reset(struct kube_framer *f)
{
    f->len = f->scan = f->start = 0;
    f->depth = 0;
    f->in_str = f->esc = false;
}

void kube_framer_free(struct kube_framer *f)
{
    free(f->buf);
    f->buf = NULL;
    f->cap = 0;
    kube_framer_reset(f);
}

/* Drops the bytes before the current object (or everything when between objects). */
static void framer_compact(struct kube_framer *f, size_t i)
{
    if (f->depth == 0) {
        f->len = f->scan = f->start = 0;
        return;
    }
    if (f->start > 0) {
        memmove(f->buf, f->buf + f->start, f->len - f->start);
        f->len -= f->start;
        i -= f->start;
        f->start = 0;
    }
    f->scan = i;
}

/* The bytes that can change the framer's state: between them it skips whole runs. */
static const unsigned char frame_sig[256] = {['"'] = 1, ['{'] = 1, ['}'] = 1, ['\\'] = 1};

int kube_framer_feed(struct kube_framer *f, const char *data, size_t n, kube_frame_fn *fn,
                     void *ctx, struct sched_errbuf *eb)
{
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + n + 1)
            cap *= 2;
        char *b = realloc(f->buf, cap);
        if (!b)
            return sched_fail(eb, SCHED_ENOMEM, "watch framer: out of memory");
        f->buf = b;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, data, n);
    f->len += n;
    size_t i = f->scan;
    while (i < f->len) {
        if (f->depth == 0) { /* between objects: only a '{' starts one */
            const char *o = memchr(f->buf + i, '{', f->len - i);
            if (!o) {
                i = f->len;
                break;
            }
            i = (size_t)(o - f->buf);
            f->depth = 1;
            f->start = i++;
            f->in_str = f->esc = false;
            continue;
        }
        if (f->esc) { /* the byte after a backslash in a string, whatever it is */
            f->esc = false;
            i++;
        } else {
            while (i < f->len && !frame_sig[(unsigned char)f->buf[i]])
                i++;
        }
        if (i - f->start > f->max_obj) {
            kube_framer_reset(f);
            return sched_fail(eb, SCHED_ERANGE, "watch event larger than %zu bytes", f->max_obj);
        }
        if (i >= f->len)
            break;
        char ch = f->buf[i];
        if (f->in_str) {
            if (ch == '\\')
                f->esc = true;
            else if (ch == '"')
                f->in_str = false;
        } else if (ch == '"') {
            f->in_str = true;
        } else if (ch == '{') {
            f->depth++;
        } else if (ch == '}' && --f->depth == 0) {
            char save = f->buf[i + 1]; /* i + 1 <= len < cap */
            f->buf[i + 1] = '\0';
            int rc = fn(ctx, f->buf + f->start, i + 1 - f->start);
            f->buf[i + 1] = save;
            if (rc) {
                /* keep what follows for a later feed */
                memmove(f->buf, f->buf + i + 1, f->len - i - 1);
                f->len -= i + 1;
                f->scan = f->start = 0;
                return rc;
            }
        }
        i++;
    }
    framer_compact(f, i);
    return 0;
}

/* ---- query strings --------------------------------------------------------------------------- */

bool kube_query_escape(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(dst);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool keep = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';
        if (n + (keep ? 1 : 3) >= cap)
            return false;
        if (keep) {
            dst[n++] = (char)ch;
        } else {
            dst[n++] = '%';
            dst[n++] = hex[ch >> 4];
            dst[n++] = hex[ch & 15];
        }
    }
    dst[n] = '\0';
    return true;
}

/* ---- known objects --------------------------------------------------------------------------- */

#define KENT_RV_ROOM  24 /* bytes kept after the key for the resourceVersion (decimal) */
#define KENT_UID_ROOM 40 /* and for the uid (36 characters) */

struct kent {
    struct kent *next;
    uint64_t h;
    uint32_t gen;
    char *rv, *uid; /* in the rooms after the key when they fit, else on the heap */
    char key[];     /* "namespace/name" ("/name" for cluster-scoped objects), its NUL, then
                       KENT_RV_ROOM and KENT_UID_ROOM bytes: one allocation per object */
};

static char *kent_room(struct kent *e, bool uid)
{
    return e->key + strlen(e->key) + 1 + (uid ? KENT_RV_ROOM : 0);
}

/* *dst = v, in the room when it fits; false: out of memory (*dst unchanged). */
static bool kent_set(char **dst, char *room, size_t cap, const char *v)
{
    if (*dst && strcmp(*dst, v) == 0)
        return true;
    size_t n = strlen(v) + 1;
    char *d = n <= cap ? room : malloc(n);
    if (!d)
        return false;
    if (*dst && *dst != room)
        free(*dst);
    memcpy(d, v, n);
    *dst = d;
    return true;
}

struct kmap {
    struct kent **b;
    size_t nb, n;
};

static struct kent **kmap_slot(struct kmap *m, const char *key, uint64_t h)
{
    struct kent **p = &m->b[h & (m->nb - 1)];
    while (*p && ((*p)->h != h || strcmp((*p)->key, key)))
        p = &(*p)->next;
    return p;
}

static void kent_free(struct kent *e)
{
    if (e->rv != kent_room(e, false))
        free(e->rv);
    if (e->uid != kent_room(e, true))
        free(e->uid);
    free(e);
}

static void kmap_free(struct kmap *m)
{
    for (size_t i = 0; i < m->nb; i++) {
        for (struct kent *e = m->b[i], *nx; e; e = nx) {
            nx = e->next;
            kent_free(e);
        }
    }
    free(m->b);
    m->b = NULL;
    m->nb = m->n = 0;
}

static bool kmap_grow(struct kmap *m)
{
    size_t nb = m->nb ? m->nb * 2 : 256;
    struct kent **b = calloc(nb, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < m->nb; i++) {
        for (struct kent *e = m->b[i], *nx; e; e = nx) {
            nx = e->next;
            e->next = b[e->h & (nb - 1)];
            b[e->h & (nb - 1)] = e;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return true;
}

/* ---- informer -------------------------------------------------------------------------------- */

enum inf_next { NEXT_LIST, NEXT_WATCH };

/* The annotation of the BOOKMARK that ends a streaming list's initial events (apimachinery
 * metav1.InitialEventsAnnotationKey). */
#define INITIAL_EVENTS_END "k8s.io/initial-events-end"

struct kube_informer {
    struct kube_client *c;
    char *path, *fsel, *lsel;
    uint32_t page, watch_timeout;
    kube_informer_fn *fn;
    void *ctx;
    struct kube_req *req;
    uv_timer_t timer;
    /* The watchdog of the open watch: armed by start_watch, stopped when the watch ends. Loop
     * times in ms: when the watch was asked for, when its last bytes arrived; watch_s is the
     * timeoutSeconds it asked for. */
    uv_timer_t watchdog;
    uint64_t watch_start_ms, watch_rx_ms;
    uint32_t watch_s;
    enum inf_next next;
    char *rv;       /* last resourceVersion seen */
    char *cont;     /* continue token of the list in progress */
    uint32_t gen;   /* list generation: entries not seen by the current list are gone */
    bool synced;    /* a list has completed */
    bool absent;    /* the last list was 404: the resource is not served (a CRD not installed) */
    bool relist;    /* the watch saw an ERROR 410 */
    bool got_event; /* the current watch delivered something */
    /* A watch of this resource got a BOOKMARK (kept across re-watches): from then on the
     * server is known to send them (kube-apiserver's watch cache sends one about once a
     * minute, but only for a resource type that has had an event since that cacher started),
     * so a watch silent for the client's watch_idle_ms is stuck. */
    bool bookmarked;
    /* The open watch is a streaming list (WatchList, KEP-3157: sendInitialEvents) that has not
     * yet sent the bookmark ending its initial events; paged: list in pages (asked for, or the
     * server refused a streaming list). */
    bool streaming, paged;
    uint64_t backoff_ms;
    struct kmap map;
    struct kube_framer fr;
    int depth;
    bool dead;
    /* The items of a list page (the JSON text of its array) whose successor is already
     * requested: applied on the loop's next turn (the apply handle), or first thing when the
     * next response arrives, so the server makes page N+1 while page N is decoded (in order: a
     * page is never applied after its successor). Owned here; freed by inf_release. */
    char *held;
    size_t held_len;
    uv_idle_t apply;
    int open_handles; /* timer, watchdog and apply: the informer is freed when all are closed */
};

static void inf_release(struct kube_informer *inf);

static void inf_enter(struct kube_informer *inf)
{
    inf->depth++;
}

/* false when the informer was freed meanwhile (and is now released): stop touching it. */
static bool inf_leave(struct kube_informer *inf)
{
    if (--inf->depth == 0 && inf->dead) {
        inf_release(inf);
        return false;
    }
    return !inf->dead;
}

static void emit(struct kube_informer *inf, enum kube_event ev, const cJSON *obj)
{
    if (!inf->dead && inf->fn)
        inf->fn(inf->ctx, ev, obj);
}

static void set_rv(struct kube_informer *inf, const char *rv)
{
    if (!rv || !*rv || (inf->rv && !strcmp(inf->rv, rv)))
        return;
    char *d = strdup(rv);
    if (d) {
        free(inf->rv);
        inf->rv = d;
    }
}

static const char *str_at(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* namespace/name key of an object, or false (logged) when it has no metadata.name. */
static bool obj_key(struct kube_informer *inf, const cJSON *obj, const char *where, char *key,
                    size_t cap, const cJSON **meta_out)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *name = meta ? str_at(meta, "name") : NULL;
    const char *ns = meta ? str_at(meta, "namespace") : NULL;
    if (!name || !*name) {
        LOG_WARN("kube", "%s %s: object without metadata.name skipped", inf->path, where);
        return false;
    }
    size_t nl = ns ? strlen(ns) : 0, ml = strlen(name);
    if (nl + ml + 2 > cap) {
        LOG_WARN("kube", "%s %s: object name too long: skipped", inf->path, where);
        return false;
    }
    memcpy(key, ns ? ns : "", nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml + 1);
    *meta_out = meta;
    return true;
}

/* Records an object seen by a list or a watch event; *known says whether it was there. */
static bool remember(struct kube_informer *inf, const char *key, const cJSON *meta, bool *known)
{
    uint64_t h = sched_hash(SCHED_HASH_INIT, key, strlen(key));
    if (inf->map.n >= inf->map.nb && !kmap_grow(&inf->map))
        return false;
    struct kent **p = kmap_slot(&inf->map, key, h);
    struct kent *e = *p;
    *known = e != NULL;
    if (!e) {
        size_t kl = strlen(key);
        e = calloc(1, sizeof(*e) + kl + 1 + KENT_RV_ROOM + KENT_UID_ROOM);
        if (!e)
            return false;
        memcpy(e->key, key, kl + 1);
        e->h = h;
        *p = e;
        inf->map.n++;
    }
    e->gen = inf->gen;
    const char *rv = str_at(meta, "resourceVersion"), *uid = str_at(meta, "uid");
    if (rv)
        kent_set(&e->rv, kent_room(e, false), KENT_RV_ROOM, rv);
    if (uid)
        kent_set(&e->uid, kent_room(e, true), KENT_UID_ROOM, uid);
    return true;
}

static void forget(struct kube_informer *inf, const char *key)
{
    if (!inf->map.nb)
        return;
    uint64_t h = sched_hash(SCHED_HASH_INIT, key, strlen(key));
    struct kent **p = kmap_slot(&inf->map, key, h);
    if (*p) {
        struct kent *e = *p;
        *p = e->next;
        kent_free(e);
        inf->map.n--;
    }
}

/* The minimal object of a synthetic DELETED event. */
static cJSON *ghost(const struct kent *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *m = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
    const char *slash = strchr(e->key, '/');
    if (!m || !slash) {
        cJSON_Delete(o);
        return NULL;
    }
    char ns[256];
    size_t nl = (size_t)(slash - e->key);
    if (nl >= sizeof(ns))
        nl = sizeof(ns) - 1;
    memcpy(ns, e->key, nl);
    ns[nl] = '\0';
    if (nl)
        cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(m, "name", slash + 1);
    if (e->rv)
        cJSON_AddStringToObject(m, "resourceVersion", e->rv);
    if (e->uid)
        cJSON_AddStringToObject(m, "uid", e->uid);
    return o;
}

static void schedule(struct kube_informer *inf, enum inf_next next, uint64_t ms);

static uint64_t next_backoff(struct kube_informer *inf)
{
    uint64_t d = inf->backoff_ms ? inf->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (d > BACKOFF_MAX_MS)
        d = BACKOFF_MAX_MS;
    inf->backoff_ms = d;
    return d + (uint64_t)(kube_client_rand(inf->c) * (double)d * 0.25);
}

/* "?a=b&c=d" with the selectors; false when it does not fit. */
static bool selectors(const struct kube_informer *inf, char *q, size_t cap)
{
    if (inf->lsel) {
        strncat(q, "&labelSelector=", cap - strlen(q) - 1);
        if (!kube_query_escape(q, cap, inf->lsel))
            return false;
    }
    if (inf->fsel) {
        strncat(q, "&fieldSelector=", cap - strlen(q) - 1);
        if (!kube_query_escape(q, cap, inf->fsel))
            return false;
    }
    return strlen(q) + 1 < cap;
}

static void on_list(void *ctx, const struct kube_resp *r);
static void on_watch_done(void *ctx, const struct kube_resp *r);
static int on_watch_data(void *ctx, const char *data, size_t n);

static void open_watch(struct kube_informer *inf, bool stream);

static void start_list(struct kube_informer *inf)
{
    /* a resource found not served is looked for again with a LIST: a request, with a timeout,
     * where a stream would wait for its watchdog (on a silent connection the timed-out request
     * shuts the connection down: h2_blackhole.py) */
    if (!inf->paged && !inf->cont && !inf->absent) {
        open_watch(inf, true);
        return;
    }
    size_t cap = strlen(inf->path) + (inf->cont ? 3 * strlen(inf->cont) : 0) +
                 (inf->lsel ? 3 * strlen(inf->lsel) : 0) + (inf->fsel ? 3 * strlen(inf->fsel) : 0) +
                 128;
    char *q = malloc(cap);
    if (!q) {
        schedule(inf, NEXT_LIST, next_backoff(inf));
        return;
    }
    if (!inf->cont)
        inf->gen++;
    snprintf(q, cap, "%s?limit=%u", inf->path, inf->page);
    if (inf->cont) {
        strcat(q, "&continue=");
        kube_query_escape(q, cap, inf->cont);
    }
    selectors(inf, q, cap);
    if (kube_request_h(inf->c, KUBE_GET, q, NULL, 0, 0, on_list, inf, &inf->req) != 0)
        schedule(inf, NEXT_LIST, next_backoff(inf));
    free(q);
}

/* ---- watchdog of the open watch -------------------------------------------------------------- */

/* Why the open watch counts as stuck at loop time `now` (a message), or NULL and *due: the loop
 * time at which to look again. */
static const char *watch_stuck(const struct kube_informer *inf, uint64_t now, uint64_t *due,
                               char *why, size_t cap)
{
    uint64_t idle = kube_client_watch_idle_ms(inf->c);
    /* Held to the idle bound only once a watch of THIS resource got a bookmark: kube-apiserver
     * sends none for a type without an event since its cacher started (a quiet PodGroup or
     * ResourceSlice watch is healthy and silent until its timeoutSeconds). */
    bool bookmarks = inf->bookmarked;
    uint64_t end = inf->watch_start_ms + (uint64_t)inf->watch_s * 1000 +
                   (idle < WATCH_GRACE_MS ? idle : WATCH_GRACE_MS);
    bool answered = kube_req_status(inf->req) != 0;
    if (now >= end) {
        snprintf(why, cap, "still open %llu s after it started (timeoutSeconds=%u)",
                 (unsigned long long)((now - inf->watch_start_ms) / 1000), inf->watch_s);
        return why;
    }
    if (!answered && now >= inf->watch_start_ms + idle) {
        snprintf(why, cap, "no response within %llu ms", (unsigned long long)idle);
        return why;
    }
    if (bookmarks && now >= inf->watch_rx_ms + idle) {
        snprintf(why, cap, "nothing received for %llu ms (no event, no bookmark)",
                 (unsigned long long)(now - inf->watch_rx_ms));
        return why;
    }
    *due = end;
    if (!answered && inf->watch_start_ms + idle < *due)
        *due = inf->watch_start_ms + idle;
    if (bookmarks && inf->watch_rx_ms + idle < *due)
        *due = inf->watch_rx_ms + idle;
    return NULL;
}

static void on_watchdog(uv_timer_t *t)
{
    struct kube_informer *inf = t->data;
    if (inf->dead || !inf->req)
        return;
    uint64_t now = uv_now(kube_client_loop(inf->c)), due = 0;
    char why[160];
    if (!watch_stuck(inf, now, &due, why, sizeof(why))) {
        uv_timer_start(&inf->watchdog, on_watchdog, due > now ? due - now : 1, 0);
        return;
    }
    struct kube_client_stats *st = kube_client_counters(inf->c);
    st->watch_stalls++;
    st->reconnects++;
    if (inf->got_event)
        inf->backoff_ms = 0;
    uint64_t d = next_backoff(inf);
    LOG_WARN("kube",
             "watch %s: %s: connection abandoned, watching again from resourceVersion %s in "
             "%llu ms",
             inf->path, why, inf->rv ? inf->rv : "(none)", (unsigned long long)d);
    kube_req_abandon(inf->req);
    inf->req = NULL;
    schedule(inf, inf->streaming ? NEXT_LIST : NEXT_WATCH, d); /* a stream starts over */
    inf->streaming = false;
}

static void watchdog_arm(struct kube_informer *inf)
{
    uint64_t now = uv_now(kube_client_loop(inf->c)), due = now + 1;
    char why[160];
    watch_stuck(inf, now, &due, why, sizeof(why));
    uv_timer_start(&inf->watchdog, on_watchdog, due > now ? due - now : 1, 0);
}

/* A watch from the last resourceVersion, or (stream) a streaming list: a watch that first sends
 * every object as ADDED, then a BOOKMARK annotated INITIAL_EVENTS_END, then the changes
 * (client-go's reflector watchList: resourceVersion unset, so the state is at least as new as a
 * quorum read; sendInitialEvents=true, resourceVersionMatch=NotOlderThan, bookmarks). */
static void open_watch(struct kube_informer *inf, bool stream)
{
    enum inf_next again = stream ? NEXT_LIST : NEXT_WATCH;
    size_t cap = strlen(inf->path) + (inf->rv ? 3 * strlen(inf->rv) : 0) +
                 (inf->lsel ? 3 * strlen(inf->lsel) : 0) + (inf->fsel ? 3 * strlen(inf->fsel) : 0) +
                 200;
    char *q = malloc(cap);
    if (!q) {
        schedule(inf, again, next_backoff(inf));
        return;
    }
    uint32_t t = inf->watch_timeout ? inf->watch_timeout
                                    : 300 + (uint32_t)(kube_client_rand(inf->c) * 300.0);
    snprintf(q, cap, "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u", inf->path, t);
    if (stream) {
        inf->gen++;
        strcat(q, "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
    } else {
        strcat(q, "&resourceVersion=");
        kube_query_escape(q, cap, inf->rv ? inf->rv : "");
    }
    selectors(inf, q, cap);
    kube_framer_reset(&inf->fr);
    inf->got_event = false;
    inf->streaming = stream;
    if (kube_stream(inf->c, q, on_watch_data, on_watch_done, inf, &inf->req) != 0) {
        inf->streaming = false;
        schedule(inf, again, next_backoff(inf));
    } else {
        inf->watch_start_ms = inf->watch_rx_ms = uv_now(kube_client_loop(inf->c));
        inf->watch_s = t;
        watchdog_arm(inf);
    }
    free(q);
}

static void start_watch(struct kube_informer *inf)
{
    open_watch(inf, false);
}

static void on_timer(uv_timer_t *t)
{
    struct kube_informer *inf = t->data;
    if (inf->dead)
        return;
    if (inf->next == NEXT_LIST)
        start_list(inf);
    else
        start_watch(inf);
}

static void schedule(struct kube_informer *inf, enum inf_next next, uint64_t ms)
{
    if (inf->dead)
        return;
    inf->next = next;
    uv_timer_start(&inf->timer, on_timer, ms, 0);
}

/* A full list (a last page, or a streaming list's initial events) is applied: synthetic deletes
 * of the objects it did not hold, then SYNCED. */
static void list_applied(struct kube_informer *inf)
{
    for (size_t i = 0; i < inf->map.nb && !inf->dead; i++) {
        struct kent **p = &inf->map.b[i];
        while (*p && !inf->dead) {
            struct kent *e = *p;
            if (e->gen == inf->gen) {
                p = &e->next;
                continue;
            }
            cJSON *o = ghost(e);
            *p = e->next;
            kent_free(e);
            inf->map.n--;
            if (o)
                emit(inf, KUBE_DELETED, o);
            cJSON_Delete(o);
        }
    }
    if (inf->dead)
        return;
    inf->synced = true;
    inf->backoff_ms = 0;
    emit(inf, KUBE_SYNCED, NULL);
}

/* A paged list (or a 404) is applied: then the watch. */
static void list_complete(struct kube_informer *inf)
{
    list_applied(inf);
    if (!inf->dead && inf->absent) /* not served: looked for again, it may be installed later */
        schedule(inf, NEXT_LIST, ABSENT_RETRY_MS);
    else if (!inf->dead)
        start_watch(inf);
}

/* ---- list pages ------------------------------------------------------------------------------ */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* One past the closing quote of the string whose text starts at s[i] (after its opening quote),
 * or 0: the quote found by memchr ends it unless an odd run of backslashes precedes it (the byte
 * before the text is the opening quote, so a run never reaches back past it). */
static size_t str_end(const char *s, size_t n, size_t i)
{
    while (i < n) {
        const char *q = memchr(s + i, '"', n - i);
        if (!q)
            return 0;
        size_t j = (size_t)(q - s), k = j;
        while (k > i && s[k - 1] == '\\')
            k--;
        if (((j - k) & 1) == 0)
            return j + 1;
        i = j + 1;
    }
    return 0;
}

/* The bytes that matter between strings when skipping an object or array. */
static const unsigned char json_punct[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1};

size_t kube_json_end(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return 0;
    if (s[i] == '"')
        return str_end(s, n, i + 1);
    if (s[i] != '{' && s[i] != '[') {
        while (i < n && s[i] && !strchr(",}] \t\r\n", s[i]))
            i++;
        return i;
    }
    unsigned depth = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (!json_punct[ch]) {
            i++;
        } else if (ch == '"') {
            if (!(i = str_end(s, n, i + 1)))
                return 0;
        } else if (ch == '{' || ch == '[') {
            depth++;
            i++;
        } else if (--depth == 0) {
            return i + 1;
        } else {
            i++;
        }
    }
    return 0;
}

bool kube_list_scan(const char *s, size_t n, struct kube_list_page *pg)
{
    memset(pg, 0, sizeof(*pg));
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{')
        return false;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}')
        return true;
    for (;;) {
        size_t ke = i < n && s[i] == '"' ? kube_json_end(s, n, i) : 0;
        if (!ke)
            return false;
        const char *key = s + i + 1;
        size_t kl = ke - i - 2;
        i = skip_ws(s, n, ke);
        if (i >= n || s[i] != ':')
            return false;
        i = skip_ws(s, n, i + 1);
        size_t ve = kube_json_end(s, n, i);
        if (!ve || ve == i)
            return false;
        if (kl == 8 && memcmp(key, "metadata", 8) == 0) {
            pg->meta = s + i;
            pg->meta_len = ve - i;
        } else if (kl == 5 && memcmp(key, "items", 5) == 0) {
            pg->items = s + i;
            pg->items_len = ve - i;
        }
        i = skip_ws(s, n, ve);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            continue;
        }
        return i < n && s[i] == '}';
    }
}

/* Emits the items of one list page (the text of its items array), each parsed and freed in
 * turn. */
static void apply_items(struct kube_informer *inf, const char *s, size_t n)
{
    size_t i = skip_ws(s, n, 1); /* after '[' */
    while (i < n && s[i] != ']' && !inf->dead) {
        const char *end = NULL; /* where cJSON stopped; an item that is not JSON is scanned */
        cJSON *it = cJSON_ParseWithLengthOpts(s + i, n - i, &end, false);
        size_t e = it ? (size_t)(end - s) : kube_json_end(s, n, i);
        if (!e) {
            cJSON_Delete(it);
            break;
        }
        char key[512];
        const cJSON *m;
        bool known;
        if (!it) {
            LOG_WARN("kube", "list %s: list item is not JSON: skipped", inf->path);
        } else if (obj_key(inf, it, "list item", key, sizeof(key), &m)) {
            if (remember(inf, key, m, &known))
                emit(inf, known ? KUBE_MODIFIED : KUBE_ADDED, it);
            else
                LOG_ERROR("kube", "list %s: out of memory", inf->path);
        }
        cJSON_Delete(it);
        i = skip_ws(s, n, e);
        if (i < n && s[i] == ',')
            i = skip_ws(s, n, i + 1);
    }
}

/* Applies the held page, if any. */
static void flush_held(struct kube_informer *inf)
{
    char *items = inf->held;
    if (!items)
        return;
    inf->held = NULL;
    uv_idle_stop(&inf->apply);
    if (!inf->dead)
        apply_items(inf, items, inf->held_len);
    free(items);
}

static void on_apply(uv_idle_t *h)
{
    struct kube_informer *inf = h->data;
    uv_idle_stop(h);
    if (inf->dead)
        return;
    inf_enter(inf);
    flush_held(inf);
    inf_leave(inf);
}

static void on_list(void *ctx, const struct kube_resp *r)
{
    struct kube_informer *inf = ctx;
    inf->req = NULL;
    inf_enter(inf);
    flush_held(inf);
    if (inf->dead) {
        inf_leave(inf);
        return;
    }
    if (r->status == 410 || (r->status != 200 && inf->cont)) {
        LOG_INFO("kube", "list %s: %s: starting the list again", inf->path,
                 r->error ? r->error : "expired");
        bool paged = inf->cont != NULL;
        free(inf->cont);
        inf->cont = NULL;
        if (r->status == 410 && paged)
            start_list(inf);
        else
            schedule(inf, NEXT_LIST, next_backoff(inf));
        inf_leave(inf);
        return;
    }
    if (r->status == 404 && !inf->cont) {
        /* the API does not serve this resource (a CustomResourceDefinition not installed, or
         * removed): an empty list, in sync; the objects known are gone */
        if (!inf->absent)
            LOG_INFO("kube",
                     "list %s: not served (HTTP 404): treated as empty, listed again "
                     "every %d s",
                     inf->path, ABSENT_RETRY_MS / 1000);
        inf->absent = true;
        list_complete(inf);
        inf_leave(inf);
        return;
    }
    if (r->status != 200) {
        LOG_WARN("kube", "list %s: %s (HTTP %d, %u attempts)", inf->path,
                 r->error ? r->error : "failed", r->status, r->attempts);
        schedule(inf, NEXT_LIST, next_backoff(inf));
        inf_leave(inf);
        return;
    }
    if (inf->absent)
        LOG_INFO("kube", "list %s: served now", inf->path);
    inf->absent = false;
    struct kube_list_page pg;
    cJSON *meta = NULL;
    if (!kube_list_scan(r->body, r->len, &pg) || !pg.meta ||
        (pg.items && (pg.items[0] != '[' || pg.items[pg.items_len - 1] != ']')) ||
        !cJSON_IsObject(meta = cJSON_ParseWithLength(pg.meta, pg.meta_len))) {
        LOG_WARN("kube", "list %s: response is not a list object: retrying", inf->path);
        cJSON_Delete(meta);
        free(inf->cont);
        inf->cont = NULL;
        schedule(inf, NEXT_LIST, next_backoff(inf));
        inf_leave(inf);
        return;
    }
    const char *cont = str_at(meta, "continue");
    free(inf->cont);
    inf->cont = cont && *cont ? strdup(cont) : NULL;
    if (inf->cont) { /* the next page first; this one on the loop's next turn */
        start_list(inf);
        if (pg.items && (inf->held = malloc(pg.items_len + 1)) != NULL) {
            memcpy(inf->held, pg.items, pg.items_len);
            inf->held[pg.items_len] = '\0';
            inf->held_len = pg.items_len;
            uv_idle_start(&inf->apply, on_apply);
        } else if (pg.items) { /* out of memory for the copy: applied now, still in order */
            apply_items(inf, pg.items, pg.items_len);
        }
        cJSON_Delete(meta);
        inf_leave(inf);
        return;
    }
    if (pg.items)
        apply_items(inf, pg.items, pg.items_len);
    if (!inf->dead) {
        kube_client_counters(inf->c)->paged_lists++;
        set_rv(inf, str_at(meta, "resourceVersion"));
        list_complete(inf);
    }
    cJSON_Delete(meta);
    inf_leave(inf);
}

/* A streaming list's initial events are all in: its objects are the collection (synthetic
 * deletes of the others, SYNCED), and the same watch goes on with the changes. */
static void stream_applied(struct kube_informer *inf)
{
    inf->streaming = false; /* never absent: a resource not served is looked for with LISTs */
    kube_client_counters(inf->c)->streamed_lists++;
    list_applied(inf);
}

/* A streaming list ended before its initial events did (r: the watch's answer). A resource not
 * served (404) is an empty list, as for a paged one; a server that refuses the request's
 * parameters (a 4xx: the WatchList gate off answers 422, an older server refuses
 * resourceVersionMatch on a watch) is listed in pages from now on, as client-go's reflector falls
 * back to LIST; anything else (a cut, a 5xx, a 429, an ERROR event) streams again after a
 * backoff. */
static void stream_failed(struct kube_informer *inf, const struct kube_resp *r)
{
    inf->streaming = false;
    if (r->status == 404) {
        if (!inf->absent)
            LOG_INFO("kube",
                     "list %s: not served (HTTP 404): treated as empty, listed again every %d s",
                     inf->path, ABSENT_RETRY_MS / 1000);
        inf->absent = true;
        list_complete(inf);
        return;
    }
    if (r->status >= 400 && r->status < 500 && r->status != 410 && r->status != 429) {
        LOG_WARN("kube", "list %s: streaming list refused (HTTP %d: %s): listing in pages",
                 inf->path, r->status, r->error ? r->error : "");
        kube_client_counters(inf->c)->stream_refused++;
        inf->paged = true;
        inf->relist = false;
        start_list(inf);
        return;
    }
    inf->relist = false;
    uint64_t d = next_backoff(inf);
    LOG_WARN("kube",
             "list %s: streaming list ended before its initial events did (%s, HTTP %d): "
             "again in %llu ms",
             inf->path, r->error ? r->error : "cut", r->status, (unsigned long long)d);
    schedule(inf, NEXT_LIST, d);
}

static int on_frame(void *ctx, const char *text, size_t len)
{
    struct kube_informer *inf = ctx;
    cJSON *j = cJSON_ParseWithLength(text, len);
    const char *type = j ? str_at(j, "type") : NULL;
    const cJSON *obj = j ? cJSON_GetObjectItemCaseSensitive(j, "object") : NULL;
    if (!type || !cJSON_IsObject(obj)) {
        LOG_WARN("kube", "watch %s: malformed event skipped (%zu bytes)", inf->path, len);
        cJSON_Delete(j);
        return 0;
    }
    int rc = 0;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!strcmp(type, "BOOKMARK")) {
        const cJSON *ann = meta ? cJSON_GetObjectItemCaseSensitive(meta, "annotations") : NULL;
        const char *end = ann ? str_at(ann, INITIAL_EVENTS_END) : NULL;
        bool initial_end = end && !strcmp(end, "true");
        set_rv(inf, meta ? str_at(meta, "resourceVersion") : NULL);
        inf->got_event = true;
        /* a streaming list's end comes whether or not the server sends this type periodic
         * bookmarks: it does not hold the watch to the idle bound */
        inf->bookmarked |= !initial_end;
        kube_client_counters(inf->c)->bookmarks++;
        if (inf->streaming && initial_end)
            stream_applied(inf);
    } else if (!strcmp(type, "ERROR")) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        const char *msg = str_at(obj, "message");
        if (cJSON_IsNumber(code) && code->valueint == 410) {
            LOG_INFO("kube", "watch %s: %s: relisting", inf->path, msg ? msg : "expired");
            inf->relist = true;
        } else {
            LOG_WARN("kube", "watch %s: error event: %s", inf->path, msg ? msg : "(no message)");
        }
        rc = 1;
    } else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        char key[512];
        const cJSON *m;
        if (obj_key(inf, obj, "watch event", key, sizeof(key), &m)) {
            bool known;
            enum kube_event ev = type[0] == 'A'   ? KUBE_ADDED
                                 : type[0] == 'M' ? KUBE_MODIFIED
                                                  : KUBE_DELETED;
            if (ev == KUBE_DELETED)
                forget(inf, key);
            else if (!remember(inf, key, m, &known))
                LOG_ERROR("kube", "watch %s: out of memory", inf->path);
            if (!inf->streaming) /* initial events come in no order: only the end's version */
                set_rv(inf, str_at(m, "resourceVersion"));
            inf->got_event = true;
            kube_client_counters(inf->c)->watch_events++;
            emit(inf, ev, obj);
        }
    } else {
        LOG_WARN("kube", "watch %s: unknown event type skipped", inf->path);
    }
    cJSON_Delete(j);
    return rc || inf->dead;
}

static int on_watch_data(void *ctx, const char *data, size_t n)
{
    struct kube_informer *inf = ctx;
    struct sched_errbuf eb;
    inf->watch_rx_ms = uv_now(kube_client_loop(inf->c));
    inf_enter(inf);
    int rc = kube_framer_feed(&inf->fr, data, n, on_frame, inf, &eb);
    if (rc < 0)
        LOG_ERROR("kube", "watch %s: %s: reconnecting", inf->path, eb.msg);
    if (!inf_leave(inf))
        return 1;
    return rc != 0;
}

static void on_watch_done(void *ctx, const struct kube_resp *r)
{
    struct kube_informer *inf = ctx;
    inf->req = NULL;
    uv_timer_stop(&inf->watchdog);
    struct kube_client_stats *st = kube_client_counters(inf->c);
    if (inf->streaming) {
        stream_failed(inf, r);
        return;
    }
    if (inf->got_event)
        inf->backoff_ms = 0;
    if (inf->relist || r->status == 410 || r->status == 404) { /* 404: the CRD went away */
        inf->relist = false;
        st->relists++;
        free(inf->cont);
        inf->cont = NULL;
        start_list(inf);
        return;
    }
    st->reconnects++;
    if (r->status == 200) {
        LOG_DEBUG("kube", "watch %s: ended: watching again from %s", inf->path,
                  inf->rv ? inf->rv : "(none)");
        schedule(inf, NEXT_WATCH, REWATCH_MS);
        return;
    }
    uint64_t d = next_backoff(inf);
    LOG_WARN("kube", "watch %s: %s (HTTP %d): reconnecting in %llu ms", inf->path,
             r->error ? r->error : "failed", r->status, (unsigned long long)d);
    schedule(inf, NEXT_WATCH, d);
}

int kube_informer_new(struct kube_client *c, const struct kube_informer_opts *o,
                      kube_informer_fn *fn, void *ctx, struct kube_informer **out,
                      struct sched_errbuf *eb)
{
    if (!c || !o || !o->path || o->path[0] != '/' || strchr(o->path, '?') || !out)
        return sched_fail(eb, SCHED_EINVAL,
                          "informer: a client, a collection path starting with / (no query) and "
                          "an output are required");
    struct kube_informer *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return sched_fail(eb, SCHED_ENOMEM, "informer %s: out of memory", o->path);
    inf->c = c;
    inf->fn = fn;
    inf->ctx = ctx;
    inf->path = strdup(o->path);
    inf->fsel = o->field_selector && *o->field_selector ? strdup(o->field_selector) : NULL;
    inf->lsel = o->label_selector && *o->label_selector ? strdup(o->label_selector) : NULL;
    inf->page = o->page_size ? o->page_size : 500;
    inf->paged = o->paged;
    inf->watch_timeout = o->watch_timeout_s;
    kube_framer_init(&inf->fr, WATCH_MAX_OBJECT);
    if (!inf->path || (o->field_selector && *o->field_selector && !inf->fsel) ||
        (o->label_selector && *o->label_selector && !inf->lsel) || !kmap_grow(&inf->map)) {
        free(inf->path);
        free(inf->fsel);
        free(inf->lsel);
        kmap_free(&inf->map);
        free(inf);
        return sched_fail(eb, SCHED_ENOMEM, "informer %s: out of memory", o->path);
    }
    uv_timer_init(kube_client_loop(c), &inf->timer);
    inf->timer.data = inf;
    uv_timer_init(kube_client_loop(c), &inf->watchdog);
    inf->watchdog.data = inf;
    uv_idle_init(kube_client_loop(c), &inf->apply);
    inf->apply.data = inf;
    inf->open_handles = 3;
    start_list(inf);
    *out = inf;
    return 0;
}

static void on_inf_closed(uv_handle_t *h)
{
    struct kube_informer *inf = h->data;
    if (--inf->open_handles == 0)
        free(inf);
}

static void inf_release(struct kube_informer *inf)
{
    kmap_free(&inf->map);
    kube_framer_free(&inf->fr);
    free(inf->path);
    free(inf->fsel);
    free(inf->lsel);
    free(inf->rv);
    free(inf->cont);
    free(inf->held);
    inf->held = NULL;
    uv_close((uv_handle_t *)&inf->timer, on_inf_closed);
    uv_close((uv_handle_t *)&inf->watchdog, on_inf_closed);
    uv_close((uv_handle_t *)&inf->apply, on_inf_closed);
}

void kube_informer_free(struct kube_informer *inf)
{
    if (!inf || inf->dead)
        return;
    inf->dead = true;
    if (inf->req) {
        kube_req_cancel(inf->req);
        inf->req = NULL;
    }
    uv_timer_stop(&inf->timer);
    uv_timer_stop(&inf->watchdog);
    if (inf->depth == 0)
        inf_release(inf);
}

bool kube_informer_absent(const struct kube_informer *inf)
{
    return inf && inf->absent;
}

bool kube_informer_synced(const struct kube_informer *inf)
{
    return inf && inf->synced;
}

const char *kube_informer_rv(const struct kube_informer *inf)
{
    return inf && inf->rv ? inf->rv : "";
}
