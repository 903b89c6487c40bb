/* config/load.h: what the files of the configuration loader share (internal to config/).
 *
 * Owns: the load context (`struct ctx`), the key path kept for messages, the limits of a
 * configuration file and the helpers the loader's files call each other through: error
 * reporting ("FILE:LINE:COLUMN: KEY.PATH: problem"), typed values, mapping checks and name tables
 * (load_values.c), the pre-scan (load.c), the sections (load_sections.c), the quota tree
 * (load_tree.c). The YAML reading itself is config/yaml_doc.h's.
 * Must not touch: anything outside config/; nothing here is part of the config model
 * (config/model.h), which the core includes without libyaml.
 */
#ifndef CONFIG_LOAD_H
#define CONFIG_LOAD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "config/config.h"
#include "config/file.h"
#include "config/internal.h"
#include "config/yaml_doc.h"

#define CONFIG_API_VERSION "gangsched.io/v1alpha1"
#define CONFIG_KIND        "SchedulerConfig"

#define CONFIG_MAX_BYTES          CONFIG_FILE_MAX /* file size limit (config/file.h) */
#define CONFIG_MAX_FLAVORS        256
#define CONFIG_MAX_QUOTA_CELLS    ((size_t)1 << 22) /* flavors x RES_MAX x nodes with a quota */
#define CONFIG_MAX_WEIGHT         1e6
#define CONFIG_MAX_QTY            ((int64_t)1 << 62)
#define CONFIG_MAX_RESERVE        1000
#define CONFIG_MAX_PROBATION_GPUS 1000000 /* starvation.probationMinGpus */
#define CONFIG_NAME_MAX           253
#define CONFIG_MAX_LEVELS         (TOPO_MAX_LEVELS - 1)

#define CONFIG_MAX_DEPTH 32 /* nesting of YAML collections (the schema needs 7) */

#define PATH_DEPTH 8  /* key path segments kept for messages */
#define QUOTE_MAX  64 /* visible characters of user text quoted in a message */
#define KEY_CAP    80 /* bytes of a key kept by the pre-scan */

#define ESC_CAP (QUOTE_MAX * 4 + 8)

struct sbuf {
    char *p;
    size_t cap, len;
};

/* ---- load context and error reporting ---------------------------------------------------------
 */

struct seg {
    const char *key; /* NULL: a sequence index */
    size_t key_len;
    long index;
};

/* A resource name the process has not interned yet (interned by load_tree.c once the whole
 * file has validated). */
struct pending_res {
    const char *name;
    yaml_mark_t mark;
    const char *path;
};

/* A cohort (owners[0 .. n_cohorts)) or a queue (owners[n_cohorts ..)) during the load. */
struct owner {
    struct config_quota_set *set;
    bool is_queue;
    uint32_t idx;
    const char *name;
    yaml_mark_t name_mark;
    const char *ref; /* parent (cohort) or cohort (queue); NULL when absent */
    yaml_mark_t ref_mark;
    yaml_mark_t quota_mark;
    uint32_t n_entries;
};

/* One (flavor, resource) quota read from the file. */
struct qentry {
    uint32_t owner;
    uint32_t flavor;
    int res; /* resource id >= 0, or -1 - index into pending */
    struct config_quota q;
};

struct qm_raw;

/* Name table entry used for duplicate checks and lookups during the load. */
struct name_ent {
    const char *name;
    uint32_t idx;
    uint32_t kind; /* 0 cohort, 1 queue (only in the tree table) */
    yaml_mark_t mark;
};

struct ctx {
    const char *file;
    const char *data;
    size_t len;
    struct ydoc *y; /* the document being read */
    struct sched_errbuf *eb;
    struct seg path[PATH_DEPTH];
    int depth;
    struct config *c;
    struct config_pool *pool; /* the result */
    struct config_pool *tmp;  /* scratch of this load */
    bool flavors_declared;
    struct name_ent *flavor_ents; /* sorted */
    struct name_ent *profile_ents;
    struct owner *owners;
    struct pending_res pending[RES_MAX];
    int n_pending;
    struct qentry *qe; /* malloc'd, grows */
    size_t n_qe, cap_qe;
    struct qm_raw *qm; /* quotaMapping entries as read (load_qmap.c), in tmp */
    uint32_t n_qm;
    /* [n_flavors], in tmp: where each flavor's resourceWeights entries were written (their
     * names are resolved after interning, load_tree.c) */
    yaml_mark_t **weight_marks;
};

