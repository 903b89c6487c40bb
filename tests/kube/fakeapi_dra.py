"""tests/kube/fakeapi_dra.py: Dynamic Resource Allocation in the fake API server.

Owns: the parts of kube-controller-manager's resourceclaim controller a scheduler relies on
(pkg/controller/resourceclaim/controller.go: template claims per pod, reservedFor cleanup,
the delete-protection finalizer, claims deleted once their owning pod is gone or done), as
ClaimController, a mixin of the Store class whose methods run under the store lock; and the
validation of a ResourceClaim's status.allocation (pkg/apis/resource/validation: driver, pool
and device names, node selectors).
KEP-5729 (gate DRAWorkloadResourceClaims): a PodGroup's spec.resourceClaims and
status.resourceClaimStatuses as the PodGroup strategy keeps and validates them
(pg_claim_fields), and the controller's claims made for a PodGroup from its templates.
Must not: import fakeapi_store or fakeapi_admit (the store passes itself as self).
"""

import copy
import json
import random
import re
import uuid
from fakeapi_base import BY_KEY, CLAIMS_KEY, CLAIM_FINALIZER, NAME_ALPHABET, dig, invalid, now_time

PG_KEY = ("scheduling.k8s.io", "podgroups")


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
        for rc in (pod.get("spec") or {}).get("resourceClaims") or []:
            t = rc.get("resourceClaimTemplateName")
            tmpl = self.objects[("resource.k8s.io", "resourceclaimtemplates")].get((ns, t))
            if not t or not tmpl:
                continue
            group = self._group_claim(pod, rc)
            if group is not None:  # the PodGroup's claim: named once made, none for the pod
                if group:
                    statuses.append({"name": rc.get("name"), "resourceClaimName": group})
                continue
            name = self._template_claim(ns, rc, tmpl, "pod", {
                "apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                "uid": pod["metadata"].get("uid")})
            statuses.append({"name": rc.get("name"), "resourceClaimName": name})
        if statuses:
            pods = BY_KEY[("", "pods")]
            e = self.objects[pods.key].get((ns, pod["metadata"]["name"]))
            new = json.loads(e.raw)
            new.setdefault("status", {})["resourceClaimStatuses"] = statuses
            self._commit(pods, ns, pod["metadata"]["name"], "MODIFIED", new, e.obj)

    # ---- KEP-5729: claims made for a PodGroup (pkg/controller/resourceclaim, 1.36+ with the
    # DRAWorkloadResourceClaims gate; its unit test TestSyncHandler "create for PodGroup",
    # "update Pod status with PodGroup claim", "skip create for Pod with PodGroup"): for each
    # spec.resourceClaims entry of a PodGroup naming a template, one claim
    # "<podgroup>-<claim>-<5 chars>" owned by the PodGroup, annotated
    # resource.kubernetes.io/podgroup-claim-name, named in the PodGroup's
    # status.resourceClaimStatuses; a pod of the group (spec.schedulingGroup.podGroupName)
    # whose entry equals the PodGroup's gets that claim's name in its own
    # status.resourceClaimStatuses, and no claim of its own. Caller holds the lock.
    def _podgroup_claims(self, res, pg, etype):
        if etype != "ADDED" or not (pg.get("spec") or {}).get("resourceClaims"):
            return
        ns, pgname = pg["metadata"].get("namespace"), pg["metadata"]["name"]
        claims = BY_KEY[CLAIMS_KEY]
        statuses = []
        for rc in pg["spec"]["resourceClaims"]:
            t = rc.get("resourceClaimTemplateName")
            tmpl = self.objects[("resource.k8s.io", "resourceclaimtemplates")].get((ns, t))
            if not t or not tmpl:
                continue  # upstream: an error, retried; here the test makes the template first
            name = self._template_claim(ns, rc, tmpl, "podgroup", {
                "apiVersion": "%s/%s" % (res.group, res.version), "kind": "PodGroup",
                "name": pgname, "uid": pg["metadata"].get("uid")})
            statuses.append({"name": rc.get("name"), "resourceClaimName": name})
        if not statuses:
            return
        e = self.objects[res.key].get((ns, pgname))
        new = json.loads(e.raw)
        new.setdefault("status", {})["resourceClaimStatuses"] = statuses
        self._commit(res, ns, pgname, "MODIFIED", new, e.obj)
        pods = BY_KEY[("", "pods")]  # pods made before it: their status now
        for (pns, pname), pe in list(self.objects[pods.key].items()):
            if pns != ns or dig(pe.obj, "spec.schedulingGroup.podGroupName") != pgname:
                continue
            named = ((rc.get("name"), self._group_claim(pe.obj, rc))
                     for rc in dig(pe.obj, "spec.resourceClaims", []) or [])
            add = [{"name": n, "resourceClaimName": g} for n, g in named if g]
            if add:
                pnew = json.loads(pe.raw)
                have = pnew.setdefault("status", {}).setdefault("resourceClaimStatuses", [])
                have.extend(a for a in add if a["name"] not in {h.get("name") for h in have})
                self._commit(pods, ns, pname, "MODIFIED", pnew, pe.obj)

    def _group_claim(self, pod, rc):
        """The name of the claim made for the pod's PodGroup for entry rc (equal to one of
        the PodGroup's template entries), or None."""
        pgname = dig(pod, "spec.schedulingGroup.podGroupName")
        ns = pod["metadata"].get("namespace")
        e = self.objects[PG_KEY].get((ns, pgname)) if pgname else None
        if not e or rc not in ((e.obj.get("spec") or {}).get("resourceClaims") or []):
            return None
        return next((s.get("resourceClaimName") for s in
                     (e.obj.get("status") or {}).get("resourceClaimStatuses") or []
                     if s.get("name") == rc.get("name")), "")

    def _template_claim(self, ns, rc, tmpl, kind, owner):
        """The claim made from template entry tmpl for spec.resourceClaims entry rc of its
        owner (a pod or a PodGroup): "<owner>-<claim>-<5 chars>", annotated
        resource.kubernetes.io/<kind>-claim-name, the owner its controller. Its name."""
        name = "%s-%s-%s" % (owner["name"], rc.get("name"), "".join(
            random.choice(NAME_ALPHABET) for _ in range(5)))
        owner = dict(owner, controller=True, blockOwnerDeletion=True)
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                              "creationTimestamp": now_time(),
                              "annotations": {"resource.kubernetes.io/%s-claim-name" % kind:
                                              rc.get("name")},
                              "ownerReferences": [owner]},
                 "spec": copy.deepcopy((tmpl.obj.get("spec") or {}).get("spec") or {})}
        self._commit(BY_KEY[CLAIMS_KEY], ns, name, "ADDED", claim, None)
        return name

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
            if (r.get("apiGroup"), r.get("resource")) == ("scheduling.k8s.io", "podgroups"):
                # KEP-5729's lifecycle ("when all of the Pods in the PodGroup have been
                # deleted, then the ResourceClaim is deallocated"): the PodGroup's entry stays
                # while the PodGroup (same uid) has a pod that is not done
                ge = self.objects[PG_KEY].get((ns, r.get("name")))
                return bool(ge) and ge.obj["metadata"].get("uid") == r.get("uid") and any(
                    pns == ns and dig(pe.obj, "spec.schedulingGroup.podGroupName") ==
                    r.get("name") and not self._pod_done(pe.obj)
                    for (pns, _), pe in self.objects[pods.key].items())
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
                      if o.get("controller") and ((o.get("kind"), o.get("apiVersion")) == (
                          "Pod", "v1") or (o.get("kind") == "PodGroup" and str(
                              o.get("apiVersion")).startswith("scheduling.k8s.io/")))), None)
        if not owner or cur["metadata"].get("deletionTimestamp"):
            return False
        if owner.get("kind") == "PodGroup":  # the garbage collector: gone with its PodGroup
            ge = self.objects[PG_KEY].get((ns, owner.get("name")))
            if ge and ge.obj["metadata"].get("uid") == owner.get("uid"):
                return False
        else:
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


