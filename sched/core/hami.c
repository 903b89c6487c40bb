/* sched/core/hami.c: HAMi's wire format for shared GPUs (see hami.h).
 *
 * Formats, as HAMi's docs/develop/protocol.md gives them:
 *   node register   {uuid},{split},{mem MiB},{cores},{type},{numa},{healthy}[,{index},{mode}]:...
 *   pod allocation  {uuid},{type keyword},{mem MiB},{cores}:  per device, ';' after each container
 * Fields are split on ',' ':' ';' only; a UUID or type never contains them (HAMi writes them with
 * the same separators). Numbers are decimal, without sign for counts.
 */
#include "sched/core/hami.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sched/core/bits.h"

#define HAMI_FIELDS_OLD 7
#define HAMI_FIELDS_NEW 9

/* A field: s[0..n). */
struct hami_field {
    const char *s;
    size_t n;
};

/* Splits item[0..len) at ',' into at most max fields; returns the count (max + 1 when more). */
static uint32_t split_fields(const char *item, size_t len, struct hami_field *f, uint32_t max)
{
    uint32_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && item[i] != ',')
            continue;
        if (k == max)
            return max + 1;
        f[k++] = (struct hami_field){item + start, i - start};
        start = i + 1;
    }
    return k;
}

/* Decimal integer in [lo, hi], at most 18 digits (no overflow). */
static bool field_int(struct hami_field f, int64_t lo, int64_t hi, int64_t *out)
{
    if (f.n == 0 || f.n > 18)
        return false;
    int64_t v = 0;
    size_t i = 0;
    bool neg = f.s[0] == '-';
    if (neg)
        i = 1;
    if (i == f.n)
        return false;
    for (; i < f.n; i++) {
        if (f.s[i] < '0' || f.s[i] > '9')
            return false;
        v = v * 10 + (f.s[i] - '0');
    }
    v = neg ? -v : v;
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool field_eq(struct hami_field f, const char *word)
{
    return strlen(word) == f.n && memcmp(f.s, word, f.n) == 0;
}

static int field_copy(struct hami_field f, char *dst, size_t cap)
{
    if (f.n == 0 || f.n >= cap)
        return -1;
    memcpy(dst, f.s, f.n);
    dst[f.n] = '\0';
    return 0;
}

static int bad(struct sched_errbuf *eb, const char *what, uint32_t dev, const char *field,
               struct hami_field f)
{
    char q[80];
    sched_quote(f.s, f.n, q, sizeof(q));
    return sched_fail(eb, SCHED_EINVAL, "%s: device %u: %s \"%s\": %s", HAMI_NODE_REGISTER, dev + 1,
                      field, q, what);
}

/* One device of the register, fields already split. */
static int parse_dev(const struct hami_field *f, uint32_t nf, uint32_t pos, struct hami_dev *d,
                     struct sched_errbuf *eb)
{
    int64_t v;
    memset(d, 0, sizeof(*d));
    if (field_copy(f[0], d->uuid, sizeof(d->uuid)) || memchr(f[0].s, ';', f[0].n))
        return bad(eb, "expected a UUID of 1 to 95 characters other than ';'", pos, "uuid", f[0]);
    if (!field_int(f[1], 0, INT32_MAX, &v))
        return bad(eb, "expected a count 0 or more", pos, "split count", f[1]);
    d->split = (int32_t)v;
    if (!field_int(f[2], 0, INT64_C(1) << 40, &v))
        return bad(eb, "expected MiB 0 or more", pos, "memory", f[2]);
    d->mem_mib = v;
    if (!field_int(f[3], 0, INT32_MAX, &v))
        return bad(eb, "expected a percentage 0 or more", pos, "cores", f[3]);
    d->cores = (int32_t)v;
    if (field_copy(f[4], d->type, sizeof(d->type)))
        return bad(eb, "expected a type of 1 to 95 characters", pos, "type", f[4]);
    if (!field_int(f[5], -1, INT32_MAX, &v))
        return bad(eb, "expected an integer", pos, "numa", f[5]);
    d->numa = (int32_t)v;
    if (!field_eq(f[6], "true") && !field_eq(f[6], "false"))
        return bad(eb, "expected true or false", pos, "healthy", f[6]);
    d->healthy = field_eq(f[6], "true");
    d->index = (int32_t)pos;
    if (nf == HAMI_FIELDS_OLD) {
        d->index = 0; /* HAMi's default for the seven-field form */
        return 0;
    }
    if (!field_int(f[7], 0, NODE_MAX_GPUS - 1, &v))
        return bad(eb, "expected an index 0 to 31", pos, "index", f[7]);
    d->index = (int32_t)v;
    if (!field_eq(f[8], "hami-core") && !field_eq(f[8], "mig") && !field_eq(f[8], "mps"))
        return bad(eb, "expected hami-core, mig or mps", pos, "mode", f[8]);
    d->mig = field_eq(f[8], "mig");
    return 0;
}

static int cmp_index(const void *a, const void *b)
{
    const struct hami_dev *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int hami_parse_register(const char *s, struct hami_reg *out, struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (!s)
        return sched_fail(eb, SCHED_EINVAL, "%s: no value", HAMI_NODE_REGISTER);
    bool old_form = false;
    for (const char *p = s; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0) {
            struct hami_field f[HAMI_FIELDS_NEW];
            uint32_t nf = split_fields(p, len, f, HAMI_FIELDS_NEW);
            if (out->n == NODE_MAX_GPUS)
                return sched_fail(eb, SCHED_EINVAL, "%s: more than %d devices", HAMI_NODE_REGISTER,
                                  NODE_MAX_GPUS);
            if (nf != HAMI_FIELDS_OLD && nf != HAMI_FIELDS_NEW)
                return sched_fail(eb, SCHED_EINVAL,
                                  "%s: device %u: expected 7 or 9 comma-separated fields "
                                  "(uuid,split,memory,cores,type,numa,healthy[,index,mode])",
                                  HAMI_NODE_REGISTER, out->n + 1u);
            int rc = parse_dev(f, nf, out->n, &out->dev[out->n], eb);
            if (rc)
                return rc;
            old_form = old_form || nf == HAMI_FIELDS_OLD;
            out->n++;
        }
        p += len + (end ? 1 : 0);
    }
    if (old_form) /* HAMi reads the old form's devices as index 0; ours: their order */
        for (uint8_t i = 0; i < out->n; i++)
            out->dev[i].index = i;
    qsort(out->dev, out->n, sizeof(out->dev[0]), cmp_index);
    for (uint8_t i = 1; i < out->n; i++) {
        if (out->dev[i].index == out->dev[i - 1].index)
            return sched_fail(eb, SCHED_EINVAL, "%s: two devices with index %d", HAMI_NODE_REGISTER,
                              (int)out->dev[i].index);
        for (uint8_t j = 0; j < i; j++)
            if (strcmp(out->dev[i].uuid, out->dev[j].uuid) == 0)
                return sched_fail(eb, SCHED_EINVAL, "%s: device %s listed twice",
                                  HAMI_NODE_REGISTER, out->dev[i].uuid);
    }
    return 0;
}

int hami_node_devices(const char *reg, struct sched_errbuf *eb)
{
    struct hami_reg r;
    int rc = hami_parse_register(reg, &r, eb);
    if (rc)
        return rc;
    int k = 0;
    while (k < r.n && r.dev[k].healthy && !r.dev[k].mig)
        k++;
    return k;
}

void hami_reg_node(const struct hami_reg *r, struct gs_node *n)
{
    memset(n, 0, sizeof(*n));
    n->n_devs = r->n;
    for (uint8_t i = 0; i < r->n; i++) {
        const struct hami_dev *d = &r->dev[i];
        n->dev[i] = (struct gs_dev){.mem_total = d->mem_mib,
                                    .cores_total = d->cores,
                                    .split = d->split,
                                    .healthy = d->healthy && !d->mig};
    }
}

int hami_find(const struct hami_reg *r, const char *uuid, size_t len)
{
    for (uint8_t i = 0; i < r->n; i++)
        if (strlen(r->dev[i].uuid) == len && memcmp(r->dev[i].uuid, uuid, len) == 0)
            return i;
    return -1;
}

/* Does the comma-separated list name device d (UUID equal, or type containing the word)? */
static bool list_names(const char *list, const struct hami_dev *d, bool by_type)
{
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && *p == ' ') {
            p++;
            len--;
        }
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len > 0) {
            if (!by_type && strlen(d->uuid) == len && memcmp(d->uuid, p, len) == 0)
                return true;
            if (by_type)
                for (size_t i = 0; d->type[i] && strlen(d->type + i) >= len; i++)
                    if (strncasecmp(d->type + i, p, len) == 0)
                        return true;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return false;
}

