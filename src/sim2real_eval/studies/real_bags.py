"""Step 1 of the demo: its real bags — the real sample's scored windows (prepared here: import, calibrate,
tune; ``real_sample``), ``--real DIR`` (``find_real_bags``), or the synthetic reference data set (the
shipped runs, and those beyond them regenerated into OUT/reference: ``reference_runs``,
``regenerate``) — checked before any judging (``real_side``)."""
from __future__ import annotations

import os
from pathlib import Path

from .. import reference as ref
from ..errors import UserError
from ..importer.vehicle import import_summary
from ..runs import bags_in, is_name
from ..runs import find_real_bags as named_bags
from ..service.common import parallel_map
from .config import EVERY_SCENARIO
from .job import REFERENCE, DemoJob, RealSide
from .plan import judge_loading
from .real_sample import prepare

REAL_LAYOUT = "DIR/<scenario>/<run>/: one folder per scenario (line, sine, circle, …), its runs inside"


def real_side(job: DemoJob) -> RealSide:
    """Step 1: the real bags — the real sample's evaluated windows (prepared here: import, calibrate,
    tune), ``--real DIR``, or the synthetic reference set (regenerated into OUT/reference beyond the
    shipped runs); checked before any judging."""
    config, sample = job.config, None
    if job.real_sample:
        if job.forks_workers:
            # the tuning judges in this process: with an empty numba cache, the other cores share the
            # compilation first (alone, the first run took 64 s; shared, 38–43 s)
            with judge_loading(job) as warm:
                warm()
        sample = prepare(config, job.out, job.progress)
        job.stages.done("real_sample")  # import, calibrate --truth and tune on the held-out windows
        bags = {scenario: [Path(path) for path in paths] for scenario, paths in sample.bags.items()}
        held = config.real_sample.held_out_windows
        real_source = (f"real sample: {sample.segment} (comma2k19 real car drive, imported; "
                       f"{len(sample.windows)} windows of {config.real_sample.window_s:g} s, the first "
                       f"{held} held out for calibration and tuning)")
    elif job.real is not None:
        bags = find_real_bags(job.real, job.k)
        real_source = str(Path(job.real).resolve())
    else:
        setup = ref.load_setup(config.reference)
        bags, missing = reference_runs(setup, job.k, job.out, ref.shipped_reference_dir())
        if missing and job.forks_workers:
            # the judge's kernels load here while the workers write the runs (later, the load would
            # leave a core idle)
            with judge_loading(job) as warm:
                regenerate(setup, job.out, missing, job.workers, job.progress, meanwhile=warm)
        else:
            regenerate(setup, job.out, missing, job.workers, job.progress)
        real_source = f"synthetic reference data set ({setup.name}, seed {setup.seed})"
    for scenario, paths in bags.items():
        if len(paths) < 2:  # checked before any judging: the scorer needs two runs per side
            raise UserError(f"scenario {scenario}: {len(paths)} real run(s); W1/W2 need at least 2 per "
                            "scenario (raise --k or add bags)")
    job.k = max(len(paths) for paths in bags.values())  # a user's folder may hold fewer than asked
    imu_scenario = job.imu_scenario or config.imu_scenario
    if job.imu_scenario is None and imu_scenario != EVERY_SCENARIO and imu_scenario not in bags:
        imu_scenario = _imported_scenario(job, bags) or imu_scenario
    if imu_scenario != EVERY_SCENARIO and imu_scenario not in bags:
        raise UserError(f"imu study: scenario {imu_scenario!r} has no real bags (scenarios found: "
                        f"{', '.join(bags)}; the layout is {REAL_LAYOUT}); choose one with --imu-scenario")
    return RealSide(bags, real_source, imu_scenario, sample)


def _imported_scenario(job: DemoJob, bags: dict):
    """The IMU study's scenario for imported drives whose demo file names a scenario they lack: the
    imported one (said in one line), else None."""
    summary = import_summary(job.real) if job.real is not None else None
    scenario = summary.get("scenario") if summary else None
    if scenario not in bags:
        return None
    if job.notice is not None:
        job.notice(f"imu study: scenario {scenario!r}, the imported one ({job.config.source} names "
                   f"{job.config.imu_scenario!r}; --imu-scenario chooses)")
    return scenario


