CONFIG_MAPPING_NAMES = dict(
    [
        ("toy", "ToyConfig"),
        ("toy_vl", "ToyVLConfig"),
        ("toy4", "Toy4Config"),
    ]
)
