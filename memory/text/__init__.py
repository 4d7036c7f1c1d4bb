"""Text as memory reads it: language, tokens, statements, and phrase matching.

`language_of` is the one language detector; `count_tokens` the one token estimator;
`memory.text.statements` splits what a user says into statements; `memory.text.phrases`
matches a user's phrase against memories.
"""

from memory.text.language import HAN, Lang, has_han, language_of
from memory.text.tokens import count_message_tokens, count_tokens

__all__ = ["HAN", "Lang", "count_message_tokens", "count_tokens", "has_han", "language_of"]
