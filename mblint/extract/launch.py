"""Launcher invocations in a launch script, read the way the launchers read their arguments:
the torch launcher (``torchrun``, ``python -m torch.distributed.run``), Slurm (``srun``,
``#SBATCH``), ``uv run``, and Megatron-Bridge's runner (``scripts/training/run_recipe.py``,
behind ``train.sh``/``setup_experiment.py``), or any other Python entry script with its
``--config-file`` and trailing ``KEY=VALUE`` overrides.

The result is a ``Launch`` per command that starts Python: the recipe it names, the settings
it makes (each with the place in the script that wrote it), the override files it passes and
the world size, when the command fixes it. Nothing here knows about configurations.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field

from mblint.extract.shell import Command, Directive, Span, Word

# scripts/training/run_recipe.py (0.6.0 and later): convenience option -> ConfigContainer field,
# in the order the runner emits them (COMMON_OVERRIDE_FIELDS), with the argparse type.
RUNNER_FIELDS: tuple[tuple[tuple[str, ...], str, type], ...] = (
    (("-ms", "--max_steps"), "train.train_iters", int),
    (("-gb", "--global_batch_size"), "train.global_batch_size", int),
    (("-mb", "--micro_batch_size"), "train.micro_batch_size", int),
    (("-sl", "--seq_length"), "dataset.seq_length", int),
    (("-tp", "--tensor_model_parallel_size"), "model.tensor_model_parallel_size", int),
    (("-pp", "--pipeline_model_parallel_size"), "model.pipeline_model_parallel_size", int),
    (("-cp", "--context_parallel_size"), "model.context_parallel_size", int),
    (("-vp", "--virtual_pipeline_model_parallel_size"), "model.virtual_pipeline_model_parallel_size", int),
    (("-ep", "--expert_model_parallel_size"), "model.expert_model_parallel_size", int),
    (("-etp", "--expert_tensor_parallel_size"), "model.expert_tensor_parallel_size", int),
    (("--lr",), "optimizer.lr", float),
    (("--min_lr",), "optimizer.min_lr", float),
    (("--warmup_iters",), "scheduler.lr_warmup_iters", int),
    (("--pretrained_checkpoint",), "checkpoint.pretrained_checkpoint", str),
    (("--save_dir",), "checkpoint.save", str),
    (("--load_dir",), "checkpoint.load", str),
    (("--save_interval",), "checkpoint.save_interval", int),
)
RUNNER_VALUED = {"--recipe": "recipe", "--model": "model", "--mode": "mode", "--dataset": "dataset",
                 "--step-func": "step_func", "--step_func": "step_func"}
RUNNER_FLAGS = {"--dry-run", "--dry_run", "--deterministic", "--dump-env", "--dump_env", "-h", "--help"}
MODES = ("pretrain", "sft", "lora", "dora")
# setup_experiment.py's own options (main): consumed there, the rest goes to run_recipe.py.
SETUP_VALUED = {"--nodes", "--gpus-per-node", "--gpus_per_node", "--account", "--partition", "--time", "--gres",
                "--additional-slurm-params", "--additional_slurm_params", "--container-image", "--mount", "--env",
                "--srun-arg", "-lmc", "--peak-mem-clk", "--peak_mem_clk", "--experiment-name"}
SETUP_FLAGS = {"--no-gpu-resource-request", "--submission-dry-run", "--dry-run", "--wait"}

# torch.distributed.run options that take a value (both spellings are accepted).
TORCH_VALUED = {"--nnodes", "--nproc-per-node", "--nproc_per_node", "--rdzv-backend", "--rdzv_backend",
                "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--rdzv-conf", "--rdzv_conf",
                "--max-restarts", "--max_restarts", "--monitor-interval", "--monitor_interval", "--start-method",
                "--start_method", "--role", "--log-dir", "--log_dir", "-r", "--redirects", "-t", "--tee",
                "--local-ranks-filter", "--local_ranks_filter", "--node-rank", "--node_rank", "--master-addr",
                "--master_addr", "--master-port", "--master_port", "--local-addr", "--local_addr", "--logs-specs",
                "--logs_specs", "--event-log-handler", "--event_log_handler", "--numa-binding", "--numa_binding"}
TORCH_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
SRUN_VALUED = {"-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "-c", "--cpus-per-task", "-p", "--partition",
               "-A", "--account", "-t", "--time", "-J", "--job-name", "-o", "--output", "-e", "--error", "-w",
               "--nodelist", "-x", "--exclude", "-G", "--gpus", "--gpus-per-node", "--gres", "--mem", "--mpi",
               "--export", "--container-image", "--container-mounts", "--container-workdir", "--container-name",
               "--container-env", "--cpu-bind", "--distribution", "-m", "--kill-on-bad-exit", "-K", "-l"}
SRUN_FLAGS = {"-l", "--label", "--exclusive", "--overlap", "--no-container-mount-home", "--container-remap-root",
              "--unbuffered", "-u", "--container-writable", "--no-kill", "--pty"}
UV_VALUED = {"--with", "--with-requirements", "--with-editable", "--python", "-p", "--project", "--directory",
             "--extra", "--group", "--env-file", "--index", "--index-url", "--extra-index-url", "--package",
             "--only-group", "--no-group", "--cache-dir", "--config-file"}
PYTHON_NAME = re.compile(r"^python(\d(\.\d+)?)?$")


@dataclass
class Setting:
    """A ``KEY=VALUE`` override the launch applies, where it was written (``span``: the token,
    or the option and its value), and ``flag`` for a convenience option (``-mb``)."""

    item: str
    span: Span
    flag: str = ""
    unknown: bool = False  # the value is unknown (``-mb $MBS`` with MBS from the environment)


@dataclass
class Launch:
    command: Command
    entry: str  # "runner" (Megatron-Bridge's run_recipe.py), "script" (another Python file)
    entry_word: Word
    script: str | None = None  # the Python entry file as written
    recipe: str | None = None
    recipe_span: Span | None = None
    model: str | None = None
    mode: str | None = None
    mode_span: Span | None = None
    dataset: str | None = None
    dataset_span: Span | None = None
    settings: list[Setting] = field(default_factory=list)
    config_files: list[tuple[str, Span]] = field(default_factory=list)
    world_size: int | None = None
    world_spans: list[Span] = field(default_factory=list)
    world_text: str = ""
    problems: list[tuple[Span, str]] = field(default_factory=list)  # the launcher would reject these
    unanalysed: list[tuple[Span, str]] = field(default_factory=list)  # what mblint cannot follow
    unknown_arguments: int = 0
    # Arguments whose text is unknown (``"${ARRAY[@]}"``, ``$EXTRA``): each may be any number
    # of KEY=VALUE overrides. Kept as (span, number of trailing overrides written before it).
    unknown_overrides: list[tuple[Span, int]] = field(default_factory=list)

    @property
    def line(self) -> int:
        return self.entry_word.span.line


@dataclass
class _World:
    """Process counts as the launchers set them; each (value or None, span or None)."""

    nodes: tuple = (None, None)
    tasks_per_node: tuple = (None, None)
    tasks: tuple = (None, None)
    gpus_per_node: tuple = (None, None)
    torch_nodes: tuple = (None, None)
    torch_procs: tuple = (None, None)
    torch: bool = False
    srun: bool = False
    setup: bool = False


def find_launches(commands: list[Command], directives: list[Directive]) -> list[Launch]:
    found = []
    for command in commands:
        launch = read_command(command, directives)
        if launch is not None:
            found.append(launch)
    return found


def read_command(command: Command, directives: list[Directive]) -> Launch | None:
    words = command.words
    world = _World()
    _sbatch_world(directives, world)
    index = 0
    while index < len(words):
        text = words[index].text
        if text is None:
            return None
        base = posixpath.basename(text)
        if base in ("exec", "time", "nohup", "env") or (base != text and False):
            index += 1
            while base == "env" and index < len(words) and words[index].text and "=" in words[index].text \
                    and not words[index].text.startswith("-"):
                index += 1
            continue
        if base in ("bash", "sh") and index + 2 < len(words) and words[index + 1].text == "-c":
            from mblint.extract.shell import command_string

            for inner in command_string(words[index + 2], command.env):
                spliced = Command(words[:index] + inner.words, inner.span, command.in_loop, inner.env)
                found = read_command(spliced, directives)
                if found is not None:
                    return found
            return None
        if base == "srun":
            world.srun = True
            index = _srun_options(words, index + 1, world)
            continue
        if base == "uv" and index + 1 < len(words) and words[index + 1].text == "run":
            index = _skip_options(words, index + 2, UV_VALUED)
            continue
        if PYTHON_NAME.match(base):
            index += 1
            while index < len(words) and (words[index].text or "").startswith("-"):
                option = words[index].text
                if option == "-m" and index + 1 < len(words):
                    module = words[index + 1].text
                    if module in TORCH_MODULES:
                        world.torch = True
                        return _after_torch(words, index + 2, command, world)
                    return None  # another module: not a launch mblint reads
                if option == "-c":
                    return None
                index += 2 if option in ("-X", "-W") else 1
            if index >= len(words):
                return None
            return _entry(words, index, command, world)
        if base == "torchrun":
            world.torch = True
            return _after_torch(words, index + 1, command, world)
        if base in ("train.sh", "setup_experiment.py") and not _is_performance(text):
            world.setup = True
            return _setup(words, index, command, world)
        if base.endswith(".py"):
            return _entry(words, index, command, world)
        return None
    return None


def _is_performance(text: str) -> bool:
    return "/performance/" in f"/{text}"


def _sbatch_world(directives: list[Directive], world: _World) -> None:
    for directive in directives:
        value = _count(directive.value)
        if directive.name in ("-N", "--nodes"):
            world.nodes = (value, directive.span)
        elif directive.name == "--ntasks-per-node":
            world.tasks_per_node = (value, directive.span)
        elif directive.name in ("-n", "--ntasks"):
            world.tasks = (value, directive.span)
        elif directive.name == "--gpus-per-node":
            world.gpus_per_node = (_count((directive.value or "").rsplit(":", 1)[-1]), directive.span)


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and int(text) > 0 else None


def _option(words: list[Word], index: int, valued: set) -> tuple[str, str | None, Span, int] | None:
    """(name, value, span of option and value, next index) of the option at ``index``."""
    text = words[index].text or ""
    name, eq, value = text.partition("=")
    span = words[index].span
    if eq:
        return name, value, span, index + 1
    if name in valued and index + 1 < len(words):
        following = words[index + 1]
        return name, following.text, _joined(span, following.span), index + 2
    return name, None, span, index + 1


def _joined(first: Span, second: Span) -> Span:
    if first.line == second.line and second.column >= first.end_column:
        return Span(first.line, first.column, second.end_line, second.end_column)
    return second


def _srun_options(words: list[Word], index: int, world: _World) -> int:
    while index < len(words) and (words[index].text or "").startswith("-"):
        name, value, span, index = _option(words, index, SRUN_VALUED - SRUN_FLAGS)
        if name in ("-N", "--nodes"):
            world.nodes = (_count(value), span)
        elif name == "--ntasks-per-node":
            world.tasks_per_node = (_count(value), span)
        elif name in ("-n", "--ntasks"):
            world.tasks = (_count(value), span)
    return index


def _skip_options(words: list[Word], index: int, valued: set) -> int:
    while index < len(words) and (words[index].text or "").startswith("-"):
        _, _, _, index = _option(words, index, valued)
    return index


def _after_torch(words: list[Word], index: int, command: Command, world: _World) -> Launch | None:
    module = False
    while index < len(words) and (words[index].text or "").startswith("-"):
        name, value, span, index = _option(words, index, TORCH_VALUED)
        if name == "--nnodes":
            world.torch_nodes = (_count(value), span)
        elif name in ("--nproc-per-node", "--nproc_per_node"):
            world.torch_procs = (_count(value), span)
        elif name in ("-m", "--module"):
            module = True
        elif name in ("--no-python", "--no_python"):
            return None
        elif name == "--standalone":
            world.torch_nodes = (1, span)
    if index >= len(words) or words[index].text is None:
        return None
    if module:
        return None
    return _entry(words, index, command, world)


def _entry(words: list[Word], index: int, command: Command, world: _World) -> Launch | None:
    script = words[index].text
    if script is None or not script.endswith(".py"):
        return None
    base = posixpath.basename(script)
    runner = base == "run_recipe.py" and not _is_performance(script)
    launch = Launch(command, "runner" if runner else "script", words[index], script=script)
    _world_size(launch, world)
    arguments = words[index + 1:]
    if runner:
        _runner_arguments(launch, arguments)
    else:
        _script_arguments(launch, arguments)
    return launch


def _setup(words: list[Word], index: int, command: Command, world: _World) -> Launch:
    """``train.sh``/``setup_experiment.py``: its options, the rest forwarded to run_recipe.py."""
    launch = Launch(command, "runner", words[index], script=words[index].text)
    rest: list[Word] = []
    position = index + 1
    nodes, gpus = (1, None), (None, None)
    while position < len(words):
        text = words[position].text or ""
        name = text.partition("=")[0]
        if name in SETUP_VALUED:
            name, value, span, position = _option(words, position, SETUP_VALUED)
            if name == "--nodes":
                nodes = (_count(value), span)
            elif name in ("--gpus-per-node", "--gpus_per_node"):
                gpus = (_count(value), span)
            continue
        if name in SETUP_FLAGS:
            position += 1
            continue
        rest.append(words[position])
        position += 1
    world.nodes, world.gpus_per_node = nodes, gpus
    _world_size(launch, world)
    _runner_arguments(launch, rest)
    return launch


def _world_size(launch: Launch, world: _World) -> None:
    """Processes started: the torch launcher's nodes x processes per node; else srun's tasks;
    else setup_experiment.py's nodes x GPUs per node."""
    if world.torch:
        nodes, node_span = world.torch_nodes
        procs, proc_span = world.torch_procs
        if node_span is None:
            nodes = 1  # torchrun's default --nnodes is 1
        if proc_span is None:
            procs = 1  # and --nproc-per-node 1
        parts = [(nodes, node_span, "nodes"), (procs, proc_span, "processes per node")]
    elif world.srun:
        tasks, task_span = world.tasks
        if task_span is not None:
            parts = [(tasks, task_span, "tasks")]
        else:
            nodes, node_span = world.nodes
            per_node, per_node_span = world.tasks_per_node
            if node_span is None:
                nodes = 1
            parts = [(nodes, node_span, "nodes"), (per_node, per_node_span, "tasks per node")]
    elif world.setup:
        nodes, node_span = world.nodes
        gpus, gpu_span = world.gpus_per_node
        parts = [(nodes, node_span, "nodes"), (gpus, gpu_span, "GPUs per node")]
    else:
        return
    if any(value is None for value, _, _ in parts):
        return
    if not any(span is not None for _, span, _ in parts):
        return  # all defaults: nothing in the script says how many processes run
    size = 1
    for value, _, _ in parts:
        size *= value
    launch.world_size = size
    launch.world_spans = [span for _, span, _ in parts if span is not None]
    launch.world_text = " x ".join(f"{value} {what.replace('nodes', 'node') if value == 1 else what}"
                                   for value, _, what in parts)


