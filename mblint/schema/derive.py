"""A schema derived from the Megatron-Bridge source at hand, so that a release mblint does not
bundle (a checkout of main, a release that shipped yesterday) is linted against its own
fields, defaults and registered names.

The source is read with ``ast`` (never imported) and only as far as the configuration
classes reach: ``ConfigContainer`` and the classes its fields name (with their bases and
default factories), the mixed-precision config and registry, the deprecations, the checks
of ``facts.SOURCE_CHECKS`` and the facts of ``runtime_facts`` (flex dispatcher GPUs, collate
padding). The other classes (model providers, PEFT and data helpers,
Megatron-Core's), Megatron-Core's facts and the HF-bridge facts come from the nearest bundled
release (the source at hand rarely holds Megatron-Core). Work is bounded (files,
bytes, nesting); a source mblint cannot derive from falls back to the bundled schema, with a
note.

The result is cached by content, beside the result cache (``.mblint_cache/<mblint
version>/schema/<key>.json.gz`` at the project root, or ``--cache-dir``): the key hashes every
file that can change it (the package's ``.py`` files outside recipes and tests), so an edit
anywhere in them derives again. ``--no-cache`` turns off the result cache only."""

from __future__ import annotations

import ast
import gzip
import json
import os
import tempfile
import zlib
from pathlib import Path

from mblint.extract.modules import SourceError, SourceLimit
from mblint.paths import read_regular
from mblint.schema import FieldSpec, Schema, bundled_releases, register_schema, schema_from_json
from mblint.schema.build import (
    CONFIG_CONTAINER,
    TRANSFORMER_CONFIG,
    FORMAT,
    compact_fields,
    keep_module,
    share_inherited_fields,
)
from mblint.schema.extract import (
    ClassKinds,
    FieldExtractor,
    Module,
    SourceIndex,
    _index_statement,
    class_record,
)
from mblint.schema.facts import (
    bridge_used_values,
    deprecated_fields,
    constructor_facts,
    init_aliases,
    mixed_precision_lookup,
    mixed_precision_recipes,
    provider_attributes,
    source_checks,
)
from mblint.schema.runtime_facts import collate_pad_multiple, flex_backend_gpus
from mblint.schema.self_preserving import self_preserving_methods
from mblint.schema.source import BridgeSource

try:  # the hash mblint.cache uses, without loading OpenSSL at start-up
    from _blake2 import blake2b  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from hashlib import blake2b

DERIVE_FORMAT = 11  # bump to re-derive cached schemas when what is derived changes
MAX_FILES = 4000
MAX_FILE_BYTES = 2_000_000
MAX_TOTAL_BYTES = 80_000_000
MAX_MODULES_PARSED = 600
SKIPPED_FOLDERS = {"recipes", "perf_recipes", "tests", "__pycache__"}
RECIPE_FOLDERS = ("recipes", "perf_recipes")
MIXED_PRECISION = "megatron.bridge.training.mixed_precision"


class DeriveError(Exception):
    """The source at hand could not be read into a schema (too large, unreadable, cyclic)."""


_DERIVED_HERE: dict[tuple, Schema] = {}  # (package, file signatures, base, version) -> schema, in this process


def derive_schema(source: BridgeSource, base: Schema, version: str | None = None,
                  cache_dir: Path | None = None, parse=None) -> Schema:
    """The schema of ``source``, built on ``base`` (the nearest bundled release); registered so
    ``load_schema(schema.key)`` finds it. Kept in ``cache_dir`` (a folder of the project's
    result cache) by content; None: derived again by every process. ``parse(path)``: the ``ast``
    tree of a file, from the caller's own parser (shared with the interpreter); default
    ``ast.parse``. Raises DeriveError."""
    version = source.version or version or "unknown"
    signature = (str(source.package), stat_signature(source.package), base.key, version)
    found = _DERIVED_HERE.get(signature)
    if found is not None:
        return found
    files = source_files(source.package)
    digest = content_key(files, base)
    key = f"{version}+src.{digest[:12]}"
    cached = _cache_file(cache_dir, digest) if cache_dir is not None else None
    data = _read_cache(cached) if cached is not None else None
    if data is None:
        try:
            data = derive_json(source, base, files, parse)
        except (RecursionError, MemoryError, ValueError, SyntaxError, OSError, KeyError) as error:
            raise DeriveError(f"{type(error).__name__}: {error}".rstrip(": ")) from None
        if cache_dir is not None:
            _write_cache(cache_dir, digest, data)
    data["megatron_bridge_version"] = version
    data["megatron_core_version"] = base.megatron_core_version
    schema = schema_from_json(data, key=key, source=f"derived from {source.package}")
    schema.source_files = tuple(str(source.root / relative) for relative in data.get("source_files", ()))
    register_schema(schema)
    _DERIVED_HERE[signature] = schema
    return schema


