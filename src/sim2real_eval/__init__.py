"""sim2real_eval: measure the sim-to-real gap of simulated GPS and IMU.

The core (models, geodesy, scenarios, judge, bags, metrics, report) is ROS-free; ``sim2real_eval.ros``
is the only place that imports rclpy.
"""
__version__ = "0.1.0"
