"""User-facing errors: one line naming the file/topic/field/parameter and what was expected."""
from __future__ import annotations


class UserError(Exception):
    """Bad input from the user.  The CLI prints ``sim2real-eval: error: <message>`` and exits 2."""

    exit_code = 2

    def __init__(self, message: str):
        # One line only: a traceback-free message a user can act on.
        super().__init__(" ".join(str(message).split("\n")))


class DataWarning(UserWarning):
    """Something the results depend on went wrong but the work can go on (e.g. a GPS model diverged
    and its fixes are published as NO_FIX).  The CLI prints ``sim2real-eval <cmd>: warning: <message>``;
    a ROS node's log shows it as any Python warning."""
