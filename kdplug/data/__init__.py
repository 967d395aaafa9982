from kdplug.data.examples import Examples
from kdplug.data.readers import read_rows
from kdplug.data.readers import read_splits
from kdplug.data.text_encoder import TextEncoder
