/* tests/unit/test_trace.c: tests for the CSV trace reader (sched/sim/trace.c).
 *
 * Owns: parsing good buffers (ITP header, optional columns in any order, CRLF, blank lines,
 * quoting, decimals, defaults), the exact error message of each kind of bad input and the rollback
 * that follows it, reading tests/data/trace-small.csv (run from the repo root), and the order
 * trace_sort produces.
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
#include <time.h>

#include "sched/sim/trace.h"

#define ITP "job_id,submission_time,duration,num_gpu\n"

static int parse(struct trace *t, const char *name, const char *csv, struct sched_errbuf *eb)
{
    eb->msg[0] = '\0';
    return trace_parse(t, name, csv, strlen(csv), eb);
}

static void parse_ok(struct trace *t, const char *name, const char *csv)
{
    struct sched_errbuf eb;
    int rc = parse(t, name, csv, &eb);
    if (rc != 0)
        fail_msg("unexpected error %d: %s", rc, eb.msg);
}

static void test_itp_basic(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    parse_ok(&t, "traces/cluster07.csv", ITP "id-1,1999,13423,1\nid-2,2001.5,0.25,16\nid-3,0,0,0");
    assert_int_equal(t.n_jobs, 3);
    assert_int_equal(t.n_files, 1);
    assert_string_equal(t.files[0], "traces/cluster07.csv");

    const struct trace_job *j = &t.jobs[0];
    assert_string_equal(j->id, "id-1");
    assert_string_equal(j->queue, "cluster07");
    assert_int_equal(j->submit_ms, 1999000);
    assert_int_equal(j->duration_ms, 13423000);
    assert_int_equal(j->num_gpu, 1);
    assert_int_equal(j->priority, 0);
    assert_int_equal(j->gpus_per_pod, 0);
    assert_int_equal(j->pods, 0);
    assert_int_equal(j->max_runtime_ms, 0);
    assert_int_equal(j->line, 2);
    assert_int_equal(j->file, 0);

    j = &t.jobs[1];
    assert_string_equal(j->id, "id-2");
    assert_int_equal(j->submit_ms, 2001500);
    assert_int_equal(j->duration_ms, 250);
    assert_int_equal(j->num_gpu, 16);
    assert_int_equal(j->line, 3);

    j = &t.jobs[2];
    assert_int_equal(j->submit_ms, 0);
    assert_int_equal(j->num_gpu, 0);
    assert_int_equal(j->line, 4);
    trace_free(&t);
    assert_null(t.jobs);
    assert_int_equal(t.n_jobs, 0);
    trace_free(&t); /* twice is harmless */
}

static void test_optional_columns_any_order(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    parse_ok(&t, "x.csv",
             " pods , user,max_runtime,num_gpu,queue,priority,gpus_per_pod,duration,"
             "submission_time,job_id\n"
             "2,alice,3600,16,research,-7,8,100,5,j1\n"
             ",bob,,1,,,,1,6,\n"
             "1,carol,0.5,4,research,2147483647,4,2,7,j3\n"
             "1,dave,1,4,prod,-2147483648,4,2,8,j4");
    assert_int_equal(t.n_jobs, 4);

    const struct trace_job *j = &t.jobs[0];
    assert_string_equal(j->id, "j1");
    assert_string_equal(j->queue, "research");
    assert_int_equal(j->submit_ms, 5000);
    assert_int_equal(j->duration_ms, 100000);
    assert_int_equal(j->num_gpu, 16);
    assert_int_equal(j->priority, -7);
    assert_int_equal(j->gpus_per_pod, 8);
    assert_int_equal(j->pods, 2);
    assert_int_equal(j->max_runtime_ms, 3600000);

    /* Empty optional cells are absent; empty id and queue take the defaults. */
    j = &t.jobs[1];
    assert_string_equal(j->id, "x:3");
    assert_string_equal(j->queue, "x");
    assert_int_equal(j->priority, 0);
    assert_int_equal(j->gpus_per_pod, 0);
    assert_int_equal(j->pods, 0);
    assert_int_equal(j->max_runtime_ms, 0);

    j = &t.jobs[2];
    assert_int_equal(j->priority, INT32_MAX);
    assert_int_equal(j->max_runtime_ms, 500);
    assert_string_equal(j->queue, "research");
    assert_ptr_equal(j->queue, t.jobs[0].queue); /* repeated queue names share a string */

    j = &t.jobs[3];
    assert_int_equal(j->priority, INT32_MIN);
    assert_string_equal(j->queue, "prod");
    trace_free(&t);
}

