/* tests/unit/test_kube_engine.c: the daemon's side of the engine (sched/kube/driver_eng.c,
 * kdrv_holds_offer and kdrv_holds_take in driver_ops.c) on a cycle's input built by the cache
 * from API objects: names interned to engine ids that stay the same while objects come and go,
 * the cycle's maps both ways (a node or gang not in this cycle maps to none), and the holds the
 * core is offered through them: a preemptor's for its pending gang, an operator's for a gang not
 * pending yet (held for nobody), on nodes of this cycle only, and the core's reservations taken
 * back as holds and hints. A name's record belongs to one object: a PodGroup created again under
 * the name (another uid, or another creation time than a restored row's) starts afresh, and
 * gangs gone for KDRV_GANG_FORGET_MS are forgotten (not a PodGroup without pods; a restored Failed
 * gang counted from its row's time). Of two APIs' PodGroups under one name the first owns it, the
 * other is announced once and takes the name when the first is deleted. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/kube/driver_int.h"

#include "tests/unit/kube_fx.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: q\n";

static int setup(void **state)
{
    static struct fx f;
    memset(&f, 0, sizeof(f));
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &f.cfg, &eb) != 0)
        return -1;
    f.d.cache = kcache_new("gangsched");
    arena_init(&f.d.arena, 1 << 16);
    if (!f.d.cache || kdrv_eng_init(&f.d) != 0)
        return -1;
    fx_node(f.d.cache, "n1");
    fx_node(f.d.cache, "n2");
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    kdrv_eng_fini(&f->d);
    kcache_free(f->d.cache);
    arena_fini(&f->d.arena);
    config_free(f->cfg);
    return 0;
}

static void build(struct fx *f)
{
    fx_build_at(f, 1000);
}

/* The index of gang key in the build (fails when absent). */
static uint32_t kb_gang(const struct fx *f, const char *key)
{
    for (uint32_t g = 0; g < f->kb.n_gangs; g++)
        if (strcmp(f->kb.gangs[g].key, key) == 0)
            return g;
    fail_msg("gang %s not in the build", key);
    return 0;
}

static uint32_t kb_node(const struct fx *f, const char *name)
{
    const struct cluster *cl = f->kb.snap.cluster;
    for (uint32_t n = 0; n < cl->n_nodes; n++)
        if (strcmp(cl->nodes[n].name, name) == 0)
            return n;
    fail_msg("node %s not in the build", name);
    return 0;
}

static void ids_are_stable_and_map_both_ways(void **state)
{
    struct fx *f = *state;
    uint32_t early = kdrv_node_id(&f->d, "gone-node"); /* seen once (a reservation), never again */
    fx_pod(f->d.cache, "a", "", false);
    fx_pod(f->d.cache, "b", "n1", false);
    build(f);
    const struct kids *k = f->d.ids;
    assert_non_null(k);
    for (uint32_t g = 0; g < f->kb.n_gangs; g++) {
        assert_string_equal(eng_names_name(f->d.gang_ids, k->gang[g]), f->kb.gangs[g].key);
        bool pending;
        assert_ptr_equal(k->ids.core_gang(k->ids.ctx, k->gang[g], &pending), &f->kb.gangs[g].gang);
        assert_int_equal(pending, g < f->kb.n_pending);
        assert_int_equal(k->ids.gang(k->ids.ctx, &f->kb.gangs[g].gang), k->gang[g]);
    }
    for (uint32_t n = 0; n < f->kb.snap.cluster->n_nodes; n++) {
        assert_string_equal(eng_names_name(f->d.node_ids, k->node[n]),
                            f->kb.snap.cluster->nodes[n].name);
        assert_int_equal(k->ids.core_node(k->ids.ctx, k->node[n]), n);
        assert_int_equal(k->ids.node(k->ids.ctx, n), k->node[n]);
    }
    assert_int_equal(k->ids.core_node(k->ids.ctx, early), ENG_NONE); /* not in this cycle */
    uint32_t a = k->gang[kb_gang(f, "ml/a")];
    /* the gang goes and comes back: the same id */
    fx_pod(f->d.cache, "c", "", false);
    build(f);
    assert_int_equal(f->d.ids->gang[kb_gang(f, "ml/a")], a);
    assert_int_equal(kdrv_gang_id(&f->d, "ml/a"), a);
}

