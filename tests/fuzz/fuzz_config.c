/* tests/fuzz/fuzz_config.c: libFuzzer harness for the configuration loader (config/load*.c).
 *
 * Owns: feeding each input to config_load_buffer, printing an accepted config to /dev/null with
 * config_print_tree, and checking the loader's promises: on error nothing is returned, the code
 * is SCHED_EINVAL (or SCHED_ENOMEM) and the message starts with the file name; on success every
 * index is in range, the cohort tree has no cycle, quotas are non-negative and a queue never lends
 * more than its nominal quota. The same bytes go to the duration grammar (sched/core/duration.h):
 * an accepted duration is within 0..DUR_MAX_MS and reads back to itself once printed.
 * Violations abort, so the fuzzer reports them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sched/core/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static void check_set(const struct config *c, const struct config_quota_set *qs, bool queue)
{
    check(qs->quota != NULL && qs->has != NULL);
    for (uint32_t f = 0; f < c->n_flavors; f++) {
        for (int r = 0; r < RES_MAX; r++) {
            const struct config_quota *q = config_quota_get(c, qs, f, r);
            if (!q)
                continue;
            check(r < res_count());
            check(q->nominal >= 0 && q->borrowing_limit >= 0 && q->lending_limit >= 0);
            if (queue)
                check(q->lending_limit == CONFIG_NO_LIMIT || q->lending_limit <= q->nominal);
        }
    }
}

static void check_config(const struct config *c)
{
    check(c->n_flavors >= 1 && c->n_profiles >= 2 && c->n_levels < TOPO_MAX_LEVELS);
    check(strcmp(c->profiles[0].name, "training") == 0);
    check(strcmp(c->profiles[1].name, "inference") == 0);
    for (uint32_t i = 0; i < c->n_flavors; i++)
        check(config_flavor_index(c, c->flavors[i].name) == (int)i);
    for (uint32_t i = 0; i < c->n_cohorts; i++) {
        const struct config_cohort *co = &c->cohorts[i];
        check(co->parent >= -1 && co->parent < (int32_t)c->n_cohorts);
        uint32_t steps = 0;
        for (int32_t p = co->parent; p >= 0; p = c->cohorts[p].parent)
            check(++steps <= c->n_cohorts); /* no cycle */
        check_set(c, &co->q, false);
    }
    for (uint32_t i = 0; i < c->n_queues; i++) {
        const struct config_queue *q = &c->queues[i];
        check(config_queue_index(c, q->name) == (int)i);
        check(q->cohort >= -1 && q->cohort < (int32_t)c->n_cohorts);
        check(q->profile >= -1 && q->profile < (int32_t)c->n_profiles);
        check(q->weight > 0);
        check(q->preemption.min_runtime_ms >= 0 && q->preemption.restart_cost_ms >= 0 &&
              q->preemption.checkpoint_grace_ms >= 0);
        check_set(c, &q->q, true);
    }
    check(c->fair_half_life_ms >= 0 && c->starve_after_ms >= 0 && c->max_reservations <= 1000);
}

static void check_duration(const char *s, size_t n)
{
    int64_t ms = -1, again = -1;
    if (dur_parse(s, n, &ms) != NULL) {
        check(ms == -1);
        return;
    }
    check(ms >= 0 && ms <= DUR_MAX_MS);
    char buf[64];
    dur_format(ms, buf, sizeof(buf));
    check(dur_parse(buf, strlen(buf), &again) == NULL && again == ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    check_duration((const char *)data, size);
    if (!sink)
        sink = fopen("/dev/null", "w");
    struct config *c = NULL;
    struct sched_errbuf eb;
    eb.msg[0] = '\0';
    int rc = config_load_buffer("fuzz.yaml", (const char *)data, size, &c, &eb);
    if (rc != 0) {
        check(c == NULL);
        check(rc == SCHED_EINVAL || rc == SCHED_ENOMEM);
        check(strncmp(eb.msg, "fuzz.yaml", 9) == 0);
        return 0;
    }
    check(c != NULL);
    check_config(c);
    if (sink)
        config_print_tree(c, sink);
    config_free(c);
    return 0;
}
