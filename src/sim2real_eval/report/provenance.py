"""Where a report's numbers come from: the data, the software, the judge, the seeds, the variants.

``collect`` builds a plain, JSON-ready dict from what the scored runs recorded (each pipeline run's
``run.yaml``; a reference bag's ``reference.yaml``) plus what the caller knows (``context``).  The
report prints it as the page's banner and stores it in ``vepd.json`` (``options.provenance``).

    {"data": {"real": "synthetic" | "recorded" | "not recorded", "summary": str,
              "real_folders": [{"folder": str, "runs": int}], "reference": [{"setup": str, "seed": int}]},
     "software": {"package": "sim2real-eval", "version": str, "commit": str | None,
                  "modified": bool | None},
     "judge": [{"role": "ekf" | "navsat", "path": str, "sha256": str}],
     "seeds": {"study": [int], "reference": [int], "statistics": int},
     "variants": {variant: one line},
     "input": {"kind": str, "source": str}, "context": {...}}

Nothing here is required: inputs that record nothing (CSV files, bags from elsewhere) give "not
recorded" entries, never an error.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from .. import __version__
from ..errors import UserError
from ..metrics.study import REAL, StudyResult
from ..resources import config_path
from ..runs import RUN_FILE, read_run_info

REFERENCE_SIDECAR = "reference.yaml"   # reference.SIDECAR


def collect(result: StudyResult, input_kind: str = "", source: str = "", context: dict | None = None,
            run_records: dict | None = None) -> dict:
    """Provenance of a scored study (see the module docstring).  ``run_records``: {run key: run.yaml
    dict} of runs scored without a run directory (the demo's in-memory runs); others are read from
    their run directory."""
    known = run_records or {}
    records = {r.key: known[r.key] if r.key in known else _run_record(r) for r in result.runs}
    return {
        "data": _data(result, records),
        "software": software(),
        "judge": _judge(records),
        "seeds": {
            "study": sorted({rec["seed"] for rec in records.values() if isinstance(rec.get("seed"), int)}),
            "reference": sorted({ref["seed"] for ref in _references(result, records)}),
            "statistics": result.options.seed,
        },
        "variants": {v: describe_variant([records[r.key] for r in result.runs if r.variant == v])
                     for v in result.variants},
        "input": {"kind": input_kind, "source": str(source)},
        "context": dict(context or {}),
    }


def software() -> dict:
    """Package version and, when it runs from a git checkout of this project, the commit."""
    commit, modified = _git_state(Path(__file__).resolve().parents[1])
    return {"package": "sim2real-eval", "version": __version__, "commit": commit, "modified": modified}


def _git_state(package: Path):
    """(commit, has uncommitted changes) of the checkout holding ``package``, or (None, None)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=package, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()

    try:
        top = Path(git("rev-parse", "--show-toplevel"))
        if (top / "src" / "sim2real_eval").resolve() != package:  # an unrelated enclosing repository
            return None, None
        return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None, None


def _run_record(run) -> dict:
    """The run's run.yaml as ``runs.read_run_info`` reads it (plain dict), or {} when it has none."""
    folder = Path(run.source)
    if not (folder / RUN_FILE).is_file():
        return {}
    try:
        return read_run_info(folder).to_dict()
    except UserError:  # the scorer read it already; a provenance note never fails a report
        return {}


def _read_yaml(path: Path) -> dict:
    if not path.is_file():
        return {}
    from ..yamlio import load_yaml

    try:
        data = load_yaml(path)
    except Exception:  # a provenance note never fails a report
        return {}
    return data if isinstance(data, dict) else {}


def _real_bag(record: dict, run) -> Path:
    """The bag a real run was judged from: run.yaml's ``source``, else the scored input itself."""
    return Path(record.get("source") or run.source)


def _references(result: StudyResult, records: dict) -> list:
    """{"setup", "seed"} of the synthetic reference set of every real run made from one."""
    found = []
    for run in result.runs:
        if run.side != REAL:
            continue
        sidecar = _read_yaml(_real_bag(records[run.key], run) / REFERENCE_SIDECAR)
        if sidecar.get("synthetic") and isinstance(sidecar.get("setup"), dict):
            entry = {"setup": str(sidecar["setup"].get("name")), "seed": sidecar["setup"].get("seed")}
            if entry not in found:
                found.append(entry)
    return found


def _data(result: StudyResult, records: dict) -> dict:
    real = [run for run in result.runs if run.side == REAL]
    bags = [_real_bag(records[run.key], run) for run in real]
    synthetic = [bool(_read_yaml(bag / REFERENCE_SIDECAR).get("synthetic")) for bag in bags]
    references = _references(result, records)
    if real and all(synthetic):
        names = ", ".join(f"{r['setup']} (seed {r['seed']})" for r in references)
        kind = "synthetic"
        summary = (f"All {len(real)} real-side runs come from the synthetic reference data set {names}, "
                   "made by sim2real-eval make-reference, not from a vehicle.  The scores show how the "
                   "tool and the noise models behave, not how real sensors compare.")
    elif any(synthetic):
        kind = "synthetic"
        summary = (f"{sum(synthetic)} of {len(real)} real-side runs come from the synthetic reference "
                   "data set, the others from recorded bags (listed below).")
    elif real and all(bag.exists() and not bag.suffix == ".csv" for bag in bags):
        kind = "recorded"
        summary = f"Recorded data: the {len(real)} real-side runs were judged from the bags listed below."
    else:
        kind = "not recorded"
        summary = (f"The inputs do not record where the {len(real)} real-side runs came from "
                   "(CSV files or bags without run.yaml).")
    # Bags live as FOLDER/<scenario>/<run>: list the folders, with how many real runs each gave.
    counts = {}
    for bag in bags:
        folder = str(bag.parent.parent) if len(bag.parts) > 2 else str(bag.parent)
        counts[folder] = counts.get(folder, 0) + 1
    folders = [{"folder": f, "runs": n} for f, n in sorted(counts.items())]
    return {"real": kind, "summary": summary, "real_folders": folders, "reference": references}


def _judge(records: dict) -> list:
    """Judge configuration files (path, sha256) the runs recorded; one entry per distinct file."""
    seen = []
    for record in records.values():
        judge = record.get("judge")
        if not isinstance(judge, dict):
            continue
        for role in ("ekf", "navsat"):
            if judge.get(role):
                entry = {"role": role, "path": str(judge[role]),
                         "sha256": str(judge.get(f"{role}_sha256", ""))}
                if entry not in seen:
                    seen.append(entry)
    return seen


def describe_variant(records: list) -> str:
    """One line: what the variant's simulated sensors model (from its runs' ``models``)."""
    for record in records:
        models = record.get("models")
        if not isinstance(models, dict):
            continue
        replaced = record.get("replaced", list(models))
        parts = []
        for kind in ("gps", "imu"):
            if kind in models and kind in replaced:
                parts.append(f"{kind.upper()}: {describe_model(models[kind], kind)}")
            elif "replaced" in record:
                parts.append(f"{kind.upper()}: the real sensor as recorded")
        return "; ".join(parts)
    return "not recorded (the inputs carry no run.yaml)"


def describe_model(spec, kind: str) -> str:
    """A model spec's ``description`` (preset name, YAML path or inline mapping), else what it is."""
    if isinstance(spec, dict):
        base = spec.get("preset")
        text = spec.get("description") or (f"{describe_model(base, kind)} (with overrides)" if base else "")
        return str(text) or "an inline model (parameters in run.yaml)"
    if isinstance(spec, str) and spec:
        is_path = spec.endswith((".yaml", ".yml")) or "/" in spec
        path = Path(spec) if is_path else Path(config_path("sensors", kind, spec + ".yaml"))
        description = _read_yaml(path).get("description")
        if description:
            return f"{spec} — {' '.join(str(description).split()).rstrip('.')}"
        return spec
    return "not recorded"
