"""A run's identity and names: ``RunId(side, variant, scenario, k)`` (its label, its directory
``OUT/<side>/<variant>/<scenario>/<k>/`` — ``RunId.directory`` encodes the layout, ``find_runs`` decodes
it — and the run key of its random streams), the names a directory component may have, and the names of
a real bag's runs (``name_real_bag``, ``find_real_bags``: a bag's scenario is its folder's name, its
``k`` its position among the bags of that folder, sorted by name).  Robot-side (Python 3.8)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..errors import UserError

RUN_FILE = "run.yaml"
REAL = "real"
SIDES = (REAL, "sim")
SENSORS = ("gps", "imu")
STORAGES = ("sqlite3", "mcap")
OUTCOME_KEY = "judge_outcome"  # written after the judge ran: an output, never compared on resume
FILES_KEY = "files"  # {name: {size, sha256}} of the run's data files, written with them; checked on resume
# Written by every writer since 0.1.0+ (the offline pipeline: true, as the run is written only after its
# judge finished; the ROS launch: false until the launch confirms the bag was played to its end).
COMPLETE_KEY, FAILURE_KEY = "complete", "failure"
LAYOUT = "OUT/<side>/<variant>/<scenario>/<k>/"

# Names become directory components: keep them portable and unambiguous.  Always ``fullmatch``: ``$``
# also matches before a final newline, and ``\d`` / str.isdigit accept any Unicode digit ('٢', '²').
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
NAME_RULE = "ASCII letters, digits, '_', '.', '+', '-'"
NUMBER_PATTERN = re.compile(r"[0-9]+")


def is_name(value: Any) -> bool:
    """``value`` can name a directory of the layout (the whole string matches ``NAME_PATTERN``)."""
    return isinstance(value, str) and NAME_PATTERN.fullmatch(value) is not None


def is_number(text: Any) -> bool:
    """``text`` is a run number k as written in a name: ASCII digits only, nothing else."""
    return isinstance(text, str) and NUMBER_PATTERN.fullmatch(text) is not None


def check_name(value: Any, what: str) -> str:
    """``value`` if it can name a directory of the layout, else a UserError naming ``what``."""
    if not is_name(value):
        raise UserError(f"{what} {value!r}: use {NAME_RULE} (it names a directory)")
    return value


# ------------------------------------------------------------------------------------ identity
@dataclass(frozen=True)
class RunId:
    """Which run: ``side`` (sim | real), ``variant`` (``real`` on the real side), ``scenario``, ``k``."""

    side: str
    variant: str
    scenario: str
    k: int

    @property
    def label(self) -> str:
        return f"{self.side}/{self.variant}/{self.scenario}/{self.k}"

    def directory(self, out) -> Path:
        """``OUT/<side>/<variant>/<scenario>/<k>``: the one encoding of the layout."""
        return Path(out) / self.side / self.variant / self.scenario / str(int(self.k))

    @property
    def seed_keys(self) -> tuple:
        """The run key of the run's sensor streams: ``sensor_seed(seed, *seed_keys, "gps" | "imu")``."""
        return (self.variant, self.scenario, self.k)


def run_directory(out, side: str, variant: str, scenario: str, k: int) -> Path:
    return RunId(side, variant, scenario, int(k)).directory(out)


def _visible_dirs(path: Path) -> list:
    # Hidden entries are atomic-write temporaries (".name.tmp-..."): never complete runs.
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


def find_runs(root, exclude_scenarios: Iterable[str] = ()) -> List[Tuple[RunId, Path]]:
    """Every run directory under ``root`` (the layout decoded), in side/variant/scenario/k name order.

    Only the directory names are read; ``read_run_info`` reads a run's record.
    """
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory (expected {LAYOUT})")
    sides = [p for p in _visible_dirs(root) if p.name in SIDES]
    if not sides:
        raise UserError(f"{root}: no real/ or sim/ folder (expected {LAYOUT})")
    excluded = set(exclude_scenarios)
    found = []
    for side_dir in sides:
        for variant_dir in _visible_dirs(side_dir):
            for scenario_dir in _visible_dirs(variant_dir):
                for folder, what in ((variant_dir, "variant"), (scenario_dir, "scenario")):
                    if not is_name(folder.name):
                        raise UserError(f"{folder}: folder name {folder.name!r} cannot name a {what} "
                                        f"({NAME_RULE})")
                if scenario_dir.name in excluded:
                    continue
                for run_dir in _visible_dirs(scenario_dir):
                    if not is_number(run_dir.name):
                        raise UserError(f"{run_dir}: run folder name must be the run number k "
                                        "(ASCII digits 0-9)")
                    found.append((RunId(side_dir.name, variant_dir.name, scenario_dir.name,
                                        int(run_dir.name)), run_dir))
    return found


# ------------------------------------------------------------------------ names of real bags
def is_bag(path: Path) -> bool:
    """A rosbag2 directory (metadata.yaml) or a ROS 1 .bag file; hidden entries are temporaries."""
    path = Path(path)
    if path.name.startswith("."):
        return False
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.is_file() and path.suffix == ".bag"


