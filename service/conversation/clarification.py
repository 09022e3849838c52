"""The clarification a response asks, as a self-contained, signed object.

The client treats it as opaque and sends it back as `reply_to` with the user's
answer. Everything needed to resolve the answer travels inside it (the original
question and the offered pages), so any replica can resolve it without a
server-side session; an HMAC over its canonical encoding makes it
tamper-evident, and `issued_at` lets a replica refuse stale ones.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

import msgspec

ClarificationKind = Literal["choose", "confirm", "weak"]
"""choose: pick one of several pages; confirm: "I think you mean X. Is that right?";
weak: "I'm not sure which feature you mean. Are you asking about X?"."""

FormatVersion = Literal[1]
"""The versions a `reply_to` may carry (the published schema says so: `v` is the constant 1)."""
FORMAT_VERSION: FormatVersion = 1


class ClarificationOption(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    doc_slug: str
    title: str
    category: str


class Clarification(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What travels to the client and back. `signature` covers every other field."""

    v: FormatVersion
    kind: ClarificationKind
    query: str
    """The user's original question, answered once they pick a page."""
    options: tuple[ClarificationOption, ...]
    issued_at: int
    """Unix seconds."""
    signature: str = ""


class ClarificationError(ValueError):
    """A `reply_to` that cannot be trusted or read; the message names the problem."""


_UNSIGNED = msgspec.json.Encoder(order="deterministic")


def _payload(clarification: Clarification) -> bytes:
    return _UNSIGNED.encode(msgspec.structs.replace(clarification, signature=""))


def _mac(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def issue(
    *,
    kind: ClarificationKind,
    query: str,
    options: tuple[ClarificationOption, ...],
    key: bytes,
    now: float,
) -> Clarification:
    """A signed clarification for the response."""
    unsigned = Clarification(v=FORMAT_VERSION, kind=kind, query=query, options=options, issued_at=int(now))
    return msgspec.structs.replace(unsigned, signature=_mac(key, _payload(unsigned)))


def verify(raw: object, *, key: bytes, now: float, max_age_s: float) -> Clarification:
    """The clarification a client sent back, or ClarificationError saying why it is refused."""
    try:
        clarification = msgspec.convert(raw, Clarification, strict=True)
    except msgspec.ValidationError as exc:
        raise ClarificationError(f"reply_to is malformed: {exc}") from None
    expected = _mac(key, _payload(clarification))
    # As bytes: compare_digest refuses a str with non-ASCII characters (TypeError, a 500).
    if not hmac.compare_digest(expected.encode(), clarification.signature.encode("utf-8", "surrogatepass")):
        raise ClarificationError("reply_to signature does not match: it was altered or not issued by this service")
    age = now - clarification.issued_at
    if age > max_age_s:
        raise ClarificationError(f"reply_to expired: issued {int(age)} s ago, valid for {int(max_age_s)} s")
    if age < -60:
        # Clocks of replicas differ by seconds, not minutes.
        raise ClarificationError("reply_to is issued in the future")
    if not clarification.options:
        raise ClarificationError("reply_to offers no options")
    return clarification
