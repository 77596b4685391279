"""Without compilation (NUMBA_DISABLE_JIT=1) the judge's very same functions run as plain Python/numpy and
give what the compiled judge gives (a short ART run, in a child process: numba reads the variable at
import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_records
from sim2real_eval.resources import config_path

RUN = """
import json, sys
from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_records
from sim2real_eval.resources import config_path
records = art_like_records(duration=2.0, heading_rate=0.05, seed=3)
result = Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
               load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS).run(records)
f = result.filtered
json.dump({"stamp": f.stamp_ns.tolist(), "position": f.position.tolist(),
           "pose_covariance": f.pose_covariance.tolist(), "published": result.published}, sys.stdout)
"""


def test_plain_python_judge_matches_compiled():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    child = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    plain = json.loads(child.stdout)
    records = art_like_records(duration=2.0, heading_rate=0.05, seed=3)
    result = Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
                   load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS).run(records)
    assert plain["published"] == result.published > 0
    np.testing.assert_array_equal(plain["stamp"], result.filtered.stamp_ns)
    np.testing.assert_allclose(plain["position"], result.filtered.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(plain["pose_covariance"], result.filtered.pose_covariance, rtol=0, atol=1e-12)
