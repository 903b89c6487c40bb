/* sched/kube/driver_bind.c: the binder of the Kubernetes driver (see driver.c for the cycle).
 *
 * Owns: the binds of a cycle (a pod's ResourceClaims protected by their finalizer and written,
 * then its Binding; rereads after a conflict; bind_done and binds_finished closing the cycle's
 * intents in one transaction, with the rollback of a gang with a failed member and the
 * Unreserve of its unbound members' claims), the fences that end a Binding's doubt, opening
 * the store, and recovery of a previous process's open bind intents.
 *
 * Must not touch: scheduling decisions, the cycle's order (driver.c), status text
 * (driver_status.c), the lifecycle rules (driver_life.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"
#include "sched/kube/hami.h"

/* ---- fences: the read-back that ends a Binding's uncertainty ----------------------------------
 *
 * Every Binding carries the pod's resourceVersion as a precondition, which the API server checks
 * when it applies the write, however late (BindingREST: a GuaranteedUpdate with preconditions).
 * kube-scheduler's DefaultBinder sends only the pod's uid (pkg/scheduler/framework/plugins/
 * defaultbinder); the version is ours, for the fences below. So that our own PodScheduled status
 * write does not fail it, a Binding waits for that write's answer (kdrv_pod_writes_park).
 * A fence is a write to the pod (the annotation gangsched.io/bind-fence): it changes the
 * resourceVersion, so a Binding sent before it can never apply after it, and its answer is the
 * pod as it is at that point: bound (a Binding got there first: a late bind, accounted for) or
 * not (and then never by an old Binding). */
struct kfence {
    struct kdrv *d;
    char key[KOBJ_KEY_MAX];
    bool recovery; /* recovery waits for every fence; else a rolled-back member to settle */
    uint32_t tries;
};

static void send_fence(struct kfence *f);

static void on_fenced(void *ctx, const struct kube_resp *r)
{
    struct kfence *f = ctx;
    struct kdrv *d = f->d;
    bool done = true;
    if (r->status >= 200 && r->status < 300) {
        cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
        if (obj && kcache_pod_event(d->cache, obj, false) != 0)
            kdrv_fatal(d, "out of memory in the pod cache");
        cJSON_Delete(obj);
        const struct kpod *p = kcache_pod(d->cache, f->key);
        if (p && p->node) {
            LOG_WARN(KDRV_MOD, "a Binding was applied late: pod=%s node=%s", f->key, p->node);
            if (!f->recovery) { /* a member of a rolled-back gang: it goes too */
                char ns[256], name[256];
                snprintf(ns, sizeof(ns), "%s", p->ns);
                snprintf(name, sizeof(name), "%s", p->name);
                kdrv_delete_pod(d, ns, name, "bound late, after its gang was rolled back");
            }
        } else {
            kcache_unassume(d->cache, f->key);
        }
    } else if (r->status == 404) {
        kcache_unassume(d->cache, f->key);
    } else if (++f->tries < 5 && !d->stopping) {
        LOG_WARN(KDRV_MOD, "fence failed: pod=%s status=%d error=%s (sent again)", f->key,
                 r->status, r->error ? r->error : "");
        done = false;
    } else {
        LOG_ERROR(KDRV_MOD, "fence failed: pod=%s status=%d error=%s (given up)", f->key, r->status,
                  r->error ? r->error : "");
        if (!f->recovery)
            kcache_unassume(d->cache, f->key);
    }
    if (!done) {
        send_fence(f);
        return;
    }
    if (f->recovery && d->fences_left > 0)
        d->fences_left--;
    free(f);
}

static void send_fence(struct kfence *f)
{
    char path[KOBJ_KEY_MAX + 40], val[300], t[40];
    struct kdrv *d = f->d;
    const char *slash = strchr(f->key, '/'); /* keys are "ns/name" (kobj_key) */
    snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/pods/%s",
             slash ? (int)(slash - f->key) : 0, f->key, slash ? slash + 1 : f->key);
    kobj_format_time(kdrv_now(d), t, sizeof(t));
    snprintf(val, sizeof(val), "%s %s", d->o->identity ? d->o->identity : "gangsched", t);
    cJSON *body = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "metadata"), "annotations");
    cJSON_AddStringToObject(ann, KOBJ_ANNOT_BIND_FENCE, val);
    kdrv_send_or_fail(d, KUBE_PATCH_MERGE, path, body, on_fenced, f);
}

static void fence_pod(struct kdrv *d, const char *key, bool recovery)
{
    struct kfence *f = calloc(1, sizeof(*f));
    if (!f) {
        LOG_ERROR(KDRV_MOD, "out of memory fencing %s", key);
        return;
    }
    f->d = d;
    f->recovery = recovery;
    snprintf(f->key, sizeof(f->key), "%s", key);
    if (recovery)
        d->fences_left++;
    send_fence(f);
}

/* ---- binding ----------------------------------------------------------------------------------
 */

void kdrv_gang_binds_free(struct kgang_binds *gb)
{
    for (uint32_t i = 0; i < gb->n_pods; i++) {
        free(gb->pods[i].pod_key);
        free(gb->pods[i].ns);
        free(gb->pods[i].name);
        free(gb->pods[i].node);
        free(gb->pods[i].error);
    }
    free(gb->pods);
    free(gb->gang);
    free(gb->pg_key);
    free(gb->queue);
    free(gb->flavor);
    free(gb->summary);
    kdrv_shared_free(gb);
}

/* A join's running members' GPUs when its binds answer: the job row's (old, NULL: none) without
 * the joiners' when the row counted them (members that left since the placement are out of it:
 * the placement's figure would count them again); else (the running members' own binds were
 * still in flight at the placement, their answer writes their GPUs) the placement's figure.
 * 0 for a gang that joins none. */
static int64_t join_run_gpus(const struct kgang_binds *gb, const struct store_job *old)
{
    int64_t g = !gb->joins                                              ? 0
                : gb->counted && old && old->state == STORE_JOB_RUNNING ? old->gpus - gb->gpus
                                                                        : gb->run_gpus;
    return g > 0 ? g : 0;
}

/* The engine's state of a gang whose binds failed: its members' deletion is the rollback, not a
 * failure for the lifecycle. A join's rollback is of the new members only: the gang runs on, as
 * before its binds (marked rolled back, its running members were torn down as bound after the
 * rollback). */