static void holds_offered_through_the_maps(void **state)
{
    struct fx *f = *state;
    fx_pod(f->d.cache, "a", "", false);
    fx_pod(f->d.cache, "b", "n1", false);
    build(f);
    uint32_t n2 = kdrv_node_id(&f->d, "n2"), gone = kdrv_node_id(&f->d, "n9");
    uint32_t nodes[] = {n2, gone};
    /* a preemptor's hold for pending ml/a, an operator's for ml/later (not pending yet) */
    assert_int_equal(eng_hold_preemptor(f->d.eng, kdrv_gang_id(&f->d, "ml/a"), nodes, 2, 1000), 0);
    assert_int_equal(
        eng_hold_operator(f->d.eng, 7, kdrv_gang_id(&f->d, "ml/later"), nodes, 1, INT64_MAX), 0);
    build(f); /* the maps are made after the names (ml/later, n9 interned since) */
    kdrv_holds_offer(&f->d, &f->kb, 2000);
    assert_int_equal(f->kb.snap.n_holds, 2);
    uint32_t seen = 0;
    for (uint32_t h = 0; h < f->kb.snap.n_holds; h++) {
        const struct sched_hold *sh = &f->kb.snap.holds[h];
        assert_int_equal(sh->n_nodes, 1); /* n9 is not in this cycle */
        assert_int_equal(sh->nodes[0], kb_node(f, "n2"));
        if (sh->gang->id == UINT32_MAX)
            seen |= 1; /* the operator's: held for nobody while ml/later is not pending */
        else if (sh->gang == &f->kb.gangs[kb_gang(f, "ml/a")].gang)
            seen |= 2;
    }
    assert_int_equal(seen, 3);
    /* the preemptor is bound: its hold ends; the operator's stays */
    fx_pod(f->d.cache, "a", "n2", false);
    build(f);
    kdrv_holds_offer(&f->d, &f->kb, 3000);
    assert_int_equal(f->kb.snap.n_holds, 1);
    assert_int_equal(f->kb.snap.holds[0].gang->id, UINT32_MAX);
    /* deleted: nothing held */
    assert_int_equal(eng_hold_operator_drop(f->d.eng, 7), 0);
    kdrv_holds_offer(&f->d, &f->kb, 3000);
    assert_int_equal(f->kb.snap.n_holds, 0);
}

static void reservations_taken_as_holds_and_hints(void **state)
{
    struct fx *f = *state;
    fx_pod(f->d.cache, "p", "", false);
    fx_pod(f->d.cache, "s", "", false);
    build(f);
    uint32_t p = kb_gang(f, "ml/p"), s = kb_gang(f, "ml/s");
    uint32_t on_n2[] = {kb_node(f, "n2")}, on_n1[] = {kb_node(f, "n1")};
    struct sched_reservation rv[] = {
        {.gang = &f->kb.gangs[p].gang, .nodes = on_n2, .n_nodes = 1, .preemptor = true},
        {.gang = &f->kb.gangs[s].gang, .nodes = on_n1, .n_nodes = 1},
    };
    struct sched_result res = {.reservations = rv, .n_reservations = 2};
    kdrv_holds_take(&f->d, &f->kb, &res, 1000);
    /* the next cycle: a node added before the others changes the core's indices */
    fx_node(f->d.cache, "n0");
    build(f);
    kdrv_holds_offer(&f->d, &f->kb, 2000);
    assert_int_equal(f->kb.snap.n_holds, 1);
    assert_ptr_equal(f->kb.snap.holds[0].gang, &f->kb.gangs[kb_gang(f, "ml/p")].gang);
    assert_int_equal(f->kb.snap.holds[0].nodes[0], kb_node(f, "n2"));
    assert_int_equal(f->kb.snap.n_reserve_hints, 1);
    assert_ptr_equal(f->kb.snap.reserve_hints[0].gang, &f->kb.gangs[kb_gang(f, "ml/s")].gang);
    assert_int_equal(f->kb.snap.reserve_hints[0].nodes[0], kb_node(f, "n1"));
    /* the hold ends ENG_HOLD_MS after the cycle that reserved it */
    kdrv_holds_offer(&f->d, &f->kb, 1000 + ENG_HOLD_MS);
    assert_int_equal(f->kb.snap.n_holds, 0);
}

