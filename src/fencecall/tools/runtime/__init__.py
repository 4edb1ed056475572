"""Long-lived helpers the built-in tools run on: shell and Python sessions, background jobs,
file I/O and output limits. The processes they start are confined by :mod:`fencecall.sandbox`."""
