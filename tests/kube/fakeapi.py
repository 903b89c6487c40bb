#!/usr/bin/env python3
"""tests/kube/fakeapi.py: a fake Kubernetes API server for tests and benchmarks (stdlib only).

Owns: an in-memory object store with a global resourceVersion counter and a bounded watch
history; the REST surface of the resources in RESOURCES (get, list, watch, create, update,
patch, delete) with the subresources a scheduler uses (pods/binding, pods/status,
pods/eviction, <crd>/status); discovery and a minimal OpenAPI v3 document so that the real
kubectl works with default validation; TLS with a self-signed CA made by the openssl command,
bearer-token authentication; an optional simulated kubelet; fault injection and counters under
/_fake/. Listens on 127.0.0.1 only.

Must not: talk to anything but loopback clients, or pretend to validate objects against
schemas (it checks names, namespaces, kinds and a few rules the scheduler depends on; custom
objects are pruned by their CRD's structural schema, as kube-apiserver does, not validated).
Custom resources are served only while a test has installed their CRD.

Usage and the fault API: docs/test-api-server.md.
"""

import argparse
import base64
import bisect
import copy
import datetime
import email.utils
import heapq
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# --------------------------------------------------------------------------------------------
# The resource table: adding a resource is one line.


class Res:
    def __init__(self, group, version, plural, kind, namespaced, short=(), status=False,
                 crd=False, subs=(), fields=None, categories=(), gated=False):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.gated = gated  # built-in but served only with --serve-api (alpha/beta versions)
        self.namespaced, self.short, self.status, self.crd = namespaced, list(short), status, crd
        self.subs = list(subs)  # extra subresources besides status
        self.categories = list(categories)
        # field selectors: name -> (dotted path, value when absent)
        self.fields = {"metadata.name": ("metadata.name", ""),
                       "metadata.namespace": ("metadata.namespace", "")}
        self.fields.update(fields or {})
        self.api_version = f"{group}/{version}" if group else version
        self.key = (group, plural)
        self.qualified = f"{plural}.{group}" if group else plural


POD_FIELDS = {f: (f, "") for f in ("spec.nodeName", "spec.schedulerName", "spec.restartPolicy",
                                    "spec.serviceAccountName", "status.phase", "status.podIP",
                                    "status.nominatedNodeName")}
