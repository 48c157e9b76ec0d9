"""Facts of what a Megatron-Bridge release does at job start and while training that rules need
beyond its configuration classes, read with ``ast`` from its source: which GPUs each flex
dispatcher backend runs on (and what ``validate()`` raises elsewhere), and the multiple the
packed SFT dataset's collate pads a pack to. Both are derived per release, bundled and from the
source at hand, so a rule follows the release it lints."""

from __future__ import annotations

import ast

from mblint.schema.extract import ClassKinds, SourceIndex

FLEX_MODULE = "megatron.bridge.training.flex_dispatcher_backend"
FLEX_VALIDATOR = "validate_flex_dispatcher_backend"
GPU_NAME = "{gpu}"  # where a message names the device (``{device_properties.name}``)


def flex_backend_gpus(index: SourceIndex) -> dict[str, dict]:
    """What ``validate_flex_dispatcher_backend`` accepts per backend: {backend: {"majors":
    [compute capability majors], "names": [device names], "names_match": "exact" | "start",
    "message": what it raises, with GPU_NAME for the device name, "source": "path:line"}}. A
    backend whose check is written in a form not read here is left out (its rule says nothing)."""
    mod = index.modules.get(FLEX_MODULE)
    function = next((node for node in mod.tree.body if isinstance(node, ast.FunctionDef)
                     and node.name == FLEX_VALIDATOR), None) if mod is not None else None
    if function is None:
        return {}
    path = index.relpath(FLEX_MODULE)
    found = {}
    for node in ast.walk(function):
        backend = _backend_branch(node)
        check = _gpu_check(node.body) if backend is not None else None
        if check is not None and backend not in found:
            found[backend] = {**check[1], "source": f"{path}:{check[0]}"}
    return dict(sorted(found.items()))


def _backend_branch(node: ast.AST) -> str | None:
    """The backend of ``if <x>.moe_flex_dispatcher_backend == "name":``."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return None
    test = node.test
    left, right = test.left, test.comparators[0]
    if (len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and isinstance(left, ast.Attribute)
            and left.attr == "moe_flex_dispatcher_backend" and isinstance(right, ast.Constant)
            and isinstance(right.value, str)):
        return right.value
    return None


def _gpu_check(body: list[ast.stmt]) -> tuple[int, dict] | None:
    """(line, facts) of a branch that is ``if not <supported>: raise ValueError(<message>)``."""
    if len(body) != 1 or not isinstance(body[0], ast.If) or body[0].orelse:
        return None
    check = body[0]
    supported = _negated(check.test)
    accepts = _accepted(supported) if supported is not None else None
    message = _raised_message(check.body)
    if accepts is None or message is None:
        return None
    return check.lineno, {**accepts, "message": message}


def _negated(test: ast.expr) -> ast.expr | None:
    """``X`` of ``not X``, and ``a in b`` of ``a not in b``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
        return ast.Compare(left=test.left, ops=[ast.In()], comparators=test.comparators)
    return None


def _accepted(supported: ast.expr) -> dict | None:
    """The majors and names of ``major in (8, 9) or name in [...]`` / ``name.startswith((...))``."""
    terms = supported.values if isinstance(supported, ast.BoolOp) and isinstance(supported.op, ast.Or) else [supported]
    facts: dict = {"majors": [], "names": [], "names_match": "exact"}
    for term in terms:
        if isinstance(term, ast.Compare) and len(term.ops) == 1 and isinstance(term.ops[0], ast.In) \
                and isinstance(term.left, ast.Attribute) and term.left.attr in ("major", "name"):
            items = _constants(term.comparators[0], int if term.left.attr == "major" else str)
            key = "majors" if term.left.attr == "major" else "names"
        elif _is_name_startswith(term):
            items, key = _constants(term.args[0], str), "names"
            facts["names_match"] = "start"
        else:
            return None
        if items is None or (key == "names" and facts["names"]):
            return None
        facts[key] = sorted(set(facts[key]) | set(items))
    return facts


def _is_name_startswith(term: ast.expr) -> bool:
    return (isinstance(term, ast.Call) and isinstance(term.func, ast.Attribute) and term.func.attr == "startswith"
            and isinstance(term.func.value, ast.Attribute) and term.func.value.attr == "name"
            and len(term.args) == 1 and not term.keywords)


def _constants(node: ast.expr, kind: type) -> list | None:
    """The items of a literal tuple or list (or one constant) all of type ``kind``."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    values = [item.value for item in items if isinstance(item, ast.Constant)]
    if len(values) != len(items) or not all(type(value) is kind for value in values):
        return None
    return values


def _raised_message(body: list[ast.stmt]) -> str | None:
    """The text of ``raise ValueError("..." f"... {device_properties.name}")``."""
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or not isinstance(body[0].exc, ast.Call):
        return None
    call = body[0].exc
    if not (isinstance(call.func, ast.Name) and call.func.id == "ValueError" and len(call.args) == 1):
        return None
    message = call.args[0]
    parts = message.values if isinstance(message, ast.JoinedStr) else [message]
    text = []
    for part in parts:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            text.append(part.value)
        elif (isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Attribute)
              and part.value.attr == "name" and part.conversion == -1 and part.format_spec is None):
            text.append(GPU_NAME)
        else:
            return None
    return "".join(text)


# The packed SFT dataset: in data/packing/gpt_sft.py from 0.6, data/datasets/sft.py before.
PACKED_DATASETS = ("megatron.bridge.data.packing.gpt_sft.GPTSFTPackedDataset",
                   "megatron.bridge.data.datasets.sft.GPTSFTPackedDataset")
COLLATE_PARAMETER = "pad_seq_length_to_mult"


def collate_pad_multiple(index: SourceIndex) -> dict | None:
    """The multiple a pack not padded to the full width is padded to by the packed dataset's
    collate, unless ``dataset_kwargs`` passes another: the default of ``pad_seq_length_to_mult``
    in the ``__init__`` of GPTSFTPackedDataset or of the first base declaring it. {"value": int,
    "source": "path:line"}, or None."""
    kinds = ClassKinds(index)
    packed = next((qualname for qualname in PACKED_DATASETS if index.class_node(qualname) is not None), None)
    for qualname in _bases_in_order(kinds, packed) if packed else ():
        found = _init_default(index.class_node(qualname), COLLATE_PARAMETER)
        if found is not None:
            line, value = found
            return {"value": value, "source": f"{index.relpath(qualname.rpartition('.')[0])}:{line}"}
    return None


def _bases_in_order(kinds: ClassKinds, qualname: str) -> list[str]:
    """The class and the bases mblint can read, depth first, each once (a hostile source may
    make its bases a cycle, which ``ClassKinds.mro`` would follow without end)."""
    order, stack = [], [qualname]
    while stack and len(order) < 64:
        current = stack.pop()
        if current in order or kinds.index.class_node(current) is None:
            continue
        order.append(current)
        stack.extend(reversed(kinds.bases(current)))
    return order


def _init_default(node: ast.ClassDef, parameter: str) -> tuple[int, int] | None:
    """(line, value) of ``parameter``'s integer default in the class's own ``__init__``."""
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return None
    positional = init.args.posonlyargs + init.args.args
    pairs = list(zip(positional[len(positional) - len(init.args.defaults):], init.args.defaults))
    pairs += [(arg, default) for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults) if default is not None]
    for arg, default in pairs:
        if arg.arg == parameter and isinstance(default, ast.Constant) and type(default.value) is int:
            return arg.lineno, default.value
    return None
