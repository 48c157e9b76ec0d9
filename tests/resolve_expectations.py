"""Hand-computed expected values for the resolver fixtures in ``fixtures/resolve``.

Pure data, standard library only: ``tests/test_resolve_patterns.py`` asserts them against
``mblint.api.resolve_recipe`` and ``scripts/crosscheck_fixtures_with_mb.py`` compares them with
what real Megatron-Bridge 0.6.2 produces when the fixture recipes are executed.

Every value was worked out by reading the fixture files (arithmetic in the comments there);
dataclass defaults were read in the Megatron-Bridge 0.6.2 / Megatron-Core 0.19.2 sources
(0.3.1 for the legacy case) and are cited ``file:line`` below:

  PSS  megatron/bridge/data/packing/config.py (0.6.2)
  SFTB megatron/bridge/data/builders/gpt_sft.py (0.6.2)
  DLB  megatron/bridge/data/base.py (0.6.2)
  GPTP megatron/bridge/models/gpt_provider.py (0.6.2)
  MPC  megatron/core/model_parallel_config.py (MCore 0.19.2)
  TC   megatron/core/transformer/transformer_config.py (MCore 0.19.2)
  OPTC megatron/core/optimizer/optimizer_config.py (MCore 0.19.2)
  DDPC megatron/core/distributed/distributed_data_parallel_config.py (MCore 0.19.2)
  TRC  megatron/training/config/training_config.py (MCore 0.19.2)
  CC   megatron/training/config/common_config.py (MCore 0.19.2)
  LORA megatron/bridge/peft/lora.py (0.6.2)
  PS03 megatron/bridge/data/datasets/packed_sequence.py (0.3.1)
  CFG03 megatron/bridge/training/config.py (0.3.1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE_ROOT = REPO / "fixtures" / "resolve"
H100 = FIXTURE_ROOT / "myrecipes" / "llama" / "h100.py"
PERF = FIXTURE_ROOT / "myrecipes" / "llama" / "perf.py"
UNKNOWNS = FIXTURE_ROOT / "myrecipes" / "llama" / "unknowns.py"
LEGACY03 = FIXTURE_ROOT / "myrecipes" / "legacy03.py"
COMMON = FIXTURE_ROOT / "myrecipes" / "common.py"
SFT_YAML = FIXTURE_ROOT / "overrides" / "sft_override.yaml"


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNKNOWN = _Marker("UNKNOWN")  # the resolver cannot know it
ABSENT = _Marker("ABSENT")  # the field / dict key does not exist


@dataclass(frozen=True)
class Approx:
    """A float computed with float arithmetic (0.1 * 3e-4 is 3.0000000000000004e-05)."""

    value: float


@dataclass
class Case:
    id: str
    path: Path
    function: str
    expected: dict
    types: dict = field(default_factory=dict)
    version: str = "0.6"
    override_files: tuple = ()
    dotlist: tuple = ()
    # keyword arguments the crosscheck passes when it executes the recipe for real
    # (only for parameters without default; the resolver sees them as unknown)
    call_kwargs: dict = field(default_factory=dict)
    crosscheck: bool = True


# ---------------------------------------------------------------------------------------------
# llama3_8b_sft_config: seed _my_sft_common() + AutoBridge provider + assignments
# ---------------------------------------------------------------------------------------------
SFT = {
    # parallelism: assigned in the recipe; CP read (=1) before being set to 2
    "model.tensor_model_parallel_size": 2,
    "model.pipeline_model_parallel_size": 1,
    "model.context_parallel_size": 2,
    "model.sequence_parallel": True,  # 2 > 1
    "model.seq_length": 8192,
    # HF-derived (config.json): unknown statically
    "model.num_layers": UNKNOWN,
    "model.hidden_size": UNKNOWN,
    "model.num_attention_heads": UNKNOWN,
    # provider defaults, not HF-derived
    "model.expert_model_parallel_size": 1,  # MPC:127
    "model.calculate_per_token_loss": False,  # TC:277
    "model.use_te_rng_tracker": False,  # GPTP:197
    # TC:518/546 give None, but without config.json the provider class is unknown and Sarvam's
    # providers (which its bridges build) default them to 'selective' and a module list
    "model.recompute_granularity": UNKNOWN,
    "model.recompute_modules": UNKNOWN,
    # dataset: seed constructor + 3-level assignment
    "dataset.seq_length": 8192,
    "dataset.offline_packing_specs.packed_sequence_size": 8192,
    "dataset.offline_packing_specs.pad_seq_to_mult": 1,  # seed local pad_seq_to_mult = 1; the if is not taken
    "dataset.offline_packing_specs.pad_cu_seqlens": False,  # PSS:37
    "dataset.offline_packing_specs.max_single_sequence_length": None,  # PSS:31
    "dataset.offline_packing_specs.num_tokenizer_workers": -1,  # PSS:33
    "dataset.enable_offline_packing": True,
    "dataset.dataset_kwargs.pad_to_max_length": True,
    "dataset.dataset_root": "/data/squad",
    "dataset.seed": 5678,
    "dataset.dataloader_type": "batch",  # SFTB:132
    "dataset.num_workers": 2,  # DLB:34
    "dataset.do_validation": True,  # SFTB:130
    "dataset.memmap_workers": 1,  # SFTB:124
    # train / validation
    "train.global_batch_size": 32,
    "train.micro_batch_size": 1,
    "train.train_iters": 400,
    "train.manual_gc": False,  # TRC:91
    "validation.eval_interval": 100,
    "validation.eval_iters": 32,
    # optimizer / scheduler from my_opt_factory(max_lr=5e-6, min_lr=0.0, warmup_iters=50)
    "optimizer.optimizer": "adam",
    "optimizer.lr": 5e-6,
    "optimizer.min_lr": 0.0,
    "optimizer.weight_decay": 0.1,
    "optimizer.bf16": True,
    "optimizer.adam_beta2": 0.95,
    "optimizer.use_distributed_optimizer": True,
    "optimizer.clip_grad": 1.0,  # OPTC:371
    "scheduler.lr_decay_style": "cosine",
    "scheduler.lr_warmup_iters": 100,  # 400 // 4
    "scheduler.lr_decay_iters": None,
    "scheduler.override_opt_param_scheduler": True,
    "scheduler.lr_warmup_init": 0.0,  # TRC:196
    # ddp: MCore class, two fields given
    "ddp.check_for_nan_in_grad": True,
    "ddp.grad_reduce_in_fp32": True,
    "ddp.average_in_collective": False,  # DDPC:74
    "ddp.use_distributed_optimizer": False,  # DDPC:29
    "ddp.overlap_grad_reduce": False,  # DDPC:18
    # the rest of the seed
    "logger.log_interval": 10,
    "logger.tensorboard_dir": "/results/tb",
    "logger.wandb_project": None,  # TRC:339
    "tokenizer.tokenizer_type": "HuggingFaceTokenizer",
    "tokenizer.tokenizer_model": None,
    "checkpoint.save_interval": 100,
    "checkpoint.save": "/results/ckpt",
    "checkpoint.load": "/results/ckpt",
    "checkpoint.ckpt_format": "torch_dist",
    "rng.seed": 5678,
    "rng.te_rng_tracker": False,  # CC:13
    "mixed_precision": "bf16_mixed",
    "comm_overlap": None,
    "peft": None,
    "env_vars.NCCL_ALGO": ABSENT,  # env_vars is the empty default dict
}
SFT_TYPES = {
    "": "ConfigContainer",
    "dataset": "GPTSFTDatasetConfig",
    "dataset.offline_packing_specs": "PackedSequenceSpecs",
    "train": "TrainingConfig",
    "validation": "ValidationConfig",
    "optimizer": "OptimizerConfig",
    "scheduler": "SchedulerConfig",
    "ddp": "DistributedDataParallelConfig",
    "rng": "RNGConfig",
    # Llama's bridge returns a GPTModelProvider, but which provider class a bridge returns
    # depends on the model family (Nemotron-H gets a Mamba provider): mblint does not read the
    # HF config, so the class is reported as unknown ("HFModelProvider").
    "model": "HFModelProvider",
}

# ---------------------------------------------------------------------------------------------
# llama3_8b_pretrain_config: seed _my_pretrain_common() + arithmetic
# tp=4, pp=2, num_gpus=64, dp = 64 // (4*2) = 8
# ---------------------------------------------------------------------------------------------
PRETRAIN = {
    "model.tensor_model_parallel_size": 4,
    "model.pipeline_model_parallel_size": 2,
    "model.context_parallel_size": 1,  # 64 >= 128 False -> 1
    "model.sequence_parallel": True,  # 4 > 1 and not (2 > 4)
    "model.seq_length": 12288,  # = dataset.seq_length
    "model.num_layers": UNKNOWN,
    "model.vocab_size": UNKNOWN,
    "model.calculate_per_token_loss": False,
    "train.micro_batch_size": 1,  # 10 % 3
    "train.global_batch_size": 64,  # 8 * 4 * 2
    "train.train_iters": 2000,  # 2**10 + 1000 - 24
    "train.manual_gc": True,  # 4 >= 4
    "train.manual_gc_interval": 250,
    "scheduler.lr_warmup_iters": 200,  # max(100, 2000 // 10)
    "scheduler.lr_decay_iters": 1500,  # min(2000, 1500)
    "scheduler.lr_decay_style": "cosine",
    "validation.eval_interval": 250,  # abs(-250)
    "validation.eval_iters": 12,  # int(12.9)
    "dataset.seq_length": 12288,  # lcm(8, 12) * 512 = 24 * 512
    "dataset.split": "9999,8,2",
    "dataset.dataloader_type": "single",
    "dataset.random_seed": 1234,
    "logger.log_interval": 6,  # gcd(12, 18)
    "logger.wandb_exp_name": "llama3-8b-pretrain",  # None or "..."
    "logger.wandb_project": None,  # None and "..."
    "checkpoint.save_interval": 334,  # ceil(1000 / 3)
    "ddp.overlap_param_gather": True,  # 2 == 1 or 8 > 4
    "ddp.overlap_grad_reduce": False,  # not (8 > 4)
    "ddp.bucket_size": 60000000,  # 10**8 - 8 * 5 * 10**6
    "ddp.average_in_collective": True,
    "ddp.use_distributed_optimizer": True,
    "optimizer.lr": Approx(1.5e-4),  # 3e-4 * 2 / 4
    "optimizer.min_lr": Approx(3e-5),  # my_opt_factory default: 0.1 * 3e-4
    "optimizer.adam_beta2": 0.95,
    "rng.seed": 1234,  # ConfigContainer's default_factory RNGConfig; CC:10
    "rng.te_rng_tracker": False,  # CC:13
    "tokenizer.tokenizer_type": "NullTokenizer",
    "tokenizer.vocab_size": 128256,
    "mixed_precision": "bf16_mixed",
}

CASES: list[Case] = [
    Case("sft", H100, "llama3_8b_sft_config", SFT, SFT_TYPES),
    Case("pretrain", H100, "llama3_8b_pretrain_config", PRETRAIN, {"dataset": "GPTDatasetConfig", "rng": "RNGConfig"}),
    Case(
        "sft_cp4",
        H100,
        "llama3_8b_sft_cp4_config",
        {
            "model.context_parallel_size": 4,  # helper cp=4
            "model.tensor_model_parallel_size": 2,
            "model.pipeline_model_parallel_size": 1,  # helper default pp=1
            "model.sequence_parallel": True,  # sp=None -> tp > 1
            "dataset.offline_packing_specs.pad_seq_to_mult": 8,  # max(1, 4 * 2)
            "dataset.offline_packing_specs.packed_sequence_size": 8192,
            "dataset.seq_length": 8192,
            "train.global_batch_size": 64,  # 32 * 2
            "train.micro_batch_size": 1,
        },
    ),
    Case(
        "sft_tp8",
        H100,
        "llama3_8b_sft_tp8_config",
        {
            "model.tensor_model_parallel_size": 8,
            "model.pipeline_model_parallel_size": 2,
            "model.context_parallel_size": 1,  # helper default cp=1 overwrites 2
            # sp=False given (the real Llama value), but without config.json the class is not
            # known: Qwen3VLMoEModelProvider.finalize() would turn SP on with TP > 1
            "model.sequence_parallel": UNKNOWN,
            "dataset.offline_packing_specs.pad_seq_to_mult": 16,  # mult=16
            "train.global_batch_size": 32,
        },
    ),
    Case(
        "peft",
        H100,
        "llama3_8b_peft_config",
        {
            "peft.dim": 16,
            "peft.alpha": 32,  # 2 * 16
            "peft.dropout": 0.0,  # LORA:106
            "peft.dropout_position": "pre",  # LORA:107
            "dataset.seq_length": 16384,  # SEQ_16K = 2 * 8192
            "dataset.offline_packing_specs.packed_sequence_size": 16384,
            "model.seq_length": 16384,
            "train.global_batch_size": 64,  # keyword-only default gbs=64
            "model.context_parallel_size": 1,  # use_cp False -> else branch
            "dataset.offline_packing_specs.pad_seq_to_mult": 4,  # 16384 // 4096
            "optimizer.lr": 2e-4,  # elif peft_rank >= 16
            "model.tensor_model_parallel_size": 1,  # MPC:55
            "model.sequence_parallel": False,  # MPC:94
            "model.num_layers": UNKNOWN,
        },
        {"peft": "LoRA"},
    ),
    Case(
        "custom",
        H100,
        "llama3_8b_custom_config",
        {
            "train.global_batch_size": UNKNOWN,  # num_nodes has no default
            "train.micro_batch_size": 1,
            "dataset.seq_length": 4096,
            "model.seq_length": 4096,
            "model.tensor_model_parallel_size": 4,
        },
        call_kwargs={"num_nodes": 2},
    ),
    Case(
        "dicts",
        H100,
        "llama3_8b_dicts_config",
        {
            "env_vars.CUDA_DEVICE_MAX_CONNECTIONS": 32,  # later key beats the splat's 1
            "env_vars.NCCL_NVLS_ENABLE": 0,
            "env_vars.NCCL_ALGO": "Ring",
            "env_vars.TORCH_NCCL_AVOID_RECORD_STREAMS": 1,
            "env_vars.NCCL_IB_SL": ABSENT,
            "dataset.dataset_kwargs.pad_to_max_length": False,  # subscript store after the splat
            "dataset.dataset_kwargs.prompt_template": "{input} {output}",
            "rng.te_rng_tracker": True,
            "model.use_te_rng_tracker": True,
        },
    ),
    Case(
        "kwargs_from_none",
        H100,
        "llama3_8b_kwargs_from_none_config",
        {
            "dataset.dataset_kwargs.truncation_method": "left",
            "dataset.dataset_kwargs.pad_to_max_length": ABSENT,  # (None or {}) -> {}
            # The model comes straight from AutoBridge and nothing sets these: HF-derived fields
            # are unknown (seq_length too: AutoBridge maps HF max_position_embeddings ->
            # seq_length, models/conversion/model_bridge.py:446, so it is NOT GPTP:159's 1024),
            # everything else starts at the provider / TransformerConfig default.
            "model.seq_length": UNKNOWN,
            "model.num_layers": UNKNOWN,
            "model.num_query_groups": UNKNOWN,
            "model.ffn_hidden_size": UNKNOWN,
            "model.tensor_model_parallel_size": 1,  # MPC:55
            "model.pipeline_model_parallel_size": 1,  # MPC:83
            "model.context_parallel_size": 1,  # MPC:100
            "model.expert_model_parallel_size": 1,  # MPC:127
            "model.sequence_parallel": False,  # MPC:94
            "model.calculate_per_token_loss": False,  # TC:277
            "model.use_te_rng_tracker": False,  # GPTP:197
            # GPTP:204 defaults it to True, but some model bridges set it from their own
            # constants (the schema lists it as HF-derived), and mblint does not know which
            # bridge serves this model id: unknown, so no rule can fire on it.
            "model.cross_entropy_loss_fusion": UNKNOWN,
        },
    ),
    Case(
        "ctor_defaults",
        H100,
        "llama3_8b_ctor_defaults_config",
        {
            "dataset.offline_packing_specs.packed_sequence_size": 4096,
            "dataset.offline_packing_specs.pad_seq_to_mult": 1,  # PSS:39
            "dataset.offline_packing_specs.pad_cu_seqlens": False,  # PSS:37
            "dataset.offline_packing_specs.max_single_sequence_length": None,  # PSS:31
            "dataset.offline_packing_specs.num_tokenizer_workers": -1,  # PSS:33
            "dataset.seq_length": 8192,
            "dataset.enable_offline_packing": True,
            "validation.eval_interval": 50,
            "validation.eval_iters": 100,  # TRC:115
            "rng.seed": 1234,  # CC:10 (not the seed's 5678)
            "rng.te_rng_tracker": True,
            "optimizer.lr": 1e-5,
            "optimizer.min_lr": Approx(1e-6),  # 1e-5 / 10
            "optimizer.adam_beta2": 0.999,  # OPTC:242 (not my_opt_factory's 0.95)
            "optimizer.weight_decay": 0.01,  # OPTC:162
            "optimizer.bf16": False,  # OPTC:177
            "optimizer.use_distributed_optimizer": True,
            "scheduler.lr_warmup_iters": 10,
            "scheduler.lr_decay_style": "linear",  # TRC:169 (not "cosine")
            "scheduler.override_opt_param_scheduler": False,  # TRC:209
            "scheduler.lr_decay_iters": None,  # TRC:175
        },
        {"dataset.offline_packing_specs": "PackedSequenceSpecs", "optimizer": "OptimizerConfig", "scheduler": "SchedulerConfig"},
    ),
    Case(
        "opt_factory",
        H100,
        "llama3_8b_opt_factory_config",
        {
            "optimizer.lr": 2e-4,
            "optimizer.min_lr": Approx(2e-5),  # min_lr None -> 0.1 * 2e-4
            "optimizer.adam_beta2": 0.95,
            "optimizer.use_distributed_optimizer": True,
            "scheduler.lr_warmup_iters": 100,
            "scheduler.lr_decay_iters": None,
            "scheduler.lr_decay_style": "cosine",
            "scheduler.override_opt_param_scheduler": True,
        },
    ),
    Case(
        "opt_locals",
        H100,
        "llama3_8b_opt_locals_config",
        {
            "optimizer.lr": 3e-5,
            "optimizer.min_lr": 0.0,  # given positionally, not None
            "optimizer.adam_beta2": 0.98,
            "scheduler.lr_warmup_iters": 500,  # factory default
            "scheduler.lr_decay_iters": 1024,  # LOCAL_GBS * 4
        },
    ),
    Case(
        "branches",
        H100,
        "llama3_8b_branches_config",
        {
            "train.micro_batch_size": 2,  # equal in both branches
            "train.global_batch_size": UNKNOWN,  # 128 vs 256
            "model.recompute_granularity": UNKNOWN,  # "full" vs None
            "train.manual_gc": True,  # True vs True
            "validation.eval_iters": 7,
            "train.train_iters": 2000,
            "model.tensor_model_parallel_size": 4,
        },
    ),
    Case(
        "early_return",
        H100,
        "llama3_8b_early_return_config",
        {"train.train_iters": 500, "train.global_batch_size": 16, "train.micro_batch_size": 1},
    ),
    Case(
        "unknown_return",
        H100,
        "llama3_8b_unknown_return_config",
        {"train.micro_batch_size": UNKNOWN, "train.train_iters": 2000, "train.global_batch_size": 64},
    ),
    Case(
        "perf_pretrain",
        PERF,
        "perf_llama3_8b_pretrain_config",
        {
            "train.micro_batch_size": 2,
            "train.global_batch_size": 64,
            "dataset.seq_length": 12288,
            "model.tensor_model_parallel_size": 4,
            "model.num_layers": UNKNOWN,
        },
    ),
    Case(
        "perf_gbs",
        PERF,
        "perf_llama3_8b_gbs_config",
        {"train.global_batch_size": 768, "train.micro_batch_size": 1, "train.train_iters": 2000},
    ),
    Case(
        "perf_sft",
        PERF,
        "perf_llama3_8b_sft_config",
        {
            "model.tensor_model_parallel_size": 8,
            "model.context_parallel_size": 2,
            "model.pipeline_model_parallel_size": 1,  # helper default
            "model.sequence_parallel": UNKNOWN,  # False for Llama; unknown class, TP 8 (as sft_tp8)
            "dataset.offline_packing_specs.pad_seq_to_mult": 4,  # 2 * 2
            "train.global_batch_size": 32,
        },
    ),
    Case(
        "loop",
        UNKNOWNS,
        "loop_config",
        {"train.train_iters": UNKNOWN, "train.micro_batch_size": 1, "train.global_batch_size": 64},
    ),
    Case(
        "unmodelled_result",
        UNKNOWNS,
        "unmodelled_result_config",
        {
            "model.tensor_model_parallel_size": UNKNOWN,
            "train.global_batch_size": UNKNOWN,
            "model.pipeline_model_parallel_size": 4,
            "model.context_parallel_size": 1,
            "dataset.seq_length": 12288,
        },
    ),
    Case(
        "unmodelled_call_on_train",
        UNKNOWNS,
        "unmodelled_call_on_train_config",
        {
            "train.global_batch_size": UNKNOWN,
            "train.train_iters": UNKNOWN,
            "train.micro_batch_size": 1,
            "dataset.seq_length": 12288,
            "model.tensor_model_parallel_size": 4,
        },
    ),
    Case(
        "unmodelled_call_on_cfg",
        UNKNOWNS,
        "unmodelled_call_on_cfg_config",
        {
            "train.global_batch_size": UNKNOWN,
            "dataset.seq_length": UNKNOWN,
            "model.tensor_model_parallel_size": UNKNOWN,
            "model.context_parallel_size": 2,
        },
    ),
    Case(
        "v03",
        LEGACY03,
        "llama3_8b_sft_v03_config",
        {
            "dataset.packed_sequence_specs.packed_sequence_size": 4096,
            "dataset.packed_sequence_specs.pad_seq_to_mult": 1,  # PS03:242
            "dataset.packed_sequence_specs.pad_cu_seqlens": False,  # PS03:238
            "dataset.seq_length": 4096,
            "dataset.dataset_kwargs.pad_to_max_length": True,
            "dataset.dataloader_type": "batch",  # CFG03:533
            "dataset.seed": 1234,  # CFG03:538
            "dataset.enable_offline_packing": ABSENT,  # not a 0.3 field
            "dataset.offline_packing_specs": ABSENT,
            "model.context_parallel_size": 2,
            "model.seq_length": 4096,
            "model.num_layers": UNKNOWN,
            "train.eval_interval": 100,
            "train.eval_iters": 100,  # CFG03:734
            "train.global_batch_size": 128,
            "optimizer.lr": 5e-6,
            "scheduler.lr_warmup_iters": 50,
        },
        {"dataset": "FinetuningDatasetConfig", "dataset.packed_sequence_specs": "PackedSequenceSpecs"},
        version="0.3",
        crosscheck=False,  # the oracle venv has 0.6.2 only
    ),
    # ----------------------------------------------------------------- YAML and dotlist overrides
    Case(
        "yaml",
        H100,
        "llama3_8b_sft_config",
        {
            "train.micro_batch_size": 2,
            "train.global_batch_size": 48,
            "dataset.offline_packing_specs.pad_seq_to_mult": 8,
            "dataset.offline_packing_specs.packed_sequence_size": 8192,  # untouched by the YAML
            "dataset.dataset_kwargs.prompt_template": "{input}\n{output}",  # YAML double quotes: real newline
            "dataset.dataset_kwargs.pad_to_max_length": True,  # YAML maps merge into the dict
            "checkpoint.save_interval": None,
            "model.recompute_granularity": "selective",
            "model.recompute_modules": ["core_attn", "mlp"],
            "model.context_parallel_size": 2,
        },
        override_files=(SFT_YAML,),
    ),
    Case(
        "dotlist",
        H100,
        "llama3_8b_sft_config",
        {
            "train.global_batch_size": 64,
            "model.seq_length": 4096,
            "model.recompute_modules": ["core_attn", "mlp"],
            "checkpoint.load": None,
            "logger.wandb_project": "x y",
            "dataset.dataset_kwargs.new_key": 1,
            "dataset.dataset_kwargs.pad_to_max_length": True,
            "dataset.seq_length": 8192,
        },
        dotlist=(
            "train.global_batch_size=64",
            "++model.seq_length=4096",
            "model.recompute_modules=[core_attn,mlp]",
            "checkpoint.load=null",
            'logger.wandb_project="x y"',
            "+dataset.dataset_kwargs.new_key=1",
        ),
    ),
    Case(
        "dotlist_delete",
        H100,
        "llama3_8b_sft_config",
        {"dataset.dataset_kwargs.pad_to_max_length": ABSENT, "dataset.enable_offline_packing": True},
        dotlist=("~dataset.dataset_kwargs.pad_to_max_length",),
    ),
    Case(
        "dotlist_dict_merge",
        H100,
        "llama3_8b_dicts_config",
        {
            # Hydra applies `key=value` with OmegaConf.update(merge=True): a dict value merges
            "dataset.dataset_kwargs.pad_to_max_length": True,
            "dataset.dataset_kwargs.prompt_template": "{input} {output}",
        },
        dotlist=("dataset.dataset_kwargs={pad_to_max_length:true}",),
    ),
    Case(
        "yaml_then_dotlist",
        H100,
        "llama3_8b_sft_config",
        {
            "train.micro_batch_size": 4,  # dotlist after YAML's 2
            "train.global_batch_size": 48,  # YAML
            "dataset.offline_packing_specs.packed_sequence_size": 2048,
            "dataset.offline_packing_specs.pad_seq_to_mult": 1,  # dotlist after YAML's 8
        },
        override_files=(SFT_YAML,),
        dotlist=(
            "train.micro_batch_size=4",
            "dataset.offline_packing_specs={packed_sequence_size:2048,pad_seq_to_mult:1}",
        ),
    ),
    Case(
        "dotlist_add_unknown_dataclass_key",
        H100,
        "llama3_8b_sft_config",
        # `+` adds the key to the OmegaConf tree, then apply_overrides warns and skips keys the
        # dataclass does not have (omegaconf_utils.py _apply_overrides): nothing is set.
        {"dataset.new_key": ABSENT, "dataset.seq_length": 8192},
        dotlist=("+dataset.new_key=1",),
    ),
]

CASES_BY_ID = {case.id: case for case in CASES}


def marker_line(path: Path, marker: str) -> int:
    """1-based line of the unique ``# @marker`` comment in ``path``."""
    hits = [
        number
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if text.rstrip().endswith(f"@{marker}")
    ]
    if len(hits) != 1:
        raise AssertionError(f"marker @{marker} found {len(hits)} times in {path}")
    return hits[0]
