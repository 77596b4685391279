"""report.html opens in headless Chromium, self-contained, with its tables and figures visible."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
from matplotlib import image
from test_metrics_reference import write_csv_study

from sim2real_eval.cli import main

WIDTH, HEIGHT = 1280, 2200


@pytest.mark.chromium
def test_report_renders_in_headless_chromium(chromium, tmp_path):
    data = write_csv_study(tmp_path / "data", {"gauss": 0.1, "walk": 0.05}, runs=3, duration=8.0)
    out = tmp_path / "rep"
    assert main(["score", "--csv-dir", str(data), "--out", str(out), "--bootstrap", "20",
                 "--permutations", "20", "--workers", "1"]) == 0
    # Moved away from its figures folder: the page must not need anything beside itself.
    page = tmp_path / "mailed" / "report.html"
    page.parent.mkdir()
    page.write_bytes((out / "report.html").read_bytes())
    shot = tmp_path / "screenshot.png"
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}",
         page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.stat().st_size > 50_000
    pixels = image.imread(shot)[..., :3]           # floats in [0, 1]
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 200
    # Text of the header and tables: dark pixels near the top.
    top = pixels[:600]
    assert (top.max(axis=2) < 0.3).mean() > 0.005
    # Figures: saturated colour (histograms, heat map) that the grey tables never produce.
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert (saturation[600:] > 0.35).mean() > 0.01
