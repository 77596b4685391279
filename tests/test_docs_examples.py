"""Every shell example of README.md and docs/*.md runs as written (issue 13), so an example that drifts
fails here.

What counts as an example (``extract``): each line of a ```bash/sh block (``\\`` continuations
joined, ``#`` comments dropped); in a plain ``` block, each line that starts with a command this
package documents (``sim2real-eval``, ``ros2``, ``colcon``, ``docker``, ``pip``, ``python3``, or ``$ ``
followed by one of them: a shell session whose following lines are the expected output); and each
inline code span ``sim2real-eval <command> …`` (the README's command table, the docs' prose).

How each example is checked:
- ``sim2real-eval`` lines run in a fresh working directory per block (a block's lines share it, in
  order, as when a user pastes the block), with ``config/`` and ``bags/`` of this checkout beside them
  and the placeholders mapped to inputs this module builds (``SUBSTITUTIONS``, each with its reason;
  every entry must be used).  Synopses (``[--opt X]``, ``a|b``, ``UPPER`` placeholders) are checked
  option by option against the command's own parser, and their concrete part is run.
- Long commands run in a reduced form (``REDUCTIONS``): the demo on the small study of
  ``test_demo_quick.small_demo_config`` (2 GPS variants, 4-s manoeuvres, K = 2); a study file on
  ``config/studies/tiny.yaml``; ``tune`` with ``--budget 1``.
- ROS 2 lines (``ros2``, ``colcon``, ``rosdep``, the workspace set-up) run where ``ros2`` is on PATH and
  rclpy imports (the documented build block once per module, then each launch in the built workspace);
  elsewhere they skip with that reason, after the rclpy-free checks: the launch file exists and its
  plan function accepts the example's arguments.
- Docker lines skip (no Docker engine where this suite runs); their Dockerfile, build context and
  image tags are checked, and the command inside ``docker run`` is checked like a ROS line.
- The time budget of an example (``BUDGET_S``) is a hang guard, not a speed test.
"""
from __future__ import annotations

import ast
import importlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
BUDGET_S = 900                      # per sim2real-eval line (a loaded 2-core machine), a hang guard
ROS_LAUNCH_BUDGET_S = 180           # per ros2 launch line that ends by itself
ROS_LIVE_S = 12                     # launches that run until stopped: SIGINT after this many seconds
COMMANDS = ("sim2real-eval", "ros2", "colcon", "rosdep", "docker", "pip", "python3")


# ------------------------------------------------------------------------------------ extraction
@dataclass
class Example:
    path: Path
    line: int
    text: str
    block: str                      # "file:line" of the block (a block's lines share a directory)
    expected: list = field(default_factory=list)   # a "$ " session's output lines

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def kind(self) -> str:
        parts = [part.split() for part in self.text.split("&&")]
        if _installs(parts[0]) and any(part[:1] == ["sim2real-eval"] for part in parts[1:]):
            return "cli"  # `pip install … && sim2real-eval …`: the command after the install
        if _installs(parts[0]):
            return "install"
        first = parts[0][0]
        if first == "docker":
            return "docker"
        if first == "sim2real-eval":
            return "cli"
        return "ros"


def _installs(words: list) -> bool:
    """``pip install -e …`` / ``python3 -m pip install -e …`` / ``python3 -m pytest …``."""
    return words[:3] == ["pip", "install", "-e"] or words[:5] == ["python3", "-m", "pip", "install", "-e"] \
        or words[:3] == ["python3", "-m", "pytest"]


