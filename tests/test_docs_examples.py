"""Every shell example of README.md and docs/*.md runs as written (issue 13): an example that drifts
from the code fails here.

What is an example (``extract``): each line of a ```bash/sh block (``\\`` continuations joined,
``#`` comments dropped); in a plain ``` block, each line that starts with a command (``COMMANDS``) —
an indented line under a ``sim2real-eval`` synopsis continues it, and ``$ cmd`` is a session whose
following lines are the expected output; and each inline span ``sim2real-eval <command> <args…>``
(the README's command table, the docs' prose; a bare ``sim2real-eval demo`` only names a command;
outside the README, a span that is no complete command line — ``replay --truth`` — names an option:
its options are checked, it is not run).

How each kind is checked:
- ``sim2real-eval`` lines run as a user runs them: a bash-free subprocess of the ``sim2real-eval``
  command (this checkout's src/), in a fresh working directory holding this checkout's ``config/``,
  ``bags/`` (a copy when the example writes there), ``launch/``, ``docker/`` and ``LINKS``.  A block's
  lines share that directory, in order (as when the block is pasted), unless the block lists
  alternatives (all its lines run the same sub-command): then each line gets its own.
  Placeholders become inputs built here (``SUBSTITUTIONS``, each with its reason; an entry no example
  needs any more fails ``test_every_substitution_is_used``).  Synopses (``[--opt X]``, ``a|b``,
  ``UPPER`` placeholders) are checked option by option against the command's own parser, and run
  with their concrete optional groups (``NOT_RUN`` lists the ones that need a service).
- Long commands run reduced, stated in ``REDUCTIONS``: the demo on the small study of
  ``test_demo_quick.small_demo_config`` (2 GPS variants, 4-s manoeuvres, K = 2); the paper's GPS
  study on ``config/studies/tiny.yaml``; ``tune`` with ``--budget 1``.
- ``pip install -e …`` and ``python3 -m pytest`` are the environment this suite runs in and the suite
  itself: not run; the extras they name must exist in setup.py.
- ROS 2 lines run where ``ros2`` is on PATH and rclpy imports: the block with ``colcon build`` once
  (ROS already sourced; rosdep, pip and ``colcon test`` not run: root, network, and this suite —
  the dependencies are imported instead), then every other ROS block in the built workspace
  (launches that never end by themselves get SIGINT after ``ROS_LIVE_S``).  Elsewhere they skip with
  that reason, after the rclpy-free check of every ``ros2 launch`` line: the launch file exists,
  declares each argument, and its plan function (the launch's own logic) accepts the values.
- Docker lines skip (no Docker engine where this suite runs) after checking the Dockerfile, build
  context, that ``docker run`` uses an image a ``docker build`` of the same file tags, and the
  launch inside the container like a ROS line.
- ``BUDGET_S`` per command is a hang guard, not a speed test.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
BUDGET_S = 900            # per command on a loaded 2-core machine: a hang guard
ROS_BLOCK_BUDGET_S = 300  # per ros2 launch line
ROS_LIVE_S = 12           # launches that run until stopped get SIGINT after this many seconds
COMMANDS = ("sim2real-eval", "ros2", "colcon", "rosdep", "docker", "pip", "python3", "ray")


# ------------------------------------------------------------------------------------- extraction
@dataclass
class Example:
    path: Path
    line: int
    text: str
    block: str                                     # "file:line" of its block (or of the inline span)
    expected: list = field(default_factory=list)   # a "$ " session's output lines
    column: int = 0                                # an inline span's place on its line (document order)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def kind(self) -> str:
        """cli | install | docker | ray | ros."""
        parts = [part.split() for part in self.text.split("&&")]
        if _installs(parts[0]):
            # `pip install -e … && sim2real-eval …`: the command after the install is the example
            return "cli" if any(part[:1] == ["sim2real-eval"] for part in parts[1:]) else "install"
        return {"docker": "docker", "sim2real-eval": "cli", "ray": "ray"}.get(parts[0][0], "ros")


def _installs(words: list) -> bool:
    return words[:3] == ["pip", "install", "-e"] or words[:5] == ["python3", "-m", "pip", "install", "-e"] \
        or words[:3] == ["python3", "-m", "pytest"]


def _strip_comment(line: str) -> str:
    """The line without a trailing shell comment (quotes respected)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def extract(path: Path) -> list:
    from sim2real_eval.cli import COMMANDS as SUBCOMMANDS

    text_all = path.read_text(encoding="utf-8")
    lines = text_all.splitlines()
    examples: list = []
    fence, start, i = None, 0, 0
    while i < len(lines):
        raw = lines[i]
        if raw.startswith("```"):
            fence, start = (raw[3:].strip(), i + 1) if fence is None else (None, 0)
            i += 1
            continue
        if fence is not None:
            number, text = i + 1, raw
            synopsis = fence == "" and raw.split()[:1] == ["sim2real-eval"]
            while i + 1 < len(lines) and (text.endswith("\\")
                                          or (synopsis and lines[i + 1].startswith("    "))):
                i += 1
                text = text.rstrip("\\") + " " + lines[i].strip()
            text = _strip_comment(text).strip()
            session = text.startswith("$ ")
            text = text[2:] if session else text
            if text and (fence in ("bash", "sh", "shell") or session or text.split()[0] in COMMANDS):
                example = Example(path, number, text, f"{path.name}:{start}")
                while session and i + 1 < len(lines) and not lines[i + 1].startswith(("$ ", "```")):
                    i += 1
                    example.expected.append(lines[i])
                examples.append(example)
        i += 1
    prose = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text_all, flags=re.S | re.M)
    for match in re.finditer(r"`(sim2real-eval [^`]+)`", prose):
        text = " ".join(match.group(1).split())
        if len(text.split()) > 2 and text.split()[1] in SUBCOMMANDS:
            number = prose.count("\n", 0, match.start()) + 1
            column = match.start() - (prose.rfind("\n", 0, match.start()) + 1)
            examples.append(Example(path, number, text, f"{path.name}:{number}:inline", column=column))
    return examples


