"""An independent numpy forward of Hugging Face's Qwen2ForCausalLM / LlamaForCausalLM.

Written from transformers' modeling_qwen2.py (RMSNorm, rotate_half RoPE, repeat_kv, causal
softmax attention, SiLU-gated MLP), reading the safetensors file byte by byte, so the interop
test compares the trainer with the reference formulas, not with itself.

usage: qwen2_numpy.py MODEL_DIR INPUT.jsonl  ->  {"logprobs": [...]} per line on stdout
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16}


def load_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    body = raw[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(body[start:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = arr.astype(np.float64)
    return out


def rms_norm(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def forward(cfg, w, ids):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or h // heads
    eps = cfg["rms_norm_eps"]
    theta = cfg.get("rope_theta", 10000.0)
    qwen = cfg["model_type"] == "qwen2"
    qkv_bias = qwen or cfg.get("attention_bias", False)
    t = len(ids)
    x = w["model.embed_tokens.weight"][ids]
    inv_freq = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    freqs = np.outer(np.arange(t, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    mask = np.triu(np.full((t, t), -np.inf), k=1)

    def lin(v, name, bias):
        y = v @ w[name + ".weight"].T
        return y + w[name + ".bias"] if bias else y

    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}"
        a = rms_norm(x, w[p + ".input_layernorm.weight"], eps)
        q = lin(a, p + ".self_attn.q_proj", qkv_bias).reshape(t, heads, hd).transpose(1, 0, 2)
        k = lin(a, p + ".self_attn.k_proj", qkv_bias).reshape(t, kv, hd).transpose(1, 0, 2)
        v = lin(a, p + ".self_attn.v_proj", qkv_bias).reshape(t, kv, hd).transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, heads // kv, axis=0)
        v = np.repeat(v, heads // kv, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(t, heads * hd)
        x = x + lin(o, p + ".self_attn.o_proj", (not qwen) and cfg.get("attention_bias", False))
        m = rms_norm(x, w[p + ".post_attention_layernorm.weight"], eps)
        mb = cfg.get("mlp_bias", False)
        g = lin(m, p + ".mlp.gate_proj", mb)
        x = x + lin((g / (1.0 + np.exp(-g))) * lin(m, p + ".mlp.up_proj", mb), p + ".mlp.down_proj", mb)
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    logits = x @ head.T
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def main():
    model, inputs = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = json.loads((model / "config.json").read_text())
    w = load_safetensors(model / "model.safetensors")
    for line in inputs.read_text().splitlines():
        row = json.loads(line)
        ids = row["prompt_ids"] + row["response_ids"]
        logp = forward(cfg, w, np.array(ids))
        p = len(row["prompt_ids"])
        out = [float(logp[p + j - 1, tok]) for j, tok in enumerate(row["response_ids"])]
        print(json.dumps({"logprobs": out}))


if __name__ == "__main__":
    main()
