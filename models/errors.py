"""Errors a user can meet when choosing or loading a model; each message names the fix."""


class ModelError(RuntimeError):
    """A model could not be found, assembled, verified or loaded."""


class LLMCallError(RuntimeError):
    """A call to a loaded model or a model server failed."""
