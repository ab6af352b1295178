// Plan and launchers of absorbed MLA (mla_decode.h): one switch maps (heads per block, o^ tiles
// per thread) onto the core's template instances; every stage's shared memory is checked
// against the device's opt-in limit before anything is launched.
#include <algorithm>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/mla_decode/mla_decode_combine.cuh"
#include "backends/cuda/kernels/mla_decode/mla_decode_core.cuh"
#include "backends/cuda/kernels/mla_decode/mla_q_absorb.cuh"
#include "backends/cuda/kernels/mla_decode/mla_v_project.cuh"

namespace moe::cuda {
namespace {

constexpr int64_t kDefaultSmem = 48 * 1024;      // dynamic shared memory without the opt-in
constexpr int64_t kSmemReservedPerBlock = 1024;  // NOTE: the runtime reserves 1 KiB per block

int64_t core_smem(int64_t heads, int64_t ld) {
  return mla::core_smem_floats(heads, ld) * static_cast<int64_t>(sizeof(float));
}

template <typename Kernel>
void launch(Kernel k, int64_t blocks, int threads, int64_t smem, Stream stream, const char* name,
            const MlaDecodeParams& p) {
  if (blocks == 0) return;
  if (smem > kDefaultSmem)
    MOE_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)),
                   name);
  k<<<static_cast<unsigned>(blocks), threads, static_cast<size_t>(smem), stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH(name);
}

template <int kHG, int kUnits>
void launch_core(const MlaDecodeParams& p, Stream stream) {
  const int64_t blocks = p.b.num_tokens * ceil_div(p.H, kHG) * p.splits;
  launch(mla::decode_core_kernel<kHG, kUnits>, blocks, kMlaDecodeThreads,
         mla_decode_core_smem_bytes(p), stream, "mla_decode/core", p);
}

}  // namespace

int64_t mla_q_absorb_smem_bytes(const MlaDecodeParams& p) {
  return 2 * 16 * mla::q_absorb_ld(p.Dn) * static_cast<int64_t>(sizeof(float));
}
int64_t mla_decode_core_smem_bytes(const MlaDecodeParams& p) {
  return core_smem(p.heads_per_block, p.ld);
}
int64_t mla_v_project_smem_bytes(const MlaDecodeParams& p) {
  return 2 * 16 * mla::v_project_ld(p.L) * static_cast<int64_t>(sizeof(float));
}

void mla_decode_plan(MlaDecodeParams& p, const MlaDecodeDevice& dev) {
  MOE_CHECK(p.H > 0 && p.Dn > 0 && p.Dv > 0 && p.L > 0 && p.R >= 0)
      << "mla_decode: dims H " << p.H << " Dn " << p.Dn << " R " << p.R << " Dv " << p.Dv << " L "
      << p.L;
  const int64_t LR = p.L + p.R;
  p.ld = (LR + 3) / 4 * 4;
  p.vec16 = LR % 4 == 0 && reinterpret_cast<uintptr_t>(p.cache) % 16 == 0;
  const int64_t optin = dev.smem_per_block_optin;
  int hg = p.H > 8 ? 16 : 8;
  if (hg == 16 && core_smem(16, p.ld) > optin) hg = 8;
  MOE_CHECK(core_smem(hg, p.ld) <= optin)
      << "mla_decode: the core needs " << core_smem(hg, p.ld) << " bytes of shared memory per "
      << "block for L + R = " << LR << "; the device allows " << optin;
  p.heads_per_block = hg;
  const int64_t L4 = (p.L + 3) / 4;
  const int64_t tiles_per_thread = ceil_div(hg / 4 * L4, kMlaDecodeThreads);
  MOE_CHECK(tiles_per_thread <= 4)
      << "mla_decode: latent dim " << p.L << " needs " << tiles_per_thread
      << " o^ register tiles per thread with " << hg
      << " heads per block (supported: L <= " << 4 * kMlaDecodeThreads * 4 / (hg / 4) << ")";
  p.units = tiles_per_thread <= 1 ? 1 : tiles_per_thread <= 2 ? 2 : 4;
  MOE_CHECK(mla_q_absorb_smem_bytes(p) <= optin && mla_v_project_smem_bytes(p) <= optin)
      << "mla_decode: q absorption needs " << mla_q_absorb_smem_bytes(p) << " and the V projection "
      << mla_v_project_smem_bytes(p) << " bytes of shared memory per block (Dn " << p.Dn << ", L "
      << p.L << "); the device allows " << optin;

  // Key splits: as many (token, head group, split) blocks as the SMs hold at once (their shared
  // memory and registers), never more than one wave; at least 2 key tiles per split.
  const int64_t smem = core_smem(hg, p.ld) + kSmemReservedPerBlock;
  const int64_t regs_resident = p.units == 4 ? mla::kCoreBlocksPerSm<4> : mla::kCoreBlocksPerSm<1>;
  const int64_t resident = std::clamp<int64_t>(dev.smem_per_sm / smem, 1, regs_resident);
  const int64_t target = std::max(dev.sm_count, 1) * resident;
  const int64_t base = std::max<int64_t>(p.b.num_tokens * ceil_div(p.H, hg), 1);
  const int64_t key_tiles = ceil_div(std::max<int64_t>(p.n_keys, 1), kMlaKeyTile);
  int64_t splits = std::max<int64_t>(target / base, 1);  // at most one wave of blocks
  splits = std::min(splits, std::max<int64_t>(key_tiles / 2, 1));
  p.splits = static_cast<int>(std::clamp<int64_t>(splits, 1, kMlaMaxSplits));
}

MlaDecodeScratch mla_decode_scratch_floats(const MlaDecodeParams& p) {
  const int64_t th = p.b.num_tokens * p.H;
  MlaDecodeScratch s;
  s.qa = th * (p.L + p.R);
  s.ohat = th * p.L;
  if (p.splits > 1) {
    s.part_o = th * p.splits * p.L;
    s.part_ml = th * p.splits * 2;
  }
  return s;
}

void launch_mla_decode(const MlaDecodeParams& p, Stream stream) {
  const int64_t T = p.b.num_tokens;
  if (T == 0) return;
  launch(mla::q_absorb_kernel, p.H * ceil_div(p.L, 16), kMlaDecodeThreads,
         mla_q_absorb_smem_bytes(p), stream, "mla_decode/q_absorb", p);
  switch (p.heads_per_block * 10 + p.units) {
    case 81:
      launch_core<8, 1>(p, stream);
      break;
    case 82:
      launch_core<8, 2>(p, stream);
      break;
    case 84:
      launch_core<8, 4>(p, stream);
      break;
    case 161:
      launch_core<16, 1>(p, stream);
      break;
    case 162:
      launch_core<16, 2>(p, stream);
      break;
    case 164:
      launch_core<16, 4>(p, stream);
      break;
    default:
      MOE_CHECK(false) << "mla_decode: " << p.heads_per_block << " heads per block, " << p.units
                       << " o^ tiles per thread (supported: 8 or 16 heads; 1, 2 or 4 tiles)";
  }
  if (p.splits > 1)
    launch(mla::decode_combine_kernel, T * p.H, mla::kCombineThreads, 0, stream,
           "mla_decode/combine", p);
  launch(mla::v_project_kernel, p.H * ceil_div(p.Dv, 16), kMlaDecodeThreads,
         mla_v_project_smem_bytes(p), stream, "mla_decode/v_project", p);
}

}  // namespace moe::cuda
