"""tests/kube/fakeapi_store.py: the fake API server's object store.

Owns: counters (Stats) and fault injection rules (Faults, the /_fake/faults API); the
objects by resource, namespace and name, with one global resourceVersion counter (etcd's
revision), a bounded watch history with compaction ("too old resource version", 410) and the
fan-out of watch events; get/list (limit/continue, resourceVersionMatch) and
create/update/patch/delete/deletecollection with preconditions, finalizers and
deletionTimestamp, as the generic registry (apiserver's pkg/registry/generic/registry/store.go)
does, a namespace's contents deleted with it; pods/binding, pods/eviction with
PodDisruptionBudgets, the podgroup-protection controller; save and load of the store.
Admission and validation rules live in fakeapi_admit.py, the resourceclaim controller in
fakeapi_dra.py (mixed into Store).
"""

import base64
import bisect
import json
import os
import random
import threading
import time
import uuid
from fakeapi_base import (ApiError, BY_KEY, BY_PATH, CLAIMS_KEY, CRDS, CRD_KEY, DEFAULT_NAMESPACES, GATES_ON,
    MODIFIED_MSG, NAME_ALPHABET, RESOURCES, conflict, dig, dumps, field_value, fields_match,
    invalid, labels_match, not_found, now_time, parse_field_selector, parse_label_selector,
    selector_object_matches, success_status)
from fakeapi_patch import json_patch, merge_patch, strategic_merge
from fakeapi_dra import PG_CLAIMS_GATE, ClaimController, pg_claim_fields
from fakeapi_admit import (CPG_KEY, LEASE_KEY, PC_KEY, PG_FINALIZER, PG_KEY, PODS_KEY,
    SYSTEM_PRIORITY_CLASSES, admit_priority, check_lease, check_list_options, check_name,
    check_podgroup_update, check_priority_class, check_update, field_validation, find_kind,
    forbidden, pod_needs_kubelet, pod_ready, precondition_failed, prepare_create, refresh_crds,
    scaled, set_condition, spec_of, too_large_rv)


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
                if r.get("notPath") and r["notPath"] in path:
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


class Store(ClaimController):
    def __init__(self, history, stats, faults):
        self.lock = threading.RLock()
        # Admission plugins turned off, as kube-apiserver's --disable-admission-plugins does
        # (only "Priority" is known here: Kubernetes' integration test servers run without it,
        # test/integration/util InitTestAPIServer, so that tests may set spec.priority bare).
        self.disabled_admission = set()
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
        elif res.key == PG_KEY:
            self._podgroup_claims(res, obj, etype)
            for (cns, cname) in self._claims_in(ns):  # claims of a PodGroup gone go too
                self._sync_claim(cns, cname)
        return entry

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
                # names.SimpleNameGenerator: the base cut to 58 characters (63 - 5), then 5
                # random ones; retried on a clash, as the real server does
                for _ in range(8):
                    name = gen[:58] + "".join(random.choice(NAME_ALPHABET) for _ in range(5))
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
            if res.key == PG_KEY:
                pg_claim_fields(res, body, None, PG_CLAIMS_GATE in GATES_ON)
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
        prio = "Priority" not in self.disabled_admission
        if res.key == PODS_KEY and prio:
            admit_priority(res, body, classes)
        elif res.key == PG_KEY:
            if res.version in ("v1beta1", "v1alpha3") and prio:
                admit_priority(res, body, classes)
            if res.version == "v1beta1" and isinstance(body.get("spec"), dict):
                body["spec"].setdefault("disruptionMode", {"single": {}})
            fins = body["metadata"].setdefault("finalizers", [])
            if isinstance(fins, list) and PG_FINALIZER not in fins:
                fins.append(PG_FINALIZER)
        elif res.key == CPG_KEY and prio:
            admit_priority(res, body, classes)
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
        elif res.key in (PG_KEY, CPG_KEY) and sub is None:
            check_podgroup_update(res, cur, new)
        if res.key == PG_KEY:
            pg_claim_fields(res, new, cur, PG_CLAIMS_GATE in GATES_ON)
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
                # customResourceStrategy.PrepareForUpdate: generation follows every change
                # but metadata's, the status's too where no status subresource splits it off
                if spec_of(new) != spec_of(cur) or (not res.status and
                                                    new.get("status") != cur.get("status")):
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
