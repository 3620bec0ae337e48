"""Questions asked in another language than the notes: which results are written in another language, and
what the index holds of such a question (the features of `calibration.cross_features`)."""

from __future__ import annotations

from collections.abc import Sequence

from mdrecall.retrieval.calibration import named_terms
from mdrecall.storage.base import IndexStore
from mdrecall.text.fts_query import fold_term, keyword_match, quote_term
from mdrecall.text.languages import (
    function_word,
    languages_differ,
    may_read_as_other_than_english,
    query_languages,
    text_languages,
    time_word,
)
from mdrecall.text.word_forms import word_forms

_TEXT_LANGUAGES: dict[str, frozenset[str]] = {}
_REMEMBERED = 100_000
# languages that write a name's genitive with a bare s ("Johns blogg", "Ginas butik"): the name is held when
# its form without that s is
GENITIVE_S = frozenset({"sv", "da", "nb"})


class Crossing:
    """A query in a known language (text/languages.py), for the hits written in another one, which the
    calibration's cross-language model scores (calibration.cross_features)."""

    def __init__(self, store: IndexStore, query: str, terms: Sequence[str], forms: bool) -> None:
        self.languages = query_languages(query)
        self._store, self._query, self._terms, self._forms = store, query, terms, forms
        self._held: bool | None = None
        self._german_missing: bool | None = None
        self._genitive_missing: bool | None = None

    def applies(self, row_id: str, text: str) -> bool:
        """The chunk is written in another language than the query. A chunk's languages are remembered by its
        id (which changes with its text) for the process: a search calibrates ~10 chunks, ~20 us each."""
        if not self.languages:
            return False
        if "en" in self.languages and not may_read_as_other_than_english(text):
            return False  # an English question over a note that cannot read as another language (most notes)
        languages = _TEXT_LANGUAGES.get(row_id)
        if languages is None:
            if len(_TEXT_LANGUAGES) >= _REMEMBERED:
                _TEXT_LANGUAGES.clear()
            languages = _TEXT_LANGUAGES[row_id] = text_languages(text)
        return languages_differ(self.languages, languages)

    def holds_keywords(self) -> bool:
        """Some indexed chunk holds one of the query's keywords (other forms counted as the OR query counts
        them; not the function words of the query's language: German "hat" is no English hat): asked once."""
        if self._held is None:
            words = [term for term in self._terms if not function_word(term, self.languages)]
            self._held = any(self._in_index(term) for term in words)
        return self._held

    def _in_index(self, term: str) -> bool:
        """Some indexed chunk holds the term or (with word forms) one of its inflections."""
        return bool(self._store.terms_present(self._units(term)))

    def _units(self, term: str) -> list[str]:
        """The FTS match units of a keyword and, with word forms, of its inflections ("laptop": "laptops")."""
        units = [keyword_match(term, self._forms)]
        if self._forms:
            units += [quote_term(form) for form in sorted(word_forms(fold_term(term)))]
        return units

    def name_missing(self, missing: bool) -> bool:
        """`missing` (a name of the query no chunk holds), except for German, which writes every noun with a
        capital letter: there, the query has capitalised words other than times ("Frühling", "Jahr") and the
        index holds none of them; and for Swedish, Danish and Norwegian, where a name missing as written may be
        held without its genitive s ("Johns" -> "John"). Each asked once."""
        if "de" not in self.languages:
            if not missing or not self.languages & GENITIVE_S:
                return missing
            if self._genitive_missing is None:
                self._genitive_missing = any(not self._holds_name(n) for n in named_terms(self._query, self._terms))
            return self._genitive_missing
        if self._german_missing is None:
            names = [n for n in named_terms(self._query, self._terms) if not time_word(n, self.languages)]
            self._german_missing = bool(names) and not any(self._in_index(n) for n in names)
        return self._german_missing

    def _holds_name(self, name: str) -> bool:
        """Some chunk holds the name, or (a genitive) the name without its final s."""
        if self._in_index(name):
            return True
        return len(name) > 3 and name[-1] in "sS" and self._in_index(name[:-1])
