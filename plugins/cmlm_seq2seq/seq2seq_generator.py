import os

from kdplug import storage
from kdplug.run_files import STUDENT_FILE
from kdplug_plugins.cmlm_seq2seq.seq2seq_decoder import Seq2SeqDecoder
from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder

VOCABULARY = "vocabulary.txt"
SETTINGS = "generator.json"


class Seq2SeqGenerator:
    """Text in, text out: a trained seq2seq student with its tokenizer and
    decoding settings, saved to and loaded from a folder.

    The folder (what `kdplug run` writes under `runs/<name>/export/`) holds
    `student.keras`, `vocabulary.txt` (the teacher's word pieces) and
    `generator.json` (the tokenizer's options, the decoding strategy, beam
    width and length penalty). Output text is the word pieces joined back into words
    (`BertTokenizer.detokenize`): an uncased tokenizer gives lower-cased
    text, and punctuation comes out as separate tokens (`hello , world`).

    Args:
        model: a `Seq2SeqModel`.
        tokenizer: its keras-hub `BertTokenizer`.
        decoding: `greedy` or `beam`.
        beam_width: int.
        length_penalty: float. GNMT's alpha (beam search; 0: none).
        batch_size: int. Sources decoded at once.

    Examples:

    ```python
    generator = Seq2SeqGenerator.load("runs/cmlm_seq2seq/export")
    generator.generate(["the film is a mess but a fun one"])
    # ['the film is a mess , but a fun one .']
    ```
    """

    def __init__(self, model, tokenizer, decoding="greedy", beam_width=5,
                 batch_size=64, length_penalty=0.0):
        self.model = model
        self.tokenizer = tokenizer
        self.decoding = decoding
        self.beam_width = int(beam_width)
        self.length_penalty = float(length_penalty)
        self.batch_size = int(batch_size)
        self.encoder = Seq2SeqEncoder(
            tokenizer, model.max_source_length, model.max_target_length,
            model.max_source_length + model.max_target_length + 3)
        self.decoder = Seq2SeqDecoder(
            model, tokenizer.cls_token_id, tokenizer.sep_token_id,
            tokenizer.pad_token_id, strategy=decoding, beam_width=beam_width,
            length_penalty=length_penalty)

    def generate_ids(self, texts):
        """Word-piece ids generated for each source text."""
        return self.decoder.generate(self.encoder.source_arrays(list(texts)),
                                     self.batch_size)

    def generate(self, texts):
        """The generated text for each source text (a list of str)."""
        return self.encoder.detokenize(self.generate_ids(texts))

    def save(self, folder):
        """Writes the folder; returns its path."""
        storage.save_model(self.model, os.path.join(folder, STUDENT_FILE))
        storage.write_text(os.path.join(folder, VOCABULARY),
                           "\n".join(self.tokenizer.get_vocabulary()) + "\n")
        options = {k: v for k, v in self.tokenizer.get_config().items()
                   if k not in ("vocabulary", "dtype", "name", "trainable",
                                "config_file")}
        storage.write_json(os.path.join(folder, SETTINGS), {
            "tokenizer": options, "decoding": self.decoding,
            "beam_width": self.beam_width, "length_penalty": self.length_penalty})
        return folder

    @classmethod
    def load(cls, folder, **overrides):
        """The generator saved in `folder`; `overrides` replace saved
        settings (`decoding`, `beam_width`, `length_penalty`, `batch_size`);
        a folder saved before the length penalty existed decodes without."""
        import keras_hub

        import kdplug

        settings = storage.read_json(os.path.join(folder, SETTINGS))
        if settings is None:
            raise FileNotFoundError(f"{folder}: no {SETTINGS} (not a saved generator)")
        model = kdplug.load_model(os.path.join(folder, STUDENT_FILE))
        tokenizer = keras_hub.tokenizers.BertTokenizer(
            vocabulary=os.path.join(folder, VOCABULARY), **settings["tokenizer"])
        options = {"decoding": settings["decoding"],
                   "beam_width": settings["beam_width"],
                   "length_penalty": settings.get("length_penalty", 0.0), **overrides}
        return cls(model, tokenizer, **options)