/* An elastic gang (PodGroup ml/e, minMember 2: e-0 and e-1 bound, e-2 pending) is in the
 * build twice under one key; the engine's gang is its pending part, the waiting one, so that a
 * promise made to it (backfill on probation) and its reservations reach the core's pending gang,
 * not its running part. */
static void elastic_gang_is_its_pending_part(void **state)
{
    struct fx *f = *state;
    cJSON *o = cJSON_Parse("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":"
                           "\"PodGroup\",\"metadata\":{\"namespace\":\"ml\",\"name\":\"e\","
                           "\"uid\":\"pg-e\",\"labels\":{\"gangsched.io/queue\":\"q\"}},"
                           "\"spec\":{\"minMember\":2}}");
    assert_non_null(o);
    assert_int_equal(kcache_pg_event(f->d.cache, o, KPG_XK8S, false), 0);
    cJSON_Delete(o);
    const char *members[][2] = {{"e-0", "n1"}, {"e-1", "n1"}, {"e-2", ""}};
    for (int m = 0; m < 3; m++) {
        char buf[900];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
                 "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"e\"}},\"spec\":{"
                 "\"schedulerName\":\"gangsched\",\"nodeName\":\"%s\",\"containers\":[{"
                 "\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
                 "\"status\":{\"phase\":\"%s\"}}",
                 members[m][0], members[m][0], members[m][1],
                 *members[m][1] ? "Running" : "Pending");
        fx_add(f->d.cache, 1, buf);
    }
    fx_pod(f->d.cache, "s", "n2", true); /* a backfilled gang on probation for ml/e */
    build(f);
    assert_int_equal(f->kb.n_pending, 1);
    uint32_t pend = 0; /* the pending part; its running part is .run */
    assert_non_null(f->kb.gangs[pend].run);
    assert_string_equal(f->kb.gangs[pend].key, "ml/e");
    const struct kids *k = f->d.ids;
    uint32_t e = kdrv_gang_id(&f->d, "ml/e");
    bool pending = false;
    assert_ptr_equal(k->ids.core_gang(k->ids.ctx, e, &pending), &f->kb.gangs[pend].gang);
    assert_true(pending);
    /* the promise: ml/s on probation until ml/e's first reservation */
    uint32_t s = kdrv_gang_id(&f->d, "ml/s");
    assert_int_equal(eng_job_reserved(f->d.eng, e, 5000), 0);
    assert_int_equal(eng_job_bound(f->d.eng, s, 1000), 0);
    assert_int_equal(eng_job_probation(f->d.eng, s, e), 0);
    uint32_t r = 0;
    while (r < f->kb.n_running && f->kb.running[r].gang != &f->kb.gangs[kb_gang(f, "ml/s")].gang)
        r++;
    assert_true(r < f->kb.n_running);
    eng_probation_view(f->d.eng, &k->ids, f->kb.running, f->kb.n_running);
    assert_int_equal(f->kb.running[r].probation_until_ms, 5000);
    assert_ptr_equal(f->kb.running[r].probation_for, &f->kb.gangs[pend].gang);
}

/* PodGroup ml/name (uid given, minMember 1) and its pod ml/name-0, pending (kind 2 deletes the
 * PodGroup, 3 the pod). */
static void pg_event_api(struct kcache *c, const char *name, const char *uid, int kind,
                         enum kpg_api api);

static void pg_event(struct kcache *c, const char *name, const char *uid, int kind)
{
    pg_event_api(c, name, uid, kind, KPG_XK8S);
}

