/* tests/fuzz/fuzz_hami.c: libFuzzer harness for HAMi's wire format (sched/core/hami.h), which
 * arrives from node and pod annotations written by other programs.
 *
 * Input: the first line is a hami.io/node-nvidia-register value, the rest a
 * hami.io/vgpu-devices-allocated value. Properties: parsing never crashes; a register that parses
 * has at most 32 devices, indices strictly ascending and distinct UUIDs; reading an allocation
 * either fails leaving the usage untouched or names only registered devices; an allocation
 * written for every device reads back as exactly that usage. A violated property aborts, which
 * both libFuzzer and replay_main.c report as a failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/hami.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_hami: %s\n", what);
        abort();
    }
}

static void register_props(const struct hami_reg *r)
{
    check(r->n <= NODE_MAX_GPUS, "device count");
    for (uint8_t i = 1; i < r->n; i++) {
        check(r->dev[i].index > r->dev[i - 1].index, "indices ascending");
        for (uint8_t j = 0; j < i; j++)
            check(strcmp(r->dev[i].uuid, r->dev[j].uuid) != 0, "distinct UUIDs");
    }
}

static void round_trip(const struct hami_reg *r)
{
    struct gs_node n;
    hami_reg_node(r, &n);
    uint32_t all = r->n >= 32 ? UINT32_MAX : (UINT32_C(1) << r->n) - 1;
    struct gs_req q = {.devs = r->n, .cores = 40, .allowed = GS_ALL_DEVICES};
    uint32_t ctr = r->n;
    char buf[NODE_MAX_GPUS * (HAMI_UUID_MAX + 40) + 8];
    struct sched_errbuf eb;
    check(hami_format_alloc(r, &n, &q, all, &ctr, 1, buf, sizeof(buf), &eb) == 0, "format");
    uint32_t mask = 0;
    check(hami_apply_alloc(r, &n, buf, &mask, &eb) == 0 && mask == all, "read back");
    for (uint8_t i = 0; i < r->n; i++)
        check(n.dev[i].tasks == 1 && n.dev[i].cores_used == 40 &&
                  n.dev[i].mem_used == r->dev[i].mem_mib,
              "usage read back");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char *alloc = strchr(s, '\n');
    if (alloc)
        *alloc++ = '\0';
    struct hami_reg r;
    struct sched_errbuf eb;
    if (hami_parse_register(s, &r, &eb) == 0) {
        register_props(&r);
        if (r.n > 0)
            round_trip(&r);
        struct gs_node n, before;
        hami_reg_node(&r, &n);
        before = n;
        uint32_t mask = 0;
        if (alloc && hami_apply_alloc(&r, &n, alloc, &mask, &eb) != 0)
            check(memcmp(&n, &before, sizeof(n)) == 0, "failed read leaves usage alone");
        else
            check(r.n >= 32 || (mask >> r.n) == 0, "only registered devices");
    } else {
        check(eb.msg[0] != '\0', "an error has a message");
    }
    free(s);
    return 0;
}
