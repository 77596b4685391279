"""``calibrate --truth`` at walking speed: is the GPS stamp lag observable, and is its standard error right?

Synthetic drives made with the package's own tools: a skid-steer-like rover (``scenarios.simulate``,
the bicycle model at 0.35, 1 or 3 m/s with slow steering swings and Gauss–Markov speed/steer
disturbances) and GPS receivers from ``config/sensors/gps`` with a stamp lag of 100 ms and ±10 ms
jitter injected:

- ``standalone``: ``car_gauss`` (a car's standalone receiver) with its white error replaced by a
  Gauss–Markov one of the size measured on the slow rover of issue 29 (0.6 m stationary std
  horizontal, τ 5 s, plus 0.1 m white);
- ``car_gauss``: the preset as shipped (white 0.15 m horizontal);
- ``robot_rtk_f9p``: the preset as shipped (RTK: 1.2 cm Gauss–Markov, τ 10 s, 3 mm white).

For each receiver and speed, ``--seeds`` drives (new rover path and new receiver error per seed) are
fitted with ``calibrate.drive.fit_gps_errors``; the table gives the mean estimate, its spread over the
seeds (the true standard error), the median standard error the fit states (``calibrate.lag``), how
often the lag was called observable, the median bound (2 SE) and the recovered error std against the
receiver's true stationary std.  ``write_csv_drive`` writes one such drive in the generic CSV layout
of ``sim2real-eval import csv`` (tests/test_calibrate_walking_speed.py runs the CLI on it).

Usage: python benchmarks/calibrate_walking_speed.py [--seeds 20] [--duration 600]
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

DATUM = (43.07, -89.4, 260.0)
LAG = 0.1           # s, injected stamp lag
JITTER = 0.01       # s, uniform half-width
SPEEDS = (0.35, 1.0, 3.0)
STANDALONE_TAU = 5.0
RECEIVERS = {
    "standalone": {"preset": "car_gauss", "position_noise": {
        "model": "gauss_markov", "form": "gz", "sigma": [0.1, 0.1, 0.2],
        # gz: stationary std = bias_sigma·√(τ/2) = 0.6 / 0.6 / 1.2 m
        "bias_sigma": [0.6 * math.sqrt(2 / STANDALONE_TAU)] * 2 + [1.2 * math.sqrt(2 / STANDALONE_TAU)],
        "tau": STANDALONE_TAU, "initial_bias": "stationary"}},
    "car_gauss": {"preset": "car_gauss"},
    "robot_rtk_f9p": {"preset": "robot_rtk_f9p"},
}
IMU = {"preset": "car_mems", "accelerometer": {"model": "chrono_drift", "mean": [0.05, -0.03, 0.02],
                                               "sigma": [0.0177] * 3, "b0": 0.0, "t_b": 10.0}}


YAW_RATE = 0.25        # rad/s, amplitude of the slow steering swing (at any speed)
YAW_RATE_NOISE = 0.035  # rad/s, Gauss–Markov disturbance of the yaw rate


def rover_scenario(speed: float, duration: float = 600.0) -> dict:
    """Scenario parameters (``scenarios.simulate``): 2 s still, then ``speed`` m/s with the yaw rate
    swinging ±0.25 rad/s over 40 s (heading swings of ±1.6 rad: turns of a few metres at walking speed)
    and slow Gauss–Markov speed (20 %) and yaw-rate (0.035 rad/s) disturbances; the bicycle model's
    steering angle is set for those yaw rates, ψ̇ = v/L·tan δ."""
    wheelbase = 0.5

    def steer(yaw_rate):
        return math.atan(yaw_rate * wheelbase / speed)

    return {"description": f"synthetic rover at {speed:g} m/s", "wheelbase": wheelbase, "rate": 100.0,
            "start_time": 10.0, "max_speed": 4.0, "max_accel": 0.5, "max_steer": 0.5, "max_steer_rate": 1.0,
            "phases": [{"duration": 2.0, "speed": 0.0},
                       {"duration": duration, "speed": speed, "steer": 0.0,
                        "steer_amplitude": steer(YAW_RATE), "steer_period": 40.0}],
            "variation": {"speed_noise_sigma": 0.2 * speed, "steer_noise_sigma": steer(YAW_RATE_NOISE),
                          "noise_tau": 5.0}}


def receiver(name: str, lag: float = LAG) -> dict:
    return dict(RECEIVERS[name], stamp_lag=lag, stamp_jitter=JITTER, datum=list(DATUM))


def true_std(name: str) -> np.ndarray:
    """Stationary std per ENU axis of the receiver's position error (m)."""
    from sim2real_eval.models import load_gps_model

    noise = load_gps_model(receiver(name)).parameters["position_noise"]
    white = np.broadcast_to(np.asarray(noise["sigma"], dtype=float), (3,))
    if noise["model"] == "gaussian":
        return np.array(white)
    stationary = np.asarray(noise["bias_sigma"], dtype=float) * math.sqrt(noise["tau"] / 2.0)
    return np.hypot(white, stationary)


