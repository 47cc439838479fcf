"""Property tests: interval arithmetic against a naive per-line model; noisy-OR bounds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from proximity.analysis import intervals
from proximity.tcas import risk

rng = st.integers(min_value=1, max_value=60).flatmap(
    lambda s: st.tuples(st.just(s), st.integers(min_value=s - 1, max_value=s + 8)))
ranges = st.lists(rng, min_size=1, max_size=6)


def naive_touch(a, b):
    # git: two changes conflict when no unchanged base line separates them
    return any(s2 <= e1 + 1 and s1 <= e2 + 1 for s1, e1 in a for s2, e2 in b)


def naive_gap(a, b):
    best = None
    for s1, e1 in a:
        for s2, e2 in b:
            if s2 <= e1 + 1 and s1 <= e2 + 1:
                return 0
            d = s2 - e1 - 1 if s2 > e1 else s1 - e2 - 1
            best = d if best is None else min(best, d)
    return best


@given(ranges, ranges)
def test_touching_matches_gits_rule(a, b):
    assert bool(intervals.touching(a, b)) == naive_touch(a, b)
    assert (intervals.intersection(intervals.pad(a), intervals.pad(b)) > 0) == naive_touch(a, b)


@given(ranges, ranges)
def test_gap_matches_naive(a, b):
    assert intervals.gap(a, b) == naive_gap(a, b)


@given(ranges, ranges)
def test_overlap_coefficient_bounds_and_symmetry(a, b):
    c = intervals.overlap_coefficient(a, b)
    assert 0.0 <= c <= 1.0
    assert c == intervals.overlap_coefficient(b, a)
    assert (c > 0) == naive_touch(a, b)


@given(ranges)
def test_self_overlap_is_one(a):
    assert intervals.overlap_coefficient(a, a) == 1.0


def test_huge_ranges_are_cheap():
    big = [(1, 2_000_000)]
    assert intervals.overlap_coefficient(big, [(1_000_000, 3_000_000)]) > 0.4
    many = [(i * 3, i * 3) for i in range(1, 200_000)]
    assert intervals.touching(many, [(599_998, 599_998)])
    assert not intervals.touching(many, [(600_001, 600_001)])


@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]),
                       st.one_of(st.none(), st.floats(0, 1))),
       st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(0, 1)))
def test_noisy_or_bounds(values, weights):
    r = risk.noisy_or(values, weights)
    assert 0.0 <= r <= 1.0
    for k, v in values.items():
        if v is not None:
            assert r >= weights.get(k, 0.0) * v - 1e-12
    assert r <= sum(weights.get(k, 0.0) * (v or 0) for k, v in values.items()) + 1e-12


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
@settings(max_examples=200)
def test_noisy_or_monotone(x, y, w):
    lo, hi = sorted((x, y))
    assert risk.noisy_or({"c": lo}, {"c": w}) <= risk.noisy_or({"c": hi}, {"c": w}) + 1e-12


def test_right_of_way_is_antisymmetric():
    pa, pb = risk.priority(2, 10.0, "a"), risk.priority(1, 5.0, "b")
    assert risk.yielding("a", pa, "b", pb) == risk.yielding("b", pb, "a", pa) == "b"
    pa, pb = risk.priority(1, 10.0, "a"), risk.priority(1, 5.0, "b")
    assert risk.yielding("a", pa, "b", pb) == "a"  # b started earlier
    pa, pb = risk.priority(1, None, "a"), risk.priority(1, None, "b")
    assert risk.yielding("a", pa, "b", pb) == "b"  # stable id tiebreak


paths = st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=3).flatmap(
    lambda dirs: st.sampled_from(["x.py", "y.py"]).map(lambda f: "/".join([*dirs, f])))


@given(st.lists(paths, min_size=1, max_size=6), st.lists(paths, min_size=1, max_size=6))
def test_tree_channel_equals_the_seeds_pairwise_minimum(a, b):
    from proximity.analysis import treeprox

    naive = 1.0 - min(treeprox.tree_distance(f, g) for f in a for g in b)
    assert abs(treeprox.channel(a, b) - naive) < 1e-12


def test_tree_channel_handles_large_change_sets():
    from proximity.analysis import treeprox

    # 20k x 20k files in distinct directories: 4e8 pairs for a pairwise minimum
    a = [f"d{i}/e{i % 7}/f{i}.py" for i in range(20_000)]
    b = [f"x{i}/y{i % 5}/g{i}.py" for i in range(20_000)]
    assert treeprox.channel(a, b) == 0.0  # no common directory at all
    assert treeprox.channel(a, [*b, "d5/e5/other.py"]) == 1 - 2 / 6


names = st.sampled_from("abcdef")
asks = st.lists(st.tuples(names, names, st.floats(min_value=0, max_value=100)), max_size=40)


@given(asks)
@settings(max_examples=300, deadline=None)
def test_wait_cycles_orders_never_close_a_ring_of_landings(steps):
    """Members ask in turn, each denied by a holder: a wait is recorded, and where the
    asker goes first (waits.first_over) the holder is gone over (an order: it waits for
    the asker to land). However the asks come, the orders never form a ring (a member
    waiting for its own landing, through others): someone can always land."""
    from proximity.agents import waits

    standing: dict[tuple[str, str], float] = {}
    orders: set[tuple[str, str]] = set()
    for me, holder, t in steps:
        if me == holder:
            continue
        standing.setdefault((me, holder), t)
        seen = {**standing, **dict.fromkeys(orders, float("inf"))}  # (as cycles.read)
        if waits.first_over(seen, orders, me, holder):
            orders.add((holder, me))
        for who in "abcdef":
            assert who not in waits.awaited(orders, who), (steps, orders)


def test_the_ring_of_landings_the_flask_swarm_met():
    """The state one wait cycle met on the hard swarm's flask run (N = 20, seed 3): a6
    waited for a5 to land, a5 for a10, a10 for a15 (orders), and a6 and a15 waited on each
    other, a6 the longer. a6 going first would have closed the ring (all four stalled
    until the harness broke it, six times). It does not; a15 goes first over a6."""
    from proximity.agents import waits

    orders = {("a6", "a5"), ("a5", "a10"), ("a10", "a15")}
    seen = {("a6", "a15"): 8.0, ("a15", "a6"): 15.0, **dict.fromkeys(orders, float("inf"))}
    assert waits.goes_first(seen, "a6", "a15")  # (the age rule alone)
    assert not waits.first_over(seen, orders, "a6", "a15")
    assert waits.first_over(seen, orders, "a15", "a6")
