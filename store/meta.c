/* store/meta.c: the meta keys (one value per key, text or integer), the accelerator's name read
 * from them, and the applied configuration with its queues and quotas (store_config_apply,
 * store_queue_put, store_queue_list).
 *
 * Must not touch: the open sequence and transaction machinery (store/store.c), other tables.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "config/config.h"
#include "sched/core/arena.h"
#include "sched/core/device.h"
#include "sched/core/log.h"
#include "sched/core/res.h"
#include "store/store.h"
#include "store/store_int.h"

/* ---- meta ---------------------------------------------------------------------------------- */

static void bind_kv(struct store *st, enum store__stmt id, int base, uint32_t i, const void *rows,
                    int *rc)
{
    const struct store_kv *kv = (const struct store_kv *)rows + i;
    store__b_text(st, id, base + 1, kv->key, rc);
    store__b_text(st, id, base + 2, kv->value, rc);
}

int store_meta_put_many(struct store *st, const struct store_kv *kv, uint32_t n,
                        struct sched_errbuf *eb)
{
    for (uint32_t i = 0; i < n; i++)
        if (!kv || !kv[i].key || !kv[i].value)
            return sched_fail(eb, SCHED_EINVAL, "database %s: meta key and value are required",
                              st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = store__exec_rows(st, STMT_META_PUT, STMT_META_PUT_MANY, n, bind_kv, kv);
    return store__wend(st, own, rc, "writing meta", eb);
}

int store_meta_put(struct store *st, const char *key, const char *value, struct sched_errbuf *eb)
{
    struct store_kv kv = {key, value};
    return store_meta_put_many(st, &kv, 1, eb);
}

int store_meta_get(struct store *st, const char *key, const char **value, struct sched_errbuf *eb)
{
    if (!key || !value)
        return sched_fail(eb, SCHED_EINVAL, "database %s: meta key required", st->path);
    sqlite3_stmt *s = store__s(st, STMT_META_GET);
    int rc = SQLITE_OK;
    store__b_text(st, STMT_META_GET, 1, key, &rc);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    int err = 0;
    if (rc == SQLITE_ROW) {
        const char *t = store__col_text(s, 0);
        size_t n = t ? strlen(t) : 0;
        char *buf = store__scratch(st, n + 1);
        if (!t)
            err = store__bad_row(st, eb, "meta: key %s has no value", key);
        else if (!buf)
            err = sched_fail(eb, SCHED_ENOMEM, "database %s: out of memory", st->path);
        else {
            memcpy(buf, t, n + 1);
            *value = buf;
        }
    } else if (rc == SQLITE_DONE) {
        err = sched_fail(eb, SCHED_ENOENT, "database %s: meta key %s is not set", st->path, key);
    } else {
        err = store__sql_fail(st, rc, "reading meta", eb);
    }
    store__done(st, STMT_META_GET);
    return err;
}

int store_meta_put_i64(struct store *st, const char *key, int64_t value, struct sched_errbuf *eb)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRId64, value);
    return store_meta_put(st, key, buf, eb);
}

int store_meta_get_i64(struct store *st, const char *key, int64_t *value, struct sched_errbuf *eb)
{
    const char *t = NULL;
    int err = store_meta_get(st, key, &t, eb);
    if (err)
        return err;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (errno || end == t || *end)
        return store__bad_row(st, eb, "meta: key %s is not an integer: \"%.40s\"", key, t);
    *value = (int64_t)v;
    return 0;
}

/* ---- configuration and queues -------------------------------------------------------------- */

static bool limit_ok(int64_t v)
{
    return v == STORE_NO_LIMIT || v >= 0;
}

int store_queue_put(struct store *st, const struct store_queue *q, struct sched_errbuf *eb)
{
    if (!q || !q->name || !*q->name)
        return sched_fail(eb, SCHED_EINVAL, "database %s: queue without a name", st->path);
    if (!isfinite(q->weight) || q->weight <= 0)
        return sched_fail(eb, SCHED_EINVAL, "database %s: queue %s: weight %g is not > 0", st->path,
                          q->name, q->weight);
    for (uint32_t i = 0; i < q->n_quotas; i++) {
        const struct store_quota *k = &q->quotas[i];
        if (!k->flavor || !k->resource || k->nominal < 0 || !limit_ok(k->borrowing_limit) ||
            !limit_ok(k->lending_limit))
            return sched_fail(eb, SCHED_EINVAL, "database %s: queue %s: bad quota entry %u",
                              st->path, q->name, i);
    }
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_QUEUE_PUT, 1, q->name, &rc);
    store__b_text(st, STMT_QUEUE_PUT, 2, q->cohort, &rc);
    store__b_double(st, STMT_QUEUE_PUT, 3, q->weight, &rc);
    store__b_i64(st, STMT_QUEUE_PUT, 4, q->priority, &rc);
    rc = store__exec(st, STMT_QUEUE_PUT, rc, NULL);
    store__b_text(st, STMT_QUOTA_DELETE, 1, q->name, &rc);
    rc = store__exec(st, STMT_QUOTA_DELETE, rc, NULL);
    for (uint32_t i = 0; i < q->n_quotas && rc == SQLITE_OK; i++) {
        const struct store_quota *k = &q->quotas[i];
        store__b_text(st, STMT_QUOTA_PUT, 1, q->name, &rc);
        store__b_text(st, STMT_QUOTA_PUT, 2, k->flavor, &rc);
        store__b_text(st, STMT_QUOTA_PUT, 3, k->resource, &rc);
        store__b_i64(st, STMT_QUOTA_PUT, 4, k->nominal, &rc);
        store__b_opt(st, STMT_QUOTA_PUT, 5, k->borrowing_limit, STORE_NO_LIMIT, &rc);
        store__b_opt(st, STMT_QUOTA_PUT, 6, k->lending_limit, STORE_NO_LIMIT, &rc);
        rc = store__exec(st, STMT_QUOTA_PUT, rc, NULL);
    }
    char what[160];
    snprintf(what, sizeof(what), "writing queue %s", q->name);
    return store__wend(st, own, rc, what, eb);
}

