"""``sim2real-eval judge``: run the embedded robot_localization (ekf_node + navsat) on a bag.

Output: OUT/ is a rosbag2 directory with /odometry/filtered (and /odometry/gps when navsat runs) plus
OUT/summary.json; it appears only when complete.  The work is ``service.judge_bag``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..runs import timing  # standard library only: --help stays cheap
from . import REPLACED, note
from .validators import existing_path

OUTPUTS = REPLACED.format(what="--output")


def add_arguments(parser) -> None:
    parser.add_argument("bag", type=existing_bag, nargs="?",
                        help="ROS 1 .bag or rosbag2 directory / .db3 / .mcap")
    parser.add_argument(
        "--check",
        type=Path,
        nargs="+",
        metavar="CONFIG",
        help="only lint these robot_localization parameter files (ekf/ukf and navsat sections) as Humble "
        "reads them; one line per problem, exit 2 on any error (no BAG, --config or --output needed).  With "
        "--imu MODEL or a BAG, also check the IMU covariances as ekf_node will fuse them (rotated by the "
        "--static-tf into base_link, two_d_mode applied)",
    )
    parser.add_argument(
        "--imu",
        action="append",
        default=[],
        metavar="MODEL",
        help="with --check: an IMU model (preset name or YAML) whose published covariances are checked "
        "(repeatable)",
    )
    parser.add_argument("--config", type=Path, help="ekf_node parameter YAML (required unless --check)")
    parser.add_argument("--node", help="node section of --config to use (default: the only filter section)")
    parser.add_argument(
        "--filter",
        choices=("ekf", "ukf"),
        default=None,
        help="filter to run (default: the section's filter_type key, else ekf)",
    )
    parser.add_argument("--navsat", type=Path, help="navsat_transform_node parameter YAML (runs navsat)")
    parser.add_argument("--navsat-node", help="node section of --navsat to use")
    parser.add_argument(
        "--gps-topic", default="/fix", help="navsat's gps/fix topic in the bag (default /fix)"
    )
    parser.add_argument(
        "--static-tf",
        action="append",
        default=[],
        metavar='"PARENT CHILD x y z yaw pitch roll"',
        help="a static transform (static_transform_publisher order); repeatable.  Default: none, except "
        "for a bag in the ART layout (IMU in frame 'imu', GPS in frame 'gps', config base_link_frame "
        "'base_link', an sbg_driver INS topic, the IMU's x axis up), which gets the ART static TFs as in "
        "'replay' (said on stderr): \"base_link imu 0 0 0 3.1416 -1.5708 0\" and "
        "\"base_link gps 0 0 0 0 0 0\"",
    )
    parser.add_argument(
        "--remap",
        action="append",
        default=[],
        metavar="/from:=/to",
        help="ROS-style topic remapping of the nodes' topics; repeatable",
    )
    parser.add_argument(
        "--output", type=Path, help="output rosbag2 directory (new or empty; required unless --check)"
    )
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --output, atomically once the new one is complete")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--allow-missing-sensor", action="store_true",
                        help="write the output even when a whole input was lost (e.g. every /imu dropped "
                             "for a missing TF, every fix NO_FIX); default: an error")
    timing.add_arguments(parser, seed_help="0")


def existing_bag(text: str) -> Path:
    """BAG: a path that exists (``validators.existing_path``), as a Path."""
    return Path(existing_path(text))


def parse_remaps(items) -> dict:
    from ..errors import UserError

    remaps = {}
    for item in items:
        source, sep, target = str(item).partition(":=")
        if not sep or not source or not target or " " in item:
            raise UserError(f"--remap {item!r}: expected /from:=/to")
        remaps[source] = target
    return remaps


def check(args) -> int:
    """``judge --check``: every finding of every file, one line each, then a summary line per file; exit 2
    on any error."""
    from ..service.judge import check_configs

    checked = check_configs(args.check, args.imu, args.bag, args.static_tf, note("judge"))
    for config in checked:
        for _level, text in config.lines:
            print(text)
        print(f"{config.path}: {config.summary}: {config.errors} error(s), {config.warnings} warning(s)")
    return 2 if any(config.errors for config in checked) else 0


def run(args) -> int:
    from ..errors import UserError
    from ..outputs import NEW, check_paths, output_folder
    from ..resources import find_config
    from ..service.judge import JudgeOptions, judge_bag

    if args.check:
        return check(args)
    given = (("BAG", args.bag), ("--config", args.config), ("--output", args.output))
    missing = [name for name, value in given if value is None]
    if missing:
        raise UserError(f"missing {', '.join(missing)} (needed unless --check)")
    # A bare file name is looked up in the installed config/ too (as in study files): from any directory.
    config = find_config(args.config, option="--config")
    navsat = find_config(args.navsat, option="--navsat") if args.navsat is not None else None
    check_paths({"BAG": args.bag, "--config": config, "--navsat": navsat},
                {"--output": args.output})  # before the (long) judging
    replace = output_folder(args.output, "--output", args.overwrite) != NEW or os.path.lexists(args.output)
    options = JudgeOptions(node=args.node, filter_type=args.filter, navsat_node=args.navsat_node,
                           gps_topic=args.gps_topic, static_tfs=args.static_tf or None,
                           remaps=parse_remaps(args.remap), timing=timing.from_args(args),
                           allow_missing_sensor=args.allow_missing_sensor, storage=args.storage,
                           overwrite=replace)
    judged = judge_bag(args.bag, config, navsat, options, output=args.output,  # written while judged
                       progress=None if args.no_progress else _progress, notice=note("judge"))
    result = judged.result
    print(f"{args.output}: {result.published} /odometry/filtered, final position "
          f"({', '.join(f'{v:.4f}' for v in result.final_position)})")
    return 0


@contextlib.contextmanager
def _progress(start_ns, end_ns):
    """A bar over the bag's time span; yields ``advance(recv_ns)`` (None when the span is unknown)."""
    if start_ns is None or end_ns is None or end_ns <= start_ns:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    span = (end_ns - start_ns) * 1e-9
    with Progress(
        TextColumn("judge"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s bag time"),
        TimeRemainingColumn(),
        transient=True,
    ) as progress:
        task = progress.add_task("judge", total=span)
        state = {"last": start_ns}

        def advance(recv_ns: int) -> None:
            if recv_ns - state["last"] >= 1_000_000_000:  # update once per bag second
                state["last"] = recv_ns
                progress.update(task, completed=(recv_ns - start_ns) * 1e-9)

        yield advance
        progress.update(task, completed=span)
