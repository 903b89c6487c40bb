/* sched/sim/tolerate.c: the simulated pods' tolerations (the trace's tolerations column, or the
 * --tolerate default) and the check that every job fits some node, so that a cluster read from
 * `kubectl get nodes -o yaml` whose GPU nodes carry the GPU operator's taint
 * (nvidia.com/gpu=present:NoSchedule) is not simulated silently with nothing able to start.
 *
 * Owns: the syntax of a tolerations text (kubectl taint's, entries separated by ';'), the
 * parsed tolerations (one block, in->tolerations, freed by sim_input_free) and the fit check.
 * Must not touch: scheduling; taint matching is plugins/taints.c's (taint_tolerated).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins.h"
#include "sched/core/hami.h"
#include "sched/sim/sim.h"
#include "sched/sim/trace.h"

#define TOL_MAX 32 /* tolerations per job */

static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

/* Entries of a tolerations text, without storing them (to size the block). */
static size_t count_entries(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        n += *s == ';';
    return n;
}

/* Parses `text` into tols[] (at most TOL_MAX), copying strings into *pool. Returns the number of
 * tolerations, or -1 with a message (what the entry lacks) in why. */
static int parse(const char *text, struct toleration *tols, char **pool, char *why, size_t wn)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len > 0) {
            if (n == TOL_MAX) {
                snprintf(why, wn, "more than %d tolerations", TOL_MAX);
                return -1;
            }
            /* KEY[=VALUE][:EFFECT] */
            char *e = *pool;
            memcpy(e, p, len);
            e[len] = 0;
            *pool += len + 1;
            struct toleration *t = &tols[n++];
            *t = (struct toleration){.key = e, .value = "", .op_exists = true, .effect = -1};
            char *colon = strrchr(e, ':');
            if (colon) {
                *colon = 0;
                int k = 0;
                while (k < 3 && strcmp(colon + 1, effects[k]) != 0)
                    k++;
                if (k == 3) {
                    snprintf(why, wn,
                             "'%.60s': effect '%.40s' is not NoSchedule, PreferNoSchedule or "
                             "NoExecute",
                             text, colon + 1);
                    return -1;
                }
                t->effect = k;
            }
            char *eq = strchr(e, '=');
            if (eq) {
                *eq = 0;
                t->value = eq + 1;
                t->op_exists = false;
            }
            if (strcmp(e, "*") == 0 && !eq) {
                t->key = "";
            } else if (!*e || strchr(e, '*')) {
                snprintf(why, wn, "'%.60s': an entry needs a key (or '*' for every taint)", text);
                return -1;
            }
        }
        p += len;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ';')
            p++;
    }
    return n;
}

int sim_input_tolerations(struct sim_input *in, const struct trace *t, const char *defaults,
                          struct sched_errbuf *eb)
{
    size_t n_tol = 0, chars = 0;
    for (uint32_t i = 0; i < in->n_jobs && i < t->n_jobs; i++) {
        const char *s = t->jobs[i].tolerations ? t->jobs[i].tolerations : defaults;
        if (s && *s) {
            n_tol += count_entries(s);
            chars += strlen(s) + count_entries(s);
        }
    }
    if (n_tol == 0)
        return 0;
    char *block = malloc(n_tol * sizeof(struct toleration) + chars + 1);
    if (!block)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory for tolerations");
    free(in->tolerations);
    in->tolerations = block;
    struct toleration *tols = (struct toleration *)(void *)block;
    char *pool = block + n_tol * sizeof(struct toleration);
    for (uint32_t i = 0; i < in->n_jobs && i < t->n_jobs; i++) {
        const struct trace_job *tj = &t->jobs[i];
        const char *s = tj->tolerations ? tj->tolerations : defaults;
        if (!s || !*s)
            continue;
        char why[200];
        int n = parse(s, tols, &pool, why, sizeof(why));
        if (n < 0) {
            if (tj->tolerations)
                return sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'tolerations': %s",
                                  t->files[tj->file], tj->line, why);
            return sched_fail(eb, SCHED_EINVAL, "--tolerate: %s", why);
        }
        struct gang *g = &in->jobs[i].gang;
        for (uint32_t k = 0; k < g->n_sets; k++) {
            g->sets[k].tolerations = tols;
            g->sets[k].n_tolerations = (uint32_t)n;
        }
        gang_finalize(g); /* the shape hash covers tolerations */
        g->min_member = g->n_pods;
        tols += n;
    }
    return 0;
}

static bool hard(const struct taint *tn)
{
    return tn->effect == TAINT_NO_SCHEDULE || tn->effect == TAINT_NO_EXECUTE;
}

/* Whether a pod of `ps` fits node n by capacity, and by its taints too when `taints`. */
static bool fits(const struct podset *ps, const struct node *n, bool taints)
{
    /* GPU shares (HAMi) are held by a registered node's devices, not its allocatable */
    bool hami = node_annotation(n, HAMI_NODE_REGISTER) != NULL;
    int mem = res_lookup(HAMI_RES_MEM), cores = res_lookup(HAMI_RES_CORES);
    for (int r = 0; r < res_count(); r++)
        if (ps->req.v[r] > n->alloc.v[r] && !(hami && (r == mem || r == cores)))
            return false;
    if (ps->req.v[RES_GPU] > n->n_gpus)
        return false;
    for (uint32_t k = 0; taints && k < n->n_taints; k++)
        if (hard(&n->taints[k]) &&
            !taint_tolerated(&n->taints[k], ps->tolerations, ps->n_tolerations))
            return false;
    return true;
}

void sim_input_unfit(const struct sim_input *in, struct sim_unfit *out)
{
    memset(out, 0, sizeof(*out));
    const struct cluster *c = in->cluster;
    const struct taint *worst = NULL;
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        const struct gang *g = &in->jobs[j].gang;
        bool ok = true, ok_without_taints = true;
        for (uint32_t s = 0; s < g->n_sets && ok; s++) {
            bool any = false, any_cap = false;
            for (uint32_t i = 0; i < c->n_nodes && !any; i++) {
                any = fits(&g->sets[s], &c->nodes[i], true);
                any_cap = any_cap || any || fits(&g->sets[s], &c->nodes[i], false);
            }
            ok = any;
            ok_without_taints = any_cap;
        }
        if (ok)
            continue;
        out->jobs++;
        if (!out->example)
            out->example = in->jobs[j].id;
        if (!ok_without_taints)
            continue;
        out->by_taint++;
        /* the untolerated taint on most nodes, for the message (first job that shows one) */
        for (uint32_t i = 0; !worst && i < c->n_nodes; i++)
            for (uint32_t k = 0; k < c->nodes[i].n_taints && !worst; k++)
                if (hard(&c->nodes[i].taints[k]) &&
                    !taint_tolerated(&c->nodes[i].taints[k], g->sets[0].tolerations,
                                     g->sets[0].n_tolerations))
                    worst = &c->nodes[i].taints[k];
    }
    if (!worst)
        return;
    for (uint32_t i = 0; i < c->n_nodes; i++)
        for (uint32_t k = 0; k < c->nodes[i].n_taints; k++) {
            const struct taint *tn = &c->nodes[i].taints[k];
            if (tn->effect == worst->effect && strcmp(tn->key, worst->key) == 0 &&
                strcmp(tn->value ? tn->value : "", worst->value ? worst->value : "") == 0) {
                out->taint_nodes++;
                break;
            }
        }
    snprintf(out->taint, sizeof(out->taint), "%s%s%s:%s", worst->key,
             worst->value && *worst->value ? "=" : "", worst->value ? worst->value : "",
             effects[worst->effect]);
}
