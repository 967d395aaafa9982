from kdplug_plugins.bilstm.bilstm_method import BiLstmMethod


class BiLstmSiameseMethod(BiLstmMethod):
    """Tang et al. (2019) for sentence pairs: a siamese BiLSTM student.

    Same loss as `bilstm` (`alpha * hard CE + (1 - alpha) * logit MSE`); the
    default student is `bilstm-siamese`, which encodes the two sentences
    separately with one shared BiLSTM while the BERT teacher reads them as
    one `[CLS] a [SEP] b [SEP]` sequence. Set `data.text_pair_column`. The
    student reads either its own word ids (`student.input: word_ids`: a
    `kdplug.data.WordEncoder` adds `word_ids` / `word_padding_mask` (first
    sentence) and `word_ids_b` / `word_padding_mask_b` (second) to every
    batch) or the teacher's WordPiece ids of each sentence on its own
    (`input: token_ids`: `kdplug.data.TextEncoder(..., pair_inputs=True)`
    adds `token_ids_a` / `padding_mask_a` and `token_ids_b` /
    `padding_mask_b` next to the teacher's joint `token_ids`).

    Config:
        alpha: weight of the hard-label loss; the logit MSE gets `1 - alpha`.
        unlabelled: `teacher_argmax` (default) or `skip`, as for `bilstm`.

    Examples:

    ```yaml
    data:
      path: tfds:glue/mrpc
      text_column: sentence1
      text_pair_column: sentence2
    method:
      name: bilstm-siamese
      alpha: 0.5
    student:
      kind: bilstm-siamese
      input: word_ids
      vocabulary_size: 20000
    ```
    """

    name = "bilstm-siamese"
    description = "Tang et al. 2019 for sentence pairs: siamese BiLSTM student"
    default_student = {"kind": "bilstm-siamese"}
