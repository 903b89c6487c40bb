"""tests/kube/fakeapi_admit.py: validation and admission rules of the fake API server.

Owns: CRD structural schema pruning and defaults (apiextensions-apiserver's pruning and
defaulting); names, kinds and create-time defaults (prepare_create); update rules
(check_update, after the registry strategies' ValidateUpdate); Event, Lease and MicroTime
checks; the Priority admission plugin and PriorityClass rules; PodGroup immutability;
list option validation; known-field pruning of built-in objects and fieldValidation
(Ignore/Warn/Strict) with the Warning headers it produces. Each rule names the upstream code
it follows; also the pod status helpers the store and the kubelet share (conditions, QoS
class). Functions of their arguments, the shared CRDS table and the request's thread-local
warnings (_WARNINGS); the store passes its tables.
"""

import copy
import re
import sys
import threading
from fakeapi_base import (ApiError, CRD_COLUMNS, CRDS, GATES_ON, WATCHLIST_GATE, NAME_RE, RESOURCES, SERVED_GATED, conflict, dig, invalid,
    now_time)
from fakeapi_dra import check_allocation, check_pod_node_affinity, check_weight


def refresh_crds(table):
    """Recomputes CRDS and CRD_COLUMNS from the stored CRD objects (caller holds the store
    lock)."""
    CRDS.clear()
    CRD_COLUMNS.clear()
    for e in table.values():
        spec = e.obj.get("spec") or {}
        group, plural = spec.get("group"), dig(spec, "names.plural")
        if not group or not plural or e.obj["metadata"].get("deletionTimestamp"):
            continue
        CRDS[(group, plural)] = {v["name"]: dig(v, "schema.openAPIV3Schema")
                                 for v in spec.get("versions") or []
                                 if isinstance(v, dict) and v.get("name") and
                                 v.get("served", True)}
        CRD_COLUMNS[(group, plural)] = {v["name"]: v.get("additionalPrinterColumns") or []
                                        for v in spec.get("versions") or []
                                        if isinstance(v, dict) and v.get("name")}


def served(res):
    """A built-in resource always (a gated one only with --serve-api); a custom one while its
    CRD serves this version."""
    if res.gated:
        return res.api_version in SERVED_GATED and (not res.gate or res.gate in GATES_ON)
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
    """Sets condition ctype as kube's podutil.UpdatePodCondition does (the Binding's
    PodScheduled=True in BindingREST, an eviction's DisruptionTarget): the condition is replaced
    by the new one, so a reason or message it does not give goes (a PodScheduled=False
    "Unschedulable" message does not stay on the bound pod); lastTransitionTime is now when the
    status changes or the condition is new, else the old one is kept."""
    conds = status.setdefault("conditions", [])
    new = {"type": ctype, "status": value, "lastProbeTime": None,
           "lastTransitionTime": now_time()}
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    for k, c in enumerate(conds):
        if c.get("type") == ctype:
            if c.get("status") == value:
                new["lastTransitionTime"] = c.get("lastTransitionTime")
            conds[k] = new
            return
    conds.append(new)


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


