"""The noise section of a sensor model's YAML → a ``models.noise`` process: the model names each
channel accepts (``CHANNEL_MODELS``, ``POSITION_MODELS``), their keys, defaults and checks (one line
naming the file and key on bad input), and the paper random walk's stability warning.

Robot-side (Python 3.8, numpy + PyYAML).
"""
from __future__ import annotations

import math
import warnings
from typing import Dict, Sequence

from ..errors import DataWarning
from ..yamlio import Section
from .noise import (
    AirSimNoise,
    ChronoDriftNoise,
    ChronoRandomWalkNoise,
    GaussianNoise,
    GaussMarkovNoise,
    GzGaussianNoise,
    MavsNoise,
    NoiseProcess,
    PaperRandomWalkNoise,
)

MAX_NOISE_RATE_HZ = 10_000.0  # sub-step rate of the Chrono random walk

CHANNEL_MODELS = ("none", "gaussian", "chrono_drift", "airsim", "mavs", "gauss_markov", "gz_gaussian")
POSITION_MODELS = ("none", "gaussian", "random_walk", "gauss_markov", "gz_gaussian")
GZ_KEYS = ("mean", "stddev", "bias_mean", "bias_stddev", "dynamic_bias_stddev",
           "dynamic_bias_correlation_time", "precision")


def build_gz_gaussian(sec: Section, seq) -> GzGaussianNoise:
    """``model: gz_gaussian``: the SDF noise element's keys, each a number or 3 per-axis values."""
    sec.unknown_keys(("model", "shared_xy") + GZ_KEYS)
    values = {key: sec.vector(key, 3, [0.0] * 3, nonnegative=key not in ("mean", "bias_mean"))
              for key in GZ_KEYS}
    shared = sec.boolean("shared_xy", False)
    if shared:
        for key in GZ_KEYS:
            if values[key][1] != values[key][0]:
                raise sec.error(key, f"shared_xy: x and y are one gz noise model, so their values must be "
                                     f"equal, got {values[key][0]:g} and {values[key][1]:g}")
    return GzGaussianNoise(shared_xy=shared, seq=seq, **values)