def stat_signature(package: Path) -> tuple:
    """(path, size, mtime) of every file source_files() would read: a cheap test, within one
    process, that nothing changed since the schema was derived."""
    found = []
    for folder, dirs, names in os.walk(package, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".py"):
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                found.append((folder, name, info.st_size, info.st_mtime_ns))
                if len(found) > MAX_FILES:
                    return tuple(found)
    return tuple(found)


def source_files(package: Path) -> list[tuple[Path, bytes]]:
    """(path, bytes) of every ``.py`` below ``package`` that can change the schema, in a fixed
    order; bounded in count and size."""
    found: list[tuple[Path, bytes]] = []
    total = 0
    for folder, dirs, names in os.walk(package, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = Path(folder) / name
            if len(found) >= MAX_FILES:
                raise DeriveError(f"more than {MAX_FILES} files below {package}")
            data = _read_source(path)
            total += len(data)
            if total > MAX_TOTAL_BYTES:
                raise DeriveError(f"more than {MAX_TOTAL_BYTES} bytes of Python below {package}")
            found.append((path, data))
    return found


def _read_source(path: Path) -> bytes:
    """A source file's bytes: empty when it is no regular file or larger than MAX_FILE_BYTES."""
    try:
        return read_regular(path, MAX_FILE_BYTES, follow_links=False)
    except (OSError, ValueError):
        return b""


def content_key(files: list[tuple[Path, bytes]], base: Schema) -> str:
    from mblint import __version__

    hasher = blake2b(digest_size=20)
    # the bundled data file is named by its content: a regenerated base is another base
    data_file = bundled_releases().get(base.key, {}).get("file", "")
    hasher.update(f"{DERIVE_FORMAT}:{FORMAT}:{__version__}:{base.key}:{data_file}\0".encode())
    root = files[0][0].parent if files else Path()
    for path, data in files:
        hasher.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()


# --------------------------------------------------------------------------- cache


MAX_CACHE_BYTES = 8_000_000  # a cached schema, compressed
MAX_CACHE_JSON = 64_000_000  # and its JSON


def _read_cache(path: Path) -> dict | None:
    """The cached schema, or None when there is none or it cannot be trusted to be one: read
    as a regular file (never through a link), bounded before and after decompression."""
    try:
        packed = read_regular(path, MAX_CACHE_BYTES, follow_links=False)
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        text = inflate.decompress(packed, MAX_CACHE_JSON)
        if inflate.unconsumed_tail:
            return None
        data = json.loads(text)
    except (OSError, ValueError, zlib.error, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("derive_format") == DERIVE_FORMAT else None


def _cache_file(folder: Path, digest: str) -> Path | None:
    """Where the schema of content ``digest`` is kept in ``folder``: the name also hashes the
    device and inode of the cache's version folder, as the result cache's entries do, so a
    cache folder that came with a checkout (a committed, forged schema) is never read. None
    while that folder does not exist."""
    from mblint.cache import folder_identity

    identity = folder_identity(folder.parent)
    if identity is None:
        return None
    name = blake2b(f"{digest}|{identity}".encode(), digest_size=20).hexdigest()
    return folder / f"{name}.json.gz"


def _write_cache(folder: Path, digest: str, data: dict) -> None:
    """Written whole or not at all (a temporary file renamed), never through a link (the
    result cache's folder rules); a cache that cannot be written only costs a derivation."""
    from mblint.cache import make_cache_folder

    try:
        make_cache_folder(folder)
        path = _cache_file(folder, digest)
        if path is None:
            return
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".schema-", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), compresslevel=1))
        os.replace(temporary, path)
    except OSError:
        return