def check_pod_scheduling_terms(res, name, spec):
    """What validation.go checks of a pod's inter-pod terms on create: each PodAffinityTerm's
    topologyKey (validatePodAffinityTerm: 'Required value: can not be empty'), each preferred
    term's weight (validateWeightedPodAffinityTerms: 'Invalid value: W: must be in the range
    1-100'), and each topologySpreadConstraint (validateTopologySpreadConstraints: maxSkew > 0
    'must be greater than zero', topologyKey not empty, whenUnsatisfiable DoNotSchedule or
    ScheduleAnyway, no second {topologyKey, whenUnsatisfiable}, minDomains > 0 and only with
    DoNotSchedule). The first error is raised, as a 422 names it."""
    aff = (spec or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        k = aff.get(kind) or {}
        f = "spec.affinity.%s." % kind
        for i, t in enumerate(k.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            if not (t or {}).get("topologyKey"):
                raise invalid(res, name, "%srequiredDuringSchedulingIgnoredDuringExecution[%d]"
                              ".topologyKey" % (f, i), "Required value: can not be empty")
        for i, t in enumerate(k.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            g = "%spreferredDuringSchedulingIgnoredDuringExecution[%d]" % (f, i)
            check_weight(res, name, g, t)
            if not ((t or {}).get("podAffinityTerm") or {}).get("topologyKey"):
                raise invalid(res, name, g + ".podAffinityTerm.topologyKey",
                              "Required value: can not be empty")
    tsc = (spec or {}).get("topologySpreadConstraints") or []
    for i, c in enumerate(tsc):
        f = "spec.topologySpreadConstraints[%d]" % i
        skew, when, md = c.get("maxSkew", 0), c.get("whenUnsatisfiable"), c.get("minDomains")
        if not isinstance(skew, int) or skew <= 0:
            raise invalid(res, name, f + ".maxSkew",
                          "Invalid value: %s: must be greater than zero" % skew)
        if not c.get("topologyKey"):
            raise invalid(res, name, f + ".topologyKey", "Required value: can not be empty")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise invalid(res, name, f + ".whenUnsatisfiable", 'Unsupported value: "%s": '
                          'supported values: "DoNotSchedule", "ScheduleAnyway"' % when)
        if any(o.get("topologyKey") == c.get("topologyKey") and
               o.get("whenUnsatisfiable") == when for o in tsc[i + 1:]):
            raise invalid(res, name, f + ".{topologyKey, whenUnsatisfiable}",
                          'Duplicate value: "{%s, %s}"' % (c.get("topologyKey"), when))
        if md is not None and (not isinstance(md, int) or md <= 0):
            raise invalid(res, name, f + ".minDomains",
                          "Invalid value: %s: must be greater than zero" % md)
        if md is not None and when != "DoNotSchedule":
            raise invalid(res, name, f + ".minDomains", "Invalid value: %s: can only use "
                          "minDomains if whenUnsatisfiable=DoNotSchedule, not %s" % (md, when))


def default_requests(spec):
    """SetDefaults_Pod (pkg/apis/core/v1/defaults.go), for a Pod only, not a pod template: each
    container's and init container's limits stand for its requests of the same names that are
    not given (per resource: a cpu limit with a memory request still defaults the cpu
    request)."""
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            res = c.get("resources") if isinstance(c, dict) else None
            lim = res.get("limits") if isinstance(res, dict) else None
            if not isinstance(lim, dict) or not lim:
                continue
            req = res.get("requests")
            if not isinstance(req, dict):
                req = res["requests"] = {}
            for name, value in lim.items():
                req.setdefault(name, value)


def prepare_create(res, obj):
    """What the real registry strategies do on create, for the resources where it matters."""
    meta = obj["metadata"]
    if res.key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        if not spec.get("containers"):
            raise invalid(res, meta["name"], "spec.containers", "Required value")
        check_pod_node_affinity(res, meta["name"], spec)
        check_pod_scheduling_terms(res, meta["name"], spec)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        default_requests(spec)
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
    elif res.key in (("scheduling.k8s.io", "podgroups"), ("resource.k8s.io", "resourceclaims"),
                     CPG_KEY):
        obj.pop("status", None)  # their strategies' PrepareForCreate drop status (issue 17)
        if res.key == CPG_KEY:
            check_cpg(res, obj)
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


def check_ext_status(res, pod):
    """validatePodExtendedResourceClaimStatus (pkg/apis/core/validation, KEP-5004): the
    requestMappings are required, each names a container of the pod (init or regular), one of
    that container's resources and a request that is a DNS label, no mapping twice;
    resourceClaimName is required and a ResourceClaim name."""
    st = dig(pod, "status.extendedResourceClaimStatus")
    if st is None:
        return
    name = pod["metadata"]["name"]
    f = "status.extendedResourceClaimStatus"
    ctrs = {c.get("name"): c for k in ("initContainers", "containers")
            for c in dig(pod, "spec." + k, []) or []}
    maps = st.get("requestMappings") or []
    if not maps:
        raise invalid(res, name, f + ".requestMappings", "Required value")
    seen = set()
    for i, m in enumerate(maps):
        at = "%s.requestMappings[%d]" % (f, i)
        key = (m.get("containerName"), m.get("resourceName"), m.get("requestName"))
        if key in seen:
            raise invalid(res, name, at + ".containerName", 'Duplicate value: "%s"' % key[0])
        seen.add(key)
        c = ctrs.get(m.get("containerName"))
        if c is None:
            raise invalid(res, name, at + ".containerName", 'Invalid value: "%s": must match '
                          "the name of a container" % m.get("containerName"))
        r = c.get("resources") or {}
        if m.get("resourceName") not in {**(r.get("limits") or {}), **(r.get("requests") or {})}:
            raise invalid(res, name, at + ".resourceName", 'Invalid value: "%s": must match '
                          "the name of an extended resource of the container"
                          % m.get("resourceName"))
        if not DNS_LABEL.match(m.get("requestName") or "") or len(m["requestName"]) > 63:
            raise invalid(res, name, at + ".requestName", 'Invalid value: "%s": a lowercase '
                          "RFC 1123 label" % m.get("requestName"))
    cn = st.get("resourceClaimName") or ""
    if not cn:
        raise invalid(res, name, f + ".resourceClaimName", "Required value")
    if not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", cn) or len(cn) > 253:
        raise invalid(res, name, f + ".resourceClaimName", 'Invalid value: "%s": a lowercase '
                      "RFC 1123 subdomain" % cn)


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
        check_ext_status(res, new)
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
CPG_KEY = ("scheduling.k8s.io", "compositepodgroups")
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


def check_cpg(res, obj):
    """CompositePodGroup create validation, as scheduling/v1alpha3 types.go declares it
    (declarative validation tags): spec.workloadRef +required; spec.schedulingPolicy a union,
    exactly one of basic and gang; gang.minGroupCount +required +minimum=1;
    spec.schedulingConstraints.topology +maxItems=1. Messages in the generic validators'
    wording ("Required value", "must be greater than or equal to 1"); not checked against a
    live server."""
    name = obj["metadata"]["name"]
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if not isinstance(spec.get("workloadRef"), dict):
        raise invalid(res, name, "spec.workloadRef", "Required value")
    pol = spec.get("schedulingPolicy") if isinstance(spec.get("schedulingPolicy"), dict) else {}
    if ("basic" in pol) == ("gang" in pol):
        raise invalid(res, name, "spec.schedulingPolicy",
                      "Invalid value: must specify exactly one of: `basic`, `gang`")
    if "gang" in pol:
        mgc = (pol.get("gang") or {}).get("minGroupCount")
        if mgc is None:
            raise invalid(res, name, "spec.schedulingPolicy.gang.minGroupCount", "Required value")
        if not isinstance(mgc, int) or mgc < 1:
            raise invalid(res, name, "spec.schedulingPolicy.gang.minGroupCount",
                          f"Invalid value: {mgc}: must be greater than or equal to 1")
    topo = (spec.get("schedulingConstraints") or {}).get("topology") or []
    if len(topo) > 1:
        raise invalid(res, name, "spec.schedulingConstraints.topology",
                      f"Too many: {len(topo)}: must have at most 1 item")


# Every CompositePodGroupSpec field is +k8s:immutable (scheduling/v1alpha3 types.go).
CPG_IMMUTABLE = ("parentCompositePodGroupName", "workloadRef", "schedulingPolicy",
                 "priorityClassName", "priority", "schedulingConstraints")


def check_podgroup_update(res, cur, new):
    name = cur["metadata"]["name"]
    old_spec, spec = cur.get("spec") or {}, new.get("spec") or {}
    if res.key == CPG_KEY:
        fields = CPG_IMMUTABLE
    elif res.version == "v1alpha2":
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
    """validateListOptions and validateWatchOptions (apimachinery
    pkg/apis/meta/internalversion/validation), the rules about resourceVersionMatch and
    sendInitialEvents; a watch with sendInitialEvents needs the WatchList gate (WATCHLIST_GATE)."""
    match, rv, cont = q.get("resourceVersionMatch") or "", q.get("resourceVersion") or "", \
        q.get("continue") or ""
    initial = q.get("sendInitialEvents")
    m, errs = "resourceVersionMatch", []
    if watch:
        if initial is not None and match != "NotOlderThan":
            errs.append((m, "Forbidden", "sendInitialEvents requires setting "
                                         "resourceVersionMatch to NotOlderThan"))
        if initial is not None and WATCHLIST_GATE not in GATES_ON:
            errs.append(("sendInitialEvents", "Forbidden", "sendInitialEvents is forbidden for "
                                                           "watch unless the WatchList feature "
                                                           "gate is enabled"))
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
    # CompositePodGroupSpec and Status as scheduling/v1alpha3 types.go declares them (1.37):
    # every spec field is immutable, so the spec's fields are CPG_IMMUTABLE
    CPG_KEY: {"": TOP | {"spec", "status"}, "spec": set(CPG_IMMUTABLE), "status": {"conditions"}},
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
