// 2-D convolution as an implicit GEMM, per group: out[m, p] = sum_k W[m, k] * X[k, p] with m an
// output channel of the group, p an output pixel (batch folded in) and k = (c, kh, kw) a tap of
// the group's input channels; X is gathered from the input on the fly (zero outside it), never
// stored. A 64x64 tile of out per workgroup of 16x16 invocations, each computing 4x4, from
// 16-deep slices of W and X staged in shared memory (as matmul.comp). Bias (flags bit 0), the
// residual (flags bit 1) and the activation are applied on the way out.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer Z { float z[]; };  // residual (flags bit 1)
layout(push_constant) uniform Push {
  uint N, C, H, W, M, OH, OW, KH, KW;
  uint sh, sw, dh, dw, ph, pw, group;
  uint x_off, w_off, b_off, y_off, flags, act;  // act: activation code (31: none)
  float act_alpha, act_beta;
  uint z_off;
} p;

shared float As[16][68];
shared float Bs[16][68];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16 + tx;
  uint g = gl_WorkGroupID.z;
  uint cg = p.C / p.group, mg = p.M / p.group;
  uint taps = p.KH * p.KW, K = cg * taps, plane = p.OH * p.OW, P = p.N * plane;
  uint m0 = gl_WorkGroupID.y * 64, p0 = gl_WorkGroupID.x * 64;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0; k0 < K; k0 += 16) {
    for (uint r = 0; r < 4; ++r) {
      uint e = tid + r * 256;
      uint mm = e / 16, ka = e % 16, gm = m0 + mm, gka = k0 + ka;
      As[ka][mm] = gm < mg && gka < K ? w[p.w_off + (g * mg + gm) * K + gka] : 0.0;
      uint kb = e / 64, pp = e % 64, gp = p0 + pp, gkb = k0 + kb;
      float v = 0.0;
      if (gp < P && gkb < K) {
        uint c = gkb / taps, tap = gkb % taps, kh = tap / p.KW, kw = tap % p.KW;
        uint n = gp / plane, pix = gp % plane, oh = pix / p.OW, ow = pix % p.OW;
        int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
        int iw = int(ow * p.sw + kw * p.dw) - int(p.pw);
        if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W))
          v = x[p.x_off + ((n * p.C + g * cg + c) * p.H + uint(ih)) * p.W + uint(iw)];
      }
      Bs[kb][pp] = v;
    }
    barrier();
    for (uint kk = 0; kk < 16; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    uint m = m0 + ty + 16 * i;
    if (m >= mg) continue;
    uint channel = g * mg + m;
    float b = (p.flags & 1u) != 0u ? bias[p.b_off + channel] : 0.0;
    for (int j = 0; j < 4; ++j) {
      uint gp = p0 + tx + 16 * j;
      if (gp >= P) continue;
      uint n = gp / plane, pix = gp % plane, at = (n * p.M + channel) * plane + pix;
      float v = acc[i][j] + b;
      if ((p.flags & 2u) != 0u) v += z[p.z_off + at];
      y[p.y_off + at] = activate(p.act, v, p.act_alpha, p.act_beta);
    }
  }
}