static void rolled_back(struct kdrv *d, const struct kgang_binds *gb)
{
    uint32_t id = kdrv_gang_id(d, gb->gang);
    int rc = gb->joins ? eng_job_restore(d->eng, id, ENG_JOB_RUNNING, eng_job(d->eng, id).restarts)
                       : eng_job_bind_refused(d->eng, id);
    if (rc != 0)
        LOG_ERROR(KDRV_MOD, "out of memory recording gang %s rolled back", gb->gang);
}

/* Every bind of the cycle has answered: close the intents in one transaction, roll back gangs
 * with a failed member (their claims unreserved), then status and events. */
static void binds_finished(struct kdrv *d)
{
    struct sched_errbuf eb;
    int64_t now = kdrv_now(d);
    int rc = store_begin(d->db, &eb);
    for (uint32_t g = 0; rc == 0 && g < d->n_binds; g++) {
        struct kgang_binds *gb = &d->binds[g];
        bool ok = gb->n_failed == 0, joins = gb->joins; /* elastic: others run */
        rc = store_journal_done(d->db, gb->gang, STORE_ALL_PODS,
                                ok ? STORE_BIND_BOUND : STORE_BIND_ROLLED_BACK, now, NULL, &eb);
        struct store_job old;
        bool had = rc == 0 && store_job_get(d->db, gb->gang, &old, NULL) == 0;
        int64_t run_gpus = join_run_gpus(gb, had ? &old : NULL);
        if (rc == 0) {
            struct store_job j = {.gang = gb->gang,
                                  .gang_id = -1,
                                  .queue = gb->queue,
                                  .flavor = ok || joins ? gb->flavor : NULL,
                                  .gpus = ok      ? run_gpus + gb->gpus
                                          : joins ? run_gpus
                                                  : gb->gpus,
                                  .state = ok || joins ? STORE_JOB_RUNNING : STORE_JOB_PENDING,
                                  .submit_ms = now,
                                  .admit_ms = ok ? now : STORE_NO_TIME,
                                  .start_ms = ok ? now : STORE_NO_TIME,
                                  .finish_ms = STORE_NO_TIME};
            if (had) {
                j.submit_ms = old.submit_ms;
                j.preemptions = old.preemptions;
                j.restarts = old.restarts;
                if (joins) { /* the run goes on from its start */
                    j.admit_ms = old.admit_ms;
                    j.start_ms = old.start_ms;
                }
            }
            rc = store_job_upsert(d->db, &j, &eb);
        }
        if (rc == 0 && !ok) /* a join that failed: those that run stay charged */
            rc = joins ? kdrv_job_recharge(d, gb->gang, run_gpus, &eb)
                       : kdrv_job_charge(d, gb->gang, NULL, NULL, 0, -1, &eb);
    }
    if (rc == 0)
        rc = store_commit(d->db, &eb);
    if (rc != 0) {
        store_rollback(d->db);
        kdrv_fatal(d, eb.msg); /* the journal must stay true: stop rather than guess */
        return;
    }
    for (uint32_t g = 0; g < d->n_binds; g++) {
        struct kgang_binds *gb = &d->binds[g];
        const struct kpg *pg = gb->pg_key ? kcache_pg(d->cache, gb->pg_key) : NULL;
        const char *bound_lbl[] = {"bound"}, *failed_lbl[] = {"failed"};
        http_metric_add_value(d->m_binds, bound_lbl, gb->n_pods - gb->n_failed);
        http_metric_add_value(d->m_binds, failed_lbl, gb->n_failed);
        const char *outcome[] = {gb->n_failed == 0 ? "bound" : "rolled_back"};
        http_metric_add_value(d->m_gangs, outcome, 1);
        /* members that joined a gang asked to checkpoint as a victim go with it: its handshake
         * (the engine's TEARING state, in its grace) stays whatever their binds did */
        bool victim = kdrv_job_in_grace(eng_job(d->eng, kdrv_gang_id(d, gb->gang)));
        if (gb->n_failed == 0) {
            if (!victim && eng_job_bound(d->eng, kdrv_gang_id(d, gb->gang), now) != 0)
                LOG_ERROR(KDRV_MOD, "out of memory recording gang %s bound", gb->gang);
            LOG_INFO(KDRV_MOD, "gang bound: gang=%s pods=%u", gb->gang, gb->n_pods);
            kdrv_gang_status(d, gb->gang, pg, "Running", "Normal", "Scheduled", gb->summary, true);
            if (pg && pg->api == KPG_CPG_V1ALPHA3) /* and the groups of the tree */
                for (uint32_t i = 0; i < gb->n_pods; i++)
                    kdrv_child_scheduled(d, kcache_pod(d->cache, gb->pods[i].pod_key), pg,
                                         gb->summary);
            continue;
        }
        const char *first_err = "";
        for (uint32_t i = 0; i < gb->n_pods; i++)
            if (!gb->pods[i].ok && gb->pods[i].error) {
                first_err = gb->pods[i].error;
                break;
            }
        char msg[700];
        snprintf(msg, sizeof(msg),
                 gb->joins ? "%u of %u new members could not be bound (%s); the bound ones are "
                             "deleted and wait to join again, the gang runs on"
                           : "%u of %u pods could not be bound (%s); the bound ones are "
                             "deleted and the gang is scheduled again",
                 gb->n_failed, gb->n_pods, first_err);
        LOG_WARN(KDRV_MOD, "gang bind failed: gang=%s error=%s", gb->gang, msg);
        /* whole-gang rollback: the members bound (by us, or by someone else first) are deleted
         * and stay assumed until the watch shows them bound; a Binding without a definite
         * answer may still land: the pod stays assumed until a fence says how it ended */
        for (uint32_t i = 0; i < gb->n_pods; i++) {
            struct kbind *b = &gb->pods[i];
            if (b->ok || b->foreign)
                kdrv_delete_pod(d, b->ns, b->name,
                                b->ok ? "partial gang rolled back"
                                      : "bound elsewhere by someone else: its gang is rolled back");
            if (b->unknown) {
                fence_pod(d, b->pod_key, false);
            } else if (!b->ok) {
                if (!b->foreign) { /* never bound: its claims are given back now */
                    kdrv_unreserve_claims(d, gb, b);
                    kdrv_ext_rollback(d, b);
                }
                kcache_unassume(d->cache, b->pod_key);
            }
        }
        if (!victim)
            rolled_back(d, gb);
        kdrv_gang_status(d, gb->gang, pg, gb->joins ? "Running" : "Pending", "Warning",
                         "FailedBinding", msg, true);
    }
    for (uint32_t g = 0; g < d->n_binds; g++)
        kdrv_gang_binds_free(&d->binds[g]);
    free(d->binds);
    d->binds = NULL;
    d->n_binds = 0;
    if (d->stopping) /* SIGTERM came during the binds: their writes, then the Lease */
        kdrv_stop_releasing(d);
    else
        kdrv_schedule_cycle(d, d->o->cycle_ms);
}

