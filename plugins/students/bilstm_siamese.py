from kdplug_plugins.students.bilstm import BiLstmStudent


class BiLstmSiameseStudent(BiLstmStudent):
    """Tang et al.'s sentence-pair student: one BiLSTM shared by both inputs.

    With `input: token_ids` it reads the teacher's WordPiece ids of each
    sentence on its own, `token_ids_a`/`padding_mask_a` and
    `token_ids_b`/`padding_mask_b`, which `kdplug.data.TextEncoder(...,
    pair_inputs=True)` adds to every pair batch next to the teacher's joint
    `[CLS] a [SEP] b [SEP]` `token_ids`
    (`kdplug.data.text_encoder.needs_pair_inputs(student)` is true); with
    `input: word_ids` it reads `word_ids`/`word_ids_b` from a
    `kdplug.data.WordEncoder`. The features `[h1, h2, h1*h2, |h1-h2|]` feed
    an MLP. Taps: `pooled` (those features) and `logits`. Its `Config` is
    `bilstm`'s.

    Examples:

    ```yaml
    student:
      kind: bilstm-siamese
      input: word_ids          # or token_ids (the teacher's WordPiece ids)
      vocabulary_size: 20000   # token_ids: leave out (the teacher's)
    ```
    """

    name = "bilstm-siamese"
    description = "shared BiLSTM over a sentence pair, [h1,h2,h1*h2,|h1-h2|] + MLP"
    siamese = True
    table_variants = ({},)
