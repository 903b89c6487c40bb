/* tests/bench/bench_pods.c: the benchmark rows of inter-pod rules and preferences (bench.h):
 *   8. one cycle of 1,000 gangs whose pods must not share a node, beside 10 bound pods per node
 *      a tenth of which have an anti-affinity, against the same without pod rules
 *   9. one cycle of 1,000 gangs of 8 pods with preferred node affinity, one set of preferences
 *      for all and one per gang, against the same without
 *  10. one cycle of 8,000 one-pod gangs with preferred pod anti-affinity and a ScheduleAnyway
 *      spread, beside bound pods, against the same without
 *  11. one cycle of 4,000 one-pod gangs of one app, each required apart from the others (a
 *      Deployment's replicas, one per node), then spread by rack, against the same without
 * each at hgx:5000 and 10x that (informational rows: how the cost grows).
 *
 * Must not touch: the core (it only drives it), any file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/cycle.h"
#include "sched/core/model.h"

#include "tests/bench/bench.h"

/* The CPU of one cycle of w under the gangsched policy (ms), or an error. */
static int cycle_ms(struct world *w, double *ms)
{
    struct cycle_stats cs;
    int rc = time_cycles(w, "gangsched", &cs);
    if (rc == 0)
        *ms = 1000.0 * cs.cpu_s / cs.cycles;
    return rc;
}

/* ---- 8. pod rules -------------------------------------------------------------------------- */

#define RULE_PODS_PER_NODE 10u
#define RULE_GANGS         1000u

/* One cycle's CPU for RULE_GANGS gangs of 8 one-GPU pods on `spec` at random occupancy, with
 * RULE_PODS_PER_NODE labelled pods bound per node, those of every tenth node with a hostname
 * anti-affinity to the gangs' app (rules true), against the same gangs without pods or rules.
 * Each gang's pods must not share a node (a hostname anti-affinity to their own app: placed pod
 * by pod), and the bound pods' anti-affinity keeps them off a tenth of the nodes. `scratch`:
 * no shortcut (sched_snapshot.no_shortcuts): every domain search sums its nodes from scratch
 * and every pod's scan starts at the first node. */
static int time_rules(const char *spec, bool rules, bool scratch, double *ms, double *pods)
{
    static const struct kv app_a[] = {{"app", "a"}}, app_b[] = {{"app", "b"}};
    static const char *const b_only[] = {"b"};
    static const struct sel_req sel_b = {
        .key = "app", .op = SEL_IN, .values = b_only, .n_values = 1};
    static const struct pod_term anti_b = {
        .reqs = &sel_b, .n_reqs = 1, .topology_key = "kubernetes.io/hostname"};
    static const struct pod_meta bound_plain = {.ns = "x", .labels = app_a, .n_labels = 1};
    static const struct pod_meta bound_anti = {
        .ns = "x", .labels = app_a, .n_labels = 1, .anti = &anti_b, .n_anti = 1};
    static const struct pod_meta gang_meta = {
        .ns = "x", .labels = app_b, .n_labels = 1, .anti = &anti_b, .n_anti = 1};
    struct world w;
    if (world_init(&w, spec) != 0)
        return 1;
    occupy_random_gpus(&w, RNG_SEED + 7);
    struct sched_pod *bound = NULL;
    uint32_t nb = w.c->n_nodes * RULE_PODS_PER_NODE;
    int rc = world_gangs(&w, RULE_GANGS, 8, 1, -1);
    if (rc == 0 && rules && !(bound = calloc(nb, sizeof(*bound))))
        rc = SCHED_ENOMEM;
    for (uint32_t k = 0; rc == 0 && rules && k < nb; k++)
        bound[k] = (struct sched_pod){.node = k / RULE_PODS_PER_NODE,
                                      .meta = (k / RULE_PODS_PER_NODE) % 10 == 0 ? &bound_anti
                                                                                 : &bound_plain};
    for (uint32_t i = 0; rc == 0 && rules && i < w.n_gangs; i++) {
        w.gangs[i].sets[0].meta = &gang_meta;
        gang_finalize(&w.gangs[i]);
        w.gangs[i].min_member = w.gangs[i].n_pods;
    }
    w.bound = bound;
    w.n_bound = rules ? nb : 0;
    w.no_shortcuts = scratch;
    struct cycle_stats cs;
    if (rc == 0)
        rc = time_cycles(&w, "gangsched", &cs);
    if (rc == 0) {
        *ms = 1000.0 * cs.cpu_s / cs.cycles;
        *pods = per_cycle(&cs, cs.pods);
    }
    free(bound);
    world_fini(&w);
    return rc;
}

