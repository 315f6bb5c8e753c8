"""The watchdog that kills a2c's descendants once a2c is gone: a real process tree started the way vLLM
starts its engine (multiprocessing `spawn`, a child that starts a grandchild), a real SIGKILL of the
parent, and nothing left running afterwards. The vLLM engine itself is tested in test_llm_vllm.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from a2c.system.reaper import _kill
from tests.vllm_server import ProcessWatch

pytestmark = pytest.mark.slow

TREE = textwrap.dedent("""
    import json, multiprocessing, os, sys, time
    from a2c.system.reaper import reaper

    def grandchild(path):
        open(path, "w").write(str(os.getpid()))
        time.sleep(600)

    def child(path):
        p = multiprocessing.get_context("spawn").Process(target=grandchild, args=(path,))
        p.start()
        p.join()

    if __name__ == "__main__":
        watchdog = reaper()
        engine = multiprocessing.get_context("spawn").Process(target=child, args=(sys.argv[1],))
        engine.start()
        while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
            time.sleep(0.05)
        watchdog.track()  # what the vllm backend does once its engine is up
        print(json.dumps({"watchdog": watchdog.process.pid, "child": engine.pid,
                          "grandchild": int(open(sys.argv[1]).read())}), flush=True)
        time.sleep(600)
""")


def test_sigkill_of_the_parent_takes_its_spawned_tree_down(tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path / "grandchild.pid")],
                              stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    watch = ProcessWatch(parent.pid)
    try:
        assert parent.stdout is not None
        pids = json.loads(parent.stdout.readline())
        started = {name: psutil.Process(pid) for name, pid in pids.items()}
        assert all(p.is_running() for p in started.values())
        deadline = time.monotonic() + 10  # the watch polls: let it record the tree before the kill
        while not set(watch.seen) >= set(pids.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(watch.seen) >= set(pids.values())
        parent.send_signal(signal.SIGKILL)  # nothing of a2c's runs after this
        parent.wait(30)
        watch.stop()
        left = watch.wait_gone(30)
        assert not left, f"left running: {[(p.pid, p.name()) for p in left]}"
        running = [name for name, p in started.items()
                   if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not running
    finally:
        if parent.poll() is None:
            parent.kill()
        watch.stop()
        watch.kill_all()


def test_a_reused_pid_is_never_killed():
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        started = psutil.Process(bystander.pid).create_time()
        _kill({bystander.pid: started + 1.0})  # what a recorded process whose pid came back looks like
        time.sleep(0.2)
        assert bystander.poll() is None
        _kill({bystander.pid: started})
        assert bystander.wait(10) == -signal.SIGKILL
    finally:
        if bystander.poll() is None:
            bystander.kill()
