"""`proximity service start|stop|status`: see or control the resident airspace service."""

from __future__ import annotations

import argparse
import json
import os
import time

from proximity import gitio
from proximity.errors import DamagedObject, FatalError
from proximity.gitio import loose
from proximity.service import client
from proximity.service.report import ServiceReport, service_state


def _wait(until: float, ready: bool, common: str) -> bool:
    while time.monotonic() < until:
        if ready:
            answer = client.request(common, {"op": "ping"}, budget=0.5)
            if answer is not None and answer.get("ready"):
                return True
        elif not client._alive(common):
            return True
        time.sleep(0.05)
    return False


def start(common: str, timeout: float = 30.0) -> bool:
    """Start the service (if none runs) and wait until it answers, warm; False at once
    when it could never listen where its socket goes (client.squatted says why)."""
    if not client.enabled():
        raise FatalError("PROXIMITY_SERVICE=0 is set: the service is turned off")
    if client.squatted(common) is not None:
        return False
    if not client._alive(common):
        client.start(common)
    return _wait(time.monotonic() + timeout, True, common)


def stop(common: str, timeout: float = 10.0) -> bool:
    """Ask the service to shut down and wait until its lock is free (see ``ended``)."""
    return ended(common, timeout) is not None


def ended(common: str, timeout: float = 10.0) -> str | None:
    """Ask the service to shut down and wait until its lock is free; one that neither
    answers nor goes within ``timeout`` (wedged, stopped) is ended by signal. How it
    went: "" asked, or the signal that ended it; None: it is still there."""
    if not client._alive(common):
        return ""
    answered = client.request(common, {"op": "shutdown"}, budget=1.0) is not None
    if _wait(time.monotonic() + (timeout if answered else min(timeout, 5.0)), False, common):
        return ""
    how = client.end(common)
    if how:  # (wedged, perhaps on a loose file cut short in place since its audit: the
        # next service audits every loose file again)
        loose.forget(common)
    return how


def _damaged(repo: gitio.Repo) -> None:
    """Before a start: a damaged object the service would wedge on, or not start for, is
    said at once (DamagedObject). One already running that answers not even a ping may
    be wedged on a loose file cut short in place since its audit: every loose file is
    audited again, and a service found wedged on one is ended."""
    common = repo.common
    wedged = client.unanswering(common)
    try:
        repo.check_loose(distrust=wedged)
    except DamagedObject as e:
        if wedged and client.end(common):
            raise DamagedObject(f"{e}; the service, wedged on it, was ended") from e
        raise


def _text(state: ServiceReport) -> str:
    st = state.get("status")
    if state.get("refused"):
        return (f"service: not used: {state['refused']} (another user's, or a link); hooks "
                f"judge in process\n  socket: {state['socket']}")
    if not state["running"]:
        stale = " (a stale socket is left; the next start replaces it)" \
            if state["stale_socket"] else ""
        return f"service: not running{stale}\n  socket: {state['socket']}"
    if not isinstance(st, dict):
        return f"service: running but not answering (busy?)\n  socket: {state['socket']}"
    lines = [f"service: running, pid {st['pid']}, up {st['uptime']:.0f} s, "
             f"{'ready' if st['ready'] else 'warming up'}",
             f"  socket: {st['socket']}",
             f"  worktrees: {', '.join(st['worktrees']) or '-'}",
             f"  requests {st['requests']}, file events {st['file_events']}, scans "
             f"{st['scans']}, messages sent {st['messages_sent']}, last scan "
             f"{st['last_scan_ms']} ms",
             f"  resident memory: {(st['rss_kb'] or 0) / 1024:.0f} MiB; exits after "
             f"{st['idle_timeout']:.0f} s idle"]
    if st.get("error"):
        lines.append(f"  error: {st['error']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    repo = gitio.Repo(args.repo or os.getcwd())
    common = repo.common
    if args.action == "start":
        _damaged(repo)
    ok = True
    stopped: dict[str, object] | None = None
    refused = client.squatted(common) if args.action == "start" else None
    if refused is not None:
        ok = False  # (known at once: waiting would only delay the same answer)
    elif args.action == "start":
        ok = start(common)
    elif args.action == "stop":
        before = service_state(common)
        how = ended(common)
        ok = how is not None
        if before["running"]:  # what was running, read before it is gone
            st, rec = (x if isinstance(x, dict) else {}
                       for x in (before.get("status"), before.get("recorded")))
            stopped = {"pid": st.get("pid") or rec.get("pid"), "uptime": st.get("uptime"),
                       "worktrees": st.get("worktrees"), "signal": how or None}
    state = service_state(common)
    if args.json:
        doc = {"action": args.action, "ok": ok, **state}
        if args.action == "stop":
            doc["stopped"] = stopped
        print(json.dumps(doc, indent=2))
    else:
        if refused is not None:
            print(f"proximity: service start refused: {refused}; hooks judge in process "
                  "(the guard stays on). Remove that path, or set XDG_RUNTIME_DIR to a "
                  "private directory of yours")
        elif not ok:
            print(f"proximity: service {args.action} did not finish in time")
        elif args.action == "stop":
            print(_stopped(stopped, common))
        print(_text(state))
    return 0 if ok else 1


def _stopped(stopped: dict[str, object] | None, common: str) -> str:
    if stopped is None:
        return f"proximity: no service was running for {common}"
    up = stopped.get("uptime")
    trees = stopped.get("worktrees")
    sig = stopped.get("signal")
    return (f"proximity: stopped the service of {common}: pid {stopped.get('pid')}"
            + (f", up {up:.0f} s" if isinstance(up, (int, float)) else "")
            + (f", watching {', '.join(str(t) for t in trees)}"
               if isinstance(trees, list) and trees else "")
            + (f" (it did not answer: ended with {sig})" if sig else ""))
