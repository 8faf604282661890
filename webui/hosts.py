"""Which `Host` headers the panel answers: the defence against DNS rebinding.

A web page on `evil.example` can make its own name resolve to 127.0.0.1 (or to any
address the panel listens on) and then read the panel from the victim's browser; the
one thing that gives it away is the `Host: evil.example` header. IP literals are always
safe (nobody can rebind the name `127.0.0.1`), so the panel accepts:

- any IP literal (`127.0.0.1:6007`, `[::1]:6007`, `192.168.1.5`);
- `localhost`;
- when it listens beyond loopback (`--host 0.0.0.0`, `::`, a LAN address or a name): this
  machine's host name and fully qualified name, and the name given to `--host`;
- names listed with `--allow-host` (e.g. a tunnel or reverse proxy's name).

Werkzeug's `TRUSTED_HOSTS` cannot express this (no IP ranges, and it cannot match a
bracketed IPv6 literal), so the check is this module's, applied to every request.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from typing import FrozenSet, Iterable, Optional

ALL_INTERFACES = ("", "0.0.0.0", "::")
_HOST_HEADER = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>\d{1,5}))?$")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def allowed_names(bind_host: Optional[str], extra: Iterable[str] = ()) -> FrozenSet[str]:
    """Host names (not IP literals, which are always allowed) accepted when the server listens
    on `bind_host`, plus `extra`. Lower case, without ports."""
    names = {"localhost"}
    host = (bind_host or "").strip().lower()
    if not is_loopback(host):
        for name in (socket.gethostname(), socket.getfqdn()):
            if name:
                names.add(name.lower())
        if host not in ALL_INTERFACES and not _ip(host):
            names.add(host)
    names.update(e.strip().lower() for e in extra if e and e.strip())
    return frozenset(names)


def host_allowed(header: Optional[str], names: FrozenSet[str]) -> bool:
    """Whether a request with this `Host` header may be answered."""
    if not header:
        return False
    m = _HOST_HEADER.match(header.strip())
    if m is None:
        return False
    if m.group("port") is not None and not 0 < int(m.group("port")) < 65536:
        return False
    if m.group("v6") is not None:
        return _ip(m.group("v6"))
    name = m.group("name").lower()
    return _ip(name) or name.rstrip(".") in names


def display_host(bind_host: str) -> str:
    """The host to print in a URL for a server bound to `bind_host`: for all interfaces this
    machine's name (what other machines use, and a name the Host check accepts; TensorBoard's
    --bind_all prints the same), else `bind_host` itself."""
    if bind_host in ALL_INTERFACES:
        return socket.gethostname() or ("127.0.0.1" if bind_host != "::" else "::1")
    return bind_host


def reachable_hint(bind_host: str) -> Optional[str]:
    """A warning to print when `bind_host` exposes the panel beyond this machine, else None."""
    if is_loopback(bind_host):
        return None
    where = "every network interface" if bind_host in ALL_INTERFACES else f"{bind_host}"
    return (f"listening on {where}: anyone who can reach this machine on that address can read "
            f"the logdir through these pages (no authentication). Use --host 127.0.0.1 unless "
            f"that is what you want.")
