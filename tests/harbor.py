"""Harbor's own ATIF models, in a Python 3.12 venv of their own (Harbor needs 3.12; the
project's tests run on 3.11): ``.ci/run`` makes it, a test validates a trajectory with it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

HARBOR_VENV = Path(os.environ.get("FENCECALL_HARBOR_VENV")
                   or Path.home() / ".cache" / "fencecall-harbor-venv")
PYTHON = HARBOR_VENV / "bin" / "python"

_CHECK = """
import json, sys
from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
trajectory = Trajectory.model_validate_json(open(sys.argv[1]).read())
validator = TrajectoryValidator()
if not validator.validate(sys.argv[1]):
    sys.exit("invalid: " + "; ".join(validator.errors))
print(trajectory.schema_version, len(trajectory.steps))
"""


def validate(path: Path) -> str:
    """What Harbor's models make of the trajectory at ``path`` (the test fails where they
    refuse it; it is skipped where the venv is missing)."""
    if not PYTHON.exists():
        pytest.skip(f"no Harbor venv at {HARBOR_VENV} (.ci/run makes it; or set "
                    "FENCECALL_HARBOR_VENV to a Python 3.12 venv with harbor installed)")
    done = subprocess.run([str(PYTHON), "-c", _CHECK, str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout.strip()