def build_noise(
    sec: Section, seq, rate: float, allowed: Sequence[str], defaults: Dict = None
) -> NoiseProcess:
    """A noise process from a YAML mapping ``{model: …, parameters…}``; errors name file and key.

    ``defaults`` fills parameters missing from the mapping (e.g. MAVS per-sensor defaults).
    """
    model = sec.string("model", "none", choices=allowed)
    if defaults:
        sec = Section({**defaults, **sec.data}, sec.source, sec.prefix)
    if model == "none":
        sec.unknown_keys(["model"])
        return NoiseProcess()
    if model == "gaussian":
        sec.unknown_keys(["model", "sigma", "mean"])
        return GaussianNoise(
            sec.vector("sigma", 3, required=True, nonnegative=True), sec.vector("mean", 3, [0.0] * 3), seq
        )
    if model == "chrono_drift":
        sec.unknown_keys(["model", "sigma", "mean", "b0", "t_b", "bias_mean"])
        return ChronoDriftNoise(
            sec.vector("sigma", 3, required=True, nonnegative=True),
            sec.vector("mean", 3, [0.0] * 3),
            sec.number("b0", required=True, nonnegative=True),
            sec.number("t_b", required=True, positive=True),
            rate,
            sec.vector("bias_mean", 3, [0.0] * 3),
            seq,
        )
    if model == "airsim":
        sec.unknown_keys(["model", "noise_density", "bias_stability", "tau"])
        return AirSimNoise(
            sec.vector("noise_density", 3, required=True, nonnegative=True),
            sec.vector("bias_stability", 3, required=True, nonnegative=True),
            sec.number("tau", required=True, positive=True),
            seq,
        )
    if model == "mavs":
        keys = [
            "measurement_range",
            "resolution",
            "constant_bias",
            "noise_density",
            "bias_instability",
            "axis_misalignment",
            "random_walk",
            "temperature_bias",
            "temperature_scale_factor",
            "temperature",
        ]
        sec.unknown_keys(["model"] + keys)
        return MavsNoise(
            sec.number("measurement_range", required=True, positive=True),
            sec.number("resolution", required=True, nonnegative=True),
            sec.vector("constant_bias", 3, required=True),
            sec.vector("noise_density", 3, required=True, nonnegative=True),
            sec.vector("bias_instability", 3, [0.0] * 3, nonnegative=True),
            sec.vector("axis_misalignment", 3, [0.0] * 3),
            sec.vector("random_walk", 3, [0.0] * 3, nonnegative=True),
            sec.vector("temperature_bias", 3, [0.0] * 3),
            sec.vector("temperature_scale_factor", 3, [0.0] * 3),
            sec.number("temperature", 25.0),
            rate,
            seq,
        )
    if model == "gz_gaussian":
        return build_gz_gaussian(sec, seq)
    if model == "gauss_markov":
        sec.unknown_keys(["model", "form", "sigma", "offset", "bias_sigma", "tau", "initial_bias"])
        initial = sec.data.get("initial_bias")
        if isinstance(initial, str):
            initial = sec.string("initial_bias", choices=("stationary",))
        else:
            initial = sec.vector("initial_bias", 3, [0.0] * 3)
        return GaussMarkovNoise(
            sec.string("form", "gz", choices=("gz", "hector")),
            sec.vector("sigma", 3, [0.0] * 3, nonnegative=True),
            sec.vector("offset", 3, [0.0] * 3),
            sec.vector("bias_sigma", 3, required=True, nonnegative=True),
            sec.number("tau", required=True, positive=True),
            initial,
            seq,
            rate,
        )
    # random_walk (GPS position error)
    formulation = sec.string("formulation", "chrono", choices=("chrono", "paper"))
    if formulation == "chrono":
        sec.unknown_keys(["model", "formulation", "sigma", "noise_rate", "v_max", "a_max", "mean_gain"])
        noise_rate = sec.number("noise_rate", 100.0, positive=True)
        if noise_rate > MAX_NOISE_RATE_HZ:
            raise sec.error("noise_rate", f"{noise_rate:g} Hz is above the {MAX_NOISE_RATE_HZ:g} Hz limit "
                                          "(each fix integrates noise_rate/rate sub-steps; Chrono's is 100)")
        return ChronoRandomWalkNoise(
            sec.number("sigma", required=True, nonnegative=True),
            noise_rate,
            sec.number("v_max", required=True, positive=True),
            sec.number("a_max", required=True, positive=True),
            sec.number("mean_gain", 0.2, nonnegative=True),
            seq,
        )
    sec.unknown_keys(["model", "formulation", "sigma_a", "p_max", "integration"])
    sigma_a = sec.number("sigma_a", required=True, nonnegative=True)
    p_max = sec.number("p_max", required=True, positive=True)
    integration = sec.string("integration", "kinematic", choices=("kinematic", "unit_step"))
    check_paper_random_walk(sec, p_max, integration, rate)
    return PaperRandomWalkNoise(sigma_a, p_max, integration, seq)


# The paper's random walk is unstable as discretised (PaperRandomWalkNoise.growth_per_sample).  A
# growth that doubles the error within a run is refused or announced; fixes that went past any GNSS
# error are marked NO_FIX by the GPS model (gps.DIVERGED_ERROR_M).
UNSTABLE_HORIZON_S = 3600.0  # warn when the error grows e-fold faster than this (no run is longer)
# A position error beyond this is no GNSS fix (even a standalone receiver with poor geometry stays
# within a few km): the noise process has diverged.
DIVERGED_POSITION_ERROR_M = 10_000.0


def check_paper_random_walk(sec: Section, p_max: float, integration: str, rate: float) -> None:
    """unit_step with p_max < 0.25 m: refused (the error grows ×ρ per fix: non-finite within a
    minute); kinematic: always unstable, a DataWarning gives its e-folding time when under an hour."""
    growth = PaperRandomWalkNoise.growth_per_sample(p_max, integration, 1.0 / rate)
    if growth <= 1.0 + 1e-6:  # 1 ± rounding at the unit_step limit (a double eigenvalue −1)
        return
    if integration == "unit_step":
        raise sec.error("p_max", f"{p_max:g} m makes the unit_step random walk diverge (its error grows "
                                 f"x{growth:.3g} per fix); unit_step needs p_max >= 0.25 m")
    efold_s = (1.0 / rate) / math.log(growth)
    if efold_s < UNSTABLE_HORIZON_S:
        warnings.warn(f"{sec.source}: {sec.prefix or 'position_noise'}: the paper's kinematic random walk "
                      f"with p_max {p_max:g} m at {rate:g} Hz is unstable: its error grows e-fold every "
                      f"{efold_s:.3g} s; fixes whose error passes {DIVERGED_POSITION_ERROR_M:g} m will be "
                      "published as NO_FIX",
                      DataWarning, stacklevel=2)