static void pg_event_api(struct kcache *c, const char *name, const char *uid, int kind,
                         enum kpg_api api)
{
    char buf[800];
    if (kind == 0 || kind == 2)
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"%s\",\"labels\":"
                 "{\"gangsched.io/queue\":\"q\"},\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
                 "\"spec\":{\"minMember\":1}}",
                 name, uid);
    else
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s-0\",\"uid\":\"p-%s\","
                 "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\",\"gangsched.io/queue\":"
                 "\"q\"}},\"spec\":{\"schedulerName\":\"gangsched\",\"containers\":[{\"name\":"
                 "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]},\"status\":{"
                 "\"phase\":\"Pending\"}}",
                 name, uid, name);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    bool del = kind >= 2;
    int rc = kind % 2 == 0 ? kcache_pg_event(c, o, api, del) : kcache_pod_event(c, o, del);
    assert_int_equal(rc, 0);
    cJSON_Delete(o);
}

/* A PodGroup deleted and created again under its name is a new gang: it does not inherit the
 * old one's record (gave up, a preemptor's hold, its status written); the same object seen again
 * keeps it. */
static void same_name_new_podgroup_starts_afresh(void **state)
{
    struct fx *f = *state;
    pg_event(f->d.cache, "g", "uid-1", 0);
    pg_event(f->d.cache, "g", "uid-1", 1);
    build(f);
    uint32_t g = f->d.ids->gang[kb_gang(f, "ml/g")];
    uint32_t nodes[] = {kdrv_node_id(&f->d, "n1")};
    assert_int_equal(eng_job_reject(f->d.eng, g), 0); /* as a gang that gave up */
    assert_int_equal(eng_hold_preemptor(f->d.eng, g, nodes, 1, 1000), 0);
    struct kstatus *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    assert_int_equal(strmap_put(&f->d.status, "ml/g", st, NULL), 0);
    fx_build_at(f, 2000); /* the same PodGroup: the same record */
    assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_FAILED);
    pg_event(f->d.cache, "g", "uid-1", 2);
    fx_build_at(f, 3000); /* its pod waits for a PodGroup: still the same */
    assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_FAILED);
    pg_event(f->d.cache, "g", "uid-2", 0);
    fx_build_at(f, 4000);
    assert_int_equal(f->d.ids->gang[kb_gang(f, "ml/g")], g); /* the name keeps its id */
    assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_NONE);
    assert_true(eng_job_schedulable(f->d.eng, g));
    assert_int_equal(eng_hold_count(f->d.eng, ENG_HOLDS), 0);
    assert_null(strmap_get(&f->d.status, "ml/g"));
    kdrv_status_fini(&f->d);
}

/* After a restart the store's rows (no uid) restore gangs that gave up: the PodGroup created
 * when the row's gang was submitted keeps the record, one created at another time is new. */
static void restored_record_kept_for_its_own_podgroup(void **state)
{
    struct fx *f = *state;
    const int64_t created = 1767225600000; /* 2026-01-01T00:00:00Z */
    uint32_t same = kdrv_gang_id(&f->d, "ml/same"), other = kdrv_gang_id(&f->d, "ml/other");
    assert_int_equal(eng_job_restore(f->d.eng, same, ENG_JOB_FAILED, 4), 0);
    assert_int_equal(kdrv_gang_restored(&f->d, same, created, created, created), 0);
    assert_int_equal(eng_job_restore(f->d.eng, other, ENG_JOB_FAILED, 4), 0);
    assert_int_equal(kdrv_gang_restored(&f->d, other, created - 60 * 1000, created, created), 0);
    pg_event(f->d.cache, "same", "uid-s", 0);
    pg_event(f->d.cache, "same", "uid-s", 1);
    pg_event(f->d.cache, "other", "uid-o", 0);
    pg_event(f->d.cache, "other", "uid-o", 1);
    build(f);
    assert_int_equal(eng_job_state(f->d.eng, same), ENG_JOB_FAILED);
    assert_int_equal(eng_job(f->d.eng, same).restarts, 4);
    assert_int_equal(eng_job_state(f->d.eng, other), ENG_JOB_NONE);
    assert_int_equal(eng_job(f->d.eng, other).restarts, 0);
    kdrv_status_fini(&f->d);
}

/* Gangs gone for KDRV_GANG_FORGET_MS are forgotten (name, record, id given again), unless
 * charged or reserved for by an operator; N create/delete cycles keep the tables flat. */