static void test_line_ends_and_blank_lines(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    /* Leading blank lines, CRLF, a whitespace-only line, blank lines at the end, no final
     * newline, spaces around values. */
    parse_ok(&t, "crlf.csv",
             "\r\n\njob_id,submission_time,duration,num_gpu\r\n"
             "a,1,2,3\r\n"
             "\r\n"
             "  \t \r\n"
             " b , 4 ,5 ,\t6\r\n"
             "\n\n");
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.jobs[0].line, 4);
    assert_string_equal(t.jobs[1].id, "b");
    assert_int_equal(t.jobs[1].submit_ms, 4000);
    assert_int_equal(t.jobs[1].num_gpu, 6);
    assert_int_equal(t.jobs[1].line, 7);

    /* No final newline, with a UTF-8 byte order mark. */
    parse_ok(&t, "bom.csv", "\xef\xbb\xbf" ITP "c,1,2,3");
    assert_int_equal(t.n_jobs, 3);
    assert_string_equal(t.jobs[2].id, "c");
    assert_int_equal(t.jobs[2].file, 1);
    trace_free(&t);
}

static void test_quoted_fields(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    parse_ok(&t, "q.csv",
             "\"job_id\",\" submission_time \",duration,\"num_gpu\",queue\n"
             "\"a,b\",\"1.5\",2,\"8\",\"x \"\"y\"\"\"\n"
             "  \"c\"  ,1,2,3,\"\"\n"
             "\"\"\"\",1,2,3,q");
    assert_int_equal(t.n_jobs, 3);
    assert_string_equal(t.jobs[0].id, "a,b");
    assert_int_equal(t.jobs[0].submit_ms, 1500);
    assert_int_equal(t.jobs[0].num_gpu, 8);
    assert_string_equal(t.jobs[0].queue, "x \"y\"");
    assert_string_equal(t.jobs[1].id, "c");
    assert_string_equal(t.jobs[1].queue, "q"); /* empty quoted queue: the stem */
    assert_string_equal(t.jobs[2].id, "\"");
    trace_free(&t);
}

static void test_decimals(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ms;
    } cases[] = {
        {"1.5", 1500},
        {"0.001", 1},
        {"2.250", 2250},
        {"3.1000", 3100},
        {"007", 7000},
        {"0", 0},
        {"0.0", 0},
        {"12345.678", 12345678},
        {"1000000000000", 1000000000000000},
        {"999999999999.999", 999999999999999},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trace t;
        char csv[128];
        trace_init(&t);
        snprintf(csv, sizeof csv, ITP "j,%s,%s,1", cases[i].text, cases[i].text);
        parse_ok(&t, "d.csv", csv);
        assert_int_equal(t.n_jobs, 1);
        assert_int_equal(t.jobs[0].submit_ms, cases[i].ms);
        assert_int_equal(t.jobs[0].duration_ms, cases[i].ms);
        trace_free(&t);
    }
}