static void send_bind(struct kdrv *d, struct kbind *b, const char *flavor);

/* One bind has its outcome (b->ok, foreign, unknown; why: the error when it failed). */
static void bind_done(struct kbind *b, const char *why)
{
    struct kgang_binds *gb = b->gb;
    struct kdrv *d = gb->d;
    b->done = true;
    if (!b->ok) {
        b->error = strdup(why);
        gb->n_failed++;
    }
    gb->n_done++;
    if (--d->binds_left == 0)
        binds_finished(d);
}

/* The pod read back is bound as our Binding would have bound it: the same pod (uid), on the node
 * we chose, with the gangsched.io/gpu-ids our Binding set (a Binding's annotations are copied
 * onto the pod), so that another scheduler binding it to the same node is still foreign; a pod
 * bound without GPU indices of ours may carry none (or an empty set). */
static bool bound_by_us(const struct kbind *b, const struct kpod *p)
{
    if (!p->node || strcmp(p->node, b->node) != 0)
        return false;
    if (b->uid[0] && (!p->uid || strcmp(p->uid, b->uid) != 0))
        return false;
    uint32_t ids = p->has_gpu_ids ? p->gpu_mask : 0;
    return ids == b->gpu_mask;
}

/* The pod read back after its Binding's resourceVersion precondition failed: something wrote
 * it since our snapshot (our own status write, a label, or another scheduler's Binding). */
static void on_bind_reread(void *ctx, const struct kube_resp *r)
{
    struct kbind *b = ctx;
    struct kdrv *d = b->gb->d;
    char buf[700];
    if (r->status == 200) {
        cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
        if (obj && kcache_pod_event(d->cache, obj, false) != 0)
            kdrv_fatal(d, "out of memory in the pod cache");
        cJSON_Delete(obj);
        const struct kpod *p = kcache_pod(d->cache, b->pod_key);
        if (p && p->node && bound_by_us(b, p)) {
            /* an earlier attempt of this Binding landed and its answer was lost (the client
             * retried it after a transport error; its resourceVersion precondition then fails) */
            b->ok = true;
            bind_done(b, NULL);
            return;
        }
        if (p && p->node) { /* bound by someone else first (another node, pod or GPU set) */
            b->foreign = true;
            snprintf(buf, sizeof(buf),
                     "pod %s: bound to node \"%s\" by someone else before our Binding", b->pod_key,
                     p->node);
            bind_done(b, buf);
            return;
        }
        if (p && !p->deleting && !d->stopping) { /* still ours to bind: with its new version */
            send_bind(d, b, b->gb->flavor);
            return;
        }
        snprintf(buf, sizeof(buf), "pod %s: deleted or replaced before its Binding", b->pod_key);
        bind_done(b, buf);
        return;
    }
    b->unknown = r->status != 404;
    snprintf(buf, sizeof(buf), "pod %s: HTTP %d reading it back: %s", b->pod_key, r->status,
             r->error ? r->error : "no response");
    bind_done(b, buf);
}

static void on_bind(void *ctx, const struct kube_resp *r)
{
    struct kbind *b = ctx;
    struct kdrv *d = b->gb->d;
    if (r->status >= 200 && r->status < 300) {
        b->ok = true;
    } else if (r->status == 409 && r->error) {
        /* "pod X is already assigned to node \"N\"": fine when N is the node we chose (a retry
         * of a Binding that went through); another node: someone else bound it */
        char want[600];
        snprintf(want, sizeof(want), "already assigned to node \"%s\"", b->node);
        b->ok = strstr(r->error, want) != NULL;
        b->foreign = !b->ok && strstr(r->error, "already assigned to node") != NULL;
        if (!b->ok && !b->foreign && b->rereads < 3 &&
            strstr(r->error, "Precondition failed: ResourceVersion")) {
            /* the pod changed since our snapshot: read it back and decide (a leader deposed
             * meanwhile has exited: the renew deadline is shorter than the lease) */
            char path[KOBJ_KEY_MAX + 40];
            b->rereads++;
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", b->ns, b->name);
            if (kube_request(d->client, KUBE_GET, path, NULL, 0, 0, on_bind_reread, b) == 0)
                return;
        }
    }
    if (!b->ok && (r->status == 0 || r->status == 429 || r->status >= 500))
        b->unknown = true; /* the server may still apply it: fenced at the rollback */
    char buf[600];
    snprintf(buf, sizeof(buf), "pod %s: HTTP %d: %s", b->pod_key, r->status,
             r->error ? r->error : "no response");
    bind_done(b, buf);
}

void kdrv_bind_resume(struct kbind *b)
{
    send_bind(b->gb->d, b, b->gb->flavor);
}

