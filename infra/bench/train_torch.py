"""PyTorch / transformers side of the trainer benchmarks and interop checks.

  make   --out DIR --hidden H --layers L --heads A --kv K --vocab V   a random Qwen2 saved by
         transformers (save_pretrained, safetensors) with a word-level tokenizer.json
  bench  --model DIR --batch B --seq T [--iterations N]               forward + backward + AdamW
         on random ids, the same step `agentrl train bench` times; prints one JSON line
  logprobs --model DIR --input FILE.jsonl                             transformers' logprobs of
         each response token, for comparison with `agentrl train logprobs`
  peft   --base DIR --adapter DIR --merged DIR --input FILE.jsonl     max |logprob difference|
         between PEFT's adapter on the base and our merged weights
"""
import argparse
import json
import resource
import time

import torch


def make(a):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.hidden * 3,
        num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv,
        max_position_embeddings=1024, tie_word_embeddings=True, eos_token_id=0, bos_token_id=0,
    )
    model = Qwen2ForCausalLM(cfg)
    model.save_pretrained(a.out, safe_serialization=True)
    vocab = {"<|endoftext|>": 0, **{f"t{i}": i for i in range(1, a.vocab)}}
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
        "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<|endoftext|>"},
    }
    with open(f"{a.out}/tokenizer.json", "w") as f:
        json.dump(tok, f)
    print(json.dumps({"parameters": sum(p.numel() for p in model.parameters())}))


def bench(a):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (a.batch, a.seq), generator=g)
    times = []
    for i in range(a.iterations + 2):
        t0 = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= 2:
            times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({
        "batch": a.batch, "seq": a.seq, "threads": torch.get_num_threads(),
        "step_ms": median * 1e3, "tokens_per_s": a.batch * a.seq / median,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def response_logprobs(model, line):
    ids = torch.tensor([line["prompt_ids"] + line["response_ids"]])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)[0]
    p = len(line["prompt_ids"])
    return [float(logp[p + j - 1, t]) for j, t in enumerate(line["response_ids"])]


def logprobs(a):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    for line in open(a.input):
        print(json.dumps({"logprobs": response_logprobs(model, json.loads(line))}))


def peft(a):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(a.base, dtype=torch.float32)
    adapted = PeftModel.from_pretrained(base, a.adapter).eval()
    merged = AutoModelForCausalLM.from_pretrained(a.merged, dtype=torch.float32).eval()
    plain = AutoModelForCausalLM.from_pretrained(a.base, dtype=torch.float32).eval()
    worst, moved = 0.0, 0.0
    for line in open(a.input):
        line = json.loads(line)
        x, y = response_logprobs(adapted, line), response_logprobs(merged, line)
        z = response_logprobs(plain, line)
        worst = max(worst, max(abs(p - q) for p, q in zip(x, y)))
        moved = max(moved, max(abs(p - q) for p, q in zip(y, z)))
    # `moved`: how far training took the model from its base (so the agreement is not trivial).
    print(json.dumps({"max_abs_diff": worst, "max_abs_change_from_base": moved}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    for k, d in [("hidden", 128), ("layers", 4), ("heads", 4), ("kv", 2), ("vocab", 1024)]:
        m.add_argument(f"--{k}", type=int, default=d)
    m.add_argument("--out", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--model", required=True)
    b.add_argument("--batch", type=int, default=8)
    b.add_argument("--seq", type=int, default=48)
    b.add_argument("--iterations", type=int, default=20)
    lp = sub.add_parser("logprobs")
    lp.add_argument("--model", required=True)
    lp.add_argument("--input", required=True)
    pf = sub.add_parser("peft")
    for k in ["base", "adapter", "merged", "input"]:
        pf.add_argument(f"--{k}", required=True)
    a = p.parse_args()
    {"make": make, "bench": bench, "logprobs": logprobs, "peft": peft}[a.cmd](a)


if __name__ == "__main__":
    main()
