"""libstdc++'s unordered_map order (batfeed.engine.cxx_unordered) against orders recorded from g++ 12."""

import json
from pathlib import Path

from batfeed.engine.cxx_unordered import std_hash, unordered_order

DATA = json.loads((Path(__file__).parent / "data" / "engine" / "cxx_unordered_order.json").read_text("utf-8"))


def test_std_hash_is_libstdcxx_hash_bytes():
    assert std_hash("w0!delay") == DATA["hash_w0!delay"]


def test_iteration_order_matches_gxx_through_rehashes():
    assert len(DATA["cases"]) >= 10 and max(len(c["keys"]) for c in DATA["cases"]) > 1000
    for case in DATA["cases"]:
        assert unordered_order(case["keys"]) == case["order"], case["keys"][:3]


def test_order_is_not_insertion_order():
    mixed = next(c for c in DATA["cases"] if "w0!seq" in c["keys"])
    assert unordered_order(mixed["keys"]) != list(range(len(mixed["keys"])))
