/* sched/cmd/flags.c: the commands' table-driven flag parser and --help printer; see flags.h. */
#include "sched/cmd/flags.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/annot.h"

#define MAX_FLAGS 128 /* rows of one table (duplicate detection) */

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

int flags_duration(const char *v, double unit_ms, double *ms)
{
    char *end = NULL;
    if (*v >= '0' && *v <= '9') {
        double x = strtod(v, &end);
        if (!*end) {
            *ms = x * unit_ms;
            return 0;
        }
    }
    int64_t d = 0;
    if (annot_duration(v, &d) != 0)
        return -1;
    *ms = (double)d;
    return 0;
}

static bool is_end(const struct flag *f)
{
    return !f->name && !f->help;
}

static bool takes_value(const struct flag *f)
{
    return f->kind != FLAG_BOOL || f->arg != NULL;
}

/* Levenshtein distance, capped at 9 (names are short). */
static unsigned distance(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b);
    if (na > 40 || nb > 40)
        return 9;
    unsigned row[41];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= na; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= nb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb] > 9 ? 9 : row[nb];
}

static int unknown(const struct flag *flags, const char *arg, char *err, size_t n)
{
    size_t len = strcspn(arg, "=");
    const char *best = NULL;
    unsigned best_d = 3; /* at most two edits, or a prefix of one flag */
    for (const struct flag *f = flags; !is_end(f); f++) {
        if (!f->name || (f->attrs & FLAG_HIDDEN))
            continue;
        unsigned d = distance(arg, len, f->name);
        if (len >= 4 && strncmp(f->name, arg, len) == 0)
            d = 1;
        if (d < best_d) {
            best_d = d;
            best = f->name;
        }
    }
    if (best)
        return fail(err, n, "unknown flag '%.*s' (did you mean %s?)", (int)len, arg, best);
    return fail(err, n, "unknown flag '%.*s'", (int)len, arg);
}

static int store_u(const struct flag *f, void *dst, uint64_t v)
{
    if (f->size == sizeof(uint32_t))
        *(uint32_t *)dst = (uint32_t)v;
    else
        *(uint64_t *)dst = v;
    return 0;
}

/* Stores value v of flag f (named `as`, the spelling used) in opts; 0 or -1 with err. */
static int set(const struct flag *f, void *opts, const char *as, const char *v, char *err, size_t n)
{
    void *dst = (char *)opts + f->off;
    char *end = NULL;
    switch (f->kind) {
    case FLAG_BOOL:
        if (!v) {
            *(bool *)dst = true;
            return 0;
        }
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return fail(err, n, "%s '%s': expected true or false", as, v);
        *(bool *)dst = strcmp(v, "true") == 0;
        return 0;
    case FLAG_INT: {
        errno = 0;
        unsigned long long x = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
        if (!end || *end || errno || x < f->imin || x > f->imax) {
            if (f->imax == UINT64_MAX)
                return fail(err, n, "%s '%s': expected a whole number >= %llu", as, v,
                            (unsigned long long)f->imin);
            return fail(err, n, "%s '%s': expected a whole number from %llu to %llu", as, v,
                        (unsigned long long)f->imin, (unsigned long long)f->imax);
        }
        return store_u(f, dst, x);
    }
    case FLAG_DOUBLE: {
        double x = strtod(v, &end);
        if (!*v || *end || !(x >= f->min && x <= f->max))
            return fail(err, n, "%s '%s': expected a number from %.15g to %.15g%s%s", as, v, f->min,
                        f->max, f->unit ? " " : "", f->unit ? f->unit : "");
        *(double *)dst = x;
        return 0;
    }
    case FLAG_DURATION: {
        double ms = 0;
        if (flags_duration(v, f->unit_ms, &ms) != 0 || !(ms >= f->min * f->unit_ms) ||
            !(ms <= f->max * f->unit_ms))
            return fail(
                err, n,
                "%s '%s': expected a duration from %.15g to %.15g %s (a number, or with a unit: "
                "250ms, 90s, 10m, 2h)",
                as, v, f->min, f->max, f->unit ? f->unit : "");
        if (f->size == sizeof(uint32_t))
            *(uint32_t *)dst = (uint32_t)ms;
        else
            *(int64_t *)dst = (int64_t)ms;
        return 0;
    }
    case FLAG_STRING:
        *(const char **)dst = v;
        return 0;
    case FLAG_ENUM:
        for (int k = 0; f->choices[k]; k++)
            if (strcmp(v, f->choices[k]) == 0) {
                *(int *)dst = k;
                return 0;
            }
        {
            int at = snprintf(err, n, "%s '%s': expected one of", as, v);
            for (int k = 0; f->choices[k] && at > 0 && (size_t)at < n; k++)
                at += snprintf(err + at, n - (size_t)at, "%s %s", k ? "," : "", f->choices[k]);
        }
        return -1;
    case FLAG_REPEATED: {
        int *count = (int *)(void *)((char *)opts + f->count_off);
        if (*count >= f->max_count)
            return fail(err, n, "%s: at most %d of them", as, f->max_count);
        ((const char **)dst)[(*count)++] = v;
        return 0;
    }
    case FLAG_FUNC:
        return f->fn(v, opts, err, n);
    case FLAG_SECTION:
        break;
    }
    return fail(err, n, "%s: not a flag", as);
}

