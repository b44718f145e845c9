#!/usr/bin/env python3
"""cluster_manifests.py: the example manifests of docs/cluster/ parse and
hang together (docs/cluster.md): every YAML document has apiVersion, kind
and metadata.name; a DaemonSet's selector matches its pod labels; every
volumeMount names a volume of its pod; the client Job mounts the hostPath
the DaemonSet's coopd puts its socket in, and its COOP_SOCKET is that
socket; gres.conf lines are NAME=VALUE fields with a Name; the Slurm
prolog names that socket on one line sock=PATH and prints only
TaskProlog lines (export, print); every manifest and snippet
docs/cluster.md refers to exists. slurm_node.sh runs the Slurm files
under a real Slurm.

usage: cluster_manifests.py DOCS_DIR
"""
import os
import re
import subprocess
import sys

import yaml


def fail(msg):
    print("cluster_manifests: " + msg)
    sys.exit(1)


def pods(doc):
    kind = doc["kind"]
    if kind in ("DaemonSet", "Deployment", "StatefulSet"):
        return doc["spec"]["template"]
    if kind == "Job":
        return doc["spec"]["template"]
    return None


def check_pod(name, tmpl):
    spec = tmpl["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for c in spec["containers"]:
        if not c.get("image") or not c.get("command"):
            fail("%s: container %s has no image or command" % (name, c.get("name")))
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                fail("%s: %s mounts undefined volume %s" % (name, c["name"], m["name"]))
    return spec, volumes


def socket_of(spec):
    for c in spec["containers"]:
        cmd = c["command"]
        if cmd[0] == "coopd" and "--socket" in cmd:
            return cmd[cmd.index("--socket") + 1]
    return None


def main():
    d = sys.argv[1]
    docs = {}
    for f in sorted(os.listdir(os.path.join(d, "cluster"))):
        if f.endswith(".yaml"):
            with open(os.path.join(d, "cluster", f)) as fh:
                docs[f] = [x for x in yaml.safe_load_all(fh) if x is not None]
    if "daemonset.yaml" not in docs or "job.yaml" not in docs:
        fail("daemonset.yaml or job.yaml missing")
    for f, ds in docs.items():
        for x in ds:
            for k in ("apiVersion", "kind"):
                if not x.get(k):
                    fail("%s: a document without %s" % (f, k))
            if not x.get("metadata", {}).get("name"):
                fail("%s: a %s without metadata.name" % (f, x["kind"]))
    daemon = [x for x in docs["daemonset.yaml"] if x["kind"] == "DaemonSet"]
    if len(daemon) != 1:
        fail("daemonset.yaml: want one DaemonSet")
    ds = daemon[0]
    sel = ds["spec"]["selector"]["matchLabels"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in sel.items()):
        fail("DaemonSet: selector %s does not match pod labels %s" % (sel, labels))
    spec, vols = check_pod("DaemonSet", ds["spec"]["template"])
    sock = socket_of(spec)
    if not sock:
        fail("DaemonSet: no coopd --socket")
    coopd = [c for c in spec["containers"] if c["command"][0] == "coopd"][0]
    run = [m for m in coopd["volumeMounts"] if sock.startswith(m["mountPath"] + "/")]
    if not run or "hostPath" not in vols[run[0]["name"]]:
        fail("DaemonSet: the socket %s is not on a hostPath volume" % sock)
    host = vols[run[0]["name"]]["hostPath"]["path"]
    cms = {x["metadata"]["name"] for x in docs["daemonset.yaml"] if x["kind"] == "ConfigMap"}
    for v in vols.values():
        if "configMap" in v and v["configMap"]["name"] not in cms:
            fail("DaemonSet: ConfigMap %s is not defined" % v["configMap"]["name"])
    for x in docs["job.yaml"]:
        jspec, jvols = check_pod(x["metadata"]["name"], pods(x))
        c = jspec["containers"][0]
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        if env.get("COOP_SOCKET") != sock:
            fail("Job: COOP_SOCKET %s is not coopd's socket %s" % (env.get("COOP_SOCKET"), sock))
        m = [m for m in c.get("volumeMounts", []) if sock.startswith(m["mountPath"] + "/")]
        if not m or jvols[m[0]["name"]].get("hostPath", {}).get("path") != host:
            fail("Job: does not mount the hostPath %s of coopd's socket" % host)
    with open(os.path.join(d, "cluster", "gres.conf")) as fh:
        for n, line in enumerate(fh, 1):
            line = line.split("#")[0].strip()
            if not line:
                continue
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if len(fields) != len(line.split()) or "Name" not in fields:
                fail("gres.conf:%d: want NAME=VALUE fields with a Name" % n)
    # the prolog names the socket on one line "sock=PATH" (slurm_node.sh
    # points that line at its own coopd), the DaemonSet's socket
    with open(os.path.join(d, "cluster", "prolog.sh")) as fh:
        socks = re.findall(r"^sock=(\S+)$", fh.read(), re.M)
    if socks != [sock]:
        fail("prolog.sh: want one line sock=%s, found %s" % (sock, socks))
    # the prolog prints only lines Slurm's TaskProlog understands
    out = subprocess.run(["sh", os.path.join(d, "cluster", "prolog.sh")], capture_output=True,
                         text=True, check=False)
    if out.returncode or not out.stdout or any(
            not re.match(r"(export COOP_SOCKET=/\S+|print .+)$", line)
            for line in out.stdout.splitlines()):
        fail("prolog.sh: exit %d, output %r" % (out.returncode, out.stdout))
    with open(os.path.join(d, "cluster.md")) as fh:
        for ref in sorted(set(re.findall(r"cluster/[A-Za-z0-9_.-]+", fh.read()))):
            if not os.path.exists(os.path.join(d, ref)):
                fail("cluster.md names %s, which does not exist" % ref)
    print("cluster_manifests: %s parse and agree (socket %s on hostPath %s)"
          % (", ".join(sorted(docs)), sock, host))


if __name__ == "__main__":
    main()
