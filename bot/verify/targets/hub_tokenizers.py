"""Tiny tokenizers written to a directory, for the offline stand-ins of hub repositories.

Each is built with the `tokenizers` library and saved as `tokenizer.json` beside a
`tokenizer_config.json` naming the transformers class the tests load it with. Vocabularies
are a few characters (or the 256 bytes) plus the special tokens, placed at the ids the tests'
text encoders expect: every id a prompt can produce stays below the vocabulary sizes the tests
configure (8 for Sana's Gemma, 1000 for CLIP and Llama), and the vision tokens of Qwen2-VL sit
at the ids its model looks for.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

_LETTERS = list(string.ascii_lowercase)
_SPACE = "\u2581"  # sentencepiece's word boundary


def write_config(directory: Path, tokenizer_class: str, **config: Any) -> None:
    write_json(directory / "tokenizer_config.json", {"tokenizer_class": tokenizer_class, **config})


def write_model_type(directory: Path, model_type: str) -> None:
    """A `config.json` naming only the model type: what `AutoTokenizer` reads to find a repository's kind."""
    write_json(directory / "config.json", {"model_type": model_type})


def write_json(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=1))


def unigram_tokenizer(
    directory: Path,
    pieces: list[str],
    unknown: str,
    tokenizer_class: str,
    *,
    prefix: str | None = None,
    suffix: str | None = None,
    **config: Any,
) -> None:
    """A sentencepiece-like (Unigram, `▁` for spaces) tokenizer: T5, UMT5, Gemma.

    `prefix`/`suffix`: the special token the tokenizer adds around every text (Gemma's `<bos>`,
    T5's `</s>`). Characters outside `pieces` become `unknown`.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.Unigram([(piece, -float(i)) for i, piece in enumerate(pieces)], pieces.index(unknown)))
    tokenizer.normalizer = normalizers.Replace(" ", _SPACE)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=_SPACE, prepend_scheme="first", split=False)
    tokenizer.decoder = decoders.Metaspace(replacement=_SPACE, prepend_scheme="first", split=False)
    added = [token for token in (prefix, suffix) if token]
    if added:
        single = " ".join([*(prefix,) * bool(prefix), "$A", *(suffix,) * bool(suffix)])
        tokenizer.post_processor = processors.TemplateProcessing(
            single=single, pair=f"{single} $B", special_tokens=[(token, pieces.index(token)) for token in added]
        )
    tokenizer.add_special_tokens([AddedToken(p, special=True, normalized=False) for p in pieces if p.startswith("<")])
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    write_config(directory, tokenizer_class, unk_token=unknown, **config)


def letter_pieces(*specials: str) -> list[str]:
    """The special tokens first (ids 0, 1, ...), then `▁`, the letters, and the letters that start a word."""
    return [*specials, _SPACE, *_LETTERS, *(f"{_SPACE}{letter}" for letter in _LETTERS)]


def byte_tokenizer(
    directory: Path, tokenizer_class: str, specials: dict[str, int], *, first_byte: int = 0, **config: Any
) -> None:
    """A byte-level BPE without merges (every byte one token, ids from `first_byte`), specials at given ids: Qwen2, Llama."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocabulary = {symbol: first_byte + index for index, symbol in enumerate(alphabet)}
    vocabulary.update(specials)
    tokenizer = Tokenizer(models.BPE(vocab=vocabulary, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in specials])
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    write_config(directory, tokenizer_class, **config)


def clip_tokenizer(directory: Path, max_length: int = 77) -> None:
    """CLIP's BPE over single characters: `<|startoftext|>` 0, `!` (padding) 1, `<|endoftext|>` 2, then letters."""
    from transformers import CLIPTokenizer

    tokens = ["<|startoftext|>", "!", "<|endoftext|>", *_LETTERS, *(f"{c}</w>" for c in _LETTERS)]
    directory.mkdir(parents=True, exist_ok=True)
    vocabulary, merges = directory / "vocab.json", directory / "merges.txt"
    vocabulary.write_text(json.dumps({token: index for index, token in enumerate(tokens)}))
    merges.write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(vocabulary), str(merges), pad_token="!", model_max_length=max_length)
    tokenizer.save_pretrained(str(directory))


def wordpiece_tokenizer(directory: Path, tokenizer_class: str = "BertTokenizer", max_length: int = 512) -> None:
    """BERT's WordPiece over single letters: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocabulary = {token: index for index, token in enumerate([*specials, *_LETTERS, *(f"##{c}" for c in _LETTERS)])}
    tokenizer = Tokenizer(models.WordPiece(vocabulary, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "vocab.txt").write_text("\n".join(vocabulary) + "\n")
    write_config(
        directory,
        tokenizer_class,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_length,
    )


def sentencepiece_model(path: Path) -> None:
    """A sentencepiece model trained on the alphabet (for tokenizers that read `tokenizer.model` themselves)."""
    import io

    import sentencepiece

    rotations = [" ".join(_LETTERS[i:] + _LETTERS[:i]) for i in range(len(_LETTERS))]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(rotations), model_writer=model, vocab_size=40, model_type="unigram",
        character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1, hard_vocab_limit=False,
        num_threads=1, minloglevel=2,
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.getvalue())
