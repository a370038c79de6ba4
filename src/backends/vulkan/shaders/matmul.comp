// C = act(alpha * A B + beta * bias), act by code (activations.glsl): a 64x64 tile of C per
// workgroup of 16x16 invocations, each computing 4x4 outputs from 16-deep slices of A and B staged
// in shared memory.
// A and B are read through row and column strides (transposes cost nothing) and batch strides
// over up to 3 batch dims (0 where broadcast); C is contiguous [batch, M, N].
#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push {
  uint M, N, K, a_off, b_off, bias_off, c_off;
  uint a_rs, a_cs, b_rs, b_cs, bias_rs, bias_cs, flags;  // flags bit 0: bias given
  float alpha, beta;
  uint batch1, batch2;   // sizes of batch dims 1 and 2 (dim 0 is gl_NumWorkGroups.z / both)
  uint a_bs0, a_bs1, a_bs2, b_bs0, b_bs1, b_bs2;
  uint act;              // activation code (31: none) and its parameters
  float act_alpha, act_beta;
} p;

shared float As[16][68];
shared float Bs[16][68];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16 + tx;
  uint m0 = gl_WorkGroupID.y * 64, n0 = gl_WorkGroupID.x * 64, z = gl_WorkGroupID.z;
  uint i2 = z % p.batch2, i1 = (z / p.batch2) % p.batch1, i0 = z / (p.batch2 * p.batch1);
  uint abase = p.a_off + i0 * p.a_bs0 + i1 * p.a_bs1 + i2 * p.a_bs2;
  uint bbase = p.b_off + i0 * p.b_bs0 + i1 * p.b_bs1 + i2 * p.b_bs2;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0; k0 < p.K; k0 += 16) {
    for (uint r = 0; r < 4; ++r) {
      uint e = tid + r * 256;
      uint mm = e / 16, ka = e % 16, gm = m0 + mm, gka = k0 + ka;
      As[ka][mm] = gm < p.M && gka < p.K ? a[abase + gm * p.a_rs + gka * p.a_cs] : 0.0;
      uint kb = e / 64, nn = e % 64, gn = n0 + nn, gkb = k0 + kb;
      Bs[kb][nn] = gn < p.N && gkb < p.K ? b[bbase + gkb * p.b_rs + gn * p.b_cs] : 0.0;
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
    if (m >= p.M) continue;
    for (int j = 0; j < 4; ++j) {
      uint n = n0 + tx + 16 * j;
      if (n >= p.N) continue;
      float v = p.alpha * acc[i][j];
      if ((p.flags & 1u) != 0u) v += p.beta * bias[p.bias_off + m * p.bias_rs + n * p.bias_cs];
      v = activate(p.act, v, p.act_alpha, p.act_beta);
      c[p.c_off + (z * p.M + m) * p.N + n] = v;
    }
  }
}
