/* sched/core/res.c: the resource-name table and resource vectors (see res.h).
 *
 * Owns: the process-wide append-only name table. It is statically initialised with the four
 * well-known names, so no init call exists, and it lives in fixed static storage (no allocation,
 * nothing to free). Interning is not synchronised: drivers intern while reading input, before any
 * thread reads the table concurrently. Vector arithmetic saturates at the int64 limits instead of
 * overflowing.
 */
#include "sched/core/res.h"

#include <stddef.h>
#include <string.h>

#include "sched/core/quantity.h"

#define RES_PREFIX_MAX 253 /* DNS-1123 subdomain */
#define RES_PART_MAX   63  /* the name after the '/' */
#define RES_NAME_CAP   (RES_PREFIX_MAX + 1 + RES_PART_MAX + 1)
#define RES_QUOTE      160 /* bytes of escaped name quoted in an error message */

static struct {
    int n;
    char names[RES_MAX][RES_NAME_CAP];
} res_table = {
    RES_N_WELLKNOWN,
    {
        [RES_CPU] = "cpu",
        [RES_MEMORY] = "memory",
        [RES_PODS] = "pods",
        [RES_GPU] = RES_DEFAULT_DEVICE,
    },
};

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each starting and ending alphanumeric. */
static const char *check_prefix(const char *p, size_t n)
{
    if (n == 0)
        return "empty prefix before '/'";
    if (n > RES_PREFIX_MAX)
        return "prefix longer than 253 characters";
    size_t label = 0; /* length of the current label */
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '.') {
            if (label == 0 || p[i - 1] == '-')
                return "prefix must be a DNS subdomain (labels of a-z, 0-9 and '-', "
                       "starting and ending with a letter or digit)";
            label = 0;
        } else if (is_lower_alnum(c) || (c == '-' && label > 0)) {
            label++;
        } else {
            return "prefix must be a DNS subdomain (labels of a-z, 0-9 and '-', "
                   "starting and ending with a letter or digit)";
        }
    }
    if (label == 0 || p[n - 1] == '-')
        return "prefix must be a DNS subdomain (labels of a-z, 0-9 and '-', "
               "starting and ending with a letter or digit)";
    return NULL;
}

/* Qualified-name part: [A-Za-z0-9._-], starting and ending alphanumeric, at most 63 characters. */
static const char *check_part(const char *p, size_t n)
{
    if (n == 0)
        return "empty name";
    if (n > RES_PART_MAX)
        return "name longer than 63 characters";
    if (!is_alnum(p[0]) || !is_alnum(p[n - 1]))
        return "name must start and end with a letter or digit";
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return "name may contain only letters, digits, '-', '_' and '.'";
    }
    return NULL;
}

/* NULL when `name` is a valid Kubernetes qualified name, else the reason. */
static const char *check_name(const char *name)
{
    size_t len = strnlen(name, RES_NAME_CAP);
    if (len == 0)
        return "empty name";
    if (len >= RES_NAME_CAP)
        return "longer than 317 characters";
    const char *slash = memchr(name, '/', len);
    if (!slash)
        return check_part(name, len);
    if (memchr(slash + 1, '/', len - (size_t)(slash + 1 - name)))
        return "more than one '/'";
    const char *why = check_prefix(name, (size_t)(slash - name));
    return why ? why : check_part(slash + 1, len - (size_t)(slash + 1 - name));
}

int res_lookup(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < res_table.n; i++) {
        if (strcmp(res_table.names[i], name) == 0)
            return i;
    }
    return -1;
}

int res_intern(const char *name, int *id, struct sched_errbuf *eb)
{
    if (!name)
        return sched_fail(eb, SCHED_EINVAL, "invalid resource name: no string");
    int found = res_lookup(name);
    if (found < 0) {
        char q[RES_QUOTE];
        const char *why = check_name(name);
        if (why) {
            sched_quote(name, strlen(name), q, sizeof(q));
            return sched_fail(eb, SCHED_EINVAL, "invalid resource name \"%s\": %s", q, why);
        }
        if (res_table.n >= RES_MAX) {
            sched_quote(name, strlen(name), q, sizeof(q));
            return sched_fail(eb, SCHED_EFULL,
                              "cannot add resource \"%s\": the table is full (at most %d distinct "
                              "resource names)",
                              q, RES_MAX);
        }
        found = res_table.n;
        memcpy(res_table.names[found], name, strlen(name) + 1);
        res_table.n++;
    }
    if (id)
        *id = found;
    return 0;
}

/* An out-of-range id yields "?" so that callers can always print the result. */
const char *res_name(int id)
{
    if (id < 0 || id >= res_table.n)
        return "?";
    return res_table.names[id];
}

int res_check_name(const char *name, struct sched_errbuf *eb)
{
    if (!name)
        return sched_fail(eb, SCHED_EINVAL, "invalid resource name: no string");
    const char *why = check_name(name);
    if (!why)
        return 0;
    char q[RES_QUOTE];
    sched_quote(name, strlen(name), q, sizeof(q));
    return sched_fail(eb, SCHED_EINVAL, "invalid resource name \"%s\": %s", q, why);
}