def _strip_comment(line: str) -> str:
    """The line without a trailing shell comment (quotes respected)."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        list(lexer)
    except ValueError:
        return line.rstrip()
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
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list = []
    fence = None
    start = 0
    i = 0
    while i < len(lines):
        raw = lines[i]
        if raw.startswith("```"):
            fence, start = (raw[3:].strip(), i + 1) if fence is None else (None, 0)
            i += 1
            continue
        if fence is not None:
            number = i + 1
            text = raw
            while i + 1 < len(lines) and (text.endswith("\\") or (
                    fence == "" and lines[i + 1].startswith("    ") and raw.split()[:1] == ["sim2real-eval"])):
                # a continuation: "\" in shell, an indented line of a synopsis in a plain block
                i += 1
                text = text.rstrip("\\") + " " + lines[i].strip()
            text = _strip_comment(text).strip()
            session = text.startswith("$ ")
            if session:
                text = text[2:]
            shell = fence in ("bash", "sh", "shell", "console")
            if text and (shell or session or text.split()[0] in COMMANDS):
                example = Example(path, number, text, f"{path.name}:{start}")
                if session:
                    while i + 1 < len(lines) and not lines[i + 1].startswith(("$ ", "```")):
                        i += 1
                        example.expected.append(lines[i])
                examples.append(example)
        i += 1
    # Inline spans: `sim2real-eval <command> …` outside fences (may wrap onto the next line).
    prose = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"),
                   flags=re.S | re.M)
    from sim2real_eval.cli import COMMANDS as SUBCOMMANDS

    for match in re.finditer(r"`(sim2real-eval [^`]+)`", prose):
        text = " ".join(match.group(1).split())
        if len(text.split()) > 2 and text.split()[1] in SUBCOMMANDS:  # `sim2real-eval demo` names a command
            number = prose.count("\n", 0, match.start()) + 1
            examples.append(Example(path, number, text, f"{path.name}:{number}:inline"))
    return examples


ALL = [example for doc in DOCS for example in extract(doc)]


# ------------------------------------------------------------------------- substitutions
# (documented text, replacement, why).  {name} is a path this module builds (``world``).
SUBSTITUTIONS = [
    ("python3 -m pip install -e '.[all,test]' && ", "",
     "the package is installed in the test environment (its extras are checked below)"),
    ("/data/art/lot17_run1", "{my_bags}/line/run_00", "a real ART bag: a small ART-layout bag (4-s manoeuvre)"),
    ("/data/runs/", "{tmp}/data/runs/", "a writable folder for the recorded runs"),
    ("/etc/rl/ekf.yaml", "{tmp}/etc/ekf.yaml", "a user's robot_localization file: a copy of the ART one"),
    ("/etc/rl/navsat.yaml", "{tmp}/etc/navsat.yaml", "a user's navsat file: a copy of the ART one"),
    ("sim2real-eval judge BAG ", "sim2real-eval judge bags/reference/line/run_00 ", "BAG: a shipped ART bag"),
    ("--output OUT", "--output judged", "OUT: a new output folder"),
    ("--config EKF.yaml", "--config config/ekf_art_iros2024.yaml", "EKF.yaml: the shipped ART ekf file"),
    ("--navsat NAVSAT.yaml", "--navsat config/navsat_art_iros2024.yaml", "NAVSAT.yaml: the shipped ART file"),
    ("STANDSTILL_BAG", "{standstill}", "a standstill bag: 120 s of model samples at rest (test_calibrate_standstill)"),
    ("--plots DIR", "--plots plots", "DIR: a new folder"),
    ("--study S.yaml", "--study {study}", "a study: one variant on the 4-s line (tune needs one variant)"),
    ("--study STUDY.yaml", "--study {study}", "a study: one variant on the 4-s line (tune needs one variant)"),
    ("simulate STUDY.yaml", "simulate {study}", "a study: one variant on the 4-s line"),
    ("--real DIR --params", "--real {real_runs} --params", "tune's real runs: the judged real side of my_bags"),
    ('--params "…"', '--params "gps.sigma=0.005:1:log"', "the parameters to search: one"),
    ("--out OUT", "--out out", "OUT: a new folder"),
    ("replay BAG|DIR... ", "replay my_bags/line ", "BAG|DIR...: a scenario folder of real bags"),
    ("--out DIR", "--out out", "DIR: a new folder"),
    ("--real DIR", "--real {my_bags}", "your real bags: my_bags"),
    ("score OUT ", "score {runs} ", "OUT: a run tree (replay of my_bags with a simulated IMU)"),
    ("--manifest runs.yaml", "--manifest {manifest}", "a manifest listing the run tree's bags"),
    ("--csv-dir data2", "--csv-dir {csv_dir}", "the authors' CSV layout: a small CSV study"),
    ("judge --check CONFIG.yaml...", "judge --check config/ekf_art_iros2024.yaml",
     "CONFIG.yaml...: a shipped robot_localization file"),
    ("sim2real-eval scenario NAME ", "sim2real-eval scenario line ", "NAME: a scenario"),
    ("--out FILE.npz", "--out truth.npz", "FILE.npz: a new file"),
]
# Names the examples use as they are, linked into every working directory: (name, world key, why).
# A name that a line of the block writes (--out NAME) is not linked: the block makes it.
LINKS = [("my_bags", "my_bags", "your bags, DIR/<scenario>/<run>/: two 4-s ART-layout runs of line and circle"),
         ("runs", "runs", "a run tree to score: my_bags replayed with a simulated IMU")]
# Optional groups not run: (option, why).
NOT_RUN = [("--ray", "needs a running Ray cluster (the tests marked 'ray' start one)")]
# Long commands run reduced (text appended to the command; argparse keeps the last value).
REDUCTIONS = [
    (re.compile(r"^demo\b"), ["--config", "{small_demo}", "--k", "2", "--workers", "2", "--no-progress"],
     "the small demo study (2 GPS variants, 4-s manoeuvres, K = 2)"),
    (re.compile(r"^simulate config/studies/paper_gps\.yaml"), ["--no-progress"], None),
    (re.compile(r"^tune\b"), ["--budget", "1", "--no-progress"], "one trial"),
    (re.compile(r"^(replay|make-reference|judge)\b"), ["--no-progress"], None),
]
STUDY_REDUCTIONS = [("config/studies/paper_gps.yaml", "config/studies/tiny.yaml",
                     "the paper's 150-run GPS study: the 4-run tiny study")]
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?:\.[a-z]+)?|[A-Z][A-Z0-9_]*\|[A-Z|.]+)(?:\.\.\.|…)?$")
USED: set = set()


def substitute(text: str, world: dict) -> str:
    for index, (old, new, _why) in enumerate(SUBSTITUTIONS):
        if old in text:
            USED.add(index)
            text = text.replace(old, new.format(**world))
    for old, new, _why in STUDY_REDUCTIONS:
        text = text.replace(old, new)
    return text


# ----------------------------------------------------------------------------------- synopses
def _groups(text: str) -> list:
    """[(token text, optional?)]: bracket groups kept whole, other tokens split on spaces."""
    out, depth, current, optional = [], 0, "", False
    for char in text:
        if char == "[":
            if depth == 0 and current.strip():
                out.append((current.strip(), False))
                current = ""
            depth += 1
            if depth == 1:
                optional = True
                continue
        elif char == "]":
            depth -= 1
            if depth == 0:
                out.append((current.strip(), True))
                current, optional = "", False
                continue
        elif char == " " and depth == 0 and not _open_quote(current):
            if current.strip():
                out.append((current.strip(), False))
            current = ""
            continue
        current += char
    if current.strip():
        out.append((current.strip(), optional))
    return [(t[:-3] if t.endswith("...") and o else t, o) for t, o in out if t not in ("...", "…")]


def _open_quote(text: str) -> bool:
    return text.count("'") % 2 == 1 or text.count('"') % 2 == 1


def _concrete(token_text: str) -> bool:
    """A group with no placeholder and no alternatives (runnable as written)."""
    try:
        tokens = shlex.split(token_text)
    except ValueError:
        return False
    words = [w for t in tokens for w in re.split(r"[\s=:,]+", t) if w]
    return not any(PLACEHOLDER.match(w) or "|" in w or "…" in w or w.endswith("...") for w in words)


def parser_of(command: str):
    import argparse

    from sim2real_eval.cli import COMMANDS as SUBCOMMANDS

    module = importlib.import_module(f"sim2real_eval.cli.{SUBCOMMANDS[command][0]}")
    parser = argparse.ArgumentParser(prog=f"sim2real-eval {command}")
    module.add_arguments(parser)
    return parser


def check_options(example: Example, argv_text: str) -> None:
    """Every --option of a (synopsis) command exists in its parser; ``--opt a|b`` names valid choices."""
    tokens = argv_text.replace("[", " ").replace("]", " ").split()
    parser = parser_of(tokens[1])
    actions = {option: action for action in parser._actions for option in action.option_strings}
    for i, token in enumerate(tokens):
        if token.startswith("--"):
            name = token.split("=")[0]
            assert name in actions, f"{example.where}: sim2real-eval {tokens[1]} has no option {name}"
            choices = actions[name].choices
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
            if choices and "|" in value:
                for choice in value.split("|"):
                    assert choice in choices, f"{example.where}: {name} {choice!r} is not one of {choices}"


def runnable(example: Example, text: str) -> str:
    """The command line to run: optional groups kept when concrete, dropped otherwise."""
    parts = []
    for group, optional in _groups(text):
        if optional:
            if _concrete(group) and not any(group.split()[0] == option for option, _why in NOT_RUN):
                parts.append(group)
        else:
            parts.append(group)
    line = " ".join(parts)
    left = [t for t in shlex.split(line) if PLACEHOLDER.match(t) and t not in ("A", "I")]
    assert not left, f"{example.where}: placeholder(s) {left} have no substitution in this test: {line}"
    return line


# ------------------------------------------------------------------------------------ inputs
# A study for STUDY.yaml: one variant (tune needs one) on a 3.5-s line, K = 2.
STUDY = """\
name: docs_example
seed: 7
repeats: 2
scenarios:
  line:
    phases:
      - {duration: 0.5, speed: 0.0}
      - {duration: 2.5, speed: 1.0, steer: 0.0}
      - {duration: 0.5, speed: 0.0}
