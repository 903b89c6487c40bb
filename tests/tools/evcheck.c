/* tests/tools/evcheck.c: replays a simulator event log (JSON lines) and checks its invariants.
 *
 * Owns: the standalone `evcheck FILE.jsonl` program. Each policy's events are replayed against
 * its own cluster: time never goes backwards, gangs start whole (exactly the submitted pods and
 * GPUs) on declared nodes and GPU indices, no GPU is held by two running jobs, and only running
 * jobs finish or are evicted. An elastic job (submit's "min_pods") may lose members ("shrink":
 * the pods that leave, "left", must be its own, and it keeps at least min_pods) and take them
 * back ("grow": the pods that join, "joined", on free GPUs, never more than it was submitted
 * with). Unknown event types are ignored.
 * Exit status: 0 when every invariant holds, 1 when some do not (one stderr message per
 * violation, naming the line), 2 on usage or I/O errors.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define MAX_PRINTED  100     /* violations printed before the rest are only counted */
#define MAX_NODE_GPU 1048576 /* refuse absurd GPU counts instead of allocating them */

static void die_oom(void)
{
    fprintf(stderr, "evcheck: out of memory\n");
    exit(2);
}

static void *xrealloc(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        die_oom();
    size_t bytes = n * size;
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q)
        die_oom();
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        die_oom();
    memcpy(d, s, n);
    return d;
}

/* Grows *arr (element size `size`) so that it holds at least `need` elements. */
static void grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    *arr = xrealloc(*arr, c, size);
    *cap = c;
}

/* ---- open-addressing string -> index map ---------------------------------------------------- */

struct slot {
    const char *key; /* NULL when empty; owned by the caller, must outlive the map */
    uint32_t hash;
    uint32_t val;
};

struct strmap {
    struct slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
};

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static int strmap_get(const struct strmap *m, const char *key, uint32_t *val)
{
    if (m->cap == 0)
        return 0;
    uint32_t h = hash_str(key);
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct slot *s = &m->slots[i];
        if (!s->key)
            return 0;
        if (s->hash == h && strcmp(s->key, key) == 0) {
            *val = s->val;
            return 1;
        }
    }
}

static void strmap_insert_slot(struct slot *slots, size_t cap, struct slot e)
{
    size_t i = e.hash & (cap - 1);
    while (slots[i].key)
        i = (i + 1) & (cap - 1);
    slots[i] = e;
}

/* Adds a key that is not in the map yet. */
static void strmap_put(struct strmap *m, const char *key, uint32_t val)
{
    if ((m->count + 1) * 4 > m->cap * 3) { /* keep the load under 3/4 */
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct slot *slots = calloc(cap, sizeof(*slots));
        if (!slots)
            die_oom();
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].key)
                strmap_insert_slot(slots, cap, m->slots[i]);
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    struct slot e = {key, hash_str(key), val};
    strmap_insert_slot(m->slots, m->cap, e);
    m->count++;
}

