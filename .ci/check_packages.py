"""The packages as users get them, built and installed where nothing of the repository
is on the path.

- ``python -m build``: the source package, then the wheel built from it (so the source
  package is seen to build).  The source package holds what a build needs and nothing
  else: the package (with the viewer page and the JavaScript reader it ships, from
  ``js/``), ``pyproject.toml``, ``README.md`` and ``LICENSE``.  The suite runs from the
  repository, whose ``benchmarks/``, ``examples/``, ``js/`` and golden files it needs
  (MANIFEST.in).  The wheel holds the same files of the package.
- The wheel in a new virtual environment: ``hurray demo`` runs; xarray finds the
  ``hurray`` engine by its entry point (its description set) and registers the
  ``.hurray`` accessors through it, with no import of the package; a file is written
  and read back; ``hurray view`` serves the viewer page and every module it imports.
- ``npm pack`` of ``js/``: the tarball holds ``LICENSE``, installs into a scratch
  project, and reads the file through ``hurray view``'s server, values as written;
  its type declarations (``types/``, made by ``prepack``) type-check a TypeScript
  module that uses the interface, strictly and without Node's types.

Run by ``.ci/run`` in a step of its own; ``python .ci/check_packages.py`` alone needs
the ``build`` package (the ``test`` extra), npm and the network or pip's cache.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "xarray_hurray"

BUILD_FILES = {"PKG-INFO", "setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"}
"""The files of the source package outside the package and its ``egg-info``."""

SHAPE = (64, 48)
"""The shape of the variable ``t`` the installed package writes (``arange``, float32),
and the box read back from it by the npm package."""
BOX = ((10, 20), (5, 9))

IN_VENV = f"""
import json, sys
import numpy as np
import xarray as xr

# xarray finds the engine by its entry point, which registers the accessors
engine = xr.backends.list_engines()["hurray"]
assert "xarray_hurray" in sys.modules, "the entry point was not loaded"
import xarray_hurray
assert xarray_hurray.__file__.startswith(sys.prefix), xarray_hurray.__file__

path = sys.argv[1]
values = np.arange({SHAPE[0] * SHAPE[1]}, dtype="f4").reshape({SHAPE})
ds = xr.Dataset({{"t": (("y", "x"), values)}})
ds.hurray.to_hurray(path)
with xr.open_dataset(path) as back:  # the engine guessed from the file
    xr.testing.assert_identical(back.load(), ds)
print(json.dumps({{"description": engine.description}}))
"""
"""Run by the installed package: prints the description ``list_engines`` gives the engine."""

READ_WITH_NPM = """
import { openHurray } from "hurray-reader";
const file = await openHurray(process.argv[2]);
const { data, shape } = await file.read("t", JSON.parse(process.argv[3]));
console.log(JSON.stringify({ shape, data: Array.from(data) }));
"""
"""Run in the scratch project: reads a box of ``t`` from a URL."""

USE_TYPES = """
import { HurrayFormatError, openHurray, type OpenOptions, type ReadResult } from "hurray-reader";
import { HurrayLayer, type LayerOptions } from "hurray-reader/map";

const options: OpenOptions = { verifyChecksums: true, timeout: 1000 };
const file = await openHurray("http://127.0.0.1:1/t.hurray", options);
const names: string[] = file.variables;
const one: ReadResult = await file.read("t", [[0, 1], [0, 1]]);
const signal = AbortSignal.timeout(1);
const many: ReadResult[] = await file.readMany("t", [[[0, 1], [0, 1]], undefined], { signal });
const error: Error = new HurrayFormatError("damaged");
const select: LayerOptions = {
    variable: "t", colormap: "magma", range: [0, 1], select: { time: { value: "2024-01-02" } },
};
const layer: Promise<HurrayLayer> = HurrayLayer.open(file, select);
// @ts-expect-error a range is two numbers
const wrong: LayerOptions = { range: [0] };
// @ts-expect-error a read names its variable by its path
await file.read(1);
export { error, layer, many, names, one, wrong };
"""
"""Type-checked in the scratch project against the package's declarations."""

