"""The near-miss benchmark labels by running: one breaking case and its near miss, end to end.

A tiny repository (built here, not a fetched one) has a real function; the benchmark finds
it, adds a required (breaking) and an optional (near-miss) parameter on side A, adds new code
calling it on side B, merges them with git and runs the merged code, then scans the pair as
live worktrees.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from conftest import init_repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import nearmiss

FILES = {
    "src/geo/__init__.py": "",
    "src/geo/shapes.py": '"""Shapes."""\n\n\ndef area(w, h):\n    return w * h\n',
    "src/geo/rooms.py": "from geo.shapes import area\n\n\ndef room():\n    return area(3, 4)\n",
}


def test_breaking_and_near_miss_are_labelled_by_running(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "geo", FILES)
    rows_path = tmp_path / "rows.jsonl"
    res = nearmiss.evaluate({"geo": str(repo / ".git")}, per_kind=1, seed=1, swap_every=1,
                            families=["param-required"], limit=None,
                            rows_out=str(rows_path))
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    live = {r["variant"]: r for r in rows if r["arrangement"] == "A-committed"}
    assert live["breaking"]["label"] == "collision"
    assert "missing 1 required positional argument" in live["breaking"]["why"]
    assert live["near-miss"]["label"] == "clean"
    assert {r["target"] for r in rows} == {"geo.shapes.area"}
    for r in rows:
        assert r["kind"] == "param-required"
        assert r["advisory"] in ("clear", "traffic", "resolution")
        assert set(r["channels"]) >= {"symbol", "dependency"}
    # the swapped arrangement (B committed, A live) is scanned too, with the same labels
    swapped = {r["variant"]: r["label"] for r in rows if r["arrangement"] == "B-committed"}
    assert swapped == {"breaking": "collision", "near-miss": "clean"}
    assert res["collisions"] == 1 and res["clean_near_misses"] == 1
    assert res["by_kind"]["param-required"]["labels"] == {"collision": 1, "clean": 1}
    # the fetched (here: tiny) repository itself is never written to
    assert sorted(os.listdir(repo / "src" / "geo")) == ["__init__.py", "rooms.py", "shapes.py"]


SHOP = {
    "src/shop/__init__.py": "from shop.cart import Cart\n",
    "src/shop/cart.py": '"""Carts."""\n\n\nclass Cart:\n    def __init__(self, owner):\n'
                        "        self.owner = owner\n\n    def total(self):\n        return 0\n",
}


def test_a_method_reached_through_the_package_or_an_instance_is_labelled_by_running(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "shop", SHOP)
    rows_path = tmp_path / "rows.jsonl"
    nearmiss.evaluate({"shop": str(repo / ".git")}, per_kind=1, seed=1, swap_every=0,
                      families=["reexport-method", "instance-method"], limit=None,
                      rows_out=str(rows_path))
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    got = {(r["kind"], r["variant"]): r for r in rows}
    for kind in ("reexport-method", "instance-method"):
        assert got[(kind, "breaking")]["label"] == "collision", got[(kind, "breaking")]
        assert "total() missing 1 required positional argument" in got[(kind, "breaking")]["why"]
        assert got[(kind, "near-miss")]["label"] == "clean"
    assert {r["target"] for r in rows} == {"shop.cart.Cart"}
