"""The replay of a real bag, its one home: the real bag's own run and runs with simulated IMU and/or GPS
in place of the real streams, judged on the same window, named, seeded and recorded the same way.

- ``replay.real_bag``: the real bag to replay — ``ReplaySpec`` (how its runs are read, named, seeded and
  judged), ``Replacement`` (the simulated streams of a sim run) and its streams read once
  (``RealStreams``, ``read_real_streams``: the real /fix, /imu and the INS truth, ``truth.bag``);
- ``replay.offline``: the offline replay unit (``BagReplay``, one batch task per real bag; the
  ``replay`` command and the demo run it), and every step of it: simulating the replaced streams,
  judging, writing or scoring the runs, the judge-noise floor's extra judgements of the real streams;
- ``replay.read_ahead``: replay_node's rclpy-free logic — the offline replay's streams of one run read
  ahead as (receive time, topic, CDR bytes) records (``load_replay``), for evaluate.launch.py;
- ``ros/replay_node.py`` (not here: ``ros/`` is the only place importing rclpy) publishes those records
  on the bag player's clock.

Offline (Python >= 3.10, rosbags): the robot runs ``sensors.launch.py``, not a replay.
"""
