"""Long-lived helpers the built-in tools run on: shell and Python sessions, output limits."""
