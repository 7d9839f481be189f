#!/usr/bin/env python3
"""Checks the sharded campaign recipes without a cluster or a CI runner.

Kubernetes: reads deploy/kubernetes/campaign-job.yaml with a YAML parser (PyYAML) and checks its
shape (an Indexed Job with completions, parallelism, backoffLimitPerIndex, a podFailurePolicy on
locksim's exit codes, an emptyDir per pod and no shared volume or PVC, the image placeholder);
validates it, and the manifest deploy/run-campaign.sh --print-manifest renders from it, against
the Kubernetes Job schema (kubernetes-validate); runs bash -n and shellcheck (when installed) on
deploy/run-campaign.sh; then runs that script end to end against a stand-in kubectl and docker:
`kubectl create` runs each completion index's exact pod command locally (its emptyDir a folder
of its own, JOB_COMPLETION_INDEX set, stdout and stderr kept as its log), and the script
decodes each shard's records from that log as it does from `kubectl logs`, merges them, and the
merged summary must equal an unsharded run of the same campaign byte for byte. Also: an existing
Job is refused and --collect-only collects it; a failing index (FailIndex) makes the script exit
3 at once with a --partial merge; a log cut short exits 4; a Job that never ends exits 3 at
--timeout; merge refuses a missing shard (exit 2) and --partial summarizes what is there (exit
3). No cluster is involved.

GitHub Actions: reads .github/workflows/campaign.yml, checks its shape (a shard matrix,
artifacts and a merge job), validates it against the GitHub workflow schema (check-jsonschema's
vendored copy), runs each shard's and the merge's steps, and compares the merged summary with
the unsharded run, byte for byte.

Without --require-validators, a schema validator that is not installed is skipped (said so).

Usage: scripts/check-campaign-deploy.py --locksim target/release/locksim
           [--subset sims/a.toml sims/b.toml] [--require-validators]
--subset replaces the campaign's `sims/` argument (and only that) with a few files, to keep CI
short; the check says so.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K8S_JOB = os.path.join(ROOT, "deploy/kubernetes/campaign-job.yaml")
RUNNER = os.path.join(ROOT, "deploy/run-campaign.sh")
WORKFLOW = os.path.join(ROOT, ".github/workflows/campaign.yml")


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def need(cond, msg):
    if not cond:
        fail(msg)


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def run(argv_or_sh, cwd, env, shell=False):
    """Runs a command; returns (exit code, stdout bytes, stderr text)."""
    p = subprocess.run(argv_or_sh, cwd=cwd, env=env, shell=False, capture_output=True,
                       executable=None)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def validate(kind, path, require):
    if kind == "k8s":
        try:
            import kubernetes_validate  # noqa: F401
        except ImportError:
            if require:
                fail("kubernetes-validate is not installed (pip install kubernetes-validate)")
            print(f"SKIP schema of {path}: kubernetes-validate is not installed")
            return
        argv = [sys.executable, "-m", "kubernetes_validate", "--strict", path]
    else:
        if shutil.which("check-jsonschema") is None:
            if require:
                fail("check-jsonschema is not installed (pip install check-jsonschema)")
            print(f"SKIP schema of {path}: check-jsonschema is not installed")
            return
        argv = ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", path]
    p = subprocess.run(argv, capture_output=True, text=True)
    out = (p.stdout + p.stderr).strip()
    need(p.returncode == 0, f"schema validation of {path} failed:\n{out}")
    print(f"ok    schema of {os.path.relpath(path, ROOT)}: {out.splitlines()[-1] if out else 'valid'}")


def subset_args(args, subset):
    """Replaces the campaign-path argument `sims/` with the subset's files."""
    if not subset:
        return args
    out = []
    for a in args:
        out.extend(subset if a in ("sims/", "sims") else [a])
    return out