static void test_defaults(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    /* No job_id column: "<stem>:<line>"; the stem drops the directory and the last extension. */
    parse_ok(&t, "/data/itp/cluster07.csv", "submission_time,duration,num_gpu\n1,2,3\n\n4,5,6");
    parse_ok(&t, "a/b/c.tar.gz", "submission_time,duration,num_gpu\n1,2,3");
    parse_ok(&t, "noext", "submission_time,duration,num_gpu\n1,2,3");
    parse_ok(&t, "dir.d/.hidden", "submission_time,duration,num_gpu\n1,2,3");
    parse_ok(&t, "dir/", "submission_time,duration,num_gpu\n1,2,3");
    /* another file with the stem "trace": its derived id "trace:2" is taken (ids are the
     * store's keys), so it is refused naming both places, and nothing of it is kept */
    struct sched_errbuf eb;
    assert_int_equal(parse(&t, NULL, "submission_time,duration,num_gpu\n1,2,3", &eb), SCHED_EEXIST);
    assert_string_equal(eb.msg,
                        "trace:2: job id 'trace:2' is already used at dir/:2 (ids must be unique)");
    parse_ok(&t, NULL, "submission_time,duration,num_gpu\n\n1,2,3");
    assert_int_equal(t.n_jobs, 7);
    assert_string_equal(t.jobs[0].id, "cluster07:2");
    assert_string_equal(t.jobs[0].queue, "cluster07");
    assert_string_equal(t.jobs[1].id, "cluster07:4");
    assert_ptr_equal(t.jobs[0].queue, t.jobs[1].queue); /* one string per file */
    assert_string_equal(t.jobs[2].queue, "c.tar");
    assert_string_equal(t.jobs[3].queue, "noext");
    assert_string_equal(t.jobs[4].queue, ".hidden");
    assert_string_equal(t.jobs[5].queue, "trace");
    assert_string_equal(t.jobs[5].id, "trace:2");
    assert_string_equal(t.jobs[6].queue, "trace");
    assert_string_equal(t.jobs[6].id, "trace:3");
    assert_int_equal(t.n_files, 6);
    assert_string_equal(t.files[0], "/data/itp/cluster07.csv");
    assert_int_equal(t.jobs[6].file, 5);
    trace_free(&t);
}

/* Duplicate ids (the store's keys) are refused at the later row with both places; ids and
 * users that are not UTF-8 are refused at their row (--events and the store's views are JSON). */
static void test_duplicate_ids(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    struct sched_errbuf eb;
    assert_int_equal(parse(&t, "a.csv", ITP "x,0,1,1\ny,0,1,1\nx,1,1,1\ny,2,1,1\n", &eb),
                     SCHED_EEXIST);
    assert_string_equal(eb.msg, "a.csv:4: job id 'x' is already used at a.csv:2 (ids must be "
                                "unique)");
    assert_int_equal(t.n_jobs, 0);
    parse_ok(&t, "b.csv", ITP "x,0,1,1\n");
    assert_int_equal(parse(&t, "c.csv", ITP "w,0,1,1\nx,0,1,1\n", &eb), SCHED_EEXIST);
    assert_string_equal(eb.msg, "c.csv:3: job id 'x' is already used at b.csv:2 (ids must be "
                                "unique)");
    assert_int_equal(t.n_jobs, 1);
    assert_int_equal(parse(&t, "d.csv", ITP "ok\xc3\xa9,0,1,1\nbad\xc3,0,1,1\n", &eb),
                     SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "d.csv:3: column 'job_id': "));
    assert_non_null(strstr(eb.msg, "is not UTF-8 text"));
    /* the user column reaches JSON too */
    assert_int_equal(
        parse(&t, "e.csv", "submission_time,duration,num_gpu,user\n0,1,1,ana\n0,1,1,b\xc3\n", &eb),
        SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "e.csv:3: column 'user': "));
    assert_non_null(strstr(eb.msg, "is not UTF-8 text"));
    assert_true(trace_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    assert_false(trace_utf8_valid("\xc0\xaf"));     /* overlong '/' */
    assert_false(trace_utf8_valid("\xed\xa0\x80")); /* a surrogate */
    assert_false(trace_utf8_valid("\xf4\x90\x80\x80"));
    trace_free(&t);
}

static void test_header_only(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    /* A header without rows is a valid, empty trace; the file is still recorded. */
    parse_ok(&t, "h.csv", "job_id,submission_time,duration,num_gpu");
    parse_ok(&t, "h2.csv", ITP "\r\n\r\n");
    assert_int_equal(t.n_jobs, 0);
    assert_int_equal(t.n_files, 2);
    trace_free(&t);
}

