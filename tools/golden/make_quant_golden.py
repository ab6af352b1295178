#!/usr/bin/env python3
"""Quantization fixtures for moengine, computed by PyTorch / HF transformers on the device machine.

Usage:  python3 tools/golden/make_quant_golden.py OUTDIR [--fixtures tests/fixtures] [--codec-only]

1. OUTDIR/codec.safetensors: PyTorch's own float8_e4m3fn codec -- all 256 codes decoded, and ~10k
   float32 inputs (random over many binades, subnormals, exact ties, out-of-range, +-Inf, NaN) with
   the codes `x.to(torch.float8_e4m3fn)` gives on the CPU and on CUDA. E2M1: torch 2.11 cannot convert to
   torch.float4_e2m1fn_x2 ("copy_kernel" not implemented), so torch's own MX test helpers
   (torch/testing/_internal/common_quantized.py: _f32_to_floatx_unpacked / _floatx_unpacked_to_f32, ebits=2
   mbits=1) give the 16 decoded codes and the codes of ~6k inputs; `__metadata__` says which was used.
2. For each quantized case under FIXTURES/quant/<case>/ (written by `moengine quantize` from the BF16
   fixture FIXTURES/<base>/): dequantizes our safetensors with plain torch ops written here from the
   ModelOpt / DeepSeek formulas (NOT moengine code), loads the float32 weights into the HF model
   (attn eager, experts eager), and writes OUTDIR/<case>.golden.json: last-position logits of the base
   fixture's prompt, 16 greedy tokens (full recomputation), margins, hidden state after each layer,
   and the KL divergence of the BF16 model's next-token distribution from the quantized one's.
"""
import argparse
import json
import os
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file, save_file

torch.set_grad_enabled(False)

N_GREEDY = 16
CASES = [  # (case dir under fixtures/quant, base BF16 fixture, HF class)
    ("glm_moe_dsa_nvfp4", "glm_moe_dsa", "GlmMoeDsaForCausalLM"),
    ("glm_moe_dsa_fp8", "glm_moe_dsa", "GlmMoeDsaForCausalLM"),
    ("deepseek_v3_fp8", "deepseek_v3", "DeepseekV3ForCausalLM"),
]


# ------------------------------------------------------------------------------------------------
# 1. codec tables
# ------------------------------------------------------------------------------------------------
def e4m3_inputs():
    g = torch.Generator().manual_seed(7)
    parts = []
    # random normals over binades 2^-14 .. 2^10
    for e in range(-14, 11):
        parts.append(torch.randn(240, generator=g) * (2.0 ** e))
    # uniform in the subnormal range and just above
    parts.append(torch.rand(500, generator=g) * 2.0 ** -6)
    parts.append(torch.rand(200, generator=g) * 2.0 ** -9)
    # exact midpoints between neighbouring finite codes (ties) and +-1 ulp around them
    vals = torch.arange(0, 127, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    mids = (vals[:-1] + vals[1:]) / 2
    parts += [mids, torch.nextafter(mids, torch.full_like(mids, 1e9)), torch.nextafter(mids, torch.zeros_like(mids))]
    parts += [vals]
    # range ends
    ends = [448.0, 449.0, 463.99, 464.0, 464.01, 470.0, 479.99, 480.0, 480.01, 500.0, 1e4, 3.0e38,
            2.0 ** -9, 2.0 ** -10, 2.0 ** -10 * 1.0001, 2.0 ** -11, 1.5 * 2.0 ** -10, 1e-30, 1.4e-45, 0.0,
            float("inf"), float("nan")]
    parts.append(torch.tensor(ends))
    x = torch.cat(parts).to(torch.float32)
    x = torch.cat([x, -x])
    return x


def e2m1_inputs():
    g = torch.Generator().manual_seed(11)
    parts = [torch.randn(2000, generator=g) * 2.5, torch.rand(1000, generator=g) * 8.0]
    b = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 6.5, 7.0, 100.0,
                      1e-3, 1e-30, float("inf")])
    parts += [b, torch.nextafter(b, torch.full_like(b, 1e9)), torch.nextafter(b, torch.zeros_like(b))]
    x = torch.cat(parts).to(torch.float32)
    return torch.cat([x, -x])


