"""Where the offline tokenizer equals ``nltk.word_tokenize``, and the one place it does not."""

import nltk
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.metrics.tokenize import word_tokenize


def test_matches_nltks_documented_example():
    # the word_tokenize example of NLTK's documentation, with its documented output
    text = "Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them.\n\nThanks."
    assert word_tokenize(text) == ["Good", "muffins", "cost", "$", "3.88", "in", "New", "York", ".",
                                   "Please", "buy", "me", "two", "of", "them", ".", "Thanks", "."]


def test_matches_nltk_on_quotes_contractions_and_final_period():
    assert word_tokenize("he said \"i can't go.\" then left.") == [
        "he", "said", "``", "i", "ca", "n't", "go", ".", "''", "then", "left", "."]


# lower-case words, digits, spaces and inner punctuation: texts Punkt keeps as one sentence
single_sentence = st.text(alphabet="abcdefghij 0123456789,;:'\"-()$%&", min_size=0, max_size=60)


@settings(max_examples=300, deadline=None)
@given(single_sentence)
def test_equals_nltk_word_step_on_single_sentences(text):
    assert word_tokenize(text) == nltk.word_tokenize(text, preserve_line=True)


def test_known_difference_untrained_punkt_splits_after_abbreviations():
    # nltk.word_tokenize with the trained English model gives ["dr.", "smith", "arrived", "."];
    # without that model "dr." ends a sentence, so its period becomes a token of its own.
    assert word_tokenize("dr. smith arrived.") == ["dr", ".", "smith", "arrived", "."]
