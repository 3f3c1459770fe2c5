"""Loading web pages for the agent without letting it reach into the machine's own network.

Every address a page or a redirect names is resolved once and checked: only public (globally routable) unicast
addresses pass; loopback, private, link-local, multicast, reserved, unspecified, shared (CGNAT 100.64/10) and
cloud-metadata addresses are refused, in IPv4 and IPv6, IPv4 addresses inside IPv6 (mapped, 6to4, Teredo,
NAT64) included. The connection then goes to the very address that was checked (the host name is sent as the
Host header and TLS server name), so a second DNS answer cannot swap in another address (DNS rebinding).
Redirects are followed by hand, each checked the same way. Replies are capped in time and size, only HTML and
plain text are read, and the main text is extracted with trafilatura. Loaded pages are cached per instance (one
per browser session, held by that session's ``WebSource``).
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urljoin, urlsplit


class BrowseError(RuntimeError):
    """A search or a page load failed. ``reason``: offline, rate_limited, timeout, blocked (an address that is
    not public), unsupported (not HTML or text), too_large, not_found or failed."""

    RETRYABLE = frozenset({"rate_limited", "timeout"})

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def retryable(self) -> bool:
        return self.reason in self.RETRYABLE


USER_AGENT = "Mozilla/5.0 (compatible; research-qa web agent; +local)"
READABLE_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
REDIRECTS = frozenset({301, 302, 303, 307, 308})

# Addresses that are public by the registry's rules but answer for the machine's own cloud (metadata services).
_METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254"))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

Resolver = Callable[[str, int], list[str]]


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64): each must be public too."""
    out = []
    if ip.ipv4_mapped:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour:
        out.append(ip.sixtofour)
    if ip.teredo:
        out.extend(ip.teredo)
    if ip in _NAT64:
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def is_public(address: str) -> bool:
    """Whether ``address`` is a public unicast address the agent may connect to (see the module docstring)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    candidates = [ip] + (embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else [])
    for candidate in candidates:
        if (candidate in _METADATA or not candidate.is_global or candidate.is_multicast or candidate.is_private
                or candidate.is_loopback or candidate.is_link_local or candidate.is_reserved
                or candidate.is_unspecified
                or (isinstance(candidate, ipaddress.IPv4Address) and candidate in _CGNAT)):
            return False
    return True


def system_resolver(timeout_s: float) -> Resolver:
    """``getaddrinfo`` with a time limit (it has none of its own): the addresses of ``host``."""
    def resolve(host: str, port: int) -> list[str]:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        future = pool.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
        pool.shutdown(wait=False)
        try:
            infos = future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            raise BrowseError("timeout", f"Looking up {host} took longer than {timeout_s:g} s.") from None
        except OSError as exc:
            raise BrowseError("failed", f"Cannot find the address of {host} ({exc}).") from None
        return list(dict.fromkeys(info[4][0] for info in infos))
    return resolve


@dataclass(frozen=True)
class FetchedPage:
    url: str  # after redirects
    title: str
    text: str  # the main text, paragraphs on their own lines
    truncated: bool = False  # the text was cut to ``max_text_chars``


class PageFetcher:
    """Loads pages safely (see the module docstring), caching up to ``cache_size`` pages.

    ``allow_addresses`` lists non-public addresses that may nevertheless be reached: tests serve pages from
    loopback with it; the app never sets it. ``resolver`` replaces DNS (tests)."""

    def __init__(self, *, timeout_s: float = 8.0, max_bytes: int = 3_000_000, max_redirects: int = 5,
                 max_text_chars: int = 60_000, cache_size: int = 64,
                 allow_addresses: frozenset[str] | set[str] = frozenset(),
                 resolver: Resolver | None = None) -> None:
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.max_text_chars = max_text_chars
        self.allow_addresses = frozenset(str(ipaddress.ip_address(a)) for a in allow_addresses)
        self.resolve = resolver or system_resolver(timeout_s)
        self._cache: OrderedDict[str, FetchedPage] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def fetch(self, url: str) -> FetchedPage:
        """The page at ``url`` (from the cache when loaded before). Raises ``BrowseError``."""
        with self._lock:
            if url in self._cache:
                self._cache.move_to_end(url)
                return self._cache[url]
        page = self._fetch(url)
        with self._lock:
            self._cache[url] = page
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return page

    def _fetch(self, url: str) -> FetchedPage:
        deadline = time.monotonic() + 2 * self.timeout_s
        current = url
        for _ in range(self.max_redirects + 1):
            status, headers, body = self._get(current, deadline)
            if status in REDIRECTS and headers.get("location"):
                current = urljoin(current, headers["location"])
                continue
            if status == 429 or status == 503:
                raise BrowseError("rate_limited", f"{_host(current)} asks us to slow down (HTTP {status}).")
            if status >= 400:
                raise BrowseError("failed", f"{_host(current)} answered HTTP {status}.")
            return self._readable(current, headers, body)
        raise BrowseError("failed", f"More than {self.max_redirects} redirects from {url}.")

    def check(self, url: str) -> tuple[str, int, str]:
        """``url``'s host, port and the checked address to connect to; ``BrowseError`` when it is not an
        http(s) URL to a public address."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BrowseError("blocked", f"Only http and https pages are loaded, not {url[:80]!r}.")
        if parts.username or parts.password:
            raise BrowseError("blocked", "Addresses with a user name or password are not loaded.")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise BrowseError("blocked", f"{url[:80]!r} has an invalid port.") from None
        host = parts.hostname
        try:
            addresses = [str(ipaddress.ip_address(host.split("%", 1)[0]))]  # a literal address
        except ValueError:
            addresses = self.resolve(host, port)
        if not addresses:
            raise BrowseError("failed", f"{host} has no address.")
        # Every address the name has must be public: one private answer among public ones is an attack.
        refused = [a for a in addresses if not (is_public(a) or a in self.allow_addresses)]
        if refused:
            raise BrowseError("blocked", f"Refused: {host} points to {refused[0]}, which is not a public address "
                                         "(the agent never reaches into private networks).")
        return host, port, addresses[0]

    def _get(self, url: str, deadline: float) -> tuple[int, dict[str, str], bytes]:
        import certifi
        import urllib3

        host, port, address = self.check(url)
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        timeout = urllib3.Timeout(connect=self.timeout_s, read=self.timeout_s)
        if parts.scheme == "https":
            pool = urllib3.HTTPSConnectionPool(address, port, timeout=timeout, retries=False, maxsize=1,
                                               server_hostname=host, assert_hostname=host,
                                               cert_reqs="CERT_REQUIRED", ca_certs=certifi.where())
        else:
            pool = urllib3.HTTPConnectionPool(address, port, timeout=timeout, retries=False, maxsize=1)
        default_port = 443 if parts.scheme == "https" else 80
        headers = {"Host": host if port == default_port else f"{host}:{port}", "User-Agent": USER_AGENT,
                   "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1",
                   "Accept-Encoding": "gzip, deflate"}
        try:
            response = pool.urlopen("GET", target, headers=headers, redirect=False, preload_content=False,
                                    decode_content=True, assert_same_host=False)
        except urllib3.exceptions.TimeoutError:
            pool.close()
            raise BrowseError("timeout", f"{host} did not answer within {self.timeout_s:g} s.") from None
        except urllib3.exceptions.HTTPError as exc:
            pool.close()
            raise BrowseError("failed", f"Cannot load the page from {host} ({type(exc).__name__}).") from None
        try:
            head = {k.lower(): v for k, v in response.headers.items()}
            if response.status in REDIRECTS or response.status >= 400:
                return response.status, head, b""
            kind = head.get("content-type", "").split(";")[0].strip().lower()
            if kind and kind not in READABLE_TYPES:
                raise BrowseError("unsupported", f"The page is {kind}, not HTML or text; it was not loaded.")
            declared = head.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise BrowseError("too_large", f"The page is {int(declared):,} bytes, over the "
                                               f"{self.max_bytes:,}-byte limit; it was not loaded.")
            body = bytearray()
            for piece in _pieces(response, deadline, self.timeout_s, host):
                body += piece
                if len(body) > self.max_bytes:
                    raise BrowseError("too_large", f"The page is over the {self.max_bytes:,}-byte limit; it was "
                                                   "not loaded.")
                if time.monotonic() > deadline:
                    raise BrowseError("timeout", f"{host} sent the page too slowly.")
            return response.status, head, bytes(body)
        except urllib3.exceptions.TimeoutError:
            raise BrowseError("timeout", f"{host} did not answer within {self.timeout_s:g} s.") from None
        except urllib3.exceptions.HTTPError as exc:
            raise BrowseError("failed", f"The page from {host} broke off ({type(exc).__name__}).") from None
        finally:
            response.release_conn()
            pool.close()

    def _readable(self, url: str, headers: dict[str, str], body: bytes) -> FetchedPage:
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        charset = _charset(headers.get("content-type", ""))
        if kind == "text/plain":
            text, title = body.decode(charset or "utf-8", errors="replace"), ""
        else:
            import trafilatura

            html = body.decode(charset, errors="replace") if charset else body
            text = trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True) or ""
            meta = trafilatura.extract_metadata(html)
            title = (meta.title if meta else "") or ""
        text = "\n".join(line.strip() for line in text.splitlines() if line.strip())
        if not text:
            raise BrowseError("not_found", f"No readable text was found on {url[:100]}.")
        truncated = len(text) > self.max_text_chars
        return FetchedPage(url=url, title=" ".join(title.split()), text=text[: self.max_text_chars],
                           truncated=truncated)


def _pieces(response, deadline: float, read_timeout_s: float, host: str):
    """The body as it arrives. Each read returns what one receive brings (``read1``; ``stream`` waits for a
    whole 64 kB) and waits at most until ``deadline``, so a server sending a byte every few seconds is cut at
    the page's overall deadline, not after the whole page has trickled in."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrowseError("timeout", f"{host} sent the page too slowly.")
        if sock is not None:
            sock.settimeout(min(read_timeout_s, remaining))
        try:
            piece = response.read1(64 * 1024)
        except Exception as exc:  # noqa: BLE001 - a read cut at the deadline is a timeout whatever wraps it
            if time.monotonic() >= deadline:
                raise BrowseError("timeout", f"{host} sent the page too slowly.") from None
            raise exc
        if not piece:
            return
        yield piece


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value.strip(" \"'"):
            try:
                import codecs

                return codecs.lookup(value.strip(" \"'")).name
            except LookupError:
                return None
    return None


def _host(url: str) -> str:
    return urlsplit(url).hostname or url[:60]
