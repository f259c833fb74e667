"""Stand-ins for the Hub repositories diffusers' fast tests load: what each writes, from configurations written here.

Each writer fills a directory the way the repository's snapshot would look, with what the tests
take from it: tokenizers (see `hub_tokenizers`), processors' configurations, and text or image
encoders saved from seed 0, their widths those the tests' other components are built for (each
writer says which test needs what). `offline_hub` lays them out as huggingface_hub's cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.verify.targets import hub_tokenizers as tokenizers

Writer = Callable[[Path], None]

# Qwen2-VL's image processor at its defaults (14-pixel patches, merged 2x2, 2 frames per temporal patch).
_QWEN_IMAGE_PROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2VLProcessor",
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
}
# Messages as ChatML, an image as the vision tokens around one `<|image_pad|>` (the processor expands it).
_QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_T5_PIECES = tokenizers.letter_pieces("<pad>", "</s>", "<unk>")
_QWEN_SPECIALS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<|vision_start|>": 151652,
    "<|vision_end|>": 151653,
    "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655,
    "<|video_pad|>": 151656,
}


def _save_model(directory: Path, model_class: str, config_class: str, **config: object) -> None:
    """transformers' `model_class(config_class(**config))` with weights drawn from seed 0, saved as safetensors."""
    import transformers

    model = _seeded(lambda: getattr(transformers, model_class)(getattr(transformers, config_class)(**config)))
    model.save_pretrained(str(directory), safe_serialization=True)


def _seeded(build: Callable[[], Any]) -> Any:
    import torch

    torch.manual_seed(0)
    return build()


def _t5_family(model_class: str, config_class: str) -> Writer:
    """The T5 tokenizer and a T5-shaped encoder 32 wide (the tests' transformers take `text_embed_dim=32`)."""

    def write(directory: Path) -> None:
        tokenizers.unigram_tokenizer(
            directory, _T5_PIECES, "<unk>", "T5Tokenizer", suffix="</s>", eos_token="</s>", pad_token="<pad>",
            model_max_length=512, extra_ids=0,
        )  # fmt: skip
        width = {"d_model": 32, "d_ff": 37, "d_kv": 8, "num_heads": 4, "num_layers": 2}
        _save_model(directory, model_class, config_class, vocab_size=1000, relative_attention_num_buckets=8, **width)

    return write


_t5 = _t5_family("T5EncoderModel", "T5Config")
_umt5 = _t5_family("UMT5EncoderModel", "UMT5Config")


def _clip(directory: Path) -> None:
    tokenizers.clip_tokenizer(directory)
    tokenizers.write_model_type(directory, "clip")


def _gemma(directory: Path) -> None:
    # Sana's test configures a Gemma2 with `vocab_size=8`: every id a prompt can produce is below 8.
    _gemma_tokenizer(directory, ["<pad>", "<eos>", "<bos>", "<unk>", "\u2581", "a", "e", "o"], "gemma")


def _gemma3_tokenizer(directory: Path) -> None:
    _gemma_tokenizer(directory, tokenizers.letter_pieces("<pad>", "<eos>", "<bos>", "<unk>"), "gemma3_text")


def _gemma_tokenizer(directory: Path, pieces: list[str], model_type: str) -> None:
    tokenizers.unigram_tokenizer(
        directory, pieces, "<unk>", "GemmaTokenizer", prefix="<bos>", bos_token="<bos>", eos_token="<eos>",
        pad_token="<pad>", model_max_length=2048,
    )  # fmt: skip
    tokenizers.write_model_type(directory, model_type)


def _gemma3(directory: Path) -> None:
    # LTX-2's tests size their connectors from the encoder's own config: any small Gemma 3 fits.
    _gemma3_tokenizer(directory)
    _save_model(
        directory, "Gemma3ForConditionalGeneration", "Gemma3Config",
        text_config={
            "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 1000, "sliding_window": 64,
        },
        vision_config={
            "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
            "image_size": 28, "patch_size": 14,
        },
        mm_tokens_per_image=4, image_token_index=999, boi_token_index=998, eoi_token_index=997,
    )  # fmt: skip


