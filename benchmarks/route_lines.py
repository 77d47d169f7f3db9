"""Lines of the package each write route runs: the size of the write side as a user's
call exercises it, for comparing two trees (before and after a refactor).

Each route of ``tests/xarray/test_write_route_bytes.py`` (a new local file, a new
``s3://`` object, an update in place, ``compact`` ...) runs once, in a fresh process
per route so that its thread pools start traced, against moto's S3 server on
127.0.0.1, with every thread traced; the distinct lines of ``xarray_hurray`` that
functions execute are counted (module bodies, run once at import, are not).  With
``--tree`` the package is imported from another checkout, e.g. a ``git worktree``
of an older commit, while the routes stay this tree's.

Usage::

    python benchmarks/route_lines.py                       # this tree, every route
    git worktree add /some/where aee7ffe
    python benchmarks/route_lines.py --tree /some/where    # the same routes, older code
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import types
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def count(tree: Path, route: str) -> set[tuple[str, int]]:
    """The lines of ``tree``'s package that ``route`` runs (in this process)."""
    sys.path[:0] = [str(tree), str(HERE / "tests" / "xarray"), str(HERE / "tests" / "container")]
    try:
        import xarray_hurray.write.sinks as sinks
    except ImportError:  # a tree from before write/ kept compact in container/update.py
        import xarray_hurray.container.update as sinks

        sys.modules.setdefault("xarray_hurray.write", types.ModuleType("xarray_hurray.write"))
        sys.modules["xarray_hurray.write.sinks"] = sinks
    import moto.server
    import s3fs
    import test_write_route_bytes as routes

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        os.environ.setdefault(name, value)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = moto.server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-west-2"}
    storage = {"key": "testing", "secret": "testing", "client_kwargs": endpoint}
    bucket = f"lines-{uuid.uuid4().hex[:8]}"
    s3fs.S3FileSystem(**storage, skip_instance_cache=True).mkdir(bucket)
    package = str(tree / "xarray_hurray")
    lines: set[tuple[str, int]] = set()

    def trace(frame: Any, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        if not name.startswith(package) or frame.f_code.co_name == "<module>":
            return None

        def each_line(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                lines.add((name[len(package) :], frame.f_lineno))
            return each_line

        return each_line

    where = tempfile.mkdtemp()
    threading.settrace(trace)
    sys.settrace(trace)
    try:
        routes.ROUTES[route](where, {"bucket": bucket, "storage_options": storage})
    finally:
        sys.settrace(None)
        threading.settrace(None)
        shutil.rmtree(where)
        server.stop()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=HERE, help="checkout to import from")
    parser.add_argument("--route", help="one route (run in this process)")
    args = parser.parse_args()
    if args.route:
        print(json.dumps(sorted(count(args.tree.resolve(), args.route))))
        return
    sys.path.insert(0, str(HERE / "tests" / "xarray"))
    sys.path.insert(0, str(HERE / "tests" / "container"))
    import test_write_route_bytes as routes

    found: dict[str, set[tuple[str, int]]] = {}
    for route in routes.ROUTES:
        command = [sys.executable, __file__, "--tree", str(args.tree), "--route", route]
        answer = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        found[route] = {tuple(line) for line in json.loads(answer)}  # type: ignore[misc]
    union, every = set().union(*found.values()), set.intersection(*found.values())
    print(f"{args.tree}: {len(union)} lines in all, {len(every)} run by every route")
    print("| route | lines run | run by no other route |")
    print("|---|---:|---:|")
    for route, lines in found.items():
        others = set().union(*(v for k, v in found.items() if k != route))
        print(f"| {route} | {len(lines)} | {len(lines - others)} |")


if __name__ == "__main__":
    main()
