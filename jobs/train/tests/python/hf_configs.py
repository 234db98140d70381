"""config.json files as transformers 5 writes them (its config classes' `save_pretrained`; no
torch needed), for the interop tests: one small model per family and RoPE type the trainer
implements.

usage:
  hf_configs.py write OUT_DIR VOCAB   ->  OUT_DIR/<variant>/config.json, the variants' names on stdout
  hf_configs.py read MODEL_DIR        ->  the RoPE parameters transformers resolves for a model, as JSON
  hf_configs.py shards MODEL_DIR      ->  the weight files as transformers' loader meets them: the
                                          index checked against the shards (safetensors' own reader),
                                          each tensor's dtype, as JSON
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


def shards(model):
    from safetensors import safe_open

    index_path = model / "model.safetensors.index.json"
    if index_path.exists():
        index = json.loads(index_path.read_text())
        weight_map = index["weight_map"]
        files = sorted(set(weight_map.values()))
    else:
        weight_map, files = None, ["model.safetensors"]
    dtypes, total, names = {}, 0, {}
    for f in files:
        with safe_open(model / f, framework="numpy") as st:
            assert st.metadata().get("format") == "pt", f"{f}: no format pt metadata"
            for name in st.keys():
                sl = st.get_slice(name)
                dtypes[sl.get_dtype()] = dtypes.get(sl.get_dtype(), 0) + 1
                size = {"BF16": 2, "F16": 2, "F32": 4}[sl.get_dtype()]
                for d in sl.get_shape():
                    size *= d
                total += size
                names[name] = f
    if weight_map is not None:
        assert weight_map == names, "the index does not map each tensor to the file holding it"
        assert index["metadata"]["total_size"] == total, "total_size is not the tensors' bytes"
    config = AutoConfig.from_pretrained(model)
    print(json.dumps({"files": files, "dtypes": dtypes, "dtype": str(config.dtype)}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "shards":
        shards(Path(sys.argv[2]))
    else:
        read(Path(sys.argv[2]))
