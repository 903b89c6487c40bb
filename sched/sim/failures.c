/* sched/sim/failures.c: failure injection: node failures, planned outages, failed starts; the rules
 * they trigger (lifecycle, strikes, quarantine, retry budget) are the engine's (sched/engine/) (see
 * run.h). */
#include "sched/core/hash.h"
#include "sched/sim/run.h"

/* A uniform 64-bit draw per (seed, job, attempt, salt): splitmix64, independent of everything
 * else the run does, so that a failure model never depends on the order of events. */
static uint64_t fail_draw(const struct run *r, uint32_t j, uint64_t salt)
{
    uint64_t z = (r->fail->seed + 1) * 0x9E3779B97F4A7C15ull + ((uint64_t)j << 32) +
                 (uint64_t)r->attempts[j] * 0xD1B54A32D192ED03ull + salt * 0x94D049BB133111EBull;
    return sched_mix64(z);
}

/* Does this start fail? A draw per job and attempt. */
bool sim_start_fails(const struct run *r, uint32_t j)
{
    if (!r->fail || r->fail->pod_start_failure_rate <= 0)
        return false;
    return (double)(fail_draw(r, j, 0) >> 11) / 9007199254740992.0 <
           r->fail->pod_start_failure_rate;
}

/* The member (pod index) whose start failed, for the strike: uniform over the gang's pods. */
static uint32_t failed_member(const struct run *r, uint32_t j)
{
    uint32_t n = sim_gang(r, j)->n_pods;
    return n > 1 ? (uint32_t)(fail_draw(r, j, 1) % n) : 0;
}

static double fail_unit(struct run *r)
{
    return sim_rng_unit(&r->fail_rng);
}

/* Exponential time to the next failure of a node, ms. */
static int64_t next_failure_ms(struct run *r)
{
    double u = fail_unit(r);
    return (int64_t)(-log(1.0 - u) * r->fail->node_mtbf_h * 3.6e6) + 1;
}

/* A running gang broke: a member never becomes ready (start), or one was lost with its node.
 * The engine's lifecycle rules see it when the daemon would: at the start timeout, or when the
 * node has been NotReady for the grace. */
void sim_break_gang(struct run *r, uint32_t j, int64_t at, bool start, uint32_t node, int64_t now)
{
    if (r->broken[j])
        return;
    r->broken[j] = 1;
    r->broken_start[j] = start;
    r->lost_node[j] = node;
    r->fail_at[j] = now;
    sim_heap_push(r, at, j, FIN_TEARDOWN);
}

/* The retry delay's cap of g's queue (lifecycle.backoffMax, whose default is the engine's);
 * 0 (the engine's default) without a configuration. */
_Static_assert(CONFIG_DEFAULT_BACKOFF_MAX_MS == ENG_BACKOFF_MAX_MS, "one default retry cap");
static int64_t queue_backoff_max(const struct run *r, const struct gang *g)
{
    const struct config *c = r->in->config;
    return c && g->queue < c->n_queues ? c->queues[g->queue].lifecycle.backoff_max_ms : 0;
}

/* The facts of broken job j for the lifecycle rules (sched/engine/life.h): a failed start has
 * one member that never becomes ready (failed_member); a lost member is on a node NotReady
 * since the loss (the simulator's pods die with their node, whether it comes back or not).
 * *act: the rule's action, NULL when none applies. */
static int check_broken(struct run *r, uint32_t j, int64_t now, struct eng_life_action **act)
{
    const struct gang *g = sim_gang(r, j);
    struct arena *a = &r->life_arena;
    arena_reset(a);
    struct eng_member *m = arena_calloc(a, g->n_pods + 1, sizeof(*m));
    if (!m)
        return SCHED_ENOMEM;
    uint32_t bad = r->broken_start[j] ? failed_member(r, j) : UINT32_MAX;
    for (uint32_t k = 0; k < g->n_pods; k++)
        m[k] = (struct eng_member){.node = r->assign[j][k].node,
                                   .phase = k == bad ? ENG_POD_PENDING : ENG_POD_RUNNING,
                                   .ready = k != bad};
    uint32_t lost = r->broken_start[j] ? UINT32_MAX : r->lost_node[j];
    uint32_t n_nodes = r->in->cluster->n_nodes;
    if (lost < n_nodes) /* the engine's NotReady-since: 0 is "ready" */
        r->down_at[lost] = r->fail_at[j] > 0 ? r->fail_at[j] : 1;
    struct eng_gang_facts gf = {.gang = j,
                                .members = m,
                                .n_members = g->n_pods,
                                .min_member = g->min_member,
                                .start_timeout_ms = r->fail->start_timeout_ms,
                                .grace_ms = r->fail->detect_ms,
                                .max_restarts = r->fail->max_restarts,
                                .backoff_max_ms = queue_backoff_max(r, g),
                                /* an elastic inference job that keeps min_pods live loses
                                 * only its lost members (sim/elastic.c) */
                                .spread = g->spread};
    uint32_t n;
    int rc = eng_life_check(r->eng, &gf, 1, now, r->down_at, n_nodes, a, act, &n);
    if (lost < n_nodes)
        r->down_at[lost] = 0;
    if (rc == 0 && n == 0)
        *act = NULL;
    return rc;
}

