"""The Redis fixtures of the state tests serve these too."""

from tests.state.conftest import redis_prefix

__all__ = ["redis_prefix"]
