#!/usr/bin/env bash
# Pareto report for fsq plan's mixed precision: uniform 3-, 4- and 8-bit checkpoints and
# mixed plans (LLM-PQ's variance indicator from one `fsq calibrate`, fsq plan --target-bits)
# at several budgets, all with one method, evaluated by scripts/quant-table.sh (same split,
# protocol and windows for every row); writes pareto.csv, pareto.md and pareto.png (bits per
# weight as stored vs mean KL and perplexity, drawn with matplotlib) into the work folder.
#
#   scripts/plan-pareto.sh MODEL_DIR
#   FSQ_METHOD=awq FSQ_BUDGETS="3.25 3.5 3.75 4.5 6" FSQ_MAX_WINDOWS=4 FSQ_WORK_DIR=out scripts/plan-pareto.sh DIR
# Other FSQ_* variables (FSQ_TEXTS, FSQ_SAMPLES, FSQ_SEQ_LEN, ...) pass to quant-table.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="${1:?usage: scripts/plan-pareto.sh MODEL_DIR}"
method="${FSQ_METHOD:-rtn}"
budgets="${FSQ_BUDGETS:-3.25 3.5 3.75 4.5 6}"
work="${FSQ_WORK_DIR:-$(mktemp -d)}"
mkdir -p "$work"

# The plot needs matplotlib: Debian's python3-matplotlib, for Debian's python3 (a python3
# earlier on PATH, e.g. pyenv's, may not see it).
plot_python=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import matplotlib' 2>/dev/null; then plot_python="$py"; break; fi
done
if [[ -z $plot_python ]]; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
  plot_python=/usr/bin/python3
fi

configs="$method:3:128 $method:4:128 $method:8:128"
for b in $budgets; do configs+=" $method:plan:$b"; done
# FSQ_PER_LINEAR=1: also one width per linear at each budget.
if [[ ${FSQ_PER_LINEAR:-0} == 1 ]]; then for b in $budgets; do configs+=" $method:linplan:$b"; done; fi
FSQ_CONFIGS="$configs" FSQ_WORK_DIR="$work/table" FSQ_PROTOCOLS="${FSQ_PROTOCOLS:-gptq}" \
  FSQ_TEXTS="${FSQ_TEXTS:-${FSQ_SHARED_DIR:-$root/../shared}/data/tinystories/tinystories_val.txt}" \
  "$root/scripts/quant-table.sh" "$model" | tee "$work/table.txt"

"$plot_python" - "$work" "$method" <<'PY'
import sys, re
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
work, method = sys.argv[1], sys.argv[2]
rows = []
for line in open(f"{work}/table.txt"):
    cells = line.split("|")
    head = cells[0].split()
    if len(cells) < 2 or not head or head[0] not in (method, "fp"):
        continue
    ppl, kl, top1 = map(float, cells[1].split())
    if head[0] == "fp":
        continue
    kind = {"plan": "mixed", "linplan": "mixed per linear"}.get(head[1], "uniform")
    label = f"{head[1]} {head[2]}" if kind != "uniform" else f"{head[1]}-bit"
    rows.append({"label": label, "kind": kind, "bpw": float(head[3]), "ppl": ppl, "kl": kl, "top1": top1})
rows.sort(key=lambda r: r["bpw"])
with open(f"{work}/pareto.csv", "w") as f:
    f.write("label,kind,bits_per_weight,ppl,mean_kl,top1\n")
    for r in rows:
        f.write(f"{r['label']},{r['kind']},{r['bpw']:.3f},{r['ppl']:.4f},{r['kl']:.5f},{r['top1']:.4f}\n")
with open(f"{work}/pareto.md", "w") as f:
    f.write(f"| {method} | bits/w (stored) | ppl | mean KL | top-1 |\n|---|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r['label']} | {r['bpw']:.3f} | {r['ppl']:.4f} | {r['kl']:.5f} | {r['top1']:.4f} |\n")
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, key, name in ((axes[0], "kl", "mean KL vs fp"), (axes[1], "ppl", "perplexity")):
    for kind, marker in (("uniform", "s"), ("mixed", "o"), ("mixed per linear", "^")):
        pts = [r for r in rows if r["kind"] == kind]
        if not pts:
            continue
        ax.plot([r["bpw"] for r in pts], [r[key] for r in pts], marker=marker, linestyle="none" if kind == "uniform" else "-",
                label=f"{kind} ({method})")
        for r in pts:
            ax.annotate(r["label"], (r["bpw"], r[key]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("bits per weight as stored")
    ax.set_ylabel(name)
    if key == "kl":
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
fig.suptitle(f"fsq plan: mixed precision vs uniform widths ({method})")
fig.tight_layout()
fig.savefig(f"{work}/pareto.png", dpi=120)
print(f"wrote {work}/pareto.csv, {work}/pareto.md, {work}/pareto.png")
PY
