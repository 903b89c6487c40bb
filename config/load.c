/* config/load.c: loading a configuration from YAML bytes (see config.h and docs/config.md).
 *
 * Owns: the path from bytes to an immutable `struct config`: a pre-scan of libyaml's event
 * stream (syntax errors, aliases, a single document, nesting, empty input, with the key path of
 * the place), the document (config/yaml_doc.h), the top-level mapping and its header, the order
 * of the sections (load_sections.c, load_tree.c), and the two pools of a load: the result's and
 * a scratch one freed at the end. On any error both are freed and nothing is returned. Every
 * config error is SCHED_EINVAL; SCHED_ENOMEM and SCHED_EIO keep their codes. Large inputs stay
 * linear or n log n: name lookups and duplicate checks sort, the tree is walked without recursion.
 */
#include "config/load.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/file.h"
#include "sched/core/hash.h"

/* ---- pre-scan: syntax, aliases, one document --------------------------------------------------
 */

struct pframe {
    bool is_map;
    bool want_key;
    long index;
    char key[KEY_CAP];
    size_t key_len;
};

/* A node starts inside the innermost frame. */
static void pframe_node_start(struct pframe *f)
{
    if (!f->is_map)
        f->index++;
}

/* A node ended inside the innermost frame; `key` is its text when it was a scalar key. */
static void pframe_node_done(struct pframe *f, const yaml_event_t *ev)
{
    if (!f->is_map)
        return;
    if (f->want_key) {
        f->key_len = 0;
        if (ev && ev->type == YAML_SCALAR_EVENT) {
            size_t n = ev->data.scalar.length;
            f->key_len = n < KEY_CAP ? n : KEY_CAP;
            memcpy(f->key, ev->data.scalar.value, f->key_len);
        }
    }
    f->want_key = !f->want_key;
}

/* The key path of the node that just started inside the open frames. */
static void prescan_path(struct ctx *x, const struct pframe *fr, size_t depth)
{
    x->depth = 0;
    for (size_t i = 0; i < depth && i < PATH_DEPTH; i++) {
        if (!fr[i].is_map)
            cl_path_index(x, fr[i].index);
        else if (!fr[i].want_key)
            cl_path_key(x, fr[i].key, fr[i].key_len);
    }
    if (depth > PATH_DEPTH && x->depth < PATH_DEPTH)
        cl_path_push(x, "...");
    else if (depth > PATH_DEPTH)
        x->depth = PATH_DEPTH + 1;
}

int cl_prescan(struct ctx *x)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return cl_oom(x);
    yaml_parser_set_input_string(&p, (const unsigned char *)x->data, x->len);
    struct pframe fr[PATH_DEPTH];
    size_t depth = 0; /* frames open; only the first PATH_DEPTH are kept */
    int docs = 0, rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = cl_yaml_fail(x, &p);
            break;
        }
        struct pframe *top = depth > 0 && depth <= PATH_DEPTH ? &fr[depth - 1] : NULL;
        bool done = false;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                rc = cl_fail(x, &ev.start_mark, "only one YAML document is allowed");
            break;
        case YAML_ALIAS_EVENT:
            if (top)
                pframe_node_start(top);
            prescan_path(x, fr, depth);
            rc = cl_fail(x, &ev.start_mark, "aliases are not supported");
            break;
        case YAML_SCALAR_EVENT:
            if (top) {
                pframe_node_start(top);
                pframe_node_done(top, &ev);
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (top)
                pframe_node_start(top);
            if (depth >= CONFIG_MAX_DEPTH) {
                /* also keeps libyaml's scanner, quadratic in flow nesting, fast */
                prescan_path(x, fr, depth);
                rc = cl_fail(x, &ev.start_mark, "nesting deeper than %d levels", CONFIG_MAX_DEPTH);
                break;
            }
            if (depth < PATH_DEPTH) {
                struct pframe *f = &fr[depth];
                f->is_map = ev.type == YAML_MAPPING_START_EVENT;
                f->want_key = true;
                f->index = -1;
                f->key_len = 0;
            }
            depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0)
                depth--;
            if (depth > 0 && depth <= PATH_DEPTH)
                pframe_node_done(&fr[depth - 1], NULL);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc || done)
            break;
    }
    yaml_parser_delete(&p);
    x->depth = 0;
    if (!rc && docs == 0) {
        yaml_mark_t m = {0, 0, 0};
        rc = cl_fail(x, &m,
                     "empty file: expected a mapping with apiVersion: " CONFIG_API_VERSION
                     " and kind: " CONFIG_KIND);
    }
    return rc;
}

