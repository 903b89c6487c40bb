/* config/load_sections.c: the sections of a configuration before its quota tree (see load.h):
 * device, topology levels, fair share, starvation guard, flavors and scoring profiles.
 */
#include <stdlib.h>
#include <string.h>

#include "config/load.h"
#include "plugins/plugins.h"
#include "sched/core/device.h"

/* ---- sections ---------------------------------------------------------------------------------
 */

int cl_parse_topology(struct ctx *x, yaml_node_t *t)
{
    static const char *const keys[] = {"levels", NULL};
    static const char *const level_keys[] = {"name", "label", NULL};
    int rc = cl_expect_mapping(x, t);
    if (!rc)
        rc = cl_check_map(x, t, keys);
    yaml_node_t *levels = rc ? NULL : cl_map_opt(x, t, "levels");
    if (rc || !levels)
        return rc;
    cl_path_push(x, "levels");
    rc = cl_expect_sequence(x, levels);
    if (!rc && ydoc_count(levels) > CONFIG_MAX_LEVELS)
        rc = cl_fail(x, &levels->start_mark,
                     "at most %d levels (the node level is implicit and always last), got %zu",
                     CONFIG_MAX_LEVELS, ydoc_count(levels));
    struct config *c = x->c;
    for (size_t i = 0; !rc && i < ydoc_count(levels); i++) {
        yaml_node_t *l = ydoc_item(x->y, levels, i);
        cl_path_index(x, (long)i);
        rc = cl_expect_mapping(x, l);
        if (!rc)
            rc = cl_check_map(x, l, level_keys);
        yaml_node_t *name = rc ? NULL : cl_map_opt(x, l, "name");
        yaml_node_t *label = rc ? NULL : cl_map_opt(x, l, "label");
        if (!rc && !name)
            rc = cl_missing(x, l, "name", "");
        if (!rc && !label)
            rc = cl_missing(x, l, "label", " (a node label key)");
        if (!rc) {
            cl_path_push(x, "name");
            rc = cl_get_name(x, name, &c->level_names[i]);
            if (!rc && strcmp(c->level_names[i], "node") == 0)
                rc = cl_fail(x, &name->start_mark,
                             "the level name \"node\" is reserved for the implicit node level");
            for (size_t j = 0; !rc && j < i; j++) {
                if (strcmp(c->level_names[j], c->level_names[i]) == 0)
                    rc = cl_fail(x, &name->start_mark, "duplicate level name \"%s\" (levels[%zu])",
                                 c->level_names[i], j);
            }
            cl_path_pop(x);
        }
        if (!rc) {
            cl_path_push(x, "label");
            rc = cl_get_name(x, label, &c->level_labels[i]);
            for (size_t j = 0; !rc && j < i; j++) {
                if (strcmp(c->level_labels[j], c->level_labels[i]) == 0)
                    rc = cl_fail(x, &label->start_mark, "duplicate level label (levels[%zu])", j);
            }
            cl_path_pop(x);
        }
        cl_path_pop(x);
    }
    if (!rc)
        c->n_levels = (uint32_t)ydoc_count(levels);
    cl_path_pop(x);
    return rc;
}

int cl_parse_fair_share(struct ctx *x, yaml_node_t *f)
{
    static const char *const keys[] = {"halfLife", NULL};
    int rc = cl_expect_mapping(x, f);
    if (!rc)
        rc = cl_check_map(x, f, keys);
    yaml_node_t *v = rc ? NULL : cl_map_opt(x, f, "halfLife");
    if (v) {
        cl_path_push(x, "halfLife");
        rc = cl_get_duration(x, v, &x->c->fair_half_life_ms);
        cl_path_pop(x);
    }
    return rc;
}