def _qwen_tokenizer(directory: Path) -> None:
    tokenizers.byte_tokenizer(
        directory, "Qwen2Tokenizer", _QWEN_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        model_max_length=32768, chat_template=_QWEN_CHAT_TEMPLATE,
    )  # fmt: skip
    tokenizers.write_model_type(directory, "qwen2")


def _qwen2_vl(directory: Path) -> None:
    _qwen_tokenizer(directory)  # the model below rewrites config.json as Qwen2-VL's
    tokenizers.write_json(directory / "chat_template.json", {"chat_template": _QWEN_CHAT_TEMPLATE})
    tokenizers.write_json(directory / "preprocessor_config.json", _QWEN_IMAGE_PROCESSOR)
    tokenizers.write_json(directory / "processor_config.json", {"processor_class": "Qwen2VLProcessor"})
    # EasyAnimate's test feeds its hidden states to a transformer with `text_embed_dim=16`.
    _save_model(
        directory, "Qwen2VLForConditionalGeneration", "Qwen2VLConfig",
        text_config={
            "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
            "num_key_value_heads": 2, "vocab_size": 151936, "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]},
        },
        vision_config={"depth": 2, "embed_dim": 16, "hidden_size": 16, "num_heads": 2, "mlp_ratio": 2},
        image_token_id=_QWEN_SPECIALS["<|image_pad|>"], video_token_id=_QWEN_SPECIALS["<|video_pad|>"],
        vision_start_token_id=_QWEN_SPECIALS["<|vision_start|>"], vision_end_token_id=_QWEN_SPECIALS["<|vision_end|>"],
    )  # fmt: skip


def _bert(directory: Path) -> None:
    tokenizers.wordpiece_tokenizer(directory)
    bert = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
    _save_model(directory, "BertModel", "BertConfig", vocab_size=1000, **bert)


def _llama_tokenizer(directory: Path) -> None:
    tokenizers.byte_tokenizer(
        directory, "LlamaTokenizer", {"<unk>": 0, "<s>": 1, "</s>": 2}, first_byte=3,
        bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="</s>", model_max_length=2048,
    )  # fmt: skip
    tokenizers.write_model_type(directory, "llama")


def _llama(directory: Path) -> None:
    # HiDream's test reads its hidden states into `caption_channels=[32, 16]` (T5, then this).
    _llama_tokenizer(directory)
    _save_model(
        directory, "LlamaForCausalLM", "LlamaConfig", hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
    )  # fmt: skip


def _glm4_tokenizer(directory: Path) -> None:
    # CogView4's test loads it with trust_remote_code; a plain fast tokenizer with GLM-4's padding token serves.
    tokenizers.byte_tokenizer(
        directory, "PreTrainedTokenizerFast", {"<|endoftext|>": 151329}, pad_token="<|endoftext|>",
        eos_token="<|endoftext|>", model_max_length=8192,
    )  # fmt: skip
    tokenizers.write_model_type(directory, "glm")


def _siglip(directory: Path) -> None:
    # Framepack's test projects the image embeddings with `image_proj_dim=32`.
    tokenizers.write_json(
        directory / "preprocessor_config.json",
        {"image_processor_type": "SiglipImageProcessor", "size": {"height": 30, "width": 30}},
    )
    _save_model(
        directory, "SiglipVisionModel", "SiglipVisionConfig", hidden_size=32, intermediate_size=37,
        num_hidden_layers=2, num_attention_heads=4, image_size=30, patch_size=2,
    )  # fmt: skip


def _dpt(directory: Path) -> None:
    # Stable Diffusion 2's depth test takes the image processor only; its depth model, built in the test, sees 32x32.
    tokenizers.write_json(
        directory / "preprocessor_config.json",
        {"image_processor_type": "DPTImageProcessor", "size": {"height": 32, "width": 32}},
    )
    tokenizers.write_model_type(directory, "dpt")


