/* sched/core/cel.c: the DRA selector subset of CEL (see cel.h). A recursive-descent parser into
 * a small tree, evaluated per device. */
#include "sched/core/cel.h"

#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/cel_re.h"
#include "sched/core/quantity.h"

#define CEL_MAX_LEN  10240 /* Kubernetes' limit on a selector expression */
#define CEL_MAX_STR  512   /* longest string value built during evaluation */
#define CEL_MAX_DEEP 64    /* nesting depth */
/* Nodes one evaluation may visit: Kubernetes' runtime cost limit of a selector
 * (CELSelectorExpressionMaxCost, cel-go cost units; here one unit per node evaluated). The
 * longest expression evaluates each of its few thousand nodes once, so only a defect can reach
 * it; it bounds the time a device's selector takes whatever the expression. */
#define CEL_MAX_COST 1000000u

enum node_kind { N_LIT, N_DEVICE, N_MEMBER, N_INDEX, N_CALL, N_NOT, N_NEG, N_BIN, N_HAS };

struct node {
    enum node_kind kind;
    int col;          /* 1-based column, for messages */
    char op[3];       /* N_BIN: "==", "!=", "<", "<=", ">", ">=", "&&", "||" */
    char *name;       /* N_MEMBER field, N_CALL function or method */
    enum cel_type lt; /* N_LIT: CEL_BOOL, CEL_INT, CEL_STR */
    bool b;
    int64_t i;
    char *s;
    struct node *a, *b2, *c; /* operands: member/index/call receiver a, index or args b2, c */
    regex_t *re;             /* N_CALL matches() of a literal pattern: compiled once */
};

struct cel_prog {
    struct node *root;
};

struct parser {
    const char *src, *p;
    int depth;
    struct sched_errbuf *eb;
    int rc;
};

static int col_of(const struct parser *ps)
{
    return (int)(ps->p - ps->src) + 1;
}

