// 2-D convolution, direct: one invocation per output element (n, m, oh, ow) sums its group's
// C/group x KH x KW window (zero padding, strides, dilations), adds the bias (flags bit 0) and
// the residual (flags bit 1) and applies the activation.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
layout(local_size_x = 256) in;
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

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.N * p.M * p.OH * p.OW) return;
  uint ow = i % p.OW, oh = (i / p.OW) % p.OH, m = (i / (p.OW * p.OH)) % p.M,
       n = i / (p.OW * p.OH * p.M);
  uint cg = p.C / p.group, mg = p.M / p.group, g = m / mg;
  float acc = (p.flags & 1u) != 0u ? bias[p.b_off + m] : 0.0;
  for (uint c = 0; c < cg; ++c) {
    uint xc = p.x_off + (n * p.C + g * cg + c) * p.H * p.W;
    uint wc = p.w_off + (m * cg + c) * p.KH * p.KW;
    for (uint kh = 0; kh < p.KH; ++kh) {
      int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
      if (ih < 0 || ih >= int(p.H)) continue;
      for (uint kw = 0; kw < p.KW; ++kw) {
        int iw = int(ow * p.sw + kw * p.dw) - int(p.pw);
        if (iw < 0 || iw >= int(p.W)) continue;
        acc += x[xc + uint(ih) * p.W + uint(iw)] * w[wc + kh * p.KW + kw];
      }
    }
  }
  if ((p.flags & 2u) != 0u) acc += z[p.z_off + i];
  y[p.y_off + i] = activate(p.act, acc, p.act_alpha, p.act_beta);
}
