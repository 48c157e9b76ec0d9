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

import dataclasses
import json
import posixpath
import re
from dataclasses import dataclass, field

from mblint.extract.shell import (
    VARIABLE_NAME,
    Command,
    Directive,
    Environment,
    Exported,
    Span,
    Word,
    sbatch_export,
)

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
# accelerate launch (accelerate/commands/launch.py): --num_processes is the total over all
# machines; without it the count comes from accelerate's config file. The others take a value.
ACCELERATE_VALUED = {"--num_processes", "--num-processes", "--num_machines", "--num-machines", "--machine_rank",
                     "--machine-rank", "--main_process_ip", "--main-process-ip", "--main_process_port",
                     "--main-process-port", "--config_file", "--config-file", "--mixed_precision", "--mixed-precision",
                     "--gpu_ids", "--gpu-ids", "--dynamo_backend", "--dynamo-backend", "--num_cpu_threads_per_process",
                     "--rdzv_backend", "--deepspeed_config_file", "--zero_stage", "--fsdp_sharding_strategy",
                     "--log_dir", "--project_dir", "--tee", "--role", "--max_restarts", "--monitor_interval"}
# deepspeed (deepspeed/launcher/runner.py): --num_nodes x --num_gpus; without both, the hosts
# and slots of the hostfile decide. Its launch.py passes --local_rank=N to the script unless
# --no_local_rank.
DEEPSPEED_VALUED = {"-H", "--hostfile", "-i", "--include", "-e", "--exclude", "--num_nodes", "--num_gpus",
                    "--num_accelerators", "--min_elastic_nodes", "--max_elastic_nodes", "--master_port",
                    "--master_addr", "--node_rank", "--launcher", "--launcher_args", "--bind_core_list",
                    "--ssh_port", "--venv_script", "--comment"}
