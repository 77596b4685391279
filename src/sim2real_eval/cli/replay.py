"""``sim2real-eval replay BAG|DIR... --replace imu=PRESET [--replace imu=OTHER] [--replace gps=…] --out OUT``.

Per real bag, writes ``OUT/real/real/<scenario>/<k>/`` (the bag judged as it is, once) and per variant
``OUT/sim/sim_imu-<preset>/<scenario>/<k>/`` (simulated stream(s) in place of the real ones); the
``--replace`` models are crossed per sensor (``replay.offline.parse_replace``).  A bag
``DIR/<scenario>/<run>`` is named by its folder (scenario) and its position among the bags there (k)
(``runs.name_real_bag``); a scenario folder or a folder of scenario folders replays every bag in it,
which is what a study needs (the scorer wants at least 2 runs per scenario and side).
The input bags are only read.  The work is ``service.replay_bags``.
"""
from __future__ import annotations

from pathlib import Path

from ..art import TOPICS  # standard library only: --help stays cheap
from ..runs import start, timing
from . import RUN_TREE, integer, note

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
    parser.add_argument("--k", type=integer, default=None,
                        help="repeat index, for one bag (default: its position among the bags of its folder)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated streams (default 0)")
    parser.add_argument("--truth", default="auto", help="ground-truth source in the bag (default: auto)")
    parser.add_argument("--msg-path", default=None, help="folder of extra .msg definitions")
    parser.add_argument("--imu-topic", default=TOPICS["imu"], help="real IMU topic (default %(default)s)")
    parser.add_argument("--gps-topic", default=TOPICS["gps"], help="real GPS topic (default %(default)s)")
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3")
    parser.add_argument("--ground-truth-rate", type=float, default=None,
                        help="Hz of /ground_truth/odom (default 50)")
    parser.add_argument("--workers", type=int, default=None,
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
    import dataclasses

    from ..art import EKF_CONFIG, NAVSAT_CONFIG
    from ..bags.records import DEFAULT_GROUND_TRUTH_RATE, check_ground_truth_rate
    from ..errors import UserError
    from ..judge.config import JudgeConfig
    from ..pipeline.study import parse_static_tf_text
    from ..replay.real_bag import parse_replace
    from ..resources import config_path, find_config
    from ..runs import RealBag, find_real_bags
    from ..service import plan_replays, replay_bags

    def config_file(value, default, option):
        # a bare file name is looked up in the installed config/ too (as in study files)
        path = find_config(value, option=option) if value else config_path(default)
        if not path.is_file():
            raise UserError(f"{option} {path}: file not found")
        return str(path.resolve())

    bags = find_real_bags(args.bags, scenario=args.scenario)
    if args.k is not None:
        if len(bags) != 1:
            raise UserError(f"--k names the repeat of one bag; {len(bags)} bags given")
        if args.k < 0:
            raise UserError("--k and --seed must be >= 0")
        bags = [RealBag(bags[0].path, bags[0].scenario, args.k)]
    tfs = tuple(parse_static_tf_text(t, f"--static-tf {t!r}") for t in args.static_tf or ())
    judge = JudgeConfig(config_file(args.config, EKF_CONFIG, "--config"),
                        config_file(args.navsat, NAVSAT_CONFIG, "--navsat"), tfs,
                        timing.from_args(args, timing.TimingModel()))
    recorded = None
    if args.config is None and args.navsat is None and not args.static_tf:
        recorded = recorded_judge(bags)
    if recorded is not None:
        judge = dataclasses.replace(recorded, timing=timing.from_args(args, timing.TimingModel()))
    judge = start.from_args(args, judge)
    if args.seed < 0:
        raise UserError("--k and --seed must be >= 0")
    rate = DEFAULT_GROUND_TRUTH_RATE if args.ground_truth_rate is None else args.ground_truth_rate
    if not rate > 0:
        raise UserError(f"--ground-truth-rate must be > 0, got {rate}")
    check_ground_truth_rate(rate, "--ground-truth-rate")
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be >= 1, got {args.workers}")
    sims = parse_replace(args.replace)
    tasks = plan_replays(bags, sims, judge, seed=args.seed, storage=args.storage, ground_truth_rate=rate,
                         truth_source=args.truth, msg_path=args.msg_path, imu_topic=args.imu_topic,
                         gps_topic=args.gps_topic,
                         static_tfs_by_layout=not args.static_tf and recorded is None)
    variants = ", ".join(sim.variant for sim in sims)
    if len(tasks) == 1 and args.ray is None:
        from rich.console import Console

        # Judged runs of a possibly long bag: show that work is going on.
        with Console(stderr=True).status(f"replaying {Path(bags[0].path).name}: real run + {variants}"):
            done = replay_bags(tasks, args.out, workers=1, progress=False, notice=note("replay"))
    else:
        done = replay_bags(tasks, args.out, workers=args.workers, ray_address=args.ray,
                           progress=not args.no_progress,
                           description=f"replaying {len(tasks)} real bags: real runs + {variants}",
                           notice=note("replay"))
    done.raise_on_failure()
    for outcome in done.runs:
        state = "already complete" if outcome.skipped else \
            ", ".join(f"{topic} {count}" for topic, count in sorted(outcome.messages.items()))
        print(f"{outcome.path}: {state}")
    return 0
