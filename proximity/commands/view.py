"""`proximity view`: one self-contained HTML page (works offline) of the 3-D airspace."""

from __future__ import annotations

import argparse
import json
import os
import webbrowser
from importlib import resources
from typing import Any

from proximity.remote.untrusted import opt_text, text
from proximity.snapshot import workspace
from proximity.tcas import pipeline
from proximity.tcas.engine import Scan
from proximity.views import embedding, report

MAX_FILES = 4000  # the agents' files and their neighbours always; a stable sample of the rest


def data(result: Scan, repo_name: str) -> dict[str, Any]:
    graph = result.graph
    changed = {a.id: sorted(result.changed.get(a.id, ())) for a in result.agents}
    touched = {p for files in changed.values() for p in files}

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
    agents = []
    spread = max((abs(v) for c in coords.values() for v in c), default=1.0) * 0.12
    taken: list[tuple[float, ...]] = []
    for a in result.agents:
        pos = embedding.centroid({p: 1.0 for p in changed[a.id]}, coords)
        if pos is not None:
            # agents on the very same files would coincide: a small offset, stable per id
            while any(sum((x - y) ** 2 for x, y in zip(pos, t, strict=True)) < (spread / 3) ** 2
                      for t in taken):
                u = embedding._unit("agent:" + a.id + str(len(taken)))
                pos = (round(pos[0] + spread * u[0], 5), round(pos[1] + spread * u[1], 5),
                       round(pos[2] + spread * u[2], 5))
            taken.append(pos)
        agents.append({"id": text(a.id), "branch": opt_text(a.branch), "remote": a.remote,
                       "files": [text(p, 300) for p in changed[a.id]],
                       "position": None if pos is None else dict(zip("xyz", pos, strict=True))})
    links = [{"a": text(p.a), "b": text(p.b), "risk": round(p.risk, 4), "advisory": p.advisory,
              "yielding": opt_text(p.yielding), "channels": report.pair_json(p)["channels"],
              "where": [x.strip() for x in report.evidence_lines(p, limit=3)]}
             for p in result.pairs]
    return {"schema": 1, "repo": text(repo_name),
            "files": [{"path": text(p, 300), "x": c[0], "y": c[1], "z": c[2],
                       "agents": [text(x) for x in by_file.get(p, [])]}
                      for p, c in coords.items()],
            "agents": agents, "links": links}


def html(payload: dict[str, Any]) -> str:
    template = resources.files("proximity").joinpath("assets/view.html").read_text()
    blob = json.dumps(payload).replace("</", "<\\/")
    return template.replace("/*DATA*/", blob)


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo)
    try:
        result = pipeline.run_scan(ctx)
        payload = data(result, os.path.basename(ctx.repo.workdir))
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
