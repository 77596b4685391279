"""The judge's timing model (issue 12): where in their periods the embedded robot_localization's timers
tick, and how late a tick sees its messages.

In ROS the ekf_node and navsat_transform_node timers start at an arbitrary phase, and a tick runs
some milliseconds after its nominal time; real runs of the same bag differ by that alone (speed RMS
0.03-0.13 m/s, E by about ±15 %, and 18-25 % of /odometry/gps lost when navsat ticks while fixes
arrive).  The embedded judge ticks at ``k·period + phase`` and a tick at nominal time T sees the
messages received up to T + latency (``judge.JudgeTiming``).  A run's values come from a named model:

- ``fixed``: the phases and the latency as given; 0 / 0 / 0 (the default) is the judge's historical
  behaviour, bit for bit (ticks on exact multiples of the periods, zero latency);
- ``random``: each timer's phase uniform over its period, the latency uniform over
  [0, ``LATENCY_HIGH_NS``) — the distribution fitted to the real Humble runs (below).

Values are drawn per run from ``models.sensor_seed(seed, "timing", scenario, k)``: *no variant* — common
random numbers, so the real run and every simulated variant of one bag (replay) or of one
(scenario, k) (simulate) are judged with the same timing, and a variant's score is not moved by a
timing draw its real counterpart did not get.

The latency distribution (``tests/judge_timing_peer.py`` on ``../shared/peer``; docs/judge.md,
"Timing"): per tick, the EKF timer's execution minus its nominal time in the 8 Humble runs of
evaluate.launch.py (8 636 ticks) is uniform on [0, 25.6 ms) (Kolmogorov-Smirnov distance 0.072; an
exponential 0.204, a gamma 0.188).  The mechanism makes it exact: ``ros2 bag play --clock`` publishes
/clock at 40 Hz, and a sim-time timer fires at the first clock update at or after its nominal time,
so the delay is uniform over one clock period, 25 ms.

Importing this module is cheap (standard library); numpy loads when values are drawn.  The judge's
``JudgeTiming`` of a run's values is ``judge.config.judge_timing``'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Tuple

from ..errors import UserError
from ..limits import TICK_LATENCY
from .record import TIMING_MODELS as MODES

LATENCY_HIGH_NS = 25_000_000  # random: tick latency ~ U(0, 25 ms), the period of `ros2 bag play --clock`
SEED_KEY = "timing"


class RunTiming(NamedTuple):
    """The timing one run is judged with (ns): what ``judge.JudgeTiming`` takes."""

    ekf_phase_ns: int = 0
    navsat_phase_ns: int = 0
    tick_latency_ns: int = 0

    @property
    def is_default(self) -> bool:
        return self == RunTiming()


def _ms(value_ns: int) -> str:
    return f"{value_ns / 1e6:g} ms"


@dataclass(frozen=True)
class TimingModel:
    """How a run's judge timing is chosen (see the module docstring).  ``seed`` (random only): the
    seed of the timing draws; None = the run's own seed (study ``seed``, ``replay --seed``)."""

    mode: str = "fixed"
    ekf_phase_ns: int = 0
    navsat_phase_ns: int = 0
    tick_latency_ns: int = 0
    seed: Optional[int] = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise UserError(f"--timing {self.mode!r}: expected one of {', '.join(MODES)}")
        for name in ("ekf_phase_ns", "navsat_phase_ns", "tick_latency_ns"):
            if getattr(self, name) < 0:
                raise UserError(f"timing: {name[:-3]} must be >= 0, got {_ms(getattr(self, name))}")
        TICK_LATENCY.check(self.tick_latency_ns / 1e6, "--tick-latency-ms / tick_latency_ms")
        if self.mode == "random" and (self.ekf_phase_ns or self.navsat_phase_ns or self.tick_latency_ns):
            raise UserError("timing: random draws the phases and the latency; do not give them too")
        if self.mode == "fixed" and self.seed is not None:
            raise UserError("timing: a seed only applies to --timing random")
        if self.seed is not None and self.seed < 0:
            raise UserError(f"--timing-seed must be >= 0, got {self.seed}")

    @property
    def is_default(self) -> bool:
        """Fixed 0 / 0 / 0: the judge's historical timing (run.yaml then has no ``timing`` key)."""
        return self == TimingModel()

    # ------------------------------------------------------------------------------- parsing
    @classmethod
    def from_options(cls, mode: Optional[str] = None, phases_ms: Optional[str] = None,
                     latency_ms: Optional[float] = None, seed: Optional[int] = None) -> TimingModel:
        """From the command-line options ``--timing``, ``--timer-phase-ms EKF[,NAVSAT]`` (NAVSAT
        defaults to EKF's), ``--tick-latency-ms`` and ``--timing-seed``."""
        mode = mode or "fixed"
        if mode == "random" and (phases_ms is not None or latency_ms is not None):
            raise UserError("--timing random draws the phases and the latency: drop --timer-phase-ms / "
                            "--tick-latency-ms (or use --timing fixed)")
        if mode == "fixed" and seed is not None:
            raise UserError("--timing-seed only applies to --timing random")
        ekf = navsat = 0
        if phases_ms is not None:
            parts = [p.strip() for p in str(phases_ms).split(",")]
            if len(parts) not in (1, 2):
                raise UserError(f"--timer-phase-ms {phases_ms!r}: expected EKF or EKF,NAVSAT (ms)")
            values = [_number(p, f"--timer-phase-ms {phases_ms!r}") for p in parts]
            ekf = _to_ns(values[0])
            navsat = _to_ns(values[-1])
        latency = 0
        if latency_ms is not None:
            latency_ms = TICK_LATENCY.check(_number(latency_ms, f"--tick-latency-ms {latency_ms!r}"),
                                            "--tick-latency-ms")
            latency = _to_ns(latency_ms)
        return cls(mode, ekf, navsat, latency, seed)

    @classmethod
    def from_section(cls, section) -> TimingModel:
        """From a study's ``judge: timing:`` mapping (a ``yamlio.Section``)::

            timing: {model: fixed, ekf_phase_ms: 12, navsat_phase_ms: 9, tick_latency_ms: 0}
            timing: {model: random, seed: 3}          # seed optional: the study's seed
        """
        section.unknown_keys(("model", "ekf_phase_ms", "navsat_phase_ms", "tick_latency_ms", "seed"))
        mode = section.string("model", "fixed", choices=MODES)
        given = [key for key in ("ekf_phase_ms", "navsat_phase_ms", "tick_latency_ms") if section.has(key)]
        if mode == "random" and given:
            raise section.error(given[0], "model random draws the phases and the latency: remove it")
        if mode == "fixed" and section.has("seed"):
            raise section.error("seed", "only model random has a seed")
        TICK_LATENCY.check(section.number("tick_latency_ms", 0.0, nonnegative=True),
                           f"{section.source}: {section.name('tick_latency_ms')}")
        values = {key: _to_ns(section.number(key, 0.0, nonnegative=True)) for key in
                  ("ekf_phase_ms", "navsat_phase_ms", "tick_latency_ms")}
        return cls(mode, values["ekf_phase_ms"], values["navsat_phase_ms"], values["tick_latency_ms"],
                   section.integer("seed", minimum=0))

    # ---------------------------------------------------------------------------- per run
    def run_timing(self, periods: Tuple[int, Optional[int]], seed: int, *keys) -> RunTiming:
        """The values of one run.  ``periods``: (EKF, navsat) timer periods in ns (navsat None when the
        judge runs no navsat); ``seed`` and ``keys``: the run's seed and its keys without the variant
        (``scenario, k``), so every variant of a run draws the same timing."""
        ekf_period, navsat_period = periods
        if self.mode == "fixed":
            for name, value, period, timer in (("EKF", self.ekf_phase_ns, ekf_period, "ekf"),
                                               ("navsat", self.navsat_phase_ns, navsat_period, "navsat")):
                if period is not None and value >= period:
                    raise UserError(f"timer phase of the {name} timer: {_ms(value)} is not inside its period "
                                    f"[0, {_ms(period)}) ({timer} frequency {1e9 / period:g} Hz)")
            navsat = self.navsat_phase_ns if navsat_period is not None else 0
            return RunTiming(self.ekf_phase_ns, navsat, self.tick_latency_ns)
        import numpy as np

        from ..models import sensor_seed

        rng = np.random.default_rng(sensor_seed(seed if self.seed is None else self.seed, SEED_KEY, *keys))
        ekf = int(rng.integers(0, ekf_period))
        navsat = int(rng.integers(0, navsat_period)) if navsat_period is not None else 0
        latency = int(rng.integers(0, LATENCY_HIGH_NS))
        return RunTiming(ekf, navsat, latency)

    def record(self, values: RunTiming, seed: Optional[int] = None) -> Optional[dict]:
        """run.yaml / summary.json ``timing``: the model and the run's values (ns); None for the default
        model (run.yaml written before the timing model had no ``timing`` key and means exactly that)."""
        if self.is_default:
            return None
        out: dict = {"model": self.mode}
        if self.mode == "random":
            out["seed"] = int(seed if self.seed is None else self.seed)
            out["latency"] = f"uniform(0, {_ms(LATENCY_HIGH_NS)})"
        out.update(ekf_phase_ns=int(values.ekf_phase_ns), navsat_phase_ns=int(values.navsat_phase_ns),
                   tick_latency_ns=int(values.tick_latency_ns))
        return out

    def describe(self) -> str:
        if self.mode == "random":
            seed = "the run's seed" if self.seed is None else f"seed {self.seed}"
            return f"random timing ({seed})"
        return (f"timer phases {_ms(self.ekf_phase_ns)} (EKF), {_ms(self.navsat_phase_ns)} (navsat), "
                f"tick latency {_ms(self.tick_latency_ns)}")


