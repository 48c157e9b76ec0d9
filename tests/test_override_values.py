"""Override values read as Hydra's override grammar reads them (checked against hydra-core's
``OverridesParser`` by hand: the expected values below are Hydra's), and OT013 on values that
do not fit their field."""

from __future__ import annotations

import math

import pytest

from mblint.overrides import DotlistError, parse_value


@pytest.mark.parametrize("text,expected", [
    ("abc", "abc"), ("-1", -1), ("0", 0), ("+3", 3), ("1_000", 1000), ("007", "007"), ("1__0", "1__0"),
    ("1e3", 1000.0), ("1E+3", 1000.0), (".5", 0.5), ("5.", 5.0), ("2.0", 2.0), ("-inf", -math.inf),
    ("0x10", "0x10"), ("12abc", "12abc"), ("none", "none"), ("NULL", None), ("tRUE", True), ("[1,2]", [1, 2]),
])
def test_scalars_read_as_hydra_reads_them(text, expected):
    value = parse_value(text)
    assert value == expected and type(value) is type(expected)


def test_nan_is_a_float():
    assert math.isnan(parse_value("NaN"))


@pytest.mark.parametrize("text", ["１２", "ｍｂｓ", "é"])
def test_characters_outside_hydra_s_set_are_a_parse_error(text):
    with pytest.raises(DotlistError, match="Hydra's override grammar rejects"):
        parse_value(text)


def test_full_width_digits_on_the_command_line_are_a_clear_error(tmp_path, mb_roots, monkeypatch):
    from click.testing import CliRunner

    from mblint.cli import main

    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text("from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
                                   "def my_config():\n    cfg = _pretrain_common()\n    return cfg\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "r.py", "--no-cache", "--search-path", str(mb_roots["0.6"]),
                                       "--set", "train.micro_batch_size=１２"])
    assert result.exit_code == 2, result.output
    assert "U+FF11" in result.output
