/* config/print.c: `gangsched config check`'s tree of a configuration (config_print_tree) and the
 * quantity formatting of messages (config_fmt_qty). No libyaml.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/internal.h"
#include "plugins/plugins.h"
#include "sched/core/duration.h"
#include "sched/core/quantity.h"

int config_fmt_qty(int64_t v, int res_code, char *buf, size_t cap)
{
    int scale = res_code >= 0 ? res_scale(res_code) : 0;
    bool binary =
        res_code == RES_MEMORY || (res_code >= 0 && strstr(res_name(res_code), "storage") != NULL);
    return qty_format(v, scale, binary, buf, cap);
}

#define INDENT_MAX 16 /* tree levels shown by indentation; deeper ones are numbered */
#define NAME_COL   40 /* widest name column */

static void print_indent(FILE *f, uint32_t depth)
{
    uint32_t d = depth < INDENT_MAX ? depth : INDENT_MAX;
    fprintf(f, "%*s", (int)(2 + 2 * d), "");
}

/* The config's name of resource r: the accelerator slot under the config's device name. */
static const char *quota_res_name(const struct config *c, int r)
{
    return r == RES_GPU ? c->device : res_name(r);
}

static void print_quotas(const struct config *c, const struct config_quota_set *qs, uint32_t depth,
                         FILE *f)
{
    int nres = res_count();
    int width = 0;
    for (uint32_t fl = 0; fl < c->n_flavors; fl++) {
        for (int r = 0; r < nres; r++) {
            if (config_quota_get(c, qs, fl, r)) {
                int w = (int)(strlen(quota_res_name(c, r)) + 1 + strlen(c->flavors[fl].name));
                width = w > width ? w : width;
            }
        }
    }
    if (width > NAME_COL)
        width = NAME_COL;
    for (uint32_t fl = 0; fl < c->n_flavors; fl++) {
        for (int r = 0; r < nres; r++) {
            const struct config_quota *q = config_quota_get(c, qs, fl, r);
            if (!q)
                continue;
            char key[600], a[64];
            snprintf(key, sizeof(key), "%s@%s:", quota_res_name(c, r), c->flavors[fl].name);
            print_indent(f, depth + 2);
            config_fmt_qty(q->nominal, r, a, sizeof(a));
            fprintf(f, "%-*s nominal %s", width + 1, key, a);
            if (q->borrowing_limit != CONFIG_NO_LIMIT) {
                config_fmt_qty(q->borrowing_limit, r, a, sizeof(a));
                fprintf(f, ", borrow <=%s", a);
            }
            if (q->lending_limit != CONFIG_NO_LIMIT) {
                config_fmt_qty(q->lending_limit, r, a, sizeof(a));
                fprintf(f, ", lend <=%s", a);
            }
            fprintf(f, "\n");
        }
    }
}

/* "kind name", padded to the attribute column when `pad` (cohort lines have no attributes). */
static void print_node_name(FILE *f, uint32_t depth, const char *kind, const char *name, bool pad)
{
    print_indent(f, depth);
    int used = (int)(2 + 2 * (depth < INDENT_MAX ? depth : INDENT_MAX));
    if (depth > INDENT_MAX)
        fprintf(f, "[%u] ", depth);
    int w = NAME_COL - used - (int)strlen(kind) - 1;
    fprintf(f, "%s %-*s", kind, pad && w > 0 ? w : 0, name);
}

static void print_queue(const struct config *c, uint32_t qi, uint32_t depth, FILE *f)
{
    static const char *const orderings[] = {"BestEffortFIFO", "StrictFIFO"};
    static const char *const within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority"};
    static const char *const reclaim[] = {"Never", "LowerPriority", "Any"};
    const struct config_queue *q = &c->queues[qi];
    print_node_name(f, depth, "queue", q->name, true);
    fprintf(f, " weight %-4g priority %-4d %-14s profile %s\n", q->weight, (int)q->priority,
            orderings[q->ordering == CONFIG_STRICT_FIFO],
            q->profile >= 0 ? c->profiles[q->profile].name : "(default)");
    const struct config_preemption *p = &q->preemption;
    if (p->within_queue != CONFIG_PREEMPT_LOWER_PRIORITY || p->reclaim != CONFIG_RECLAIM_ANY ||
        p->fair_share || p->min_runtime_ms || p->restart_cost_ms || p->checkpoint_grace_ms) {
        char a[48], b[48], g[48];
        print_indent(f, depth + 2);
        fprintf(f,
                "preemption: withinQueue %s, reclaimWithinCohort %s, fairShare %s, minRuntime %s, "
                "restartCost %s, checkpointGrace %s\n",
                within[p->within_queue % 3], reclaim[p->reclaim % 3], p->fair_share ? "on" : "off",
                dur_format(p->min_runtime_ms, a, sizeof(a)),
                dur_format(p->restart_cost_ms, b, sizeof(b)),
                dur_format(p->checkpoint_grace_ms, g, sizeof(g)));
    }
    print_quotas(c, &q->q, depth, f);
}

