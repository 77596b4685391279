"""``sim2real-eval replay REAL_BAG --replace imu=PRESET [--replace gps=PRESET] --out OUT``.

Writes the pair ``OUT/real/real/<scenario>/<k>/`` (the real bag judged as it is) and
``OUT/sim/sim_imu-<preset>/<scenario>/<k>/`` (simulated stream(s) in place of the real ones).
The input bag is only read.
"""
from __future__ import annotations

from pathlib import Path

from ..art import TOPICS  # standard library only: --help stays cheap


def add_arguments(parser) -> None:
    parser.add_argument("bag", help="real rosbag2 directory (sqlite3 or MCAP) or ROS 1 .bag")
    parser.add_argument("--replace", action="append", required=True, metavar="SENSOR=PRESET",
                        help="imu=PRESET and/or gps=PRESET (preset name or model YAML); repeatable")
    parser.add_argument("--out", required=True, help="output directory (runs go to OUT/real and OUT/sim)")
    parser.add_argument("--config", default=None, help="robot_localization ekf YAML (default: the ART one)")
    parser.add_argument("--navsat", default=None, help="navsat_transform YAML (default: the ART one)")
    parser.add_argument("--static-tf", action="append", default=None,
                        metavar="'PARENT CHILD x y z yaw pitch roll'",
                        help="static TF of the judge (repeatable; default: the ART base_link->imu/gps)")
    parser.add_argument("--scenario", default=None,
                        help="scenario name of the pair (default: the bag's name)")
    parser.add_argument("--k", type=int, default=0, help="repeat index of the pair (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated streams (default 0)")
    parser.add_argument("--truth", default="auto", help="ground-truth source in the bag (default: auto)")
    parser.add_argument("--msg-path", default=None, help="folder of extra .msg definitions")
    parser.add_argument("--imu-topic", default=TOPICS["imu"], help="real IMU topic (default %(default)s)")
    parser.add_argument("--gps-topic", default=TOPICS["gps"], help="real GPS topic (default %(default)s)")
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3")
    parser.add_argument("--ground-truth-rate", type=float, default=None,
                        help="Hz of /ground_truth/odom (default 50)")


def run(args) -> int:
    from ..art import ART_STATIC_TFS, EKF_CONFIG, NAVSAT_CONFIG
    from ..errors import UserError
    from ..pipeline.replay import ReplaySpec, parse_replace, replay
    from ..pipeline.run import DEFAULT_GROUND_TRUTH_RATE, JudgeConfig
    from ..pipeline.study import NAME_PATTERN, parse_static_tf_text
    from ..resources import config_path

    bag = Path(args.bag)
    if not bag.exists():
        raise UserError(f"{bag}: no such bag")

    def config_file(value, default, option):
        path = Path(value) if value else config_path(default)
        if not path.is_file():
            raise UserError(f"{option} {path}: file not found")
        return str(path.resolve())

    tfs = tuple(parse_static_tf_text(t, f"--static-tf {t!r}") for t in args.static_tf) if args.static_tf \
        else ART_STATIC_TFS
    judge = JudgeConfig(config_file(args.config, EKF_CONFIG, "--config"),
                        config_file(args.navsat, NAVSAT_CONFIG, "--navsat"), tfs)
    if args.k < 0 or args.seed < 0:
        raise UserError("--k and --seed must be >= 0")
    rate = DEFAULT_GROUND_TRUTH_RATE if args.ground_truth_rate is None else args.ground_truth_rate
    if not rate > 0:
        raise UserError(f"--ground-truth-rate must be > 0, got {rate}")
    scenario = args.scenario or bag.resolve().name.split(".")[0]
    if not NAME_PATTERN.match(scenario):
        raise UserError(f"--scenario {scenario!r}: use letters, digits, '_', '.', '+', '-' "
                        "(it names a directory)")
    spec = ReplaySpec(bag=str(bag), replace=parse_replace(args.replace), judge=judge, scenario=scenario,
                      k=args.k, seed=args.seed, storage=args.storage, ground_truth_rate=rate,
                      truth_source=args.truth, msg_path=args.msg_path, imu_topic=args.imu_topic,
                      gps_topic=args.gps_topic)
    from rich.console import Console

    # Two judged runs of a possibly long bag: show that work is going on.
    with Console(stderr=True).status(f"replaying {bag.name}: real run + {spec.variant}"):
        outcomes = replay(spec, args.out)
    for outcome in outcomes:
        state = "already complete" if outcome.skipped else \
            ", ".join(f"{topic} {count}" for topic, count in sorted(outcome.messages.items()))
        print(f"{outcome.path}: {state}")
    return 0