/* s's optional integer `key` in lo..hi into *dst (left as it is when absent). */
static int opt_u32(struct ctx *x, yaml_node_t *s, const char *key, long long lo, long long hi,
                   uint32_t *dst)
{
    yaml_node_t *v = cl_map_opt(x, s, key);
    if (!v)
        return 0;
    long long m;
    cl_path_push(x, key);
    int rc = cl_get_int(x, v, lo, hi, &m);
    if (!rc)
        *dst = (uint32_t)m;
    cl_path_pop(x);
    return rc;
}

int cl_parse_starvation(struct ctx *x, yaml_node_t *s)
{
    static const char *const keys[] = {"after", "maxReservations", "probationMinGpus", NULL};
    int rc = cl_expect_mapping(x, s);
    if (!rc)
        rc = cl_check_map(x, s, keys);
    yaml_node_t *v = rc ? NULL : cl_map_opt(x, s, "after");
    if (v) {
        cl_path_push(x, "after");
        rc = cl_get_duration(x, v, &x->c->starve_after_ms);
        cl_path_pop(x);
    }
    if (!rc)
        rc = opt_u32(x, s, "maxReservations", 0, CONFIG_MAX_RESERVE, &x->c->max_reservations);
    if (!rc)
        rc = opt_u32(x, s, "probationMinGpus", 0, CONFIG_MAX_PROBATION_GPUS,
                     &x->c->probation_min_gpus);
    return rc;
}

/* hami: {nodeSchedulerPolicy, gpuSchedulerPolicy}: binpack or spread, HAMi's settings of the
 * same names; stored as 1 + enum gs_policy (0 = HAMi's defaults, binpack and spread). */
int cl_parse_hami(struct ctx *x, yaml_node_t *h)
{
    static const char *const keys[] = {"nodeSchedulerPolicy", "gpuSchedulerPolicy", NULL};
    static const char *const words[] = {"binpack", "spread", NULL};
    uint8_t *dst[] = {&x->c->share_node_policy, &x->c->share_gpu_policy};
    int rc = cl_expect_mapping(x, h);
    if (!rc)
        rc = cl_check_map(x, h, keys);
    for (int k = 0; !rc && k < 2; k++) {
        yaml_node_t *v = cl_map_opt(x, h, keys[k]);
        if (!v)
            continue;
        int w = 0;
        cl_path_push(x, keys[k]);
        rc = cl_get_enum(x, v, words, &w);
        cl_path_pop(x);
        if (!rc)
            *dst[k] = (uint8_t)(w + 1);
    }
    return rc;
}