int store_queue_delete(struct store *st, const char *name, struct sched_errbuf *eb)
{
    if (!name)
        return sched_fail(eb, SCHED_EINVAL, "database %s: queue name required", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_QUEUE_DELETE, 1, name, &rc);
    rc = store__exec(st, STMT_QUEUE_DELETE, rc, NULL);
    return store__wend(st, own, rc, "deleting a queue", eb);
}

/* Fills `q` (quotas in `a`) for config queue i. */
static int config_queue(const struct config *cfg, uint32_t i, struct arena *a,
                        struct store_queue *q)
{
    const struct config_queue *cq = &cfg->queues[i];
    memset(q, 0, sizeof(*q));
    q->name = cq->name;
    q->cohort = cq->cohort >= 0 && (uint32_t)cq->cohort < cfg->n_cohorts
                    ? cfg->cohorts[cq->cohort].name
                    : NULL;
    q->weight = cq->weight;
    q->priority = cq->priority;
    uint32_t n = 0;
    for (uint32_t f = 0; f < cfg->n_flavors; f++)
        for (int r = 0; r < RES_MAX; r++)
            n += cq->q.has && cq->q.has[f * RES_MAX + (uint32_t)r];
    if (!n)
        return 0;
    struct store_quota *k = arena_calloc(a, n, sizeof(*k));
    if (!k)
        return SCHED_ENOMEM;
    n = 0;
    for (uint32_t f = 0; f < cfg->n_flavors; f++) {
        for (int r = 0; r < RES_MAX; r++) {
            uint32_t at = f * RES_MAX + (uint32_t)r;
            if (!cq->q.has[at] || !res_name(r))
                continue;
            const struct config_quota *cqq = &cq->q.quota[at];
            k[n].flavor = cfg->flavors[f].name;
            k[n].resource = res_name(r);
            k[n].nominal = cqq->nominal;
            k[n].borrowing_limit = cqq->borrowing_limit; /* CONFIG_NO_LIMIT == STORE_NO_LIMIT */
            k[n].lending_limit = cqq->lending_limit;
            n++;
        }
    }
    q->quotas = k;
    q->n_quotas = n;
    return 0;
}

_Static_assert(CONFIG_NO_LIMIT == STORE_NO_LIMIT, "the store keeps config's 'no limit' value");

static void meta_copy(struct store *st, const char *key, char *out, size_t cap, const char *def)
{
    const char *v = NULL;
    struct sched_errbuf eb;
    if (store_meta_get(st, key, &v, &eb) != 0 || !v || !*v || strlen(v) >= cap)
        v = def;
    memcpy(out, v, strlen(v) + 1);
}

static void device_load(struct store *st)
{
    if (st->device_read)
        return;
    meta_copy(st, "device", st->device, sizeof(st->device), STORE_GPU);
    meta_copy(st, "device_unit", st->unit, sizeof(st->unit), "GPU");
    meta_copy(st, "device_kinds", st->kinds, sizeof(st->kinds), "");
    st->device_read = true;
}

const char *store_device(struct store *st)
{
    device_load(st);
    return st->device;
}

