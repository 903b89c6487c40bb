/* sched/sim/events.c: the JSON Lines event log (--events) and --explain (see run.h). */
#include "sched/sim/run.h"

/* ---- event log --------------------------------------------------------------------------- */

/* A JSON string; bytes that are not UTF-8 (the trace reader refuses them in ids; names from
 * elsewhere may hold them) become U+FFFD, so every line stays valid JSON. */
void sim_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    while (*s) {
        unsigned char ch = (unsigned char)*s;
        size_t n = trace_utf8_seq((const unsigned char *)s);
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else if (n == 0)
            fputs("\\ufffd", f);
        else
            fwrite(s, 1, n, f);
        s += n ? n : 1;
    }
    fputc('"', f);
}

void sim_ev_head(const struct run *r, int64_t t_ms, const char *type, uint32_t job)
{
    FILE *f = r->opt->events;
    fprintf(f, "{\"t\":%.3f,\"type\":\"%s\",\"policy\":", (double)t_ms / 1000.0, type);
    sim_json_str(f, r->pol->name);
    fputs(",\"job\":", f); /* the waiting members of an elastic job: the job's name */
    job = sim_job_of(r, job);
    sim_json_str(f, r->in->jobs[job].id);
    fputs(",\"queue\":", f);
    sim_json_str(f, r->in->queues[r->in->jobs[job].gang.queue].name);
}

/* A JSON array of pods a[idx[k]] (a[k] when idx is NULL), k < n: each's node and GPU indices. */
void sim_ev_pods(const struct run *r, const struct sched_assign *a, const uint32_t *idx, uint32_t n)
{
    FILE *f = r->opt->events;
    fputc('[', f);
    for (uint32_t k = 0; k < n; k++) {
        const struct sched_assign *p = &a[idx ? idx[k] : k];
        fputs(k ? ",{\"node\":" : "{\"node\":", f);
        sim_json_str(f, r->in->cluster->nodes[p->node].name);
        fputs(",\"gpus\":[", f);
        bool first = true;
        for (uint32_t b = 0; b < 32; b++)
            if (p->gpu_mask & (1u << b)) {
                fprintf(f, first ? "%u" : ",%u", b);
                first = false;
            }
        fputs("]}", f);
    }
    fputc(']', f);
}

void sim_ev_cluster(const struct run *r)
{
    FILE *f = r->opt->events;
    const struct cluster *c = r->in->cluster;
    fputs("{\"t\":0,\"type\":\"cluster\",\"policy\":", f);
    sim_json_str(f, r->pol->name);
    fputs(",\"nodes\":[", f);
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        fputs(i ? ",{\"node\":" : "{\"node\":", f);
        sim_json_str(f, c->nodes[i].name);
        fprintf(f, ",\"gpus\":%u}", c->nodes[i].n_gpus);
    }
    fputs("]}\n", f);
}

void sim_ev_node(const struct run *r, int64_t now, const char *type, uint32_t node)
{
    FILE *f = r->opt->events;
    if (!f)
        return;
    fprintf(f, "{\"t\":%.3f,\"type\":\"%s\",\"policy\":", (double)now / 1000.0, type);
    sim_json_str(f, r->pol->name);
    fputs(",\"node\":", f);
    sim_json_str(f, r->in->cluster->nodes[node].name);
    fputs("}\n", f);
}

/* A "reserve" event whenever the held capacity changes (gang or nodes). */
void sim_log_reservations(struct run *r, const struct sched_result *res, int64_t now)
{
    uint64_t h = SCHED_HASH_INIT;
    for (uint32_t k = 0; k < res->n_reservations; k++) {
        h = sched_hash(h, &res->reservations[k].gang->id, sizeof(res->reservations[k].gang->id));
        h = sched_hash(h, res->reservations[k].nodes,
                       res->reservations[k].n_nodes * sizeof(*res->reservations[k].nodes));
    }
    if (h == r->last_reservation)
        return;
    r->last_reservation = h;
    FILE *f = r->opt->events;
    for (uint32_t k = 0; k < res->n_reservations; k++) {
        const struct sched_reservation *rv = &res->reservations[k];
        sim_ev_head(r, now, "reserve", rv->gang->id);
        fputs(",\"nodes\":[", f);
        for (uint32_t n = 0; n < rv->n_nodes; n++) {
            fputs(n ? "," : "", f);
            sim_json_str(f, r->in->cluster->nodes[rv->nodes[n]].name);
        }
        if (rv->expected_start_ms == INT64_MAX)
            fputs("],\"expected_start\":null}\n", f);
        else
            fprintf(f, "],\"expected_start\":%.3f}\n", (double)rv->expected_start_ms / 1000.0);
    }
}

/* Prints the repeats of the last --explain line ("... x312 until t=...") and forgets it. */
void sim_explain_flush(struct run *r)
{
    if (r->explain_rep > 0)
        fprintf(stderr, "t=%.0fs policy=%s job=%s: ... x%u until t=%.0fs\n",
                (double)r->explain_from / 1000.0, r->pol->name, r->opt->explain_job, r->explain_rep,
                (double)r->explain_until / 1000.0);
    r->explain_rep = 0;
    r->explain_prev[0] = 0;
}

/* One --explain line: printed when it differs from the previous one, counted otherwise. */
static void explain_line(struct run *r, int64_t now, const char *text)
{
    if (strcmp(text, r->explain_prev) == 0) {
        if (r->explain_rep++ == 0)
            r->explain_from = now;
        r->explain_until = now;
        return;
    }
    sim_explain_flush(r);
    fprintf(stderr, "t=%.0fs policy=%s job=%s: %s\n", (double)now / 1000.0, r->pol->name,
            r->opt->explain_job, text);
    snprintf(r->explain_prev, sizeof(r->explain_prev), "%s", text);
}

void sim_explain(struct run *r, const struct sched_result *res, int64_t now)
{
    for (uint32_t v = 0; v < res->n_verdicts; v++) {
        const struct sched_verdict *vd = &res->verdicts[v];
        if (strcmp(r->in->jobs[sim_job_of(r, vd->gang->id)].id, r->opt->explain_job) != 0)
            continue;
        char buf[512];
        sched_verdict_format(vd, r->in->cluster, r->in->config, buf, sizeof(buf));
        explain_line(r, now, buf);
    }
    for (uint32_t p = 0; p < res->n_placements; p++)
        if (strcmp(r->in->jobs[sim_job_of(r, res->placements[p].gang->id)].id,
                   r->opt->explain_job) == 0) {
            const struct sched_placement *pl = &res->placements[p];
            const struct topo *t = &r->in->cluster->topo;
            char terms[128] = "", line[400];
            size_t len = 0;
            for (uint32_t k = 0; k < pl->n_terms && len < sizeof(terms); k++) {
                int w = snprintf(terms + len, sizeof(terms) - len, "%s%s %u",
                                 k ? ", " : "; top scores: ", plugin_scores[pl->terms[k]]->name,
                                 (unsigned)pl->term_values[k]);
                len += w > 0 ? (size_t)w : 0;
            }
            snprintf(line, sizeof(line), "placed in %s %s%s",
                     pl->level >= 0 ? t->levels[pl->level].name : "cluster",
                     pl->level >= 0 ? t->levels[pl->level].domain_names[pl->domain] : "(spans)",
                     terms);
            explain_line(r, now, line);
        }
}