# --------------------------------------------------------------------------- derivation


class LazyModules(dict):
    """Modules of ``megatron.bridge`` parsed when first asked for (``get``, ``in``, ``[]``);
    modules elsewhere are never looked for. Iterating gives the modules parsed so far."""

    def __init__(self, root: Path, texts: dict[Path, bytes], parse=None) -> None:
        super().__init__()
        self.root = root
        self.texts = texts
        self.parse = parse
        self.missing: set[str] = set()

    def _load(self, name: str) -> Module | None:
        if name in self.missing or not isinstance(name, str) or not name.startswith("megatron.bridge"):
            return None
        if dict.__len__(self) >= MAX_MODULES_PARSED:
            raise DeriveError(f"more than {MAX_MODULES_PARSED} modules reached from the configuration classes")
        base = self.root.joinpath(*name.split("."))
        for path, is_package in ((base / "__init__.py", True), (base.with_suffix(".py"), False)):
            text = self.texts.get(path)
            if text is not None:
                module = _parse(name, path, text, is_package, self.parse)
                dict.__setitem__(self, name, module)
                return module
        self.missing.add(name)
        return None

    def get(self, name, default=None):
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        found = self._load(name)
        return default if found is None else found

    def __contains__(self, name) -> bool:
        return self.get(name) is not None

    def __getitem__(self, name):
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found


def _parse(name: str, path: Path, text: bytes, is_package: bool, parse=None) -> Module:
    tree = None
    if parse is not None:
        try:
            tree = parse(path)
        except SourceError as error:  # the caller's parser read it and refused it: so would ast here
            if error.path == path and not isinstance(error, SourceLimit):
                raise DeriveError(f"{path}:{error.line}: {error.message}") from None
        except Exception:  # noqa: BLE001 - the caller's parser refused it: parsed here, or DeriveError
            tree = None
    if tree is None:
        tree = ast.parse(text, filename=str(path))
    module = Module(name=name, path=path, tree=tree, is_package=is_package)
    package = name if is_package else name.rpartition(".")[0]
    for node in tree.body:
        _index_statement(module, node, package)
    return module


class _Kinds(ClassKinds):
    """Class kinds where a base outside the source (Megatron-Core's TransformerConfig) is a
    dataclass when the bundled schema has it."""

    def __init__(self, index: SourceIndex, base: Schema) -> None:
        super().__init__(index)
        self.base = base

        self._mro: dict[str, list[str]] = {}
        self._outside: dict[str, str | None] = {}

    def is_dataclass(self, qualname: str) -> bool:
        if self.index.class_node(qualname) is None and self.outside(qualname):
            return True
        return super().is_dataclass(qualname)

    def mro(self, qualname: str) -> list[str]:
        found = self._mro.get(qualname)
        if found is None:
            self._mro[qualname] = [qualname]  # cycle guard: a class hierarchy that loops stops here
            found = self._mro[qualname] = super().mro(qualname)
        return found

    def outside(self, qualname: str) -> str | None:
        """The bundled class a base outside the source stands for: by its qualified name, else
        by its name among the bundled classes of the same top package (``megatron.training.config.X``
        is re-exported from ``megatron.training.config.x_config.X``)."""
        if qualname not in self._outside:
            found = qualname if qualname in self.base.classes else None
            if found is None and qualname.startswith("megatron.") and not qualname.startswith("megatron.bridge."):
                module, _, name = qualname.rpartition(".")
                top = ".".join(module.split(".")[:2]) + "."
                found = next((q for q in self.base.by_name.get(name, ()) if q.startswith(top)), None)
            self._outside[qualname] = found
        return self._outside[qualname]