/* Every member of broken job j goes at once: the statistics of the lost run, its nodes freed,
 * event `evict`. `own`: a failed start (no work was done), else a member was lost. */
void sim_tear_down(struct run *r, uint32_t j, bool own, int64_t now)
{
    /* work since the last checkpoint is lost (a failed start did no work at all) */
    int64_t done = own ? 0 : sim_work_done(r, j, now);
    if (done > r->remaining_ms[j])
        done = r->remaining_ms[j];
    /* the last checkpoint before the member was lost: the survivors' later ones are not whole */
    int64_t saved = sim_saved_work(r, j, own ? now : r->fail_at[j]);
    if (saved > done)
        saved = done;
    /* the run's GPUs over its time, but for the time its saved work took */
    double lost_gpu_ms = (double)sim_gang(r, j)->gpus *
                         ((double)(now - r->run_start_ms[j]) - (double)sim_wall_for(r, j, saved));
    r->st->gpu_hours_lost_to_failures += lost_gpu_ms / 3.6e6;
    if (!own) /* a member died: the rest ran partially until now */
        r->st->partial_gang_seconds += (double)(now - r->fail_at[j]) / 1000.0;
    r->remaining_ms[j] -= saved;
    sim_account_run(r, j, now);
    sim_touch(r, j);
    sim_release_job(r, j);
    r->gen[j]++;
    r->st->failure_restarts++;
    if (r->opt->events) {
        sim_ev_head(r, now, "evict", j);
        fputs(",\"reason\":", r->opt->events);
        sim_json_str(r->opt->events, own ? "start failure: a member never became ready"
                                         : "node failure: the gang lost a member");
        fprintf(r->opt->events, ",\"lost_gpu_s\":%.3f}\n", lost_gpu_ms / 1000.0);
    }
}

/* The check of broken job j: the engine's rule and its effects. */
static void teardown(struct run *r, uint32_t j, int64_t now)
{
    struct eng_life_action *act = NULL;
    eng_effects_clear(&r->fx);
    if (check_broken(r, j, now, &act) != 0 ||
        (act && eng_life_apply(r->eng, act, now, &r->fx) != 0)) {
        r->oom = true;
        return;
    }
    r->broken[j] = 0;
    if (act && !act->whole && sim_lose_members(r, j, act->lost, act->n_lost, now) != 0)
        r->oom = true;
    sim_on_effects(r, now);
}

/* Node i goes down (it was up): every running gang with a member on it breaks. */
static void node_down(struct run *r, uint32_t i, int64_t now)
{
    r->state[i].not_ready = true;
    sim_node_changed(r, i);
    r->st->node_failures++;
    sim_ev_node(r, now, "node-down", i);
    for (uint32_t k = 0; k < r->n_run; k++) { /* gangs with a member on it break */
        uint32_t j = r->runlist[k];
        const struct gang *g = sim_gang(r, j);
        for (uint32_t p = 0; p < g->n_pods; p++)
            if (r->assign[j][p].node == i) {
                sim_break_gang(r, j, now + r->fail->detect_ms, false, i, now);
                break;
            }
    }
}

/* One of the holds of node i ends (an outage's end, a repair): up when none is left. */
static void node_release(struct run *r, uint32_t i, int64_t now)
{
    if (r->held_down[i] > 0 && --r->held_down[i] == 0 && r->state[i].not_ready) {
        sim_ev_node(r, now, "node-up", i);
        r->state[i].not_ready = false;
        sim_node_changed(r, i);
    }
}

void sim_failure_event(struct run *r, const struct fin *f, int64_t now)
{
    const struct sim_failures *fl = r->fail;
    uint32_t i = f->job;
    switch (f->kind) {
    case FIN_TEARDOWN:
        teardown(r, i, now);
        return;
    case FIN_RESUBMIT:
        r->n_backoff--;
        eng_job_retry(r->eng, i);
        sim_submit(r, i, now);
        return;
    case FIN_OUTAGE: /* it holds the node down until its end, whatever else happens */
        if (r->held_down[i]++ == 0)
            node_down(r, i, now);
        return;
    case FIN_NODE_DOWN:
        if (r->held_down[i] > 0) { /* in an outage: skipped, its next failure drawn */
            sim_heap_push(r, now + next_failure_ms(r), i, FIN_NODE_DOWN);
            return;
        }
        r->held_down[i] = 1;
        node_down(r, i, now);
        /* repaired, then its next failure; the run ends without them once they are all that
         * can happen (sim_failures_only). --repair 0: never repaired */
        if (fl->repair_h > 0) {
            int64_t up = now + (int64_t)(fl->repair_h * 3.6e6);
            sim_heap_push(r, up, i, FIN_REPAIR);
            sim_heap_push(r, up + next_failure_ms(r), i, FIN_NODE_DOWN);
        }
        return;
    case FIN_NODE_UP:
    case FIN_REPAIR:
        node_release(r, i, now);
        return;
    case FIN_UNQUARANTINE:
        eng_effects_clear(&r->fx);
        eng_release_due(r->eng, i, now, &r->fx);
        sim_on_effects(r, now);
        return;
    default:
        return;
    }
}

