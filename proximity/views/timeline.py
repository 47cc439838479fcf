"""The recorded airspace: the ledger's history as a bounded sequence of frames.

Each snapshot event and each batch of risk samples (one scan) becomes a frame: what every
agent had changed at that moment, every pair's latest risk sample at or before it, who was
told to yield, and what happened since the frame before ("alice commit", "RA alice~bob",
"steer → bob from alice"). The 3-D view places the agents of each frame in the same
embedding as its one-moment view, so playing the frames shows them move.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from proximity.ledger import Ledger
from proximity.safetext import text

MAX_FRAMES = 500  # a long history is thinned evenly: the page stays small and smooth
MAX_NOTES = 12  # what happened, per frame (the rest is summarised as "… and N more")
SHORT = {"resolution": "RA", "traffic": "TA", "clear": "clear"}

Committed = Callable[[str, str], list[str]]  # (base commit, head) -> files changed between


def _pair(a: str, b: str) -> str:
    return "~".join(sorted((a, b)))


def _items(led: Ledger) -> list[tuple[float, int, str, Any]]:
    """Events, risk batches and messages in the order they happened: (time, order within
    the same instant, what, row). A scan records its risk after the event it judged and
    posts its messages after that, which the order key keeps."""
    db = led.db
    out: list[tuple[float, int, str, Any]] = []
    for row in db.execute("SELECT seq, stream, kind, head, files, time FROM events ORDER BY seq"):
        out.append((float(row[5]), 0, "event", row))
    batches: dict[float, list[tuple[str, str, float, str]]] = {}
    for a, b, r, adv, t in db.execute("SELECT a, b, risk, advisory, time FROM risk ORDER BY seq"):
        batches.setdefault(float(t), []).append((str(a), str(b), float(r), str(adv)))
    out += [(t, 1, "risk", rows) for t, rows in batches.items()]
    for row in db.execute("SELECT recipient, sender, type, created FROM inbox ORDER BY id"):
        out.append((float(row[3]), 2, "message", row))
    return sorted(out, key=lambda i: (i[0], i[1]))


def _standing(led: Ledger) -> dict[str, tuple[str, int]]:
    """Each pair's standing right-of-way decision: (the side told to yield, the ledger
    order from which it stands)."""
    out: dict[str, tuple[str, int]] = {}
    for key, value in led.db.execute("SELECT key, value FROM cache WHERE kind='right-of-way'"):
        a, _, b = str(key).partition("\t")
        try:
            got = json.loads(value)
            out[_pair(a, b)] = (str(got[0]), int(got[1]))
        except (ValueError, TypeError, IndexError):
            continue
    return out


class _State:
    """The airspace as the ledger had it at one moment, replayed item by item."""

    def __init__(self) -> None:
        self.base: dict[str, str] = {}  # stream -> the head of its first recorded event
        self.live: dict[str, dict[str, str]] = {}  # stream -> uncommitted changed files
        self.head: dict[str, str] = {}  # stream -> its head now
        self.pairs: dict[str, dict[str, Any]] = {}
        self.told: dict[str, str] = {}  # pair -> the side the latest steer told to yield
        self.seq = 0

    def event(self, row: tuple[Any, ...]) -> str:
        seq, stream, kind, head, files, _ = row
        self.seq = int(seq)
        live = self.live.setdefault(stream, {})
        for path, blob in json.loads(files).items():  # a delta since the stream's last event
            if blob is None:
                live.pop(path, None)
            else:
                live[path] = blob
        if head:
            self.base.setdefault(stream, head)
            self.head[stream] = head
        return f"{text(stream)} {text(kind, 40)}"

    def risk(self, rows: list[tuple[str, str, float, str]]) -> list[str]:
        notes = []
        for a, b, r, adv in rows:
            key = _pair(a, b)
            before = self.pairs.get(key, {}).get("advisory", "clear")
            self.pairs[key] = {"a": text(a), "b": text(b), "risk": round(r, 4), "advisory": adv}
            if adv != before:
                notes.append(f"{SHORT.get(adv, adv)} {text(key)}")
        return notes

    def message(self, row: tuple[Any, ...]) -> str:
        recipient, sender, kind, _ = row
        if kind == "steer":
            self.told[_pair(recipient, sender)] = recipient
        return f"{text(kind, 20)} → {text(recipient)} from {text(sender)}"

    def frame(self, t: float, notes: list[str], standing: dict[str, tuple[str, int]]
              ) -> dict[str, Any]:
        # what it committed is asked of git only for the frames kept (see resolve)
        agents = {stream: (sorted(self.live.get(stream, {})), self.base.get(stream),
                           self.head.get(stream))
                  for stream in sorted(set(self.live) | set(self.head))}
        pairs = []
        for key in sorted(self.pairs):
            p = dict(self.pairs[key])
            held = standing.get(key)
            p["yielding"] = None
            if p["advisory"] == "resolution":
                # the steer message names the side told to yield as it was told; a standing
                # decision (kept without a message, e.g. in cooldown) counts from its order
                p["yielding"] = self.told.get(key) or (
                    text(held[0]) if held and held[1] <= self.seq else None)
            pairs.append(p)
        if len(notes) > MAX_NOTES:
            notes = [*notes[:MAX_NOTES], f"… and {len(notes) - MAX_NOTES} more"]
        return {"time": round(t, 3), "seq": self.seq, "agents": agents, "pairs": pairs,
                "events": notes}


def frames(led: Ledger, committed: Committed) -> list[dict[str, Any]]:
    """The recorded airspace, oldest first, at most ``MAX_FRAMES`` frames. ``committed``
    names the files a stream committed between its first recorded head and a later one."""
    state = _State()
    standing = _standing(led)
    out: list[dict[str, Any]] = []
    for t, _, what, row in _items(led):
        if what == "message":
            note = state.message(row)
            if out:  # a message belongs to the scan that posted it, just before
                out[-1]["events"].append(note)
                # and a steer names who that scan told to yield: its frame says so (the
                # decision itself may be gone since, released when the pair cleared)
                for pair in out[-1]["pairs"]:
                    key = _pair(pair["a"], pair["b"])
                    if pair["advisory"] == "resolution" and key in state.told:
                        pair["yielding"] = text(state.told[key])
            continue
        notes = [state.event(row)] if what == "event" else state.risk(row)
        out.append(state.frame(t, notes, standing))
    return [resolve(f, committed) for f in thin(out)]


def resolve(frame: dict[str, Any], committed: Committed) -> dict[str, Any]:
    """The frame with each agent's files: uncommitted, and committed since its base."""
    agents = {}
    for stream, (live, base, head) in frame["agents"].items():
        done = committed(base, head) if base and head and head != base else []
        agents[text(stream)] = [text(p, 300) for p in sorted(set(live) | set(done))]
    return {**frame, "agents": agents}


def thin(seq: list[dict[str, Any]], most: int = MAX_FRAMES) -> list[dict[str, Any]]:
    """Keep ``most`` frames evenly spread, always the first and the last; a dropped
    frame's events move to the next kept one, so the list still says everything."""
    if len(seq) <= most:
        return seq
    keep = {round(i * (len(seq) - 1) / (most - 1)) for i in range(most)}
    out: list[dict[str, Any]] = []
    carried: list[str] = []
    for i, f in enumerate(seq):
        if i not in keep:
            carried += f["events"]
            continue
        notes = carried + f["events"]
        carried = []
        if len(notes) > MAX_NOTES:
            notes = [*notes[:MAX_NOTES], f"… and {len(notes) - MAX_NOTES} more"]
        out.append({**f, "events": notes})
    return out
