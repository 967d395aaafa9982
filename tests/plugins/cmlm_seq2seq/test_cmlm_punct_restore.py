from kdplug_plugins.cmlm_seq2seq.punct_restore import build_rows
from kdplug_plugins.cmlm_seq2seq.punct_restore import main
from kdplug_plugins.cmlm_seq2seq.punct_restore import strip_punctuation


def test_strip_punctuation():
    assert strip_punctuation("Well, it's a co-production -- isn't it?") == (
        "well its a coproduction isnt it")
    assert strip_punctuation("  ''Conan''   (2011)!") == "conan 2011"
    assert strip_punctuation("...") == ""


def test_build_keeps_ids_and_splits_and_drops_empty_sources(tmp_path):
    src = tmp_path / "texts.tsv"
    src.write_text("id\tsplit\tscore\tlabel\ttext\n"
                   "1\ttrain\t1.0\t1\tA fine, fine film.\n"
                   "2\tdev\t0.0\t0\t?!\n"
                   "3\ttest\t-1.0\t0\tDull  -- very dull.\n")
    assert build_rows(str(src)) == [
        ("1", "train", "a fine fine film", "A fine, fine film."),
        ("3", "test", "dull very dull", "Dull -- very dull.")]
    out = tmp_path / "pairs.tsv"
    assert main([str(src), str(out)]) == 0
    assert out.read_text().splitlines() == [
        "id\tsplit\tsource\ttarget",
        "1\ttrain\ta fine fine film\tA fine, fine film.",
        "3\ttest\tdull very dull\tDull -- very dull."]
