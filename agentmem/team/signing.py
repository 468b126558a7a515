"""Who pushed an inbox item: each token's own Ed25519 key signs the items it pushes.

sqld grants a whole database, not a row: on the runs primary every member's
token may write every row of the inbox, so a row's own word for who wrote it
counts for nothing. Each token therefore holds a signing key of its own (the
private half in the member's token file only, the public half in the server's
registry), and :func:`sign` signs an item's uuid, kind, member name and payload
with it. ``agentmem team serve`` publishes the live tokens' public keys and
roles on the *lessons* primary (the ``team_members`` setting), where members
may only read; the learner checks every signature against them
(:func:`verify`). An item whose signature does not check, or whose member's
token is revoked or unknown, is refused; an unsigned item (a token issued
before signing) is taken as nobody's: it never counts as a member's support.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

__all__ = ["MEMBERS_SETTING", "Signer", "new_key", "parse_members", "sign", "verify"]

#: The lessons primary's setting with each live token's role and public signing key.
MEMBERS_SETTING = "team_members"
_CONTEXT = b"agentmem team inbox item v1\n"


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text.encode("ascii"))


def _message(key: str, kind: str, member: str, payload: str) -> bytes:
    return b"".join(
        (_CONTEXT, key.encode(), b"\n", kind.encode(), b"\n", member.encode(), b"\n")
    ) + payload.encode("utf-8", "surrogatepass")


def new_key() -> tuple[str, str]:
    """A fresh signing key pair: (private key, public key), each 32 bytes in base64."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    raw = serialization.Encoding.Raw
    private = key.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    public = key.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
    return _b64(private), _b64(public)


class Signer:
    """A member's name and private signing key (from its token file)."""

    def __init__(self, member: str, private_key: str) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self.member = member
        self._key = Ed25519PrivateKey.from_private_bytes(_unb64(private_key))

    def sign(self, key: str, kind: str, payload: str) -> str:
        return _b64(self._key.sign(_message(key, kind, self.member, payload)))


def sign(signer: Signer, key: str, kind: str, payload: str) -> str:
    """The signature of one inbox item by ``signer``."""
    return signer.sign(key, kind, payload)


def verify(public_key: str, signature: str, key: str, kind: str, member: str, payload: str) -> bool:
    """Whether ``signature`` is ``member``'s (``public_key``) over this item."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        pub = Ed25519PublicKey.from_public_bytes(_unb64(public_key))
        pub.verify(_unb64(signature), _message(key, kind, member, payload))
    except (InvalidSignature, ValueError, TypeError, binascii.Error, UnicodeError):
        return False
    return True


def parse_members(value: Any) -> dict[str, tuple[str, str]]:
    """The published ``team_members`` setting as name -> (role, public key); entries that
    are not well formed are left out (the setting is the server's, but read defensively)."""
    out: dict[str, tuple[str, str]] = {}
    if not isinstance(value, Mapping):
        return out
    for name, entry in value.items():
        if not isinstance(name, str) or not isinstance(entry, Mapping):
            continue
        role, key = entry.get("role"), entry.get("key")
        if isinstance(role, str) and isinstance(key, str):
            out[name] = (role, key)
    return out
