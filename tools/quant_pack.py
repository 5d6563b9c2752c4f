#!/usr/bin/env python3
"""Numpy reference packers for the quantised checkpoint formats of reference.md section 2.

Written from the published formulas (no modelopt / compressed-tensors at hand):
  * float8_e4m3fn: encode with round-to-nearest-even, saturating at +-448; decode table.
  * NVFP4 (ModelOpt): weight_scale_2 = amax(|W|)/(6*448); per 16 inputs
    weight_scale = e4m3(amax_block / (6*weight_scale_2)) (zero blocks -> 1.0, clamped >= 2^-9);
    codes = e2m1_round(W / (weight_scale * weight_scale_2)) clamped to +-6, ties to even on the
    grid; two codes per byte, element 2j in the low nibble.
    Dequant: e2m1(code) * float(weight_scale) * weight_scale_2 (float32, in that order).
  * DeepSeek FP8 blocks: per 128x128 block s = amax/448 (zero blocks -> 1.0),
    weight = e4m3(W / s), weight_scale_inv = s. Dequant: fp8(W) * s.
  * compressed-tensors INT4 pack-quantized, group 32, symmetric: scale = amax/7.5 rounded to
    BF16 (compressed-tensors' minmax observer: max|x| / ((q_max - q_min)/2)),
    q = clamp(round_half_even(W / scale), -8, 7); stored q + 8, element 8j+i at bits 4i..4i+3
    of int32 j. Dequant: (nibble - 8) * scale.

`python3 tools/quant_pack.py` runs the self-checks (bit layouts, tie rounding, subnormals,
quantise->dequantise error bounds on random tensors).
"""

import numpy as np

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)
E4M3_MAX = 448.0


def e4m3_decode_table():
    t = np.zeros(256, np.float32)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        if e == 15 and m == 7:
            v = np.nan
        elif e == 0:
            v = m / 8.0 * 2.0 ** -6
        else:
            v = (1 + m / 8.0) * 2.0 ** (e - 7)
        t[c] = -v if s else v
    return t


E4M3 = e4m3_decode_table()


def e4m3_encode(x):
    """float32 array -> uint8 float8_e4m3fn codes (nearest even, saturating, NaN -> 0x7f)."""
    x = np.asarray(x, np.float32)
    shape = x.shape
    x = x.reshape(-1)
    sign = np.signbit(x).astype(np.uint8) << 7
    a = np.abs(x).astype(np.float64)
    out = np.zeros(x.shape, np.int64)
    sub = a < 2.0 ** -6
    out[sub] = np.rint(a[sub] * 512.0).astype(np.int64)         # subnormal steps of 2^-9
    nrm = ~sub
    m, e = np.frexp(a[nrm])                                      # a = m * 2^e, m in [0.5, 1)
    exp = e - 1 + 7
    mant = np.rint((2 * m - 1) * 8).astype(np.int64)             # ties to even
    carry = mant == 8
    mant[carry] = 0
    exp = exp + carry
    out[nrm] = (exp << 3) | mant
    out = np.minimum(out, 0x7E)
    out[a >= E4M3_MAX] = 0x7E
    res = (out.astype(np.uint8) | sign)
    res[np.isnan(x)] = 0x7F
    return res.reshape(shape)


def e2m1_round(v):
    """values already scaled into [-6, 6] -> 4-bit codes (nearest, ties to even on the grid)."""
    v = np.clip(np.asarray(v, np.float32), -6, 6)
    a = np.abs(v)
    # thresholds between grid points 0,.5,1,1.5,2,3,4,6; ties: 0.25,1.25,2.5,5 down; .75,1.75,3.5 up
    idx = np.zeros(a.shape, np.uint8)
    for lo, hi_incl, code in [(0.25, False, 1), (0.75, True, 2), (1.25, False, 3), (1.75, True, 4),
                              (2.5, False, 5), (3.5, True, 6), (5.0, False, 7)]:
        idx = np.where((a >= lo) if hi_incl else (a > lo), code, idx)
    return (idx | (np.signbit(v).astype(np.uint8) << 3)).astype(np.uint8)


# ------------------------------------------------------------------------------------- NVFP4

