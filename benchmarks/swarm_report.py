"""The swarm's report: one run's JSON, the Markdown table and the chart of many runs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from swarm_plan import Assignment

POLICIES = ("none", "reservations", "proximity")
Run = dict[str, Any]


def report(tally: Any, a: Assignment, extra: dict[str, Any]) -> dict[str, Any]:
    d = dict(tally.__dict__)
    pairs = len(a.conflicts) // 2
    d.update(extra, trunk=a.trunk, merges=[p.branch.merge for p in a.plans],
             planned_commits=sum(len(p.commits) for p in a.plans),
             planned_conflicting_pairs=pairs, conflicting_pairs_planned=pairs,
             lanes_broken_alone=a.broken_alone)
    return d


def crossings(run: Run) -> list[dict[str, Any]]:
    """Each conflict at landing traced to the edits that made it: per file, the lanes that
    landed before it and changed that file, and which of the two sides came to the file
    second; that side's edits of the file made after the other's first are the crossing
    ones, with the word each was made on (allow; ask, and why where the check would have
    denied; forced by the deadlock breaker; a person's edit is what their editor showed)."""
    edits = run.get("edit_log", [])
    landed = {e["agent"]: e["step"] for e in run.get("land_log", [])}
    out = []
    for c in run.get("conflict_log", []):
        me, step = c["agent"], c["step"]
        for path in c["files"]:
            on = [e for e in edits if e["path"] == path]
            mine = [e for e in on if e["agent"] == me]
            for other in sorted({e["agent"] for e in on if e["agent"] != me
                                 and landed.get(e["agent"], step + 1) <= step}):
                theirs = [e for e in on if e["agent"] == other]
                if not mine or not theirs:
                    continue
                later, first = ((mine, theirs[0]["step"]) if mine[0]["step"] > theirs[0]["step"]
                                else (theirs, mine[0]["step"]))
                # made while the other side's change was live: after its first edit there,
                # up to the step it landed in (a step's edits come before its landings; an
                # edit onto landed work is made on top of it)
                gone = landed[other] if later is mine else step
                words = sorted({("person " if e["human"] else "") + e["decision"]
                                + (f" ({e['why']})" if e.get("why") else "")
                                for e in later if first <= e["step"] <= gone})
                if not words:
                    continue
                out.append({"agent": me, "step": step, "path": path, "other": other,
                            "second": later[0]["agent"], "words": words})
    return out


def load(files: Sequence[str]) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        runs += d.get("runs", [d])
    return runs


def repo_name(r: dict[str, Any]) -> str:
    """pallets/flask from a fetched snapshot's path (``.../pallets+flask/repo``)."""
    path = str(r["repository"]).rstrip("/")
    for part in reversed(path.split("/")):
        if "+" in part:
            return part.replace("+", "/")
    return os.path.basename(os.path.dirname(path)) or path


COLUMNS: tuple[tuple[str, Callable[[Run], Any]], ...] = (
    ("repository", lambda r: repo_name(r).split("/")[-1]),
    ("N", lambda r: r["agents"]),
    ("humans", lambda r: r.get("humans", 0)),
    ("seed", lambda r: r.get("seed", "")),
    ("policy", lambda r: r["policy"]),
    ("landed", lambda r: f"{r['landed']}/{r['agents']}"),
    ("conflicts at landing", lambda r: r["conflicts_at_landing"]),
    ("landed lines dropped", lambda r: r.get("dropped_at_landing", "–")),
    # a conflict at landing resolved free with the lane's side, or redone at a cost
    ("resolve (steps)", lambda r: f"{r.get('resolve', 'theirs')} ({r.get('resolve_steps', 0)})"),
    ("broken", lambda r: r["broken_at_landing"]),
    ("lane broke itself", lambda r: r.get("broken_by_own_lane", "–")),
    ("waiting steps", lambda r: r["waiting_steps"]),
    ("makespan", lambda r: r["makespan_steps"]),
    ("deadlocks (wait cycles)", lambda r: f"{r['deadlocks']} ({r.get('wait_cycles', '–')})"),
    ("denies (needless)", lambda r: f"{r['denies']} ({r['needless_denies']})"),
    ("land from", lambda r: r.get("land_from", "own")),
    ("merge denies", lambda r: r.get("merge_denies", 0)),
    ("push blocks", lambda r: r.get("push_blocks", 0)),
    ("lost / doubled events", lambda r: f"{r['lost_events']} / {r.get('doubled_events', 0)}"),
    ("pairs planned", lambda r: r.get("conflicting_pairs_planned",
                                      r.get("planned_conflicting_pairs"))),
    ("service peak MB", lambda r: r.get("peak_service_rss_mb") or "–"),
    ("check p95 ms", lambda r: r.get("check_p95_ms") or "–"),
    ("hook p95 ms", lambda r: r.get("hook_p95_ms") or "–"),
)


def table(files: Sequence[str]) -> str:
    """One Markdown row per run, grouped by repository, N and seed, policies in order."""
    runs = sorted(load(files), key=lambda r: (repo_name(r), r["agents"], r.get("seed", 0),
                                              POLICIES.index(r["policy"])))
    rows = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
            "|" + "---|" * len(COLUMNS)]
    rows += ["| " + " | ".join(str(get(r)) for _, get in COLUMNS) + " |" for r in runs]
    return "\n".join(rows)


def plot(files: Sequence[str], png: str) -> None:
    """Waiting steps, conflicts at landing, breaks at landing and the makespan per
    policy, one group per repository and N (summed over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load(files)
    groups = sorted({(repo_name(r), r["agents"]) for r in runs})
    panels = (("waiting_steps", "participant-steps spent waiting"),
              ("conflicts_at_landing", "conflicts at landing"),
              ("broken_at_landing", "broken at landing"),
              ("makespan_steps", "makespan (steps)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2))
    width = 0.8 / len(POLICIES)
    for ax, (key, title) in zip(axes, panels, strict=True):
        for k, policy in enumerate(POLICIES):
            ys = [sum(r[key] for r in runs if r["policy"] == policy and r["agents"] == n
                      and repo_name(r) == repo) for repo, n in groups]
            ax.bar([i + k * width for i in range(len(groups))], ys, width, label=policy)
        ax.set_xticks([i + width for i in range(len(groups))])
        ax.set_xticklabels([f"{repo.split('/')[-1]}\nN={n}" for repo, n in groups],
                           fontsize=8)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, max(1, ax.get_ylim()[1]))  # (an all-zero panel still reads as zero)
        ax.set_title(title)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
