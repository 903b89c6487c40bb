/* tests/fuzz/fuzz_trace.c: libFuzzer harness for the CSV trace reader (sched/sim/trace.c).
 *
 * Owns: feeding each input to trace_parse in a fresh trace, then trace_sort and trace_free, and
 * checking the reader's promises: a failed parse leaves the trace exactly as it was (here: after
 * a good file), every error message starts with the file name, and the sorted table is in order.
 * Violations abort, so the fuzzer reports them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char good[] = "job_id,submission_time,duration,num_gpu\nfirst,5,10,8\nsecond,1,2,1";

static void check(int ok)
{
    if (!ok)
        abort();
}

static void check_trace(const struct trace *t)
{
    for (size_t i = 0; i < t->n_jobs; i++) {
        const struct trace_job *j = &t->jobs[i];
        check(j->id != NULL && j->queue != NULL && j->file < t->n_files);
        check(j->submit_ms >= 0 && j->duration_ms >= 0 && j->max_runtime_ms >= 0);
        check(j->num_gpu >= 0 && j->num_gpu <= 1000000);
        check(j->gpus_per_pod >= 0 && j->pods >= 0);
        (void)strlen(j->id); /* ASan: the strings are terminated and alive */
        (void)strlen(j->queue);
    }
    for (size_t i = 1; i < t->n_jobs; i++) {
        const struct trace_job *a = &t->jobs[i - 1], *b = &t->jobs[i];
        check(a->submit_ms < b->submit_ms ||
              (a->submit_ms == b->submit_ms &&
               (a->file < b->file || (a->file == b->file && a->line < b->line))));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trace t;
    struct sched_errbuf eb;
    const char *text = (const char *)data;

    /* Alone, in a fresh trace. */
    trace_init(&t);
    eb.msg[0] = '\0';
    int rc = trace_parse(&t, "fuzz.csv", text, size, &eb);
    if (rc == 0) {
        check(t.n_files == 1);
    } else {
        check(rc < 0 && t.n_jobs == 0 && t.n_files == 0);
        check(strncmp(eb.msg, "fuzz.csv:", 9) == 0);
    }
    trace_sort(&t);
    check_trace(&t);
    trace_free(&t);

    /* After a good file: an error must not disturb it. */
    trace_init(&t);
    check(trace_parse(&t, "dir/good.csv", good, sizeof good - 1, &eb) == 0);
    check(t.n_jobs == 2);
    rc = trace_parse(&t, "dir/fuzz.tsv", text, size, &eb);
    if (rc != 0) {
        check(t.n_jobs == 2 && t.n_files == 1);
        check(strcmp(t.jobs[0].id, "first") == 0 && strcmp(t.jobs[1].id, "second") == 0);
        check(strcmp(t.jobs[1].queue, "good") == 0);
    }
    trace_sort(&t);
    check_trace(&t);
    trace_free(&t);
    return 0;
}
