"""A TCAS message as a person reads it: the inbox's text (hooks, `proximity inbox`, MCP, the
harnesses' context). The message itself is data (tcas.actions made it); everything in it
that came from another worktree is shown through the safe-text helpers."""

from __future__ import annotations

import shlex
import time
from typing import Any

from proximity.analysis import hunks
from proximity.analysis.intervals import fmt_ranges
from proximity.safetext import text


def sent_ago(created: object, now: float | None = None) -> str:
    """When a message's facts were true, for one read later: "" when it is fresh, else
    " when this was sent, 12 min ago (`proximity status`: now)"."""
    if not isinstance(created, (int, float)) or isinstance(created, bool):
        return ""
    age = (time.time() if now is None else now) - float(created)
    if age < 60:
        return ""
    ago = f"{age / 3600:.0f} h" if age >= 5400 else f"{age / 60:.0f} min"
    return f" when this was sent, {ago} ago (`proximity status`: now)"


# what the member a wait cycle's first waiter goes over is to do (its message, its denies)
# (a committed change cannot be stashed: it meets theirs when this one rebases onto it)
SET_ASIDE = ("set your uncommitted change there aside (`git stash push -- PATH`) and redo it "
             "once their work has landed; a committed one you resolve when you rebase onto it")


def render(msg: dict[str, Any]) -> str:
    b = msg.get("body", msg)
    kind = b.get("type", msg.get("type", ""))
    if kind == "landed":
        return landed(b, msg.get("landed") is True)
    if kind == "first":
        return goes_first(b)
    if kind == "waited":
        return waited_on(b)
    head = {"transmit": "TRANSMIT", "steer": "STEER AWAY", "hold": "HOLD COURSE"}.get(
        kind, "MESSAGE")
    lines = [f"proximity inbox: {head} from {text(b.get('from'))!r} "
             f"(branch {text(b.get('branch'))}), risk {text(b.get('risk'), 20)}"]
    if b.get("escalated") and b.get("advisory") != "resolution" and head != "TRANSMIT":
        # raised one level because the pair closes fast: advice, not a Resolution Advisory
        lines.append(f"  (escalated {text(b.get('advisory'), 20)} advisory, closing fast: no "
                     "push is blocked unless it becomes a resolution advisory)")
    for f in b.get("their_files", [])[:4]:
        rng = fmt_ranges([(s, e) for s, e in f["ranges"]])
        lines.append(f"  they touch {text(f['path'], 300)}{' lines ' + rng if rng else ''} "
                     f"({text(', '.join(f.get('channels', [f.get('channel', '?')])))})")
        if f.get("hunk"):
            lines += [f"    {text(ln, 300)}"
                      for ln in hunks.clip(str(f["hunk"]), 12, 1200).split("\n")]
    for detail in b.get("symbols", [])[:3]:
        lines.append(f"  symbol: {text(detail, 300)}")
    when = sent_ago(msg.get("created"))
    if b.get("last_commit"):
        lines.append(f"  their last commit{when}: {text(b['last_commit'])}")
    elif "last_commit" in b:
        lines.append(f"  they had not committed since your common base{when}: uncommitted "
                     "work only")
    if b.get("intents"):
        lines.append(f"  they intend: {text(', '.join(sorted(b['intents'])), 400)}")
    if b.get("avoid"):
        lines.append(f"  avoid: {text(', '.join(b['avoid']), 400)}")
        if b.get("elsewhere"):
            lines.append(f"  your files far from them: {text(', '.join(b['elsewhere']), 400)}")
        lines.append(f"  override: {text(b.get('override'))}")
    return "\n".join(lines)


def landed(b: dict[str, Any], confirmed: bool = False) -> str:
    """The work a worktree yielded to lands: rebase onto it, and the yield ends.
    ``confirmed``: the remote-tracking ref shows the push went through (snapshot.delivery
    holds the message until then); else (a push by URL leaves no such ref) it was said as
    the push began, before the remote took it: "being pushed", to rebase onto once there."""
    onto = text(b.get("onto"), 200)
    # the remote it was pushed to, as the pusher named it (a name, or a URL)
    remote = text(b.get("remote"), 300) if b.get("remote") else ""
    to = f" to {remote}" if remote else ""
    # a command a person may copy into a shell: every name in it quoted for one (a remote
    # or branch name may hold backticks, `$(…)`, `;`: git allows them)
    pull = (f"`git pull --rebase {shlex.quote(remote)} {shlex.quote(onto)}`" if remote
            else f"`git pull --rebase` from the remote holding {onto}")
    who = f"the work of {text(b.get('from'))!r} (branch {text(b.get('branch'))})"
    if confirmed:
        head = (f"proximity inbox: LANDING: {who} landed as {onto} on {remote}, pushed from "
                f"{text(b.get('by'))!r}.\n")
        there, when = f"it is on {onto} now", "now"
    else:
        head = (f"proximity inbox: LANDING: {who} is being pushed as {onto}{to} from "
                f"{text(b.get('by'))!r}.\n")
        there, when = f"once it is on {onto}", "once it is there"
    if b.get("over") is True:
        # (it was told to yield to the recipient and went on anyway: landed work holds)
        return (head + f"  it was told to yield to you and overrode the guard: {there}, your "
                f"lines there meet it and you yield; rebase onto it ({pull}, or `git "
                f"rebase` onto the landed {onto}) and keep their lines as you redo yours")
    return (head + f"  you were told to yield to it: rebase onto it {when} ({pull}, or `git "
            f"rebase` onto the landed {onto}); the yield ends when your work is on top of "
            "theirs")


def goes_first(b: dict[str, Any]) -> str:
    """A wait cycle was broken in the sender's favour: it goes on over the recipient's live
    lines (each waited on the other's work, and it waited longest)."""
    paths = ", ".join(text(p, 300) for p in b.get("paths", [])[:8]) or "?"
    return (f"proximity inbox: GOES FIRST: {text(b.get('from'))!r} goes on over your live "
            f"lines in {paths}: you and they wait on each other's work, and they waited "
            f"longest.\n  {SET_ASIDE}")


# what a holder others wait on alone can do (its WAITED ON message)
YIELD_LINES = ("They go on as soon as that change lands, or leaves: an uncommitted one can be "
               "set aside (`git stash push -- PATH`) and redone after your other work")


def waited_on(b: dict[str, Any]) -> str:
    """The sender was denied on the recipient's live lines and waits for them."""
    paths = ", ".join(text(p, 300) for p in b.get("paths", [])[:8]) or "?"
    head = (f"proximity inbox: WAITED ON: {text(b.get('from'))!r} waits for your live lines "
            f"in {paths} (denied there until your work lands")
    if b.get("alone") is not True:  # (set aside, their other waits would still hold them)
        return head + "; they wait on others' lines as well).\n  Land that change soon"
    return head + f"; your lines are all they wait for).\n  {YIELD_LINES}"
