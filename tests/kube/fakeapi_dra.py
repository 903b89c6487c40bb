"""tests/kube/fakeapi_dra.py: Dynamic Resource Allocation in the fake API server.

Owns: the parts of kube-controller-manager's resourceclaim controller a scheduler relies on
(pkg/controller/resourceclaim/controller.go: template claims per pod, reservedFor cleanup,
the delete-protection finalizer, claims deleted once their owning pod is gone or done), as
ClaimController, a mixin of the Store class whose methods run under the store lock; and the
validation of a ResourceClaim's status.allocation (pkg/apis/resource/validation: driver, pool
and device names, node selectors).
Must not: import fakeapi_store or fakeapi_admit (the store passes itself as self).
"""

import copy
import json
import random
import re
import uuid
from fakeapi_base import BY_KEY, CLAIMS_KEY, CLAIM_FINALIZER, NAME_ALPHABET, dig, invalid, now_time


class ClaimController:
    """Store methods of the resourceclaim controller (mixed into Store)."""

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
    """corevalidation.ValidateNodeSelector, as validateAllocationResult and a pod's required
    node affinity (validateNodeAffinity) call it: at least one term, each term valid."""
    terms = (sel or {}).get("nodeSelectorTerms") or []
    if not terms:
        raise invalid(res, name, f + ".nodeSelectorTerms",
                      "Required value: must have at least one node selector term")
    for t, term in enumerate(terms):
        check_node_selector_term(res, name, term, "%s.nodeSelectorTerms[%d]" % (f, t))


def check_weight(res, name, f, term):
    """A preferred term's weight at f.weight: an integer in 1..100, as validation.go's
    ValidatePreferredSchedulingTerms and validateWeightedPodAffinityTerms say it ('Invalid value:
    W: must be in the range 1-100')."""
    w = (term or {}).get("weight", 0)
    if not isinstance(w, int) or isinstance(w, bool) or w <= 0 or w > 100:
        raise invalid(res, name, f + ".weight", "Invalid value: %s: must be in the range 1-100" % w)


def check_pod_node_affinity(res, name, spec):
    """validateNodeAffinity (pkg/apis/core/validation/validation.go) of a pod being created:
    the required selector as check_node_selector; each preferred term's weight in 1..100
    (ValidatePreferredSchedulingTerms: 'Invalid value: W: must be in the range 1-100') and its
    preference a valid term (an empty one is allowed)."""
    na = ((spec or {}).get("affinity") or {}).get("nodeAffinity") or {}
    f = "spec.affinity.nodeAffinity."
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        check_node_selector(res, name, req, f + "requiredDuringSchedulingIgnoredDuringExecution")
    for i, p in enumerate(na.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        g = "%spreferredDuringSchedulingIgnoredDuringExecution[%d]" % (f, i)
        check_weight(res, name, g, p)
        check_node_selector_term(res, name, (p or {}).get("preference"), g + ".preference")


def check_node_selector_term(res, name, term, f):
    """corevalidation.ValidateNodeSelectorTerm: matchExpressions on labels (six operators and
    their values) and matchFields on metadata.name (In or NotIn, one value)."""
    for i, r in enumerate((term or {}).get("matchExpressions") or []):
        g = "%s.matchExpressions[%d]" % (f, i)
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
        g = "%s.matchFields[%d]" % (f, i)
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