# What names a training launch: a line with one of these that mblint cannot read is said so.
LAUNCHER_WORDS = {"torchrun", "accelerate", "deepspeed", "run_recipe.py", "train.sh", "setup_experiment.py"}
# Commands that run the command after them (their options skipped).
WRAPPERS = {"exec", "time", "nohup", "env", "srun", "uv", "numactl", "nsys", "bash", "sh"}
# Commands that run the command after them with the same arguments, files and environment:
# read through. Each: its flags, its options that take a value, and how many words (a
# duration, a CPU mask) come before the command.
TRANSPARENT = {
    "timeout": ({"--preserve-status", "--foreground", "-v", "--verbose"}, {"-s", "--signal", "-k", "--kill-after"}, 1),
    "nice": (set(), {"-n", "--adjustment"}, 0),
    "stdbuf": (set(), {"-i", "--input", "-o", "--output", "-e", "--error"}, 0),
    "taskset": ({"-a", "--all-tasks", "-c", "--cpu-list"}, set(), 1),
    "setsid": ({"-c", "--ctty", "-f", "--fork", "-w", "--wait"}, set(), 0),
    "ionice": ({"-t", "--ignore"}, {"-c", "--class", "-n", "--classdata"}, 0),
    "flock": ({"-s", "--shared", "-x", "-e", "--exclusive", "-u", "--unlock", "-n", "--nb", "--nonblock", "-o",
               "--close", "-F", "--no-fork", "--verbose"}, {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"},
              1),
    "unbuffer": ({"-p"}, set(), 0),
}
# sudo runs the same arguments on the same files, with the environment reset (env_reset,
# sudoers' env_keep decides what stays) unless -E keeps it. Its options that change neither.
SUDO_FLAGS = {"-E", "--preserve-env", "-H", "--set-home", "-n", "--non-interactive", "-k", "--reset-timestamp",
              "-S", "--stdin", "-b", "--background", "-P", "--preserve-groups", "-A", "--askpass", "-B", "--bell",
              "-N", "--no-update"}
SUDO_VALUED = {"-u", "--user", "-g", "--group", "-p", "--prompt", "-C", "--close-from", "-r", "--role", "-t", "--type",
               "-T", "--command-timeout", "-U", "--other-user"}
# Commands that run the command after them elsewhere: in a container, on another host, as
# many MPI ranks. Its files, working folder or environment are not the script's, so a launch
# through one is not read (said as LA002 when it is a training launch).
OPAQUE = {
    "docker": "in a container (its files are the image's and what -v mounts; its environment only what -e passes)",
    "podman": "in a container (its files are the image's and what -v mounts; its environment only what -e passes)",
    "nerdctl": "in a container (its files are the image's and what -v mounts; its environment only what -e passes)",
    "apptainer": "in a container image (its Python and installed packages are the image's)",
    "singularity": "in a container image (its Python and installed packages are the image's)",
    "enroot": "in a container (its files are the container's)",
    "kubectl": "in a Kubernetes pod (its files and environment are the pod's)",
    "ssh": "on another host (its files, working folder and environment are that host's, and its shell parses the "
           "arguments again)",
    "mpirun": "as MPI ranks (the process count and the environment each rank gets are mpirun's)",
    "mpiexec": "as MPI ranks (the process count and the environment each rank gets are mpirun's)",
    "xargs": "with arguments it reads from its input added",
}
# Words that may start the command a wrapper runs (not ``exec``: a subcommand of docker,
# apptainer, kubectl...).
COMMAND_STARTS = (LAUNCHER_WORDS | WRAPPERS | set(TRANSPARENT) | set(OPAQUE) | {"sudo"}) - {"exec"}


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
    world_unknown: Span | None = None  # a launcher option whose value is unknown: so is the world size
    problems: list[tuple[Span, str]] = field(default_factory=list)  # the launcher would reject these
    unanalysed: list[tuple[Span, str]] = field(default_factory=list)  # what mblint cannot follow
    unknown_arguments: int = 0
    # Arguments whose text is unknown (``"${ARRAY[@]}"``, ``$EXTRA``): each may be any number
    # of KEY=VALUE overrides. Kept as (span, number of trailing overrides written before it).
    unknown_overrides: list[tuple[Span, int]] = field(default_factory=list)
    # The variables the launched processes run with that the script sets (its exports, the
    # assignments in front of the command, ``env X=1``, ``srun --export=ALL,X=1``)
    environment: Environment = field(default_factory=Environment)
    # The wrapper it runs through that mblint does not read through (``docker run``, ``ssh``,
    # a sudo option not modelled): (the wrapper's word, why); the launch is then not checked
    wrapped: tuple[Word, str] | None = None

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
    total: tuple = (None, None)  # a launcher's total process count (accelerate's --num_processes)
    launcher: str = ""  # the launcher whose counts decide ("accelerate", "deepspeed"), else torch/srun/setup
    unknown: Span | None = None  # a launcher option whose value (or name) is unknown
    local_rank: str = ""  # the option the launcher appends to the script's arguments
    environment: Environment = field(default_factory=Environment)  # what the command's processes inherit
    wrapped: tuple | None = None  # (word, why) of a wrapper not read through (Launch.wrapped)


def find_launches(commands: list[Command], directives: list[Directive]) -> list[Launch]:
    """The launches of the commands; a command that names a launcher but cannot be read is a
    launch of entry "unread", its reason in ``unanalysed``."""
    sbatch = _World()
    _sbatch_world(directives, sbatch)  # once: the header is the same for every command
    exporting = next((d for d in reversed(directives) if d.name == "--export"), None)
    found = []
    for command in commands:
        launch = read_command(command, sbatch)
        if launch is not None and exporting is not None and sbatch_export(exporting.value) is None:
            launch.environment = Environment(open_at=exporting.span, unknown=True)
        if launch is None:
            launch = _unread(command)
        if launch is not None:
            found.append(launch)
    return found


def _unread(command: Command) -> Launch | None:
    """A command naming a launcher (``torchrun``, ``run_recipe.py``...) that was not read as a
    launch: what mblint could not follow."""
    first = command.words[0].text if command.words else ""
    if first is not None and not (posixpath.basename(first) in WRAPPERS | LAUNCHER_WORDS or PYTHON_NAME.match(first)):
        return None  # echo, printf...: a command that does not run its arguments
    program = _program(command.words)
    if program is not None and not _may_start_command(program):
        return None  # srun pkill -f torchrun: what srun runs is pkill, which launches nothing
    named = next((w for w in command.words if w.text is not None and not any(c.isspace() for c in w.text)
                  and posixpath.basename(w.text) in LAUNCHER_WORDS), None)
    if named is None:
        return None
    unknown = next((w for w in command.words if w.text is None), None)
    reason = (f"the launch line holds a word mblint does not know (column {unknown.span.column})" if unknown
              else "mblint does not read this form of launch line")
    launch = Launch(command, "unread", named)
    launch.unanalysed.append((command.span, reason))
    return launch


def read_command(command: Command, sbatch: "_World") -> Launch | None:
    world = dataclasses.replace(sbatch, environment=Environment(dict(command.environment.variables),
                                                                command.environment.open_at,
                                                                command.environment.unknown))
    launch = _read_command(command, world)
    if launch is not None:
        launch.environment = world.environment
        launch.wrapped = world.wrapped
    return launch


def _read_command(command: Command, world: "_World") -> Launch | None:
    words = command.words
    index = 0
    while index < len(words):
        text = words[index].text
        if text is None:  # ``"${NSYS_PREFIX[@]}" torchrun ...``: a wrapper mblint cannot name
            world.unknown = world.unknown or words[index].span
            index += 1
            continue
        base = posixpath.basename(text)
        if base in ("exec", "time", "nohup"):
            index += 1
            continue
        if base == "env":
            index = _env_command(words, index + 1, world.environment)
            continue
        if base in TRANSPARENT or base == "sudo":
            after = _sudo(words, index, world) if base == "sudo" else _transparent(words, index, *TRANSPARENT[base])
            if after is None:  # an option whose effect mblint does not model
                world.wrapped = world.wrapped or (words[index], f"`{base}` with an option whose effect mblint does not "
                                                                "model")
                index = _next_command(words, index + 1)
            else:
                index = after
            continue
        if base in OPAQUE:
            world.wrapped = world.wrapped or (words[index], f"`{base}`, which runs it {OPAQUE[base]}")
            index = _next_command(words, index + 1)
            continue
        if base == "accelerate" and index + 1 < len(words) and words[index + 1].text == "launch":
            world.launcher = "accelerate"
            return _after_launcher(words, index + 2, command, world, ACCELERATE_VALUED)
        if base == "deepspeed":
            world.launcher, world.local_rank = "deepspeed", "--local_rank=0"
            return _after_launcher(words, index + 1, command, world, DEEPSPEED_VALUED)
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
                        if module == "torch.distributed.launch":
                            world.local_rank = "--local-rank=0"
                        return _after_torch(words, index + 2, command, world)
                    return None  # another module: not a launch mblint reads
                if option == "-c":
                    return None
                index += 2 if option in ("-X", "-W") else 1
            if index >= len(words):
                return None
            if posixpath.basename(words[index].text or "") == "setup_experiment.py" and \
                    not _is_performance(words[index].text):
                world.setup = True
                return _setup(words, index, command, world)
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


def _next_command(words: list[Word], index: int) -> int:
    """The index of the first word from ``index`` on that may start the command a wrapper runs
    (a launcher, Python, a script, another wrapper); past the end when there is none."""
    while index < len(words):
        text = words[index].text
        if text is not None and _may_start_command(posixpath.basename(text)):
            return index
        index += 1
    return index


def _may_start_command(base: str) -> bool:
    return base in COMMAND_STARTS or base.endswith(".py") or bool(PYTHON_NAME.match(base))


def _program(words: list[Word]) -> str | None:
    """The name of the program a line runs behind the wrappers whose options mblint reads
    (``srun -N 2 pkill -f torchrun``: pkill); None when it cannot be told (an unknown word, a
    wrapper whose options mblint does not read)."""
    index = 0
    while index < len(words):
        text = words[index].text
        if text is None:
            return None
        base = posixpath.basename(text)
        if base in ("exec", "time", "nohup"):
            index += 1
        elif base == "env":
            index = _env_command(words, index + 1, Environment())
        elif base == "srun":
            index = _srun_options(words, index + 1, _World())
        elif base in TRANSPARENT:
            index = _transparent(words, index, *TRANSPARENT[base])
            if index is None:
                return None
        else:
            return base
    return None


def _transparent(words: list[Word], index: int, flags: set, valued: set, operands: int) -> int | None:
    """The index of the command a transparent wrapper at ``index`` runs (its options and its
    ``operands`` before the command skipped); None when an option is not one of its own."""
    index += 1
    while index < len(words) and words[index].lead.startswith("-") and words[index].lead != "-":
        text = words[index].text
        if text == "--":
            index += 1
            break
        name, attached = _short_or_long(text, valued)
        if text is None or name not in flags | valued:
            return None
        index += 2 if name in valued and not attached else 1
    return index + operands


def _short_or_long(text: str | None, valued: set) -> tuple[str | None, bool]:
    """An option's name and whether its value is in the same word (``--signal=KILL``,
    ``-oL``, ``-n10``)."""
    if text is None:
        return None, False
    if text.startswith("--"):
        name, eq, _ = text.partition("=")
        return name, bool(eq)
    if len(text) > 2 and text[:2] in valued:
        return text[:2], True
    return text, False


def _sudo(words: list[Word], index: int, world: _World) -> int | None:
    """The index of the command ``sudo`` at ``index`` runs: same arguments and files; the
    environment kept with -E (``--preserve-env``), else reset to what sudoers keeps (unknown
    here). None when an option changes more (a login shell, another folder or root)."""
    keeps = False
    position = index + 1
    while position < len(words) and words[position].lead.startswith("-"):
        text = words[position].text
        if text == "--":
            position += 1
            break
        if text is None:
            return None
        if text.startswith("--"):
            name, eq, _ = text.partition("=")
            if name not in SUDO_FLAGS | SUDO_VALUED or name == "--preserve-env" and eq:
                return None  # --preserve-env=LIST keeps only those: the others are unknown, as reset
            keeps = keeps or name == "--preserve-env"
            position += 2 if name in SUDO_VALUED and not eq else 1
            continue
        cluster = text[1:]
        for offset, letter in enumerate(cluster):
            if f"-{letter}" in SUDO_VALUED:
                position += 1 if offset + 1 < len(cluster) else 2
                break
            if f"-{letter}" not in SUDO_FLAGS:
                return None
            keeps = keeps or letter == "E"
        else:
            position += 1
    if not keeps:
        world.environment = Environment(open_at=words[index].span, unknown=True)
    while position < len(words) and VARIABLE_NAME.match((words[position].text or "").partition("=")[0]) \
            and "=" in (words[position].text or ""):
        name, _, text = words[position].text.partition("=")
        world.environment.variables[name] = Exported(text, words[position].span)
        position += 1
    return position


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
    """A positive count written in ASCII digits (``'²'.isdigit()`` is true); a number beyond
    any cluster (more than 9 digits) is unknown."""
    if text is None or not (0 < len(text) <= 9 and text.isascii() and text.isdigit()):
        return None
    return int(text) or None


def _option(words: list[Word], index: int, valued: set) -> tuple[str, str | None, Span, int] | None:
    """(name, value, span of option and value, next index) of the option at ``index``; the
    value is None when unknown (``--nnodes=$NNODES``)."""
    text = words[index].lead
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


def _env_command(words: list[Word], index: int, environment: Environment) -> int:
    """``env [-i] [-u NAME] [NAME=VALUE]... command``: the environment it gives the command
    (``-i``: only the variables it sets). The index of the command."""
    while index < len(words):
        word = words[index]
        lead = word.lead
        if lead in ("-i", "--ignore-environment", "-") and word.text is not None:
            environment.variables, environment.open_at, environment.unknown = {}, None, False
        elif lead in ("-u", "--unset") and word.text is not None and index + 1 < len(words):
            index += 1
            environment.variables.pop(words[index].text or "", None)
            if words[index].text is None:
                environment.unknown = True
        elif lead.startswith("--unset=") and word.text is not None:
            environment.variables.pop(lead.partition("=")[2], None)
        elif "=" in lead and VARIABLE_NAME.match(lead.partition("=")[0]):
            environment.variables[lead.partition("=")[0]] = Exported(
                word.text.partition("=")[2] if word.text is not None else None, word.used_at or word.span)
        else:
            return index
        index += 1
    return index


def _srun_export(value: str | None, span: Span, environment: Environment) -> None:
    """``srun --export=ALL,NAME=VALUE``: those variables too; any other form (``NONE``, a list
    without ``ALL``, an unknown value) leaves the tasks' environment unknown."""
    listed = sbatch_export(value)
    if listed is None:
        environment.open_at, environment.unknown = span, True
        return
    for name, text in listed.items():
        environment.variables[name] = Exported(text, span)


def _srun_options(words: list[Word], index: int, world: _World) -> int:
    while index < len(words) and words[index].lead.startswith("-"):
        start = index
        name, value, span, index = _option(words, index, SRUN_VALUED - SRUN_FLAGS)
        if name == "--export":
            known = all(word.text is not None for word in words[start:index])
            _srun_export(value if known else None, span, world.environment)
        elif name in ("-N", "--nodes"):
            world.nodes = (_count(value), span)
        elif name == "--ntasks-per-node":
            world.tasks_per_node = (_count(value), span)
        elif name in ("-n", "--ntasks"):
            world.tasks = (_count(value), span)
    return index


def _skip_options(words: list[Word], index: int, valued: set) -> int:
    """Past a wrapper's options; an unknown word among them may be any options."""
    while index < len(words) and (words[index].lead.startswith("-") or words[index].text is None):
        if words[index].text is None and not words[index].lead.startswith("-"):
            index += 1
            continue
        _, _, _, index = _option(words, index, valued)
    return index


def _after_torch(words: list[Word], index: int, command: Command, world: _World) -> Launch | None:
    module = False
    while index < len(words) and (words[index].lead.startswith("-") or words[index].text is None):
        if not words[index].lead.startswith("-"):  # ``$TORCH_ARGS``: any options, so any world size
            world.unknown = world.unknown or words[index].span
            index += 1
            continue
        name, value, span, index = _option(words, index, TORCH_VALUED)
        if value is None and name in TORCH_VALUED:
            world.unknown = world.unknown or span
        elif name in ("--use-env", "--use_env"):
            world.local_rank = ""
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


def _after_launcher(words: list[Word], index: int, command: Command, world: _World, valued: set) -> Launch | None:
    """accelerate launch, deepspeed: their options (those that set the process count read),
    then the Python script and its arguments."""
    counts: dict[str, tuple] = {}
    while index < len(words) and (words[index].lead.startswith("-") or words[index].text is None):
        if not words[index].lead.startswith("-"):
            world.unknown = world.unknown or words[index].span
            index += 1
            continue
        name, value, span, index = _option(words, index, valued)
        if name in ("-m", "--module", "--no_python", "--no-python"):
            return None  # a module or a program, not a script mblint reads
        if name == "--no_local_rank":
            world.local_rank = ""
        if name in valued and value is None:
            world.unknown = world.unknown or span
        counts[name.replace("-", "_").lstrip("_")] = (_count(value), span)
    if world.launcher == "accelerate":
        world.total = counts.get("num_processes", (None, None))
    else:
        world.torch_nodes = counts.get("num_nodes", (None, None))
        world.torch_procs = counts.get("num_gpus", counts.get("num_accelerators", (None, None)))
    if index >= len(words) or words[index].text is None:
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
    if world.local_rank and runner:
        launch.problems.append((words[index].span, f"run_recipe.py: Unknown option: {world.local_rank} (the launcher "
                                                   "passes it to the script; run_recipe.py rejects it)"))
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
    """Processes started: accelerate's total; deepspeed's or the torch launcher's nodes x
    processes per node; else srun's tasks; else setup_experiment.py's nodes x GPUs per node."""
    launch.world_unknown = world.unknown
    if world.unknown is not None:
        return
    if world.launcher == "accelerate":
        parts = [(world.total[0], world.total[1], "processes")]
        if world.total[1] is None:
            launch.world_unknown = launch.entry_word.span  # from accelerate's config file
            return
    elif world.launcher == "deepspeed":
        parts = [(world.torch_nodes[0], world.torch_nodes[1], "nodes"),
                 (world.torch_procs[0], world.torch_procs[1], "GPUs per node")]
        if any(span is None for _, span, _ in parts):
            launch.world_unknown = launch.entry_word.span  # from the hostfile
            return
    elif world.torch:
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
        # a count written but not a count mblint reads (``--nnodes=1:4``, 5,000 digits): unknown
        launch.world_unknown = next((span for value, span, _ in parts if value is None and span is not None), None)
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


def _bare_word(words: list[Word], index: int) -> bool:
    """A known word that is neither an option nor KEY=VALUE."""
    return index < len(words) and words[index].text is not None and not words[index].text.startswith("-") \
        and "=" not in words[index].text


def _runner_arguments(launch: Launch, words: list[Word]) -> None:
    """run_recipe.py's argparse (allow_abbrev=False, parse_known_args): its options, then
    the rest, each of which must be KEY=VALUE."""
    convenience: dict[str, tuple] = {}
    trailing: list[Setting] = []
    flags = {name: (fld, kind) for names, fld, kind in RUNNER_FIELDS for name in names}
    index = 0
    while index < len(words):
        word = words[index]
        key = _override_key(word)
        if key is not None:  # ``KEY=$VALUE``: that field is unknown, the others stay known
            trailing.append(Setting(f"{key.lstrip('+')}=", word.span, unknown=True))
            index += 1
            continue
        name = word.lead.partition("=")[0]
        if word.text is None and not ("=" in word.prefix and (name in RUNNER_VALUED or name in flags)):
            launch.unknown_arguments += 1
            launch.unknown_overrides.append((word.span, len(trailing)))
            index += 1
            continue
        if name in RUNNER_VALUED or name in flags:
            name, value, span, index = _option(words, index, set(RUNNER_VALUED) | set(flags))
            if index - 1 < len(words) and words[index - 1] is word and "=" not in word.lead:
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
            if "=" not in word.text and _bare_word(words, index + 1):
                index += 1  # its value (``--step gpt``): one mistake, not a second one
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


_KEY = re.compile(r"^(~|\+\+|\+)?[A-Za-z_][\w]*(\.[\w\-]+)*$")


def _override_key(word: Word) -> str | None:
    """The key of a ``KEY=VALUE`` word whose value only is unknown. An unquoted ``KEY=$V``
    could split into more words if ``V`` held a blank; a value such as a size or a path does
    not, and taking it for one value is what keeps the other overrides known."""
    if word.text is not None or "=" not in word.prefix:
        return None
    key = word.prefix.partition("=")[0]
    return key if _KEY.match(key) and not key.startswith("~") else None


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
        key = _override_key(word)
        if key is not None:
            launch.settings.append(Setting(f"{key.lstrip('+')}=", word.span, unknown=True))
            index += 1
            continue
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
        if eq and _KEY.match(name):
            launch.settings.append(Setting(text, word.span))
        index += 1
