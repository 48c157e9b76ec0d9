"""A small abstract interpreter over recipe functions. It reads the code (``ast``) and never
imports or runs it. Values it cannot know become ``UNKNOWN``; a branch on an unknown condition
runs both ways and merges (equal -> known, different -> unknown); stores inside loops and
objects handed to calls it cannot follow become unknown.

``Interpreter`` is put together from one part per concern, each in its own module:

- ``scopes``: module scopes, frames, imports and name look-up;
- ``calls``: function calls (memoized results, arguments, returns) and method calls;
- ``state``: objects, copies, snapshots and the merge of the states two paths leave;
- ``statements``: statements, stores, and havoc where mblint cannot follow;
- ``expressions``: expressions, operators, comprehensions and call arguments;
- ``limits``: the bounds on work and value sizes (docs/robustness.md);
- ``python_builtins``: plain Python values and the builtins evaluated on known arguments;
- ``megatron``: Megatron-Bridge specifics (schema classes and enums, constructors and their
  defaults, Hugging Face providers, mixed-precision factories);
- ``positions``: origins, the places values were set.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mblint.extract.calls import CallSite, CallsMixin
from mblint.extract.expressions import ExpressionsMixin
from mblint.extract.limits import (
    MAX_CALL_DEPTH,
    MAX_COMPREHENSION,
    MAX_EXPR_DEPTH,
    MAX_FILE_STEPS,
    MAX_INT_BITS,
    MAX_RECIPES_PER_FILE,
    MAX_STEPS,
    MAX_VALUE_SIZE,
    BudgetExceeded,
    LimitsMixin,
)
from mblint.extract.hf_models import NO_INDEX_YET, HFModelsMixin
from mblint.extract.megatron import MegatronMixin
from mblint.extract.modules import ModuleFinder
from mblint.extract.positions import PositionsMixin
from mblint.extract.scopes import Frame, ModuleScope, Return, ScopesMixin
from mblint.extract.state import StateMixin
from mblint.extract.statements import StatementsMixin
from mblint.extract.values import Obj
from mblint.schema import Schema

__all__ = ["Interpreter", "Frame", "Return", "BudgetExceeded", "MAX_CALL_DEPTH", "MAX_COMPREHENSION", "MAX_EXPR_DEPTH",
           "MAX_FILE_STEPS", "MAX_INT_BITS", "MAX_RECIPES_PER_FILE", "MAX_STEPS", "MAX_VALUE_SIZE"]


class Interpreter(ScopesMixin, MegatronMixin, HFModelsMixin, StateMixin, CallsMixin, StatementsMixin, ExpressionsMixin,
                  LimitsMixin, PositionsMixin):
    """Evaluates recipe functions over one ``Schema``. One instance serves many recipes; each
    recipe evaluation gets fresh objects."""

    def __init__(self, schema: Schema, finder: ModuleFinder) -> None:
        self.schema = schema
        self.finder = finder
        self.scopes: dict[Path, ModuleScope] = {}
        self.objects: list[Obj] = []
        self.uncopied = 0  # objects of memoized results handed out uncopied, counted as if in ``objects``
        self.call_stack: list[ast.AST] = []
        self.call_sites: tuple["CallSite", ...] = ()  # the Origin.via of what is set now
        self.havoc_depth = 0
        self.steps = 0
        self.budget_hit = False
        self.memo: dict = {}
        self.gpu = None  # mblint.gpus.Gpu: the GPU of the job being interpreted, when known
        self.gpu_reads = 0  # how often the code read it (torch.cuda): results that did are memoized per GPU
        self.gpu_dependent: set = set()  # memo keys (without the GPU) of such results
        self.unused_recipe_results: dict[tuple, None] = {}  # memo keys, oldest first
        self.clock = 0
        self.default_tables: dict[tuple, tuple] = {}  # (ClassSpec, for an HF provider) -> default_table()
        self.expr_depth = 0
        self.notes: list[str] = []
        self.limits: list[str] = []  # the limits this recipe hit (SY002), first one first
        self.limit_hits = 0
        self._running_stmt: ast.stmt | None = None  # the statement being run, for limit messages
        self._running_scope: ModuleScope | None = None  # and the module it is in
        overlay = schema.overlay or {}
        self.hf_factories = {q.rsplit(".", 2)[-2] + "." + q.rsplit(".", 1)[-1]
                             for q in overlay.get("hf_model_factories", [])} or {"AutoBridge.from_hf_pretrained"}
        # Methods missing from a release are still recognised: recipes written for newer
        # Megatron-Bridge lines call them (e.g. get_model_config).
        self.hf_methods = set(overlay.get("hf_provider_methods", [])) | set(overlay.get("hf_provider_methods_missing", []))
        self.init_aliases = {k: v for k, v in overlay.get("init_aliases", {}).items() if not k.startswith("_")}
        self.field_aliases = {k: v for k, v in overlay.get("field_aliases", {}).items() if not k.startswith("_")}
        self.init_normalisations = {k: v for k, v in overlay.get("init_normalisations", {}).items()
                                    if not k.startswith("_")}
        # {class qualname: {method: entry}}: methods that cannot change the object they are called on
        self.self_preserving = (schema.facts or {}).get("self_preserving_methods", {})
        # Attribute stores on values that are not config objects (a string, None): they raise
        # AttributeError when the recipe runs. (origin, target source, owner, attribute)
        self.attribute_errors: list[tuple] = []
        self.gaps: list = []  # mblint.coverage.Gap: where the analysis of this recipe stopped
        self.unreadable_modules: dict = {}  # path -> SourceError: imported modules that could not be read
        self.hf_configs: dict = {}  # (model id, revision) -> HFConfig | None, read once per run
        self.hf_config_folders: tuple = ()  # folders of config files named in the settings
        self.hf_config_classes: dict = {}  # model_type -> transformers config class chain (or None)
        self._bridge_index = NO_INDEX_YET