ALL = [example for doc in DOCS for example in extract(doc)]
# A block with a ROS line is a ROS block: its sim2real-eval lines score what its launches recorded.
ROS_BLOCKS_ALL = sorted({e.block for e in ALL if e.kind == "ros"})
# A block with a `ray` line starts a Ray cluster: tests/test_ray_cluster.py runs it (test_ray_blocks_…).
RAY_BLOCKS = sorted({e.block for e in ALL if e.kind == "ray"})
CLI = [e for e in ALL if e.kind == "cli" and e.block not in ROS_BLOCKS_ALL + RAY_BLOCKS]
# The README's commands run as one chain, in the order written (test_readme_commands_chain); the
# other documents' blocks one by one (test_cli_examples_run).
README_CHAIN = sorted((e for e in CLI if e.path.name == "README.md"), key=lambda e: (e.line, e.column))
BLOCKS: dict = {}
for _example in CLI:
    if _example.path.name != "README.md":
        BLOCKS.setdefault(_example.block, []).append(_example)


# ---------------------------------------------------------------------------- what is mapped
# (documented text, replacement, why).  {key}: a path the ``world`` fixture builds.
SUBSTITUTIONS = [
    ("python3 -m pip install -e '.[all,test]' && ", "",
     "the install: the environment this suite runs in (test_install_examples_name_real_extras)"),
    ("sim2real-eval judge BAG ", "sim2real-eval judge bags/reference/line/run_00 ", "BAG: a shipped ART bag"),
    ("--output OUT", "--output judged", "OUT: a new folder"),
    ("--config EKF.yaml", "--config config/ekf_art_iros2024.yaml", "EKF.yaml: the shipped ART ekf file"),
    ("--navsat NAVSAT.yaml", "--navsat config/navsat_art_iros2024.yaml", "NAVSAT.yaml: the shipped file"),
    ("STANDSTILL_BAG", "{standstill}", "a standstill bag: 120 s at rest (test_calibrate_standstill)"),
    ("--plots DIR", "--plots plots", "DIR: a new folder"),
    ("--study STUDY.yaml", "--study {study}", "a study: one variant (as tune needs) on a 3.5-s line"),
    ("simulate STUDY.yaml", "simulate {study}", "a study: one variant on a 3.5-s line"),
    ("--real DIR --params", "--real {runs} --params", "tune's real runs: the run tree below"),
    ('--params "…"', '--params "gps.sigma=0.005:1:log"', "the parameters to search: one"),
    ("--out OUT", "--out out", "OUT: a new folder"),
    ("replay BAG|DIR... ", "replay my_bags/line ", "BAG|DIR...: a scenario folder of real bags"),
    ("--out DIR", "--out out", "DIR: a new folder"),
    ("--real DIR", "--real {my_bags}", "your real bags: my_bags"),
    ("score OUT ", "score {runs} ", "OUT: a run tree (my_bags replayed with a simulated IMU)"),
    ("--manifest runs.yaml", "--manifest {manifest}", "a manifest of that run tree's bags"),
    ("--csv-dir data2", "--csv-dir {csv_dir}", "the authors' CSV layout: a small CSV study"),
    ("judge --check CONFIG.yaml...", "judge --check config/ekf_art_iros2024.yaml",
     "CONFIG.yaml...: a shipped file"),
    ("sim2real-eval scenario NAME ", "sim2real-eval scenario line ", "NAME: a scenario"),
    ("--out FILE.npz", "--out truth.npz", "FILE.npz: a new file"),
    ("import FORMAT SRC... ",
     "import comma2k19 bags/real/comma2k19/b0c9d2329ad1606b_2018-08-02--08-34-47/40 ",
     "FORMAT SRC...: the shipped comma2k19 segment"),
    ("--truth DRIVE_BAG", "--truth {drive}",
     "a drive with ground truth: the shipped segment imported as one run"),
    ("fit DRIVE ", "fit {windows} ", "DRIVE: the shipped segment imported as 5-s windows"),
]
# Names the examples use as written, linked into the working directory unless a line of its block
# writes them: (name, world key, why, what writes it).
LINKS = [("my_bags", "my_bags", "your bags DIR/<scenario>/<run>/: two 4-s ART-layout runs of line, circle",
          ("--out my_bags",)),
         ("runs", "runs", "a run tree to score: my_bags replayed with a simulated IMU",
          ("--out runs", "evaluate.launch.py")),  # evaluate.launch.py records into ./runs by default
         ("my_drive", "my_drive", "docs/import.md's CSV folder, written by its worked example's Python block",
          ("--out my_drive",))]