struct bad_case {
    const char *name;
    const char *data;
    size_t len; /* 0: strlen(data) */
    int rc;
    const char *msg;
};

static const struct bad_case bad_cases[] = {
    {"t.csv", ITP "a,1,x1,8", 0, SCHED_EINVAL, "t.csv:2: column 'duration': 'x1' is not a number"},
    {"t.csv", ITP "a,1,2,8\na,-5,10,1", 0, SCHED_ERANGE,
     "t.csv:3: column 'submission_time': '-5' is not a number >= 0"},
    {"t.csv", "job_id,submission_time,duration\na,1,2", 0, SCHED_EINVAL,
     "t.csv:1: missing required column 'num_gpu' (header: job_id,submission_time,duration)"},
    {"t.csv", "jobid, submit ,num_gpu,duration\na,1,2,3", 0, SCHED_EINVAL,
     "t.csv:1: missing required column 'submission_time' (header: jobid, submit ,num_gpu,"
     "duration)"},
    {"t.csv", "Submission_Time,duration,num_gpu\n1,2,3", 0, SCHED_EINVAL,
     "t.csv:1: missing required column 'submission_time' (header: Submission_Time,duration,"
     "num_gpu)"},
    {"t.csv", ITP "a,1,2,8\nb,1,2", 0, SCHED_EINVAL, "t.csv:3: expected 4 fields, found 3"},
    {"t.csv", ITP "a,1,2,8,", 0, SCHED_EINVAL, "t.csv:2: expected 4 fields, found 5"},
    {"t.csv", "", 0, SCHED_EINVAL, "t.csv:1: empty file: no header line"},
    {"t.csv", "\n  \r\n\n", 0, SCHED_EINVAL, "t.csv:1: empty file: no header line"},
    {"t.csv", ITP "\"a,1,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'job_id': unterminated quoted field (quoted fields end on their line)"},
    {"t.csv", ITP "\"a\n\",1,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'job_id': unterminated quoted field (quoted fields end on their line)"},
    {"t.csv", "\"job_id,submission_time,duration,num_gpu\n", 0, SCHED_EINVAL,
     "t.csv:1: field 1: unterminated quoted field (quoted fields end on their line)"},
    {"t.csv", ITP "a,1,2,8\nb,1\0,2,8", sizeof(ITP "a,1,2,8\nb,1\0,2,8") - 1, SCHED_EINVAL,
     "t.csv:3: NUL byte in the data (not a text file?)"},
    {"t.csv", ITP "a,1000000000000.001,2,8", 0, SCHED_ERANGE,
     "t.csv:2: column 'submission_time': '1000000000000.001' is not a number of seconds <= "
     "1000000000000"},
    {"t.csv", ITP "a,1,99999999999999999999999,8", 0, SCHED_ERANGE,
     "t.csv:2: column 'duration': '99999999999999999999999' is not a number of seconds <= "
     "1000000000000"},
    {"t.csv", ITP "a,1,2,1000001", 0, SCHED_ERANGE,
     "t.csv:2: column 'num_gpu': '1000001' is not an integer in 0..1000000"},
    {"t.csv", ITP "a,1,2,-1", 0, SCHED_ERANGE,
     "t.csv:2: column 'num_gpu': '-1' is not an integer in 0..1000000"},
    {"t.csv", ITP "a,1,2,99999999999999999999999999999999999999999999999999", 0, SCHED_ERANGE,
     "t.csv:2: column 'num_gpu': '9999999999999999999999999999999999999999...' is not an "
     "integer in 0..1000000"},
    {"t.csv", ITP "a,1e5,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': '1e5' is not a number"},
    {"t.csv", ITP "a,NaN,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': 'NaN' is not a number"},
    {"t.csv", ITP "a,inf,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': 'inf' is not a number"},
    {"t.csv", ITP "a,+5,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': '+5' is not a number"},
    {"t.csv", ITP "a,.5,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': '.5' is not a number"},
    {"t.csv", ITP "a,5.,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': '5.' is not a number"},
    {"t.csv", ITP "a,1 2,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'submission_time': '1 2' is not a number"},
    {"t.csv", ITP "a,1,,8", 0, SCHED_EINVAL, "t.csv:2: column 'duration': '' is not a number"},
    {"t.csv", ITP "a,1,2,", 0, SCHED_EINVAL, "t.csv:2: column 'num_gpu': '' is not an integer"},
    {"t.csv", ITP "a,1,\"1,5\",8", 0, SCHED_EINVAL,
     "t.csv:2: column 'duration': '1,5' is not a number"},
    {"t.csv", ITP "a,1,1.2345,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'duration': '1.2345' is not a number with at most 3 decimals"},
    {"t.csv", ITP "a,1,2,8.5", 0, SCHED_EINVAL,
     "t.csv:2: column 'num_gpu': '8.5' is not an integer"},
    {"t.csv", ITP "a,1,2,0x10", 0, SCHED_EINVAL,
     "t.csv:2: column 'num_gpu': '0x10' is not an integer"},
    {"t.csv", ITP "a,1,\x01,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'duration': '\\x01' is not a number"},
    {"t.csv", "submission_time,duration,num_gpu,priority\n1,2,3,2147483648", 0, SCHED_ERANGE,
     "t.csv:2: column 'priority': '2147483648' is not an integer in -2147483648..2147483647"},
    {"t.csv", "submission_time,duration,num_gpu,gpus_per_pod\n1,2,3,0", 0, SCHED_ERANGE,
     "t.csv:2: column 'gpus_per_pod': '0' is not an integer in 1..100000"},
    {"t.csv", "submission_time,duration,num_gpu,pods\n1,2,3,2.0", 0, SCHED_EINVAL,
     "t.csv:2: column 'pods': '2.0' is not an integer"},
    {"t.csv", "submission_time,duration,num_gpu,pods\n1,2,3,100001", 0, SCHED_ERANGE,
     "t.csv:2: column 'pods': '100001' is not an integer in 1..100000"},
    {"t.csv", "submission_time,duration,num_gpu,max_runtime\n1,2,3,-1", 0, SCHED_ERANGE,
     "t.csv:2: column 'max_runtime': '-1' is not a number >= 0"},
    {"t.csv", ITP "a\"b,1,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'job_id': stray '\"' in an unquoted field"},
    {"t.csv", ITP "\"a\"b,1,2,8", 0, SCHED_EINVAL,
     "t.csv:2: column 'job_id': text after the closing '\"'"},
    {"t.csv", ITP "a,1,2,8,\"x", 0, SCHED_EINVAL,
     "t.csv:2: field 5: unterminated quoted field (quoted fields end on their line)"},
    {"t.csv", "duration,submission_time,num_gpu,duration\n1,2,3,4", 0, SCHED_EINVAL,
     "t.csv:1: column 'duration' appears twice in the header"},
    {"dir/sub/c.csv", "\n\n" ITP "\n\na,1,2,x", 0, SCHED_EINVAL,
     "dir/sub/c.csv:6: column 'num_gpu': 'x' is not an integer"},
    {"t.csv", "\"\"\"q\",submission_time,duration,num_gpu\n\"a\",1,2,x", 0, SCHED_EINVAL,
     "t.csv:2: column 'num_gpu': 'x' is not an integer"},
    {"t.csv", "\"x\"\"y\",submission_time,duration,num_gpu\nx\"y,1,2,3", 0, SCHED_EINVAL,
     "t.csv:2: column 'x\"y': stray '\"' in an unquoted field"},
};

