"""Rate limits: how many chat and steer messages a user may send, how many processes a user may
create, how many wrong API tokens a client address may try, each per moving window.

The `limits` library keeps the counts: in this process's memory on the embedded default (one
Brain process), in Redis when REDIS_URL is set (every Brain process and worker shares them). A
limit is a setting in the library's notation, "120/10 seconds" or "10/second;100/minute";
"off" (or empty, or 0) turns it off. A refusal is a 429 (`RateLimited`) that says when to try
again; nothing of the refused call was done.
"""

from __future__ import annotations

import ipaddress
import math
import time
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from limits import RateLimitItem, parse_many
from limits.storage import RedisStorage, Storage
from limits.strategies import MovingWindowRateLimiter

from vancetope.errors import BrainError
from vancetope.infra.ratelimit_memory import SweepingMemoryStorage

OFF = {"", "0", "off", "none"}


class RateLimited(BrainError):
    """Over a limit: try again in `retry_after` whole seconds (REST: the Retry-After header)."""

    code = 429
    error = "rate-limited"

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


@dataclass(frozen=True)
class Limit:
    name: str
    setting: str
    # What is counted, for the refusal's message ("chat and steer messages").
    counted: str


MESSAGES = Limit("messages", "VANCETOPE_RATE_CHAT", "chat and steer messages")
PROCESS_CREATE = Limit("process-create", "VANCETOPE_RATE_PROCESS_CREATE", "processes created")
TOKEN_FAILURES = Limit("token-failures", "VANCETOPE_RATE_TOKEN_FAILURES", "wrong API tokens")
# Per webhook: refused deliveries that get a TriggerEvent row (the rest are only counted).
WEBHOOK_REFUSALS = Limit(
    "webhook-refusals", "VANCETOPE_RATE_WEBHOOK_REFUSALS", "refused deliveries recorded"
)


@cache
def _parsed(text: str) -> tuple[RateLimitItem, ...]:
    if text.strip().lower() in OFF:
        return ()
    return tuple(parse_many(text))


def items(limit: Limit) -> tuple[RateLimitItem, ...]:
    """The windows of a limit as its setting names them now (none when it is off)."""
    return _parsed(str(getattr(settings, limit.setting) or ""))


@cache
def _limiter(redis_url: str, prefix: str) -> MovingWindowRateLimiter:
    storage: Storage = (
        RedisStorage(redis_url, key_prefix=f"{prefix}-limits")
        if redis_url
        else SweepingMemoryStorage()
    )
    return MovingWindowRateLimiter(storage)


def limiter() -> MovingWindowRateLimiter:
    return _limiter(settings.REDIS_URL or "", settings.VANCETOPE_RATE_KEY_PREFIX)


def take(limit: Limit, key: str, cost: int = 1) -> int:
    """Take as many of `cost` units as the limit lets through now (0 to `cost`) and return
    how many were taken: a burst of steers is let through up to the limit, in order."""
    windows = items(limit)
    if not windows or cost <= 0:
        return cost
    counter = limiter()
    # One unit needs no look first (one round trip to Redis, not two).
    room = (
        1
        if cost == 1
        else min(counter.get_window_stats(window, limit.name, key).remaining for window in windows)
    )
    allowed = min(cost, room)
    if allowed <= 0:
        return 0
    for window in windows:
        if not counter.hit(window, limit.name, key, cost=allowed):
            return 0  # a concurrent caller took the room meanwhile
    return allowed


def hit(limit: Limit, key: str) -> None:
    """Count one unit, or raise RateLimited (counting nothing) when the limit is reached."""
    if take(limit, key) == 0:
        raise refusal(limit, key)


def check(limit: Limit, key: str) -> None:
    """Raise RateLimited when the limit is reached, counting nothing."""
    counter = limiter()
    for window in items(limit):
        if not counter.test(window, limit.name, key):
            raise refusal(limit, key)


def refusal(limit: Limit, key: str) -> RateLimited:
    counter = limiter()
    now = time.time()
    waits = [
        stats.reset_time - now
        for window in items(limit)
        if (stats := counter.get_window_stats(window, limit.name, key)).remaining <= 0
    ]
    limits_text = getattr(settings, limit.setting)
    wait = max(waits, default=1.0)
    return RateLimited(
        f"too many {limit.counted} (limit {limits_text}); try again in {math.ceil(wait)} s",
        retry_after=wait,
    )


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry)


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in _networks(tuple(settings.VANCETOPE_TRUSTED_PROXIES)))


def client_address(peer: str, forwarded_for: str = "") -> str:
    """The address a request comes from, for counting: the peer's, unless the peer is one of
    the operator's proxies (VANCETOPE_TRUSTED_PROXIES, addresses or networks), then the
    nearest address in X-Forwarded-For that is not (a client can put anything at the left of
    that header; only what the trusted proxies appended is believed)."""
    address = peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    while _trusted(address) and hops:
        address = hops.pop()
    return address


def reset() -> None:
    """Forget every count (tests; an operator after changing the limits)."""
    limiter().storage.reset()
