"""Tuning on demo-like reference data: how much a deliberately mis-set GPS model's VEPD drops within a
fixed trial budget, and the wall time in-process vs on a local Ray cluster (2 trials at once).

Real side: the demo's synthetic ART-like reference bags (``bags/reference`` when present, otherwise
regenerated with ``reference.write_reference_run`` — same generator, same seed), judged as recorded
(``replay.offline``'s real run).  Sim side: the paper's scenarios (line, sine, circle) simulated with
the variant ``misset`` = Ch:Gauss GPS with σ = 0.3 m (10× the paper's 0.03 m) + the paper's Chrono
IMU; the search varies the GPS σ (log-uniform 0.0005–0.5 m).

Prints ``name: value`` lines:
  real_runs, sim_runs_per_trial, budget
  baseline_vepd                 VEPD of the untuned (mis-set) variant
  best_vepd_inline, best_sigma_inline, improvement_factor_inline (= baseline / best)
  wall_inline_s                 the whole search in one process (trials one after the other)
  best_vepd_ray, improvement_factor_ray   same budget as Ray tasks, 2 at a time
  ray_init_s                    starting the local Ray cluster (ray.init, 2 CPUs)
  wall_ray_s                    the search on Ray (worker start-up, imports and JIT included)
  ray_speedup, ray_speedup_with_init   wall_inline_s / wall_ray_s (and / (wall_ray_s + ray_init_s))

Usage: python benchmarks/bench_tune.py [--k 2] [--budget 10] [--no-ray]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

STUDY = """
name: bench_tune
seed: 11
repeats: {k}
scenarios: [line, sine, circle]
variants:
  misset:
    gps: {{preset: ch_gauss, position_noise: {{model: gaussian, sigma: 0.3}}}}
    imu: chrono_paper_demo
judge:
  ekf: ekf_art_iros2024.yaml
  navsat: navsat_art_iros2024.yaml
"""
PARAMS = "gps.position_noise.sigma=0.0005:0.5:log"


def real_runs(root: Path, k: int, study) -> Path:
    """OUT/real/real/<scenario>/<k>/ from the reference bags (shipped, else regenerated)."""
    from sim2real_eval import reference as ref
    from sim2real_eval.replay.real_bag import Replacement
    from sim2real_eval.runs import RealBag
    from sim2real_eval.service import plan_replays, replay_bags

    setup = ref.load_setup()
    shipped = ref.shipped_reference_dir()
    out = root / "runs"
    bags = []
    for scenario in study.scenarios:
        have = ref.existing_runs(shipped, scenario)
        for index in range(k):
            bag = have[index] if index < len(have) else ref.write_reference_run(setup, root / "reference",
                                                                               scenario, index)
            bags.append(RealBag(str(bag), scenario, index))
    tasks = plan_replays(bags, [Replacement({"gps": "ch_gauss"})], study.judge, seed=study.seed)
    replay_bags(tasks, out, workers=1, progress=False).raise_on_failure()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=2, help="runs per scenario and side (default 2)")
    parser.add_argument("--budget", type=int, default=10, help="trials per search (default 10)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray search")
    args = parser.parse_args()

    from sim2real_eval.pipeline.study import load_study
    from sim2real_eval.studies.tune import tune

    with tempfile.TemporaryDirectory(prefix="bench-tune-") as tmp:
        root = Path(tmp)
        study_path = root / "study.yaml"
        study_path.write_text(STUDY.format(k=args.k))
        study = load_study(study_path)
        real = real_runs(root, args.k, study)
        print(f"real_runs: {sum(1 for _ in (real / 'real' / 'real').glob('*/*'))}")
        print(f"sim_runs_per_trial: {len(study.scenarios) * study.repeats}")
        print(f"budget: {args.budget}")

        start = time.perf_counter()
        inline = tune(study_path, real, PARAMS, budget=args.budget, progress=False)
        wall_inline = time.perf_counter() - start
        print(f"baseline_vepd: {inline.baseline.vepd:.6g}")
        print(f"best_vepd_inline: {inline.best.vepd:.6g}")
        print(f"best_sigma_inline: {inline.best.values['gps.position_noise.sigma']:.6g}")
        print(f"improvement_factor_inline: {inline.baseline.vepd / inline.best.vepd:.4g}")
        print(f"wall_inline_s: {wall_inline:.2f}")
        if not args.no_ray:
            import ray

            start = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            ray_init = time.perf_counter() - start
            try:
                start = time.perf_counter()
                on_ray = tune(study_path, real, PARAMS, budget=args.budget, ray_address="local", workers=2,
                              progress=False)
                wall_ray = time.perf_counter() - start
            finally:
                ray.shutdown()
            print(f"best_vepd_ray: {on_ray.best.vepd:.6g}")
            print(f"improvement_factor_ray: {on_ray.baseline.vepd / on_ray.best.vepd:.4g}")
            print(f"ray_init_s: {ray_init:.2f}")
            print(f"wall_ray_s: {wall_ray:.2f}")
            print(f"ray_speedup: {wall_inline / wall_ray:.3g}")
            print(f"ray_speedup_with_init: {wall_inline / (wall_ray + ray_init):.3g}")


if __name__ == "__main__":
    main()