static void strmap_free(struct strmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

/* ---- replay state --------------------------------------------------------------------------- */

struct node {
    char *name;
    uint32_t gpus;
    int32_t *owner; /* job index holding each GPU, or -1 */
};

struct gpu_ref {
    uint32_t node, gpu;
};

enum job_state { JOB_PENDING, JOB_RUNNING, JOB_FINISHED, JOB_EVICTED };

struct job {
    char *id;
    int64_t gpus; /* as submitted; -1 when never submitted */
    int64_t pods;
    int64_t min_pods;  /* elastic: submit's min_pods; else pods */
    int64_t live_pods; /* pods running now */
    enum job_state state;
    size_t submit_line, start_line, end_line;
    struct gpu_ref *held;
    size_t n_held, cap_held;
};

struct policy {
    char *name;
    double last_t;
    size_t last_t_line; /* 0 before the first event */
    struct node *nodes;
    size_t n_nodes, cap_nodes;
    struct strmap node_map;
    struct job *jobs;
    size_t n_jobs, cap_jobs;
    struct strmap job_map;
};

struct checker {
    const char *file;
    size_t line;
    size_t events, starts, violations;
    struct policy *pol;
    size_t n_pol, cap_pol;
    struct strmap pol_map;
};

__attribute__((format(printf, 3, 4))) static void
violation(struct checker *c, const struct policy *p, const char *fmt, ...)
{
    c->violations++;
    if (c->violations > MAX_PRINTED)
        return;
    fprintf(stderr, "%s:%zu: ", c->file, c->line);
    if (p)
        fprintf(stderr, "policy '%s': ", p->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static struct policy *policy_get(struct checker *c, const char *name)
{
    uint32_t idx = 0;
    if (strmap_get(&c->pol_map, name, &idx))
        return &c->pol[idx];
    grow((void **)&c->pol, &c->cap_pol, c->n_pol + 1, sizeof(*c->pol));
    struct policy *p = &c->pol[c->n_pol];
    memset(p, 0, sizeof(*p));
    p->name = xstrdup(name);
    strmap_put(&c->pol_map, p->name, (uint32_t)c->n_pol);
    c->n_pol++;
    return p;
}

/* Returns the job's index, creating a never-submitted record when `create` is set. */
static int job_find(struct policy *p, const char *id, int create, uint32_t *idx)
{
    if (strmap_get(&p->job_map, id, idx))
        return 1;
    if (!create)
        return 0;
    if (p->n_jobs >= INT32_MAX) {
        fprintf(stderr, "evcheck: too many jobs\n");
        exit(2);
    }
    grow((void **)&p->jobs, &p->cap_jobs, p->n_jobs + 1, sizeof(*p->jobs));
    struct job *j = &p->jobs[p->n_jobs];
    memset(j, 0, sizeof(*j));
    j->id = xstrdup(id);
    j->gpus = -1;
    j->pods = -1;
    j->state = JOB_PENDING;
    strmap_put(&p->job_map, j->id, (uint32_t)p->n_jobs);
    *idx = (uint32_t)p->n_jobs++;
    return 1;
}

static void job_release(struct policy *p, uint32_t ji)
{
    struct job *j = &p->jobs[ji];
    for (size_t i = 0; i < j->n_held; i++) {
        struct node *n = &p->nodes[j->held[i].node];
        if (n->owner[j->held[i].gpu] == (int32_t)ji)
            n->owner[j->held[i].gpu] = -1;
    }
    j->n_held = 0;
}

/* ---- field access --------------------------------------------------------------------------- */

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An integer in [lo, hi]; returns 0 when missing, not a number, fractional or out of range. */
static int get_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!cJSON_IsNumber(v))
        return 0;
    double d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return 0;
    *out = (int64_t)d;
    return 1;
}

/* ---- events --------------------------------------------------------------------------------- */

static void on_cluster(struct checker *c, struct policy *p, const cJSON *ev)
{
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(ev, "nodes");
    const cJSON *it;
    if (!cJSON_IsArray(nodes)) {
        violation(c, p, "cluster event without a \"nodes\" array");
        return;
    }
    cJSON_ArrayForEach(it, nodes)
    {
        const char *name = get_str(it, "node");
        int64_t gpus;
        uint32_t idx = 0;
        if (!name) {
            violation(c, p, "cluster node without a string \"node\"");
            continue;
        }
        if (!get_int(cJSON_GetObjectItemCaseSensitive(it, "gpus"), 0, MAX_NODE_GPU, &gpus)) {
            violation(c, p, "node '%s': \"gpus\" is not an integer in 0..%d", name, MAX_NODE_GPU);
            continue;
        }
        if (strmap_get(&p->node_map, name, &idx)) {
            violation(c, p, "node '%s' declared twice", name);
            continue;
        }
        if (p->n_nodes >= UINT32_MAX) {
            fprintf(stderr, "evcheck: too many nodes\n");
            exit(2);
        }
        grow((void **)&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof(*p->nodes));
        struct node *n = &p->nodes[p->n_nodes];
        n->name = xstrdup(name);
        n->gpus = (uint32_t)gpus;
        n->owner = xrealloc(NULL, (size_t)gpus, sizeof(*n->owner));
        for (int64_t g = 0; g < gpus; g++)
            n->owner[g] = -1;
        strmap_put(&p->node_map, n->name, (uint32_t)p->n_nodes);
        p->n_nodes++;
    }
}

static void on_submit(struct checker *c, struct policy *p, const cJSON *ev, const char *id)
{
    int64_t gpus, pods;
    uint32_t ji = 0;
    if (!get_int(cJSON_GetObjectItemCaseSensitive(ev, "gpus"), 0, INT32_MAX, &gpus)) {
        violation(c, p, "job '%s': submit without an integer \"gpus\" >= 0", id);
        return;
    }
    if (!get_int(cJSON_GetObjectItemCaseSensitive(ev, "pods"), 0, INT32_MAX, &pods)) {
        violation(c, p, "job '%s': submit without an integer \"pods\" >= 0", id);
        return;
    }
    if (job_find(p, id, 0, &ji)) {
        struct job *j = &p->jobs[ji];
        if (j->state == JOB_RUNNING) {
            violation(c, p, "job '%s' submitted while running (started at line %zu)", id,
                      j->start_line);
            return;
        }
        if (j->state == JOB_PENDING && j->gpus >= 0) {
            violation(c, p, "job '%s' submitted twice (first at line %zu) without starting", id,
                      j->submit_line);
            return;
        }
        /* A resubmission after finish or eviction is a new incarnation. */
    } else {
        job_find(p, id, 1, &ji);
    }
    struct job *j = &p->jobs[ji];
    j->gpus = gpus;
    j->pods = pods;
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(ev, "min_pods");
    j->min_pods = pods;
    if (mp && (!get_int(mp, 1, pods, &j->min_pods)))
        violation(c, p, "job '%s': \"min_pods\" is not an integer in 1..%lld", id, (long long)pods);
    j->state = JOB_PENDING;
    j->submit_line = c->line;
}

/* Claims one listed GPU for job ji; returns 1 when the entry was an integer (counted). */
static int claim_gpu(struct checker *c, struct policy *p, uint32_t ji, uint32_t ni, const cJSON *g)
{
    struct node *n = &p->nodes[ni];
    struct job *j = &p->jobs[ji];
    int64_t gi;
    if (!get_int(g, INT32_MIN, INT32_MAX, &gi)) {
        violation(c, p, "job '%s': node '%s': GPU index is not an integer", j->id, n->name);
        return 0;
    }
    if (gi < 0 || gi >= (int64_t)n->gpus) {
        violation(c, p, "job '%s': GPU index %lld out of range on node '%s' (0..%ld)", j->id,
                  (long long)gi, n->name, (long)n->gpus - 1);
        return 1;
    }
    int32_t holder = n->owner[gi];
    if (holder == (int32_t)ji) {
        violation(c, p,
                  "job '%s': GPU %lld of node '%s' listed twice (in one start, or a grow "
                  "on a GPU the job holds)",
                  j->id, (long long)gi, n->name);
        return 1;
    }
    if (holder >= 0) {
        const struct job *h = &p->jobs[holder];
        violation(c, p,
                  "job '%s': GPU %lld of node '%s' overcommitted: already held by job '%s' "
                  "(started at line %zu)",
                  j->id, (long long)gi, n->name, h->id, h->start_line);
        return 1;
    }
    n->owner[gi] = (int32_t)ji;
    grow((void **)&j->held, &j->cap_held, j->n_held + 1, sizeof(*j->held));
    j->held[j->n_held].node = ni;
    j->held[j->n_held].gpu = (uint32_t)gi;
    j->n_held++;
    return 1;
}

/* Gives back GPU g of node ni that job ji holds (a member leaves); 0 when it does not hold it. */
static int release_gpu(struct policy *p, uint32_t ji, uint32_t ni, const cJSON *g)
{
    struct job *j = &p->jobs[ji];
    int64_t gi;
    if (!get_int(g, 0, (int64_t)p->nodes[ni].gpus - 1, &gi))
        return 0;
    for (size_t h = 0; h < j->n_held; h++)
        if (j->held[h].node == ni && j->held[h].gpu == (uint32_t)gi) {
            p->nodes[ni].owner[gi] = -1;
            j->held[h] = j->held[--j->n_held];
            return 1;
        }
    return 0;
}

/* The pods array `key` of event `type` of job ji: each pod's GPUs claimed (join) or given back
 * (a member leaves: each must be the job's). Returns the pods listed, -1 when there is no array;
 * *n_gpus: the GPU entries of pods on known nodes (and, joining, on unknown ones). */
static int64_t pods_of(struct checker *c, struct policy *p, uint32_t ji, const cJSON *ev,
                       const char *type, const char *key, int join, int64_t *n_gpus)
{
    const char *id = p->jobs[ji].id;
    const cJSON *pods = cJSON_GetObjectItemCaseSensitive(ev, key);
    *n_gpus = 0;
    if (!cJSON_IsArray(pods)) {
        violation(c, p, "job '%s': %s without a \"%s\" array", id, type, key);
        return -1;
    }
    int64_t n = 0;
    const cJSON *pod, *g;
    cJSON_ArrayForEach(pod, pods)
    {
        n++;
        const char *node = get_str(pod, "node");
        const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(pod, "gpus");
        uint32_t ni = 0;
        if (!node) {
            violation(c, p, "job '%s': pod %lld without a string \"node\"", id, (long long)n);
            continue;
        }
        if (!cJSON_IsArray(gpus)) {
            violation(c, p, "job '%s': pod %lld on node '%s' without a \"gpus\" array", id,
                      (long long)n, node);
            continue;
        }
        int known = strmap_get(&p->node_map, node, &ni);
        if (!known)
            violation(c, p, "job '%s': pod %lld on unknown node '%s'", id, (long long)n, node);
        cJSON_ArrayForEach(g, gpus)
        {
            if (!join && known && !release_gpu(p, ji, ni, g))
                violation(c, p, "job '%s': a pod leaves GPUs of node '%s' it does not hold", id,
                          node);
            else if (join)
                *n_gpus += known ? claim_gpu(c, p, ji, ni, g) : 1;
        }
    }
    return n;
}

/* "shrink" (members of an elastic job leave) or "grow" (they join again). */
static void on_resize(struct checker *c, struct policy *p, const cJSON *ev, const char *id,
                      int grow_it)
{
    uint32_t ji = 0;
    if (!job_find(p, id, 0, &ji) || p->jobs[ji].state != JOB_RUNNING) {
        violation(c, p, "%s of job '%s' that is not running", grow_it ? "grow" : "shrink", id);
        return;
    }
    struct job *j = &p->jobs[ji];
    if (j->min_pods >= j->pods)
        violation(c, p, "%s of job '%s', which is not elastic (no min_pods below its pods)",
                  grow_it ? "grow" : "shrink", id);
    int64_t n_gpus, n = pods_of(c, p, ji, ev, grow_it ? "grow" : "shrink",
                                grow_it ? "joined" : "left", grow_it, &n_gpus);
    if (n < 0)
        return;
    j->live_pods += grow_it ? n : -n;
    if (j->live_pods < j->min_pods)
        violation(c, p, "job '%s' runs on %lld pods, below its min_pods %lld", id,
                  (long long)j->live_pods, (long long)j->min_pods);
    if (j->live_pods > j->pods)
        violation(c, p, "job '%s' runs %lld pods, more than the %lld it was submitted with", id,
                  (long long)j->live_pods, (long long)j->pods);
}

static void on_start(struct checker *c, struct policy *p, const cJSON *ev, const char *id)
{
    uint32_t ji = 0;
    c->starts++;
    if (!job_find(p, id, 0, &ji) || p->jobs[ji].gpus < 0) {
        violation(c, p, "job '%s' started but never submitted", id);
        job_find(p, id, 1, &ji); /* track it anyway so its GPUs count */
    } else if (p->jobs[ji].state == JOB_RUNNING) {
        violation(c, p, "job '%s' started while already running (started at line %zu)", id,
                  p->jobs[ji].start_line);
        return;
    } else if (p->jobs[ji].state == JOB_FINISHED) {
        violation(c, p, "job '%s' started again after it finished at line %zu", id,
                  p->jobs[ji].end_line);
    }
    p->jobs[ji].state = JOB_RUNNING;
    p->jobs[ji].start_line = c->line;
    p->jobs[ji].n_held = 0;

    int64_t n_gpus, n_pods = pods_of(c, p, ji, ev, "start", "pods", 1, &n_gpus);
    if (n_pods < 0)
        return;
    struct job *j = &p->jobs[ji];
    j->live_pods = n_pods;
    if (j->pods >= 0 && n_pods != j->pods)
        violation(c, p,
                  "job '%s': partial gang start: %lld pods started, %lld submitted (line %zu)", id,
                  (long long)n_pods, (long long)j->pods, j->submit_line);
    if (j->gpus >= 0 && n_gpus != j->gpus)
        violation(c, p, "job '%s': gang started with %lld GPUs, %lld submitted (line %zu)", id,
                  (long long)n_gpus, (long long)j->gpus, j->submit_line);
}

static void on_end(struct checker *c, struct policy *p, const char *type, const char *id)
{
    uint32_t ji = 0;
    if (!job_find(p, id, 0, &ji)) {
        violation(c, p, "%s of unknown job '%s'", type, id);
        return;
    }
    struct job *j = &p->jobs[ji];
    if (j->state != JOB_RUNNING) {
        violation(c, p, "%s of job '%s' that is not running", type, id);
        return;
    }
    job_release(p, ji);
    j->state = strcmp(type, "finish") == 0 ? JOB_FINISHED : JOB_EVICTED;
    j->end_line = c->line;
}

static void on_event(struct checker *c, const cJSON *ev)
{
    if (!cJSON_IsObject(ev)) {
        violation(c, NULL, "not a JSON object");
        return;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "t");
    const char *type = get_str(ev, "type");
    const char *pname = get_str(ev, "policy");
    c->events++;
    if (!type) {
        violation(c, NULL, "missing string \"type\"");
        return;
    }
    if (!pname) {
        violation(c, NULL, "%s event without a string \"policy\"", type);
        return;
    }
    struct policy *p = policy_get(c, pname);
    if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble)) {
        violation(c, p, "%s event without a numeric \"t\"", type);
    } else {
        if (p->last_t_line && t->valuedouble < p->last_t)
            violation(c, p, "time goes backwards: t=%.17g after t=%.17g (line %zu)", t->valuedouble,
                      p->last_t, p->last_t_line);
        else {
            p->last_t = t->valuedouble;
            p->last_t_line = c->line;
        }
    }

    int is_submit = strcmp(type, "submit") == 0, is_start = strcmp(type, "start") == 0;
    int is_end = strcmp(type, "finish") == 0 || strcmp(type, "evict") == 0;
    if (strcmp(type, "cluster") == 0) {
        on_cluster(c, p, ev);
        return;
    }
    int is_resize = strcmp(type, "shrink") == 0 || strcmp(type, "grow") == 0;
    if (!is_submit && !is_start && !is_end && !is_resize)
        return; /* other types: forward compatible */
    const char *id = get_str(ev, "job");
    if (!id) {
        violation(c, p, "%s event without a string \"job\"", type);
        return;
    }
    if (is_submit)
        on_submit(c, p, ev, id);
    else if (is_start)
        on_start(c, p, ev, id);
    else if (is_resize)
        on_resize(c, p, ev, id, type[0] == 'g');
    else
        on_end(c, p, type, id);
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

