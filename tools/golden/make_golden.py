#!/usr/bin/env python3
"""Build tiny random golden fixtures for moengine from HF transformers (float32, eager attention).

Usage:  python3 tools/golden/make_golden.py OUTDIR [--cases glm_moe_dsa,deepseek_v3,deepseek_v32] [--max-seeds N]

For each case writes OUTDIR/<case>/{config.json, model.safetensors, golden.json}:
  * config.json       -- config.save_pretrained() of the tiny config (keys exactly as transformers writes them)
  * model.safetensors -- real-checkpoint tensor names (per-expert gate_proj/up_proj/down_proj), BF16 except
                         mlp.gate.e_score_correction_bias (F32). All weights are BF16-exact, so the float32 HF run
                         below uses exactly the stored values.
  * golden.json       -- logits/greedy ids/hidden states from a float32 HF model reloaded from those files.

Besides HF, an independent plain-torch reference (written from docs/hf-reference-notes.md) recomputes the model
from the safetensors file; its logits must match HF (checked, recorded as ref_max_abs_diff). The reference also
measures decision margins (indexer top-k boundary gap, router top-k / group gap); the seed is searched so that
no decision is near a tie, and greedy top1-top2 margins are comfortable.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import load_file, save_file

torch.set_grad_enabled(False)
torch.set_num_threads(min(8, os.cpu_count() or 1))

PROMPT_LEN = 24
N_GREEDY = 16

COMMON = dict(
    vocab_size=512,
    hidden_size=64,
    num_hidden_layers=3,
    first_k_dense_replace=1,
    intermediate_size=96,
    moe_intermediate_size=32,
    n_routed_experts=8,
    n_shared_experts=1,
    num_experts_per_tok=3,
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=32,
    kv_lora_rank=32,
    qk_nope_head_dim=16,
    qk_rope_head_dim=8,
    v_head_dim=16,
    routed_scaling_factor=2.5,
    norm_topk_prob=True,
    hidden_act="silu",
    tie_word_embeddings=False,
    bos_token_id=0,
    eos_token_id=1,
    attention_bias=False,
)

YARN = {
    "rope_type": "yarn",
    "rope_theta": 10000.0,
    "factor": 40.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    # small so the YaRN ramp has a fractional entry for dim 8: low=0, high=2 -> ramp [0, .5, 1, 1]
    "original_max_position_embeddings": 64,
}

CASES = {
    "glm_moe_dsa": dict(
        cls="GlmMoeDsaForCausalLM",
        cfg_cls="GlmMoeDsaConfig",
        kw=dict(
            COMMON,
            n_group=1,
            topk_group=1,
            rms_norm_eps=1e-5,
            max_position_embeddings=4096,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            rope_interleave=True,
            indexer_rope_interleave=True,
            index_n_heads=8,
            index_head_dim=16,
            index_topk=8,
        ),
        dsa=True,
        indexer_rope="interleave",
    ),
    "deepseek_v3": dict(
        cls="DeepseekV3ForCausalLM",
        cfg_cls="DeepseekV3Config",
        kw=dict(
            COMMON,
            n_group=4,
            topk_group=2,
            rms_norm_eps=1e-6,
            max_position_embeddings=2560,
            rope_parameters=dict(YARN),
            rope_interleave=True,
            num_nextn_predict_layers=0,
        ),
        dsa=False,
    ),
    "deepseek_v32": dict(
        cls="DeepseekV32ForCausalLM",
        cfg_cls="DeepseekV32Config",
        kw=dict(
            COMMON,
            n_group=4,
            topk_group=2,
            rms_norm_eps=1e-6,
            max_position_embeddings=2560,
            rope_parameters=dict(YARN),
            rope_interleave=True,
            index_n_heads=8,
            index_head_dim=16,
            index_topk=8,
        ),
        dsa=True,
        indexer_rope="neox",
    ),
}


def bf16_exact(t):
    return t.to(torch.bfloat16).to(torch.float32)


# ----------------------------------------------------------------------------------------------
# weights
# ----------------------------------------------------------------------------------------------
def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    H = model.config.hidden_size

    def randn(shape):
        return torch.randn(shape, generator=g, dtype=torch.float32)

    for name, p in model.named_parameters():
        if name.endswith("k_norm.bias"):
            v = 0.1 * randn(p.shape)
        elif p.ndim == 1:  # RMSNorm / LayerNorm weights
            v = 1.0 + 0.1 * randn(p.shape)
        elif "embed_tokens" in name:
            v = randn(p.shape)
        elif name.startswith("lm_head"):
            v = randn(p.shape) * (3.0 / math.sqrt(H))
        elif name.endswith("mlp.gate.weight"):
            v = randn(p.shape) * (2.0 / math.sqrt(p.shape[1]))
        elif p.ndim == 3:  # fused experts [E, out, in]
            v = randn(p.shape) / math.sqrt(p.shape[2])
        elif p.ndim == 2:  # nn.Linear [out, in]
            v = randn(p.shape) / math.sqrt(p.shape[1])
        else:
            raise RuntimeError(name)
        p.copy_(bf16_exact(v))
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.copy_(0.3 * randn(b.shape))  # stored F32, no rounding needed


def to_checkpoint_state_dict(model):
    """HF in-memory names -> real checkpoint names (split fused experts back to per-expert tensors)."""
    out = {}
    for name, t in model.state_dict().items():
        t = t.detach().to(torch.float32).contiguous()
        if name.endswith("mlp.experts.gate_up_proj"):
            pre = name[: -len("gate_up_proj")]
            E, twoI, _ = t.shape
            I = twoI // 2
            for e in range(E):  # HF: Concatenate(dim=1)([gate, up]) -> rows [0,I) gate, [I,2I) up
                out[f"{pre}{e}.gate_proj.weight"] = t[e, :I].clone()
                out[f"{pre}{e}.up_proj.weight"] = t[e, I:].clone()
        elif name.endswith("mlp.experts.down_proj"):
            pre = name[: -len("down_proj")]
            for e in range(t.shape[0]):
                out[f"{pre}{e}.down_proj.weight"] = t[e].clone()
        else:
            out[name] = t.clone()
    stored = {}
    for k, v in out.items():
        if k.endswith("e_score_correction_bias"):
            stored[k] = v.to(torch.float32).contiguous()
        else:
            assert torch.equal(bf16_exact(v), v), k
            stored[k] = v.to(torch.bfloat16).contiguous()
    return stored


# ----------------------------------------------------------------------------------------------
# independent reference (plain torch, float32) written from docs/hf-reference-notes.md
# ----------------------------------------------------------------------------------------------
def ref_rope_tables(cfg, T):
    rp = cfg.rope_parameters
    d = cfg.qk_rope_head_dim
    base = float(rp["rope_theta"])
    idx = torch.arange(0, d, 2, dtype=torch.float32)
    inv = 1.0 / (base ** (idx / d))
    attn_factor = 1.0
    if rp.get("rope_type", "default") == "yarn":
        factor = float(rp["factor"])
        omax = rp["original_max_position_embeddings"]
        bf, bs = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1

        def corr_dim(rot):
            return (d * math.log(omax / (rot * 2 * math.pi))) / (2 * math.log(base))

        low = max(math.floor(corr_dim(bf)), 0)
        high = min(math.ceil(corr_dim(bs)), d - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        inv = (inv / factor) * ramp + inv * (1 - ramp)

        def gm(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        ms, msa = rp.get("mscale"), rp.get("mscale_all_dim")
        attn_factor = gm(factor, ms) / gm(factor, msa) if (ms and msa) else gm(factor)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]  # [T, d/2]
    return torch.cos(ang) * attn_factor, torch.sin(ang) * attn_factor


def rope_interleave(x, cos, sin):  # pairs (2i, 2i+1); output in HF's de-interleaved order [evens', odds']
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


def rope_neox(x, cos, sin):  # pairs (i, i + d/2)
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def ref_forward(sd, cfg, ids, case, stats):
    W = lambda n: sd[n].to(torch.float32)  # noqa: E731
    T = len(ids)
    nh, dn, dr, dv = cfg.num_attention_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
    kvr = cfg.kv_lora_rank
    eps = cfg.rms_norm_eps
    cos, sin = ref_rope_tables(cfg, T)
    rp = cfg.rope_parameters
    scale = (dn + dr) ** -0.5
    if rp.get("rope_type", "default") != "default" and rp.get("mscale_all_dim"):
        m = 0.1 * rp["mscale_all_dim"] * math.log(rp["factor"]) + 1.0
        scale *= m * m
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = W("model.embed_tokens.weight")[torch.tensor(ids)]
    hiddens = []
    for L in range(cfg.num_hidden_layers):
        p = f"model.layers.{L}."
        h = rms(x, W(p + "input_layernorm.weight"), eps)
        a = p + "self_attn."
        cq = rms(h @ W(a + "q_a_proj.weight").T, W(a + "q_a_layernorm.weight"), 1e-6)
        q = (cq @ W(a + "q_b_proj.weight").T).view(T, nh, dn + dr)
        q_nope, q_pe = q[..., :dn], rope_interleave(q[..., dn:], cos[:, None, :], sin[:, None, :])
        kva = h @ W(a + "kv_a_proj_with_mqa.weight").T
        ckv = rms(kva[:, :kvr], W(a + "kv_a_layernorm.weight"), 1e-6)
        k_pe = rope_interleave(kva[:, kvr:], cos, sin)  # [T, dr], shared by all heads
        kv = (ckv @ W(a + "kv_b_proj.weight").T).view(T, nh, dn + dv)
        k_nope, v = kv[..., :dn], kv[..., dn:]
        s = (torch.einsum("thd,shd->hts", q_nope, k_nope) + torch.einsum("thd,sd->hts", q_pe, k_pe)) * scale
        allowed = causal.clone()
        if CASES[case]["dsa"]:
            ip = a + "indexer."
            nih, dih, topk = cfg.index_n_heads, cfg.index_head_dim, cfg.index_topk
            qi = (cq @ W(ip + "wq_b.weight").T).view(T, nih, dih)
            ki = F.layer_norm(h @ W(ip + "wk.weight").T, (dih,), W(ip + "k_norm.weight"), W(ip + "k_norm.bias"), 1e-6)
            rf = rope_interleave if CASES[case]["indexer_rope"] == "interleave" else rope_neox
            qi = torch.cat([rf(qi[..., :dr], cos[:, None, :], sin[:, None, :]), qi[..., dr:]], -1)  # rope FIRST
            ki = torch.cat([rf(ki[..., :dr], cos, sin), ki[..., dr:]], -1)
            sc = torch.relu(torch.einsum("thd,sd->ths", qi, ki) * dih**-0.5)
            wts = (h @ W(ip + "weights_proj.weight").T) * nih**-0.5
            I = torch.einsum("th,ths->ts", wts, sc)
            sel = torch.zeros(T, T, dtype=torch.bool)
            for t in range(T):
                if t + 1 <= topk:
                    sel[t, : t + 1] = True
                else:
                    vals, order = I[t, : t + 1].sort(descending=True)
                    sel[t, order[:topk]] = True
                    stats["indexer_gap"] = min(stats["indexer_gap"], float(vals[topk - 1] - vals[topk]))
                    stats["indexer_strict_rows"] += 1
            allowed &= sel
            stats.setdefault("sel", []).append(sel)
        s = s.masked_fill(~allowed[None], float("-inf"))
        pr = torch.softmax(s, -1)
        o = torch.einsum("hts,shd->thd", pr, v).reshape(T, nh * dv)
        x = x + o @ W(a + "o_proj.weight").T

        h2 = rms(x, W(p + "post_attention_layernorm.weight"), eps)
        m = p + "mlp."

        def swiglu(pre, inp):
            return (F.silu(inp @ W(pre + "gate_proj.weight").T) * (inp @ W(pre + "up_proj.weight").T)) @ W(
                pre + "down_proj.weight"
            ).T

        if (m + "gate.weight") in sd:
            E, K, ng, tg = cfg.n_routed_experts, cfg.num_experts_per_tok, cfg.n_group, cfg.topk_group
            sig = torch.sigmoid(h2 @ W(m + "gate.weight").T)  # [T, E]
            choice = sig + sd[m + "gate.e_score_correction_bias"].to(torch.float32)
            gs = choice.view(T, ng, E // ng).topk(2, dim=-1)[0].sum(-1)  # [T, ng]
            y = torch.zeros_like(h2)
            for t in range(T):
                gord = gs[t].sort(descending=True)
                if ng > tg:
                    stats["group_gap"] = min(stats["group_gap"], float(gord.values[tg - 1] - gord.values[tg]))
                keep = torch.zeros(ng, dtype=torch.bool)
                keep[gord.indices[:tg]] = True
                c = choice[t].masked_fill(~keep.repeat_interleave(E // ng), float("-inf"))
                cv, ci = c.sort(descending=True)
                stats["router_gap"] = min(stats["router_gap"], float(cv[K - 1] - cv[K]))
                sel = ci[:K]
                w = sig[t, sel]
                if cfg.norm_topk_prob:
                    w = w / (w.sum() + 1e-20)
                w = w * cfg.routed_scaling_factor
                for j in range(K):
                    y[t] += w[j] * swiglu(f"{m}experts.{int(sel[j])}.", h2[t : t + 1])[0]
            y = y + swiglu(m + "shared_experts.", h2)
        else:
            y = swiglu(m, h2)
        x = x + y
        hiddens.append(x)
    xn = rms(x, W("model.norm.weight"), eps)
    return xn @ W("lm_head.weight").T, hiddens, xn


# ----------------------------------------------------------------------------------------------
# HF runs
# ----------------------------------------------------------------------------------------------
def hf_logits(model, ids):
    out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0].to(torch.float32)


def greedy(model, prompt):
    ids = list(prompt)
    margins, gen = [], []
    for _ in range(N_GREEDY):
        lg = hf_logits(model, ids)[-1]
        top2 = lg.topk(2)
        margins.append(float(top2.values[0] - top2.values[1]))
        nxt = int(top2.indices[0])
        gen.append(nxt)
        ids.append(nxt)
    return gen, margins


def evaluate(model, cfg, case, prompt):
    gen, margins = greedy(model, prompt)
    full = list(prompt) + gen[:-1]  # covers every row of every greedy forward (causal, full recompute)
    lg_hf = hf_logits(model, full)
    sd = to_checkpoint_state_dict(model)
    stats = {"indexer_gap": float("inf"), "indexer_strict_rows": 0, "router_gap": float("inf"), "group_gap": float("inf")}
    lg_ref, _, _ = ref_forward(sd, cfg, full, case, stats)
    diff = float((lg_ref - lg_hf).abs().max())
    if diff > 1e-3:
        diagnose(model, cfg, case, full, sd)
    max_abs = float(lg_hf[PROMPT_LEN - 1 :].abs().max())
    return dict(gen=gen, margins=margins, min_margin=min(margins), max_abs=max_abs, ref_diff=diff, stats=stats, sd=sd)


def diagnose(model, cfg, case, full, sd):
    caps, sels = {}, {}
    hooks = []
    for i, layer in enumerate(model.model.layers):
        hooks.append(layer.register_forward_hook(
            lambda mod, inp, out, i=i: caps.__setitem__(i, (out[0] if isinstance(out, tuple) else out)[0].clone())))
        ix = getattr(layer.self_attn, "indexer", None)
        if ix is not None:
            hooks.append(ix.register_forward_hook(lambda mod, inp, out, i=i: sels.__setitem__(i, out[0].clone())))
    hf_logits(model, full)
    for hk in hooks:
        hk.remove()
    st = {"indexer_gap": float("inf"), "indexer_strict_rows": 0, "router_gap": float("inf"), "group_gap": float("inf")}
    _, hid, _ = ref_forward(sd, cfg, full, case, st)
    T = len(full)
    for i in range(cfg.num_hidden_layers):
        d = (hid[i] - caps[i]).abs().max(-1).values
        bad = [t for t in range(T) if d[t] > 1e-4]
        print(f"  diag layer {i}: max|diff| {float(d.max()):.3g}; first bad rows {bad[:6]}", flush=True)
        if i in sels:
            hs = torch.zeros(T, T, dtype=torch.bool)
            hs.scatter_(1, sels[i].long(), True)
            hs &= torch.tril(torch.ones(T, T, dtype=torch.bool))
            mism = [t for t in range(T) if not torch.equal(hs[t], st["sel"][i][t])]
            print(f"  diag layer {i}: indexer selection mismatching rows {mism[:8]}", flush=True)
            for t in mism[:2]:
                print("    hf", hs[t].nonzero().flatten().tolist(), "ref", st["sel"][i][t].nonzero().flatten().tolist())


def quality(ev):
    # >= 1 means acceptable; scaled so each criterion counts equally
    s = ev["stats"]
    crit = [ev["min_margin"] / max(ev["max_abs"], 1e-9) / 5e-3, s["router_gap"] / 2e-3]
    if s["indexer_strict_rows"] > 0:
        crit.append(s["indexer_gap"] / 2e-3)
    if s["group_gap"] != float("inf"):
        crit.append(s["group_gap"] / 2e-3)
    return min(crit)


def build_case(case, outdir, max_seeds):
    spec = CASES[case]
    cfg_cls = getattr(transformers, spec["cfg_cls"])
    cls = getattr(transformers, spec["cls"])
    cfg = cfg_cls(**spec["kw"], attn_implementation="eager", experts_implementation="eager")
    torch.manual_seed(0)
    model = cls(cfg).to(torch.float32).eval()
    g = torch.Generator().manual_seed(1234 + list(CASES).index(case))
    prompt = torch.randint(2, cfg.vocab_size, (PROMPT_LEN,), generator=g).tolist()

    best = None
    t0 = time.time()
    for seed in range(max_seeds):
        init_weights(model, 1000 * (list(CASES).index(case) + 1) + seed)
        ev = evaluate(model, cfg, case, prompt)
        q = quality(ev)
        print(f"[{case}] seed {seed}: quality {q:.3f} min_margin {ev['min_margin']:.4g} max_abs {ev['max_abs']:.3g} "
              f"stats {ev['stats']} ref_diff {ev['ref_diff']:.3g}", flush=True)
        if ev["ref_diff"] > 1e-3 and not (ev["stats"]["indexer_gap"] < 1e-6 or ev["stats"]["router_gap"] < 1e-6):
            raise SystemExit(f"[{case}] independent reference disagrees with HF: max |diff| {ev['ref_diff']}")
        if ev["ref_diff"] > 1e-3:
            q = -1.0  # a tie decided differently; never choose this seed
        if best is None or q > best[0]:
            best = (q, seed, ev)
        if q >= 1.0 or time.time() - t0 > 60:
            break
    q, seed, ev = best
    if q < 0:
        raise SystemExit(f"[{case}] no seed without a near-tie decision")
    if q < 1:
        print(f"[{case}] WARNING: best quality {q:.3f} < 1", flush=True)
    print(f"[{case}] chosen seed {seed} quality {q:.3f}", flush=True)
    init_weights(model, 1000 * (list(CASES).index(case) + 1) + seed)

    cdir = os.path.join(outdir, case)
    os.makedirs(cdir, exist_ok=True)
    cfg.dtype = torch.bfloat16  # as a real BF16 checkpoint's config says
    cfg.save_pretrained(cdir)
    stored = to_checkpoint_state_dict(model)
    save_file(stored, os.path.join(cdir, "model.safetensors"), metadata={"format": "pt"})

    # reload exactly what was written; everything below comes from the files
    m2, info = cls.from_pretrained(
        cdir, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager", output_loading_info=True
    )
    m2.eval()
    if any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
        raise SystemExit(f"[{case}] loading info not clean: {info}")
    for k, v in m2.state_dict().items():
        ref = model.state_dict()[k]
        if not torch.equal(v.to(torch.float32), ref.to(torch.float32)):
            raise SystemExit(f"[{case}] reloaded tensor differs: {k}")

    layer_out, fn_out = {}, {}
    hooks = []
    for i, layer in enumerate(m2.model.layers):
        hooks.append(layer.register_forward_hook(
            lambda mod, inp, out, i=i: layer_out.__setitem__(i, (out[0] if isinstance(out, tuple) else out)[0, -1].clone())))
    hooks.append(m2.model.norm.register_forward_hook(lambda mod, inp, out: fn_out.__setitem__(0, out[0, -1].clone())))
    last_logits = hf_logits(m2, prompt)[-1]
    for hk in hooks:
        hk.remove()
    gen, margins = greedy(m2, prompt)
    assert gen == ev["gen"], (gen, ev["gen"])

    # independent reference from the written safetensors file
    sd_file = load_file(os.path.join(cdir, "model.safetensors"))
    stats = {"indexer_gap": float("inf"), "indexer_strict_rows": 0, "router_gap": float("inf"), "group_gap": float("inf")}
    full = list(prompt) + gen[:-1]
    lg_ref, hid_ref, _ = ref_forward(sd_file, cfg, full, case, stats)
    lg_hf = hf_logits(m2, full)
    ref_diff = float((lg_ref - lg_hf).abs().max())
    _, hid_ref_p, fn_ref_p = ref_forward(sd_file, cfg, prompt, case, {"indexer_gap": 1e9, "indexer_strict_rows": 0,
                                                                       "router_gap": 1e9, "group_gap": 1e9})
    hid_diff = max(float((hid_ref_p[i][-1] - layer_out[i]).abs().max()) for i in range(cfg.num_hidden_layers))
    hid_diff = max(hid_diff, float((fn_ref_p[-1] - fn_out[0]).abs().max()))
    print(f"[{case}] reference vs HF: logits max|diff| {ref_diff:.3g}, hidden max|diff| {hid_diff:.3g}", flush=True)
    assert ref_diff < 1e-3 and hid_diff < 1e-3

    golden = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "case": case,
        "seed": seed,
        "prompt_ids": prompt,
        "last_logits": [float(v) for v in last_logits],
        "greedy_ids": gen,
        "greedy_margins": margins,
        "min_margin": min(margins),
        "max_abs_logit": float(max(last_logits.abs().max(), ev["max_abs"])),
        "layer_outputs_last": [[float(v) for v in layer_out[i]] for i in range(cfg.num_hidden_layers)],
        "final_norm_last": [float(v) for v in fn_out[0]],
        "checks": {
            "ref_max_abs_diff_logits": ref_diff,
            "ref_max_abs_diff_hidden": hid_diff,
            "min_indexer_topk_gap": stats["indexer_gap"] if stats["indexer_strict_rows"] else None,
            "indexer_strict_subset_rows_all_layers": stats["indexer_strict_rows"],
            "min_router_topk_gap": stats["router_gap"],
            "min_router_group_gap": None if stats["group_gap"] == float("inf") else stats["group_gap"],
        },
        "notes": "float32 HF run, attn_implementation=eager, experts_implementation=eager; greedy by full "
                 "recomputation (use_cache=False), EOS ignored; min_margin over the 16 greedy forwards (the first is "
                 "the prompt's last position); checks.* from an independent plain-torch reference over "
                 "prompt+greedy[:15] (all rows of all greedy forwards).",
    }
    with open(os.path.join(cdir, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
    sizes = {fn: os.path.getsize(os.path.join(cdir, fn)) for fn in os.listdir(cdir)}
    print(f"[{case}] wrote {sizes}; min_margin {golden['min_margin']:.4g} max_abs_logit {golden['max_abs_logit']:.4g} "
          f"checks {golden['checks']}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--max-seeds", type=int, default=60)
    args = ap.parse_args()
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)
    failed = []
    for case in args.cases.split(","):
        try:
            build_case(case, args.outdir, args.max_seeds)
        except (SystemExit, AssertionError, Exception) as e:  # keep going with the other cases
            print(f"[{case}] FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(case)
    if failed:
        raise SystemExit(f"failed cases: {failed}")


if __name__ == "__main__":
    main()
