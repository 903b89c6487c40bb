/* tests/unit/dra_fx.h: DRA objects for the unit tests of sched/kube/dra.c and sched/kube/mig.c
 * (include after cmocka.h). */
#ifndef TESTS_UNIT_DRA_FX_H
#define TESTS_UNIT_DRA_FX_H

#include <stdio.h>

#include "sched/kube/dra.h"

/* A DeviceClass of one CEL selector. */
static inline struct kdra_class *fx_device_class(const char *name, const char *expr)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"selectors\":[{\"cel\":{"
             "\"expression\":\"%s\"}}]}}",
             name, expr);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    struct kdra_class *k = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdra_class_decode(o, &k, &eb), 0);
    cJSON_Delete(o);
    return k;
}

#endif