def find_real_bags(directory, k: int) -> dict:
    """{scenario: [bag paths]} from ``DIR/<scenario>/<run>/``: the first ``k`` runs (by name) per scenario,
    named by the one rule of ``runs.find_real_bags``."""
    root = Path(directory)
    if not root.is_dir():
        raise UserError(f"--real {root}: not a directory (expected {REAL_LAYOUT})")
    direct = bags_in(root)
    if direct:  # a scenario folder given as DIR: its bags would all be scenario DIR
        names = ", ".join(Path(b).name for b in direct[:3]) + (", …" if len(direct) > 3 else "")
        raise UserError(f"--real {root}: holds the runs of one scenario ({names}); --real takes the folder "
                        f"of scenario folders (DIR/<scenario>/<run>/): {_parent_hint(root)}")
    found: dict = {}
    for bag in named_bags([root], limit=k, what="--real"):
        found.setdefault(bag.scenario, []).append(Path(bag.path))
    return found


def _parent_hint(root: Path) -> str:
    """What to give ``--real`` instead of the scenario folder ``root``: its parent (naming the scenarios
    there), or, when ``root`` has no usable parent, how to make one."""
    here = Path(os.path.abspath(root))
    parent = here.parent
    if is_name(here.name) and parent != here:   # its name can name a scenario: the folder above is DIR
        scenarios = sorted(d.name for d in parent.iterdir()
                           if d.is_dir() and not d.name.startswith(".") and bags_in(d))
        shown = os.path.relpath(parent) if not Path(root).is_absolute() else str(parent)
        return f"--real {shown} (scenarios there: {', '.join(scenarios)})"
    return "move its runs into NEW/<scenario>/ (a scenario name) and give --real NEW"


def reference_runs(setup, k: int, out: Path, shipped: Path) -> tuple:
    """The first ``k`` reference runs per scenario: ({scenario: [path of run 0 … k − 1]}: shipped, else in
    OUT/reference; [(scenario, k) missing there], for ``regenerate``)."""
    missing = []
    bags = {}
    written = ref.setup_as_written(setup)
    for scenario in setup.scenarios:
        bags[scenario] = []
        for index in range(k):
            path = ref.run_path(shipped, scenario, index)
            if not ref.made_by(path, setup, written):
                path = ref.run_path(out / REFERENCE, scenario, index)
                if not ref.made_by(path, setup, written):
                    if os.path.lexists(path):
                        ref.owned_item(path, setup)  # raises: another setup's run, or not one of ours
                    missing.append((scenario, index))
            bags[scenario].append(path)
    return bags, missing


def regenerate(setup, out: Path, missing: list, workers: int, progress: bool, meanwhile=None) -> None:
    """Write the ``missing`` reference runs into OUT/reference (and its README); ``meanwhile()`` runs here
    while forked workers write them."""
    if not missing:
        return
    readme = out / REFERENCE / ref.README
    if os.path.lexists(readme) and not ref.readme_is_ours(readme):
        raise UserError(f"--out {out}: {REFERENCE}/{ref.README}: not written by the demo; move it away")
    _generate(setup, out / REFERENCE, missing, workers, progress, meanwhile)
    ref.write_readme(setup, out / REFERENCE)


def _generate_one(setup, directory: str, scenario: str, k: int) -> str:
    return str(ref.write_reference_run(setup, directory, scenario, k))


def _generate(setup, directory: Path, runs: list, workers: int, progress: bool, meanwhile=None) -> None:
    """Regenerate reference runs (deterministic: same bytes as the shipped ones would have)."""
    items = [(setup, str(directory), scenario, k) for scenario, k in runs]
    parallel_map(_generate_one, items, workers, progress, f"regenerating {len(items)} reference runs",
                 meanwhile)
