"""Paths as the model sees them in an environment: a container's processes see the
workspace at the environment's working folder (``/app``), so ``/app/src/x.py`` written by
the model is the workspace's ``src/x.py`` to the file tools, which act on the host copy."""

from __future__ import annotations

from pathlib import PurePosixPath

from ..tool_context import ToolContext


def in_workspace(given: str, context: ToolContext) -> str:
    """``given`` relative to the workspace where it is an absolute path under the
    environment's working folder; as it is otherwise."""
    environment = context.environment
    path = PurePosixPath(given)
    if environment is None or not path.is_absolute():
        return given
    workdir = PurePosixPath(environment.workdir)
    return str(path.relative_to(workdir)) if path.is_relative_to(workdir) else given
