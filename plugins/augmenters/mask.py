import dataclasses

from kdplug.config import Probability
from kdplug.data import Augmenter
from kdplug.data import detokenize
from kdplug.data import is_word
from kdplug.data import tokenize


class MaskAugmenter(Augmenter):
    """Tang et al. (2019) masking: each word becomes `[MASK]` with `p_mask`.

    One uniform draw per word (punctuation is never masked), in order.
    The masked word teaches the student what each word contributes to the
    teacher's label.

    Config:
        p_mask: probability of masking each word.
        mask_token: the text put in the word's place.

    Examples:

    ```yaml
    augment:
      - {name: mask, n: 10, p_mask: 0.1}
    ```

    ```python
    MaskAugmenter().augment_text("a truly great film", rng)
    # -> "a truly [MASK] film"
    ```
    """

    name = "mask"
    description = "replace words with [MASK] (Tang et al. 2019)"

    @dataclasses.dataclass
    class Config:
        p_mask: Probability = 0.1
        mask_token: str = "[MASK]"

    def augment_text(self, text, rng):
        tokens, gaps = tokenize(text)
        for i, token in enumerate(tokens):
            if is_word(token) and rng.random() < self.config.p_mask:
                tokens[i] = self.config.mask_token
        return detokenize(tokens, gaps)
