/* config/import.c: `gangsched config import-kueue FILE...`: Kueue and Volcano queue manifests
 * to a gangsched configuration (docs/config.md, "Importing from Kueue and Volcano").
 *
 * Reads every YAML document of every file (also `kind: List` and *List objects as printed by
 * `kubectl get -o yaml`): Kueue's ResourceFlavor, Cohort, ClusterQueue and LocalQueue in
 * kueue.x-k8s.io/v1beta1 (ClusterQueue spec.cohort, Cohort spec.parent) and v1beta2
 * (spec.cohortName, spec.parentName), and Volcano's Queue (scheduling.volcano.sh/v1beta1). Writes
 * the configuration on `out` with a comment for every field it cannot map, then loads the result
 * with the configuration's own loader, so what it prints always passes `config check`.
 *
 * Mapping (field names from Kueue's and Volcano's API types):
 *   ResourceFlavor  metadata.name, spec.nodeLabels -> flavors[]; nodeTaints, tolerations,
 *                   topologyName -> comments
 *   Cohort          metadata.name, spec.parent | parentName, spec.resourceGroups -> cohorts[];
 *                   fairSharing -> comment
 *   ClusterQueue    metadata.name -> queues[].name; spec.cohort | cohortName -> cohort;
 *                   resourceGroups[].flavors[].resources[] {name, nominalQuota, borrowingLimit,
 *                   lendingLimit} -> quota.FLAVOR.RESOURCE; queueingStrategy -> ordering;
 *                   preemption.withinClusterQueue -> preemption.withinQueue,
 *                   preemption.reclaimWithinCohort -> preemption.reclaimWithinCohort;
 *                   fairSharing.weight -> weight; the rest -> comments
 *   LocalQueue      NAMESPACE/NAME -> localQueues of the queue of its spec.clusterQueue
 *   Volcano Queue   weight, priority; deserved -> nominal, capability -> borrowingLimit
 *                   (capability - deserved), guarantee.resource -> lendingLimit (deserved -
 *                   guarantee) on flavor "default"; parent -> a cohort named after the parent
 *                   (queues without one share cohort "root", as Volcano's queues share the
 *                   cluster); a queue that is some queue's parent becomes a cohort
 *
 * Must not touch: anything but its input files and `out`/`err`.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config/config.h"
#include "config/yaml_doc.h"
#include "sched/core/quantity.h"

#define IMP_MAX 4096 /* objects of each kind */
#define Q_MAX   256  /* quota lines of one object */
#define N_MAX   64   /* notes of one object */

struct quota_line {
    const char *flavor, *resource, *nominal, *borrow, *lend;
};

struct obj {
    const char *name, *parent; /* cohort of a queue, parent of a cohort */
    const char *ordering, *within, *reclaim, *weight, *priority;
    struct quota_line q[Q_MAX];
    uint32_t n_q;
    const char *note[N_MAX]; /* comments, written above the object */
    uint32_t n_note;
    const char *const *labels; /* flavor: key, value pairs */
    uint32_t n_labels;
    const char *const *weights; /* flavor: resourceWeights, resource and weight pairs */
    uint32_t n_weights;
    bool declared; /* a Cohort object (or a Volcano parent queue), not only a name */
};

struct lq {
    const char *ns, *name, *cluster_queue;
};

struct imp {
    struct obj flavors[IMP_MAX / 16], cohorts[IMP_MAX / 4], queues[IMP_MAX];
    struct lq lq[IMP_MAX]; /* LocalQueues, for their ClusterQueue's localQueues */
    uint32_t n_lq;
    uint32_t n_flavors, n_cohorts, n_queues;
    const char *notes[IMP_MAX]; /* file-level comments */
    uint32_t n_notes;
    char **strings; /* every string made here, freed at the end */
    size_t n_strings, cap_strings;
    yaml_document_t *docs;
    const char **doc_file; /* [cap_docs]: the input file of each document */
    size_t n_docs, cap_docs;
    struct mark *marks; /* the output's scalars, in order (qs) */
    size_t n_marks, cap_marks;
    const char *file;
    FILE *err;
    bool oom;
};

/* ---- strings ------------------------------------------------------------------------------ */

static const char *keep(struct imp *m, char *s)
{
    if (!s) {
        m->oom = true;
        return "";
    }
    if (m->n_strings == m->cap_strings) {
        size_t c = m->cap_strings ? m->cap_strings * 2 : 256;
        char **p = realloc(m->strings, c * sizeof(*p));
        if (!p) {
            free(s);
            m->oom = true;
            return "";
        }
        m->strings = p;
        m->cap_strings = c;
    }
    m->strings[m->n_strings++] = s;
    return s;
}

static const char *fmt(struct imp *m, const char *f, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt(struct imp *m, const char *f, ...)
{
    va_list ap, ap2;
    va_start(ap, f);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        vsnprintf(s, (size_t)n + 1, f, ap2);
    va_end(ap2);
    return keep(m, s);
}

/* ---- reading YAML documents -------------------------------------------------------------- */

static yaml_node_t *node(yaml_document_t *d, int id)
{
    return id ? yaml_document_get_node(d, id) : NULL;
}

static yaml_node_t *get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    return ydoc_doc_get(d, map, key);
}

