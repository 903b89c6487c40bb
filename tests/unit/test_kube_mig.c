/* tests/unit/test_kube_mig.c: MIG devices as DRA devices (sched/kube/mig.c): a node's devices of
 * each profile counted as the profile's resource (the device plugin's count wins), which claims
 * take MIG devices and of which profile (for "any", the commonest with room), what is refused and
 * how it is named, firstAvailable subrequests (the first with room), the node rule of selectors
 * beyond the profile, and the devices picked at binding: never one another claim holds or a
 * write in flight picked, a claim's own allocation again. */
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

#include "sched/core/dra.h"
#include "sched/core/model.h"
#include "sched/core/res.h"
#include "sched/kube/dra.h"
#include "sched/kube/mig.h"

#include "tests/unit/dra_fx.h"

/* A slice of node `node`: n1 devices of 1g.10gb on GPU 0 (product `product`), n3 of 3g.40gb on
 * GPU 1, and one whole GPU (type gpu) gpu-2. */
static void slice(struct kmig *m, const char *node, int n1, int n3, const char *product)
{
    char devs[6000] = "";
    for (int i = 0; i < n1 + n3; i++) {
        const char *prof = i < n1 ? "1g.10gb" : "3g.40gb";
        snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs),
                 "{\"name\":\"gpu-%d-mig-%s-%d\",\"attributes\":{\"type\":{\"string\":\"mig\"},"
                 "\"profile\":{\"string\":\"%s\"},\"productName\":{\"string\":\"%s\"}}},",
                 i < n1 ? 0 : 1, i < n1 ? "1g10gb" : "3g40gb", i, prof, product);
    }
    char buf[7000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s-slice\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
             "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1},\"devices\":[%s"
             "{\"name\":\"gpu-2\",\"attributes\":{\"type\":{\"string\":\"gpu\"}}}]}}",
             node, node, node, devs);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(kmig_slice_event(m, o, false), 0);
    cJSON_Delete(o);
}

/* Claim `name` with spec.devices `devices` and status `status` ("" none). */
static struct kclaim *claim(const char *name, const char *devices, const char *status)
{
    char buf[2000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"resourceVersion\":\"1\"},"
             "\"spec\":{\"devices\":%s}%s%s}",
             name, devices, *status ? ",\"status\":" : "", status);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    struct kclaim *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdra_claim_decode(o, NULL, &c, &eb), 0);
    cJSON_Delete(o);
    return c;
}

/* A claim of one request "gpus" of `count` devices of class `cls` with selector `sel` (NULL:
 * none). */
static struct kclaim *mig_claim(const char *name, const char *cls, int count, const char *sel)
{
    char buf[1000];
    snprintf(buf, sizeof(buf),
             "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":\"%s\","
             "\"count\":%d%s%s%s}}]}",
             cls, count, sel ? ",\"selectors\":[{\"cel\":{\"expression\":\"" : "", sel ? sel : "",
             sel ? "\"}}]" : "");
    return claim(name, buf, "");
}

/* The whole-device test claims.c gives: some class selecting type gpu. */
static bool whole(const void *ctx, struct kdra_class *k)
{
    (void)ctx;
    struct cel_attr t = {.domain = "", .name = "type", .type = CEL_STR, .s = "gpu"};
    struct cel_device d = {.driver = "gpu.nvidia.com", .attrs = &t, .n_attrs = 1};
    return kdra_class_matches(k, &d);
}

struct fx {
    struct kmig *m;
    struct strmap classes;
    struct kmig_ctx cx;
};

static void fx_init(struct fx *f)
{
    f->m = kmig_new();
    assert_non_null(f->m);
    strmap_init(&f->classes);
    struct kdra_class *k[] = {
        fx_device_class("mig.nvidia.com", "device.driver == 'gpu.nvidia.com' && "
                                          "device.attributes['gpu.nvidia.com'].type == 'mig'"),
        fx_device_class("any.example.com", "device.driver == 'gpu.nvidia.com'"),
        fx_device_class("gpu.example.com", "device.attributes['gpu.nvidia.com'].type == 'gpu'")};
    for (int i = 0; i < 3; i++)
        assert_int_equal(strmap_put(&f->classes, k[i]->name, k[i], NULL), 0);
    f->cx = (struct kmig_ctx){.classes = &f->classes, .classes_gen = 1, .whole = whole};
}