int bench_pod_rules(struct table *t)
{
    static const char *const specs[] = {"hgx:5000", "hgx:50000"};
    double ms[2][4], pods[2][4]; /* [size][rules, none, none from scratch, rules from scratch] */
    for (int k = 0; k < 2; k++)
        for (int x = 0; x < 4; x++)
            if (time_rules(specs[k], x == 0 || x == 3, x >= 2, &ms[k][x], &pods[k][x]) != 0)
                return 1;
    for (int k = 0; k < 2; k++) {
        char name[64];
        snprintf(name, sizeof(name), "8 cycle, %u x 8 pods with pod rules, %s", RULE_GANGS,
                 specs[k]);
        struct row *r = row_add(t, name);
        if (!r)
            return 1;
        snprintf(r->value, sizeof(r->value), "%.1f ms, %.0f placed", ms[k][0], pods[k][0]);
        snprintf(r->ratio, sizeof(r->ratio), "%.2fx no rules", ratio(ms[k][0], ms[k][1]));
        snprintf(name, sizeof(name), "  the same, every scan from the first node, %s", specs[k]);
        if (!(r = row_add(t, name)))
            return 1;
        snprintf(r->value, sizeof(r->value), "%.1f ms, %.0f placed", ms[k][3], pods[k][3]);
        snprintf(r->ratio, sizeof(r->ratio), "%.2fx kept scans", ratio(ms[k][3], ms[k][0]));
        snprintf(name, sizeof(name), "  baseline: the same without pod rules, %s", specs[k]);
        if (!(r = row_add(t, name)))
            return 1;
        snprintf(r->value, sizeof(r->value), "%.1f ms, %.0f placed", ms[k][1], pods[k][1]);
        if (k) /* how the baseline grows; the rules row's growth is ms[1][0] / ms[0][0] */
            snprintf(r->ratio, sizeof(r->ratio), "%.2fx hgx:5000", ratio(ms[1][1], ms[0][1]));
        snprintf(name, sizeof(name), "  baseline, domain sums from scratch, %s", specs[k]);
        if (!(r = row_add(t, name)))
            return 1;
        snprintf(r->value, sizeof(r->value), "%.1f ms, %.0f placed", ms[k][2], pods[k][2]);
        snprintf(r->ratio, sizeof(r->ratio), "%.2fx with the cache", ratio(ms[k][2], ms[k][1]));
    }
    return 0;
}

/* ---- 9. preferred node affinity ---------------------------------------------------------- */

#define PREF_GANGS 1000u

/* One cycle's CPU for PREF_GANGS gangs of 8 one-GPU pods (pods 8), or 8 x PREF_GANGS gangs of
 * one (pods 1), on `spec` at random occupancy, whose pods prefer (mode 1) the nodes of two
 * blocks (weight 60) and those outside the first rack (weight 20): one set of preferences for
 * every gang, so the nodes' tiers are computed once; or (mode 2) each gang its own rack (weight
 * 50): tiers computed again for every gang; mode 0: no preferences. */
