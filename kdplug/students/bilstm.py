from kdplug.models import BiLstmClassifier
from kdplug.models import BiLstmSiameseClassifier
from kdplug.students.utils import force_trainable


def bilstm(vocabulary_size, num_classes, embedding_dim=128, lstm_units=128,
           hidden_dim=256, dropout=0.1, input="token_ids", siamese=False,
           pooling="final_states"):
    """A randomly initialised BiLSTM student (Tang et al., 2019).

    Args:
        vocabulary_size: int. The teacher's WordPiece vocabulary size for
            `input="token_ids"`, the `WordTokenizer`'s for `"word_ids"`.
        num_classes: int.
        embedding_dim: int.
        lstm_units: int. Units per direction.
        hidden_dim: int. ReLU layer of the MLP head.
        dropout: float.
        input: `"token_ids"` or `"word_ids"`.
        siamese: bool. Build the sentence-pair `BiLstmSiameseClassifier`.
        pooling: `"final_states"` (Tang et al.: the forward LSTM's last
            state and the backward LSTM's first, concatenated) or `"max"`
            (max-pooling over time, kdplug 0.1's student).

    Examples:

    ```python
    student = bilstm(30522, num_classes=2)
    pair_student = bilstm(30522, num_classes=3, siamese=True)
    ```
    """
    cls = BiLstmSiameseClassifier if siamese else BiLstmClassifier
    student = cls(
        vocabulary_size=vocabulary_size,
        num_classes=num_classes,
        embedding_dim=embedding_dim,
        lstm_units=lstm_units,
        hidden_dim=hidden_dim,
        dropout=dropout,
        input=input,
        pooling=pooling,
    )
    return force_trainable(student)
