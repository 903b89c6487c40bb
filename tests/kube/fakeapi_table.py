"""Server-side printing of custom resources, as kube-apiserver answers `kubectl get` (which asks
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...;v=v1beta1..., application/json`).

What each part copies (read upstream):
- the columns: apiextensions-apiserver registry/customresource/tableconvertor New: "Name"
  (type string, format name), then the version's additionalPrinterColumns in order (name,
  type, format, description or "Custom resource definition column (in JSONPath format): P",
  priority); a version without any gets one "Age" column (type date,
  .metadata.creationTimestamp: the CRD handler's serveDefaultColumnsIfEmpty);
- the cells: ConvertToTable: the name, then per column the first result of its simple JSONPath
  (missing: null); a string column prints whatever it finds as client-go jsonpath does (a
  string as is, a map or list as compact JSON, other values as text); the other types by
  cellForJSONValue (integer: a whole or truncated number; number: a number; boolean; date:
  the age of an RFC 3339 time by apimachinery's ShortHumanDuration via
  ConvertToHumanReadableDateType, "<invalid>" when it does not parse, "<unknown>" when empty;
  a value of another type: null);
- the table: kind Table in the negotiated meta.k8s.io version (v1 or v1beta1), metadata
  resourceVersion and, for a list, continue and remainingItemCount; each row's object by
  `includeObject` (apiserver endpoints/handlers/response.go asTable): Metadata or absent: a
  PartialObjectMetadata of the Table's version; Object: the object; None: null; another
  value: 400 `unrecognized includeObject value: "X"`.
- Pods (pkg/printers/internalversion printers.go: podColumnDefinitions and printPod, read
  upstream): Name, Ready (ready/total containers, restartable init containers counted), Status
  (the phase, or status.reason; SchedulingGated; Init:... while init containers run or fail;
  the last container's waiting or terminated reason, ExitCode:N or Signal:N; Completed back to
  Running or NotReady while a container still runs; Terminating once deleted, Unknown for
  NodeLost), Restarts ("N" or "N (AGE ago)" after a last termination), Age, and at priority 1
  (kubectl -o wide) IP, Node, Nominated Node, Readiness Gates (each "<none>" when empty); the
  server always makes the wide columns. Ages of built-in kinds are apimachinery's HumanDuration
  (translateTimestampSince), those of custom columns ShortHumanDuration. A Succeeded or Failed
  pod's row carries the condition Completed.
- core/v1 Events (printEvent): Last Seen, Type, Reason, Object (kind/name), Message, and at
  priority 1 Subobject, Source (formatEventSource), First Seen, Count, Name.
- Nodes (printNode): Status (Ready, NotReady or Unknown by the Ready condition, then
  SchedulingDisabled when cordoned), Roles (node-role.kubernetes.io/<role> and
  kubernetes.io/role labels, sorted, "<none>"), Age, Version (kubeletVersion), and at priority 1
  Internal-IP, External-IP ("<none>"), OS-Image, Kernel-Version, Container-Runtime
  ("<unknown>").
Not copied: tables of the other built-in kinds (they answer plain JSON here, and kubectl prints
NAME and AGE), tables on watches (`kubectl get -w` reads plain events).
"""
import calendar
import json
import re
import time

from fakeapi_base import ApiError, dig

TABLE_GROUP = "meta.k8s.io"
NAME_DESCRIPTION = ("Name must be unique within a namespace. Is required when creating "
                    "resources, although some resources may allow a client to request the "
                    "generation of an appropriate name automatically. Name is primarily "
                    "intended for creation idempotence and configuration definition. Cannot "
                    "be updated.")
AGE_DESCRIPTION = ("CreationTimestamp is a timestamp representing the server time when this "
                   "object was created.")


