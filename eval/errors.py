"""Errors a user can cause and fix. The CLI prints their message alone, without a traceback."""


class ClagBenchError(Exception):
    """Base class: the message is one actionable sentence."""


class DataError(ClagBenchError):
    """A dataset file is missing, corrupt, or malformed."""


class ConfigError(ClagBenchError):
    """A configuration value or name is invalid."""


class ScoreInputError(ClagBenchError):
    """A predictions file given to ``eval score`` cannot be read."""
