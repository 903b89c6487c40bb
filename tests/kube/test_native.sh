#!/bin/sh
# tests/kube/test_native.sh: `gangsched run` with Kubernetes' own gang API (tests/kube/native.py:
# 1.37 v1beta1 PodGroups, 1.36 v1alpha2 PodGroups, 1.35 v1alpha1 Workloads; 1.37 alpha
# CompositePodGroups in tests/kube/cpg.py) and DRA-only nodes
# (tests/kube/dra.py; AMD's DRA driver in dra_amd.py; quota per DeviceClass in dra_quota.py; shared claims in dra_shared.py; a
# failed Binding's claims unreserved in dra_unreserve.py; container GPUs on DRA devices,
# KEP-5004, in dra_ext.py; claims of a PodGroup, KEP-5729, in dra_pg.py),
# each against a fake API server serving what that release serves, and the integration-test
# workloads of kube-scheduler's scheduler_perf PodGroup configs.
BIN=${BIN:-bin}
export BIN
rc=0
timeout 240 python3 tests/kube/native.py || rc=1
timeout 180 python3 tests/kube/cpg.py || rc=1
timeout 180 python3 tests/kube/dra.py || rc=1
timeout 120 python3 tests/kube/dra_amd.py || rc=1
timeout 120 python3 tests/kube/dra_quota.py || rc=1
timeout 120 python3 tests/kube/dra_shared.py || rc=1
timeout 120 python3 tests/kube/dra_unreserve.py || rc=1
timeout 120 python3 tests/kube/dra_ext.py || rc=1
timeout 180 python3 tests/kube/dra_pg.py || rc=1
# upstream's scheduler_perf PodGroup scenarios, integration-test sizes (make perf-podgroup: all)
timeout 300 python3 tests/bench/podgroup_perf.py --label integration-test || rc=1
exit $rc
