"""Single-line mutations of real 0.6.2 recipes: the finding must land on the changed line, at
error level.

Each case changes one assignment in a recipe of the downloaded 0.6.2 wheel to a value that
Megatron-Bridge rejects, and expects an error of the given rule on exactly that line. The cases
come from scripts/mutation_probe.py runs; every expectation was confirmed outside mblint:

- "oracle: ..." : Megatron-Bridge 0.6.2's own runtime_config_update() rejected the mutated
  recipe with that message (the team's oracle, `shared/oracle` in the project layout, kept
  beside this repository and not in it; run on the mutated module).
- "source: ..."  : a check the oracle does not run (distributed start-up, data packing at run
  time), read in the cited release file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.readers import Job
from mblint.results import FileResult

# (file under megatron/bridge, function, original line, mutated line, world size, rule, evidence)
CASES = [
    # packing
    ("recipes/llama/h100/llama3.py", "llama31_405b_sft_128gpu_h100_bf16_config",
     "cfg.train.micro_batch_size = 1", "cfg.train.micro_batch_size = 4", 128, "PK001",
     "oracle: Micro batch size should be 1 when training with packed sequence"),
    ("perf_recipes/llama/h100/llama3.py", "llama3_8b_sft_8gpu_h100_bf16_config",
     "cfg.train.micro_batch_size = 1", "cfg.train.micro_batch_size = 4", 8, "PK001",
     "oracle: Micro batch size should be 1 when training with packed sequence"),
    ("recipes/llama/h100/llama3.py", "llama3_8b_peft_1gpu_h100_bf16_config",
     "cfg.dataset.offline_packing_specs.packed_sequence_size = seq_length",
     "cfg.dataset.offline_packing_specs.packed_sequence_size = -1", 1, "PK005",
     "oracle: offline_packing_specs.packed_sequence_size must be greater than 0."),
    ("recipes/qwen/h100/qwen3.py", "qwen3_8b_sft_8gpu_h100_bf16_32k_config",
     "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 8",
     "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 3", 8, "PK007",
     "source: THD packing with CP needs every packed sequence divisible by 2*CP; "
     "megatron/bridge/data/datasets/packed_sequence.py pads to pad_seq_to_mult only (oracle blind)"),
    # sequence length: the odd value is the edit even when the other one is written later
    ("recipes/llama/h100/llama3.py", "llama31_8b_pretrain_2gpu_h100_bf16_config",
     "cfg.dataset.seq_length = 8192", "cfg.dataset.seq_length = 1000", 2, "SQ001",
     "oracle: Please ensure sequence length configuration in model config and dataset config match."),
    ("recipes/nemotronh/h100/nemotronh.py", "nemotronh_47b_peft_4gpu_h100_bf16_config",
     "cfg.model.seq_length = seq_length", "cfg.model.seq_length = 1000", 4, "SQ001",
     "oracle: Please ensure sequence length configuration in model config and dataset config match."),
    ("recipes/qwen/h100/qwen3.py", "qwen3_600m_sft_8gpu_h100_bf16_128k_config",
     "cfg.dataset.seq_length = 131072", "cfg.dataset.seq_length = 4097", 8, "SQ001",
     "oracle: Please ensure sequence length configuration in model config and dataset config match."),
    # context parallelism
    ("perf_recipes/llama/h100/llama3.py", "llama3_8b_sft_8gpu_h100_bf16_config",
     "cfg.model.context_parallel_size = 1", "cfg.model.context_parallel_size = 3", 8, "PB001",
     "oracle: world size (8) is not divisible by total_model_size"),
    ("recipes/qwen/h100/qwen3.py", "qwen3_8b_sft_8gpu_h100_bf16_32k_config",
     "cfg.model.calculate_per_token_loss = True", "cfg.model.calculate_per_token_loss = False", 8, "CP002",
     "oracle: When finetuning with CP>1, calculate_per_token_loss must be True"),
    ("recipes/qwen/h100/qwen3.py", "qwen3_8b_sft_8gpu_h100_bf16_32k_config",
     "cfg.ddp.average_in_collective = False", "cfg.ddp.average_in_collective = True", 8, "CP003",
     "oracle: When finetuning with CP>1, average_in_collective must be False"),
    ("recipes/qwen/h100/qwen3.py", "qwen3_8b_sft_8gpu_h100_bf16_32k_config",
     'cfg.model.cp_comm_type = "a2a"', 'cfg.model.cp_comm_type = "a2a+p2p"', 8, "CP004",
     "oracle: hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'"),
    # parallel layout: the factor that does not divide the world size, not the one written last
    ("recipes/llama/h100/llama3.py", "llama3_8b_sft_2gpu_h100_bf16_config",
     "cfg.model.tensor_model_parallel_size = 2", "cfg.model.tensor_model_parallel_size = 8", 2, "PB001",
     "oracle: world size (2) is not divisible by total_model_size"),
    ("recipes/qwen/h100/qwen3.py", "qwen3_8b_pretrain_4gpu_h100_bf16_config",
     "cfg.model.tensor_model_parallel_size = 4", "cfg.model.tensor_model_parallel_size = 3", 4, "PB001",
     "oracle: world size (4) is not divisible by total_model_size"),
    ("recipes/llama/h100/llama3.py", "llama3_70b_pretrain_256gpu_h100_bf16_64k_config",
     "cfg.model.pipeline_model_parallel_size = 4", "cfg.model.pipeline_model_parallel_size = 3", 256, "PB001",
     "oracle: world size (256) is not divisible by total_model_size"),
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_235b_a22b_pretrain_256gpu_h100_bf16_config",
     "cfg.model.expert_model_parallel_size = 32", "cfg.model.expert_model_parallel_size = 3", 256, "PB002",
     "source: megatron-core 0.19.2 parallel_state.py:881-883 raises when world_size is not divisible by "
     "ETP*EP*PP (distributed start-up, which the oracle does not run)"),
    ("recipes/qwen/h100/qwen3.py", "qwen3_14b_sft_8gpu_h100_bf16_config",
     "cfg.model.virtual_pipeline_model_parallel_size = None",
     "cfg.model.virtual_pipeline_model_parallel_size = 2", 8, "PB004",
     "source: megatron-core 0.19.2 parallel_state.py:827-831 raises 'pipeline-model-parallel size should "
     "be greater than 1 with interleaved schedule' (distributed start-up)"),
    # batch sizes: an odd global batch is the edit even though micro_batch_size is written after it
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config",
     "cfg.train.global_batch_size = 1024", "cfg.train.global_batch_size = 7", 16, "PB003",
     "oracle: eval_global_batch_size (7) must be divisible by eval_micro_batch_size * eval_data_parallel_size"),
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config",
     "cfg.train.global_batch_size = 8192", "cfg.train.global_batch_size = 100", 256, "PB003",
     "oracle: eval_global_batch_size (100) must be divisible by eval_micro_batch_size * eval_data_parallel_size"),
    # CUDA graphs
    ("recipes/qwen/h100/qwen3.py", "qwen3_32b_sft_16gpu_h100_bf16_config",
     'cfg.model.cuda_graph_impl = "none"', 'cfg.model.cuda_graph_impl = "local"', 16, "CG001",
     'oracle: Megatron Bridge supports model.cuda_graph_impl="local" only for full-iteration CUDA graphs'),
    ("recipes/nemotronh/h100/nemotronh.py", "nemotronh_4b_pretrain_1gpu_h100_bf16_config",
     'cfg.model.cuda_graph_impl = "none"', 'cfg.model.cuda_graph_impl = "full_iteration"', 1, "CG002",
     "oracle: check_for_nan_in_loss must be disabled when using full_iteration CUDA graphs"),
    ("recipes/qwen/h100/qwen3.py", "qwen3_600m_sft_1gpu_h100_bf16_config",
     'cfg.model.cuda_graph_impl = "none"', 'cfg.model.cuda_graph_impl = "transformer_engine"', 1, "CG013",
     "oracle: Packed attention CUDA graphs require offline_packing_specs.pad_cu_seqlens"),
    # recompute
    ("recipes/qwen/h100/qwen3.py", "qwen3_32b_pretrain_16gpu_h100_bf16_config",
     'cfg.model.recompute_method = "uniform"', "cfg.model.recompute_method = None", 16, "RC001",
     'oracle: Using recompute_granularity: full so recompute_method must be "block" or "uniform"'),
    ("recipes/qwen/h100/qwen3.py", "qwen3_32b_peft_1gpu_h100_bf16_config",
     "cfg.model.recompute_num_layers = 1", "cfg.model.recompute_num_layers = None", 1, "RC001",
     "oracle: When using recompute_granularity: full recompute_num_layers must be between 1 and num_layers"),
    ("recipes/nemotronh/h100/nemotron_3_nano.py", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config",
     "cfg.model.recompute_num_layers = None", "cfg.model.recompute_num_layers = 2", 8, "RC002",
     "oracle: When using recompute_granularity: selective recompute_num_layers must be None"),
    # MoE overlap: the flipped switch, whether it is written before or after the overlap flag
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_235b_a22b_pretrain_256gpu_h100_bf16_config",
     "cfg.model.moe_shared_expert_overlap = False", "cfg.model.moe_shared_expert_overlap = True", 256, "MO005",
     "oracle: disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm"),
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config",
     "cfg.model.recompute_granularity = None", 'cfg.model.recompute_granularity = "full"', 256, "MO005",
     "oracle: disable full recomputation when enabling overlap_moe_expert_parallel_comm"),
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config",
     "cfg.model.recompute_granularity = None", 'cfg.model.recompute_granularity = "full"', 256, "RC001",
     "source: megatron-core 0.19.2 transformer_config.py raises for full recompute without "
     "recompute_method (oracle reports the MO005 assertion first)"),
    ("recipes/nemotronh/h100/nemotron_3_nano.py", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config",
     "cfg.comm_overlap.overlap_moe_expert_parallel_comm = False",
     "cfg.comm_overlap.overlap_moe_expert_parallel_comm = True", 8, "MO005",
     "oracle: disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm"),
    ("recipes/nemotronh/h100/nemotron_3_nano.py", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config",
     "cfg.comm_overlap.delay_wgrad_compute = False", "cfg.comm_overlap.delay_wgrad_compute = True", 8, "MO006",
     "oracle: overlap_moe_expert_parallel_comm is required for delay_wgrad_compute"),
    # precision
    ("perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config",
     'cfg.mixed_precision = _perf_precision("fp8_cs")', 'cfg.mixed_precision = "bf16-mix"', 16, "PR001",
     "oracle: Unknown mixed-precision recipe 'bf16-mix'"),
    ("recipes/llama/h100/llama3.py", "llama32_3b_sft_1gpu_h100_bf16_config",
     "cfg.optimizer.exp_avg_dtype = torch.float32", "cfg.optimizer.exp_avg_dtype = torch.bfloat16", 1, "PR006",
     "oracle: exp_avg_dtype can only be fp32 when not using precision-aware optimizer"),
    # scheduler
    ("recipes/llama/h100/llama3.py", "llama31_405b_sft_128gpu_h100_bf16_config",
     "cfg.train.train_iters = 1000", "cfg.train.train_iters = 0", 128, "SC001",
     "oracle: lr_decay_steps must be > 0, got 0."),
    ("recipes/nemotronh/h100/nemotronh.py", "nemotronh_47b_pretrain_8gpu_h100_bf16_config",
     "cfg.train.train_iters = 1_168_251", "cfg.train.train_iters = 0", 8, "SC001",
     "oracle: lr_decay_steps must be > 0, got 0."),
]


@pytest.fixture(scope="module")
def tree(mb06, tmp_path_factory) -> Path:
    """A private copy of the wheel, so a case can rewrite one file."""
    root = tmp_path_factory.mktemp("mb06") / "wheel"
    shutil.copytree(mb06 / "megatron", root / "megatron")
    return root


def _function_line(lines: list[str], function: str, original: str) -> int:
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("def ")), len(lines))
    hits = [i for i in range(start, end) if lines[i].strip() == original]
    assert len(hits) == 1, f"{original!r} occurs {len(hits)} times in {function}"
    return hits[0]


@pytest.mark.parametrize("rel, function, original, mutated, world, rule, evidence", CASES,
                         ids=[f"{c[5]}-{c[1][:40]}-{c[3].split('.')[-1][:30]}" for c in CASES])
def test_mutation_lands_on_changed_line(tree, monkeypatch, rel, function, original, mutated, world, rule, evidence):
    path = tree / "megatron" / "bridge" / rel
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    index = _function_line(lines, function, original)
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines[index] = indent + mutated + "\n"
    path.write_text("".join(lines))
    try:
        monkeypatch.chdir(tree)
        engine = Engine(CheckOptions(jobs=1, world_size=world))
        relative = Path("megatron/bridge") / rel
        engine.editable = {engine.project_display(relative)}  # as `mblint check FILE` does
        engine.enter_file(relative)
        result = FileResult()
        engine.check_job(Job(recipe=relative, function=function), "".join(lines), result)
    finally:
        path.write_text(text)
    assert not [n for n in result.notes + [e.message for e in result.errors] if "internal error" in n], result.errors
    on_line = {(f.rule_id, f.severity.name) for f in result.findings if f.location.line == index + 1}
    assert (rule, "ERROR") in on_line, (
        f"expected {rule} error on line {index + 1} ({mutated}); got on line: {sorted(on_line)}; "
        f"elsewhere: {sorted((f.rule_id, f.location.line) for f in result.findings if f.location.line != index + 1)}")