static void checker_free(struct checker *c)
{
    for (size_t i = 0; i < c->n_pol; i++) {
        struct policy *p = &c->pol[i];
        for (size_t k = 0; k < p->n_nodes; k++) {
            free(p->nodes[k].name);
            free(p->nodes[k].owner);
        }
        for (size_t k = 0; k < p->n_jobs; k++) {
            free(p->jobs[k].id);
            free(p->jobs[k].held);
        }
        free(p->nodes);
        free(p->jobs);
        strmap_free(&p->node_map);
        strmap_free(&p->job_map);
        free(p->name);
    }
    free(c->pol);
    strmap_free(&c->pol_map);
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: evcheck FILE.jsonl   (\"-\" reads standard input)\n");
        return 2;
    }
    struct checker c;
    memset(&c, 0, sizeof(c));
    c.file = argv[1];
    FILE *f = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "evcheck: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        c.line++;
        if (blank(line, (size_t)len))
            continue;
        if (strlen(line) != (size_t)len) {
            violation(&c, NULL, "malformed line: contains a NUL byte");
            continue;
        }
        const char *end = NULL;
        cJSON *ev = cJSON_ParseWithOpts(line, &end, 1);
        if (!ev) {
            size_t col = end && end >= line ? (size_t)(end - line) + 1 : 0;
            violation(&c, NULL, "malformed JSON (near column %zu)", col);
            continue;
        }
        on_event(&c, ev);
        cJSON_Delete(ev);
    }
    int read_err = ferror(f);
    free(line);
    if (f != stdin)
        fclose(f);
    if (read_err) {
        fprintf(stderr, "evcheck: %s: read error\n", argv[1]);
        checker_free(&c);
        return 2;
    }
    if (c.violations > MAX_PRINTED)
        fprintf(stderr, "evcheck: %zu further violations not shown\n", c.violations - MAX_PRINTED);
    printf("evcheck: %zu events, %zu policies, %zu starts: ", c.events, c.n_pol, c.starts);
    if (c.violations == 0)
        printf("OK\n");
    else
        printf("%zu violation%s\n", c.violations, c.violations == 1 ? "" : "s");
    checker_free(&c);
    return c.violations ? 1 : 0;
}