static void gangs_gone_are_forgotten(void **state)
{
    struct fx *f = *state;
    int64_t t = 1000;
    kdrv_gangs_sweep(&f->d, t);
    uint32_t held = kdrv_gang_id(&f->d, "ml/reserved");
    assert_int_equal(eng_hold_operator(f->d.eng, 3, held, NULL, 0, INT64_MAX), 0);
    for (int i = 0; i < 2000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "job-%d", i);
        pg_event(f->d.cache, name, name, 0);
        pg_event(f->d.cache, name, name, 1);
        t += 30 * 1000;
        fx_build_at(f, t);
        char key[40];
        snprintf(key, sizeof(key), "ml/%s", name);
        assert_int_equal(eng_job_reject(f->d.eng, f->d.ids->gang[kb_gang(f, key)]), 0);
        pg_event(f->d.cache, name, name, 3);
        pg_event(f->d.cache, name, name, 2);
        kdrv_gangs_sweep(&f->d, t);
    }
    /* at one gang per 30 s, about 20 of them within KDRV_GANG_FORGET_MS, plus a minute */
    assert_true(eng_names_live(f->d.gang_ids) <= 25);
    assert_true(eng_names_count(f->d.gang_ids) <= 40);
    assert_true(eng_job_bound_id(f->d.eng) <= 64);
    assert_int_not_equal(eng_names_find(f->d.gang_ids, "ml/reserved"), ENG_NONE);
    assert_int_equal(eng_names_find(f->d.gang_ids, "ml/job-1"), ENG_NONE);
    assert_int_not_equal(eng_names_find(f->d.gang_ids, "ml/job-1999"), ENG_NONE);
    /* a PodGroup whose pods are gone (a gang that gave up) keeps its record */
    pg_event(f->d.cache, "kept", "uid-k", 0);
    pg_event(f->d.cache, "kept", "uid-k", 1);
    fx_build_at(f, t);
    uint32_t kept = f->d.ids->gang[kb_gang(f, "ml/kept")];
    assert_int_equal(eng_job_reject(f->d.eng, kept), 0);
    pg_event(f->d.cache, "kept", "uid-k", 3);
    for (int i = 0; i < 30; i++) {
        t += 60 * 1000;
        fx_build_at(f, t);
        kdrv_gangs_sweep(&f->d, t);
    }
    assert_int_equal(eng_names_find(f->d.gang_ids, "ml/kept"), kept);
    assert_int_equal(eng_job_state(f->d.eng, kept), ENG_JOB_FAILED);
    kdrv_status_fini(&f->d);
}

/* The status entry of a gang that only ever waited (no engine id) goes KDRV_GANG_FORGET_MS
 * after it was last asked for; a waiting gang's recent one and a gang with an id's stay. */
static void waited_status_forgotten(void **state)
{
    struct fx *f = *state;
    const int64_t t = 1000;
    const char *keys[] = {"ml/waited", "ml/recent", "ml/named"};
    const int64_t seen[] = {t, t + KDRV_GANG_FORGET_MS, t};
    for (int i = 0; i < 3; i++) {
        struct kstatus *st = calloc(1, sizeof(*st));
        assert_non_null(st);
        st->seen_ms = seen[i];
        assert_int_equal(strmap_put(&f->d.status, keys[i], st, NULL), 0);
    }
    uint32_t id = kdrv_gang_id(&f->d, "ml/named"); /* its entry goes with its record */
    assert_int_not_equal(id, ENG_NONE);
    assert_int_equal(eng_job_submit(f->d.eng, id), 0);
    kdrv_gangs_sweep(&f->d, t + KDRV_GANG_FORGET_MS - 1); /* not yet */
    assert_non_null(strmap_get(&f->d.status, "ml/waited"));
    f->d.gang_swept_ms = 0;
    kdrv_gangs_sweep(&f->d, t + KDRV_GANG_FORGET_MS);
    assert_null(strmap_get(&f->d.status, "ml/waited"));
    assert_non_null(strmap_get(&f->d.status, "ml/recent"));
    assert_non_null(strmap_get(&f->d.status, "ml/named"));
    kdrv_status_fini(&f->d);
}

/* A gang forgotten leaves its store job row with no counts (a later gang of its name starts
 * with a whole budget, H1), and a Failed row so left is not restored as Failed at the next start
 * (the gang stays forgotten across a restart); a Failed gang still about keeps its row. */
