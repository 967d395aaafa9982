"""`kdplug.storage` helpers that have no home in a larger test."""

import os

from kdplug import storage


def test_tree_size_counts_a_hard_linked_file_once(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x" * 1000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"y" * 24)
    assert storage.tree_size(str(tmp_path)) == 1024
    # like a run's export/student.keras, a hard link to student.keras
    os.link(tmp_path / "a.bin", tmp_path / "sub" / "a-link.bin")
    assert storage.tree_size(str(tmp_path)) == 1024
    assert storage.tree_size(str(tmp_path / "sub" / "a-link.bin")) == 1000
