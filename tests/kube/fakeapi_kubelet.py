"""tests/kube/fakeapi_kubelet.py: the fake API server's simulated kubelet.

Owns: the Kubelet class: bound pods start (status Running, Ready, the PodScheduled,
Initialized, ContainersReady and Ready conditions, as the kubelet's status manager sets
them), finish after their fake.gangsched.io/run-seconds annotation, and deleted pods go away
after their grace period (capped by --grace-cap). A pod whose phase is terminal (Succeeded or
Failed: a test wrote it, as a real kubelet would) is neither started nor finished again: the
phases are terminal in kube's pod lifecycle. It acts on the store passed to it.
"""

import heapq
import json
import threading
import time
import traceback
from fakeapi_base import ANNOT_EXIT, ANNOT_RUN, ANNOT_START, BY_KEY, dig, now_time
from fakeapi_admit import set_condition


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
            if dig(cur, "status.phase") in ("Succeeded", "Failed"):
                return  # terminal: the kubelet never moves a pod out of it (pod lifecycle docs)
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
