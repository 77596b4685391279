"""ProcessSpec (node.launch_plan's plans) → launch / launch_ros actions; used by launch/*.launch.py."""
from __future__ import annotations

from typing import Dict, List, Tuple

from launch.actions import DeclareLaunchArgument, EmitEvent, ExecuteProcess, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from ..errors import UserError
from ..node.launch_plan import ProcessSpec


def declare(arguments: Dict[str, Tuple[str, str]]) -> List[DeclareLaunchArgument]:
    return [DeclareLaunchArgument(name, default_value=default, description=description)
            for name, (default, description) in arguments.items()]


def argument_values(context, arguments: Dict[str, Tuple[str, str]]) -> Dict[str, str]:
    return {name: LaunchConfiguration(name).perform(context) for name in arguments}


def action(spec: ProcessSpec):
    if spec.cmd:
        return ExecuteProcess(cmd=spec.cmd, name=spec.name, output="screen")
    return Node(package=spec.package, executable=spec.executable, name=spec.name, output="screen",
                parameters=spec.parameters, remappings=spec.remappings, arguments=spec.arguments)


def plan_or_fail(build, *args):
    """Run a launch_plan plan; a UserError becomes a RuntimeError whose text ros2 launch prints."""
    try:
        return build(*args)
    except UserError as exc:
        raise RuntimeError(str(exc)) from None


def shutdown_when_done(process) -> RegisterEventHandler:
    """Stop the whole launch when ``process`` (the bag player) exits: the recorder then closes."""
    return RegisterEventHandler(OnProcessExit(
        target_action=process,
        on_exit=[EmitEvent(event=Shutdown(reason=f"{process.name} finished"))]))
