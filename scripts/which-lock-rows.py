#!/usr/bin/env python3
"""Adds the remedy rows and the witnesses to the which-lock table (scripts/which-lock-table.sh).

    which-lock-rows.py LOCKSIM SEEDS TABLE.md > OUT.md

TABLE.md is `locksim campaign --all-algorithms --markdown`: one row per algorithm *as its library
ships it* (every algorithm's defaults are its real library's behaviour). This adds:

- **Remedy rows**: each algorithm again with the knob that is its documented remedy (REMEDIES
  below), run by `locksim campaign --algo A --set K=V --seeds SEEDS --markdown`, labelled
  "`A`, K=V" and placed under A's row.
- **Witnesses**: cells a wider search found broken although the SEEDS-seed cell reads `safe`
  (WITNESSES below: algorithm, fault kind, seed). Each is run now (`locksim run --algo A
  --faults K --seed S --json`); one that still violates S1-S4 takes K out of the row's
  "survives" column, marks the cell, and is listed under the table with what it violates. One
  that no longer violates is listed as such (and said on stderr): nothing here is typed by hand.
"""
import json
import subprocess
import sys

# (algorithm, settings, why): the knob a lock's own documentation gives as its remedy.
REMEDIES = [
    ("redis-failover", ["wait_replicas=1"], "WAIT 1 after each SET (redis.io, WAIT)"),
    ("db-lease", ["time_source=db"], "ShedLock's usingDbTime()"),
    ("k8s-lease", ["fencing=true"], "a fencing token client-go does not ship"),
    ("zookeeper", ["fencing=true", "protected=guid+session"], "the node's sequence number as a token, and Curator 4.2's session-checked protected mode (CURATOR-498)"),
]

# (algorithm, fault kind, seed, pinned by): cells that read `safe` in the table and are not.
WITNESSES = [
    ("ap-lock", "clock-drift", 8721, "sims/drift-beyond-allowance-ap-lock.toml"),
    ("redis-failover", "clock-drift", 490, "sims/drift-beyond-allowance-redis-failover.toml"),
    ("redis-failover", "leader-change", 737, "sims/redis-failover-primary-returns-at-down-after.toml"),
    ("db-lease", "clock-drift", 277, "sims/drift-beyond-allowance-client.toml"),
    ("zookeeper", "clock-drift", 1000019, "drift beyond the allowance (#46)"),
    ("zookeeper", "crash-restart", 575, "sims/zookeeper-crash-restart-curator-498.toml"),
]
SAFETY = ("S1", "S2", "S3", "S4")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def row(cols):
    return "| " + " | ".join(cols) + " |"


def main():
    locksim, seeds, path = sys.argv[1], sys.argv[2], sys.argv[3]
    lines = open(path).read().splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("| algorithm |"))
    names = cells(lines[header])
    survives = len(names) - 1
    rows = {}
    for i, l in enumerate(lines):
        if i > header + 1 and l.startswith("| `"):
            rows[cells(l)[0].strip("`")] = i
    out = {i: [l] for i, l in enumerate(lines)}

    found = []
    for algo, kind, seed, pinned in WITNESSES:
        if algo not in rows:
            continue
        r = subprocess.run([locksim, "run", "--algo", algo, "--faults", kind, "--seed", str(seed), "--json"],
                           capture_output=True, text=True)
        try:
            v = json.loads(r.stdout)["verdict"]
        except (ValueError, KeyError):
            sys.exit(f"which-lock-rows: `locksim run --algo {algo} --faults {kind} --seed {seed}` gave no verdict: {r.stderr.strip()}")
        kinds = sorted({x["kind"] for x in v.get("violations", []) if x["kind"] in SAFETY})
        found.append((algo, kind, seed, kinds, pinned))
        if not kinds:
            print(f"which-lock-rows: witness {algo} {kind} seed {seed} no longer violates S1-S4", file=sys.stderr)
            continue
        i = rows[algo]
        cols = cells(out[i][0])
        col = names.index(f"`{kind}`")
        if cols[col] == "safe":
            cols[col] = f"safe here; {'·'.join(kinds)} at seed {seed}"
        kept = [k.strip() for k in cols[survives].split(",") if k.strip() and k.strip() != kind]
        cols[survives] = ", ".join(kept) if kept else "nothing"
        out[i] = [row(cols)]

    for algo, settings, why in REMEDIES:
        if algo not in rows:
            continue
        cmd = [locksim, "campaign", "--algo", algo, "--seeds", seeds, "--markdown"]
        for s in settings:
            cmd += ["--set", s]
        r = subprocess.run(cmd, capture_output=True, text=True)
        got = [l for l in r.stdout.splitlines() if l.startswith(f"| `{algo}` |")]
        if r.returncode not in (0, 1) or not got:
            sys.exit(f"which-lock-rows: {' '.join(cmd)} failed: {r.stderr.strip()[-500:]}")
        cols = cells(got[0])
        cols[0] = f"`{algo}`, {' '.join(settings)}"
        cols[1] = f"the remedy: {why}"
        out[rows[algo]].append(row(cols))

    print("\n".join(l for i in sorted(out) for l in out[i]))
    if found:
        print()
        print("Witnesses: cells the table's seeds call `safe` that a wider search broke, each run again "
              "for this table (`locksim run --algo A --faults K --seed S`); a witness that still breaks takes "
              "its kind out of the row's survives column.")
        print()
        print("| algorithm | faults | seed | violates now | pinned by |")
        print("|---|---|---|---|---|")
        for algo, kind, seed, kinds, pinned in found:
            print(f"| `{algo}` | `{kind}` | {seed} | {' · '.join(kinds) if kinds else 'nothing (no longer a witness)'} | {pinned} |")


if __name__ == "__main__":
    main()
