"""omnigent's side of the failure catalogue: a :class:`Failure` as an ``ExecutorError``.

The catalogue (:mod:`omnigent_agy.errors`) and the mapping from errors
(``omnigent_agy.errors.failure_for``) are host-agnostic; this is the one function that needs
omnigent. With a
``code``, omnigent's web shows the ``title`` and the ``remediation`` on the error card
(docs/host.md).
"""

from __future__ import annotations

from omnigent.inner.executor import ExecutorError, ExecutorUsage

from omnigent_agy.errors import Failure, failure_for

__all__ = ["executor_error_for", "to_executor_error"]


def to_executor_error(
    failure: Failure,
    *,
    usage: ExecutorUsage | None = None,
    preserve_session: bool = False,
    undelivered: bool = False,
) -> ExecutorError:
    """The ``ExecutorError`` event for ``failure``; the keywords are omnigent's own fields."""
    return ExecutorError(
        message=failure.message,
        retryable=failure.retryable,
        usage=usage,
        preserve_session=preserve_session,
        code=failure.code,
        title=failure.title,
        remediation=failure.remediation,
        undelivered=undelivered,
    )


def executor_error_for(
    exc: BaseException,
    *,
    secrets: tuple[str, ...] = (),
    usage: ExecutorUsage | None = None,
    preserve_session: bool = False,
    undelivered: bool = False,
) -> ExecutorError:
    """``to_executor_error(failure_for(exc))``: the event for an exception a turn raised."""
    return to_executor_error(
        failure_for(exc, secrets=secrets),
        usage=usage,
        preserve_session=preserve_session,
        undelivered=undelivered,
    )