static void send_bind(struct kdrv *d, struct kbind *b, const char *flavor)
{
    char path[600], ids[160];
    if (kdrv_pod_writes_park(d, b)) /* after our status write's answer, with its version */
        return;
    if (!kdrv_may_lead(d)) {
        /* past the renew deadline (or deposed): the daemon is stopping (on_lease), and a deposed
         * leader neither binds nor rolls back; the bind stays unanswered until the exit */
        LOG_WARN(KDRV_MOD, "bind not sent: pod=%s node=%s: no longer the leader", b->pod_key,
                 b->node);
        kdrv_fatal(d, "no longer the leader: a deposed leader never binds");
        return;
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", b->ns, b->name);
    cJSON *meta;
    cJSON *body = kdrv_new_object("v1", "Binding", b->ns, b->name, &meta);
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    b->uid[0] = '\0';
    if (p && p->uid) {
        cJSON_AddStringToObject(meta, "uid", p->uid);
        snprintf(b->uid, sizeof(b->uid), "%s", p->uid); /* a longer one matches nothing */
    }
    if (p && p->rv) /* checked when applied: a fence (or any write) since makes it fail */
        cJSON_AddStringToObject(meta, "resourceVersion", p->rv);
    cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
    annot_gpu_ids(b->gpu_mask, ids, sizeof(ids));
    if (b->gpu_mask)
        cJSON_AddStringToObject(ann, KOBJ_ANNOT_GPU_IDS, ids);
    if (flavor)
        cJSON_AddStringToObject(ann, KOBJ_ANNOT_FLAVOR, flavor);
    const struct cluster *cl = kcache_cluster(d->cache);
    int ni = kcache_node_index(d->cache, b->node);
    struct sched_errbuf eb = {{0}};
    const struct kpod_spec *sp = p ? p->spec : NULL;
    if (khami_annotate(ann, cl && ni >= 0 ? &cl->nodes[ni] : NULL, b->gpu_mask, p ? &p->req : NULL,
                       sp ? sp->gpu_ctrs : NULL, sp ? sp->n_gpu_ctrs : 0, kdrv_now(d) / 1000,
                       &eb)) { /* HAMi's plugin could not find the devices */
        cJSON_Delete(body);
        snprintf(path, sizeof(path), "pod %s: %s", b->pod_key, eb.msg);
        bind_done(b, path);
        return;
    }
    cJSON *target = cJSON_AddObjectToObject(body, "target");
    cJSON_AddStringToObject(target, "apiVersion", "v1");
    cJSON_AddStringToObject(target, "kind", "Node");
    cJSON_AddStringToObject(target, "name", b->node);
    char *s = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    /* retried on 5xx, 429 and transport errors: a bind that landed but whose answer was lost
     * comes back as 409 "Precondition failed: ResourceVersion" (the pod's version moved when it
     * was bound), so on_bind reads the pod back and on_bind_reread counts it bound by us when it
     * is on our node with our uid and GPU indices; without the precondition (no version known)
     * the retry gets 409 "already assigned" to this node, which on_bind counts as bound */
    if (!s || kube_request(d->client, KUBE_POST, path, s, strlen(s), 0, on_bind, b)) {
        struct kube_resp r = {.status = 0, .body = "", .error = "out of memory"};
        free(s);
        on_bind(b, &r);
        return;
    }
    free(s);
}

/* ---- DRA: a pod's ResourceClaims allocated before its Binding (sched/kube/dra.h) ---------- */

/* The claim writes of one pod in flight; its Binding follows when all succeeded. */
struct kclaim_writes {
    struct kbind *b;
    char *flavor;
    uint32_t left, failed;
    char *error;
};

/* One claim's writes (kube-scheduler's bindClaim): when it allocates a claim that lacks
 * KDRA_FINALIZER, first the finalizer (a write of the claim with its resourceVersion as
 * precondition; a 409 reads the claim again, at most 3 times), then the status write
 * (allocation and reservedFor, or an adoption's reservedFor entry). A claim being deleted is
 * refused. */
struct kclaim_write {
    struct kclaim_writes *w;
    uint32_t idx;           /* the claim's index in the pod's claims */
    enum kube_method how;   /* of the status write */
    cJSON *status;          /* its body (owned until sent) */
    bool allocates;         /* the status write carries status.allocation */
    bool mig;               /* of MIG devices it picked (kcache_mig_pick): released when answered */
    struct kshared *shared; /* a shared claim's one write (its answer is every consumer's) */
    uint32_t rereads;
    char key[KOBJ_KEY_MAX];
    char path[KOBJ_KEY_MAX + 80]; /* the claim's path; its status write adds "/status" */
};

static void claim_write_start(struct kclaim_write *cw);

/* A claim write has its outcome (2xx or not); the pod's Binding follows the last one. */
static void claim_written(struct kclaim_write *cw, const struct kube_resp *r)
{
    struct kclaim_writes *w = cw->w;
    bool ok = r->status >= 200 && r->status < 300;
    if (cw->mig) { /* its answer holds the devices now (the claim map's), the picks are done */
        struct kdrv *d = w->b->gb->d;
        if (ok && r->body && r->len)
            kdrv_claim_answer_to_cache(d, r);
        kcache_mig_release(d->cache, cw->key);
    }
    /* a write answered 2xx reserved the claim for the pod; one without a definite answer may
     * have: both are undone if the gang rolls back (kdrv_unreserve_claims) */
    if (cw->idx < 32 && (ok || r->status == 0 || r->status == 429 || r->status >= 500)) {
        w->b->claims_reserved |= 1u << cw->idx;
        if (cw->allocates)
            w->b->claims_made |= 1u << cw->idx;
    }
    if (!ok) {
        w->failed++;
        if (!w->error) {
            char buf[600];
            snprintf(buf, sizeof(buf), "pod %s: ResourceClaim %s: HTTP %d: %s", w->b->pod_key,
                     cw->key, r->status, r->error ? r->error : "no response");
            w->error = strdup(buf);
        }
    }
    cJSON_Delete(cw->status);
    free(cw);
    if (--w->left > 0)
        return;
    struct kbind *b = w->b;
    if (w->failed == 0) /* finalizer, allocation and reservedFor written: now the Binding */
        send_bind(b->gb->d, b, w->flavor);
    else
        bind_done(b, w->error ? w->error : "ResourceClaim allocation failed");
    free(w->flavor);
    free(w->error);
    free(w);
}

/* The answer of a claim's write; a shared claim's is every consumer's: those waiting for it
 * take it after the writer (the last of them may end the gang bind, and free s). */
static void on_claim_written(void *ctx, const struct kube_resp *r)
{
    struct kclaim_write *cw = ctx;
    struct kshared *s = cw->shared;
    if (!s) {
        claim_written(cw, r);
        return;
    }
    s->state = KSHARED_ANSWERED;
    s->status = r->status;
    s->error = r->error ? strdup(r->error) : NULL;
    struct kclaim_write **wait = s->waiting;
    uint32_t n = s->n_waiting;
    s->waiting = NULL;
    s->n_waiting = s->cap_waiting = 0;
    struct kube_resp same = {.status = r->status, .body = "", .error = r->error};
    claim_written(cw, &same);
    for (uint32_t k = 0; k < n; k++)
        claim_written(wait[k], &same);
    free(wait);
}

/* cw, a consumer's write of shared claim s, takes the answer of the claim's one write: now if
 * it has come, else when it does; -1 out of memory. */
static int shared_join(struct kshared *s, struct kclaim_write *cw)
{
    if (s->state == KSHARED_ANSWERED) {
        struct kube_resp r = {.status = s->status, .body = "", .error = s->error};
        claim_written(cw, &r);
        return 0;
    }
    if (s->n_waiting == s->cap_waiting) {
        uint32_t cap = s->cap_waiting ? 2 * s->cap_waiting : 8;
        struct kclaim_write **v = realloc(s->waiting, cap * sizeof(*v));
        if (!v)
            return -1;
        s->waiting = v;
        s->cap_waiting = cap;
    }
    s->waiting[s->n_waiting++] = cw;
    return 0;
}

void kdrv_claim_answer_to_cache(struct kdrv *d, const struct kube_resp *r)
{
    cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
    if (obj && kcache_claim_event(d->cache, obj, false) != 0)
        kdrv_fatal(d, "out of memory in the claim cache");
    cJSON_Delete(obj);
}

static void on_claim_reread(void *ctx, const struct kube_resp *r)
{
    struct kclaim_write *cw = ctx;
    if (r->status != 200) {
        on_claim_written(cw, r);
        return;
    }
    kdrv_claim_answer_to_cache(cw->w->b->gb->d, r);
    claim_write_start(cw);
}

static void on_claim_protected(void *ctx, const struct kube_resp *r)
{
    struct kclaim_write *cw = ctx;
    struct kdrv *d = cw->w->b->gb->d;
    if (r->status == 409 && cw->rereads < 3 && !d->stopping) {
        /* the claim changed since it was read (deleted, allocated, another finalizer): read
         * it again and decide again, as bindClaim's RetryOnConflict */
        cw->rereads++;
        if (kube_request(d->client, KUBE_GET, cw->path, NULL, 0, 0, on_claim_reread, cw) == 0)
            return;
    }
    if (r->status < 200 || r->status >= 300) {
        on_claim_written(cw, r);
        return;
    }
    kdrv_claim_answer_to_cache(d, r);
    char path[sizeof(cw->path) + 8];
    snprintf(path, sizeof(path), "%s/status", cw->path);
    cJSON *body = cw->status;
    cw->status = NULL;
    kdrv_send_or_fail(d, cw->how, path, body, on_claim_written, cw);
}

static void claim_write_start(struct kclaim_write *cw)
{
    struct kdrv *d = cw->w->b->gb->d;
    const struct kclaim *cl = kcache_claim(d->cache, cw->key);
    char why[KOBJ_KEY_MAX + 80];
    struct kube_resp r = {.status = 0, .body = "", .error = why};
    if (!cl) {
        snprintf(why, sizeof(why), "claim %s unknown", cw->key);
        on_claim_written(cw, &r);
        return;
    }
    if (cl->deleting) { /* bindClaim: "claim ... got deleted in the meantime" */
        snprintf(why, sizeof(why), "claim %s is being deleted", cw->key);
        on_claim_written(cw, &r);
        return;
    }
    if (cw->allocates && !cl->finalizer) {
        cJSON *body = kdra_claim_protect(cl);
        if (!body) {
            snprintf(why, sizeof(why), "claim %s: no resourceVersion to protect it", cw->key);
            on_claim_written(cw, &r);
            return;
        }
        kdrv_send_or_fail(d, KUBE_PATCH_STRATEGIC, cw->path, body, on_claim_protected, cw);
        return;
    }
    struct kube_resp ok = {.status = 200, .body = "", .len = 0};
    on_claim_protected(cw, &ok);
}

bool kdrv_mask_devices(struct kdrv *d, const char *node, uint32_t mask, const char **dev,
                       const char **drv, const char **pool, uint32_t *n)
{
    *n = 0;
    for (uint32_t g = 0; g < 32; g++)
        if (mask & (1u << g)) {
            dev[*n] = kcache_dra_device(d->cache, node, g, &drv[*n], &pool[*n]);
            if (!dev[*n])
                return false;
            (*n)++;
        }
    return true;
}

/* The body of shared claim s's one write, by consumer b: the holder's devices (on b's node),
 * every consumer in reservedFor; NULL when the holder is elsewhere. */
static cJSON *shared_body(struct kdrv *d, const struct kbind *b, const struct kclaim *cl,
                          const struct kshared *s, const uint8_t *sub)
{
    const struct kbind *h = &b->gb->pods[s->uses[s->holder].pod];
    const char *hd[32], *hdrv[32], *hp[32];
    uint32_t hn = 0;
    if (strcmp(h->node, b->node) != 0 ||
        !kdrv_mask_devices(d, h->node, h->gpu_mask, hd, hdrv, hp, &hn))
        return NULL;
    struct kdra_ref *who = calloc(KDRA_MAX_CONSUMERS, sizeof(*who));
    cJSON *body = who ? kdra_claim_allocation_subs(cl, sub, b->node, hd, hdrv, hp, hn, who,
                                                   kdrv_shared_who(d, b->gb, s, who))
                      : NULL;
    free(who);
    return body;
}

/* The firstAvailable subrequests claim cl takes on node into sub (kclaims_subs); true for a
 * claim without such requests. */
static bool claim_subs(struct kdrv *d, const struct kclaim *cl, const char *node, uint8_t *sub)
{
    for (uint32_t r = 0; r < cl->n_reqs; r++)
        if (cl->reqs[r].first_available)
            return kcache_claim_subs(d->cache, cl, node, sub);
    return true;
}

/* Writes status.allocation and status.reservedFor of every claim of the pod (resourceclaims/
 * status, as kube-scheduler's DynamicResources PreBind), the devices being the node's DRA GPUs
 * of the pod's GPU mask in index order, then sends its Binding; a pod without claims is bound
 * at once. A claim several pods of the gang share gets the devices of its first consumer and all
 * of them in reservedFor, the same body from each consumer before its own Binding. A claim the
 * cycle found allocated already (b->claims_adopt) gets only the pod's reservedFor entry, none
 * if it lists the pod; no longer allocated, the bind fails. A failed write fails the bind (the
 * gang rolls back whole). */
void kdrv_send_claims_then_bind(struct kdrv *d, struct kbind *b, const char *flavor)
{
    if (kdrv_may_lead(d) && kdrv_ext_needed(d, b))
        kdrv_ext_then_bind(d, b, flavor);
    else
        kdrv_claims_then_bind(d, b, flavor);
}

void kdrv_bind_fail(struct kbind *b, const char *why)
{
    bind_done(b, why);
}

void kdrv_claims_then_bind(struct kdrv *d, struct kbind *b, const char *flavor)
{
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    if (!p || p->n_claims == 0 || !kdrv_may_lead(d)) {
        /* past the renew deadline: no claim is allocated for a pod never bound (send_bind
         * refuses and stops) */
        send_bind(d, b, flavor);
        return;
    }
    const char *dev[32], *drv[32], *pool[32];
    uint32_t n = 0;
    bool gpu_claims = false; /* GPUs from claims (else device-plugin GPUs, e.g. with a channel) */
    for (uint32_t i = 0; i < p->n_claims; i++) {
        const struct kclaim *cl = kcache_claim(d->cache, p->claims[i]);
        bool adopt = i < 32 && (b->claims_adopt >> i) & 1u; /* its devices are not the pod's */
        gpu_claims |= !adopt && (!cl || cl->gpus > 0 || cl->all);
    }
    if (gpu_claims && !kdrv_mask_devices(d, b->node, b->gpu_mask, dev, drv, pool, &n)) {
        char buf[600];
        snprintf(buf, sizeof(buf), "pod %s: a GPU of node %s is not a DRA device", b->pod_key,
                 b->node);
        bind_done(b, buf);
        return;
    }
    struct kclaim_writes *w = calloc(1, sizeof(*w));
    if (!w || (flavor && !(w->flavor = strdup(flavor)))) {
        free(w);
        bind_done(b, "out of memory");
        return;
    }
    w->b = b;
    w->left = p->n_claims;
    uint32_t at = 0;
    for (uint32_t i = 0; i < p->n_claims; i++) {
        const struct kclaim *cl = kcache_claim(d->cache, p->claims[i]);
        struct kshared *s = NULL;
        struct kdra_ref me = kdrv_claim_ref(p, i);
        uint8_t sub[KDRA_MAX_REQS] = {0};
        cJSON *body = NULL;
        enum kube_method how = KUBE_PATCH_MERGE;
        const char *ch[1], *ch_drv[1] = {0}, *ch_pool[1] = {0}; /* ComputeDomain: the channel */
        const char *fail = "claim unknown or too few devices";
        const char *md[32], *mdrv[32], *mpool[32]; /* MIG devices (sched/kube/mig.h) */
        uint32_t mn = 0;
        int mig = 0;
        bool adopt = i < 32 && (b->claims_adopt >> i) & 1u, listed = false, joins = false;
        if (adopt) {
            /* allocated already (by anyone): the pod (or its PodGroup, KEP-5729) is added to
             * reservedFor, the allocation (immutable once set) is left; listed already (an
             * earlier attempt's adoption, the PodGroup's running pods): nothing to write
             * (kube-scheduler's IsReservedForPod) */
            listed = cl && cl->allocated && kdra_claim_reserved_for(cl, me.uid);
            if (cl && cl->allocated && !listed &&
                kcache_claim_adopted(d->cache, p->claims[i], me.uid) != 0)
                kdrv_fatal(d, "out of memory recording a claim adoption");
            else if (cl && cl->allocated && !listed)
                body = kdra_claim_adopt(cl->uid, &me);
            fail = "the claim is no longer allocated since the cycle adopted it";
            how = KUBE_PATCH_STRATEGIC;
        } else if (cl && cl->channels) {
            if ((ch[0] = kcache_cd_channel(d->cache, b->node, ch_drv, ch_pool)) != NULL)
                body = kdra_claim_allocation(cl, b->node, ch, ch_drv, ch_pool, 1, &me, 1);
        } else if (cl && (mig = kcache_mig_pick(d->cache, p->claims[i], b->node, md, mdrv, mpool,
                                                32, &mn, sub)) != 0) {
            body = mig > 0
                       ? kdra_claim_allocation_subs(cl, sub, b->node, md, mdrv, mpool, mn, &me, 1)
                       : NULL;
            fail = "too few free MIG devices of the claim's profile on the node";
        } else if (cl && !claim_subs(d, cl, b->node, sub)) {
            fail = "no firstAvailable subrequest of the claim suits the node";
        } else if (cl && kdrv_shared(d, b->gb, p->claims[i], &s) != 0) {
            fail = "out of memory";
        } else if (cl && s) { /* shared: one write, by the first consumer here, for all */
            joins = s->state != KSHARED_UNSENT;
            body = joins ? NULL : shared_body(d, b, cl, s, sub);
        } else if (cl) {
            uint32_t take = cl->all ? n - at : (uint32_t)cl->gpus; /* All: the rest */
            body = at + take <= n ? kdra_claim_allocation_subs(cl, sub, b->node, dev + at, drv + at,
                                                               pool + at, take, &me, 1)
                                  : NULL;
            at += take;
        }
        struct kclaim_write *cw = calloc(1, sizeof(*cw));
        if (!cw) {
            cJSON_Delete(body);
            kdrv_fatal(d, "out of memory writing ResourceClaims");
            continue;
        }
        *cw = (struct kclaim_write){.w = w, .idx = i, .how = how, .status = body};
        cw->allocates = !adopt; /* an adoption's patch leaves the allocation */
        cw->mig = mig > 0;
        snprintf(cw->key, sizeof(cw->key), "%s", p->claims[i]);
        snprintf(cw->path, sizeof(cw->path),
                 "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", p->ns,
                 cl ? cl->name : "");
        if (s && !joins) { /* its answer is every consumer's, a failure too */
            s->state = KSHARED_SENT;
            cw->shared = s;
        }
        struct kube_resp r = {.status = listed ? 200 : 0, .body = "", .error = fail};
        if (joins && shared_join(s, cw) != 0)
            claim_written(cw,
                          &(struct kube_resp){.status = 0, .body = "", .error = "out of memory"});
        else if (!joins && body)
            claim_write_start(cw);
        else if (!joins) /* no body: reserved for the pod already (listed), else failed */
            on_claim_written(cw, &r);
    }
}

/* ---- recovery ----------------------------------------------------------------------------------
 */

static int recover_intent(void *ctx, const struct store_intent *in)
{
    struct kdrv *d = ctx;
    uint32_t on_target = 0;
    for (uint32_t i = 0; i < in->n_pods; i++) {
        const struct kpod *p = kcache_pod(d->cache, in->pods[i].name);
        if (p && p->node && !p->deleting && strcmp(p->node, in->pods[i].node) == 0)
            on_target++;
    }
    bool whole = on_target == in->n_pods;
    if (!whole) /* every member bound, wherever and by whoever, goes: the gang starts whole */
        for (uint32_t i = 0; i < in->n_pods; i++) {
            const struct kpod *p = kcache_pod(d->cache, in->pods[i].name);
            if (p && p->node) {
                char ns[256], name[256];
                kdrv_split_key(in->pods[i].name, ns, sizeof(ns), name, sizeof(name));
                kdrv_delete_pod(d, ns, name, "partial gang found at recovery");
            }
        }
    LOG_INFO(KDRV_MOD, "recovered bind intent: gang=%s pods=%u bound=%u outcome=%s", in->gang,
             in->n_pods, on_target, whole ? "bound" : "rolled-back");
    return store_journal_done(d->db, in->gang, STORE_ALL_PODS,
                              whole ? STORE_BIND_BOUND : STORE_BIND_ROLLED_BACK, kdrv_now(d), NULL,
                              NULL);
}

/* The unbound pods of an open intent may still be bound by a Binding of the previous process:
 * fenced before the intent is judged. */
static int fence_intent(void *ctx, const struct store_intent *in)
{
    struct kdrv *d = ctx;
    for (uint32_t i = 0; i < in->n_pods; i++) {
        const struct kpod *p = kcache_pod(d->cache, in->pods[i].name);
        if (p && !p->node && !p->deleting)
            fence_pod(d, p->key, true);
    }
    return 0;
}

/* Without the previous leader's journal, any pending pod of ours may have a Binding in flight. */
static void fence_pending(void *ctx, const struct kpod *p)
{
    struct kdrv *d = ctx;
    if (p->ours && !p->node && !p->deleting && !p->gated && p->phase == KPOD_PENDING)
        fence_pod(d, p->key, true);
}

#define KDRV_META_TERM "daemon.lease_term" /* the Lease term this database last led in */

/* Whether this database's bind journal covers every Binding the previous leader may have sent:
 * it led the term just before this one (a restart on the same database), or nobody led before
 * (this process created the Lease), or there is no leader election. */
static bool journal_complete(struct kdrv *d, int64_t term)
{
    if (!d->lease || term == 0)
        return true;
    int64_t last = -2;
    if (store_meta_get_i64(d->db, KDRV_META_TERM, &last, NULL) != 0)
        return false;
    return last == term - 1 || last == term;
}

bool kdrv_job_gave_up(const struct store_job *j)
{
    /* a gang gives up only once its restarts exceed maxRestarts (>= 0): a FAILED row with none
     * is one whose gang was forgotten (kdrv_job_fresh) */
    return j->state == STORE_JOB_FAILED && j->restarts > 0;
}

struct gave_up {
    struct kdrv *d;
    int64_t now;
};

/* A store time that may be absent (STORE_NO_TIME, the smallest int64): the later of two. */
static int64_t later(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int load_gave_up(void *ctx, const struct store_job *j)
{
    struct gave_up *gu = ctx;
    struct kdrv *d = gu->d;
    if (!kdrv_job_gave_up(j))
        return 0;
    uint32_t g = kdrv_gang_id(d, j->gang);
    int64_t row_ms = later(later(j->submit_ms, j->admit_ms), later(j->start_ms, j->finish_ms));
    if (g == ENG_NONE || kdrv_gang_restored(d, g, j->submit_ms, row_ms, gu->now) != 0)
        return SCHED_ENOMEM;
    return eng_job_restore(d->eng, g, ENG_JOB_FAILED, j->restarts);
}

int kdrv_restore_gave_up(struct kdrv *d, int64_t now, struct sched_errbuf *eb)
{
    struct gave_up gu = {.d = d, .now = now};
    int rc = store_job_list(d->db, load_gave_up, &gu, eb);
    return rc == SCHED_ENOMEM ? sched_fail(eb, rc, "out of memory restoring the gangs that gave up")
                              : rc;
}

/* The database is opened by the leader only (standbys never write). */
int kdrv_open_store(struct kdrv *d)
{
    struct sched_errbuf eb;
    struct store_opts so;
    store_opts_default(&so);
    so.writer_id = d->o->identity;
    char adopted[600];
    int rc = http_follow_adopt(d->o->db_path, adopted, sizeof(adopted), &eb); /* fail-over */
    if (rc == 1)
        LOG_INFO(KDRV_MOD, "%s", adopted);
    else if (rc < 0)
        LOG_WARN(KDRV_MOD, "the followed store is not adopted: error=%s", eb.msg);
    rc = store_open(d->o->db_path, STORE_CREATE | STORE_DURABLE, &so, &d->db, &eb);
    if (rc != 0 && d->o->rebuild_store) {
        /* the cluster is the truth: what is lost is the operators' holds and reservations, the
         * retry budgets spent, the decision history and the fair-share history; said loudly, the
         * old file kept */
        char aside[4200];
        if (store_set_aside(d->o->db_path, rc, aside, sizeof(aside), &eb) == 0) {
            LOG_WARN(KDRV_MOD, "database rebuilt: error=%s kept_as=%s", eb.msg, aside);
            rc = store_open(d->o->db_path, STORE_CREATE | STORE_DURABLE, &so, &d->db, &eb);
        }
    }
    if (rc == 0) {
        rc = store_config_apply(d->db, config_watch_current(d->cw), NULL, 0, &eb);
        if (rc == 0) /* the operators' holds survive a restart or a new leader */
            rc = store_action_list(d->db, false, kdrv_replay_action, d, &eb);
        if (rc == 0) /* and so do the gangs that used up their retry budget */
            rc = kdrv_restore_gave_up(d, kdrv_now(d), &eb);
        if (rc == 0) /* and the operators' reservations */
            rc = store_reservation_list(d->db, kdrv_load_operator_hold, d, &eb);
        if (rc != 0) {
            store_close(d->db);
            d->db = NULL;
        }
    }
    if (rc != 0)
        kdrv_fatal(d, eb.msg);
    return rc;
}

/* Resolves what a previous leader left: first the fences (returns 1 while they are answered),
 * then the open intents judged from the pods as read back. */
int kdrv_recover(struct kdrv *d)
{
    struct sched_errbuf eb;
    int64_t term = d->lease ? kube_lease_transitions(d->lease) : 0;
    if (!d->fenced) {
        d->fenced = true;
        bool complete = journal_complete(d, term);
        if (store_journal_pending(d->db, fence_intent, d, &eb) != 0) {
            kdrv_fatal(d, eb.msg);
            return -1;
        }
        if (!complete)
            kcache_each_pod(d->cache, fence_pending, d);
        LOG_INFO(KDRV_MOD, "recovery: term=%lld journal=%s fences=%u", (long long)term,
                 complete ? "complete" : "of another leader", d->fences_left);
    }
    if (d->fences_left > 0)
        return 1;
    int rc = store_begin(d->db, &eb);
    if (rc == 0 && d->lease)
        rc = store_meta_put_i64(d->db, KDRV_META_TERM, term, &eb);
    if (rc == 0)
        rc = store_journal_pending(d->db, recover_intent, d, &eb);
    if (rc == 0)
        rc = store_commit(d->db, &eb);
    if (rc != 0) {
        store_rollback(d->db);
        kdrv_fatal(d, eb.msg);
        return rc;
    }
    d->recovered = true;
    return 0;
}

/* The binds of one placed gang (gb, zeroed): copies of its keys, and every member assumed on
 * its node in the cache. Returns -1 when out of memory. */
static int gang_binds_prepare(struct kdrv *d, struct kgang_binds *gb, const struct kcache_build *kb,
                              const struct sched_placement *pl, const struct config *cfg)
{
    const struct kgang *kg = &kb->gangs[pl->gang->id];
    gb->d = d;
    gb->gang = strdup(kg->key);
    gb->queue = strdup(cfg->queues[pl->gang->queue].name);
    const char *fl = kdrv_flavor_name(cfg, pl->flavor);
    gb->flavor = fl ? strdup(fl) : NULL;
    const struct kgang *run = kg->run; /* elastic: members join it */
    gb->joins = run != NULL;
    gb->gpus = pl->gang->gpus;
    gb->run_gpus = run ? run->gang.gpus : 0;
    struct store_job row; /* as record_placement left it: running for a join it counted */
    gb->counted = run && d->db && store_job_get(d->db, kg->key, &row, NULL) == 0 &&
                  row.state == STORE_JOB_RUNNING;
    if (kg->pg) {
        gb->pg_key = strdup(kg->pg->key);
        gb->api = kg->pg->api;
    }
    gb->n_pods = pl->gang->n_pods;
    gb->pods = calloc(gb->n_pods, sizeof(*gb->pods));
    const struct cluster *cl = kb->snap.cluster;
    char summary[400];
    int off = snprintf(summary, sizeof(summary), "%u pods placed", gb->n_pods);
    if (pl->level >= 0 && (uint32_t)pl->level < cl->topo.n_levels)
        off += snprintf(summary + off, sizeof(summary) - (size_t)off, " in %s %s",
                        cl->topo.levels[pl->level].name,
                        cl->topo.levels[pl->level].domain_names[pl->domain]);
    if (pl->borrowing && off < (int)sizeof(summary))
        off += snprintf(summary + off, sizeof(summary) - (size_t)off, " (borrowing quota)");
    gb->summary = strdup(summary);
    if (!gb->gang || !gb->queue || !gb->pods || !gb->summary)
        return -1;
    for (uint32_t i = 0; i < gb->n_pods; i++) {
        const struct kpod *pod = kg->members[i];
        struct kbind *b = &gb->pods[i];
        b->gb = gb;
        b->index = i;
        b->pod_key = strdup(pod->key);
        b->ns = strdup(pod->ns);
        b->name = strdup(pod->name);
        b->node = strdup(cl->nodes[pl->pods[i].node].name);
        b->gpu_mask = pl->pods[i].gpu_mask;
        b->claims_adopt = pod->claims_adopt;
        if (!b->pod_key || !b->ns || !b->name || !b->node ||
            kcache_assume(d->cache, pod->key, b->node, b->gpu_mask, pl->flavor) != 0)
            return -1;
        d->binds_left++;
    }
    return 0;
}

/* The cycle's binds (step 4 of driver.c): every member of every placed gang assumed in the cache,
 * then sent. */
void kdrv_binds_start(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                      const struct config *cfg)
{
    if (res->n_placements == 0)
        return;
    d->binds = calloc(res->n_placements, sizeof(*d->binds));
    if (!d->binds) {
        kdrv_fatal(d, "out of memory");
        return;
    }
    d->n_binds = res->n_placements;
    d->binds_left = 0;
    for (uint32_t p = 0; p < res->n_placements; p++) {
        /* backfill on probation; not the growth of an elastic gang, which shares its running
         * part's engine id (its members that ran before promised nothing). Members joining a
         * gang this cycle asked to checkpoint as a victim leave its state alone (its handshake;
         * they go with it) */
        const struct gang *to =
            kb->gangs[res->placements[p].gang->id].run ? NULL : res->placements[p].probation_for;
        uint32_t id = 0;
        if (gang_binds_prepare(d, &d->binds[p], kb, &res->placements[p], cfg) != 0 ||
            (!kdrv_job_in_grace(eng_job(d->eng, id = kdrv_gang_id(d, d->binds[p].gang))) &&
             eng_job_binding(d->eng, id) != 0) ||
            (to && eng_job_probation(d->eng, id, kdrv_gang_id(d, kb->gangs[to->id].key)) != 0)) {
            kdrv_fatal(d, "out of memory");
            return;
        }
    }
    /* send after every pod is assumed: a bind answering at once must not end the cycle
     * while others are still being prepared */
    uint32_t n_binds = d->n_binds;
    struct kgang_binds *binds = d->binds;
    for (uint32_t p = 0; p < n_binds; p++)
        for (uint32_t i = 0; i < binds[p].n_pods; i++)
            kdrv_send_claims_then_bind(d, &binds[p].pods[i], binds[p].flavor);
}
