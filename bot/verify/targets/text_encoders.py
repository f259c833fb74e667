"""Tiny text encoders for pipeline targets, built from configurations: no hub, no downloads.

The CLIP tokenizer needs a vocabulary and BPE merges on disk; a character-level one is
written to a temporary directory: every lowercase letter, alone and word-final, plus the
special tokens at the ids the tiny CLIP text config expects (bos 0, pad 1, eos 2).
"""

from __future__ import annotations

import json
import string
import tempfile
from pathlib import Path
from typing import Any

_SPECIAL = ["<|startoftext|>", "!", "<|endoftext|>"]


def _write_clip_vocabulary(directory: Path) -> tuple[Path, Path]:
    tokens = [*_SPECIAL, *string.ascii_lowercase, *(f"{c}</w>" for c in string.ascii_lowercase)]
    vocabulary = directory / "vocab.json"
    vocabulary.write_text(json.dumps({token: index for index, token in enumerate(tokens)}))
    merges = directory / "merges.txt"
    merges.write_text("#version: 0.2\n")
    return vocabulary, merges


def tiny_clip(hidden_size: int = 32, max_length: int = 16) -> tuple[Any, Any]:
    """A 2-layer CLIP text encoder and a character-level CLIP tokenizer (padding to `max_length`)."""
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    with tempfile.TemporaryDirectory(prefix="codemod-clip-") as directory:
        vocabulary, merges = _write_clip_vocabulary(Path(directory))
        tokenizer = CLIPTokenizer(str(vocabulary), str(merges), pad_token="!", model_max_length=max_length)
    config = CLIPTextConfig(
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        hidden_size=hidden_size,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=len(tokenizer),
        max_position_embeddings=max_length,
        layer_norm_eps=1e-5,
    )
    return CLIPTextModel(config).eval(), tokenizer
