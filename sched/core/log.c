/* sched/core/log.c: one logfmt line per message on stderr. */
#include "sched/core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

enum log_level log_threshold = LOG_LEVEL_WARN;

void log_write(enum log_level level, const char *mod, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "ts=%s level=%s mod=%s msg=\"", ts, names[level], mod);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\"\n", stderr);
}
