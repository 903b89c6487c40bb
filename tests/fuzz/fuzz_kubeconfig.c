/* tests/fuzz/fuzz_kubeconfig.c: libFuzzer harness for the kubeconfig reader
 * (sched/kube/auth.c kube_auth_load; config/yaml_doc.h and libyaml underneath).
 *
 * Owns: each input written as a kubeconfig file and loaded by path (no network: loading only
 * reads files), checking that an error names the kubeconfig and that an accepted one has a
 * server and a namespace. Violations abort.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/client.h"

#include "tests/fuzz/fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fuzz_file(data, size, "config", path, sizeof(path));
    struct kube_auth *a = NULL;
    struct sched_errbuf eb = {{0}};
    int rc = kube_auth_load(path, &a, &eb);
    if (rc == 0) {
        check(a != NULL && a->server != NULL && a->namespace != NULL && a->source != NULL);
        kube_auth_free(a);
    } else {
        check(rc < 0 && a == NULL && eb.msg[0] != '\0');
        check(strstr(eb.msg, path) != NULL || rc == SCHED_ENOMEM);
    }
    fuzz_file_drop(path);
    return 0;
}
