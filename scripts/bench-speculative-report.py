#!/usr/bin/python3
"""Tables (and the BiLD plot) of scripts/bench-speculative.sh's results.jsonl.

usage: bench-speculative-report.py RESULTS.jsonl OUT_DIR SWEEP_THREADS
Writes OUT_DIR/table.md (also printed) and OUT_DIR/bild-sweep.png when matplotlib loads.
"""
import json
import math
import os
import sys


def agreement(ids, reference):
    """Share of generated positions whose token equals the reference's (per prompt, summed)."""
    same = total = 0
    for a, b in zip(ids, reference):
        total += len(b)
        same += sum(1 for x, y in zip(a, b) if x == y)
    return same / total if total else 0.0


def main():
    results_path, out_dir, sweep_threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = [json.loads(line) for line in open(results_path) if line.strip()]
    plain = {r["threads"]: r for r in rows if r["name"] == "plain"}
    lines = []
    for t in sorted(plain):
        base = plain[t]
        lines += [f"\n### {t} thread(s), batch 1, SmolLM2-135M f32 verifier\n",
                  "| run | tok/s | vs fsq plain | acceptance | tokens/verify step | draft s | verify s | text = plain |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r["threads"] != t or r["name"].startswith("bild-fb") or r["name"] == "plain-sweep":
                continue
            same = ("yes" if r["ids"] == base["ids"] else "NO") if "ids" in r else "-"
            acc = f'{r["acceptance"]:.3f}' if "acceptance" in r else "-"
            tps = f'{r["tokens_per_step"]:.2f}' if "tokens_per_step" in r else "-"
            split = (f'{r["draft_s"]:.2f}', f'{r["verify_s"]:.2f}') if "draft_s" in r else ("-", "-")
            lines.append(f'| {r["engine"]} {r["name"]} | {r["tok_s"]:.1f} | {r["tok_s"] / base["tok_s"]:.2f}x | {acc} | '
                         f'{tps} | {split[0]} | {split[1]} | {same} |')
    sweep = [r for r in rows if r["name"].startswith("bild-fb")]
    # The sweep's baseline: plain decode measured just before it (else the first table's).
    sweep_base = next((r for r in rows if r["name"] == "plain-sweep"), plain.get(sweep_threads))
    points = []
    if sweep and sweep_base:
        base = sweep_base
        lines += [f"\n### BiLD sweep ({sweep_threads} thread(s); W4 small model, window 7)\n",
                  "| alpha_fb | alpha_rb | tok/s | vs plain | acceptance | agreement with greedy | perplexity under f32 |",
                  "|---|---|---|---|---|---|---|"]
        for r in sweep:
            fb, rb = r["name"][len("bild-fb"):].split("-rb")
            ppl = math.exp(r["nll"] / r["nll_tokens"]) if "nll" in r else float("nan")
            agree = agreement(r["ids"], base["ids"])
            points.append((float(fb), float(rb), r["tok_s"], agree, ppl))
            lines.append(f'| {fb} | {rb} | {r["tok_s"]:.1f} | {r["tok_s"] / base["tok_s"]:.2f}x | '
                         f'{r.get("acceptance", 0):.3f} | {agree:.3f} | {ppl:.3f} |')
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    if not points:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench-speculative: matplotlib is missing: no plot", file=sys.stderr)
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for rb in sorted({p[1] for p in points}):
        sel = [p for p in points if p[1] == rb]
        a1.plot([p[2] for p in sel], [p[3] for p in sel], "o", label=f"alpha_rb {rb:g}")
        a2.plot([p[2] for p in sel], [p[4] for p in sel], "o", label=f"alpha_rb {rb:g}")
        for p in sel:
            a1.annotate(f"{p[0]:g}", (p[2], p[3]), fontsize=7)
            a2.annotate(f"{p[0]:g}", (p[2], p[4]), fontsize=7)
    base = sweep_base["tok_s"]
    for ax, label in ((a1, "agreement with the f32 model's greedy tokens"), (a2, "perplexity of the text under f32")):
        ax.axvline(base, color="gray", linestyle=":", label="plain f32 decode")
        ax.set_xlabel("decode tokens/s (labels: alpha_fb)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle(f"BiLD on SmolLM2-135M (small: W4 RTN), {sweep_threads} thread(s)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "bild-sweep.png"), dpi=110)


if __name__ == "__main__":
    main()