def _runner_arguments(launch: Launch, words: list[Word]) -> None:
    """run_recipe.py's argparse (allow_abbrev=False, parse_known_args): its options, then
    the rest, each of which must be KEY=VALUE."""
    convenience: dict[str, tuple] = {}
    trailing: list[Setting] = []
    flags = {name: (fld, kind) for names, fld, kind in RUNNER_FIELDS for name in names}
    index = 0
    while index < len(words):
        word = words[index]
        if word.text is None:
            launch.unknown_arguments += 1
            launch.unknown_overrides.append((word.span, len(trailing)))
            index += 1
            continue
        name = word.text.partition("=")[0]
        if name in RUNNER_VALUED or name in flags:
            name, value, span, index = _option(words, index, set(RUNNER_VALUED) | set(flags))
            if index - 1 < len(words) and words[index - 1] is word and "=" not in word.text:
                launch.problems.append((span, f"run_recipe.py: argument {name}: expected one argument"))
                continue
            if name in RUNNER_VALUED:
                _runner_selection(launch, RUNNER_VALUED[name], value, span)
            else:
                fld, kind = flags[name]
                if value is None:
                    convenience[fld] = (None, span, name)
                    continue
                try:
                    converted = kind(value)
                except ValueError:
                    launch.problems.append((span, f"run_recipe.py: argument {name}: invalid {kind.__name__} value: "
                                                  f"{value!r}"))
                    continue
                convenience[fld] = (converted, span, name)
            continue
        if word.text in RUNNER_FLAGS:
            if word.text == "--deterministic":
                launch.unanalysed.append((word.span, "--deterministic: the determinism overrides are not modelled"))
            index += 1
            continue
        if word.text.startswith("-"):
            launch.problems.append((word.span, f"run_recipe.py: Unknown option: {word.text}"))
        elif "=" not in word.text:
            launch.problems.append((word.span, f"run_recipe.py: Expected override in KEY=VALUE form, got "
                                               f"{word.text!r}"))
        else:
            trailing.append(Setting(word.text, word.span))
        index += 1
    for names, fld, _ in RUNNER_FIELDS:
        if fld in convenience:
            value, span, flag = convenience[fld]
            if value is None:
                launch.settings.append(Setting(f"{fld}=", span, flag, unknown=True))
                continue
            text = json.dumps(value) if isinstance(value, str) else str(value)
            launch.settings.append(Setting(f"{fld}={text}", span, flag))
    launch.settings.extend(trailing)
    if launch.recipe is None and launch.model is None and not launch.problems:
        if launch.unknown_arguments:
            launch.unanalysed.append((launch.entry_word.span, "the recipe is not named in the script"))
        else:
            launch.problems.append((launch.entry_word.span, "run_recipe.py: one of the arguments --model --recipe is "
                                                            "required"))
    if launch.mode is None and launch.recipe is not None:
        launch.mode = infer_recipe_mode(launch.recipe)
    if launch.mode is None and (launch.recipe is not None or launch.model is not None) and not launch.unknown_arguments:
        launch.problems.append((launch.entry_word.span, "run_recipe.py: Unable to infer training mode; pass --mode or "
                                                        "use a conventional --recipe name."))
    if launch.model is not None and launch.mode is not None and launch.recipe is None:
        launch.recipe = f"{launch.model}_{recipe_task(launch.mode)}_config"
        launch.recipe_span = launch.recipe_span


