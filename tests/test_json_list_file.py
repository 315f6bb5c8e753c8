"""`json_list_file`: a JSON document whose list is written an item at a time has the bytes of the whole
document dumped at once, and a failure part-way leaves the earlier file as it was."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.cli.outputs import json_list_file

VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                   max_size=3),
                      max_leaves=8)


@settings(max_examples=80, deadline=None)
@given(head=st.dictionaries(st.text(max_size=5).filter(lambda k: k != "items"), VALUES, max_size=3),
       items=st.lists(VALUES, max_size=4))
def test_the_streamed_file_is_the_dumped_document(tmp_path_factory, head, items):
    path = tmp_path_factory.mktemp("out") / "probe.json"
    with json_list_file(path, head, "items") as add:
        for item in items:
            add(item)
    expected = json.dumps({**head, "items": items}, indent=1, ensure_ascii=False) + "\n"
    assert path.read_text(encoding="utf-8") == expected


def test_a_failure_part_way_keeps_the_earlier_file(tmp_path):
    path = tmp_path / "probe.json"
    path.write_text("earlier\n", encoding="utf-8")
    with pytest.raises(RuntimeError), json_list_file(path, {"model": "m"}, "questions") as add:
        add({"id": "q0"})
        raise RuntimeError("the server went away")
    assert path.read_text(encoding="utf-8") == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["probe.json"]  # no temporary file left behind
