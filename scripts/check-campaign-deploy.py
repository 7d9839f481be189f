#!/usr/bin/env python3
"""Checks the sharded campaign recipes without a cluster or a CI runner.

For deploy/kubernetes/campaign-job.yaml (+ merge-job.yaml) and .github/workflows/campaign.yml:
reads them with a YAML parser (PyYAML), checks their shape (an Indexed Job with completions,
parallelism, backoffLimitPerIndex and a podFailurePolicy on locksim's exit codes; a shard matrix,
artifacts and a merge job), validates them against the Kubernetes Job schema (kubernetes-validate)
and the GitHub workflow schema (check-jsonschema's vendored copy) when those packages are
installed, then runs each shard's exact command with the environment Kubernetes or the runner
gives it, runs the merge command, and compares the merged summary with an unsharded run of the
same campaign, byte for byte. It also checks that merge refuses a missing shard (exit 2) and
that --partial summarizes what is there (exit 3: the campaign files' expectations are left
unjudged; naming the missing seeds).

Usage: scripts/check-campaign-deploy.py --locksim target/release/locksim
           [--subset sims/a.toml sims/b.toml] [--require-validators]
--subset replaces the campaign's `sims/` argument (and only that) with a few files, to keep CI
short; the check says so.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K8S_JOB = os.path.join(ROOT, "deploy/kubernetes/campaign-job.yaml")
K8S_MERGE = os.path.join(ROOT, "deploy/kubernetes/merge-job.yaml")
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


def k8s_expand(s, env):
    """Kubernetes' $(VAR) expansion in command and args ($$ is a literal $)."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, s)


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


def check_kubernetes(locksim, subset, require, env):
    docs = load_all(K8S_JOB)
    jobs = [d for d in docs if d.get("kind") == "Job"]
    need(len(jobs) == 1, f"{K8S_JOB}: expected one Job, found {len(jobs)}")
    job = jobs[0]
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
    codes = exit_codes(locksim, env)
    rules = spec.get("podFailurePolicy", {}).get("rules", [])
    fail_index = [r for r in rules if r.get("action") == "FailIndex" and "onExitCodes" in r]
    need(fail_index, "no podFailurePolicy rule with action FailIndex on exit codes")
    ec = fail_index[0]["onExitCodes"]
    need(ec.get("operator") == "In" and set(ec.get("values", [])) == codes,
         f"FailIndex must be on locksim's exit codes {sorted(codes)}, not {ec}")
    need(ec.get("containerName") == c["name"], "FailIndex names another container")
    argv = list(c.get("command", [])) + list(c.get("args", []))
    need(argv[:2] == ["locksim", "campaign"], f"the container does not run locksim campaign: {argv}")
    i = argv.index("--shards") if "--shards" in argv else -1
    need(i > 0 and argv[i + 1] == str(n), f"--shards must equal completions ({n})")
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    need(mounts, "no volume mount for the results")
    print(f"ok    {os.path.relpath(K8S_JOB, ROOT)}: Indexed Job, {n} completions, "
          f"backoffLimitPerIndex {spec['backoffLimitPerIndex']}, FailIndex on exit codes {sorted(codes)}")
    merge_docs = load_all(K8S_MERGE)
    merge_jobs = [d for d in merge_docs if d.get("kind") == "Job"]
    need(len(merge_jobs) == 1, f"{K8S_MERGE}: expected one Job")
    mc = merge_jobs[0]["spec"]["template"]["spec"]["containers"][0]
    for path in (K8S_JOB, K8S_MERGE):
        validate("k8s", path, require)

    with tempfile.TemporaryDirectory() as tmp:
        volume = os.path.join(tmp, "results")
        os.mkdir(volume)

        def local(s):  # the shared volume is a local folder
            for mount in mounts.values():
                s = s.replace(mount, volume)
            return s

        if subset:
            print(f"note  campaign argument sims/ replaced by {' '.join(subset)} (--subset)")
        for index in range(n):
            penv = dict(env)
            penv.update({e["name"]: str(e.get("value", "")) for e in c.get("env", [])})
            penv["JOB_COMPLETION_INDEX"] = str(index)  # what the Job controller sets
            args = [local(k8s_expand(a, penv)) for a in subset_args(argv, subset)]
            code, _, err = run(args, ROOT, penv)
            need(code == 0, f"index {index}: {' '.join(args)} exited {code}:\n{err}")
        shard_files = sorted(os.listdir(volume))
        need(len(shard_files) == n, f"expected {n} shard files, found {shard_files}")
        print(f"ok    ran {n} indexes: {', '.join(shard_files)}")
        margv = list(mc.get("command", [])) + list(mc.get("args", []))
        need(margv[:2] == ["sh", "-c"] and len(margv) == 3, f"merge command is not sh -c: {margv}")
        code, merged, err = run(["sh", "-c", local(margv[2])], ROOT, env)
        need(code == 0, f"merge exited {code}:\n{err}")
        code, expected, err = run(unsharded(subset_args(argv, subset)), ROOT, env)
        need(code == 0, f"the unsharded run exited {code}:\n{err}")
        compare("kubernetes", merged, expected)
        report = os.path.join(volume, "report.html")
        need(os.path.exists(report), "merge wrote no report")
        print(f"ok    report {os.path.getsize(report)} bytes, "
              f"{len(os.listdir(os.path.join(volume, 'report-files'))) if os.path.isdir(os.path.join(volume, 'report-files')) else 0} files beside it")
        # A missing shard: refused (exit 2) naming it; --partial summarizes and names the seeds.
        os.remove(os.path.join(volume, shard_files[-1]))
        rest = [os.path.join(volume, f) for f in shard_files[:-1]]
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
