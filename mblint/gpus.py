"""The GPU a job runs on, where its recipe's name says it (``..._64gpu_gb200_bf16_config``), and
what ``torch.cuda.get_device_properties(0)`` reports there: the compute capability's major number
and how the device name starts (the full name varies by board: "NVIDIA B300 SXM6 AC",
Megatron-Bridge issue 2725). A name token mblint has no facts for (``vr200``) leaves the GPU
unknown."""

from __future__ import annotations

import re
from typing import NamedTuple


class Gpu(NamedTuple):
    key: str  # the token of the recipe name: "gb200"
    major: int  # torch.cuda.get_device_properties(0).major
    name_prefix: str  # what its .name starts with


# Compute capabilities: Hopper 9.0, Blackwell B200/GB200 10.0, B300/GB300 10.3. The names:
# "NVIDIA GB200" (Megatron-Bridge issue 5992 and PR 5207's error "Current GPU: NVIDIA GB200"),
# "NVIDIA B300 SXM6 AC" (issue 2725).
GPUS = {gpu.key: gpu for gpu in (
    Gpu("h100", 9, "NVIDIA H100"),
    Gpu("b200", 10, "NVIDIA B200"),
    Gpu("b300", 10, "NVIDIA B300"),
    Gpu("gb200", 10, "NVIDIA GB200"),
    Gpu("gb300", 10, "NVIDIA GB300"),
)}

_NAME = re.compile(r"_\d+gpus?_([a-z]+\d+)_")


def gpu_of_recipe(function: str) -> Gpu | None:
    """The GPU a recipe's name says it is for (``_<N>gpu_<gpu>_``, Megatron-Bridge's naming,
    recipes/utils/naming.py), or None."""
    match = _NAME.search(f"_{function}_")
    return GPUS.get(match.group(1)) if match else None
