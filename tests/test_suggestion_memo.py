"""OT001 keeps difflib's answers: the same misspelt field recurs in many configurations."""

from mblint_rules.general import ot001_unknown_field as ot001


def test_suggestions_are_kept_and_unchanged():
    names = ("lr", "min_lr", "weight_decay")
    first = ot001._closest("min_lrr", names, 0.75)
    hits = ot001._closest.cache_info().hits
    assert ot001._closest("min_lrr", names, 0.75) == first == "min_lr"
    assert ot001._closest.cache_info().hits == hits + 1
    siblings = (("optimizer", names), ("train", ("train_iters",)))
    assert ot001._on_sibling("weight_decay", siblings) == "optimizer.weight_decay"
    assert ot001._on_sibling("train_iter", siblings) == "train.train_iters"
    assert ot001._on_sibling("weight_decay", siblings) == "optimizer.weight_decay"
    assert ot001._on_sibling.cache_info().hits >= 1
