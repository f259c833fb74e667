"""The offline Hub: stand-ins load the way diffusers' tests load the real repositories, anything else fails at once.

One subprocess switches the Hub off (it changes its process's environment for good) and reports
what each load gave; the tests read that report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROBE = r"""
import json, time
from bot.verify.targets.offline_hub import go_offline

go_offline()
import transformers

def ids(tokenizer, text="a red cube, 4k!"):
    return tokenizer(text, padding="max_length", max_length=24, truncation=True).input_ids

report = {}
clip = transformers.CLIPTokenizer.from_pretrained("hf-internal-testing/tiny-random-clip")
report["clip"] = {"max_length": clip.model_max_length, "ids": ids(clip)}
t5 = transformers.AutoTokenizer.from_pretrained("hf-internal-testing/tiny-random-t5")
config = transformers.AutoConfig.from_pretrained("hf-internal-testing/tiny-random-t5")
encoder = transformers.T5EncoderModel.from_pretrained("hf-internal-testing/tiny-random-t5")
report["t5"] = {"ids": ids(t5), "d_model": config.d_model, "encoder_width": encoder.config.d_model}
gemma = transformers.GemmaTokenizer.from_pretrained("hf-internal-testing/dummy-gemma")
report["gemma"] = {"ids": ids(gemma)}
qwen = transformers.Qwen2Tokenizer.from_pretrained("hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration")
report["qwen"] = {"image_pad": qwen.convert_tokens_to_ids("<|image_pad|>"), "ids": ids(qwen)}
bert = transformers.BertModel.from_pretrained("hf-internal-testing/tiny-random-BertModel")
report["bert"] = {"hidden_size": bert.config.hidden_size}
llama = transformers.LlamaTokenizer.from_pretrained("finetrainers/dummy-hunyaunvideo", subfolder="tokenizer")
report["llama"] = {"ids": ids(llama)}
started = time.monotonic()
try:
    transformers.AutoConfig.from_pretrained("someone/not-a-stand-in")
except OSError as error:
    report["unknown"] = {"error": str(error).splitlines()[0], "seconds": time.monotonic() - started}
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def loads() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=environment, timeout=600, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_clip_tokenizer_pads_to_clips_77_tokens_within_the_tests_1000_ids(loads: dict[str, Any]) -> None:
    assert loads["clip"]["max_length"] == 77
    assert max(loads["clip"]["ids"]) < 1000 and loads["clip"]["ids"][0] == 0


def test_the_t5_stand_in_is_32_wide_like_the_tests_text_encoders_expect(loads: dict[str, Any]) -> None:
    assert (loads["t5"]["d_model"], loads["t5"]["encoder_width"]) == (32, 32)
    assert loads["t5"]["ids"][-1] == 0 and 1 in loads["t5"]["ids"]  # padded, and closed by </s>


def test_gemma_ids_stay_below_the_8_the_sana_test_configures(loads: dict[str, Any]) -> None:
    assert max(loads["gemma"]["ids"]) < 8


def test_qwen_vision_tokens_sit_at_the_ids_qwen2_vl_looks_for(loads: dict[str, Any]) -> None:
    assert loads["qwen"]["image_pad"] == 151655
    assert max(i for i in loads["qwen"]["ids"] if i < 151643) < 300


def test_bert_and_llama_stand_ins_fit_their_tests(loads: dict[str, Any]) -> None:
    assert loads["bert"]["hidden_size"] == 32
    assert max(loads["llama"]["ids"]) < 1000


def test_a_repository_without_a_stand_in_fails_at_once(loads: dict[str, Any]) -> None:
    assert "huggingface.co" in loads["unknown"]["error"]
    assert loads["unknown"]["seconds"] < 5


def test_switching_the_hub_off_without_stand_ins_builds_none(tmp_path: Path) -> None:
    # Workers with built-in targets only: they load nothing from the Hub, so nothing is built.
    probe = "from bot.verify.targets.offline_hub import go_offline; print(go_offline(stand_ins=False))"
    environment = {**os.environ, "CODEMOD_HUB_CACHE": str(tmp_path)}
    finished = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True)
    cache = Path(finished.stdout.strip())
    assert (finished.returncode, cache.parent, list(tmp_path.rglob("*"))) == (0, tmp_path, [])
