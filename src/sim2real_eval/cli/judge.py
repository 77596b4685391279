"""``sim2real-eval judge``: run the embedded robot_localization (ekf_node + navsat) on a bag.

Output: OUT/ is a rosbag2 directory with /odometry/filtered (and /odometry/gps when navsat runs) plus
OUT/summary.json; it appears only when complete.  The work is ``service.judge_bag``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..runs import timing  # standard library only: --help stays cheap
from . import REPLACED, note

OUTPUTS = REPLACED.format(what="--output")


def add_arguments(parser) -> None:
    parser.add_argument("bag", type=Path, nargs="?", help="ROS 1 .bag or rosbag2 directory / .db3 / .mcap")
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


def parse_remaps(items) -> dict:
    from ..errors import UserError

    remaps = {}
    for item in items:
        source, sep, target = str(item).partition(":=")
        if not sep or not source or not target or " " in item:
            raise UserError(f"--remap {item!r}: expected /from:=/to")
        remaps[source] = target
    return remaps


def check(paths, imu_models=(), bag=None, static_tfs=()) -> int:
    """``judge --check``: every finding of every file, one line each, then a summary line per file.

    With IMU models or a bag, each ekf/ukf file that loads is also checked against those IMUs'
    covariances (``judge.lint``: a covariance that is no covariance once rotated into base_link and
    two_d_mode is applied; a warning, as Humble runs it)."""
    from ..judge.params import check_params_file
    from ..resources import config_candidates

    errors = 0
    for given in paths:
        path = next((c for c in config_candidates(given) if c.is_file()), given)  # a bare name: config/ too
        result = check_params_file(path)
        lines = list(result.lines)
        if result.errors == 0 and (imu_models or bag is not None):
            lines += [("warning", text) for text in _imu_lint(path, imu_models, bag, static_tfs)]
        warnings = sum(level == "warning" for level, _text in lines)
        for _level, text in lines:
            print(text)
        print(f"{path}: {result.summary}: {result.errors} error(s), {warnings} warning(s)")
        errors += result.errors
    return 2 if errors else 0


def _imu_lint(path, imu_models, bag, static_tfs) -> list:
    """``path: SOURCE: …`` lines of the IMU covariance lint (nothing for a file without one filter
    section); a bag without ``--static-tf`` gets its default TFs (the ART ones for the ART layout)."""
    from ..errors import UserError
    from ..judge import load_ekf_params, parse_static_tf
    from ..judge.lint import imu_covariance_findings, model_covariances
    from ..models import load_imu_model
    from ..service import bag_imu_lint

    try:
        ekf = load_ekf_params(path)
    except UserError:
        return []  # a navsat file, or several filter sections: nothing to check the IMU against
    tfs = [parse_static_tf(text) for text in static_tfs]
    lines = []
    for spec in imu_models:
        model = load_imu_model(spec, None)
        lines += imu_covariance_findings(ekf, tfs, model.frame_id, model_covariances(model),
                                         f"imu model {spec}")
    if bag is not None:
        lines += bag_imu_lint(bag, ekf, static_tfs or None, note("judge"))
    return [f"{path}: warning: {text}" for text in lines]


def run(args) -> int:
    import os

    from ..errors import UserError
    from ..outputs import NEW, check_paths, output_folder
    from ..resources import find_config
    from ..service import judge_bag

    if args.check:
        return check(args.check, args.imu, args.bag, args.static_tf)
    given = (("BAG", args.bag), ("--config", args.config), ("--output", args.output))
    missing = [name for name, value in given if value is None]
    if missing:
        raise UserError(f"missing {', '.join(missing)} (needed unless --check)")
    # A bare file name is looked up in the installed config/ too (as in study files): from any directory.
    args.config = find_config(args.config, option="--config")
    args.navsat = find_config(args.navsat, option="--navsat") if args.navsat is not None else None
    remaps = parse_remaps(args.remap)
    check_paths({"BAG": args.bag, "--config": args.config, "--navsat": args.navsat},
                {"--output": args.output})  # before the (long) judging
    replace = output_folder(args.output, "--output", args.overwrite) != NEW or os.path.lexists(args.output)
    judged = judge_bag(args.bag, args.config, args.navsat, node=args.node, filter_type=args.filter,
                       navsat_node=args.navsat_node, gps_topic=args.gps_topic,
                       static_tfs=args.static_tf or None, remaps=remaps, timing=timing.from_args(args),
                       progress=None if args.no_progress else _progress,
                       allow_missing_sensor=args.allow_missing_sensor,  # written while judged:
                       output=args.output, storage=args.storage, overwrite=replace,
                       notice=note("judge"))
    result = judged.result
    print(
        f"{args.output}: {result.published} /odometry/filtered, final position "
        f"({', '.join(f'{v:.4f}' for v in result.final_position)})"
    )
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