# Optional groups of a synopsis that are not run: (option, why).
NOT_RUN = [("--ray", "needs a running Ray cluster (the tests marked 'ray' start one)")]
# Reduced forms: (pattern on the arguments, arguments appended — argparse keeps the last —, why).
REDUCTIONS = [
    (re.compile(r"^demo\b(?!.*--real-sample)(?!.*--config)(?!.*--real rover\b)"),
     ["--config", "{small_demo}", "--k", "2", "--workers", "2"],
     "the demo: the small study of test_demo_quick (2 GPS variants, 4-s manoeuvres, K = 2)"),
    (re.compile(r"^demo\b.*--real rover\b"), ["--k", "3"],
     "docs/rover.md's imported rover windows: the first 3 of 7, with the template import recorded (or the "
     "--config given)"),
    (re.compile(r"^demo\b.*--real-sample"), ["--config", "{small_real}"],
     "the real sample: demo_car.yaml with 2 tuning trials, one sensitivity import and 200 resamples (as "
     "shipped in tests/test_real_sample.py and test_readme_numbers.py)"),
    (re.compile(r"^tune\b"), ["--budget", "1"], "tune: one trial"),
    (re.compile(r"^fit\b"), ["--budget", "2", "--seeds", "1"], "fit: two trials per fold, one noise draw"),
]
STUDY_REDUCTIONS = [("paper_gps.yaml", "tiny.yaml",
                     "the paper's GPS study (150 runs): the tiny study (4 runs)")]
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:\.[a-z]+)?(?:\|[A-Z][A-Z0-9_.]*)*(?:\.\.\.|…)?$")
USED: set = set()


def substitute(text: str, world: dict) -> str:
    for index, (old, new, _why) in enumerate(SUBSTITUTIONS):
        if old in text:
            USED.add(index)
            text = text.replace(old, new.format(**world))
    for old, new, _why in STUDY_REDUCTIONS:
        text = text.replace(old, new)
    return text


# -------------------------------------------------------------------------------------- synopses
def _groups(text: str) -> list:
    """[(text, optional?)]: bracket groups whole, other words split on spaces (quotes respected)."""
    out, depth, current = [], 0, ""
    for char in text:
        quoted = current.count("'") % 2 == 1 or current.count('"') % 2 == 1
        if char == "[" and not quoted:
            if depth == 0 and current.strip():
                out.append((current.strip(), False))
                current = ""
            depth += 1
            if depth == 1:
                continue
        elif char == "]" and not quoted:
            depth -= 1
            if depth == 0:
                out.append((current.strip(), True))
                current = ""
                continue
        elif char == " " and depth == 0 and not quoted:
            if current.strip():
                out.append((current.strip(), False))
            current = ""
            continue
        current += char
    if current.strip():
        out.append((current.strip(), False))
    return [(group, optional) for group, optional in out if group not in ("...", "…")]


def _concrete(group: str) -> bool:
    """A group with no placeholder and no alternatives: runnable as written."""
    try:
        words = [w for token in shlex.split(group) for w in re.split(r"[\s=:,]+", token) if w]
    except ValueError:
        return False
    return not any(PLACEHOLDER.match(w) or "|" in w or "…" in w or w.endswith("...") for w in words)


