"""tests/kube/fakeapi_base.py: the fake API server's resource table and shared helpers.

Owns: RESOURCES (one Res per served resource, with its field selectors) and the lookups by
path and key; the constants other modules share (CRDS, SERVED_GATED, annotation names);
errors as metav1.Status objects (ApiError, not_found, conflict, invalid, after apimachinery's
pkg/api/errors); the timestamp formats (metav1.Time, metav1.MicroTime); label and field
selectors as apimachinery's labels.Parse and fields.ParseSelector read them.

Must not: import the other fakeapi modules (every one of them imports this one).
"""

import datetime
import json
import os
import re
import time


# --------------------------------------------------------------------------------------------
# The resource table: adding a resource is one line.


class Res:
    def __init__(self, group, version, plural, kind, namespaced, short=(), status=False,
                 crd=False, subs=(), fields=None, categories=(), gated=False, gate=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.gated = gated  # built-in but served only with --serve-api (alpha/beta versions)
        self.gate = gate  # and then only with this feature gate on (--feature-gates)
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
    # 1.37: CompositePodGroup (scheduling/v1alpha3 types.go, +k8s:supportsSubresource="/status")
    # is served only with its own gate too (FeatureGateAPIRequirements in the control plane):
    # --serve-api scheduling.k8s.io/v1alpha3 --feature-gates CompositePodGroup=true
    Res("scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup", True,
        status=True, gated=True, gate="CompositePodGroup"),
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
GATES_ON = set()  # feature gates given as Name=true with --feature-gates
# kube-apiserver's WatchList gate (streaming lists, sendInitialEvents): beta, on by default in
# 1.32 and from 1.34 (off in 1.33; kubernetes/website feature-gates/WatchList.md); turned off
# with --feature-gates WatchList=false
WATCHLIST_GATE = "WatchList"
GATES_ON.add(WATCHLIST_GATE)
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
CRD_COLUMNS = {}  # (group, plural) -> version -> its additionalPrinterColumns
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


def invalid(res, name, field, why):
    """errors.NewInvalid: the kind qualified by its group ("Lease.coordination.k8s.io")."""
    kind = f"{res.kind}.{res.group}" if res.group else res.kind
    return ApiError(422, f'{kind} "{name}" is invalid: {field}: {why}',
                    details={"name": name, "group": res.group, "kind": res.kind,
                             "causes": [{"reason": "FieldValueInvalid", "message": why,
                                         "field": field}]})


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


OBJECT_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}


def selector_object_matches(sel, labels):
    """A metav1.LabelSelector (matchLabels, matchExpressions), as the requirements of a string
    selector (labels_match); an empty one matches all."""
    reqs = [(k, "=", v) for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        op = OBJECT_OPS.get(e.get("operator"))
        if op:
            reqs.append((e.get("key"), op, set(e.get("values") or [])))
    return labels_match(reqs, labels)


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
