"""Replay a real ART bag with simulated IMU and/or GPS, judged by robot_localization, recorded.

    ros2 launch sim2real_eval evaluate.launch.py bag:=/data/art/lot17/run_00 mode:=sim_imu

Every argument and its default: sim2real_eval.node.launch_plan.EVALUATE_ARGUMENTS (docs/ros.md).  The
argument → process/parameter/remap logic is node.launch_plan.evaluate_plan (tested without ROS).
Exit code 1 (one line) when a node fails or the run directory was not written.  The run's run.yaml
says ``complete: true`` only when the bag was played to its end with every process healthy; otherwise
``complete: false`` and the reason (``failure``), and ``sim2real-eval score`` refuses it.
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from sim2real_eval.node.launch_plan import EVALUATE_ARGUMENTS, evaluate_plan
from sim2real_eval.node.recording import RunCompletion
from sim2real_eval.ros import launch_actions as la


def _launch(context):
    plan = la.plan_or_fail(evaluate_plan, la.argument_values(context, EVALUATE_ARGUMENTS))
    player = la.action(plan.player)
    completion = RunCompletion(plan.output, player=plan.player.name)
    actions = [la.on_shutdown(completion)]
    actions += la.actions_for(plan.nodes, writes={"recorder_node": plan.output}, completion=completion)
    actions += [player, la.watch(plan.player, player, completion=completion)]
    return actions + ([la.shutdown_when_done(plan.player, player)] if plan.shutdown_when_done else [])


def generate_launch_description():
    return LaunchDescription(la.declare(EVALUATE_ARGUMENTS) + [OpaqueFunction(function=_launch)])
