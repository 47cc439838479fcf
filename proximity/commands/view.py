"""`proximity view`: one self-contained HTML page (works offline) of the 3-D airspace."""

from __future__ import annotations

import argparse
import json
import os
import webbrowser
from collections.abc import Mapping
from importlib import resources
from typing import Any

from proximity import gitio
from proximity.errors import FatalError
from proximity.model import Scan
from proximity.safetext import opt_text, text
from proximity.snapshot import workspace
from proximity.tcas import pipeline
from proximity.views import embedding, report, timeline

MAX_FILES = 4000  # the agents' files and their neighbours always; a stable sample of the rest


def data(result: Scan, repo_name: str,
         history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The page's data: the airspace now, and ``history`` (the ledger's frames, oldest
    first) placed in the same embedding."""
    graph = result.graph
    changed = {a.id: sorted(result.changed.get(a.id, ())) for a in result.agents}
    touched = {p for files in changed.values() for p in files}
    # a file an agent changed once (and reverted since) must have a place in the map too
    touched |= {p for f in history or () for files in f["agents"].values() for p in files}

    def neighbours(p: str) -> Any:
        return graph.neighbors(p) if graph is not None else ()

    near = set(touched)
    for p in touched:
        near.update(neighbours(p))
    rest = sorted(set(result.paths) - near, key=lambda p: embedding._unit(p)[0])
    paths = sorted(near | set(rest[: max(0, MAX_FILES - len(near))]))
    coords = embedding.layout(paths, neighbours)
    by_file: dict[str, list[str]] = {}
    for aid, files in changed.items():
        for p in files:
            by_file.setdefault(p, []).append(aid)
    spread = max((abs(v) for c in coords.values() for v in c), default=1.0) * 0.12
    pos = place(changed, coords, spread)
    agents = [{"id": text(a.id), "branch": opt_text(a.branch), "remote": a.remote,
               "files": [text(p, 300) for p in changed[a.id]],
               "position": pos.get(a.id)} for a in result.agents]
    links = [{"a": text(p.a), "b": text(p.b), "risk": round(p.risk, 4), "advisory": p.advisory,
              "yielding": opt_text(p.yielding), "channels": report.pair_json(p)["channels"],
              "where": [x.strip() for x in report.evidence_lines(p, limit=3)]}
             for p in result.pairs]
    frames = []
    for f in history or ():
        at = place(f["agents"], coords, spread)
        frames.append({**f, "agents": [{"id": k, "files": v[:20], "changed": len(v),
                                        "position": at.get(k)}
                                       for k, v in f["agents"].items()]})
    return {"schema": 1, "repo": text(repo_name),
            "files": [{"path": text(p, 300), "x": c[0], "y": c[1], "z": c[2],
                       "agents": [text(x) for x in by_file.get(p, [])]}
                      for p, c in coords.items()],
            "agents": agents, "links": links, "timeline": frames}


def place(changed: Mapping[str, list[str]], coords: Mapping[str, embedding.Vec],
          spread: float) -> dict[str, dict[str, float] | None]:
    """Each agent at the centroid of the files it changed (None: it changed none)."""
    out: dict[str, dict[str, float] | None] = {}
    taken: list[embedding.Vec] = []
    for aid in changed:
        pos = embedding.centroid({p: 1.0 for p in changed[aid]}, coords)
        if pos is not None:
            # agents on the very same files would coincide: a small offset, stable per id
            while any(sum((x - y) ** 2 for x, y in zip(pos, t, strict=True)) < (spread / 3) ** 2
                      for t in taken):
                u = embedding._unit("agent:" + aid + str(len(taken)))
                pos = (round(pos[0] + spread * u[0], 5), round(pos[1] + spread * u[1], 5),
                       round(pos[2] + spread * u[2], 5))
            taken.append(pos)
        out[aid] = None if pos is None else dict(zip("xyz", pos, strict=True))
    return out


def history(ctx: workspace.Context) -> list[dict[str, Any]]:
    """The ledger's frames (empty without a ledger or with nothing recorded)."""
    if ctx.ledger is None:
        return []
    memo: dict[tuple[str, str], list[str]] = {}

    def committed(base: str, head: str) -> list[str]:
        if (base, head) not in memo:
            try:
                out = gitio.git(["diff", "--name-only", "-z", "--no-renames", base, head],
                                cwd=ctx.repo.here).stdout
                memo[base, head] = [p for p in out.decode(errors="surrogateescape")
                                    .split("\0") if p]
            except FatalError:  # a commit gc dropped, or one from another machine
                memo[base, head] = []
        return memo[base, head]

    return timeline.frames(ctx.ledger, committed)


def html(payload: dict[str, Any]) -> str:
    template = resources.files("proximity").joinpath("assets/view.html").read_text()
    blob = json.dumps(payload).replace("</", "<\\/")
    return template.replace("/*DATA*/", blob)


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo)
    try:
        result = pipeline.run_scan(ctx)
        payload = data(result, os.path.basename(ctx.repo.workdir),
                       [] if args.no_timeline else history(ctx))
    finally:
        ctx.close()
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    out = args.out or os.path.join(ctx.repo.ecm_dir, "view.html")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(html(payload))
    print(out)
    if args.open:
        webbrowser.open("file://" + os.path.abspath(out))
    return 0