POD_FIELDS["spec.hostNetwork"] = ("spec.hostNetwork", "false")
EVENT_FIELDS = {f"involvedObject.{k}": (f"involvedObject.{k}", "") for k in
                ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")}
EVENT_FIELDS.update({f: (f, "") for f in ("reason", "reportingComponent", "type", "source")})

RESOURCES = [
    Res("", "v1", "pods", "Pod", True, ["po"], status=True, subs=["binding", "eviction"],
        fields=POD_FIELDS, categories=["all"]),
    Res("", "v1", "nodes", "Node", False, ["no"], status=True,
        fields={"spec.unschedulable": ("spec.unschedulable", "false")}),
    Res("", "v1", "namespaces", "Namespace", False, ["ns"], status=True,
        fields={"status.phase": ("status.phase", "")}),
    Res("", "v1", "events", "Event", True, ["ev"], fields=EVENT_FIELDS),
    Res("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    Res("", "v1", "secrets", "Secret", True, fields={"type": ("type", "")}),
    Res("", "v1", "services", "Service", True, ["svc"], status=True, categories=["all"]),
    Res("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
    Res("events.k8s.io", "v1", "events", "Event", True, ["ev"]),
    Res("coordination.k8s.io", "v1", "leases", "Lease", True),
    Res("apps", "v1", "deployments", "Deployment", True, ["deploy"], status=True,
        categories=["all"]),
    Res("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    Res("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    Res("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    Res("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    Res("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
        False, ["crd", "crds"], status=True),
    Res("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"],
        status=True),
    Res("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, ["pg", "pgs"],
        status=True, crd=True),
    # Volcano's PodGroup CRD has no status subresource: volcano writes status with a PUT.
    Res("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True,
        ["pg", "podgroup-v1beta1"], crd=True),
    Res("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ["q", "queue-v1beta1"],
        status=True, crd=True),
    # ---- issue 17: Kubernetes' own gang API and DRA (docs/test-api-server.md) ----------------
    # scheduling.k8s.io: v1 (PriorityClass) always, as kube-apiserver serves it; the Workload
    # and PodGroup versions only with --serve-api GROUP/VERSION, as a real server serves them
    # only with --runtime-config and the GenericWorkload gate (1.35 v1alpha1 Workload, 1.36
    # v1alpha2, 1.37 v1beta1 and v1alpha3). Versions of one resource share one store (as etcd does); a test
    # serves one version at a time, so no conversion is done. PodGroups have /status.
    Res("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    Res("scheduling.k8s.io", "v1alpha1", "workloads", "Workload", True, gated=True),
    Res("scheduling.k8s.io", "v1alpha2", "workloads", "Workload", True, gated=True),
    Res("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True, status=True, gated=True),
    Res("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True, gated=True),
    Res("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True, status=True, gated=True),
    Res("scheduling.k8s.io", "v1alpha3", "workloads", "Workload", True, gated=True),
    Res("scheduling.k8s.io", "v1alpha3", "podgroups", "PodGroup", True, status=True, gated=True),
    # resource.k8s.io/v1 (DRA, GA since 1.34): served by default.
    Res("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    Res("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False,
        fields={"spec.nodeName": ("spec.nodeName", ""), "spec.driver": ("spec.driver", "")}),
    Res("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, status=True),
    Res("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    # NVIDIA's ComputeDomain (k8s-dra-driver-gpu, api/nvidia.com/resource/v1beta1): a CRD, so
    # served only while a test has installed computedomains.resource.nvidia.com; status
    # subresource as the upstream CRD declares (+kubebuilder:subresource:status).
    Res("resource.nvidia.com", "v1beta1", "computedomains", "ComputeDomain", True, status=True,
        crd=True),
    # ---- end issue 17 ---------------------------------------------------------------------------
]
SERVED_GATED = set()  # "group/version" given with --serve-api
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KEY = {r.key: r for r in RESOURCES}
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
CLAIMS_KEY = ("resource.k8s.io", "resourceclaims")
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
# The served versions of the installed CustomResourceDefinitions: (group, plural) ->
# {version: openAPIV3Schema or None}. A resource of RESOURCES marked crd=True is served (its
# paths, discovery, OpenAPI) only while a CRD for it is stored with that version served, as
# kube-apiserver's apiextensions handler serves only established CRDs: before, and after the
# CRD is deleted, its paths are 404 and discovery does not list them. Kept by refresh_crds.
CRDS = {}
DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"]
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # generateName suffixes, as the real server's
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
ANNOT_START = "fake.gangsched.io/start"
ANNOT_RUN = "fake.gangsched.io/run-seconds"
ANNOT_EXIT = "fake.gangsched.io/exit-code"

# --------------------------------------------------------------------------------------------
# Errors as Status objects.

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
           413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
           429: "TooManyRequests",
           500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


class ApiError(Exception):
    def __init__(self, code, message, reason=None, details=None, headers=None):
        super().__init__(message)
        self.code, self.message = code, message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details, self.headers = details, headers or {}

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            s["details"] = self.details
        return s



# $FAKEAPI_REQUEST_LOG: every request appended there as "METHOD TARGET USER-AGENT" (one line,
# tab-separated), e.g. for tests/kube/rbac_check.py, which compares the requests gangsched made
# with deploy/rbac.yaml. Generic: no knowledge of who reads it.
def log_request(method, target, agent):
    path = os.environ.get("FAKEAPI_REQUEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s\t%s\t%s\n" % (method, target, agent.replace("\t", " ")))

def not_found(res, name):
    return ApiError(404, f'{res.qualified} "{name}" not found',
                    details={"name": name, "group": res.group, "kind": res.plural})


def conflict(res, name, why, sub=""):
    what = res.qualified + (f"/{sub}" if sub else "")
    return ApiError(409, f'Operation cannot be fulfilled on {what} "{name}": {why}',
                    details={"name": name, "group": res.group, "kind": res.plural})


MODIFIED_MSG = ("the object has been modified; please apply your changes to the latest "
                "version and try again")


def success_status(code):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": code}


def dumps(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


_NOW_TEXT = (None, "")  # (Unix second, its RFC 3339 text): one format per second, not per call


def now_time(delta=0.0):
    global _NOW_TEXT
    sec = int(time.time() + delta)
    last = _NOW_TEXT
    if last[0] == sec:
        return last[1]
    text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec))
    _NOW_TEXT = (sec, text)
    return text


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dig(obj, path, default=None):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return default
        obj = obj[part]
    return obj

# --------------------------------------------------------------------------------------------
# Selectors.


def split_outside_parens(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [t.strip() for t in out if t.strip()]


SET_RE = re.compile(r"^(\S+)\s+(in|notin)\s+\((.*)\)$")
KEY_RE = re.compile(r"^([a-z0-9A-Z.\-/_]+)$")


def parse_label_selector(s):
    reqs = []
    for term in split_outside_parens(s or ""):
        m = SET_RE.match(term)
        if m:
            vals = {v.strip() for v in m.group(3).split(",") if v.strip()}
            reqs.append((m.group(1), m.group(2), vals))
            continue
        for op in ("!=", "==", "="):
            if op in term:
                k, v = term.split(op, 1)
                reqs.append((k.strip(), "!=" if op == "!=" else "=", v.strip()))
                break
        else:
            if term.startswith("!"):
                reqs.append((term[1:].strip(), "!exists", None))
            else:
                reqs.append((term, "exists", None))
    for k, _, _ in reqs:
        if not KEY_RE.match(k):
            raise ApiError(400, f"unable to parse requirement: invalid label key {k!r}")
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for k, op, v in reqs:
        have = labels.get(k)
        if op == "=" and have != v:
            return False
        if op == "!=" and have == v:
            return False
        if op == "in" and have not in v:
            return False
        if op == "notin" and have in v:
            return False
        if op == "exists" and k not in labels:
            return False
        if op == "!exists" and k in labels:
            return False
    return True


def selector_object_matches(sel, labels):
    """A metav1.LabelSelector (matchLabels, matchExpressions); an empty one matches all."""
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def parse_field_selector(res, s):
    reqs = []
    for term in split_outside_parens(s or ""):
        for op in ("!=", "==", "="):
            if op in term:
                k, v = term.split(op, 1)
                k = k.strip()
                if k not in res.fields:
                    raise ApiError(400, f'field label not supported: {k}')
                reqs.append((res.fields[k], op != "!=", v.strip()))
                break
        else:
            raise ApiError(400, f"invalid selector: '{s}'; can't understand '{term}'")
    return reqs


def field_value(obj, spec):
    path, absent = spec
    v = dig(obj, path)
    if v is None:
        return absent
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def fields_match(reqs, obj):
    for spec, eq, v in reqs:
        if (field_value(obj, spec) == v) != eq:
            return False
    return True

# --------------------------------------------------------------------------------------------
# Patches: JSON merge (RFC 7386), strategic merge (the list keys kubectl apply needs),
# JSON patch (RFC 6902).


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "env": "name", "volumes": "name", "volumeMounts": "mountPath",
              "volumeDevices": "devicePath", "imagePullSecrets": "name", "conditions": "type",
              "ownerReferences": "uid", "hostAliases": "ip", "resourceClaims": "name",
              "schedulingGates": "name", "addresses": "type", "ports": None,
              # ResourceClaimStatus.reservedFor: patchMergeKey uid, patchStrategy merge (so
              # kube-scheduler's Unreserve deletes one entry by {"$patch": "delete", "uid": ...})
              "reservedFor": "uid"}
PRIMITIVE_SETS = {"finalizers"}


def strip_directives(v):
    if isinstance(v, dict):
        return {k: strip_directives(x) for k, x in v.items()
                if not k.startswith("$")}
    if isinstance(v, list):
        return [strip_directives(x) for x in v]
    return v


def strategic_merge(orig, patch):
    if not isinstance(patch, dict):
        return strip_directives(patch)
    if patch.get("$patch") == "replace":
        return strip_directives(patch)
    result = dict(orig) if isinstance(orig, dict) else {}
    orders = {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            result[field] = [x for x in result.get(field) or [] if x not in v]
            continue
        if k.startswith("$"):
            continue
        if v is None:
            result.pop(k, None)
        elif isinstance(v, dict):
            if v.get("$patch") == "delete":
                result.pop(k, None)
            else:
                result[k] = strategic_merge(result.get(k), v)
        elif isinstance(v, list) and k in MERGE_KEYS:
            result[k] = merge_list(k, result.get(k) or [], v)
        elif isinstance(v, list) and k in PRIMITIVE_SETS:
            cur = list(result.get(k) or [])
            result[k] = cur + [x for x in v if x not in cur]
        else:
            result[k] = strip_directives(v)
    for field, order in orders.items():
        result[field] = reorder(field, result.get(field) or [], order)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def list_key(field, items):
    key = MERGE_KEYS[field]
    if key is None:  # ports: containerPort in containers, port in services
        key = "containerPort" if any(isinstance(i, dict) and "containerPort" in i
                                     for i in items) else "port"
    return key


def merge_list(field, cur, patch):
    if not all(isinstance(x, dict) for x in patch) or not all(isinstance(x, dict) for x in cur):
        return strip_directives(patch)
    if any(x.get("$patch") == "replace" for x in patch):
        return strip_directives([x for x in patch if x.get("$patch") != "replace"])
    key = list_key(field, list(cur) + list(patch))
    result = list(cur)
    for pe in patch:
        idx = next((i for i, e in enumerate(result) if e.get(key) == pe.get(key)), None)
        if pe.get("$patch") == "delete":
            if idx is not None:
                del result[idx]
        elif idx is not None:
            result[idx] = strategic_merge(result[idx], pe)
        else:
            result.append(strip_directives(pe))
    return result


def reorder(field, items, order):
    if not items or not all(isinstance(x, dict) for x in items):
        return [x for x in order if x in items] + [x for x in items if x not in order]
    key = list_key(field, items)
    want = [o.get(key) for o in order if isinstance(o, dict)]
    ranked = sorted(items, key=lambda e: want.index(e.get(key)) if e.get(key) in want
                    else len(want))
    return ranked


# JSON patch (RFC 6902) as kube-apiserver applies it. handlers/patch.go (applyJSPatch) decodes
# the body with gopkg.in/evanphx/json-patch.v4 (v4.12.0; Kubernetes stays on v4 on purpose,
# hack/unwanted-dependencies.json) and:
# - a body that is not a JSON list of objects: 400 BadRequest (DecodePatch);
# - more than 10,000 operations: 413 RequestEntityTooLarge (maxJSONPatchOperations);
# - any error of Patch.Apply: NewGenericServerResponse(422, ...) with isUnexpectedResponse
#   false, i.e. 422, reason Invalid, the fixed message below and empty details: the library's
#   own text does not reach the client (we print it on stderr for whoever debugs a test).
# The library's rules, copied here:
# - an unknown or missing "op" is an error ("Unexpected kind"), so 422 like the rest;
# - an array index is what strconv.Atoi reads (an optional sign and decimal digits);
#   SupportNegativeIndices is on: a negative index counts from the end. add takes 0..len or
#   "-" (append) or -(len+1)..-1; get, remove, replace, test, move and copy take
#   -len..len-1. Anything else is refused, never clamped (Python's list.insert clamps);
# - a missing object member: remove refuses; replace sets it (v4's partialDoc.get never fails,
#   so replace works as add: the RFC says it must fail, v5 does, v4 does not, and Kubernetes
#   keeps v4 for exactly that); test passes only when the value is null; copy copies null;
#   move refuses (its remove fails);
# - an op without "value" uses null; the empty path may be replaced (by an object) or tested;
# - a path not starting with "/": v4 silently drops its first segment; we refuse it (422), as
#   a client sending one has a bug.
JSON_PATCH_MSG = "the server rejected our request due to an error in our request"
JSON_PATCH_MAX_OPS = 10000
_ATOI = re.compile(r"[+-]?[0-9]+")


class _PatchFailed(Exception):
    pass


def pointer(path):
    if path == "":
        return []
    if not isinstance(path, str) or not path.startswith("/"):
        raise _PatchFailed(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(key, n):
    """an array index by evanphx's rules for an array of n elements (n+1 for add)."""
    if not _ATOI.fullmatch(key):
        raise _PatchFailed(f"value was not a proper array index: {key!r}")
    idx = int(key)
    if idx < 0:
        idx += n
    if not 0 <= idx < n:
        raise _PatchFailed(f"Unable to access invalid index: {key}")
    return idx


def _json_kind(v):
    """the JSON type name encoding/json's UnmarshalTypeError gives."""
    if isinstance(v, bool):
        return "bool"
    return {dict: "object", list: "array", str: "string"}.get(type(v), "number")


def _json_equal(a, b):
    """JSON equality: true is not 1, and 1 is not 1.0 (v4 compares a scalar's bytes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


def json_patch(doc, ops):
    if ops is None:  # encoding/json reads null into a nil (empty) Patch
        ops = []
    bad = ops if not isinstance(ops, list) else \
        next((o for o in ops if o is not None and not isinstance(o, dict)), None)
    if bad is not None or not isinstance(ops, list):
        raise ApiError(400, f"json: cannot unmarshal {_json_kind(bad)} into Go value of type "
                            f"jsonpatch.{'Patch' if bad is ops else 'Operation'}")
    if len(ops) > JSON_PATCH_MAX_OPS:
        raise ApiError(413, f"Request entity too large: The allowed maximum operations in a "
                            f"JSON patch is {JSON_PATCH_MAX_OPS}, got {len(ops)}")
    root = [copy.deepcopy(doc)]  # a box, so that replacing the empty path is one assignment

    def parent(path):
        """the container holding path's last segment, and that segment."""
        parts = pointer(path)
        if not parts:
            raise _PatchFailed("doc is missing path: \"\"")
        node = root[0]
        for p in parts[:-1]:
            if isinstance(node, list):
                node = node[_index(p, len(node))]
            elif isinstance(node, dict) and p in node:
                node = node[p]
            else:
                raise _PatchFailed(f"doc is missing path: {path}")
            if not isinstance(node, (dict, list)):
                raise _PatchFailed(f"doc is missing path: {path}")
        return node, parts[-1]

    def get(path):
        if path == "":
            return root[0]
        node, last = parent(path)
        if isinstance(node, list):
            return node[_index(last, len(node))]
        return node.get(last)  # a missing member reads as null

    def add(path, value):
        node, last = parent(path)
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else _index(last, len(node) + 1), value)
        else:
            node[last] = value

    def remove(path):
        node, last = parent(path)
        if isinstance(node, list):
            return node.pop(_index(last, len(node)))
        if last not in node:
            raise _PatchFailed(f"Unable to remove nonexistent key: {last}")
        return node.pop(last)

    def replace(path, value):
        if path == "":
            if not isinstance(value, (dict, list)):
                raise _PatchFailed("replace operation value must be object or array")
            root[0] = value
            return
        node, last = parent(path)
        if isinstance(node, list):
            node[_index(last, len(node))] = value
        else:
            node[last] = value  # v4: a missing member is set, not refused

    for op in ops:
        op = op or {}
        kind, path, value = op.get("op"), op.get("path"), copy.deepcopy(op.get("value"))
        try:
            if path is None and kind in ("add", "remove", "replace", "move", "copy", "test"):
                raise _PatchFailed("operation missing path field")
            if kind == "add":
                add(path, value)
            elif kind == "remove":
                remove(path)
            elif kind == "replace":
                replace(path, value)
            elif kind == "move":
                add(path, remove(op.get("from")))
            elif kind == "copy":
                add(path, copy.deepcopy(get(op.get("from"))))
            elif kind == "test":
                if not _json_equal(get(path), value):
                    raise _PatchFailed(f"testing value {path} failed")
            else:
                raise _PatchFailed(f"Unexpected kind: {kind if isinstance(kind, str) else '?'}")
        except (_PatchFailed, TypeError) as e:
            sys.stderr.write(f"fakeapi: json patch {kind} {path}: {e}\n")
            raise ApiError(422, JSON_PATCH_MSG, details={})
    return root[0]

# --------------------------------------------------------------------------------------------
# Counters and fault injection.


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.c = {"requests": 0, "by_verb": {}, "by_resource": {}, "codes": {},
                      "binds": 0, "bind_conflicts": 0, "conflicts": 0, "already_exists": 0,
                      "evictions": 0, "evictions_blocked": 0, "watches_started": 0,
                      "watches_active": 0, "watch_stalls": 0, "watch_events": 0, "watch_expired": 0,
                      "faults_fired": 0, "first_bind_time": None, "last_bind_time": None,
                      "pruned": 0, "pruned_fields": [], "held": 0, "foreign_binds": 0,
                      "bound_pods": 0, "pod_deletes": 0, "pod_deletes_uid": 0,
                      "answers_lost": 0}
            self.bound_uids = set()

    def pruned(self, what, fields):
        """Fields dropped by structural pruning: counted, the last 100 kept ("OBJ: .a.b")."""
        with self.lock:
            self.c["pruned"] += len(fields)
            self.c["pruned_fields"].extend(f"{what}: {f}" for f in fields)
            del self.c["pruned_fields"][:-100]

    def add(self, name, n=1):
        with self.lock:
            self.c[name] += n

    def request(self, verb, what):
        with self.lock:
            self.c["requests"] += 1
            self.c["by_verb"][verb] = self.c["by_verb"].get(verb, 0) + 1
            key = f"{verb} {what}"
            self.c["by_resource"][key] = self.c["by_resource"].get(key, 0) + 1

    def bound(self, uid):
        """A pod was bound: counts it (and the distinct pods bound, by uid) and keeps the
        wall-clock time (Unix seconds) of the first and the last bind, for benchmarks."""
        t = time.time()
        with self.lock:
            self.c["binds"] += 1
            if uid not in self.bound_uids:
                self.bound_uids.add(uid)
                self.c["bound_pods"] += 1
            if self.c["first_bind_time"] is None:
                self.c["first_bind_time"] = t
            self.c["last_bind_time"] = t

    def code(self, code):
        with self.lock:
            k = str(code)
            self.c["codes"][k] = self.c["codes"].get(k, 0) + 1

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps(self.c))


FAULT_TYPES = {"error", "delay", "drop-watch", "gone-watch", "stall-watch", "conflict", "hold",
               "foreign-bind", "lose-answer"}
FAULT_NUM = {"code": int, "count": int, "retryAfter": int, "ms": int, "afterEvents": int,
             "afterSeconds": float}


def parse_fault_spec(spec):
    """'error:code=500,count=3,path=/pods;delay:ms=50' or JSON (one rule or a list)."""
    spec = spec.strip()
    if spec.startswith("[") or spec.startswith("{"):
        rules = json.loads(spec)
        return rules if isinstance(rules, list) else [rules]
    rules = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        kind, _, rest = part.partition(":")
        rule = {"type": kind.strip()}
        for kv in filter(None, (x.strip() for x in rest.split(","))):
            k, _, v = kv.partition("=")
            rule[k.strip()] = FAULT_NUM.get(k.strip(), str)(v.strip())
        rules.append(rule)
    return rules


class Faults:
    def __init__(self, stats):
        self.lock = threading.Lock()
        self.rules = []
        self.stats = stats

    def add(self, rules):
        clean = []
        for r in rules:
            if not isinstance(r, dict) or r.get("type") not in FAULT_TYPES:
                raise ApiError(400, f"bad fault rule {r!r}: type must be one of "
                                    f"{sorted(FAULT_TYPES)}")
            r = dict(r)
            r.setdefault("count", 1)
            if r["type"] == "error":
                r.setdefault("code", 500)
            for k, conv in FAULT_NUM.items():
                if k in r:
                    try:
                        r[k] = conv(r[k])
                    except (TypeError, ValueError):
                        raise ApiError(400, f"bad fault rule {r!r}: {k} must be a number")
            clean.append(r)
        with self.lock:
            self.rules.extend(clean)

    def clear(self):
        with self.lock:
            self.rules = []

    def list(self):
        with self.lock:
            return [dict(r) for r in self.rules]

    def take(self, kind, verb, path):
        """The first matching rule of this kind (its count is spent), or None."""
        with self.lock:
            for r in self.rules:
                if r["type"] != kind:
                    continue
                if r.get("verb") and r["verb"] != verb:
                    continue
                if r.get("path") and r["path"] not in path:
                    continue
                if r["count"] > 0:
                    r["count"] -= 1
                    if r["count"] == 0:
                        self.rules.remove(r)
                self.stats.add("faults_fired")
                return dict(r)
        return None

# --------------------------------------------------------------------------------------------
# The store.


class Entry:
    """A stored object: the dict (never mutated once stored), its JSON bytes and the values of
    its selectable fields read so far (spec -> value, filled on first use). kube-apiserver's
    watch cache likewise keeps each object's field set beside it (storeElement.Fields, from the
    resource's GetAttrs when stored), so a field selector costs a lookup per object, not a walk
    of the object: in Python the walk was 5-7 µs a pod, seconds per list of 500,000."""
    __slots__ = ("obj", "raw", "fv")

    def __init__(self, obj):
        self.obj, self.raw, self.fv = obj, dumps(obj), None

    def field(self, spec):
        fv = self.fv
        if fv is None:
            fv = self.fv = {}
        v = fv.get(spec)
        if v is None:
            v = fv[spec] = field_value(self.obj, spec)
        return v

    def fields_match(self, reqs):
        fv = self.fv or {}
        for spec, eq, v in reqs:
            x = fv.get(spec)
            if ((self.field(spec) if x is None else x) == v) != eq:
                return False
        return True


class Event:
    __slots__ = ("rv", "key", "ns", "type", "obj", "old", "line")

    def __init__(self, rv, key, ns, etype, obj, old, raw):
        self.rv, self.key, self.ns, self.type, self.obj, self.old = rv, key, ns, etype, obj, old
        self.line = b'{"type":"' + etype.encode() + b'","object":' + raw + b"}\n"


class Store:
    def __init__(self, history, stats, faults):
        self.lock = threading.RLock()
        # One condition per resource, so that a write wakes only the watches of its resource
        # (with one shared condition every bind woke the node and PodGroup watches too).
        self.conds = {r.key: threading.Condition(self.lock) for r in RESOURCES}
        self.last_rv = {}  # resource key -> version of its last event
        # Resource keys that have had an event since this server started (kept across resets).
        # Copies kube-apiserver's watch cache: its Cacher.dispatchEvents (k8s.io/apiserver
        # pkg/storage/cacher/cacher.go, one cacher per resource type) never sends a BOOKMARK
        # while its lastProcessedResourceVersion is 0 ("Never send a bookmark event if we did
        # not see an event here"), so watches of a type nobody wrote since the start get none.
        self.evented = set()
        self.history_size = max(10, history)
        self.stats, self.faults = stats, faults
        self.stopping = False
        self.kubelet = None
        self.reset()

    def reset(self):
        with self.lock:
            self.objects = {r.key: {} for r in RESOURCES}
            self.sorted_keys = {}
            self.rv = getattr(self, "rv", 0)
            self.history, self.history_rvs = [], []
            self.compacted = self.rv  # watches from an older version get 410
            refresh_crds(self.objects[CRD_KEY])
            self.expire_watches()
            for ns in DEFAULT_NAMESPACES:
                self.create(BY_KEY[("", "namespaces")], None,
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            for name, (value, text) in SYSTEM_PRIORITY_CLASSES.items():
                self.create(BY_KEY[PC_KEY], None,
                            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                             "metadata": {"name": name}, "value": value, "description": text})

    def expire_watches(self):
        """Every open watch wakes and sees its version expired. Caller holds the lock."""
        for r in RESOURCES:
            self.last_rv[r.key] = self.rv
        self.notify_all()

    def notify_all(self):
        """Wakes every watch. Caller holds the lock."""
        for c in self.conds.values():
            c.notify_all()

    # ---- low level

    def _commit(self, res, ns, name, etype, obj, old):
        """Records a change; obj gets the new resourceVersion. Caller holds the lock."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        entry = Entry(obj)
        table = self.objects[res.key]
        if old is None and etype != "ADDED" and (ns, name) in table:
            old = table[(ns, name)].obj  # the state before, for lists at an older version
        if etype == "DELETED":
            table.pop((ns, name), None)
            self.sorted_keys.pop(res.key, None)
        else:
            if (ns, name) not in table:
                self.sorted_keys.pop(res.key, None)
            table[(ns, name)] = entry
        self.history.append(Event(self.rv, res.key, ns, etype, obj, old, entry.raw))
        self.history_rvs.append(self.rv)
        if len(self.history) > self.history_size + self.history_size // 4:
            cut = len(self.history) - self.history_size
            self.compacted = self.history_rvs[cut - 1]
            del self.history[:cut]
            del self.history_rvs[:cut]
        self.last_rv[res.key] = self.rv
        self.evented.add(res.key)
        self.conds[res.key].notify_all()
        if res.key == CRD_KEY:
            self._crds_changed()
        if res.key in (PODS_KEY, PG_KEY):
            self._podgroup_protection(res, obj, etype)
        if self.kubelet and res.key == ("", "pods"):
            self.kubelet.notice(obj, etype)
        if res.key == ("", "pods"):
            self._resourceclaim_controller(obj, etype)
        elif res.key == CLAIMS_KEY and etype != "DELETED":
            self._sync_claim(ns, name)
        return entry

    # ---- issue 17: kube-controller-manager's resourceclaim controller, the parts a scheduler
    # relies on (KEP-4381 §kube-controller-manager; pkg/controller/resourceclaim/controller.go):
    # a pod's template claims are created as "<pod>-<claim>-<5 chars>", owned by the pod,
    # annotated resource.kubernetes.io/pod-claim-name, and named in
    # pod.status.resourceClaimStatuses (handleClaim); every claim is synced on each event of a
    # pod of its namespace and of itself (_sync_claim, after syncClaim).
    def _resourceclaim_controller(self, pod, etype):
        ns = pod["metadata"].get("namespace")
        if etype != "ADDED":
            for (cns, cname) in self._claims_in(ns):
                self._sync_claim(cns, cname)
            return
        statuses = []
        claims = BY_KEY[CLAIMS_KEY]
        for rc in (pod.get("spec") or {}).get("resourceClaims") or []:
            t = rc.get("resourceClaimTemplateName")
            tmpl = self.objects[("resource.k8s.io", "resourceclaimtemplates")].get((ns, t))
            if not t or not tmpl:
                continue
            name = "%s-%s-%s" % (pod["metadata"]["name"], rc.get("name"), "".join(
                random.choice(NAME_ALPHABET) for _ in range(5)))
            claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                                  "creationTimestamp": now_time(),
                                  "annotations": {"resource.kubernetes.io/pod-claim-name":
                                                  rc.get("name")},
                                  "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                                       "name": pod["metadata"]["name"],
                                                       "uid": pod["metadata"].get("uid"),
                                                       "controller": True,
                                                       "blockOwnerDeletion": True}]},
                     "spec": copy.deepcopy((tmpl.obj.get("spec") or {}).get("spec") or {})}
            self._commit(claims, ns, name, "ADDED", claim, None)
            statuses.append({"name": rc.get("name"), "resourceClaimName": name})
        if statuses:
            pods = BY_KEY[("", "pods")]
            e = self.objects[pods.key].get((ns, pod["metadata"]["name"]))
            new = json.loads(e.raw)
            new.setdefault("status", {})["resourceClaimStatuses"] = statuses
            self._commit(pods, ns, pod["metadata"]["name"], "MODIFIED", new, e.obj)

    def _claims_in(self, ns):
        return [k for k in self.objects[CLAIMS_KEY] if k[0] == ns]

    def _pod_done(self, pod):
        """controller.go isPodDone: terminal phase, or deleted before it was scheduled."""
        return dig(pod, "status.phase") in ("Succeeded", "Failed") or bool(
            pod["metadata"].get("deletionTimestamp") and not dig(pod, "spec.nodeName"))

    _claim_sync_busy = False  # a sync's own writes do not sync again (it loops instead)

    def _sync_claim(self, ns, name):
        """controller.go syncClaim: reservedFor entries of pods gone, replaced (another uid) or
        done are removed; when that removal empties it, a claim carrying the finalizer
        resource.kubernetes.io/delete-protection is deallocated (status.allocation cleared)
        and the finalizer removed, a claim without it keeps its allocation (the transition,
        not an empty list, triggers it: a scheduler's Unreserve emptying reservedFor does
        not); a claim being deleted and reserved for nobody loses its allocation and that
        finalizer; a claim generated for a pod that is gone or done is deleted (the garbage
        collector, and syncClaim for a done pod). Caller holds the lock."""
        if self._claim_sync_busy:
            return
        self._claim_sync_busy = True
        try:
            for _ in range(4):  # each step writes once; the next sees the result
                if not self._sync_claim_step(ns, name):
                    break
        finally:
            self._claim_sync_busy = False

    def _sync_claim_step(self, ns, name):
        claims, pods = BY_KEY[CLAIMS_KEY], BY_KEY[("", "pods")]
        e = self.objects[CLAIMS_KEY].get((ns, name))
        if not e:
            return False
        cur = e.obj
        st = cur.get("status") or {}
        rf = st.get("reservedFor") or []

        def live(r):
            if r.get("resource") != "pods" or r.get("apiGroup"):
                return True  # other consumers are not judged (upstream: an error, retried)
            pe = self.objects[pods.key].get((ns, r.get("name")))
            return bool(pe) and pe.obj["metadata"].get("uid") == r.get("uid") and \
                not self._pod_done(pe.obj)
        valid = [r for r in rf if live(r)]
        meta = cur["metadata"]
        protected = CLAIM_FINALIZER in (meta.get("finalizers") or [])
        new = json.loads(e.raw)
        nst = new.setdefault("status", {})
        if len(valid) < len(rf):
            # "This is not using a patch because we want the update to fail if anything
            # changed in the meantime": the lock is that here. UpdateStatus, then (same
            # commit here) the Update removing the finalizer once the allocation is gone.
            nst["reservedFor"] = valid
            if not valid and protected:
                nst.pop("allocation", None)
        elif protected and meta.get("deletionTimestamp") and not valid:
            nst.pop("allocation", None)  # deleted while allocated and unused
        else:
            new = None
        if new is not None:
            if not nst.get("reservedFor"):
                nst.pop("reservedFor", None)
            if not nst:
                new.pop("status")
            if protected and "allocation" not in nst:
                fins = [f for f in meta["finalizers"] if f != CLAIM_FINALIZER]
                if fins:
                    new["metadata"]["finalizers"] = fins
                else:
                    new["metadata"].pop("finalizers")
            if new != cur:
                if meta.get("deletionTimestamp") and not new["metadata"].get("finalizers"):
                    self._commit(claims, ns, name, "DELETED", new, None)
                    return False
                self._commit(claims, ns, name, "MODIFIED", new, cur)
                return True
        if valid:
            return False
        owner = next((o for o in cur["metadata"].get("ownerReferences") or []
                      if o.get("controller") and o.get("kind") == "Pod"
                      and o.get("apiVersion") == "v1"), None)
        if not owner or cur["metadata"].get("deletionTimestamp"):
            return False
        pe = self.objects[pods.key].get((ns, owner.get("name")))
        if pe and pe.obj["metadata"].get("uid") == owner.get("uid") and \
                not self._pod_done(pe.obj):
            return False
        new = json.loads(e.raw)  # deleted: at once, or terminating until its finalizer goes
        if new["metadata"].get("finalizers"):
            new["metadata"]["deletionTimestamp"] = now_time()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            self._commit(claims, ns, name, "MODIFIED", new, cur)
            return True
        self._commit(claims, ns, name, "DELETED", new, None)
        return False

    def _crds_changed(self):
        """A CRD was written: what is served changes; the objects of a CRD that is gone are
        deleted, as the real server's finalizer does (caller holds the lock)."""
        before = set(CRDS)
        refresh_crds(self.objects[CRD_KEY])
        for r in RESOURCES:
            if r.crd and r.key in before and r.key not in CRDS:
                for (ns, name) in list(self.objects[r.key]):
                    obj = json.loads(self.objects[r.key][(ns, name)].raw)
                    self._commit(r, ns, name, "DELETED", obj, None)

    def compact(self):
        with self.lock:
            self.compacted = self.rv
            self.history, self.history_rvs = [], []
            self.expire_watches()

    def _sorted_keys(self, key):
        """The keys of a table in (namespace, name) order, kept until an object is added or
        removed (sorting 50,000 keys for every page of a paginated list was the slow part).
        Caller holds the lock."""
        keys = self.sorted_keys.get(key)
        if keys is None:
            keys = self.sorted_keys[key] = sorted(self.objects[key])
        return keys

    def _get(self, res, ns, name):
        e = self.objects[res.key].get((ns, name))
        if e is None:
            raise not_found(res, name)
        return e

    def _check_namespace(self, res, ns):
        if res.namespaced and (None, ns) not in self.objects[("", "namespaces")]:
            raise ApiError(404, f'namespaces "{ns}" not found',
                           details={"name": ns, "kind": "namespaces"})

    # ---- reads

    def get(self, res, ns, name):
        with self.lock:
            return self._get(res, ns, name).raw

    def list(self, res, ns, q):
        """A list as kube-apiserver serves it (k8s.io/apiserver storage/cacher, the "Semantics
        for get and list" of the API concepts): resourceVersion "" or "0": now; another version
        with resourceVersionMatch NotOlderThan, or unset and no limit: from the watch cache at
        its latest state (200, whatever the version's age; a version not reached yet: 504 after
        waiting up to 3 s); resourceVersionMatch Exact, or unset with a limit: the state at that
        version (410 once compacted), rebuilt here by undoing the history's later events."""
        check_list_options(q, False)
        lsel = parse_label_selector(q.get("labelSelector"))
        fsel = parse_field_selector(res, q.get("fieldSelector"))
        limit = int(q.get("limit") or 0)
        cont = q.get("continue") or ""
        rv_param = q.get("resourceVersion") or ""
        match = q.get("resourceVersionMatch") or ""
        if rv_param not in ("", "0") and not cont:
            if not rv_param.isdigit():
                raise ApiError(400, f"invalid resourceVersion {rv_param!r}")
            self._wait_for_rv(res, int(rv_param))
        with self.lock:
            list_rv, after, table = self.rv, None, self.objects[res.key]
            keys = None
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()))
                    list_rv, after = int(tok["rv"]), tuple(tok["start"])
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "continue key is not valid")
                if list_rv < self.compacted:
                    raise ApiError(410, "The provided continue parameter is too old to display "
                                        "a consistent list result. You can start a new list "
                                        "without the continue parameter.")
            elif rv_param not in ("", "0") and (match == "Exact" or not match and limit):
                list_rv = int(rv_param)
                if list_rv < self.compacted:
                    raise ApiError(410, "The resourceVersion for the provided list is too old.")
                table = self._table_at(res, list_rv)
                keys = sorted(table)
            if keys is None:
                keys = self._sorted_keys(res.key)
            lo, hi = 0, len(keys)
            if ns is not None:
                lo = bisect.bisect_left(keys, (ns, ""))
                hi = bisect.bisect_left(keys, (ns + "\0", ""))
            if after is not None:
                lo = max(lo, bisect.bisect_right(keys, after))
            items, last, more = [], None, 0
            for i in range(lo, hi):
                k = keys[i]
                e = table[k]
                if lsel and not labels_match(lsel, e.obj["metadata"].get("labels")):
                    continue
                if fsel and not e.fields_match(fsel):
                    continue
                if limit and len(items) == limit:
                    more = hi - i  # an upper bound when selectors are given
                    break
                items.append(e.raw)
                last = k
        meta = {"resourceVersion": str(list_rv)}
        if more:
            meta["continue"] = base64.urlsafe_b64encode(
                dumps({"rv": list_rv, "start": list(last)})).decode()
            meta["remainingItemCount"] = more
        head = {"kind": res.kind + "List", "apiVersion": res.api_version, "metadata": meta}
        return dumps(head)[:-1] + b',"items":[' + b",".join(items) + b"]}"

    def _wait_for_rv(self, res, want):
        """The watch cache's waitUntilFreshAndBlock: up to 3 s for a version not reached."""
        end = time.monotonic() + 3.0
        with self.lock:
            while want > self.rv and time.monotonic() < end:
                # woken by a write of res; polled, as writes of others move self.rv too
                self.conds[res.key].wait(min(0.05, max(0.01, end - time.monotonic())))
            if want > self.rv:
                raise too_large_rv(want, self.rv)

    def _table_at(self, res, rv):
        """res's objects as they were at version rv (rv >= compacted): the table with the
        history's later events of res undone. Caller holds the lock."""
        table = dict(self.objects[res.key])
        for ev in reversed(self.events_since(rv) or []):
            if ev.key != res.key:
                continue
            k = (ev.ns, ev.obj["metadata"]["name"])
            if ev.type == "ADDED" or ev.old is None:
                table.pop(k, None)
            else:
                table[k] = Entry(ev.old)
        return table

    # ---- writes

    def create(self, res, ns, body, q=None):
        q = q or {}
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request was not a JSON object")
        self._check_kind(res, body)
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise ApiError(400, "the namespace of the provided object does not match "
                                    "the namespace sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        with self.lock:
            name = meta.get("name") or ""
            if not name:
                gen = meta.get("generateName")
                if not gen:
                    raise invalid(res, "", "metadata.name",
                                  "name or generateName is required")
                for _ in range(8):  # retried on a clash, as the real server does
                    name = gen + "".join(random.choice(NAME_ALPHABET) for _ in range(5))
                    if (ns, name) not in self.objects[res.key]:
                        break
                meta["name"] = name
            check_name(res, name)
            self._check_namespace(res, ns)
            if (ns, name) in self.objects[res.key]:
                self.stats.add("already_exists")
                raise ApiError(409, f'{res.qualified} "{name}" already exists',
                               reason="AlreadyExists",
                               details={"name": name, "group": res.group, "kind": res.plural})
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                      "managedFields"):
                meta.pop(k, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_time()
            meta["generation"] = 1
            field_validation(res, body, q, self.stats)
            self._admit_create(res, body)
            prepare_create(res, body)
            if q.get("dryRun"):
                body["metadata"]["resourceVersion"] = str(self.rv)
                return dumps(body)
            entry = self._commit(res, ns, name, "ADDED", body, None)
            if res.key == ("events.k8s.io", "events"):
                self._core_event_view(body)
            return entry.raw

    def _admit_create(self, res, body):
        """The admission plugins and create validation of admit_priority, check_priority_class,
        check_lease; PodGroupProtection (the admission plugin stamps
        scheduling.k8s.io/podgroup-protection on every PodGroup at create: its constant read in
        pkg/controller/scheduling/podgroupprotection, the stamping at create seen in envtest
        users' tests, the plugin itself not read; the controller's 1.36 version, read, adds the
        finalizer itself to a group a live pod names: here every version gets it at create;
        that controller is _podgroup_protection, which removes it); the v1beta1 PodGroup
        default disruptionMode {single: {}} (its +default marker). Caller holds the lock."""
        classes = self.objects[PC_KEY]
        if res.key == PODS_KEY:
            admit_priority(res, body, classes)
        elif res.key == PG_KEY:
            if res.version in ("v1beta1", "v1alpha3"):
                admit_priority(res, body, classes)
            if res.version == "v1beta1" and isinstance(body.get("spec"), dict):
                body["spec"].setdefault("disruptionMode", {"single": {}})
            fins = body["metadata"].setdefault("finalizers", [])
            if isinstance(fins, list) and PG_FINALIZER not in fins:
                fins.append(PG_FINALIZER)
        elif res.key == PC_KEY:
            check_priority_class(res, body, None, classes)
        elif res.key == LEASE_KEY:
            check_lease(res, body)

    def _check_update(self, res, cur, new, sub, verb, want_rv):
        """Update rules outside the claim rules of check_update: a PUT needs
        metadata.resourceVersion where the strategy's AllowUnconditionalUpdate is false (Leases:
        pkg/registry/coordination/lease/strategy.go; custom resources), else 422 as the generic
        registry's Update answers (store.go: "must be specified for an update", the uint64 0
        printed as 0x0); admitPod on update keeps a priority the body left out; PriorityClass,
        PodGroup and Lease update validation. Caller holds the lock."""
        name = cur["metadata"]["name"]
        if verb == "update" and (res.crd or res.key == LEASE_KEY) and not want_rv:
            raise invalid(res, name, "metadata.resourceVersion",
                          "Invalid value: 0x0: must be specified for an update")
        if res.key == PODS_KEY and isinstance(new.get("spec"), dict) and \
                new["spec"].get("priority") is None and dig(cur, "spec.priority") is not None:
            new["spec"]["priority"] = cur["spec"]["priority"]
        elif res.key == PC_KEY:
            check_priority_class(res, new, cur, self.objects[PC_KEY])
        elif res.key == PG_KEY and sub is None:
            check_podgroup_update(res, cur, new)
        elif res.key == LEASE_KEY:
            check_lease(res, new)

    def _podgroup_protection(self, res, obj, etype):
        """kube-controller-manager's podgroupprotection controller
        (pkg/controller/scheduling/podgroupprotection, processPodGroup and isBeingUsed): the
        finalizer of a PodGroup being deleted is removed once no pod that is not Succeeded or
        Failed (isPodTerminated) names the group in
        spec.schedulingGroup.podGroupName (a pod being deleted still counts). Called from
        _commit after a PodGroup or pod write; caller holds the lock."""
        ns = obj["metadata"].get("namespace")
        if res.key == PG_KEY and etype == "MODIFIED":
            name = obj["metadata"]["name"]
        elif res.key == PODS_KEY and (etype == "DELETED" or dig(obj, "status.phase") in (
                "Succeeded", "Failed")):
            name = dig(obj, "spec.schedulingGroup.podGroupName")
        else:
            return
        e = self.objects[PG_KEY].get((ns, name)) if name else None
        if e is None or not e.obj["metadata"].get("deletionTimestamp") or \
                PG_FINALIZER not in (e.obj["metadata"].get("finalizers") or []):
            return
        for (pns, _), p in self.objects[PODS_KEY].items():
            if pns == ns and dig(p.obj, "spec.schedulingGroup.podGroupName") == name and \
                    dig(p.obj, "status.phase") not in ("Succeeded", "Failed"):
                return
        new = json.loads(e.raw)
        new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"]
                                         if f != PG_FINALIZER]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        self._commit(BY_PATH[("scheduling.k8s.io", "v1beta1", "podgroups")], ns, name,
                     "MODIFIED" if new["metadata"].get("finalizers") else "DELETED", new, e.obj)

    def _core_event_view(self, ev):
        """kube-apiserver stores one Event and serves it through core/v1 and events.k8s.io/v1
        (pkg/apis/core and events.k8s.io/v1 conversions: regarding -> involvedObject, note ->
        message, reportingController -> reportingComponent and source.component,
        deprecatedCount -> count). Here the two APIs have two tables, so an events.k8s.io Event
        is also stored, converted, in core/v1: `kubectl describe`, which reads core/v1 events by
        involvedObject.uid, then shows it. Caller holds the lock."""
        core = BY_KEY[("", "events")]
        m = ev["metadata"]
        if (m["namespace"], m["name"]) in self.objects[core.key]:
            return
        obj = {"apiVersion": "v1", "kind": "Event",
               "metadata": {k: v for k, v in m.items() if k != "resourceVersion"},
               "involvedObject": ev.get("regarding") or {}, "reason": ev.get("reason"),
               "message": ev.get("note"), "type": ev.get("type"), "action": ev.get("action"),
               "eventTime": ev.get("eventTime"),
               "reportingComponent": ev.get("reportingController"),
               "reportingInstance": ev.get("reportingInstance"),
               "source": {"component": ev.get("reportingController")},
               "count": ev.get("deprecatedCount") or 1,
               "firstTimestamp": ev.get("deprecatedFirstTimestamp"),
               "lastTimestamp": ev.get("deprecatedLastTimestamp")}
        if ev.get("related"):
            obj["related"] = ev["related"]
        self._commit(core, m["namespace"], m["name"], "ADDED", obj, None)

    def _check_kind(self, res, body):
        kind, av = body.get("kind"), body.get("apiVersion")
        if kind and kind != res.kind or av and av != res.api_version:
            raise ApiError(400, f"the API version in the data ({av}) does not match the "
                                f"expected API version ({res.api_version}) or kind {kind} is "
                                f"not {res.kind}")
        body["kind"], body["apiVersion"] = res.kind, res.api_version

    def update(self, res, ns, name, body, sub=None, verb="update", q=None):
        q = q or {}
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request was not a JSON object")
        self._check_kind(res, body)
        meta = body.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise ApiError(400, "the name of the object does not match the name on the URL")
        with self.lock:
            cur = self._get(res, ns, name).obj
            want_rv = meta.get("resourceVersion")
            if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                self.stats.add("conflicts")
                raise conflict(res, name, MODIFIED_MSG)
            if self.faults.take("conflict", verb, f"/{res.plural}/{name}"):
                self.stats.add("conflicts")
                raise conflict(res, name, MODIFIED_MSG)
            new = json.loads(dumps(body))
            if sub == "status":
                status = new.get("status")
                new = json.loads(Entry(cur).raw)
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
            else:
                if res.status:
                    if "status" in cur:
                        new["status"] = cur["status"]
                    else:
                        new.pop("status", None)
                m = new["metadata"]
                for k in ("uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"):
                    if k in cur["metadata"]:
                        m[k] = cur["metadata"][k]
                    else:
                        m.pop(k, None)
                m["name"] = name
                if res.namespaced:
                    m["namespace"] = ns
                m.pop("managedFields", None)
                if spec_of(new) != spec_of(cur):
                    m["generation"] = cur["metadata"].get("generation", 1) + 1
            self._check_update(res, cur, new, sub, verb, want_rv)
            new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            field_validation(res, new, q, self.stats)
            check_update(res, cur, new)
            if new == cur or q.get("dryRun"):
                return dumps(new)  # a no-op write keeps the resourceVersion
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") \
                    and not (res.key == ("", "pods") and pod_needs_kubelet(new)):
                return self._commit(res, ns, name, "DELETED", new, cur).raw
            return self._commit(res, ns, name, "MODIFIED", new, cur).raw

    def patch(self, res, ns, name, ctype, body, sub=None, q=None):
        q = q or {}
        ctype = (ctype or "").split(";")[0].strip()
        try:
            patch = json.loads(body or b"null")
        except ValueError as e:
            raise ApiError(400, f"the patch body is not JSON: {e}")
        with self.lock:
            if ctype == "application/apply-patch+yaml":
                if not q.get("fieldManager"):
                    raise ApiError(400, "PATCH requests of type apply require fieldManager")
                if (ns, name) not in self.objects[res.key]:
                    return 201, self.create(res, ns, patch, q)
            cur = json.loads(self._get(res, ns, name).raw)
            if ctype == "application/merge-patch+json":
                new = merge_patch(cur, patch)
            elif ctype == "application/apply-patch+yaml":
                new = merge_patch(cur, patch)  # an approximation: no field ownership
            elif ctype == "application/strategic-merge-patch+json":
                if res.crd:
                    raise ApiError(415, f'the body of the request was in an unknown format - '
                                        f'accepted media types include: '
                                        f'application/json-patch+json, '
                                        f'application/merge-patch+json, '
                                        f'application/apply-patch+yaml')
                new = strategic_merge(cur, patch)
            elif ctype == "application/json-patch+json":
                new = json_patch(cur, patch)
            else:
                raise ApiError(415, f"the body of the request was in an unknown format - "
                                    f"accepted media types include: "
                                    f"application/json-patch+json, "
                                    f"application/merge-patch+json, "
                                    f"application/apply-patch+yaml")
            if not isinstance(new, dict):
                raise ApiError(422, "the patch did not produce an object")
            new.setdefault("metadata", {})
            if res.gated:  # versions of one store: a patch through this version converts to it
                new["apiVersion"] = res.api_version
            return 200, self.update(res, ns, name, new, sub=sub, verb="patch", q=q)

    def delete(self, res, ns, name, opts, q=None):
        q = q or {}
        with self.lock:
            cur = self._get(res, ns, name).obj
            # DeleteOptions.preconditions, as the generic registry's Delete checks them
            # (storage.Preconditions.Check): a 409 Conflict (precondition_failed) ending
            # "Precondition failed: UID in precondition: A, UID in object meta: B"; a pod
            # replaced under the same name (a StatefulSet's) is then not deleted in its
            # predecessor's place
            pre = opts.get("preconditions") or {}
            if res.key == ("", "pods") and not q.get("dryRun"):
                self.stats.add("pod_deletes")
                if pre.get("uid"):
                    self.stats.add("pod_deletes_uid")
            if pre.get("uid") and pre["uid"] != cur["metadata"]["uid"]:
                self.stats.add("conflicts")
                raise precondition_failed(res, ns, name, f"UID in precondition: {pre['uid']}, "
                                                         f"UID in object meta: "
                                                         f"{cur['metadata']['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != \
                    cur["metadata"]["resourceVersion"]:
                self.stats.add("conflicts")
                raise precondition_failed(res, ns, name, "ResourceVersion in precondition: "
                                          f"{pre['resourceVersion']}, ResourceVersion in object "
                                          f"meta: {cur['metadata']['resourceVersion']}")
            if res.key == PC_KEY and name in SYSTEM_PRIORITY_CLASSES:
                # the priorityclass storage's Delete (pkg/registry/scheduling/priorityclass/
                # storage): a known system class is never deleted
                raise forbidden(res, name, "this is a system priority class and cannot be "
                                           "deleted")
            if q.get("dryRun"):
                return 200, Entry(cur).raw
            new = json.loads(Entry(cur).raw)
            m = new["metadata"]
            grace = 0
            if res.key == ("", "pods"):
                grace = opts.get("gracePeriodSeconds")
                if grace is None:
                    grace = dig(cur, "spec.terminationGracePeriodSeconds", 30)
                grace = int(grace)
                if grace < 0:
                    grace = 1
                phase = dig(cur, "status.phase", "")
                if not dig(cur, "spec.nodeName") or phase in ("Succeeded", "Failed"):
                    grace = 0
                old_grace = m.get("deletionGracePeriodSeconds")
                if old_grace is not None and grace > old_grace:
                    grace = old_grace  # a second delete may only shorten the grace period
            # handlers/delete.go: 200 even when the object is only marked (graceful, or
            # finalizers), 202 only then and with orphanDependents=false in the options
            code = 202 if opts.get("orphanDependents") is False else 200
            if grace > 0 or m.get("finalizers"):
                if grace > 0:
                    m["deletionGracePeriodSeconds"] = grace
                    m["deletionTimestamp"] = now_time(grace)
                elif not m.get("deletionTimestamp"):
                    m["deletionTimestamp"] = now_time()
                    m["deletionGracePeriodSeconds"] = 0
                if new != cur:
                    return code, self._commit(res, ns, name, "MODIFIED", new, cur).raw
                return code, Entry(cur).raw
            entry = self._commit(res, ns, name, "DELETED", new, None)
            if res.key == ("", "namespaces"):
                self._delete_namespace_contents(name)
            return 200, entry.raw

    def _delete_namespace_contents(self, ns):
        for r in RESOURCES:
            if not r.namespaced:
                continue
            for (ons, oname) in [k for k in self.objects[r.key] if k[0] == ns]:
                obj = json.loads(self.objects[r.key][(ons, oname)].raw)
                self._commit(r, ons, oname, "DELETED", obj, None)

    def delete_collection(self, res, ns, q, opts):
        lsel = parse_label_selector(q.get("labelSelector"))
        fsel = parse_field_selector(res, q.get("fieldSelector"))
        with self.lock:
            names = [k for k, e in self.objects[res.key].items()
                     if (ns is None or k[0] == ns) and labels_match(lsel, e.obj["metadata"].get(
                         "labels")) and fields_match(fsel, e.obj)]
            for (ons, oname) in sorted(names):
                self.delete(res, ons, oname, opts)
        return {"kind": res.kind + "List", "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(self.rv)}, "items": []}

    # ---- subresources

    def bind(self, ns, name, body):
        pods = BY_KEY[("", "pods")]
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request was not a JSON object")
        meta = body.get("metadata") or {}
        if meta.get("name", "") != name:  # BindingREST.Create; an empty name too
            raise ApiError(400, "name in URL does not match name in Binding object")
        target = (body.get("target") or {}).get("name")
        if not target:
            raise invalid(pods, name, "target.name", "Required value")
        with self.lock:
            e = self._get(pods, ns, name)
            cur = e.obj
            why = pre = None
            if meta.get("uid") and meta["uid"] != cur["metadata"]["uid"]:
                pre = (f"UID in precondition: {meta['uid']}, UID in object "
                       f"meta: {cur['metadata']['uid']}")
            elif meta.get("resourceVersion") and meta["resourceVersion"] != \
                    cur["metadata"]["resourceVersion"]:
                # the Binding's uid and resourceVersion are the preconditions of the pod's
                # GuaranteedUpdate (BindingREST.setPodNodeAndMetadata), checked when the write
                # is applied, however late; storage.Preconditions.Check words the failure so,
                # and assignPod's InterpretUpdateError makes it a conflict on "pods" (the other
                # refusals below are plain errors it wraps as a conflict on "pods/binding")
                pre = (f"ResourceVersion in precondition: "
                       f"{meta['resourceVersion']}, ResourceVersion in object meta: "
                       f"{cur['metadata']['resourceVersion']}")
            if pre:
                pass  # a failed precondition is answered before the other refusals
            elif cur["metadata"].get("deletionTimestamp"):
                why = f"pod {name} is being deleted, cannot be assigned to a host"
            elif dig(cur, "spec.nodeName"):
                # Also when target is the same node: the real server refuses any second binding.
                why = f'pod {name} is already assigned to node "{cur["spec"]["nodeName"]}"'
            elif dig(cur, "spec.schedulingGates"):
                why = f"pod {name} has non-empty .spec.schedulingGates"
            if why or pre:
                self.stats.add("bind_conflicts")
                self.stats.add("conflicts")
                if pre:
                    raise precondition_failed(pods, ns, name, pre)
                raise conflict(pods, name, why, sub="binding")
            # a new pod sharing the parts a Binding leaves alone with the stored one (stored
            # objects are never mutated): the same JSON as a deep copy, without decoding it
            new = dict(cur)
            new["metadata"] = dict(cur["metadata"])
            new["spec"] = dict(cur["spec"])
            new["spec"]["nodeName"] = target
            if meta.get("annotations"):
                ann = new["metadata"]["annotations"] = dict(cur["metadata"].get("annotations")
                                                            or {})
                ann.update(meta["annotations"])
            st = new["status"] = dict(cur.get("status") or {})
            if "conditions" in st:
                st["conditions"] = [dict(c) for c in st["conditions"]]
            st.pop("nominatedNodeName", None)
            set_condition(st, "PodScheduled", "True")
            self._commit(pods, ns, name, "MODIFIED", new, cur)
            self.stats.bound(cur["metadata"]["uid"])
        return success_status(201)

    def foreign_bind(self, ns, name, node):
        """Another scheduler binds the pod to node first (fault foreign-bind): what a racing
        kube-scheduler or a second gangsched leader does between our decision and our
        Binding."""
        pods = BY_KEY[("", "pods")]
        with self.lock:
            e = self.objects[pods.key].get((ns, name))
            if e is None or dig(e.obj, "spec.nodeName"):
                return
            new = json.loads(e.raw)
            new["spec"]["nodeName"] = node
            set_condition(new.setdefault("status", {}), "PodScheduled", "True")
            self._commit(pods, ns, name, "MODIFIED", new, e.obj)
            self.stats.add("foreign_binds")

    def evict(self, ns, name, body):
        pods = BY_KEY[("", "pods")]
        opts = (body or {}).get("deleteOptions") or {}
        with self.lock:
            cur = self._get(pods, ns, name).obj
            phase = dig(cur, "status.phase", "")
            ignore_pdb = (not dig(cur, "spec.nodeName") or phase in ("Succeeded", "Failed", "Pending")
                          or cur["metadata"].get("deletionTimestamp"))
            if not ignore_pdb:
                self._check_pdbs(cur)
                new = json.loads(Entry(cur).raw)
                set_condition(new.setdefault("status", {}), "DisruptionTarget", "True",
                              reason="EvictionByEvictionAPI",
                              message="Eviction API: evicting")
                self._commit(pods, ns, name, "MODIFIED", new, cur)
            self.delete(pods, ns, name, opts)
            self.stats.add("evictions")
        return success_status(201)

    def _check_pdbs(self, pod):
        ns = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        pdbs = [e.obj for (pns, _), e in self.objects[("policy", "poddisruptionbudgets")].items()
                if pns == ns and selector_object_matches(dig(e.obj, "spec.selector", {}) or {},
                                                         labels)]
        if not pdbs:
            return
        if len(pdbs) > 1:
            raise ApiError(500, "This pod has more than one PodDisruptionBudget, which the "
                                "eviction subresource does not support.")
        pdb = pdbs[0]
        sel = dig(pdb, "spec.selector", {}) or {}
        members = [e.obj for (pns, _), e in self.objects[("", "pods")].items()
                   if pns == ns and selector_object_matches(sel, e.obj["metadata"].get("labels"))]
        expected = len(members)
        healthy = sum(1 for p in members if pod_ready(p)
                      and not p["metadata"].get("deletionTimestamp"))
        spec = pdb.get("spec") or {}
        if "minAvailable" in spec:
            desired = scaled(spec["minAvailable"], expected, round_up=True)
        elif "maxUnavailable" in spec:
            desired = expected - scaled(spec["maxUnavailable"], expected, round_up=True)
        else:
            desired = expected
        allowed = healthy - desired
        # An unready pod may go while the budget holds (unhealthyPodEvictionPolicy
        # IfHealthyBudget); a ready one only when a disruption is allowed.
        if allowed < 0 or allowed == 0 and pod_ready(pod):
            self.stats.add("evictions_blocked")
            raise ApiError(429, "Cannot evict pod as it would violate the pod's disruption "
                                "budget.",
                           details={"causes": [{"reason": "DisruptionBudget", "message":
                                                f"The disruption budget {pdb['metadata']['name']}"
                                                f" needs {desired} healthy pods and has "
                                                f"{healthy} currently"}]})

    # ---- watch support

    def events_since(self, cursor):
        """History events after cursor (caller holds the lock); None when cursor expired."""
        if cursor < self.compacted:
            return None
        i = bisect.bisect_right(self.history_rvs, cursor)
        return self.history[i:]

    # ---- persistence (--state-dir)

    def save(self, path):
        with self.lock:
            data = {"rv": self.rv, "objects": [json.loads(e.raw) for t in self.objects.values()
                                               for e in t.values()]}
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)

    def load_saved(self, path):
        with open(path) as f:
            data = json.load(f)
        with self.lock:
            self.objects = {r.key: {} for r in RESOURCES}
            self.sorted_keys = {}
            for obj in data["objects"]:
                res = find_kind(obj.get("apiVersion"), obj.get("kind"))
                if res:
                    m = obj["metadata"]
                    self.objects[res.key][(m.get("namespace") if res.namespaced else None,
                                           m["name"])] = Entry(obj)
            self.rv = int(data["rv"])
            refresh_crds(self.objects[CRD_KEY])
            self.history, self.history_rvs = [], []
            self.compacted = self.rv


def refresh_crds(table):
    """Recomputes CRDS from the stored CRD objects (caller holds the store lock)."""
    CRDS.clear()
    for e in table.values():
        spec = e.obj.get("spec") or {}
        group, plural = spec.get("group"), dig(spec, "names.plural")
        if not group or not plural or e.obj["metadata"].get("deletionTimestamp"):
            continue
        CRDS[(group, plural)] = {v["name"]: dig(v, "schema.openAPIV3Schema")
                                 for v in spec.get("versions") or []
                                 if isinstance(v, dict) and v.get("name") and
                                 v.get("served", True)}


def served(res):
    """A built-in resource always (a gated one only with --serve-api); a custom one while its
    CRD serves this version."""
    if res.gated:
        return res.api_version in SERVED_GATED
    return not res.crd or res.version in CRDS.get(res.key, {})


def prune(obj, schema, path, out):
    """Structural pruning as kube-apiserver's apiextensions does it (structural/pruning): a
    field the schema does not declare is dropped, unless the object's schema has
    x-kubernetes-preserve-unknown-fields: true or additionalProperties; arrays prune their
    items; x-kubernetes-embedded-resource keeps apiVersion, kind and metadata. The dropped
    paths are appended to out. At the root apiVersion, kind and metadata are never pruned."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        keep_all = schema.get("x-kubernetes-preserve-unknown-fields") is True
        for k in list(obj):
            if path == "" and k in ("apiVersion", "kind", "metadata"):
                continue
            if schema.get("x-kubernetes-embedded-resource") and k in ("apiVersion", "kind",
                                                                       "metadata"):
                continue
            if k in props:
                prune(obj[k], props[k], f"{path}.{k}", out)
            elif isinstance(addl, dict):
                prune(obj[k], addl, f"{path}.{k}", out)
            elif addl is True or keep_all:
                continue
            else:
                del obj[k]
                out.append(f"{path}.{k}")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, x in enumerate(obj):
            prune(x, schema["items"], f"{path}[{i}]", out)


def apply_defaults(obj, schema):
    """Structural defaulting as apiextensions' defaulting.Default (schema/defaulting/
    algorithm.go), applied to custom objects as they are decoded: a property that is absent, or
    null where its schema is not nullable, gets its schema's `default` (deep-copied), in every
    object present, through properties, additionalProperties and array items."""
    if not isinstance(schema, dict):
        return

    def null_to_default(v, sub):
        return v is None and isinstance(sub, dict) and not sub.get("nullable") and \
            "default" in sub

    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for k, sub in props.items():
            if isinstance(sub, dict) and "default" in sub and (k not in obj or
                                                               null_to_default(obj[k], sub)):
                obj[k] = copy.deepcopy(sub["default"])
        addl = schema.get("additionalProperties")
        for k in obj:
            if k in props:
                apply_defaults(obj[k], props[k])
            elif isinstance(addl, dict):
                if null_to_default(obj[k], addl):
                    obj[k] = copy.deepcopy(addl["default"])
                apply_defaults(obj[k], addl)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, x in enumerate(obj):
            if null_to_default(x, items):
                obj[i] = copy.deepcopy(items["default"])
            apply_defaults(obj[i], items)


def prune_object(res, obj, stats, out):
    """Prunes a custom object by its CRD's schema for res.version; logs what was dropped and
    appends it to out (field_validation answers the request's fieldValidation)."""
    if not res.crd:
        return
    schema = CRDS.get(res.key, {}).get(res.version)
    if not isinstance(schema, dict):
        return
    prune(obj, schema, "", out)
    apply_defaults(obj, schema)
    if out:
        m = obj.get("metadata") or {}
        what = f"{res.qualified} {m.get('namespace') or ''}/{m.get('name') or ''}"
        sys.stderr.write(f"fakeapi: pruned unknown fields of {what}: {', '.join(out)}\n")
        sys.stderr.flush()
        stats.pruned(what, out)


def find_kind(api_version, kind):
    for r in RESOURCES:
        if r.api_version == api_version and r.kind == kind:
            return r
    return None


def invalid(res, name, field, why):
    """errors.NewInvalid: the kind qualified by its group ("Lease.coordination.k8s.io")."""
    kind = f"{res.kind}.{res.group}" if res.group else res.kind
    return ApiError(422, f'{kind} "{name}" is invalid: {field}: {why}',
                    details={"name": name, "group": res.group, "kind": res.kind,
                             "causes": [{"reason": "FieldValueInvalid", "message": why,
                                         "field": field}]})


def check_name(res, name):
    if len(name) > 253 or not NAME_RE.match(name):
        raise invalid(res, name, "metadata.name",
                      f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of '
                      f"lower case alphanumeric characters, '-' or '.', and must start and end "
                      f"with an alphanumeric character")


def spec_of(obj):
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def scaled(v, total, round_up):
    if isinstance(v, str) and v.endswith("%"):
        frac = int(v[:-1]) * total
        return -(-frac // 100) if round_up else frac // 100
    return int(v)


def set_condition(status, ctype, value, reason=None, message=None):
    conds = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != value:
                c["lastTransitionTime"] = now_time()
            c["status"] = value
            break
    else:
        c = {"type": ctype, "status": value, "lastProbeTime": None,
             "lastTransitionTime": now_time()}
        conds.append(c)
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message


def pod_ready(pod):
    if dig(pod, "status.phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in dig(pod, "status.conditions", []) or [])


def pod_needs_kubelet(pod):
    return bool(dig(pod, "spec.nodeName")) and dig(pod, "status.phase") not in ("Succeeded",
                                                                                "Failed")


def qos_class(pod):
    containers = dig(pod, "spec.containers", []) or []
    reqs = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in reqs):
        return "BestEffort"
    for r in reqs:
        lim = r.get("limits") or {}
        req = r.get("requests") or lim
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name) != lim.get(name):
                return "Burstable"
    return "Guaranteed"


def prepare_create(res, obj):
    """What the real registry strategies do on create, for the resources where it matters."""
    meta = obj["metadata"]
    if res.key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        if not spec.get("containers"):
            raise invalid(res, meta["name"], "spec.containers", "Required value")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
    elif res.key == ("", "namespaces"):
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        obj["status"] = {"phase": "Active"}
    elif res.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        names = dig(obj, "spec.names", {}) or {}
        obj["status"] = {"acceptedNames": names, "storedVersions": [
            v.get("name") for v in dig(obj, "spec.versions", []) or [] if v.get("storage")],
            "conditions": [{"type": t, "status": "True", "reason": r,
                            "lastTransitionTime": now_time(), "message": m}
                           for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                           ("Established", "InitialNamesAccepted",
                                            "the initial names have been accepted"))]}
    elif res.key == ("events.k8s.io", "events"):
        check_event(res, obj)
    elif res.status and res.crd:
        obj.pop("status", None)  # a CRD with a status subresource ignores status on create
    elif res.key == ("", "nodes") and isinstance(obj.get("status"), dict):
        # SetDefaults_NodeStatus (pkg/apis/core/v1/defaults.go): allocatable defaults to
        # capacity (scheduler_perf's node templates give capacity only) (issue 17)
        st = obj["status"]
        if st.get("allocatable") is None and isinstance(st.get("capacity"), dict):
            st["allocatable"] = dict(st["capacity"])
    elif res.key in (("scheduling.k8s.io", "podgroups"), ("resource.k8s.io", "resourceclaims")):
        obj.pop("status", None)  # their strategies' PrepareForCreate drop status (issue 17)
    elif res.key == ("apps", "deployments"):
        obj["status"] = {}


def check_event(res, ev):
    """events.k8s.io/v1 validation (the rules a scheduler trips on); eventTime and
    series.lastObservedTime are MicroTime (check_micro_time)."""
    check_micro_time(res, ev, ("eventTime", "series.lastObservedTime"))
    name = ev["metadata"]["name"]
    if not ev.get("eventTime"):
        raise invalid(res, name, "eventTime", "Required value")
    for f in ("reportingController", "reportingInstance", "action", "reason"):
        if not ev.get(f):
            raise invalid(res, name, f, "Required value")
        if len(ev[f]) > 128:
            raise invalid(res, name, f, "Too long: may not be longer than 128")
    if ev.get("type") not in ("Normal", "Warning"):
        raise invalid(res, name, "type", 'Unsupported value: supported values: "Normal", '
                                         '"Warning"')
    if len(ev.get("note") or "") > 1024:
        raise invalid(res, name, "note", "Too long: may not be longer than 1024")


DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*"
                 "[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def claim_name_errors(kind, v):
    """validateDriverName (a DNS subdomain of at most 63), validatePoolName ('/'-separated DNS
    subdomains, at most 253 in all), validateDeviceName and validateRequestName (DNS labels):
    pkg/apis/resource/validation/validation.go. The message, or None."""
    if not isinstance(v, str) or not v:
        return "Required value"
    limit, parts, rx, msg = {"driver": (63, [v], DNS_SUBDOMAIN, SUBDOMAIN_MSG),
                             "pool": (253, v.split("/"), DNS_SUBDOMAIN, SUBDOMAIN_MSG),
                             "device": (63, [v], DNS_LABEL, LABEL_MSG),
                             "request": (63, [v], DNS_LABEL, LABEL_MSG)}[kind]
    if len(v) > limit:
        return "Too long: may not be more than %d bytes" % limit
    bad = next((p for p in parts if not rx.match(p) or len(p) > 253), None)
    return None if bad is None else 'Invalid value: "%s": %s' % (v, msg)


def check_node_selector(res, name, sel, f):
    """corevalidation.ValidateNodeSelector, as validateAllocationResult calls it."""
    terms = (sel or {}).get("nodeSelectorTerms") or []
    if not terms:
        raise invalid(res, name, f + ".nodeSelectorTerms",
                      "Required value: must have at least one node selector term")
    for t, term in enumerate(terms):
        for i, r in enumerate((term or {}).get("matchExpressions") or []):
            g = "%s.nodeSelectorTerms[%d].matchExpressions[%d]" % (f, t, i)
            op, vals = r.get("operator"), r.get("values") or []
            if not r.get("key"):
                raise invalid(res, name, g + ".key", "Required value")
            if op in ("In", "NotIn") and not vals:
                raise invalid(res, name, g + ".values", "Required value: must be specified "
                              "when `operator` is 'In' or 'NotIn'")
            if op in ("Exists", "DoesNotExist") and vals:
                raise invalid(res, name, g + ".values", "Forbidden: may not be specified when "
                              "`operator` is 'Exists' or 'DoesNotExist'")
            if op in ("Gt", "Lt") and (len(vals) != 1 or not str(vals[0]).lstrip("-").isdigit()):
                raise invalid(res, name, g + ".values", "Required value: must be specified "
                              "single value when `operator` is 'Lt' or 'Gt'")
            if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                raise invalid(res, name, g + ".operator", 'Invalid value: "%s": not a valid '
                              'selector operator' % op)
        for i, r in enumerate((term or {}).get("matchFields") or []):
            g = "%s.nodeSelectorTerms[%d].matchFields[%d]" % (f, t, i)
            if r.get("key") != "metadata.name":
                raise invalid(res, name, g + ".key", 'Invalid value: "%s": not a valid field '
                              'selector key' % r.get("key"))
            if r.get("operator") not in ("In", "NotIn"):
                raise invalid(res, name, g + ".operator", 'Invalid value: "%s": not a valid '
                              'selector operator' % r.get("operator"))
            if len(r.get("values") or []) != 1:
                raise invalid(res, name, g + ".values", "Required value: must be only one "
                              "value when `operator` is 'In' or 'NotIn' for node field "
                              "selector")


def check_allocation(res, name, spec, alloc):
    """validateAllocationResult for a new allocation (validation.go): at most
    AllocationResultsMaxSize (32) results, each naming a request of the claim ("req" or
    "req/subrequest" of firstAvailable), a valid driver, pool and device name; at most 64
    config entries (class + claim), each with source FromClaim or FromClass, requests of the
    claim and an opaque {driver, parameters: a JSON object}; the nodeSelector, if any, valid."""
    reqs = set()
    for r in ((spec or {}).get("devices") or {}).get("requests") or []:
        reqs.add(r.get("name"))
        reqs.update("%s/%s" % (r.get("name"), x.get("name")) for x in r.get("firstAvailable")
                    or [])
    ref_msg = ("must be the name of a request in the claim or the name of a request and a "
               "subrequest separated by '/'")
    f = "status.allocation.devices"
    results = (alloc.get("devices") or {}).get("results") or []
    if len(results) > 32:
        raise invalid(res, name, f + ".results", "Too many: %d: must have at most 32 items"
                      % len(results))
    for i, x in enumerate(results):
        for k in ("request", "driver", "pool", "device"):
            why = claim_name_errors(k, x.get(k)) if k != "request" else None
            if k == "request" and x.get(k) not in reqs:
                why = 'Invalid value: "%s": %s' % (x.get(k), ref_msg)
            if why:
                raise invalid(res, name, "%s.results[%d].%s" % (f, i, k), why)
    cfg = (alloc.get("devices") or {}).get("config") or []
    if len(cfg) > 64:
        raise invalid(res, name, f + ".config", "Too many: %d: must have at most 64 items"
                      % len(cfg))
    for i, c in enumerate(cfg):
        g = "%s.config[%d]" % (f, i)
        if c.get("source") not in ("FromClaim", "FromClass"):
            raise invalid(res, name, g + ".source", 'Unsupported value: "%s": supported '
                          'values: "FromClaim", "FromClass"' % c.get("source", ""))
        for k, r in enumerate(c.get("requests") or []):
            if r not in reqs:
                raise invalid(res, name, "%s.requests[%d]" % (g, k),
                              'Invalid value: "%s": %s' % (r, ref_msg))
        op = c.get("opaque")
        if not isinstance(op, dict):
            raise invalid(res, name, g + ".opaque", "Required value")
        why = claim_name_errors("driver", op.get("driver"))
        if why:
            raise invalid(res, name, g + ".opaque.driver", why)
        if not isinstance(op.get("parameters"), dict):
            raise invalid(res, name, g + ".opaque.parameters",
                          "Invalid value: \"<value omitted>\": must be a valid JSON object")
    if alloc.get("nodeSelector") is not None:
        check_node_selector(res, name, alloc["nodeSelector"], "status.allocation.nodeSelector")


def check_update(res, cur, new):
    # ValidateObjectMetaAccessorUpdate (apimachinery pkg/api/validation/objectmeta.go): once
    # the old object has a deletionTimestamp, ValidateNoNewFinalizers refuses any finalizer
    # it did not have (removing them is what lets it go); every kind, status writes included
    if cur["metadata"].get("deletionTimestamp"):
        had = cur["metadata"].get("finalizers") or []
        fins = new["metadata"].get("finalizers") or []
        extra = sorted({f for f in fins if isinstance(f, str)} - set(had))
        if extra:
            raise invalid(res, cur["metadata"]["name"], "metadata.finalizers",
                          "Forbidden: no new finalizers can be added if the object is being "
                          "deleted, found new finalizers []string{%s}"
                          % ", ".join('"%s"' % f for f in extra))
    if res.key == ("resource.k8s.io", "resourceclaims"):
        # ValidateResourceClaimStatusUpdate (pkg/apis/resource/validation): reservedFor holds at
        # most ResourceClaimReservedForMaxSize (256) consumers, each uid once, each with its
        # resource, name and uid, and needs an allocation; a populated allocation is immutable
        # (ValidateImmutableField on status.allocation when old and new are both set)
        st = new.get("status") or {}
        rf = st.get("reservedFor") or []
        name = cur["metadata"]["name"]
        old_alloc = (cur.get("status") or {}).get("allocation")
        if old_alloc and st.get("allocation") and st["allocation"] != old_alloc:
            raise invalid(res, name, "status.allocation", "Invalid value: field is immutable")
        for i, r in enumerate(rf):
            for f in ("resource", "name", "uid"):
                if not r.get(f):
                    raise invalid(res, name, "status.reservedFor[%d].%s" % (i, f),
                                  "Required value")
        if len(rf) > 256:
            raise invalid(res, name, "status.reservedFor",
                          "Too many: %d: must have at most 256 items" % len(rf))
        if len({r.get("uid") for r in rf}) != len(rf):
            raise invalid(res, name, "status.reservedFor", "Duplicate value")
        if rf and not st.get("allocation"):
            raise invalid(res, name, "status.reservedFor",
                          "Forbidden: may not be specified when `allocated` is not set")
        # validateResourceClaimStatusUpdate: "Items may be removed from ReservedFor while the
        # claim is meant to be deallocated, but not added" (claimDeleted: deletionTimestamp)
        old_rf = (cur.get("status") or {}).get("reservedFor") or []
        if new["metadata"].get("deletionTimestamp") and any(r not in old_rf for r in rf):
            raise invalid(res, name, "status.reservedFor",
                          "Forbidden: new entries may not be added while "
                          "`deallocationRequested` or `deletionTimestamp` are set")
        if st.get("allocation") and not old_alloc:  # only a new allocation is validated
            check_allocation(res, name, new.get("spec"), st["allocation"])
    if res.key == ("", "pods"):
        if dig(new, "spec.nodeName") != dig(cur, "spec.nodeName"):
            raise invalid(res, cur["metadata"]["name"], "spec",
                          "Forbidden: pod updates may not change fields other than "
                          "`spec.containers[*].image`, ... (spec.nodeName is immutable)")

# --------------------------------------------------------------------------------------------
# Admission and validation beside the registry strategies, each rule naming the upstream code
# it copies (kubernetes/kubernetes; read for this file, not copied). docs/test-api-server.md
# lists them.

PODS_KEY = ("", "pods")
PC_KEY = ("scheduling.k8s.io", "priorityclasses")
PG_KEY = ("scheduling.k8s.io", "podgroups")
LEASE_KEY = ("coordination.k8s.io", "leases")
PG_FINALIZER = "scheduling.k8s.io/podgroup-protection"
HIGHEST_USER_PRIORITY = 1000000000  # scheduling.HighestUserDefinablePriority
# The system PriorityClasses a real cluster has from its start: kube-apiserver's scheduling
# storage PostStartHook AddSystemPriorityClasses creates scheduling.SystemPriorityClasses()
# (pkg/apis/scheduling/types.go SystemCriticalPriority = 2 * HighestUserDefinablePriority;
# pkg/apis/scheduling/v1/helpers.go: node-critical at that + 1000, their descriptions),
# globalDefault false, preemptionPolicy defaulted to PreemptLowerPriority.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": (2000001000, "Used for system critical pods that must not be "
                                         "moved from their current node."),
    "system-cluster-critical": (2000000000, "Used for system critical pods that must run in "
                                            "the cluster, but can be moved to another node if "
                                            "necessary."),
}


def forbidden(res, name, why):
    """admission.NewForbidden: 403 Forbidden, '<resource> "<name>" is forbidden: <why>'."""
    return ApiError(403, f'{res.qualified} "{name}" is forbidden: {why}',
                    details={"name": name, "group": res.group, "kind": res.plural})


def admit_priority(res, obj, classes):
    """Priority admission on create (plugin/pkg/admission/priority/admission.go, admitPod):
    spec.priorityClassName names a PriorityClass (none: 403 "no PriorityClass with name X was
    found"); without a name the globalDefault class with the lowest value is used and named
    (getDefaultPriorityClass), else priority 0; a spec.priority that differs from the class's
    value is 403; spec.priority is then the class's value, spec.preemptionPolicy the class's
    (default PreemptLowerPriority; a different one given is 403). Native PodGroups get the
    same rule for priority: their v1beta1 types (staging/src/k8s.io/api/scheduling/v1beta1,
    PodGroupSpec.priority) say "When Priority Admission Controller is enabled, it prevents
    users from setting this field. The admission controller populates this field from
    PriorityClassName"; the admission code for PodGroups was not found to read, so their
    message is the pods' with "pod group spec" (unverified wording). The system classes
    (SYSTEM_PRIORITY_CLASSES) exist from the start, as in a real cluster. classes: the stored
    PriorityClass entries by (None, name)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    name = obj["metadata"].get("name") or ""
    cname = spec.get("priorityClassName") or ""
    pc = None
    if cname:
        e = classes.get((None, cname))
        if e is None:
            raise forbidden(res, name, f"no PriorityClass with name {cname} was found")
        pc = e.obj
    else:
        defaults = [e.obj for e in classes.values() if e.obj.get("globalDefault")]
        if defaults:
            pc = min(defaults, key=lambda p: p.get("value") or 0)
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int((pc or {}).get("value") or 0)
    given = spec.get("priority")
    what = "pod" if res.key == PODS_KEY else "pod group"
    if given is not None and given != value:
        raise forbidden(res, name, f"the integer value of priority ({given}) must not be "
                                   f"provided in {what} spec; priority admission controller "
                                   f"computed {value} from the given PriorityClass name")
    spec["priority"] = value
    if res.key == PODS_KEY:
        policy = (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority"
        given = spec.get("preemptionPolicy")
        if given is not None and given != policy:
            raise forbidden(res, name, f"the string value of PreemptionPolicy ({given}) must "
                                       f"not be provided in pod spec; priority admission "
                                       f"controller computed {policy} from the given "
                                       f"PriorityClass name")
        spec["preemptionPolicy"] = policy


def check_priority_class(res, obj, old, classes):
    """PriorityClass rules: SetDefaults_PriorityClass (preemptionPolicy PreemptLowerPriority);
    ValidatePriorityClass (pkg/apis/scheduling/validation: a user class's value at most
    1,000,000,000; a "system-" name is reserved); ValidatePriorityClassUpdate (value and
    preemptionPolicy immutable); the Priority admission plugin's validatePriorityClass (a
    second globalDefault class is 403)."""
    name = obj["metadata"].get("name") or ""
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    value = obj.get("value") or 0
    if name.startswith("system-") and old is None:
        # ValidatePriorityClass: a "system-" name must be IsKnownSystemPriorityClass (the same
        # name, value and globalDefault as a class of SYSTEM_PRIORITY_CLASSES)
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        err = (f"{name} is not a known system priority class" if known is None else
               f"value of {name} PriorityClass must be {known[0]}" if value != known[0] else
               f"globalDefault of {name} PriorityClass must be false"
               if obj.get("globalDefault") else None)
        if err:
            raise invalid(res, name, "metadata.name", "Forbidden: priority class names with "
                          "'system-' prefix are reserved for system use only. error: " + err)
    if not name.startswith("system-") and value > HIGHEST_USER_PRIORITY:
        raise invalid(res, name, "value", "Forbidden: maximum allowed value of a user defined "
                      f"priority is {HIGHEST_USER_PRIORITY}")
    if old is not None:
        if value != (old.get("value") or 0):
            raise invalid(res, name, "value", "Forbidden: may not be changed in an update.")
        if obj.get("preemptionPolicy") != old.get("preemptionPolicy"):
            raise invalid(res, name, "preemptionPolicy",
                          f'Invalid value: "{obj.get("preemptionPolicy")}": field is immutable')
    if obj.get("globalDefault"):
        for (_, other), e in classes.items():
            if other != name and e.obj.get("globalDefault"):
                raise forbidden(res, name, f"PriorityClass {other} is already marked as "
                                           "default. Only one default can exist")


# The PodGroup spec fields that may not change, per served version. v1beta1 (1.37):
# staging/src/k8s.io/api/scheduling/v1beta1/types.go, PodGroupSpec, the fields marked
# +k8s:immutable (declarative validation's validate.Immutable: 'Invalid value: "null": field is
# immutable'): parentCompositePodGroupName, workloadRef, schedulingConstraints (while its gate is
# on), resourceClaims, disruptionMode, priorityClassName, priority, preemptionPolicy; and in
# schedulingPolicy, basic immutable and gang not set or unset (+k8s:update=NoSet,NoUnset), its
# minCount mutable. v1alpha3 (1.37) is taken to be the same (not read). v1alpha2 (1.36):
# pkg/apis/scheduling/validation ValidatePodGroupUpdate as of 1.36 makes podGroupTemplateRef and
# the whole schedulingPolicy immutable (minCount too).
PG_IMMUTABLE = ("parentCompositePodGroupName", "workloadRef", "schedulingConstraints",
                "resourceClaims", "disruptionMode", "priorityClassName", "priority",
                "preemptionPolicy")


def check_podgroup_update(res, cur, new):
    name = cur["metadata"]["name"]
    old_spec, spec = cur.get("spec") or {}, new.get("spec") or {}
    if res.version == "v1alpha2":
        fields = ("podGroupTemplateRef", "schedulingPolicy")
    else:
        fields = PG_IMMUTABLE
        old_pol, pol = old_spec.get("schedulingPolicy") or {}, spec.get("schedulingPolicy") or {}
        if ("gang" in old_pol) != ("gang" in pol) or old_pol.get("basic") != pol.get("basic"):
            raise invalid(res, name, "spec.schedulingPolicy",
                          'Invalid value: "null": field is immutable')
    for f in fields:
        if old_spec.get(f) != spec.get(f):
            raise invalid(res, name, f"spec.{f}", 'Invalid value: "null": field is immutable')


# MicroTime (k8s.io/apimachinery metav1.MicroTime.UnmarshalJSON) parses RFC3339Micro,
# "2006-01-02T15:04:05.000000Z07:00", with Go's time.Parse: exactly six fraction digits. A body
# that does not parse is 400 "<Kind> in version "<v>" cannot be handled as a <Kind>: <error>"
# (the create/update handlers' decode error); the Go error text is copied in shape.
MICRO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?(Z|[+-]\d\d:\d\d)?$")
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"


def check_micro_time(res, obj, paths):
    for path in paths:
        v = dig(obj, path)
        if v is None:
            continue
        m = MICRO_RE.match(v) if isinstance(v, str) else None
        if m and m.group(1) and m.group(2):
            continue
        why = "cannot unmarshal into MicroTime"
        if isinstance(v, str) and len(v) >= 19:
            rest = v[19:]
            why = (f'cannot parse "{rest}" as ".000000"' if not (m and m.group(1)) else
                   f'cannot parse "{rest[7:]}" as "Z07:00"')
            why = f'parsing time "{v}" as "{MICRO_LAYOUT}": {why}'
        raise ApiError(400, f'{res.kind} in version "{res.version}" cannot be handled as a '
                            f'{res.kind}: {why}')


def check_lease(res, obj):
    """ValidateLeaseSpec (pkg/apis/coordination/validation): leaseDurationSeconds > 0,
    leaseTransitions >= 0; acquireTime and renewTime are MicroTime."""
    check_micro_time(res, obj, ("spec.acquireTime", "spec.renewTime"))
    name = obj["metadata"].get("name") or ""
    d, t = dig(obj, "spec.leaseDurationSeconds"), dig(obj, "spec.leaseTransitions")
    if d is not None and d <= 0:
        raise invalid(res, name, "spec.leaseDurationSeconds",
                      f"Invalid value: {d}: must be greater than 0")
    if t is not None and t < 0:
        raise invalid(res, name, "spec.leaseTransitions",
                      f"Invalid value: {t}: must be greater than or equal to 0")


def storage_key(res, ns, name):
    """The etcd key a storage error names (etcd3 store's prepared key: the default prefix
    /registry, the resource, for custom resources group/resource)."""
    parts = ["/registry", f"{res.group}/{res.plural}" if res.crd else res.plural]
    if ns:
        parts.append(ns)
    return "/".join(parts + [name])


def precondition_failed(res, ns, name, what):
    """storage.Preconditions.Check's error as kube-apiserver answers it: a StorageError of code
    4 (ErrCodeInvalidObj, "invalid object") turned into a 409 Conflict on the resource by
    storeerr.InterpretDeleteError / InterpretUpdateError (k8s.io/apiserver pkg/storage)."""
    return conflict(res, name, f"StorageError: invalid object, Code: 4, Key: "
                               f"{storage_key(res, ns, name)}, ResourceVersion: 0, "
                               f"AdditionalErrorMsg: Precondition failed: {what}")


def list_options_invalid(errs):
    """ValidateListOptions (apimachinery pkg/apis/meta/internalversion/validation) failing:
    the list and watch handlers answer errors.NewInvalid(ListOptions.meta.k8s.io, "", errs)."""
    texts = [f"{f}: {t}: {d}" for f, t, d in errs]
    body = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    causes = [{"reason": "FieldValue" + ("Forbidden" if t == "Forbidden" else "NotSupported"),
               "message": f"{t}: {d}", "field": f} for f, t, d in errs]
    return ApiError(422, f'ListOptions.meta.k8s.io "" is invalid: {body}',
                    details={"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes})


def check_list_options(q, watch):
    """validateListOptions and validateWatchOptions, the rules about resourceVersionMatch and
    sendInitialEvents (WatchList on, as it is by default since 1.32)."""
    match, rv, cont = q.get("resourceVersionMatch") or "", q.get("resourceVersion") or "", \
        q.get("continue") or ""
    initial = q.get("sendInitialEvents")
    m, errs = "resourceVersionMatch", []
    if watch:
        if initial is not None and match != "NotOlderThan":
            errs.append((m, "Forbidden", "sendInitialEvents requires setting "
                                         "resourceVersionMatch to NotOlderThan"))
        if match:
            if initial is None:
                errs.append((m, "Forbidden", "resourceVersionMatch is forbidden for watch "
                                             "unless sendInitialEvents is provided"))
            if match != "NotOlderThan":
                errs.append((m, "Unsupported value", f'"{match}": supported values: '
                                                     f'"NotOlderThan"'))
            if cont:
                errs.append((m, "Forbidden", "resourceVersionMatch is forbidden when continue "
                                             "is provided"))
    else:
        if match in ("NotOlderThan", "Exact"):
            if not rv:
                errs.append((m, "Forbidden", "resourceVersionMatch is forbidden unless "
                                             "resourceVersion is provided"))
            if cont:
                errs.append((m, "Forbidden", "resourceVersionMatch is forbidden when continue "
                                             "is provided"))
            if match == "Exact" and rv == "0":
                errs.append((m, "Forbidden", 'resourceVersionMatch "exact" is forbidden for '
                                             'resourceVersion "0"'))
        elif match:
            errs.append((m, "Unsupported value", f'"{match}": supported values: "Exact", '
                                                 f'"NotOlderThan", ""'))
        if initial is not None:
            errs.append(("sendInitialEvents", "Forbidden", "sendInitialEvents is forbidden for "
                                                           "list"))
    if errs:
        raise list_options_invalid(errs)


def too_large_rv(want, have):
    """The watch cache's answer to a resourceVersion it has not reached after waiting 3 s
    (storage.NewTooLargeResourceVersionError): 504 Timeout."""
    return ApiError(504, f"Too large resource version: {want}, current: {have}",
                    reason="Timeout", details={"causes": [{"reason": "ResourceVersionTooLarge",
                                                           "message": "Too large resource "
                                                                      "version"}],
                                               "retryAfterSeconds": 1})


# Unknown fields of built-in kinds. kube-apiserver decodes a built-in object into its Go type, so
# a field the type does not have is dropped; with ?fieldValidation=Strict the request fails with
# 400 '<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: unknown
# field "spec.containerz"' (several: ', '-joined); with Warn, the default when the parameter is
# absent (handlers/rest.go fieldValidation: "" is Warn), the write succeeds with one
# 'Warning: 299 - "unknown field \"spec.containerz\""' header per field; with Ignore it is dropped
# silently. Custom objects are pruned by their CRD's schema (prune below) and take the same
# three modes. KNOWN_FIELDS is the field names this fake knows, per kind: the top level, and for
# the parts named the keys one level down (metadata, spec, status, target, ...). It is
# INCOMPLETE on purpose: nothing deeper than that is checked (spec.containers[0].foo is kept), and
# kinds not listed (Deployment, Service, RBAC, DRA kinds, PodGroups, ...) are not pruned at all.
OBJECT_META = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
               "generation", "creationTimestamp", "deletionTimestamp",
               "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
               "finalizers", "managedFields"}
POD_SPEC = {"volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
            "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy",
            "nodeSelector", "serviceAccountName", "serviceAccount",
            "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID", "hostIPC",
            "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
            "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases",
            "priorityClassName", "priority", "dnsConfig", "readinessGates", "runtimeClassName",
            "enableServiceLinks", "preemptionPolicy", "overhead", "topologySpreadConstraints",
            "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates", "resourceClaims",
            "resources", "hostnameOverride", "workloadRef", "schedulingGroup"}
POD_STATUS = {"observedGeneration", "phase", "conditions", "message", "reason",
              "nominatedNodeName", "hostIP", "hostIPs", "podIP", "podIPs", "startTime",
              "initContainerStatuses", "containerStatuses", "qosClass",
              "ephemeralContainerStatuses", "resize", "resourceClaimStatuses",
              "extendedResourceClaimStatus", "allocatedResources", "resources"}
TOP = {"apiVersion", "kind", "metadata"}
KNOWN_FIELDS = {
    PODS_KEY: {"": TOP | {"spec", "status"}, "spec": POD_SPEC, "status": POD_STATUS},
    ("", "nodes"): {"": TOP | {"spec", "status"},
                    "spec": {"podCIDR", "podCIDRs", "providerID", "unschedulable", "taints",
                             "configSource", "externalID"},
                    "status": {"capacity", "allocatable", "phase", "conditions", "addresses",
                               "daemonEndpoints", "nodeInfo", "images", "volumesInUse",
                               "volumesAttached", "config", "runtimeHandlers", "features",
                               "declaredFeatures"}},
    ("", "namespaces"): {"": TOP | {"spec", "status"}, "spec": {"finalizers"},
                         "status": {"phase", "conditions"}},
    ("", "events"): {"": TOP | {"involvedObject", "reason", "message", "source",
                                "firstTimestamp", "lastTimestamp", "count", "type", "eventTime",
                                "series", "action", "related", "reportingComponent",
                                "reportingInstance"}},
    ("events.k8s.io", "events"): {"": TOP | {"eventTime", "series", "reportingController",
                                             "reportingInstance", "action", "reason",
                                             "regarding", "related", "note", "type",
                                             "deprecatedSource", "deprecatedFirstTimestamp",
                                             "deprecatedLastTimestamp", "deprecatedCount"}},
    LEASE_KEY: {"": TOP | {"spec"}, "spec": {"holderIdentity", "leaseDurationSeconds",
                                              "acquireTime", "renewTime", "leaseTransitions",
                                              "strategy", "preferredHolder"}},
    PC_KEY: {"": TOP | {"value", "globalDefault", "description", "preemptionPolicy"}},
    ("", "configmaps"): {"": TOP | {"data", "binaryData", "immutable"}},
    ("", "secrets"): {"": TOP | {"data", "stringData", "type", "immutable"}},
    ("", "bindings"): {"": TOP | {"target"},
                       "target": {"kind", "namespace", "name", "uid", "apiVersion",
                                  "resourceVersion", "fieldPath"}},
}
for _table in KNOWN_FIELDS.values():
    _table.setdefault("metadata", OBJECT_META)


def prune_builtin(key, obj, out):
    """Drops the fields KNOWN_FIELDS[key] does not know; appends their paths to out."""
    table = KNOWN_FIELDS.get(key)
    if not table or not isinstance(obj, dict):
        return
    for k in list(obj):
        if k not in table[""]:
            del obj[k]
            out.append(k)
        elif k in table and isinstance(obj[k], dict):
            for sub in list(obj[k]):
                if sub not in table[k]:
                    del obj[k][sub]
                    out.append(f"{k}.{sub}")


_WARNINGS = threading.local()  # the Warning headers of the request being answered


def add_warning(text):
    w = getattr(_WARNINGS, "list", None)
    if w is not None:
        w.append(text)


def field_validation(res, obj, q, stats):
    """Prunes obj (a custom object by its CRD's schema, a built-in one by KNOWN_FIELDS) and
    applies the request's fieldValidation (Strict, Warn: the default, Ignore)."""
    mode = (q or {}).get("fieldValidation") or "Warn"
    if mode not in ("Strict", "Warn", "Ignore"):
        raise ApiError(400, f'fieldValidation parameter has invalid value: "{mode}", must be '
                            f'one of "Ignore", "Warn", "Strict"')
    out = []
    if res.crd:
        prune_object(res, obj, stats, out)
    else:
        prune_builtin(res.key, obj, out)
    if not out:
        return
    fields = [f.lstrip(".") for f in out]
    if mode == "Strict":
        raise ApiError(400, f'{res.kind} in version "{res.version}" cannot be handled as a '
                            f'{res.kind}: strict decoding error: ' +
                            ", ".join(f'unknown field "{f}"' for f in fields))
    if mode == "Warn":
        for f in fields:
            add_warning(f'unknown field "{f}"')

# --------------------------------------------------------------------------------------------
# The simulated kubelet: bound pods start, deleted pods go away.


class Kubelet:
    def __init__(self, store, delay, grace_cap):
        self.store, self.delay, self.grace_cap = store, delay, grace_cap
        self.lock = threading.Condition()
        self.timers, self.seen = [], set()
        self.seq = 0
        threading.Thread(target=self.loop, daemon=True).start()

    def push(self, when, action, ns, name, uid):
        with self.lock:
            self.seq += 1
            heapq.heappush(self.timers, (when, self.seq, action, ns, name, uid))
            self.lock.notify()

    def notice(self, pod, etype):
        """Called with the store lock held after every pod write."""
        m = pod["metadata"]
        key = (m["uid"],)
        if etype == "DELETED":
            self.seen.discard(key + ("start",))
            self.seen.discard(key + ("finalize",))
            return
        if m.get("deletionTimestamp") and dig(pod, "spec.nodeName"):
            if key + ("finalize",) not in self.seen:
                self.seen.add(key + ("finalize",))
                wait = min(float(m.get("deletionGracePeriodSeconds") or 0), self.grace_cap)
                self.push(time.monotonic() + wait, "finalize", m["namespace"], m["name"],
                          m["uid"])
        elif dig(pod, "spec.nodeName") and dig(pod, "status.phase") == "Pending":
            if key + ("start",) not in self.seen:
                self.seen.add(key + ("start",))
                self.push(time.monotonic() + self.delay, "start", m["namespace"], m["name"],
                          m["uid"])

    def loop(self):
        while True:
            with self.lock:
                while not self.timers or self.timers[0][0] > time.monotonic():
                    self.lock.wait(None if not self.timers
                                   else max(0.0, self.timers[0][0] - time.monotonic()))
                _, _, action, ns, name, uid = heapq.heappop(self.timers)
            try:
                self.act(action, ns, name, uid)
            except Exception:  # a pod that vanished meanwhile, or a bad annotation
                traceback.print_exc()

    def act(self, action, ns, name, uid):
        store, pods = self.store, BY_KEY[("", "pods")]
        with store.lock:
            e = store.objects[pods.key].get((ns, name))
            if e is None or e.obj["metadata"]["uid"] != uid:
                return
            cur = e.obj
            if action == "finalize":
                self.seen.discard((uid, "finalize"))
                self.seen.discard((uid, "start"))
                store._commit(pods, ns, name, "DELETED", json.loads(e.raw), None)
                return
            if cur["metadata"].get("deletionTimestamp"):
                return
            new = json.loads(e.raw)
            mode = (cur["metadata"].get("annotations") or {}).get(ANNOT_START, "")
            if action == "start":
                if mode == "pending":
                    return
                self.start(new, mode)
            elif action == "finish":
                self.finish(new)
            store._commit(pods, ns, name, "MODIFIED", new, cur)
            run = (cur["metadata"].get("annotations") or {}).get(ANNOT_RUN)
            if action == "start" and run and mode == "":
                self.push(time.monotonic() + float(run), "finish", ns, name, uid)

    @staticmethod
    def start(pod, mode):
        st = pod.setdefault("status", {})
        st["hostIP"] = "127.0.0.1"
        st["startTime"] = now_time()
        ready = "True" if mode == "" else "False"
        statuses = []
        for c in dig(pod, "spec.containers", []) or []:
            cs = {"name": c.get("name"), "image": c.get("image", ""), "imageID": "",
                  "ready": ready == "True", "restartCount": 0, "started": ready == "True"}
            if mode == "fail":
                cs["restartCount"] = 3
                cs["state"] = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                           f"back-off 40s restarting failed container="
                                           f"{c.get('name')} pod={pod['metadata']['name']}"}}
                cs["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
            elif mode == "errimagepull":
                cs["state"] = {"waiting": {"reason": "ErrImagePull", "message":
                                           f'failed to pull image "{c.get("image", "")}": '
                                           f'{ANNOT_START}=errimagepull'}}
            else:
                cs["state"] = {"running": {"startedAt": now_time()}}
            statuses.append(cs)
        st["containerStatuses"] = statuses
        st["phase"] = "Pending" if mode == "errimagepull" else "Running"
        set_condition(st, "Initialized", "True")
        set_condition(st, "ContainersReady", ready)
        set_condition(st, "Ready", ready)
        set_condition(st, "PodScheduled", "True")

    @staticmethod
    def finish(pod):
        code = int((pod["metadata"].get("annotations") or {}).get(ANNOT_EXIT, "0"))
        st = pod.setdefault("status", {})
        st["phase"] = "Succeeded" if code == 0 else "Failed"
        for cs in st.get("containerStatuses") or []:
            cs["ready"], cs["started"] = False, False
            cs["state"] = {"terminated": {"exitCode": code, "reason":
                                          "Completed" if code == 0 else "Error",
                                          "finishedAt": now_time()}}
        set_condition(st, "ContainersReady", "False")
        set_condition(st, "Ready", "False")

# --------------------------------------------------------------------------------------------
# Discovery and OpenAPI.

MAIN_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def group_versions():
    """The served group-versions, in table order (custom ones only while their CRD is)."""
    seen = []
    for r in RESOURCES:
        if served(r) and (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen




def resource_list(group, version):
    out = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version) or not served(r):
            continue
        e = {"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
             "kind": r.kind, "verbs": MAIN_VERBS}
        if r.short:
            e["shortNames"] = r.short
        if r.categories:
            e["categories"] = r.categories
        out.append(e)
        if r.status:
            out.append({"name": r.plural + "/status", "singularName": "",
                        "namespaced": r.namespaced, "kind": r.kind,
                        "verbs": ["get", "patch", "update"]})
        for s in r.subs:
            kind, grp, ver = {"binding": ("Binding", "", "v1"),
                              "eviction": ("Eviction", "policy", "v1")}[s]
            e = {"name": f"{r.plural}/{s}", "singularName": "", "namespaced": r.namespaced,
                 "kind": kind, "verbs": ["create"]}
            if grp:
                e["group"], e["version"] = grp, ver
            out.append(e)
    if (group, version) == ("", "v1"):
        out.append({"name": "bindings", "singularName": "binding", "namespaced": True,
                    "kind": "Binding", "verbs": ["create"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def api_group(group):
    versions = [{"groupVersion": f"{g}/{v}", "version": v} for g, v in group_versions()
                if g == group]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list():
    groups = [api_group(g) for g in dict.fromkeys(g for g, _ in group_versions() if g)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def openapi_v3_index():
    paths = {}
    for g, v in group_versions():
        p = f"apis/{g}/{v}" if g else f"api/{v}"
        paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash=FAKE{len(RESOURCES)}"}
    return {"paths": paths}


def openapi_v3_doc(group, version):
    """PATCH operations with the fieldValidation parameter: kubectl then validates server-side.
    No strategic-merge media type, so kubectl apply uses its compiled-in types for patches."""
    params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
    paths = {}
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        base = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        p = f"{base}/namespaces/{{namespace}}/{r.plural}/{{name}}" if r.namespaced \
            else f"{base}/{r.plural}/{{name}}"
        paths[p] = {"patch": {
            "operationId": f"patch{r.kind}",
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version,
                                                 "kind": r.kind},
            "x-kubernetes-action": "patch",
            "parameters": params,
            "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in (
                "application/json-patch+json", "application/merge-patch+json",
                "application/apply-patch+yaml")}},
            "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}


def pb_field(num, data):
    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out
    return varint((num << 3) | 2) + varint(len(data)) + data


# The smallest OpenAPI v2 document in gnostic's protobuf form (swagger, info, empty paths and
# definitions): old kubectl versions validate against it, and every kind passes.
OPENAPI_V2_PB = (pb_field(1, b"2.0") + pb_field(2, pb_field(1, b"Kubernetes") +
                                               pb_field(2, b"v1.32.0"))
                 + pb_field(8, b"") + pb_field(9, b""))
OPENAPI_V2_JSON = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                   "paths": {}, "definitions": {}}
VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0",
           "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
           "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.3", "compiler": "gc",
           "platform": "linux/amd64"}

# --------------------------------------------------------------------------------------------
# HTTP.

PUBLIC = {"/version", "/healthz", "/livez", "/readyz"}
HTTP_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 400: "Bad Request",
                401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                405: "Method Not Allowed", 409: "Conflict", 410: "Gone",
                415: "Unsupported Media Type", 422: "Unprocessable Entity",
                429: "Too Many Requests", 500: "Internal Server Error",
                503: "Service Unavailable", 504: "Gateway Timeout"}


class Headers(dict):
    """Request headers by lower-case name (the stdlib's email parser is the slow part of a
    request)."""

    def get(self, key, default=None):
        return dict.get(self, key.lower(), default)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 900  # idle keep-alive connections are closed after this many seconds
    server_version = "fakeapi/1"

    def setup(self):
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def parse_request(self):
        """The request line and headers, without the email parser; sets what
        BaseHTTPRequestHandler.handle_one_request needs (command, path, close_connection)."""
        self.command = None
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        parts = self.requestline.split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.request_version = "HTTP/1.1"
            self.send_bytes(400, dumps(ApiError(400, "bad request line").status()))
            return False
        self.command, self.path, self.request_version = parts
        headers = Headers()
        for _ in range(200):
            line = self.rfile.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("iso-8859-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        self.headers = headers
        conn = headers.get("connection", "").lower()
        self.close_connection = conn == "close" or (self.request_version == "HTTP/1.0"
                                                    and conn != "keep-alive")
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return True

    def log_message(self, fmt, *args):
        if self.server.app.verbose:
            sys.stderr.write("fakeapi: %s\n" % (fmt % args))

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    # ---- plumbing

    def send_bytes(self, code, body, ctype="application/json", headers=None):
        head = [f"HTTP/1.1 {code} {HTTP_REASONS.get(code, 'Status')}",
                f"Content-Type: {ctype}", f"Content-Length: {len(body)}",
                "Cache-Control: no-cache, private"]
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        for w in getattr(_WARNINGS, "list", None) or []:  # warning.AddWarning's header form
            head.append('Warning: 299 - "%s"' % w.replace("\\", "\\\\").replace('"', '\\"'))
        _WARNINGS.list = None
        if self.close_connection:
            head.append("Connection: close")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        self.server.app.stats.code(code)
        if self.server.app.verbose:
            self.log_message('"%s" %s', self.requestline, code)

    def send_obj(self, code, obj, headers=None):
        self.send_bytes(code, dumps(obj), headers=headers)

    # Request bodies, read as kube-apiserver's Go net/http front reads them. A chunked body
    # (Transfer-Encoding: chunked, any letter case) is decoded: hex sizes, chunk extensions
    # after ";" ignored, trailer lines skipped, a Content-Length beside it ignored (RFC 9112
    # 6.3). A chunk size that is not hex, chunk data not followed by CRLF, or a body cut short
    # (the connection closed before the last chunk) fails the request: 400, and the connection
    # is closed (net/http's chunked reader returns an error to the handler, never a partial
    # body). Another transfer coding is 501 (net/http: "unsupported transfer encoding"). A body
    # over 3 MiB is 413 "Request entity too large: limit is 3145728" (the API server's
    # MaxRequestBodyBytes), chunked or not.
    MAX_BODY = 3 * 1024 * 1024

    def body_error(self, code, msg):
        self.close_connection = True
        return ApiError(code, msg)

    def read_chunked(self):
        data = bytearray()
        while True:
            line = self.rfile.readline(4096)
            if not line.endswith(b"\n"):
                raise self.body_error(400, "unexpected EOF in a chunked request body")
            size = line.split(b";")[0].strip()
            if not size or len(size) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size):
                raise self.body_error(400, "invalid byte in chunk length")
            n = int(size, 16)
            if n == 0:
                while True:  # trailers, up to the empty line
                    t = self.rfile.readline(65537)
                    if t in (b"\r\n", b"\n"):
                        return bytes(data)
                    if not t.endswith(b"\n"):
                        raise self.body_error(400, "unexpected EOF in a chunked request body")
            if len(data) + n > self.MAX_BODY:
                raise self.body_error(413, "Request entity too large: limit is %d" % self.MAX_BODY)
            part = self.rfile.read(n)
            if len(part) < n:
                raise self.body_error(400, "unexpected EOF in a chunked request body")
            data += part
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise self.body_error(400, "malformed chunked encoding")

    def read_body(self):
        te = self.headers.get("Transfer-Encoding")
        if te is not None:
            if te.strip().lower() != "chunked":
                raise self.body_error(501, "unsupported transfer encoding: %r" % te)
            return self.read_chunked()
        cl = self.headers.get("Content-Length") or "0"
        if not cl.isdigit():
            raise self.body_error(400, "bad Content-Length %r" % cl)
        n = int(cl)
        if n > self.MAX_BODY:
            raise self.body_error(413, "Request entity too large: limit is %d" % self.MAX_BODY)
        return self.rfile.read(n) if n else b""

    def json_body(self, raw):
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, f"the body of the request could not be decoded as JSON: {e}")

    # ---- routing

    def dispatch(self, method):
        app = self.server.app
        _WARNINGS.list = []
        log_request(method, self.path, self.headers.get("user-agent", ""))
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        q = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            raw = self.read_body()
            if path in PUBLIC:
                if path == "/version":
                    return self.send_obj(200, VERSION)
                return self.send_bytes(200, b"ok", ctype="text/plain")
            if app.token and self.headers.get("Authorization") != "Bearer " + app.token:
                raise ApiError(401, "Unauthorized")
            if path.startswith("/_fake/"):
                return self.control(method, path, q, raw)
            if path.startswith("/openapi/"):
                return self.openapi(path)
            if path == "/api":
                return self.send_obj(200, {"kind": "APIVersions", "versions": ["v1"],
                                           "serverAddressByClientCIDRs": [
                                               {"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": f"127.0.0.1:{app.port}"}]})
            if path == "/apis":
                return self.send_obj(200, api_group_list())
            parts = path.strip("/").split("/")
            if parts[0] == "api" and len(parts) >= 2:
                group, version, rest = "", parts[1], parts[2:]
            elif parts[0] == "apis" and len(parts) >= 2:
                if len(parts) == 2:
                    if parts[1] not in {g for g, _ in group_versions()}:
                        raise ApiError(404, "the server could not find the requested resource")
                    return self.send_obj(200, dict(api_group(parts[1]), kind="APIGroup",
                                                   apiVersion="v1"))
                group, version, rest = parts[1], parts[2], parts[3:]
            else:
                raise ApiError(404, "the server could not find the requested resource")
            if not any(r.group == group and r.version == version and served(r)
                       for r in RESOURCES):  # group_versions() without building the list
                raise ApiError(404, "the server could not find the requested resource")
            if not rest:
                return self.send_obj(200, resource_list(group, version))
            self.resource(method, group, version, rest, q, raw, path)
        except ApiError as e:
            self.send_obj(e.code, e.status(), headers=e.headers)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # a bug: answer like the real server, keep serving
            traceback.print_exc()
            self.send_obj(500, ApiError(500, f"fakeapi internal error: {e!r}").status())

    def resource(self, method, group, version, rest, q, raw, path):
        app = self.server.app
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            ns, rest = rest[1], rest[2:]
        plural, name = rest[0], rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource")
        if (group, plural) == ("", "bindings") and ns and method == "POST" and not name:
            body = self.json_body(raw)
            name = (body.get("metadata") or {}).get("name", "")
            app.stats.request("create", "bindings")
            self.faults("create", path)
            return self.send_obj(201, app.store.bind(ns, name, body))
        res = BY_PATH.get((group, version, plural))
        if res is None or not served(res):
            raise ApiError(404, "the server could not find the requested resource")
        if res.namespaced and name is not None and ns is None:
            raise ApiError(404, "the server could not find the requested resource")
        if not res.namespaced and ns is not None:
            raise ApiError(404, "the server could not find the requested resource")
        if sub and sub != "status" and sub not in res.subs or sub == "status" and not res.status:
            raise ApiError(404, "the server could not find the requested resource")
        watch = q.get("watch") in ("1", "true")
        verb = {"GET": "watch" if watch else ("get" if name else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}[method]
        app.stats.request(verb, res.qualified + (f"/{sub}" if sub else ""))
        self.faults(verb, path)
        store = app.store
        if sub in ("binding", "eviction"):
            if method != "POST":
                raise ApiError(405, f"the server does not allow this method on {sub}")
            body = self.json_body(raw)
            if sub == "binding":
                fb = app.faults.take("foreign-bind", verb, path)
                if fb:
                    store.foreign_bind(ns, name, fb.get("node") or "elsewhere")
                self.hold(verb, path)
                lost = app.faults.take("lose-answer", verb, path)
                out = store.bind(ns, name, body)
                if lost:
                    return self.lose_answer()
                return self.send_obj(201, out)
            return self.send_obj(201, store.evict(ns, name, body))
        if method == "GET":
            if watch:
                return self.watch(res, ns if res.namespaced else None, name, q, path)
            if name:
                return self.send_bytes(200, store.get(res, ns, name))
            return self.send_bytes(200, store.list(res, ns, q))
        if method == "POST":
            if name:
                raise ApiError(405, "POST to a named object is not allowed")
            return self.send_bytes(201, store.create(res, ns, self.json_body(raw), q))
        if method == "PUT":
            body = self.json_body(raw)
            with store.lock:
                # a Lease may be created with a PUT (its strategy's AllowCreateOnUpdate), when
                # the body names no resourceVersion (with one: the 404 of the update)
                if res.key == LEASE_KEY and not sub and isinstance(body, dict) and \
                        (ns, name) not in store.objects[res.key] and \
                        not (body.get("metadata") or {}).get("resourceVersion"):
                    body.setdefault("metadata", {}).setdefault("name", name)
                    return self.send_bytes(201, store.create(res, ns, body, q))
            return self.send_bytes(200, store.update(res, ns, name, body, sub=sub, q=q))
        if method == "PATCH":
            code, out = store.patch(res, ns, name, self.headers.get("Content-Type"), raw,
                                    sub=sub, q=q)
            return self.send_bytes(code, out)
        if method == "DELETE":
            opts = self.json_body(raw)
            if "gracePeriodSeconds" in q:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            if "orphanDependents" in q:
                opts["orphanDependents"] = q["orphanDependents"] == "true"
            if name:
                code, out = store.delete(res, ns, name, opts, q)
                return self.send_bytes(code, out)
            return self.send_obj(200, store.delete_collection(res, ns, q, opts))

    def lose_answer(self):
        """Fault lose-answer: the Binding was committed (the pod is bound, watches see it), then
        the connection is reset before any byte of the answer. It copies a connection cut (a
        proxy restarted, a TCP reset) after kube-apiserver committed the write: the client sees
        a transport error and cannot tell whether the write landed."""
        self.server.app.stats.add("answers_lost")
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))  # close sends RST
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def hold(self, verb, path):
        """Fault hold: the request waits, unanswered, until POST /_fake/release (or its ms pass),
        then is applied as if it had just arrived, whether or not its client is still there:
        a real API server finishes a write whose client went away (the etcd transaction does
        not depend on the connection), so a leader killed with Bindings in flight can see them
        land after its successor started."""
        app = self.server.app
        h = app.faults.take("hold", verb, path)
        if not h:
            return
        app.stats.add("held")
        with app.held:
            app.n_held += 1
            end = time.monotonic() + h["ms"] / 1000.0 if h.get("ms") else None
            gen = app.release_gen
            while app.release_gen == gen and (end is None or time.monotonic() < end):
                app.held.wait(None if end is None else max(0.01, end - time.monotonic()))
            app.n_held -= 1

    def faults(self, verb, path):
        app = self.server.app
        d = app.faults.take("delay", verb, path)
        if d:
            time.sleep(d.get("ms", 100) / 1000.0)
        e = app.faults.take("error", verb, path)
        if e:
            code = int(e["code"])
            headers, details = {}, None
            if code in (429, 503) or e.get("retryAfter"):
                ra = int(e.get("retryAfter", 1))
                if e.get("retryAfterForm") == "date":  # RFC 9110 HTTP-date, now + ra seconds
                    headers["Retry-After"] = email.utils.formatdate(time.time() + ra,
                                                                    usegmt=True)
                else:
                    headers["Retry-After"] = str(ra)
                details = {"retryAfterSeconds": ra}
            raise ApiError(code, e.get("message") or f"injected fault: {code}",
                           details=details, headers=headers)

    # ---- watch

    def watch(self, res, ns, name, q, path):
        app, store = self.server.app, self.server.app.store
        check_list_options(q, True)
        lsel = parse_label_selector(q.get("labelSelector"))
        fsel = parse_field_selector(res, q.get("fieldSelector"))
        if name:
            fsel.append((("metadata.name", ""), True, name))
        timeout = float(q.get("timeoutSeconds") or app.watch_timeout)
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        rv_param = q.get("resourceVersion") or ""
        drop = app.faults.take("drop-watch", "watch", path)
        gone = app.faults.take("gone-watch", "watch", path)
        stall = app.faults.take("stall-watch", "watch", path)
        if stall and str(stall.get("beforeHeaders", "")).lower() in ("true", "1"):
            return self.stall_watch()
        key = res.key

        def matches(obj):
            if obj is None:
                return False
            if ns is not None and obj["metadata"].get("namespace") != ns:
                return False
            if lsel and not labels_match(lsel, obj["metadata"].get("labels")):
                return False
            return not fsel or fields_match(fsel, obj)

        def frame(line):
            return b"%x\r\n" % len(line) + line + b"\r\n"

        def error_line(rv_text, oldest):
            app.stats.add("watch_expired")
            st = ApiError(410, f"too old resource version: {rv_text} ({oldest})").status()
            return dumps({"type": "ERROR", "object": st}) + b"\n"

        def bookmark(rv, initial_end=False):
            meta = {"resourceVersion": str(rv), "creationTimestamp": None}
            if initial_end:
                meta["annotations"] = {"k8s.io/initial-events-end": "true"}
            return dumps({"type": "BOOKMARK", "object": {"kind": res.kind,
                                                        "apiVersion": res.api_version,
                                                        "metadata": meta}}) + b"\n"

        first = []
        with store.lock:
            if gone:
                first.append(error_line(rv_param or "0", store.compacted))
                cursor = None
            elif rv_param in ("", "0") or q.get("sendInitialEvents") == "true":
                table = store.objects[key]
                for k in sorted(table):
                    e = table[k]
                    if matches(e.obj):
                        first.append(b'{"type":"ADDED","object":' + e.raw + b"}\n")
                cursor = store.rv
                if q.get("sendInitialEvents") == "true" and bookmarks:
                    first.append(bookmark(cursor, initial_end=True))
            elif not rv_param.isdigit():
                raise ApiError(400, f"invalid resourceVersion {rv_param!r}")
            else:
                cursor = int(rv_param)
                if cursor < store.compacted:
                    first.append(error_line(rv_param, store.compacted))
                    cursor = None
        app.stats.add("watches_started")
        app.stats.add("watches_active")
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Cache-Control: no-cache, private\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
        app.stats.code(200)
        sent, start = 0, time.monotonic()
        deadline = start + timeout
        if drop and drop.get("afterSeconds") is not None:
            deadline = min(deadline, start + drop["afterSeconds"])
        if stall:
            deadline = min(deadline, start + stall.get("afterSeconds", 0.0))
        drop_after = drop.get("afterEvents") if drop else None
        next_bookmark = start + app.bookmark_interval
        try:
            if first:
                if drop_after is not None:
                    first = first[:max(0, drop_after)]
                self.wfile.write(b"".join(frame(x) for x in first))
                sent += len(first)
                app.stats.add("watch_events", len(first))
            while cursor is not None and not (drop_after is not None and sent >= drop_after):
                out = []
                with store.lock:
                    while True:
                        if store.stopping:
                            cursor = None
                            break
                        now = time.monotonic()
                        if now >= deadline:
                            cursor = None
                            break
                        if store.last_rv.get(key, 0) > cursor:
                            break
                        # periodic bookmarks only for a type with an event (store.evented)
                        ticks = bookmarks and key in store.evented
                        if ticks and now >= next_bookmark:
                            break
                        wake = deadline
                        if ticks:
                            wake = min(wake, next_bookmark)
                        store.conds[key].wait(max(0.001, wake - now))
                    if cursor is None:
                        break
                    # Nothing of this resource since the cursor: it moves to now, whatever
                    # other resources did meanwhile (their history may have been trimmed past
                    # the cursor; that does not expire this watch).
                    quiet = store.last_rv.get(key, 0) <= cursor
                    evs = [] if quiet else store.events_since(cursor)
                    if evs is None:
                        out.append(error_line(str(cursor), store.compacted))
                        cursor = None
                    else:
                        for ev in evs:
                            if ev.key != key:
                                continue
                            line = self.event_line(ev, matches)
                            if line:
                                out.append(line)
                        cursor = store.rv
                        if (bookmarks and key in store.evented
                                and time.monotonic() >= next_bookmark):
                            out.append(bookmark(cursor))
                            next_bookmark = time.monotonic() + app.bookmark_interval
                if drop_after is not None:
                    out = out[:max(0, drop_after - sent)]
                if out:
                    self.wfile.write(b"".join(frame(x) for x in out))
                    sent += len(out)
                    app.stats.add("watch_events", len(out))
            if stall and time.monotonic() >= deadline - 0.001:
                return self.stall_watch()
            if drop is not None and (drop_after is not None and sent >= drop_after
                                     or time.monotonic() >= deadline - 0.001
                                     and drop.get("afterSeconds") is not None):
                # an abrupt end: no terminating chunk, the connection is closed
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            app.stats.add("watches_active", -1)

    def stall_watch(self):
        """Fault stall-watch: from now on this watch sends nothing and does not end (no final
        chunk, no FIN) until its client goes away or the server stops. It copies a proxy or load
        balancer between the client and kube-apiserver that lost its upstream but keeps the
        client's connection open: TCP keepalive is answered by the proxy, so only the client's
        own watchdog can tell."""
        app = self.server.app
        app.stats.add("watch_stalls")
        self.close_connection = True
        try:
            self.wfile.flush()
            while not app.store.stopping:
                if select.select([self.connection], [], [], 0.2)[0]:
                    if not self.connection.recv(4096):
                        break  # the client closed its end
        except (OSError, ValueError, ssl.SSLError):
            pass

    @staticmethod
    def event_line(ev, matches):
        new_ok = matches(ev.obj)
        if ev.type == "ADDED" or ev.type == "DELETED":
            return ev.line if new_ok else None
        old_ok = matches(ev.old)
        if new_ok and old_ok:
            return ev.line
        if new_ok:
            return b'{"type":"ADDED","object":' + ev.line[len(b'{"type":"MODIFIED","object":'):]
        if old_ok:
            old = json.loads(dumps(ev.old))
            old["metadata"]["resourceVersion"] = str(ev.rv)
            return dumps({"type": "DELETED", "object": old}) + b"\n"
        return None

    # ---- OpenAPI and control

    def openapi(self, path):
        if path == "/openapi/v3":
            return self.send_obj(200, openapi_v3_index())
        if path.startswith("/openapi/v3/"):
            parts = path[len("/openapi/v3/"):].split("/")
            if parts[0] == "api" and len(parts) == 2:
                gv = ("", parts[1])
            elif parts[0] == "apis" and len(parts) == 3:
                gv = (parts[1], parts[2])
            else:
                gv = None
            if gv not in group_versions():
                raise ApiError(404, "the server could not find the requested resource")
            return self.send_obj(200, openapi_v3_doc(*gv))
        if path == "/openapi/v2":
            if "protobuf" in (self.headers.get("Accept") or ""):
                # as kube-openapi's handler: asked for the protobuf form, it answers
                # application/octet-stream (Go's mime parser, in older kubectl, rejects the '@'
                # of the protobuf media type)
                return self.send_bytes(200, OPENAPI_V2_PB, ctype="application/octet-stream")
            return self.send_obj(200, OPENAPI_V2_JSON)
        raise ApiError(404, "the server could not find the requested resource")

    def control(self, method, path, q, raw):
        app = self.server.app
        body = self.json_body(raw)
        if path == "/_fake/stats" and method == "GET":
            s = app.stats.snapshot()
            with app.store.lock:
                s["resourceVersion"] = app.store.rv
                s["compacted"] = app.store.compacted
                s["objects"] = {BY_KEY[k].qualified: len(t) for k, t in app.store.objects.items()}
            s["faults"] = app.faults.list()
            return self.send_obj(200, s)
        if path == "/_fake/faults":
            if method == "GET":
                return self.send_obj(200, {"faults": app.faults.list()})
            if method == "DELETE":
                app.faults.clear()
                return self.send_obj(200, {"faults": []})
            if method == "POST":
                rules = body.get("faults", body) if isinstance(body, dict) else body
                rules = rules if isinstance(rules, list) else [rules]
                if isinstance(body, dict) and body.get("replace"):
                    app.faults.clear()
                app.faults.add(rules)
                return self.send_obj(200, {"faults": app.faults.list()})
        if path == "/_fake/reset" and method == "POST":
            only = q.get("only", "")
            if only in ("", "store"):
                app.store.reset()
            if only in ("", "faults"):
                app.faults.clear()
            if only in ("", "stats"):
                app.stats.reset()
            return self.send_obj(200, {"reset": only or "all"})
        if path == "/_fake/release" and method == "POST":
            with app.held:
                n = app.n_held
                app.release_gen += 1
                app.held.notify_all()
            return self.send_obj(200, {"released": n})
        if path == "/_fake/held" and method == "GET":
            with app.held:
                return self.send_obj(200, {"held": app.n_held})
        if path == "/_fake/compact" and method == "POST":
            app.store.compact()
            return self.send_obj(200, {"compacted": app.store.compacted})
        raise ApiError(404, f"no control endpoint {method} {path}")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def finish_request(self, request, client_address):
        if self.app.sslctx is None:
            return super().finish_request(request, client_address)
        try:
            request.settimeout(10)
            conn = self.app.sslctx.wrap_socket(request, server_side=True)
            conn.settimeout(None)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            try:
                conn.close()
            except OSError:
                pass

