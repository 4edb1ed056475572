"""The two ways fencecall starts limited and sandboxed processes, for tests to run both."""

from __future__ import annotations

import pytest

from fencecall.sandbox import _launch


@pytest.fixture(params=["launcher", "util-linux"])
def launch_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``launcher``: fencecall-launch joins groups, sets rlimits, enters and holds namespaces
    (skipped where the build made none); ``util-linux``: it is absent, and sh, prlimit,
    nsenter and the bwrap holder do it, as they must alike."""
    if request.param == "util-linux":
        monkeypatch.setattr(_launch, "PROGRAM", None)
    elif _launch.launcher() is None:
        pytest.skip("fencecall-launch was not built here")
    return str(request.param)