def _chatglm3(directory: Path) -> None:
    # Kolors' tests: diffusers' own ChatGLM model and tokenizer (a sentencepiece model, trained here on the
    # alphabet); its UNet takes `cross_attention_dim=8`, the encoder's width.
    from diffusers.pipelines.kolors.text_encoder import ChatGLMConfig, ChatGLMModel

    tokenizers.sentencepiece_model(directory / "tokenizer.model")
    tokenizers.write_config(directory, "ChatGLMTokenizer", padding_side="left", model_max_length=256)
    config = ChatGLMConfig(
        num_layers=2, padded_vocab_size=100, hidden_size=8, ffn_hidden_size=16, kv_channels=4, num_attention_heads=2,
        seq_length=256, original_rope=True,
    )  # fmt: skip
    _seeded(lambda: ChatGLMModel(config)).save_pretrained(str(directory), safe_serialization=True)


def _consistency_unets(directory: Path) -> None:
    # The consistency-model pipeline test loads a UNet from each subfolder, the second class-conditional.
    from diffusers import UNet2DModel

    unet = {
        "sample_size": 8, "in_channels": 3, "out_channels": 3, "layers_per_block": 1, "block_out_channels": (4, 8),
        "norm_num_groups": 4, "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
        "up_block_types": ("AttnUpBlock2D", "UpBlock2D"),
    }  # fmt: skip
    _seeded(lambda: UNet2DModel(**unet)).save_pretrained(str(directory / "test_unet"))
    _seeded(lambda: UNet2DModel(**unet, num_class_embeds=10)).save_pretrained(str(directory / "test_unet_class_cond"))


def _roberta(directory: Path) -> None:
    tokenizers.byte_tokenizer(
        directory, "RobertaTokenizer", {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4}, first_byte=5,
        bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
        model_max_length=512,
    )  # fmt: skip
    tokenizers.write_model_type(directory, "roberta")


def _clap(directory: Path) -> None:
    # AudioLDM 2's test takes only the feature extractor (CLAP's defaults) from this repository.
    tokenizers.write_json(directory / "preprocessor_config.json", {"feature_extractor_type": "ClapFeatureExtractor"})
    tokenizers.write_model_type(directory, "clap")


def _hunyuan_video_llama(directory: Path) -> None:
    # The test's LlamaConfig: bos 0, pad 1, eos 2, vocab 1000; bytes follow the specials.
    tokenizers.byte_tokenizer(
        directory / "tokenizer", "LlamaTokenizer", {"<s>": 0, "<pad>": 1, "</s>": 2}, first_byte=3,
        bos_token="<s>", eos_token="</s>", pad_token="<pad>", model_max_length=4096,
    )  # fmt: skip
    tokenizers.write_model_type(directory / "tokenizer", "llama")


STAND_INS: dict[str, Writer] = {
    "hf-internal-testing/tiny-random-clip": _clip,
    "hf-internal-testing/tiny-random-t5": _t5,
    "hf-internal-testing/tiny-random-T5Model": _t5,
    "hf-internal-testing/tiny-random-T5ForConditionalGeneration": _t5,
    "hf-internal-testing/tiny-random-umt5": _umt5,
    "hf-internal-testing/dummy-gemma": _gemma,
    "hf-internal-testing/tiny-gemma3": _gemma3,
    "hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration": _qwen2_vl,
    "hf-internal-testing/tiny-random-BertModel": _bert,
    "hf-internal-testing/tiny-random-roberta": _roberta,
    "hf-internal-testing/tiny-random-chatglm3-6b": _chatglm3,
    "diffusers/consistency-models-test": _consistency_unets,
    "hf-internal-testing/tiny-random-LlamaForCausalLM": _llama,
    "hf-internal-testing/llama-tokenizer": _llama_tokenizer,
    "hf-internal-testing/tiny-random-Gemma3ForCausalLM": _gemma3_tokenizer,
    "hf-internal-testing/tiny-random-SiglipVisionModel": _siglip,
    "hf-internal-testing/tiny-random-DPTForDepthEstimation": _dpt,
    "Qwen/Qwen3-Embedding-0.6B": _qwen_tokenizer,
    "THUDM/glm-4-9b-chat": _glm4_tokenizer,
    "hf-internal-testing/tiny-random-ClapModel": _clap,
    "finetrainers/dummy-hunyaunvideo": _hunyuan_video_llama,
}
"""Hub id -> what writes its stand-in repository (files at the snapshot's root)."""