# --------------------------------------------------------------------------------------------
# Certificates, kubeconfig, main.


def make_certs(d):
    ca, crt, key = (os.path.join(d, n) for n in ("ca.crt", "server.crt", "server.key"))
    if all(os.path.exists(p) for p in (ca, crt, key)):
        return ca, crt, key
    ext = os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [
        ["openssl", "req", "-x509", *ec, "-keyout", os.path.join(d, "ca.key"), "-out", ca,
         "-days", "30", "-subj", "/CN=fakeapi-ca",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["openssl", "req", *ec, "-keyout", key, "-out", os.path.join(d, "server.csr"),
         "-subj", "/CN=localhost"],
        ["openssl", "x509", "-req", "-in", os.path.join(d, "server.csr"), "-CA", ca,
         "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial", "-out", crt, "-days", "30",
         "-extfile", ext],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            sys.exit("fakeapi: %s failed:\n%s" % (" ".join(cmd[:3]), r.stdout.decode()))
    return ca, crt, key


def kubeconfig(server, ca_path, token):
    lines = ["apiVersion: v1", "kind: Config", "current-context: fake", "preferences: {}",
             "clusters:", "- name: fake", "  cluster:", f"    server: {server}"]
    if ca_path:
        with open(ca_path, "rb") as f:
            lines.append("    certificate-authority-data: " + base64.b64encode(f.read()).decode())
    lines += ["users:", "- name: fake", "  user:"]
    lines.append(f"    token: {token}" if token else "    {}")
    lines += ["contexts:", "- name: fake", "  context:", "    cluster: fake", "    user: fake",
              "    namespace: default", ""]
    return "\n".join(lines)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class App:
    pass


def read_documents(path):
    """The objects of a JSON file (an object or a List), or of a YAML file (several documents,
    e.g. deploy/crds/*.yaml; needs the yaml module, the only use of a non-stdlib module)."""
    with open(path) as f:
        text = f.read()
    try:
        docs = [json.loads(text)]
    except ValueError:
        import yaml  # noqa: PLC0415 (optional: only YAML files need it)
        docs = [d for d in yaml.safe_load_all(text) if d]
    out = []
    for data in docs:
        if data.get("kind", "").endswith("List"):
            for obj in data.get("items", []):
                if "kind" not in obj:
                    obj["kind"] = data["kind"][:-4]
                    obj.setdefault("apiVersion", data.get("apiVersion", "v1"))
                out.append(obj)
        else:
            out.append(data)
    return out


def load_objects(store, path):
    for obj in read_documents(path):
        res = find_kind(obj.get("apiVersion"), obj.get("kind"))
        if res is None:
            sys.exit(f"fakeapi: {path}: unknown kind {obj.get('apiVersion')}/{obj.get('kind')}")
        meta = obj.setdefault("metadata", {})
        for k in ("uid", "resourceVersion", "creationTimestamp"):
            meta.pop(k, None)
        status = obj.get("status")
        try:
            store.create(res, meta.get("namespace", "default") if res.namespaced else None, obj)
        except ApiError as e:
            if e.code != 409:  # kept from an earlier run (--state-dir): fine
                sys.exit(f"fakeapi: {path}: {e.message}")
            continue
        if status is not None and res.status:
            with store.lock:
                ns = meta.get("namespace") if res.namespaced else None
                cur = json.loads(store.objects[res.key][(ns, meta["name"])].raw)
                cur["status"] = status
                store.update(res, ns, meta["name"], cur, sub="status")


def preload_objects(store, path):
    """--preload: the nodes and pods of a JSON file stored as if they had been in etcd before the
    server started (a kube-apiserver restarted on a full cluster): each gets a uid, a
    creationTimestamp and a resourceVersion of its own, pods the defaults of a create (kept
    status included), but no watch event is recorded and the watch window starts after them
    (a watch from an older version gets 410, as after a compaction). What --load does with one
    create and one status update per object took minutes and a history copy for 500,000 pods
    (the daemon benchmark at 50,000 nodes); objects of other kinds go through --load's path."""
    stamp = now_time()
    with store.lock:
        for obj in read_documents(path):
            res = find_kind(obj.get("apiVersion"), obj.get("kind"))
            if res is None or res.key not in (("", "pods"), ("", "nodes")):
                sys.exit(f"fakeapi: {path}: --preload takes nodes and pods only")
            meta = obj.setdefault("metadata", {})
            ns = meta.get("namespace", "default") if res.namespaced else None
            name = meta.get("name") or ""
            check_name(res, name)
            store._check_namespace(res, ns)
            if (ns, name) in store.objects[res.key]:
                sys.exit(f"fakeapi: {path}: {res.qualified} {name!r} appears twice")
            if res.namespaced:
                meta["namespace"] = ns
            status = obj.get("status")
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                      "managedFields"):
                meta.pop(k, None)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=stamp, generation=1)
            try:  # they passed admission when they were created (Priority for pods)
                store._admit_create(res, obj)
            except ApiError as e:
                sys.exit(f"fakeapi: {path}: {e.message}")
            prepare_create(res, obj)
            if status is not None:
                obj["status"] = dict(obj.get("status") or {}, **status)
            store.rv += 1
            meta["resourceVersion"] = str(store.rv)
            e = store.objects[res.key][(ns, name)] = Entry(obj)
            for spec in res.fields.values():  # the field set kept beside it (see Entry)
                e.field(spec)
        store.sorted_keys = {}
        store.compacted = store.rv
        store.history, store.history_rvs = [], []
        store.expire_watches()


