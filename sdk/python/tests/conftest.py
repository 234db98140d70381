"""Fixtures: a real `agentrl serve` on a free loopback port with two tenants, a tiny Qwen2
model the built-in model server loads (so the gateway answers without any external model),
and a reader of the Parquet turn table the server writes.

The binary comes from `AGENTRL_BIN`, else `$CARGO_TARGET_DIR/debug/agentrl`.
"""

from __future__ import annotations

import glob
import json
import os
import re
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow.parquet as pq
import pytest

import agentrl

KEY = "sdk-tests-key-acme-0001"
OTHER_KEY = "sdk-tests-key-other-0001"
MODEL = "pico"
AGENT = "sdk-agent"


def _binary() -> str:
    if os.environ.get("AGENTRL_BIN"):
        return os.environ["AGENTRL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(Path(__file__).parents[3] / "target"))
    path = Path(target) / "debug" / "agentrl"
    if not path.exists():
        raise RuntimeError(f"no agentrl binary at {path}: build it or set AGENTRL_BIN")
    return str(path)


@dataclass
class Server:
    """A running `agentrl serve`."""

    base_url: str
    api_key: str
    other_key: str
    data_dir: Path

    def turn_rows(self, keep: Callable[[dict[str, Any]], bool], *, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The turn rows `keep` takes, in turn order, once there are some (the ingest worker
        writes them asynchronously)."""
        deadline = time.monotonic() + timeout
        while True:
            rows = [r for r in self._all_rows() if keep(r)]
            if rows or time.monotonic() > deadline:
                return sorted(rows, key=lambda r: (r["trajectory_id"], r["turn_index"]))
            time.sleep(0.1)

    def _all_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        pattern = str(self.data_dir / "objects" / "trajectories" / "**" / "*.parquet")
        for path in glob.glob(pattern, recursive=True):
            try:
                rows += pq.read_table(path).to_pylist()
            except OSError:
                continue  # a part being written; read on the next poll
        return rows


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("agentrl-data")
    log = open(data / "serve.log", "w+")
    proc = subprocess.Popen(
        [_binary(), "serve", "--addr", "127.0.0.1:0", "--data-dir", str(data),
         "--api-key", f"acme={KEY}", "--api-key", f"other={OTHER_KEY}"],
        stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
    )
    try:
        base = _wait_listening(data / "serve.log", proc)
        yield Server(base, KEY, OTHER_KEY, data)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _wait_listening(log: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"agentrl listening on (http://\S+)", log.read_text())
        if found:
            return found.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"agentrl serve exited: {log.read_text()}")
        time.sleep(0.05)
    raise RuntimeError(f"agentrl serve did not start: {log.read_text()}")


@pytest.fixture
def client(server: Server) -> Iterator[agentrl.Client]:
    with agentrl.Client(server.base_url, server.api_key) as c:
        yield c


# --- the tiny model the built-in server answers with ---------------------------------------

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 :+=?\n{}\"<>/_,.[]"
EOS = "<|endoftext|>"
# Shows the tools' names, then `role: content` lines.
TEMPLATE = (
    "{% if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}"
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def _safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset, blobs = 0, []
    for name, t in tensors.items():
        data = np.ascontiguousarray(t, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def write_tiny_qwen2(dir: Path, seed: int = 5) -> None:
    """A random two-layer Qwen2 with a character-level tokenizer, in the Hugging Face layout."""
    dir.mkdir(parents=True, exist_ok=True)
    vocab = [EOS, *ALPHABET]
    hidden, inter, layers, heads, kv_heads = 64, 192, 2, 4, 2
    head_dim = hidden // heads
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.05, size=shape)

    t: dict[str, np.ndarray] = {"model.embed_tokens.weight": w(len(vocab), hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t |= {
            p + "self_attn.q_proj.weight": w(hidden, hidden), p + "self_attn.q_proj.bias": w(hidden),
            p + "self_attn.k_proj.weight": w(kv_heads * head_dim, hidden),
            p + "self_attn.k_proj.bias": w(kv_heads * head_dim),
            p + "self_attn.v_proj.weight": w(kv_heads * head_dim, hidden),
            p + "self_attn.v_proj.bias": w(kv_heads * head_dim),
            p + "self_attn.o_proj.weight": w(hidden, hidden),
            p + "mlp.gate_proj.weight": w(inter, hidden), p + "mlp.up_proj.weight": w(inter, hidden),
            p + "mlp.down_proj.weight": w(hidden, inter),
            p + "input_layernorm.weight": np.ones(hidden), p + "post_attention_layernorm.weight": np.ones(hidden),
        }
    t["model.norm.weight"] = np.ones(hidden)
    _safetensors(dir / "model.safetensors", t)
    (dir / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": hidden,
        "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "vocab_size": len(vocab), "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "max_position_embeddings": 4096, "tie_word_embeddings": True,
        "hidden_act": "silu", "use_sliding_window": False, "eos_token_id": 0, "torch_dtype": "float32",
    }))
    (dir / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": EOS, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": {"type": "Fuse"},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": {tok: i for i, tok in enumerate(vocab)}, "merges": []},
    }))
    (dir / "tokenizer_config.json").write_text(json.dumps({"eos_token": EOS, "chat_template": TEMPLATE}))


@pytest.fixture(scope="session")
def agent(server: Server) -> str:
    """An agent of tenant `acme` served by the built-in model server (model `pico`)."""
    write_tiny_qwen2(server.data_dir / "objects" / "models" / MODEL)
    with agentrl.Client(server.base_url, server.api_key) as c:
        c.agents.create({"agent_id": AGENT, "name": "SDK agent", "type": "general",
                         "model": {"provider": "self-hosted", "name": MODEL}, "base_model": MODEL})
    return AGENT


@pytest.fixture
def unique() -> str:
    """A fresh id for one test's sessions and conversations."""
    return uuid.uuid4().hex[:12]


