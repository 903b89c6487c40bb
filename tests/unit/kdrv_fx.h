/* tests/unit/kdrv_fx.h: a daemon driver with no API client, for the unit tests that drive its
 * send paths directly (test_kube_owed.c, test_kube_sendfail.c): status maps, a cache and the
 * engine, nothing scheduled. Include after cmocka.h and sched/kube/driver_int.h. */
#ifndef TESTS_UNIT_KDRV_FX_H
#define TESTS_UNIT_KDRV_FX_H

#include <string.h>

static struct kube_run_opts opts = {.identity = "test", .status_every_s = 60};

static void setup_d(struct kdrv *d)
{
    memset(d, 0, sizeof(*d));
    d->o = &opts;
    strmap_init(&d->status);
    strmap_init(&d->owed);
    strmap_init(&d->owed_ckpt);
    strmap_init(&d->owed_ckpt_pods);
    strmap_init(&d->shrinks);
    strmap_init(&d->restarts);
    d->cache = kcache_new("gangsched");
    assert_non_null(d->cache);
    assert_int_equal(kdrv_eng_init(d), 0);
    d->due_ms = d->later_ms = INT64_MAX;
}

static void teardown_d(struct kdrv *d)
{
    kdrv_status_fini(d);
    kdrv_shrink_fini(d);
    kdrv_evictions_fini(d);
    kcache_free(d->cache);
    kdrv_eng_fini(d);
}

#endif
