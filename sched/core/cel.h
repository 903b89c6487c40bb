/* sched/core/cel.h: the subset of CEL that DRA device selectors use (resource.k8s.io/v1
 * CELDeviceSelector), evaluated against one device.
 *
 * Owns: parsing and evaluating these expressions, with an error naming the column for anything
 * outside the subset (never a silent wrong answer):
 *   literals: "str" 'str' (CEL's one-character escapes; not \x \u \U or octal), raw r"str"
 *     r'str', integers, true, false; ( ) grouping
 *   device.driver; device.attributes["domain"].name and device.capacity["domain"].name (also
 *     ['domain'] and .name after the index); an attribute is a string, int, bool or version
 *     (semver), a capacity a quantity
 *   == != on equal types; < <= > >= on ints and strings; && || ! (short-circuit, like CEL)
 *   has(device.attributes["d"].name), has(device.capacity["d"].name)
 *   string: .lowerAscii(), .upperAscii(), .startsWith(s), .endsWith(s), .contains(s),
 *     .matches(re) (RE2 syntax as cel-go reads it, run on POSIX regexec: sched/core/cel_re.h)
 *   quantity("40Gi"), q.isGreaterThan(q), q.isLessThan(q), q.compareTo(q), q.asInteger()
 *   semver("1.2.3"), v.isGreaterThan(v), v.isLessThan(v), v.compareTo(v), v.major(),
 *     v.minor(), v.patch()
 * Not supported (compile error): macros (all, exists, map, filter), lists, `in`, ?:, doubles,
 * uints, cel.bind, optional syntax (.?x), includes(), attributes of list types.
 * As in Kubernetes, an attribute or capacity the device lacks is an evaluation error (guard it
 * with has()), and an unknown domain is an empty map.
 *
 * Must not touch: JSON, Kubernetes objects. Pure functions over struct cel_device.
 */
#ifndef SCHED_CORE_CEL_H
#define SCHED_CORE_CEL_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/err.h"

enum cel_type { CEL_NULL = 0, CEL_BOOL, CEL_INT, CEL_STR, CEL_VER, CEL_QTY };

/* One attribute or capacity of a device. domain "" is the driver's own (unqualified) name. */
struct cel_attr {
    const char *domain, *name;
    enum cel_type type; /* CEL_BOOL, CEL_INT, CEL_STR, CEL_VER (s), CEL_QTY (i: milli-units) */
    bool b;
    int64_t i;
    const char *s;
};

struct cel_device {
    const char *driver; /* also the domain of unqualified attribute names */
    const struct cel_attr *attrs;
    uint32_t n_attrs;
    const struct cel_attr *caps;
    uint32_t n_caps;
};

struct cel_prog;

/* Compiles; SCHED_EINVAL with "column N: ..." for a syntax error or an unsupported construct. */
int cel_compile(const char *expr, struct cel_prog **out, struct sched_errbuf *eb);
void cel_free(struct cel_prog *p);
/* Evaluates to a bool; SCHED_EINVAL with the reason (a missing attribute, a type mismatch, a
 * result that is not a bool). */
int cel_eval(const struct cel_prog *p, const struct cel_device *d, bool *out,
             struct sched_errbuf *eb);

#endif
