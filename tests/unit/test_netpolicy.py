"""toolkg.netpolicy: which binds are local and which Host / Origin values each bind answers, over random host
strings (IPv4, IPv6 in every spelling, names, ports, brackets, junk). Issue 40: 127.0.0.2 passed for local, and
on it `Host: evil.example` was answered."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.provisional import domains

from toolkg.errors import ConfigError
from toolkg.netpolicy import HostPolicy, is_local_bind, split_host

MANY = settings(max_examples=200)
LOOPBACK = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
ports = st.one_of(st.just(""), st.integers(0, 65535).map(lambda p: f":{p}"), st.just(":"))
ipv4 = st.ip_addresses(v=4)
ipv6 = st.ip_addresses(v=6)
names = domains().map(str.lower).filter(lambda d: d != "localhost")


def _spell_v6(address: ipaddress.IPv6Address, exploded: bool) -> str:
    return address.exploded if exploded else address.compressed


def _oracle(header: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | str | None:
    """What a Host header names, read independently of the module: [v6](:port)? or name-or-v4(:port)?."""
    header = header.strip()
    bracketed = re.fullmatch(r"\[([0-9A-Fa-f:.]+(?:%[^\]]+)?)\](?::[0-9]{0,5})?", header)
    if bracketed:
        try:
            return ipaddress.IPv6Address(bracketed.group(1))
        except ValueError:
            return None
    plain = re.fullmatch(r"([A-Za-z0-9_.-]+)(?::[0-9]{0,5})?", header)
    if not plain:
        return None
    try:
        return ipaddress.IPv4Address(plain.group(1))
    except ValueError:
        return plain.group(1).lower()


LOCAL_BINDS = ["127.0.0.1", "::1", "0:0:0:0:0:0:0:1", "localhost"]


@pytest.mark.slow
@pytest.mark.parametrize("bind", LOCAL_BINDS)
@MANY
@given(header=st.text(max_size=40) | st.from_regex(r"\[?[0-9a-fA-F:.]{1,20}\]?(:[0-9]{1,6})?", fullmatch=True))
def test_a_local_bind_answers_only_loopback_hosts(bind: str, header: str) -> None:
    """Whatever the header, accepted means the oracle reads 127.0.0.1, ::1 or localhost from it."""
    accepted = HostPolicy.for_bind(bind).accepts(header)
    named = _oracle(header)
    assert accepted == (named in LOOPBACK or named == "localhost"), (header, named)


@pytest.mark.parametrize("bind", LOCAL_BINDS)
@MANY
@given(port=ports, exploded=st.booleans(), upper=st.booleans())
def test_every_spelling_of_a_loopback_host_is_answered(bind: str, port: str, exploded: bool, upper: bool) -> None:
    policy = HostPolicy.for_bind(bind)
    v6 = _spell_v6(ipaddress.IPv6Address("::1"), exploded)
    for host in ("127.0.0.1", f"[{v6.upper() if upper else v6}]", "LocalHost" if upper else "localhost"):
        assert policy.accepts(host + port), host + port
        assert policy.refusal([host + port], [f"http://{host}{port}"]) is None


def _own(bind: str) -> str:
    """A Host naming the server bound to ``bind``."""
    address = ipaddress.ip_address(bind) if bind != "localhost" else None
    if address is None or address in LOOPBACK or address.is_unspecified:
        return "127.0.0.1"
    return f"[{bind}]" if address.version == 6 else bind


BINDS = [*LOCAL_BINDS, "127.0.0.2", "192.0.2.7", "2001:db8::7", "0.0.0.0", "::"]


@pytest.mark.slow
@pytest.mark.parametrize("bind", BINDS)
@MANY
@given(name=names, port=ports)
def test_a_foreign_name_is_refused_on_every_bind(bind: str, name: str, port: str) -> None:
    """The DNS-rebinding case: a name the admin did not list is refused, as Host and as Origin."""
    policy = HostPolicy.for_bind(bind)
    reason = policy.refusal([name + port])
    assert reason and reason.startswith("Host ") and "\n" not in reason
    own = _own(bind)
    assert policy.refusal([own]) is None
    assert (policy.refusal([own], [f"https://{name}{port}"]) or "").startswith("cross-site request from")
    listed = HostPolicy.for_bind(bind, [name])
    assert listed.accepts(name + port) and listed.accepts(name.upper() + port)
    assert not listed.accepts(f"x{name}{port}") and not listed.accepts(f"{name}.{port}")


@pytest.mark.slow
@pytest.mark.parametrize("bind", ["127.0.0.2", "192.0.2.7", "2001:db8::7"])
@MANY
@given(address=st.one_of(ipv4, ipv6), port=ports)
def test_an_address_bind_answers_that_address_alone(bind: str, address, port: str) -> None:
    policy = HostPolicy.for_bind(bind)
    header = (f"[{address}]" if address.version == 6 else str(address)) + port
    assert policy.accepts(header) == (address == ipaddress.ip_address(bind))
    assert policy.accepts((f"[{bind}]" if ":" in bind else bind) + port)
    assert not policy.accepts("localhost" + port) and not policy.accepts("127.0.0.1" + port)


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
def test_a_wildcard_bind_answers_the_machines_addresses_and_loopback(bind: str) -> None:
    import psutil

    policy = HostPolicy.for_bind(bind)
    own = [a.address for entries in psutil.net_if_addrs().values() for a in entries if a.family.name == "AF_INET"]
    assert own and all(policy.accepts(f"{address}:7878") for address in own)
    assert policy.accepts("localhost:7878") and policy.accepts("[::1]")
    assert not policy.accepts("192.0.2.250") and not policy.accepts("evil.example")


@MANY
@given(header=st.text(max_size=60), origin=st.text(max_size=60))
def test_refusals_are_one_line_and_never_raise(header: str, origin: str) -> None:
    for bind in ("127.0.0.1", "192.0.2.7"):
        reason = HostPolicy.for_bind(bind).refusal([header], [origin])
        if reason is not None:
            assert "\n" not in reason and "\r" not in reason and len(reason) < 400


@MANY
@given(host=st.one_of(st.just("localhost"), st.just("127.0.0.1"), st.just("[::1]")), port=ports)
def test_an_origin_must_be_scheme_and_an_allowed_host_only(host: str, port: str) -> None:
    policy = HostPolicy.for_bind("127.0.0.1")
    assert policy.refusal([host], [f"http://{host}{port}"]) is None
    assert policy.refusal([host], [f"https://{host}{port}"]) is None
    for origin in (
        "null",
        f"ftp://{host}{port}",
        f"http://{host}{port}/path",
        f"http://user@{host}{port}",
        f"http://{host}{port}.evil.example",
        f"http://evil.example#{host}",
        "http://[::1",
        "",
    ):
        if origin:
            assert policy.refusal([host], [origin]), origin
    assert policy.refusal([host], [f"http://{host}", f"http://{host}"])  # two Origins: ambiguous


def test_a_request_needs_exactly_one_host() -> None:
    policy = HostPolicy.for_bind("127.0.0.1")
    assert "without a Host" in (policy.refusal([]) or "")
    assert "exactly one" in (policy.refusal(["127.0.0.1", "evil.example"]) or "")
    assert "exactly one" in (policy.refusal(["127.0.0.1", "127.0.0.1"]) or "")


@MANY
@given(address=st.one_of(ipv4, ipv6))
def test_only_127_0_0_1_and_ipv6_loopback_are_local_binds(address) -> None:
    assert is_local_bind(str(address)) == (address in LOOPBACK)
    assert is_local_bind(address.exploded) == (address in LOOPBACK)


def test_localhost_is_local_only_when_it_resolves_to_loopback(monkeypatch) -> None:
    import socket

    def resolving_to(*addresses):
        return lambda host, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in addresses]

    assert is_local_bind("localhost")  # this machine's resolver
    monkeypatch.setattr(socket, "getaddrinfo", resolving_to("127.0.0.1", "::1"))
    assert is_local_bind("localhost") and is_local_bind("LOCALHOST")
    monkeypatch.setattr(socket, "getaddrinfo", resolving_to("127.0.0.1", "10.1.2.3"))
    assert not is_local_bind("localhost")
    monkeypatch.setattr(socket, "getaddrinfo", resolving_to("127.0.1.1"))
    assert not is_local_bind("localhost")
    assert not is_local_bind("localhost.") and not is_local_bind("127.1") and not is_local_bind("::ffff:127.0.0.1")


def test_allow_host_takes_a_name_or_an_address() -> None:
    policy = HostPolicy.for_bind("192.0.2.7", ["Toolkg.Example", "[2001:db8::1]", "198.51.100.4"])
    assert policy.accepts("toolkg.example:443") and policy.accepts("[2001:db8::1]:1") and policy.accepts("198.51.100.4")
    for bad in ("toolkg.example:443", "http://toolkg.example", "a b", "", "*.example"):
        with pytest.raises(ConfigError, match="--allow-host"):
            HostPolicy.for_bind("127.0.0.1", [bad])


def test_split_host_reads_only_well_formed_values() -> None:
    assert split_host("[::1]:7878") == ipaddress.ip_address("::1")
    assert split_host("127.0.0.1:") == ipaddress.ip_address("127.0.0.1")
    for bad in ("::1", "[127.0.0.1]", "[::1", "a:b:c", "host:port", "user@host", "host/path", " ", "", "h:123456"):
        assert split_host(bad) is None, bad
