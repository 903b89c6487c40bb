/* sched/core/log.c: one logfmt line per message on stderr.
 *
 * The message is logfmt's quoted value msg="...": '"' and '\' are escaped with a backslash,
 * newline, carriage return and tab as \n, \r, \t, other control bytes as \xNN, so a message
 * holding them (SQLite's, a peer's text, a file name) never ends the value or the line early.
 * The line is written with stderr's stream locked, so lines of threads do not interleave.
 */
#include "sched/core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum log_level log_threshold = LOG_LEVEL_WARN;

static void put_escaped(const char *s, FILE *f)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            putc_unlocked('\\', f);
            putc_unlocked((int)c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\r') {
            fputs("\\r", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\x%02x", c);
        } else {
            putc_unlocked((int)c, f);
        }
    }
}

void log_write(enum log_level level, const char *mod, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    char stack[1024];
    char *msg = stack;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(stack, sizeof(stack), fmt, ap);
    va_end(ap);
    if (n < 0)
        stack[0] = 0;
    else if ((size_t)n >= sizeof(stack) && (msg = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    if (!msg) /* out of memory: the first 1,023 bytes */
        msg = stack;
    flockfile(stderr);
    fprintf(stderr, "ts=%s level=%s mod=%s msg=\"", ts, names[level], mod);
    put_escaped(msg, stderr);
    fputs("\"\n", stderr);
    funlockfile(stderr);
    if (msg != stack)
        free(msg);
}