def bags_in(folder: Path) -> list:
    """The bags directly inside ``folder``, sorted by name."""
    return sorted(p for p in Path(folder).iterdir() if is_bag(p))


@dataclass(frozen=True)
class RealBag:
    """A real bag and the names of its runs: ``scenario`` and repeat ``k``."""

    path: str
    scenario: str
    k: int


def _bag_path(path) -> Path:
    """The bag as named: absolute but not resolved (a symlinked bag keeps its folder's names); a data
    file inside a rosbag2 directory stands for that directory."""
    bag = Path(os.path.abspath(str(path)))
    if bag.is_file() and bag.suffix != ".bag" and (bag.parent / "metadata.yaml").is_file():
        bag = bag.parent
    return bag


def name_real_bag(path, scenario: Optional[str] = None, k: Optional[int] = None) -> RealBag:
    """The one naming rule of a real bag ``DIR/<scenario>/<run>``: scenario = the bag's folder name,
    k = the bag's position among the bags of that folder (sorted by name, as ``find_real_bags``).

    ``scenario`` / ``k`` override the rule (``replay --scenario/--k``).
    """
    bag = _bag_path(path)
    if not bag.exists():
        raise UserError(f"{path}: no such bag")
    if scenario is None:
        scenario = bag.parent.name
        if not is_name(scenario):
            raise UserError(f"{path}: its folder {scenario!r} cannot name the scenario "
                            f"(DIR/<scenario>/<run>/ with {NAME_RULE}); give it with --scenario NAME")
    else:
        check_name(scenario, "--scenario")
    if k is None:
        siblings = sorted(set(bags_in(bag.parent)) | {bag})
        k = siblings.index(bag)
    elif isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UserError(f"--k {k!r}: expected an integer >= 0")
    return RealBag(str(bag), scenario, int(k))


def find_real_bags(paths: Sequence, scenario: Optional[str] = None, limit: Optional[int] = None,
                   what: str = "") -> List[RealBag]:
    """The real bags of ``paths``, named by the one rule.  Each path is a bag (``DIR/<scenario>/<run>``),
    a scenario folder (``DIR/<scenario>/``: its bags) or a folder of scenario folders (``DIR/``).

    ``limit``: at most that many bags per scenario folder (the first by name).  ``scenario``
    overrides the scenario name of every bag.  ``what`` prefixes the errors (e.g. "--real").
    """
    prefix = f"{what} " if what else ""
    found: List[RealBag] = []
    for given in paths:
        path = Path(os.path.abspath(str(given)))
        if not path.exists():
            raise UserError(f"{prefix}{given}: no such bag")
        if is_bag(path) or path.is_file():
            found.append(name_real_bag(given, scenario))
            continue
        if not path.is_dir():
            raise UserError(f"{prefix}{given}: not a bag or a folder of bags")
        folders = [path] if bags_in(path) else _visible_dirs(path)
        count = len(found)
        for folder in folders:
            name = scenario if scenario is not None else folder.name
            bags = bags_in(folder)[:limit]
            if bags and not is_name(name):
                raise UserError(f"{prefix}{folder}: folder name {name!r} cannot name a scenario "
                                f"({NAME_RULE})")
            found += [RealBag(str(bag), name, k) for k, bag in enumerate(bags)]
        if len(found) == count:
            raise UserError(f"{prefix}{given}: no bags found (expected a bag, DIR/<run>/ or "
                            "DIR/<scenario>/<run>/ with rosbag2 folders or .bag files)")
    seen: Dict[tuple, str] = {}
    for bag in found:
        key = (bag.scenario, bag.k)
        if key in seen and seen[key] != bag.path:
            raise UserError(f"{bag.path}: same scenario {bag.scenario!r} and k = {bag.k} as {seen[key]} "
                            "(give bags of one folder per scenario, or --scenario/--k for one bag)")
        seen[key] = bag.path
    return list({(bag.scenario, bag.k): bag for bag in found}.values())


def model_label(spec: Any) -> str:
    """Short name of a model spec: the preset name, a YAML file's stem, an inline dict's ``name``."""
    if isinstance(spec, str):
        return Path(spec).stem if spec.endswith((".yaml", ".yml")) else spec
    if isinstance(spec, dict) and isinstance(spec.get("name"), str):
        return spec["name"]
    raise UserError(f"--replace: cannot name the model {spec!r} (give a preset name or a YAML file)")


def replay_variant(replace: Mapping) -> str:
    """``{"imu": "chrono_paper_demo"}`` → ``sim_imu-chrono_paper_demo`` (sensors in gps, imu order)."""
    parts = [f"{sensor}-{model_label(replace[sensor])}" for sensor in SENSORS if sensor in replace]
    return "sim_" + "_".join(parts)


def bag_run_id(bag: RealBag, replace: Mapping, variant: Optional[str] = None) -> RunId:
    """The run made from ``bag`` with the streams of ``replace`` simulated ({} = the real run)."""
    if not replace:
        return RunId(REAL, REAL, bag.scenario, bag.k)
    return RunId("sim", variant or replay_variant(replace), bag.scenario, bag.k)


