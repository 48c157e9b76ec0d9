import inspect

from ...configuration_utils import PreTrainedConfig
from ..toy.configuration_toy import ToyConfig


class ToyVLTextConfig(ToyConfig):
    model_type = "toy_vl_text"


class ToyVLConfig(PreTrainedConfig):
    model_type = "toy_vl"
    sub_configs = {"text_config": ToyVLTextConfig}
    text_config: dict | None = None

    def __post_init__(self, **kwargs):
        if self.text_config is None:
            text_params = inspect.signature(self.sub_configs["text_config"].__init__).parameters
            text_kwargs = {key: kwargs.pop(key) for key in list(text_params) + ["rope_theta"] if key in kwargs}
            text_kwargs["dtype"] = kwargs.get("dtype")
            self.text_config = self.sub_configs["text_config"](**text_kwargs)
        super().__post_init__(**kwargs)
