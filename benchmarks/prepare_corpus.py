"""Prepare the real-recipe benchmark corpus.

Downloads the Megatron-Bridge wheels named in ``VERSIONS`` with ``pip download --no-deps``
into ``benchmarks/.corpus/wheels/`` and extracts only the recipe sources
(``megatron/bridge/recipes/**`` and ``megatron/bridge/perf_recipes/**``), keeping the package
layout, into ``benchmarks/.corpus/mb-<version>/``: the corpus issue 6 names. Every Python file
of the package (``megatron/**/*.py``) goes into ``benchmarks/.corpus/mb-<version>-package/``: the
same recipes with the modules they import beside them, as in a checkout of Megatron-Bridge.

Idempotent: a version whose extraction is complete (marker file present) is left alone, and a
wheel already in the wheels folder is not downloaded again.

    python benchmarks/prepare_corpus.py                 # download from the package index
    python benchmarks/prepare_corpus.py --wheels-dir DIR   # use wheels already on disk
"""

from __future__ import annotations

import argparse
import glob
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
CORPUS_DIR = HERE / ".corpus"

# version -> extra arguments to ``pip download``. 0.6.2 declares Requires-Python >= 3.12, so
# ask pip for a wheel as if we were on 3.12 (the wheel is pure Python; we never import it).
VERSIONS: dict[str, list[str]] = {
    "0.3.1": [],
    "0.6.2": ["--python-version", "3.12", "--only-binary=:all:"],
}

KEEP_PREFIXES = ("megatron/bridge/recipes/", "megatron/bridge/perf_recipes/")
MARKER = ".complete"
ROOT_MARKER_TEXT = """\
# Written by the mblint benchmark. It marks this corpus directory as a project root of its own.
# benchmarks/.corpus/ is gitignored, and linters that honour .gitignore even for files named on
# the command line (Fixit does) would otherwise silently check nothing. No settings here: every
# tool runs with its defaults.
"""


def mark_project_root(directory: Path) -> None:
    """Write the empty ``pyproject.toml`` root marker into ``directory`` (idempotent)."""
    marker = Path(directory) / "pyproject.toml"
    if not marker.exists() or marker.read_text() != ROOT_MARKER_TEXT:
        marker.write_text(ROOT_MARKER_TEXT)


def _inside(name: str) -> bool:
    """A wheel member's name that stays below the extraction folder."""
    p = PurePosixPath(name)
    return not p.is_absolute() and ".." not in p.parts


def keep_member(name: str) -> bool:
    """True for wheel members that belong to the corpus (recipe sources only)."""
    return not name.endswith("/") and _inside(name) and name.startswith(KEEP_PREFIXES)


def keep_package_member(name: str) -> bool:
    """True for the package's Python sources (every ``megatron/**/*.py``)."""
    return _inside(name) and name.startswith("megatron/") and name.endswith(".py")


def extract_recipes(wheel: Path, dest: Path, keep=keep_member) -> int:
    """Extract the members of ``wheel`` that ``keep`` accepts (the recipe sources) under
    ``dest``; return the number of files."""
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    n = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if not keep(info.filename):
                continue
            target = tmp / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            n += 1
    mark_project_root(tmp)
    (tmp / MARKER).write_text(f"{wheel.name}\n{n}\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return n


def wheel_glob(version: str) -> str:
    return f"megatron_bridge-{version}-*.whl"


def find_wheel(directory: Path, version: str) -> Path | None:
    hits = sorted(glob.glob(str(directory / wheel_glob(version))))
    return Path(hits[0]) if hits else None


def download_wheel(version: str, extra: list[str], dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
        "--dest", str(dest), *extra, f"megatron-bridge=={version}",
    ]
    print("  $", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    wheel = find_wheel(dest, version)
    if wheel is None:
        raise RuntimeError(f"pip download did not produce a wheel for megatron-bridge=={version}")
    return wheel


def corpus_path(version: str, root: Path = CORPUS_DIR) -> Path:
    return root / f"mb-{version}"


def package_path(version: str, root: Path = CORPUS_DIR) -> Path:
    return root / f"mb-{version}-package"


def prepare(wheels_dir: Path | None = None, root: Path = CORPUS_DIR, force: bool = False,
            quiet: bool = False) -> dict[str, Path]:
    """Make sure every corpus version is extracted; return {version: corpus dir}."""
    out: dict[str, Path] = {}
    local_wheels = root / "wheels"
    for version, extra in VERSIONS.items():
        dest, package = corpus_path(version, root), package_path(version, root)
        out[version] = dest
        if (dest / MARKER).exists() and (package / MARKER).exists() and not force:
            mark_project_root(dest)
            mark_project_root(package)
            if not quiet:
                print(f"corpus mb-{version}: ready ({dest}, whole package in {package.name})")
            continue
        wheel = None
        if wheels_dir is not None:
            wheel = find_wheel(wheels_dir, version)
            if wheel is None:
                print(f"corpus mb-{version}: not in {wheels_dir}, downloading", flush=True)
        if wheel is None:
            wheel = find_wheel(local_wheels, version)
        if wheel is None:
            print(f"corpus mb-{version}: downloading", flush=True)
            wheel = download_wheel(version, extra, local_wheels)
        n = extract_recipes(wheel, dest)
        whole = extract_recipes(wheel, package, keep=keep_package_member)
        print(f"corpus mb-{version}: extracted {n} files from {wheel.name} into {dest}, "
              f"{whole} into {package}")
    return out


def python_files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*.py") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheels-dir", type=Path, default=None,
                    help="directory holding already-downloaded megatron_bridge-*.whl files")
    ap.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    ap.add_argument("--force", action="store_true", help="re-extract even if already prepared")
    args = ap.parse_args(argv)
    dirs = prepare(args.wheels_dir, args.corpus_dir, args.force)
    for version, d in dirs.items():
        files = python_files(d)
        lines = sum(len(p.read_bytes().splitlines()) for p in files)
        print(f"  mb-{version}: {len(files)} .py files, {lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
