/* sched/sim/trace.h: job traces for the simulator (CSV).
 *
 * Owns: reading trace files into an in-memory job table. A trace is CSV with a header line.
 * Required columns: submission_time, duration (seconds, integer or decimal), num_gpu (integer
 * >= 0). Optional: job_id, queue, priority (integer), gpus_per_pod, pods (integers >= 1),
 * max_runtime (seconds), and the topology requests topology-required, topology-preferred
 * (level names), tp-size (GPUs per tensor-parallel group), slice-size (pods per slice) and
 * slice-topology (level name), profile (scoring profile name), checkpoint_interval and
 * restart_cost (seconds), tolerations (the pods' tolerations, kept as text and read by
 * sched/sim/tolerate.c: "nvidia.com/gpu=present:NoSchedule;spot:NoExecute"), resource (the
 * resource num_gpu counts, e.g. nvidia.com/mig-1g.10gb; default the device), gpumem and
 * gpucores (GPU shares in HAMi's model: each pod's gpus_per_pod devices, default 1, each shared
 * with gpumem MiB of memory and gpucores percent of the cores; placed on nodes with a
 * hami.io/node-nvidia-register annotation), user (who submitted the job: run-time estimates
 * learn per user, queue/estimate.h), min_pods (an elastic job's minMember: 1..100000, checked
 * against its pods by sched/sim/input.c). Unknown columns are ignored.
 * Columns may come in any order; the last line may lack its newline; CRLF line ends are accepted;
 * blank lines are skipped. Every error names the file, the line and the column: "itp.csv:17: column
 * 'duration': 'x1' is not a number".
 *
 * Details: times are plain decimals ("12", "1.5"; no sign, exponent, NaN) of at most 10^12 s with
 * at most 3 decimals, stored as exact milliseconds; num_gpu is 0..1000000; priority any int32;
 * gpus_per_pod and pods 1..100000. An empty optional cell counts as absent (max_runtime 0 = no
 * limit). Fields may be quoted ("a,b", "" for a quote) but end on their line. Column names and
 * unquoted values are trimmed of spaces and tabs; matching is exact. A file with a header and no
 * rows is valid; an empty file, a row with the wrong number of fields, or a NUL byte is an error.
 * The stem is the basename without its last extension ("trace" if that is empty).
 * Errors return SCHED_EINVAL (malformed), SCHED_ERANGE (number out of range), SCHED_ENOENT or
 * SCHED_EIO (file), SCHED_ENOMEM, SCHED_EFULL (more than 65536 files).
 *
 * Must not touch: the cluster or the scheduler; it only produces rows.
 */
#ifndef SCHED_SIM_TRACE_H
#define SCHED_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"

struct trace_job {
    const char *id;         /* job_id column, else "<stem>:<line>" */
    const char *queue;      /* queue column, else the file stem ("cluster07") */
    int64_t submit_ms;      /* submission_time */
    int64_t duration_ms;    /* run time at full gang size */
    int64_t num_gpu;        /* GPUs used at once */
    int32_t priority;       /* 0 when absent */
    int32_t gpus_per_pod;   /* 0 when absent: the simulator derives it from the cluster */
    int32_t pods;           /* 0 when absent */
    int32_t min_pods;       /* elastic: the pods the job runs on at least (its minMember),
                               0 when absent (every pod) */
    int64_t max_runtime_ms; /* 0 when absent */
    /* topology requests, named after the PodGroup annotations gangsched.io/...: */
    const char *topology_required;  /* level name ("rack"), NULL when absent */
    const char *topology_preferred; /* level name, NULL when absent */
    const char *slice_topology;     /* level each slice must fit in, NULL when absent */
    const char *profile;            /* scoring profile name, NULL = the queue's */
    const char *tolerations;        /* tolerations column, NULL when absent or empty */
    const char *resource;           /* what num_gpu counts, NULL = the device */
    const char *user;               /* who submitted it (run-time estimates learn per user),
                                       NULL when absent or empty */
    int64_t checkpoint_interval_ms; /* checkpoint_interval: 0 = never checkpoints */
    bool has_checkpoint_interval;   /* the column had a value (else the simulator's default) */
    bool has_restart_cost;          /* the restart_cost cell is not empty (else the queue's
                                       preemption.restartCost applies) */
    int64_t restart_cost_ms;        /* restart_cost: time lost at each restart */
    int32_t tp_size;                /* GPUs per tensor-parallel group, 0 when absent */
    int32_t slice_size;             /* pods per slice, 0 when absent */
    int64_t gpumem_mib;             /* gpumem: MiB of each device a pod shares (HAMi's
                                       nvidia.com/gpumem), 0 when absent */
    int32_t gpucores;               /* gpucores: percent of each device's cores (HAMi's
                                       nvidia.com/gpucores, 0..100), 0 when absent */
    uint32_t line;                  /* 1-based line in its file */
    uint16_t file;                  /* index of the file it came from, in read order */
};

struct trace_pool;

struct trace {
    struct trace_job *jobs;
    size_t n_jobs;
    size_t cap_jobs;
    char **files; /* file paths, in read order */
    size_t n_files;
    struct trace_pool *pool; /* private: string storage */
};

/* The largest trace file read (bytes): larger ones are refused before they fill memory. */
#define TRACE_MAX_FILE ((size_t)1 << 30)

void trace_init(struct trace *t);
void trace_free(struct trace *t);
/* Reads one file and appends its rows. On error nothing from that file is kept. */
int trace_read(struct trace *t, const char *path, struct sched_errbuf *eb);
/* Same on a memory buffer; `name` is used in messages and for the default queue (stem). */
int trace_parse(struct trace *t, const char *name, const char *data, size_t len,
                struct sched_errbuf *eb);
/* The length (1 to 4) of the well-formed UTF-8 sequence at s, 0 when s holds none there;
 * whether a NUL-terminated string is all UTF-8. Job ids must be (--events is JSON). */
size_t trace_utf8_seq(const unsigned char *s);
bool trace_utf8_valid(const char *s);
/* Stable sort of all jobs by submit time (then file, then line). */
void trace_sort(struct trace *t);

#endif
