"""The wire keys of a sequence-to-sequence batch (`cmlm-seq2seq`).

`kdplug/keys.py` spells the keys of classification batches; a seq2seq
student reads four others (keras-hub's encoder-decoder names, as its BART
and T5 models use), and the teacher's top-K soft labels travel as two
`teacher/<tap>` features built with `kdplug.keys.teacher_key`.

- `ENCODER_TOKEN_IDS`, `ENCODER_PADDING_MASK`: the source word pieces
  (no special tokens) and their mask, `(batch, max_source_length)`.
- `DECODER_TOKEN_IDS`, `DECODER_PADDING_MASK`: `[CLS] target` (the teacher's
  [CLS] is the start token), `(batch, max_target_length + 1)`.
- Labels (`kdplug.keys.LABELS`): `target [SEP]` ([SEP] ends a sentence),
  `-1` on padding, same shape as the decoder inputs.
- `TOPK_IDS`, `TOPK_PROBS`: the teacher taps `(batch, max_target_length + 1,
  K)`: for label position `j`, the C-MLM teacher's `K` most probable word
  pieces (int32) and their probabilities (float16) with that position
  masked; zeros where the label is padding.

Examples:

>>> from kdplug import keys
>>> keys.teacher_key(TOPK_IDS)
'teacher/topk_ids'
"""

ENCODER_TOKEN_IDS = "encoder_token_ids"
ENCODER_PADDING_MASK = "encoder_padding_mask"
DECODER_TOKEN_IDS = "decoder_token_ids"
DECODER_PADDING_MASK = "decoder_padding_mask"
STUDENT_INPUTS = (ENCODER_TOKEN_IDS, ENCODER_PADDING_MASK, DECODER_TOKEN_IDS,
                  DECODER_PADDING_MASK)

TOPK_IDS = "topk_ids"
TOPK_PROBS = "topk_probs"
TOPK_TAPS = (TOPK_IDS, TOPK_PROBS)

# The C-MLM teacher's extra input: where its masked-LM head predicts; and
# the positions of a teacher input C-MLM may mask (the target and its
# final [SEP]), which only the masking reads.
MASK_POSITIONS = "mask_positions"
TARGET_MASK = "target_mask"
