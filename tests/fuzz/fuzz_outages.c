/* tests/fuzz/fuzz_outages.c: libFuzzer harness for the simulator's outages CSV reader
 * (sched/sim/sim.c sim_outages_read: node,down,up in seconds) against a generated 4-node
 * cluster.
 *
 * Owns: each input written as a file and read; an error names the file and leaves no outages;
 * accepted outages name a node of the cluster and end after they start. Violations abort.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/model.h"
#include "sched/sim/nodes.h"
#include "sched/sim/sim.h"

#include "tests/fuzz/fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cluster *c;
    struct sched_errbuf eb = {{0}};
    if (!c) {
        c = cluster_new();
        check(c && nodes_generate(c, "hgx:2,pcie:2", &eb) == 0 &&
              cluster_finalize(c, NULL, NULL, 0, &eb) == 0);
    }
    char path[128];
    fuzz_file(data, size, "outages.csv", path, sizeof(path));
    struct sim_outage *o = NULL;
    uint32_t n = 0;
    int rc = sim_outages_read(path, c, &o, &n, &eb);
    if (rc == 0) {
        for (uint32_t i = 0; i < n; i++)
            check(o[i].node < c->n_nodes && o[i].up_ms > o[i].down_ms && o[i].down_ms >= 0);
    } else {
        check(rc < 0 && strstr(eb.msg, path) != NULL);
    }
    free(o);
    fuzz_file_drop(path);
    return 0;
}