static struct node *fail(struct parser *ps, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct node *fail(struct parser *ps, int col, const char *fmt, ...)
{
    if (ps->rc == 0) {
        char msg[300];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        ps->rc = sched_fail(ps->eb, SCHED_EINVAL, "column %d: %s", col, msg);
    }
    return NULL;
}

static void node_free(struct node *n)
{
    if (!n)
        return;
    node_free(n->a);
    node_free(n->b2);
    node_free(n->c);
    free(n->name);
    free(n->s);
    if (n->re)
        regfree(n->re);
    free(n->re);
    free(n);
}

static struct node *mk(struct parser *ps, enum node_kind k, int col)
{
    struct node *n = calloc(1, sizeof(*n));
    if (!n && ps->rc == 0)
        ps->rc = sched_fail(ps->eb, SCHED_ENOMEM, "out of memory");
    if (n) {
        n->kind = k;
        n->col = col;
    }
    return n;
}

static void skip(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static bool eat(struct parser *ps, const char *tok)
{
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0)
        return false;
    ps->p += n;
    return true;
}

static char *ident(struct parser *ps)
{
    skip(ps);
    const char *s = ps->p;
    if (!isalpha((unsigned char)*s) && *s != '_')
        return NULL;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    char *r = strndup(s, (size_t)(ps->p - s));
    if (!r && ps->rc == 0)
        ps->rc = sched_fail(ps->eb, SCHED_ENOMEM, "out of memory");
    return r;
}

static struct node *expr(struct parser *ps);

/* 'x' or "x" (CEL's one-character escapes: \a \b \f \n \r \t \v \\ \' \" \` \?), or a raw string
 * r'x' / R"x" (no escapes: how regular expressions are usually written). Triple-quoted strings are
 * not read. */
static struct node *string_lit(struct parser *ps)
{
    int col = col_of(ps);
    bool raw = *ps->p == 'r' || *ps->p == 'R';
    ps->p += raw;
    char q = *ps->p++;
    char buf[CEL_MAX_STR];
    size_t n = 0;
    while (*ps->p && *ps->p != q) {
        char ch = *ps->p++;
        if (ch == '\\' && !raw) {
            if (!*ps->p)
                break; /* a backslash at the end: unterminated, never read past the NUL */
            static const char esc[] = "a\ab\bf\fn\nr\rt\tv\v\\\\''\"\"``??"; /* CEL's */
            ch = *ps->p++;
            const char *k = ch ? strchr(esc, ch) : NULL;
            if (!k || (k - esc) % 2 != 0)
                return fail(ps, col, "string escape \\%s is not supported", (char[]){ch, 0});
            ch = k[1];
        }
        if (n + 1 >= sizeof(buf))
            return fail(ps, col, "string literal longer than %s characters", "511");
        buf[n++] = ch;
    }
    if (*ps->p != q)
        return fail(ps, col, "unterminated string");
    ps->p++;
    buf[n] = 0;
    struct node *nd = mk(ps, N_LIT, col);
    if (nd) {
        nd->lt = CEL_STR;
        if (!(nd->s = strdup(buf))) {
            node_free(nd);
            return fail(ps, col, "out of memory");
        }
    }
    return nd;
}

/* ( args ): at most 2 */
static bool args(struct parser *ps, struct node *call, int max)
{
    if (eat(ps, ")"))
        return true;
    int n = 0;
    do {
        struct node *a = expr(ps);
        if (!a)
            return false;
        if (n == max) {
            node_free(a);
            fail(ps, call->col, "%s: too many arguments", call->name);
            return false;
        }
        if (n++ == 0)
            call->b2 = a;
        else
            call->c = a;
    } while (eat(ps, ","));
    if (!eat(ps, ")")) {
        fail(ps, col_of(ps), "expected ')'");
        return false;
    }
    return true;
}

static struct node *primary(struct parser *ps)
{
    skip(ps);
    int col = col_of(ps);
    if (*ps->p == '"' || *ps->p == '\'' ||
        ((*ps->p == 'r' || *ps->p == 'R') && (ps->p[1] == '"' || ps->p[1] == '\'')))
        return string_lit(ps);
    if (isdigit((unsigned char)*ps->p)) {
        char *end;
        long long v = strtoll(ps->p, &end, 10);
        if (*end == '.' || *end == 'e' || *end == 'u' || *end == 'x')
            return fail(ps, col, "only decimal integer literals are supported");
        ps->p = end;
        struct node *n = mk(ps, N_LIT, col);
        if (n) {
            n->lt = CEL_INT;
            n->i = v;
        }
        return n;
    }
    if (eat(ps, "(")) {
        struct node *e = expr(ps);
        if (e && !eat(ps, ")")) {
            node_free(e);
            return fail(ps, col_of(ps), "expected ')'");
        }
        return e;
    }
    if (*ps->p == '[' || *ps->p == '{')
        return fail(ps, col, "list and map literals are not supported");
    char *id = ident(ps);
    if (!id)
        return ps->rc ? NULL : fail(ps, col, "unexpected '%s'", (char[]){*ps->p, 0});
    struct node *n = NULL;
    if (strcmp(id, "true") == 0 || strcmp(id, "false") == 0) {
        if ((n = mk(ps, N_LIT, col))) {
            n->lt = CEL_BOOL;
            n->b = id[0] == 't';
        }
    } else if (strcmp(id, "device") == 0) {
        n = mk(ps, N_DEVICE, col);
    } else if (strcmp(id, "has") == 0 || strcmp(id, "quantity") == 0 || strcmp(id, "semver") == 0) {
        if (!eat(ps, "("))
            n = fail(ps, col, "%s needs an argument list", id);
        else if ((n = mk(ps, strcmp(id, "has") == 0 ? N_HAS : N_CALL, col))) {
            n->name = id;
            id = NULL;
            if (!args(ps, n, 1) || !n->b2) {
                node_free(n);
                n = ps->rc ? NULL : fail(ps, col, "%s takes one argument", "function");
            }
        }
    } else {
        n = fail(ps, col, "identifier '%s' is not supported (only device, has, quantity, semver)",
                 id);
    }
    free(id);
    return n;
}

static const char *const methods[] = {
    "lowerAscii", "upperAscii", "startsWith", "endsWith", "contains", "matches", "isGreaterThan",
    "isLessThan", "compareTo",  "asInteger",  "major",    "minor",    "patch",   NULL};

/* matches() with a literal pattern: compiled with the expression (as cel-go compiles constant
 * patterns), so that a bad one is a compile error and a good one is compiled once. */
static bool literal_regex(struct parser *ps, struct node *m)
{
    if (strcmp(m->name, "matches") != 0 || !m->b2 || m->b2->kind != N_LIT || m->b2->lt != CEL_STR)
        return true;
    struct sched_errbuf eb;
    m->re = malloc(sizeof(*m->re));
    int rc = m->re ? cel_re_compile(m->b2->s, m->re, &eb) : SCHED_ENOMEM;
    if (rc == 0)
        return true;
    free(m->re);
    m->re = NULL;
    fail(ps, m->b2->col, "matches(): \"%s\": %s", m->b2->s,
         rc == SCHED_ENOMEM ? "out of memory" : eb.msg);
    return false;
}

static struct node *postfix(struct parser *ps)
{
    struct node *n = primary(ps);
    while (n) {
        skip(ps);
        int col = col_of(ps);
        if (eat(ps, "[")) {
            struct node *ix = mk(ps, N_INDEX, col);
            if (!ix) {
                node_free(n);
                return NULL;
            }
            ix->a = n;
            n = ix;
            if (!(ix->b2 = expr(ps)) || !eat(ps, "]")) {
                node_free(n);
                return fail(ps, col, "expected ']'");
            }
        } else if (eat(ps, ".")) {
            if (*ps->p == '?')
                return node_free(n), fail(ps, col,
                                          "optional field selection (.?) is not "
                                          "supported");
            char *id = ident(ps);
            if (!id) {
                node_free(n);
                return fail(ps, col, "expected a name after '.'");
            }
            skip(ps);
            bool call = *ps->p == '(';
            if (call) {
                bool known = false;
                for (int m = 0; methods[m] && !known; m++)
                    known = strcmp(methods[m], id) == 0;
                if (!known) {
                    node_free(n);
                    n = fail(ps, col, "method '%s' is not supported", id);
                    free(id);
                    return n;
                }
                ps->p++;
            }
            struct node *m = mk(ps, call ? N_CALL : N_MEMBER, col);
            if (!m) {
                free(id);
                node_free(n);
                return NULL;
            }
            m->name = id;
            m->a = n;
            n = m;
            if (call && (!args(ps, m, 1) || !literal_regex(ps, m))) {
                node_free(n);
                return NULL;
            }
        } else {
            break;
        }
    }
    return n;
}

static struct node *unary(struct parser *ps)
{
    skip(ps);
    int col = col_of(ps);
    if (++ps->depth > CEL_MAX_DEEP)
        return fail(ps, col, "nested deeper than %s levels", "64");
    struct node *n;
    if (*ps->p == '!' && ps->p[1] != '=') {
        ps->p++;
        struct node *x = unary(ps);
        n = x ? mk(ps, N_NOT, col) : NULL;
        if (n)
            n->a = x;
        else
            node_free(x);
    } else if (*ps->p == '-') {
        ps->p++;
        struct node *x = unary(ps);
        n = x ? mk(ps, N_NEG, col) : NULL;
        if (n)
            n->a = x;
        else
            node_free(x);
    } else {
        n = postfix(ps);
    }
    ps->depth--;
    return n;
}

static struct node *binary(struct parser *ps, int level);

/* level 0: ||, 1: &&, 2: relations */
static struct node *binary(struct parser *ps, int level)
{
    struct node *l = level == 2 ? unary(ps) : binary(ps, level + 1);
    static const char *const ops[3][7] = {
        {"||", NULL}, {"&&", NULL}, {"==", "!=", "<=", ">=", "<", ">", NULL}};
    while (l) {
        skip(ps);
        int col = col_of(ps);
        const char *op = NULL;
        for (int k = 0; ops[level][k] && !op; k++)
            if (strncmp(ps->p, ops[level][k], strlen(ops[level][k])) == 0)
                op = ops[level][k];
        if (!op) {
            if (level == 2 && (strncmp(ps->p, "in ", 3) == 0 || *ps->p == '?' || *ps->p == '+' ||
                               *ps->p == '*' || *ps->p == '/' || *ps->p == '%'))
                return node_free(l),
                       fail(ps, col, "operator '%s' is not supported", (char[]){*ps->p, 0});
            return l;
        }
        ps->p += strlen(op);
        struct node *r = level == 2 ? unary(ps) : binary(ps, level + 1);
        struct node *n = r ? mk(ps, N_BIN, col) : NULL;
        if (!n) {
            node_free(l);
            node_free(r);
            return NULL;
        }
        snprintf(n->op, sizeof(n->op), "%s", op);
        n->a = l;
        n->b2 = r;
        l = n;
        if (level == 2)
            break; /* relations do not chain */
    }
    return l;
}

static struct node *expr(struct parser *ps)
{
    return binary(ps, 0);
}

int cel_compile(const char *src, struct cel_prog **out, struct sched_errbuf *eb)
{
    *out = NULL;
    if (!src || strlen(src) > CEL_MAX_LEN)
        return sched_fail(eb, SCHED_EINVAL, "expression missing or longer than %d characters",
                          CEL_MAX_LEN);
    struct parser ps = {.src = src, .p = src, .eb = eb};
    struct node *root = expr(&ps);
    skip(&ps);
    if (root && *ps.p) {
        node_free(root);
        root = fail(&ps, col_of(&ps), "unexpected '%s'", (char[]){*ps.p, 0});
    }
    if (!root)
        return ps.rc ? ps.rc : sched_fail(eb, SCHED_EINVAL, "empty expression");
    struct cel_prog *p = malloc(sizeof(*p));
    if (!p) {
        node_free(root);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    p->root = root;
    *out = p;
    return 0;
}

void cel_free(struct cel_prog *p)
{
    if (p) {
        node_free(p->root);
        free(p);
    }
}

/* ---- evaluation -------------------------------------------------------------------------- */

enum vkind { V_BOOL, V_INT, V_STR, V_VER, V_QTY, V_DEVICE, V_ATTRS, V_CAPS, V_ADOM, V_CDOM };

struct val {
    enum vkind k;
    bool b;
    int64_t i;
    const char *s; /* V_STR, V_VER: points into the device, the tree or buf */
    char buf[CEL_MAX_STR];
};

struct ev {
    const struct cel_device *d;
    struct sched_errbuf *eb;
    uint64_t cost; /* nodes evaluated so far (CEL_MAX_COST at most) */
};

static const char *const vnames[] = {"bool",   "int", "string", "version", "quantity",
                                     "device", "map", "map",    "map",     "map"};

static int err(struct ev *e, const struct node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int err(struct ev *e, const struct node *n, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sched_fail(e->eb, SCHED_EINVAL, "column %d: %s", n->col, msg);
}

static int eval(struct ev *e, const struct node *n, struct val *v);

/* major.minor.patch[-pre][+build] */
static bool semver_parse(const char *s, long long v[3], const char **pre)
{
    char *end;
    for (int k = 0; k < 3; k++) {
        if (!isdigit((unsigned char)*s))
            return false;
        v[k] = strtoll(s, &end, 10);
        s = end;
        if (k < 2 && *s++ != '.')
            return false;
    }
    *pre = *s == '-' ? s + 1 : NULL;
    return *s == 0 || *s == '-' || *s == '+';
}

static int semver_cmp(const char *a, const char *b)
{
    long long x[3], y[3];
    const char *pa, *pb;
    if (!semver_parse(a, x, &pa) || !semver_parse(b, y, &pb))
        return strcmp(a, b);
    for (int k = 0; k < 3; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    if (!pa || !pb)
        return pa ? -1 : pb ? 1 : 0; /* a pre-release is lower than the release */
    return strcmp(pa, pb) < 0 ? -1 : strcmp(pa, pb) > 0;
}

static const struct cel_attr *lookup(const struct cel_device *d, bool caps, const char *dom,
                                     const char *name)
{
    const struct cel_attr *v = caps ? d->caps : d->attrs;
    uint32_t n = caps ? d->n_caps : d->n_attrs;
    for (uint32_t k = 0; k < n; k++) {
        const char *ad = v[k].domain && *v[k].domain ? v[k].domain : d->driver;
        if (strcmp(ad ? ad : "", dom) == 0 && strcmp(v[k].name, name) == 0)
            return &v[k];
    }
    return NULL;
}

static void from_attr(const struct cel_attr *a, struct val *v)
{
    v->k = a->type == CEL_BOOL  ? V_BOOL
           : a->type == CEL_INT ? V_INT
           : a->type == CEL_VER ? V_VER
           : a->type == CEL_QTY ? V_QTY
                                : V_STR;
    v->b = a->b;
    v->i = a->i;
    v->s = a->s ? a->s : "";
}

static int member(struct ev *e, const struct node *n, struct val *v, bool *present)
{
    struct val o;
    int rc = eval(e, n->a, &o);
    if (rc)
        return rc;
    if (o.k == V_DEVICE) {
        if (strcmp(n->name, "driver") == 0) {
            v->k = V_STR;
            v->s = e->d->driver ? e->d->driver : "";
            return 0;
        }
        if (strcmp(n->name, "attributes") == 0 || strcmp(n->name, "capacity") == 0) {
            v->k = n->name[0] == 'a' ? V_ATTRS : V_CAPS;
            return 0;
        }
        return err(e, n, "device has no field '%s'", n->name);
    }
    if (o.k == V_ADOM || o.k == V_CDOM) {
        const struct cel_attr *a = lookup(e->d, o.k == V_CDOM, o.s, n->name);
        if (present) {
            *present = a != NULL;
            return 0;
        }
        if (!a)
            return err(e, n, "no such key: %s (guard it with has())", n->name);
        from_attr(a, v);
        return 0;
    }
    return err(e, n, "a %s has no field '%s'", vnames[o.k], n->name);
}

static int call(struct ev *e, const struct node *n, struct val *v)
{
    struct val r, a;
    int rc;
    if (!n->a) { /* quantity("..."), semver("...") */
        if ((rc = eval(e, n->b2, &a)))
            return rc;
        if (a.k != V_STR)
            return err(e, n, "%s() takes a string", n->name);
        if (strcmp(n->name, "quantity") == 0) {
            struct sched_errbuf q;
            if (qty_parse(a.s, 3, &v->i, &q) != 0)
                return err(e, n, "quantity(): %s", q.msg);
            v->k = V_QTY;
            return 0;
        }
        long long parts[3];
        const char *pre;
        if (!semver_parse(a.s, parts, &pre))
            return err(e, n, "semver(): \"%s\" is not a semantic version", a.s);
        v->k = V_VER;
        snprintf(v->buf, sizeof(v->buf), "%s", a.s);
        v->s = v->buf;
        return 0;
    }
    if ((rc = eval(e, n->a, &r)))
        return rc;
    if (n->b2 && (rc = eval(e, n->b2, &a)))
        return rc;
    const char *m = n->name;
    bool one = n->b2 != NULL;
    if (r.k == V_STR && !one && (strcmp(m, "lowerAscii") == 0 || strcmp(m, "upperAscii") == 0)) {
        size_t k = 0;
        for (; r.s[k] && k + 1 < sizeof(v->buf); k++)
            v->buf[k] = (char)(m[0] == 'l' ? tolower((unsigned char)r.s[k])
                                           : toupper((unsigned char)r.s[k]));
        v->buf[k] = 0;
        v->k = V_STR;
        v->s = v->buf;
        return 0;
    }
    if (r.k == V_STR && one && a.k == V_STR) {
        size_t lr = strlen(r.s), la = strlen(a.s);
        v->k = V_BOOL;
        if (strcmp(m, "startsWith") == 0)
            v->b = strncmp(r.s, a.s, la) == 0;
        else if (strcmp(m, "endsWith") == 0)
            v->b = lr >= la && strcmp(r.s + lr - la, a.s) == 0;
        else if (strcmp(m, "contains") == 0)
            v->b = strstr(r.s, a.s) != NULL;
        else if (strcmp(m, "matches") == 0 && n->re) {
            v->b = regexec(n->re, r.s, 0, NULL, 0) == 0;
        } else if (strcmp(m, "matches") == 0) { /* a pattern made by the expression */
            regex_t re;
            struct sched_errbuf rb;
            if (cel_re_compile(a.s, &re, &rb) != 0)
                return err(e, n, "matches(): \"%s\": %s", a.s, rb.msg);
            v->b = regexec(&re, r.s, 0, NULL, 0) == 0;
            regfree(&re);
        } else
            return err(e, n, "string has no method %s() with a string", m);
        return 0;
    }
    if ((r.k == V_QTY || r.k == V_VER) && one && a.k == r.k) {
        int c = r.k == V_QTY ? (r.i > a.i) - (r.i < a.i) : semver_cmp(r.s, a.s);
        if (strcmp(m, "compareTo") == 0) {
            v->k = V_INT;
            v->i = c;
            return 0;
        }
        if (strcmp(m, "isGreaterThan") == 0 || strcmp(m, "isLessThan") == 0) {
            v->k = V_BOOL;
            v->b = m[2] == 'G' ? c > 0 : c < 0;
            return 0;
        }
    }
    if (r.k == V_QTY && !one && strcmp(m, "asInteger") == 0) {
        if (r.i % 1000)
            return err(e, n, "asInteger(): the quantity is not a whole number");
        v->k = V_INT;
        v->i = r.i / 1000;
        return 0;
    }
    if (r.k == V_VER && !one &&
        (strcmp(m, "major") == 0 || strcmp(m, "minor") == 0 || strcmp(m, "patch") == 0)) {
        long long parts[3];
        const char *pre;
        if (!semver_parse(r.s, parts, &pre))
            return err(e, n, "\"%s\" is not a semantic version", r.s);
        v->k = V_INT;
        v->i = parts[m[1] == 'a' ? 0 : m[1] == 'i' ? 1 : 2];
        return 0;
    }
    return err(e, n, "no matching overload for %s() on a %s", m, vnames[r.k]);
}

static int compare(struct ev *e, const struct node *n, struct val *v)
{
    struct val l, r;
    int rc = eval(e, n->a, &l);
    if (rc || (rc = eval(e, n->b2, &r)))
        return rc;
    bool eq = n->op[0] == '=' || n->op[0] == '!';
    if (l.k != r.k || l.k >= V_DEVICE || (!eq && (l.k == V_BOOL || l.k == V_VER || l.k == V_QTY)))
        return err(e, n, "no matching overload for '%s' between these types (%s)", n->op,
                   l.k == r.k ? vnames[l.k] : "different types");
    int c = l.k == V_BOOL  ? (l.b > r.b) - (l.b < r.b)
            : l.k == V_INT ? (l.i > r.i) - (l.i < r.i)
            : l.k == V_QTY ? (l.i > r.i) - (l.i < r.i)
            : l.k == V_VER ? semver_cmp(l.s, r.s)
                           : strcmp(l.s, r.s);
    v->k = V_BOOL;
    v->b = strcmp(n->op, "==") == 0   ? c == 0
           : strcmp(n->op, "!=") == 0 ? c != 0
           : strcmp(n->op, "<") == 0  ? c < 0
           : strcmp(n->op, "<=") == 0 ? c <= 0
           : strcmp(n->op, ">") == 0  ? c > 0
                                      : c >= 0;
    return 0;
}

static int eval(struct ev *e, const struct node *n, struct val *v)
{
    int rc;
    if (++e->cost > CEL_MAX_COST) /* as cel-go's CostLimit: the evaluation is refused */
        return err(e, n, "operation cancelled: actual cost limit exceeded");
    switch (n->kind) {
    case N_LIT:
        v->k = n->lt == CEL_BOOL ? V_BOOL : n->lt == CEL_INT ? V_INT : V_STR;
        v->b = n->b;
        v->i = n->i;
        v->s = n->s;
        return 0;
    case N_DEVICE:
        v->k = V_DEVICE;
        return 0;
    case N_MEMBER:
        return member(e, n, v, NULL);
    case N_INDEX: {
        struct val o, ix;
        if ((rc = eval(e, n->a, &o)) || (rc = eval(e, n->b2, &ix)))
            return rc;
        if ((o.k != V_ATTRS && o.k != V_CAPS) || ix.k != V_STR)
            return err(e, n,
                       "only device.attributes[\"domain\"] and device.capacity[\"domain\"] "
                       "can be indexed");
        v->k = o.k == V_ATTRS ? V_ADOM : V_CDOM;
        snprintf(v->buf, sizeof(v->buf), "%s", ix.s);
        v->s = v->buf;
        return 0;
    }
    case N_HAS: {
        bool present = false;
        if (n->b2->kind != N_MEMBER)
            return err(e, n, "has() takes a field selection (has(x.y))");
        if ((rc = member(e, n->b2, v, &present)))
            return rc;
        v->k = V_BOOL;
        v->b = present;
        return 0;
    }
    case N_CALL:
        return call(e, n, v);
    case N_NOT:
    case N_NEG:
        if ((rc = eval(e, n->a, v)))
            return rc;
        if (n->kind == N_NOT && v->k == V_BOOL)
            v->b = !v->b;
        else if (n->kind == N_NEG && v->k == V_INT)
            v->i = -v->i;
        else
            return err(e, n, "no matching overload for '%s' on a %s", n->kind == N_NOT ? "!" : "-",
                       vnames[v->k]);
        return 0;
    case N_BIN:
        if (n->op[0] == '&' || n->op[0] == '|') {
            /* CEL's commutative logic: an error on one side is absorbed when the other side
             * decides (false && error = false, true || error = true) */
            struct val l, r;
            int lrc = eval(e, n->a, &l);
            bool decide = n->op[0] == '|';
            if (lrc == 0 && l.k == V_BOOL && l.b == decide) {
                *v = l;
                return 0;
            }
            /* when the left side failed, its message stays in e->eb: the right side's goes
             * elsewhere (evaluating the left again to restore it doubled the work per level:
             * exponential in the nesting of such operators) */
            struct sched_errbuf keep, *eb = e->eb;
            if (lrc && eb)
                e->eb = &keep;
            int rrc = eval(e, n->b2, &r);
            e->eb = eb;
            if (rrc == 0 && r.k == V_BOOL && r.b == decide) {
                *v = r;
                return 0;
            }
            if (lrc || rrc)
                return lrc ? lrc : rrc;
            if (l.k != V_BOOL || r.k != V_BOOL)
                return err(e, n, "no matching overload for '%s' (operands must be bool)", n->op);
            v->k = V_BOOL;
            v->b = !decide;
            return 0;
        }
        return compare(e, n, v);
    }
    return err(e, n, "internal: unknown node");
}

int cel_eval(const struct cel_prog *p, const struct cel_device *d, bool *out,
             struct sched_errbuf *eb)
{
    struct ev e = {.d = d, .eb = eb};
    struct val v;
    int rc = eval(&e, p->root, &v);
    if (rc)
        return rc;
    if (v.k != V_BOOL)
        return sched_fail(eb, SCHED_EINVAL, "the expression is a %s, not a bool", vnames[v.k]);
    *out = v.b;
    return 0;
}