static void test_bad_inputs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        struct trace t;
        struct sched_errbuf eb;
        trace_init(&t);
        /* A good file first: the bad one must leave it exactly as it was. */
        parse_ok(&t, "good.csv", ITP "g1,1,2,3\ng2,4,5,6");
        eb.msg[0] = '\0';
        int rc = trace_parse(&t, c->name, c->data, c->len ? c->len : strlen(c->data), &eb);
        if (rc != c->rc || strcmp(eb.msg, c->msg) != 0)
            fail_msg("case %zu: got %d \"%s\", want %d \"%s\"", i, rc, eb.msg, c->rc, c->msg);
        assert_int_equal(t.n_jobs, 2);
        assert_int_equal(t.n_files, 1);
        assert_string_equal(t.files[0], "good.csv");
        assert_string_equal(t.jobs[0].id, "g1");
        assert_string_equal(t.jobs[1].id, "g2");
        assert_string_equal(t.jobs[1].queue, "good");
        /* And the trace is still usable. */
        parse_ok(&t, "after.csv", "submission_time,duration,num_gpu\n7,8,9");
        assert_int_equal(t.n_jobs, 3);
        assert_int_equal(t.jobs[2].file, 1);
        assert_string_equal(t.jobs[2].id, "after:2");
        trace_free(&t);
    }
}

