"""Reading a run file a chunk of items at a time (`Store.item_rows`): the rows asked for, in the file's order,
whatever order the writer used; lines another tool wrote; damage named by file and line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.qa.rows import GENERATIONS, GenerationRow
from a2c.run.runfiles import RunFileError
from a2c.run.store import MemoryStore, RunFolder


def _row(qid: str, slot: int) -> GenerationRow:
    return GenerationRow(id=qid, source="temperature" if slot % 2 else "paraphrase", slot=slot,
                         technique=None, temperature=0.1 * slot, asked=f"asked {qid}?", long=f"long {slot}",
                         short=f"short {slot}")


@pytest.fixture(params=["folder", "memory"])
def store(request, tmp_path):
    return RunFolder(tmp_path / "run") if request.param == "folder" else MemoryStore()


# ids as a run may have them: quotes, backslashes, control characters, non-ASCII, the matrix key's separator
IDS = st.lists(st.text(alphabet='ab"\\|é\u2028\t ', min_size=1, max_size=6), min_size=1, max_size=8,
               unique=True)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), ids=IDS)
def test_a_chunk_gets_its_rows_in_the_files_order(data, ids):
    # rows of the items interleaved as a writer with another chunk size leaves them, plus an item outside
    order = data.draw(st.lists(st.sampled_from([*ids, "outside"]), max_size=40))
    rows = [_row(qid, slot) for slot, qid in enumerate(order)]
    store = MemoryStore()
    store.write_rows(GENERATIONS, rows)
    chunks = data.draw(st.lists(st.lists(st.sampled_from(ids), max_size=4), max_size=5))
    with store.item_rows(GENERATIONS, ids) as by_item:
        for chunk in chunks:
            assert by_item.rows(chunk) == [r for r in rows if r.id in chunk]
        assert by_item.rows(["outside", "never seen"]) == []  # not among the items it was built for


def test_both_stores_read_the_same_rows_and_skip_blank_lines(store):
    rows = [_row("q1", 0), _row("q2", 1), _row("q1", 2), _row("q3", 3), _row("q2", 4)]
    store.write_rows(GENERATIONS, rows)
    store.write_bytes("generations.jsonl", store.read_bytes("generations.jsonl").replace(b"\n", b"\n\n", 2))
    with store.item_rows(GENERATIONS, ["q1", "q2", "q3"]) as by_item:
        assert by_item.rows(["q2", "q1"]) == [rows[0], rows[1], rows[2], rows[4]]
        assert by_item.rows(["q3"]) == [rows[3]]


def test_a_line_another_tool_wrote_is_read_by_its_id(store):
    # keys in another order and spaces elsewhere: the id is found by parsing the line
    rows = [_row("q1", 0), _row("q2", 1)]
    reordered = json.dumps(dict(reversed(list(rows[1].model_dump(mode="json").items()))), indent=None,
                           separators=(",", ":"))
    store.write_bytes("generations.jsonl", (GENERATIONS.dumps(rows[:1]) + reordered + "\n").encode())
    with store.item_rows(GENERATIONS, ["q1", "q2"]) as by_item:
        assert by_item.rows(["q2"]) == [rows[1]]


def test_damage_is_named_by_file_and_line(tmp_path):
    folder = RunFolder(tmp_path / "run")
    rows = [_row("q1", 0), _row("q2", 1), _row("q3", 2)]
    folder.write_rows(GENERATIONS, rows)
    path = folder.file("generations.jsonl")
    lines = path.read_text().splitlines()
    # a row cut short after its id: found by its id when indexed, refused when its question is read
    path.write_text("\n".join([lines[0], lines[1][:60], lines[2]]) + "\n")
    with folder.item_rows(GENERATIONS, ["q1", "q2", "q3"]) as by_item:
        assert by_item.rows(["q3"]) == [rows[2]]
        with pytest.raises(RunFileError, match=r"generations\.jsonl:2: not a GenerationRow"):
            by_item.rows(["q2"])
    # a line without a readable id is refused while the index is built
    path.write_text(lines[0] + "\n" + "{not json\n")
    with pytest.raises(RunFileError, match=r"generations\.jsonl:2: not a GenerationRow"):
        folder.item_rows(GENERATIONS, ["q1"]).__enter__()
    path.write_bytes(lines[0].encode() + b"\n" + b'{"source": "\xff"}\n')
    with pytest.raises(RunFileError, match=r"generations\.jsonl:2: not UTF-8"):
        folder.item_rows(GENERATIONS, ["q1"]).__enter__()
    path.unlink()
    with pytest.raises(RunFileError, match=r"generations\.jsonl: missing"):
        folder.item_rows(GENERATIONS, ["q1"]).__enter__()