static int time_prefs(const char *spec, uint32_t pods, int mode, double *ms)
{
    static const char *const blocks[] = {"hgx-block-00", "hgx-block-01"}, *const rack0[] = {
                                                                              "hgx-rack-000"};
    static const struct sel_req in_blocks = {
        .key = TOPO_LABEL_BLOCK, .op = SEL_IN, .values = blocks, .n_values = 2};
    static const struct sel_req not_rack0 = {
        .key = TOPO_LABEL_RACK, .op = SEL_NOT_IN, .values = rack0, .n_values = 1};
    static const struct pref_term shared[] = {{.weight = 60, .term = {&in_blocks, 1}},
                                              {.weight = 20, .term = {&not_rack0, 1}}};
    struct world w;
    if (world_init(&w, spec) != 0)
        return 1;
    occupy_random_gpus(&w, RNG_SEED + 9);
    uint32_t n = PREF_GANGS * 8 / pods;
    int rc = world_gangs(&w, n, pods, 1, -1);
    char(*names)[24] = calloc(n, sizeof(*names));
    const char **vals = calloc(n, sizeof(*vals));
    struct sel_req *reqs = calloc(n, sizeof(*reqs));
    struct pref_term *own = calloc(n, sizeof(*own));
    if (!names || !vals || !reqs || !own)
        rc = SCHED_ENOMEM;
    for (uint32_t i = 0; rc == 0 && mode && i < w.n_gangs; i++) {
        struct podset *ps = &w.gangs[i].sets[0];
        snprintf(names[i], sizeof(names[i]), "hgx-rack-%03u", (unsigned)(i % 100));
        vals[i] = names[i];
        reqs[i] = (struct sel_req){
            .key = TOPO_LABEL_RACK, .op = SEL_IN, .values = &vals[i], .n_values = 1};
        own[i] = (struct pref_term){.weight = 50, .term = {&reqs[i], 1}};
        ps->pref = mode == 1 ? shared : &own[i];
        ps->n_pref = mode == 1 ? 2 : 1;
        gang_finalize(&w.gangs[i]);
        w.gangs[i].min_member = w.gangs[i].n_pods;
    }
    if (rc == 0)
        rc = cycle_ms(&w, ms);
    free(names);
    free(vals);
    free(reqs);
    free(own);
    world_fini(&w);
    return rc;
}

int bench_prefs(struct table *t)
{
    static const char *const specs[] = {"hgx:5000", "hgx:50000"};
    static const struct {
        uint32_t pods;
        int mode;
        const char *what;
    } rows[] = {{1, 1, "9 cycle, 8000 x 1 pod, preferring 2 blocks"},
                {8, 1, "  1000 x 8 pods, preferring 2 blocks"},
                {8, 2, "  1000 x 8 pods, each gang its own rack"}};
    double base = 0; /* the same gangs without preferences */
    for (int k = 0; k < 2; k++)
        for (size_t x = 0; x < sizeof(rows) / sizeof(rows[0]); x++) {
            double ms;
            if ((x == 0 || rows[x].pods != rows[x - 1].pods) &&
                time_prefs(specs[k], rows[x].pods, 0, &base) != 0)
                return 1;
            if (time_prefs(specs[k], rows[x].pods, rows[x].mode, &ms) != 0)
                return 1;
            char name[96];
            snprintf(name, sizeof(name), "%s, %s", rows[x].what, specs[k]);
            struct row *r = row_add(t, name);
            if (!r)
                return 1;
            snprintf(r->value, sizeof(r->value), "%.1f ms", ms);
            snprintf(r->ratio, sizeof(r->ratio), "%.2fx no preferences", ratio(ms, base));
        }
    return 0;
}

/* ---- 10. inter-pod preferences ----------------------------------------------------------- */

#define SOFT_PODS_PER_NODE  4u
#define SOFT_GANGS          8000u
#define SOFT_BOUND_REPLICAS 8u

/* One cycle's CPU for SOFT_GANGS one-pod gangs (a Deployment's replicas) on `spec` at random
 * occupancy, beside SOFT_PODS_PER_NODE bound pods per node on every tenth node, labelled as the
 * replicas (mode 1 or 2), those of every hundredth node with a preferred anti-affinity to them
 * (mode 2 only): mode 1, each replica prefers no other on its node (weight 100) and spreads by
 * rack (ScheduleAnyway, maxSkew 1), so every replica's tiers are made again against the pods
 * placed before it; mode 2, the replicas have no term of their own, and the bound pods' terms
 * score them; mode 0, neither; mode 3, as mode 1 beside SOFT_BOUND_REPLICAS earlier replicas
 * per node instead (a Deployment scaled up: each new replica's terms select every bound one,
 * whose terms select it). */
