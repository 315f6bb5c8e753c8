"""A watchdog process that kills a2c's descendants once a2c is gone, however it went (SIGKILL too).

vLLM runs its engine in child processes started with `spawn` (a fresh interpreter running vLLM's code), so
a2c cannot tie them to its own life with `PR_SET_PDEATHSIG`, and after a SIGKILL nothing in a2c runs to
stop them: they kept the cores and the KV cache until someone noticed. A killed a2c still closes its end of
a pipe, though. `Reaper.start()` starts `python -m a2c.system.reaper` with a pipe to it, in its own session (a
Ctrl-C at the terminal does not reach it); it records a2c's descendants (pid and start time, so a reused
pid is never killed) every `SCAN_EVERY` seconds and whenever a2c asks (`track()`, after an engine has
started). When the pipe closes, or its parent changes, it SIGKILLs every recorded process still running
and their descendants, then exits. After a normal exit the engines are already shut down and it finds
nothing to kill.

A process started and orphaned within one scan interval could escape; `track()` right after an engine is
up closes that window for the engine itself.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field

SCAN_EVERY = 0.2  # seconds between two scans of a2c's descendants


@dataclass
class Reaper:
    """The watchdog of this process (one per process, see `reaper()`)."""

    process: subprocess.Popen[str]
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls) -> Reaper:
        process = subprocess.Popen([sys.executable, "-m", "a2c.system.reaper", str(os.getpid())],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   start_new_session=True)
        reaper = cls(process)
        reaper.track()  # returns once the watchdog runs
        return reaper

    def track(self) -> None:
        """Have the watchdog record this process's descendants now; returns once it has."""
        assert self.process.stdin is not None and self.process.stdout is not None
        with self._lock:
            self.process.stdin.write("scan\n")
            self.process.stdin.flush()
            self.process.stdout.readline()


_REAPER: list[Reaper] = []
_REAPER_LOCK = threading.Lock()


def reaper() -> Reaper:
    """This process's watchdog, started on first use."""
    with _REAPER_LOCK:
        if not _REAPER or _REAPER[0].process.poll() is not None:
            _REAPER[:] = [Reaper.start()]
        return _REAPER[0]


# -- the watchdog process ---------------------------------------------------------------------------------

def _scan(parent: int, recorded: dict[int, float]) -> None:
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(parent).children(recursive=True):
            if child.pid != os.getpid():
                with contextlib.suppress(psutil.Error):
                    recorded.setdefault(child.pid, child.create_time())


def _kill(recorded: dict[int, float]) -> None:
    """SIGKILL each recorded process that still runs (the same process: its start time matches) and
    whatever it started since."""
    import psutil

    doomed: dict[int, psutil.Process] = {}
    for pid, started in recorded.items():
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            if process.create_time() == started:
                doomed[pid] = process
                for child in process.children(recursive=True):
                    doomed.setdefault(child.pid, child)
    for process in doomed.values():
        with contextlib.suppress(psutil.Error):
            process.kill()


def watch(parent: int) -> None:
    """Record `parent`'s descendants until `parent` is gone (stdin closes or we are re-parented), then
    kill them. Commands on stdin: `scan` (record now, answer `ok`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    recorded: dict[int, float] = {}
    while os.getppid() == parent:
        ready, _, _ = select.select([0], [], [], SCAN_EVERY)
        commands = os.read(0, 4096) if ready else b""
        if ready and not commands:
            break  # the pipe closed: the parent exited or was killed
        _scan(parent, recorded)
        for _ in range(commands.count(b"\n")):
            os.write(1, b"ok\n")
    _kill(recorded)


if __name__ == "__main__":
    watch(int(sys.argv[1]))
