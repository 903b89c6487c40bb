/* tests/unit/test_kube_counts.c: each group's members by phase, kept by the cache's pod events
 * (sched/kube/cache_counts.c), the counts a PodGroup's status shows (kpg.seen_counts), which
 * the driver compares them with, and the phase those counts move a PodGroup to
 * (kdrv_counts_phase, driver_counts.c). */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "sched/core/cycle.h"
#include "sched/kube/cache.h"
#include "sched/kube/driver_int.h"

#include "kcache_fx.h"

/* Pod `name` of group g, scheduler `sched`, on node n1 in `phase` ("Pending": unbound). */
static void member(struct kcache *c, const char *name, const char *g, const char *sched,
                   const char *phase)
{
    char buf[900];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\",\"labels\":{"
             "\"scheduling.x-k8s.io/pod-group\":\"%s\"}},\"spec\":{\"schedulerName\":\"%s\","
             "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, name, g, sched, strcmp(phase, "Pending") ? "n1" : "", phase);
    add_json(c, 1, buf);
}

/* What kcache_counts_each hands over: the groups seen, and whether to be done with them. */
struct seen {
    char groups[4][64];
    struct kcounts k[4];
    int n;
    bool done;
};

static bool take(void *ctx, const char *group, struct kcounts *k)
{
    struct seen *s = ctx;
    if (s->n < 4) {
        snprintf(s->groups[s->n], sizeof(s->groups[0]), "%s", group);
        s->k[s->n++] = *k;
    }
    return s->done;
}

static struct seen each(struct kcache *c, bool done)
{
    struct seen s = {.done = done};
    kcache_counts_each(c, take, &s);
    return s;
}

/* Members are counted by phase as their events come; another scheduler's pod is not; a group
 * is handed over once per change, again while the driver is not done with it, and forgotten
 * when its last member is gone. */
static void members_are_counted_by_phase(void **state)
{
    struct fx *f = *state;
    pg(f->c, "g", 2, "team-a");
    member(f->c, "g-0", "g", "gangsched", "Pending");
    member(f->c, "g-1", "g", "gangsched", "Pending");
    member(f->c, "x-0", "g", "default-scheduler", "Running");
    const struct kcounts *k = kcache_counts(f->c, "ml/g");
    assert_non_null(k);
    assert_int_equal(k->pods, 2);
    assert_int_equal(k->n[0] + k->n[1] + k->n[2], 0);
    struct seen s = each(f->c, true);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.groups[0], "ml/g");
    assert_int_equal(each(f->c, true).n, 0); /* done with: no change since */

    member(f->c, "g-0", "g", "gangsched", "Running");
    member(f->c, "g-1", "g", "gangsched", "Running");
    s = each(f->c, false); /* not done: handed over again next time */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.k[0].n[KPOD_RUNNING - 1], 2);
    s = each(f->c, true);
    assert_int_equal(s.n, 1);
    member(f->c, "g-0", "g", "gangsched", "Succeeded");
    member(f->c, "g-1", "g", "gangsched", "Failed");
    k = kcache_counts(f->c, "ml/g");
    assert_int_equal(k->n[KPOD_RUNNING - 1], 0);
    assert_int_equal(k->n[KPOD_SUCCEEDED - 1], 1);
    assert_int_equal(k->n[KPOD_FAILED - 1], 1);
    assert_int_equal(each(f->c, true).n, 1);

    pg(f->c, "g", 2, "team-a"); /* its PodGroup seen again: compared again */
    assert_int_equal(each(f->c, true).n, 1);

    pod_gone(f->c, "g-0");
    k = kcache_counts(f->c, "ml/g");
    assert_int_equal(k->pods, 1);
    assert_int_equal(k->n[KPOD_SUCCEEDED - 1], 0);
    pod_gone(f->c, "g-1");
    s = each(f->c, true);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.k[0].pods, 0);
    assert_null(kcache_counts(f->c, "ml/g")); /* forgotten once done with */

    /* a group without a PodGroup is forgotten with its last member, one whose PodGroup is
     * deleted after its members at once: nothing is left behind, leader or not */
    member(f->c, "np-0", "np", "gangsched", "Running");
    assert_non_null(kcache_counts(f->c, "ml/np"));
    pod_gone(f->c, "np-0");
    assert_null(kcache_counts(f->c, "ml/np"));
    pg(f->c, "h", 1, "team-a");
    member(f->c, "h-0", "h", "gangsched", "Running");
    pod_gone(f->c, "h-0");
    assert_non_null(kcache_counts(f->c, "ml/h")); /* its PodGroup may still show running 1 */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"h\"}}");
    assert_int_equal(kcache_pg_event(f->c, o, KPG_XK8S, true), 0);
    cJSON_Delete(o);
    assert_null(kcache_counts(f->c, "ml/h"));
    assert_int_equal(each(f->c, true).n, 0);
}

