/* sched/sim/openb_cli.c: `gangsched simulate --arrival fgd`: flags, seeds, policies, the JSON
 * and the table beside the published curves (see openb.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/sim/openb.h"

#define OPENB_MAX_SEEDS 1000
#define OPENB_MAX_POLS  5

struct openb_args {
    const char *nodes, *trace, *published;
    uint64_t seed_lo, seed_hi;
    enum share_policy pols[OPENB_MAX_POLS];
    int n_pols;
    bool json;
};

static const char *pol_name(enum share_policy p)
{
    return p == SHARE_FGD             ? "fgd"
           : p == SHARE_FGD_PLAIN     ? "fgd-plain"
           : p == SHARE_BESTFIT_PLAIN ? "bestfit-plain"
           : p == SHARE_SPREAD        ? "spread"
                                      : "bestfit";
}

/* The published file's name of a policy. */
static const char *pol_published(enum share_policy p)
{
    return p == SHARE_FGD || p == SHARE_FGD_PLAIN ? "06-FGD" : "05-BestFit";
}

static void usage(FILE *f)
{
    fputs("usage: gangsched simulate --nodes NODES.csv --trace PODS.csv --arrival fgd\n"
          "         [--seed N | --seeds A-B]\n"
          "         [--policy fgd|fgd-plain|bestfit|bestfit-plain|spread]...\n"
          "         [--published fgd_published_results.csv] [--json]\n"
          "\n"
          "The openb GPU-sharing workload with FGD's method: every pod of PODS.csv in a seeded\n"
          "random order, then seeded random draws from it until the arrived GPU demand would\n"
          "pass 130% of the cluster's GPUs; no departures. Prints the GPU allocation ratio\n"
          "against the arrived demand (0..130%) per policy (default fgd and bestfit; also\n"
          "fgd-plain and bestfit-plain, the score plugins of FGD's simulator as published,\n"
          "and spread; binpack = bestfit), the mean over --seeds, and the published curves\n"
          "of the same workload beside it.\n",
          f);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return false;
    *out = v;
    return true;
}