/* ---- load -------------------------------------------------------------------------------------
 */

static int load_root(struct ctx *x, yaml_node_t *root)
{
    static const char *const keys[] = {
        "apiVersion", "kind",    "device", "devices",  "topology",     "fairShare", "starvation",
        "flavors",    "cohorts", "queues", "profiles", "quotaMapping", "hami",      NULL};
    if (root->type != YAML_MAPPING_NODE) {
        char d[ESC_CAP + 32];
        return cl_fail(x, &root->start_mark,
                       "the document must be a mapping with apiVersion and kind, got %s",
                       cl_describe(root, d, sizeof(d)));
    }
    /* the header first, so that a file of another kind is named as such */
    int rc = cl_check_map(x, root, NULL);
    if (rc)
        return rc;
    static const struct {
        const char *key, *want;
    } ids[] = {{"apiVersion", CONFIG_API_VERSION}, {"kind", CONFIG_KIND}};
    for (int i = 0; i < 2; i++) {
        yaml_node_t *v = cl_map_opt(x, root, ids[i].key);
        if (!v) {
            char extra[64];
            snprintf(extra, sizeof(extra), " (%s: %s)", ids[i].key, ids[i].want);
            return cl_missing(x, root, ids[i].key, extra);
        }
        cl_path_push(x, ids[i].key);
        const char *s;
        size_t len;
        rc = cl_get_text(x, v, &s, &len);
        if (!rc && (len != strlen(ids[i].want) || memcmp(s, ids[i].want, len) != 0)) {
            char e[ESC_CAP];
            rc = cl_fail(x, &v->start_mark, "unsupported %s \"%s\" (expected %s)", ids[i].key,
                         cl_esc(s, len, e, sizeof(e)), ids[i].want);
        }
        cl_path_pop(x);
        if (rc)
            return rc;
    }
    rc = cl_check_map(x, root, keys);
    if (rc)
        return rc;
    yaml_node_t *v;
    if ((v = cl_map_opt(x, root, "device")) != NULL) {
        cl_path_push(x, "device");
        rc = cl_parse_device(x, v);
        cl_path_pop(x);
        if (rc)
            return rc;
    }
    if ((v = cl_map_opt(x, root, "devices")) != NULL) {
        cl_path_push(x, "devices");
        rc = cl_map_opt(x, root, "device")
                 ? cl_fail(x, &v->start_mark,
                           "both device and devices are given: list every device under devices")
                 : cl_parse_devices(x, v);
        cl_path_pop(x);
        if (rc)
            return rc;
    }
    if ((v = cl_map_opt(x, root, "topology")) != NULL) {
        cl_path_push(x, "topology");
        rc = cl_parse_topology(x, v);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, root, "fairShare")) != NULL) {
        cl_path_push(x, "fairShare");
        rc = cl_parse_fair_share(x, v);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, root, "starvation")) != NULL) {
        cl_path_push(x, "starvation");
        rc = cl_parse_starvation(x, v);
        cl_path_pop(x);
    }
    if (!rc && (v = cl_map_opt(x, root, "hami")) != NULL) {
        cl_path_push(x, "hami");
        rc = cl_parse_hami(x, v);
        cl_path_pop(x);
    }
    if (!rc)
        rc = cl_parse_flavors(x, cl_map_opt(x, root, "flavors"));
    if (!rc)
        rc = cl_parse_profiles(x, cl_map_opt(x, root, "profiles"));
    if (!rc)
        rc = cl_parse_qmap(x, cl_map_opt(x, root, "quotaMapping"));
    if (!rc)
        rc = cl_parse_tree(x, cl_map_opt(x, root, "cohorts"), cl_map_opt(x, root, "queues"));
    if (!rc)
        rc = cl_qmap_intern(x);
    return rc;
}

