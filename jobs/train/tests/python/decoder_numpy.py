"""An independent numpy forward of transformers' Qwen2ForCausalLM, Qwen3ForCausalLM and
LlamaForCausalLM, with every RoPE type the trainer implements.

Written from transformers 5's modeling_qwen2.py, modeling_qwen3.py, modeling_llama.py and
modeling_rope_utils.py (RMSNorm, rotate_half RoPE with the default, linear, llama3 and yarn
frequencies, repeat_kv, causal and sliding-window softmax attention, Qwen3's per-head q/k
norms, the SiLU-gated MLP), resolving config.json as transformers resolves it in both its 4.x
spelling (top-level rope_theta, rope_scaling) and its 5.x one (rope_parameters), and reading
the safetensors files byte by byte — so the interop test compares the trainer with the
reference formulas, not with itself. Frequencies and angles are computed in fp32, as
transformers computes them; everything else in fp64.

usage: decoder_numpy.py MODEL_DIR INPUT.jsonl  ->  {"logprobs": [...]} per line on stdout
"""
import json
import math
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
        if info["dtype"] == "BF16":
            # bf16 is the top half of an fp32.
            bits = np.frombuffer(body[start:end], dtype=np.uint16).astype(np.uint32) << 16
            arr = bits.view(np.float32).reshape(info["shape"])
        else:
            arr = np.frombuffer(body[start:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = arr.astype(np.float64)
    return out


def load_weights(model):
    index = model / "model.safetensors.index.json"
    if not index.exists():
        return load_safetensors(model / "model.safetensors")
    weights = {}
    for shard in sorted(set(json.loads(index.read_text())["weight_map"].values())):
        weights.update(load_safetensors(model / shard))
    return weights


def rms_norm(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope_parameters(cfg):
    """convert_rope_params_to_dict + standardize_rope_params of modeling_rope_utils.py."""
    params = dict(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})
    params.setdefault("rope_theta", cfg.get("rope_theta", 10000.0))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind in ("llama3", "yarn"):
        if "original_max_position_embeddings" in cfg:
            params["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        else:
            params.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return kind, params


def inv_freq_and_scale(cfg, dim):
    kind, p = rope_parameters(cfg)
    f32 = np.float32
    base = p["rope_theta"]
    pos_freqs = f32(base) ** (np.arange(0, dim, 2).astype(f32) / f32(dim))
    inv = f32(1.0) / pos_freqs
    if kind == "default":
        return inv, 1.0
    if kind == "linear":
        return inv / f32(p["factor"]), 1.0
    if kind == "llama3":
        factor, low, high = f32(p["factor"]), f32(p["low_freq_factor"]), f32(p["high_freq_factor"])
        old = f32(p["original_max_position_embeddings"])
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = f32(2 * math.pi) / inv
        scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (f32(1) - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, scaled).astype(f32), 1.0
    if kind == "yarn":
        original = p["original_max_position_embeddings"]
        factor = p.get("factor") or cfg["max_position_embeddings"] / original

        def mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        attention = p.get("attention_factor")
        if attention is None:
            if p.get("mscale") and p.get("mscale_all_dim"):
                attention = mscale(factor, p["mscale"]) / mscale(factor, p["mscale_all_dim"])
            else:
                attention = mscale(factor)
        beta_fast, beta_slow = p.get("beta_fast") or 32, p.get("beta_slow") or 1

        def correction_dim(rotations):
            return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if p.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2).astype(f32) - f32(low)) / f32(high - low), 0, 1)
        extrapolation = f32(1) - ramp.astype(f32)
        interpolated = f32(1) / (f32(factor) * pos_freqs)
        extrapolated = f32(1) / pos_freqs
        inv = interpolated * (f32(1) - extrapolation) + extrapolated * extrapolation
        return inv.astype(f32), attention
    raise SystemExit(f"rope_type {kind} is not in the reference")


def layer_windows(cfg, family):
    layers = cfg["num_hidden_layers"]
    if family == "llama":
        return [None] * layers
    window = cfg.get("sliding_window", 4096) if cfg.get("use_sliding_window") else None
    types = cfg.get("layer_types") or [
        "sliding_attention" if window is not None and i >= cfg.get("max_window_layers", 28)
        else "full_attention"
        for i in range(layers)
    ]
    return [window if t == "sliding_attention" else None for t in types]


def forward(cfg, w, ids):
    family = cfg["model_type"]
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or h // heads
    eps = cfg.get("rms_norm_eps", 1e-6)
    attention_bias = cfg.get("attention_bias", False)
    qkv_bias = family == "qwen2" or attention_bias
    o_bias = family != "qwen2" and attention_bias
    mlp_bias = family == "llama" and cfg.get("mlp_bias", False)
    t = len(ids)
    x = w["model.embed_tokens.weight"][ids]
    inv_freq, scale = inv_freq_and_scale(cfg, hd)
    freqs = (np.arange(t).astype(np.float32)[:, None] * inv_freq[None, :]).astype(np.float64)
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos = (np.cos(emb).astype(np.float32) * np.float32(scale)).astype(np.float64)
    sin = (np.sin(emb).astype(np.float32) * np.float32(scale)).astype(np.float64)
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]

    def lin(v, name, bias):
        y = v @ w[name + ".weight"].T
        return y + w[name + ".bias"] if bias else y

    for layer, window in enumerate(layer_windows(cfg, family)):
        p = f"model.layers.{layer}"
        a = rms_norm(x, w[p + ".input_layernorm.weight"], eps)
        q = lin(a, p + ".self_attn.q_proj", qkv_bias).reshape(t, heads, hd)
        k = lin(a, p + ".self_attn.k_proj", qkv_bias).reshape(t, kv, hd)
        v = lin(a, p + ".self_attn.v_proj", qkv_bias).reshape(t, kv, hd)
        if family == "qwen3":
            q = rms_norm(q, w[p + ".self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + ".self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, heads // kv, axis=0)
        v = np.repeat(v, heads // kv, axis=0)
        hidden = j > i
        if window is not None:
            hidden = hidden | (j <= i - window)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + np.where(hidden, -np.inf, 0.0)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(t, heads * hd)
        x = x + lin(o, p + ".self_attn.o_proj", o_bias)
        m = rms_norm(x, w[p + ".post_attention_layernorm.weight"], eps)
        g = lin(m, p + ".mlp.gate_proj", mlp_bias)
        x = x + lin((g / (1.0 + np.exp(-g))) * lin(m, p + ".mlp.up_proj", mlp_bias), p + ".mlp.down_proj", mlp_bias)
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    logits = x @ head.T
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def main():
    model, inputs = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = json.loads((model / "config.json").read_text())
    w = load_weights(model)
    for line in inputs.read_text().splitlines():
        row = json.loads(line)
        ids = row["prompt_ids"] + row["response_ids"]
        logp = forward(cfg, w, np.array(ids))
        p = len(row["prompt_ids"])
        out = [float(logp[p + j - 1, tok]) for j, tok in enumerate(row["response_ids"])]
        print(json.dumps({"logprobs": out}))


if __name__ == "__main__":
    main()
