#!/usr/bin/env python3
# Host model for experiments/2026-12-05-tokens-as-n.patch (run: python3 this file; prints "errors 0"):
# accumulators, movmatrix and quad transpose through to the store addresses. The header positions
# of the activation scales are the CPU test TokensAsN.* (tn_layout.h, in the patch).
# Host model of the TN kernel's index math: which (weight row / h column, token) each register holds,
# through movmatrix and quad_transpose, to the store addresses. Values are tuples (kind, col, tok).
import itertools
def tn_width(cnt):
    if cnt <= 64: return (cnt + 15)//16*16
    return 128 + (cnt + 15)//16*8

def acc_of(GU, wg, wq, lane, hx, halves):
    g, c = lane >> 2, lane & 3
    acc = {}
    for nh in range(halves):
        for mb in range(2):
            Q = 2*nh + mb
            qd = (wg if mb == 0 else wg + 2) if GU else 2*wg + mb
            for i in range(hx // 2):
                j, h2, e = i >> 2, (i >> 1) & 1, i & 1
                r = 16*wq + g + 8*h2                      # row within the m64 quarter
                stage_row = 128*(qd >> 1) + 64*(qd & 1) + r
                tok = hx*nh + 8*j + 2*c + e
                acc[32*Q + i] = (stage_row, tok)
    return acc

def movmatrix(words):  # words[lane] = (lo, hi) of row lane/4, cols 2(lane%4), +1
    M = {}
    for l in range(32):
        M[(l >> 2, 2*(l & 3))] = words[l][0]; M[(l >> 2, 2*(l & 3) + 1)] = words[l][1]
    return [(M[(2*(l & 3), l >> 2)], M[(2*(l & 3) + 1, l >> 2)]) for l in range(32)]

def quad_transpose(w, lanes):  # w[lane][i]: lane's word of group i -> out[lane][i] = lane i's word of group c
    out = {}
    for l in lanes:
        c = l & 3; base = l & ~3
        out[l] = [w[base + i][c] for i in range(4)]
    return out

errors = 0
for cnt in list(range(1, 129)):
    tw = tn_width(cnt); hx = tw & 127; halves = 2 if tw > 128 else 1
    assert hx*halves >= cnt and hx*halves - cnt < 16 and hx % 8 == 0 and hx in (16,32,40,48,56,64)
    for GU in (True, False):
        stored = {}
        for wg in range(2):
            for wq in range(4):
                accs = [acc_of(GU, wg, wq, l, hx, halves) for l in range(32)]
                for nh in range(halves):
                    for j in range(8):
                        if 8*j >= hx: break
                        if GU:
                            for h2 in range(2):
                                a = 64*nh + 4*j + 2*h2
                                words = []
                                for l in range(32):
                                    A = accs[l]
                                    gt0, up0 = A[a], A[a + 32]
                                    gt1, up1 = A[a + 1], A[a + 33]
                                    # gate row r -> h column r (gate box 0), up row 128 + r -> the same column
                                    assert up0[0] == gt0[0] + 128 and up0[1] == gt0[1], (gt0, up0)
                                    assert up1[0] == gt1[0] + 128 and up1[1] == gt1[1]
                                    words.append(((gt0[0], gt0[1]), (gt1[0], gt1[1])))
                                tw_ = movmatrix(words)
                                for l in range(32):
                                    g, c = l >> 2, l & 3
                                    tok = hx*nh + 8*j + g
                                    col = 64*wg + 16*wq + 8*h2 + 2*c
                                    for b in range(2):
                                        v = tw_[l][b]
                                        if v != (col + b, tok):
                                            errors += 1
                                        if tok < cnt:
                                            k = (tok, col + b)
                                            assert k not in stored; stored[k] = v
                        else:
                            wd = {}
                            per_chunk = []
                            for i in range(4):
                                a = 32*(2*nh + (i >> 1)) + 4*j + 2*(i & 1)
                                words = [(accs[l][a], accs[l][a + 1]) for l in range(32)]
                                per_chunk.append(movmatrix(words))
                            w = {l: [per_chunk[i][l] for i in range(4)] for l in range(32)}
                            q = quad_transpose(w, range(32))
                            for l in range(32):
                                g, c = l >> 2, l & 3
                                tok = hx*nh + 8*j + g
                                col0 = 128*wg + 16*wq + 64*(c >> 1) + 8*(c & 1)
                                vals = [x for word in q[l] for x in word]  # 8 bf16, cols col0..col0+7
                                for b, v in enumerate(vals):
                                    if v != (col0 + b, tok): errors += 1
                                    if tok < cnt:
                                        k = (tok, col0 + b)
                                        assert k not in stored; stored[k] = v
        ncols = 128 if GU else 256
        want = {(t, cc) for t in range(cnt) for cc in range(ncols)}
        if set(stored) != want:
            errors += 1; print('coverage', cnt, GU, len(stored), len(want))
print('errors', errors)
