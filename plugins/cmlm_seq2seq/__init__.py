"""`cmlm-seq2seq`: a conditional-MLM BERT teacher distilled into a
sequence-to-sequence student (Chen et al. 2020), and its students
`seq2seq-transformer` and `seq2seq-gru`."""

import kdplug
from kdplug_plugins.cmlm_seq2seq.cmlm_seq2seq_method import CmlmSeq2SeqMethod
from kdplug_plugins.cmlm_seq2seq.gru_student import Seq2SeqGruStudent
from kdplug_plugins.cmlm_seq2seq.transformer_student import Seq2SeqTransformerStudent


@kdplug.hookimpl
def kdplug_register_methods(register):
    register(CmlmSeq2SeqMethod)


@kdplug.hookimpl
def kdplug_register_students(register):
    register(Seq2SeqTransformerStudent)
    register(Seq2SeqGruStudent)
