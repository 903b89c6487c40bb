/* config/totals.c: what `gangsched config check` adds after the tree: the nominal quota each
 * cohort holds with everything under it, per flavor and resource, and (given a cluster) a
 * warning for every flavor and resource whose nominal quotas add up to more than the nodes of
 * that flavor have: such quotas are promises the cluster cannot keep at once.
 *
 * Owns: config_print_totals. Must not touch: loading or validating (config.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sched/core/quantity.h"

static void fmt_amount(int64_t v, int r, char *buf, size_t cap)
{
    bool binary = r == RES_MEMORY || strstr(res_name(r), "storage") != NULL;
    qty_format(v, res_scale(r), binary, buf, cap);
}

/* a + b for non-negative amounts, saturating at INT64_MAX: a sum there is printed as "more
 * than" it (each value is at most 2^62, docs/config.md, so two of them can pass int64). */
static int64_t add_sat(int64_t a, int64_t b)
{
    return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

static void fmt_sum(int64_t v, int r, char *buf, size_t cap)
{
    if (v < INT64_MAX) {
        fmt_amount(v, r, buf, cap);
        return;
    }
    char m[48];
    fmt_amount(v, r, m, sizeof(m));
    snprintf(buf, cap, "more than %s", m);
}

/* Whether cohort `co` is `top` or under it. */
static bool under(const struct config *c, int32_t co, uint32_t top)
{
    for (uint32_t hops = 0; co >= 0 && hops <= c->n_cohorts; hops++) {
        if ((uint32_t)co == top)
            return true;
        co = c->cohorts[co].parent;
    }
    return false;
}

/* Adds the nominal quotas of a quota set into sum[flavor * RES_MAX + resource]. */
static void add_set(const struct config *c, const struct config_quota_set *qs, int64_t *sum,
                    bool *has)
{
    for (uint32_t f = 0; f < c->n_flavors; f++)
        for (int r = 0; r < res_count(); r++) {
            const struct config_quota *q = config_quota_get(c, qs, f, r);
            if (!q)
                continue;
            size_t k = (size_t)f * RES_MAX + (size_t)r;
            sum[k] = add_sat(sum[k], q->nominal);
            has[k] = true;
        }
}

static void print_sum(const struct config *c, const int64_t *sum, const bool *has, FILE *out)
{
    bool first = true;
    for (uint32_t f = 0; f < c->n_flavors; f++)
        for (int r = 0; r < res_count(); r++) {
            size_t k = (size_t)f * RES_MAX + (size_t)r;
            if (!has[k])
                continue;
            char a[80];
            fmt_sum(sum[k], r, a, sizeof(a));
            fprintf(out, "%s%s@%s %s", first ? " " : ", ", res_name(r), c->flavors[f].name, a);
            first = false;
        }
    fputs(first ? " none\n" : "\n", out);
}

/* Whether node n belongs to flavor f (carries all its labels). */
static bool node_of(const struct node *n, const struct config_flavor *f)
{
    for (uint32_t k = 0; k < f->n_node_labels; k++) {
        bool found = false;
        for (uint32_t l = 0; l < n->n_labels && !found; l++)
            found = strcmp(n->labels[l].key, f->node_labels[k].key) == 0 &&
                    strcmp(n->labels[l].value, f->node_labels[k].value) == 0;
        if (!found)
            return false;
    }
    return true;
}

int config_print_totals(const struct config *c, const struct cluster *cl, const char *cluster_name,
                        FILE *out)
{
    size_t cells = (size_t)c->n_flavors * RES_MAX;
    int64_t *sum = calloc(cells + 1, sizeof(*sum));
    bool *has = calloc(cells + 1, sizeof(*has));
    if (!sum || !has) {
        free(sum), free(has);
        return -1;
    }
    fputs("nominal quota per cohort (its queues and cohorts, all levels):\n", out);
    for (uint32_t co = 0; co < c->n_cohorts; co++) {
        memset(sum, 0, cells * sizeof(*sum));
        memset(has, 0, cells * sizeof(*has));
        for (uint32_t k = 0; k < c->n_cohorts; k++)
            if (under(c, (int32_t)k, co))
                add_set(c, &c->cohorts[k].q, sum, has);
        uint32_t nq = 0;
        for (uint32_t q = 0; q < c->n_queues; q++)
            if (under(c, c->queues[q].cohort, co)) {
                add_set(c, &c->queues[q].q, sum, has);
                nq++;
            }
        fprintf(out, "  cohort %s (%u queue%s):", c->cohorts[co].name, nq, nq == 1 ? "" : "s");
        print_sum(c, sum, has, out);
    }
    memset(sum, 0, cells * sizeof(*sum));
    memset(has, 0, cells * sizeof(*has));
    for (uint32_t k = 0; k < c->n_cohorts; k++)
        add_set(c, &c->cohorts[k].q, sum, has);
    for (uint32_t q = 0; q < c->n_queues; q++)
        add_set(c, &c->queues[q].q, sum, has);
    fprintf(out, "  all %u queue%s:", c->n_queues, c->n_queues == 1 ? "" : "s");
    print_sum(c, sum, has, out);
    int warnings = 0;
    for (uint32_t f = 0; cl && f < c->n_flavors; f++) {
        int64_t cap[RES_MAX] = {0};
        uint32_t nodes = 0;
        for (uint32_t i = 0; i < cl->n_nodes; i++)
            if (node_of(&cl->nodes[i], &c->flavors[f])) {
                nodes++;
                for (int r = 0; r < res_count(); r++)
                    cap[r] = add_sat(cap[r],
                                     r == RES_GPU ? cl->nodes[i].n_gpus : cl->nodes[i].alloc.v[r]);
            }
        for (int r = 0; r < res_count(); r++) {
            size_t k = (size_t)f * RES_MAX + (size_t)r;
            if (!has[k] || sum[k] <= cap[r])
                continue;
            char a[80], b[80];
            fmt_sum(sum[k], r, a, sizeof(a));
            fmt_sum(cap[r], r, b, sizeof(b));
            fprintf(out,
                    "warning: nominal %s quotas on flavor %s add up to %s, above the %s of its "
                    "%u node%s in %s: the queues cannot all have their nominal quota at once\n",
                    res_name(r), c->flavors[f].name, a, b, nodes, nodes == 1 ? "" : "s",
                    cluster_name ? cluster_name : "the cluster");
            warnings++;
        }
    }
    free(sum), free(has);
    return warnings;
}
