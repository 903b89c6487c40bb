/* sched/core/err.c: error messages. Owns nothing but static strings. */
#include "sched/core/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *sched_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define SCHED_ERR_CASE(name, val, msg)                                                             \
    case (val):                                                                                    \
        return msg;
        SCHED_ERRNO_MAP(SCHED_ERR_CASE)
#undef SCHED_ERR_CASE
    default:
        return "unknown error";
    }
}

int sched_fail(struct sched_errbuf *eb, int err, const char *fmt, ...)
{
    if (eb) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(eb->msg, sizeof(eb->msg), fmt, ap);
        va_end(ap);
    }
    return err;
}
