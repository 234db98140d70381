"""config.json files as transformers 5 writes them (its config classes' `save_pretrained`; no
torch needed), for the interop tests: one small model per family and RoPE type the trainer
implements.

usage:
  hf_configs.py write OUT_DIR VOCAB   ->  OUT_DIR/<variant>/config.json, the variants' names on stdout
  hf_configs.py read MODEL_DIR        ->  the RoPE parameters transformers resolves for a model, as JSON
"""
import json
import sys
from pathlib import Path

from transformers import AutoConfig, LlamaConfig, Qwen2Config, Qwen3Config

SIZES = dict(
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
)

VARIANTS = {
    "qwen2-theta": (Qwen2Config, dict(rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, tie_word_embeddings=True)),
    "qwen2-yarn": (Qwen2Config, dict(rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 32})),
    "qwen2-sliding": (Qwen2Config, dict(use_sliding_window=True, sliding_window=8, max_window_layers=1)),
    "qwen3": (Qwen3Config, dict(head_dim=16, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    "qwen3-linear-bias": (Qwen3Config, dict(head_dim=8, attention_bias=True, rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0})),
    "llama3": (LlamaConfig, dict(rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    "llama-yarn-mscale": (LlamaConfig, dict(attention_bias=True, mlp_bias=True, rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "original_max_position_embeddings": 16, "mscale": 0.707, "mscale_all_dim": 1.0, "beta_fast": 16})),
}


def write(out, vocab):
    for name, (cls, extra) in VARIANTS.items():
        config = cls(vocab_size=vocab, eos_token_id=0, **SIZES, **extra)
        # What `PreTrainedModel.save_pretrained` adds to a config.
        config.architectures = [cls.__name__.replace("Config", "ForCausalLM")]
        config.save_pretrained(out / name)
        print(name)


def read(model):
    config = AutoConfig.from_pretrained(model)
    print(json.dumps(config.rope_parameters, sort_keys=True))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        read(Path(sys.argv[2]))