static void forgotten_row_starts_afresh(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%.60s/kengXXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/g.db", dir);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(path, STORE_CREATE, NULL, &f->d.db, &eb), 0);
    const char *keys[] = {"ml/gone", "ml/kept"};
    for (int i = 0; i < 2; i++) {
        struct store_job j = {.gang = keys[i],
                              .gang_id = -1,
                              .queue = "q",
                              .state = STORE_JOB_FAILED,
                              .submit_ms = 500,
                              .admit_ms = STORE_NO_TIME,
                              .start_ms = STORE_NO_TIME,
                              .finish_ms = 900,
                              .preemptions = 1,
                              .restarts = 2};
        assert_int_equal(store_job_upsert(f->d.db, &j, &eb), 0);
        assert_true(kdrv_job_gave_up(&j));
        uint32_t id = kdrv_gang_id(&f->d, keys[i]);
        assert_int_equal(eng_job_restore(f->d.eng, id, ENG_JOB_FAILED, 2), 0);
    }
    pg_event(f->d.cache, "kept", "uid-k", 0); /* a PodGroup without pods: still about */
    kdrv_gangs_sweep(&f->d, 1000);
    f->d.gang_swept_ms = 0;
    kdrv_gangs_sweep(&f->d, 1000 + KDRV_GANG_FORGET_MS);
    struct store_job r;
    assert_int_equal(store_job_get(f->d.db, "ml/gone", &r, &eb), 0);
    assert_int_equal(r.restarts, 0);
    assert_int_equal(r.preemptions, 0);
    assert_int_equal(r.state, STORE_JOB_FAILED); /* its history for gangctl */
    assert_false(kdrv_job_gave_up(&r));
    assert_int_equal(store_job_get(f->d.db, "ml/kept", &r, &eb), 0);
    assert_int_equal(r.restarts, 2);
    assert_true(kdrv_job_gave_up(&r));
    store_close(f->d.db);
    f->d.db = NULL;
    unlink(path);
    char side[200];
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
    rmdir(dir);
    kdrv_status_fini(&f->d);
}

struct announced {
    int n;
    char refused[32], owner[32];
};

static void on_refused(void *ctx, const struct kpg *refused, const struct kpg *owner)
{
    struct announced *a = ctx;
    a->n++;
    snprintf(a->refused, sizeof(a->refused), "%s", refused->uid);
    snprintf(a->owner, sizeof(a->owner), "%s", owner ? owner->uid : "-");
}

/* The PodGroup refused for a name another API's owns is announced once (the driver posts a
 * Warning Event on it), however many events it has, and takes the name as soon as the owner is
 * deleted, without an event of its own: a new gang. */
static void refused_podgroup_announced_and_adopted(void **state)
{
    struct fx *f = *state;
    pg_event(f->d.cache, "g", "uid-x", 0);
    pg_event(f->d.cache, "g", "uid-x", 1);
    build(f);
    uint32_t g = f->d.ids->gang[kb_gang(f, "ml/g")];
    assert_int_equal(eng_job_reject(f->d.eng, g), 0);
    struct announced a = {0};
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 0);
    pg_event_api(f->d.cache, "g", "uid-v", 0, KPG_VOLCANO); /* refused */
    pg_event_api(f->d.cache, "g", "uid-v", 0, KPG_VOLCANO); /* its update: refused again */
    assert_true(kcache_dirty(f->d.cache));                  /* a cycle comes to announce it */
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.refused, "uid-v");
    assert_string_equal(a.owner, "uid-x");
    pg_event_api(f->d.cache, "g", "uid-v", 0, KPG_VOLCANO);
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 1); /* once per object */
    fx_build_at(f, 2000);
    assert_string_equal(kcache_pg(f->d.cache, "ml/g")->uid, "uid-x");
    assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_FAILED);
    pg_event(f->d.cache, "g", "uid-x", 2); /* the owner's delete: the other takes the name */
    const struct kpg *pg = kcache_pg(f->d.cache, "ml/g");
    assert_non_null(pg);
    assert_string_equal(pg->uid, "uid-v");
    assert_int_equal(pg->api, KPG_VOLCANO);
    fx_build_at(f, 3000);
    assert_int_equal(f->d.ids->gang[kb_gang(f, "ml/g")], g);
    assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_NONE); /* a new gang */
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 1); /* nothing refused any more */
    /* a scheduler-plugins PodGroup of the name created again: the Volcano one owns it now */
    pg_event(f->d.cache, "g", "uid-x2", 0);
    assert_string_equal(kcache_pg(f->d.cache, "ml/g")->uid, "uid-v");
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.refused, "uid-x2");
    assert_string_equal(a.owner, "uid-v");
    kdrv_status_fini(&f->d); /* the refused record is freed with the cache (teardown) */
}