static void fx_fini(struct fx *f)
{
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&f->classes, &i, &key, &v);)
        kdra_class_free(v);
    strmap_fini(&f->classes);
    kmig_free(f->m);
}

static int res_of(const char *name)
{
    int id = -1;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(res_intern(name, &id, &eb), 0);
    return id;
}

static void profiles_as_resources(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    assert_false(kmig_any(f.m));
    slice(f.m, "a", 7, 2, "A100");
    slice(f.m, "b", 3, 0, "A100");
    assert_true(kmig_any(f.m));
    struct cluster *c = cluster_new();
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        cluster_add_node(c, names[i])->ready = true;
    int r1 = res_of("nvidia.com/mig-1g.10gb"), r3 = res_of("nvidia.com/mig-3g.40gb");
    c->nodes[1].alloc.v[r1] = 5; /* the device plugin's count wins */
    assert_int_equal(kmig_apply(f.m, c), 0);
    assert_int_equal(c->nodes[0].alloc.v[r1], 7);
    assert_int_equal(c->nodes[0].alloc.v[r3], 2);
    assert_int_equal(c->nodes[0].alloc.v[RES_GPU], 0); /* whole GPUs are the GPU inventory's */
    assert_int_equal(c->nodes[1].alloc.v[r1], 5);
    assert_int_equal(c->nodes[2].alloc.v[r1], 0);
    /* counts of ResourceSlice devices mark the node: containers asking the profile stay off */
    assert_true(c->nodes[0].dra_mig);
    assert_false(c->nodes[1].dra_mig);
    assert_false(c->nodes[2].dra_mig);
    assert_int_equal(c->n_dra_mig_nodes, 1);
    assert_true(dra_res_mig(r1) && dra_res_mig(r3));
    assert_false(dra_res_mig(RES_GPU));
    assert_int_equal(kmig_device_res(f.m, "a", "a", "gpu-1-mig-3g40gb-8"), r3);
    assert_int_equal(kmig_device_res(f.m, "a", "a", "gpu-2"), -1); /* a whole GPU */
    /* dynamic MIG (KEP-4815's partitionable devices): devices sharing counters are not counted */
    cJSON *dyn = cJSON_Parse(
        "{\"metadata\":{\"name\":\"d-slice\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
        "\"nodeName\":\"c\",\"pool\":{\"name\":\"c\"},\"devices\":[{\"name\":\"gpu-0-mig-1g10gb-"
        "19-0\",\"attributes\":{\"type\":{\"string\":\"mig\"},\"profile\":{\"string\":"
        "\"1g.10gb\"}},\"consumesCounters\":[{\"counterSet\":\"gpu-0\",\"counters\":{"
        "\"memory\":{\"value\":\"10Gi\"}}}]}]}}");
    assert_int_equal(kmig_slice_event(f.m, dyn, false), 0);
    cJSON_Delete(dyn);
    assert_int_equal(kmig_apply(f.m, c), 0);
    assert_int_equal(c->nodes[2].alloc.v[r1], 0);
    cJSON *gone = cJSON_Parse("{\"metadata\":{\"name\":\"a-slice\"}}");
    assert_int_equal(kmig_slice_event(f.m, gone, true), 0);
    cJSON_Delete(gone);
    struct cluster *c2 = cluster_new();
    cluster_add_node(c2, "a");
    assert_int_equal(kmig_apply(f.m, c2), 0);
    assert_int_equal(c2->nodes[0].alloc.v[r1], 0);
    cluster_free(c);
    cluster_free(c2);
    fx_fini(&f);
}

