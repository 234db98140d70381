"""The trainer on a GPU, against PyTorch + transformers on the same device, in one run.

Runs on a bare GPU machine with CUDA, PyTorch and transformers (no Rust, no network), from a
`train` binary built elsewhere with `--features cuda` (infra/gpu/check.sh says where). Every
model is made here from a transformers config (`from_config`, random weights): no download.
Stages, each writing its figures to OUT/gpu-figures.json as soon as it ends, so a run cut off
still reports:

  logprobs  every family and RoPE type the loader takes (tests/python/hf_configs.py), tiny:
            `train logprobs` against transformers on the GPU, fp32 (eager attention) and bf16
  step      Qwen2.5-0.5B and -1.5B shapes, 8 x 1,024 tokens, full fine-tuning and LoRA r = 16:
            `train bench` against PyTorch (bf16 autocast over fp32 weights, SDPA, fused AdamW),
            tokens/s and peak GPU memory (nvidia-smi, the same way for both), the plan's peak
  grpo      10 online GRPO steps, LoRA r = 16 on the 0.5B shape, a 151,936-token vocabulary,
            prompts whose regex reward is a coin flip under a random policy: it runs, the plan
            against the measured peak, sampled tokens/s against transformers `generate`
            (static cache, the same batch and length)

usage: check.py --train PATH --out DIR [--stage logprobs|step|grpo]... [--device cuda|cpu] [--small]
(`--device cpu --small` runs the whole script at toy sizes on a CPU: a smoke test of the script.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, Qwen2Config

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "jobs/train/tests/python"))
import hf_configs  # noqa: E402  (the loader's own variants)

VOCAB = 151_936


class Peak:
    """The most GPU memory a process holds while it runs, from nvidia-smi every 20 ms."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = str(pid), 0.0, False
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.stop:
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                    capture_output=True, text=True, timeout=5).stdout
            except (OSError, subprocess.TimeoutExpired):
                return
            for line in out.splitlines():
                pid, _, mib = line.partition(",")
                if pid.strip() == self.pid:
                    self.peak = max(self.peak, float(mib))
            time.sleep(0.02)

    def end(self):
        self.stop = True
        self.thread.join()
        return self.peak or None


def run(cmd, **kw):
    """Runs a command, returns (stdout, peak GPU MiB); its stderr goes to ours."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **kw)
    peak = Peak(proc.pid)
    out, _ = proc.communicate()
    mib = peak.end()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} {cmd[1]} exited {proc.returncode}")
    return out, mib


def randomize(model, seed=0):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.7, 1.3)
            elif name.endswith(".bias"):
                p.uniform_(-0.2, 0.2)
            else:
                p.uniform_(-0.3, 0.3)


def word_tokenizer(vocab):
    """A whitespace word-level tokenizer of `vocab` tokens x0…, the last `<|endoftext|>`."""
    words = {f"x{i}": i for i in range(vocab - 1)}
    words["<|endoftext|>"] = vocab - 1
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab - 1, "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": words, "unk_token": "<|endoftext|>"},
    }


def save(model, path, vocab):
    model.save_pretrained(path, safe_serialization=True)
    (path / "tokenizer.json").write_text(json.dumps(word_tokenizer(vocab)))


def stage_logprobs(a, work, figures):
    vocab = 64
    rows = []
    for i, (name, (cls, extra)) in enumerate(hf_configs.VARIANTS.items()):
        config = cls(vocab_size=vocab, eos_token_id=vocab - 1, **hf_configs.SIZES, **extra)
        config.architectures = [cls.__name__.replace("Config", "ForCausalLM")]
        config._attn_implementation = "eager"
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        randomize(model, i)
        path = work / f"lp-{name}"
        save(model, path, vocab)
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, vocab - 1, (4, 64), generator=g)
        lines = [json.dumps({"prompt_ids": r[:8].tolist(), "response_ids": r[8:].tolist()}) for r in ids]
        (path / "in.jsonl").write_text("\n".join(lines) + "\n")
        row = {"variant": name}
        for dtype, torch_dtype, attn in [("fp32", torch.float32, "eager"), ("bf16", torch.bfloat16, "sdpa")]:
            ref = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, attn_implementation=attn).to(a.device)
            with torch.no_grad():
                logp = torch.log_softmax(ref(ids.to(a.device)).logits.float(), -1)
            want = logp[:, 7:-1].gather(-1, ids[:, 8:, None].to(a.device))[..., 0].cpu()
            out, _ = run([a.train, "logprobs", "--model", str(path), "--input", str(path / "in.jsonl"), "--dtype", dtype])
            got = torch.tensor([json.loads(l)["logprobs"] for l in out.splitlines()])
            row[f"{dtype}_max_abs_error"] = float((got - want).abs().max())
        rows.append(row)
    worst = {d: max(r[f"{d}_max_abs_error"] for r in rows) for d in ("fp32", "bf16")}
    figures["logprobs"] = {
        "variants": rows, "worst": worst,
        # bf16 rounds every matmul's output to 8 significant bits on both sides, differently
        # (their fused kernels, our composed ops); with logits of magnitude up to ~15 here the
        # log-probabilities can move by a few tenths of a nat.
        "goals": {"fp32": 1e-4, "bf16": 0.5},
        "met": worst["fp32"] <= 1e-4 and worst["bf16"] <= 0.5,
    }


def qwen25(size, small):
    if small:
        return Qwen2Config(vocab_size=1024, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                           max_position_embeddings=4096, rope_theta=1e6)
    shapes = {"0.5B": (896, 4864, 24, 14, 2, True), "1.5B": (1536, 8960, 28, 12, 2, True)}
    h, i, layers, heads, kv, tied = shapes[size]
    return Qwen2Config(vocab_size=VOCAB, hidden_size=h, intermediate_size=i, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=kv, tie_word_embeddings=tied,
                       max_position_embeddings=32768, rope_theta=1e6)


def make_shape(work, size, small):
    path = work / f"qwen25-{size}"
    if not (path / "config.json").exists():
        config = qwen25(size, small)
        config.architectures = ["Qwen2ForCausalLM"]
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
        save(model, path, config.vocab_size)
    return path


TORCH_STEP = r"""
import json, sys, time, torch
from transformers import AutoModelForCausalLM
path, batch, seq, rank, device = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa").to(device)
if rank:
    class Lora(torch.nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base = base
            self.a = torch.nn.Parameter(torch.randn(rank, base.in_features, device=device) / base.in_features ** 0.5)
            self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank, device=device))
        def forward(self, x):
            return self.base(x) + (x @ self.a.t() @ self.b.t()) * 2.0
    for p in model.parameters():
        p.requires_grad_(False)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    for name, module in list(model.named_modules()):
        for t in targets:
            if hasattr(module, t):
                setattr(module, t, Lora(getattr(module, t)))
params = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.AdamW(params, lr=1e-4, fused=device == "cuda")
ids = torch.randint(0, model.config.vocab_size - 1, (batch, seq), device=device)
times = []
for i in range(5):
    if device == "cuda": torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.autocast(device, dtype=torch.bfloat16):
        loss = model(ids, labels=ids).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step(); opt.zero_grad(set_to_none=True)
    if device == "cuda": torch.cuda.synchronize()
    if i >= 2: times.append(time.perf_counter() - t0)
step = sorted(times)[len(times) // 2]
print(json.dumps({"step_ms": step * 1e3, "tokens_per_s": batch * seq / step}))
"""


def stage_step(a, work, figures):
    batch, seq = (2, 64) if a.small else (8, 1024)
    rows = []
    for size in ["0.5B", "1.5B"]:
        path = make_shape(work, size, a.small)
        for rank in [0, 16]:
            config = work / f"step-{size}-{rank}.json"
            config.write_text(json.dumps({"dtype": "bf16" if a.device == "cuda" else "fp32",
                                          "gradient_checkpointing": False}))
            cmd = [a.train, "bench", "--model", str(path), "--batch", str(batch), "--seq", str(seq),
                   "--iterations", "3", "--config", str(config)]
            if rank:
                cmd += ["--lora", str(rank)]
            out, ours_mib = run(cmd)
            ours = json.loads(out)
            out, torch_mib = run([sys.executable, "-c", TORCH_STEP, str(path), str(batch), str(seq), str(rank), a.device])
            theirs = json.loads(out)
            rows.append({
                "shape": size, "mode": f"LoRA r={rank}" if rank else "full",
                "ours_tokens_per_s": ours["tokens_per_s"], "pytorch_tokens_per_s": theirs["tokens_per_s"],
                "speed_ratio": ours["tokens_per_s"] / theirs["tokens_per_s"],
                "ours_peak_gpu_mb": ours_mib, "pytorch_peak_gpu_mb": torch_mib,
                "plan_peak_gb": ours["plan"]["peak_gb"],
                "plan_over_measured": ours["plan"]["peak_gb"] * 1024 / ours_mib if ours_mib else None,
            })
            figures["step"] = {"rows": rows, "batch": batch, "seq": seq}
            write(a, figures)
    figures["step"]["goals_met"] = {
        "speed >= 1.0x": all(r["speed_ratio"] >= 1.0 for r in rows),
        "memory <= PyTorch": all(r["ours_peak_gpu_mb"] and r["pytorch_peak_gpu_mb"] and
                                 r["ours_peak_gpu_mb"] <= r["pytorch_peak_gpu_mb"] for r in rows),
        "plan within 25%": all(r["plan_over_measured"] and abs(r["plan_over_measured"] - 1) <= 0.25 for r in rows),
    }


GENERATE = r"""
import json, sys, time, torch
from transformers import AutoModelForCausalLM
path, batch, prompt, new, device = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if device == "cuda" else torch.float32).to(device)
ids = torch.randint(0, model.config.vocab_size - 1, (batch, prompt), device=device)
kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=True, temperature=1.0, top_k=0,
          cache_implementation="static", pad_token_id=model.config.vocab_size - 1)
