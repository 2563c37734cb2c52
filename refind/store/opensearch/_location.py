"""Where the cluster is: parsing an ``opensearch[s]://`` location, with its credentials and index options.

Pure: no client, no network. The credentials may come from the environment; :meth:`Location.redacted` is
the form that may be logged (never a secret in it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from refind.config import env_var
from refind.errors import InvalidInput

__all__ = ["Location", "parse_location"]


@dataclass(frozen=True)
class Location:
    """What an ``opensearch://`` location says: hosts, index prefix, TLS, credentials and index options."""

    hosts: list[str]
    prefix: str
    tls: bool
    username: str | None = None
    password: str | None = None
    api_key: str | None = None
    verify: bool = True
    ca_certs: str | None = None
    shards: int = 1
    replicas: int | None = None  # None: 0-1 (auto-expanded)
    refresh_interval: str = "200ms"
    options: dict[str, str] = field(default_factory=dict)

    def redacted(self) -> str:
        """The location without credentials or options: what logs and error messages show."""
        scheme = "opensearchs" if self.tls else "opensearch"
        return f"{scheme}://{','.join(h.split('://', 1)[-1] for h in self.hosts)}/{self.prefix}"


def parse_location(text: str, env: Mapping[str, str] | None = None) -> Location:
    """Parse ``opensearch[s]://[user:password@]host[:port][,host2:port2...]/prefix?options``.

    Options: ``shards`` (primary shards of a new index, default 1), ``replicas`` (default 0-1, auto-expanded),
    ``refresh_interval`` (default 200ms), ``verify=false`` (skip TLS certificate checks), ``ca_certs=PATH``.
    Secrets may instead come from the environment: ``REFIND_OPENSEARCH_USER``,
    ``REFIND_OPENSEARCH_PASSWORD``, ``REFIND_OPENSEARCH_API_KEY`` (sent as ``Authorization: ApiKey ...``),
    ``REFIND_OPENSEARCH_CA_CERTS``, ``REFIND_OPENSEARCH_VERIFY=0``; the URL wins when it has them."""
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in {"opensearch", "opensearchs"}:
        raise InvalidInput(f"store: {text!r} is not an opensearch:// or opensearchs:// location")
    netloc = parts.netloc
    username = password = None
    if "@" in netloc:
        auth, netloc = netloc.rsplit("@", 1)
        username, _, pw = auth.partition(":")
        username, password = unquote(username), unquote(pw) if pw else None
    if not netloc:
        raise InvalidInput(f"store: {text!r} names no host; use opensearch://host:9200/prefix")
    tls = scheme == "opensearchs"
    hosts = []
    for host in netloc.split(","):
        host = host.strip()
        if not host:
            continue
        if ":" not in host.rsplit("]", 1)[-1]:
            host += ":9200"
        hosts.append(f"{'https' if tls else 'http'}://{host}")
    prefix = parts.path.strip("/") or "refind"
    if not all(c.isalnum() or c in "-_." for c in prefix) or prefix != prefix.lower() or prefix[0] in "-_.":
        raise InvalidInput(
            f"store: index prefix {prefix!r} must be lowercase letters, digits, '-', '_' or '.', not first"
        )
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    known = {"shards", "replicas", "refresh_interval", "verify", "ca_certs"}
    unknown = sorted(set(query) - known)
    if unknown:
        raise InvalidInput(
            f"store: unknown option(s) {', '.join(unknown)} in {text!r}; known: {sorted(known)}"
        )
    try:
        shards = int(query.get("shards", "1"))
        replicas = int(query["replicas"]) if "replicas" in query else None
    except ValueError:
        raise InvalidInput(f"store: shards and replicas must be integers in {text!r}") from None
    verify_text = query.get("verify", env_var("REFIND_OPENSEARCH_VERIFY", env) or "1").lower()
    return Location(
        hosts=hosts,
        prefix=prefix,
        tls=tls,
        username=username or env_var("REFIND_OPENSEARCH_USER", env) or None,
        password=password or env_var("REFIND_OPENSEARCH_PASSWORD", env) or None,
        api_key=env_var("REFIND_OPENSEARCH_API_KEY", env) or None,
        verify=verify_text not in {"0", "false", "no", "off"},
        ca_certs=query.get("ca_certs") or env_var("REFIND_OPENSEARCH_CA_CERTS", env) or None,
        shards=max(1, shards),
        replicas=replicas,
        refresh_interval=query.get("refresh_interval", "200ms"),
    )