def main():
    ap = argparse.ArgumentParser(description="fake Kubernetes API server (loopback only)")
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--kubeconfig-out", help="write a kubeconfig for this server here")
    ap.add_argument("--token", default="", help="bearer token clients must send (TLS mode)")
    ap.add_argument("--plain", action="store_true",
                    help="plain HTTP, no authentication (kubectl sends no token over http)")
    ap.add_argument("--state-dir", help="certificates and the object store survive restarts here")
    ap.add_argument("--kubelet", action="store_true", help="simulate kubelets for bound pods")
    ap.add_argument("--kubelet-delay", type=float, default=0.2,
                    help="seconds from binding to Running (default 0.2)")
    ap.add_argument("--grace-cap", type=float, default=2.0,
                    help="longest simulated termination grace period in seconds (default 2)")
    ap.add_argument("--faults", default="", help="fault rules at startup (docs)")
    ap.add_argument("--history", type=int, default=10000,
                    help="watch history window in events (default 10000)")
    ap.add_argument("--bookmark-interval", type=float, default=10.0,
                    help="seconds between BOOKMARK events (default 10)")
    ap.add_argument("--watch-timeout", type=float, default=1800.0,
                    help="watch length when the client gives no timeoutSeconds")
    ap.add_argument("--load", action="append", default=[],
                    help="JSON object or List (e.g. kubectl get nodes -o json), or YAML documents "
                         "(a CRD of deploy/crds/), to create at start")
    ap.add_argument("--preload", action="append", default=[],
                    help="JSON nodes and pods stored at start as if already in etcd: no create "
                         "per object, no watch events (large benchmark clusters)")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    ap.add_argument("--serve-api", action="append", default=[],
                    help="serve a gated built-in group-version (scheduling.k8s.io/v1beta1, ...), "
                         "as --runtime-config does")
    args = ap.parse_args()
    if not args.plain and not args.token:
        ap.error("--token is required unless --plain")

    app = App()
    for gv in args.serve_api:
        if not any(r.gated and r.api_version == gv for r in RESOURCES):
            ap.error(f"--serve-api {gv}: not a gated group-version of this server")
        SERVED_GATED.add(gv)
    app.verbose = args.verbose
    app.token = "" if args.plain else args.token
    app.bookmark_interval = max(0.05, args.bookmark_interval)
    app.watch_timeout = args.watch_timeout
    app.stats = Stats()
    app.faults = Faults(app.stats)
    app.held, app.n_held, app.release_gen = threading.Condition(), 0, 0
    if args.faults:
        try:
            app.faults.add(parse_fault_spec(args.faults))
        except (ValueError, ApiError) as e:
            sys.exit(f"fakeapi: --faults: {e}")
    app.store = Store(args.history, app.stats, app.faults)
    state_file = None
    tmpdir = None
    if args.state_dir:
        os.makedirs(args.state_dir, exist_ok=True)
        certdir = args.state_dir
        state_file = os.path.join(args.state_dir, "store.json")
        if os.path.exists(state_file):
            app.store.load_saved(state_file)
    else:
        certdir = tmpdir = tempfile.mkdtemp(prefix="fakeapi-")
    for path in args.load:
        load_objects(app.store, path)
    for path in args.preload:
        preload_objects(app.store, path)
    if args.kubelet:
        app.store.kubelet = Kubelet(app.store, args.kubelet_delay, args.grace_cap)
        with app.store.lock:
            for e in list(app.store.objects[("", "pods")].values()):
                app.store.kubelet.notice(e.obj, "MODIFIED")
    app.sslctx, ca = None, None
    if not args.plain:
        ca, crt, key = make_certs(certdir)
        app.sslctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        app.sslctx.load_cert_chain(crt, key)

    server = Server(("127.0.0.1", args.port), Handler)
    server.app = app
    app.port = server.server_address[1]
    scheme = "http" if args.plain else "https"
    if args.kubeconfig_out:
        write_atomic(args.kubeconfig_out,
                     kubeconfig(f"{scheme}://127.0.0.1:{app.port}", ca, app.token))
    if args.port_file:
        write_atomic(args.port_file, f"{app.port}\n")

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write(f"fakeapi: serving {scheme}://127.0.0.1:{app.port}\n")
    sys.stderr.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        with app.store.lock:
            app.store.stopping = True
            app.store.notify_all()
        server.server_close()
        if state_file:
            app.store.save(state_file)
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