/* One native PodGroup event through watch api (a 1.37 server serves it as v1beta1 and v1alpha3:
 * one object, one uid); del: its delete. */
static void native_pg(struct kcache *c, const char *uid, enum kpg_api api, bool del)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"%s\",\"labels\":"
             "{\"gangsched.io/queue\":\"q\"},\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
             "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}}}",
             uid);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(kcache_pg_event(c, o, api, del), 0);
    cJSON_Delete(o);
}

/* A refused native PodGroup seen through both of its versions is one refused object: one
 * announcement (Warning Event), adopted once when the owner goes, and gone when its delete
 * arrives through either version (before: two Events, and the other version's stale copy came
 * back as the gang after the object was deleted). */
static void refused_native_two_versions_one_object(void **state)
{
    struct fx *f = *state;
    pg_event(f->d.cache, "g", "uid-x", 0); /* scheduler-plugins' owns ml/g */
    native_pg(f->d.cache, "uid-n", KPG_NATIVE_V1BETA1, false);
    native_pg(f->d.cache, "uid-n", KPG_NATIVE_V1ALPHA3, false);
    struct announced a = {0};
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.refused, "uid-n");
    pg_event(f->d.cache, "g", "uid-x", 2); /* the owner's delete: adopted */
    const struct kpg *pg = kcache_pg(f->d.cache, "ml/g");
    assert_non_null(pg);
    assert_string_equal(pg->uid, "uid-n");
    assert_int_equal(pg->api, KPG_NATIVE_V1BETA1);
    native_pg(f->d.cache, "uid-n", KPG_NATIVE_V1BETA1, true); /* deleted, seen through v1beta1 */
    assert_null(kcache_pg(f->d.cache, "ml/g"));
    kcache_refused_announce(f->d.cache, on_refused, &a);
    assert_int_equal(a.n, 1);
    kdrv_status_fini(&f->d);
}

/* Gangs restored as Failed when the store is opened (a restart): one whose objects are gone
 * counts as last seen at its row's latest time (its failure), the best evidence of when it went,
 * so it is forgotten KDRV_GANG_FORGET_MS after that, not after the start; one whose PodGroup is
 * there stays Failed. */
