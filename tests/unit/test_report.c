/* tests/unit/test_report.c: tests for the simulator's HTML report (sched/sim/report.c).
 *
 * Owns: writing reports for small fake policies into temp files and checking the page's shape,
 * escaping, empty inputs, downsampling of long series, and error messages for bad paths.
 */
/* cmocka.h needs these four headers first. */
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

#include "sched/sim/report.h"

/* A policy without the optional per-queue and rack data. */
#define POL(nm, s, ns, q, nq, m, nmet)                                                             \
    {                                                                                              \
        .name = (nm), .series = (s), .n_series = (ns), .queue_s = (q), .n_queue_s = (nq),          \
        .metrics = (m), .n_metrics = (nmet)                                                        \
    }

/* A temp file path under $TMPDIR (or /tmp); the file exists and is empty. */
static void temp_path(char *buf, size_t size)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0])
        dir = "/tmp";
    snprintf(buf, size, "%s/test_report-XXXXXX", dir);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

static size_t count(const char *hay, const char *needle)
{
    size_t c = 0, nl = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + nl, needle))
        c++;
    return c;
}

/* Writes a report and returns the page (caller frees). */
static char *render(const char *title, const struct report_policy *p, size_t n, size_t *len)
{
    char path[512];
    struct sched_errbuf eb = {{0}};
    temp_path(path, sizeof(path));
    int rc = report_write_html(path, title, p, n, &eb);
    if (rc != 0)
        fprintf(stderr, "report_write_html: %s\n", eb.msg);
    assert_int_equal(rc, 0);
    char *page = slurp(path, len);
    unlink(path);
    return page;
}

static void assert_page_shape(const char *page)
{
    assert_true(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    assert_int_equal(count(page, "<svg"), 3);
    assert_int_equal(count(page, "</svg>"), 3);
    assert_non_null(strstr(page, "</html>"));
    assert_null(strstr(page, "<script"));
    assert_null(strstr(page, "http://"));
    assert_null(strstr(page, "https://"));
}

static const struct report_point series_a[] = {
    {0, 0.0, 0}, {60, 0.5, 3}, {600, 1.0, 7}, {3600, 0.75, 2}, {7200, 0.25, 0},
};
static const struct report_point series_b[] = {
    {0, 0.0, 1},
    {120, 0.25, 4},
    {900, 0.9, 9},
    {5000, 0.1, 0},
};
static const double queue_a[] = {0, 0.5, 3, 45, 400, 3720};
static const double queue_b[] = {12, 7, 90000};
static const struct report_metric metrics_a[] = {
    {"mean_queue_s", 3720, NULL},
    {"gpu_utilization", 0.8523, NULL},
    {"jobs_started", 1234, NULL},
};
static const struct report_metric metrics_b[] = {
    {"mean_queue_s", 42.5, NULL},
    {"gpu_utilization", 0.5, NULL},
    {"only_in_b", 1.5, NULL},
};

static void test_two_policies(void **state)
{
    (void)state;
    const struct report_policy p[2] = {
        POL("fifo", series_a, 5, queue_a, 6, metrics_a, 3),
        POL("a<b&c", series_b, 4, queue_b, 3, metrics_b, 3),
    };
    char *page = render("cluster <x> & trace \"y\"", p, 2, NULL);
    assert_page_shape(page);
    assert_non_null(strstr(page, "fifo"));
    assert_non_null(strstr(page, "a&lt;b&amp;c"));
    assert_null(strstr(page, "a<b&c"));
    assert_non_null(strstr(page, "cluster &lt;x&gt; &amp; trace &quot;y&quot;"));
    assert_null(strstr(page, "<x>"));
    /* Metric formatting: human durations and percentages. */
    assert_non_null(strstr(page, "1h 02m"));
    assert_non_null(strstr(page, "85.2%"));
    assert_non_null(strstr(page, "50.0%"));
    assert_non_null(strstr(page, "1,234"));
    assert_non_null(strstr(page, "only_in_b"));
    /* One row per metric name (mean_queue_s appears for both policies but once as a row). */
    assert_int_equal(count(page, "<th scope=\"row\">"), 4);
    /* The CDF axis reaches past the longest queue time (90000 s > 1d -> 1w). */
    assert_non_null(strstr(page, ">1w</text>"));
    free(page);
}

static void test_zero_points(void **state)
{
    (void)state;
    const struct report_policy p[2] = {
        POL("empty", NULL, 0, NULL, 0, NULL, 0),
        POL("", series_a, 0, queue_a, 0, metrics_a, 0),
    };
    char *page = render(NULL, p, 2, NULL);
    assert_page_shape(page);
    assert_non_null(strstr(page, "empty"));
    assert_non_null(strstr(page, "policy 2"));
    assert_non_null(strstr(page, "no data"));
    free(page);

    page = render("nothing", NULL, 0, NULL);
    assert_page_shape(page);
    free(page);

    const struct report_policy one = POL("solo", series_a, 1, queue_a, 1, metrics_a, 1);
    page = render("one point", &one, 1, NULL);
    assert_page_shape(page);
    assert_non_null(strstr(page, "solo"));
    free(page);
}

/* Long series are thinned but their peaks survive. */
static void test_downsampling(void **state)
{
    (void)state;
    enum { N = 100000, Q = 50000 };
    struct report_point *s = malloc(N * sizeof(*s));
    double *q = malloc(Q * sizeof(*q));
    assert_non_null(s);
    assert_non_null(q);
    for (size_t i = 0; i < N; i++) {
        s[i].t_s = (double)i * 3.0;
        s[i].util = (double)(i % 100) / 100.0;
        s[i].queued = (double)(i % 7);
    }
    s[N / 2 + 1].queued = 4000; /* a single-point spike */
    for (size_t i = 0; i < Q; i++)
        q[i] = (double)((i * 7919) % 20000);
    const struct report_policy p[2] = {
        POL("big-a", s, N, q, Q, NULL, 0),
        POL("big-b", s, N, q, Q, NULL, 0),
    };
    size_t len = 0;
    char *page = render("big", p, 2, &len);
    assert_page_shape(page);
    assert_true(len < 1000000);
    assert_non_null(strstr(page, ">4,000</text>")); /* the queued axis covers the spike */
    assert_non_null(strstr(page, "(n=50000)"));
    free(page);
    free(s);
    free(q);
}

static void test_unwritable_path(void **state)
{
    (void)state;
    const struct report_policy p = POL("fifo", series_a, 5, queue_a, 6, metrics_a, 3);
    struct sched_errbuf eb = {{0}};
    int rc = report_write_html("/nonexistent-dir/x.html", "t", &p, 1, &eb);
    assert_int_equal(rc, SCHED_EIO);
    assert_non_null(strstr(eb.msg, "/nonexistent-dir/x.html"));
    assert_non_null(strstr(eb.msg, "No such file"));

    /* A full device: the error surfaces when the buffered page is flushed. */
    if (access("/dev/full", W_OK) == 0) {
        memset(&eb, 0, sizeof(eb));
        rc = report_write_html("/dev/full", "t", &p, 1, &eb);
        assert_int_equal(rc, SCHED_EIO);
        assert_non_null(strstr(eb.msg, "/dev/full"));
    }
    assert_int_equal(report_write_html(NULL, "t", &p, 1, NULL), SCHED_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_policies),
        cmocka_unit_test(test_zero_points),
        cmocka_unit_test(test_downsampling),
        cmocka_unit_test(test_unwritable_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