__attribute__((format(printf, 2, 3))) void cl_sb_printf(struct sbuf *b, const char *fmt, ...);
void cl_sb_escape(struct sbuf *b, const char *s, size_t len);
const char *cl_esc(const char *s, size_t len, char *buf, size_t cap);
void cl_path_key(struct ctx *x, const char *key, size_t len);
void cl_path_push(struct ctx *x, const char *key);
void cl_path_index(struct ctx *x, long i);
void cl_path_pop(struct ctx *x);
void cl_path_set(struct ctx *x, const char *section, long i, const char *key);
void cl_format_path(const struct ctx *x, char *buf, size_t cap);
__attribute__((format(printf, 4, 0))) int cl_fail_v(struct ctx *x, size_t line, size_t column,
                                                    const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4))) int cl_fail(struct ctx *x, const yaml_mark_t *m,
                                                  const char *fmt, ...);
int cl_oom(struct ctx *x);
int cl_yaml_fail(struct ctx *x, const yaml_parser_t *p);
const char *cl_describe(const yaml_node_t *n, char *buf, size_t cap);
int cl_expect_fail(struct ctx *x, const yaml_node_t *n, const char *what);
int cl_expect_mapping(struct ctx *x, const yaml_node_t *n);
int cl_expect_sequence(struct ctx *x, const yaml_node_t *n);
int cl_get_text(struct ctx *x, const yaml_node_t *n, const char **s, size_t *len);
int cl_get_name(struct ctx *x, const yaml_node_t *n, const char **out);
int cl_get_bool(struct ctx *x, const yaml_node_t *n, bool *out);
int cl_get_number(struct ctx *x, const yaml_node_t *n, double lo, bool lo_open, double hi,
                  double *out);
int cl_get_int(struct ctx *x, const yaml_node_t *n, long long lo, long long hi, long long *out);
int cl_get_enum(struct ctx *x, const yaml_node_t *n, const char *const *words, int *out);
int cl_get_duration(struct ctx *x, const yaml_node_t *n, int64_t *out);
int cl_get_quantity(struct ctx *x, const yaml_node_t *n, int scale, int64_t *out);
int cl_check_map(struct ctx *x, yaml_node_t *m, const char *const *allowed);
yaml_node_t *cl_map_opt(struct ctx *x, yaml_node_t *m, const char *key);
int cl_missing(struct ctx *x, const yaml_node_t *m, const char *key, const char *extra);
int cl_named_entry(struct ctx *x, yaml_node_t *n, const char *const *keys, const char **name,
                   yaml_mark_t *mark);
int cl_get_names(struct ctx *x, const yaml_node_t *v, bool qualified, const char ***out,
                 uint32_t *n);
int cl_name_ent_cmp(const void *a, const void *b);
long cl_name_sort_dups(struct name_ent *e, size_t n, size_t *first);
const struct name_ent *cl_name_find(const struct name_ent *e, size_t n, const char *name);
const char *cl_name_list(const char *const *names, size_t n, char *buf, size_t cap);
int cl_prescan(struct ctx *x);

/* load_sections.c: the sections before the quota tree */
int cl_parse_device(struct ctx *x, yaml_node_t *d);
/* `devices:`: the first entry is the device (config.device), the others config.kinds. */
int cl_parse_devices(struct ctx *x, yaml_node_t *seq);
int cl_parse_topology(struct ctx *x, yaml_node_t *t);
int cl_parse_fair_share(struct ctx *x, yaml_node_t *f);
int cl_parse_starvation(struct ctx *x, yaml_node_t *s);
int cl_parse_hami(struct ctx *x, yaml_node_t *h);
int cl_parse_flavors(struct ctx *x, yaml_node_t *fl);
int cl_parse_profiles(struct ctx *x, yaml_node_t *pl);
/* load_tree.c: cohorts, queues and their quotas, then the resolved tree and lookup tables */
int cl_parse_tree(struct ctx *x, yaml_node_t *cl, yaml_node_t *ql);
/* load_qmap.c: quotaMapping, read before the tree (NULL = none); checked against the tree's
 * quota entries before it interns its names (cl_qmap_check, from load_tree.c); interned after
 * the tree (cl_qmap_intern). */
int cl_parse_qmap(struct ctx *x, yaml_node_t *seq);
int cl_qmap_check(struct ctx *x);
int cl_qmap_intern(struct ctx *x);

#endif
