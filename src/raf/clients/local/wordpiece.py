"""BERT's WordPiece tokenizer in plain Python, read from a `tokenizer.json` file.

Sentence models of the BERT family (all-MiniLM-L6-v2 among them) split text this way:
clean control characters, space out CJK ideographs, strip accents, lower-case, split on
whitespace and punctuation, then cut each word into the longest pieces of the vocabulary
(`##` marks a piece inside a word). Done here so the local embedder needs no tokenizer
package (and none of the hub clients such packages bring).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path

from raf.core.errors import ConfigurationError


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char).startswith("C")


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class WordPieceTokenizer:
    """Text to token ids the way BERT's uncased tokenizer does, with [CLS] and [SEP]."""

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        lowercase: bool = True,
        unknown: str = "[UNK]",
        prefix: str = "##",
        max_word_chars: int = 100,
    ) -> None:
        for token in (unknown, "[CLS]", "[SEP]"):
            if token not in vocab:
                raise ConfigurationError(f"WordPiece vocabulary has no {token} token")
        self.vocab = dict(vocab)
        self.lowercase = lowercase
        self.prefix = prefix
        self.max_word_chars = max_word_chars
        self.unknown_id = self.vocab[unknown]
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.pad_id = self.vocab.get("[PAD]", 0)

    @classmethod
    def from_file(cls, path: str | Path) -> WordPieceTokenizer:
        """Read a `tokenizer.json` whose model is WordPiece (BERT normalizer, uncased)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            model = data["model"]
            if model.get("type") != "WordPiece":
                raise ConfigurationError(
                    f"{path}: the tokenizer model is {model.get('type')!r}, not WordPiece"
                )
            normalizer = data.get("normalizer") or {}
            vocab = model["vocab"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigurationError(
                f"{path}: not a readable WordPiece tokenizer.json: {exc}"
            ) from None
        return cls(
            vocab,
            lowercase=bool(normalizer.get("lowercase", True)),
            unknown=str(model.get("unk_token", "[UNK]")),
            prefix=str(model.get("continuing_subword_prefix", "##")),
            max_word_chars=int(model.get("max_input_chars_per_word", 100)),
        )

    def encode(self, text: str, *, max_tokens: int = 256) -> list[int]:
        """Token ids of `text` between [CLS] and [SEP], cut to `max_tokens` in all."""
        if max_tokens < 2:
            raise ValueError("max_tokens must leave room for [CLS] and [SEP]")
        ids: list[int] = []
        room = max_tokens - 2
        for word in self._words(text):
            ids.extend(self._pieces(word))
            if len(ids) >= room:
                break
        return [self.cls_id, *ids[:room], self.sep_id]

    def encode_batch(self, texts: Sequence[str], *, max_tokens: int = 256) -> list[list[int]]:
        return [self.encode(text, max_tokens=max_tokens) for text in texts]

    def _normalise(self, text: str) -> str:
        out: list[str] = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            if _is_whitespace(char):
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {char} ")
            else:
                out.append(char)
        cleaned = "".join(out)
        if self.lowercase:  # the uncased models strip accents as they lower-case
            decomposed = unicodedata.normalize("NFD", cleaned)
            cleaned = "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()
        return cleaned

    def _words(self, text: str) -> list[str]:
        words: list[str] = []
        for token in self._normalise(text).split():
            start = 0
            for i, char in enumerate(token):
                if _is_punctuation(char):
                    if start < i:
                        words.append(token[start:i])
                    words.append(char)
                    start = i + 1
            if start < len(token):
                words.append(token[start:])
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > self.max_word_chars:
            return [self.unknown_id]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [self.unknown_id]
            pieces.append(found)
            start = end
        return pieces
