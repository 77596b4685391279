"""Judge robustness on the shipped data: what ``sim2real-eval demo --judges ekf,ukf`` finds on the synthetic
reference (K = 10) and on the real car segment (``--real-sample``) — docs/demo.md, "Judge robustness".

    python benchmarks/judge_table.py              # run both demos, write the record and the docs regions
    python benchmarks/judge_table.py --check      # exit 1 if docs/demo.md differs from the record
    python benchmarks/judge_table.py --render     # the docs regions again from the record (no demo run)

It runs both commands as a user does (this checkout's src/, a temporary OUT), keeps what their
``judges.json`` say (each judge's Table I, τ with its interval, the verdicts of every pair of variants;
the judge files named by their file name) with the date, the commit and each command's wall and CPU
time in ``benchmarks/judge_table.json``, and renders that record — with the package's own section
renderer (``judges.table_rows``, ``agreement_rows``, ``verdict_rows``) — into the regions of
docs/demo.md between ``<!-- generated: judges-synthetic -->`` / ``judges-real`` and their ``end``.
tests/test_judge_numbers.py checks that the regions are this record rendered, and (slow) that the real
sample's demo still gives the recorded numbers.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "benchmarks" / "judge_table.json"
DOC = REPO / "docs" / "demo.md"
REGION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)
JUDGES = "ekf,ukf,no_accel"
RUNS = {"synthetic": [], "real": ["--real-sample"]}
TITLES = {"synthetic": "the synthetic reference (K = 10 per scenario, demo `--judges ekf,ukf,no_accel`)",
          "real": "the real car segment (K = 6 windows, demo `--real-sample --judges ekf,ukf,no_accel`)"}


def reduced(doc: dict) -> dict:
    """judges.json without this machine's paths: each judge's file by its name."""
    out = dict(doc)
    out["judges"] = [dict(judge, ekf=Path(judge["ekf"]).name, navsat=Path(judge["navsat"]).name)
                     for judge in doc["judges"]]
    for judge in out["judges"]:
        judge.pop("ekf_sha256", None)
        judge.pop("navsat_sha256", None)
    return out


def run(kind: str, out: Path) -> dict:
    """One demo with ``--judges``: its reduced judges.json, wall and CPU (the command and its workers)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    command = [sys.executable, "-c", "import sys; from sim2real_eval.cli import main; sys.exit(main())",
               "demo", "--no-progress", "--judges", JUDGES, "--out", str(out), *RUNS[kind]]
    before = os.times()
    load = os.getloadavg()[0]
    start = datetime.datetime.now(datetime.timezone.utc)
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    after = os.times()
    wall = (datetime.datetime.now(datetime.timezone.utc) - start).total_seconds()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    summary = json.loads((out / "demo.json").read_text(encoding="utf-8"))
    return {"judges": reduced(json.loads((out / "judges.json").read_text(encoding="utf-8"))),
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_1min": round(load, 1),
            "judges_step_s": {"wall": summary["wall_time_s"].get("judges"),
                              "cpu": summary["cpu_time_s"].get("judges")},
            "at": start.strftime("%d %b %Y %H:%M UTC")}


def render(kind: str, entry: dict) -> str:
    """The docs region of one data set: per study the per-judge table, the agreement, the changed verdicts."""
    sys.path.insert(0, str(REPO / "src"))
    from sim2real_eval.report.tables import markdown_table
    from sim2real_eval.studies import judges

    doc = entry["judges"]
    step = entry["judges_step_s"]
    lines = [f"On {TITLES[kind]}, measured {entry['at']} (wall {entry['wall_s']:g} s, "
             f"CPU {entry['cpu_s']:g} s at 1-minute load {entry['load_1min']:g}; the other judges' step "
             f"{step['wall']:.1f} s wall, {step['cpu']:.1f} s CPU):", ""]
    for key, title in judges.STUDIES:
        study = doc["studies"][key]
        header, rows = judges.table_rows(doc, key)
        lines += [f"{title}:", "", markdown_table(header, rows), "", judges.floor_line(doc, key), "",
                  *([judges.health_line(doc, key), ""] if judges.health_line(doc, key) else []),
                  markdown_table(judges.AGREEMENT_HEADER, judges.agreement_rows(doc, key)), ""]
        for pair in study["pairs"]:
            changed = judges.verdict_rows(pair)
            if changed:
                lines += [f"Verdicts that differ, {pair['first']} vs {pair['second']} "
                          f"({len(pair['verdicts']) - len(changed)} of "
                          f"{len(pair['verdicts'])} pairs agree):", "",
                          markdown_table(judges.VERDICT_HEADER, changed), ""]
    return "\n".join(lines).rstrip("\n")


def regions(text: str) -> dict:
    return {m["name"]: m["body"].rstrip("\n") for m in REGION.finditer(text)}


def blocks(record: dict) -> dict:
    return {f"judges-{kind}": render(kind, record["runs"][kind]) for kind in RUNS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check docs/demo.md against the record")
    parser.add_argument("--render", action="store_true", help="only write docs/demo.md from the record")
    args = parser.parse_args()
    if not args.check and not args.render:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with tempfile.TemporaryDirectory(prefix="judge_table_") as tmp:
            record = {"commit": commit, "command_judges": JUDGES,
                      "runs": {kind: run(kind, Path(tmp) / kind) for kind in RUNS}}
        RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    wanted = blocks(record)
    text = DOC.read_text(encoding="utf-8")
    found = regions(text)
    missing = sorted(set(wanted) - set(found))
    if missing:
        print(f"{DOC}: no region {', '.join(missing)} (add <!-- generated: NAME --> … <!-- end: NAME -->)")
        return 1
    if args.check:
        stale = [name for name, body in wanted.items() if found[name] != body]
        print("stale: " + ", ".join(stale) if stale else "docs/demo.md: the judge regions are the record's")
        return 1 if stale else 0
    DOC.write_text(REGION.sub(lambda m: m.group(1) + (wanted[m["name"]] + "\n" if m["name"] in wanted
                                                      else m["body"]) + m.group(4), text), encoding="utf-8")
    print(f"wrote {RECORD.name} and the regions {', '.join(wanted)} of docs/demo.md")
    for kind, entry in record["runs"].items():
        for key, study in entry["judges"]["studies"].items():
            for pair in study["pairs"]:
                print(f"{kind} {key}: tau {pair['tau']:.3f} {pair.get('tau_ci95')} flips {pair['flips']} "
                      f"separability changes {pair['separability_changes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