def unsharded(args):
    """The same campaign without its shard and output options."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("--shards", "--shard", "--out"):
            skip = True
            continue
        if a in ("--resume", "--force") or a.startswith("--shard="):
            continue
        out.append(a)
    return out


def exit_codes(locksim, env):
    """The codes the podFailurePolicy must name: 2 on bad input, 1 on a failed expectation."""
    code, _, _ = run([locksim, "campaign", "sims/no-such-file.toml"], ROOT, env)
    need(code == 2, f"locksim exits {code} on a missing campaign file, not 2")
    with tempfile.TemporaryDirectory() as d:
        src = open(os.path.join(ROOT, "sims/blackhole-holder-trusts-its-watchdog.toml")).read()
        flipped = re.sub(r'(?m)^expect = .*$', 'expect = "safe"', src)
        need(flipped != src, "could not flip the expectation of the probe file")
        probe = os.path.join(d, "probe.toml")
        open(probe, "w").write(flipped)
        code, _, _ = run([locksim, "campaign", probe], ROOT, env)
        need(code == 1, f"locksim exits {code} on a failed expectation, not 1")
    return {1, 2}


def compare(label, merged, expected):
    if merged != expected:
        a, b = merged.decode(errors="replace"), expected.decode(errors="replace")
        fail(f"{label}: the merged summary differs from the unsharded run\n--- merged\n{a}\n--- unsharded\n{b}")
    print(f"ok    {label}: merged summary equals the unsharded run byte for byte ({len(merged)} bytes)")


# A stand-in for kubectl, for deploy/run-campaign.sh: `create -f -` runs each completion index's
# pod command locally (its emptyDir a folder of its own, JOB_COMPLETION_INDEX set, the campaign's
# stdout and stderr kept as its log) and applies the podFailurePolicy's FailIndex exit codes;
# `get`, `logs` and `delete` answer from what it ran. FAKE_KUBE_BREAK_INDEX=i gives index i a
# missing campaign file (locksim exits 2: the Job fails), FAKE_KUBE_CUT_INDEX=i cuts its log's
# last lines (as a rotated log would), FAKE_KUBE_HANG=1 leaves the Job running for ever.
FAKE_KUBECTL = r"""
import json, os, re, shutil, subprocess, sys
import yaml
state = os.environ["FAKE_KUBE_STATE"]
root = os.environ["FAKE_KUBE_ROOT"]
subset = os.environ.get("FAKE_KUBE_SUBSET", "")
jobf = os.path.join(state, "job.json")
args = sys.argv[1:]
if args[:1] == ["--namespace"]:
    args = args[2:]
with open(os.path.join(state, "calls"), "a") as f:
    f.write(json.dumps(args) + "\n")
STATUS = ("jsonpath={.status.succeeded}/{.status.failed}/{.status.failedIndexes}/"
          '{range .status.conditions[?(@.status=="True")]}{.type},{end}')
PODS = r'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'

def load():
    return json.load(open(jobf)) if os.path.exists(jobf) else None

def expand(s, env):
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), s)

