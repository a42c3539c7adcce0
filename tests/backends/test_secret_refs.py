"""Secret references: what they may name, and how they resolve."""

from __future__ import annotations

import pytest

from apimcp.backends.secret_refs import UnresolvedReference, prefix_of, reference_problem, resolve


def test_prefixes_are_named_after_the_organization_and_none_begins_another() -> None:
    names = ["acme", "acme-eu", "acme_eu", "acme.eu", "acm", "a"]
    prefixes = [prefix_of(n) for n in names]
    assert prefix_of("acme") == "APIMCP_SECRET_acme__"
    assert prefix_of("acme-eu") == "APIMCP_SECRET_acme_deu__"
    assert len(set(prefixes)) == len(names)
    assert not [(a, b) for a in prefixes for b in prefixes if a != b and b.startswith(a)]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("${vault:secret/x}", "only ${env:NAME} is"),
        ("${env:9LIVES}", "does not name an environment variable"),
        ("${env:APIMCP_GATEWAY_TOKEN}", "may name variables called APIMCP_SECRET_acme__"),
        ("${env:APIMCP_SECRET_acme_deu__TOKEN}", "may name variables called APIMCP_SECRET_acme__"),
        ("${env:APIMCP_SECRET_acme__}", "may name variables called"),
    ],
)
def test_references_an_organization_may_not_make_are_named(value: str, words: str) -> None:
    problem = reference_problem(value, "acme")
    assert problem is not None
    assert words in problem


def test_several_references_and_text_resolve_and_a_missing_variable_is_named() -> None:
    environ = {"APIMCP_SECRET_acme__A": "one", "APIMCP_SECRET_acme__B": "two"}
    value = "Bearer ${env:APIMCP_SECRET_acme__A}-${env:APIMCP_SECRET_acme__B}"
    assert reference_problem(value, "acme") is None
    assert resolve(value, environ) == "Bearer one-two"
    assert resolve("no reference", environ) == "no reference"
    with pytest.raises(UnresolvedReference, match=r"\$\{env:APIMCP_SECRET_acme__C\}, which is not set"):
        resolve("${env:APIMCP_SECRET_acme__C}", environ)
    with pytest.raises(UnresolvedReference, match="is not a secret reference"):
        resolve("${env:HOME}", {"HOME": "/root"})
