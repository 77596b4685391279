"""outputs.check_paths: an output never is, lies inside or contains an input (issue 15 item 1)."""
from __future__ import annotations

import os

import pytest

from sim2real_eval.errors import UserError
from sim2real_eval.outputs import check_paths, relation


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "bag").mkdir()
    (tmp_path / "bag" / "metadata.yaml").write_text("m")
    (tmp_path / "runs" / "sim").mkdir(parents=True)
    (tmp_path / "config.yaml").write_text("c")
    return tmp_path


def test_relations(tree):
    bag = tree / "bag"
    assert relation(bag, bag) == "is"
    assert relation(tree / "bag" / ".." / "bag", bag) == "is"
    assert relation(bag / "judged", bag) == "lies inside"
    assert relation(bag / "metadata.yaml", bag) == "lies inside"
    assert relation(tree, bag) == "contains"
    assert relation(tree / "other", bag) is None
    assert relation(tree / "bagged", bag) is None  # a name prefix is not containment


def test_symlinks_are_resolved(tree):
    os.symlink(tree / "bag", tree / "link")
    assert relation(tree / "link", tree / "bag") == "is"
    assert relation(tree / "link" / "judged", tree / "bag") == "lies inside"
    os.symlink(tree / "runs", tree / "runs_link")
    assert relation(tree / "runs_link", tree / "runs" / "sim") == "contains"


def test_hard_links_are_the_same_file(tree):
    os.link(tree / "config.yaml", tree / "hard.yaml")
    assert relation(tree / "hard.yaml", tree / "config.yaml") == "is"


@pytest.mark.parametrize("output, how", [("bag", "is"), ("bag/judged", "lies inside"), (".", "contains")])
def test_check_paths_names_both_options(tree, output, how):
    with pytest.raises(UserError) as info:
        check_paths({"BAG": tree / "bag", "--config": tree / "config.yaml"}, {"--output": tree / output})
    message = str(info.value)
    assert message.startswith(f"--output {tree / output}: {how} the input ")
    assert "BAG" in message or "--config" in message


def test_outputs_must_differ_and_exist_only_with_overwrite(tree):
    with pytest.raises(UserError, match="are the same path"):
        check_paths({}, {"--out": tree / "a.npz", "--plot": tree / "x" / ".." / "a.npz"})
    check_paths({"BAG": tree / "bag"}, {"--out": tree / "new"}, overwrite=False)
    with pytest.raises(UserError, match="already exists .*--overwrite"):
        check_paths({"BAG": tree / "bag"}, {"--out": tree / "runs"}, overwrite=False)
    check_paths({"BAG": tree / "bag"}, {"--out": tree / "runs"}, overwrite=True)
    check_paths({"BAG": None, "--config": [tree / "config.yaml", None]}, {"--out": [tree / "runs"]})
