"""The rclpy-free logic of the ROS 2 nodes and launch files (robot-side: Python 3.8, numpy + PyYAML).

The nodes in ``sim2real_eval.ros`` are thin: they convert messages to arrays, call into these
modules and convert arrays back.  One module per concern:

- ``ticks``: sensor periods in integer ns, exact ticks on the data clock, throttled warnings;
- ``sensor_stream``: live ground truth in (``truth.stream``), sensor samples out on exact ticks
  (``SensorStream``);
- ``params``: node parameters → validated configs (noise nodes, ground_truth_node, recorder);
- ``sbg_truth``: sbg_driver messages → ground-truth odometry (ground_truth_node);
- ``launch_plan``: launch arguments → processes, parameters and remaps.

Static TF strings are parsed by ``sim2real_eval.static_tf`` (shared with the offline judge).
"""
