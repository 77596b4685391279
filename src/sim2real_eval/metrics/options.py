"""Scoring options: every preprocessing choice of the VEPD metric, named, with the reference defaults.

The defaults ("reference" mode) reproduce the authors' computeEPD.py: 15 Hz common timeline, moving
average of window 2 on the estimate's speeds *and* times, linear interpolation, full two-sided |FFT|
with a 1e-10 floor inside the log, horizontal speed norm for both series.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import UserError
from ..limits import RESAMPLES, SCORE_RATE

SPECTRA = ("full", "one_sided", "welch")
# Highest common-timeline rate: the inputs are published at tens of Hz (ekf_node, INS); resampling
# them faster only interpolates, and 1e6 Hz would make billions of samples.  (limits.py, docs/limits.md)
MAX_RATE_HZ = SCORE_RATE.high

# Speed of one series from its velocity vector (x, y, z as stored in the message).
#   horizontal  sqrt(x^2 + y^2)                  (our definition, frame-independent about z)
#   x, y        the signed component
#   neg_x       -x                              (paper, sim estimate: -twist.linear.x)
#   abs_x, abs_y  |component|                   (paper, real: |SbgGpsVel north|, |twist.linear.y|)
#   world_x     x component after rotating an Odometry twist (child frame) into the pose frame
#               with the pose orientation         (paper, sim ground truth: world-X velocity)
SPEED_EXPRESSIONS = ("horizontal", "x", "y", "neg_x", "abs_x", "abs_y", "world_x")

# Named (estimate, truth) pairs.  "paper" picks paper-real or paper-sim by the run's side.
SPEED_PRESETS = {
    "horizontal": ("horizontal", "horizontal"),
    "paper-real": ("abs_y", "abs_x"),
    "paper-sim": ("neg_x", "world_x"),
}
SPEED_CHOICES = (*SPEED_PRESETS, "paper")


def resolve_speed(definition, side: str, where: str) -> tuple[str, str]:
    """(estimate expression, truth expression) for a preset name or a {estimate:, truth:} mapping."""
    if isinstance(definition, str):
        if definition == "paper":
            definition = "paper-real" if side == "real" else "paper-sim"
        if definition not in SPEED_PRESETS:
            raise UserError(f"{where}: unknown speed definition {definition!r}; expected one of "
                            f"{', '.join(SPEED_CHOICES)} or {{estimate: EXPR, truth: EXPR}}")
        return SPEED_PRESETS[definition]
    if isinstance(definition, dict) and set(definition) == {"estimate", "truth"}:
        pair = (definition["estimate"], definition["truth"])
        for expr in pair:
            if expr not in SPEED_EXPRESSIONS:
                raise UserError(f"{where}: unknown speed expression {expr!r}; expected one of "
                                f"{', '.join(SPEED_EXPRESSIONS)}")
        return pair
    raise UserError(f"{where}: speed must be a preset name or a mapping with keys estimate and truth, "
                    f"got {definition!r}")


@dataclass(frozen=True)
class ScoreOptions:
    """How runs are turned into numbers.  Units: Hz, samples, m/s."""

    rate_hz: float = 15.0            # common timeline t = 0, 1/rate, ... (np.arange)
    smoothing_window: int = 2        # moving average ("valid") on estimate speeds and times; 1 = off
    spectrum: str = "full"           # full two-sided |FFT| | one-sided |rFFT| | Welch PSD
    log_floor: float = 1e-10         # added inside the log of the geometric mean
    speed: str = "horizontal"        # default speed definition (see SPEED_PRESETS), per-entry overridable
    exclude_scenarios: tuple = ("rest",)
    bootstrap: int = 1000            # bootstrap resamples for the confidence intervals (0 = none)
    permutations: int = 1000         # label permutations for the p-values (0 = none)
    seed: int = 0
    warmup_s: float = 0.0            # seconds at the start of every run left out (the judge's start-up)
    extra: dict = field(default_factory=dict)

    def validate(self) -> ScoreOptions:
        if not self.rate_hz > 0:
            raise UserError(f"--rate: must be > 0 Hz, got {self.rate_hz}")
        if self.rate_hz > MAX_RATE_HZ:
            raise UserError(f"--rate: {self.rate_hz:g} Hz is above the {MAX_RATE_HZ:g} Hz limit (the scored "
                            "series are published at tens of Hz)")
        if self.smoothing_window < 1:
            raise UserError(f"--smoothing-window: must be >= 1, got {self.smoothing_window}")
        if self.spectrum not in SPECTRA:
            raise UserError(f"--spectrum: unknown {self.spectrum!r}; expected one of {', '.join(SPECTRA)}")
        if not self.log_floor >= 0:
            raise UserError(f"--log-floor: must be >= 0, got {self.log_floor}")
        if self.speed not in SPEED_CHOICES:
            raise UserError(f"--speed: unknown {self.speed!r}; expected one of {', '.join(SPEED_CHOICES)}")
        if self.bootstrap < 0 or self.permutations < 0:
            raise UserError("--bootstrap/--permutations: must be >= 0")
        RESAMPLES.check(self.bootstrap, "--bootstrap")
        RESAMPLES.check(self.permutations, "--permutations")
        if self.seed < 0:
            raise UserError(f"--seed: must be >= 0, got {self.seed}")
        if not (self.warmup_s >= 0 and self.warmup_s < float("inf")):
            raise UserError(f"--warmup: must be a number of seconds >= 0, got {self.warmup_s}")
        return self

    @property
    def is_reference(self) -> bool:
        return (self.rate_hz == 15.0 and self.smoothing_window == 2 and self.spectrum == "full"
                and self.log_floor == 1e-10)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["exclude_scenarios"] = list(self.exclude_scenarios)
        extra = out.pop("extra")
        out["mode"] = "reference" if self.is_reference else "custom"
        out.update(extra)
        return out