uint32_t hami_allowed(const struct hami_reg *r, const char *use_uuid, const char *nouse_uuid,
                      const char *use_type, const char *nouse_type)
{
    uint32_t mask = 0;
    for (uint8_t i = 0; i < r->n; i++) {
        const struct hami_dev *d = &r->dev[i];
        bool ok = (!use_uuid || list_names(use_uuid, d, false)) &&
                  (!nouse_uuid || !list_names(nouse_uuid, d, false)) &&
                  (!use_type || list_names(use_type, d, true)) &&
                  (!nouse_type || !list_names(nouse_type, d, true));
        if (ok)
            mask |= 1u << i;
    }
    return mask;
}

int hami_policy(const char *s, enum gs_policy *out, struct sched_errbuf *eb)
{
    if (s && strcmp(s, "binpack") == 0) {
        *out = GS_BINPACK;
        return 0;
    }
    if (s && strcmp(s, "spread") == 0) {
        *out = GS_SPREAD;
        return 0;
    }
    char q[64];
    sched_quote(s ? s : "", s ? strlen(s) : 0, q, sizeof(q));
    return sched_fail(eb, SCHED_EINVAL, "scheduler policy \"%s\": expected binpack or spread", q);
}

int hami_format_alloc(const struct hami_reg *r, const struct gs_node *n, const struct gs_req *q,
                      uint32_t mask, const uint32_t *ctr_devs, uint32_t n_ctrs, char *buf,
                      size_t cap, struct sched_errbuf *eb)
{
    uint32_t total = 0;
    for (uint32_t c = 0; c < n_ctrs; c++)
        total += ctr_devs[c];
    uint32_t chosen = bits_popc32(mask);
    if (total != chosen || (r->n < 32 && (mask >> r->n)))
        return sched_fail(eb, SCHED_EINVAL,
                          "allocation: containers ask for %u devices, %u chosen on a node of %u",
                          total, chosen, (unsigned)r->n);
    size_t len = 0;
    uint8_t i = 0;
    int32_t cores = q->cores > GS_CORES_FULL ? GS_CORES_FULL : q->cores;
    for (uint32_t c = 0; c < n_ctrs; c++) {
        for (uint32_t k = 0; k < ctr_devs[c]; k++, i++) {
            while (!(mask & (1u << i)))
                i++;
            int w = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0,
                             "%s,%s,%lld,%d:", r->dev[i].uuid, HAMI_TYPE_NVIDIA,
                             (long long)gs_mem_need(&n->dev[i], q), (int)cores);
            len += w > 0 ? (size_t)w : 0;
        }
        if (len + 1 < cap)
            buf[len] = ';';
        len++;
    }
    if (len >= cap) {
        if (cap > 0)
            buf[0] = '\0';
        return sched_fail(eb, SCHED_EFULL, "allocation: %zu bytes do not fit in %zu", len + 1, cap);
    }
    buf[len] = '\0';
    return 0;
}