static void which_claims_and_profiles(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    slice(f.m, "a", 7, 2, "A100");
    const struct kmig_choice *res;
    const char *why;
    struct kclaim *one = mig_claim("one", "mig.nvidia.com", 3,
                                   "device.attributes['gpu.nvidia.com'].profile == "
                                   "'3g.40gb'");
    assert_true(kmig_claim(f.m, &f.cx, "ml/one", one, &res, &why));
    assert_null(why);
    assert_int_equal(res->res[0], res_of("nvidia.com/mig-3g.40gb"));
    struct kclaim *any = mig_claim("any", "mig.nvidia.com", 1, NULL);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any", any, &res, &why));
    assert_null(why);
    assert_int_equal(res->res[0], res_of("nvidia.com/mig-1g.10gb")); /* 7 devices against 2 */
    struct kclaim *gpu = mig_claim("gpu", "gpu.example.com", 1, NULL);
    assert_false(kmig_claim(f.m, &f.cx, "ml/gpu", gpu, &res, &why)); /* whole GPUs */
    struct kclaim *acc = claim("acc",
                               "{\"requests\":[{\"name\":\"g\",\"exactly\":{"
                               "\"deviceClassName\":\"gpu.nvidia.com\"}}]}",
                               "");
    assert_false(kmig_claim(f.m, &f.cx, "ml/acc", acc, &res, &why)); /* the accelerator's class */
    struct kclaim *both = mig_claim("both", "any.example.com", 1, NULL);
    assert_true(kmig_claim(f.m, &f.cx, "ml/both", both, &res, &why));
    assert_non_null(strstr(why, "resourceclaim ml/both: spec.devices.requests[0]: deviceclass "
                                "any.example.com selects whole devices and MIG devices"));
    struct kclaim *mixed = claim(
        "mixed",
        "{\"requests\":[{\"name\":\"m\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\"}},"
        "{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}",
        "");
    assert_true(kmig_claim(f.m, &f.cx, "ml/mixed", mixed, &res, &why));
    assert_non_null(strstr(why, "requests[1]: a claim takes MIG devices or whole devices"));
    struct kclaim *fa = claim("fa",
                              "{\"requests\":[{\"name\":\"m\",\"firstAvailable\":[{\"name\":"
                              "\"big\",\"deviceClassName\":\"mig.nvidia.com\"}]}]}",
                              "");
    assert_true(kmig_claim(f.m, &f.cx, "ml/fa", fa, &res, &why));
    assert_null(why); /* one subrequest: as `exactly`, the commonest profile */
    assert_int_equal(res->res[0], res_of("nvidia.com/mig-1g.10gb"));
    assert_int_equal(res->alt[0], 0);
    struct kclaim *fw = claim("fw",
                              "{\"requests\":[{\"name\":\"m\",\"firstAvailable\":[{\"name\":"
                              "\"mig\",\"deviceClassName\":\"mig.nvidia.com\"},{\"name\":"
                              "\"whole\",\"deviceClassName\":\"gpu.example.com\"}]}]}",
                              "");
    assert_true(kmig_claim(f.m, &f.cx, "ml/fw", fw, &res, &why));
    assert_non_null(strstr(why, "requests[0]: a claim takes MIG devices or whole devices"));
    struct kclaim *cons = claim("cons",
                                "{\"requests\":[{\"name\":\"m\",\"exactly\":{\"deviceClassName\":"
                                "\"mig.nvidia.com\",\"count\":2}}],\"constraints\":[{"
                                "\"matchAttribute\":\"gpu.nvidia.com/parentUUID\"}]}",
                                "");
    assert_true(kmig_claim(f.m, &f.cx, "ml/cons", cons, &res, &why));
    assert_non_null(strstr(why, "spec.devices.constraints: constraints between MIG devices"));
    struct kclaim *none = mig_claim("none", "mig.nvidia.com", 1,
                                    "device.attributes['gpu.nvidia.com'].profile == "
                                    "'7g.80gb'");
    assert_true(kmig_claim(f.m, &f.cx, "ml/none", none, &res, &why));
    assert_non_null(strstr(why, "no MIG device of a known profile passes"));
    /* a slice of the new profile: the view is made again (a new generation) */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"z\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
                           "\"nodeName\":\"z\",\"pool\":{\"name\":\"z\"},\"devices\":[{\"name\":"
                           "\"gpu-0-mig-7g80gb-0\",\"attributes\":{\"type\":{\"string\":\"mig\"},"
                           "\"profile\":{\"string\":\"7g.80gb\"}}}]}}");
    assert_int_equal(kmig_slice_event(f.m, o, false), 0);
    cJSON_Delete(o);
    assert_true(kmig_claim(f.m, &f.cx, "ml/none", none, &res, &why));
    assert_null(why);
    assert_int_equal(res->res[0], res_of("nvidia.com/mig-7g.80gb"));
    /* refused when read (a request half read beside a MIG one): that refusal, nothing judged */
    struct kclaim *half = claim(
        "half",
        "{\"requests\":[{\"name\":\"m\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\"}},"
        "{\"name\":\"b\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\"},"
        "\"firstAvailable\":[{\"name\":\"x\",\"deviceClassName\":\"mig.nvidia.com\"}]}]}",
        "");
    assert_non_null(half->unsupported);
    assert_true(kmig_claim(f.m, &f.cx, "ml/half", half, &res, &why));
    assert_string_equal(why, half->unsupported);
    struct kclaim *all[] = {one, any, gpu, acc, both, mixed, fa, fw, cons, none, half};
    for (int i = 0; i < 11; i++)
        kdra_claim_free(all[i]);
    fx_fini(&f);
}

