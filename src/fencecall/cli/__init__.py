"""The ``fencecall`` command line."""