static int parse(int argc, char **argv, struct openb_args *a)
{
    memset(a, 0, sizeof(*a));
    a->seed_lo = a->seed_hi = 42;
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(f, "--nodes") == 0 || strcmp(f, "--trace") == 0 ||
                     strcmp(f, "--arrival") == 0 || strcmp(f, "--seed") == 0 ||
                     strcmp(f, "--seeds") == 0 || strcmp(f, "--policy") == 0 ||
                     strcmp(f, "--published") == 0;
        if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(f, "--json") == 0) {
            a->json = true;
            continue;
        }
        if (!takes) {
            fprintf(stderr, "gangsched simulate: %s: unknown flag with --arrival fgd\n", f);
            return 2;
        }
        if (!v) {
            fprintf(stderr, "gangsched simulate: %s needs a value\n", f);
            return 2;
        }
        i++;
        if (strcmp(f, "--nodes") == 0) {
            a->nodes = v;
        } else if (strcmp(f, "--trace") == 0) {
            if (a->trace) {
                fputs("gangsched simulate: --arrival fgd reads one --trace\n", stderr);
                return 2;
            }
            a->trace = v;
        } else if (strcmp(f, "--arrival") == 0) {
            if (strcmp(v, "fgd") != 0) {
                fprintf(stderr, "gangsched simulate: --arrival %s: known arrivals: fgd\n", v);
                return 2;
            }
        } else if (strcmp(f, "--seed") == 0) {
            if (!parse_u64(v, &a->seed_lo)) {
                fprintf(stderr, "gangsched simulate: --seed %s: not a non-negative integer\n", v);
                return 2;
            }
            a->seed_hi = a->seed_lo;
        } else if (strcmp(f, "--seeds") == 0) {
            char lo[32];
            const char *dash = strchr(v, '-');
            size_t n = dash ? (size_t)(dash - v) : 0;
            bool ok = dash && n > 0 && n < sizeof(lo);
            if (ok) {
                memcpy(lo, v, n);
                lo[n] = '\0';
                ok = parse_u64(lo, &a->seed_lo) && parse_u64(dash + 1, &a->seed_hi) &&
                     a->seed_hi >= a->seed_lo && a->seed_hi - a->seed_lo < OPENB_MAX_SEEDS;
            }
            if (!ok) {
                fprintf(stderr,
                        "gangsched simulate: --seeds %s: expected A-B with A <= B, at most %d "
                        "seeds\n",
                        v, OPENB_MAX_SEEDS);
                return 2;
            }
        } else if (strcmp(f, "--policy") == 0) {
            enum share_policy p;
            if (strcmp(v, "fgd") == 0)
                p = SHARE_FGD;
            else if (strcmp(v, "bestfit") == 0 || strcmp(v, "binpack") == 0)
                p = SHARE_BESTFIT;
            else if (strcmp(v, "spread") == 0)
                p = SHARE_SPREAD;
            else if (strcmp(v, "fgd-plain") == 0)
                p = SHARE_FGD_PLAIN;
            else if (strcmp(v, "bestfit-plain") == 0)
                p = SHARE_BESTFIT_PLAIN;
            else {
                fprintf(
                    stderr,
                    "gangsched simulate: --policy %s: with --arrival fgd: fgd, fgd-plain, bestfit "
                    "(binpack), bestfit-plain, spread\n",
                    v);
                return 2;
            }
            bool dup = false;
            for (int k = 0; k < a->n_pols; k++)
                dup |= a->pols[k] == p;
            if (!dup)
                a->pols[a->n_pols++] = p;
        } else {
            a->published = v;
        }
    }
    if (!a->nodes || !a->trace) {
        fputs("gangsched simulate: --arrival fgd needs --nodes (openb node CSV) and --trace (openb "
              "pod CSV)\n",
              stderr);
        return 2;
    }
    if (a->n_pols == 0) {
        a->pols[0] = SHARE_FGD;
        a->pols[1] = SHARE_BESTFIT;
        a->n_pols = 2;
    }
    return 0;
}

/* Mean published curve of `policy` for the trace's workload; false when absent. */
static bool published_curve(const char *path, const char *workload, const char *policy,
                            double *curve, int *n_seeds)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    static char line[16384];
    *n_seeds = 0;
    memset(curve, 0, sizeof(double) * (OPENB_CURVE_MAX + 1));
    while (fgets(line, sizeof(line), f)) {
        char *save = NULL, *tok = strtok_r(line, ",\r\n", &save);
        if (!tok || strcmp(tok, workload) != 0)
            continue;
        tok = strtok_r(NULL, ",\r\n", &save);
        if (!tok || strcmp(tok, policy) != 0)
            continue;
        for (int skip = 0; skip < 3 && tok; skip++) /* tune, seed, total_gpus */
            tok = strtok_r(NULL, ",\r\n", &save);
        double row[OPENB_CURVE_MAX + 1];
        int k = 0;
        for (; k <= OPENB_CURVE_MAX && (tok = strtok_r(NULL, ",\r\n", &save)) != NULL; k++)
            row[k] = strtod(tok, NULL);
        if (k != OPENB_CURVE_MAX + 1)
            continue;
        for (k = 0; k <= OPENB_CURVE_MAX; k++)
            curve[k] += row[k];
        (*n_seeds)++;
    }
    fclose(f);
    for (int k = 0; *n_seeds && k <= OPENB_CURVE_MAX; k++)
        curve[k] /= *n_seeds;
    return *n_seeds > 0;
}

/* The workload name of the published file: the trace's basename without ".csv". */
static void workload_name(const char *trace, char *buf, size_t n)
{
    const char *b = strrchr(trace, '/');
    b = b ? b + 1 : trace;
    snprintf(buf, n, "%s", b);
    char *dot = strrchr(buf, '.');
    if (dot && strcmp(dot, ".csv") == 0)
        *dot = '\0';
}

