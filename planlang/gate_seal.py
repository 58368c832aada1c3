"""Seals on the gate's stored decisions, keyed by a file outside the gate's database.

Whoever can write the gate's store (a file, or a shared server) could otherwise edit a row's
``source`` and ``sha256`` together and have a plan that was never priced issued as approved.
Each decision (approved, held, rejected) is sealed with an HMAC over the sha256, the policy,
the price and the decision; the key is a file only its owner can read (like an ssh key), so a
row edited by anyone without it fails to verify and is refused. Gates on several machines
honour each other's decisions when they are given the same key file. What a seal cannot see
is a store put back whole to an earlier state (a backup): it shows the decisions of then.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

__all__ = ["KeyFileError", "default_key_path", "load_key", "seal_decision"]

KEY_BYTES = 32


class KeyFileError(ValueError):
    """The gate's key file cannot be used; the message names the file and why."""


def default_key_path() -> Path:
    """``$PLANLANG_GATE_KEY``, else ``$XDG_CONFIG_HOME/planlang/gate.key`` (``~/.config``)."""
    named = os.environ.get("PLANLANG_GATE_KEY")
    if named:
        return Path(named)
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "planlang" / "gate.key"


def load_key(path: str | Path) -> bytes:
    """The key in ``path``, made (readable by its owner only) if there is none yet."""
    file = Path(path)
    if not file.exists():
        _create(file)
    try:
        mode = stat.S_IMODE(file.stat().st_mode)
        text = file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise KeyFileError(f"{file}: cannot read the gate's key: {error}") from None
    if mode & 0o077:
        raise KeyFileError(
            f"{file}: the gate's key file is mode {mode:o}, so others can read or change it; "
            f"make it the owner's only: chmod 600 {file}"
        )
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise KeyFileError(f"{file}: not a gate key ({KEY_BYTES} bytes written as hex)")
    return key


def _create(file: Path) -> None:
    """Write the key aside, then link it in: a reader never sees a half-written key."""
    file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    aside = file.with_name(f".{file.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(KEY_BYTES) + "\n")
        try:
            os.link(aside, file)
        except FileExistsError:
            pass  # another process made it first: use theirs
    except OSError as error:
        raise KeyFileError(f"{file}: cannot create the gate's key: {error}") from None
    finally:
        aside.unlink(missing_ok=True)


def seal_decision(key: bytes, sha256: str, policy_sha256: str, price_sha256: str,
                  status: str) -> str:  # fmt: skip
    """The HMAC-SHA256 of one decision: this source, under this policy, at this price, so."""
    message = "\x1f".join(("planlang-gate-decision-1", sha256, policy_sha256, price_sha256,
                           status)).encode()  # fmt: skip
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal_holds(key: bytes, row: dict[str, object]) -> bool:
    """Does a stored row's seal match its sha256, policy, price and decision?"""
    seal = row.get("seal")
    if not isinstance(seal, str):
        return False
    status = str(row["status"])
    sealed_as = [status]
    if status == "rejected":
        # A rejection only narrows what the gate issues, so a rejected row still sealed as held
        # (rejected before rejections were sealed, or stopped between the two writes) is taken
        # as rejected; the forgery that matters, a rejection taken away, breaks the seal.
        sealed_as.append("held")
    return any(
        hmac.compare_digest(seal_decision(key, str(row["sha256"]), str(row["policy_sha256"]),
                                          str(row["price_sha256"]), decision), seal)
        for decision in sealed_as
    )  # fmt: skip
