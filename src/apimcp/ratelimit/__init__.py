"""Rate limits of expositions: how many requests an exposition, and each of its callers, may make.

`policy.py` reads and checks the settings (plans, configuration files, the CLI's `100/min`); `buckets.py`
keeps token buckets in memory or in Redis (shared by replicas, so a limit holds for the whole fleet);
`limiter.py` answers, for one request (or the messages of a batch), whether it may go on and, if not, when to
come back.
"""
