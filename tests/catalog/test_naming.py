"""Tool names: valid, bounded, deterministic and unique."""

from __future__ import annotations

import pytest

from apimcp.catalog.naming import MAX_TOOL_NAME, VALID_TOOL_NAME, NameAllocator, fit, snake_case


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("listPets", "list_pets"),
        ("repos/get-content", "repos_get_content"),
        ("get /pets/{petId}", "get_pets_pet_id"),
        ("HTTPServerError", "http_server_error"),
        ("getV2Items", "get_v2_items"),
        ("  weird -- name!! ", "weird_name"),
        ("Ünïcode café", "n_code_caf"),
    ],
)
def test_snake_case(text: str, name: str) -> None:
    assert snake_case(text) == name


def test_long_names_are_shortened_deterministically() -> None:
    long = "enterprise_admin_list_self_hosted_runner_groups_for_enterprise_with_extra_words_appended"
    first, second = fit(long), fit(long)
    assert first == second
    assert len(first) == MAX_TOOL_NAME and VALID_TOOL_NAME.match(first)
    assert first.startswith("enterprise_admin_list_self_hosted")
    assert fit(long + "x") != first


def test_prefix_counts_in_the_budget() -> None:
    name = fit("a" * 70, prefix="github_")
    assert name.startswith("github_") and len(name) == MAX_TOOL_NAME
    with pytest.raises(ValueError, match="leaves no room"):
        fit("x", prefix="p" * 60)


def test_allocator_keeps_names_unique() -> None:
    names = NameAllocator()
    first = names.allocate("get_pets", "GET /pets")
    again = names.allocate("get_pets", "GET /pets/")
    third = names.allocate("get_pets", "GET //pets")
    assert first == "get_pets"
    assert again.startswith("get_pets_") and again != third
    assert len({first, again, third}) == 3


def test_allocator_refuses_invalid_prefixes() -> None:
    with pytest.raises(ValueError, match="may only contain"):
        NameAllocator(prefix="bad prefix/")