static void test_error_without_errbuf(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    assert_int_equal(trace_parse(&t, "t.csv", "x", 1, NULL), SCHED_EINVAL);
    assert_int_equal(trace_parse(&t, "t.csv", NULL, 4, NULL), SCHED_EINVAL);
    assert_int_equal(trace_parse(NULL, "t.csv", "x", 1, NULL), SCHED_EINVAL);
    assert_int_equal(t.n_jobs, 0);
    assert_int_equal(t.n_files, 0);
    trace_free(&t);
}

static void test_read_file(void **state)
{
    (void)state;
    struct trace t;
    struct sched_errbuf eb;
    trace_init(&t);
    int rc = trace_read(&t, "tests/data/trace-small.csv", &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(t.n_jobs, 19);
    assert_int_equal(t.n_files, 1);
    assert_string_equal(t.files[0], "tests/data/trace-small.csv");
    int64_t gpus = 0;
    for (size_t i = 0; i < t.n_jobs; i++) {
        assert_string_equal(t.jobs[i].queue, "trace-small");
        assert_int_equal(t.jobs[i].line, i + 2);
        gpus += t.jobs[i].num_gpu;
    }
    assert_int_equal(gpus, 179);
    assert_string_equal(t.jobs[0].id, "a0000001-0000-4000-8000-000000000001");
    assert_int_equal(t.jobs[4].num_gpu, 64);
    assert_int_equal(t.jobs[4].duration_ms, 86400000);
    assert_int_equal(t.jobs[18].submit_ms, 12000000);

    rc = trace_read(&t, "tests/data/does-not-exist.csv", &eb);
    assert_int_equal(rc, SCHED_ENOENT);
    assert_string_equal(eb.msg,
                        "tests/data/does-not-exist.csv: cannot open: No such file or directory");
    rc = trace_read(&t, "tests/data", &eb);
    assert_int_equal(rc, SCHED_EIO);
    assert_non_null(strstr(eb.msg, "tests/data: cannot read: "));
    assert_int_equal(t.n_jobs, 19);
    assert_int_equal(t.n_files, 1);
    trace_free(&t);
}

static void check_sorted(const struct trace *t)
{
    for (size_t i = 1; i < t->n_jobs; i++) {
        const struct trace_job *a = &t->jobs[i - 1], *b = &t->jobs[i];
        int ok = a->submit_ms < b->submit_ms ||
                 (a->submit_ms == b->submit_ms &&
                  (a->file < b->file || (a->file == b->file && a->line < b->line)));
        if (!ok)
            fail_msg("jobs %zu and %zu out of order", i - 1, i);
    }
}

static void test_sort_small(void **state)
{
    (void)state;
    struct trace t;
    trace_init(&t);
    parse_ok(&t, "A.csv", ITP "a2,5,1,1\na3,1,1,1\na4,5,1,1");
    parse_ok(&t, "B.csv", ITP "b2,5,1,1\nb3,1,1,1\nb4,0,1,1");
    trace_sort(&t);
    static const char *const want[] = {"b4", "a3", "b3", "a2", "a4", "b2"};
    assert_int_equal(t.n_jobs, 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(t.jobs[i].id, want[i]);
    trace_sort(&t);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(t.jobs[i].id, want[i]);
    trace_free(&t);

    trace_init(&t);
    trace_sort(&t); /* empty */
    trace_sort(NULL);
    trace_free(&t);
}

/* Many ties across three files, in two different input orders: the sorted tables are equal. */
static void test_sort_deterministic(void **state)
{
    (void)state;
    enum { ROWS = 3000 };
    size_t cap = ROWS * 32 + 64;
    char *csv = malloc(cap);
    assert_non_null(csv);
    struct trace t;
    trace_init(&t);
    uint32_t x = 12345;
    for (int f = 0; f < 3; f++) {
        size_t o = (size_t)snprintf(csv, cap, "%s", "submission_time,duration,num_gpu\n");
        for (int i = 0; i < ROWS; i++) {
            x = x * 1103515245u + 12345u;
            o += (size_t)snprintf(csv + o, cap - o, "%u.%u,1,1\n", (x >> 16) % 50, (x >> 8) % 2);
        }
        char name[32];
        snprintf(name, sizeof name, "f%d.csv", f);
        parse_ok(&t, name, csv);
    }
    assert_int_equal(t.n_jobs, 3 * ROWS);

    /* A copy in reversed order. */
    size_t n = t.n_jobs;
    struct trace_job *rev = malloc(n * sizeof *rev);
    assert_non_null(rev);
    for (size_t i = 0; i < n; i++)
        rev[i] = t.jobs[n - 1 - i];

    trace_sort(&t);
    check_sorted(&t);
    struct trace_job *first = malloc(n * sizeof *first);
    assert_non_null(first);
    memcpy(first, t.jobs, n * sizeof *first);

    memcpy(t.jobs, rev, n * sizeof *rev);
    trace_sort(&t);
    check_sorted(&t);
    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(t.jobs[i].id, first[i].id);
        assert_int_equal(t.jobs[i].line, first[i].line);
        assert_int_equal(t.jobs[i].file, first[i].file);
    }
    free(rev);
    free(first);
    free(csv);
    trace_free(&t);
}

/* 13,000 ITP-like rows parse into exact values (speed is measured by make bench, not here). */
static void test_many_rows(void **state)
{
    (void)state;
    enum { ROWS = 13000 };
    size_t cap = (size_t)ROWS * 64 + 64;
    char *csv = malloc(cap);
    assert_non_null(csv);
    size_t o = (size_t)snprintf(csv, cap, "%s", ITP);
    for (int i = 0; i < ROWS; i++)
        o += (size_t)snprintf(csv + o, cap - o, "%08x-0000-4000-8000-%012d,%d,%d,%d\n", i, i,
                              1000 + i * 7, 60 + i % 5000, 1 << (i % 7));
    struct trace t;
    struct sched_errbuf eb;
    trace_init(&t);
    int rc = trace_parse(&t, "big.csv", csv, o, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(t.n_jobs, ROWS);
    assert_int_equal(t.jobs[ROWS - 1].num_gpu, 1 << ((ROWS - 1) % 7));
    assert_int_equal(t.jobs[ROWS - 1].submit_ms, (int64_t)(1000 + (ROWS - 1) * 7) * 1000);
    trace_free(&t);
    free(csv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_itp_basic),
        cmocka_unit_test(test_optional_columns_any_order),
        cmocka_unit_test(test_line_ends_and_blank_lines),
        cmocka_unit_test(test_quoted_fields),
        cmocka_unit_test(test_decimals),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_duplicate_ids),
        cmocka_unit_test(test_header_only),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_error_without_errbuf),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_sort_small),
        cmocka_unit_test(test_sort_deterministic),
        cmocka_unit_test(test_many_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
