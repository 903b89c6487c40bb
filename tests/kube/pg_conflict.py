"""tests/kube/pg_conflict.py: two APIs' PodGroups under one namespace/name with `gangsched run`.

Owns: the daemon's rule for a scheduler-plugins PodGroup and a Volcano PodGroup both named
default/g (each its own uid): the one seen first owns the name while it exists; the other is
refused, and told so by one Warning Event on it (events.k8s.io/v1, checked field by field against
what the API server validates and what `kubectl describe` reads through core/v1), however many
events it has; when the owner is deleted, the refused one becomes the gang at once (its pod is
bound without another event of its own). Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, podgroup, pod, wait_for  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
"""
VOLCANO = "scheduling.volcano.sh/v1beta1"
XK8S = "scheduling.x-k8s.io/v1alpha1"


def conflict_events(c):
    return [e for e in e2e.events_for(c, "g") if e.get("reason") == "NameConflict"]


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"),
                  extra=["--leader-elect", "false"])
    check("the scheduler runs", wait_for(lambda: "recovery: " in s.text(), 20))
    # the owner: seen first; it asks for 2 members, so the one pod below waits under it
    xpath, xpg = podgroup("g", 2, queue="team-a")
    st, owner, _ = c.post(xpath, xpg)
    check("the scheduler-plugins PodGroup is created", st == 201, str(owner)[:200])
    c.post("/api/v1/namespaces/default/pods", pod("g-0", "g", 8, volcano=True))
    # (the Volcano PodGroup comes once the gang's own Event is written: the daemon names Events
    # after their object and the millisecond, so two Events on "g" in one millisecond collide)
    check("the daemon follows it: the gang waits for its second member",
          wait_for(lambda: [e for e in e2e.events_for(c, "g")
                            if e["regarding"].get("apiVersion") == XK8S], 10))
    time.sleep(0.5)
    vpath, vpg = podgroup("g", 1, queue="team-a", volcano=True)
    st, vol, _ = c.post(vpath, vpg)
    check("the Volcano PodGroup of the same name is created", st == 201, str(vol)[:200])
    got = wait_for(lambda: conflict_events(c), 10)
    evs = conflict_events(c)
    check("a NameConflict Event is posted", got and len(evs) == 1, str(evs)[:600])
    if evs:
        ev = evs[0]
        reg, rel = ev.get("regarding", {}), ev.get("related", {})
        check("it is a Warning on the refused Volcano PodGroup (its uid)",
              ev.get("type") == "Warning" and reg.get("apiVersion") == VOLCANO and
              reg.get("kind") == "PodGroup" and reg.get("namespace") == "default" and
              reg.get("uid") == vol["metadata"]["uid"], str(ev)[:600])
        check("related names the owner (its API and uid)",
              rel.get("apiVersion") == XK8S and rel.get("uid") == owner["metadata"]["uid"] and
              rel.get("name") == "g", str(rel))
        check("its note says which PodGroup owns the name and what happens next",
              XK8S in ev.get("note", "") and "deleted" in ev.get("note", "") and
              len(ev.get("note", "")) <= 1024, ev.get("note", ""))
        check("the fields the API server requires are there",
              all(ev.get(k) for k in ("eventTime", "action", "reportingController",
                                      "reportingInstance")) and
              len(ev["action"]) <= 128 and len(ev["reason"]) <= 128, str(ev)[:600])
        st, items, _ = c.get("/api/v1/namespaces/default/events")
        core = [e for e in items.get("items", [])
                if e.get("involvedObject", {}).get("uid") == vol["metadata"]["uid"]]
        check("kubectl describe finds it (core/v1 by involvedObject.uid)",
              len(core) == 1 and core[0].get("reason") == "NameConflict" and
              core[0].get("type") == "Warning" and XK8S in (core[0].get("message") or ""),
              str(core)[:600])
    # updates of the refused object: refused again, not told again
    for i in range(3):
        c.patch(vpath + "/g", {"metadata": {"labels": {"touch": str(i)}}},
                "application/merge-patch+json")
    time.sleep(1.5)
    check("one Event per refused object, whatever its updates",
          len(conflict_events(c)) == 1, str(conflict_events(c))[:600])
    check("its pod waits while the owner exists", not bound(c, "g"))
    st, _, _ = c.delete(xpath + "/g")
    check("the owner is deleted", st in (200, 202), str(st))
    ok = wait_for(lambda: len(bound(c, "g")) == 1, 10)
    check("the refused PodGroup becomes the gang at once: its pod is bound", ok,
          s.text()[-1200:])
    check("the log says it was adopted", "podgroup adopted: " + VOLCANO in s.text(),
          s.text()[-800:])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
