/* sched/cmd/gangctl.h: what the pieces of gangctl share (internal to the command).
 *
 * gangctl.c: the command line and the offline source (store/views.h); gangctl_util.c: output
 * helpers (units, tables, JSON and YAML); gangctl_show.c: one renderer per tenant command;
 * gangctl_remote.c: the scheduler's HTTP API through libcurl.
 *
 * Must not touch: the database's content (read-only), scheduling, the cluster.
 */
#ifndef SCHED_CMD_GANGCTL_H
#define SCHED_CMD_GANGCTL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "sched/cmd/flags.h"
#include "sched/core/device.h"

#define EXIT_NOTFOUND 1
#define EXIT_USAGE    2
#define EXIT_DENIED   3  /* 401 or 403 from the server */
#define DEFAULT_LIMIT 50 /* explain: decisions shown by default */

#ifndef GANGSCHED_VERSION
#define GANGSCHED_VERSION "0.1.0"
#endif

/* "gangctl", or "kubectl gang" when run through the kubectl plugin link. */
extern const char *prog;

/* ---- memory (exit 2 with a message when out of memory) ---- */
void die_oom(void) __attribute__((noreturn));
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Grows *p (elements of size sz) so that index n fits. */
void grow(void **p, size_t *cap, size_t n, size_t sz);
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0), nonnull(1)));
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool str_eq(const char *a, const char *b);

/* ---- output settings ---- */
enum out_fmt { OUT_TABLE = 0, OUT_WIDE, OUT_JSON, OUT_YAML };
extern enum out_fmt out_fmt;
extern bool use_color;
extern bool no_headers; /* --no-headers: tables without their header line */
/* Where the document came from, for -o wide's last line. */
extern const char *source_kind;
extern const char *source_name;

enum color { C_NONE = 0, C_BOLD, C_RED, C_GREEN, C_YELLOW, C_CYAN, C_DIM };
const char *color_seq(enum color c);
enum color state_color(const char *state);

/* ---- human units ---- */
/* The database's accelerator (store_device()): its resource name, unit word ("GPU", "NPU") and
 * column header ("GPUS", "NPUS"); set_device() once the database is open. */
extern char gpu_resource[320];
extern char gpu_unit[DEVICE_UNIT_MAX];
extern char gpus_col[DEVICE_UNIT_MAX + 1];
void set_device(const char *resource, const char *unit);
bool is_gpu(const char *resource);
/* A resource amount in base units, for humans: "64 GPU", "16Gi", "500m". */
void fmt_amount(char *buf, size_t n, const char *resource, int64_t v);
/* As fmt_amount; STORE_NO_LIMIT prints "none". */
void fmt_limit(char *buf, size_t n, const char *resource, int64_t v);
/* A duration in milliseconds: "45s", "12m30s", "2h05m", "3d04h"; "-" when absent. */
void fmt_dur(char *buf, size_t n, int64_t ms);
/* A time of the driver's clock in milliseconds: UTC, or [Dd]HH:MM:SS from the trace's start. */
void fmt_time(char *buf, size_t n, int64_t ms);
/* A number as cJSON prints it (shortest of %.15g and %.17g that reads back). */
void fmt_number(char *buf, size_t n, double v);

/* ---- aligned tables ---- */
struct table {
    int ncol;
    const char *const *hdr;
    unsigned right; /* bit i: column i aligned right */
    char **cell;
    unsigned char *color;
    size_t n, cap;
};
void tbl_init(struct table *t, int ncol, const char *const *hdr, unsigned right);
/* Appends a cell; control bytes are replaced so that text never moves the terminal's cursor. */
void tbl_cell(struct table *t, enum color c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tbl_print(FILE *f, const struct table *t);
void tbl_free(struct table *t);
/* Ends a command's table: prints it (or `none` when `empty`), frees it, prints the database's
 * time when `now`, frees the document. Returns the command's exit code, 0. */
int tbl_finish(struct table *t, cJSON *doc, bool empty, const char *none, bool now);

/* ---- documents ---- */
/* Prints a document as JSON or YAML (the -o setting) and frees it; returns the exit code. */
int emit_doc(cJSON *doc);
const cJSON *jget(const cJSON *o, const char *key);
const char *gstr(const cJSON *o, const char *key);
/* A number as int64 (saturated), `absent` when missing or null. */
int64_t gint(const cJSON *o, const char *key, int64_t absent);
double gnum(const cJSON *o, const char *key, double absent);
bool gbool(const cJSON *o, const char *key);
const char *or_dash(const char *s);
/* -o wide: the source and the latest time of the document. */
void print_now(const cJSON *doc);

#define EACH(it, arr)                                                                              \
    for (const cJSON *it = cJSON_IsArray(arr) ? (arr)->child : NULL; it; it = it->next)

/* ---- the command line ---- */
struct args {
    const char *db, *server, *token_file, *queue, *user;
    bool all, help, no_color, server_flag, have_limit, version, watch, no_headers;
    int out_fmt; /* -o: enum out_fmt */
    uint32_t limit;
    int64_t watch_ms; /* --watch-interval, in ms: 0 = the default, 2 s */
    double watch_s;   /* the same in seconds */
    const char *pos[8];
    int n_pos;
};

/* The flags (sched/cmd/flags.h), into struct args: gangctl --help, the parser and the shell
 * completions read this one table. */
extern const struct flag gangctl_flags[];

/* The commands' help: name, synopsis, text (gangctl COMMAND --help, the man page, the shell
 * completions). */
struct cmd_help {
    const char *name, *synopsis, *summary, *text;
};
extern const struct cmd_help gangctl_helps[];
extern const size_t gangctl_n_helps;
/* gangctl_complete.c: the completion script of `shell` ("bash", "zsh") on f; -1 for another. */
int gangctl_completion(FILE *f, const char *shell);
/* kubectl's plugin completion protocol: run as kubectl_complete-gang WORD... (the last one being
 * completed); prints candidates and Cobra's directive line. Returns the exit code. */
int gangctl_complete_words(FILE *f, int argc, char **argv);

/* Renders one tenant command's document (and frees it); returns the exit code. */
int show(cJSON *doc, const char *cmd, const struct args *a);

/* ---- the scheduler's HTTP API ---- */
struct remote {
    const char *server; /* base URL, e.g. http://127.0.0.1:8080 */
    char *token;        /* bearer token, or NULL */
};
/* The token: --token-file FILE (its first line), else $GANGSCHED_TOKEN. 0 or an exit code. */
int load_token(const char *file, char **out);
/* A tenant command against the API: the same documents as offline, the same renderers. */
int remote_read(const struct remote *r, const struct args *a);
/* The operator commands: one write each; prints the server's message (or the document). */
int remote_write(const struct remote *r, const struct args *a);

#endif
