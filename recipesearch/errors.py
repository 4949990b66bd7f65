"""Errors that reach the user as one line and exit code 2 (bad input), never a traceback."""
from __future__ import annotations


class UserError(Exception):
    """Bad input from the user: the CLI prints ``error: <message>`` and exits with code 2."""

    exit_code = 2


class ConfigError(UserError):
    """A field of a recipe or search-space file is wrong.

    ``field`` is the dotted path of the field (``optimizer.lr``); ``source`` the file and
    ``line`` its line when known, so the message reads ``space.yaml:12: optimizer.lr: must be > 0``.
    """

    def __init__(self, field: str, message: str, source: str | None = None, line: int | None = None):
        self.field, self.message, self.source, self.line = field, message, source, line
        where = ""
        if source:
            where = f"{source}:{line}: " if line else f"{source}: "
        super().__init__(f"{where}{field}: {message}" if field else f"{where}{message}")


class DataNotFoundError(UserError):
    """A dataset is not on disk; the message says how to get it."""


class DivergenceError(RuntimeError):
    """Training loss became NaN or infinite: the run stops and is recorded as diverged."""

    def __init__(self, step: int, loss: float):
        self.step, self.loss = step, loss
        super().__init__(f"diverged: loss is {loss} at step {step}")


def one_line(exc: BaseException, where: bool = True) -> str:
    """``Type: first line of the message (at file.py:N)``: an exception as one line a user can read; ``where``
    names the innermost frame of its traceback (the tool's own file and line add nothing to a UserError)."""
    import os
    import traceback

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    frames = traceback.extract_tb(exc.__traceback__) if where else []
    at = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {text}{at}"