def drive(speed: float, name: str, seed: int, duration: float = 600.0, lag: float = LAG):
    """(truth, GPS samples) of one synthetic drive."""
    from sim2real_eval import scenarios
    from sim2real_eval.models import load_gps_model, sensor_seed

    truth = scenarios.simulate(rover_scenario(speed, duration), "rover",
                               sensor_seed(seed, "scenario", "rover", 0))
    fixes = load_gps_model(receiver(name, lag), sensor_seed(seed, "gps")).sample(truth)
    return truth, fixes


def fit(truth, fixes):
    from sim2real_eval.calibrate.drive import fit_gps_errors
    from sim2real_eval.geodesy import geodetic_to_enu

    enu = geodetic_to_enu(fixes.latitude, fixes.longitude, fixes.altitude, DATUM)
    return fit_gps_errors(fixes.stamp_ns * 1e-9, enu, truth)


def _save(path: Path, header: str, *columns) -> None:
    np.savetxt(path, np.column_stack(columns), delimiter=",", header=header, comments="", fmt="%.12g")


def write_csv_drive(folder, speed: float, name: str, seed: int, duration: float = 600.0, lag: float = LAG,
                    truth_step: int = 5):
    """One drive in the generic CSV layout (gnss.csv, imu.csv, truth.csv: ENU at ``DATUM`` with
    attitude, every ``truth_step``-th sample of the 100 Hz truth); returns (truth, fixes)."""
    from sim2real_eval.models import load_imu_model, sensor_seed

    folder = Path(folder)
    folder.mkdir(parents=True)
    truth, fixes = drive(speed, name, seed, duration, lag)
    _save(folder / "gnss.csv", "t,lat,lon,alt", fixes.stamp_ns / 1e9, fixes.latitude, fixes.longitude,
          fixes.altitude)
    imu = load_imu_model(IMU, sensor_seed(seed, "imu")).sample(truth)
    _save(folder / "imu.csv", "t,ax,ay,az,wx,wy,wz", imu.stamp_ns / 1e9, imu.linear_acceleration,
          imu.angular_velocity)
    s = slice(None, None, truth_step)
    _save(folder / "truth.csv", "t,east,north,up,v_east,v_north,v_up,qx,qy,qz,qw", truth.t[s],
          truth.position[s], truth.velocity[s], truth.orientation[s])
    return truth, fixes


def table(seeds: int, duration: float) -> str:
    rows = ["| receiver | speed (m/s, median) | lag estimate (ms, mean) | spread over seeds (ms) | "
            "stated SE (ms, median) | observable | bound 2·SE (ms, median) | error std E/N/U (m): fitted, "
            "mean / true |",
            "|---|---|---|---|---|---|---|---|"]
    for name in RECEIVERS:
        true = true_std(name)
        for speed in SPEEDS:
            fits = [fit(*drive(speed, name, seed, duration)) for seed in range(seeds)]
            estimate = np.array([f.observability.estimate for f in fits]) * 1e3
            error = np.array([f.observability.standard_error for f in fits]) * 1e3
            observable = sum(f.observability.observable for f in fits)
            std = np.mean([f.stats.std for f in fits], axis=0)
            median_speed = np.median([f.speed_percentiles[1] for f in fits])
            rows.append(f"| {name} | {median_speed:.2f} | {estimate.mean():.1f} | "
                        f"{estimate.std(ddof=1):.1f} | {np.median(error):.1f} | {observable}/{seeds} | "
                        f"{2 * np.median(error):.0f} | "
                        + " / ".join(f"{a:.3g}" for a in std) + " vs " + " / ".join(f"{a:.3g}" for a in true)
                        + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--duration", type=float, default=600.0, help="s of driving per drive")
    args = parser.parse_args()
    print(f"Injected stamp lag {LAG * 1e3:.0f} ms, jitter ±{JITTER * 1e3:.0f} ms; {args.seeds} seeds of "
          f"{args.duration:g} s per row; fix period 100 ms (observable: SE < 25 ms).\n")
    print(table(args.seeds, args.duration))


if __name__ == "__main__":
    main()
