"""A model's Hugging Face ``config.json``, found where a training machine keeps it: never on
the network.

Where ``AutoBridge.from_hf_pretrained(model, revision=...)`` is looked up, in order:

1. ``model`` is a folder holding ``config.json`` (a local model given by its path);
2. ``<folder>/<org>/<name>/config.json`` in each folder of config files named in the settings
   (``hf-config-paths``);
3. the local Hugging Face hub cache: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
   ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``. There
   ``models--<org>--<name>/refs/<revision>`` (default ``main``) names a snapshot and
   ``snapshots/<hash>/config.json`` is read; a revision that is a commit hash names the
   snapshot itself.

Reads are bounded (``MAX_CONFIG_BYTES``) and never leave the folder they start from: the
cache's snapshot files are links into the model's own ``blobs/`` folder, which is fine; a link
anywhere else is refused.
"""

from __future__ import annotations

import json
import os
import re
import stat
from json.decoder import scanstring
from pathlib import Path
from typing import Iterable

from mblint.paths import FileTooLarge, NotRegularFile, read_regular

MAX_CONFIG_BYTES = 1 << 20
HF_CONFIG_UNUSABLE = "hf-config-unusable: "  # the note a recipe leaves per config.json it cannot use, with why
OUTSIDE = "not read: outside the project, its search paths and the Hugging Face cache"
# Sizes of the architecture that transformers and Megatron-Core take as counts: a value below 1
# (or not an integer) builds no model, whatever the parallel layout (transformers'
# PretrainedConfig keeps what config.json says; Megatron-Core divides and loops by them).
# (Expert counts are left out: a dense model's config may write 0 experts.)
COUNTS = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size", "intermediate_size",
          "vocab_size", "head_dim")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class HFConfig:
    """A parsed ``config.json``: its top-level values and where each top-level key is
    (``key_positions``: key -> (line, column, end_line, end_column), 1-based)."""

    __slots__ = ("path", "values", "key_positions")

    def __init__(self, path: Path, values: dict, key_positions: dict | None = None) -> None:
        self.path = path
        self.values = values
        self.key_positions = {} if key_positions is None else key_positions

    def position(self, key: str) -> tuple[int, int, int, int]:
        return self.key_positions.get(key, (1, 1, 1, 1))


class HFConfigError(ValueError):
    """A config.json that was found but cannot be used (too big, not JSON, a link out)."""