variants:
  ch_gauss: {gps: ch_gauss, imu: chrono_paper_demo}
judge:
  ekf: ekf_art_iros2024.yaml
  navsat: navsat_art_iros2024.yaml
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Inputs for the placeholders: ART-layout bags, a run tree, a manifest, CSVs, a standstill bag."""
    from test_calibrate_standstill import standstill_truth, write_standstill_bag
    from test_demo_quick import small_demo_config
    from test_metrics_reference import write_csv_study

    from sim2real_eval import reference
    from sim2real_eval.cli import main

    tmp = tmp_path_factory.mktemp("docs_examples")
    config = small_demo_config(tmp)
    setup = reference.load_setup(tmp / "small_reference.yaml")
    my_bags = tmp / "my_bags"
    for scenario in ("line", "circle"):
        for k in (0, 1):
            reference.write_reference_run(setup, my_bags, scenario, k)
    runs = tmp / "runs"
    assert main(["replay", str(my_bags), "--replace", "imu=chrono_paper_demo", "--out", str(runs),
                 "--workers", "1", "--no-progress"]) == 0
    manifest = tmp / "runs.yaml"
    entries = [f"  - {{path: {p.parent}, side: {p.parts[-5]}, variant: {p.parts[-4]}, scenario: {p.parts[-3]}}}"
               for p in sorted(runs.rglob("run.yaml"))]
    manifest.write_text("runs:\n" + "\n".join(entries) + "\n")
    study = tmp / "study.yaml"
    study.write_text(STUDY)
    (tmp / "etc").mkdir()
    shutil.copy(REPO / "config" / "ekf_art_iros2024.yaml", tmp / "etc" / "ekf.yaml")
    shutil.copy(REPO / "config" / "navsat_art_iros2024.yaml", tmp / "etc" / "navsat.yaml")
    return {
        "tmp": str(tmp), "my_bags": str(my_bags), "study": str(study), "small_demo": str(config), "runs": str(runs),
        "real_runs": str(runs), "manifest": str(manifest),
        "csv_dir": str(write_csv_study(tmp / "data2", {"gauss": 0.10, "walk": 0.05}, runs=3, duration=8.0)),
        "standstill": str(write_standstill_bag(tmp / "standstill", standstill_truth(120.0))),
    }


def workdir(base: Path, examples: list, world: dict) -> Path:
    """A fresh directory with this checkout's config/ and bags/ (copied when an example writes there)
    and the LINKS the examples read."""
    base.mkdir(parents=True)
    written = " ".join(e.text for e in examples)
    for name, key, _why in LINKS:
        if f"--out {name}" not in written:
            (base / name).symlink_to(world[key])
    writes_bags = "--out bags" in written
    for name in ("config", "docker", "launch"):
        (base / name).symlink_to(REPO / name)
    if writes_bags:
        shutil.copytree(REPO / "bags", base / "bags")
    else:
        (base / "bags").symlink_to(REPO / "bags")
    return base


def cli_environment(tmp: Path) -> dict:
    """PATH with a ``sim2real-eval`` that runs this checkout (src/) with this interpreter."""
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
    env["COLUMNS"] = "200"
    return env


# --------------------------------------------------------------------------------- the tests
# A block with a ROS line is a ROS block: its sim2real-eval lines (scoring what the launches recorded)
# run with it (test_ros_examples_run).
ROS_BLOCK_NAMES = sorted({e.block for e in ALL if e.kind == "ros"})
CLI = [e for e in ALL if e.kind == "cli" and e.block not in ROS_BLOCK_NAMES]
BLOCKS: dict = {}
for _example in CLI:
    BLOCKS.setdefault(_example.block, []).append(_example)


def test_examples_are_found():
    """The extraction sees the documented commands (a format change must not silently empty the list)."""
    commands = {e.text.split()[1] for e in CLI}
    assert {"demo", "judge", "replay", "score", "scenario", "sensors", "simulate", "calibrate", "tune",
            "make-reference"} <= commands, commands
    assert any(e.kind == "ros" for e in ALL) and any(e.kind == "docker" for e in ALL)


def alternatives(examples: list) -> bool:
    """A block whose lines all run the same (sub-)command lists alternatives, not steps."""
    heads = {tuple(e.text.split()[:2]) for e in examples if e.kind != "install"}
    return len(examples) > 1 and len(heads) == 1


@pytest.mark.slow
@pytest.mark.parametrize("block", sorted(BLOCKS), ids=sorted(BLOCKS))
def test_cli_examples_run(block, world, tmp_path):
    """A block's lines run in order in one working directory (as when pasted), or each in its own when
    the block lists alternatives (``alternatives``)."""
    examples = BLOCKS[block]
    env = cli_environment(tmp_path)
    separate = alternatives(examples)
    for number, example in enumerate(examples):
        if number == 0 or separate:
            cwd = workdir(tmp_path / f"work{number}", examples if not separate else [example], world)
        text = substitute(example.text, world)
        for command in text.split("&&"):
            command = command.strip()
            check_options(example, command)
            line = runnable(example, command)
            argv = shlex.split(line)[1:]
            for pattern, extra, _why in REDUCTIONS:
                if pattern.search(" ".join(argv)):
                    argv += [part.format(**world) for part in extra]
            done = subprocess.run(["sim2real-eval", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=BUDGET_S)
            assert done.returncode == 0, (f"{example.where}: `{example.text}` ran as `sim2real-eval "
                                          f"{shlex.join(argv)}` -> exit {done.returncode}\n{done.stderr[-3000:]}")
            if example.expected:
                assert done.stdout.splitlines() == example.expected, f"{example.where}: output differs"


def test_every_substitution_is_used(world):
    for example in CLI + [e for e in ALL if e.kind in ("ros", "docker")]:
        substitute(example.text, world)
    unused = [SUBSTITUTIONS[i][0] for i in range(len(SUBSTITUTIONS)) if i not in USED]
    assert not unused, f"substitutions no example needs any more (remove them): {unused}"
    texts = " ".join(e.text for e in ALL)
    assert all(name in texts for name, _key, _why in LINKS), "a link no example uses"


def test_install_examples_name_real_extras():
    """``pip install -e '.[all,test]'`` and ``python3 -m pytest -q`` are not run here (this suite is
    the second; the first is the environment it runs in): the extras they name exist in setup.py."""
    text = (REPO / "setup.py").read_text()
    extras = set(re.findall(r'^\s+"(\w+)": \[', text, flags=re.M))
    for example in ALL:
        for found in re.findall(r"\[([\w,]+)\]", example.text) if "pip install" in example.text else []:
            assert set(found.split(",")) <= extras, f"{example.where}: unknown extras {found}"


# ---------------------------------------------------------------------------------- ROS 2
def _ros_available() -> str:
    if shutil.which("ros2") is None:
        return "ros2 is not on PATH (no ROS 2 environment sourced)"
    try:
        import rclpy  # noqa: F401
    except ImportError:
        return "rclpy is not importable"
    return ""


ROS_REASON = _ros_available()
LAUNCHES = [e for e in ALL if e.kind == "ros" and e.text.startswith("ros2 launch ")]
DOCKER = [e for e in ALL if e.kind == "docker"]
BUILD_BLOCKS = sorted({e.block for e in ALL if e.kind == "ros" and e.text.startswith("colcon build")})
ROS_BLOCKS = sorted(set(ROS_BLOCK_NAMES) - set(BUILD_BLOCKS))


def launch_plan(launch_file: Path):
    """(ARGUMENTS, plan function) that a launch file imports from the package (no ROS needed)."""
    tree = ast.parse(launch_file.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sim2real_eval"):
            names = [alias.name for alias in node.names]
            arguments = [n for n in names if n.endswith("_ARGUMENTS")]
            plans = [n for n in names if n.endswith("_plan")]
            if arguments and plans:
                module = importlib.import_module(node.module)
                return getattr(module, arguments[0]), getattr(module, plans[0])
    raise AssertionError(f"{launch_file}: no (*_ARGUMENTS, *_plan) import from sim2real_eval")


def check_launch_arguments(example: Example, text: str, tmp: Path) -> None:
    """``ros2 launch sim2real_eval F a:=b …``: F exists, every argument is declared, the plan accepts them."""
    tokens = shlex.split(text)
    assert tokens[:3] == ["ros2", "launch", "sim2real_eval"], f"{example.where}: {text}"
    launch_file = REPO / "launch" / tokens[3]
    assert launch_file.is_file(), f"{example.where}: no launch file {launch_file}"
    declared, plan = launch_plan(launch_file)
    args = {}
    for token in tokens[4:]:
        name, sep, value = token.partition(":=")
        assert sep, f"{example.where}: {token!r} is not name:=value"
        assert name in declared, f"{example.where}: {tokens[3]} declares no argument {name!r}"
        args[name] = value
    if "output" in args:
        args["output"] = str(tmp / "plan_check" / Path(args["output"]).name)
    cwd = tmp / "plan_cwd"
    cwd.mkdir(exist_ok=True)
    previous = os.getcwd()
    os.chdir(REPO)  # relative paths of the examples (bags/reference/…, config/…) are the checkout's
    try:
        plan(args, cwd=str(cwd)) if "cwd" in plan.__code__.co_varnames else plan(args)
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
    """No Docker engine here: the build's Dockerfile and context exist, the run's image is one that a
    build in the same file tags, and the command inside the container is a valid launch."""
    tokens = shlex.split(example.text)
    if tokens[1] == "build":
        dockerfile = tokens[tokens.index("-f") + 1]
        assert (REPO / dockerfile).is_file(), f"{example.where}: no {dockerfile}"
        assert tokens[-1] == "." and "-t" in tokens, f"{example.where}: build from the repository root, tagged"
    else:
        assert tokens[1] == "run", example.where
        built = set()
        for other in DOCKER:
            words = shlex.split(other.text)
            if other.path == example.path and words[1] == "build":
                built.add(words[words.index("-t") + 1])
        image = next(t for t in tokens[2:] if not t.startswith("-") and ":" in t and not t.startswith("/"))
        assert image in built, f"{example.where}: image {image} is built by no docker build in {example.path.name}"
        inner = tokens[tokens.index(image) + 1:]
        if inner[:2] == ["ros2", "launch"]:
            text = shlex.join(inner)
            for i, token in enumerate(tokens):  # the container's /data is the host's bag folder
                if token == "-v":
                    container = tokens[i + 1].split(":")[1]
                    text = re.sub(rf"bag:={container}/\S+", f"bag:={world['my_bags']}/line/run_00", text)
                    text = text.replace(f"output:={container}/", f"output:={tmp_path}/")
            check_launch_arguments(example, text, tmp_path)
    pytest.skip("no Docker engine where this suite runs: files, tags and the inner command checked")


def ros_script(lines: list, world: dict) -> str:
    """A documented ROS block as a bash script for this environment (stated adaptations): ROS is
    already sourced (no /opt/ros here), rosdep and pip are not run (root, network; the dependencies are
    checked importable instead), ``colcon test`` is not run (it runs this suite), aliases expand."""
    script = ["shopt -s expand_aliases"]
    for example in lines:
        text = ros_text(example, world)
        if "/opt/ros/humble/setup.bash" in text and not Path("/opt/ros/humble/setup.bash").exists():
            text = re.sub(r"source /opt/ros/humble/setup\.bash( && )?", "", text)
        if text.startswith("rosdep") or "&& rosdep" in text:
            text = re.sub(r"(&& )?rosdep install .*", "", text)
        if "pip install" in text or text.startswith("colcon test") or text.startswith('echo "numpy'):
            text = ""
        script.append(text.strip().rstrip("&").strip() or ":")
    script.append("python3 -c 'import rosbags, pyproj, rich, scipy, numba, matplotlib'")
    return "\n".join(script)


@pytest.fixture(scope="module")
def ros_workspace(tmp_path_factory, world):
    """The documented build block, run for real (ROS only): a colcon workspace with this checkout."""
    if ROS_REASON:
        pytest.skip(ROS_REASON)
    home = tmp_path_factory.mktemp("home")
    examples = [e for e in ALL if e.block == BUILD_BLOCKS[0]]
    env = dict(os.environ, HOME=str(home))
    done = subprocess.run(["bash", "-ec", ros_script(examples, world)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, f"ROS build block failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return home


@pytest.mark.slow
@pytest.mark.parametrize("block", BUILD_BLOCKS + ROS_BLOCKS, ids=BUILD_BLOCKS + ROS_BLOCKS)
def test_ros_examples_run(block, world, tmp_path, request):
    """Each documented ROS block after the build, in the built workspace (``source install/setup.bash``
    and the block's own lines).  A block of only ``ros2 launch`` lines lists alternatives: each runs
    alone in its own directory.  Launches that run until stopped get SIGINT after ROS_LIVE_S."""
    if ROS_REASON:
        pytest.skip(ROS_REASON + "; the launch arguments are checked by test_launch_examples_name_real_arguments")
    home = request.getfixturevalue("ros_workspace")
    if block in BUILD_BLOCKS:
        return  # the fixture ran it
    examples = [e for e in ALL if e.block == block]
    groups = [[e] for e in examples] if alternatives(examples) else [examples]
    env = cli_environment(tmp_path)
    env["HOME"] = str(home)
    for number, group in enumerate(groups):
        cwd = workdir(tmp_path / f"work{number}", group, world)
        lines = []
        for example in group:
            text = ros_text(example, world)
            live = text.startswith("ros2 launch") and (
                "evaluate.launch.py" not in text or "shutdown_when_done:=false" in text)
            lines.append(f"timeout -s INT {ROS_LIVE_S} {text} || [ $? = 124 ]" if live else text)
        script = f"source {home}/ws/install/setup.bash\n" + ros_script_lines(lines)
        done = subprocess.run(["bash", "-ec", script], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=ROS_LAUNCH_BUDGET_S * len(group))
        output = done.stdout + done.stderr
        where = ", ".join(e.where for e in group)
        assert done.returncode == 0, f"{where}: exit {done.returncode}\n{output[-4000:]}"
        assert "[ERROR]" not in output and "Traceback" not in output, f"{where}:\n{output[-4000:]}"


def ros_script_lines(lines: list) -> str:
    return "shopt -s expand_aliases\n" + "\n".join(lines)
