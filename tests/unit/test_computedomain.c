/* tests/unit/test_computedomain.c: NVIDIA ComputeDomains (sched/kube/computedomain.c): channel
 * claims decoded by DeviceClass (domainID from the opaque config, no GPUs), what is refused and
 * how it is named, the channel inventory from compute-domain.nvidia.com slices (channel-0 only,
 * not the daemon device; the pool generation rule of GPUs), the ComputeDomains seen, the
 * allocation body (the claim's config copied as FromClaim), and the gang rule (the clique level
 * becomes the required level; a narrower one is kept; no clique level is an error). */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/core/annot.h"
#include "sched/core/arena.h"
#include "sched/kube/claims.h"
#include "sched/kube/computedomain.h"
#include "sched/kube/dra.h"

#define CFG                                                                                        \
    ",\"config\":[{\"requests\":[\"channel\"],\"opaque\":{\"driver\":"                             \
    "\"compute-domain.nvidia.com\",\"parameters\":{\"apiVersion\":"                                \
    "\"resource.nvidia.com/v1beta1\",\"kind\":\"ComputeDomainChannelConfig\",\"domainID\":"        \
    "\"cd-uid-1\"}}}]"

static cJSON *claim_json(const char *exactly, const char *more)
{
    char buf[2000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\",\"uid\":\"cu\"},\"spec\":{"
             "\"devices\":{\"requests\":[{\"name\":\"channel\",\"exactly\":%s}]%s}}}",
             exactly, more);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static struct kclaim *claim(const char *exactly, const char *more)
{
    cJSON *o = claim_json(exactly, more);
    struct kclaim *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdra_claim_decode(o, NULL, &c, &eb), 0);
    cJSON_Delete(o);
    return c;
}

static void channel_claims(void **state)
{
    (void)state;
    struct kclaim *c =
        claim("{\"deviceClassName\":\"compute-domain-default-channel.nvidia.com\"}", CFG);
    assert_null(c->unsupported);
    assert_int_equal(c->channels, 1);
    assert_int_equal(c->gpus, 0);
    assert_string_equal(c->domain, "cd-uid-1");
    /* the allocation: the channel device, and the claim's config as FromClaim */
    const char *dev[] = {"channel-0"}, *drv[] = {"compute-domain.nvidia.com"}, *pool[] = {"n1"};
    struct kdra_ref who = {.name = "p", .uid = "pu"};
    cJSON *body = kdra_claim_allocation(c, "n1", dev, drv, pool, 1, &who, 1);
    assert_non_null(body);
    char *s = cJSON_PrintUnformatted(body);
    assert_non_null(strstr(s, "\"results\":[{\"request\":\"channel\",\"driver\":"
                              "\"compute-domain.nvidia.com\",\"pool\":\"n1\",\"device\":"
                              "\"channel-0\"}]"));
    assert_non_null(strstr(s, "\"config\":[{\"source\":\"FromClaim\",\"requests\":[\"channel\"],"
                              "\"opaque\":{\"driver\":\"compute-domain.nvidia.com\""));
    assert_non_null(strstr(s, "\"domainID\":\"cd-uid-1\""));
    cJSON_free(s);
    cJSON_Delete(body);
    kdra_claim_free(c);
    const char *bad[][3] = {
        {"{\"deviceClassName\":\"compute-domain-daemon.nvidia.com\"}", CFG, "daemon class"},
        {"{\"deviceClassName\":\"compute-domain-default-channel.nvidia.com\",\"count\":2}", CFG,
         "one device"},
        {"{\"deviceClassName\":\"compute-domain-default-channel.nvidia.com\"}", "",
         "spec.devices.config: no opaque config of driver compute-domain.nvidia.com"},
    };
    for (int i = 0; i < 3; i++) {
        c = claim(bad[i][0], bad[i][1]);
        assert_non_null(c->unsupported);
        assert_non_null(strstr(c->unsupported, bad[i][2]));
        assert_non_null(strstr(c->unsupported, "resourceclaim ml/c"));
        kdra_claim_free(c);
    }
}

static void slice_event(struct kclaims *k, const char *name, const char *node, int gen)
{
    char buf[1000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"compute-domain.nvidia.com\","
             "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":%d,"
             "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"channel-0\",\"attributes\":{"
             "\"type\":{\"string\":\"channel\"},\"id\":{\"int\":0}}},{\"name\":\"daemon\","
             "\"attributes\":{\"type\":{\"string\":\"daemon\"},\"id\":{\"int\":0}}}]}}",
             name, node, node, gen);
    cJSON *o = cJSON_Parse(buf);
    assert_int_equal(kclaims_slice_event(k, o, false), 0);
    cJSON_Delete(o);
}

