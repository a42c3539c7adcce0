"""Which addresses a fetch on someone's behalf may reach: the default policy and allow-lists."""

from __future__ import annotations

import ipaddress
import re

import pytest

from apimcp.safety.addresses import (
    AddressPolicy,
    AddressRefused,
    allowed_addresses,
    internal_reason,
    system_resolve,
)


def address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.0.9", "a loopback address"),
        ("::1", "a loopback address"),
        ("0.0.0.0", "the unspecified address"),
        ("::", "the unspecified address"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd12:3456::1", "a private address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("100.64.0.1", "a shared address (carrier-grade NAT"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("192.0.0.192", "a cloud metadata address"),
        ("192.0.2.1", "a reserved or non-global address"),  # documentation
        ("198.18.0.1", "a reserved or non-global address"),  # benchmarking
        ("240.0.0.1", "a reserved or non-global address"),
        ("255.255.255.255", "a reserved or non-global address"),
        ("2001:db8::1", "a reserved or non-global address"),
        ("fec0::1", "a reserved or non-global address"),  # site-local
        ("::ffff:127.0.0.1", "an IPv6 form of 127.0.0.1, a loopback address"),
        ("::ffff:169.254.169.254", "an IPv6 form of 169.254.169.254, a cloud metadata address"),
        ("::127.0.0.1", "an IPv6 form of 127.0.0.1, a loopback address"),  # IPv4-compatible
        ("64:ff9b::a00:1", "an IPv6 form of 10.0.0.1, a private address"),  # NAT64
        ("2002:c0a8:101::1", "an IPv6 form of 192.168.1.1, a private address"),  # 6to4
    ],
)
def test_internal_addresses_are_named_for_what_they_are(text: str, reason: str) -> None:
    found = internal_reason(address(text))
    assert found is not None and found.startswith(reason), found


@pytest.mark.parametrize("text", ["93.184.215.14", "8.8.8.8", "2606:4700::6810:85e5", "64:ff9b::808:808"])
def test_public_addresses_are_reachable(text: str) -> None:
    assert internal_reason(address(text)) is None
    AddressPolicy().check("example.com", [address(text)])


def test_a_refusal_says_which_rule_refused_and_exactly_how_to_allow_the_host() -> None:
    with pytest.raises(AddressRefused) as literal:
        AddressPolicy().check("127.0.0.1", [address("127.0.0.1")])
    assert str(literal.value) == (
        "127.0.0.1 is a loopback address; the server fetches only public addresses unless its fetch allow-list "
        "names the host: start it with --fetch-allow 127.0.0.1 (or APIMCP_FETCH_ALLOW=127.0.0.1; in a gateway "
        "configuration file, server.fetch_allow: [127.0.0.1])"
    )
    with pytest.raises(AddressRefused) as named:
        AddressPolicy().check("Descriptions.Corp.Example.", [address("10.20.30.40")])
    message = str(named.value)
    assert message.startswith("descriptions.corp.example resolves to a private address; ")
    assert "--fetch-allow descriptions.corp.example " in message
    assert "10.20.30.40" not in message  # what an internal name resolves to stays inside


def test_a_name_with_one_internal_address_among_public_ones_is_refused() -> None:
    with pytest.raises(AddressRefused, match="resolves to a private address"):
        AddressPolicy().check("mixed.example", [address("93.184.215.14"), address("10.0.0.5")])


def test_the_allow_list_takes_host_names_suffix_patterns_and_networks() -> None:
    policy = AddressPolicy.allowing(
        ["descriptions.corp.example", "*.internal.example", "10.20.0.0/16", "127.0.0.1", "[::1]", " ", "fd00::/8"]
    )
    private = [address("10.99.0.1")]
    policy.check("descriptions.corp.example", private)
    policy.check("DESCRIPTIONS.corp.example.", private)  # names compare case-blind, trailing dot or not
    policy.check("api.internal.example", private)
    policy.check("a.b.internal.example", private)
    with pytest.raises(AddressRefused):
        policy.check("internal.example", private)  # `*.` names what is below the suffix, not the suffix
    with pytest.raises(AddressRefused):
        policy.check("other.corp.example", private)
    policy.check("anything.example", [address("10.20.7.7")])  # by network, whatever the name
    policy.check("localhost", [address("127.0.0.1"), address("::1")])
    with pytest.raises(AddressRefused):
        policy.check("localhost", [address("127.0.0.2")])
    assert policy.entries == (
        "descriptions.corp.example",
        "*.internal.example",
        "10.20.0.0/16",
        "127.0.0.1",
        "[::1]",
        "fd00::/8",
    )


