/* sched/http/server_int.h: what the HTTP server's files share (server.c: connections and
 * answers; routes.c: the route table and authorisation; reads.c: the reads run on workers).
 * Not for other modules.
 */
#ifndef SCHED_HTTP_SERVER_INT_H
#define SCHED_HTTP_SERVER_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "config/file.h"
#include "sched/http/server.h"
#include "store/views.h"

/* Read-only connections for the API's reads: libuv's default thread pool size. */
#define HTTP_READERS 4

struct token {
    char *path;
    struct stat
        st;      /* of the file when it was read (or failed to be: not re-read until it changes) */
    bool have;   /* st is set; len == 0 when that read failed */
    bool warned; /* "cannot stat" logged since the last read */
    char value[CONFIG_TOKEN_MAX + 1]; /* config_token_read: longer tokens are refused, never cut */
    size_t len;
};

struct http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    bool listening, stopping;
    int port;
    struct http_limits lim; /* every field set (defaults applied) */
    uint32_t n_conns;       /* open connections, probe-only ones included */
    uint32_t n_probe;       /* probe-only connections open */
    uint64_t queued;        /* bytes of answers handed to libuv and not yet written (every
                               connection); at most lim.max_queued, plus answers of at most
                               HTTP_SMALL_ANSWER bytes, or one larger answer alone */
    unsigned n_snapshots;   /* snapshot answers being built or queued: at most lim.max_snapshots */
    uv_tcp_t spare;         /* accepts and closes a connection there is no memory for */
    bool spare_busy;        /* spare is closing */
    bool accept_stalled;    /* a connection waits, unaccepted, for the spare */
    unsigned refused;       /* connections closed for want of memory (tests) */
    unsigned test_fail_conns; /* tests: the next connections' allocations fail */
    unsigned n_reads;         /* reads queued on workers */
    struct conn *conns;
    unsigned pending; /* handles and work items not yet finished */
    struct http_provider prov;
    struct token wtok, rtok;
    uv_mutex_t mu; /* guards readers_ready, next_reader, loads and built (microseconds) */
    /* large reads (http__big_read) are built one at a time: big_running while one is queued on
     * a worker or built; the others wait here, on the loop, in order (server.c read_start), so
     * that they hold no worker meanwhile */
    bool big_running;
    struct http_work *big_head, *big_tail;
    atomic_uint big_waiting; /* reads in that line (the workers read it: reads.c trim) */
    /* Reads (reads.c) run on libuv's workers, each on a read-only connection of its own taken
     * from `readers`: in WAL mode a read never waits for the scheduler's commits nor for the
     * other reads; each answers from the queries its route needs (store_read_doc). */
    bool readers_ready; /* the readers' mutexes exist */
    dev_t checked_dev;  /* the file a reader opened with every check (PRAGMA quick_check) */
    ino_t checked_ino;  /* the other readers open it STORE_CHECKED; 0: none yet */
    unsigned next_reader;
    struct http_reader {
        uv_mutex_t mu;    /* held while a read uses st */
        struct store *st; /* opened at its first read; closed after an error (reopened) */
        dev_t dev;        /* the file st has open: reopened when the path names another one */
        ino_t ino;        /* (a standby's adopted snapshot renamed over it, --rebuild-store) */
    } readers[HTTP_READERS];
    atomic_bool written; /* a write went through this server (reads query the database anew each
                            time, so they see it without this) */
    unsigned long long loads; /* reads run against the database so far (tests) */
    unsigned long long built; /* JSON documents built by those reads (tests) */
    struct http_metrics *own;
    struct http_metric *m_requests;
    struct http_metric *m_queued; /* gauge: `queued` */
};

/* A list page or explanation of more items than this is a large read (http__big_read) */
#define HTTP_BIG_ITEMS  1000
/* A large read's answer of at least this many bytes (its cJSON tree took about eight times
 * that), with no other large read waiting, gives the allocator's free memory back to the system
 * once printed (reads.c trim): about 5,000 jobs. malloc_trim holds the arena's lock meanwhile
 * (7-12 ms with 100k live small objects), which the loop's allocations wait for: smaller answers
 * leave it to the allocator's own trimming, and a line of large reads trims once, after its
 * last (the next one would reuse the memory). */
#define HTTP_TRIM_BYTES (1024 * 1024)

enum view {
    V_QUOTA,
    V_QUEUES,
    V_QUEUE,
    V_JOBS,
    V_EXPLAIN,
    V_TOP,
    V_RESERVATIONS,
    V_METRICS,
    V_SNAPSHOT
};

struct http_work {
    enum view v;
    char *arg;
    bool all;
    uint32_t limit;      /* explain: decisions shown */
    uint32_t page_limit; /* list routes: items per page, 0 = all */
    char *cont;          /* list routes: the continue token, or NULL */
    /* connection bookkeeping (server.c) */
    uv_work_t req;
    struct conn *conn;
    struct http_server *srv;
    struct http_response resp;
    char method[8];
    struct http_work *next_big; /* the next large read waiting (server.c) */
    bool big;                   /* a whole list counted longer than HTTP_BIG_ITEMS (reads.c) */
    bool again;                 /* ... by this run, which built nothing: queued again */
    bool in_line;               /* holds the large reads' turn (server.c big_running) */
};

/* Whether a read builds a large answer (reads.c): built one at a time. A whole list (no
 * ?limit) is not, until a first run counted more than HTTP_BIG_ITEMS items (w->big). */
bool http__big_read(const struct http_work *w);
/* http_request_work for the server's workers: a whole list found large answers nothing and
 * sets w->again (server.c queues it in the large reads' line). */
void http__request_try(struct http_server *s, struct http_work *w, struct http_response *resp);

/* A JSON answer (doc is consumed; 500 when it is NULL); an error answer
 * {"error":{"code","message"}}. */
void http__resp_json(struct http_response *r, int status, cJSON *doc);
void http__resp_error(struct http_response *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Closes the readers' connections (server teardown; no read in flight). */
void http__readers_free(struct http_server *s);
/* The value of a hex digit, -1 for another character. */
int http__hexval(char c);

#endif
