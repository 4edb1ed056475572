"""The base of every error that is the user's to fix (a bad path, name or setting).

The CLI prints these as one clear line instead of a traceback.
"""


class UserError(Exception):
    """Something the user asked for cannot be done as asked; the message says why."""
