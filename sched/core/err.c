/* sched/core/err.c: error messages. Owns nothing but static strings. */
#include "sched/core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* Copies s[0..len) into dst as printable text: '"', '\\' and bytes outside 0x20..0x7e are
 * escaped, and a long input is cut with "...". Error messages quote untrusted input this way. */
void sched_quote(const char *s, size_t len, char *dst, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[5];
        size_t k = 0;
        if (c == '"' || c == '\\') {
            esc[k++] = '\\';
            esc[k++] = (char)c;
        } else if (c < 0x20 || c > 0x7e) {
            esc[k++] = '\\';
            esc[k++] = 'x';
            esc[k++] = hex[c >> 4];
            esc[k++] = hex[c & 15];
        } else {
            esc[k++] = (char)c;
        }
        if (o + k + 4 > cap) { /* room for "..." and the NUL */
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(dst + o, esc, k);
        o += k;
    }
    dst[o] = '\0';
}
