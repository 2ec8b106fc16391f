#!/usr/bin/env python3
"""Offline checks of deploy/: the Kubernetes manifests, the Grafana dashboard
and the Dockerfile, against what the built `ladder` really serves.

  check_deploy.py DEPLOY_DIR --metrics FILE... --serve-help FILE --route-help FILE

- every manifest parses; there are router, prefill and decode Deployments and
  Services and the tenants ConfigMap (whose TOML parses and names tenants);
- every container's flags exist in `ladder serve --help` / `ladder route
  --help`; its probes ask /health on the port named http, which is the port
  its --port flag sets; its pod carries Prometheus scrape annotations for that
  port and /metrics; a decode worker's --kv-port is a container port and a
  Service port; the tenants file it reads is where the ConfigMap is mounted;
- the router's --prefill/--decode URLs name Services and ports that exist;
- every metric the dashboard queries appears in some /metrics output given;
- the Dockerfile builds on Debian 12 with scripts/install-deps.sh.
Prints every problem and exits 1 when there is one.
"""
import argparse
import json
import os
import re
import sys
import tomllib
import urllib.parse

import yaml

problems = []


def problem(msg):
    problems.append(msg)


def flag_set(help_text):
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("deploy")
    ap.add_argument("--metrics", nargs="+", required=True)
    ap.add_argument("--serve-help", required=True)
    ap.add_argument("--route-help", required=True)
    a = ap.parse_args()

    flags = {"serve": flag_set(open(a.serve_help).read()), "route": flag_set(open(a.route_help).read())}
    for cmd, f in flags.items():
        if "--port" not in f:
            problem(f"`ladder {cmd} --help` lists no --port: wrong help text given")

    docs = []
    k8s = os.path.join(a.deploy, "k8s")
    for name in sorted(os.listdir(k8s)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(k8s, name)) as f:
            try:
                for d in yaml.safe_load_all(f):
                    if d is not None:
                        docs.append((name, d))
            except yaml.YAMLError as e:
                problem(f"{name}: not YAML: {e}")
    by_kind = {}
    for name, d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                problem(f"{name}: a document without {key}")
        by_kind.setdefault(d.get("kind"), {})[d["metadata"]["name"]] = (name, d)

    for want in ("ladder-router", "ladder-prefill", "ladder-decode"):
        for kind in ("Deployment", "Service"):
            if want not in by_kind.get(kind, {}):
                problem(f"no {kind} {want}")
    cms = by_kind.get("ConfigMap", {})
    if "ladder-tenants" not in cms:
        problem("no ConfigMap ladder-tenants")
    else:
        data = cms["ladder-tenants"][1].get("data", {})
        try:
            t = tomllib.loads(data.get("tenants.toml", ""))
            if not t.get("tenant"):
                problem("the tenants ConfigMap names no [[tenant]]")
        except tomllib.TOMLDecodeError as e:
            problem(f"the tenants ConfigMap's TOML does not parse: {e}")

    services = {n: d for n, (_, d) in by_kind.get("Service", {}).items()}
    for dname, (fname, dep) in by_kind.get("Deployment", {}).items():
        pod = dep["spec"]["template"]
        sel = dep["spec"]["selector"]["matchLabels"]
        if any(pod["metadata"].get("labels", {}).get(k) != v for k, v in sel.items()):
            problem(f"{dname}: the selector does not match the pod labels")
        ann = pod["metadata"].get("annotations", {})
        spec = pod["spec"]
        mounts_by_volume = {}
        for c in spec["containers"]:
            args = c.get("args", [])
            cmd = args[0] if args else ""
            if cmd not in flags:
                problem(f"{dname}: container args must start with serve or route, not {cmd!r}")
                continue
            for tok in args[1:]:
                if tok.startswith("--") and tok not in flags[cmd]:
                    problem(f"{dname}: flag {tok} is not in `ladder {cmd} --help`")

            def arg(flag):
                return args[args.index(flag) + 1] if flag in args else None

            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            port = arg("--port")
            if "http" not in ports:
                problem(f"{dname}: no container port named http")
            elif port is None or int(port) != ports["http"]:
                problem(f"{dname}: --port {port} is not the http container port {ports['http']}")
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                p = c.get(probe)
                if p is None:
                    problem(f"{dname}: no {probe}")
                    continue
                g = p.get("httpGet", {})
                if g.get("path") != "/health":
                    problem(f"{dname}: {probe} asks {g.get('path')}, not /health")
                pp = g.get("port")
                if pp != "http" and pp != ports.get("http"):
                    problem(f"{dname}: {probe} port {pp} is not the http port")
            if ann.get("prometheus.io/scrape") != "true":
                problem(f"{dname}: pod lacks prometheus.io/scrape: \"true\"")
            # The scrape port: the metrics listener when there is one (a
            # `serve` or `route` with --tenants answers /metrics on its API
            # port only with a key), else the http port.
            metrics_port = arg("--metrics-port")
            if metrics_port is not None:
                if "metrics" not in ports or int(metrics_port) != ports["metrics"]:
                    problem(f"{dname}: --metrics-port {metrics_port} is not the container port named metrics")
                if arg("--metrics-host") not in ("0.0.0.0", "::"):
                    problem(f"{dname}: --metrics-port without --metrics-host 0.0.0.0 cannot be scraped")
                want = ports.get("metrics")
            else:
                if arg("--tenants") is not None:
                    problem(f"{dname}: {cmd} with --tenants needs --metrics-port for a keyless scrape")
                want = ports.get("http")
            if str(ann.get("prometheus.io/port")) != str(want):
                problem(f"{dname}: prometheus.io/port {ann.get('prometheus.io/port')} is not the scrape port {want}")
            if ann.get("prometheus.io/path", "/metrics") != "/metrics":
                problem(f"{dname}: prometheus.io/path is not /metrics")
            if arg("--role") == "decode":
                kv = arg("--kv-port")
                if kv is None or int(kv) not in ports.values():
                    problem(f"{dname}: --kv-port {kv} is not a container port")
                svc = services.get(dname)
                if svc and not any(sp.get("port") == int(kv or 0) for sp in svc["spec"]["ports"]):
                    problem(f"{dname}: its Service does not expose the KV port {kv} (the router sends KV there)")
            tenants = arg("--tenants")
            if tenants:
                mounted = False
                for m in c.get("volumeMounts", []):
                    vol = next((v for v in spec.get("volumes", []) if v["name"] == m["name"]), None)
                    if vol and "configMap" in vol and tenants == m["mountPath"].rstrip("/") + "/tenants.toml":
                        mounted = vol["configMap"]["name"] == "ladder-tenants"
                if not mounted:
                    problem(f"{dname}: --tenants {tenants} is not the ladder-tenants ConfigMap's mount")
            if cmd == "route":
                for flag in ("--prefill", "--decode"):
                    urls = [args[i + 1] for i, t in enumerate(args) if t == flag]
                    if flag == "--decode" and not urls:
                        problem(f"{dname}: the router names no --decode worker")
                    for u in urls:
                        p = urllib.parse.urlparse(u)
                        svc = services.get(p.hostname)
                        if svc is None:
                            problem(f"{dname}: {flag} {u} names no Service")
                        elif not any(sp.get("port") == p.port for sp in svc["spec"]["ports"]):
                            problem(f"{dname}: {flag} {u}: Service {p.hostname} has no port {p.port}")
        svc = services.get(dname)
        if svc and any(svc["spec"]["selector"].get(k) != v for k, v in sel.items()):
            problem(f"Service {dname} does not select its Deployment's pods")

    # The dashboard against real /metrics output.
    served = set()
    for path in a.metrics:
        for line in open(path):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
            if m and not line.startswith("#"):
                served.add(m.group(1))
    if not served:
        problem("no metric series in the given /metrics outputs")
    dash = json.load(open(os.path.join(a.deploy, "grafana", "ladder-dashboard.json")))
    n_exprs = 0
    for panel in dash.get("panels", []):
        for t in panel.get("targets", []):
            expr = t.get("expr", "")
            n_exprs += 1
            # Metric names: identifiers outside quotes and label matchers.
            scrubbed = re.sub(r"\{[^}]*\}", "", re.sub(r'"[^"]*"', '""', expr))
            names = re.findall(r"\b((?:ladder|process)_[a-zA-Z0-9_]*)", scrubbed)
            if not names:
                problem(f"dashboard panel {panel['title']!r}: no Ladder metric in {expr}")
            for name in names:
                if name not in served:
                    problem(f"dashboard panel {panel['title']!r} queries {name}, which no /metrics output serves")
    if n_exprs == 0:
        problem("the dashboard has no queries")

    docker = open(os.path.join(a.deploy, "Dockerfile")).read()
    if not re.search(r"^FROM debian:12\b", docker, re.M):
        problem("the Dockerfile does not build FROM debian:12")
    if "scripts/install-deps.sh" not in docker:
        problem("the Dockerfile does not use scripts/install-deps.sh")

    for p in problems:
        print("deploy check:", p)
    print(f"deploy check: {len(docs)} manifests, {n_exprs} dashboard queries, {len(served)} served series, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