/* The row of arg ("--name", "--name=V", "-x", "-xV"), and where an attached value starts. */
static const struct flag *find(const struct flag *flags, const char *arg, const char **inline_v)
{
    *inline_v = NULL;
    for (const struct flag *f = flags; !is_end(f); f++) {
        if (!f->name)
            continue;
        if (arg[1] == '-') {
            size_t k = strlen(f->name);
            if (strncmp(arg, f->name, k) == 0 && (arg[k] == 0 || arg[k] == '=')) {
                *inline_v = arg[k] == '=' ? arg + k + 1 : NULL;
                return f;
            }
        } else if (f->short_name && arg[1] == f->short_name) {
            if (arg[2] && !takes_value(f))
                return NULL;
            *inline_v = arg[2] ? arg + 2 + (arg[2] == '=') : NULL; /* -oV, -o=V */
            return f;
        }
    }
    return NULL;
}

int flags_parse(const struct flag_parse *p, int argc, char **argv, char *err, size_t n)
{
    bool seen[MAX_FLAGS] = {false};
    bool flags_done = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!flags_done && strcmp(arg, "--") == 0) {
            flags_done = true;
            continue;
        }
        if (flags_done || arg[0] != '-' || arg[1] == 0) {
            if (!p->pos)
                return fail(err, n, "unexpected argument '%s'", arg);
            if (*p->n_pos >= p->max_pos)
                return fail(err, n, "too many arguments at '%s'", arg);
            p->pos[(*p->n_pos)++] = arg;
            continue;
        }
        const char *v = NULL;
        const struct flag *f = find(p->flags, arg, &v);
        if (!f)
            return unknown(p->flags, arg, err, n);
        char as[64];
        snprintf(as, sizeof(as), "%.*s", (int)strcspn(arg, "="), arg);
        if (f->short_name && arg[1] != '-')
            snprintf(as, sizeof(as), "-%c", f->short_name);
        size_t row = (size_t)(f - p->flags);
        if (row < MAX_FLAGS && seen[row] && f->kind != FLAG_REPEATED && !(f->attrs & FLAG_MANY))
            return fail(err, n, "flag %s given twice", as);
        if (row < MAX_FLAGS)
            seen[row] = true;
        if (takes_value(f) && !v) {
            if (i + 1 >= argc)
                return fail(err, n, "flag %s needs a value", as);
            v = argv[++i];
        }
        if (v && !*v && !(f->attrs & FLAG_EMPTY_OK))
            return fail(err, n, "flag %s needs a value (not an empty one)", as);
        if (set(f, p->opts, as, v, err, n) != 0)
            return -1;
        if (f->given)
            *(bool *)((char *)p->opts + f->given - 1) = true;
        if (f->attrs & FLAG_STOP)
            return 1;
    }
    return 0;
}

void flags_help(FILE *f, const struct flag *flags, int col)
{
    for (const struct flag *r = flags; !is_end(r); r++) {
        if (!r->name) {
            fprintf(f, "%s\n", r->help);
            continue;
        }
        if (r->attrs & FLAG_HIDDEN)
            continue;
        char left[96];
        int k = snprintf(left, sizeof(left), "  %s%c%s%s%s%s", r->short_name ? "-" : "",
                         r->short_name ? r->short_name : ' ', r->short_name ? ", " : "", r->name,
                         r->arg ? " " : "", r->arg ? r->arg : "");
        if (!r->short_name) /* no "-x, ": drop the placeholder */
            k = snprintf(left, sizeof(left), "  %s%s%s", r->name, r->arg ? " " : "",
                         r->arg ? r->arg : "");
        const char *h = r->help ? r->help : "";
        size_t line = strcspn(h, "\n");
        int pad = k + 2 <= col ? col - k : 2;
        fprintf(f, "%s%*s%.*s\n", left, pad, "", (int)line, h);
        for (h += line; *h == '\n'; h += line) {
            h++;
            line = strcspn(h, "\n");
            fprintf(f, "%*s%.*s\n", col, "", (int)line, h);
        }
    }
}
