"""User-facing errors: one line naming the file/topic/field/parameter and what was expected."""
from __future__ import annotations


def one_line(text) -> str:
    """``text`` on one line: every line break (also \r, \x85, \u2028 …, which a YAML key or a file
    name can hold) becomes a space."""
    return " ".join(str(text).splitlines())


def exception_line(exc: BaseException) -> str:
    """What a library's exception says, for the end of a UserError: its message on one line (all
    whitespace runs made one space), at most 300 characters, or its type's name when it says nothing."""
    return (" ".join(str(exc).split()) or type(exc).__name__)[:300]


class UserError(Exception):
    """Bad input from the user.  The CLI prints ``sim2real-eval: error: <message>`` and exits 2."""

    exit_code = 2

    def __init__(self, message: str):
        # One line only: a traceback-free message a user can act on.
        super().__init__(one_line(message))


class DataWarning(UserWarning):
    """Something the results depend on went wrong but the work can go on (e.g. a GPS model diverged
    and its fixes are published as NO_FIX).  The CLI prints ``sim2real-eval <cmd>: warning: <message>``;
    a ROS node's log shows it as any Python warning."""
