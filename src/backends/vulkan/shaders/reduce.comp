// Reductions over any set of axes: one workgroup per output element. The kept dims (up to 6,
// collapsed) place the workgroup's output in the input; the reduced dims (up to 6) are walked by
// the workgroup's invocations, partial results combined by workgroup_reduce.glsl. kind: 0 sum,
// 1 mean, 2 max, 3 min, 4 prod, 5 l1, 6 l2, 7 log_sum, 8 log_sum_exp, 9 sum_square. NaN
// propagates through max and min as in the reference.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "workgroup_reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n_out, count, kind, x_off, y_off, kept_rank, reduced_rank;
  uint kept_shape[6];
  uint kept_stride[6];
  uint reduced_shape[6];
  uint reduced_stride[6];
} p;

uint input_offset(uint base, uint r) {
  uint at = base;
  for (int d = int(p.reduced_rank) - 1; d >= 0; --d) {
    at += (r % p.reduced_shape[d]) * p.reduced_stride[d];
    r /= p.reduced_shape[d];
  }
  return at;
}

void main() {
  uint o = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (o >= p.n_out) return;
  uint base = p.x_off, rem = o;
  for (int d = int(p.kept_rank) - 1; d >= 0; --d) {
    base += (rem % p.kept_shape[d]) * p.kept_stride[d];
    rem /= p.kept_shape[d];
  }
  uint t = gl_LocalInvocationID.x;
  float shift = 0.0;  // log_sum_exp: the maximum, subtracted before exp
  if (p.kind == 8u) {
    float m = -1.0 / 0.0;
    for (uint r = t; r < p.count; r += 256) m = combine(m, x[input_offset(base, r)], 2u);
    shift = workgroup_reduce(m, 2u);
  }
  uint op = p.kind == 2u || p.kind == 3u || p.kind == 4u ? p.kind : 0u;
  float acc = p.kind == 2u ? -1.0 / 0.0 : p.kind == 3u ? 1.0 / 0.0 : p.kind == 4u ? 1.0 : 0.0;
  for (uint r = t; r < p.count; r += 256) {
    float v = x[input_offset(base, r)];
    if (p.kind == 5u) v = abs(v);
    if (p.kind == 6u || p.kind == 9u) v = v * v;
    if (p.kind == 8u) v = isinf(shift) ? 0.0 : exp(v - shift);
    acc = combine(acc, v, op);
  }
  float total = workgroup_reduce(acc, op);
  if (t != 0u) return;
  if (p.kind == 1u) total = p.count == 0u ? uintBitsToFloat(0x7fc00000u) : total / float(p.count);
  if (p.kind == 6u) total = sqrt(total);
  if (p.kind == 7u) total = log(total);
  if (p.kind == 8u) total = isinf(shift) || isnan(shift) ? shift : shift + log(total);
  y[p.y_off + o] = total;
}