/* One device entry "uuid,type,mem,cores" of an allocation: device position, memory, cores. */
static int alloc_entry(const struct hami_reg *r, const char *p, size_t len, int *dev, int64_t *mem,
                       int32_t *cores, struct sched_errbuf *eb)
{
    struct hami_field f[4];
    int64_t v;
    char q[80];
    if (split_fields(p, len, f, 4) != 4) {
        sched_quote(p, len, q, sizeof(q));
        return sched_fail(eb, SCHED_EINVAL,
                          "allocation entry \"%s\": expected uuid,type,memory,cores", q);
    }
    *dev = hami_find(r, f[0].s, f[0].n);
    if (*dev < 0) {
        sched_quote(f[0].s, f[0].n, q, sizeof(q));
        return sched_fail(eb, SCHED_EINVAL, "allocation: device %s is not in the node's %s", q,
                          HAMI_NODE_REGISTER);
    }
    if (!field_int(f[2], 0, INT64_C(1) << 40, &v)) {
        sched_quote(f[2].s, f[2].n, q, sizeof(q));
        return sched_fail(eb, SCHED_EINVAL, "allocation: memory \"%s\": expected MiB", q);
    }
    *mem = v;
    if (!field_int(f[3], 0, GS_CORES_FULL, &v)) {
        sched_quote(f[3].s, f[3].n, q, sizeof(q));
        return sched_fail(eb, SCHED_EINVAL, "allocation: cores \"%s\": expected 0 to 100", q);
    }
    *cores = (int32_t)v;
    return 0;
}

int hami_apply_alloc(const struct hami_reg *r, struct gs_node *n, const char *s, uint32_t *mask,
                     struct sched_errbuf *eb)
{
    int dev[NODE_MAX_GPUS];
    int64_t mem[NODE_MAX_GPUS];
    int32_t cores[NODE_MAX_GPUS];
    uint32_t k = 0;
    *mask = 0;
    if (!s)
        return sched_fail(eb, SCHED_EINVAL, "allocation: no value");
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, ":;");
        if (len > 0) {
            if (k == NODE_MAX_GPUS)
                return sched_fail(eb, SCHED_EINVAL, "allocation: more than %d devices",
                                  NODE_MAX_GPUS);
            int rc = alloc_entry(r, p, len, &dev[k], &mem[k], &cores[k], eb);
            if (rc)
                return rc;
            k++;
        }
        p += len + (p[len] ? 1 : 0);
    }
    for (uint32_t j = 0; j < k && dev[j] < n->n_devs; j++) { /* applied only when all parsed */
        struct gs_dev *d = &n->dev[dev[j]];
        d->mem_used += mem[j];
        d->cores_used += cores[j];
        d->tasks++;
        *mask |= 1u << dev[j];
    }
    return 0;
}