class _Extractor(FieldExtractor):
    """Fields of a class in the source, with those of its bases outside the source taken from
    the bundled schema (first: they are the furthest bases)."""

    def __init__(self, index: SourceIndex, base: Schema) -> None:
        super().__init__(index)
        self.kinds = _Kinds(index, base)
        self.values.kinds = self.kinds
        self.base = base
        self._records: dict[int, dict] = {}

        self._fields: dict[str, dict[str, dict]] = {}
        self._own: dict[str, dict[str, dict]] = {}

    def own_fields(self, qualname: str) -> dict[str, dict]:
        found = self._own.get(qualname)
        if found is None:
            found = self._own[qualname] = super().own_fields(qualname)
        return found

    def fields(self, qualname: str) -> dict[str, dict]:
        found = self._fields.get(qualname)
        if found is None:
            found = self._fields[qualname] = self._merged_fields(qualname)
        return found

    def _merged_fields(self, qualname: str) -> dict[str, dict]:
        merged: dict[str, dict] = {}
        order = self.kinds.mro(qualname)
        for cls in order:
            for base in self.kinds.bases(cls):
                outside = self.kinds.outside(base) if self.index.class_node(base) is None else None
                if outside:
                    for name, spec in self.base.classes[outside].fields.items():
                        merged.setdefault(name, self._record(spec))
        for cls in reversed(order):
            if self.kinds.is_dataclass(cls):
                merged.update(self.own_fields(cls))
        return merged

    def _record(self, spec: FieldSpec) -> dict:
        found = self._records.get(id(spec))
        if found is None:
            found = self._records[id(spec)] = field_record(spec)
        return found


def field_record(spec: FieldSpec) -> dict:
    record = {"annotation": spec.annotation, "classes": list(spec.classes), "default_kind": spec.default_kind,
              "default": spec.default}
    if spec.factory_class:
        record["factory_class"] = spec.factory_class
    if not spec.init:
        record["init"] = False
    if spec.enums:
        record["enums"] = list(spec.enums)
    return record


def derive_json(source: BridgeSource, base: Schema, files: list[tuple[Path, bytes]], parse=None) -> dict:
    texts = {path: data for path, data in files}
    modules = LazyModules(source.root, texts, parse)
    index = SourceIndex(modules)
    extractor = _Extractor(index, base)
    classes: dict[str, dict] = {}
    pending = list(_seed_classes(source, base, index))
    while pending:
        qualname = pending.pop()
        if qualname in classes or index.class_node(qualname) is None or not extractor.kinds.is_dataclass(qualname):
            continue
        module = qualname.rpartition(".")[0]
        if not keep_module(module):
            continue
        fields = extractor.fields(qualname)
        classes[qualname] = class_record(index, extractor, qualname, fields)
        for spec in fields.values():
            pending.extend(q for q in spec.get("classes", ()) if q not in classes)
            if spec.get("factory_class"):
                pending.append(spec["factory_class"])
        pending.extend(b for b in extractor.kinds.bases(qualname) if b not in classes)
    if CONFIG_CONTAINER not in classes:
        raise DeriveError(f"no {CONFIG_CONTAINER.rsplit('.', 1)[-1]} in {source.package}")
    return _assemble(source, base, index, extractor, classes, files)


def _seed_classes(source: BridgeSource, base: Schema, index: SourceIndex):
    """ConfigContainer (the classes its fields name, their bases and factories follow) and the
    mixed-precision config. The other Megatron-Bridge classes (model providers, PEFT and data
    helpers) are the nearest bundled release's: deriving them too parses about five times as
    many modules (benchmarks/README, issue 25)."""
    yield CONFIG_CONTAINER
    yield MIXED_PRECISION + ".MixedPrecisionConfig"


