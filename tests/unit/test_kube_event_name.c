/* tests/unit/test_kube_event_name.c: an Event's metadata.name (sched/kube/driver_status.c
 * kdrv_event_name), as client-go's recorder makes it: the object's name, '.', Unix nanoseconds
 * in hex. Two Events about one object in one clock tick got the same name before (the second was
 * refused with 409 AlreadyExists and lost); the names must also stay DNS subdomains (lower-case
 * alphanumerics, '-' and '.', at most 253 characters) for any object name. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/kube/driver_int.h"

/* lower-case alphanumerics, '-' and '.', at most 253 characters (DNS-1123 subdomain) */
static int dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (const char *q = s; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '.' || *q == '-'))
            return 0;
    return 1;
}

static void names_in_one_tick_differ(void **state)
{
    (void)state;
    enum { N = 1000 };
    static char names[N][300];
    for (int i = 0; i < N; i++)
        kdrv_event_name(names[i], sizeof(names[i]), "ml-train");
    for (int i = 0; i < N; i++) {
        assert_int_equal(strncmp(names[i], "ml-train.", 9), 0);
        assert_true(dns_subdomain(names[i]));
        if (i > 0) /* strictly increasing: hex digits of equal length compare as numbers */
            assert_true(
                strlen(names[i]) > strlen(names[i - 1]) ||
                (strlen(names[i]) == strlen(names[i - 1]) && strcmp(names[i], names[i - 1]) > 0));
    }
}

static void long_and_odd_names_stay_subdomains(void **state)
{
    (void)state;
    char name[254], out[300];
    memset(name, 'a', 253);
    name[253] = '\0';
    kdrv_event_name(out, sizeof(out), name);
    assert_true(dns_subdomain(out));
    assert_int_equal(strlen(out), 253);
    assert_non_null(strchr(out, '.'));
    kdrv_event_name(out, sizeof(out), "ns:Workload:train");
    assert_true(dns_subdomain(out));
    assert_int_equal(strncmp(out, "ns--orkload-train.", 18), 0); /* ':' and 'W' become '-' */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_in_one_tick_differ),
        cmocka_unit_test(long_and_odd_names_stay_subdomains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