def create(doc):
    spec = doc["spec"]
    pod = spec["template"]["spec"]
    c = pod["containers"][0]
    n = spec["completions"]
    fail_codes = set()
    for r in spec.get("podFailurePolicy", {}).get("rules", []):
        if r["action"] == "FailIndex":
            fail_codes |= set(r["onExitCodes"]["values"])
    hang = os.environ.get("FAKE_KUBE_HANG") == "1"
    idx = {}
    for i in range(n):
        if hang:
            break
        emptydir = os.path.join(state, f"pod-{i}")
        os.makedirs(emptydir)
        env = dict(os.environ)
        env["PATH"] = os.environ["FAKE_KUBE_PATH"]
        env.update({e["name"]: str(e.get("value", "")) for e in c.get("env", [])})
        env["JOB_COMPLETION_INDEX"] = str(i)
        argv = [expand(a, env) for a in c["command"] + c.get("args", [])]
        for m in c.get("volumeMounts", []):
            argv = [a.replace(m["mountPath"], emptydir) for a in argv]
        campaign = subset
        if os.environ.get("FAKE_KUBE_BREAK_INDEX") == str(i):
            campaign = "sims/no-such-file.toml"
        if campaign:
            argv = [a.replace(" sims/ ", f" {campaign} ") for a in argv]
        p = subprocess.run(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        log = p.stdout.decode()
        if os.environ.get("FAKE_KUBE_CUT_INDEX") == str(i):
            log = "".join(log.splitlines(True)[:-2])
        open(os.path.join(state, f"log-{i}"), "w").write(log)
        idx[i] = "succeeded" if p.returncode == 0 else "failed"
        if p.returncode != 0 and p.returncode not in fail_codes:
            sys.exit(f"fake kubectl: index {i} exited {p.returncode}, which its FailIndex rule does not name")
    failed = sorted(i for i, s in idx.items() if s == "failed")
    conds = [] if hang else (["FailureTarget", "Failed"] if failed else ["SuccessCriteriaMet", "Complete"])
    json.dump({"name": doc["metadata"]["name"], "completions": n, "indexes": idx, "conditions": conds},
              open(jobf, "w"))
    print(f"job.batch/{doc['metadata']['name']} created")

job = load()
if args[:3] == ["create", "-f", "-"]:
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    assert len(docs) == 1 and docs[0]["kind"] == "Job", docs
    if job:
        sys.exit(f'Error from server (AlreadyExists): jobs.batch "{job["name"]}" already exists')
    create(docs[0])
elif args[:2] == ["delete", "job"]:
    if job:
        shutil.rmtree(state)
        os.makedirs(state)
        print(f'job.batch "{job["name"]}" deleted')
elif args[:2] == ["get", "job"]:
    if not job or args[2] != job["name"]:
        sys.exit(f'Error from server (NotFound): jobs.batch "{args[2]}" not found')
    o = args[4] if args[3:4] == ["-o"] else ""
    idx = job["indexes"]
    if o == "jsonpath={.metadata.uid}":
        print("0f0e0d0c-uid", end="")
    elif o == "jsonpath={.spec.completions}":
        print(job["completions"], end="")
    elif o == STATUS:
        ok = sum(s == "succeeded" for s in idx.values())
        bad = [i for i, s in sorted(idx.items()) if s == "failed"]
        print(f"{ok or ''}/{len(bad) or ''}/{','.join(bad)}/{''.join(c + ',' for c in job['conditions'])}", end="")
    elif o:
        sys.exit(f"fake kubectl: unexpected output {o}")
elif args[:2] == ["get", "pods"] and args[2] == "-l":
    sel = dict(kv.split("=") for kv in args[3].split(","))
    assert sel["batch.kubernetes.io/controller-uid"] == "0f0e0d0c-uid", sel
    assert args[4:] == ["--field-selector=status.phase=Succeeded", "-o", PODS], args
    i = sel["batch.kubernetes.io/job-completion-index"]
    if job and job["indexes"].get(i) == "succeeded":
        print(f"{job['name']}-{i}-x7k2p")
elif args[:1] == ["logs"] and args[2:] == ["-c", "locksim"]:
    i = args[1].split("-")[-2]
    sys.stdout.write(open(os.path.join(state, f"log-{i}")).read())
else:
    sys.exit(f"fake kubectl: unsupported call {args}")
"""

# A stand-in for docker: records its calls; `run ... -v HOST:/out IMAGE ARGS` runs the image's
# entrypoint (locksim, FAKE_DOCKER_LOCKSIM) with /out mapped to HOST, as the container sees it.
FAKE_DOCKER = r"""
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_DOCKER_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
if args[:1] == ["run"]:
    vol = args[args.index("-v") + 1]
    host, mount = vol.rsplit(":", 1)
    assert mount == "/out" and args[args.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}", args
    rest = args[args.index("-v") + 3:]
    rest = [host + a[len(mount):] if a.startswith(mount + "/") else a for a in rest]
    sys.exit(subprocess.run([os.environ["FAKE_DOCKER_LOCKSIM"], *rest],
                            cwd=os.environ["FAKE_KUBE_ROOT"]).returncode)
"""


def check_script_lint(require):
    p = subprocess.run(["bash", "-n", RUNNER], capture_output=True, text=True)
    need(p.returncode == 0, f"bash -n {RUNNER}:\n{p.stderr}")
    if shutil.which("shellcheck") is None:
        print(f"SKIP shellcheck of {os.path.relpath(RUNNER, ROOT)}: shellcheck is not installed")
        return
    p = subprocess.run(["shellcheck", RUNNER], capture_output=True, text=True)
    need(p.returncode == 0, f"shellcheck {RUNNER}:\n{p.stdout}{p.stderr}")
    print(f"ok    {os.path.relpath(RUNNER, ROOT)}: bash -n and shellcheck clean")


def check_kubernetes(locksim, subset, require, env):
    docs = load_all(K8S_JOB)
    need([d.get("kind") for d in docs] == ["Job"], f"{K8S_JOB}: expected one Job and nothing else, "
         f"found {[d.get('kind') for d in docs]}")
    for dirpath, _, files in os.walk(os.path.join(ROOT, "deploy")):
        for f in files:
            if f.endswith((".yaml", ".yml")):
                text = json.dumps(load_all(os.path.join(dirpath, f)))
                need("ReadWriteMany" not in text and "PersistentVolumeClaim" not in text
                     and "persistentVolumeClaim" not in text,
                     f"{f} asks for a shared (ReadWriteMany) volume or a PVC: typical clusters have none")
    job = docs[0]
    spec = job["spec"]
    need(spec.get("completionMode") == "Indexed", "the Job is not Indexed (completionMode)")
    n = spec.get("completions")
    need(isinstance(n, int) and n > 0, "completions is not a positive integer")
    need(spec.get("parallelism") == n, f"parallelism {spec.get('parallelism')} != completions {n}")
    need(isinstance(spec.get("backoffLimitPerIndex"), int), "no backoffLimitPerIndex")
    pod = spec["template"]["spec"]
    need(pod.get("restartPolicy") == "Never", "podFailurePolicy needs restartPolicy: Never")
    containers = pod["containers"]
    need(len(containers) == 1, "expected one container")
    c = containers[0]
    need(c.get("image") == "REGISTRY/locksim:TAG", "the image is not the REGISTRY/locksim:TAG placeholder "
         "that deploy/run-campaign.sh --image replaces")
    codes = exit_codes(locksim, env)
    rules = spec.get("podFailurePolicy", {}).get("rules", [])
    fail_index = [r for r in rules if r.get("action") == "FailIndex" and "onExitCodes" in r]
    need(fail_index, "no podFailurePolicy rule with action FailIndex on exit codes")
    ec = fail_index[0]["onExitCodes"]
    need(ec.get("operator") == "In" and set(ec.get("values", [])) == codes,
         f"FailIndex must be on locksim's exit codes {sorted(codes)}, not {ec}")
    need(ec.get("containerName") == c["name"], "FailIndex names another container")
    argv = list(c.get("command", [])) + list(c.get("args", []))
    need(argv[:2] == ["sh", "-c"] and len(argv) == 3, f"the container does not run sh -c SCRIPT: {argv}")
    m = re.search(r"^locksim campaign sims/ --shards (\d+) --out ", argv[2], re.M)
    need(m, f"the pod's script has no `locksim campaign sims/ --shards N --out ...` line:\n{argv[2]}")
    need(m.group(1) == str(n), f"--shards {m.group(1)} must equal completions ({n})")
    vols = pod.get("volumes", [])
    need(vols and all("emptyDir" in v for v in vols), f"the pod's volumes must be emptyDirs: {vols}")
    print(f"ok    {os.path.relpath(K8S_JOB, ROOT)}: Indexed Job, {n} completions, "
          f"backoffLimitPerIndex {spec['backoffLimitPerIndex']}, FailIndex on exit codes {sorted(codes)}, "
          f"an emptyDir per pod, no shared volume")
    check_script_lint(require)

    image = "registry.example.invalid/locksim:check"
    with tempfile.TemporaryDirectory() as tmp:
        rendered = os.path.join(tmp, "campaign-job.rendered.yaml")
        code, text, err = run([RUNNER, "--print-manifest", "--image", image], ROOT, env)
        need(code == 0, f"run-campaign.sh --print-manifest exited {code}: {err}")
        open(rendered, "wb").write(text)
        rdocs = load_all(rendered)
        need(rdocs[0]["spec"]["template"]["spec"]["containers"][0]["image"] == image
             and text.decode().replace(image, "REGISTRY/locksim:TAG") == open(K8S_JOB).read(),
             "--print-manifest changes more than the image")
        for path in (K8S_JOB, rendered):
            validate("k8s", path, require)

        # deploy/run-campaign.sh end to end, against the stand-in kubectl and docker.
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        for name, body in (("kubectl", FAKE_KUBECTL), ("docker", FAKE_DOCKER)):
            path = os.path.join(bindir, name)
            open(path, "w").write(f"#!{sys.executable}\n{body}")
            os.chmod(path, 0o755)
        if subset:
            print(f"note  campaign argument sims/ replaced by {' '.join(subset)} (--subset)")

        def script(label, *extra, fresh=True, merge_in_docker=False, **fake):
            state = os.path.join(tmp, "state")
            if fresh:
                shutil.rmtree(state, ignore_errors=True)
                os.mkdir(state)
            senv = dict(env)
            # The pods find locksim on PATH, as in the image; the script finds it only through
            # --locksim (else it merges with `docker run IMAGE merge ...`).
            without = [d for d in env["PATH"].split(os.pathsep) if not os.path.exists(os.path.join(d, "locksim"))]
            senv.update({"PATH": os.pathsep.join([bindir, *without]), "FAKE_KUBE_PATH": env["PATH"],
                         "FAKE_KUBE_STATE": state, "FAKE_KUBE_ROOT": ROOT,
                         "FAKE_KUBE_SUBSET": " ".join(subset), "FAKE_DOCKER_LOCKSIM": locksim,
                         "FAKE_DOCKER_LOG": os.path.join(tmp, f"docker-{label}")})
            senv.update({f"FAKE_KUBE_{k.upper()}": str(v) for k, v in fake.items()})
            out = os.path.join(tmp, f"out-{label}")
            argv = [RUNNER, "--image", image, "--out", out, "--poll", "0", *extra]
            if not merge_in_docker:
                argv += ["--locksim", locksim]
            code, stdout, err = run(argv, ROOT, senv)
            return code, stdout, err, out

        code, stdout, err, out = script("ok")
        need(code == 0, f"run-campaign.sh exited {code}:\n{err}")
        dock = [json.loads(line) for line in open(os.path.join(tmp, "docker-ok"))]
        need(dock == [["build", "-t", image, ROOT], ["push", image]], f"docker was called as {dock}")
        shard_files = sorted(os.listdir(os.path.join(out, "shards")))
        need(shard_files == [f"shard-{i}.jsonl" for i in range(n)], f"collected {shard_files}")
        print(f"ok    run-campaign.sh: docker build + push, {n} indexes run, their records "
              f"decoded from their logs: {', '.join(shard_files)}")
        merged = open(os.path.join(out, "summary.txt"), "rb").read()
        need(stdout == merged, "run-campaign.sh's stdout is not the merged summary")
        code, expected, err = run(["locksim", "campaign", *(subset or ["sims/"])], ROOT, env)
        need(code == 0, f"the unsharded run exited {code}:\n{err}")
        compare("kubernetes", merged, expected)
        report = os.path.join(out, "report.html")
        need(os.path.exists(report), "merge wrote no report")
        files = os.path.join(out, "report-files")
        print(f"ok    report {os.path.getsize(report)} bytes, "
              f"{len(os.listdir(files)) if os.path.isdir(files) else 0} files beside it, in --out")

        code, _, err, _ = script("again", "--no-build", fresh=False)
        need(code == 2 and "exists" in err, f"a second run over an existing Job exited {code}: {err}")
        code, stdout2, err, _ = script("collect", "--collect-only", fresh=False)
        need(code == 0 and stdout2 == merged, f"--collect-only exited {code}: {err}")
        print("ok    an existing Job: refused (exit 2) without --replace; --collect-only merges it again")
        code, stdout3, err, out3 = script("docker", "--collect-only", fresh=False, merge_in_docker=True)
        dock = [json.loads(line) for line in open(os.path.join(tmp, "docker-docker"))]
        need(code == 0 and stdout3 == merged and os.path.exists(os.path.join(out3, "report.html"))
             and [d[0] for d in dock] == ["run"],
             f"--collect-only merging through docker run exited {code} (docker calls {dock}): {err}")
        print("ok    without --locksim or locksim on PATH: merged by `docker run IMAGE merge`, /out mapped")

        code, _, err, out = script("broken", "--no-build", break_index=1)
        need(code == 3 and "FAILED: failed indexes 1" in err
             and os.path.exists(os.path.join(out, "summary.txt")),
             f"with index 1 failing (exit 2) run-campaign.sh exited {code}:\n{err}")
        print("ok    index 1 failing (locksim exits 2, FailIndex): run-campaign.sh exits 3 when the Job fails, "
              "not at --timeout; the other shards merged with --partial")
        code, _, err, _ = script("cut", "--no-build", cut_index=2)
        need(code == 4 and "index 2: its log is cut short" in err,
             f"with index 2's log cut short run-campaign.sh exited {code}:\n{err}")
        print("ok    index 2's log cut short: exit 4 naming it")
        code, _, err, _ = script("hang", "--no-build", "--timeout", "1s", hang=1)
        need(code == 3 and "neither complete nor failed after 1s" in err,
             f"a Job that never finishes: run-campaign.sh exited {code}:\n{err}")
        print("ok    a Job that never finishes: exit 3 after --timeout")

        # A missing shard: refused (exit 2) naming it; --partial summarizes and names the seeds.
        rest = [os.path.join(tmp, "out-ok", "shards", f) for f in shard_files[:-1]]
        code, _, refused = run([locksim, "merge", *rest], ROOT, env)
        need(code == 2 and f"shard {n - 1}/{n} missing" in refused,
             f"merge without shard {n - 1} exited {code}: {refused}")
        code, _, err = run([locksim, "merge", "--partial", *rest], ROOT, env)
        need(code == 3 and "missing (seed" in err, f"merge --partial exited {code}: {err}")
        print(f"ok    without shard {n - 1}/{n}: merge exits 2: {refused.strip()}")
        print(f"ok    with --partial: exit 3 (expectations unjudged): {err.strip()}")


def gh_expand(s, ctx):
    def sub(m):
        key = m.group(1).strip()
        need(key in ctx, f"unknown expression ${{{{ {key} }}}} in the workflow")
        return str(ctx[key])
    return re.sub(r"\$\{\{([^}]*)\}\}", sub, s)


def run_steps(job, ctx, cwd, env, name):
    """Runs a job's `run:` steps as the runner does (bash -e -o pipefail); returns the last's stdout."""
    out = b""
    for step in job["steps"]:
        if "run" not in step:
            continue
        script = gh_expand(step["run"], ctx)
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                           cwd=cwd, env=env, capture_output=True)
        need(p.returncode == 0, f"{name}: step `{step.get('name', script)}` exited {p.returncode}:\n"
             f"{p.stderr.decode(errors='replace')}")
        out = p.stdout
    return out


def check_workflow(locksim, subset, require, env):
    wf = yaml.safe_load(open(WORKFLOW))
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    need(triggers, "the workflow has no triggers")
    jobs = wf["jobs"]
    shard = next((j for j in jobs.values() if "matrix" in j.get("strategy", {})), None)
    need(shard is not None, "no job with a shard matrix")
    indexes = shard["strategy"]["matrix"]["index"]
    need(indexes == list(range(len(indexes))), f"matrix.index must be 0..N-1, not {indexes}")
    shard_name = next(k for k, v in jobs.items() if v is shard)
    merge_name, merge = next(((k, v) for k, v in jobs.items()
                              if shard_name in ([v.get("needs")] if isinstance(v.get("needs"), str) else v.get("needs", []))),
                             (None, None))
    need(merge is not None, "no job that needs the shards")
    need("cancelled()" in str(merge.get("if", "")) or "always()" in str(merge.get("if", "")),
         "the merge job must run after a failed shard too (if: !cancelled())")

    def uploads(job):
        return [s["with"] for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]

    need(any("shard-" in u["name"] for u in uploads(shard)), "the shards upload no artifact")
    need(uploads(merge), "the merge job uploads no report")
    print(f"ok    {os.path.relpath(WORKFLOW, ROOT)}: {len(indexes)} shards ({shard_name}), merge job {merge_name}, artifacts")
    validate("gh", WORKFLOW, require)

    with tempfile.TemporaryDirectory() as tmp:
        def workspace(name):
            # A runner's checkout with the `locksim` artifact downloaded to bin/.
            w = os.path.join(tmp, name)
            os.makedirs(os.path.join(w, "bin"))
            os.symlink(os.path.join(ROOT, "sims"), os.path.join(w, "sims"))
            shutil.copy(locksim, os.path.join(w, "bin", "locksim"))
            return w

        def subset_script(job):
            if subset:
                for s in job["steps"]:
                    if "run" in s:
                        s["run"] = s["run"].replace(" sims/ ", " " + " ".join(subset) + " ")
        subset_script(shard)
        shards_dir = os.path.join(tmp, "merge", "shards")
        mw = workspace("merge")
        os.makedirs(shards_dir)
        for i in indexes:
            w = workspace(f"shard-{i}")
            ctx = {"matrix.index": i, "strategy.job-total": len(indexes)}
            run_steps(shard, ctx, w, env, f"shard {i}")
            for u in uploads(shard):  # upload-artifact, then download-artifact merge-multiple
                path = gh_expand(u["path"], ctx)
                need(os.path.exists(os.path.join(w, path)), f"shard {i} wrote no {path}")
                shutil.copy(os.path.join(w, path), shards_dir)
        print(f"ok    ran {len(indexes)} matrix jobs: {', '.join(sorted(os.listdir(shards_dir)))}")
        merged = run_steps(merge, {}, mw, env, "merge")
        # The shard's command (its last line, after bin/locksim), without its shard options.
        cmd = next(s["run"] for s in shard["steps"] if "run" in s).splitlines()[-1]
        ctx = {"matrix.index": 0, "strategy.job-total": len(indexes)}
        argv = gh_expand(cmd, ctx).split()[1:]
        code, expected, err = run([locksim, *unsharded(argv)], ROOT, env)
        need(code == 0, f"the unsharded run exited {code}:\n{err}")
        compare("workflow", merged, expected)
        need(os.path.exists(os.path.join(mw, "report", "report.html")), "the merge job wrote no report")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locksim", default=os.path.join(ROOT, "target/release/locksim"))
    ap.add_argument("--subset", nargs="+", help="campaign files to run instead of sims/")
    ap.add_argument("--require-validators", action="store_true",
                    help="fail (instead of skipping) when a schema validator is not installed")
    a = ap.parse_args()
    locksim = os.path.abspath(a.locksim)
    need(os.access(locksim, os.X_OK), f"{locksim} is not an executable (build it: cargo build --release -p locksim-cli)")
    env = dict(os.environ)
    for k in ("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"):
        env.pop(k, None)
    env["PATH"] = os.path.dirname(locksim) + os.pathsep + env.get("PATH", "")
    subset = [os.path.relpath(os.path.abspath(s), ROOT) for s in (a.subset or [])]
    check_kubernetes(locksim, subset, a.require_validators, env)
    check_workflow(locksim, subset, a.require_validators, env)
    print("campaign deploy checks: all passed")


if __name__ == "__main__":
    main()
