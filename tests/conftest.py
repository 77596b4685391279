"""Shared fixtures.  ``../shared`` (beside the project root) holds read-only peer data; tests that
need it skip with a reason, saying how to get it, when it is absent."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
# robot_localization's own test bag: test/test1.bag, identical on every branch from indigo-devel to
# humble-devel (BSD-3-Clause, 1.4 MB).  Tests read it from $SIM2REAL_PEER_DIR, else ../shared/peer.
PEER_DIR_VARIABLE = "SIM2REAL_PEER_DIR"
PEER_BAG_URL = "https://raw.githubusercontent.com/cra-ros-pkg/robot_localization/humble-devel/test/test1.bag"
PEER_BAG_SHA256 = "fd759aa942a3ef549412ff724d15e7280a347a366996a012cf9079329ec28f4a"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def peer_bag() -> Path:
    """robot_localization's own test1.bag (ROS 1), read-only."""
    folder = Path(os.environ.get(PEER_DIR_VARIABLE) or SHARED_DIR / "peer")
    path = folder / "test1.bag"
    if not path.is_file():
        pytest.skip(f"{path} is absent: it is robot_localization's own test/test1.bag (BSD-3-Clause); "
                    f"get it with `curl -L -o DIR/test1.bag {PEER_BAG_URL}` and run the tests with "
                    f"{PEER_DIR_VARIABLE}=DIR")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != PEER_BAG_SHA256:
        pytest.fail(f"{path}: not robot_localization's test1.bag "
                    f"(sha256 {digest}, expected {PEER_BAG_SHA256})")
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    pytest.skip("headless Chromium is not installed (Debian package 'chromium')")


@pytest.fixture(scope="session")
def real_sample_demo(tmp_path_factory) -> Path:
    """``sim2real-eval demo --real-sample`` as shipped (the comma2k19 drive, config/studies/demo_car.yaml),
    run once per session: tests/test_real_sample.py checks it, tests/test_readme_numbers.py compares the
    README with it."""
    from sim2real_eval.cli import main

    out = tmp_path_factory.mktemp("real_sample") / "real_report"
    assert main(["demo", "--real-sample", "--out", str(out), "--no-progress"]) == 0
    return out


# With pytest-xdist (the README's `-n 2 --dist loadgroup`), tests are handed out by group: a test file
# stays on one worker, in its order (its module fixtures are built once; a test may read what an earlier
# one wrote), the two files that share the session's real sample run together (it is built once), and
# the files that start Ray clusters share one worker (two clusters at once would compete for the
# machine's two cores and their timeouts).  The documented examples are handed out one by one: together
# they are most of the suite's time, so on one worker they would be its critical path (each worker
# builds their inputs once, the module's ``world``).
SHARED_GROUPS = {"test_real_sample.py": "real_sample", "test_readme_numbers.py": "real_sample"}
ONE_BY_ONE = {"test_docs_examples.py"}
# The longest tests and groups first (minutes each, a fresh clone's numba compilation included), so that
# neither worker starts one of them when the other is nearly done: xdist hands out in collection order.
LONGEST_FIRST = ("test_docs_examples.py::test_readme_commands_chain", "test_real_sample.py",
                 "test_readme_numbers.py", "test_ray_cluster.py", "test_ray_demo_out.py",
                 "test_tune_search.py",
                 "test_pipeline_runs.py", "test_judge_bag1.py",
                 "test_docs_examples.py::test_cli_examples_run[demo.md:3]")


def _rank(item) -> int:
    where = f"{item.path.name}::{item.name}"
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if where.startswith(prefix)), len(LONGEST_FIRST))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    with_ray = {item.path.name for item in items if item.get_closest_marker("ray") is not None}
    for item in items:
        name = item.path.name
        if name in with_ray:
            item.add_marker(pytest.mark.xdist_group("ray"))
        elif name not in ONE_BY_ONE:
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(name, name)))
    items.sort(key=_rank)  # stable: each file keeps its own order