def nvfp4_quantize(W, global_amax=None):
    """W float32 [N, K] (K % 16 == 0) -> (packed U8 [N, K/2], scale U8-e4m3 [N, K/16], ws2 f32)."""
    W = np.asarray(W, np.float32)
    N, K = W.shape
    assert K % 16 == 0
    amax = np.float32(np.max(np.abs(W)) if global_amax is None else global_amax)
    ws2 = np.float32(amax / np.float32(6 * 448))
    blocks = W.reshape(N, K // 16, 16)
    bamax = np.max(np.abs(blocks), axis=-1)
    sf = bamax / (np.float32(6) * ws2)
    sf_code = e4m3_encode(np.maximum(sf, np.float32(2.0 ** -9)))
    sf_code[bamax == 0] = e4m3_encode(np.float32(1.0))
    sfv = E4M3[sf_code]
    denom = (sfv * ws2)[..., None]
    codes = e2m1_round(blocks / denom).reshape(N, K)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed, sf_code, ws2


def nvfp4_dequantize(packed, sf_code, ws2):
    N = packed.shape[0]
    codes = np.empty((N, packed.shape[1] * 2), np.uint8)
    codes[:, 0::2] = packed & 15
    codes[:, 1::2] = packed >> 4
    s = np.repeat(E4M3[sf_code], 16, axis=1)
    return (E2M1[codes] * s * np.float32(ws2)).astype(np.float32)


# -------------------------------------------------------------------------------- FP8 blocks

def fp8_block_quantize(W, br=128, bc=128):
    W = np.asarray(W, np.float32)
    N, K = W.shape
    nb, kb = -(-N // br), -(-K // bc)
    s = np.ones((nb, kb), np.float32)
    q = np.zeros((N, K), np.uint8)
    for i in range(nb):
        for j in range(kb):
            blk = W[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
            amax = np.max(np.abs(blk))
            if amax > 0:
                s[i, j] = np.float32(amax / np.float32(448))
            q[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = e4m3_encode(blk / s[i, j])
    return q, s


def fp8_block_dequantize(q, s, br=128, bc=128):
    N, K = q.shape
    full = np.repeat(np.repeat(s, br, axis=0), bc, axis=1)[:N, :K]
    return (E4M3[q] * full).astype(np.float32)


# ------------------------------------------------------------------------------------ INT4

def bf16_round(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return (((u + (((u >> 16) & 1) + 0x7FFF)) >> 16) << 16).astype(np.uint32).view(np.float32)


def int4_quantize(W, group=32):
    """-> (packed I32 [N, K/8], scale float32 holding BF16 values [N, K/group])."""
    W = np.asarray(W, np.float32)
    N, K = W.shape
    assert K % group == 0 and K % 8 == 0
    g = W.reshape(N, K // group, group)
    amax = np.max(np.abs(g), axis=-1)
    scale = bf16_round(np.where(amax > 0, amax / np.float32(7.5), np.float32(1.0)))
    q = np.clip(np.rint(g / scale[..., None]), -8, 7).astype(np.int64).reshape(N, K) + 8
    q = q.reshape(N, K // 8, 8).astype(np.uint32)
    packed = np.zeros((N, K // 8), np.uint32)
    for i in range(8):
        packed |= q[..., i] << np.uint32(4 * i)
    return packed.view(np.int32), scale


def int4_dequantize(packed, scale, group=32):
    p = packed.view(np.uint32)
    N = p.shape[0]
    nib = np.stack([(p >> np.uint32(4 * i)) & np.uint32(15) for i in range(8)], axis=-1)
    q = nib.reshape(N, -1).astype(np.float32) - 8
    return (q * np.repeat(scale, group, axis=1)).astype(np.float32)


# ------------------------------------------------------------------------------ self-checks

def selftest(verbose=True):
    rng = np.random.default_rng(7)
    # e4m3: every finite code round-trips; decoding known values; subnormals; ties to even.
    codes = np.array([c for c in range(256) if (c & 0x7F) != 0x7F], np.uint8)
    assert np.array_equal(e4m3_encode(E4M3[codes]), codes), "e4m3 round trip"
    assert E4M3[0x01] == 2.0 ** -9 and E4M3[0x07] == 7 * 2.0 ** -9 and E4M3[0x08] == 2.0 ** -6
    assert E4M3[0x7E] == 448 and E4M3[0x38] == 1.0 and E4M3[0xB8] == -1.0
    assert np.isnan(E4M3[0x7F]) and np.isnan(E4M3[0xFF])
    # 1 + 1/16 is halfway between 1 (0x38, even) and 1.125 (0x39): rounds to 0x38; 1+3/16 -> 0x3A
    assert e4m3_encode(np.float32(1 + 1 / 16)) == 0x38 and e4m3_encode(np.float32(1 + 3 / 16)) == 0x3A
    assert e4m3_encode(np.float32(2.0 ** -10)) == 0x00          # half of the smallest subnormal: even
    assert e4m3_encode(np.float32(3 * 2.0 ** -10)) == 0x02      # 1.5 steps -> 2 (even)
    assert e4m3_encode(np.float32(1000.0)) == 0x7E and e4m3_encode(np.float32(-1000.0)) == 0xFE
    # e2m1 grid: exact points, ties as reference.md says
    grid = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], np.float32)
    assert np.array_equal(E2M1[e2m1_round(grid)], grid) and np.array_equal(E2M1[e2m1_round(-grid[1:])], -grid[1:])
    ties = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], np.float32)
    assert np.array_equal(E2M1[e2m1_round(ties)], np.array([0, 1, 1, 2, 2, 4, 4], np.float32)), E2M1[e2m1_round(ties)]
    assert np.array_equal(E2M1[e2m1_round(np.array([0.26, 0.74, 5.01, 7.0], np.float32))],
                          np.array([0.5, 0.5, 6, 6], np.float32))
    # NVFP4: nibble order and error bound (half a grid step at the block's scale, <= 1/2 of 2 = 1
    # unit of scale for |v| in (4, 6], plus e4m3 scale rounding)
    W = (rng.standard_normal((48, 64)) * rng.uniform(0.1, 3, (48, 1))).astype(np.float32)
    W[3, 16:32] = 0
    p, sf, ws2 = nvfp4_quantize(W)
    assert p.shape == (48, 32) and sf.shape == (48, 4)
    D = nvfp4_dequantize(p, sf, ws2)
    assert np.all(D[3, 16:32] == 0) and E4M3[sf[3, 1]] == 1.0
    step = np.repeat(E4M3[sf], 16, axis=1) * ws2               # one unit of the e2m1 grid
    assert np.all(np.abs(D - W) <= step * 1.0 + 1e-12), "nvfp4 error bound"
    rel = np.abs(D - W).max() / np.abs(W).max()
    one = np.zeros((1, 16), np.float32)
    one[0, :4] = [1.0, -0.5, 6.0, 3.0]                          # amax 6 -> block scale 448*.., codes 2,9,7,5
    p1, sf1, ws21 = nvfp4_quantize(one)
    assert p1[0, 0] == (0x2 | (0x9 << 4)) and p1[0, 1] == (0x7 | (0x5 << 4)), p1
    # FP8 blocks with ragged edges
    W = rng.standard_normal((200, 300)).astype(np.float32)
    q, s = fp8_block_quantize(W)
    assert s.shape == (2, 3)
    D = fp8_block_dequantize(q, s)
    relf = np.max(np.abs(D - W) / np.maximum(np.abs(W), 2.0 ** -6 * np.repeat(np.repeat(s, 128, 0), 128, 1)[:200, :300]))
    assert relf <= 2.0 ** -4 + 1e-6, relf
    # INT4: bit layout and error bound (half a step)
    W = rng.standard_normal((8, 64)).astype(np.float32)
    pk, sc = int4_quantize(W)
    D = int4_dequantize(pk, sc)
    assert np.all(np.abs(D - W) <= np.repeat(sc, 32, axis=1) * 0.5 * (1 + 1e-6) + 1e-7 + np.repeat(sc, 32, 1) * (np.abs(W) > 7.5 * np.repeat(sc, 32, 1)))
    row = np.zeros((1, 32), np.float32)
    row[0, :8] = [-7.5, 0, 7.5, 1, 2, 3, -1, 0.5]              # scale 1.0
    pk1, sc1 = int4_quantize(row)
    assert sc1[0, 0] == 1.0
    # q = [-8(-7.5 rounds to even -8), 0, 8->7, 1, 2, 3, -1, 0(0.5 -> even 0)] + 8
    want = [0, 8, 15, 9, 10, 11, 7, 8]
    assert pk1.view(np.uint32)[0, 0] == sum(v << (4 * i) for i, v in enumerate(want)), hex(pk1.view(np.uint32)[0, 0])
    if verbose:
        print(f"quant_pack self-test passed (nvfp4 max rel err {rel:.3f}, fp8 block max rel err {relf:.4f})")


if __name__ == "__main__":
    selftest()