def e2m1_codec():
    """(encode fn float32 -> uint8 codes 0..15, decode of the 16 codes, description) or None."""
    try:  # direct conversion, if this torch supports it
        t = torch.tensor([1.0, 0.5], dtype=torch.float32).to(torch.float4_e2m1fn_x2)
        raise RuntimeError("unexpected success; shape semantics unknown: %s" % (t,))
    except Exception as e:  # noqa: BLE001
        direct_err = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    fns = torch_mx_helpers()
    if fns is None:
        print("no torch E2M1 codec:", direct_err, flush=True)
        return None
    f32_to_fx, fx_to_f32, how = fns
    enc = lambda x: f32_to_fx(x.clone(), 2, 1)  # noqa: E731
    dec = fx_to_f32(torch.arange(16, dtype=torch.uint8), 2, 1)
    return enc, dec, (f"torch {how} _f32_to_floatx_unpacked(ebits=2, mbits=1) / _floatx_unpacked_to_f32; "
                      "x.to(torch.float4_e2m1fn_x2) failed: " + direct_err)


def torch_mx_helpers():
    """torch's own E2M1 helpers from torch/testing/_internal/common_quantized.py. Importing that module
    needs `expecttest` (absent on the device machine), so on ImportError the three functions and the
    module's constants are taken from the file's source with `ast` and executed alone."""
    try:
        from torch.testing._internal.common_quantized import _f32_to_floatx_unpacked, _floatx_unpacked_to_f32
        return _f32_to_floatx_unpacked, _floatx_unpacked_to_f32, "(imported)"
    except Exception as e:  # noqa: BLE001
        print("import common_quantized failed:", type(e).__name__, e, flush=True)
    import ast
    path = os.path.join(os.path.dirname(torch.__file__), "testing", "_internal", "common_quantized.py")
    try:
        tree = ast.parse(open(path).read())
        keep = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in (
                    "_n_ones", "_f32_to_floatx_unpacked", "_floatx_unpacked_to_f32"):
                keep.append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
                if all(isinstance(t, ast.Name) and t.id.isupper() for t in names):  # EBITS_F32, MBITS_F32 = 8, 23
                    keep.append(node)
        ns = {"torch": torch, "Tensor": torch.Tensor}
        exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)  # noqa: S102
        return ns["_f32_to_floatx_unpacked"], ns["_floatx_unpacked_to_f32"], "(source of common_quantized.py via ast)"
    except Exception as e:  # noqa: BLE001
        print("extracting the helpers failed:", type(e).__name__, e, flush=True)
        return None


def make_codec(outdir):
    codes = torch.arange(256, dtype=torch.uint8)
    dec_cpu = codes.view(torch.float8_e4m3fn).to(torch.float32)
    x = e4m3_inputs()
    enc_cpu = x.to(torch.float8_e4m3fn).view(torch.uint8)
    t = {"e4m3_decode": dec_cpu, "e4m3_inputs": x, "e4m3_codes_cpu": enc_cpu}
    meta = {"torch_version": torch.__version__}
    if torch.cuda.is_available():
        dec_gpu = codes.cuda().view(torch.float8_e4m3fn).to(torch.float32).cpu()
        enc_gpu = x.cuda().to(torch.float8_e4m3fn).view(torch.uint8).cpu()
        t["e4m3_codes_cuda"] = enc_gpu
        same_dec = torch.equal(dec_gpu.nan_to_num(12345.0), dec_cpu.nan_to_num(12345.0))
        diff = int((enc_gpu != enc_cpu).sum())
        meta["cuda_device"] = torch.cuda.get_device_name(0)
        meta["cuda_vs_cpu_encode_mismatches"] = str(diff)
        meta["cuda_vs_cpu_decode_equal"] = str(same_dec)
        print(f"e4m3: cuda vs cpu: decode equal {same_dec}, encode mismatches {diff}", flush=True)
    c = e2m1_codec()
    if c is not None:
        enc, dec, how = c
        xi = e2m1_inputs()
        t["e2m1_inputs"] = xi
        t["e2m1_codes"] = enc(xi).to(torch.uint8)
        t["e2m1_decode"] = dec.to(torch.float32)
        meta["e2m1_source"] = how
        print("e2m1:", how, flush=True)
    else:
        meta["e2m1_source"] = "none"
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(outdir, "codec.safetensors"), metadata=meta)
    print("codec:", {k: tuple(v.shape) for k, v in t.items()}, meta, flush=True)


