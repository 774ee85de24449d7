"""scripts/callgrind_dump.py: what callgrind_mitm.py and callgrind_serve.py read of a callgrind dump,
the columns its `events:` line names summed into their tables' counts (the runs themselves, under
valgrind, are benches: minutes)."""

import pytest

from scripts.callgrind_dump import SHOWN, parse_counts

# The head of a dump as callgrind 3.19 writes it with --cache-sim=yes --branch-sim=yes (its events'
# order), and without (instructions only)
CACHE = """version: 1
creator: callgrind-3.19.0
cmd: mitmdump
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
summary: 960585475 314194880 145257010 22815831 5885813 479396 4862 15987 17643 123363774 9746089 31821840 12345977
"""
PLAIN = """version: 1
creator: callgrind-3.19.0
events: Ir
totals: 918362996
"""


def test_cache_columns_summed_by_name():
    assert parse_counts(CACHE) == {"Ir": 960585475, "D1 misses": 5885813 + 479396, "I1 misses": 22815831,
                                   "mispredicts": 9746089 + 12345977}


def test_instructions_only_when_no_cache_was_simulated():
    assert parse_counts(PLAIN) == {"Ir": 918362996}
    assert set(SHOWN) >= {"Ir"}


def test_a_summary_that_does_not_match_its_events_is_an_error():
    with pytest.raises(ValueError):
        parse_counts(PLAIN.replace("totals: 918362996", "totals: 1 2"))
    with pytest.raises(ValueError):
        parse_counts("version: 1\ncreator: callgrind-3.19.0\n")