static void restored_failed_forgotten_by_row_time(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%.60s/kengXXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/g.db", dir);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(path, STORE_CREATE, NULL, &f->d.db, &eb), 0);
    const int64_t start = 1767225600000; /* the restart: 2026-01-01T00:00:00Z */
    const char *keys[] = {"ml/long-gone", "ml/just-failed", "ml/about"};
    const int64_t failed[] = {start - 30 * 60 * 1000, start - 60 * 1000, start - 30 * 60 * 1000};
    for (int i = 0; i < 3; i++) {
        struct store_job j = {.gang = keys[i],
                              .gang_id = -1,
                              .queue = "q",
                              .state = STORE_JOB_FAILED,
                              .submit_ms = failed[i] - 3600 * 1000,
                              .admit_ms = failed[i] - 1800 * 1000,
                              .start_ms = STORE_NO_TIME,
                              .finish_ms = failed[i],
                              .restarts = 2};
        assert_int_equal(store_job_upsert(f->d.db, &j, &eb), 0);
    }
    assert_int_equal(kdrv_restore_gave_up(&f->d, start, &eb), 0);
    pg_event(f->d.cache, "about", "uid-a", 0); /* its PodGroup is still there */
    for (int i = 0; i < 3; i++)
        assert_int_equal(eng_job_state(f->d.eng, kdrv_gang_id(&f->d, keys[i])), ENG_JOB_FAILED);
    fx_build_at(f, start);
    kdrv_gangs_sweep(&f->d, start); /* the first cycle: gone for 30 min already */
    assert_int_equal(eng_names_find(f->d.gang_ids, "ml/long-gone"), ENG_NONE);
    uint32_t just = eng_names_find(f->d.gang_ids, "ml/just-failed");
    assert_int_not_equal(just, ENG_NONE);
    assert_int_equal(eng_job_state(f->d.eng, just), ENG_JOB_FAILED);
    f->d.gang_swept_ms = 0;
    kdrv_gangs_sweep(&f->d, start + 9 * 60 * 1000 - 1); /* gone for just under 10 min */
    assert_int_equal(eng_names_find(f->d.gang_ids, "ml/just-failed"), just);
    f->d.gang_swept_ms = 0;
    kdrv_gangs_sweep(&f->d, start + 9 * 60 * 1000);
    assert_int_equal(eng_names_find(f->d.gang_ids, "ml/just-failed"), ENG_NONE);
    uint32_t about = eng_names_find(f->d.gang_ids, "ml/about");
    assert_int_not_equal(about, ENG_NONE);
    assert_int_equal(eng_job_state(f->d.eng, about), ENG_JOB_FAILED);
    store_close(f->d.db);
    f->d.db = NULL;
    const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char side[200];
        snprintf(side, sizeof(side), "%s%s", path, suffix[i]);
        unlink(side);
    }
    rmdir(dir);
    kdrv_status_fini(&f->d);
}

/* Two APIs' PodGroups under one namespace/name (scheduler-plugins' and Volcano's): the first
 * owns the name while it exists, the other's events (updates, its delete) change nothing, so the
 * record does not flip (budget, holds kept); once the first is deleted the other (here deleted
 * too, then created again) takes the name, as a new gang. */
static void two_apis_one_name_stable(void **state)
{
    struct fx *f = *state;
    pg_event(f->d.cache, "g", "uid-x", 0);
    pg_event(f->d.cache, "g", "uid-x", 1);
    build(f);
    uint32_t g = f->d.ids->gang[kb_gang(f, "ml/g")];
    assert_int_equal(eng_job_reject(f->d.eng, g), 0);
    for (int i = 0; i < 3; i++) {
        pg_event_api(f->d.cache, "g", "uid-v", 0, KPG_VOLCANO); /* refused */
        fx_build_at(f, 2000 + i);
        assert_string_equal(kcache_pg(f->d.cache, "ml/g")->uid, "uid-x");
        pg_event(f->d.cache, "g", "uid-x", 0); /* the owner's own update */
        fx_build_at(f, 3000 + i);
        assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_FAILED); /* kept */
    }
    pg_event_api(f->d.cache, "g", "uid-v", 2, KPG_VOLCANO); /* the other's delete */
    assert_non_null(kcache_pg(f->d.cache, "ml/g"));
    pg_event(f->d.cache, "g", "uid-x", 2); /* the owner's delete */
    pg_event_api(f->d.cache, "g", "uid-v", 0, KPG_VOLCANO);
    fx_build_at(f, 5000);
    assert_string_equal(kcache_pg(f->d.cache, "ml/g")->uid, "uid-v");
    assert_int_equal(eng_job_state(f->d.eng, g), ENG_JOB_NONE); /* a new gang */
    kdrv_status_fini(&f->d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ids_are_stable_and_map_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(holds_offered_through_the_maps, setup, teardown),
        cmocka_unit_test_setup_teardown(reservations_taken_as_holds_and_hints, setup, teardown),
        cmocka_unit_test_setup_teardown(elastic_gang_is_its_pending_part, setup, teardown),
        cmocka_unit_test_setup_teardown(same_name_new_podgroup_starts_afresh, setup, teardown),
        cmocka_unit_test_setup_teardown(gangs_gone_are_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(restored_record_kept_for_its_own_podgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(waited_status_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(forgotten_row_starts_afresh, setup, teardown),
        cmocka_unit_test_setup_teardown(two_apis_one_name_stable, setup, teardown),
        cmocka_unit_test_setup_teardown(restored_failed_forgotten_by_row_time, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_podgroup_announced_and_adopted, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_native_two_versions_one_object, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
