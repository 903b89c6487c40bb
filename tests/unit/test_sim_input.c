/* tests/unit/test_sim_input.c: simulator jobs built from a trace and a configuration
 * (sim_input_build): a job's restart cost is its trace cell, else its queue's
 * preemption.restartCost. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "config/config.h"
#include "sched/sim/nodes.h"
#include "sched/sim/sim.h"
#include "sched/sim/trace.h"

static void restart_cost_falls_back_to_the_queue_default(void **state)
{
    (void)state;
    static const char cfg_yaml[] = "apiVersion: gangsched.io/v1alpha1\n"
                                   "kind: SchedulerConfig\n"
                                   "queues:\n"
                                   "  - name: q\n"
                                   "    preemption: {restartCost: 2m}\n";
    static const char csv[] = "job_id,submission_time,duration,num_gpu,queue,restart_cost\n"
                              "own,0,100,8,q,30\n"
                              "default,1,100,8,q,\n";
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &cfg, &eb), 0);
    struct cluster *c = cluster_new();
    assert_int_equal(nodes_generate(c, "hgx:1", &eb), 0);
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    struct trace t;
    trace_init(&t);
    assert_int_equal(trace_parse(&t, "t.csv", csv, strlen(csv), &eb), 0);
    trace_sort(&t);
    struct sim_input in;
    assert_int_equal(sim_input_build(&in, &t, c, cfg, &eb), 0);
    assert_int_equal(in.n_jobs, 2);
    for (uint32_t j = 0; j < in.n_jobs; j++) {
        if (strcmp(in.jobs[j].id, "own") == 0)
            assert_int_equal(in.jobs[j].restart_cost_ms, 30000);
        else
            assert_int_equal(in.jobs[j].restart_cost_ms, 120000);
    }
    sim_input_free(&in);
    trace_free(&t);
    cluster_free(c);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(restart_cost_falls_back_to_the_queue_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
