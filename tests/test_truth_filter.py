"""The smoothing differentiator's filter, written in truth/bag.py instead of imported from scipy.signal
(whose import costs ~1.1 s CPU per process): the Butterworth coefficients, the step state, the
forward-backward pass, each against its equation and bit for bit against scipy.signal."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import butter, filtfilt, lfilter, lfilter_zi

from sim2real_eval.truth import bag
from sim2real_eval.truth.bag import butterworth2_lowpass, forward_backward, step_state, zero_phase_lowpass

REPO = Path(__file__).resolve().parents[1]


def textbook_butterworth2(normalised):
    """The bilinear transform of H(s) = ω²/(s² + √2·ω·s + ω²) with K = tan(π·normalised/2), by hand:
    b = K²/D·(1, 2, 1), a = (1, 2(K² - 1)/D, (1 - √2K + K²)/D), D = 1 + √2K + K²."""
    k = math.tan(math.pi * normalised / 2)
    d = 1 + math.sqrt(2) * k + k * k
    return (np.array([k * k, 2 * k * k, k * k]) / d,
            np.array([1.0, 2 * (k * k - 1) / d, (1 - math.sqrt(2) * k + k * k) / d]))


def test_coefficients_at_half_nyquist_by_hand():
    # K = tan(π/4) = 1: b₀ = 1/(2 + √2) = 1 - √2/2, a₁ = 0, a₂ = (2 - √2)/(2 + √2) = 3 - 2√2
    b, a = butterworth2_lowpass(0.5)
    b0 = 1 - math.sqrt(2) / 2
    np.testing.assert_allclose(b, [b0, 2 * b0, b0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(a, [1.0, 0.0, 3 - 2 * math.sqrt(2)], rtol=0, atol=1e-15)


@pytest.mark.parametrize("normalised", [0.01, 0.1, 0.3, 0.5, 0.8])
def test_coefficients_are_the_textbook_bilinear_butterworth(normalised):
    b, a = butterworth2_lowpass(normalised)
    tb, ta = textbook_butterworth2(normalised)
    np.testing.assert_allclose(b, tb, rtol=1e-13, atol=0)
    np.testing.assert_allclose(a, ta, rtol=1e-13, atol=1e-15)
    # unit gain at DC, -3 dB (|H|² = 1/2) at the cut-off, zero gain at Nyquist
    assert b.sum() / a.sum() == pytest.approx(1.0, rel=1e-12)
    z = np.exp(1j * np.pi * normalised)
    gain = np.polyval(b[::-1], 1 / z) / np.polyval(a[::-1], 1 / z)
    assert abs(gain) ** 2 == pytest.approx(0.5, rel=1e-12)
    assert abs(np.polyval(b[::-1], -1.0)) < 1e-15


def test_coefficients_are_scipys_bit_for_bit():
    rng = np.random.default_rng(7)
    for normalised in [0.8, 0.5, 1e-4, 0.999, *rng.uniform(1e-4, 0.999, 2000)]:
        b, a = butterworth2_lowpass(normalised)
        sb, sa = butter(2, normalised)
        assert np.array_equal(b, sb) and np.array_equal(a, sa), normalised


@pytest.mark.parametrize("normalised", [0.05, 0.2, 0.8])
def test_step_state_solves_the_steady_state_equations(normalised):
    b, a = butterworth2_lowpass(normalised)
    z = step_state(b, a)
    # by hand: z₁ = (r₁ + r₂)/(1 + a₁ + a₂), z₂ = r₂ - a₂z₁ with r = (b₁ - a₁b₀, b₂ - a₂b₀)
    r1, r2 = b[1] - a[1] * b[0], b[2] - a[2] * b[0]
    z1 = (r1 + r2) / (1 + a[1] + a[2])
    np.testing.assert_allclose(z, [z1, r2 - a[2] * z1], rtol=1e-12, atol=1e-15)
    assert np.array_equal(z, lfilter_zi(b, a))
    # started from x₀·z, a flat series at x₀ comes out flat at x₀ (DC gain 1): no start-up transient
    x0 = 3.7
    np.testing.assert_allclose(lfilter(b, a, np.full(50, x0), zi=z * x0)[0], x0, rtol=1e-13)


def python_and_compiled(monkeypatch):
    """The two ways forward_backward runs the recursion: plain Python, and compiled (numba) — as plain
    Python too where numba is absent or disabled."""
    yield "python"
    monkeypatch.setattr(bag, "COMPILE_FROM", 0)
    yield "compiled"


@pytest.mark.parametrize("shape", [(200,), (300, 3), (64, 2, 2), (1000, 6)])
def test_forward_backward_is_filtfilt_bit_for_bit(shape, monkeypatch):
    rng = np.random.default_rng(sum(shape))
    for _way in python_and_compiled(monkeypatch):
        for normalised in (0.8, 0.3, 0.02):
            b, a = butterworth2_lowpass(normalised)
            x = rng.normal(size=shape) * 10.0 ** rng.uniform(-3, 3)
            for padlen in (0, 1, 24, shape[0] // 2, shape[0] - 1):
                got = forward_backward(b, a, x, padlen)
                assert got.shape == x.shape
                assert np.array_equal(got, filtfilt(b, a, x, axis=0, padlen=padlen)), (normalised, padlen)


def test_the_long_series_are_compiled():
    if os.environ.get("NUMBA_DISABLE_JIT", "0") != "0":
        pytest.skip("numba disabled: the recursion runs as plain Python")
    pytest.importorskip("numba")
    compiled = bag._compiled_forward_backward()
    assert compiled is not None and compiled.py_func is bag._forward_backward_1d


def test_forward_backward_refuses_padding_as_long_as_the_series():
    b, a = butterworth2_lowpass(0.5)
    with pytest.raises(ValueError, match="padlen 10"):
        forward_backward(b, a, np.zeros(10), 10)


def scipy_zero_phase_lowpass(t, values, cutoff_hz):
    """zero_phase_lowpass as it was written with scipy.signal (butter + filtfilt)."""
    rate = 1.0 / float(np.median(np.diff(t)))
    normalised = min(cutoff_hz / (0.5 * rate), 0.8)
    b, a = butter(2, normalised)
    n = len(t)
    shape = (n,) + (1,) * (values.ndim - 1)
    line = values[:1] + (values[-1:] - values[:1]) * ((t - t[0]) / (t[-1] - t[0])).reshape(shape)
    padlen = min(n - 1, 9 + int(np.ceil(6.0 * rate / (normalised * 0.5 * rate))))
    return line + filtfilt(b, a, values - line, axis=0, padlen=padlen)


@pytest.mark.parametrize("n, rate, channels", [(7, 5.0, 3), (8, 100.0, ()), (40, 5.0, 4), (154, 5.0, 3),
                                               (2000, 100.0, 6), (3000, 200.0, ())])
def test_zero_phase_lowpass_is_the_scipy_formulation_bit_for_bit(n, rate, channels, monkeypatch):
    # n = 7, 8: the padding is n - 1 samples (shorter than six cut-off periods); 154 × 3 at 5 Hz: the
    # demo's real bags (sbg_gps, velocity); 2000 × 6 at 100 Hz: an imported IMU log
    rng = np.random.default_rng(n)
    t = 1.7e9 + np.cumsum(rng.uniform(0.9, 1.1, n)) / rate
    values = np.cumsum(rng.normal(size=(n,) + ((channels,) if channels else ())), axis=0)
    for _way in python_and_compiled(monkeypatch):
        for cutoff_hz in (5.0, 1.0):
            assert np.array_equal(zero_phase_lowpass(t, values, cutoff_hz),
                                  scipy_zero_phase_lowpass(t, values, cutoff_hz))


def test_six_samples_or_fewer_pass_through():
    values = np.random.default_rng(1).normal(size=(6, 3))
    out = zero_phase_lowpass(np.arange(6.0) / 5.0, values)
    assert np.array_equal(out, values) and out is not values


def test_importing_the_truth_readers_imports_neither_scipy_signal_nor_numba():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"),
                                                                    os.environ.get("PYTHONPATH")]))}
    code = ("import sys, sim2real_eval.truth.bag; "
            "print(sorted(m for m in ('scipy.signal', 'scipy.stats', 'numba') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
