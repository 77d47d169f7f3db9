"""A process that imports a test module once, then forks a child per job: a job that
a test kills with SIGKILL costs milliseconds instead of an interpreter start.

The server must never start a thread (forking a process with threads is unsafe);
each child runs one function of the module and exits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

SERVER = """
import importlib, json, os, sys, traceback
module = importlib.import_module(sys.argv[1])
if len(sys.argv) > 2:
    getattr(module, sys.argv[2])()  # the imports a job makes on first use, made once
for line in sys.stdin:
    job = json.loads(line)
    if "wait" in job:
        _, status = os.waitpid(job["wait"], 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
        continue
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            getattr(module, job["function"])(*job["args"])
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    print(pid, flush=True)
"""


WRITE_CALLS = ("fsync", "replace", "link", "pwrite", "write")
"""The system calls of ``os`` through which a write changes files."""


def kill_at_write(calls: int) -> None:
    """Make this process SIGKILL itself at its ``calls``-th call of one of
    :data:`WRITE_CALLS` (for a child of :class:`ForkServer`: the write it runs then
    stops there, as a power loss or the OOM killer would stop it)."""
    count = [0]

    def wrap(name: str) -> None:
        real = getattr(os, name)

        def call(*a: Any, **k: Any) -> Any:
            count[0] += 1
            if count[0] == calls:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*a, **k)

        setattr(os, name, call)

    for name in WRITE_CALLS:
        wrap(name)


class ForkServer:
    """Run functions of the module ``module`` (found on ``path``) in forked children,
    after running its function ``warm_up`` once in the server (if given)."""

    def __init__(self, module: str, path: list[Path], warm_up: str | None = None) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([*map(str, path), env.get("PYTHONPATH", "")])
        self._process = subprocess.Popen(
            [sys.executable, "-c", SERVER, module, *([warm_up] if warm_up else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def _ask(self, job: dict[str, Any]) -> int:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(job) + "\n")
        self._process.stdin.flush()
        return int(self._process.stdout.readline())

    def start(self, function: str, *args: Any) -> int:
        """Start ``function(*args)`` (JSON arguments) in a child; its process id."""
        return self._ask({"function": function, "args": list(args)})

    def wait(self, pid: int) -> int:
        """The exit code of child ``pid`` once it ends (negative: killed by that signal)."""
        return self._ask({"wait": pid})

    def run(self, function: str, *args: Any) -> int:
        """Run ``function(*args)`` in a child to its end; its exit code."""
        return self.wait(self.start(function, *args))

    def close(self) -> None:
        """Stop the server."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(30)