static void node_rule(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    slice(f.m, "a", 2, 0, "A100");
    slice(f.m, "h", 2, 0, "H100");
    const struct kmig_choice *res;
    const char *why;
    struct kclaim *prof = mig_claim("p", "mig.nvidia.com", 1,
                                    "device.attributes['gpu.nvidia.com']"
                                    ".profile == '1g.10gb'");
    assert_true(kmig_every_node(f.m, &f.cx, "ml/p", prof)); /* the profile alone: no node rule */
    struct kclaim *h = mig_claim("h", "mig.nvidia.com", 1,
                                 "device.attributes['gpu.nvidia.com']"
                                 ".productName == 'H100'");
    assert_true(kmig_claim(f.m, &f.cx, "ml/h", h, &res, &why));
    assert_null(why);
    assert_false(kmig_every_node(f.m, &f.cx, "ml/h", h));
    assert_true(kmig_node_ok(f.m, &f.cx, h, res, "h"));
    assert_false(kmig_node_ok(f.m, &f.cx, h, res, "a"));
    kdra_claim_free(prof);
    kdra_claim_free(h);
    fx_fini(&f);
}

static void picking_devices(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    slice(f.m, "a", 4, 0, "A100");
    const char *dev[8], *drv[8], *pool[8];
    uint32_t n = 0;
    struct kclaim *x = mig_claim("x", "mig.nvidia.com", 2, NULL);
    struct kclaim *y = mig_claim("y", "mig.nvidia.com", 2, NULL);
    struct kclaim *z = mig_claim("z", "mig.nvidia.com", 1, NULL);
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/x", x, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_int_equal(n, 2);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-0");
    assert_string_equal(dev[1], "gpu-0-mig-1g10gb-1");
    assert_string_equal(drv[0], "gpu.nvidia.com");
    assert_string_equal(pool[0], "a");
    /* x's write in flight: y gets the other two, z none */
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/y", y, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-2");
    assert_string_equal(dev[1], "gpu-0-mig-1g10gb-3");
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/z", z, "a", dev, drv, pool, 8, &n, NULL), -1);
    kmig_release(f.m, "ml/y"); /* y's write failed: its devices are free again */
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/z", z, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-2");
    kmig_release(f.m, "ml/z");
    /* x's write succeeded: its allocation is in the claim map, the picks are released */
    struct kclaim *xa = claim("x",
                              "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                              "\"deviceClassName\":\"mig.nvidia.com\",\"count\":2}}]}",
                              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\","
                              "\"driver\":\"gpu.nvidia.com\",\"pool\":\"a\",\"device\":"
                              "\"gpu-0-mig-1g10gb-0\"},{\"request\":\"gpus\",\"driver\":"
                              "\"gpu.nvidia.com\",\"pool\":\"a\",\"device\":"
                              "\"gpu-0-mig-1g10gb-1\"}]}}}");
    kmig_claim_changed(f.m, "ml/x", x, xa);
    kmig_release(f.m, "ml/x");
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/y", y, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-2"); /* x's are held */
    kmig_release(f.m, "ml/y");
    /* x written again (an earlier attempt's allocation): its own devices may be picked */
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/x", xa, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-0");
    kmig_release(f.m, "ml/x");
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/y", y, "a", dev, drv, pool, 1, &n, NULL),
                     -1); /* room */
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/y", y, "b", dev, drv, pool, 8, &n, NULL),
                     -1);                      /* none */
    kmig_claim_changed(f.m, "ml/x", xa, NULL); /* deallocated or deleted: free again */
    struct kclaim *w = mig_claim("w", "mig.nvidia.com", 4, NULL);
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/w", w, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_int_equal(n, 4);
    kmig_release(f.m, "ml/w");
    struct kclaim *g = mig_claim("g", "gpu.example.com", 1, NULL);
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/g", g, "a", dev, drv, pool, 8, &n, NULL), 0);
    struct kclaim *all[] = {x, y, z, xa, w, g};
    for (int i = 0; i < 6; i++)
        kdra_claim_free(all[i]);
    fx_fini(&f);
}

