"""Hosts of their own for tests: Linux network namespaces (``ip netns``, iproute2) joined by
veth pairs to one bridge, on a private /24 picked at random (10.213.N.0/24).

The test process stays in the first namespace and owns the bridge's address (``.1``): a
PostgreSQL started there listens on it, and clients reach every host. Host ``i`` is the
namespace ``ttt<tag>h<i>`` with the address ``.(10 + i)`` and a loopback of its own, so a
process started in it (`Hosts.command`) sees only that address and its own 127.0.0.1:
two of them can both listen on port 8765, as two machines would.

`why_not` says why no namespace can be made here (not root, no ``ip``, ``ip netns add``
refused in a container); `hosts` deletes every namespace and the bridge it made, in a
``finally``, whatever happened.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def why_not() -> str | None:
    """Why network namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    probe = f"tttprobe{secrets.token_hex(3)}"
    done = _ip("netns", "add", probe)
    if done.returncode != 0:
        return f"ip netns add is refused here: {done.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


@dataclass(frozen=True)
class Hosts:
    """The namespaces made: ``names[i]`` has the address ``addresses[i]``; ``gateway`` is
    this process's address on the bridge."""

    names: list[str]
    addresses: list[str]
    gateway: str
    network: str
    #: Host ``i``'s end of its link on this side of the bridge.
    links: list[str]

    def command(self, i: int, *argv: str) -> list[str]:
        """``argv`` run on host ``i``."""
        return ["ip", "netns", "exec", self.names[i], *argv]

    def unplug(self, i: int) -> None:
        """Pull host ``i``'s cable: its packets are lost, silently (no reset either way);
        its processes and their sockets stay as they are."""
        _must("link", "set", self.links[i], "down")

    def plug(self, i: int) -> None:
        """Put host ``i``'s cable back (`unplug`)."""
        _must("link", "set", self.links[i], "up")


def _free_network() -> ipaddress.IPv4Network:
    used = _ip("-4", "-o", "addr", "show").stdout
    for _ in range(50):
        net = ipaddress.IPv4Network(f"10.213.{random.randrange(256)}.0/24")
        if f"10.213.{net.network_address.packed[2]}." not in used:
            return net
    raise RuntimeError("no free 10.213.N.0/24 network")


def _must(*args: str) -> None:
    done = _ip(*args)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@contextlib.contextmanager
def hosts(count: int) -> Iterator[Hosts]:
    """``count`` namespaces on one bridge; all deleted at the end."""
    tag = secrets.token_hex(3)
    bridge = f"tttbr{tag}"
    net = _free_network()
    gateway = str(net.network_address + 1)
    names: list[str] = []
    addresses: list[str] = []
    links = [f"tv{tag}{i}" for i in range(count)]
    try:
        _must("link", "add", bridge, "type", "bridge")
        _must("addr", "add", f"{gateway}/24", "dev", bridge)
        _must("link", "set", bridge, "up")
        for i in range(count):
            name, outside, inside = f"ttt{tag}h{i}", links[i], f"tp{tag}{i}"
            address = str(net.network_address + 10 + i)
            _must("netns", "add", name)
            names.append(name)
            _must("link", "add", outside, "type", "veth", "peer", "name", inside)
            _must("link", "set", outside, "master", bridge)
            _must("link", "set", outside, "up")
            _must("link", "set", inside, "netns", name)
            _must("-n", name, "addr", "add", f"{address}/24", "dev", inside)
            _must("-n", name, "link", "set", inside, "up")
            _must("-n", name, "link", "set", "lo", "up")
            addresses.append(address)
        yield Hosts(names, addresses, gateway, str(net), links)
    finally:
        for name in names:  # deleting a namespace deletes its veth end, and so the pair
            _ip("netns", "del", name)
        for link in links:  # a pair whose end never made it into its namespace
            if _ip("link", "show", link).returncode == 0:
                _ip("link", "del", link)
        _ip("link", "del", bridge)