def _runner_selection(launch: Launch, what: str, value: str | None, span: Span) -> None:
    if value is None:
        launch.unanalysed.append((span, f"--{what}: its value is unknown"))
        launch.unknown_arguments += 1
        return
    if what == "mode" and value not in MODES:
        launch.problems.append((span, f"run_recipe.py: argument --mode: invalid choice: {value!r} (choose from "
                                      + ", ".join(repr(m) for m in MODES) + ")"))
        return
    if what in ("recipe", "model") and (launch.recipe is not None or launch.model is not None):
        launch.problems.append((span, "run_recipe.py: argument --recipe/--model: not allowed with each other"))
        return
    setattr(launch, what, value)
    if what in ("recipe", "model"):
        launch.recipe_span = span
    elif what == "mode":
        launch.mode_span = span
    elif what == "dataset":
        launch.dataset_span = span


def infer_recipe_mode(name: str) -> str | None:
    """scripts/training/recipe_metadata.py ``infer_recipe_mode`` (main)."""
    normalized = f"_{name.lower().strip('_')}_"
    if "_pretrain_" in normalized:
        return "pretrain"
    if "_sft_" in normalized or "_finetune_" in normalized:
        return "sft"
    if "_dora_" in normalized:
        return "dora"
    if "_peft_" in normalized or "_lora_" in normalized:
        return "lora"
    return None


def recipe_task(mode: str) -> str:
    return "peft" if mode in ("lora", "dora") else mode


def _script_arguments(launch: Launch, words: list[Word]) -> None:
    """Another Python entry script: ``--config-file PATH`` (or ``--config_file``) and trailing
    ``KEY=VALUE`` tokens, which scripts built on ``process_config_with_overrides`` apply as
    Hydra overrides; other options are the script's own."""
    index = 0
    while index < len(words):
        word = words[index]
        text = word.text
        if text is None:
            launch.unknown_arguments += 1
            launch.unknown_overrides.append((word.span, len(launch.settings)))
            index += 1
            continue
        name, eq, value = text.partition("=")
        if name in ("--config-file", "--config_file", "--config"):
            _, value, span, index = _option(words, index, {name})
            if value is not None:
                launch.config_files.append((value, span))
            continue
        if text.startswith("-"):
            index += 1
            if not eq and index < len(words) and words[index].text is not None and \
                    not words[index].text.startswith("-") and "=" not in words[index].text:
                index += 1  # the option's value
            continue
        if eq and re.match(r"^(~|\+\+|\+)?[A-Za-z_][\w]*(\.[\w\-]+)*$", name):
            launch.settings.append(Setting(text, word.span))
        index += 1
