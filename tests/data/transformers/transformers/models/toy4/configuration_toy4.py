# A configuration class in the shape of transformers 4's (defaults as __init__ parameters,
# attributes computed in __init__); written for mblint's tests, not copied.
from ...configuration_utils import PreTrainedConfig


class Toy4Config(PreTrainedConfig):
    model_type = "toy4"

    def __init__(self, hidden_size=4096, num_attention_heads=32, num_key_value_heads=None, head_dim=None,
                 qk_rope_head_dim=64, **kwargs):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        if num_key_value_heads is None:
            num_key_value_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = head_dim if head_dim is not None else self.hidden_size // self.num_attention_heads
        self.qk_rope_head_dim = qk_rope_head_dim
        self.rope_dim = qk_rope_head_dim
        super().__init__(**kwargs)