static int time_pod_prefs(const char *spec, int mode, double *ms)
{
    static const struct kv app_web[] = {{"app", "web"}};
    static const char *const web[] = {"web"};
    static const struct sel_req sel_web = {
        .key = "app", .op = SEL_IN, .values = web, .n_values = 1};
    static const struct pod_term apart = {
        .reqs = &sel_web, .n_reqs = 1, .topology_key = "kubernetes.io/hostname", .weight = 100};
    static const struct pod_spread by_rack = {
        .sel = {.reqs = &sel_web, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    static const struct pod_meta replica = {.ns = "x",
                                            .labels = app_web,
                                            .n_labels = 1,
                                            .pref_anti = &apart,
                                            .n_pref_anti = 1,
                                            .soft_spread = &by_rack,
                                            .n_soft_spread = 1};
    static const struct pod_meta plain = {.ns = "x", .labels = app_web, .n_labels = 1};
    static const struct pod_meta shy = {
        .ns = "x", .labels = app_web, .n_labels = 1, .pref_anti = &apart, .n_pref_anti = 1};
    struct world w;
    if (world_init(&w, spec) != 0)
        return 1;
    occupy_random_gpus(&w, RNG_SEED + 10);
    uint32_t nb = mode == 3 ? w.c->n_nodes * SOFT_BOUND_REPLICAS
                            : (w.c->n_nodes + 9) / 10 * SOFT_PODS_PER_NODE;
    struct sched_pod *bound = calloc(nb, sizeof(*bound));
    int rc = bound ? world_gangs(&w, SOFT_GANGS, 1, 1, -1) : SCHED_ENOMEM;
    for (uint32_t k = 0; rc == 0 && k < nb; k++) {
        uint32_t node = k / SOFT_PODS_PER_NODE * 10;
        bound[k] =
            (struct sched_pod){.node = node, .meta = mode == 2 && node % 100 == 0 ? &shy : &plain};
        if (mode == 3)
            bound[k] = (struct sched_pod){.node = k / SOFT_BOUND_REPLICAS, .meta = &replica};
    }
    for (uint32_t i = 0; rc == 0 && mode && i < w.n_gangs; i++) {
        w.gangs[i].sets[0].meta = mode == 2 ? &plain : &replica;
        gang_finalize(&w.gangs[i]);
        w.gangs[i].min_member = w.gangs[i].n_pods;
    }
    w.bound = bound;
    w.n_bound = mode ? nb : 0;
    if (rc == 0)
        rc = cycle_ms(&w, ms);
    free(bound);
    world_fini(&w);
    return rc;
}

int bench_pod_prefs(struct table *t)
{
    static const char *const specs[] = {"hgx:5000", "hgx:50000"};
    static const char *const what[] = {"10 cycle, 8000 x 1 pod preferring apart",
                                       "  8000 x 1 pod, bound pods' preferences",
                                       "  8000 x 1 pod apart, 8 bound per node"};
    double per[2] = {0, 0}; /* ms per replica with their own preferences, by size */
    for (int k = 0; k < 2; k++) {
        double base, ms[3];
        if (time_pod_prefs(specs[k], 0, &base) != 0 || time_pod_prefs(specs[k], 1, &ms[0]) != 0 ||
            time_pod_prefs(specs[k], 2, &ms[1]) != 0 || time_pod_prefs(specs[k], 3, &ms[2]) != 0)
            return 1;
        per[k] = ms[0] / SOFT_GANGS;
        for (int x = 0; x < 3; x++) {
            char name[96];
            snprintf(name, sizeof(name), "%s, %s", what[x], specs[k]);
            struct row *r = row_add(t, name);
            if (!r)
                return 1;
            snprintf(r->value, sizeof(r->value), "%.1f ms", ms[x]);
            if (x == 0 && k == 1) /* how a replica's cost grows with the nodes */
                snprintf(r->ratio, sizeof(r->ratio), "%.2fx no preferences, %.1fx hgx:5000",
                         ratio(ms[x], base), ratio(per[1], per[0]));
            else if (x == 2) /* and with the replicas bound before it */
                snprintf(r->ratio, sizeof(r->ratio), "%.2fx 0.4 bound per node",
                         ratio(ms[x], ms[0]));
            else
                snprintf(r->ratio, sizeof(r->ratio), "%.2fx no preferences", ratio(ms[x], base));
        }
    }
    return 0;
}

/* ---- 11. replicas required apart --------------------------------------------------------- */

#define APART_PER_5000 4000u /* replicas per 5,000 nodes (random occupancy leaves ~4,440 room) */

/* One cycle's CPU for `n` one-pod, one-GPU gangs (a Deployment's replicas) on `spec` at random
 * occupancy: mode 1, each with a required hostname anti-affinity to the replicas' app (each
 * replica's term selects every replica placed before it, and each earlier replica's term
 * selects it); mode 2, each spread by rack (DoNotSchedule, maxSkew 1) over the replicas; mode 3,
 * replicas of n / 4 Deployments (four each, app "a<k>"), each apart by hostname from its own
 * app's (n / 4 kinds of rule pods, place_podmark.c); mode 0, none of these. */
static int time_pod_apart(const char *spec, uint32_t n, int mode, double *ms)
{
    static const struct kv app_web[] = {{"app", "web"}};
    static const char *const web[] = {"web"};
    static const struct sel_req sel_web = {
        .key = "app", .op = SEL_IN, .values = web, .n_values = 1};
    static const struct pod_term apart = {
        .reqs = &sel_web, .n_reqs = 1, .topology_key = "kubernetes.io/hostname"};
    static const struct pod_spread by_rack = {
        .sel = {.reqs = &sel_web, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    static const struct pod_meta replica = {
        .ns = "x", .labels = app_web, .n_labels = 1, .anti = &apart, .n_anti = 1};
    static const struct pod_meta spread = {
        .ns = "x", .labels = app_web, .n_labels = 1, .spread = &by_rack, .n_spread = 1};
    uint32_t n_apps = mode == 3 ? n / 4 : 0;
    struct app { /* one Deployment of mode 3 */
        char name[16];
        const char *values[1];
        struct kv label;
        struct sel_req sel;
        struct pod_term apart;
        struct pod_meta meta;
    } *apps = calloc(n_apps ? n_apps : 1, sizeof(*apps));
    if (!apps)
        return 1;
    for (uint32_t k = 0; k < n_apps; k++) {
        struct app *a = &apps[k];
        snprintf(a->name, sizeof(a->name), "a%u", k);
        a->values[0] = a->name;
        a->label = (struct kv){.key = "app", .value = a->name};
        a->sel = (struct sel_req){.key = "app", .op = SEL_IN, .values = a->values, .n_values = 1};
        a->apart = (struct pod_term){
            .reqs = &a->sel, .n_reqs = 1, .topology_key = "kubernetes.io/hostname"};
        a->meta = (struct pod_meta){
            .ns = "x", .labels = &a->label, .n_labels = 1, .anti = &a->apart, .n_anti = 1};
    }
    struct world w;
    if (world_init(&w, spec) != 0) {
        free(apps);
        return 1;
    }
    occupy_random_gpus(&w, RNG_SEED + 11);
    int rc = world_gangs(&w, n, 1, 1, -1);
    for (uint32_t i = 0; rc == 0 && mode && i < w.n_gangs; i++) {
        w.gangs[i].sets[0].meta = mode == 1   ? &replica
                                  : mode == 2 ? &spread
                                              : &apps[i % n_apps].meta;
        gang_finalize(&w.gangs[i]);
        w.gangs[i].min_member = w.gangs[i].n_pods;
    }
    if (rc == 0)
        rc = cycle_ms(&w, ms);
    world_fini(&w);
    free(apps);
    return rc;
}

int bench_pod_apart(struct table *t)
{
    static const char *const specs[] = {"hgx:5000", "hgx:50000"};
    static const char *const what[] = {"required apart", "spread by rack", "of n/4 apps, apart"};
    double per[3][2] = {{0, 0}, {0, 0}, {0, 0}}; /* ms per replica, by mode and size */
    for (int k = 0; k < 2; k++) {
        uint32_t n = APART_PER_5000 * (k ? 10 : 1);
        double base, ms[3];
        if (time_pod_apart(specs[k], n, 0, &base) != 0 ||
            time_pod_apart(specs[k], n, 1, &ms[0]) != 0 ||
            time_pod_apart(specs[k], n, 2, &ms[1]) != 0 ||
            time_pod_apart(specs[k], n, 3, &ms[2]) != 0)
            return 1;
        for (int x = 0; x < 3; x++) {
            per[x][k] = ms[x] / n;
            char name[96];
            snprintf(name, sizeof(name), "%s%u x 1 pod %s, %s", x ? "  " : "11 cycle, ", n, what[x],
                     specs[k]);
            struct row *r = row_add(t, name);
            if (!r)
                return 1;
            snprintf(r->value, sizeof(r->value), "%.1f ms", ms[x]);
            if (k == 1) /* how a replica's cost grows with the nodes and the replicas before it */
                snprintf(r->ratio, sizeof(r->ratio),
                         "%.2fx no rules, %.1fx per replica at hgx:5000", ratio(ms[x], base),
                         ratio(per[x][1], per[x][0]));
            else
                snprintf(r->ratio, sizeof(r->ratio), "%.2fx no rules", ratio(ms[x], base));
        }
    }
    return 0;
}
