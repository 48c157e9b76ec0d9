from dataclasses import field

from ...configuration_utils import PreTrainedConfig


class ToyConfig(PreTrainedConfig):
    model_type = "toy"
    attribute_map = {"num_experts": "num_local_experts"}
    hidden_size: int = 4096
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    mlp_bias: bool = False
    sliding_window: int | None = 4096
    rope_parameters: dict | None = None
    initializer_range: float = field(default=0.02)

    def __post_init__(self, **kwargs):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        self.num_key_value_heads = self.num_key_value_heads if self.num_key_value_heads is not None else 1
        self.sliding_window = self.sliding_window if self.use_sliding_window else None
        super().__post_init__(**kwargs)


class ToyUnregisteredConfig(PreTrainedConfig):
    model_type = "toy_unregistered"
