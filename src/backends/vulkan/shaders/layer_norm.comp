// Layer normalization over the last `len` elements of each row: y = (x - mean) / sqrt(var +
// epsilon) * scale + bias, scale and bias of `len` elements (flags bit 0: bias given); one
// workgroup per row, sums by workgroup_reduce.glsl (two passes: mean, then the centered
// variance). Scale and bias may be single values (stride 0); flags bit 1: write each row's mean
// and 1 / std too.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "workgroup_reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Mean { float mean_out[]; };
layout(std430, binding = 5) writeonly buffer Inv { float inv_out[]; };
layout(push_constant) uniform Push {
  uint rows, len, x_off, scale_off, bias_off, y_off, mean_off, inv_off, flags;
  uint scale_stride, bias_stride;
  float epsilon;
} p;

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x, base = p.x_off + row * p.len;
  float s = 0.0;
  for (uint k = t; k < p.len; k += 256) s += x[base + k];
  float mean = workgroup_reduce(s, 0u) / float(p.len);
  float q = 0.0;
  for (uint k = t; k < p.len; k += 256) {
    float d = x[base + k] - mean;
    q += d * d;
  }
  float inv = inversesqrt(workgroup_reduce(q, 0u) / float(p.len) + p.epsilon);
  for (uint k = t; k < p.len; k += 256) {
    float v = (x[base + k] - mean) * inv * scale[p.scale_off + k * p.scale_stride];
    if ((p.flags & 1u) != 0u) v += bias[p.bias_off + k * p.bias_stride];
    y[p.y_off + row * p.len + k] = v;
  }
  if ((p.flags & 2u) != 0u && t == 0u) {
    mean_out[p.mean_off + row] = mean;
    inv_out[p.inv_off + row] = inv;
  }
}
