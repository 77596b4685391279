"""The offline run pipeline: one run, study files, replay of real bags, and the batch runner.

Kept light on purpose: importing ``sim2real_eval.pipeline`` (or ``.study`` / ``.run``) does not import
rosbags, scipy or ray; the heavy pieces are imported when a run actually executes.
"""