def _assemble(source, base: Schema, index, extractor, classes: dict, files) -> dict:
    texts = dict(files)
    bridge = {q: c for q, c in classes.items()}
    outside = {q: {"name": spec.name, "module": spec.module, "bases": list(spec.bases),
                   "fields": {n: extractor._record(f) for n, f in spec.fields.items()}}
               for q, spec in base.classes.items() if q not in classes}
    all_classes = {**outside, **bridge}
    enums = dict(base.enums)
    for cls in bridge.values():
        for spec in cls["fields"].values():
            for qualname in spec.get("enums", ()):
                if qualname not in enums and extractor.kinds.is_enum(qualname):
                    enums[qualname] = extractor.values.enum_members(qualname)
    allowed = base.facts.get("allowed_values", {})
    recipe_texts = (_read_source(path) for folder in RECIPE_FOLDERS
                    for path in sorted((source.package / folder).rglob("*.py"))[:MAX_FILES])
    overlay = dict(base.overlay)
    overlay["field_aliases"], overlay["init_normalisations"] = constructor_facts(
        index, bridge, base.overlay.get("init_normalisations"))
    overlay["init_aliases"] = init_aliases(index, bridge)
    index.modules.get(MIXED_PRECISION)
    gone = _removed(base, all_classes)
    data = {
        "derive_format": DERIVE_FORMAT,
        "format": FORMAT,
        "root": CONFIG_CONTAINER,
        "classes": all_classes,
        "enums": enums,
        "hf_provider": base.hf_provider,
        "hf_derived_fields": sorted(base.hf_derived_fields),
        "mixed_precision_recipes": mixed_precision_recipes(index),
        "mixed_precision_lookup": mixed_precision_lookup(index),
        "deprecated_fields": {**base.deprecated_fields,
                              **deprecated_fields(_Warning(index, texts), all_classes, CONFIG_CONTAINER)},
        "removed_fields": {**{p: v for p, v in base.removed_fields.items() if p not in _paths(all_classes)}, **gone},
        "facts": {**base.facts, "allowed_values_from_bridge": bridge_used_values(recipe_texts, allowed),
                  "provider_attributes": sorted(set(base.facts.get("provider_attributes", ()))
                                                | set(provider_attributes(index, all_classes, TRANSFORMER_CONFIG))),
                  "self_preserving_methods": {
                      **{q: m for q, m in base.facts.get("self_preserving_methods", {}).items() if q not in bridge},
                      **self_preserving_methods(index, bridge, extractor.kinds)},
                  "flex_backend_gpus": flex_backend_gpus(index),
                  "collate_pad_multiple": collate_pad_multiple(index),
                  "checks": {**{n: w for n, w in base.facts.get("checks", {}).items() if "/bridge/" not in w},
                             **source_checks(lambda rel: _text(texts, source.root / "megatron" / rel), ("bridge",))}},
        "overlay": {key: value for key, value in overlay.items() if value},
        "source_files": sorted(str(m.path.relative_to(source.root)) for m in dict.values(index.modules)),
    }
    compact_fields(all_classes)
    share_inherited_fields(all_classes)
    return data


class _Warning(SourceIndex):
    """The index, with only the parsed modules that mention a deprecation listed: the others
    hold no deprecation warning to read."""

    def __init__(self, index: SourceIndex, texts: dict[Path, bytes]) -> None:
        super().__init__(_Listed(index.modules, texts))


class _Listed(dict):
    def __init__(self, modules: LazyModules, texts: dict[Path, bytes]) -> None:
        super().__init__()
        self.lazy = modules
        self.texts = texts

    def items(self):
        return [(name, module) for name, module in dict.items(self.lazy) if b"deprecat" in self.texts.get(module.path, b"")]

    def get(self, name, default=None):
        return self.lazy.get(name, default)

    def __contains__(self, name) -> bool:
        return name in self.lazy

    def __getitem__(self, name):
        return self.lazy[name]


def _text(texts: dict[Path, bytes], path: Path) -> str | None:
    data = texts.get(path)
    return data.decode("utf-8", errors="replace") if data is not None else None


def _fields_of(classes: dict, qualname: str) -> dict:
    return classes.get(qualname, {}).get("fields", {})


def _paths(classes: dict) -> set[str]:
    paths = set()
    for section, spec in _fields_of(classes, CONFIG_CONTAINER).items():
        for qualname in spec.get("classes", ()):
            paths.update(f"{section}.{name}" for name in _fields_of(classes, qualname))
    return paths


def _removed(base: Schema, bridge: dict) -> dict[str, str]:
    """Container paths the bundled release has and the source at hand does not."""
    before = set()
    root = base.classes.get(CONFIG_CONTAINER)
    for section, spec in (root.fields.items() if root else ()):
        for qualname in spec.classes:
            holder = base.classes.get(qualname)
            before.update(f"{section}.{name}" for name in (holder.fields if holder else ()))
    return {path: base.megatron_bridge_version for path in sorted(before - _paths(bridge))}
