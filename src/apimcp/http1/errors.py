"""What can go wrong on the fast lane, in the terms the REST call path uses for its failures."""

from __future__ import annotations


class NotConnected(OSError):
    """No connection could be made (refused, unreachable, no address): nothing was sent."""

    def __init__(self, reason: str, *, resolving: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.resolving = resolving
        """The name did not resolve (rather than an address refusing the connection)."""


class Dropped(ConnectionError):
    """The connection ended before the whole answer arrived (the backend may have acted on the request)."""

    def __init__(self, reason: str, *, before_any_byte: bool) -> None:
        super().__init__(reason)
        self.before_any_byte = before_any_byte


class Unsendable(ValueError):
    """A request that cannot be written (a header value with a line break...): never sent."""


class AnswerTooLarge(Exception):
    """The answer's body is longer than the caller allows."""


class BadAnswer(Exception):
    """An answer that is not HTTP/1.1 this client can read (malformed, headers beyond bounds, a corrupt body)."""
