/* sched/core/duration.c: the duration grammar (see duration.h). */
#include "sched/core/duration.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *unit;
    int64_t ms;
} dur_units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};

#define DUR_N_UNITS  5
#define DUR_TOO_LONG "duration too long (at most 3650d)"

static bool dur_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The unit at s[i..n): its index in dur_units, or -1. "ms" is tried before "m". */
static int dur_unit(const char *s, size_t i, size_t n)
{
    if (i + 1 < n && s[i] == 'm' && s[i + 1] == 's')
        return 4;
    for (int k = 0; i < n && k < 4; k++)
        if (s[i] == dur_units[k].unit[0])
            return k;
    return -1;
}

const char *dur_parse(const char *s, size_t n, int64_t *ms)
{
    if (!s || n == 0)
        return "empty duration";
    if (memchr(s, '\0', n))
        return "the duration contains a NUL character";
    if (s[0] == '-')
        return "negative duration";
    if (n == 1 && s[0] == '0') {
        *ms = 0;
        return NULL;
    }
    size_t i = 0;
    int last = -1; /* index of the previous unit */
    int64_t total = 0;
    while (i < n) {
        if (!dur_digit(s[i]))
            return "expected a number followed by a unit (ms, s, m, h, d), e.g. 90s, 10m, 1h30m";
        int64_t v = 0;
        for (; i < n && dur_digit(s[i]); i++) {
            if (v > DUR_MAX_MS)
                return DUR_TOO_LONG;
            v = v * 10 + (s[i] - '0');
        }
        if (i < n && s[i] == '.')
            return "fractions are not supported: write 1h30m, not 1.5h";
        int u = dur_unit(s, i, n);
        if (u < 0 && i == n && last < 0)
            return "missing unit: a bare number is not a duration, write 90s for 90 seconds";
        if (u < 0)
            return i < n ? "unknown unit (allowed: ms, s, m, h, d)"
                         : "missing unit (ms, s, m, h or d), e.g. 90s";
        if (u <= last)
            return "units must appear once each, largest first (d, h, m, s, ms): write 1h30m, "
                   "not 30m1h";
        last = u;
        i += strlen(dur_units[u].unit);
        if (v > DUR_MAX_MS / dur_units[u].ms)
            return DUR_TOO_LONG;
        total += v * dur_units[u].ms;
        if (total > DUR_MAX_MS)
            return DUR_TOO_LONG;
    }
    *ms = total;
    return NULL;
}

const char *dur_format(int64_t ms, char *buf, size_t cap)
{
    if (!cap)
        return buf;
    buf[0] = '\0';
    if (ms <= 0) {
        snprintf(buf, cap, "0");
        return buf;
    }
    size_t len = 0;
    for (int i = 1; i < DUR_N_UNITS && len + 1 < cap; i++) {
        if (ms >= dur_units[i].ms) {
            int k = snprintf(buf + len, cap - len, "%lld%s", (long long)(ms / dur_units[i].ms),
                             dur_units[i].unit);
            if (k < 0)
                break;
            len = len + (size_t)k < cap ? len + (size_t)k : cap - 1;
            ms %= dur_units[i].ms;
        }
    }
    return buf;
}
