"""Exceptions raised by onyx: one per status code of the C API.

Each is also the built-in exception a Python user would expect for its kind
(ValueError for an invalid argument, LookupError for something not found,
MemoryError, NotImplementedError), so ``except ValueError`` works too.
"""


class OnyxError(RuntimeError):
    """Base of every error Onyx raises; ``code`` is the C API status code."""

    code = 9


class InvalidArgument(OnyxError, ValueError):
    code = 1


class NotFound(OnyxError, LookupError):
    code = 2


class NotImplemented(OnyxError, NotImplementedError):  # noqa: A001 - the status code's name
    code = 3


class Unavailable(OnyxError):
    code = 4


class OutOfMemory(OnyxError, MemoryError):
    code = 5


class Incompatible(OnyxError):
    code = 6


class FailedPrecondition(OnyxError):
    code = 7


class DataLoss(OnyxError):
    code = 8


class InternalError(OnyxError):
    code = 9


BY_CODE = {cls.code: cls for cls in (InvalidArgument, NotFound, NotImplemented, Unavailable, OutOfMemory,
                                     Incompatible, FailedPrecondition, DataLoss, InternalError)}
