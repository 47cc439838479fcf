"""Data from other people: the remote snapshot schema, its limits, and safe text.

Everything fetched from a remote (``refs/ecm/*`` metadata, branch names, subjects, worktree
and machine ids, paths in their trees) is untrusted. ``parse_meta`` accepts only schema
version 1 within the limits below and raises ``Invalid`` (a one-line reason) otherwise; it
never recurses on the input, so no nesting depth can raise ``RecursionError``. ``text``
strips control characters and escape sequences (C0, C1, DEL, bidi overrides, lone
surrogates) and bounds the length of any string before it reaches a terminal, a hook's
output, a message or a page. Pure functions, no git.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from proximity.safetext import depth, opt_text, text

SCHEMA = 1
MAX_META_BYTES = 16 * 1024  # the JSON metadata of one snapshot commit
MAX_COMMIT_BYTES = MAX_META_BYTES + 4096  # the whole commit object (headers, subject line)
MAX_REFS_PER_MACHINE = 64
MAX_REFS = 512
MAX_DEPTH = 4  # {"clock": {...}} is depth 2; anything much deeper is not ours
MAX_ID = 128  # machine and worktree ids
MAX_BRANCH = 255
MAX_SUBJECT = 1024  # accepted; shown at most SHOW_SUBJECT characters
SHOW_SUBJECT = 200
MAX_CLOCK_ENTRIES = 256
MAX_CLOCK_VALUE = 2**53  # exact in a float, far beyond any real hop count
MAX_TIME = 2.0**40  # seconds since the epoch (year ~36800): finite and comparable

_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
_MACHINE = re.compile(r"[A-Za-z0-9._-]{1,128}\Z")
class Invalid(ValueError):
    """Metadata that does not meet the schema; the message says why, in a few words."""


class Meta(NamedTuple):
    """Validated snapshot metadata (schema 1); strings are already safe to show."""

    machine: str
    worktree: str
    branch: str | None
    head: str | None
    clock: dict[str, int]
    time: float  # claimed; informational only, never decides anything
    created: float  # claimed stream creation, bounded by the caller with first-seen
    subject: str


def _no_constants(name: str) -> Any:
    raise Invalid(f"non-finite number {name}")


def load_json(raw: bytes) -> Any:
    """JSON within the byte and depth limits, without NaN/Infinity; else ``Invalid``."""
    if len(raw) > MAX_META_BYTES:
        raise Invalid(f"metadata is {len(raw)} bytes (limit {MAX_META_BYTES})")
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Invalid("metadata is not UTF-8") from e
    if depth(s) > MAX_DEPTH:
        raise Invalid(f"metadata nests deeper than {MAX_DEPTH}")
    try:
        return json.loads(s, parse_constant=_no_constants)
    except Invalid:
        raise
    except (ValueError, RecursionError) as e:
        raise Invalid(f"metadata is not JSON ({type(e).__name__})") from e


def _string(d: dict[str, Any], key: str, limit: int, *, optional: bool = False) -> str | None:
    v = d.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise Invalid(f"{key} must be a string")
    if len(v) > limit:
        raise Invalid(f"{key} is longer than {limit} characters")
    return v


def _number(d: dict[str, Any], key: str) -> float:
    v = d.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise Invalid(f"{key} must be a number")
    if not math.isfinite(v) or not 0 <= v <= MAX_TIME:
        raise Invalid(f"{key} is out of range")
    return float(v)


def clock(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise Invalid("clock must be an object")
    if len(value) > MAX_CLOCK_ENTRIES:
        raise Invalid(f"clock has more than {MAX_CLOCK_ENTRIES} entries")
    out: dict[str, int] = {}
    for k, v in value.items():
        if len(k) > MAX_ID:
            raise Invalid("clock key is too long")
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_CLOCK_VALUE:
            raise Invalid("clock values must be integers in [0, 2^53]")
        out[text(k, MAX_ID)] = v
    return out


def parse_meta(raw: bytes) -> Meta:
    """Validate one snapshot's metadata (the JSON in its commit message)."""
    d = load_json(raw)
    if not isinstance(d, dict):
        raise Invalid(f"metadata is a JSON {type(d).__name__}, not an object")
    version = d.get("schema")
    if version != SCHEMA:
        raise Invalid("no schema version" if version is None
                      else f"schema {text(version, 20)!r} is not {SCHEMA} (another version)")
    machine = _string(d, "machine", MAX_ID) or ""
    if not _MACHINE.match(machine):
        raise Invalid("machine id has characters outside [A-Za-z0-9._-]")
    worktree = _string(d, "worktree", MAX_ID) or ""
    if not worktree:
        raise Invalid("worktree id is empty")
    head = _string(d, "head", 64, optional=True)
    if head is not None and not _OID.match(head):
        raise Invalid("head is not a commit id")
    return Meta(machine=machine, worktree=text(worktree, MAX_ID),
                branch=opt_text(_string(d, "branch", MAX_BRANCH, optional=True), MAX_BRANCH),
                head=head, clock=clock(d.get("clock", {})), time=_number(d, "time"),
                created=_number(d, "created"),
                subject=text(_string(d, "subject", MAX_SUBJECT, optional=True) or "",
                             SHOW_SUBJECT))


def commit_message(raw: bytes) -> tuple[str | None, list[str], bytes]:
    """(tree, parents, JSON body) of a raw snapshot commit object; ``Invalid`` if it is not
    shaped like one (a subject line, a blank line, then the JSON)."""
    if len(raw) > MAX_COMMIT_BYTES:
        raise Invalid(f"commit is {len(raw)} bytes (limit {MAX_COMMIT_BYTES})")
    header, sep, message = raw.partition(b"\n\n")
    if not sep:
        raise Invalid("commit has no message")
    tree, parents = None, []
    for line in header.split(b"\n"):
        if line.startswith(b"tree "):
            tree = line[5:].decode("ascii", "replace")
        elif line.startswith(b"parent "):
            parents.append(line[7:].decode("ascii", "replace"))
    _subject, sep, body = message.partition(b"\n\n")
    if not sep:
        raise Invalid("commit message has no metadata")
    if tree is None or not _OID.match(tree) or not all(_OID.match(p) for p in parents):
        raise Invalid("commit header is malformed")
    return tree, parents, body.strip()
