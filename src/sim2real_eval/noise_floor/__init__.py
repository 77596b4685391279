"""The judge-noise floor, its one home: the VEPD that judge timing alone produces, with its spread.

- ``noise_floor.compute``: what it is — every pair of draws of the real runs (each judged with
  independent random judge timing) compared as a variant is compared with the real side (the
  threshold a VEPD must exceed to be above it is read by ``metrics.separation.threshold``, which decides
  with it: metrics does not import the floor, the floor builds on metrics);
- ``noise_floor.render``: how it is shown — statistics.json ``judge_noise_floor``, the tables.md
  section, the report.html paragraph.

The draws themselves are judgements of the real streams, made where the real bag is read: the replay
unit (``replay.offline.noise_floor_scores``, ``BagReplay(floor_draws=…)``) for the demo and
``replay``, and ``service.noise_floor_draws`` (the real bags named by the run.yaml files) for ``score``.
"""