static const char *str(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *path_str(yaml_document_t *d, yaml_node_t *n, const char *a, const char *b)
{
    return str(get(d, b ? get(d, n, a) : n, b ? b : a));
}

#define EACH_ITEM(d, seq, it)                                                                      \
    for (yaml_node_item_t *it##_p =                                                                \
             (seq) && (seq)->type == YAML_SEQUENCE_NODE ? (seq)->data.sequence.items.start : NULL; \
         it##_p && it##_p < (seq)->data.sequence.items.top; it##_p++)                              \
        for (yaml_node_t *it = node(d, *it##_p); it; it = NULL)

#define EACH_PAIR(d, map, k, v)                                                                    \
    for (yaml_node_pair_t *k##_p =                                                                 \
             (map) && (map)->type == YAML_MAPPING_NODE ? (map)->data.mapping.pairs.start : NULL;   \
         k##_p && k##_p < (map)->data.mapping.pairs.top; k##_p++)                                  \
        for (yaml_node_t *k = node(d, k##_p->key), *v = node(d, k##_p->value); k && v; k = NULL)

/* The string pairs of a mapping (labels, weights) into *out: key, value, ...; pairs that are
 * not two strings are left out. 0, or 1 when out of memory. */
static int string_pairs(struct imp *m, yaml_document_t *d, yaml_node_t *map,
                        const char *const **out, uint32_t *n_out)
{
    size_t n = map && map->type == YAML_MAPPING_NODE
                   ? (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start)
                   : 0;
    if (n == 0) { /* (keep() takes NULL for a failed allocation) */
        *out = NULL;
        *n_out = 0;
        return 0;
    }
    const char **kv = calloc(2 * n, sizeof(*kv));
    if (!kv)
        return m->oom = true, 1;
    keep(m, (char *)kv);
    uint32_t got = 0;
    EACH_PAIR(d, map, k, v)
    {
        if (str(k) && str(v)) {
            kv[2 * got] = str(k);
            kv[2 * got + 1] = str(v);
            got++;
        }
    }
    *out = kv;
    *n_out = got;
    return 0;
}

static void note(struct imp *m, struct obj *o, const char *text)
{
    (void)m;
    if (o->n_note < N_MAX)
        o->note[o->n_note++] = text;
}

/* A comment above the whole configuration. */
static void file_note(struct imp *m, const char *text)
{
    if (m->n_notes < IMP_MAX)
        m->notes[m->n_notes++] = text;
}

static int where(struct imp *m, yaml_node_t *n, const char *what)
{
    fprintf(m->err, "gangsched config import-kueue: %s:%lu:%lu: %s\n", m->file,
            (unsigned long)n->start_mark.line + 1, (unsigned long)n->start_mark.column + 1, what);
    return 1;
}

static struct obj *find(struct obj *arr, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(arr[i].name, name) == 0)
            return &arr[i];
    return NULL;
}

static struct obj *add(struct imp *m, struct obj *arr, uint32_t *n, uint32_t cap, const char *name)
{
    struct obj *o = find(arr, *n, name);
    if (o)
        return o;
    if (*n == cap) {
        m->oom = true;
        return NULL;
    }
    o = &arr[(*n)++];
    memset(o, 0, sizeof(*o));
    o->name = name;
    return o;
}

static struct obj *cohort_ref(struct imp *m, const char *name)
{
    return add(m, m->cohorts, &m->n_cohorts, IMP_MAX / 4, name);
}

/* resourceGroups[] of a ClusterQueue or a Cohort into o's quota lines. */
static int resource_groups(struct imp *m, yaml_document_t *d, yaml_node_t *spec, struct obj *o)
{
    EACH_ITEM(d, get(d, spec, "resourceGroups"), rg)
    {
        EACH_ITEM(d, get(d, rg, "flavors"), fq)
        {
            const char *flavor = path_str(d, fq, "name", NULL);
            if (!flavor)
                return where(m, fq, "resourceGroups[].flavors[]: no name");
            add(m, m->flavors, &m->n_flavors, IMP_MAX / 16, flavor);
            EACH_ITEM(d, get(d, fq, "resources"), r)
            {
                const char *res = path_str(d, r, "name", NULL);
                const char *nom = path_str(d, r, "nominalQuota", NULL);
                if (!res || !nom)
                    return where(m, r, "resources[]: name and nominalQuota are required");
                if (o->n_q == Q_MAX)
                    return where(m, r, "too many resources");
                o->q[o->n_q++] =
                    (struct quota_line){flavor, res, nom, path_str(d, r, "borrowingLimit", NULL),
                                        path_str(d, r, "lendingLimit", NULL)};
            }
        }
    }
    return 0;
}

/* Notes for the fields of `spec` that are not in `mapped` (a NULL-terminated list). */
static void unmapped(struct imp *m, yaml_document_t *d, yaml_node_t *spec, struct obj *o,
                     const char *kind, const char *const *mapped)
{
    EACH_PAIR(d, spec, k, v)
    {
        const char *key = str(k);
        bool known = false;
        for (const char *const *p = mapped; *p && !known; p++)
            known = key && strcmp(key, *p) == 0;
        /* {} selects every namespace, as gangsched does */
        if (key && strcmp(key, "namespaceSelector") == 0 && v->type == YAML_MAPPING_NODE &&
            v->data.mapping.pairs.start == v->data.mapping.pairs.top)
            known = true;
        if (!known && key)
            note(m, o,
                 fmt(m, "%s %s: spec.%s is not mapped (%s:%lu)", kind, o->name, key, m->file,
                     (unsigned long)k->start_mark.line + 1));
    }
}

static const char *policy(struct imp *m, struct obj *o, const char *v, const char *field)
{
    static const char *const ok[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"};
    for (size_t i = 0; v && i < 4; i++)
        if (strcmp(v, ok[i]) == 0)
            return v;
    if (v)
        note(m, o, fmt(m, "%s %s is not a gangsched value", field, v));
    return NULL;
}

static int kueue_cluster_queue(struct imp *m, yaml_document_t *d, yaml_node_t *obj,
                               const char *name, bool v1beta2)
{
    yaml_node_t *spec = get(d, obj, "spec");
    struct obj *q = add(m, m->queues, &m->n_queues, IMP_MAX, name);
    if (!q)
        return 1;
    const char *cohort = path_str(d, spec, v1beta2 ? "cohortName" : "cohort", NULL);
    if (cohort) {
        q->parent = cohort;
        cohort_ref(m, cohort);
    }
    if (path_str(d, spec, v1beta2 ? "cohort" : "cohortName", NULL))
        note(m, q,
             fmt(m, "ClusterQueue %s: spec.%s belongs to kueue.x-k8s.io/%s; ignored", name,
                 v1beta2 ? "cohort" : "cohortName", v1beta2 ? "v1beta1" : "v1beta2"));
    const char *strategy = path_str(d, spec, "queueingStrategy", NULL);
    if (strategy && strcmp(strategy, "StrictFIFO") != 0 && strcmp(strategy, "BestEffortFIFO") != 0)
        note(m, q, fmt(m, "queueingStrategy %s is not a gangsched ordering", strategy));
    else
        q->ordering = strategy;
    yaml_node_t *pre = get(d, spec, "preemption");
    q->within =
        policy(m, q, path_str(d, pre, "withinClusterQueue", NULL), "preemption.withinClusterQueue");
    if (q->within && strcmp(q->within, "Any") == 0) {
        note(m, q, "preemption.withinClusterQueue Any is not a Kueue value");
        q->within = NULL;
    }
    q->reclaim = policy(m, q, path_str(d, pre, "reclaimWithinCohort", NULL),
                        "preemption.reclaimWithinCohort");
    if (q->reclaim && strcmp(q->reclaim, "LowerOrNewerEqualPriority") == 0) {
        note(m, q, "preemption.reclaimWithinCohort LowerOrNewerEqualPriority is not a value");
        q->reclaim = NULL;
    }
    if (get(d, pre, "borrowWithinCohort"))
        note(m, q,
             "preemption.borrowWithinCohort is not mapped: gangsched preempts to borrow "
             "only for fair share (fairSharePreemption)");
    q->weight = path_str(d, spec, "fairSharing", "weight");
    if (q->weight && strcmp(q->weight, "0") == 0) {
        note(m, q,
             "fairSharing.weight 0 (never borrows first) has no gangsched equivalent; "
             "weight left at its default");
        q->weight = NULL;
    }
    const char *stop = path_str(d, spec, "stopPolicy", NULL);
    if (stop && strcmp(stop, "None") != 0)
        note(m, q,
             fmt(m, "stopPolicy %s: run 'gangctl queue %s %s' once the scheduler runs", stop,
                 strcmp(stop, "Hold") == 0 ? "hold" : "drain", name));
    static const char *const mapped[] = {"resourceGroups",   "cohort",     "cohortName",
                                         "queueingStrategy", "preemption", "fairSharing",
                                         "stopPolicy",       NULL};
    unmapped(m, d, spec, q, "ClusterQueue", mapped);
    return resource_groups(m, d, spec, q);
}

static int kueue_object(struct imp *m, yaml_document_t *d, yaml_node_t *obj, const char *kind,
                        const char *version)
{
    const char *name = path_str(d, obj, "metadata", "name");
    if (!name)
        return where(m, obj, "metadata.name is required");
    bool v1beta2 = strcmp(version, "v1beta2") == 0;
    yaml_node_t *spec = get(d, obj, "spec");
    if (strcmp(kind, "ClusterQueue") == 0)
        return kueue_cluster_queue(m, d, obj, name, v1beta2);
    if (strcmp(kind, "Cohort") == 0) {
        struct obj *c = cohort_ref(m, name);
        if (!c)
            return 1;
        c->declared = true;
        c->parent = path_str(d, spec, v1beta2 ? "parentName" : "parent", NULL);
        if (c->parent)
            cohort_ref(m, c->parent);
        if (get(d, spec, "fairSharing"))
            note(m, c, "Cohort fairSharing.weight is not mapped (gangsched weighs queues)");
        return resource_groups(m, d, spec, c);
    }
    if (strcmp(kind, "ResourceFlavor") == 0) {
        struct obj *f = add(m, m->flavors, &m->n_flavors, IMP_MAX / 16, name);
        if (!f)
            return 1;
        f->declared = true;
        if (string_pairs(m, d, get(d, spec, "nodeLabels"), &f->labels, &f->n_labels) != 0 ||
            string_pairs(m, d, get(d, spec, "resourceWeights"), &f->weights, &f->n_weights) != 0)
            return 1;
        if (get(d, spec, "nodeTaints") || get(d, spec, "tolerations"))
            note(m, f,
                 fmt(m,
                     "ResourceFlavor %s: nodeTaints and tolerations are not mapped: "
                     "gangsched reads taints from the nodes and tolerations from the pods",
                     name));
        if (get(d, spec, "topologyName"))
            note(m, f,
                 fmt(m,
                     "ResourceFlavor %s: topologyName is not mapped: set topology.levels "
                     "to the Topology's node labels",
                     name));
        return 0;
    }
    /* LocalQueue: NAMESPACE/NAME goes to its ClusterQueue's localQueues */
    const char *ns = path_str(d, obj, "metadata", "namespace");
    const char *cq = path_str(d, spec, "clusterQueue", NULL);
    if (!cq)
        return where(m, obj, "LocalQueue: spec.clusterQueue is required");
    if (m->n_lq == IMP_MAX)
        return where(m, obj, "too many LocalQueues");
    m->lq[m->n_lq++] = (struct lq){ns ? ns : "default", name, cq};
    if (get(d, spec, "stopPolicy") && strcmp(path_str(d, spec, "stopPolicy", NULL), "None") != 0)
        file_note(m, fmt(m,
                         "LocalQueue %s/%s: stopPolicy is not mapped (gangsched holds whole "
                         "queues: gangctl queue hold %s)",
                         ns ? ns : "default", name, cq));
    return 0;
}

/* ---- Volcano ----------------------------------------------------------------------------------
 */

/* "a - b" of two quantities of resource `res` as text (NULL when either is missing or bad). */
static const char *qty_minus(struct imp *m, const char *res, const char *a, const char *b)
{
    int r = res_lookup(res);
    int scale = r >= 0 ? res_scale(r) : 0;
    int64_t x, y;
    struct sched_errbuf eb = {{0}};
    if (!a || !b || qty_parse(a, scale, &x, &eb) || qty_parse(b, scale, &y, &eb))
        return NULL;
    char buf[64];
    qty_format(x > y ? x - y : 0, scale, r == RES_MEMORY, buf, sizeof(buf));
    return fmt(m, "%s", buf);
}

static int volcano_queue(struct imp *m, yaml_document_t *d, yaml_node_t *obj)
{
    const char *name = path_str(d, obj, "metadata", "name");
    if (!name)
        return where(m, obj, "metadata.name is required");
    yaml_node_t *spec = get(d, obj, "spec");
    struct obj *q = add(m, m->queues, &m->n_queues, IMP_MAX, name);
    if (!q)
        return 1;
    q->parent = path_str(d, spec, "parent", NULL);
    q->weight = path_str(d, spec, "weight", NULL);
    q->priority = path_str(d, spec, "priority", NULL);
    q->declared = true; /* a Volcano queue (may turn into a cohort) */
    yaml_node_t *deserved = get(d, spec, "deserved"), *cap = get(d, spec, "capability");
    yaml_node_t *guar = get(d, get(d, spec, "guarantee"), "resource");
    add(m, m->flavors, &m->n_flavors, IMP_MAX / 16, "default");
    EACH_PAIR(d, deserved, k, v)
    {
        const char *res = str(k), *nom = str(v);
        if (!res || !nom || q->n_q == Q_MAX)
            continue;
        q->q[q->n_q++] =
            (struct quota_line){"default", res, nom, qty_minus(m, res, str(get(d, cap, res)), nom),
                                qty_minus(m, res, nom, str(get(d, guar, res)))};
    }
    EACH_PAIR(d, cap, k, v)
    {
        if (str(k) && !get(d, deserved, str(k)) && q->n_q < Q_MAX)
            q->q[q->n_q++] = (struct quota_line){"default", str(k), "0", str(v), NULL};
    }
    if (path_str(d, spec, "reclaimable", NULL) &&
        strcmp(path_str(d, spec, "reclaimable", NULL), "false") == 0)
        note(m, q,
             "reclaimable: false is not mapped: set the other queues' "
             "preemption.reclaimWithinCohort to Never to keep its borrowed resources");
    static const char *const mapped[] = {"parent",     "weight",    "priority",    "deserved",
                                         "capability", "guarantee", "reclaimable", NULL};
    unmapped(m, d, spec, q, "Queue", mapped);
    return 0;
}

/* ---- documents ------------------------------------------------------------------------------ */

static int object(struct imp *m, yaml_document_t *d, yaml_node_t *obj)
{
    const char *api = path_str(d, obj, "apiVersion", NULL), *kind = path_str(d, obj, "kind", NULL);
    if (!obj || obj->type != YAML_MAPPING_NODE || !kind)
        return obj ? where(m, obj, "not a Kubernetes object (no kind)") : 0;
    if (strcmp(kind, "List") == 0 ||
        (strlen(kind) > 4 && strcmp(kind + strlen(kind) - 4, "List") == 0)) {
        EACH_ITEM(d, get(d, obj, "items"), it)
        {
            if (object(m, d, it))
                return 1;
        }
        return 0;
    }
    if (!api)
        return where(m, obj, "apiVersion is required");
    if (strncmp(api, "kueue.x-k8s.io/", 15) == 0) {
        const char *v = api + 15;
        if (strcmp(v, "v1beta1") != 0 && strcmp(v, "v1beta2") != 0)
            return where(m, obj,
                         fmt(m, "apiVersion %s: only kueue.x-k8s.io/v1beta1 and v1beta2", api));
        if (strcmp(kind, "ClusterQueue") && strcmp(kind, "Cohort") &&
            strcmp(kind, "ResourceFlavor") && strcmp(kind, "LocalQueue")) {
            file_note(m, fmt(m, "%s:%lu: kind %s skipped (not a queue object)", m->file,
                             (unsigned long)obj->start_mark.line + 1, kind));
            return 0;
        }
        return kueue_object(m, d, obj, kind, v);
    }
    if (strcmp(api, "scheduling.volcano.sh/v1beta1") == 0 && strcmp(kind, "Queue") == 0)
        return volcano_queue(m, d, obj);
    file_note(m, fmt(m, "%s:%lu: %s %s skipped", m->file, (unsigned long)obj->start_mark.line + 1,
                     api, kind));
    return 0;
}

#define IMP_MAX_BYTES ((size_t)64 << 20) /* one input file */

/* The whole file into a malloc'd buffer; 0, or 1 with the message on m->err. */
static int slurp_file(struct imp *m, const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(m->err, "gangsched config import-kueue: cannot read %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap > IMP_MAX_BYTES)
            break;
        char *g = realloc(buf, cap * 2);
        if (!g)
            free(buf);
        buf = g;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return m->oom = true, 1;
    if (bad || n > IMP_MAX_BYTES) {
        fprintf(m->err, "gangsched config import-kueue: %s: %s\n", path,
                bad ? "read error" : "larger than 64 MiB");
        free(buf);
        return 1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Every document of one file (config/yaml_doc.h: nesting guard, syntax errors with
 * file:line:column); the documents are kept, the objects point into them. */
static int read_file(struct imp *m, const char *path)
{
    char *data;
    size_t len;
    if (slurp_file(m, path, &data, &len))
        return 1;
    m->file = path;
    struct sched_errbuf eb = {{0}};
    struct ydoc y;
    int yrc = ydoc_open(&y, path, data, len, YDOC_MAX_DEPTH, &eb), rc = 0;
    while (!yrc && !rc) {
        if (m->n_docs == m->cap_docs) {
            size_t c = m->cap_docs ? m->cap_docs * 2 : 8;
            yaml_document_t *nd = realloc(m->docs, c * sizeof(*nd));
            if (nd)
                m->docs = nd;
            const char **nf = nd ? realloc(m->doc_file, c * sizeof(*nf)) : NULL;
            if (!nf) {
                rc = 1, m->oom = true;
                break;
            }
            m->doc_file = nf, m->cap_docs = c;
        }
        yaml_node_t *root;
        if ((yrc = ydoc_next(&y, &root)) != 0 || !root)
            break;
        m->doc_file[m->n_docs] = path;
        yaml_document_t *d = &m->docs[m->n_docs++];
        ydoc_take(&y, d);
        rc = object(m, d, root);
    }
    if (yrc == SCHED_ENOMEM)
        m->oom = true;
    else if (yrc)
        fprintf(m->err, "gangsched config import-kueue: %s\n", eb.msg);
    ydoc_close(&y);
    free(data);
    return rc || yrc || m->oom;
}

/* ---- writing --------------------------------------------------------------------------------- */

/* Where each scalar of the output starts (its byte offset) and the string it holds: a string
 * of an input document points into that document, so an error of the loader in the output
 * maps back to the input file's line and column (place_of). */
struct mark {
    long off, end; /* [off, end): the scalar, quotes included */
    const char *s;
};

/* A YAML double-quoted scalar: always valid, whatever the text. */
static void qs(struct imp *m, FILE *f, const char *s)
{
    if (m->n_marks == m->cap_marks) {
        size_t c = m->cap_marks ? m->cap_marks * 2 : 256;
        struct mark *nm = realloc(m->marks, c * sizeof(*nm));
        if (nm)
            m->marks = nm, m->cap_marks = c;
    }
    if (m->n_marks < m->cap_marks)
        m->marks[m->n_marks++] = (struct mark){ftell(f), -1, s};
    size_t k = m->n_marks;
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
    if (k > 0 && m->marks[k - 1].s == s)
        m->marks[k - 1].end = ftell(f);
}

/* A Kueue or Volcano weight (a quantity: "1", "0.5", "500m") as a number; 0 when not one. */
static double weight_of(const char *s)
{
    int64_t milli;
    struct sched_errbuf eb = {{0}};
    if (!s || qty_parse(s, 3, &milli, &eb) != 0 || milli <= 0)
        return 0;
    return (double)milli / 1000.0;
}

/* Whether a ResourceFlavor's resourceWeights entry (resource, Kueue quantity) is written: a
 * weight (weight_of: "8", "0.5", "500m") in the loader's range (0, 1e6], for a resource some
 * quota line of the output names (the loader refuses a weight on any other). The weight in *w. */
static bool weight_kept(const struct imp *m, const char *res, const char *val, double *w)
{
    *w = weight_of(val);
    if (!(*w > 0 && *w <= 1e6))
        return false;
    const struct obj *sets[] = {m->cohorts, m->queues};
    const uint32_t ns[] = {m->n_cohorts, m->n_queues};
    for (int s = 0; s < 2; s++)
        for (uint32_t i = 0; i < ns[s]; i++)
            for (uint32_t k = 0; k < sets[s][i].n_q; k++)
                if (sets[s][i].q[k].resource && strcmp(sets[s][i].q[k].resource, res) == 0)
                    return true;
    return false;
}

/* A flavor's mapping `key:` of string pairs; as numbers when `weights` (only those weight_kept
 * keeps, printed with %.15g). */
static void print_pairs(struct imp *m, FILE *f, const char *key, const char *const *kv, uint32_t n,
                        bool weights)
{
    bool head = false;
    for (uint32_t k = 0; k < n; k++) {
        double w = 0;
        if (weights && !weight_kept(m, kv[2 * k], kv[2 * k + 1], &w))
            continue;
        if (!head)
            fprintf(f, "    %s:\n", key);
        head = true;
        fputs("      ", f);
        qs(m, f, kv[2 * k]);
        fputs(": ", f);
        if (weights)
            fprintf(f, "%.15g\n", w);
        else {
            qs(m, f, kv[2 * k + 1]);
            fputc('\n', f);
        }
    }
}

/* A comment line (text made single-line). */
static void comment(FILE *f, const char *indent, const char *text)
{
    fprintf(f, "%s# ", indent);
    for (const char *p = text; *p; p++)
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
}

static void write_quota(struct imp *m, FILE *f, const struct obj *o, const char *indent)
{
    if (o->n_q == 0)
        return;
    fprintf(f, "%squota:\n", indent);
    for (uint32_t i = 0; i < o->n_q; i++) {
        bool first = true; /* of its flavor */
        for (uint32_t k = 0; k < i && first; k++)
            first = strcmp(o->q[k].flavor, o->q[i].flavor) != 0;
        if (!first)
            continue;
        fprintf(f, "%s  ", indent);
        qs(m, f, o->q[i].flavor);
        fputs(":\n", f);
        for (uint32_t k = i; k < o->n_q; k++) {
            const struct quota_line *l = &o->q[k];
            if (strcmp(l->flavor, o->q[i].flavor) != 0)
                continue;
            fprintf(f, "%s    ", indent);
            qs(m, f, l->resource);
            fputs(": {nominal: ", f);
            qs(m, f, l->nominal);
            if (l->borrow && o->parent) {
                fputs(", borrowingLimit: ", f);
                qs(m, f, l->borrow);
            }
            if (l->lend && o->parent) {
                fputs(", lendingLimit: ", f);
                qs(m, f, l->lend);
            }
            fputs("}\n", f);
        }
    }
}

/* The queues: each with its notes, cohort, weight, priority, ordering, LocalQueues, preemption
 * and quota. */
static void write_queues(struct imp *m, FILE *f)
{
    fputs(m->n_queues ? "queues:\n" : "queues: []\n", f);
    for (uint32_t i = 0; i < m->n_queues; i++) {
        const struct obj *q = &m->queues[i];
        for (uint32_t k = 0; k < q->n_note; k++)
            comment(f, "  ", q->note[k]);
        fputs("  - name: ", f);
        qs(m, f, q->name);
        fputc('\n', f);
        if (q->parent) {
            fputs("    cohort: ", f);
            qs(m, f, q->parent);
            fputc('\n', f);
        }
        double w = weight_of(q->weight);
        if (w > 0)
            fprintf(f, "    weight: %g\n", w);
        else if (q->weight)
            comment(f, "    ", fmt(m, "weight %s is not a positive number; default 1", q->weight));
        char *end = NULL;
        long prio = q->priority ? strtol(q->priority, &end, 10) : 0;
        if (q->priority && *end == 0 && prio >= INT32_MIN && prio <= INT32_MAX)
            fprintf(f, "    priority: %ld\n", prio);
        if (q->ordering)
            fprintf(f, "    ordering: %s\n", q->ordering);
        bool first_lq = true;
        for (uint32_t k = 0; k < m->n_lq; k++) {
            if (strcmp(m->lq[k].cluster_queue, q->name) != 0)
                continue;
            fputs(first_lq ? "    localQueues:\n" : "", f);
            first_lq = false;
            fputs("      - ", f);
            qs(m, f, fmt(m, "%s/%s", m->lq[k].ns, m->lq[k].name));
            fputc('\n', f);
        }
        if (q->within || q->reclaim) {
            fputs("    preemption:\n", f);
            if (q->within)
                fprintf(f, "      withinQueue: %s\n", q->within);
            if (q->reclaim)
                fprintf(f, "      reclaimWithinCohort: %s\n", q->reclaim);
        }
        write_quota(m, f, q, "    ");
    }
}

static void write_config(struct imp *m, FILE *f, int argc, char **argv, bool volcano)
{
    fputs("# Generated by 'gangsched config import-kueue' from", f);
    for (int i = 0; i < argc; i++)
        fprintf(f, " %s", argv[i]);
    fputs(".\n# Check it with 'gangsched config check FILE'; docs/config.md explains each field.\n",
          f);
    for (uint32_t i = 0; i < m->n_notes; i++)
        comment(f, "", m->notes[i]);
    for (uint32_t k = 0; k < m->n_lq; k++)
        if (!find(m->queues, m->n_queues, m->lq[k].cluster_queue))
            comment(f, "",
                    fmt(m, "LocalQueue %s/%s: its ClusterQueue %s is not among the inputs",
                        m->lq[k].ns, m->lq[k].name, m->lq[k].cluster_queue));
    fputs("apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n", f);
    bool only_default =
        m->n_flavors == 0 || (m->n_flavors == 1 && strcmp(m->flavors[0].name, "default") == 0 &&
                              !m->flavors[0].declared);
    if (!only_default) {
        fputs("flavors:\n", f);
        for (uint32_t i = 0; i < m->n_flavors; i++) {
            const struct obj *fl = &m->flavors[i];
            for (uint32_t k = 0; k < fl->n_note; k++)
                comment(f, "  ", fl->note[k]);
            for (uint32_t k = 0; k < fl->n_weights; k++) {
                double w;
                if (!weight_kept(m, fl->weights[2 * k], fl->weights[2 * k + 1], &w))
                    comment(f, "  ",
                            fmt(m,
                                "ResourceFlavor %s: resourceWeights %s \"%s\" is not mapped: "
                                "gangsched's weights are in (0, 1000000] and only on "
                                "resources some quota names",
                                fl->name, fl->weights[2 * k], fl->weights[2 * k + 1]));
            }
            if (!fl->declared)
                comment(f, "  ",
                        fmt(m,
                            "flavor %s: no ResourceFlavor among the inputs; it "
                            "matches every node",
                            fl->name));
            fputs("  - name: ", f);
            qs(m, f, fl->name);
            fputc('\n', f);
            print_pairs(m, f, "nodeLabels", fl->labels, fl->n_labels, false);
            print_pairs(m, f, "resourceWeights", fl->weights, fl->n_weights, true);
        }
    }
    if (m->n_cohorts) {
        fputs("cohorts:\n", f);
        bool *done = calloc(m->n_cohorts + 1, 1);
        if (!done) {
            m->oom = true;
            return;
        }
        for (uint32_t emitted = 0, round = 0; emitted < m->n_cohorts && round <= m->n_cohorts;
             round++)
            for (uint32_t i = 0; i < m->n_cohorts; i++) {
                const struct obj *c = &m->cohorts[i];
                const struct obj *par =
                    c->parent ? find(m->cohorts, m->n_cohorts, c->parent) : NULL;
                bool last_round = round == m->n_cohorts;
                if (done[i] || (par && !done[par - m->cohorts] && !last_round))
                    continue;
                done[i] = true;
                emitted++;
                for (uint32_t k = 0; k < c->n_note; k++)
                    comment(f, "  ", c->note[k]);
                if (!c->declared && !volcano)
                    comment(f, "  ",
                            fmt(m,
                                "cohort %s: named by a ClusterQueue, no Cohort "
                                "object among the inputs",
                                c->name));
                fputs("  - name: ", f);
                qs(m, f, c->name);
                fputc('\n', f);
                if (par && !last_round) {
                    fputs("    parent: ", f);
                    qs(m, f, c->parent);
                    fputc('\n', f);
                } else if (c->parent) {
                    comment(f, "    ",
                            fmt(m, "parent %s left out: the cohorts form a cycle", c->parent));
                }
                write_quota(m, f, c, "    ");
            }
        free(done);
    }
    write_queues(m, f);
}

/* Volcano: a queue that is another's parent becomes a cohort; top queues share cohort "root". */
static void volcano_tree(struct imp *m)
{
    for (uint32_t i = 0; i < m->n_queues; i++) {
        struct obj *q = &m->queues[i];
        if (!q->parent)
            q->parent = "root";
        struct obj *c = cohort_ref(m, q->parent);
        if (c)
            c->declared = true;
    }
    for (uint32_t i = 0; i < m->n_queues;) {
        struct obj *q = &m->queues[i];
        struct obj *c = find(m->cohorts, m->n_cohorts, q->name);
        if (!c) {
            i++;
            continue;
        }
        /* a parent queue: its children's deserved add up to its own, so its quota would count
         * twice as a cohort pool */
        c->parent =
            strcmp(q->parent, q->name) != 0 && strcmp(q->name, "root") != 0 ? q->parent : NULL;
        note(m, c,
             fmt(m,
                 "Queue %s is a parent queue: a cohort here; its deserved and capability "
                 "are its children's sum in Volcano and are not repeated",
                 q->name));
        memmove(q, q + 1, (m->n_queues - i - 1) * sizeof(*q));
        m->n_queues--;
    }
}

/* An error of the loader in the output ("<imported>:LINE:COLUMN: what") at the input file's
 * place of the scalar it points into, when that scalar came from an input document:
 * "FILE:LINE:COLUMN: what (<imported>:LINE:COLUMN)". false: no such place (the message stays). */
static bool place_of(const struct imp *m, const char *buf, size_t len, const char *msg, FILE *err)
{
    static const char pre[] = "<imported>:";
    unsigned long line = 0, col = 0;
    int used = 0;
    if (strncmp(msg, pre, sizeof(pre) - 1) != 0 ||
        sscanf(msg + sizeof(pre) - 1, "%lu:%lu: %n", &line, &col, &used) != 2 || used == 0)
        return false;
    size_t at = 0; /* the byte of LINE:COLUMN (libyaml counts characters) */
    for (unsigned long l = 1; l < line && at < len; at++)
        l += buf[at] == '\n';
    for (unsigned long c = 1; c < col && at < len && buf[at] != '\n'; c++)
        for (at++; at < len && ((unsigned char)buf[at] & 0xc0) == 0x80; at++) {
        }
    for (size_t i = 0; i < m->n_marks; i++) {
        const struct mark *k = &m->marks[i];
        if ((long)at < k->off || (long)at >= k->end)
            continue;
        for (size_t d = 0; d < m->n_docs; d++)
            for (yaml_node_t *n = m->docs[d].nodes.start; n < m->docs[d].nodes.top; n++)
                if (n->type == YAML_SCALAR_NODE && (const char *)n->data.scalar.value == k->s) {
                    fprintf(err,
                            "gangsched config import-kueue: %s:%lu:%lu: the result does not "
                            "load: %s (%.*s)\n",
                            m->doc_file[d], (unsigned long)n->start_mark.line + 1,
                            (unsigned long)n->start_mark.column + 1, msg + sizeof(pre) - 1 + used,
                            (int)(sizeof(pre) - 1 + (size_t)used - 2), msg);
                    return true;
                }
        return false;
    }
    return false;
}

int config_import_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct imp *m = calloc(1, sizeof(*m));
    if (!m) {
        fputs("gangsched config import-kueue: out of memory\n", err);
        return 1;
    }
    m->err = err;
    int rc = 0;
    for (int i = 0; i < argc && rc == 0; i++)
        rc = read_file(m, argv[i]);
    bool volcano = false;
    for (uint32_t i = 0; i < m->n_queues && !volcano; i++)
        volcano = m->queues[i].declared;
    if (rc == 0 && volcano)
        volcano_tree(m);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = rc == 0 ? open_memstream(&buf, &len) : NULL;
    if (rc == 0 && !mem)
        m->oom = true;
    if (mem) {
        write_config(m, mem, argc, argv, volcano);
        if (fclose(mem) != 0)
            m->oom = true;
    }
    if (m->oom) {
        fputs("gangsched config import-kueue: out of memory (or more objects than it takes)\n",
              err);
        rc = 1;
    }
    struct config *cfg = NULL;
    struct sched_errbuf eb = {{0}};
    if (rc == 0 && config_load_buffer("<imported>", buf, len, &cfg, &eb) != 0) {
        if (!place_of(m, buf, len, eb.msg, err))
            fprintf(err, "gangsched config import-kueue: the result does not load: %s\n", eb.msg);
        rc = 1;
    }
    config_free(cfg);
    if (rc == 0 && (fwrite(buf, 1, len, out) != len || fflush(out) != 0)) {
        fprintf(err, "gangsched config import-kueue: cannot write the output\n");
        rc = 1;
    }
    free(buf);
    for (size_t i = 0; i < m->n_docs; i++)
        yaml_document_delete(&m->docs[i]);
    free(m->docs);
    free(m->doc_file);
    free(m->marks);
    for (size_t i = 0; i < m->n_strings; i++)
        free(m->strings[i]);
    free(m->strings);
    free(m);
    return rc;
}
