"""atomic.py: permissions follow the umask, no-clobber files, several files committed as one."""
from __future__ import annotations

import errno
import os
import signal
import stat

import pytest

from sim2real_eval import atomic
from sim2real_eval.atomic import atomic_directory, atomic_file, atomic_files, current_umask
from sim2real_eval.errors import UserError


@pytest.fixture
def umask():
    def set_mask(mask: int) -> None:
        os.umask(mask)

    old = os.umask(0o022)
    yield set_mask
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_outputs_get_the_permissions_the_umask_gives(tmp_path, umask, mask):
    umask(mask)
    assert current_umask() == mask
    with atomic_directory(tmp_path / "dir", empty=False) as temp:
        (temp / "inside.txt").write_text("x")
    with atomic_directory(tmp_path / "bag", empty=True) as temp:
        temp.mkdir()
    with atomic_file(tmp_path / "file.yaml") as stream:
        stream.write("a: 1\n")
    with atomic_files([tmp_path / "p.yaml", tmp_path / "p_gps.yaml"]) as temps:
        for temp in temps:
            temp.write_text("x")
    assert mode(tmp_path / "dir") == 0o777 & ~mask
    assert mode(tmp_path / "bag") == 0o777 & ~mask
    for name in ("file.yaml", "p.yaml", "p_gps.yaml"):
        assert mode(tmp_path / name) == 0o666 & ~mask
    # replacing an existing result gives the new one the umask's permissions too
    with atomic_directory(tmp_path / "dir", overwrite=True, empty=False) as temp:
        (temp / "inside.txt").write_text("y")
    assert mode(tmp_path / "dir") == 0o777 & ~mask


def test_atomic_file_without_overwrite_refuses_an_existing_file(tmp_path):
    target = tmp_path / "out.npz"
    target.write_text("precious")
    with pytest.raises(UserError, match="already exists"), atomic_file(target, overwrite=False) as stream:
        stream.write("new")
    assert target.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"]


def test_atomic_file_without_overwrite_refuses_a_file_that_appears_meanwhile(tmp_path):
    target = tmp_path / "out.npz"
    with pytest.raises(UserError, match="already exists"), atomic_file(target, overwrite=False) as stream:
        stream.write("new")
        target.write_text("someone else's")
    assert target.read_text() == "someone else's"
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"]


def test_atomic_files_all_appear_together(tmp_path):
    names = [tmp_path / n for n in ("p_gps.yaml", "p_imu.yaml", "p.yaml")]
    with atomic_files(names) as temps:
        for temp, name in zip(temps, names):
            temp.write_text(name.name)
            assert not any(n.exists() for n in names)  # nothing visible while writing
    assert [n.read_text() for n in names] == ["p_gps.yaml", "p_imu.yaml", "p.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n.name for n in names)


def test_atomic_files_failure_while_writing_leaves_none(tmp_path):
    names = [tmp_path / n for n in ("p_gps.yaml", "p_imu.yaml", "p.yaml")]
    with pytest.raises(UserError, match="no space left"), atomic_files(names) as temps:
        temps[0].write_text("gps")
        raise OSError(errno.ENOSPC, "No space left on device", str(temps[1]))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_atomic_files_failing_rename_rolls_back(tmp_path, monkeypatch, existing):
    names = [tmp_path / n for n in ("p_gps.yaml", "p_imu.yaml", "p.yaml")]
    if existing:
        for name in names:
            name.write_text("old " + name.name)
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        if os.path.basename(str(dst)) == "p_imu.yaml" and not calls[-1:] == ["failed"]:
            calls.append("failed")  # the new p_imu.yaml fails once; restoring the old one works
            raise OSError(errno.ENOSPC, "No space left on device")
        calls.append(dst)
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    with pytest.raises(UserError, match="p_imu.yaml: no space left"), atomic_files(names) as temps:
        for temp in temps:
            temp.write_text("new")
    monkeypatch.undo()
    assert calls  # p_gps.yaml had been placed before the failure
    if existing:
        assert [n.read_text() for n in names] == ["old " + n.name for n in names]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n.name for n in names)
    else:
        assert list(tmp_path.iterdir()) == []


def test_atomic_files_without_overwrite(tmp_path):
    names = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    names[1].write_text("keep")
    with pytest.raises(UserError, match="b.yaml: already exists"), atomic_files(names, overwrite=False):
        pass
    assert names[1].read_text() == "keep" and not names[0].exists()


class Stop(Exception):
    pass


def test_a_signal_during_the_commit_is_handled_after_it(tmp_path, monkeypatch):
    """SIGTERM arriving between two renames waits until every file is in place."""
    names = [tmp_path / n for n in ("p_gps.yaml", "p_imu.yaml", "p.yaml")]

    def handler(signum, frame):
        raise Stop()

    previous = signal.signal(signal.SIGTERM, handler)
    real_replace = os.replace
    sent = []

    def replace_then_signal(src, dst):
        real_replace(src, dst)
        if not sent:
            sent.append(dst)
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(atomic.os, "replace", replace_then_signal)
    try:
        with pytest.raises(Stop), atomic_files(names) as temps:
            for temp in temps:
                temp.write_text("x")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sent and all(n.read_text() == "x" for n in names)
    assert signal.getsignal(signal.SIGTERM) is previous