bool store_is_device(struct store *st, const char *resource)
{
    device_load(st);
    if (!resource)
        return false;
    if (strcmp(resource, st->device) == 0)
        return true;
    size_t n = strlen(resource);
    for (const char *p = st->kinds; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, resource, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

const char *store_device_unit(struct store *st)
{
    device_load(st);
    return st->unit;
}

int store_config_apply(struct store *st, const struct config *cfg, const char *text, size_t len,
                       struct sched_errbuf *eb)
{
    if (!cfg)
        return sched_fail(eb, SCHED_EINVAL, "database %s: no config to apply", st->path);
    if (len > (size_t)INT32_MAX)
        return sched_fail(eb, SCHED_EINVAL, "database %s: config text too large", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = store__exec(st, STMT_QUEUE_DELETE_ALL, SQLITE_OK, NULL);
    if (rc != SQLITE_OK)
        return store__wend(st, own, rc, "replacing the queues", eb);
    struct arena a;
    arena_init(&a, 0);
    for (uint32_t i = 0; i < cfg->n_queues && !err; i++) {
        struct store_queue q;
        err = config_queue(cfg, i, &a, &q);
        if (err)
            err = sched_fail(eb, err, "database %s: out of memory", st->path);
        else
            err = store_queue_put(st, &q, eb);
        arena_reset(&a);
    }
    arena_fini(&a);
    if (err)
        return store__wfinish(st, own, err, eb);
    char version[32];
    snprintf(version, sizeof(version), "%016" PRIx64, cfg->version);
    err = store_meta_put(st, "config_version", version, eb);
    if (!err)
        err = store_meta_put(st, "device", cfg->device, eb);
    /* several kinds: the device figures count all of them, in "device"s */
    if (!err)
        err = store_meta_put(st, "device_unit",
                             cfg->n_kinds        ? "device"
                             : *cfg->device_unit ? cfg->device_unit
                                                 : device_default_unit(cfg->device),
                             eb);
    char kinds[sizeof(st->kinds)];
    size_t at = 0;
    kinds[0] = '\0';
    for (uint32_t k = 0; cfg->n_kinds && k <= cfg->n_kinds && at < sizeof(kinds); k++)
        at += (size_t)snprintf(kinds + at, sizeof(kinds) - at, "%s%s", k ? "," : "",
                               k ? cfg->kinds[k - 1].resource : cfg->device);
    if (!err)
        err = store_meta_put(st, "device_kinds", kinds, eb);
    st->device_read = false;
    if (!err)
        err = store_meta_put(st, "config_path", cfg->path ? cfg->path : "", eb);
    if (!err) {
        sqlite3_stmt *s = store__s(st, STMT_META_PUT);
        rc = sqlite3_bind_text(s, 1, "config_text", -1, SQLITE_STATIC);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_text(s, 2, text ? text : "", text ? (int)len : 0, SQLITE_STATIC);
        rc = store__exec(st, STMT_META_PUT, rc, NULL);
        return store__wend(st, own, rc, "writing the config text", eb);
    }
    return store__wfinish(st, own, err, eb);
}

int store_queue_list(struct store *st, store_queue_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_QUEUE_LIST);
    sqlite3_stmt *k = store__s(st, STMT_QUOTA_LIST);
    struct arena a;
    arena_init(&a, 0);
    int err = 0, rc = SQLITE_DONE;
    while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_queue q;
        memset(&q, 0, sizeof(q));
        q.name = store__col_text(s, 0);
        q.cohort = store__col_text(s, 1);
        q.weight = sqlite3_column_double(s, 2);
        q.priority = (int32_t)sqlite3_column_int64(s, 3);
        if (!q.name) {
            err = store__bad_row(st, eb, "queues: a row without a name");
            break;
        }
        uint32_t cap = 0;
        struct store_quota *quotas = NULL;
        int krc = sqlite3_bind_text(k, 1, q.name, -1, SQLITE_STATIC);
        while (krc == SQLITE_OK && (krc = sqlite3_step(k)) == SQLITE_ROW) {
            if (q.n_quotas == cap) {
                uint32_t ncap = cap ? cap * 2 : 8;
                struct store_quota *grown = arena_alloc(&a, ncap * sizeof(*grown));
                if (!grown) {
                    krc = SQLITE_NOMEM;
                    break;
                }
                if (q.n_quotas)
                    memcpy(grown, quotas, q.n_quotas * sizeof(*grown));
                quotas = grown;
                cap = ncap;
            }
            struct store_quota *e = &quotas[q.n_quotas];
            const char *flavor = store__col_text(k, 0), *res = store__col_text(k, 1);
            e->flavor = flavor ? arena_strdup(&a, flavor) : NULL;
            e->resource = res ? arena_strdup(&a, res) : NULL;
            e->nominal = sqlite3_column_int64(k, 2);
            e->borrowing_limit = store__col_opt(k, 3, STORE_NO_LIMIT);
            e->lending_limit = store__col_opt(k, 4, STORE_NO_LIMIT);
            if (!e->flavor || !e->resource) {
                krc = flavor && res ? SQLITE_NOMEM : SQLITE_CORRUPT;
                break;
            }
            q.n_quotas++;
            krc = SQLITE_OK;
        }
        store__done(st, STMT_QUOTA_LIST);
        if (krc != SQLITE_DONE) {
            err =
                krc == SQLITE_CORRUPT
                    ? store__bad_row(st, eb, "queue_quota: a row of queue %s lacks a name", q.name)
                    : store__sql_fail(st, krc, "reading queue quotas", eb);
            break;
        }
        q.quotas = quotas;
        err = fn(ctx, &q);
        arena_reset(&a);
        rc = SQLITE_DONE;
    }
    if (!err && rc != SQLITE_DONE)
        err = store__sql_fail(st, rc, "reading queues", eb);
    store__done(st, STMT_QUEUE_LIST);
    arena_fini(&a);
    return err;
}