static void print_queues_of(const struct config *c, uint32_t bucket, uint32_t depth, FILE *f)
{
    const struct config_pool *p = c->pool;
    for (uint32_t k = p->queue_first[bucket]; k < p->queue_first[bucket + 1]; k++)
        print_queue(c, p->queue_list[k], depth, f);
}

void config_print_tree(const struct config *c, FILE *f)
{
    if (!c || !f)
        return;
    const struct config_pool *p = c->pool;
    uint32_t nc = c->n_cohorts;
    char a[48], b[48];
    fprintf(f, "config %s (version %016llx)\n", c->path, (unsigned long long)c->version);
    fprintf(f,
            "  fairShare.halfLife %s, starvation.after %s, maxReservations %u, "
            "probationMinGpus %u\n",
            dur_format(c->fair_half_life_ms, a, sizeof(a)),
            dur_format(c->starve_after_ms, b, sizeof(b)), c->max_reservations,
            c->probation_min_gpus);
    fprintf(f, "topology:");
    if (c->n_levels == 0)
        fprintf(f, " built-in levels");
    for (uint32_t i = 0; i < c->n_levels; i++)
        fprintf(f, " %s=%s,", c->level_names[i], c->level_labels[i]);
    fprintf(f, "%s\n", c->n_levels ? " node" : "");
    fprintf(f, "profiles:\n");
    for (uint32_t i = 0; i < c->n_profiles; i++) {
        fprintf(f, "  %-20s", c->profiles[i].name);
        for (uint32_t t = 0; t < plugin_score_count(); t++)
            fprintf(f, "%s%s %g", t ? ", " : " ", plugin_scores[t]->name,
                    c->profiles[i].weights[t]);
        fputc('\n', f);
    }
    fprintf(f, "flavors:\n");
    for (uint32_t i = 0; i < c->n_flavors; i++) {
        const struct config_flavor *fl = &c->flavors[i];
        fprintf(f, "  %-20s", fl->name);
        if (fl->n_node_labels == 0)
            fprintf(f, " (every node)");
        for (uint32_t k = 0; k < fl->n_node_labels; k++)
            fprintf(f, "%s %s=%s", k ? "," : "", fl->node_labels[k].key, fl->node_labels[k].value);
        for (uint32_t k = 0; k < fl->n_weights; k++)
            fprintf(f, "%s%s %g", k ? ", " : "; fair-share weights: ", fl->weights[k].name,
                    fl->weights[k].weight);
        fprintf(f, "\n");
    }
    fprintf(f, "queues:\n");
    /* depth-first over the cohort forest without a stack: CSR children plus parent links */
    uint32_t bucket = nc, pos = p->child_first[nc], depth = 0;
    for (;;) {
        if (pos < p->child_first[bucket + 1]) {
            uint32_t co = p->child[pos];
            print_node_name(f, depth, "cohort", c->cohorts[co].name, false);
            fprintf(f, "\n");
            print_quotas(c, &c->cohorts[co].q, depth, f);
            print_queues_of(c, co, depth + 1, f);
            bucket = co;
            pos = p->child_first[co];
            depth++;
            continue;
        }
        if (bucket == nc)
            break;
        /* climb: continue after `bucket` inside its parent's children */
        int32_t par = c->cohorts[bucket].parent;
        pos = p->child_pos[bucket] + 1;
        bucket = par >= 0 ? (uint32_t)par : nc;
        depth--;
    }
    print_queues_of(c, nc, 0, f);
}
