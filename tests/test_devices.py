"""The one `device:` option of every model (`a2c.system.devices`): every device string validated, a device
this machine lacks refused in one line when the config loads (generator, model judges, model similarities),
and `auto` resolved to the first GPU or the CPU. What torch sees is stubbed, so these run the same on any box;
the last test runs the real `a2c` on this machine's real torch."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from a2c.run.config_file import parse_config
from a2c.settings.config import ConfigError
from a2c.system import devices
from a2c.system.devices import check_device, device_problem, device_type, resolve_device


@pytest.fixture
def gpus(monkeypatch):
    """Set how many GPUs (and whether an Apple GPU) torch appears to see."""

    def see(count: int, mps: bool = False) -> None:
        monkeypatch.setattr(devices, "_gpus", lambda: count)
        monkeypatch.setattr(devices, "_has_mps", lambda: mps)

    return see


@pytest.mark.parametrize("spec", ["auto", "cpu", "cuda", "cuda:0", "cuda:1", "mps"])
def test_every_device_name_is_accepted_where_the_machine_has_it(gpus, spec):
    gpus(2, mps=True)
    assert device_problem(spec) is None and check_device(spec) == spec


@pytest.mark.parametrize("spec", ["gpu", "CUDA", "cuda:", "cuda:01", "cuda:-1", "cuda:x", "cpu:0", "", " cpu",
                                  "cuda:0 ", "tpu", "auto:0"])
def test_a_bad_device_name_is_refused_saying_what_is_allowed(gpus, spec):
    gpus(2, mps=True)
    assert device_problem(spec) == f"unknown device {spec!r}; one of auto, cpu, cuda, cuda:N, mps"


@pytest.mark.parametrize(("count", "spec", "problem"), [
    (0, "cuda", "cuda requested but torch sees no GPU"),
    (0, "cuda:0", "cuda:0 requested but torch sees no GPU"),
    (1, "cuda:3", "cuda:3 requested but torch sees 1 GPU (cuda:0)"),
    (2, "cuda:2", "cuda:2 requested but torch sees 2 GPUs (cuda:0 to cuda:1)"),
    (2, "mps", "mps requested but torch sees no Apple GPU (MPS)"),
])
def test_a_device_the_machine_lacks_is_one_line(gpus, count, spec, problem):
    gpus(count)
    assert device_problem(spec) == problem


def test_auto_is_the_first_gpu_else_the_cpu_never_mps(gpus):
    gpus(0, mps=True)
    assert resolve_device("auto") == "cpu"
    gpus(2, mps=True)
    assert resolve_device("auto") == "cuda:0"
    assert [resolve_device(s) for s in ("cpu", "cuda:1", "mps")] == ["cpu", "cuda:1", "mps"]
    assert [device_type(d) for d in ("cpu", "cuda:1", "cuda", "mps")] == ["cpu", "cuda", "cuda", "mps"]


def test_cpu_and_auto_are_checked_without_importing_torch_s_gpu_probes(monkeypatch):
    def probe() -> int:
        raise AssertionError("asked torch")

    monkeypatch.setattr(devices, "_gpus", probe)
    monkeypatch.setattr(devices, "_has_mps", probe)
    assert check_device("cpu") == "cpu" and check_device("auto") == "auto"


@pytest.mark.parametrize(("text", "expected"), [
    ("name: x\ngenerator:\n  device: cuda\n",
     "<config>:3: generator.device: cuda requested but torch sees no GPU"),
    ("name: x\ngenerator:\n  backend: vllm\n  device: gpu\n",
     "<config>:4: generator.device: unknown device 'gpu'; one of auto, cpu, cuda, cuda:N, mps"),
    ("name: x\naux_generator:\n  device: cuda:1\n", "<config>:3: aux_generator.device: cuda:1 requested"),
    ("name: x\njudges:\n  - name: embedding\n    device: cuda\n",
     "<config>:4: judges.0.device: cuda requested but torch sees no GPU"),
    ("name: x\njudges:\n  - name: pp\n    device: cuda:0\n", "<config>:4: judges.0.device: cuda:0 requested"),
    ("name: x\njudges:\n  - name: llm\n    generator:\n      device: mps\n",
     "<config>:5: judges.0.generator.device: mps requested but torch sees no Apple GPU"),
    ("name: x\naccuracy:\n  similarities:\n    - name: bleurt\n      device: cuda\n",
     "accuracy.similarities.0.device: cuda requested but torch sees no GPU"),
    ("name: x\naccuracy:\n  similarities:\n    - name: embedding\n      device: gpu0\n",
     "accuracy.similarities.0.device: unknown device 'gpu0'"),
])
def test_a_config_naming_a_missing_device_fails_when_it_loads(gpus, text, expected):
    gpus(0)
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_devices_the_machine_has_load(gpus):
    gpus(2)
    config = parse_config("name: x\ngenerator:\n  device: cuda:1\njudges:\n  - name: embedding\n"
                          "    device: cpu\naccuracy:\n  similarities:\n    - name: embedding\n"
                          "      device: cuda\n")
    assert config.generator.device == "cuda:1"
    assert config.judges[0].options["device"] == "cpu"


def test_a_judge_passes_its_device_to_sentence_transformers(monkeypatch):
    """`device` reaches the model's constructor resolved; `auto` passes none (sentence-transformers picks)."""
    from a2c.judges import hf

    seen: list[dict[str, object]] = []

    class Model:
        def __init__(self, source: str, **kwargs: object) -> None:
            seen.append(kwargs)

        def eval(self) -> Model:
            return self

    monkeypatch.setattr(hf, "trim_relative_attention", lambda network: None)
    hf._load(Model, "all-MiniLM-L6-v2", offline=True, device="cpu")
    hf._load(Model, "all-MiniLM-L6-v2", offline=True, device="auto")
    assert seen[0]["device"] == "cpu" and "device" not in seen[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: `device: cuda` is valid here")
def test_a_run_on_a_missing_gpu_exits_2_in_one_line_before_any_model_loads(tmp_path):
    (tmp_path / "exp.yaml").write_text("name: x\ngenerator:\n  device: cuda\njudges: [embedding]\n")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "a2c", "run", "exp.yaml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["a2c: error: invalid config: exp.yaml:3: generator.device: cuda "
                                        "requested but torch sees no GPU"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]  # no run folder, no cache
    assert time.monotonic() - start < 60


@pytest.mark.parametrize(("cores", "load", "threads"), [(2, 0.2, 2), (2, 0.75, 1), (2, 6.3, 1), (16, 0.0, 16),
                                                          (16, 3.4, 13), (1, 0.0, 1)])
def test_cpu_threads_are_the_cores_the_load_leaves_and_at_least_one(cores, load, threads):
    from a2c.system.devices import free_cores

    assert free_cores(cores=cores, load=load) == threads


def test_models_threads_prints_what_this_machine_gives(capsys):
    import os

    from a2c.cli import main
    from a2c.system.devices import free_cores

    assert main(["models", "threads"]) == 0
    printed = int(capsys.readouterr().out)
    assert 1 <= printed <= len(os.sched_getaffinity(0))
    assert abs(printed - free_cores()) <= 1  # the load average may move between the two reads
