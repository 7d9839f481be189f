#!/usr/bin/env python3
"""Regenerates the which-library table of docs/libraries.md: every shipped lock library
(`locksim list --json`, "clients") under each of six faults, K real runs against real servers
beside K simulated seeds of the built-in model of its algorithm (`locksim real --compare
FILE --runs K --json --liveness`). The text between the `which-library` markers is replaced;
nothing is typed by hand.

    scripts/which-library-table.py [--locksim BIN] [--runs K] [--only LIB,...] [--keep DIR]

Each cell's scenario file is written to DIR (a temporary folder unless --keep) and its
result appended to DIR/results.jsonl as it ends, so an interrupted run loses nothing; re-run
one cell with `locksim real --compare DIR/LIB-FAULT.toml --runs K`. Needs what `locksim
real` needs (root for nftables, the servers, scripts/install-adapters.sh target/adapters).
Exits non-zero, leaving the docs untouched, when a cell fails (exit 4) or the markers are
missing; a cell real mode refuses (exit 2) is shown as refused, with the reason.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "libraries.md")
BEGIN, END = "<!-- which-library:begin", "<!-- which-library:end"

COMMON = {"clients": 2, "ttl": "1s", "duration": "3s", "writes": 3,
          "work_min": "300ms", "work_max": "300ms"}
# c2 starts 300 ms late, so c1 holds the lock first in every cell.
START_LATE = {"at": "0s", "type": "pause", "node": "c2", "duration": "300ms"}

# (name, what it does, extra settings, extra client tables, faults after START_LATE)
FAULTS = [
    ("clean", "no fault", {}, {}, []),
    ("pause", "c1 paused (SIGSTOP) 1.5 s mid-work, past its 1 s lease", {}, {},
     [{"at": "500ms", "type": "pause", "node": "c1", "duration": "1500ms"}]),
    ("late-write", "c1 | res black-holed 250 ms to 1.4 s, after c1's first writes: a write in flight is retransmitted by TCP after the heal",
     {"duration": "2s", "work_min": "100ms", "work_max": "100ms", "think_max": "0s",
      "retry_delay": "50ms", "rpc_timeout": "300ms"}, {"c1": {"duration": "400ms"}},
     [{"at": "250ms", "type": "partition", "a": "c1", "b": "res", "duration": "1150ms"}]),
    ("crash", "n1 killed at 200 ms, restarted 50 ms later (no persistence where the service has a choice)",
     {"fsync": "never"}, {},
     [{"at": "200ms", "type": "crash", "node": "n1", "restart_after": "50ms"}]),
    ("clock-step", "n1's wall clock steps 2 s forward at 400 ms", {}, {},
     [{"at": "400ms", "type": "clock_step", "node": "n1", "delta": "2s"}]),
    ("one-way", "answers from the servers to c1 dropped, 500 ms to 2 s (its requests still arrive)", {}, {},
     [{"at": "500ms", "type": "partition_oneway", "from": "servers", "to": "c1",
       "duration": "1500ms"}]),
]
# Settings only some algorithms have.
ONLY = {"fsync": {"central", "central-fencing", "redlock"}}
PROPS = ["S1", "S2", "S3", "S4", "L1", "L2", "L3"]


def toml_value(v):
    return json.dumps(v) if isinstance(v, str) else str(v)


def scenario(lib, fault):
    name, what, settings, clients, faults = fault
    algo = lib["algorithm"][0]
    s = dict(COMMON)
    s.update({k: v for k, v in settings.items() if algo in ONLY.get(k, {algo})})
    lines = [f'name = "which-library: {lib["name"]}, {name}"',
             f'description = "{lib["library"]}: {what}. Made by scripts/which-library-table.py."',
             f'algorithm = "{algo}"', "seeds = 5", "expect = \"safe\"", "",
             "[real]", f'client = "{lib["name"]}"', "", "[settings]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in s.items()]
    for c, t in clients.items():
        lines += ["", f"[client.{c}]"] + [f"{k} = {toml_value(v)}" for k, v in t.items()]
    for f in [START_LATE] + faults:
        lines += ["", "[[fault]]"] + [f"{k} = {toml_value(v)}" for k, v in f.items()]
    return "\n".join(lines) + "\n"


def cell_text(row, p):
    return f'{row["real"]}/{row["real_runs"]} · {row["sim"]}/{row["sim_runs"]}'


def table(results, runs):
    head = ["library", "fault"] + PROPS + ["grants", "sides"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        lib = f'{r["library"]} {r["version"]}'
        if r["code"] == 2:
            out.append(f'| {lib} | {r["fault"]} | refused: {r["error"]} |' + " |" * (len(head) - 3))
            continue
        rows = {x["property"]: x for x in r["json"]["properties"]}
        cells = []
        for p in PROPS:
            x = rows.get(p)
            cells.append("–" if x is None else cell_text(x, p) + (" **SIM_OPTIMISTIC**" if x["sim_optimistic"] else "") + (" *differs*" if x["differs"] else ""))
        j = r["json"]
        grants = f'{j["real_grants"]} · {j["sim_grants"]}'
        if j["real_runs_without_grants"] or j["sim_seeds_without_grants"]:
            grants += f' (**{j["real_runs_without_grants"]} real runs and {j["sim_seeds_without_grants"]} seeds without a grant**)'
        sides = "agree" if j["agree"] else "**differ**"
        out.append(f'| {lib} | {r["fault"]} | ' + " | ".join(cells) + f" | {grants} | {sides} |")
    return "\n".join(out)


SERVERS = "Servers, as the runs reported them: "


def parse_servers(line):
    """`SERVERS + "A (x, y); B (z)."` -> {"A": {"x", "y"}, "B": {"z"}}."""
    out = {}
    for part in line[len(SERVERS):].rstrip(".").split("; "):
        server, _, algos = part.rpartition(" (")
        out.setdefault(server, set()).update(a for a in algos.rstrip(")").split(", ") if a)
    return out


def format_servers(by):
    return SERVERS + "; ".join(f"{k} ({', '.join(sorted(v))})" for k, v in sorted(by.items())) + "."


def merge_servers(old, new):
    by = parse_servers(old)
    for k, v in parse_servers(new).items():
        by.setdefault(k, set()).update(v)
    return format_servers(by)


def servers_line(results):
    """`Servers: Redis server v=7.0.15 (central, redlock); ...`, as the runs said."""
    by = {}
    for r in results:
        if "json" in r:
            algo, _, rest = r["json"]["real_service"].partition(" on ")
            server = rest.split(", clients:")[0].split(" sha=")[0]
            by.setdefault(server, set()).add(algo)
    return format_servers(by)


def merge_rows(old_body, new_rows, libraries, how):
    """With --only: the old table's rows of the other libraries kept in place, the re-run
    libraries' rows replaced (or appended), and the old "Made by" line extended."""
    new_lines = new_rows.splitlines()
    head, fresh = new_lines[:2], new_lines[2:]
    out, placed = [], False
    for line in old_body.splitlines():
        if not line.startswith("| ") or line.startswith("| library |"):
            continue
        lib = line[2:].split(" | ")[0].rsplit(" ", 1)[0]
        if lib in libraries:
            if not placed:
                out += fresh
                placed = True
        else:
            out.append(line)
    if not placed:
        out += fresh
    made = [l for l in old_body.splitlines() if l.startswith("Made by ")]
    if made:
        old_libs = {l[2:].split(" | ")[0].rsplit(" ", 1)[0] for l in old_body.splitlines()
                    if l.startswith("| ") and not l.startswith("| library |")}
        verb = "re-run" if set(libraries) <= old_libs else "added"
        how = made[0][len("Made by "):].rstrip(".") + f"; {', '.join(libraries)} {verb} by {how}"
    return "\n".join(head + out), how


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locksim", default=os.path.join(ROOT, "target", "release", "locksim"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated library names")
    ap.add_argument("--keep", help="write the cells' files and results here (kept)")
    a = ap.parse_args()
    if not os.access(a.locksim, os.X_OK):
        sys.exit(f"error: {a.locksim} is not an executable (cargo build --release -p locksim-cli)")
    with open(DOC) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"error: {DOC} lacks the {BEGIN} --> / {END} --> markers")
    libs = json.loads(subprocess.run([a.locksim, "list", "--json"], check=True,
                                     capture_output=True, text=True).stdout)["clients"]
    if a.only:
        want = a.only.split(",")
        libs = [l for l in libs if l["name"] in want]
    folder = a.keep or tempfile.mkdtemp(prefix="which-library-")
    os.makedirs(folder, exist_ok=True)
    log = open(os.path.join(folder, "results.jsonl"), "a")
    results, failed = [], []
    started = time.monotonic()
    total = len(libs) * len(FAULTS)
    for lib in libs:
        for fault in FAULTS:
            path = os.path.join(folder, f'{lib["name"]}-{fault[0]}.toml')
            with open(path, "w") as f:
                f.write(scenario(lib, fault))
            p = subprocess.run([a.locksim, "real", "--compare", path, "--runs", str(a.runs),
                                "--json", "--liveness"], capture_output=True, text=True)
            r = {"library": lib["name"], "version": lib["version"], "fault": fault[0],
                 "file": path, "code": p.returncode}
            if p.returncode in (0, 1) and p.stdout.strip():
                r["json"] = json.loads(p.stdout)
            else:
                last = [l for l in p.stderr.splitlines() if l.strip()]
                r["error"] = (last[-1] if last else f"exit {p.returncode}").split("real mode: ")[-1]
                if p.returncode != 2:
                    failed.append(r)
            results.append(r)
            log.write(json.dumps(r) + "\n")
            log.flush()
            done = len(results)
            print(f"[{done}/{total}, {time.monotonic() - started:.0f} s] {lib['name']} {fault[0]}: "
                  f"exit {p.returncode}" + (f' ({r["error"]})' if "error" in r else ""),
                  file=sys.stderr, flush=True)
    if failed:
        for r in failed:
            print(f'error: {r["file"]}: exit {r["code"]}: {r["error"]}', file=sys.stderr)
        sys.exit(f"{len(failed)} cells failed; {DOC} left as it was; results in {folder}")
    faults = "\n".join(f"- `{n}`: {what}" for n, what, *_ in FAULTS)
    b = doc.index(BEGIN)
    b = doc.index("\n", b) + 1
    e = doc.index(END)
    rows = table(results, a.runs)
    only = f" --only {a.only}" if a.only else ""
    how = f"`scripts/which-library-table.py --runs {a.runs}{only}` ({time.monotonic() - started:.0f} s)"
    servers = servers_line(results)
    if a.only:
        rows, how = merge_rows(doc[b:e], rows, [l["name"] for l in libs], how)
        old = [l for l in doc[b:e].splitlines() if l.startswith(SERVERS)]
        if old:  # the other libraries' servers stay named
            servers = merge_servers(old[0], servers)
    body = (f"{rows}\n\n"
            f"Each cell: violating runs / runs, real · simulated ({a.runs} real runs against real servers, "
            f"{a.runs} seeds of the built-in model of the library's algorithm in the simulator, the same "
            f"workload draws on both sides). Faults (c2 starts 300 ms late in every cell, so c1 holds first):\n"
            f"{faults}\n\n{servers}\n\nMade by {how}.\n")
    with open(DOC + ".tmp", "w") as f:
        f.write(doc[:b] + body + doc[e:])
    os.replace(DOC + ".tmp", DOC)
    print(f"{DOC}: which-library table regenerated ({len(results)} cells); files and results in {folder}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
