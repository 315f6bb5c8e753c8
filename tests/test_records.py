"""Run files as typed rows: round trips through both stores, the on-disk spelling, clear errors for damage."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    METRICS,
    PARAPHRASES,
    Accuracy,
    ChoiceRow,
    GenerationRow,
    MetricRow,
    ParaphraseItem,
    ParaphraseRow,
)
from a2c.run.runfiles import MatrixSet, RunFileError
from a2c.run.store import MemoryStore, RunFolder, member_bytes, npy_array
from a2c.scoring import JudgeScores

PARAPHRASE = ParaphraseRow(id="q1", question="Is the sea salty?", paraphrases=[
    ParaphraseItem(technique="synonyms", text="Is the ocean salty?", ok=True, problem=None),
    ParaphraseItem(technique="conjunctions", text="", ok=False, problem="empty")])
GENERATION = GenerationRow(id="q1", source="temperature", slot=3, technique=None, temperature=0.75,
                           asked="Is the sea salty?", long="Yes, it is.\nVery.", short="Yes")
CHOICE = ChoiceRow(id="q1", source="paraphrase", slot=0, shown_question="Is the ocean salty?",
                   temperature=0.0, options=["Yes", "No"], reply="3", option=2, method="number",
                   text="Don't know")
METRIC = MetricRow(id="q1", source="paraphrase", phase="after", n=2, n_accurate=1, cons_lex=0.5,
                   judges={"exact": JudgeScores(0.5, 1.0, 2, None)},
                   accuracy={"rouge1": Accuracy(max_true=0.4, diff=-0.1, acc=0.5), "bleu": None})


@pytest.fixture(params=["folder", "memory"])
def store(request, tmp_path):
    return RunFolder(tmp_path / "run") if request.param == "folder" else MemoryStore()


def test_rows_round_trip_in_both_stores(store):
    pairs = ((PARAPHRASES, PARAPHRASE), (GENERATIONS, GENERATION), (CHOICES, CHOICE), (METRICS, METRIC))
    for file, row in pairs:
        store.write_rows(file, [row, row])
        assert store.read_rows(file) == [row, row]


def test_field_names_and_order_are_the_files_of_earlier_runs():
    line = json.loads(GENERATIONS.dumps([GENERATION]))
    assert list(line) == ["id", "source", "slot", "technique", "temperature", "asked", "long", "short"]
    choice = json.loads(CHOICES.dumps([CHOICE]))
    assert list(choice) == ["id", "source", "slot", "shown_question", "temperature", "options", "reply",
                            "option", "method", "text"]
    metric = json.loads(METRICS.dumps([METRIC]))
    assert metric["judges"]["exact"] == {"cons_sem": 0.5, "entropy": 1.0, "clusters": 2,
                                         "cons_sem_accurate": None}
    assert metric["accuracy"] == {"rouge1": {"max_true": 0.4, "diff": -0.1, "acc": 0.5}, "bleu": None}


def test_dont_know_is_the_option_after_the_candidates():
    assert CHOICE.dont_know and CHOICE.parsed
    unparsed = CHOICE.model_copy(update={"option": None, "method": "unparsed", "text": None})
    assert not unparsed.dont_know and not unparsed.parsed
    assert not CHOICE.model_copy(update={"option": 1}).dont_know


def test_a_damaged_line_names_the_file_and_line(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.write_rows(GENERATIONS, [GENERATION, GENERATION, GENERATION])
    lines = folder.file("generations.jsonl").read_text().splitlines()
    folder.file("generations.jsonl").write_text("\n".join([lines[0], lines[1][:40], lines[2]]) + "\n")
    with pytest.raises(RunFileError, match=r"generations\.jsonl:2: not a GenerationRow: .*(JSON|EOF)"):
        folder.read_rows(GENERATIONS)
    wrong = dict(json.loads(lines[0]), source="temperatures")
    folder.file("generations.jsonl").write_text(lines[0] + "\n" + json.dumps(wrong) + "\n")
    with pytest.raises(RunFileError, match=r"generations\.jsonl:2: not a GenerationRow: source: Input"):
        folder.read_rows(GENERATIONS)
    with pytest.raises(RunFileError, match=r"choices\.jsonl: missing"):
        folder.read_rows(CHOICES)


def test_matrices_round_trip_with_stable_bytes(store):
    matrices = MatrixSet({("embedding", "paraphrase", "q|1"): np.eye(3),
                          ("exact", "temperature", "q2"): np.ones((0, 0))})
    store.write_matrices(MATRICES["before"], matrices)
    digest = store.digest("matrices_before.npz")
    back = store.read_matrices(MATRICES["before"])
    assert list(back) == list(matrices)
    assert np.array_equal(back[("embedding", "paraphrase", "q|1")], np.eye(3))
    store.write_matrices(MATRICES["before"], back)
    assert store.digest("matrices_before.npz") == digest  # same matrices, same bytes: later stages are reused


def test_a_matrix_file_of_another_shape_is_refused(tmp_path):
    folder = RunFolder(tmp_path)
    with (tmp_path / "matrices_after.npz").open("wb") as handle:
        np.savez(handle, **{"embedding|colour|q1": np.eye(2)})
    with pytest.raises(RunFileError, match=r"matrices_after\.npz: key 'embedding\|colour\|q1'"):
        folder.read_matrices(MATRICES["after"])
    (tmp_path / "matrices_after.npz").write_text("not a zip")
    with pytest.raises(RunFileError, match="not an npz"):
        folder.read_matrices(MATRICES["after"])


_DTYPES = st.sampled_from(["<f8", "<f4", ">f8", "|b1", "<i8", "<U3"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=3), _DTYPES, st.booleans(), st.integers(0, 2**32 - 1))
def test_a_npy_member_reads_back_as_numpy_reads_it(shape, dtype, fortran, seed):
    """`npy_array` (headers matched, not evaluated) gives what numpy's own reader gives, its fallback too
    (Fortran order, text dtypes), and an array that can be written to, as numpy's."""
    values = np.random.default_rng(seed).integers(0, 9, size=shape).astype(dtype)
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asfortranarray(values) if fortran else values)
    read = npy_array(buffer.getvalue())
    expected = np.lib.format.read_array(io.BytesIO(buffer.getvalue()))
    assert (read.dtype, read.shape) == (expected.dtype, expected.shape)
    assert np.array_equal(read, expected)
    assert read.flags.writeable