/* A request accepting several profiles ("any MIG device") is given the commonest among those
 * with enough free devices when a build begins (held by no allocated claim, picked by no write
 * in flight), else the commonest; the choice holds until the next build, so binding picks what
 * placement counted. */
static void any_takes_a_profile_with_room(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    slice(f.m, "a", 3, 2, "A100");
    int r1 = res_of("nvidia.com/mig-1g.10gb"), r3 = res_of("nvidia.com/mig-3g.40gb");
    const struct kmig_choice *res;
    const char *why;
    const char *dev[8], *drv[8], *pool[8];
    uint32_t n = 0;
    struct kclaim *any = mig_claim("any", "mig.nvidia.com", 1, NULL);
    struct kclaim *any2 = mig_claim("any2", "mig.nvidia.com", 2, NULL);
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any", any, &res, &why));
    assert_null(why);
    assert_int_equal(res->res[0], r1); /* 3 devices against 2, both with room */
    assert_true(kmig_claim(f.m, &f.cx, "ml/any2", any2, &res, &why));
    assert_int_equal(res->res[0], r1);
    /* two 1g.10gb devices allocated: one left, room for `any` but not for `any2` */
    struct kclaim *x = claim("x",
                             "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                             "\"deviceClassName\":\"mig.nvidia.com\",\"count\":2}}]}",
                             "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\","
                             "\"driver\":\"gpu.nvidia.com\",\"pool\":\"a\",\"device\":"
                             "\"gpu-0-mig-1g10gb-0\"},{\"request\":\"gpus\",\"driver\":"
                             "\"gpu.nvidia.com\",\"pool\":\"a\",\"device\":"
                             "\"gpu-0-mig-1g10gb-1\"}]}}}");
    kmig_claim_changed(f.m, "ml/x", NULL, x);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any2", any2, &res, &why));
    assert_int_equal(res->res[0], r1); /* the choice of the build that began before */
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any2", any2, &res, &why));
    assert_int_equal(res->res[0], r3);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any", any, &res, &why));
    assert_int_equal(res->res[0], r1);
    /* the last 1g.10gb device picked by a write in flight: `any` turns to 3g.40gb, and keeps
     * it at binding until the next build */
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/z", any, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-2");
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any", any, &res, &why));
    assert_int_equal(res->res[0], r3);
    kmig_release(f.m, "ml/z");
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/any", any, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_string_equal(dev[0], "gpu-1-mig-3g40gb-3");
    kmig_release(f.m, "ml/any");
    /* no profile with room: the commonest */
    struct kclaim *any4 = mig_claim("any4", "mig.nvidia.com", 4, NULL);
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any4", any4, &res, &why));
    assert_int_equal(res->res[0], r1);
    /* x is gone: 1g.10gb has room for two again */
    kmig_claim_changed(f.m, "ml/x", x, NULL);
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/any2", any2, &res, &why));
    assert_int_equal(res->res[0], r1);
    struct kclaim *all[] = {any, any2, any4, x};
    for (int i = 0; i < 4; i++)
        kdra_claim_free(all[i]);
    fx_fini(&f);
}