def table_version(accept):
    """The meta.k8s.io version of the Table the Accept header asks for before any plain JSON,
    or None: media types in the client's order, as kube-apiserver's negotiation reads kubectl's
    list (q-values are not weighed)."""
    for part in (accept or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        media, params = fields[0].lower(), {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip()
        if media not in ("application/json", "application/*", "*/*"):
            continue
        if "as" not in params:
            return None
        if params.get("as") == "Table" and params.get("g") == TABLE_GROUP and \
                params.get("v") in ("v1", "v1beta1"):
            return params["v"]
    return None


def columns(printer_columns):
    """The Table's column definitions and, per additional column, its (type, path)."""
    heads = [{"name": "Name", "type": "string", "format": "name",
              "description": NAME_DESCRIPTION, "priority": 0}]
    cols = list(printer_columns or [])
    if not cols:
        cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                 "description": AGE_DESCRIPTION}]
    specs = []
    for c in cols:
        path = c.get("jsonPath") or ""
        heads.append({"name": c.get("name") or "", "type": c.get("type") or "",
                      "format": c.get("format") or "",
                      "description": c.get("description") or
                      f"Custom resource definition column (in JSONPath format): {path}",
                      "priority": int(c.get("priority") or 0)})
        specs.append((c.get("type") or "", parse_path(path)))
    return heads, specs


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


def parse_path(path):
    """A simple JSONPath (.a.b, .a[0], .a['b.c']) as steps; None when it is not one."""
    steps, at = [], 0
    while at < len(path):
        m = _STEP.match(path, at)
        if not m:
            return None
        steps.append(int(m.group(2)) if m.group(2) is not None else
                     (m.group(1) if m.group(1) is not None else m.group(3)))
        at = m.end()
    return steps


def find(obj, steps):
    """(True, value) at the steps, or (False, None) when a key is missing."""
    if steps is None:
        return False, None
    for s in steps:
        if isinstance(s, int):
            if not isinstance(obj, list) or s >= len(obj):
                return False, None
            obj = obj[s]
        elif isinstance(obj, dict) and s in obj:
            obj = obj[s]
        else:
            return False, None
    return True, obj


def _negative(s):
    """What both of apimachinery's durations print for s < 0 seconds ("almost now" down to
    -1 s), or None."""
    return "<invalid>" if s < -1 else "0s" if s < 0 else None


