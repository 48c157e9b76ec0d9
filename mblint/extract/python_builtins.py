"""Plain Python values and the builtins the interpreter evaluates on known arguments."""

from __future__ import annotations

import ast
import functools
import math
from typing import TYPE_CHECKING, Any, Iterable

from mblint.extract.limits import MAX_INT_BITS, MAX_VALUE_SIZE, _format_too_big, _oversized
from mblint.extract.values import (
    BoundMethod,
    ClassRef,
    DeviceName,
    DeviceProperties,
    EnumRef,
    External,
    FuncRef,
    HFBridge,
    ModuleRef,
    Obj,
    is_missing,
    is_unknown,
)
from mblint.model import UNKNOWN

if TYPE_CHECKING:
    from mblint.extract.interpreter import Interpreter
    from mblint.extract.scopes import Frame


SCALARS = (int, float, str, bool, type(None))


_PLAIN_TYPES = frozenset(SCALARS)  # exact types (no subclass) of the arguments of memoized calls


def _known_seq(values: Iterable[Any]) -> bool:
    return all(not is_unknown(v) and not isinstance(v, Obj) for v in values)


def _pure(fn, numbers_only: bool = False):
    """A builtin applied to known arguments. ``numbers_only``: refused unless every argument
    (or element) is a number of bounded size, since the result could be huge (``sum`` of
    lists, ``math.prod`` of a string and a count, ``math.lcm`` of big numbers)."""
    def call(args, kwargs):
        if kwargs or not _known_seq(args):
            return UNKNOWN
        if numbers_only and not _small_numbers(args):
            return UNKNOWN
        try:
            result = fn(*args)
        except Exception:  # noqa: BLE001 - a call that would raise yields unknown
            return UNKNOWN
        return UNKNOWN if _oversized(result) else result

    return call


def _small_numbers(args: list) -> bool:
    items = [x for a in args for x in (a if isinstance(a, (list, tuple, set)) else (a,))]
    if not all(isinstance(x, (int, float)) for x in items):
        return False
    return sum(x.bit_length() for x in items if isinstance(x, int)) <= MAX_INT_BITS


PURE_BUILTINS = {
    "min": _pure(min),
    "max": _pure(max),
    "abs": _pure(abs),
    "int": _pure(int),
    "float": _pure(float),
    "str": _pure(str),
    "bool": _pure(bool),
    "round": _pure(round),
    "len": _pure(len),
    "sum": _pure(sum, numbers_only=True),
    "sorted": _pure(lambda *a: list(sorted(*a))),
    "any": _pure(any),
    "all": _pure(all),
    "tuple": _pure(lambda *a: tuple(*a)),
    "list": _pure(lambda *a: list(*a)),
    "math.lcm": _pure(math.lcm, numbers_only=True),
    "math.gcd": _pure(math.gcd),
    "math.ceil": _pure(math.ceil),
    "math.floor": _pure(math.floor),
    "math.prod": _pure(math.prod, numbers_only=True),
    "math.sqrt": _pure(math.sqrt),
    "math.log2": _pure(math.log2),
}


MATH_NAMES = {"lcm", "gcd", "ceil", "floor", "prod", "sqrt", "log2"}


def _string_method(text: str, name: str, args: list, kwargs: dict) -> Any:
    if kwargs or not _known_seq(args):
        return UNKNOWN
    if _string_result_too_big(text, name, args):
        return UNKNOWN
    if name in ("lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "replace", "split",
                "rsplit", "join", "format", "title", "partition", "rpartition", "removeprefix", "removesuffix",
                "count", "find", "isdigit", "zfill"):
        try:
            return getattr(text, name)(*args)
        except Exception:  # noqa: BLE001
            return UNKNOWN
    return UNKNOWN


def _string_result_too_big(text: str, name: str, args: list) -> bool:
    if name == "zfill":
        return bool(args) and isinstance(args[0], int) and args[0] > MAX_VALUE_SIZE
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        places = text.count(args[0]) if args[0] else len(text) + 1
        return len(text) + places * len(args[1]) > MAX_VALUE_SIZE
    if name == "join" and args and isinstance(args[0], (list, tuple)):
        return _oversized(list(args[0])) or len(text) * len(args[0]) > MAX_VALUE_SIZE
    if name == "format":
        return _format_too_big(text, tuple(args), "{")
    return False


def _isinstance(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) != 2:
        return UNKNOWN
    value, kinds = args
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    answers = [_isinstance_one(interp, value, kind) for kind in kinds]
    if any(answer is True for answer in answers):
        return True
    if all(answer is False for answer in answers):
        return False
    return UNKNOWN


def _isinstance_one(interp: Interpreter, value: Any, kind: Any) -> Any:
    builtin_types = {"builtins.str": str, "builtins.int": int, "builtins.float": float,
                     "builtins.bool": bool, "builtins.list": list, "builtins.tuple": tuple, "builtins.dict": dict}
    if is_unknown(value):
        return UNKNOWN
    if isinstance(kind, External) and kind.qualname in builtin_types:
        python_type = builtin_types[kind.qualname]
        if isinstance(value, Obj):
            return value.is_dict and python_type is dict
        if isinstance(value, (External, BoundMethod, HFBridge, FuncRef, ClassRef, ModuleRef, EnumRef)):
            return UNKNOWN
        return isinstance(value, python_type)
    if isinstance(kind, ClassRef):
        if isinstance(value, Obj) and value.label:
            return UNKNOWN
        if isinstance(value, Obj) and value.cls is not None:
            return interp.schema.is_subclass(value.cls.qualname, kind.spec.qualname) or UNKNOWN
        if isinstance(value, SCALARS) or (isinstance(value, Obj) and value.is_dict):
            return False
    return UNKNOWN


