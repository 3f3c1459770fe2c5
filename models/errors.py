"""Errors a user can meet when choosing or loading a model; each message names the fix."""


class ModelError(RuntimeError):
    """A model could not be found, assembled, verified or loaded."""


class LLMCallError(RuntimeError):
    """A call to a loaded model or a model server failed."""


class Cancelled(Exception):
    """The person (or caller) asked the run to stop; raised at the next token, or within a fraction of a second
    while a model loads, a prompt is read or a server is waited on."""