_STATIC_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']""", re.M)
_BARE_IMPORT = re.compile(r"""^\s*import\s*["']([^"']+)["']""", re.M)
_HTML_LINK = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")


def main() -> int:
    """Build, install and check both packages; 0 when all holds (an error otherwise)."""
    work = Path(tempfile.mkdtemp(prefix="hurray-packages-"))
    started = time.monotonic()

    def phase(text: str) -> None:
        print(f"-- {time.monotonic() - started:5.1f} s: {text}", flush=True)

    try:
        phase("python -m build (the source package, then the wheel from it)")
        sdist, wheel = build(work / "dist")
        package_files = check_source_package(sdist)
        check_wheel(wheel, package_files)
        phase("the wheel in a new virtual environment")
        bin_dir = install(wheel, work / "venv")
        phase("hurray demo")
        run([str(bin_dir / "hurray"), "demo"], cwd=work)
        phase("the engine and the accessors")
        data = work / "t.hurray"
        engine = json.loads(run([str(bin_dir / "python"), "-c", IN_VENV, str(data)], cwd=work))
        if not engine["description"]:
            raise AssertionError(f"the engine has no description: {engine}")
        phase("hurray view: the page and its modules")
        with serving(bin_dir / "hurray", data, cwd=work) as page:
            fetched = check_page(page)
            print(f"   {len(fetched)} files of the page served")
            phase("npm pack, installed in a scratch project, reads the file")
            tarball = npm_pack(work)
            base = urllib.parse.urljoin(page, "/")
            check_npm_read(tarball, work / "scratch", f"{base}data/{data.name}")
            phase("the npm package's types")
            check_npm_types(work / "scratch")
        phase("done")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def run(command: Sequence[str], *, cwd: Path) -> str:
    """Run ``command`` in ``cwd`` without the repository on the path; its standard
    output.  Fails with its output when it fails."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
        )
    return result.stdout


def build(out: Path) -> tuple[Path, Path]:
    """The source package and the wheel ``python -m build`` makes (in an isolated
    environment with the build requirements of pyproject.toml)."""
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=ROOT)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def package_tree() -> set[str]:
    """The files of the package in the repository, as ``xarray_hurray/...``: its
    modules and the page's folders (links to ``js/``), followed."""
    found = set()
    for folder, dirs, names in os.walk(ROOT / PACKAGE, followlinks=True):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in names:
            found.add((Path(folder) / name).relative_to(ROOT).as_posix())
    return found


def check_source_package(sdist: Path) -> set[str]:
    """Check that ``sdist`` holds the package whole and nothing but what a build needs;
    the package's files."""
    with tarfile.open(sdist) as tar:
        names = {member.name.partition("/")[2] for member in tar.getmembers() if member.isfile()}
    package = {name for name in names if name.startswith(f"{PACKAGE}/")}
    other = names - package - {name for name in names if name.startswith(f"{PACKAGE}.egg-info/")}
    if not other <= BUILD_FILES:
        raise AssertionError(
            f"the source package holds more than a build needs: {other - BUILD_FILES}"
        )
    expected = package_tree()
    if package != expected:
        raise AssertionError(
            f"the source package misses {sorted(expected - package)} "
            f"and holds unknown {sorted(package - expected)}"
        )
    for folder in ("src", "viewer"):  # the page's folders, links to js/ in the repository
        js = {
            path.relative_to(ROOT / "js" / folder).as_posix()
            for path in (ROOT / "js" / folder).rglob("*")
            if path.is_file()
        }
        shipped = {
            name.removeprefix(f"{PACKAGE}/web/{folder}/")
            for name in package
            if name.startswith(f"{PACKAGE}/web/{folder}/")
        }
        if js != shipped:
            raise AssertionError(
                f"js/{folder} and the shipped web/{folder} differ: {sorted(js ^ shipped)}"
            )
    return package


def check_wheel(wheel: Path, package_files: set[str]) -> None:
    """Check that ``wheel`` holds the same files of the package as the source package."""
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if not name.endswith("/")}
    package = {name for name in names if name.startswith(f"{PACKAGE}/")}
    if package != package_files:
        raise AssertionError(
            f"the wheel and the source package differ: {sorted(package ^ package_files)}"
        )


