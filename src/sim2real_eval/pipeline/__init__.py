"""The offline run pipeline: one run, study files, the judge timing and start, and the batch runner (the
replay of real bags is ``sim2real_eval.replay``).

Kept light on purpose: importing ``sim2real_eval.pipeline`` (or ``.study`` / ``.run``) does not import
rosbags, scipy or ray; the heavy pieces are imported when a run actually executes.
"""
