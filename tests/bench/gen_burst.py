#!/usr/bin/env python3
"""tests/bench/gen_burst.py: a deep-backlog burst trace for the scaling benchmarks.

Writes N gangs (default 10,000) of mixed shapes, 1 to 64 pods of 1, 2, 4 or 8 GPUs, all
submitted within the first seconds (arrival = row order, one every 10 ms) with long run times
(1 to 24 hours), so that most of them stay pending for the whole run: what a GPU cluster with
a backlog of days looks like to the scheduler. Deterministic for a given --seed.

Usage: gen_burst.py [--gangs N] [--seed S] > burst.csv
"""
import argparse
import random
import sys

PODS = [1, 1, 1, 2, 2, 4, 4, 8, 8, 16, 32, 64]
GPUS_PER_POD = [1, 2, 4, 8, 8, 8]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gangs", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    out = sys.stdout
    out.write("job_id,submission_time,duration,num_gpu,gpus_per_pod\n")
    for i in range(a.gangs):
        pods = rng.choice(PODS)
        gpp = rng.choice(GPUS_PER_POD) if pods < 64 else 8
        dur = rng.randint(3600, 86400)
        out.write("burst-%05d,%.2f,%d,%d,%d\n" % (i, i * 0.01, dur, pods * gpp, gpp))


if __name__ == "__main__":
    main()
