"""The offline run pipeline: one simulated run (``simulated_run``), study files (``study``), the batch
runner (``batch``, its tasks a ``RunTask``) and Ray (``ray_cluster``); the replay of real bags is
``sim2real_eval.replay``.

Kept light on purpose: importing ``sim2real_eval.pipeline`` does not import rosbags, scipy or ray
(``.study`` and ``.simulated_run`` load the judge and rosbags: they make runs).
"""
