/* sched/core/cel_re.c: RE2 patterns (CEL's matches()) on POSIX regcomp (see cel_re.h).
 *
 * One pass over the pattern writes its POSIX extended form into a buffer sized for the worst
 * case (an RE2 token becomes at most OUT_PER_IN bytes); bracket expressions are gathered as a
 * set of bytes and written back in an order POSIX reads unambiguously.
 */
#include "sched/core/cel_re.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_PER_IN 24   /* bytes written per pattern byte at most ("\w" -> "[0-9A-Z_a-z]") */
#define REPEAT_MAX 1000 /* RE2's largest repetition count */

#define S_SPACE "\t\n\f\r " /* RE2's \s (ASCII) */

struct tr {
    const char *p; /* the next pattern byte */
    char *out;
    size_t n;
    int q;      /* after a repetition operator: 1; after its non-greedy '?': 2; else 0 */
    bool atom;  /* something a repetition operator may follow was just written */
    int depth;  /* open groups */
    bool icase; /* a leading (?i) */
    struct sched_errbuf *eb;
};

static void put(struct tr *t, const char *s)
{
    size_t k = strlen(s);
    memcpy(t->out + t->n, s, k);
    t->n += k;
}

static void put_c(struct tr *t, char c)
{
    t->out[t->n++] = c;
}

/* A literal byte outside brackets. */
static void put_lit(struct tr *t, char c)
{
    if (strchr(".[]()*+?{}|^$\\", c))
        put_c(t, '\\');
    put_c(t, c);
}

