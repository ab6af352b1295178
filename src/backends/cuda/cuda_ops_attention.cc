// CudaOps entries: DSA indexer top-k and MLA attention (naive form: one block per (token,
// head); absorbed form: the three-stage decode kernels of kernels/mla_decode).
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernels/dsa_index_topk/dsa_index_topk.h"
#include "backends/cuda/kernels/mla_attention/mla_attention.h"
#include "backends/cuda/kernels/mla_decode/mla_decode.h"
#include "backends/cuda/op_checks.h"

namespace moe::cuda {

namespace {

// Kernel arguments shared by both forms (MlaDecodeParams: absorbed, kernels/mla_decode;
// MlaAttentionParams: naive) from views already validated by CudaOps::mla_attention; the plan
// and scratch are filled in by the caller.
template <typename P>
P mla_params(TensorView out, ConstTensorView q, ConstTensorView cache, ConstTensorView kv_b,
             ConstTensorView selected, const LayoutParams& b, const ops::MlaParams& mp) {
  P p;
  p.out = out.data<float>();
  p.out_s0 = out.stride(0);
  p.out_s1 = out.stride(1);
  p.q = q.data<float>();
  p.q_s0 = q.stride(0);
  p.q_s1 = q.stride(1);
  p.cache = cache.data<float>();
  p.kv_b = kv_b.raw();
  p.wt = weight_type(kv_b.dtype(), "mla.kv_b");
  p.H = mp.heads;
  p.Dn = mp.nope_dim;
  p.R = mp.rope_dim;
  p.Dv = mp.v_dim;
  p.L = mp.latent_dim;
  p.softmax_scale = mp.softmax_scale;
  p.b = b;
  if (!selected.empty()) {
    p.selected = selected.data<int32_t>();
    p.sel_stride = selected.stride(0);
    p.sel_k = selected.dim(1);
    p.n_keys = p.sel_k;
  } else {
    p.n_keys = b.max_pages * b.page_size;
  }
  return p;
}

}  // namespace

void CudaOps::dsa_index_topk(TensorView out, ConstTensorView q, ConstTensorView w,
                             ops::PagedCacheView k_cache, const ops::BatchLayout& b) {
  check_f32(q, 3, "dsa.q");
  check_f32(w, 2, "dsa.w");
  check_i32(out, 2, "dsa.out");
  const int64_t T = q.dim(0), Hi = q.dim(1), Di = q.dim(2);
  MOE_CHECK(out.dim(0) == T && w.dim(0) == T && w.dim(1) == Hi && T == b.num_tokens)
      << "dsa: q " << q.shape().to_string() << " w " << w.shape().to_string() << " out "
      << out.shape().to_string() << " for " << b.num_tokens << " tokens";
  MOE_CHECK(k_cache.data.dtype() == DType::kF32 && k_cache.data.rank() == 3 &&
            k_cache.data.dim(2) == Di)
      << "dsa.k_cache " << k_cache.data.shape().to_string() << " for Di " << Di;
  begin_op();
  DsaIndexTopkParams p;
  p.out = out.data<int32_t>();
  p.out_stride = out.stride(0);
  p.top_k = out.dim(1);
  p.q = q.data<float>();
  p.q_s0 = q.stride(0);
  p.q_s1 = q.stride(1);
  p.w = w.data<float>();
  p.w_stride = w.stride(0);
  p.k_cache = k_cache.data.data<float>();
  p.Hi = Hi;
  p.Di = Di;
  p.b = layout_params(b, k_cache.data);
  p.n_pad = next_pow2(p.b.max_pages * p.b.page_size);
  p.score = scratch({T, p.n_pad}, DType::kI64).data<double>();  // f64 scores (8-byte slots)
  p.pos = scratch({T, p.n_pad}, DType::kI32).data<int32_t>();
  launch_dsa_index_topk(p, stream_);
}

void CudaOps::mla_attention(TensorView out, ConstTensorView q, ops::PagedCacheView latent_cache,
                            ConstTensorView kv_b, ConstTensorView selected,
                            const ops::BatchLayout& b, const ops::MlaParams& mp) {
  check_f32(out, 3, "mla.out");
  check_f32(q, 3, "mla.q");
  const int64_t T = q.dim(0), H = mp.heads, Dn = mp.nope_dim, R = mp.rope_dim, Dv = mp.v_dim,
                L = mp.latent_dim;
  MOE_CHECK(q.dim(1) == H && q.dim(2) == Dn + R) << "mla.q " << q.shape().to_string();
  MOE_CHECK(out.dim(0) == T && out.dim(1) == H && out.dim(2) == Dv && T == b.num_tokens)
      << "mla.out " << out.shape().to_string();
  MOE_CHECK(kv_b.rank() == 2 && kv_b.dim(0) == H * (Dn + Dv) && kv_b.dim(1) == L &&
            kv_b.is_contiguous())
      << "mla.kv_b " << kv_b.shape().to_string();
  MOE_CHECK(latent_cache.data.dtype() == DType::kF32 && latent_cache.data.rank() == 3 &&
            latent_cache.data.dim(2) == L + R)
      << "mla.latent_cache " << latent_cache.data.shape().to_string();
  if (!selected.empty()) {
    check_i32(selected, 2, "mla.selected");
    MOE_CHECK(selected.dim(0) == T) << "mla.selected " << selected.shape().to_string();
  }
  begin_op();
  if (mp.form == ops::MlaForm::kAbsorbed) {
    auto p = mla_params<MlaDecodeParams>(out, q, latent_cache.data, kv_b, selected,
                                         layout_params(b, latent_cache.data), mp);
    mla_decode_plan(p, {info_.sm_count, info_.smem_per_sm, info_.smem_per_block_optin});
    const MlaDecodeScratch s = mla_decode_scratch_floats(p);
    p.qa = scratch({std::max<int64_t>(s.qa, 1)}, DType::kF32).data<float>();
    p.ohat = scratch({std::max<int64_t>(s.ohat, 1)}, DType::kF32).data<float>();
    if (p.splits > 1) {
      p.part_o = scratch({s.part_o}, DType::kF32).data<float>();
      p.part_ml = scratch({s.part_ml}, DType::kF32).data<float>();
    }
    launch_mla_decode(p, stream_);
    return;
  }
  auto p = mla_params<MlaAttentionParams>(out, q, latent_cache.data, kv_b, selected,
                                          layout_params(b, latent_cache.data), mp);
  const int64_t smem = mla_attention_smem_bytes(p);
  MOE_CHECK(smem <= info_.smem_per_block_optin)
      << "mla_attention needs " << smem << " bytes of shared memory per block; " << info_.name
      << " allows " << info_.smem_per_block_optin;
  p.scores = scratch({T * H, std::max<int64_t>(p.n_keys, 1)}, DType::kF32).data<float>();
  launch_mla_attention(p, stream_);
}

}  // namespace moe::cuda