# ------------------------------------------------------------------------------------------------
# 2. dequantization (independent of moengine: ModelOpt NVFP4QTensor.dequantize, DeepSeek weight_dequant)
# ------------------------------------------------------------------------------------------------
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def deq_nvfp4(packed, scale, scale_2):
    n, half = packed.shape
    lo, hi = packed & 0x0F, packed >> 4  # low nibble = even k
    codes = torch.stack([lo, hi], dim=-1).reshape(n, 2 * half).long()
    vals = E2M1[codes]
    per_block = scale.to(torch.float32) * scale_2.to(torch.float32).reshape(())  # [N, K/16]
    return vals * per_block.repeat_interleave(16, dim=1)


def deq_fp8_block(q, scale_inv, block):
    n, k = q.shape
    s = scale_inv.to(torch.float32).repeat_interleave(block, 0)[:n].repeat_interleave(block, 1)[:, :k]
    return q.to(torch.float32) * s


def read_dir(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    sd = {}
    if os.path.exists(idx):
        for f in sorted(set(json.load(open(idx))["weight_map"].values())):
            sd.update(load_file(os.path.join(d, f)))
    else:
        sd = load_file(os.path.join(d, "model.safetensors"))
    return sd


def dequantized_state_dict(d, cfg):
    sd = read_dir(d)
    qc = cfg.get("quantization_config")
    block = qc["weight_block_size"][0] if qc else None
    out, n_q = {}, 0
    for name, t in sd.items():
        if name.endswith((".weight_scale", ".weight_scale_2", ".input_scale", ".weight_scale_inv")):
            continue
        mod = name[: -len(".weight")] if name.endswith(".weight") else None
        if mod and mod + ".weight_scale_2" in sd:
            assert t.dtype == torch.uint8, name
            out[name] = deq_nvfp4(t, sd[mod + ".weight_scale"], sd[mod + ".weight_scale_2"])
            n_q += 1
        elif mod and mod + ".weight_scale_inv" in sd:
            assert t.dtype == torch.float8_e4m3fn, name
            out[name] = deq_fp8_block(t, sd[mod + ".weight_scale_inv"], block)
            n_q += 1
        else:
            out[name] = t.to(torch.float32)
    return out, n_q


def hf_logits(model, ids):
    return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].to(torch.float64)


def greedy(model, prompt):
    ids, gen, margins = list(prompt), [], []
    for _ in range(N_GREEDY):
        lg = hf_logits(model, ids)[-1]
        top2 = lg.topk(2)
        margins.append(float(top2.values[0] - top2.values[1]))
        gen.append(int(top2.indices[0]))
        ids.append(gen[-1])
    return gen, margins


def load_hf(cls, cfg_dict, sd, tmp):
    cfg_dict = {k: v for k, v in cfg_dict.items() if k != "quantization_config"}
    os.makedirs(tmp, exist_ok=True)
    json.dump(cfg_dict, open(os.path.join(tmp, "config.json"), "w"))
    save_file({k: v.contiguous() for k, v in sd.items()}, os.path.join(tmp, "model.safetensors"),
              metadata={"format": "pt"})
    m, info = getattr(transformers, cls).from_pretrained(
        tmp, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager",
        output_loading_info=True)
    if any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
        raise SystemExit(f"loading info not clean: {info}")
    return m.eval()


