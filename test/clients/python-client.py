# Debian's python3-kubernetes against a node, as a user's script: `python3 python-client.py <ns> <pod>` with
# KUBECONFIG set. Prints one JSON line per check: list, watch=True, log follow=True, exec stdout=True. The client
# sends booleans as `True`.
import json
import sys

from kubernetes import client, config, watch
from kubernetes.stream import stream

ns, pod = sys.argv[1], sys.argv[2]
config.load_kube_config()
v1 = client.CoreV1Api()


def out(check, **value):
    print(json.dumps({"check": check, **value}), flush=True)


out("list", names=sorted(p.metadata.name for p in v1.list_namespaced_pod(ns).items))

w = watch.Watch()
events = []
for e in w.stream(v1.list_namespaced_pod, ns, timeout_seconds=3):
    events.append((e["type"], e["object"].metadata.name))
    if len(events) >= 1:
        w.stop()
out("watch", events=events)

r = v1.read_namespaced_pod_log(pod, ns, container="main", follow=True, tail_lines=2, _preload_content=False)
lines = []
for chunk in r.stream(64):
    lines.extend(l for l in chunk.decode().split("\n") if l)
    if len(lines) >= 3:
        break
r.release_conn()
out("log", lines=lines[:3])

resp = stream(
    v1.connect_get_namespaced_pod_exec,
    pod,
    ns,
    container="main",
    command=["echo", "hi from exec"],
    stdout=True,
    stderr=True,
    stdin=False,
    tty=False,
)
out("exec", stdout=resp)