/* Whether random node failures are all that is left to happen: nothing arrives, runs or backs
 * off, and no node is waiting for its repair, the end of its outage or of its quarantine. The
 * gangs still waiting were examined by the last cycle with every node that will ever be up again
 * up, so they wait for good (the run without failures ends there too); a random failure and its
 * repair would only bring the run back to this state. */
bool sim_failures_only(const struct run *r)
{
    if (r->next_sub < r->in->n_jobs || r->n_run > 0 || r->n_backoff > 0)
        return false;
    for (uint32_t k = 0; k < r->n_heap; k++)
        if (r->heap[k].kind == FIN_NODE_UP || r->heap[k].kind == FIN_REPAIR ||
            r->heap[k].kind == FIN_OUTAGE || r->heap[k].kind == FIN_UNQUARANTINE)
            return false;
    return true;
}

/* Seeds the failure schedule: random node failures and the planned outages. */
void sim_failures_init(struct run *r, int64_t t0)
{
    const struct sim_failures *fl = r->fail;
    for (uint32_t j = 0; j < r->in->n_jobs; j++)
        r->fail_at[j] = -1; /* not broken */
    r->fail_rng = fl->seed ? fl->seed * 0x9E3779B97F4A7C15ull + 1 : 0x2545F4914F6CDD1Dull;
    if (fl->node_mtbf_h > 0)
        for (uint32_t i = 0; i < r->in->cluster->n_nodes; i++)
            sim_heap_push(r, t0 + next_failure_ms(r), i, FIN_NODE_DOWN);
    for (uint32_t k = 0; k < fl->n_outages; k++) {
        sim_heap_push(r, fl->outages[k].down_ms, fl->outages[k].node, FIN_OUTAGE);
        sim_heap_push(r, fl->outages[k].up_ms, fl->outages[k].node, FIN_NODE_UP);
    }
}

int sim_outages_read(const char *path, const struct cluster *c, struct sim_outage **out,
                     uint32_t *n, struct sched_errbuf *eb)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sched_fail(eb, SCHED_EIO, "cannot read outages %s: %s", path, strerror(errno));
    char line[512];
    uint32_t cap = 0, lineno = 0;
    *out = NULL;
    *n = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: line longer than %zu bytes", path, lineno,
                            sizeof(line) - 2);
            break;
        }
        line[strcspn(line, "\r\n")] = 0;
        if (lineno == 1) {
            if (strcmp(line, "node,down,up") != 0)
                rc = sched_fail(eb, SCHED_EINVAL, "%s:1: expected the header node,down,up", path);
            continue;
        }
        if (!line[0])
            continue;
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) {
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: expected 3 fields", path, lineno);
            break;
        }
        *c1 = *c2 = 0;
        char *e1, *e2;
        double down = strtod(c1 + 1, &e1), up = strtod(c2 + 1, &e2);
        int node = -1;
        for (uint32_t i = 0; i < c->n_nodes && node < 0; i++)
            if (strcmp(c->nodes[i].name, line) == 0)
                node = (int)i;
        if (node < 0)
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'node': no node '%s' in the cluster",
                            path, lineno, line);
        else if (e1 == c1 + 1 || *e1 || !(down >= 0) || down > 1e12)
            rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'down': not a time in seconds", path,
                            lineno);
        else if (e2 == c2 + 1 || *e2 || !(up > down) || up > 1e12 ||
                 (int64_t)(up * 1000.0) <= (int64_t)(down * 1000.0)) /* the clock's unit: ms */
            rc = sched_fail(eb, SCHED_EINVAL,
                            "%s:%u: column 'up': not a time after 'down' (to the millisecond)",
                            path, lineno);
        if (rc != 0)
            break;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct sim_outage *o = realloc(*out, cap * sizeof(*o));
            if (!o) {
                rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
                break;
            }
            *out = o;
        }
        (*out)[(*n)++] = (struct sim_outage){.node = (uint32_t)node,
                                             .down_ms = (int64_t)(down * 1000.0),
                                             .up_ms = (int64_t)(up * 1000.0)};
    }
    if (rc == 0 && lineno == 0)
        rc = sched_fail(eb, SCHED_EINVAL, "%s: empty file", path);
    fclose(f);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
