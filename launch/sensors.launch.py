"""The noise nodes alone, beside a live simulator (Chrono::ROS, Gazebo) publishing ground truth.

    ros2 launch sim2real_eval sensors.launch.py truth_topic:=/vehicle/odom gps_model:=ch_rw seed:=7

Arguments: sim2real_eval.node.launch_plan.SENSORS_ARGUMENTS (docs/ros.md).  Exit code 1 (one line)
when a noise node fails (e.g. an unknown model).
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from sim2real_eval.node.launch_plan import SENSORS_ARGUMENTS, sensors_plan
from sim2real_eval.ros import launch_actions as la


def _launch(context):
    return la.actions_for(la.plan_or_fail(sensors_plan, la.argument_values(context, SENSORS_ARGUMENTS)))


def generate_launch_description():
    return LaunchDescription(la.declare(SENSORS_ARGUMENTS) + [OpaqueFunction(function=_launch)])
