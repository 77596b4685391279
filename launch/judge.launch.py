"""robot_localization's ekf_node + navsat_transform_node with the project's (ART IROS-2024) configs.

    ros2 launch sim2real_eval judge.launch.py ekf_config:=/path/ekf.yaml use_sim_time:=true

Arguments: sim2real_eval.node.launch_plan.JUDGE_ARGUMENTS (docs/ros.md).
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from sim2real_eval.node.launch_plan import JUDGE_ARGUMENTS, judge_plan
from sim2real_eval.ros import launch_actions as la


def _launch(context):
    nodes = la.plan_or_fail(judge_plan, la.argument_values(context, JUDGE_ARGUMENTS))
    return la.actions_for(nodes)


def generate_launch_description():
    return LaunchDescription(la.declare(JUDGE_ARGUMENTS) + [OpaqueFunction(function=_launch)])
