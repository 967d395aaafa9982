from kdplug_plugins.students.bilstm import BiLstmStudent


class BiLstmSiameseStudent(BiLstmStudent):
    """Tang et al.'s sentence-pair student: one BiLSTM shared by both inputs.

    Reads `token_ids`/`padding_mask` and `token_ids_b`/`padding_mask_b`
    (each sentence tokenised on its own), or `word_ids`/`word_ids_b`; the
    features `[h1, h2, h1*h2, |h1-h2|]` feed an MLP. Taps: `pooled` (those
    features) and `logits`. Its `Config` is `bilstm`'s.

    Examples:

    ```yaml
    student:
      kind: bilstm-siamese
      input: word_ids
      vocabulary_size: 20000
    ```
    """

    name = "bilstm-siamese"
    description = "shared BiLSTM over a sentence pair, [h1,h2,h1*h2,|h1-h2|] + MLP"
    siamese = True