static void inventory_and_gang(void **state)
{
    (void)state;
    struct kclaims *k = kclaims_new();
    struct kcd *cd = kclaims_cd(k);
    slice_event(k, "n1-cd", "n1", 1);
    slice_event(k, "n1-cd-old", "n1", 0); /* an older generation: not counted */
    struct cluster *cl = cluster_new();
    const char *names[] = {"n1", "n2", "n3"}, *clique[] = {"u.1", "u.1", NULL};
    for (int i = 0; i < 3; i++) {
        struct node *nd = cluster_add_node(cl, names[i]);
        nd->alloc.v[RES_GPU] = 4;
        nd->ready = true;
        struct kv *l = cluster_alloc(cl, 2 * sizeof(*l));
        l[0] = (struct kv){"kubernetes.io/hostname", names[i]};
        l[1] = (struct kv){TOPO_LABEL_CLIQUE, clique[i]};
        nd->labels = l;
        nd->n_labels = clique[i] ? 2 : 1;
    }
    assert_int_equal(kcd_apply(cd, cl), 0);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(cl, NULL, NULL, 0, &eb), 0);
    int r = kcd_res();
    assert_true(r >= 0);
    assert_int_equal(cl->nodes[0].alloc.v[r], 1); /* channel-0; the daemon device is not one */
    assert_int_equal(cl->nodes[1].alloc.v[r], 0); /* no compute-domain slice */
    const char *drv = NULL, *pool = NULL;
    assert_string_equal(kcd_channel(cd, "n1", &drv, &pool), "channel-0");
    assert_string_equal(drv, "compute-domain.nvidia.com");
    assert_string_equal(pool, "n1");
    assert_null(kcd_channel(cd, "n2", NULL, NULL));

    /* the ComputeDomain named, its namespace checked */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train\",\"uid\":"
                           "\"cd-uid-1\"},\"spec\":{\"numNodes\":0}}");
    assert_int_equal(kcd_event(cd, o, false), 0);
    assert_string_equal(kcd_name(cd, "cd-uid-1"), "ml/train");
    assert_true(kcd_in_namespace(cd, "cd-uid-1", "ml"));
    assert_false(kcd_in_namespace(cd, "cd-uid-1", "m"));
    assert_false(kcd_in_namespace(cd, "other", "ml"));
    cJSON_Delete(o);

    /* the gang rule: a member with a channel claim makes the clique the required level */
    o = claim_json("{\"deviceClassName\":\"compute-domain-default-channel.nvidia.com\"}", CFG);
    assert_int_equal(kclaims_claim_event(k, o, false), 0);
    cJSON_Delete(o);
    char key[] = "ml/c", *keys[] = {key};
    struct kpod p = {.claims = keys, .n_claims = 1};
    struct kpod *members[] = {&p};
    struct arena a;
    arena_init(&a, 4096);
    struct gang g = {.topo_required = -1};
    const char *why = NULL;
    int clique_level = annot_level_by_label(&cl->topo, TOPO_LABEL_CLIQUE);
    assert_true(clique_level >= 0);
    assert_int_equal(kcd_gang(k, &cl->topo, members, 1, &g, &a, &why), 0);
    assert_int_equal(g.topo_required, clique_level);
    g.topo_required = (int8_t)(cl->topo.n_levels - 1); /* node: narrower, kept */
    assert_int_equal(kcd_gang(k, &cl->topo, members, 1, &g, &a, &why), 0);
    assert_int_equal(g.topo_required, (int)cl->topo.n_levels - 1);
    struct kpod none = {0};
    struct kpod *plain[] = {&none};
    g.topo_required = -1;
    assert_int_equal(kcd_gang(k, &cl->topo, plain, 1, &g, &a, &why), 0);
    assert_int_equal(g.topo_required, -1);
    /* a topology without the clique label: refused, naming the ComputeDomain and the label */
    struct topo t = cl->topo;
    t.n_levels = 1; /* only the widest level */
    t.levels[0].label = "topology.kubernetes.io/zone";
    assert_int_equal(kcd_gang(k, &t, members, 1, &g, &a, &why), SCHED_EINVAL);
    assert_non_null(strstr(why, "ComputeDomain ml/train"));
    assert_non_null(strstr(why, TOPO_LABEL_CLIQUE));
    arena_fini(&a);
    cluster_free(cl);
    kclaims_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(channel_claims),
        cmocka_unit_test(inventory_and_gang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
