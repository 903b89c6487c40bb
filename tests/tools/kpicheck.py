#!/usr/bin/env python3
"""tests/tools/kpicheck.py: recomputes a simulation's KPIs from its event log, independently of
the simulator, and compares them with its --json output.

    kpicheck.py EVENTS.jsonl OUT.json

Owns: the definitions of docs/metrics.md, written a second time from the events alone (submit,
start, finish, evict, reject and the `cluster` event): per policy `jobs`, `started`,
`completed`, `rejected`, the queue-time mean and nearest-rank percentiles (first start minus
first submission, over the jobs that started and were not rejected later), `mean_jct_s` and `p95_jct_s` (finish minus first submission),
`gpu_utilization` (busy GPU-seconds of every run over cluster GPUs x makespan, the makespan
from the first submission to the last finish), `makespan_s`, `multinode_jobs` and
`multinode_mean_queue_s` (gangs of more GPUs than the largest node), `preemptions` (evictions
that are not failure teardowns), and per queue `jobs`, `mean_queue_s` and `p95_queue_s`. The
figures that need what the log does not say (islands, racks, quota) are not checked here.
Exit 0 when every figure matches (relative 1e-9, absolute 1e-6), 1 with one line per
difference, 2 on unreadable input.
"""
import json
import math
import sys

FAILURE_REASONS = ("node failure:", "start failure:")


def pct(sorted_v, p):
    """Nearest rank, as the simulator's: the ceil(p x n)-th smallest."""
    if not sorted_v:
        return 0.0
    k = math.ceil(p * len(sorted_v))
    return sorted_v[max(k, 1) - 1]


def mean(v):
    return sum(v) / len(v) if v else 0.0


def replay(events):
    """Per policy, the figures recomputed from its events."""
    out = {}
    by_policy = {}
    for e in events:
        by_policy.setdefault(e["policy"], []).append(e)
    for pol, evs in by_policy.items():
        nodes = next(e["nodes"] for e in evs if e["type"] == "cluster")
        total_gpus = sum(n["gpus"] for n in nodes)
        max_node = max((n["gpus"] for n in nodes), default=0)
        sub, queue, gpus, first_start, end, running = {}, {}, {}, {}, {}, {}
        held, rejected, preemptions = {}, set(), 0  # held: GPU-seconds of each job's runs
        for e in evs:
            t, typ = e["t"], e["type"]
            if typ == "submit":
                if e["job"] not in sub:
                    sub[e["job"]], queue[e["job"]], gpus[e["job"]] = t, e["queue"], e["gpus"]
            elif typ == "start":
                first_start.setdefault(e["job"], t)
                running[e["job"]] = t
            elif typ in ("finish", "evict"):
                held[e["job"]] = held.get(e["job"], 0.0) + gpus[e["job"]] * (t - running.pop(e["job"]))
                if typ == "finish":
                    end[e["job"]] = t
                elif not e["reason"].startswith(FAILURE_REASONS):
                    preemptions += 1
            elif typ == "reject":
                rejected.add(e["job"])
        t0 = min(sub.values(), default=0.0)
        t_end = max(end.values(), default=t0)
        # a job that failed for good after it ran is rejected, not started: metrics.md counts
        # neither its queue time nor the GPU time it held
        q = {j: first_start[j] - sub[j] for j in first_start if j not in rejected}
        busy = sum(v for j, v in held.items() if j not in rejected)
        jct = sorted(end[j] - sub[j] for j in end)
        qs = sorted(q.values())
        multi = [q[j] for j in q if gpus[j] > max_node]
        makespan = t_end - t0
        fig = {
            "jobs": len(sub), "started": len(q), "completed": len(end), "rejected": len(rejected),
            "mean_queue_s": mean(qs), "p50_queue_s": pct(qs, 0.50), "p95_queue_s": pct(qs, 0.95),
            "p99_queue_s": pct(qs, 0.99), "mean_jct_s": mean(jct), "p95_jct_s": pct(jct, 0.95),
            "makespan_s": makespan,
            "gpu_utilization": busy / (total_gpus * makespan) if total_gpus and makespan else 0.0,
            "multinode_jobs": len(multi), "multinode_mean_queue_s": mean(multi),
            "preemptions": preemptions, "per_queue": {},
        }
        for name in sorted(set(queue.values())):
            v = sorted(q[j] for j in q if queue[j] == name)
            fig["per_queue"][name] = {"jobs": sum(1 for j in sub if queue[j] == name),
                                      "mean_queue_s": mean(v), "p95_queue_s": pct(v, 0.95)}
        out[pol] = fig
    return out


def same(a, b):
    return abs(a - b) <= max(1e-6, 1e-9 * max(abs(a), abs(b)))


def compare(mine, theirs, where, bad):
    for key, want in mine.items():
        if isinstance(want, dict):
            for sub_key, sub_want in want.items():
                compare(sub_want, theirs.get(key, {}).get(sub_key, {}), f"{where}.{key}.{sub_key}", bad)
        elif key not in theirs:
            bad.append(f"{where}.{key}: missing from the JSON")
        elif not same(float(want), float(theirs[key])):
            bad.append(f"{where}.{key}: the events give {want!r}, the JSON says {theirs[key]!r}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: kpicheck.py EVENTS.jsonl OUT.json")
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
        with open(sys.argv[2], encoding="utf-8") as f:
            pols = {p["name"]: p for p in json.load(f)["policies"]}
    except (OSError, ValueError, KeyError) as err:
        print(f"kpicheck: {err}", file=sys.stderr)
        return 2
    bad = []
    mine = replay(events)
    if set(mine) != set(pols):
        bad.append(f"policies: the events have {sorted(mine)}, the JSON {sorted(pols)}")
    for pol in sorted(set(mine) & set(pols)):
        compare(mine[pol], pols[pol], pol, bad)
    for line in bad:
        print(f"kpicheck: {line}", file=sys.stderr)
    n = sum(1 for _ in mine.values())
    if not bad:
        print(f"kpicheck: {len(events)} events, {n} policies: every figure matches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
