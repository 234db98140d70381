#!/usr/bin/env bash
# Trainer benchmarks and the transformers/PEFT interop check, against PyTorch in the same run.
#
#   infra/bench/train.sh            # speed (ours vs PyTorch), then interop
#   infra/bench/train.sh credit     # turn vs broadcast credit on the 6-hop chain task, 3 seeds
#
# Installs PyTorch + transformers + PEFT into the bench venv (infra/bench/torch-env.sh).
set -euo pipefail
exec </dev/null
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
cargo build --release --locked -p agentrl >&2
agentrl="${CARGO_TARGET_DIR:-$root/target}/release/agentrl"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [[ "${1:-speed}" == "credit" ]]; then
  # Six chained lookups; with dynamic sampling (the default) and without it (every step then
  # trains on the same 16 × 8 rollouts whatever the credit).
  printf 'dynamic_sampling\tseed\tcredit\tsteps_to_0.9\trollouts_to_0.9\tsuccess_before\tsuccess_after\twall_s\n'
  for dynamic in true false; do
    for seed in 0 1 2; do
      for credit in broadcast turn; do
        run="$work/$dynamic-$credit-$seed"
        "$agentrl" train demo --task chain --hops 6 --dynamic-sampling "$dynamic" --credit "$credit" \
          --seed "$seed" --minutes 15 --target 0.9 --out "$run" >/dev/null 2>"$work/log"
        python3 - "$run/run.json" "$dynamic" "$seed" "$credit" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{sys.argv[4]}\t{r['demo']['steps_to_0_9']}\t{r['demo']['rollouts_to_0_9']}\t"
      f"{r['eval_success_before']:.3f}\t{r['eval_success_after']:.3f}\t{r['wall_time_s']:.0f}")
PY
      done
    done
  done
  exit 0
fi

venv="$(infra/bench/torch-env.sh | tail -n1)"
py="$venv/bin/python"
model="$work/model"
"$py" infra/bench/train_torch.py make --out "$model" --hidden 128 --layers 4 --heads 4 --kv 2 --vocab 1024 >&2
for shape in "8 48" "16 128"; do
  set -- $shape
  ours="$("$agentrl" train bench --model "$model" --batch "$1" --seq "$2" --iterations 20)"
  torch="$("$py" infra/bench/train_torch.py bench --model "$model" --batch "$1" --seq "$2" --iterations 20)"
  python3 - "$ours" "$torch" <<'PY'
import json, sys
o, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"batch {o['batch']} × seq {o['seq']}: agentrl {o['tokens_per_s']:.0f} tok/s ({o['step_ms']:.1f} ms, {o['peak_rss_mb']:.0f} MB), "
      f"PyTorch {t['tokens_per_s']:.0f} tok/s ({t['step_ms']:.1f} ms, {t['peak_rss_mb']:.0f} MB): ratio {o['tokens_per_s'] / t['tokens_per_s']:.2f}")
PY
done
lora="$("$agentrl" train bench --model "$model" --batch 8 --seq 48 --lora 8 --iterations 20)"
echo "LoRA r=8, batch 8 × seq 48: $lora"

# Interop: a checkpoint we write loads in transformers with the same logprobs; a LoRA adapter
# we write loads in PEFT and equals our merged weights.
python3 - "$work" <<'PY'
import json, random, sys
random.seed(0)
with open(f"{sys.argv[1]}/prompts.jsonl", "w") as f:
    for i in range(16):
        f.write(json.dumps({"prompt": f"t{i+1} t{i+2}", "answer": f"t{i+3}", "match": "exact"}) + "\n")
with open(f"{sys.argv[1]}/ids.jsonl", "w") as f:
    for n in (5, 17, 40):
        f.write(json.dumps({"prompt_ids": [random.randrange(1, 1024) for _ in range(n)],
                            "response_ids": [random.randrange(1, 1024) for _ in range(n)]}) + "\n")
with open(f"{sys.argv[1]}/lora.json", "w") as f:
    json.dump({"lora": {"rank": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj", "down_proj"]},
               "merge_lora": True, "grpo": {"group_size": 4, "batch_prompts": 2, "max_new_tokens": 4,
                                            "learning_rate": 1e-2},
               "sft": {"epochs": 3, "learning_rate": 1e-2, "batch_size": 4}}, f)
with open(f"{sys.argv[1]}/sft.jsonl", "w") as f:
    for i in range(16):
        f.write(json.dumps({"prompt": f"t{i+1} t{i+2}", "completion": f"t{i+3}"}) + "\n")
with open(f"{sys.argv[1]}/full.json", "w") as f:
    json.dump({"grpo": {"group_size": 4, "batch_prompts": 2, "max_new_tokens": 4, "learning_rate": 1e-3},
               "sft": {"epochs": 0}}, f)
PY
"$agentrl" train run --model "$model" --prompts "$work/prompts.jsonl" --out "$work/full" --config "$work/full.json" --steps 3 >/dev/null 2>&1
"$agentrl" train run --model "$model" --prompts "$work/prompts.jsonl" --sft "$work/sft.jsonl" --out "$work/lora" --config "$work/lora.json" --steps 3 >/dev/null 2>&1
"$agentrl" train logprobs --model "$work/full" --input "$work/ids.jsonl" > "$work/ours.jsonl"
"$py" infra/bench/train_torch.py logprobs --model "$work/full" --input "$work/ids.jsonl" > "$work/theirs.jsonl"
python3 - "$work/ours.jsonl" "$work/theirs.jsonl" <<'PY'
import json, sys
a = [json.loads(l)["logprobs"] for l in open(sys.argv[1])]
b = [json.loads(l)["logprobs"] for l in open(sys.argv[2])]
print(f"transformers on our checkpoint: max |logprob difference| {max(abs(x - y) for p, q in zip(a, b) for x, y in zip(p, q)):.2e}")
PY
echo "PEFT adapter vs our merged weights: $("$py" infra/bench/train_torch.py peft --base "$model" --adapter "$work/lora" --merged "$work/lora/merged" --input "$work/ids.jsonl")"
