from kdplug.data.examples import Examples
from kdplug.data.readers import read_rows
from kdplug.data.readers import read_splits
from kdplug.data.text_encoder import TextEncoder
from kdplug.data.word_encoder import WordEncoder