/* A DNS subdomain (a driver's or a DeviceClass's name) at key of m into *out, if given. */
static int dra_name(struct ctx *x, yaml_node_t *m, const char *key, const char **out)
{
    yaml_node_t *v = cl_map_opt(x, m, key);
    if (!v)
        return 0;
    cl_path_push(x, key);
    int rc = cl_get_name(x, v, out);
    for (const char *c = rc ? "" : *out; !rc && *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.'))
            rc = cl_fail(x, &v->start_mark,
                         "\"%s\": not a DNS subdomain (lowercase letters, digits, '-', '.')", *out);
    cl_path_pop(x);
    return rc;
}

/* device.dra {driver, deviceClass, type, untyped, selector} into x->c->dra; the selector is
 * compiled here so that its error has the file's line. */
static int parse_dra(struct ctx *x, yaml_node_t *m)
{
    static const char *const keys[] = {"driver",  "deviceClass", "type",
                                       "untyped", "selector",    NULL};
    struct config_dra *d = &x->c->dra;
    int rc = cl_expect_mapping(x, m);
    if (!rc)
        rc = cl_check_map(x, m, keys);
    if (!rc && !ydoc_get(x->y, m, "driver"))
        return cl_missing(x, m, "driver", " (the ResourceSlices' spec.driver, e.g. gpu.amd.com)");
    if (!rc)
        rc = dra_name(x, m, "driver", &d->driver);
    if (!rc)
        rc = dra_name(x, m, "deviceClass", &d->device_class);
    yaml_node_t *v = rc ? NULL : cl_map_opt(x, m, "type");
    if (v) {
        cl_path_push(x, "type");
        rc = cl_get_name(x, v, &d->type);
        cl_path_pop(x);
    }
    v = rc ? NULL : cl_map_opt(x, m, "untyped");
    if (v) {
        cl_path_push(x, "untyped");
        rc = cl_get_bool(x, v, &d->untyped);
        cl_path_pop(x);
    }
    v = rc ? NULL : cl_map_opt(x, m, "selector");
    if (v) {
        cl_path_push(x, "selector");
        const char *s;
        size_t len;
        struct cel_prog *prog = NULL;
        struct sched_errbuf eb = {{0}};
        rc = cl_get_text(x, v, &s, &len);
        if (!rc && cel_compile(s, &prog, &eb) != 0)
            rc = cl_fail(x, &v->start_mark, "CEL %s", eb.msg);
        cel_free(prog);
        if (!rc && !(d->selector = config_pool_strndup(x->pool, s, len)))
            rc = cl_oom(x);
        cl_path_pop(x);
    }
    if (!rc && !d->device_class)
        d->device_class = d->driver;
    d->set = rc == 0;
    return rc;
}

/* One device mapping {resource, unit} (and, for the accelerator, dra) into *res and *unit. */
static int parse_one_device(struct ctx *x, yaml_node_t *d, const char **res, const char **unit)
{
    static const char *const keys[] = {"resource", "unit", "dra", NULL};
    bool first = res == &x->c->device;
    int rc = cl_expect_mapping(x, d);
    if (!rc)
        rc = cl_check_map(x, d, keys);
    yaml_node_t *dra = rc ? NULL : cl_map_opt(x, d, "dra");
    if (dra && !first)
        return cl_fail(x, &dra->start_mark,
                       "dra is read for the first device (the accelerator) only");
    if (dra) {
        cl_path_push(x, "dra");
        rc = parse_dra(x, dra);
        cl_path_pop(x);
    }
    yaml_node_t *v = rc ? NULL : ydoc_get(x->y, d, "resource");
    if (!rc && !v)
        return cl_missing(x, d, "resource", " (the accelerator's resource name, e.g. amd.com/gpu)");
    if (v) {
        cl_path_push(x, "resource");
        const char *name = NULL;
        rc = cl_get_name(x, v, &name);
        if (!rc) {
            struct sched_errbuf reb;
            int known = res_lookup(name);
            /* the same rules as any resource name; renaming the slot is left to the driver */
            if (res_check_name(name, &reb) != 0)
                rc = cl_fail(x, &v->start_mark, "%s", reb.msg);
            else if (known >= 0 && known < RES_N_WELLKNOWN && known != RES_GPU)
                rc = cl_fail(x, &v->start_mark, "\"%s\" is not a device resource", name);
            else
                *res = name;
        }
        cl_path_pop(x);
    }
    v = rc ? NULL : cl_map_opt(x, d, "unit");
    if (v) {
        cl_path_push(x, "unit");
        const char *s;
        size_t len;
        rc = cl_get_text(x, v, &s, &len);
        bool ok = !rc && len > 0 && len < DEVICE_UNIT_MAX;
        for (size_t i = 0; ok && i < len; i++)
            ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z');
        if (!rc && !ok) {
            char e[ESC_CAP];
            rc = cl_fail(x, &v->start_mark, "unit \"%s\": expected 1 to %d letters (GPU, NPU, TPU)",
                         cl_esc(s, len, e, sizeof(e)), DEVICE_UNIT_MAX - 1);
        }
        if (!rc && !(*unit = config_pool_strndup(x->pool, s, len)))
            rc = cl_oom(x);
        cl_path_pop(x);
    }
    return rc;
}

int cl_parse_device(struct ctx *x, yaml_node_t *d)
{
    return parse_one_device(x, d, &x->c->device, &x->c->device_unit);
}

int cl_parse_devices(struct ctx *x, yaml_node_t *seq)
{
    int rc = cl_expect_sequence(x, seq);
    size_t n = rc ? 0 : ydoc_count(seq);
    if (!rc && (n == 0 || n > RES_KINDS_MAX))
        return cl_fail(x, &seq->start_mark, "%zu devices: expected 1 to %d", n, RES_KINDS_MAX);
    struct config_device *dv = n > 1 ? config_pool_array(x->pool, n - 1, sizeof(*dv)) : NULL;
    if (n > 1 && !dv)
        return cl_oom(x);
    for (size_t i = 0; !rc && i < n; i++) {
        yaml_node_t *item = ydoc_item(x->y, seq, i);
        cl_path_index(x, (long)i);
        const char **res = i ? &dv[i - 1].resource : &x->c->device;
        const char **unit = i ? &dv[i - 1].unit : &x->c->device_unit;
        if (i)
            *unit = "";
        rc = parse_one_device(x, item, res, unit);
        if (!rc && i && strcmp(*res, RES_DEFAULT_DEVICE) == 0) /* the slot's name until applied */
            rc = cl_fail(x, &item->start_mark,
                         "%s, when listed, must be the first device (the accelerator slot starts "
                         "under its name)",
                         RES_DEFAULT_DEVICE);
        for (size_t j = 0; !rc && j < i; j++) {
            const char *other = j ? dv[j - 1].resource : x->c->device;
            if (strcmp(other, *res) == 0)
                rc = cl_fail(x, &item->start_mark, "device \"%s\" is listed twice (first at [%zu])",
                             *res, j);
        }
        cl_path_pop(x);
    }
    if (!rc) {
        x->c->kinds = dv;
        x->c->n_kinds = (uint32_t)(n - 1);
    }
    return rc;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

/* resourceWeights of flavor i: resource name -> weight (> 0, at most CONFIG_MAX_WEIGHT); the
 * names are resolved once the file's resource names are interned (load_tree.c). */
static int parse_res_weights(struct ctx *x, yaml_node_t *fn, uint32_t i, struct config_flavor *f)
{
    yaml_node_t *w = cl_map_opt(x, fn, "resourceWeights");
    if (!w)
        return 0;
    cl_path_push(x, "resourceWeights");
    int rc = cl_expect_mapping(x, w);
    if (!rc)
        rc = cl_check_map(x, w, NULL);
    size_t n = rc ? 0 : (size_t)(w->data.mapping.pairs.top - w->data.mapping.pairs.start);
    struct config_res_weight *rw = n ? config_pool_array(x->pool, n, sizeof(*rw)) : NULL;
    yaml_mark_t *marks = n ? config_pool_array(x->tmp, n, sizeof(*marks)) : NULL;
    if (n && (!rw || !marks))
        rc = cl_oom(x);
    for (size_t k = 0; !rc && k < n; k++) {
        yaml_node_pair_t *p = &w->data.mapping.pairs.start[k];
        yaml_node_t *key = ydoc_node(x->y, p->key), *v = ydoc_node(x->y, p->value);
        cl_path_key(x, ydoc_text(key), ydoc_len(key));
        rc = cl_get_name(x, key, &rw[k].name);
        if (!rc)
            rc = cl_get_number(x, v, 0, true, CONFIG_MAX_WEIGHT, &rw[k].weight);
        rw[k].res = -1;
        marks[k] = key->start_mark;
        cl_path_pop(x);
    }
    f->weights = rw;
    f->n_weights = (uint32_t)n;
    x->weight_marks[i] = marks;
    cl_path_pop(x);
    return rc;
}

static int parse_flavor(struct ctx *x, yaml_node_t *fn, uint32_t fi, struct config_flavor *f)
{
    static const char *const keys[] = {"name", "nodeLabels", "resourceWeights", NULL};
    yaml_mark_t mark;
    int rc = cl_named_entry(x, fn, keys, &f->name, &mark);
    if (!rc)
        rc = parse_res_weights(x, fn, fi, f);
    yaml_node_t *labels = rc ? NULL : cl_map_opt(x, fn, "nodeLabels");
    if (!labels)
        return rc;
    cl_path_push(x, "nodeLabels");
    rc = cl_expect_mapping(x, labels);
    if (!rc)
        rc = cl_check_map(x, labels, NULL);
    size_t n = rc ? 0 : (size_t)(labels->data.mapping.pairs.top - labels->data.mapping.pairs.start);
    struct kv *kv = n ? config_pool_array(x->pool, n, sizeof(*kv)) : NULL;
    if (n && !kv)
        rc = cl_oom(x);
    for (size_t i = 0; !rc && i < n; i++) {
        yaml_node_pair_t *p = &labels->data.mapping.pairs.start[i];
        yaml_node_t *k = ydoc_node(x->y, p->key), *v = ydoc_node(x->y, p->value);
        cl_path_key(x, ydoc_text(k), ydoc_len(k));
        rc = cl_get_name(x, k, &kv[i].key);
        if (!rc && ydoc_is_null(v)) {
            kv[i].value = "";
        } else if (!rc) {
            const char *s;
            size_t len;
            rc = v->type == YAML_SCALAR_NODE ? cl_get_text(x, v, &s, &len)
                                             : cl_expect_fail(x, v, "a label value (a string)");
            if (!rc) {
                kv[i].value = config_pool_strndup(x->pool, s, len);
                if (!kv[i].value)
                    rc = cl_oom(x);
            }
        }
        cl_path_pop(x);
    }
    if (!rc && n > 1)
        qsort(kv, n, sizeof(*kv), kv_cmp);
    f->node_labels = kv;
    f->n_node_labels = (uint32_t)n;
    cl_path_pop(x);
    return rc;
}

int cl_parse_flavors(struct ctx *x, yaml_node_t *fl)
{
    struct config *c = x->c;
    size_t n = 0;
    int rc = 0;
    if (fl) {
        cl_path_push(x, "flavors");
        rc = cl_expect_sequence(x, fl);
        if (!rc) {
            n = ydoc_count(fl);
            if (n > CONFIG_MAX_FLAVORS)
                rc = cl_fail(x, &fl->start_mark, "at most %d flavors, got %zu", CONFIG_MAX_FLAVORS,
                             n);
        }
        cl_path_pop(x);
        if (rc)
            return rc;
    }
    x->flavors_declared = n > 0;
    c->n_flavors = n ? (uint32_t)n : 1;
    c->flavors = config_pool_array(x->pool, c->n_flavors, sizeof(*c->flavors));
    x->flavor_ents = config_pool_array(x->tmp, c->n_flavors, sizeof(*x->flavor_ents));
    x->weight_marks = config_pool_array(x->tmp, c->n_flavors, sizeof(*x->weight_marks));
    if (!c->flavors || !x->flavor_ents || !x->weight_marks)
        return cl_oom(x);
    if (n == 0) {
        c->flavors[0].name = "default";
        x->flavor_ents[0] = (struct name_ent){"default", 0, 0, {0, 0, 0}};
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *f = ydoc_item(x->y, fl, i);
        cl_path_set(x, "flavors", (long)i, NULL);
        rc = parse_flavor(x, f, (uint32_t)i, &c->flavors[i]);
        if (rc)
            return rc;
        x->flavor_ents[i] = (struct name_ent){c->flavors[i].name, (uint32_t)i, 0,
                                              ydoc_get(x->y, f, "name")->start_mark};
    }
    size_t first;
    long d = cl_name_sort_dups(x->flavor_ents, n, &first);
    if (d >= 0) {
        const struct name_ent *e = &x->flavor_ents[d], *f = &x->flavor_ents[first];
        cl_path_set(x, "flavors", (long)e->idx, "name");
        char q[ESC_CAP];
        return cl_fail(x, &e->mark, "duplicate flavor name \"%s\" (first declared at line %zu)",
                       cl_esc(e->name, strlen(e->name), q, sizeof(q)), f->mark.line + 1);
    }
    return 0;
}

int cl_parse_profiles(struct ctx *x, yaml_node_t *pl)
{
    static const char *const keys[] = {"name", "weights", NULL};
    const char *weight_keys[SCORE_TERMS_MAX + 1] = {NULL}; /* the score terms of plugins/ */
    uint32_t n_terms = plugin_score_count();
    for (uint32_t t = 0; t < n_terms; t++)
        weight_keys[t] = plugin_scores[t]->name;
    struct config *c = x->c;
    size_t n = 0;
    if (pl) {
        cl_path_push(x, "profiles");
        int rc = cl_expect_sequence(x, pl);
        cl_path_pop(x);
        if (rc)
            return rc;
        n = ydoc_count(pl);
    }
    c->profiles = config_pool_array(x->pool, n + 2, sizeof(*c->profiles));
    struct name_ent *ents = config_pool_array(x->tmp, n + 2, sizeof(*ents));
    if (!c->profiles || !ents)
        return cl_oom(x);
    c->profiles[0] = (struct config_profile){.name = "training"};
    c->profiles[1] = (struct config_profile){.name = "inference"};
    memcpy(c->profiles[0].weights, plugin_weights_training, sizeof(c->profiles[0].weights));
    memcpy(c->profiles[1].weights, plugin_weights_inference, sizeof(c->profiles[1].weights));
    c->n_profiles = 2;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *p = ydoc_item(x->y, pl, i);
        cl_path_set(x, "profiles", (long)i, NULL);
        struct config_profile prof = {NULL, {0}};
        yaml_mark_t mark;
        int rc = cl_named_entry(x, p, keys, &prof.name, &mark);
        yaml_node_t *w = rc ? NULL : cl_map_opt(x, p, "weights");
        if (w) {
            cl_path_push(x, "weights");
            rc = cl_expect_mapping(x, w);
            if (!rc)
                rc = cl_check_map(x, w, weight_keys);
            for (uint32_t t = 0; !rc && t < n_terms; t++) {
                yaml_node_t *v = cl_map_opt(x, w, weight_keys[t]);
                if (v) {
                    cl_path_push(x, weight_keys[t]);
                    rc = cl_get_number(x, v, 0, false, CONFIG_MAX_WEIGHT, &prof.weights[t]);
                    cl_path_pop(x);
                }
            }
            cl_path_pop(x);
        }
        if (rc)
            return rc;
        ents[i] = (struct name_ent){prof.name, (uint32_t)i, 0, mark};
        uint32_t slot = c->n_profiles;
        for (uint32_t b = 0; b < 2; b++) {
            if (strcmp(prof.name, c->profiles[b].name) == 0)
                slot = b;
        }
        if (slot == c->n_profiles)
            c->n_profiles++;
        c->profiles[slot] = prof;
    }
    size_t first;
    long d = cl_name_sort_dups(ents, n, &first);
    if (d >= 0) {
        const struct name_ent *e = &ents[d];
        cl_path_set(x, "profiles", (long)e->idx, "name");
        char q[ESC_CAP];
        return cl_fail(x, &e->mark, "duplicate profile name \"%s\" (first declared at line %zu)",
                       cl_esc(e->name, strlen(e->name), q, sizeof(q)), ents[first].mark.line + 1);
    }
    /* final table: index into c->profiles */
    x->profile_ents = config_pool_array(x->tmp, c->n_profiles, sizeof(*x->profile_ents));
    if (!x->profile_ents)
        return cl_oom(x);
    for (uint32_t i = 0; i < c->n_profiles; i++)
        x->profile_ents[i] = (struct name_ent){c->profiles[i].name, i, 0, {0, 0, 0}};
    qsort(x->profile_ents, c->n_profiles, sizeof(*x->profile_ents), cl_name_ent_cmp);
    return 0;
}
