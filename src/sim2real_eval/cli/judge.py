"""``sim2real-eval judge``: run the embedded robot_localization (ekf_node + navsat) on a bag.

Output: OUT/ is a rosbag2 directory with /odometry/filtered (and /odometry/gps when navsat runs) plus
OUT/summary.json; it appears only when complete.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

EXPECTED_TYPES = {
    "odom": "nav_msgs/msg/Odometry",
    "pose": "geometry_msgs/msg/PoseWithCovarianceStamped",
    "twist": "geometry_msgs/msg/TwistWithCovarianceStamped",
    "imu": "sensor_msgs/msg/Imu",
}
NAVSATFIX = "sensor_msgs/msg/NavSatFix"


def add_arguments(parser) -> None:
    parser.add_argument("bag", type=Path, nargs="?", help="ROS 1 .bag or rosbag2 directory / .db3 / .mcap")
    parser.add_argument(
        "--check",
        type=Path,
        nargs="+",
        metavar="CONFIG",
        help="only lint these robot_localization parameter files (ekf/ukf and navsat sections) as Humble "
        "reads them; one line per problem, exit 2 on any error (no BAG, --config or --output needed)",
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
        help="a static transform (static_transform_publisher order); repeatable",
    )
    parser.add_argument(
        "--remap",
        action="append",
        default=[],
        metavar="/from:=/to",
        help="ROS-style topic remapping of the nodes' topics; repeatable",
    )
    parser.add_argument(
        "--output", type=Path, help="output rosbag2 directory (must not exist; required unless --check)"
    )
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT when complete")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def parse_remaps(items) -> dict:
    from ..errors import UserError

    remaps = {}
    for item in items:
        source, sep, target = str(item).partition(":=")
        if not sep or not source or not target or " " in item:
            raise UserError(f"--remap {item!r}: expected /from:=/to")
        remaps[source] = target
    return remaps


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check(paths) -> int:
    """``judge --check``: every finding of every file, one line each, then a summary line per file."""
    from ..judge.params import check_params_file

    errors = 0
    for path in paths:
        result = check_params_file(path)
        for _level, text in result.lines:
            print(text)
        print(f"{path}: {result.summary}: {result.errors} error(s), {result.warnings} warning(s)")
        errors += result.errors
    return 2 if errors else 0


def run(args) -> int:
    from ..atomic import atomic_directory  # noqa: F401 - write_bag is atomic (atomic_directory)
    from ..bags import open_bag, write_bag
    from ..bags.messages import odometry_messages
    from ..errors import UserError
    from ..judge import Judge, load_ekf_params, load_navsat_params, parse_static_tf

    if args.check:
        return check(args.check)
    given = (("BAG", args.bag), ("--config", args.config), ("--output", args.output))
    missing = [name for name, value in given if value is None]
    if missing:
        raise UserError(f"missing {', '.join(missing)} (needed unless --check)")
    static_tfs = [parse_static_tf(spec) for spec in args.static_tf]
    remaps = parse_remaps(args.remap)
    ekf_params = load_ekf_params(args.config, args.node, args.filter)
    navsat_params = load_navsat_params(args.navsat, args.navsat_node) if args.navsat else None
    if args.output.exists() and not args.overwrite:
        raise UserError(f"{args.output}: already exists (choose another output or pass --overwrite)")
    judge = Judge(ekf_params, navsat_params, static_tfs, gps_topic=args.gps_topic, remaps=remaps)

    with open_bag(args.bag) as bag:
        topics = bag.topics
        if bag.message_count == 0:
            raise UserError(f"{args.bag}: the bag is empty")
        wanted = []
        for sensor in ekf_params.sensors:
            topic = judge.topic(sensor.topic)
            if topic not in judge.input_topics:
                continue  # produced by the judge itself (navsat's /odometry/gps)
            where = f"{sensor.name} ({sensor.topic}) of {args.config}"
            if topic not in topics:
                raise UserError(
                    f"topic {topic}, {where}, is not in {args.bag} "
                    f"(topics: {', '.join(sorted(topics)) or 'none'})"
                )
            if topics[topic].msgtype != EXPECTED_TYPES[sensor.kind]:
                raise UserError(
                    f"topic {topic} in {args.bag} is {topics[topic].msgtype}; {where} needs "
                    f"{EXPECTED_TYPES[sensor.kind]}"
                )
            wanted.append(topic)
        if navsat_params is not None:
            gps = judge.gps_topic
            if gps not in topics:
                raise UserError(
                    f"GPS topic {gps} (navsat gps/fix) is not in {args.bag} "
                    f"(topics: {', '.join(sorted(topics))})"
                )
            if topics[gps].msgtype != NAVSATFIX:
                raise UserError(
                    f"topic {gps} in {args.bag} is {topics[gps].msgtype}; navsat needs {NAVSATFIX}"
                )
            wanted.append(gps)
            if (
                judge.navsat_imu_topic in topics
                and not navsat_params.use_odometry_yaw
                and not navsat_params.wait_for_datum
            ):
                if topics[judge.navsat_imu_topic].msgtype != EXPECTED_TYPES["imu"]:
                    raise UserError(
                        f"topic {judge.navsat_imu_topic} in {args.bag} is not sensor_msgs/msg/Imu"
                    )
                wanted.append(judge.navsat_imu_topic)
        if ekf_params.use_control and judge.cmd_vel_topic in topics:
            wanted.append(judge.cmd_vel_topic)
        wanted = list(dict.fromkeys(wanted))
        stream = ((m.recv_ns, m.topic, m.msg) for m in bag.messages(wanted, allow_empty=True))
        result = _run_with_progress(judge, stream, bag.start_ns, bag.end_ns, not args.no_progress)
        if result.published == 0:
            raise UserError(
                f"{args.bag}: the filter never initialised (no usable measurement on "
                f"{', '.join(wanted)}); dropped: {result.dropped}"
            )

    summary = {
        "bag": str(args.bag),
        "config": {
            "ekf": str(args.config),
            "ekf_sha256": _sha256(args.config),
            "node": ekf_params.node,
            "filter_type": ekf_params.filter_type,
        },
        "final_position": [float(v) for v in result.final_position],
        "final_stamp_ns": int(result.filtered.stamp_ns[-1]),
        "published": result.published,
        "gps_odometry_published": len(result.gps_odometry) if result.gps_odometry is not None else None,
        "inputs": result.inputs,
        "dropped": result.dropped,
        "warnings": result.warnings,
        "static_tfs": list(args.static_tf),
        "remaps": remaps,
    }
    if navsat_params is not None:
        summary["config"].update(
            {
                "navsat": str(args.navsat),
                "navsat_sha256": _sha256(args.navsat),
                "navsat_node": navsat_params.node,
            }
        )
    messages = list(odometry_messages(result.filtered, judge.filtered_topic))
    if result.gps_odometry is not None:
        messages += list(odometry_messages(result.gps_odometry, judge.gps_odometry_topic))
        messages.sort(key=lambda m: m[0])
    write_bag(
        args.output,
        messages,
        storage=args.storage,
        extra_files={"summary.json": json.dumps(summary, indent=2) + "\n"},
        overwrite=args.overwrite,
    )
    print(
        f"{args.output}: {result.published} /odometry/filtered, final position "
        f"({', '.join(f'{v:.4f}' for v in result.final_position)})"
    )
    return 0


def _run_with_progress(judge, stream, start_ns, end_ns, show: bool):
    if not show or start_ns is None or end_ns is None or end_ns <= start_ns:
        return judge.run(stream)
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

        result = judge.run(stream, progress=advance)
        progress.update(task, completed=span)
    return result
