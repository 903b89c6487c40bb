/* sched/kube/driver.h: the Kubernetes driver: `gangsched run`.
 *
 * Owns: the daemon's libuv loop and everything on it: informers feeding the cache, leader
 * election, the cycle timer, the binder (bind journal intent, parallel Binding requests with the
 * pod's uid and resourceVersion as preconditions, whole-gang rollback, fences that end a
 * Binding's doubt), PodGroup status, the pods' PodScheduled condition and Events, deletes (once
 * per pod, with its uid), preemption evictions, crash and fail-over recovery (fences, then the
 * bind journal), configuration hot reload, and a clean SIGTERM/SIGINT shutdown (in-flight binds
 * are finished, the Lease is released).
 *
 * Must not touch: scheduling decisions (the core makes them), SQL (store/ does it), HTTP
 * details (sched/kube/client.c does them). Only the leader writes: a standby keeps its caches
 * warm, opens no database for writing and sends nothing but reads and Lease attempts.
 */
#ifndef SCHED_KUBE_DRIVER_H
#define SCHED_KUBE_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/err.h"
#include "sched/http/server.h"

struct kube_run_opts {
    const char *kubeconfig;        /* NULL: $KUBECONFIG, ~/.kube/config, then in-cluster */
    const char *config_path;       /* operator YAML (required) */
    const char *db_path;           /* SQLite database (required) */
    const char *scheduler;         /* spec.schedulerName handled; default "gangsched" */
    const char *policy;            /* default "gangsched" */
    bool leader_elect;             /* default true */
    const char *lease_ns;          /* default: the kubeconfig context's namespace */
    const char *lease_name;        /* default "gangsched" */
    const char *identity;          /* default "HOSTNAME_PID" */
    uint32_t cycle_ms;             /* minimum interval between cycles; default 100 */
    uint32_t cycle_budget_ms;      /* the core's time per cycle at most (sched_snapshot.clock_ns);
                                      0: only the Lease's bound (kdrv_budget) */
    double qps;                    /* API client rate; default 200 */
    uint32_t burst;                /* default 400 */
    uint32_t max_inflight;         /* requests on the wire at once, watches excluded; 0: 64 */
    uint32_t watch_idle_ms;        /* informers' watch watchdog (kube_client_opts); 0: 150000 */
    bool paged_lists;              /* informers list in pages, never a streaming list */
    uint32_t status_every_s;       /* an unchanged "unschedulable" status/event is rewritten at most
                                      this often per gang; default 60 */
    const char *listen;            /* HTTP API, /metrics, /healthz, /readyz ("HOST:PORT"); default
                                      "0.0.0.0:8080"; NULL or "" = none */
    const char *port_file;         /* the bound HTTP port is written here (with port 0), or NULL */
    const char *token_file;        /* bearer token for operator writes, or NULL (writes refused) */
    const char *read_token_file;   /* bearer token for reads, or NULL (reads open) */
    struct http_limits http;       /* the HTTP API's connection limits (0 fields: defaults) */
    const char *follow_url;        /* while standby, follow the leader's store from this API
                                      (sched/http/follow.h), or NULL */
    const char *follow_token_file; /* read token for it, or NULL */
    uint32_t follow_ms;            /* between two fetches; 0: HTTP_FOLLOW_DEFAULT_MS */
    bool rebuild_store;            /* a database the store calls corrupt or foreign is moved aside
                                      (FILE.broken-TIME) and a new one started; default false:
                                      the daemon stops with the store's message */
    bool evict_fallback_delete;    /* delete a victim whose eviction stays blocked (429 from a
                                      PodDisruptionBudget) after the client's retries; default
                                      false: the eviction is tried again at a later cycle */
    bool full_cycles;              /* the pre-issue-16 cycle, for comparison (benchmarks): no
                                      placement state, node usage or walked set kept between
                                      cycles, and a cycle every second whether or not anything
                                      changed; default false */
};

void kube_run_opts_default(struct kube_run_opts *o);

/* Runs until SIGTERM or SIGINT (exit 0) or a fatal error (message in eb, returns < 0): losing
 * the Lease is fatal by design (a deposed leader must not keep binding). */
int kube_run(const struct kube_run_opts *o, struct sched_errbuf *eb);

#endif
