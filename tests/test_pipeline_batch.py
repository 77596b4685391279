"""Batch runner mechanics on small real tasks: process pool vs in-process, resume, failures, refusal.

The tasks here write a tiny seeded payload atomically (the same way a run writes its bag) so the
runner's behaviour is tested in isolation and fast; end-to-end runs are in test_pipeline_runs.py.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from sim2real_eval.atomic import atomic_directory
from sim2real_eval.errors import UserError
from sim2real_eval.pipeline.batch import RunFailure, RunOutcome, RunTask, run_batch
from sim2real_eval.runs import FILES_KEY, RUN_FILE, data_files
from sim2real_eval.yamlio import dump_yaml


@dataclass(frozen=True)
class PayloadTask:
    name: str
    seed: int
    fail: bool = False
    crash_after_write: bool = False

    @property
    def label(self) -> str:
        return f"sim/{self.name}"

    def directory(self, out) -> Path:
        return Path(out) / "sim" / self.name

    def record(self) -> dict:
        return {"name": self.name, "seed": self.seed}

    def execute(self, out) -> RunOutcome:
        if self.fail:
            raise UserError(f"{self.name}: bad input")
        path = self.directory(out)
        with atomic_directory(path) as temp:
            temp.mkdir()
            values = np.random.default_rng(self.seed).normal(size=64)
            (temp / "payload.bin").write_bytes(values.tobytes())
            if self.crash_after_write:
                raise RuntimeError("simulated crash in the middle of a run")
            # as every run writer does: its data files' sizes and SHA-256, which resume checks
            (temp / RUN_FILE).write_text(dump_yaml({**self.record(), FILES_KEY: data_files(temp)}))
        return RunOutcome(self.label, str(path), False, {"payload": 1}, 1.0)


def tree_bytes(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_pool_and_inline_write_identical_outputs(tmp_path):
    tasks = [PayloadTask(f"t{i}", seed=i) for i in range(5)]
    inline = run_batch(tasks, tmp_path / "a", workers=1, progress=False)
    pooled = run_batch(tasks, tmp_path / "b", workers=2, progress=True)
    assert inline.written == pooled.written == 5 and not inline.failures and not pooled.failures
    assert [o.label for o in pooled.outcomes] == [t.label for t in tasks]  # task order, not finish order
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")


def test_resume_skips_complete_runs(tmp_path):
    tasks = [PayloadTask(f"t{i}", seed=i) for i in range(3)]
    run_batch(tasks[:2], tmp_path, workers=1, progress=False)
    before = os.stat(tmp_path / "sim" / "t0" / "payload.bin").st_mtime_ns
    report = run_batch(tasks, tmp_path, workers=2, progress=False)
    assert (report.skipped, report.written) == (2, 1)
    assert [o.skipped for o in report.outcomes] == [True, True, False]
    assert os.stat(tmp_path / "sim" / "t0" / "payload.bin").st_mtime_ns == before


def test_mismatching_existing_run_is_refused_before_anything_runs(tmp_path):
    run_batch([PayloadTask("t0", seed=0)], tmp_path, workers=1, progress=False)
    tasks = [PayloadTask("t1", seed=1), PayloadTask("t0", seed=99)]
    with pytest.raises(UserError, match=r"sim/t0/run.yaml: an existing run differs .* at 'seed'"):
        run_batch(tasks, tmp_path, workers=2, progress=False)
    assert not (tmp_path / "sim" / "t1").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_failures_are_collected_and_others_complete(tmp_path, workers):
    tasks = [PayloadTask("ok0", 0), PayloadTask("bad", 1, fail=True), PayloadTask("ok1", 2)]
    report = run_batch(tasks, tmp_path, workers=workers, progress=False)
    assert report.failures == [RunFailure("sim/bad", "bad: bad input")]
    assert report.written == 2 and report.outcomes[1] is None
    with pytest.raises(UserError, match=r"1 of 3 runs failed .* first: sim/bad: bad: bad input"):
        report.raise_on_failure()


def test_when_every_run_fails_the_message_says_so(tmp_path):
    """The demo said "10 of 10 runs failed (the others are complete)"."""
    tasks = [PayloadTask(f"bad{i}", i, fail=True) for i in range(3)]
    report = run_batch(tasks, tmp_path, workers=1, progress=False)
    with pytest.raises(UserError, match=r"^all 3 runs failed; first: sim/bad0: bad0: bad input$"):
        report.raise_on_failure()
    report = run_batch([PayloadTask("bad9", 9, fail=True)], tmp_path, workers=1, progress=False)
    with pytest.raises(UserError, match=r"^the run failed; first: sim/bad9"):
        report.raise_on_failure()
    tasks = [PayloadTask("ok5", 5), PayloadTask("bad6", 6, fail=True)]
    with pytest.raises(UserError, match=r"^1 of 2 runs failed \(the other 1 is complete\)"):
        run_batch(tasks, tmp_path, workers=1, progress=False).raise_on_failure()


def test_crash_leaves_no_half_directory(tmp_path):
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_batch([PayloadTask("t0", 0, crash_after_write=True)], tmp_path, workers=1, progress=False)
    assert list((tmp_path / "sim").iterdir()) == []
    # A clean re-run then completes.
    assert run_batch([PayloadTask("t0", 0)], tmp_path, workers=1, progress=False).written == 1


def test_bad_worker_count(tmp_path):
    with pytest.raises(UserError, match="--workers must be >= 1"):
        run_batch([PayloadTask("t0", 0)], tmp_path, workers=0, progress=False)


def test_the_task_classes_are_run_tasks():
    # The protocol the workers run (RunTask): the simulated run and the replay unit satisfy it, and
    # "go to implementation" of RunTask.execute finds both.
    from sim2real_eval.judge.config import JudgeConfig
    from sim2real_eval.pipeline.simulated_run import SimRunSpec
    from sim2real_eval.replay.offline import BagReplay
    from sim2real_eval.resources import config_path

    judge = JudgeConfig(str(config_path("ekf_art_iros2024.yaml")),
                        str(config_path("navsat_art_iros2024.yaml")))
    spec = SimRunSpec("v", "line", 0, 1, "ch_gauss", "chrono_paper_demo", judge)
    assert isinstance(spec, RunTask)
    for member in ("directory", "record", "execute"):
        assert callable(getattr(BagReplay, member))
    assert isinstance(BagReplay.label, property)
    assert not isinstance(object(), RunTask)
