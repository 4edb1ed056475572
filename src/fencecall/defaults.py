"""The defaults of the settings that more than one declaration carries, each written once.

The configuration (:class:`fencecall.config.Config`), a run's resolved settings
(:class:`fencecall.assembly.RunSettings`), the agent's (:class:`fencecall.agent.AgentSettings`),
a batch's options and the command line's help read them here, so that a default changes in
one place and the layers cannot drift apart. A default only the configuration file has stays
with its :class:`~fencecall.config.Config` field. This module imports nothing, so every layer
may read it (the tools' job manager and ``fencecall --help`` too).
"""

from __future__ import annotations

from typing import Final

MAX_STEPS: Final = 30
"""Model replies per prompt before the run stops."""
MAX_TOKENS: Final = 4096
"""Output tokens asked of the model per reply (at most a share of a known window)."""
REQUEST_TIMEOUT: Final = 600.0
"""Seconds to wait for the model's server."""
RETRIES: Final = 2
"""Tries again after a failed request or a broken reply stream."""
FEEDBACK_LIMIT: Final = 3
"""Replies in a row that ran nothing despite feedback before the run gives up."""
COMPACTION: Final = "summary"
"""How a history that outgrows the context window is kept inside it."""
RESULT_SHARE: Final = 0.25
"""A tool result above this share of the context window is saved to a file instead."""
BACKGROUND_AFTER: Final = 15.0
"""Seconds a shell command runs before it goes on as a background job."""
MAX_JOBS: Final = 8
"""Background jobs running at once in one conversation."""
CONCURRENCY: Final = 8
"""Batch tasks running at once (per shard with Ray)."""
TRIALS_AT_ONCE: Final = 4
"""Evaluation trials running at once (each holds a container)."""
BUILDS_AT_ONCE: Final = 2
"""Evaluation images building at once."""
