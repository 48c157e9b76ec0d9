# A configuration base in the shape of transformers 5's (annotated dataclass fields); written for
# mblint's tests, not copied.


class PreTrainedConfig:
    model_type = ""
    attribute_map = {}
    tie_word_embeddings: bool = True
    dtype: str | None = None

    def __getattribute__(self, key):
        return super().__getattribute__(key)