def install(wheel: Path, venv: Path) -> Path:
    """A new virtual environment with ``wheel`` installed; its ``bin`` folder."""
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    bin_dir = venv / "bin"
    run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], cwd=venv.parent)
    return bin_dir


@contextmanager
def serving(hurray: Path, data: Path, *, cwd: Path) -> Iterator[str]:
    """``hurray view data`` running; the URL of the page it prints."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    server = subprocess.Popen(
        [str(hurray), "view", "--no-open", str(data)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r" at (http://\S+) ", line)
        if match is None:
            raise AssertionError(f"hurray view printed {line!r}; {server.communicate()[1]}")
        yield match.group(1)
    finally:
        server.send_signal(signal.SIGINT)  # as Ctrl-C stops it
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            raise


def check_page(page: str) -> set[str]:
    """Fetch the page and, transitively, every file of the server it links to or
    imports statically; the paths fetched.  A file the server lacks fails the check."""
    base = urllib.parse.urljoin(page, "/")
    pending, fetched = [urllib.parse.urljoin(page, urllib.parse.urlsplit(page).path)], set()
    while pending:
        url = pending.pop()
        path = urllib.parse.urlsplit(url).path
        if path in fetched:
            continue
        with urllib.request.urlopen(url, timeout=30) as answer:
            text = answer.read().decode("utf-8")
        fetched.add(path)
        links = _HTML_LINK.findall(text) if path.endswith(".html") else []
        if path.endswith(".js"):
            links = _STATIC_IMPORT.findall(text) + _BARE_IMPORT.findall(text)
        for link in links:
            target = urllib.parse.urljoin(url, link)
            if target.startswith(base):  # others are not ours to serve
                pending.append(target)
            elif not urllib.parse.urlsplit(link).scheme:
                raise AssertionError(f"{path} imports {link!r}, which no server resolves")
    return fetched


def npm_pack(work: Path) -> Path:
    """The tarball ``npm pack`` makes of ``js/``, checked to hold ``LICENSE`` (the
    repository's, byte for byte)."""
    out = run(["npm", "pack", "--json", "--pack-destination", str(work)], cwd=ROOT / "js")
    tarball = work / json.loads(out)[0]["filename"]
    with tarfile.open(tarball) as tar:
        member = tar.extractfile("package/LICENSE")
        if member is None or member.read() != (ROOT / "LICENSE").read_bytes():
            raise AssertionError("the npm tarball's LICENSE is not the repository's")
    return tarball


def check_npm_read(tarball: Path, project: Path, url: str) -> None:
    """Install ``tarball`` in a new project and read a box of ``t`` from ``url``."""
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "scratch", "private": True}))
    run(["npm", "install", "--no-audit", "--no-fund", "--silent", str(tarball)], cwd=project)
    (project / "read.mjs").write_text(READ_WITH_NPM)
    got = json.loads(run(["node", "read.mjs", url, json.dumps(BOX)], cwd=project))
    (y0, y1), (x0, x1) = BOX
    expected = [y * SHAPE[1] + x for y in range(y0, y1) for x in range(x0, x1)]
    if got != {"shape": [y1 - y0, x1 - x0], "data": expected}:
        raise AssertionError(f"the npm package read {got}, not {expected}")


def check_npm_types(project: Path) -> None:
    """Type-check :data:`USE_TYPES` in ``project``, where the npm package is installed:
    strict, its declarations checked too, no Node types (a browser project's view),
    with the TypeScript of ``js/``'s lockfile."""
    (project / "use.mts").write_text(USE_TYPES)
    options = {
        "noEmit": True,
        "strict": True,
        "skipLibCheck": False,
        "module": "nodenext",
        "target": "es2022",
        "lib": ["es2022", "dom"],
        "types": [],
    }
    config = {"compilerOptions": options, "files": ["use.mts"]}
    (project / "tsconfig.json").write_text(json.dumps(config))
    run([str(ROOT / "js" / "node_modules" / ".bin" / "tsc"), "-p", "."], cwd=project)


if __name__ == "__main__":
    sys.exit(main())