int config_load_buffer(const char *name, const char *data, size_t len, struct config **out,
                       struct sched_errbuf *eb)
{
    if (!name)
        name = "<buffer>";
    if (!out)
        return sched_fail(eb, SCHED_EINVAL, "%s: no output", name);
    if (!data && len)
        return sched_fail(eb, SCHED_EINVAL, "%s: no data", name);
    if (len > CONFIG_MAX_BYTES)
        return sched_fail(eb, SCHED_EINVAL, "%s: larger than 4 MiB (%zu bytes)", name, len);
    if (!data)
        data = "";
    struct ctx x;
    memset(&x, 0, sizeof(x));
    x.file = name;
    x.data = data;
    x.len = len;
    x.eb = eb;
    int rc = cl_prescan(&x);
    if (rc)
        return rc;

    x.pool = config_pool_new();
    x.tmp = config_pool_new();
    struct config *c = x.pool ? config_pool_alloc(x.pool, sizeof(*c)) : NULL;
    if (c) {
        c->pool = x.pool;
        c->path = config_pool_strndup(x.pool, name, strlen(name));
    }
    if (!x.tmp || !c || !c->path) {
        config_pool_free(x.pool);
        config_pool_free(x.tmp);
        return cl_oom(&x);
    }
    x.c = c;
    c->version = sched_hash(SCHED_HASH_INIT, data, len);
    c->fair_half_life_ms = 24LL * 3600000;
    c->starve_after_ms = 10LL * 60000;
    c->max_reservations = 1;
    c->probation_min_gpus = CONFIG_PROBATION_MIN_GPUS;
    c->device = RES_DEFAULT_DEVICE;
    c->device_unit = "";

    struct ydoc y;
    yaml_node_t *root = NULL;
    rc = ydoc_open(&y, name, data, len, 0, eb); /* the pre-scan limited the nesting */
    if (!rc)
        rc = ydoc_next(&y, &root);
    if (!rc && !root) {
        yaml_mark_t m = {0, 0, 0};
        rc = cl_fail(&x, &m, "empty file");
    }
    if (!rc) {
        x.y = &y;
        rc = load_root(&x, root);
    }
    ydoc_close(&y);
    free(x.qe);
    config_pool_free(x.tmp);
    if (rc) {
        config_pool_free(x.pool);
        return rc;
    }
    *out = c;
    return 0;
}

static int load_path(const char *path, bool pipe_ok, struct config **out, struct sched_errbuf *eb)
{
    if (!path)
        return sched_fail(eb, SCHED_EINVAL, "config: no file name");
    if (!out)
        return sched_fail(eb, SCHED_EINVAL, "%s: no output", path);
    char *buf = NULL;
    size_t len = 0;
    int rc = pipe_ok ? config_file_read_pipe(path, CONFIG_MAX_BYTES, &buf, &len, eb)
                     : config_file_read(path, CONFIG_MAX_BYTES, &buf, &len, eb);
    if (rc == 0)
        rc = config_load_buffer(path, buf, len, out, eb);
    free(buf);
    return rc;
}

int config_load_file(const char *path, struct config **out, struct sched_errbuf *eb)
{
    return load_path(path, false, out, eb);
}

int config_load_cli(const char *path, struct config **out, struct sched_errbuf *eb)
{
    return load_path(path, true, out, eb);
}