def _number(text: Any, where: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UserError(f"{where}: not a number") from None
    if not value >= 0 or value == float("inf"):
        raise UserError(f"{where}: must be a finite number >= 0")
    return value


def _to_ns(milliseconds: float) -> int:
    return int(round(float(milliseconds) * 1e6))


# ------------------------------------------------------------------------------ command line
def add_arguments(parser, seed_help: str = "the run's seed") -> None:
    """``--timing``, ``--timer-phase-ms``, ``--tick-latency-ms``, ``--timing-seed`` (judge, replay,
    simulate, demo)."""
    group = parser.add_argument_group("judge timing (docs/judge.md, 'Timing')")
    group.add_argument("--timing", choices=MODES, default=None,
                       help="fixed: the phases and latency given (default 0, 0, 0: ticks on exact multiples "
                            "of the periods); random: phases uniform over each timer's period, latency "
                            "~ U(0, 25 ms), drawn per run (the same for every variant of a run)")
    group.add_argument("--timer-phase-ms", metavar="EKF[,NAVSAT]", default=None,
                       help="fixed: where in its period each timer ticks, ms (NAVSAT defaults to EKF)")
    group.add_argument("--tick-latency-ms", metavar="L", type=float, default=None,
                       help="fixed: a tick at nominal time T sees the messages received up to T + L")
    group.add_argument("--timing-seed", metavar="S", type=int, default=None,
                       help=f"random: seed of the timing draws (default: {seed_help})")


def from_args(args, default: Optional[TimingModel] = None) -> Optional[TimingModel]:
    """The model of the command-line options; ``default`` (e.g. the study file's) when none is given."""
    given = (args.timing, args.timer_phase_ms, args.tick_latency_ms, args.timing_seed)
    if all(value is None for value in given):
        return default
    return TimingModel.from_options(args.timing, args.timer_phase_ms, args.tick_latency_ms, args.timing_seed)


__all__ = ["LATENCY_HIGH_NS", "MODES", "RunTiming", "TimingModel", "add_arguments", "from_args"]
