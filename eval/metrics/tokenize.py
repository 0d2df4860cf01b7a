"""``nltk.word_tokenize`` without NLTK's downloadable punkt data.

``nltk.word_tokenize(text)`` splits ``text`` into sentences with the *trained* English Punkt
model (a data download), then runs the Treebank-style ``NLTKWordTokenizer`` on each sentence.
Downloads are impossible offline, so sentences are split here by an *untrained*
``PunktSentenceTokenizer`` (same algorithm, no learned abbreviation list) and the word step is
NLTK's own. The result equals ``nltk.word_tokenize``:

- always, for text that Punkt keeps as one sentence (the word step is identical code);
- for multi-sentence text whose sentence boundaries are ordinary (``"… York.  Please …"``);
- not where the trained model knows an abbreviation the untrained one does not: ``"dr. smith"``
  gives ``["dr", ".", "smith"]`` here and ``["dr.", "smith"]`` with the trained model. For the
  short answers BLEU-1 is computed on this is rare; ``tests/test_tokenize.py`` pins both cases.
"""

from __future__ import annotations

from functools import lru_cache

from nltk.tokenize import NLTKWordTokenizer
from nltk.tokenize.punkt import PunktSentenceTokenizer

_SENTENCES = PunktSentenceTokenizer()
_WORDS = NLTKWordTokenizer()


@lru_cache(maxsize=65536)
def _tokenize(text: str) -> tuple[str, ...]:
    return tuple(tok for sent in _SENTENCES.tokenize(text) for tok in _WORDS.tokenize(sent))


def word_tokenize(text: str) -> list[str]:
    """Tokens as ``nltk.word_tokenize(text)`` gives them (see the module docstring for limits)."""
    return list(_tokenize(text))