static cJSON *curve_json(const double *curve)
{
    cJSON *arr = cJSON_CreateArray();
    for (int k = 0; k <= OPENB_CURVE_MAX; k++) {
        cJSON *pt = cJSON_CreateArray();
        cJSON_AddItemToArray(pt, cJSON_CreateNumber(k));
        cJSON_AddItemToArray(pt,
                             cJSON_CreateNumber((double)(long long)(curve[k] * 100 + 0.5) / 100));
        cJSON_AddItemToArray(arr, pt);
    }
    return arr;
}

struct openb_sums {
    double mean[OPENB_MAX_POLS][OPENB_CURVE_MAX + 1];
    double at100[OPENB_MAX_POLS][OPENB_MAX_SEEDS];
};

static void print_table(const struct openb_args *a, const struct openb_sums *s, int n_seeds,
                        const char *workload, double pub[2][OPENB_CURVE_MAX + 1],
                        const bool *have_pub)
{
    printf("openb %s on %s, --arrival fgd, seeds %llu-%llu (mean of %d)\n", workload, a->nodes,
           (unsigned long long)a->seed_lo, (unsigned long long)a->seed_hi, n_seeds);
    printf("GPU allocation ratio (%%) against arrived GPU demand (%% of capacity)\n\n");
    printf("%8s", "arrived");
    for (int p = 0; p < a->n_pols; p++)
        printf("  %12s", pol_name(a->pols[p]));
    for (int p = 0; p < 2; p++)
        if (have_pub[p])
            printf("  %14s", p == 0 ? "published FGD" : "published BF");
    putchar('\n');
    for (int k = 0; k <= OPENB_CURVE_MAX; k += 5) {
        printf("%7d%%", k);
        for (int p = 0; p < a->n_pols; p++)
            printf("  %12.2f", s->mean[p][k]);
        for (int p = 0; p < 2; p++)
            if (have_pub[p])
                printf("  %14.2f", pub[p][k]);
        putchar('\n');
    }
    printf("\nat 100%% arrived:");
    for (int p = 0; p < a->n_pols; p++)
        printf("  %s %.2f%%", pol_name(a->pols[p]), s->mean[p][100]);
    for (int p = 0; p < 2; p++)
        if (have_pub[p])
            printf("  published %s %.2f%%", p == 0 ? "FGD" : "BestFit", pub[p][100]);
    putchar('\n');
}

static int run_all(const struct openb_args *a, const struct openb_nodes *nodes,
                   const struct openb_pods *pods, struct openb_sums *s, cJSON *seeds_json,
                   struct sched_errbuf *eb)
{
    int64_t total = 0;
    for (uint32_t i = 0; i < nodes->n; i++)
        total += (int64_t)nodes->nodes[i].n_gpus * SHARE_MILLI;
    int n_seeds = 0;
    for (uint64_t seed = a->seed_lo; seed <= a->seed_hi; seed++, n_seeds++) {
        uint32_t *order = NULL, n_order = 0;
        int rc = openb_arrivals(pods, total, seed, &order, &n_order, eb);
        if (rc)
            return rc;
        cJSON *sj = cJSON_CreateObject();
        cJSON_AddNumberToObject(sj, "seed", (double)seed);
        cJSON_AddNumberToObject(sj, "arrived_pods", n_order);
        cJSON *pj = cJSON_AddArrayToObject(sj, "policies");
        for (int p = 0; p < a->n_pols && rc == 0; p++) {
            struct openb_result r;
            rc = openb_run(nodes, pods, order, n_order, a->pols[p], seed, &r, eb);
            if (rc)
                break;
            for (int k = 0; k <= OPENB_CURVE_MAX; k++)
                s->mean[p][k] += r.curve[k];
            s->at100[p][n_seeds] = r.curve[100];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", pol_name(a->pols[p]));
            cJSON_AddNumberToObject(o, "placed_pods", r.placed);
            cJSON_AddNumberToObject(o, "failed_pods", r.failed);
            cJSON_AddNumberToObject(o, "gpu_allocation_ratio_at_100",
                                    (double)(long long)(r.curve[100] * 100 + 0.5) / 100);
            cJSON_AddNumberToObject(o, "gpu_allocation_ratio_at_130",
                                    (double)(long long)(r.curve[130] * 100 + 0.5) / 100);
            cJSON_AddItemToObject(o, "allocation_curve", curve_json(r.curve));
            cJSON_AddItemToArray(pj, o);
        }
        free(order);
        cJSON_AddItemToArray(seeds_json, sj);
        if (rc)
            return rc;
    }
    for (int p = 0; p < a->n_pols; p++)
        for (int k = 0; k <= OPENB_CURVE_MAX; k++)
            s->mean[p][k] /= n_seeds;
    return 0;
}