def parser_of(command: str) -> argparse.ArgumentParser:
    """The sub-command's own parser, as ``sim2real-eval`` builds it."""
    from sim2real_eval.cli import COMMANDS as SUBCOMMANDS

    module = importlib.import_module(f"sim2real_eval.cli.{SUBCOMMANDS[command][0]}")
    parser = argparse.ArgumentParser(prog=f"sim2real-eval {command}")
    parser.add_argument("--debug", action="store_true")
    module.add_arguments(parser)
    return parser


def check_options(example: Example, command: str) -> None:
    """Every --option of a command (synopsis or not) exists; ``--opt a|b`` names valid choices."""
    tokens = command.replace("[", " ").replace("]", " ").split()
    actions = {option: action for action in parser_of(tokens[1])._actions for option in action.option_strings}
    for i, token in enumerate(tokens):
        if token.startswith("--"):
            name = token.split("=")[0]
            assert name in actions, f"{example.where}: sim2real-eval {tokens[1]} has no option {name}"
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
            if actions[name].choices and "|" in value:
                for choice in value.split("|"):
                    assert choice in actions[name].choices, f"{example.where}: {name} {choice!r} is no choice"


def command_argv(example: Example, command: str, world: dict) -> list:
    """The arguments run for one command: concrete optional groups kept, reductions appended, and
    ``--no-progress`` when the command has it (no progress bars in a log)."""
    parts = [group for group, optional in _groups(command)
             if not optional or (_concrete(group) and group.split()[0] not in dict(NOT_RUN))]
    argv = shlex.split(" ".join(parts))[1:]
    left = [word for word in argv if PLACEHOLDER.match(word)]
    assert not left, f"{example.where}: placeholder(s) {left} have no substitution in this test: {command}"
    for pattern, extra, _why in REDUCTIONS:
        if pattern.search(" ".join(argv)):
            argv += [part.format(**world) for part in extra]
    if "--no-progress" not in argv and "--no-progress" in parser_of(argv[0])._option_string_actions:
        argv.append("--no-progress")
    return argv


# ---------------------------------------------------------------------------------------- inputs


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The inputs behind SUBSTITUTIONS and LINKS."""
    from test_calibrate_standstill import standstill_truth, write_standstill_bag
    from test_demo_quick import small_demo_config
    from test_metrics_reference import write_csv_study
    from test_tune_search import STUDY  # one variant (as tune needs) on a 3.5-s line, K = 2

    from sim2real_eval import reference
    from sim2real_eval.cli import main

    tmp = tmp_path_factory.mktemp("docs_examples")
    small_demo = small_demo_config(tmp)
    small_real = tmp / "small_real.yaml"
    text = (REPO / "config" / "studies" / "demo_car.yaml").read_text()
    for old, new in (("budget: 16", "budget: 2"), ("budget: 40", "budget: 2"),  # tune, fit
                     ("sensitivity: [0.5, 2.0]", "sensitivity: [2.0]"),
                     ("pseudorange_policy: true", "pseudorange_policy: false"),
                     ("bootstrap: 1000", "bootstrap: 200"), ("permutations: 1000", "permutations: 200")):
        assert old in text, old
        text = text.replace(old, new)
    small_real.write_text(text)
    setup = reference.load_setup(tmp / "small_reference.yaml")
    my_bags = tmp / "my_bags"
    for scenario in ("line", "circle"):
        for k in (0, 1):
            reference.write_reference_run(setup, my_bags, scenario, k)
    runs = tmp / "runs"
    assert main(["replay", str(my_bags), "--replace", "imu=chrono_paper_demo", "--out", str(runs),
                 "--workers", "1", "--no-progress"]) == 0
    manifest = tmp / "runs.yaml"
    manifest.write_text("runs:\n" + "".join(
        f"  - {{path: {p.parent}, side: {p.parts[-5]}, variant: {p.parts[-4]}, scenario: {p.parts[-3]}}}\n"
        for p in sorted(runs.rglob("run.yaml"))))
    study = tmp / "study.yaml"
    study.write_text(STUDY)
    drive = tmp / "drive"
    from sim2real_eval.importer import import_comma2k19, shipped_comma2k19

    import_comma2k19(shipped_comma2k19(), drive, estimate_mounting=True)
    windows = tmp / "windows"
    import_comma2k19(shipped_comma2k19(), windows, window=5.0, estimate_mounting=True)
    return {
        "windows": str(windows),
        "drive": str(drive / "highway" / "run_00"),
        "my_drive": str(import_worked_example(tmp / "csv_example")),
        "tmp": str(tmp), "my_bags": str(my_bags), "study": str(study), "small_demo": str(small_demo),
        "small_real": str(small_real),
        "runs": str(runs), "manifest": str(manifest),
        "csv_dir": str(write_csv_study(tmp / "data2", {"gauss": 0.10, "walk": 0.05}, runs=3, duration=8.0)),
        "standstill": str(write_standstill_bag(tmp / "standstill", standstill_truth(120.0))),
    }


def import_worked_example(folder: Path) -> Path:
    """Run the Python block of docs/import.md's worked example (it writes ``my_drive/`` from the shipped
    comma2k19 segment) in ``folder``; the folder it wrote."""
    text = (REPO / "docs" / "import.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(# write_csv\.py.*?)```", text, re.S).group(1)
    folder.mkdir(parents=True)
    (folder / "bags").symlink_to(REPO / "bags")
    subprocess.run([sys.executable, "-c", block], cwd=folder, check=True, timeout=BUDGET_S)
    return folder / "my_drive"


def workdir(base: Path, examples: list, world: dict) -> Path:
    """A fresh working directory: the checkout's config/, bags/ (copied when written), launch/,
    docker/, and the LINKS that no line of ``examples`` writes."""
    base.mkdir(parents=True)
    written = " ".join(e.text for e in examples)
    for name, key, _why, writers in LINKS:
        # A whole argument: "--out my_drive_report" does not write my_drive.
        if not any(re.search(re.escape(writer) + r"(?![\w.-])", written) for writer in writers):
            (base / name).symlink_to(world[key])
    for name in ("config", "docker", "launch"):
        (base / name).symlink_to(REPO / name)
    if "--out bags" in written:
        shutil.copytree(REPO / "bags", base / "bags")
    else:
        (base / "bags").symlink_to(REPO / "bags")
    return base


def cli_environment(tmp: Path) -> dict:
    """Environment whose ``sim2real-eval`` runs this checkout (src/) with this interpreter."""
    bin_dir = tmp / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        script = bin_dir / "sim2real-eval"
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom sim2real_eval.cli import main\n"
                          "sys.exit(main())\n")
        script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return env


def parses(argv: list) -> bool:
    """The arguments make a complete command line for the sub-command's parser."""
    import contextlib
    import io

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            parser_of(argv[0]).parse_args(argv[1:])
    except SystemExit:
        return False
    return True