def hub_cache_dirs(environ: dict | None = None) -> list[Path]:
    """The hub cache folder Hugging Face itself would use (one, as its resolution gives)."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return [Path(env["HF_HUB_CACHE"]).expanduser()]
    if env.get("HF_HOME"):
        return [Path(env["HF_HOME"]).expanduser() / "hub"]
    if env.get("XDG_CACHE_HOME"):
        return [Path(env["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub"]
    return [Path("~/.cache/huggingface/hub").expanduser()]


def find_config(model: str, revision: str | None = None, config_folders: Iterable[Path] = (),
                environ: dict | None = None, watched: list | None = None, allows=None) -> Path | None:
    """The config.json ``from_hf_pretrained(model, revision=revision)`` would read, or None.
    ``watched`` collects the files whose appearance or change would change the answer.
    ``allows(path)``: whether a local model folder may be read (the run's confinement: the
    project and its search paths); None: any. HFConfigError for a folder it refuses."""
    watched = [] if watched is None else watched
    if not isinstance(model, str) or not model or "\x00" in model:
        return None
    local = Path(model).expanduser()
    if local.is_absolute() or model.startswith(("./", "../")) or model.startswith("~"):
        if allows is not None and not allows(local):
            raise HFConfigError(f"{model}: {OUTSIDE}")
        candidate = local / "config.json"
        watched.append(candidate)
        return candidate if _inside(candidate, local) else None
    if not _REPO_ID.match(model):
        return None
    for folder in config_folders:
        candidate = Path(folder) / model / "config.json"
        watched.append(candidate)
        if _inside(candidate, Path(folder)):
            return candidate
    for hub in hub_cache_dirs(environ):
        repo = hub / ("models--" + model.replace("/", "--"))
        if not _COMMIT.match(revision or ""):
            watched.append(repo / "refs" / (revision or "main"))
        snapshot = _snapshot(repo, revision or "main")
        if snapshot is not None:
            candidate = repo / "snapshots" / snapshot / "config.json"
            watched.append(candidate)
            if _inside(candidate, repo):
                return candidate
    return None


def _snapshot(repo: Path, revision: str) -> str | None:
    if _COMMIT.match(revision):
        return revision
    if "/" in revision or "\\" in revision or revision in (".", ".."):
        return None
    ref = repo / "refs" / revision
    try:
        if not _inside(ref, repo):
            return None
        text = _read_bounded(ref, 256).decode("ascii", "replace").strip()
    except (OSError, ValueError):
        return None
    return text if _COMMIT.match(text) else None


def _inside(path: Path, folder: Path) -> bool:
    """``path`` is a regular file whose real location is inside ``folder``'s real location;
    False when there is no such file; HFConfigError when there is one mblint will not read (a
    link out of ``folder``, a FIFO or device), saying so."""
    if not os.path.lexists(path):
        return False
    try:
        real = Path(os.path.realpath(path))
        base = Path(os.path.realpath(folder))
    except (OSError, ValueError):
        return False
    if not real.is_relative_to(base):
        raise HFConfigError(f"{path}: not read: a link out of {folder}")
    try:
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except (OSError, ValueError):
        return False
    if not regular:
        raise HFConfigError(f"{path}: not read: not a regular file (a FIFO, socket or device)")
    return True


def _read_bounded(path: Path, limit: int) -> bytes:
    try:
        return read_regular(os.path.realpath(path), limit)
    except FileTooLarge as error:
        size = f" ({error.size:,} bytes)" if error.size is not None else ""
        raise HFConfigError(f"{path}: too large{size}: over the {limit:,}-byte limit for a config.json, "
                            "not read") from error
    except NotRegularFile as error:
        raise HFConfigError(f"{path}: cannot be read ({error})") from error


def read_config(path: Path) -> HFConfig:
    """The parsed config.json at ``path`` (found by ``find_config``)."""
    try:
        text = _read_bounded(path, MAX_CONFIG_BYTES).decode("utf-8")
        values = json.loads(text)
    except OSError as error:
        raise HFConfigError(f"{path}: cannot be read ({error.strerror or error})") from error
    except UnicodeDecodeError as error:
        raise HFConfigError(f"{path}: not UTF-8 (byte {error.start})") from error
    except ValueError as error:
        raise HFConfigError(f"{path}: not valid JSON ({error})") from error
    except RecursionError as error:
        raise HFConfigError(f"{path}: not read: JSON nested too deeply") from error
    if not isinstance(values, dict):
        raise HFConfigError(f"{path}: not a JSON object")
    config = HFConfig(path, values, _key_positions(text))
    for key in COUNTS:
        value = values.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            line, column, _, _ = config.position(key)
            raise HFConfigError(f"{path}:{line}:{column}: {key} = {json.dumps(value)[:40]} is not a valid value "
                                "(a count of at least 1): not used")
    return config


def _key_positions(text: str) -> dict[str, tuple[int, int, int, int]]:
    """Where each key of the top-level object is (the key's quotes included)."""
    decoder = json.JSONDecoder()
    positions: dict[str, tuple[int, int, int, int]] = {}
    index = _WHITESPACE.match(text, 0).end()
    if text[index:index + 1] != "{":
        return positions
    index += 1
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    try:
        while True:
            index = _WHITESPACE.match(text, index).end()
            if text[index:index + 1] != '"':
                break
            key, end = scanstring(text, index + 1)
            positions.setdefault(key, _span(line_starts, index, end))
            index = _WHITESPACE.match(text, end).end() + 1  # the colon
            index = _WHITESPACE.match(text, index).end()
            _, index = decoder.raw_decode(text, index)
            index = _WHITESPACE.match(text, index).end()
            if text[index:index + 1] != ",":
                break
            index += 1
    except ValueError:
        pass
    return positions


def _span(line_starts: list[int], start: int, end: int) -> tuple[int, int, int, int]:
    from bisect import bisect_right

    line = bisect_right(line_starts, start)
    end_line = bisect_right(line_starts, end - 1)
    return line, start - line_starts[line - 1] + 1, end_line, end - line_starts[end_line - 1] + 1



def unusable_config_notes(notes: list[str]) -> list[str]:
    """``notes`` with the recipes' ``HF_CONFIG_UNUSABLE`` notes made one note per config.json
    (each recipe using the model leaves one), saying why it was not used."""
    unusable = sorted({note[len(HF_CONFIG_UNUSABLE):] for note in notes if note.startswith(HF_CONFIG_UNUSABLE)})
    kept = [note for note in notes if not note.startswith(HF_CONFIG_UNUSABLE)]
    return kept + [f"Hugging Face config {why}; the provider class and architecture fields of the recipes "
                   "using it are unknown and the checks that need them did not run." for why in unusable]
