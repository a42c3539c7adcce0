"""A plan's task mode text: what it means, its canonical form, and the errors that name what is wrong."""

from __future__ import annotations

import pytest

from apimcp.protocol.tasks.policy import TaskPolicy, format_task_mode, parse_task_mode


@pytest.mark.parametrize(
    ("text", "policy", "canonical"),
    [
        ("off", None, "off"),
        ("all", TaskPolicy("optional", 0.0), "all"),
        ("slow", TaskPolicy("optional", 1.0), "slow:1s"),
        ("slow:5s", TaskPolicy("optional", 5.0), "slow:5s"),
        (" slow:500ms ", TaskPolicy("optional", 0.5), "slow:500ms"),
        ("slow:1500ms", TaskPolicy("optional", 1.5), "slow:1500ms"),
        ("slow:2.5s", TaskPolicy("optional", 2.5), "slow:2500ms"),
        ("slow:1.0004s", TaskPolicy("optional", 1.0), "slow:1s"),  # whole milliseconds
    ],
)
def test_modes_and_their_canonical_text(text: str, policy: TaskPolicy | None, canonical: str) -> None:
    assert parse_task_mode(text) == policy
    assert format_task_mode(policy) == canonical
    assert parse_task_mode(canonical) == policy


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("sometimes", 'must be "off", "all" or "slow"'),
        ("slow:5min", 'must be "off", "all" or "slow"'),
        ("all:5s", "takes no duration"),
        ("off:1s", "takes no duration"),
        ("slow:0s", "from 1 ms"),
        ("slow:0.4ms", "from 1 ms"),
        ("slow:7200s", "to 3600"),
    ],
)
def test_bad_modes_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_task_mode(text)


def test_a_policy_is_bounded() -> None:
    with pytest.raises(ValueError, match="after_seconds"):
        TaskPolicy("optional", -1)