/* A PodGroup's status counts as seen: absent or not a count read as 0 (Go omits a zero); its
 * phase as seen, NULL when absent. */
static void seen_counts_are_decoded(void **state)
{
    struct fx *f = *state;
    add_json(f->c, 2,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"s\",\"uid\":\"pg-s\"},"
             "\"spec\":{\"minMember\":2},\"status\":{\"phase\":\"Scheduling\",\"running\":3,"
             "\"succeeded\":1,"
             "\"failed\":\"x\"}}");
    const struct kpg *g = kcache_pg(f->c, "ml/s");
    assert_non_null(g);
    assert_int_equal(g->seen_counts[0], 3);
    assert_int_equal(g->seen_counts[1], 1);
    assert_int_equal(g->seen_counts[2], 0);
    assert_string_equal(g->phase, "Scheduling");
    add_json(f->c, 3,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"v\",\"uid\":\"pg-v\"},"
             "\"spec\":{\"minMember\":1,\"queue\":\"team-a\"},\"status\":{\"running\":-2}}");
    g = kcache_pg(f->c, "ml/v");
    assert_non_null(g);
    assert_int_equal(g->seen_counts[0], 0);
    assert_null(g->phase);
}

/* The phase written, as scheduler-plugins' PodGroup controller and Volcano's jobStatus move
 * theirs: each row is an API, minMember 2, the phase seen, the counts (running, succeeded,
 * failed, members), the daemon's phase (NULL: a counts write) and the phase expected (NULL:
 * left as it is). */
static void phases_follow_the_counts(void **state)
{
    (void)state;
    static const struct {
        enum kpg_api api;
        const char *seen;
        int32_t run, ok, failed;
        uint32_t pods;
        const char *daemon, *want;
    } rows[] = {
        /* scheduler-plugins: bound, not yet running -> Scheduling; then Running, Finished */
        {KPG_XK8S, "Pending", 0, 0, 0, 2, "Running", "Scheduling"},
        {KPG_XK8S, "Pending", 1, 0, 0, 2, "Running", "Scheduling"},
        {KPG_XK8S, "Pending", 2, 0, 0, 2, "Running", "Running"},
        {KPG_XK8S, "Pending", 1, 1, 0, 2, "Running", "Running"},
        {KPG_XK8S, "Scheduling", 1, 0, 0, 2, NULL, NULL},
        {KPG_XK8S, "Scheduling", 1, 1, 0, 2, NULL, "Running"},
        {KPG_XK8S, "Pending", 2, 0, 0, 2, NULL, NULL}, /* not bound by us (yet): left */
        {KPG_XK8S, "Running", 0, 2, 0, 2, NULL, "Finished"},
        {KPG_XK8S, NULL, 0, 2, 0, 2, NULL, "Finished"},
        {KPG_XK8S, "Running", 0, 2, 0, 2, "Running", "Finished"},
        {KPG_XK8S, "Running", 0, 0, 0, 0, "Pending", "Pending"}, /* the daemon's own */
        {KPG_XK8S, "Running", 0, 0, 2, 2, "Failed", "Failed"},
        /* Volcano: Running once bound; Completed once every member ended, minMember of them */
        {KPG_VOLCANO, "Pending", 0, 0, 0, 2, "Running", "Running"},
        {KPG_VOLCANO, "Running", 0, 0, 0, 2, "Failed", "Pending"},
        {KPG_VOLCANO, "Running", 1, 1, 0, 2, NULL, NULL},
        {KPG_VOLCANO, "Running", 0, 1, 1, 2, NULL, "Completed"},
        {KPG_VOLCANO, "Running", 0, 2, 0, 3, NULL, NULL}, /* a third member pending */
        {KPG_VOLCANO, "Running", 0, 1, 0, 1, NULL, NULL}, /* fewer than minMember ended */
        {KPG_VOLCANO, "Pending", 0, 2, 0, 2, NULL, NULL}, /* not bound by us: left */
        {KPG_VOLCANO, "Running", 0, 2, 0, 2, "Running", "Completed"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct kpg pg = {.api = rows[i].api, .min_member = 2, .phase = rows[i].seen};
        struct kcounts k = {.n = {rows[i].run, rows[i].ok, rows[i].failed}, .pods = rows[i].pods};
        const char *got = kdrv_counts_phase(&pg, rows[i].pods ? &k : NULL, rows[i].daemon);
        if (rows[i].want ? !got || strcmp(got, rows[i].want) != 0 : got != NULL)
            fail_msg("row %zu: %s, want %s", i, got ? got : "(left)",
                     rows[i].want ? rows[i].want : "(left)");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(members_are_counted_by_phase, setup, teardown),
        cmocka_unit_test_setup_teardown(seen_counts_are_decoded, setup, teardown),
        cmocka_unit_test(phases_follow_the_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