int res_set_device(const char *name, struct sched_errbuf *eb)
{
    if (!name)
        return sched_fail(eb, SCHED_EINVAL, "invalid device resource name: no string");
    int found = res_lookup(name);
    if (found == RES_GPU)
        return 0;
    char q[RES_QUOTE];
    sched_quote(name, strlen(name), q, sizeof(q));
    if (found >= 0)
        return sched_fail(eb, SCHED_EINVAL,
                          "device resource \"%s\" is already known as an ordinary resource; the "
                          "device must be configured before input that uses it is read",
                          q);
    const char *why = check_name(name);
    if (why)
        return sched_fail(eb, SCHED_EINVAL, "invalid device resource name \"%s\": %s", q, why);
    memcpy(res_table.names[RES_GPU], name, strlen(name) + 1);
    return 0;
}

static struct {
    int n;                  /* kinds after the device */
    int ids[RES_KINDS_MAX]; /* [1..n]: resource ids; [0] = RES_GPU */
} res_kinds = {0, {RES_GPU}};

int res_set_kinds(const char *const *names, int n, struct sched_errbuf *eb)
{
    if (n < 0 || n >= RES_KINDS_MAX)
        return sched_fail(eb, SCHED_EINVAL, "%d device kinds: at most %d", n + 1, RES_KINDS_MAX);
    int ids[RES_KINDS_MAX] = {RES_GPU};
    for (int k = 0; k < n; k++) {
        int id;
        int rc = res_intern(names[k], &id, eb);
        if (rc)
            return rc;
        if (id < RES_N_WELLKNOWN) {
            char q[RES_QUOTE];
            sched_quote(names[k], strlen(names[k]), q, sizeof(q));
            return sched_fail(eb, SCHED_EINVAL, "device \"%s\": %s", q,
                              id == RES_GPU ? "listed twice" : "not a device resource");
        }
        for (int j = 1; j <= k; j++)
            if (ids[j] == id)
                return sched_fail(eb, SCHED_EINVAL, "device \"%s\" listed twice", names[k]);
        ids[k + 1] = id;
    }
    memcpy(res_kinds.ids, ids, sizeof(ids));
    res_kinds.n = n;
    return 0;
}

int res_kind_count(void)
{
    return 1 + res_kinds.n;
}

int res_kind_res(int kind)
{
    return kind >= 0 && kind <= res_kinds.n ? res_kinds.ids[kind] : -1;
}

int res_kind_of(const struct res_vec *v)
{
    for (int k = 1; k <= res_kinds.n; k++)
        if (v->v[res_kinds.ids[k]] > 0)
            return k;
    return 0;
}

int res_kinds_fold(struct res_vec *v, struct sched_errbuf *eb)
{
    int found = v->v[RES_GPU] > 0 ? 0 : -1;
    for (int k = 1; k <= res_kinds.n; k++) {
        if (v->v[res_kinds.ids[k]] <= 0)
            continue;
        if (found >= 0)
            return sched_fail(eb, SCHED_EINVAL,
                              "both %s and %s: one kind of accelerator per pod and per node",
                              res_name(res_kinds.ids[found]), res_name(res_kinds.ids[k]));
        found = k;
    }
    if (found > 0)
        v->v[RES_GPU] = v->v[res_kinds.ids[found]];
    return 0;
}

int res_count(void)
{
    return res_table.n;
}

int res_scale(int id)
{
    return id == RES_CPU ? 3 : 0;
}

int res_parse(int id, const char *quantity, int64_t *out, struct sched_errbuf *eb)
{
    if (id < 0 || id >= res_table.n)
        return sched_fail(eb, SCHED_EINVAL, "invalid resource id %d", id);
    struct sched_errbuf qe;
    int rc = qty_parse(quantity, res_scale(id), out, &qe);
    if (rc != 0)
        return sched_fail(eb, rc, "%s: %s", res_table.names[id], qe.msg);
    return 0;
}

bool res_fits(const struct res_vec *need, const struct res_vec *have)
{
    return res_first_short(need, have) < 0;
}

void res_add(struct res_vec *acc, const struct res_vec *x)
{
    for (int i = 0; i < res_table.n; i++) {
        int64_t a = acc->v[i], b = x->v[i];
        if (b > 0 && a > INT64_MAX - b)
            acc->v[i] = INT64_MAX;
        else if (b < 0 && a < INT64_MIN - b)
            acc->v[i] = INT64_MIN;
        else
            acc->v[i] = a + b;
    }
}

void res_sub(struct res_vec *acc, const struct res_vec *x)
{
    for (int i = 0; i < res_table.n; i++) {
        int64_t a = acc->v[i], b = x->v[i];
        if (b < 0 && a > INT64_MAX + b)
            acc->v[i] = INT64_MAX;
        else if (b > 0 && a < INT64_MIN + b)
            acc->v[i] = INT64_MIN;
        else
            acc->v[i] = a - b;
    }
}

int res_first_short(const struct res_vec *need, const struct res_vec *have)
{
    for (int i = 0; i < res_table.n; i++) {
        if (need->v[i] > have->v[i])
            return i;
    }
    return -1;
}
