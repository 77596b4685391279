"""Does the ranking of GPS models on the synthetic reference change when the receiver degrades?  The
record behind README's and docs/demo.md's "GNSS-degraded drives" sentences.

    python benchmarks/degraded_gnss.py                       # run both demos (K = 10), write the record
    python benchmarks/degraded_gnss.py --from-normal N --from-degraded D   # existing demo outputs
    python benchmarks/degraded_gnss.py --check               # exit 1 if README/docs differ from the record

It runs ``sim2real-eval demo`` (config/studies/demo.yaml: the normal receiver) and ``sim2real-eval demo
--config config/studies/degraded_gnss.yaml`` (the reference's receiver degraded by
config/degradation/urban_canyon.yaml; the models as they are and with the same layer), compares the two
rankings of the paper's five GPS models (``sim2real_eval.report.degraded.compare``: Kendall's τ, the
flipped pairs and whether both studies separate them), keeps the comparison with K, the date and the
wall time in ``benchmarks/degraded_gnss.json``, and renders it into the regions ``readme-degraded-gnss``
(README.md) and ``demo-degraded-gnss`` (docs/demo.md).  ``make_readme_numbers.py`` renders the same
regions from the record; tests/test_degraded_gnss.py checks they are the record rendered.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "benchmarks" / "degraded_gnss.json"
NORMAL = REPO / "config" / "studies" / "demo.yaml"
DEGRADED = REPO / "config" / "studies" / "degraded_gnss.yaml"
MODELS = ("ch_gauss", "ch_rw", "airsim", "ch_gauss_airsim", "ch_rw_airsim")
LABELS = {"ch_gauss": "Ch:Gauss", "ch_rw": "Ch:RW", "airsim": "AirSim HDOP",
          "ch_gauss_airsim": "Ch:Gauss + AirSim HDOP", "ch_rw_airsim": "Ch:RW + AirSim HDOP"}
VERDICT = {"changes": "changes", "not separable": "differs only in pairs the studies cannot separate",
           "unchanged": "does not change"}


def _study(out: Path):
    """The GPS study of a demo output as a ``metrics.StudyResult`` (make_readme_numbers' reading)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import make_readme_numbers as numbers

    data = numbers.load(out)
    return numbers.study(data["gps"], data["gps_stats"]), data["demo"]


def _run(config: Path, out: Path) -> None:
    from sim2real_eval.cli import main

    if main(["demo", "--config", str(config), "--out", str(out), "--no-progress", "--overwrite"]) != 0:
        raise SystemExit(f"sim2real-eval demo --config {config} failed")


def reports_covariance(models) -> dict:
    """{model: its preset reports a covariance} (every covariance model but Chrono's zeros)."""
    from sim2real_eval.models import load_gps_model

    return {m: load_gps_model(m).covariance.params["model"] != "zeros" for m in models}


def _feature(rank: dict) -> str:
    found = rank.get("feature_ahead")
    if found is None:
        return ""
    if not found["ahead"]:
        return "; the models that report a covariance are not all ahead of those that report none"
    return ("; every model that reports a covariance ranks ahead of every model that reports none ("
            + ("separable" if found["separable"] else "not separable") + " across that line)")


def measure(normal_out: Path, degraded_out: Path, run: bool) -> dict:
    from sim2real_eval.report.degraded import compare

    if run:
        _run(NORMAL, normal_out)
        _run(DEGRADED, degraded_out)
    normal, normal_demo = _study(normal_out)
    degraded, degraded_demo = _study(degraded_out)
    record = compare(normal, degraded, MODELS, feature=reports_covariance(MODELS))
    record["k"] = {"normal": normal_demo["k"], "degraded": degraded_demo["k"]}
    record["measured"] = datetime.datetime.now(datetime.timezone.utc).strftime("%d %b %Y %H:%M UTC")
    record["wall_s"] = {"normal": round(normal_demo["wall_time_s"]["total"], 1),  # what each demo printed
                        "degraded": round(degraded_demo["wall_time_s"]["total"], 1)}
    return record


def _order(rank: dict) -> str:
    return " < ".join(LABELS[m] for m in rank["order"])


def _flips(flips: list) -> str:
    if not flips:
        return "none"
    parts = []
    for flip in flips:
        a, b = (LABELS[m] for m in flip["pair"])
        both = flip["separable_normal"] and flip["separable_degraded"]
        parts.append(f"{a} / {b} ({'separable in both' if both else 'not separable in both'})")
    return "; ".join(parts)


def render(record: dict) -> dict:
    """{region: text} of README.md and docs/demo.md."""
    k = record["k"]
    modelled, unmodelled = record["modelled"], record["unmodelled"]
    readme = (f"On the synthetic reference (K = {k['degraded']}), the ranking of the paper's five GPS models "
              f"**{VERDICT[modelled['verdict']]}** when the receiver degrades (urban-canyon outages, "
              f"multipath jumps, degraded covariance, each model given the same degradation layer): "
              f"Kendall's τ {modelled['kendall_tau']:.2f} against the normal ranking{_feature(modelled)} "
              f"(`benchmarks/degraded_gnss.py`, {record['measured']}; docs/demo.md, "
              "\"GNSS-degraded drives\").")
    rows = ["| model | VEPD normal | VEPD degraded, with the layer | VEPD degraded, without it | "
            "with vs without separable |", "|---|---|---|---|---|"]
    for m in record["models"]:
        layer = record["layer"].get(m, {})
        rows.append(f"| {LABELS[m]} | {record['normal']['vepd'][m]:.4f} | {modelled['vepd'][m]:.4f} | "
                    f"{unmodelled['vepd'][m]:.4f} | {'yes' if layer.get('separable') else 'no'} |")
    demo = "\n".join(rows) + "\n\n" + "\n".join([
        f"- normal receiver (demo.yaml, K = {k['normal']}): {_order(record['normal'])}"
        f"{_feature(record['normal'])}",
        f"- degraded, each model with the layer (K = {k['degraded']}): {_order(modelled)}; Kendall's τ "
        f"{modelled['kendall_tau']:.2f}; flipped pairs: {_flips(modelled['flips'])}; the ranking "
        f"{VERDICT[modelled['verdict']]}{_feature(modelled)}",
        f"- degraded, the models as they are: {_order(unmodelled)}; Kendall's τ "
        f"{unmodelled['kendall_tau']:.2f}; flipped pairs: {_flips(unmodelled['flips'])}; the ranking "
        f"{VERDICT[unmodelled['verdict']]}{_feature(unmodelled)}",
        f"- measured {record['measured']} with `python benchmarks/degraded_gnss.py` (the two demos' wall "
        f"times {record['wall_s']['normal']:.0f} s and {record['wall_s']['degraded']:.0f} s, "
        "as each printed)",
    ])
    return {"readme-degraded-gnss": readme, "demo-degraded-gnss": demo}


def main() -> int:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import make_readme_numbers as numbers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-normal", metavar="OUT", help="an existing `sim2real-eval demo` output")
    parser.add_argument("--from-degraded", metavar="OUT", help="an existing degraded_gnss.yaml demo output")
    parser.add_argument("--check", action="store_true", help="only compare the docs with the record")
    args = parser.parse_args()
    if args.check:
        found = numbers.differences(render(json.loads(RECORD.read_text())), None)
        for item in found:
            print(f"differs: {item}")
        return 1 if found else 0
    with tempfile.TemporaryDirectory(prefix="degraded_gnss_") as tmp:
        given = bool(args.from_normal and args.from_degraded)
        normal = Path(args.from_normal) if given else Path(tmp) / "normal"
        degraded = Path(args.from_degraded) if given else Path(tmp) / "degraded"
        record = measure(normal, degraded, run=not given)
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    blocks = render(record)
    for path in numbers.FILES.values():
        path.write_text(numbers.replace_regions(path.read_text(encoding="utf-8"), blocks), encoding="utf-8")
    print(f"wrote {RECORD.relative_to(REPO)} and the regions {', '.join(blocks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