# ---- KEP-5729: a PodGroup's claim fields in the PodGroup strategy ----------------------------
# scheduling/v1alpha2 and v1beta1 types.go: PodGroupSpec.resourceClaims (+featureGate=
# DRAWorkloadResourceClaims, +k8s:listType=map, +k8s:listMapKey=name, +k8s:maxItems=4,
# +k8s:immutable), PodGroupResourceClaim {name +k8s:required +k8s:format=k8s-short-name;
# resourceClaimName | resourceClaimTemplateName +k8s:unionMember +k8s:format=k8s-long-name};
# PodGroupStatus.resourceClaimStatuses (gated, map keyed by name, +k8s:maxItems=4) whose names
# must match an entry of spec.resourceClaims (validatePodGroupResourceClaimStatuses). Without the
# gate both are dropped on write unless the old object uses them (the registry's
# dropDisabledFields, as TestDropPodGroupTemplateResourceClaims has it). Messages in the
# generic validators' words; not checked against a live server.
PG_CLAIMS_GATE = "DRAWorkloadResourceClaims"


def pg_claim_fields(res, obj, cur, gate_on):
    """Drops or validates obj's claim fields (cur: the old object, None on create)."""
    name = obj["metadata"]["name"]
    for part, field in (("spec", "resourceClaims"), ("status", "resourceClaimStatuses")):
        sub = obj.get(part)
        if not isinstance(sub, dict) or field not in sub:
            continue
        if not gate_on and not ((cur or {}).get(part) or {}).get(field):
            del sub[field]
            continue
        v = sub[field]
        if v is None:
            continue
        if not isinstance(v, list):
            raise invalid(res, name, "%s.%s" % (part, field), "Invalid value: not a list")
        if len(v) > 4:
            raise invalid(res, name, "%s.%s" % (part, field),
                          "Too many: %d: must have at most 4 items" % len(v))
        seen = set()
        for i, e in enumerate(v):
            path = "%s.%s[%d]" % (part, field, i)
            n = e.get("name") if isinstance(e, dict) else None
            if not n:
                raise invalid(res, name, path + ".name", "Required value")
            if not isinstance(n, str) or len(n) > 63 or not DNS_LABEL.match(n):
                raise invalid(res, name, path + ".name", 'Invalid value: "%s": %s' % (n, LABEL_MSG))
            if n in seen:
                raise invalid(res, name, path, 'Duplicate value: {"name":"%s"}' % n)
            seen.add(n)
            refs = ("resourceClaimName", "resourceClaimTemplateName") if part == "spec" else \
                ("resourceClaimName",)
            given = [k for k in refs if e.get(k) is not None]
            if part == "spec" and len(given) != 1:
                raise invalid(res, name, path, "Invalid value: must specify exactly one of: "
                              "`resourceClaimName`, `resourceClaimTemplateName`")
            for k in given:
                if not isinstance(e[k], str) or len(e[k]) > 253 or not DNS_SUBDOMAIN.match(e[k]):
                    raise invalid(res, name, "%s.%s" % (path, k),
                                  'Invalid value: "%s": %s' % (e[k], SUBDOMAIN_MSG))
            if part == "status" and n not in {c.get("name") for c in
                                              dig(obj, "spec.resourceClaims", []) or []}:
                raise invalid(res, name, path + ".name", 'Invalid value: "%s": must match the '
                              'name of an entry in `spec.resourceClaims`' % n)
