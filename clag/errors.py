"""Errors a user can fix (a missing model file, an unreachable server). The CLI prints their
one-line message instead of a traceback."""


class UserFacingError(Exception):
    """Base class: the message is one actionable sentence."""
