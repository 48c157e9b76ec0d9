"""Reading source files: one read request sized by the file, not by the size limit."""

from __future__ import annotations

import os


class _SizedReads:
    """os.fdopen whose handles record the sizes asked of ``read``."""

    def __init__(self, real):
        self.real, self.asked = real, []

    def __call__(self, *args, **kwargs):
        handle, asked = self.real(*args, **kwargs), self.asked

        class Recording:
            def __enter__(self):
                handle.__enter__()
                return self

            def __exit__(self, *exc):
                return handle.__exit__(*exc)

            def read(self, size=-1):
                asked.append(size)
                return handle.read(size)

        return Recording()


def test_a_source_file_is_read_for_its_size_not_the_limit(tmp_path, monkeypatch):
    from mblint.extract import modules

    file = tmp_path / "r.py"
    file.write_bytes(b"x = 1\n" * 100)
    reads = _SizedReads(os.fdopen)
    monkeypatch.setattr(modules.os, "fdopen", reads)
    assert modules.read_regular_file(file) == b"x = 1\n" * 100
    assert reads.asked == [601]


def test_a_file_larger_than_its_reported_size_is_read_whole_up_to_the_limit(tmp_path, monkeypatch):
    from mblint.extract import modules

    file = tmp_path / "r.py"
    file.write_bytes(b"y" * 50)
    real_fstat = os.fstat

    def no_size(fd):  # as /proc reports its files
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 0, *info[7:]))

    monkeypatch.setattr(modules.os, "fstat", no_size)
    assert modules.read_regular_file(file) == b"y" * 50
    assert modules.read_regular_file(file, limit=50) == b"y" * 50
    try:
        modules.read_regular_file(file, limit=49)
    except modules.SourceLimit:
        pass
    else:
        raise AssertionError("the limit was not enforced")