int openb_main(int argc, char **argv)
{
    struct openb_args a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct sched_errbuf eb = {{0}};
    struct openb_nodes nodes;
    struct openb_pods pods;
    if (openb_nodes_read(a.nodes, &nodes, &eb) != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        return 1;
    }
    if (openb_pods_read(a.trace, &nodes, &pods, &eb) != 0) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        openb_nodes_free(&nodes);
        return 1;
    }
    static struct openb_sums sums;
    memset(&sums, 0, sizeof(sums));
    cJSON *root = cJSON_CreateObject();
    char workload[256];
    workload_name(a.trace, workload, sizeof(workload));
    cJSON_AddStringToObject(root, "workload", workload);
    cJSON_AddStringToObject(root, "arrival", "fgd");
    int64_t gpus = 0;
    for (uint32_t i = 0; i < nodes.n; i++)
        gpus += nodes.nodes[i].n_gpus;
    cJSON_AddNumberToObject(root, "nodes", nodes.n);
    cJSON_AddNumberToObject(root, "total_gpus", (double)gpus);
    cJSON_AddNumberToObject(root, "trace_pods", pods.n);
    cJSON *seeds = cJSON_AddArrayToObject(root, "seeds");
    int n_seeds = (int)(a.seed_hi - a.seed_lo + 1);
    rc = run_all(&a, &nodes, &pods, &sums, seeds, &eb);
    if (rc) {
        fprintf(stderr, "gangsched simulate: %s\n", eb.msg);
        cJSON_Delete(root);
        openb_pods_free(&pods);
        openb_nodes_free(&nodes);
        return 1;
    }
    double pub[2][OPENB_CURVE_MAX + 1];
    bool have_pub[2] = {false, false};
    for (int p = 0; a.published && p < 2; p++) {
        int ns = 0;
        have_pub[p] = published_curve(
            a.published, workload, pol_published(p == 0 ? SHARE_FGD : SHARE_BESTFIT), pub[p], &ns);
    }
    cJSON *mean = cJSON_AddArrayToObject(root, "mean");
    for (int p = 0; p < a.n_pols; p++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", pol_name(a.pols[p]));
        cJSON_AddNumberToObject(o, "gpu_allocation_ratio_at_100",
                                (double)(long long)(sums.mean[p][100] * 100 + 0.5) / 100);
        cJSON_AddItemToObject(o, "allocation_curve", curve_json(sums.mean[p]));
        int pi = a.pols[p] == SHARE_FGD || a.pols[p] == SHARE_FGD_PLAIN ? 0 : 1;
        if (a.pols[p] != SHARE_SPREAD && have_pub[pi]) {
            cJSON_AddStringToObject(o, "published_policy", pol_published(a.pols[p]));
            cJSON_AddNumberToObject(o, "published_at_100", pub[pi][100]);
            cJSON_AddItemToObject(o, "published_curve", curve_json(pub[pi]));
        }
        cJSON_AddItemToArray(mean, o);
    }
    if (a.json) {
        char *txt = cJSON_Print(root);
        if (txt)
            puts(txt);
        free(txt);
    } else {
        print_table(&a, &sums, n_seeds, workload, pub, have_pub);
    }
    if (a.published && !have_pub[0] && !have_pub[1])
        fprintf(stderr, "gangsched simulate: warning: %s has no rows for workload %s\n",
                a.published, workload);
    cJSON_Delete(root);
    openb_pods_free(&pods);
    openb_nodes_free(&nodes);
    return 0;
}