def _getattr(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) < 2 or not isinstance(args[1], str):
        return UNKNOWN
    owner = args[0]
    if isinstance(owner, Obj) and not owner.is_dict:
        value = owner.get(args[1])
        if is_missing(value):
            if owner.cls is not None and args[1] not in owner.cls.fields and len(args) > 2 and not owner.open:
                return args[2]
            return UNKNOWN
        return value
    return UNKNOWN


def _hasattr(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) != 2 or not isinstance(args[1], str):
        return UNKNOWN
    owner = args[0]
    if isinstance(owner, Obj) and not owner.is_dict:
        if args[1] in owner.fields:
            return True
        return UNKNOWN if owner.open else False
    return UNKNOWN


def _setattr(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) == 3 and isinstance(args[0], Obj):
        if isinstance(args[1], str):
            value = UNKNOWN if interp.havoc_depth else args[2]
            args[0].set(args[1], value, interp.origin(node, frame))
        elif isinstance(node, ast.Call) and node.args:
            interp.record_unfollowed(node, node.args[0], frame, "the name of the field it sets is unknown to mblint")
            interp.havoc_obj(args[0], interp.origin(node, frame))
        else:
            interp.havoc_obj(args[0], interp.origin(node, frame))
    return None


def _exec(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    """``exec``/``eval``: code mblint does not read, run with the caller's variables unless it is
    given a namespace: the configuration objects it can reach may change."""
    if not isinstance(node, ast.Call):
        return UNKNOWN
    given = node.args[1:] + [keyword.value for keyword in node.keywords]
    reach = given or [ast.Name(id=name, ctx=ast.Load()) for name in frame.locals]
    interp.record_unfollowed(node, reach, frame, f"mblint does not run the code {_callee(node)}() is given")
    return UNKNOWN


def _callee(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)


def _dict(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    obj = interp.new_obj(None, interp.origin(node, frame))
    for arg in args:
        interp.splat_into(obj, arg)
    for key, value in kwargs.items():
        obj.set(key, value, interp.origin(node, frame))
    return obj


def _super(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    return interp.bridge_super(frame) if not args and not kwargs else UNKNOWN


BUILTIN_SPECIALS = {
    "super": _super,
    "isinstance": _isinstance,
    "getattr": _getattr,
    "hasattr": _hasattr,
    "setattr": _setattr,
    "dict": _dict,
    "exec": _exec,
    "eval": _exec,
}


def _cast(interp: "Interpreter", args: list, kwargs: dict, node: ast.AST, frame: "Frame") -> Any:
    """``typing.cast(type, value)`` returns ``value`` as it is."""
    if len(args) == 2 and not kwargs:
        return args[1]
    return kwargs.get("val", UNKNOWN) if len(args) == 1 and set(kwargs) == {"val"} else UNKNOWN


def _deepcopy(interp: "Interpreter", args: list, kwargs: dict, node: ast.AST, frame: "Frame") -> Any:
    """``copy.deepcopy(x)``: a copy of ``x`` that shares nothing with it (plain values as they are)."""
    if len(args) != 1 or kwargs:
        return interp.unmodelled_call(External("copy.deepcopy"), args, kwargs, node, frame)
    value = args[0]
    return interp.copy_obj(value, {}) if isinstance(value, Obj) else value


def _cuda_is_available(interp: "Interpreter", args: list, kwargs: dict, node: ast.AST, frame: "Frame") -> Any:
    """True where the job's GPU is known: the recipe is built in the training processes, on it
    (scripts/training/run_recipe.py); else unknown (a launcher may build it on a CPU host)."""
    interp.gpu_reads += 1
    return True if interp.gpu is not None else UNKNOWN


def _cuda_device_properties(interp: "Interpreter", args: list, kwargs: dict, node: ast.AST, frame: "Frame") -> Any:
    interp.gpu_reads += 1
    gpu = interp.gpu
    return UNKNOWN if gpu is None else DeviceProperties(gpu.major, DeviceName(gpu.name_prefix))


# Functions of modules mblint does not read that it evaluates all the same.
EXTERNAL_SPECIALS = {"typing.cast": _cast, "copy.deepcopy": _deepcopy, "torch.cuda.is_available": _cuda_is_available,
                     "torch.cuda.get_device_properties": _cuda_device_properties}


# What a name no scope defines stands for (each builtin's External made once).
_BUILTIN_NAMES = {"True": True, "False": False, "None": None,
                  **{name: External(f"builtins.{name}") for name in (*PURE_BUILTINS, *BUILTIN_SPECIALS)}}


@functools.lru_cache(maxsize=None)
def _external_builtin(qualname: str) -> tuple:
    """(pure function, special handler) that ``Interpreter.call_external`` applies to an
    External of this name; None where there is none."""
    short = qualname[len("builtins."):] if qualname.startswith("builtins.") else qualname
    if short.startswith("math.") or (short.rsplit(".", 1)[-1] in MATH_NAMES and "math" in short):
        short = "math." + short.rsplit(".", 1)[-1]
    if short in PURE_BUILTINS:
        return PURE_BUILTINS[short], None
    return None, BUILTIN_SPECIALS.get(short) or EXTERNAL_SPECIALS.get(short)

