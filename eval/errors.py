"""Errors a user can cause and fix. The CLI prints their message alone, without a traceback."""



from clag.errors import UserFacingError


class ClagBenchError(UserFacingError):
    """Base class of the harness's errors: the message is one actionable sentence."""


class DataError(ClagBenchError):
    """A dataset file is missing, corrupt, or malformed."""


class ConfigError(ClagBenchError):
    """A configuration value or name is invalid."""


class ScoreInputError(ClagBenchError):
    """A predictions file given to ``eval score`` cannot be read."""
