"""docs/benchmarks.md is written by five bench scripts and carries findings written by hand between
their sections: re-running one script replaces its own section and keeps every other line (bench.py
used to write the file whole, erasing the others' sections and the findings)."""

from pathlib import Path

import pytest

from scripts import bench, bench_mitm, bench_tails, critical_path, footprint
from scripts.doc_section import put_section


def test_a_section_is_replaced_in_place_and_the_rest_kept(tmp_path: Path) -> None:
    doc = tmp_path / "b.md"
    put_section(doc, "<!-- a: start -->", "<!-- a: end -->", "<!-- a: start -->\nold\n<!-- a: end -->")
    doc.write_text(doc.read_text() + "\n### Findings by hand\n\nkept\n")
    put_section(doc, "<!-- b: start -->", "<!-- b: end -->", "<!-- b: start -->\nB\n<!-- b: end -->")
    put_section(doc, "<!-- a: start -->", "<!-- a: end -->", "<!-- a: start -->\nnew\n<!-- a: end -->")
    assert doc.read_text() == ("# Benchmarks\n\n<!-- a: start -->\nnew\n<!-- a: end -->\n\n### Findings by hand\n\n"
                               "kept\n\n<!-- b: start -->\nB\n<!-- b: end -->\n")
    with pytest.raises(ValueError):
        put_section(doc, "<!-- a: start -->", "<!-- a: end -->", "no markers")


def test_bench_py_keeps_the_other_scripts_sections(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    others = [(bench_mitm.ROWS_START, bench_mitm.ROWS_END), (bench_tails.START, bench_tails.END),
              (critical_path.START, critical_path.END), (footprint.START, footprint.END)]
    for start, end in others:
        put_section(doc, start, end, f"{start}\nrows of {start}\n{end}")
    doc.write_text(doc.read_text() + "\n### Findings, written by hand\n")
    before = doc.read_text()
    bench.write_doc("| the table |", doc)
    bench.write_doc("| the table, again |", doc)
    text = doc.read_text()
    assert text.count(bench.START) == 1 and "| the table, again |" in text and "| the table |\n" not in text
    assert text == before.rstrip("\n") + f"\n\n{bench.START}\n| the table, again |\n{bench.END}\n"