def alternatives(examples: list) -> bool:
    """A block whose lines all run the same (sub-)command lists alternatives, not steps."""
    heads = {tuple(e.text.split()[:2]) for e in examples if e.kind != "install"}
    return len(examples) > 1 and len(heads) == 1


# ------------------------------------------------------------------------------- the CLI examples
def test_examples_are_found():
    """The extraction sees the documented commands (a format change must not empty the list)."""
    assert {"demo", "judge", "replay", "score", "scenario", "sensors", "simulate", "calibrate", "tune",
            "make-reference"} <= {e.text.split()[1] for e in CLI}
    assert any(e.kind == "ros" for e in ALL) and any(e.kind == "docker" for e in ALL)
    assert any(e.expected for e in CLI), "no '$ command' session with its output"


@pytest.mark.slow
@pytest.mark.parametrize("block", sorted(BLOCKS), ids=sorted(BLOCKS))
def test_cli_examples_run(block, world, tmp_path):
    examples = BLOCKS[block]
    env = cli_environment(tmp_path)
    separate = alternatives(examples)
    for number, example in enumerate(examples):
        if number == 0 or separate:
            cwd = workdir(tmp_path / f"work{number}", [example] if separate else examples, world)
        for command in substitute(example.text, world).split("&&"):
            check_options(example, command.strip())
            argv = command_argv(example, command.strip(), world)
            if example.block.endswith(":inline") and not example.path.name == "README.md" \
                    and not parses(argv):
                continue  # prose naming a command or an option (`replay --truth`): options checked above
            done = subprocess.run(["sim2real-eval", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=BUDGET_S)
            assert done.returncode == 0, (f"{example.where}: `{example.text}` ran as `sim2real-eval "
                                          f"{shlex.join(argv)}`: exit {done.returncode}\n"
                                          f"{done.stderr[-3000:]}")
            if example.expected:
                assert done.stdout.splitlines() == example.expected, f"{example.where}: other output"


def test_each_page_runs_in_order_as_written():
    """A reader runs a page's code blocks top to bottom in one folder: no command may write an output
    an earlier block of the page wrote unless it says --overwrite (docs/import.md's second block reused
    `--out csv_import`: exit 2).  Synopses (placeholders in capitals) and prose are not steps."""
    clashes = []
    for doc in DOCS:
        written: dict = {}
        steps = sorted((e for e in CLI if e.path == doc and not e.block.endswith(":inline")),
                       key=lambda e: (e.line, e.column))
        for example in steps:
            for command in example.text.split("&&"):
                words = shlex.split(command)
                if any(word.startswith("[") or PLACEHOLDER.match(word) for word in words[2:]):
                    continue  # a synopsis, not a step
                for option in ("--out", "--output"):
                    if option not in words[:-1]:
                        continue
                    target = words[words.index(option) + 1]
                    if PLACEHOLDER.match(target) or target.startswith("$"):
                        continue
                    if target in written and "--overwrite" not in words and written[target] != example.block:
                        clashes.append(f"{example.where}: {option} {target} was written at {written[target]}")
                    written.setdefault(target, example.block)
    assert not clashes, clashes


def test_ray_blocks_are_the_ones_the_cluster_tests_run():
    """The Ray cluster blocks are run for real on a loopback cluster: two nodes (start a head and a
    worker, run a command with --ray, stop) by tests/test_ray_cluster.py, one node (a new OUT, then
    resumed) by tests/test_ray_demo_out.py; no other block may start Ray unchecked."""
    from test_ray_cluster import DOC, documented_block
    from test_ray_demo_out import one_machine_block

    firsts = [documented_block()[0], one_machine_block()[0]]
    assert RAY_BLOCKS == sorted(next(e.block for e in ALL if e.path == DOC and e.text == first)
                                for first in firsts)


@pytest.mark.slow
def test_readme_commands_chain(world, tmp_path):
    """The README's commands, run in the order written in one working directory — a fresh clone's
    (config/, bags/, launch/, docker/) — all succeed, each feeding the next (the demo's ``kept`` run bags
    feed ``score`` and ``tune``, ``make-reference`` makes the standstill ``calibrate`` reads and the
    ``my_bags`` the next block uses).  Reduced as ``REDUCTIONS`` and ``STUDY_REDUCTIONS`` say."""
    env = cli_environment(tmp_path)
    cwd = workdir(tmp_path / "clone", README_CHAIN, world)
    ran = []
    for example in README_CHAIN:
        for command in substitute(example.text, world).split("&&"):
            check_options(example, command.strip())
            argv = command_argv(example, command.strip(), world)
            done = subprocess.run(["sim2real-eval", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=BUDGET_S)
            assert done.returncode == 0, (f"{example.where}: `{example.text}` ran as `sim2real-eval "
                                          f"{shlex.join(argv)}` after {ran}: exit {done.returncode}\n"
                                          f"{done.stderr[-3000:]}")
            if example.expected:
                assert done.stdout.splitlines() == example.expected, f"{example.where}: other output"
            ran.append(argv[0])
    assert {"demo", "score", "tune", "calibrate", "make-reference", "replay", "simulate", "judge"} <= set(ran)


def test_every_substitution_is_used(world):
    for example in ALL:
        substitute(example.text, world)
    unused = [SUBSTITUTIONS[i][0] for i in range(len(SUBSTITUTIONS)) if i not in USED]
    assert not unused, f"substitutions no example needs any more (remove them): {unused}"
    texts = " ".join(e.text for e in ALL)
    assert all(name in texts for name, _key, _why, _writers in LINKS), "a link no example uses"


def test_ci_runs_the_readmes_test_command():
    """The README's set-up is two commands; .ci/run's test section runs the second one as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(setup) == 2 and setup[1].startswith("python3 -m pytest"), setup
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    suite = ci.split("\nsuite() {", 1)[1].split("\n}", 1)[0]
    ran = [line.strip().split(" || ")[0] for line in suite.splitlines() if "python3 -m pytest" in line]
    assert ran == [setup[1]], (ran, setup[1])


def test_install_examples_name_real_extras():
    """``pip install -e '.[all,test]'`` is the environment of this suite: the extras it names exist."""
    extras = set(re.findall(r'^\s+"(\w+)": \[', (REPO / "setup.py").read_text(), flags=re.M))
    installs = [e for e in ALL if "pip install" in e.text]
    assert installs
    for example in installs:
        for found in re.findall(r"\[([\w,]+)\]", example.text):
            assert set(found.split(",")) <= extras, f"{example.where}: unknown extras {found}"


def test_demo_help_costs_are_the_readmes():
    """The measured costs ``demo --help`` quotes are the README's "What it costs" figures (one
    measurement, two places: re-measuring means updating both, and this fails until both agree)."""
    from sim2real_eval.cli import demo

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### What it costs", 1)[1].split("\n### ", 1)[0]
    keep_runs = next(a.help for a in parser_of("demo")._actions if "--keep-runs" in a.option_strings)
    quoted = re.findall(r"\d+(?:\.\d+)? (?:min(?: \d+ s)?|s|MB|GB)\b",
                        " ".join([demo.COST, demo.QUICK_COST, keep_runs, demo.REAL_SAMPLE_COST]))
    assert len(quoted) >= 8, quoted
    missing = [figure for figure in quoted if figure not in section]
    assert not missing, f"demo --help quotes {missing}, which README 'What it costs' does not state"


# ----------------------------------------------------------------------------------- ROS, Docker
def _ros_missing() -> str:
    if shutil.which("ros2") is None:
        return "ros2 is not on PATH (no ROS 2 environment sourced)"
    try:
        import rclpy  # noqa: F401
    except ImportError:
        return "rclpy is not importable"
    return ""


ROS_MISSING = _ros_missing()
# The ROS blocks run with a scratch HOME (their ~/ws); dependencies installed with `pip install --user`
# (README "ROS 2", Debian) live in the real user site, which must stay visible.
USER_SITE = {"PYTHONUSERBASE": os.environ.get("PYTHONUSERBASE") or site.getuserbase()}
LAUNCHES = [e for e in ALL if e.kind == "ros" and e.text.startswith("ros2 launch ")]
DOCKER = [e for e in ALL if e.kind == "docker"]
BUILD_BLOCKS = sorted({e.block for e in ALL if e.kind == "ros" and "colcon build" in e.text})
ROS_BLOCKS = sorted(set(ROS_BLOCKS_ALL) - set(BUILD_BLOCKS))


def launch_plan(launch_file: Path):
    """(ARGUMENTS, plan function) the launch file imports from the package: its logic, without ROS."""
    for node in ast.walk(ast.parse(launch_file.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sim2real_eval"):
            names = [alias.name for alias in node.names]
            arguments = [n for n in names if n.endswith("_ARGUMENTS")]
            plans = [n for n in names if n.endswith("_plan")]
            if arguments and plans:
                module = importlib.import_module(node.module)
                return getattr(module, arguments[0]), getattr(module, plans[0])
    raise AssertionError(f"{launch_file}: no (*_ARGUMENTS, *_plan) import from sim2real_eval")


def check_launch_arguments(example: Example, text: str, tmp: Path) -> None:
    """``ros2 launch sim2real_eval F a:=b …``: F exists, declares every argument, its plan accepts them."""
    tokens = shlex.split(text)
    assert tokens[:3] == ["ros2", "launch", "sim2real_eval"], f"{example.where}: {text}"
    launch_file = REPO / "launch" / tokens[3]
    assert launch_file.is_file(), f"{example.where}: no launch file {launch_file}"
    declared, plan = launch_plan(launch_file)
    args = {}
    for token in tokens[4:]:
        name, sep, value = token.partition(":=")
        assert sep and name in declared, f"{example.where}: {tokens[3]} declares no argument {token!r}"
        args[name] = value
    if any("$" in value for value in args.values()):
        return  # a shell variable (a loop over bags): names checked here, the values when ROS runs it
    if "output" in args:  # a new folder (the documented one may exist on this machine)
        args["output"] = str(tmp / "plan_check" / Path(args["output"]).name)
    previous = os.getcwd()
    os.chdir(REPO)  # relative paths in the examples (bags/reference/…, config/…) are the checkout's
    try:
        plan(args, cwd=str(tmp)) if "cwd" in plan.__code__.co_varnames else plan(args)
    finally:
        os.chdir(previous)


def ros_text(example: Example, world: dict) -> str:
    text = substitute(example.text, world)
    return re.sub(r"\$\(ros2 pkg prefix sim2real_eval\)/share/sim2real_eval/", str(REPO) + "/", text)


@pytest.mark.parametrize("example", LAUNCHES, ids=[e.where for e in LAUNCHES])
def test_launch_examples_name_real_arguments(example, world, tmp_path):
    check_launch_arguments(example, ros_text(example, world), tmp_path)


@pytest.mark.parametrize("example", DOCKER, ids=[e.where for e in DOCKER])
def test_docker_examples_name_real_files(example, world, tmp_path):
    tokens = shlex.split(example.text)
    if tokens[1] == "build":
        assert (REPO / tokens[tokens.index("-f") + 1]).is_file(), f"{example.where}: no Dockerfile"
        assert tokens[-1] == "." and "-t" in tokens, f"{example.where}: build from the checkout, tagged"
    else:
        assert tokens[1] == "run", example.where
        built = {shlex.split(e.text)[shlex.split(e.text).index("-t") + 1] for e in DOCKER
                 if e.path == example.path and shlex.split(e.text)[1] == "build"}
        image = next(t for t in tokens[2:] if not t.startswith(("-", "/")) and ":" in t)
        assert image in built, f"{example.where}: no docker build in {example.path.name} tags {image}"
        inner = tokens[tokens.index(image) + 1:]
        if inner[:2] == ["ros2", "launch"]:
            text = shlex.join(inner)
            for i, token in enumerate(tokens):  # the container's mount of the host's bag folder
                if token == "-v":
                    container = tokens[i + 1].split(":")[1]
                    text = re.sub(rf"bag:={container}/\S+", f"bag:={world['my_bags']}/line/run_00", text)
                    text = text.replace(f"output:={container}/", f"output:={tmp_path}/")
            check_launch_arguments(example, text, tmp_path)
    pytest.skip("no Docker engine where this suite runs: Dockerfile, tags and the command inside checked")


def ros_script(examples: list, world: dict, scratch: Path) -> list:
    """A documented ROS block as bash lines for this environment: ROS already sourced when there is no
    /opt/ros/humble; rosdep, pip and ``colcon test`` not run (root, the network, this suite); an
    absolute ``output:=`` folder (/data/runs/…, /tmp/runs/…) moved below ``scratch``."""
    lines = []
    for example in examples:
        text = re.sub(r"output:=/(\S+)", rf"output:={scratch}/\1", ros_text(example, world))
        if not Path("/opt/ros/humble/setup.bash").exists():
            text = re.sub(r"source /opt/ros/humble/setup\.bash( && )?", "", text)
        text = re.sub(r"(&& )?rosdep install .*", "", text)
        if "pip install" in text or text.startswith(("colcon test", 'echo "numpy')):
            text = ""
        if text.startswith("ros2 launch") and ("evaluate.launch.py" not in text
                                               or "shutdown_when_done:=false" in text):
            # runs until stopped: Ctrl-C after ROS_LIVE_S (the whole process group, as a terminal does)
            text = f"timeout -s INT {ROS_LIVE_S} {text} || [ $? = 124 ]; echo SIGINT-DONE"
        lines.append(text.strip().rstrip("&").strip() or ":")
    return lines


def build_workspace(block: str, world: dict, home: Path) -> list:
    """A documented build block, run for real: HOME/ws built by colcon from this checkout.  Returns
    the block's aliases (e.g. the CLI of the colcon install) for the blocks that follow it."""
    examples = [e for e in ALL if e.block == block]
    script = ros_script(examples, world, home) + ["python3 -c 'import rosbags, pyproj, rich, scipy, numba'"]
    done = subprocess.run(["bash", "-ec", "shopt -s expand_aliases\n" + "\n".join(script)], cwd=REPO,
                          env=dict(os.environ, HOME=str(home), **USER_SITE), capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, f"{examples[0].where} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return [line for line in script if line.startswith("alias ")]


@pytest.fixture(scope="module")
def ros_workspace(tmp_path_factory, world):
    """The first build block's workspace (README's), used by every later ROS block."""
    home = tmp_path_factory.mktemp("home")
    return home, build_workspace(BUILD_BLOCKS[0], world, home)


@pytest.mark.slow
@pytest.mark.parametrize("block", BUILD_BLOCKS + ROS_BLOCKS, ids=BUILD_BLOCKS + ROS_BLOCKS)
def test_ros_examples_run(block, world, tmp_path, request):
    if ROS_MISSING:
        pytest.skip(f"{ROS_MISSING}; every ros2 launch line's arguments are checked without ROS")
    home, aliases = request.getfixturevalue("ros_workspace")
    if block in BUILD_BLOCKS:
        if block != BUILD_BLOCKS[0]:  # the first one is ros_workspace's
            build_workspace(block, world, tmp_path / "home")
        return
    examples = [e for e in ALL if e.block == block]
    env = dict(cli_environment(tmp_path), HOME=str(home), **USER_SITE)
    for number, group in enumerate([[e] for e in examples] if alternatives(examples) else [examples]):
        cwd = workdir(tmp_path / f"work{number}", group, world)
        script = ["shopt -s expand_aliases", f"source {home}/ws/install/setup.bash", *aliases,
                  *ros_script(group, world, cwd / "absolute")]
        done = subprocess.run(["bash", "-ec", "\n".join(script)], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=ROS_BLOCK_BUDGET_S * len(group))
        output, where = done.stdout + done.stderr, ", ".join(e.where for e in group)
        assert done.returncode == 0, f"{where}: exit {done.returncode}\n{output[-4000:]}"
        # Until it is stopped: what launch reports after the SIGINT (C++ nodes "died" with exit code -2,
        # as with Ctrl-C in a terminal) is shutdown, not the example's behaviour.
        running = "\n".join(part.split("user interrupted with ctrl-c")[0]
                            for part in output.split("SIGINT-DONE"))
        assert "[ERROR]" not in running and "Traceback" not in running, f"{where}:\n{output[-4000:]}"
