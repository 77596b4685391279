"""``sim2real-eval replay BAG|DIR... --replace imu=PRESET [--replace imu=OTHER] [--replace gps=…] --out OUT``.

Per real bag, writes ``OUT/real/real/<scenario>/<k>/`` (the bag judged as it is, once) and per variant
``OUT/sim/sim_imu-<preset>/<scenario>/<k>/`` (simulated stream(s) in place of the real ones); the
``--replace`` models are crossed per sensor (``replay.offline.parse_replace``).  A bag
``DIR/<scenario>/<run>`` is named by its folder (scenario) and its position among the bags there (k)
(``runs.name_real_bag``); a scenario folder or a folder of scenario folders replays every bag in it,
which is what a study needs (the scorer wants at least 2 runs per scenario and side).
The input bags are only read.  The work is ``service.replay_request``.
"""
from __future__ import annotations

from ..art import TOPICS  # standard library only: --help stays cheap
from ..runs import start, timing
from . import RUN_TREE, note
from .validators import non_negative_int, positive_float, positive_int

OUTPUTS = RUN_TREE


def add_arguments(parser) -> None:
    parser.add_argument("bags", nargs="+", metavar="BAG",
                        help="real bag (rosbag2 directory, sqlite3 or MCAP, or ROS 1 .bag) named "
                             "DIR/<scenario>/<run>; or a scenario folder DIR/<scenario>/ (all its bags); "
                             "or DIR/ holding scenario folders")
    parser.add_argument("--replace", action="append", required=True, metavar="SENSOR=PRESET",
                        help="imu=PRESET and/or gps=PRESET (preset name or model YAML); repeatable: several "
                             "models of one sensor make several variants (crossed with the other sensor's), "
                             "all replayed against one judgement of the real bag")
    parser.add_argument("--out", required=True, help="output directory (runs go to OUT/real and OUT/sim)")
    parser.add_argument("--config", default=None,
                        help="robot_localization ekf YAML (default: for bags of 'sim2real-eval import', the "
                             "judge of the template it recorded in DIR/import.yaml, static TFs and start "
                             "included; else the ART one)")
    parser.add_argument("--navsat", default=None, help="navsat_transform YAML (default: as --config)")
    parser.add_argument("--static-tf", action="append", default=None,
                        metavar="'PARENT CHILD x y z yaw pitch roll'",
                        help="static TF of the judge (repeatable).  Default: the ART base_link->imu/gps TFs "
                             "for a bag in the ART layout (IMU/GPS frames 'imu'/'gps', an sbg_driver INS, "
                             "the IMU's x axis up; said on stderr), none for any other bag")
    parser.add_argument("--scenario", default=None,
                        help="scenario name of every bag (default: the folder each bag is in)")
    parser.add_argument("--k", type=non_negative_int, default=None,
                        help="repeat index, for one bag (default: its position among the bags of its folder)")
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="seed of the simulated streams (default 0)")
    parser.add_argument("--truth", default="auto", help="ground-truth source in the bag (default: auto)")
    parser.add_argument("--msg-path", default=None, help="folder of extra .msg definitions")
    parser.add_argument("--imu-topic", default=TOPICS["imu"], help="real IMU topic (default %(default)s)")
    parser.add_argument("--gps-topic", default=TOPICS["gps"], help="real GPS topic (default %(default)s)")
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3")
    parser.add_argument("--ground-truth-rate", type=positive_float, default=None,
                        help="Hz of /ground_truth/odom (default 50)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="bags replayed at once in local processes (default: all cores)")
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="replay the bags on Ray: a cluster address, 'auto' (existing cluster) "
                             "or 'local'")
    parser.add_argument("--no-progress", action="store_true", help="no progress display")
    timing.add_arguments(parser, seed_help="--seed")
    start.add_arguments(parser, default_help="config, 0 s")


def recorded_judge(bags):
    """The judge of the study template ``import`` recorded for these bags (DIR/import.yaml), said in one
    line on stderr; None when they are no import.  Bags of imports with different templates: an error."""
    from ..errors import UserError
    from ..importer.vehicle import recorded_template
    from ..resources import config_path
    from ..studies.config import load_demo_config

    found = {}
    for bag in bags:
        recorded = recorded_template(bag.path)
        if recorded is not None:
            found.setdefault(recorded[0], (bag.path, recorded[1]))
    if not found:
        return None
    if len(found) > 1:
        raise UserError("the bags come from imports with different templates ("
                        + "; ".join(f"{path}: {name}" for name, (path, _r) in found.items())
                        + "); replay them separately or give --config, --navsat and --static-tf")
    name, (path, reason) = next(iter(found.items()))
    note("replay")(f"{path}: the judge of the template import recorded, config/studies/{name} ({reason}); "
                   "--config, --navsat or --static-tf choose another")
    return load_demo_config(config_path("studies", name)).judge


def run(args) -> int:
    from ..service.replay import ReplayRequest, replay_request

    request = ReplayRequest(
        bags=args.bags, replace=args.replace, out=args.out, config=args.config, navsat=args.navsat,
        static_tfs=args.static_tf or (), scenario=args.scenario, k=args.k, seed=args.seed,
        truth_source=args.truth, msg_path=args.msg_path, imu_topic=args.imu_topic, gps_topic=args.gps_topic,
        storage=args.storage, ground_truth_rate=args.ground_truth_rate, timing=timing.from_args(args),
        start=lambda judge: start.from_args(args, judge), workers=args.workers, ray_address=args.ray,
        progress=not args.no_progress)
    done = replay_request(request, recorded_judge=recorded_judge, notice=note("replay"))
    done.raise_on_failure()
    for outcome in done.runs:
        state = "already complete" if outcome.skipped else \
            ", ".join(f"{topic} {count}" for topic, count in sorted(outcome.messages.items()))
        print(f"{outcome.path}: {state}")
    return 0