def test_an_npz_another_tool_wrote_is_read_and_a_cut_member_is_refused(tmp_path):
    folder = RunFolder(tmp_path)
    with (tmp_path / "matrices_before.npz").open("wb") as handle:
        np.savez_compressed(handle, **{"exact|paraphrase|q1": np.eye(2),
                                       "exact|temperature|q1": np.ones((1, 1))})
    back = folder.read_matrices(MATRICES["before"])
    assert np.array_equal(back[("exact", "paraphrase", "q1")], np.eye(2))
    with folder.matrix_reader(MATRICES["before"]) as reader:
        assert np.array_equal(reader[("exact", "temperature", "q1")], np.ones((1, 1)))
        with pytest.raises(KeyError):
            reader[("exact", "temperature", "q2")]
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.eye(3))
    with zipfile.ZipFile(tmp_path / "matrices_before.npz", "w") as archive:
        archive.writestr("exact|paraphrase|q1.npy", buffer.getvalue()[:-8])  # the last number is missing
    with pytest.raises(RunFileError, match=r"matrices_before\.npz: not an npz of matrices"):
        folder.read_matrices(MATRICES["before"])


class _Unseekable(io.RawIOBase):
    """A write-only stream: `ZipFile` then puts each member's sizes in a data descriptor after its bytes."""

    def __init__(self) -> None:
        self.written = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.written += data
        return len(data)


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_member_is_read_straight_from_the_archive_as_zipfile_reads_it(compression, streamed):
    """`member_bytes` gives `ZipFile.read`'s bytes for stored and deflated members (with and without a data
    descriptor, with an extra field) and hands other compressions to it."""
    rng = np.random.default_rng(7)
    members = {f"m{k}.npy": rng.integers(0, 3, size=k * 97).astype(np.uint8).tobytes() for k in range(5)}
    target = _Unseekable() if streamed else io.BytesIO()
    with zipfile.ZipFile(target, "w", compression) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = compression
            info.extra = b"\xfe\xca\x02\x00ab"  # an unknown extra field of two bytes
            with archive.open(info, "w") as handle:
                handle.write(data)
    raw = bytes(target.written) if streamed else target.getvalue()
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        for info in archive.infolist():
            assert member_bytes(archive, info) == archive.read(info) == members[info.filename]


def test_a_damaged_member_is_refused_by_name(tmp_path):
    """A flipped byte inside a member's compressed bytes is a CRC or inflate error naming the file."""
    folder = RunFolder(tmp_path)
    folder.write_matrices(MATRICES["before"], MatrixSet({("exact", "paraphrase", "q1"): np.eye(6)}))
    path = tmp_path / "matrices_before.npz"
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.infolist()[0]
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(RunFileError, match=r"matrices_before\.npz: not an npz of matrices \(.*member"):
        folder.read_matrices(MATRICES["before"])
