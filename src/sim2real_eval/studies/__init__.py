"""The top layer: the studies the commands run end to end — the demo (``demo.run_demo``) split by concern
(its configuration, real bags, plan, scoring, the paper's findings, CPU accounting, report files, printed
summary), its real sample (``real_sample``), its judge comparison (``judges``, ``--judges``) and the
VEPD-minimising search (``tune``)."""
