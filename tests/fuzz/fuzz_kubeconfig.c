/* tests/fuzz/fuzz_kubeconfig.c: libFuzzer harness for the kubeconfig reader
 * (sched/kube/auth.c kube_auth_load; config/yaml_doc.h and libyaml underneath).
 *
 * Owns: each input written as a kubeconfig file and loaded by path (no network: loading only
 * reads files), checking that an error names the kubeconfig and that an accepted one has a
 * server and a namespace. Exec credential plugins are never run (kube_exec_hook answers for them).
 * Violations abort.
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

/* An exec plugin of the input is never run: it answers a token, or fails naming the field. */
static int no_exec(const struct kube_exec *x, struct kube_exec_cred *cr, struct sched_errbuf *eb)
{
    check(x->command != NULL && x->where != NULL && x->api_version != NULL);
    if (x->n_args % 2)
        return sched_fail(eb, SCHED_EIO, "%s: command %s: not run (fuzzing)", x->where, x->command);
    cr->token = strdup("fuzz-token");
    return cr->token ? 0 : sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kube_exec_hook = no_exec;
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