/* firstAvailable of MIG subrequests ("a 3g.40gb, else a 1g.10gb"): the first whose profile has
 * `count` free devices when a build begins, else the first; the node rule and the picking read
 * the chosen subrequest's selectors, and the pick names it. */
static void first_available_subrequests(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    slice(f.m, "a", 3, 2, "A100");
    int r1 = res_of("nvidia.com/mig-1g.10gb"), r3 = res_of("nvidia.com/mig-3g.40gb");
    const struct kmig_choice *ch;
    const char *why;
    const char *dev[8], *drv[8], *pool[8];
    uint8_t sub[KDRA_MAX_REQS];
    uint32_t n = 0;
    struct kclaim *fa = claim(
        "fa",
        "{\"requests\":[{\"name\":\"m\",\"firstAvailable\":[{\"name\":\"big\",\"deviceClassName\":"
        "\"mig.nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{\"expression\":\"device."
        "attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}}]},{\"name\":\"small\","
        "\"deviceClassName\":\"mig.nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.attributes['gpu.nvidia.com'].profile == '1g.10gb' && "
        "device.attributes['gpu.nvidia.com'].productName == 'A100'\"}}]}]}]}",
        "");
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/fa", fa, &ch, &why));
    assert_null(why);
    assert_int_equal(ch->res[0], r3);
    assert_int_equal(ch->alt[0], 0);
    /* one 3g.40gb device picked by a write in flight: no room for two, the next build takes the
     * second subrequest */
    struct kclaim *y = mig_claim("y", "mig.nvidia.com", 1,
                                 "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'");
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/y", y, "a", dev, drv, pool, 8, &n, NULL), 1);
    assert_true(kmig_claim(f.m, &f.cx, "ml/fa", fa, &ch, &why));
    assert_int_equal(ch->alt[0], 0); /* this build's choice */
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/fa", fa, &ch, &why));
    assert_null(why);
    assert_int_equal(ch->res[0], r1);
    assert_int_equal(ch->alt[0], 1);
    /* its selectors, not the first subrequest's: an H100 node's 1g.10gb devices refuse it */
    slice(f.m, "h", 3, 0, "H100");
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/fa", fa, &ch, &why));
    assert_int_equal(ch->alt[0], 1);
    assert_true(kmig_node_ok(f.m, &f.cx, fa, ch, "a"));
    assert_false(kmig_node_ok(f.m, &f.cx, fa, ch, "h"));
    assert_false(kmig_every_node(f.m, &f.cx, "ml/fa", fa));
    memset(sub, 9, sizeof(sub));
    assert_int_equal(kmig_pick(f.m, &f.cx, "ml/fa", fa, "a", dev, drv, pool, 8, &n, sub), 1);
    assert_int_equal(n, 2);
    assert_int_equal(sub[0], 1);
    assert_string_equal(dev[0], "gpu-0-mig-1g10gb-0");
    kmig_release(f.m, "ml/fa");
    /* y's write failed: room for the first again */
    kmig_release(f.m, "ml/y");
    kmig_build_begin(f.m);
    assert_true(kmig_claim(f.m, &f.cx, "ml/fa", fa, &ch, &why));
    assert_int_equal(ch->alt[0], 0);
    assert_int_equal(ch->res[0], r3);
    kdra_claim_free(fa);
    kdra_claim_free(y);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(profiles_as_resources),
        cmocka_unit_test(which_claims_and_profiles),
        cmocka_unit_test(node_rule),
        cmocka_unit_test(picking_devices),
        cmocka_unit_test(any_takes_a_profile_with_room),
        cmocka_unit_test(first_available_subrequests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
