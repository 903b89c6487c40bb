/* tests/fuzz/fuzz_nodes.c: libFuzzer harness for the Node / NodeList reader (sched/k8s/nodes.c,
 * YAML and JSON) and the cluster model it feeds.
 *
 * Owns: loading each input into a fresh cluster, finalizing it when accepted, and checking the
 * reader's promises: an error names the file first and leaves no node behind; an accepted node
 * has at most NODE_MAX_GPUS GPUs and islands that cover exactly its GPUs. Violations abort.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/model.h"
#include "sched/sim/nodes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cluster *c = cluster_new();
    if (!c)
        return 0;
    struct sched_errbuf eb = {{0}};
    int rc = nodes_load_buffer(c, "fuzz.yaml", (const char *)data, size, &eb);
    if (rc != 0) {
        check(rc < 0 && c->n_nodes == 0);
        check(strncmp(eb.msg, "fuzz.yaml", 9) == 0 || rc == SCHED_ENOMEM);
    } else if (cluster_finalize(c, NULL, NULL, 0, &eb) == 0) {
        for (uint32_t i = 0; i < c->n_nodes; i++) {
            const struct node *n = &c->nodes[i];
            check(n->name && n->n_gpus <= NODE_MAX_GPUS);
            uint32_t all = 0;
            for (uint32_t k = 0; k < n->n_islands; k++) {
                check((all & n->islands[k]) == 0); /* disjoint */
                all |= n->islands[k];
            }
            uint32_t want = n->n_gpus >= 32 ? UINT32_MAX : (1u << n->n_gpus) - 1;
            check(n->n_gpus == 0 ? all == 0 : all == want);
        }
    }
    cluster_free(c);
    return 0;
}
