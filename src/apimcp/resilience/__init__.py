"""Resilient backends: retries of idempotent calls with backoff, jitter and a budget, a circuit breaker per
backend, and a cache of read-only tools' answers with identical calls coalesced (docs/governance.md).

- `settings.py`: a plan's `resilience`, checked.
- `retries.py`: which calls are retried, after how long, within which budget.
- `breaker.py`: a circuit breaker's states.
- `backend.py`: a backend called through retries and its breaker.
- `cache.py`: answers kept, keyed by what the backend would receive, and identical calls made once.
- `cached.py`: a member's calls through the cache, read-only tools only.
"""