static int refuse(struct tr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int refuse(struct tr *t, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sched_fail(t->eb, SCHED_EINVAL, "%s", msg);
}

static int hexval(char c)
{
    return isdigit((unsigned char)c)    ? c - '0'
           : isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10
                                        : -1;
}

/* \xHH or \x{H...} after the 'x' at t->p: an ASCII byte into *c. */
static int hex_escape(struct tr *t, char *c)
{
    long v = 0;
    int digits = 0;
    if (*t->p == '{') {
        for (t->p++; hexval(*t->p) >= 0 && v <= 0x10FFFF; t->p++, digits++)
            v = v * 16 + hexval(*t->p);
        if (*t->p != '}' || digits == 0)
            return refuse(t, "invalid escape sequence %s", "\\x{...}");
        t->p++;
    } else {
        for (; digits < 2 && hexval(*t->p) >= 0; t->p++, digits++)
            v = v * 16 + hexval(*t->p);
        if (digits < 2)
            return refuse(t, "invalid escape sequence %s", "\\x");
    }
    if (v < 1 || v > 0x7f)
        return refuse(t, "%s escapes outside ASCII (or NUL) are not supported", "\\x");
    *c = (char)v;
    return 0;
}

/* The byte an escape stands for when it is one (\t \n ..., \xHH, \ before punctuation): 1 with
 * *c set, 0 when it is no single byte, -1 refused (message set). t->p is after the backslash;
 * on 1 it is moved past the escape. */
static int escape_byte(struct tr *t, char *c)
{
    static const char ctl[] = "t\tn\nr\rf\fv\va\a";
    char e = *t->p;
    if (e == 0)
        return refuse(t, "trailing backslash at end of expression"), -1;
    const char *k = strchr(ctl, e);
    if (k && (k - ctl) % 2 == 0) {
        *c = k[1];
        t->p++;
        return 1;
    }
    if (e == 'x') {
        t->p++;
        return hex_escape(t, c) ? -1 : 1;
    }
    if ((unsigned char)e < 0x80 && !isalnum((unsigned char)e)) { /* RE2: itself */
        *c = e;
        t->p++;
        return 1;
    }
    if (e >= '1' && e <= '9')
        return refuse(t, "backreferences (\\%c) are not supported (RE2 has none)", e), -1;
    if (e == '0')
        return refuse(t, "octal escapes (%s) are not supported", "\\0"), -1;
    if (e == 'p' || e == 'P')
        return refuse(t, "Unicode classes (\\%c) are not supported", e), -1;
    return 0;
}

/* ---- bracket expressions ----------------------------------------------------------------- */

struct set {
    bool has[256];
    const char *cls[16]; /* POSIX class names kept as such */
    int n_cls;
};

static void set_range(struct set *s, unsigned lo, unsigned hi)
{
    for (unsigned b = lo; b <= hi; b++)
        s->has[b] = true;
}

static void set_chars(struct set *s, const char *chars)
{
    for (; *chars; chars++)
        s->has[(unsigned char)*chars] = true;
}

static void set_word(struct set *s)
{
    set_range(s, '0', '9');
    set_range(s, 'A', 'Z');
    set_range(s, 'a', 'z');
    s->has['_'] = true;
}

/* RE2's Perl class \d, \s or \w (lower case e) into s: ASCII digits, space characters, word
 * characters; outside brackets and inside them alike. */
static void set_perl(struct set *s, char e)
{
    if (e == 'd')
        set_range(s, '0', '9');
    else if (e == 's')
        set_chars(s, S_SPACE);
    else
        set_word(s);
}

/* [:name:] at t->p (after its '['), RE2's POSIX classes. */
static int set_class(struct tr *t, struct set *s)
{
    static const char *const names[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                        "lower", "print", "punct", "space", "upper", "xdigit"};
    const char *end = strstr(t->p + 1, ":]");
    size_t len = end ? (size_t)(end - (t->p + 1)) : 0;
    if (!end || t->p[1] == '^')
        return refuse(t, "%s: negated or unterminated POSIX class", "[:...:]");
    if (len == 4 && strncmp(t->p + 1, "word", 4) == 0) {
        set_word(s);
        t->p = end + 2;
        return 0;
    }
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if (strlen(names[k]) == len && strncmp(t->p + 1, names[k], len) == 0) {
            if (s->n_cls == (int)(sizeof(s->cls) / sizeof(s->cls[0])))
                return refuse(t, "too many POSIX classes in one bracket");
            s->cls[s->n_cls++] = names[k];
            t->p = end + 2;
            return 0;
        }
    return refuse(t, "invalid character class %s", "[:...:]");
}

/* One member's byte at t->p (a byte or an escape standing for one): 1, 0 a Perl class was added
 * instead, -1 refused. */
static int set_member(struct tr *t, struct set *s, char *c)
{
    if (*t->p != '\\') {
        *c = *t->p++;
        return 1;
    }
    t->p++;
    char e = *t->p;
    if (e == 'd' || e == 's' || e == 'w') {
        set_perl(s, e);
        t->p++;
        return 0;
    }
    if (e == 'D' || e == 'S' || e == 'W')
        return refuse(t, "negated classes (\\%c) inside brackets are not supported", e), -1;
    int r = escape_byte(t, c);
    if (r == 0)
        return refuse(t, "invalid escape sequence \\%c", e), -1;
    return r;
}

/* Writes the set so that POSIX reads it unambiguously: ']' first, runs of plain bytes, '^'
 * (never first), '-' last. */
static void set_write(struct tr *t, const struct set *s, bool neg)
{
    int members = 0;
    for (int b = 1; b < 256; b++)
        members += s->has[b];
    if (!neg && s->n_cls == 0 && members == 1 && s->has['^']) {
        put(t, "\\^");
        return;
    }
    put_c(t, '[');
    if (neg)
        put_c(t, '^');
    bool first = true;
    if (s->has[']']) {
        put_c(t, ']');
        first = false;
    }
    for (int b = 1; b < 256; b++) {
        if (!s->has[b] || b == ']' || b == '^' || b == '-')
            continue;
        int e = b;
        while (e + 1 < 256 && s->has[e + 1] && e + 1 != ']' && e + 1 != '^' && e + 1 != '-')
            e++;
        put_c(t, (char)b);
        if (e - b >= 2) {
            put_c(t, '-');
            put_c(t, (char)e);
        } else if (e > b) {
            put_c(t, (char)e);
        }
        b = e;
        first = false;
    }
    for (int k = 0; k < s->n_cls; k++) {
        put(t, "[:");
        put(t, s->cls[k]);
        put(t, ":]");
        first = false;
    }
    if (s->has['^']) {
        if (first && !neg) { /* '^' and '-' only: "-^" reads as both */
            put(t, "-^]");
            return;
        }
        put_c(t, '^');
    }
    if (s->has['-'])
        put_c(t, '-');
    put_c(t, ']');
}

/* A bracket expression at t->p (after its '['). */
static int bracket(struct tr *t)
{
    struct set s;
    memset(&s, 0, sizeof(s));
    bool neg = *t->p == '^';
    if (neg)
        t->p++;
    for (bool first = true; first || *t->p != ']'; first = false) {
        if (*t->p == 0)
            return refuse(t, "missing closing %s", "]");
        if (t->p[0] == '[' && t->p[1] == ':') {
            t->p++;
            if (set_class(t, &s))
                return SCHED_EINVAL;
            continue;
        }
        char lo, hi;
        int r = set_member(t, &s, &lo);
        if (r < 0)
            return SCHED_EINVAL;
        if (r == 0)
            continue;
        if (t->p[0] != '-' || t->p[1] == ']' || t->p[1] == 0) {
            s.has[(unsigned char)lo] = true;
            continue;
        }
        t->p++;
        if ((r = set_member(t, &s, &hi)) < 0)
            return SCHED_EINVAL;
        if (r == 0 || (unsigned char)hi < (unsigned char)lo)
            return refuse(t, "invalid character class range");
        set_range(&s, (unsigned char)lo, (unsigned char)hi);
    }
    t->p++;
    set_write(t, &s, neg);
    return 0;
}

/* ---- outside brackets -------------------------------------------------------------------- */

/* An escape outside brackets, t->p after the backslash. */
static int escape(struct tr *t)
{
    static const char *const anchors[] = {"A^", "z$", "b\\b", "B\\B"};
    char e = *t->p;
    if (e && strchr("dDsSwW", e)) { /* the class's bracket expression, or its negation */
        struct set s;
        memset(&s, 0, sizeof(s));
        set_perl(&s, (char)tolower((unsigned char)e));
        set_write(t, &s, isupper((unsigned char)e));
        t->p++;
        t->atom = true;
        return 0;
    }
    for (size_t k = 0; k < sizeof(anchors) / sizeof(anchors[0]); k++)
        if (e && anchors[k][0] == e) {
            put(t, anchors[k] + 1);
            t->p++;
            t->atom = e != 'A' && e != 'z';
            return 0;
        }
    if (e == 'Q') { /* literal text up to \E or the end */
        const char *end = strstr(++t->p, "\\E");
        size_t len = end ? (size_t)(end - t->p) : strlen(t->p);
        for (size_t k = 0; k < len; k++)
            put_lit(t, t->p[k]);
        t->p += len + (end ? 2 : 0);
        t->atom = len > 0;
        return 0;
    }
    char c;
    int r = escape_byte(t, &c);
    if (r < 0)
        return SCHED_EINVAL;
    if (r == 0)
        return refuse(t, "invalid escape sequence \\%c", e);
    put_lit(t, c);
    t->atom = true;
    return 0;
}

/* "(?" at t->p - 1: groups without capture, named groups, a leading (?i). */
static int group_ext(struct tr *t, bool leading)
{
    const char *p = t->p + 1; /* after "(?" */
    if (*p == ':') {
        t->p = p + 1;
        put_c(t, '(');
        t->depth++;
        return 0;
    }
    if (*p == 'P' || (*p == '<' && p[1] != '=' && p[1] != '!')) {
        p += *p == 'P' ? 1 : 0;
        if (*p++ != '<')
            return refuse(t, "invalid named group");
        const char *name = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (p == name || *p != '>')
            return refuse(t, "invalid named group");
        t->p = p + 1;
        put_c(t, '(');
        t->depth++;
        return 0;
    }
    if (*p == '=' || *p == '!' || *p == '<')
        return refuse(t, "lookarounds (%s) are not supported (RE2 has none)", "(?=, (?!, (?<=");
    if (leading && p[0] == 'i' && p[1] == ')') {
        t->icase = true;
        t->p = p + 2;
        return 0;
    }
    return refuse(t, "flags other than a leading (?i) are not supported");
}

/* '*', '+', '?' or a {n,m} already read as `op` (NUL-terminated). */
static int repeat(struct tr *t, const char *op)
{
    if (t->q == 1 && strcmp(op, "?") == 0) { /* non-greedy: the same answer for matches() */
        t->q = 2;
        return 0;
    }
    if (t->q)
        return refuse(t, "invalid nested repetition operator: %s", op);
    if (!t->atom)
        return refuse(t, "missing argument to repetition operator: %s", op);
    put(t, op);
    t->q = 1;
    return 0;
}

/* {n}, {n,} or {n,m} at t->p: true (and op filled, t->p past it) when it is a repetition. */
static bool counted(struct tr *t, char *op, size_t cap, long *lo, long *hi)
{
    const char *p = t->p + 1;
    char *end;
    if (!isdigit((unsigned char)*p))
        return false;
    *lo = strtol(p, &end, 10);
    *hi = *lo;
    p = end;
    if (*p == ',') {
        p++;
        *hi = -1;
        if (isdigit((unsigned char)*p)) {
            *hi = strtol(p, &end, 10);
            p = end;
        }
    }
    if (*p != '}' || (size_t)(p + 1 - t->p) >= cap)
        return false;
    memcpy(op, t->p, (size_t)(p + 1 - t->p));
    op[p + 1 - t->p] = 0;
    t->p = p + 1;
    return true;
}

static int translate(struct tr *t)
{
    const char *start = t->p;
    while (*t->p) {
        char c = *t->p;
        if (c != '*' && c != '+' && c != '?' && c != '{')
            t->q = 0;
        if (c == '\\') {
            t->p++;
            if (escape(t))
                return SCHED_EINVAL;
        } else if (c == '[') {
            t->p++;
            if (bracket(t))
                return SCHED_EINVAL;
            t->atom = true;
        } else if (c == '(' && t->p[1] == '?') {
            t->p++;
            if (group_ext(t, t->p - 1 == start))
                return SCHED_EINVAL;
            t->atom = false;
        } else if (c == '(' || c == '|') {
            put_c(t, c);
            t->depth += c == '(';
            t->p++;
            t->atom = false;
        } else if (c == ')') {
            if (t->depth-- == 0)
                return refuse(t, "unexpected %s", ")");
            put_c(t, c);
            t->p++;
            t->atom = true;
        } else if (c == '*' || c == '+' || c == '?') {
            t->p++;
            if (repeat(t, (char[]){c, 0}))
                return SCHED_EINVAL;
        } else if (c == '{') {
            char op[48];
            long lo, hi;
            if (!counted(t, op, sizeof(op), &lo, &hi)) { /* a literal '{' */
                t->q = 0;
                put(t, "\\{");
                t->p++;
                t->atom = true;
            } else if (lo > REPEAT_MAX || hi > REPEAT_MAX || (hi >= 0 && hi < lo)) {
                return refuse(t, "invalid repeat count: %s", op);
            } else if (repeat(t, op)) {
                return SCHED_EINVAL;
            }
        } else if (c == '.') {
            put(t, "[^\n]");
            t->p++;
            t->atom = true;
        } else {
            put_c(t, c); /* ^ $ ] } and plain bytes */
            t->p++;
            t->atom = c != '^' && c != '$';
        }
    }
    if (t->depth > 0)
        return refuse(t, "missing closing %s", ")");
    return 0;
}

int cel_re_compile(const char *re, regex_t *out, struct sched_errbuf *eb)
{
    size_t len = strlen(re);
    struct tr t = {.p = re, .eb = eb};
    t.out = malloc(len * OUT_PER_IN + 16);
    if (!t.out)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    int rc = translate(&t);
    if (rc == 0) {
        t.out[t.n] = 0;
        int r = regcomp(out, t.out, REG_EXTENDED | REG_NOSUB | (t.icase ? REG_ICASE : 0));
        if (r != 0) {
            char msg[128];
            regerror(r, out, msg, sizeof(msg));
            rc = sched_fail(eb, r == REG_ESPACE ? SCHED_ENOMEM : SCHED_EINVAL, "%s", msg);
        }
    }
    free(t.out);
    return rc;
}