def make_case(case, base, cls, fixtures, outdir):
    qdir = os.path.join(fixtures, "quant", case)
    bdir = os.path.join(fixtures, base)
    qcfg = json.load(open(os.path.join(qdir, "config.json")))
    bgold = json.load(open(os.path.join(bdir, "golden.json")))
    prompt = bgold["prompt_ids"]
    sd_q, n_q = dequantized_state_dict(qdir, qcfg)
    sd_b = {k: v.to(torch.float32) for k, v in load_file(os.path.join(bdir, "model.safetensors")).items()}
    assert set(sd_q) == set(sd_b), set(sd_q) ^ set(sd_b)
    rel = max(float((sd_q[k] - sd_b[k]).abs().max() / sd_b[k].abs().max().clamp_min(1e-30)) for k in sd_b)
    with tempfile.TemporaryDirectory() as tmp:
        mq = load_hf(cls, qcfg, sd_q, os.path.join(tmp, "q"))
        mb = load_hf(cls, json.load(open(os.path.join(bdir, "config.json"))), sd_b, os.path.join(tmp, "b"))
        layer_out = {}
        hooks = [layer.register_forward_hook(
            lambda mod, inp, out, i=i: layer_out.__setitem__(i, (out[0] if isinstance(out, tuple) else out)[0, -1].clone()))
            for i, layer in enumerate(mq.model.layers)]
        last = hf_logits(mq, prompt)[-1]
        for h in hooks:
            h.remove()
        gen, margins = greedy(mq, prompt)
        # KL(P_bf16 || P_quant) of the next-token distribution at every position of prompt + BF16 greedy
        seq = list(prompt) + bgold["greedy_ids"][:-1]
        lb, lq = hf_logits(mb, seq), hf_logits(mq, seq)
        assert float((lb[len(prompt) - 1] - torch.tensor(bgold["last_logits"], dtype=torch.float64)).abs().max()) < 1e-4
        pb, lpb, lpq = lb.softmax(-1), lb.log_softmax(-1), lq.log_softmax(-1)
        kl = (pb * (lpb - lpq)).sum(-1)
        top1 = float((lb.argmax(-1) == lq.argmax(-1)).to(torch.float64).mean())
    g = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "case": case,
        "base": base,
        "quantized_modules": n_q,
        "max_rel_weight_change": rel,
        "prompt_ids": prompt,
        "last_logits": [float(v) for v in last],
        "greedy_ids": gen,
        "greedy_margins": margins,
        "min_margin": min(margins),
        "max_abs_logit": float(last.abs().max()),
        "layer_outputs_last": [[float(v) for v in layer_out[i]] for i in range(len(layer_out))],
        "kl_vs_bf16": {"mean": float(kl.mean()), "max": float(kl.max()), "positions": len(seq),
                       "top1_agreement": top1, "sequence": "prompt + BF16 greedy[:15]"},
        "notes": "HF float32 eager on weights dequantized by this script (ModelOpt/DeepSeek formulas in torch); "
                 "greedy by full recomputation, EOS ignored; KL(P_bf16 || P_quant) in float64 over all positions.",
    }
    with open(os.path.join(outdir, f"{case}.golden.json"), "w") as f:
        json.dump(g, f, indent=1)
    print(f"[{case}] quantized {n_q} modules, max rel weight change {rel:.3g}, min_margin {g['min_margin']:.4g}, "
          f"greedy {gen} (bf16 {bgold['greedy_ids']}), KL mean {g['kl_vs_bf16']['mean']:.4g} max "
          f"{g['kl_vs_bf16']['max']:.4g} top1 {top1:.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--fixtures", default="tests/fixtures")
    ap.add_argument("--codec-only", action="store_true", help="write codec.safetensors only")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)
    make_codec(args.outdir)
    if args.codec_only:
        return
    failed = []
    for case, base, cls in CASES:
        try:
            make_case(case, base, cls, args.fixtures, args.outdir)
        except (SystemExit, AssertionError, Exception) as e:  # noqa: BLE001
            print(f"[{case}] FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(case)
    if failed:
        raise SystemExit(f"failed cases: {failed}")


if __name__ == "__main__":
    main()