def test_metadata_addresses_are_refused_whatever_the_allow_list_says() -> None:
    policy = AddressPolicy.allowing(["169.254.0.0/16", "169.254.169.254", "metadata.internal", "fd00::/8", "::/0"])
    for host, text in [
        ("169.254.169.254", "169.254.169.254"),
        ("metadata.internal", "169.254.169.254"),
        ("fd00:ec2::254", "fd00:ec2::254"),
        ("::ffff:169.254.169.254", "::ffff:169.254.169.254"),
    ]:
        with pytest.raises(
            AddressRefused, match=r"cloud metadata address, which .* no request made on someone's behalf"
        ):
            policy.check(host, [address(text)])
    policy.check("other.internal", [address("169.254.1.1")])  # the rest of link-local follows the allow-list


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("10.0.0.0/33", "is not a network such as 10.0.0.0/8"),
        ("*", "is not a host name, a *.suffix pattern or a CIDR network"),
        ("http://user@host.example:8080/x", "is a URL: give its host alone (host.example:8080)"),
        ("*.-bad", "'*.' comes before a domain"),
        ("a b", "is not a host name"),
    ],
)
def test_a_wrong_allow_list_entry_is_named(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        AddressPolicy.allowing([entry])
    assert repr(entry) in str(caught.value)


def test_names_are_resolved_once_and_every_address_checked() -> None:
    calls: list[tuple[str, int]] = []

    def resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        calls.append((host, port))
        return [address("93.184.215.14"), address("127.0.0.1")]

    with pytest.raises(AddressRefused, match=r"^public\.example resolves to a loopback address"):
        allowed_addresses("public.example", 443, AddressPolicy(), resolve)
    assert calls == [("public.example", 443)]
    with pytest.raises(OSError, match="has no address"):
        allowed_addresses("nothing.example", 443, AddressPolicy(), lambda host, port: [])


@pytest.mark.parametrize("spelling", ["localhost", "0.0.0.0", "2130706433", "0x7f000001", "127.1", "0177.0.0.1", "::1"])
def test_every_spelling_of_loopback_resolves_to_a_refused_address(spelling: str) -> None:
    """The system resolver reads these without asking any DNS server; every one ends on this machine."""
    addresses = system_resolve(spelling, 80)
    assert addresses
    with pytest.raises(AddressRefused):
        AddressPolicy().check(spelling, addresses)


@pytest.mark.parametrize(
    "text",
    [
        "fd20:ce::254",  # Google Cloud, over IPv6
        "168.63.129.16",  # Azure WireServer: public, so only the metadata list refuses it
        "::ffff:168.63.129.16",  # mapped
        "64:ff9b::a83f:8110",  # NAT64
        "2002:a83f:8110::1",  # 6to4
        "::168.63.129.16",  # IPv4-compatible
    ],
)
def test_the_metadata_address_list_misses_google_ipv6_and_azure_wireserver(text: str) -> None:
    """Finding: fd20:ce::254 was only a private address (allowed by an allow-list naming fd00::/8) and
    168.63.129.16 a public one (allowed by default)."""
    reason = internal_reason(address(text))
    assert reason is not None and "a cloud metadata address" in reason, reason
    for policy in (AddressPolicy(), AddressPolicy.allowing(["0.0.0.0/0", "::/0"])):
        with pytest.raises(AddressRefused, match="a cloud metadata address"):
            policy.check("metadata.example", [address(text)])