def short_duration(seconds):
    """apimachinery util/duration ShortHumanDuration of a duration in seconds."""
    s = int(seconds)
    if s < 0:
        return _negative(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    hours = s // 3600
    if hours < 24:
        return f"{hours}h"
    if hours < 24 * 365:
        return f"{hours // 24}d"
    return f"{hours // 24 // 365}y"


def age(text, now):
    """The age cell of a custom `date` column: an RFC 3339 time by metav1.Time's
    UnmarshalQueryParameter ("" or "null": the zero time, "<unknown>")."""
    if text in ("", "null"):
        return "<unknown>"
    t = epoch(text)
    return "<invalid>" if t is None else short_duration(now - t)


def text_of(v):
    """client-go jsonpath's PrintResults of one value: maps and lists as compact JSON, the
    rest as Go's fmt prints it."""
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    return str(v)


def cell(kind, steps, obj, now):
    found, v = find(obj, steps)
    if not found:
        return None
    if v is None:
        return None
    if kind == "string":
        return text_of(v)
    if isinstance(v, bool) and kind in ("integer", "number"):
        return None
    if kind == "integer" and isinstance(v, (int, float)):
        return int(v)
    if kind == "number" and isinstance(v, (int, float)):  # Go writes a whole float64 as 3
        return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e21 else v
    if kind == "boolean" and isinstance(v, bool):
        return v
    if kind == "date" and isinstance(v, str):
        return age(v, now)
    return None


def human_duration(seconds):
    """apimachinery util/duration HumanDuration of a duration in seconds."""
    s = int(seconds)
    if s < 0:
        return _negative(s)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def epoch(text):
    """An RFC 3339 time in seconds since the epoch, or None (absent or unreadable)."""
    if not isinstance(text, str) or not text:
        return None
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", text)
    if not m:
        return None
    try:
        t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    if m.group(3) != "Z":
        sign = 1 if m.group(3)[0] == "+" else -1
        t -= sign * (int(m.group(3)[1:3]) * 3600 + int(m.group(3)[4:6]) * 60)
    return t + float(m.group(2) or 0)


def since(text, now):
    """translateTimestampSince: "<unknown>" for no time, else HumanDuration of its age."""
    t = epoch(text)
    return "<unknown>" if t is None else human_duration(now - t)


POD_COLUMNS = [
    ("Name", "name", NAME_DESCRIPTION, 0),
    ("Ready", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
    ("Status", "", "The aggregate status of the containers in this pod.", 0),
    ("Restarts", "", "The number of times the containers in this pod have been restarted and "
     "when the last container in this pod has restarted.", 0),
    ("Age", "", AGE_DESCRIPTION, 0),
    ("IP", "", "podIP address allocated to the pod. Routable at least within the cluster.", 1),
    ("Node", "", "NodeName indicates in which node this pod is scheduled.", 1),
    ("Nominated Node", "", "nominatedNodeName is set only when this pod preempts other pods on "
     "the node.", 1),
    ("Readiness Gates", "", "If specified, all readiness gates will be evaluated for pod "
     "readiness.", 1),
]


def _cond_true(st, kind):
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in st.get("conditions") or [] if isinstance(c, dict))


def _terminated_reason(term, prefix):
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def pod_cells(pod, now):
    """printPod's cells of one pod (wide)."""
    spec, st = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    phase = st.get("phase") or ""
    reason = st.get("reason") or phase
    for c in st.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    inits = {c.get("name"): c for c in spec.get("initContainers") or []}
    restartable = {n for n, c in inits.items() if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(restartable)
    ready = restarts = ric_restarts = 0
    last = last_ric = None

    def later(a, b):
        return b if b is not None and (a is None or b > a) else a

    initializing = False
    n_inits = len(spec.get("initContainers") or [])
    for i, cs in enumerate(st.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        done = epoch(dig(cs, "lastState.terminated.finishedAt"))
        last = later(last, done)
        if cs.get("name") in restartable:
            ric_restarts += int(cs.get("restartCount") or 0)
            last_ric = later(last_ric, done)
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if cs.get("name") in restartable and cs.get("started"):
            ready += bool(cs.get("ready"))
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif wait and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{n_inits}"
        initializing = True
        break
    if not initializing or _cond_true(st, "Initialized"):
        restarts, last = ric_restarts, last_ric
        running = False
        for cs in reversed(st.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last = later(last, epoch(dig(cs, "lastState.terminated.finishedAt")))
            state = cs.get("state") or {}
            wait, term = state.get("waiting"), state.get("terminated")
            if wait and wait.get("reason"):
                reason = wait["reason"]
            elif term is not None:
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _cond_true(st, "Ready") else "NotReady"
    if meta.get("deletionTimestamp") and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last is not None:
        restarts_text = f"{restarts} ({human_duration(now - last)} ago)"
    ips = st.get("podIPs") or []
    ip = (ips[0].get("ip") if ips and isinstance(ips[0], dict) else "") or "<none>"
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        true = 0
        for g in gates:
            for c in st.get("conditions") or []:
                if c.get("type") == g.get("conditionType"):
                    true += c.get("status") == "True"
                    break
        gates_text = f"{true}/{len(gates)}"
    return [meta.get("name", ""), f"{ready}/{total}", reason, restarts_text,
            since(meta.get("creationTimestamp"), now), ip, spec.get("nodeName") or "<none>",
            st.get("nominatedNodeName") or "<none>", gates_text]


EVENT_COLUMNS = [
    ("Last Seen", "", "The time at which the most recent occurrence of this event was recorded.",
     0),
    ("Type", "", "Type of this event (Normal, Warning).", 0),
    ("Reason", "", "The reason for the transition into the object's current status.", 0),
    ("Object", "", "The object that this event is about.", 0),
    ("Subobject", "", "The part of the object the event is about (fieldPath).", 1),
    ("Source", "", "The component reporting this event.", 1),
    ("Message", "", "A human-readable description of the status of this operation.", 0),
    ("First Seen", "", "The time at which the event was first recorded.", 1),
    ("Count", "", "The number of times this event has occurred.", 1),
    ("Name", "name", NAME_DESCRIPTION, 1),
]


def event_cells(ev, now):
    """printEvent's cells of one core/v1 Event (wide)."""
    first = since(ev.get("firstTimestamp"), now)
    if epoch(ev.get("firstTimestamp")) is None:
        first = since(ev.get("eventTime"), now)
    last = since(ev.get("lastTimestamp"), now)
    if epoch(ev.get("lastTimestamp")) is None:
        last = first
    count = int(ev.get("count") or 0)
    series = ev.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1  # a singleton event of the new API has no count
    obj = ev.get("involvedObject") or {}
    kind = (obj.get("kind") or "").lower()
    target = f"{kind}/{obj['name']}" if obj.get("name") else kind
    src = ev.get("source") or {}
    component = src.get("component") or ev.get("reportingComponent") or ""
    instance = src.get("host") or ev.get("reportingInstance") or ""
    source = f"{component}, {instance}" if instance else component
    return [last, ev.get("type") or "", ev.get("reason") or "", target,
            obj.get("fieldPath") or "", source, (ev.get("message") or "").strip(), first,
            count, (ev.get("metadata") or {}).get("name", "")]


NODE_COLUMNS = [
    ("Name", "name", NAME_DESCRIPTION, 0),
    ("Status", "", "The status of the node", 0),
    ("Roles", "", "The roles of the node", 0),
    ("Age", "", AGE_DESCRIPTION, 0),
    ("Version", "", "Kubelet Version reported by the node.", 0),
    ("Internal-IP", "", "List of addresses reachable to the node.", 1),
    ("External-IP", "", "List of addresses reachable to the node.", 1),
    ("OS-Image", "", "OS Image reported by the node from /etc/os-release.", 1),
    ("Kernel-Version", "", "Kernel Version reported by the node from 'uname -r'.", 1),
    ("Container-Runtime", "", "ContainerRuntime Version reported by the node.", 1),
]


def node_cells(node, now):
    """printNode's cells of one Node (wide)."""
    st, spec = node.get("status") or {}, node.get("spec") or {}
    meta = node.get("metadata") or {}
    ready = {c.get("type"): c for c in st.get("conditions") or []
             if isinstance(c, dict)}.get("Ready")
    status = ["Unknown"] if ready is None else \
        ["Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        status.append("SchedulingDisabled")
    roles = set()
    for k, v in (meta.get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/") and k[len("node-role.kubernetes.io/"):]:
            roles.add(k[len("node-role.kubernetes.io/"):])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = st.get("nodeInfo") or {}

    def address(kind):
        return next((a.get("address") for a in st.get("addresses") or []
                     if isinstance(a, dict) and a.get("type") == kind), "<none>")
    return [meta.get("name", ""), ",".join(status), ",".join(sorted(roles)) or "<none>",
            since(meta.get("creationTimestamp"), now), info.get("kubeletVersion") or "",
            address("InternalIP"), address("ExternalIP"), info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


POD_DONE = {"Succeeded": {"type": "Completed", "status": "True", "reason": "Succeeded",
                          "message": "The pod has completed successfully."},
            "Failed": {"type": "Completed", "status": "True", "reason": "Failed",
                       "message": "The pod failed."}}


def row_object(obj, include, version):
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": f"{TABLE_GROUP}/{version}",
            "metadata": obj.get("metadata") or {}}


BUILT_IN = {("", "pods"): (POD_COLUMNS, pod_cells), ("", "events"): (EVENT_COLUMNS, event_cells),
            ("", "nodes"): (NODE_COLUMNS, node_cells)}


def as_table(raw, printer_columns, version, include, key=None):
    """The Table of one object or a list (raw: the JSON the plain answer would be): a built-in
    kind of BUILT_IN (key: its (group, plural)) by its printer, custom objects by the CRD's
    printer columns."""
    if include not in (None, "", "Metadata", "Object", "None"):
        raise ApiError(400, f'unrecognized includeObject value: "{include}"')
    doc = json.loads(raw)
    built_in = BUILT_IN.get(key)
    pods = key == ("", "pods")
    if built_in:
        heads = [{"name": n, "type": "string", "format": f,
                  "description": d, "priority": p} for n, f, d, p in built_in[0]]
    else:
        heads, specs = columns(printer_columns)
    now = time.time()
    meta = doc.get("metadata") or {}
    items = doc.get("items") if "items" in doc and isinstance(doc.get("items"), list) else [doc]
    rows = []
    for obj in items:
        name = (obj.get("metadata") or {}).get("name", "")
        row = {"cells": built_in[1](obj, now) if built_in else
               [name] + [cell(k, s, obj, now) for k, s in specs]}
        done = POD_DONE.get((obj.get("status") or {}).get("phase")) if pods else None
        if done:
            row["conditions"] = [done]
        row["object"] = row_object(obj, include, version)
        rows.append(row)
    out_meta = {"resourceVersion": meta.get("resourceVersion", "")}
    if "items" in doc:
        if meta.get("continue"):
            out_meta["continue"] = meta["continue"]
        if meta.get("remainingItemCount") is not None:
            out_meta["remainingItemCount"] = meta["remainingItemCount"]
    return json.dumps({"kind": "Table", "apiVersion": f"{TABLE_GROUP}/{version}",
                       "metadata": out_meta, "columnDefinitions": heads,
                       "rows": rows}).encode()
