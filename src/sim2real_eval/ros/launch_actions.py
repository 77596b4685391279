"""ProcessSpec (node.launch_plan's plans) → launch / launch_ros actions; used by launch/*.launch.py.

Exit codes: Humble's ``ros2 launch`` returns 0 unless an exception was raised while the launch ran
(launch 1.0.x ``LaunchService.run_async``: then it logs "Caught exception in launch", shuts down and
returns 1).  ``watch`` raises such an exception when a process fails (``ProcessSpec.must_succeed``:
any non-zero exit; others: a non-zero exit while the launch is not shutting down), and
``evaluate.launch.py`` also when the recorder exits without having written its run directory.
There, a ``node.recording.RunCompletion`` hears every exit, failure and the shutdown, and marks the
recorded run complete or incomplete (run.yaml) once the recorder has exited.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from launch import LaunchContext
from launch.actions import DeclareLaunchArgument, EmitEvent, ExecuteProcess, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnShutdown
from launch.events import Shutdown
from launch.events.process import ProcessExited
from launch.events.shutdown import Shutdown as ShutdownEvent
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from ..errors import UserError
from ..node.launch_plan import ProcessSpec, check_arguments
from ..node.recording import RunCompletion


class LaunchFailure(RuntimeError):
    """A failed process or a missing output: ros2 launch prints it and exits 1."""


def declare(arguments: Dict[str, Tuple[str, str]]) -> List[DeclareLaunchArgument]:
    return [DeclareLaunchArgument(name, default_value=default, description=description)
            for name, (default, description) in arguments.items()]


def argument_values(context: LaunchContext, arguments: Dict[str, Tuple[str, str]]) -> Dict[str, str]:
    """The declared arguments' values; command-line arguments the file does not declare are refused
    (ros2 launch would drop them silently) when this file is the one named on the command line."""
    launch_file = context.get_locals_as_dict().get("current_launch_file_path", "")
    try:
        check_arguments(launch_file, context.argv, list(arguments), sys.argv)
    except UserError as exc:
        raise LaunchFailure(str(exc)) from None
    return {name: LaunchConfiguration(name).perform(context) for name in arguments}


def action(spec: ProcessSpec):
    if spec.cmd:
        return ExecuteProcess(cmd=spec.cmd, name=spec.name, output="screen")
    return Node(package=spec.package, executable=spec.executable, name=spec.name, output="screen",
                parameters=spec.parameters, remappings=spec.remappings, arguments=spec.arguments)


def plan_or_fail(build, *args):
    """Run a launch_plan plan; a UserError becomes an exception whose text ros2 launch prints."""
    try:
        return build(*args)
    except UserError as exc:
        raise LaunchFailure(str(exc)) from None


def watch(spec: ProcessSpec, process, writes: Optional[str] = None,
          completion: Optional[RunCompletion] = None) -> RegisterEventHandler:
    """Fail the launch (exit code 1, one line naming the process) when ``process`` fails, or when
    it exits without ``writes`` existing (the recorder's run directory); tell ``completion``."""
    def on_exit(event: ProcessExited, context: LaunchContext):
        code = event.returncode
        if completion is not None:
            completion.exited(spec.name, code, context.is_shutdown)
        failure = None
        if code != 0 and (spec.must_succeed or not context.is_shutdown):
            failure = f"{spec.name} exited with code {code}"
        elif writes is not None and not Path(writes).is_dir():
            failure = f"{spec.name} exited without writing {writes}"
        if failure is not None:
            if completion is not None:
                completion.failed(failure)
            raise LaunchFailure(failure)
        return None

    return RegisterEventHandler(OnProcessExit(target_action=process, on_exit=on_exit))


def shutdown_when_done(spec: ProcessSpec, process) -> RegisterEventHandler:
    """Stop the whole launch when ``process`` (the bag player) exits: the recorder then closes."""
    return RegisterEventHandler(OnProcessExit(
        target_action=process, on_exit=[EmitEvent(event=Shutdown(reason=f"{spec.name} finished"))]))


def on_shutdown(completion: RunCompletion) -> RegisterEventHandler:
    """Tell ``completion`` why the launch shuts down (Ctrl-C, an exception, the player finished…)."""
    def record(event: ShutdownEvent, _context: LaunchContext):
        completion.shutdown(event.reason)
        return None

    return RegisterEventHandler(OnShutdown(on_shutdown=record))


def actions_for(specs: List[ProcessSpec], writes: Optional[Dict[str, str]] = None,
                completion: Optional[RunCompletion] = None) -> List:
    """Each spec's action followed by its exit watch."""
    out = []
    for spec in specs:
        process = action(spec)
        out += [process, watch(spec, process, (writes or {}).get(spec.name), completion)]
    return out