model.generate(ids, **kw)
if device == "cuda": torch.cuda.synchronize()
t0 = time.perf_counter()
model.generate(ids, **kw)
if device == "cuda": torch.cuda.synchronize()
print(json.dumps({"tokens_per_s": batch * new / (time.perf_counter() - t0)}))
"""


def stage_grpo(a, work, figures):
    path = make_shape(work, "0.5B", a.small)
    vocab = AutoConfig.from_pretrained(path).vocab_size
    g = torch.Generator().manual_seed(7)
    prompts = work / "prompts.jsonl"
    with prompts.open("w") as f:
        for _ in range(64):
            words = " ".join(f"x{int(i)}" for i in torch.randint(0, vocab - 1, (12,), generator=g))
            # A full match of the completion: its first word starts with x0–x4 about half the
            # time under any policy that does not know better, so every group carries signal.
            f.write(json.dumps({"prompt": words, "answer": "(?s)x[0-4].*", "match": "regex"}) + "\n")
    new = 8 if a.small else 32
    config = work / "grpo.json"
    config.write_text(json.dumps({
        "seed": 1, "checkpoint_every": 0, "eval_every": 0, "max_seq_len": 256,
        "dtype": "bf16" if a.device == "cuda" else "fp32",
        "lora": {"rank": 16, "alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]},
        "sft": {"epochs": 0},
        "grpo": {"learning_rate": 1e-4, "group_size": 8, "batch_prompts": 8, "max_new_tokens": new,
                 "temperature": 1.0, "dynamic_sampling": False},
        "eval": {"holdout_fraction": 0.1, "max_prompts": 8},
    }))
    plan = json.loads(run([a.train, "plan", "--model", str(path), "--config", str(config), "--mode", "prompts",
                           "--device", a.device])[0])
    out_dir = work / "grpo-out"
    t0 = time.perf_counter()
    out, mib = run([a.train, "run", "--model", str(path), "--prompts", str(prompts), "--out", str(out_dir),
                    "--config", str(config), "--steps", "10"])
    wall = time.perf_counter() - t0
    report = json.loads(out)
    steps = [json.loads(l) for l in (out_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in steps if m["phase"] == "grpo" and "eval_success" not in m]
    sampled = sorted(m["sample_tokens_per_s"] for m in steps)
    out, _ = run([sys.executable, "-c", GENERATE, str(path), "64", "14", str(new), a.device])
    hf = json.loads(out)["tokens_per_s"]
    figures["grpo"] = {
        "steps": report["grpo_steps"], "wall_s": wall,
        "success_by_step": [m["success"] for m in steps],
        "peak_gpu_mb": mib, "plan_peak_gb": plan["peak_gb"], "plan_parts": plan["parts"],
        "plan_over_measured": plan["peak_gb"] * 1024 / mib if mib else None,
        "ours_sample_tokens_per_s_median": sampled[len(sampled) // 2],
        "transformers_generate_tokens_per_s": hf,
        "sampling_ratio": sampled[len(sampled) // 2] / hf,
    }


def write(a, figures):
    Path(a.out).mkdir(parents=True, exist_ok=True)
    figures["device"] = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    (Path(a.out) / "gpu-figures.json").write_text(json.dumps(figures, indent=2))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stage", action="append", choices=["logprobs", "step", "grpo"])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--small", action="store_true")
    p.add_argument("--work")
    a = p.parse_args()
    work = Path(a.work or tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    path = Path(a.out) / "gpu-figures.json"
    figures = json.loads(path.read_text()) if path.exists() else {}
    for name in a.stage or ["logprobs", "step", "grpo"]:
        t0 = time.perf_counter()
        try:
            {"logprobs": stage_logprobs, "step": stage_step, "grpo": stage_grpo}[name](a, work, figures)
        except Exception as e:  # a stage that fails still reports, and the next one runs
            figures[name] = {"error": repr(e)}
        figures.setdefault(name, {})["seconds"] = time.perf_counter() - t0
        write(a, figures)
        print(f"{name}: {json.dumps(figures[name])[:400]}", file=sys.stderr)


if __name__ == "__main__":
    main()
